"""The kernels of weft.sparse. They work on scalar views of the blocks, ``values[b, r, c]``
(a matrix of scalar blocks is viewed as 1x1 blocks), so one generic kernel serves every block
shape and scalar type. Each output element is computed by one thread that sums its terms in a
fixed order: results are the same on every run and for any thread count, and no atomics are
involved, so the tape differentiates every kernel as written.

Index arrays come from the host-side topology code (``topology.py``); ``-1`` marks an absent
term.
"""

from __future__ import annotations

from typing import Any

from ..array import array, array2d, array3d
from ..codegen.intrinsics import tid
from ..kernel import kernel
from ..types import int32


@kernel
def segment_sum(
    src: array3d(dtype=Any),
    order: array(dtype=int32),
    starts: array(dtype=int32),
    dst: array3d(dtype=Any),
):
    """``dst[b] = sum(src[order[k]] for k in starts[b] .. starts[b+1])`` (triplets into blocks)."""
    b, r, c = tid()
    acc = type(dst[b, r, c])(0.0)
    for k in range(starts[b], starts[b + 1]):
        acc += type(dst[b, r, c])(src[order[k], r, c])
    dst[b, r, c] = acc


@kernel
def segment_sum_whole_blocks(
    src: array(dtype=Any),
    order: array(dtype=int32),
    starts: array(dtype=int32),
    dst: array(dtype=Any),
):
    """``segment_sum`` for arrays of one block type: one thread per block, whole blocks added."""
    b = tid()
    acc = type(dst[b])(0.0)
    for k in range(starts[b], starts[b + 1]):
        acc += src[order[k]]
    dst[b] = acc


@kernel
def scatter_scalars(
    src: array(dtype=Any),
    target: array(dtype=int32),
    alpha: Any,
    dst: array(dtype=Any),
):
    """``dst[target[k]] = alpha * src[k]`` where ``target[k] >= 0`` (copies between block
    shapes and topologies, on flat scalar views; targets are distinct)."""
    k = tid()
    t = target[k]
    if t >= 0:
        dst[t] = type(dst[t])(alpha * type(alpha)(src[k]))


@kernel
def gather_transposed(
    src: array3d(dtype=Any),
    source: array(dtype=int32),
    alpha: Any,
    dst: array3d(dtype=Any),
):
    """``dst[b] = alpha * transpose(src[source[b]])``, zero where ``source[b] < 0``."""
    b, r, c = tid()
    s = source[b]
    if s >= 0:
        dst[b, r, c] = type(dst[b, r, c])(alpha * type(alpha)(src[s, c, r]))
    else:
        dst[b, r, c] = type(dst[b, r, c])(0.0)


@kernel
def scale_in_place(values: array3d(dtype=Any), alpha: Any):
    b, r, c = tid()
    values[b, r, c] = alpha * values[b, r, c]


@kernel
def block_rows_times_vector(
    offsets: array(dtype=int32),
    columns: array(dtype=int32),
    values: array3d(dtype=Any),
    x: array2d(dtype=Any),
    alpha: Any,
    beta: Any,
    y: array2d(dtype=Any),
):
    """``y[i, r] = alpha * sum_b sum_c A[b, r, c] x[col b, c] + beta * y[i, r]`` over the blocks
    of row ``i`` (``beta == 0`` does not read ``y``)."""
    i, r = tid()
    acc = type(alpha)(0.0)
    for b in range(offsets[i], offsets[i + 1]):
        j = columns[b]
        for c in range(values.shape[2]):
            acc += values[b, r, c] * x[j, c]
    if beta == type(beta)(0.0):
        y[i, r] = alpha * acc
    else:
        y[i, r] = alpha * acc + beta * y[i, r]


@kernel
def matrix_rows_times_vector(
    offsets: array(dtype=int32),
    columns: array(dtype=int32),
    values: array(dtype=Any),
    x: array(dtype=Any),
    alpha: Any,
    beta: Any,
    y: array(dtype=Any),
):
    """``block_rows_times_vector`` for matrix blocks and vector arrays: one thread per block
    row, each block's product as a matrix-vector product (``y[i] = alpha * sum A[b] x[col b] +
    beta * y[i]``)."""
    i = tid()
    acc = type(y[i])(0.0)
    for b in range(offsets[i], offsets[i + 1]):
        acc += values[b] * x[columns[b]]
    if beta == type(beta)(0.0):
        y[i] = alpha * acc
    else:
        y[i] = alpha * acc + beta * y[i]


@kernel
def block_columns_times_vector(
    t_offsets: array(dtype=int32),
    t_blocks: array(dtype=int32),
    rows: array(dtype=int32),
    values: array3d(dtype=Any),
    x: array2d(dtype=Any),
    alpha: Any,
    beta: Any,
    y: array2d(dtype=Any),
):
    """The transposed product: ``y[j, c] = alpha * sum_b sum_r A[b, r, c] x[row b, r] + beta *
    y[j, c]`` over the blocks of column ``j`` (``t_blocks[t_offsets[j]:t_offsets[j+1]]``)."""
    j, c = tid()
    acc = type(alpha)(0.0)
    for k in range(t_offsets[j], t_offsets[j + 1]):
        b = t_blocks[k]
        i = rows[b]
        for r in range(values.shape[1]):
            acc += values[b, r, c] * x[i, r]
    if beta == type(beta)(0.0):
        y[j, c] = alpha * acc
    else:
        y[j, c] = alpha * acc + beta * y[j, c]


@kernel
def block_products(
    x: array3d(dtype=Any),
    x_block: array(dtype=int32),
    y: array3d(dtype=Any),
    y_block: array(dtype=int32),
    starts: array(dtype=int32),
    z: array3d(dtype=Any),
    z_block: array(dtype=int32),
    alpha: Any,
    beta: Any,
    out: array3d(dtype=Any),
):
    """``out[b] = alpha * sum_p x[x_block[p]] @ y[y_block[p]] + beta * z[z_block[b]]`` over the
    products ``p`` in ``starts[b] .. starts[b+1]`` (a sparse matrix product, one output block
    entry per thread)."""
    b, r, c = tid()
    acc = type(alpha)(0.0)
    for p in range(starts[b], starts[b + 1]):
        xb = x_block[p]
        yb = y_block[p]
        for k in range(x.shape[2]):
            acc += x[xb, r, k] * y[yb, k, c]
    acc = alpha * acc
    zb = z_block[b]
    if zb >= 0:
        acc += beta * z[zb, r, c]
    out[b, r, c] = acc


@kernel
def block_products_whole(
    x: array(dtype=Any),
    x_block: array(dtype=int32),
    y: array(dtype=Any),
    y_block: array(dtype=int32),
    starts: array(dtype=int32),
    z: array(dtype=Any),
    z_block: array(dtype=int32),
    alpha: Any,
    beta: Any,
    out: array(dtype=Any),
):
    """``block_products`` with whole blocks (matrix products, or scalars): one thread per
    output block."""
    b = tid()
    acc = type(out[b])(0.0)
    for p in range(starts[b], starts[b + 1]):
        acc += x[x_block[p]] * y[y_block[p]]
    acc = alpha * acc
    zb = z_block[b]
    if zb >= 0:
        acc += beta * z[zb]
    out[b] = acc


@kernel
def axpy_whole_blocks(
    x: array(dtype=Any),
    x_block: array(dtype=int32),
    y: array(dtype=Any),
    y_block: array(dtype=int32),
    alpha: Any,
    beta: Any,
    out: array(dtype=Any),
):
    """``out[b] = alpha * x[x_block[b]] + beta * y[y_block[b]]`` (absent terms, index -1, are
    zero): one thread per output block."""
    b = tid()
    acc = type(out[b])(0.0)
    i = x_block[b]
    if i >= 0:
        acc += alpha * x[i]
    j = y_block[b]
    if j >= 0:
        acc += beta * y[j]
    out[b] = acc


@kernel
def diagonal_blocks(
    offsets: array(dtype=int32),
    columns: array(dtype=int32),
    values: array3d(dtype=Any),
    alpha: Any,
    out: array3d(dtype=Any),
):
    """``out[i] = alpha * A[i, i]`` (zero where the diagonal block is absent)."""
    i, r, c = tid()
    acc = type(alpha)(0.0)
    for b in range(offsets[i], offsets[i + 1]):
        if columns[b] == i:
            acc = alpha * values[b, r, c]
    out[i, r, c] = type(out[i, r, c])(acc)
