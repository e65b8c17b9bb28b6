"""The operands of weft's iterative solvers: ``LinearOperator``, ``aslinearoperator`` (dense,
diagonal and BSR matrices) and ``preconditioner``, with the vector kernels the solvers share
(on flat arrays of scalars)."""

from __future__ import annotations

import math
from typing import Any, Callable

from ..array import array, array2d, array3d, empty, zeros
from ..types import float64
from ..codegen.intrinsics import tid
from ..kernel import kernel
from ..runtime.launch import launch
from ..sparse import BsrMatrix, bsr_get_diag, bsr_mv
from ._common import flat_view

# ---------------------------------------------------------------------------------------------
# kernels (flat arrays of scalars)


@kernel
def _axpby(x: array(dtype=Any), y: array(dtype=Any), a: Any, b: Any, out: array(dtype=Any)):
    """``out = a x + b y`` (``b == 0`` does not read ``y``); ``out`` may be ``x`` or ``y``."""
    i = tid()
    if b == type(b)(0.0):
        out[i] = a * x[i]
    else:
        out[i] = a * x[i] + b * y[i]


@kernel
def _dot_partials(x: array(dtype=Any), y: array(dtype=Any), chunk: int, out: array(dtype=float64)):
    """``out[c]``: the sum of ``x[j] * y[j]`` over chunk ``c``, accumulated in float64."""
    c = tid()
    acc = float64(0.0)
    for j in range(c * chunk, min((c + 1) * chunk, x.shape[0])):
        acc += float64(x[j]) * float64(y[j])
    out[c] = acc


DOT_CHUNK = 4096  # fixed: the same partial sums (and bits) for any thread count


def dot(x: array, y: array) -> float:
    """``sum(x * y)`` of two flat arrays of scalars, in float64, the same bits on every run."""
    n = x.shape[0]
    chunks = max(1, -(-n // DOT_CHUNK))
    partial = zeros(chunks, dtype=float64, device=x.device)
    if n:
        launch(_dot_partials, dim=chunks, inputs=[x, y, DOT_CHUNK, partial], device=x.device)
    return float(math.fsum(partial.numpy()))


@kernel
def _dense_mv(A: array2d(dtype=Any), x: array(dtype=Any), y: array(dtype=Any), z: array(dtype=Any), alpha: Any, beta: Any):
    """``z = alpha A x + beta y``, one row per thread."""
    i = tid()
    acc = type(alpha)(0.0)
    for j in range(A.shape[1]):
        acc += A[i, j] * x[j]
    if beta == type(beta)(0.0):
        z[i] = alpha * acc
    else:
        z[i] = alpha * acc + beta * y[i]


@kernel
def _diag_mv(d: array(dtype=Any), x: array(dtype=Any), y: array(dtype=Any), z: array(dtype=Any), alpha: Any, beta: Any):
    i = tid()
    if beta == type(beta)(0.0):
        z[i] = alpha * d[i] * x[i]
    else:
        z[i] = alpha * d[i] * x[i] + beta * y[i]


@kernel
def _inverse_diagonal(diag: array(dtype=Any), use_abs: int, out: array(dtype=Any)):
    """``out[i] = 1 / diag[i]`` (of ``|diag[i]|`` with ``use_abs``), 1 where ``diag[i]`` is 0."""
    i = tid()
    d = diag[i]
    if use_abs != 0:
        d = abs(d)
    if d == type(d)(0.0):
        out[i] = type(d)(1.0)
    else:
        out[i] = type(d)(1.0) / d


@kernel
def _dense_diagonal(A: array2d(dtype=Any), out: array(dtype=Any)):
    i = tid()
    out[i] = A[i, i]


@kernel
def _block_diagonal_coefficients(blocks: array3d(dtype=Any), out: array(dtype=Any)):
    """``out[i * r + k] = blocks[i, k, k]``: the diagonal coefficients of square blocks."""
    i, k = tid()
    out[i * blocks.shape[1] + k] = blocks[i, k, k]


# ---------------------------------------------------------------------------------------------
# operators


def _flat(a: array) -> array:
    """The scalars of a contiguous array of scalars or vectors, as a 1-d view."""
    return flat_view(a, "solver vector")


def _scalar_type(dtype):
    return getattr(dtype, "_scalar", dtype)


class LinearOperator:
    """A linear map for the solvers: ``matvec(x, y, z, alpha, beta)`` computes
    ``z = alpha * A @ x + beta * y`` on arrays shaped like the solution vector.

    Args:
        shape: ``(rows, columns)`` (in array entries, as the arrays passed to ``matvec``).
        dtype: the element type of the operator.
        device: where ``matvec`` runs.
        matvec: the product routine.
        batch_offsets: ``B + 1`` first scalar unknowns of ``B`` independent subproblems (the
            operator must not couple them); unknowns outside them are left alone by the solvers.
        max_batch_length: an upper bound on a subproblem's number of scalar unknowns (checked).
    """

    def __init__(self, shape, dtype, device, matvec: Callable, batch_offsets=None, max_batch_length=None):
        if max_batch_length is not None:
            if batch_offsets is None:
                raise ValueError("max_batch_length requires batch_offsets")
            if max_batch_length < 0:
                raise ValueError("max_batch_length must be non-negative")
        self._shape = tuple(shape)
        self._dtype = dtype
        self._device = device
        self._matvec = matvec
        self._batch_offsets = batch_offsets
        self._max_batch_length = max_batch_length

    shape = property(lambda self: self._shape)
    dtype = property(lambda self: self._dtype)
    device = property(lambda self: self._device)
    matvec = property(lambda self: self._matvec)
    batch_offsets = property(lambda self: self._batch_offsets)
    max_batch_length = property(lambda self: self._max_batch_length)

    @property
    def scalar_type(self):
        return _scalar_type(self._dtype)

    @property
    def batch_count(self) -> int:
        return 1 if self._batch_offsets is None else self._batch_offsets.shape[0] - 1


def aslinearoperator(A, batch_offsets=None, max_batch_length=None) -> LinearOperator | None:
    """``A`` as a ``LinearOperator``: a ``BsrMatrix``, a 2-d array (dense matrix), a 1-d array (a
    diagonal matrix, of scalars or of vectors), or a ``LinearOperator`` (returned as is);
    ``None`` stays ``None``.

    Raises:
        ValueError: anything else.
    """
    if A is None or isinstance(A, LinearOperator):
        return A
    if isinstance(A, BsrMatrix):

        def sparse_mv(x, y, z, alpha, beta):
            if beta != 0.0 and z.ptr != y.ptr:
                _copy_into(z, y)
            bsr_mv(A, x, z, alpha, beta)

        return LinearOperator(A.shape, A.scalar_type, A.device, sparse_mv, batch_offsets, max_batch_length)
    if isinstance(A, array) and A.ndim == 2:

        def dense_mv(x, y, z, alpha, beta):
            s = A.dtype
            launch(_dense_mv, dim=A.shape[0], inputs=[A, _flat(x), _flat(y), _flat(z), s(alpha), s(beta)], device=A.device)

        return LinearOperator(A.shape, A.dtype, A.device, dense_mv, batch_offsets, max_batch_length)
    if isinstance(A, array) and A.ndim == 1:
        d = _flat(A)

        def diag_mv(x, y, z, alpha, beta):
            s = d.dtype
            launch(_diag_mv, dim=d.shape[0], inputs=[d, _flat(x), _flat(y), _flat(z), s(alpha), s(beta)], device=A.device)

        return LinearOperator((A.shape[0], A.shape[0]), A.dtype, A.device, diag_mv, batch_offsets, max_batch_length)
    raise ValueError(f"Unable to create LinearOperator from {A!r}")


def _copy_into(dest: array, src: array):
    from ..array import copy

    copy(dest, src)


def preconditioner(A, ptype: str = "diag") -> LinearOperator | None:
    """A preconditioner for ``A``: ``"diag"`` (Jacobi: the inverse of the diagonal, 1 where a
    diagonal coefficient is zero), ``"diag_abs"`` (of its absolute values), or ``"id"`` (none:
    returns ``None``).

    Raises:
        ValueError: another ``ptype``, or a matrix that is not a dense 2-d array or BSR matrix.
    """
    if ptype == "id":
        return None
    if ptype not in ("diag", "diag_abs"):
        raise ValueError(f"Unsupported preconditioner type '{ptype}'")
    use_abs = 1 if ptype == "diag_abs" else 0
    if isinstance(A, BsrMatrix):
        r, c = A.block_shape
        if r != c:
            raise ValueError(f"a diagonal preconditioner needs square blocks, got {A.block_shape}")
        from ..sparse.matrix import scalar_blocks
        from ..vector_types import vector

        blocks = scalar_blocks(bsr_get_diag(A), A.block_shape)
        diag = empty(blocks.shape[0] * r, dtype=A.scalar_type, device=A.device)
        launch(_block_diagonal_coefficients, dim=(blocks.shape[0], r), inputs=[blocks, diag], device=A.device)
        inverse = empty(blocks.shape[0], dtype=A.scalar_type if r == 1 else vector(r, A.scalar_type), device=A.device)
        launch(_inverse_diagonal, dim=diag.shape[0], inputs=[diag, use_abs, _flat(inverse)], device=A.device)
        return aslinearoperator(inverse)
    if isinstance(A, array) and A.ndim == 2:
        diag = empty(A.shape[0], dtype=A.dtype, device=A.device)
        launch(_dense_diagonal, dim=A.shape[0], inputs=[A, diag], device=A.device)
        inverse = empty(A.shape[0], dtype=A.dtype, device=A.device)
        launch(_inverse_diagonal, dim=A.shape[0], inputs=[diag, use_abs, inverse], device=A.device)
        return aslinearoperator(inverse)
    raise ValueError("Unsupported source matrix type for building diagonal preconditioner")
