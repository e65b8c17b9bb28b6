"""The block-sparse-row matrix: ``BsrMatrix``, its block types, ``bsr_zeros`` / ``bsr_set_zero``,
and the storage helpers the other modules of weft.sparse share.

Layout (Warp's "compact" topology): ``offsets`` (``nrow + 1`` int32), the blocks of row ``i`` at
``offsets[i]:offsets[i+1]``, their block columns in ``columns`` (sorted within a row, no
duplicates) and their values in ``values`` (one block per element: a scalar, or a weft matrix
type for blocks of several rows/columns). ``columns`` and ``values`` may be longer than ``nnz``.
weft keeps ``nnz`` exact after every operation (Warp may leave an upper bound until
``nnz_sync()``).
"""

from __future__ import annotations

import numpy as np

from .. import types as wt
from .. import vector_types as vt
from ..array import array, empty, zeros

BSR_STATUS_SUCCESS = 0
BSR_STATUS_ROW_CAPACITY_EXCEEDED = 1


def block_shape_of(block_type) -> tuple:
    if wt.is_scalar(block_type):
        return (1, 1)
    if getattr(block_type, "_kind", None) == "matrix":
        return tuple(block_type._shape)
    raise ValueError(
        f"BsrMatrix block type must be either warp matrix or scalar, got {wt.type_repr(block_type)}"
    )


def scalar_of(block_type):
    return block_type if wt.is_scalar(block_type) else block_type._scalar


def block_type_for(shape: tuple, scalar):
    """A scalar for 1x1 blocks, else the matrix type of that shape."""
    return scalar if tuple(shape) == (1, 1) else vt.matrix(tuple(shape), scalar)


def canonical_block_type(block_type):
    """Python ``float``/``int`` as weft's float32/int32; checks the type is a scalar or matrix."""
    block_type = {float: wt.float32, int: wt.int32}.get(block_type, block_type)
    block_shape_of(block_type)
    return block_type


class BsrMatrix:
    """A block-sparse-row matrix (``warp.sparse.BsrMatrix``): ``nrow`` x ``ncol`` blocks of
    ``block_shape``, ``nnz`` of them stored. Build one with ``bsr_zeros``, ``bsr_from_triplets``,
    ``bsr_diag``, ``bsr_identity``, ``bsr_copy`` or an operator (``A + B``, ``2.0 * A``,
    ``A @ B``); ``A @ x`` multiplies by an array of vectors (or scalars)."""

    def __init__(self, block_type, device=None):
        self._block_type = canonical_block_type(block_type)
        self.nrow = 0
        self.ncol = 0
        self.nnz = 0
        self.row_counts = None  # compact layout; Warp's padded layout keeps a count per row (padded.py)
        self._status = BSR_STATUS_SUCCESS
        self.offsets = zeros(1, dtype=wt.int32, device=device)
        self.columns = empty(0, dtype=wt.int32, device=device)
        self.values = empty(0, dtype=self._block_type, device=device)

    # ------------------------------------------------------------------ description
    @property
    def dtype(self):
        """The block type: a scalar type, or a weft matrix type."""
        return self._block_type

    @property
    def scalar_type(self):
        return scalar_of(self._block_type)

    @property
    def block_shape(self) -> tuple:
        return block_shape_of(self._block_type)

    @property
    def block_size(self) -> int:
        r, c = self.block_shape
        return r * c

    @property
    def shape(self) -> tuple:
        r, c = self.block_shape
        return (self.nrow * r, self.ncol * c)

    @property
    def device(self):
        return self.values.device

    @property
    def requires_grad(self) -> bool:
        return bool(self.values.requires_grad)

    @requires_grad.setter
    def requires_grad(self, value: bool):
        self.values.requires_grad = value

    @property
    def scalar_values(self) -> array:
        """``values`` as a 3-d array of scalars, ``(capacity, block rows, block columns)``."""
        return scalar_blocks(self.values, self.block_shape)

    def __repr__(self):
        return (
            f"BsrMatrix(nrow={self.nrow}, ncol={self.ncol}, nnz={self.nnz}, "
            f"block_type={wt.type_repr(self._block_type)}, device={self.device})"
        )

    # ------------------------------------------------------------------ topology
    def uncompress_rows(self, out: array = None) -> array:
        """The row of each stored block (``nnz`` entries, -1 for the unused slots of a padded
        matrix; ``out`` if given, else a new int32 array)."""
        from . import padded
        from .topology import rows_of

        rows = padded.uncompress_rows(self) if padded.is_padded(self) else rows_of(self.offsets.numpy())
        if out is None:
            return array(rows, dtype=wt.int32, device=self.device)
        if out.shape[0] < len(rows):
            raise ValueError(f"uncompress_rows: 'out' holds {out.shape[0]} entries, the matrix has {len(rows)} blocks")
        if len(rows):
            out[: len(rows)].assign(rows)
        return out

    def nnz_sync(self) -> int:
        """The number of block slots the rows span (``offsets[nrow]``), also made ``nnz``. weft
        keeps ``nnz`` exact after its own operations; it differs after ``notify_nnz_changed(n)``
        (an upper bound, as in Warp) and for padded matrices allocated with ``nnz_capacity``."""
        self.nnz = int(self.offsets.numpy()[self.nrow]) if self.nrow else 0
        return self.nnz

    def copy_nnz_async(self) -> None:
        """Refresh ``nnz`` from ``offsets`` (after ``offsets`` was written by a kernel)."""
        self.nnz = int(self.offsets.numpy()[self.nrow]) if self.nrow else 0

    def notify_nnz_changed(self, nnz: int | None = None, nnz_capacity: int | None = None) -> None:
        """Tell the matrix its ``offsets`` changed: ``nnz`` given (an upper bound: ``columns`` and
        ``values`` grow to hold it, or ``nnz_capacity``), or read from ``offsets``."""
        if nnz is None:
            self.copy_nnz_async()
        else:
            self.nnz = int(nnz)
        room = max(self.nnz, int(nnz_capacity or 0))
        self.columns, self.values = _grown(self.columns, room), _grown(self.values, room)

    def status_sync(self) -> int:
        """``BSR_STATUS_ROW_CAPACITY_EXCEEDED`` once a ``topology="padded"`` operation found a
        row without room for its blocks (until ``clear_status()``), else ``BSR_STATUS_SUCCESS``."""
        return self._status

    def clear_status(self) -> None:
        """Reset the status to ``BSR_STATUS_SUCCESS``."""
        self._status = BSR_STATUS_SUCCESS

    def status_message(self) -> str:
        """The status in words."""
        if self._status == BSR_STATUS_ROW_CAPACITY_EXCEEDED:
            return "a row's blocks exceeded its capacity in the padded layout; the blocks that fit were kept"
        return "success"

    # ------------------------------------------------------------------ operators
    def __add__(self, y):
        from . import algebra

        return algebra.add(self, y)

    __radd__ = __add__

    def __iadd__(self, y):
        from . import algebra

        return algebra.bsr_axpy(y, self)

    def __sub__(self, y):
        from . import algebra

        return algebra.add(self, y, -1.0)

    def __rsub__(self, x):
        from . import algebra

        return algebra.add(x, self, -1.0)

    def __isub__(self, y):
        from . import algebra

        return algebra.bsr_axpy(y, self, alpha=-1.0)

    def __mul__(self, y):
        return BsrScaled(self, y)

    __rmul__ = __mul__

    def __imul__(self, y):
        from . import algebra

        return algebra.bsr_scale(self, y)

    def __truediv__(self, y):
        return BsrScaled(self, 1.0 / y)

    def __neg__(self):
        return BsrScaled(self, -1.0)

    def __matmul__(self, y):
        from . import algebra

        return algebra.matmul(self, y)

    def __rmatmul__(self, x):
        from . import algebra

        return algebra.bsr_mv(self, x, transpose=True)

    def __imatmul__(self, y):
        from . import algebra

        return algebra.bsr_mm(self, y, self)

    def transpose(self):
        """The transposed matrix (a new matrix)."""
        from .build import bsr_transposed

        return bsr_transposed(self)


class BsrScaled:
    """``alpha * A`` before it is evaluated: products and sums use the scale directly; ``eval()``
    makes the matrix."""

    def __init__(self, mat: BsrMatrix, scale):
        self.mat = mat
        self.scale = scale

    def __getattr__(self, name):
        if name in ("nrow", "ncol", "nnz", "offsets", "columns", "row_counts", "dtype", "scalar_type",
                    "block_shape", "block_size", "shape", "device", "requires_grad"):
            return getattr(self.mat, name)
        raise AttributeError(name)

    def eval(self) -> BsrMatrix:
        from .build import bsr_copy

        return bsr_copy(self)

    def transpose(self):
        from .build import bsr_transposed

        return BsrScaled(bsr_transposed(self.mat), self.scale)

    def __mul__(self, y):
        return BsrScaled(self.mat, self.scale * y)

    __rmul__ = __mul__

    def __truediv__(self, y):
        return BsrScaled(self.mat, self.scale / y)

    def __neg__(self):
        return BsrScaled(self.mat, -self.scale)

    def __add__(self, y):
        from . import algebra

        return algebra.add(self, y)

    __radd__ = __add__

    def __sub__(self, y):
        from . import algebra

        return algebra.add(self, y, -1.0)

    def __rsub__(self, x):
        from . import algebra

        return algebra.add(x, self, -1.0)

    def __matmul__(self, y):
        from . import algebra

        return algebra.matmul(self, y)

    def __rmatmul__(self, x):
        from . import algebra

        return algebra.bsr_mv(self, x, transpose=True)


def split(m) -> tuple:
    """``(matrix, scale)`` of a matrix or a scaled matrix, the matrix compact (a padded one's
    active blocks: ``padded.compact``)."""
    from .padded import compact

    if isinstance(m, BsrScaled):
        return compact(m.mat), m.scale
    if isinstance(m, BsrMatrix):
        return compact(m), 1.0
    raise TypeError(f"expected a BsrMatrix (or a scaled one), got {type(m).__name__}")


_specialised: dict = {}


def bsr_matrix_t(dtype):
    """The BsrMatrix class of one block type (for annotations and ``isinstance``)."""
    dtype = canonical_block_type(dtype)
    cls = _specialised.get(dtype)
    if cls is None:
        cls = type(f"BsrMatrix_{wt.type_repr(dtype)}", (BsrMatrix,), {"__init__": _typed_init(dtype)})
        _specialised[dtype] = cls
    return cls


def _typed_init(dtype):
    def __init__(self, block_type=None, device=None):
        BsrMatrix.__init__(self, dtype if block_type is None else block_type, device)

    return __init__


# ---------------------------------------------------------------------------------------------
# storage helpers


def scalar_blocks(values: array, block_shape: tuple) -> array:
    """A block array as ``(n, rows, cols)`` scalars (shares memory and gradient)."""
    if wt.is_scalar(values.dtype):
        return values.reshape((values.shape[0], *block_shape))
    scalars = values.view(values.dtype._scalar)
    return scalars if scalars.ndim == 3 else scalars.reshape((values.shape[0], *block_shape))  # 1x1 blocks


def store(bsr: BsrMatrix, nrow: int, ncol: int, offsets: np.ndarray, columns: np.ndarray, values=None):
    """Give ``bsr`` a new topology (host arrays) and, if given, a new values array. ``columns``
    and ``offsets`` are copied into the matrix's arrays where they fit."""
    device = bsr.device
    bsr.nrow, bsr.ncol = int(nrow), int(ncol)
    nnz = int(offsets[-1]) if len(offsets) else 0
    bsr.offsets = array(offsets.astype(np.int32), dtype=wt.int32, device=device)
    if bsr.columns.shape[0] >= nnz and nnz:
        bsr.columns[:nnz].assign(columns[:nnz].astype(np.int32))
    elif nnz:
        bsr.columns = array(columns[:nnz].astype(np.int32), dtype=wt.int32, device=device)
    bsr.nnz = nnz
    bsr.row_counts = None
    if values is not None:
        bsr.values = values


def _grown(a: array, room: int) -> array:
    """``a`` if it holds ``room`` elements, else a zeroed array of ``room`` starting with ``a``'s."""
    if a.shape[0] >= room:
        return a
    grown = zeros(room, dtype=a.dtype, device=a.device, requires_grad=a.requires_grad)
    if a.shape[0]:
        grown[: a.shape[0]].assign(a)
    return grown


def fresh_values(bsr: BsrMatrix, count: int, requires_grad: bool = False) -> array:
    """A zeroed block array for ``count`` blocks of ``bsr``'s type on its device."""
    return zeros(max(count, 0), dtype=bsr.dtype, device=bsr.device, requires_grad=requires_grad or bsr.requires_grad)


def bsr_zeros(
    rows_of_blocks: int,
    cols_of_blocks: int,
    block_type,
    device=None,
    *,
    topology=None,
    row_capacity=None,
    nnz_capacity: int | None = None,
) -> BsrMatrix:
    """An empty (all-zero) ``rows_of_blocks`` x ``cols_of_blocks`` block matrix.

    Args:
        block_type: a scalar type (a CSR matrix) or a weft matrix type (its blocks).
        topology: ``"compact"`` or ``"padded"`` (the default when ``row_capacity`` is given).
        row_capacity: slots reserved per row in the padded layout: an int, or an int array with
            one entry per row.
        nnz_capacity: blocks to reserve room for.

    Raises:
        ValueError: a block type that is neither a scalar nor a matrix, a negative size or
            capacity, or an unknown topology.
    """
    if topology is None:
        topology = "padded" if row_capacity is not None else "compact"
    bsr = BsrMatrix(block_type, device)
    bsr.nrow, bsr.ncol = int(rows_of_blocks), int(cols_of_blocks)
    bsr_set_zero(bsr, rows_of_blocks, cols_of_blocks, topology=topology, row_capacity=row_capacity, nnz_capacity=nnz_capacity)
    return bsr


def bsr_set_zero(
    bsr: BsrMatrix,
    rows_of_blocks: int | None = None,
    cols_of_blocks: int | None = None,
    *,
    topology="compact",
    row_capacity=None,
    nnz_capacity: int | None = None,
):
    """Remove every block of ``bsr`` (optionally resizing it to the given number of blocks).

    ``topology="masked"`` keeps the blocks and zeroes their values instead; ``"padded"`` empties
    every row but keeps (or, with ``row_capacity``, sets) the rows' capacity: retained rows keep
    theirs, added rows get none."""
    if topology == "masked":
        bsr.values.zero_()
        return
    if topology not in ("compact", "padded"):
        raise ValueError(f"Unknown topology {topology!r}: use 'compact', 'padded' or 'masked'")
    nrow = bsr.nrow if rows_of_blocks is None else int(rows_of_blocks)
    ncol = bsr.ncol if cols_of_blocks is None else int(cols_of_blocks)
    if nrow < 0 or ncol < 0:
        raise ValueError(f"a BSR matrix needs non-negative sizes, got {nrow} x {ncol} blocks")
    if topology == "padded" or row_capacity is not None:
        from . import padded

        if row_capacity is None:  # keep the capacity of the rows that stay
            old = np.diff(bsr.offsets.numpy().astype(np.int64))  # a compact row's capacity: its blocks
            row_capacity = np.concatenate((old[:nrow], np.zeros(max(nrow - len(old), 0), np.int64)))
        padded.set_padded_zero(bsr, nrow, ncol, padded.capacity_offsets(row_capacity, nrow), nnz_capacity)
        return
    store(bsr, nrow, ncol, np.zeros(nrow + 1, np.int32), np.zeros(0, np.int32))
    if nnz_capacity is not None and bsr.values.shape[0] < nnz_capacity:
        bsr.columns = empty(int(nnz_capacity), dtype=wt.int32, device=bsr.device)
        bsr.values = empty(int(nnz_capacity), dtype=bsr.dtype, device=bsr.device)

