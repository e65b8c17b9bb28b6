"""Arithmetic on BSR matrices: scaling, ``alpha x + beta y``, matrix-vector and matrix-matrix
products, and the operators built on them. Results are written to new value arrays which then
replace the destination's, so an operand may also be the destination (``bsr_mm(A, B, A)``)
and the tape sees no array overwritten while it is read."""

from __future__ import annotations

import numpy as np

from .. import types as wt
from .. import vector_types as vt
from ..array import array, zeros
from ..log import warn
from ..runtime.launch import launch
from . import _kernels as k
from . import padded
from . import topology as topo
from .build import bsr_copy
from .matrix import BsrMatrix, BsrScaled, block_type_for, fresh_values, scalar_blocks, split, store


def _keys(m: BsrMatrix) -> np.ndarray:
    offsets = m.offsets.numpy()
    return topo.keys_of(topo.rows_of(offsets), m.columns.numpy()[: int(offsets[-1])], m.ncol)


def _index(a: np.ndarray, device) -> array:
    return array(a.astype(np.int32), dtype=wt.int32, device=device)


def _mode(topology, masked: bool) -> str:
    mode = topology or ("masked" if masked else "compact")
    if mode not in ("compact", "masked", "padded"):
        raise ValueError(f"Unknown topology {mode!r}: use 'compact', 'masked' or 'padded'")
    return mode


def bsr_scale(x, alpha):
    """``x *= alpha`` in place (``x`` a matrix); returns ``x``.

    Args:
        x: The ``BsrMatrix`` to scale.
        alpha: The scalar factor.

    Returns:
        The matrix, scaled in place.
    """
    mat, scale = split(x)
    if mat.nnz:
        launch(
            k.scale_in_place,
            dim=(mat.nnz, *mat.block_shape),
            inputs=[scalar_blocks(mat.values[: mat.nnz], mat.block_shape), mat.scalar_type(alpha * scale)],
            device=mat.device,
        )
    return mat


class bsr_axpy_work_arrays:
    """Reusable state for repeated ``bsr_axpy`` calls: the last result's structure, reused when
    both operands keep theirs."""

    def __init__(self):
        self._key = None
        self._plan = None


def bsr_axpy(x, y: BsrMatrix | None = None, alpha=1.0, beta=1.0, masked: bool = False, work_arrays=None, topology=None):
    """``y = alpha * x + beta * y`` (``x`` a matrix or ``s * matrix``); with ``y=None`` a new
    matrix ``alpha * x``. ``topology="masked"`` keeps ``y``'s blocks, ``"padded"`` writes the
    result into ``y``'s row slots (``padded.py``). Returns ``y``.

    Raises:
        ValueError: different sizes or block shapes.
    """
    mode = _mode(topology, masked)
    if y is not None and (mode == "padded" or padded.is_padded(y)):
        return padded.into(y, mode, lambda target, m: bsr_axpy(x, target, alpha, beta, topology=m))
    xm, scale = split(x)
    if y is None:
        y = BsrMatrix(xm.dtype, xm.device)
        y.nrow, y.ncol = xm.nrow, xm.ncol
        y.offsets = zeros(xm.nrow + 1, dtype=wt.int32, device=xm.device)
        beta = 0.0
    if (xm.nrow, xm.ncol) != (y.nrow, y.ncol):
        raise ValueError("Matrices must have the same number of rows and columns")
    if xm.block_shape != y.block_shape or xm.scalar_type != y.scalar_type:
        raise ValueError("Matrices must have the same block type")
    x_keys, y_keys = _keys(xm), _keys(y)
    if mode == "masked":
        keys, in_x, in_y = y_keys, topo.locate(x_keys, y_keys), np.arange(len(y_keys), dtype=np.int32)
    else:
        keys, in_x, in_y = topo.union(x_keys, y_keys)
    out = fresh_values(y, len(keys), requires_grad=xm.requires_grad)
    if len(keys):  # whole blocks, one thread each
        xv, yv, ov = xm.values, y.values, out
        if xm.dtype != y.dtype:  # 1x1 blocks, a matrix type on one side: add them as scalars
            xv, yv, ov = (scalar_blocks(a, (1, 1)).reshape((a.shape[0],)) for a in (xv, yv, ov))
        device = y.device
        launch(
            k.axpy_whole_blocks,
            dim=len(keys),
            inputs=[xv, _index(in_x, device), yv, _index(in_y, device), y.scalar_type(alpha * scale),
                    y.scalar_type(beta), ov],
            device=device,
        )
    ncol = max(y.ncol, 1)
    store(y, y.nrow, y.ncol, topo.offsets_of((keys // ncol).astype(np.int64), y.nrow), (keys % ncol).astype(np.int32), out)
    return y


def _vector_view(v: array, count: int, length: int, what: str, shape) -> array:
    """A vector array (or scalar array for length 1) as ``(count, length)`` scalars."""
    if v.ndim == 1 and v.shape[0] == count:
        if vt.is_composite(v.dtype) and getattr(v.dtype, "_kind", None) == "vector" and v.dtype._length == length:
            return v.view(v.dtype._scalar)
        if wt.is_scalar(v.dtype) and length == 1:
            return v.reshape((count, 1))
    if v.ndim == 1 and wt.is_scalar(v.dtype) and v.shape[0] == count * length and count * length:
        return v.reshape((count, length))
    raise ValueError(
        f"Incompatible '{what}' for a matrix of shape {shape}: expected {count} vectors of length {length}, "
        f"got an array of shape {v.shape} and type {wt.type_repr(v.dtype)}"
    )


def bsr_mv(A, x: array, y: array | None = None, alpha=1.0, beta=0.0, transpose: bool = False, work_buffer=None, tile_size: int = 0):
    """``y = alpha * A @ x + beta * y`` (or ``A^T @ x`` with ``transpose``); ``x`` and ``y`` are
    arrays of vectors of the block size (scalars for 1-wide blocks). ``y=None`` allocates it.
    ``x`` may be ``y``: it is copied first (into ``work_buffer`` when given). Returns ``y``.

    Raises:
        ValueError: ``x`` or ``y`` does not match the matrix.
    """
    mat, scale = split(A)
    br, bc = mat.block_shape
    rows, cols = (mat.ncol, mat.nrow) if transpose else (mat.nrow, mat.ncol)
    out_len, in_len = (bc, br) if transpose else (br, bc)
    x2 = _vector_view(x, cols, in_len, "x", mat.shape)
    if y is None:
        dtype = mat.scalar_type if out_len == 1 else vt.vector(out_len, mat.scalar_type)
        y = zeros(rows, dtype=dtype, device=mat.device, requires_grad=x.requires_grad or mat.requires_grad)
        beta = 0.0
    y2 = _vector_view(y, rows, out_len, "y", mat.shape)
    source = x
    if x.ptr == y.ptr and x.size:  # y is also the input: read a copy
        fits = work_buffer is not None and work_buffer.shape == x.shape and work_buffer.dtype == x.dtype
        source = _copied(x, work_buffer if fits else None)
        x2 = _vector_view(source, cols, in_len, "x", mat.shape)
    a, b = mat.scalar_type(alpha * scale), mat.scalar_type(beta)
    if transpose:
        t_offsets, t_blocks, t_rows = topo.transposed(mat.offsets.numpy(), mat.columns.numpy(), mat.ncol)
        device = mat.device
        launch(
            k.block_columns_times_vector,
            dim=(rows, out_len),
            inputs=[_index(t_offsets, device), _index(t_blocks, device), _index(topo.rows_of(mat.offsets.numpy()), device),
                    scalar_blocks(mat.values, mat.block_shape), x2, a, b, y2],
            device=device,
        )
    elif x.ndim == 1 and (
        (wt.is_scalar(mat.dtype) and wt.is_scalar(x.dtype) and wt.is_scalar(y.dtype))
        or (br > 1 and bc > 1 and not wt.is_scalar(x.dtype) and not wt.is_scalar(y.dtype))
    ):
        launch(  # whole blocks (matrices times vectors, or scalars): one thread per block row
            k.matrix_rows_times_vector,
            dim=rows,
            inputs=[mat.offsets, mat.columns, mat.values, source, a, b, y],
            device=mat.device,
        )
    else:
        launch(
            k.block_rows_times_vector,
            dim=(rows, out_len),
            inputs=[mat.offsets, mat.columns, scalar_blocks(mat.values, mat.block_shape), x2, a, b, y2],
            device=mat.device,
        )
    return y


def _copied(x: array, into: array | None) -> array:
    from ..array import copy, empty_like

    dest = into if into is not None else empty_like(x)
    copy(dest, x)
    return dest


class bsr_mm_work_arrays:
    """Reusable state for repeated ``bsr_mm`` calls: the structure of the last product, which
    ``reuse_topology=True`` uses again instead of recomputing it (the operands must keep their
    sparsity patterns)."""

    def __init__(self):
        self._plan = None


def bsr_mm(
    x,
    y,
    z: BsrMatrix | None = None,
    alpha=1.0,
    beta=0.0,
    masked: bool = False,
    work_arrays: bsr_mm_work_arrays | None = None,
    reuse_topology: bool = False,
    tile_size: int = 0,
    max_new_nnz: int | None = None,
    topology=None,
) -> BsrMatrix:
    """``z = alpha * x @ y + beta * z`` (``x``, ``y`` matrices or ``s * matrix``); ``z=None`` gives
    a new matrix. ``topology="masked"`` keeps ``z``'s blocks (products elsewhere are dropped),
    ``"padded"`` writes the result into ``z``'s row slots (``padded.py``). Each output block sums
    its products in a fixed order. Returns ``z``.

    Args:
        work_arrays / reuse_topology: keep the product's structure in ``work_arrays`` and, with
            ``reuse_topology``, use the one kept there.
        max_new_nnz: an upper bound on the blocks the product adds to ``z``: beyond it, the
            first new blocks (in row, then column order) are kept and a warning says so, as Warp.

    Raises:
        ValueError: incompatible sizes or block shapes.
    """
    mode = _mode(topology, masked)
    if z is not None and (mode == "padded" or padded.is_padded(z)):
        return padded.into(
            z,
            mode,
            lambda target, m: bsr_mm(x, y, target, alpha, beta, work_arrays=work_arrays, reuse_topology=reuse_topology,
                                     max_new_nnz=max_new_nnz, topology=m),
        )
    xm, xs = split(x)
    ym, ys = split(y)
    if xm.block_shape[1] != ym.block_shape[0]:
        raise ValueError(f"Incompatible block sizes for a product: {xm.block_shape} @ {ym.block_shape}")
    if xm.ncol != ym.nrow:
        raise ValueError(f"Incompatible number of rows/columns: {xm.nrow}x{xm.ncol} @ {ym.nrow}x{ym.ncol} blocks")
    if xm.scalar_type != ym.scalar_type:
        raise ValueError("Matrices must have the same scalar type")
    z_shape = (xm.block_shape[0], ym.block_shape[1])
    if z is None:
        z = BsrMatrix(block_type_for(z_shape, xm.scalar_type), xm.device)
        z.nrow, z.ncol = xm.nrow, ym.ncol
        z.offsets = zeros(z.nrow + 1, dtype=wt.int32, device=xm.device)
        beta = 0.0
    if (z.nrow, z.ncol) != (xm.nrow, ym.ncol):
        raise ValueError(f"Incompatible number of rows/columns: the product has {xm.nrow}x{ym.ncol} blocks, z {z.nrow}x{z.ncol}")
    if z.block_shape != z_shape:
        raise ValueError(f"Incompatible block sizes: the product has {z_shape} blocks, z {z.block_shape}")
    plan = work_arrays._plan if (reuse_topology and work_arrays is not None and work_arrays._plan is not None) else None
    if plan is None:
        plan = _product_plan(xm, ym, z, mode, beta != 0.0)
        if work_arrays is not None:
            work_arrays._plan = plan
    keys, x_block, y_block, starts, z_block = plan
    if max_new_nnz is not None and len(keys) - z.nnz > int(max_new_nnz):
        plan = _truncated(plan, z.nnz + int(max_new_nnz))
        keys, x_block, y_block, starts, z_block = plan
        warn(f"bsr_mm: the product's new blocks exceeded max_new_nnz={max_new_nnz}; the first {len(keys)} blocks are kept")
    out = fresh_values(z, len(keys), requires_grad=xm.requires_grad or ym.requires_grad)
    whole = all(wt.is_scalar(m.dtype) for m in (xm, ym, z)) or not any(wt.is_scalar(m.dtype) for m in (xm, ym, z))
    if len(keys) and whole:  # matrix (or scalar) products of whole blocks, one thread per output block
        device = z.device
        launch(
            k.block_products_whole,
            dim=len(keys),
            inputs=[xm.values, _index(x_block, device), ym.values, _index(y_block, device), _index(starts, device),
                    z.values, _index(z_block, device), z.scalar_type(alpha * xs * ys), z.scalar_type(beta), out],
            device=device,
        )
    elif len(keys):
        device = z.device
        launch(
            k.block_products,
            dim=(len(keys), *z_shape),
            inputs=[scalar_blocks(xm.values, xm.block_shape), _index(x_block, device), scalar_blocks(ym.values, ym.block_shape),
                    _index(y_block, device), _index(starts, device), scalar_blocks(z.values, z.block_shape),
                    _index(z_block, device), z.scalar_type(alpha * xs * ys), z.scalar_type(beta), scalar_blocks(out, z_shape)],
            device=device,
        )
    ncol = max(z.ncol, 1)
    store(z, z.nrow, z.ncol, topo.offsets_of((keys // ncol).astype(np.int64), z.nrow), (keys % ncol).astype(np.int32), out)
    return z


def _truncated(plan, count: int) -> tuple:
    """The plan of the first ``count`` output blocks."""
    keys, x_block, y_block, starts, z_block = plan
    end = int(starts[count])
    return keys[:count], x_block[:end], y_block[:end], starts[: count + 1], z_block[:count]


def _product_plan(xm, ym, z, mode, keep_z):
    """``(keys, x_block, y_block, starts, z_block)``: the output blocks, the products of each,
    and where each output block was in ``z`` (-1: not there)."""
    x_block, y_block, starts, p_keys = topo.products(
        xm.offsets.numpy(), xm.columns.numpy(), ym.offsets.numpy(), ym.columns.numpy(), z.ncol
    )
    z_keys = _keys(z)
    if mode == "masked":
        keys = z_keys
    elif keep_z:
        keys = np.union1d(p_keys, z_keys)
    else:
        keys = p_keys
    where = topo.locate(keys, p_keys)  # product group g -> output block (or -1, dropped)
    kept, new_starts = topo.retarget(starts, where, len(keys))
    z_block = topo.locate(z_keys, keys) if keep_z or mode == "masked" else np.full(len(keys), -1, np.int32)
    return keys, x_block[kept], y_block[kept], new_starts, z_block


# ---------------------------------------------------------------------------------------------
# operators


def add(a, b, sign: float = 1.0) -> BsrMatrix:
    """``a + sign * b`` as a new matrix (either operand may be scaled)."""
    result = bsr_copy(a)
    return bsr_axpy(b, result, alpha=sign, beta=1.0)


def matmul(a, b):
    """``a @ b``: a sparse product for a matrix ``b``, a matrix-vector product for an array."""
    if isinstance(b, (BsrMatrix, BsrScaled)):
        return bsr_mm(a, b)
    if isinstance(b, array):
        return bsr_mv(a, b)
    return NotImplemented
