"""The subproblems of a solve: ``Batches`` splits the scalar unknowns of the solution vector into
independent subproblems (a ``LinearOperator``'s ``batch_offsets``) and gives the solvers their
vector operations per subproblem: dot products (one value per subproblem) and ``a x + c y``
updates with one pair of coefficients per subproblem.

A solve without ``batch_offsets`` is one subproblem over every unknown, computed with the
plain kernels (scalar coefficients, the chunked float64 dot). With offsets, unknowns before
the first offset or at or past the last belong to no subproblem: updates leave them as they
are and dot products ignore them (Warp's "inactive tail"). Dot products are sums of float64
products in index order per subproblem, so they give the same bits on every run and for any
number of threads.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..array import array, empty
from ..codegen.intrinsics import tid
from ..kernel import kernel
from ..runtime.launch import launch
from ..types import float64, int32
from ._linear_operators import _axpby, dot


@kernel
def _axpby_batched(
    x: array(dtype=Any), y: array(dtype=Any), a: array(dtype=float64), b: array(dtype=float64),
    ids: array(dtype=int32), out: array(dtype=Any),
):  # fmt: skip
    """``out = a[k] x + b[k] y`` for the unknowns of subproblem ``k = ids[i]``; the others untouched."""
    i = tid()
    k = ids[i]
    if k >= 0:
        s = x[i]
        if b[k] == 0.0:
            out[i] = type(s)(a[k]) * s
        else:
            out[i] = type(s)(a[k]) * s + type(s)(b[k]) * y[i]


@kernel
def _products_batched(x: array(dtype=Any), y: array(dtype=Any), ids: array(dtype=int32), out: array(dtype=float64)):
    """``out[i] = x[i] * y[i]`` in float64 for unknowns of a subproblem, 0 for the others."""
    i = tid()
    if ids[i] >= 0:
        out[i] = float64(x[i]) * float64(y[i])
    else:
        out[i] = float64(0.0)


def host_offsets(offsets) -> np.ndarray:
    """``batch_offsets`` (a weft array or a sequence) as a 1-d int64 NumPy array."""
    return np.asarray(offsets.numpy() if hasattr(offsets, "numpy") else offsets).astype(np.int64).reshape(-1)


class Batches:
    """The subproblems of a solve over ``dofs`` scalar unknowns on ``device``.

    Args:
        offsets: ``None`` (one subproblem) or the ``batch_offsets`` array of ``B + 1`` first
            unknowns (in scalars, non-decreasing, the last at most ``dofs``).
        max_batch_length: the operator's bound on a subproblem's size, checked if given.
        vector_length: scalars per array element; offsets must be multiples of it.

    Raises:
        ValueError: offsets that are not a 1-d array of at least two non-decreasing integers
            within the vector, not aligned to whole elements, or longer than ``max_batch_length``.
    """

    def __init__(self, offsets, dofs: int, device, max_batch_length=None, vector_length: int = 1):
        self.device = device
        self.dofs = dofs
        if offsets is None:
            self.offsets = np.array([0, dofs], dtype=np.int64)
            self.batched = False
            self._ids = None
            self.count = 1
            return
        host = host_offsets(offsets)
        if host.shape[0] < 2:
            raise ValueError(f"batch_offsets needs at least two entries (B + 1 for B subproblems), got {host.shape[0]}")
        if np.any(np.diff(host) < 0) or host[0] < 0 or host[-1] > dofs:
            raise ValueError(f"batch_offsets must be non-decreasing within the {dofs} scalar unknowns, got {host.tolist()}")
        if vector_length > 1 and np.any(host % vector_length):
            raise ValueError(f"batch_offsets must be multiples of the vector length {vector_length}, got {host.tolist()}")
        longest = int(np.max(np.diff(host)))
        if max_batch_length is not None and longest > max_batch_length:
            raise ValueError(f"a subproblem has {longest} unknowns, more than max_batch_length={max_batch_length}")
        ids = np.full(dofs, -1, dtype=np.int32)
        for k in range(host.shape[0] - 1):
            ids[host[k] : host[k + 1]] = k
        self.offsets = host
        self.batched = True
        self.count = host.shape[0] - 1
        self._ids = array(ids, dtype=int32, device=device)

    def dot(self, x: array, y: array) -> np.ndarray:
        """Per subproblem, the sum of ``x * y`` over its unknowns (flat arrays of scalars), in float64."""
        if not self.batched:
            return np.array([dot(x, y)])
        products = empty(self.dofs, dtype=float64, device=self.device)
        if self.dofs:
            launch(_products_batched, dim=self.dofs, inputs=[x, y, self._ids, products], device=self.device)
        p = products.numpy()
        sums = np.zeros(self.count)
        starts, ends = self.offsets[:-1], self.offsets[1:]
        nonempty = ends > starts
        if np.any(nonempty):
            sums[nonempty] = np.add.reduceat(p, starts[nonempty])[: int(np.count_nonzero(nonempty))]
            # reduceat sums up to the next start; a subproblem followed by unknowns of no subproblem
            # (a gap or the tail) holds zeros there, so the sums are exact
        return sums

    def axpby(self, a, x: array, c, y: array, out: array, scalar):
        """``out = a x + c y`` per subproblem (``a``, ``c``: one coefficient each, or per subproblem)."""
        if not self.batched:
            a = float(a[0]) if isinstance(a, np.ndarray) else float(a)
            c = float(c[0]) if isinstance(c, np.ndarray) else float(c)
            launch(_axpby, dim=self.dofs, inputs=[x, y, scalar(a), scalar(c), out], device=self.device)
            return
        coeffs = np.empty((2, self.count))
        coeffs[0], coeffs[1] = a, c
        ca = array(coeffs[0], dtype=float64, device=self.device)
        cc = array(coeffs[1], dtype=float64, device=self.device)
        if self.dofs:
            launch(_axpby_batched, dim=self.dofs, inputs=[x, y, ca, cc, self._ids, out], device=self.device)


def divide(num: np.ndarray, den: np.ndarray) -> np.ndarray:
    """``num / den`` per subproblem, 0 where ``den`` is 0 (a subproblem that has converged exactly
    or broken down takes no more steps)."""
    out = np.zeros(np.broadcast(num, den).shape)
    np.divide(num, den, out=out, where=den != 0.0)
    return out


__all__ = ["Batches", "divide", "host_offsets"]
