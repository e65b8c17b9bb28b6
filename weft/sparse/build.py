"""Making and reshaping BSR matrices: from triplets, copies and assignments (between scalar
types, block shapes and topologies), transposes, diagonals, compression."""

from __future__ import annotations

import numpy as np

from .. import types as wt
from ..array import array, zeros
from ..runtime.launch import launch
from . import _kernels as k
from . import padded
from . import topology as topo
from .matrix import (
    BsrMatrix,
    block_shape_of,
    block_type_for,
    canonical_block_type,
    fresh_values,
    scalar_blocks,
    scalar_of,
    split,
    store,
)

_INT_TYPES = (wt.int32,)


def _topology(topology, masked: bool) -> str:
    topology = topology or ("masked" if masked else "compact")
    if topology not in ("compact", "masked", "padded"):
        raise ValueError(f"Unknown topology {topology!r}: use 'compact', 'masked' or 'padded'")
    return topology


def _triplet_blocks(values: array, block_shape: tuple) -> array:
    """Triplet values as ``(n, rows, cols)`` scalars: an array of blocks, of scalars for 1x1
    blocks, or of scalars shaped ``(n, rows, cols)``."""
    if values.ndim == 3 and wt.is_scalar(values.dtype):
        if tuple(values.shape[1:]) != tuple(block_shape):
            raise ValueError(f"triplet values of shape {values.shape} do not hold {block_shape} blocks")
        return values
    if values.ndim != 1:
        raise ValueError(f"triplet values must be a 1-d array of blocks or a 3-d array of scalars, got shape {values.shape}")
    if wt.is_scalar(values.dtype):
        if block_shape == (1, 1):
            return values.reshape((values.shape[0], 1, 1))
        raise ValueError(f"triplet values of scalars need 1x1 blocks, the matrix has {block_shape} blocks")
    if block_shape_of(values.dtype) != tuple(block_shape):
        raise ValueError(f"triplet values of type {wt.type_repr(values.dtype)} do not hold {block_shape} blocks")
    return scalar_blocks(values, block_shape)


def bsr_set_from_triplets(
    dest: BsrMatrix,
    rows: array,
    columns: array,
    values: array | None = None,
    count: array | None = None,
    prune_numerical_zeros: bool = True,
    masked: bool = False,
    topology=None,
):
    """Fill ``dest`` from triplets ``(rows[k], columns[k], values[k])``: blocks at the same
    position are summed (in input order), triplets outside the matrix are ignored.

    Args:
        values: an array of blocks (or of scalars for 1x1 blocks, or ``(n, rows, cols)``
            scalars); ``None`` sets the topology only (values zero).
        count: a one-element int array: use only the first ``count[0]`` triplets.
        prune_numerical_zeros: ignore triplets whose block is all zeros.
        topology: ``"compact"`` (the blocks of the triplets), ``"masked"`` (keep ``dest``'s
            blocks; triplets elsewhere are ignored) or ``"padded"`` (the blocks of the triplets,
            in ``dest``'s row slots: ``padded.py``).

    Raises:
        TypeError: ``rows`` or ``columns`` are not int32 arrays.
    """
    mode = _topology(topology, masked)
    if rows.dtype not in _INT_TYPES or columns.dtype not in _INT_TYPES:
        raise TypeError("Rows and columns arrays must be of type int32")
    if mode == "padded" or padded.is_padded(dest):
        padded.into(
            dest, mode, lambda target, m: bsr_set_from_triplets(target, rows, columns, values, count, prune_numerical_zeros, topology=m)
        )
        return
    n = min(rows.shape[0], columns.shape[0])
    if values is not None:
        n = min(n, values.shape[0])
    if count is not None:
        n = min(n, int(count.numpy()[0]))
    r = rows.numpy()[:n]
    c = columns.numpy()[:n]
    src = None if values is None else _triplet_blocks(values, dest.block_shape)
    if src is not None and prune_numerical_zeros and n:
        nonzero = np.any(src.numpy()[:n].reshape(n, -1) != 0, axis=1)
        r = np.where(nonzero, r, -1)
    order, starts, block_rows, block_cols = topo.triplets(r, c, dest.nrow, dest.ncol)
    if mode == "masked":
        keep_keys = topo.keys_of(topo.rows_of(dest.offsets.numpy()), dest.columns.numpy()[: dest.nnz], dest.ncol)
        where = topo.locate(keep_keys, topo.keys_of(block_rows, block_cols, dest.ncol))
        kept, starts = topo.retarget(starts, where, len(keep_keys))
        order = order[kept]
        offsets, cols = dest.offsets.numpy(), dest.columns.numpy()[: dest.nnz]
    else:
        offsets, cols = topo.offsets_of(block_rows, dest.nrow), block_cols
    blocks = int(offsets[-1])
    grad = src is not None and src.requires_grad
    out = fresh_values(dest, blocks, requires_grad=grad)
    if src is not None and blocks:
        device = dest.device
        order_a, starts_a = array(order, dtype=wt.int32, device=device), array(starts, dtype=wt.int32, device=device)
        if values.ndim == 1 and values.dtype == dest.dtype:  # whole blocks, one thread each
            launch(k.segment_sum_whole_blocks, dim=blocks, inputs=[values, order_a, starts_a, out], device=device)
        else:
            launch(
                k.segment_sum,
                dim=(blocks, *dest.block_shape),
                inputs=[src, order_a, starts_a, scalar_blocks(out, dest.block_shape)],
                device=device,
            )
    store(dest, dest.nrow, dest.ncol, offsets, cols, out)


def bsr_from_triplets(rows_of_blocks: int, cols_of_blocks: int, rows, columns, values, prune_numerical_zeros: bool = True):
    """A new matrix from triplets (see ``bsr_set_from_triplets``); the block type is that of
    ``values`` (a 3-d array of scalars gives matrix blocks of its last two dimensions)."""
    if values.ndim == 3:
        block_type = block_type_for(values.shape[1:], values.dtype)
    else:
        block_type = values.dtype
    dest = BsrMatrix(block_type, values.device)
    dest.nrow, dest.ncol = int(rows_of_blocks), int(cols_of_blocks)
    dest.offsets = zeros(dest.nrow + 1, dtype=wt.int32, device=values.device)
    bsr_set_from_triplets(dest, rows, columns, values, prune_numerical_zeros=prune_numerical_zeros)
    return dest


# ---------------------------------------------------------------------------------------------
# assignment between block shapes, scalar types and topologies


def _check_reblock(src_shape, dst_shape, total):
    for s, d in zip(src_shape, dst_shape):
        if s % d and d % s:
            raise ValueError(f"Incompatible dest and src block shapes: {tuple(dst_shape)} and {tuple(src_shape)}")
    if total[0] % dst_shape[0] or total[1] % dst_shape[1]:
        raise ValueError(
            f"The requested block shape {tuple(dst_shape)} does not evenly divide the source matrix of total size "
            f"{tuple(total)}"
        )


def _scalar_targets(src: BsrMatrix, dst_shape, dst_ncol):
    """For each scalar of ``src``'s blocks (in storage order), the key of the destination block
    it lands in and its flat position inside that block."""
    br, bc = src.block_shape
    dr, dc = dst_shape
    rows = topo.rows_of(src.offsets.numpy()).astype(np.int64)
    cols = src.columns.numpy()[: len(rows)].astype(np.int64)
    gr = (rows[:, None, None] * br + np.arange(br)[None, :, None]) + np.zeros((1, 1, bc), np.int64)
    gc = (cols[:, None, None] * bc + np.arange(bc)[None, None, :]) + np.zeros((1, br, 1), np.int64)
    keys = (gr // dr) * max(dst_ncol, 1) + gc // dc
    inner = (gr % dr) * dc + gc % dc
    return keys.reshape(-1), inner.reshape(-1)


def bsr_assign(dest: BsrMatrix, src, structure_only: bool = False, masked: bool = False, topology=None):
    """Copy ``src`` (a matrix or ``alpha * matrix``) into ``dest``, converting the scalar type and
    re-blocking when ``dest``'s block shape differs (each block dimension must divide the other).

    Args:
        structure_only: copy the topology only (``dest``'s values are zero).
        topology: ``"compact"`` (``src``'s blocks), ``"masked"`` (``dest`` keeps its blocks;
            entries of ``src`` elsewhere are dropped) or ``"padded"`` (``src``'s blocks in
            ``dest``'s row slots).

    Raises:
        ValueError: incompatible block shapes, or a block shape that does not divide the
            matrix.
    """
    mode = _topology(topology, masked)
    if mode == "padded" or padded.is_padded(dest):
        padded.into(dest, mode, lambda target, m: bsr_assign(target, src, structure_only, topology=m))
        return
    mat, alpha = split(src)
    total = mat.shape
    _check_reblock(mat.block_shape, dest.block_shape, total)
    nrow, ncol = total[0] // dest.block_shape[0], total[1] // dest.block_shape[1]
    keys, inner = _scalar_targets(mat, dest.block_shape, ncol)
    if mode == "masked":
        if (dest.nrow, dest.ncol) != (nrow, ncol):
            raise ValueError(f"masked assignment needs a {nrow} x {ncol} block destination, got {dest.nrow} x {dest.ncol}")
        offsets, cols = dest.offsets.numpy(), dest.columns.numpy()[: dest.nnz]
        block_keys = topo.keys_of(topo.rows_of(offsets), cols, ncol)
    else:
        block_keys = np.unique(keys)
        offsets = topo.offsets_of((block_keys // max(ncol, 1)).astype(np.int64), nrow)
        cols = (block_keys % max(ncol, 1)).astype(np.int32)
    blocks = len(block_keys)
    out = fresh_values(dest, blocks, requires_grad=mat.requires_grad and not structure_only)
    if not structure_only and len(keys):
        where = topo.locate(block_keys, keys)
        target = np.where(where >= 0, where.astype(np.int64) * dest.block_size + inner, -1).astype(np.int32)
        device = dest.device
        launch(
            k.scatter_scalars,
            dim=len(target),
            inputs=[_flat(mat.values, mat.nnz, mat.block_shape), array(target, dtype=wt.int32, device=device),
                    dest.scalar_type(alpha), _flat(out, blocks, dest.block_shape)],
            device=device,
        )
    store(dest, nrow, ncol, offsets, cols, out)


def _flat(values: array, count: int, block_shape) -> array:
    """The scalars of the first ``count`` blocks, flat (storage order)."""
    return scalar_blocks(values[:count], block_shape).reshape((count * block_shape[0] * block_shape[1],))


def bsr_copy(A, scalar_type=None, block_shape=None, structure_only: bool = False, topology="compact") -> BsrMatrix:
    """A new matrix equal to ``A`` (a matrix or ``alpha * matrix``), optionally with another
    scalar type or block shape (see ``bsr_assign``). ``topology="padded"`` gives the copy
    ``A``'s row capacity (its slots per row) with the same blocks in use."""
    stored, _ = _unscaled(A)
    mat, _ = split(A)
    scalar = canonical_block_type(scalar_type) if scalar_type is not None else mat.scalar_type
    shape = tuple(block_shape) if block_shape is not None else mat.block_shape
    dest = BsrMatrix(block_type_for(shape, scalar), mat.device)
    if topology == "padded" and shape == mat.block_shape:  # A's capacity per row, every row empty
        padded.set_padded_zero(dest, stored.nrow, stored.ncol, stored.offsets.numpy())
    bsr_assign(dest, A, structure_only=structure_only, topology=topology)
    return dest


def _unscaled(A):
    """``(matrix, scale)`` with the matrix as stored (padded or not)."""
    from .matrix import BsrScaled

    return (A.mat, A.scale) if isinstance(A, BsrScaled) else (A, 1.0)


# ---------------------------------------------------------------------------------------------
# transposes


def bsr_set_transpose(dest: BsrMatrix, src, masked: bool = False, topology=None):
    """``dest = transpose(src)``; ``dest``'s blocks must have the transposed shape.
    ``topology`` as for ``bsr_assign``.

    Raises:
        ValueError: ``dest``'s block shape is not ``src``'s transposed.
    """
    mode = _topology(topology, masked)
    if mode == "padded" or padded.is_padded(dest):
        padded.into(dest, mode, lambda target, m: bsr_set_transpose(target, src, topology=m))
        return
    mat, alpha = split(src)
    br, bc = mat.block_shape
    if dest.block_shape != (bc, br):
        raise ValueError(f"Destination block shape must be {(bc, br)}, got {dest.block_shape}")
    t_offsets, t_blocks, t_rows = topo.transposed(mat.offsets.numpy(), mat.columns.numpy(), mat.ncol)
    nrow, ncol = mat.ncol, mat.nrow
    if mode == "masked":
        if (dest.nrow, dest.ncol) != (nrow, ncol):
            raise ValueError(f"masked transpose needs a {nrow} x {ncol} block destination, got {dest.nrow} x {dest.ncol}")
        offsets, cols = dest.offsets.numpy(), dest.columns.numpy()[: dest.nnz]
        t_keys = topo.keys_of(topo.rows_of(t_offsets), t_rows, ncol)
        where = topo.locate(t_keys, topo.keys_of(topo.rows_of(offsets), cols, ncol))
        source = np.where(where >= 0, t_blocks[np.maximum(where, 0)], -1).astype(np.int32)
    else:
        offsets, cols, source = t_offsets, t_rows, t_blocks
    blocks = int(offsets[-1])
    out = fresh_values(dest, blocks, requires_grad=mat.requires_grad)
    if blocks:
        device = dest.device
        launch(
            k.gather_transposed,
            dim=(blocks, bc, br),
            inputs=[scalar_blocks(mat.values, (br, bc)), array(source, dtype=wt.int32, device=device),
                    dest.scalar_type(alpha), scalar_blocks(out, (bc, br))],
            device=device,
        )
    store(dest, nrow, ncol, offsets, cols, out)


def bsr_transposed(A) -> BsrMatrix:
    """A new matrix, the transpose of ``A`` (a matrix or ``alpha * matrix``).

    Args:
        A: A ``BsrMatrix`` or ``alpha * matrix``.

    Returns:
        A new ``BsrMatrix`` with the transposed block shape.
    """
    mat, _ = split(A)
    br, bc = mat.block_shape
    dest = BsrMatrix(block_type_for((bc, br), mat.scalar_type), mat.device)
    bsr_set_transpose(dest, A)
    return dest


# ---------------------------------------------------------------------------------------------
# diagonals


def bsr_get_diag(A, out: array | None = None) -> array:
    """The diagonal blocks of ``A`` (``min(nrow, ncol)`` of them; zero where a diagonal block is
    absent), in ``out`` if given."""
    mat, alpha = split(A)
    n = min(mat.nrow, mat.ncol)
    if out is None:
        out = zeros(n, dtype=mat.dtype, device=mat.device)
    elif out.shape[0] < n or out.dtype != mat.dtype:
        raise ValueError(f"bsr_get_diag: 'out' must hold {n} blocks of type {wt.type_repr(mat.dtype)}")
    if n:
        launch(
            k.diagonal_blocks,
            dim=(n, *mat.block_shape),
            inputs=[mat.offsets, mat.columns, scalar_blocks(mat.values, mat.block_shape), mat.scalar_type(alpha),
                    scalar_blocks(out, mat.block_shape)],
            device=mat.device,
        )
    return out


def bsr_set_diag(A: BsrMatrix, diag, rows_of_blocks: int | None = None, cols_of_blocks: int | None = None) -> None:
    """Make ``A`` block-diagonal: ``diag`` is an array of blocks (one per row) or one block (or
    scalar) repeated; the size comes from ``rows_of_blocks`` / ``cols_of_blocks``, else from
    ``diag``'s length (square)."""
    if isinstance(diag, array):
        nrow = diag.shape[0] if rows_of_blocks is None else int(rows_of_blocks)
    else:
        nrow = A.nrow if rows_of_blocks is None else int(rows_of_blocks)
    ncol = nrow if cols_of_blocks is None else int(cols_of_blocks)
    n = min(nrow, ncol)
    if isinstance(diag, array):
        if diag.shape[0] < n:
            raise ValueError(f"bsr_set_diag: {diag.shape[0]} diagonal blocks given for {n} rows")
        values = zeros(n, dtype=A.dtype, device=A.device, requires_grad=diag.requires_grad)
        launch(
            k.scatter_scalars,
            dim=n * A.block_size,
            inputs=[_flat(diag, n, A.block_shape), array(np.arange(n * A.block_size, dtype=np.int32), device=A.device),
                    A.scalar_type(1.0), _flat(values, n, A.block_shape)],
            device=A.device,
        )
    else:
        values = fresh_values(A, n)
        if n:
            values.fill_(diag)
    offsets = np.concatenate((np.arange(n + 1), np.full(nrow - n, n))).astype(np.int32)
    store(A, nrow, ncol, offsets, np.arange(n, dtype=np.int32), values)


def bsr_diag(diag=None, rows_of_blocks: int | None = None, cols_of_blocks: int | None = None, block_type=None, device=None) -> BsrMatrix:
    """A new block-diagonal matrix (see ``bsr_set_diag``); ``diag=None`` gives zero diagonal
    blocks of ``block_type``.

    Raises:
        ValueError: a vector block type (blocks are scalars or matrices).
    """
    if isinstance(diag, array):
        block_type, device = diag.dtype, diag.device
    elif diag is not None:
        block_type = type(diag)
    if block_type is None:
        raise ValueError("bsr_diag needs diag or block_type")
    block_type = canonical_block_type(block_type)
    if rows_of_blocks is None and not isinstance(diag, array):
        raise ValueError("bsr_diag needs rows_of_blocks when diag is not an array")
    A = BsrMatrix(block_type, device)
    bsr_set_diag(A, scalar_of(block_type)(0.0) if diag is None else diag, rows_of_blocks, cols_of_blocks)
    return A


def bsr_set_identity(A: BsrMatrix, rows_of_blocks: int | None = None) -> None:
    """Make ``A`` the identity (square blocks)."""
    r, c = A.block_shape
    if r != c:
        raise ValueError(f"the identity needs square blocks, got {A.block_shape}")
    one = A.dtype(1.0) if wt.is_scalar(A.dtype) else A.dtype(*np.eye(r).reshape(-1))
    bsr_set_diag(A, one, rows_of_blocks)


def bsr_identity(rows_of_blocks: int, block_type, device=None) -> BsrMatrix:
    """A new ``rows_of_blocks`` x ``rows_of_blocks`` identity matrix of square blocks.

    Args:
        rows_of_blocks: The number of block rows (and columns).
        block_type: A square matrix type (``wp.mat33``...) or a scalar type for 1x1 blocks.
        device: Where to allocate (default: the current device).

    Returns:
        A new ``BsrMatrix``.
    """
    A = BsrMatrix(block_type, device)
    bsr_set_identity(A, rows_of_blocks)
    return A


def bsr_compress(src: BsrMatrix, prune_numerical_zeros: bool = True, inplace: bool = False, topology=None) -> BsrMatrix:
    """Make ``src`` compact (and return it): blocks that may be unsorted or repeated within a row
    (or laid out with ``row_counts``) sorted, repeated blocks summed, zero blocks dropped if
    ``prune_numerical_zeros``. Its stored blocks are read as triplets (slots outside the rows'
    ranges as ignored ones), so the values go through the differentiable triplet sum into new
    arrays (``inplace`` is accepted for Warp's signature; Warp's in-place path saves memory but is
    not differentiable). ``topology="padded"`` keeps ``src``'s row capacity (the merged blocks in
    its row slots)."""
    mode = _topology(topology, False)
    if mode == "padded":
        merged = padded.working_copy(src) if not padded.is_padded(src) else _raw_copy(src)
        bsr_compress(merged, prune_numerical_zeros)
        padded.pad_into(src, merged)
        return src
    offsets = src.offsets.numpy().astype(np.int64)
    counts = src.row_counts.numpy().astype(np.int64) if src.row_counts is not None else np.diff(offsets)
    capacity = min(src.columns.shape[0], src.values.shape[0])
    rows = np.full(capacity, -1, np.int32)  # slack slots: a row outside the matrix, ignored
    rows[topo.ranges(offsets[:-1], counts)] = np.repeat(np.arange(src.nrow, dtype=np.int32), counts)
    device = src.device
    src.row_counts = None  # the triplets' blocks replace the layout
    bsr_set_from_triplets(
        src,
        array(rows, dtype=wt.int32, device=device),
        src.columns[:capacity],
        src.values[:capacity],
        prune_numerical_zeros=prune_numerical_zeros,
    )
    return src


def _raw_copy(src: BsrMatrix) -> BsrMatrix:
    """A matrix sharing ``src``'s arrays (its layout and row counts too), for ``bsr_compress`` to
    read as triplets while ``src`` keeps its own."""
    out = BsrMatrix(src.dtype, src.device)
    out.nrow, out.ncol, out.nnz = src.nrow, src.ncol, src.nnz
    out.offsets, out.columns, out.values, out.row_counts = src.offsets, src.columns, src.values, src.row_counts
    return out
