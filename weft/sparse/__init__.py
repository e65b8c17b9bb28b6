"""Block-sparse-row (BSR) matrices, as ``warp.sparse``: matrices of scalar or matrix blocks,
built from triplets, copied, transposed, added, scaled and multiplied (``+ - * @``), with
products against arrays of vectors. Values are computed by kernels (every output element by
one thread, in a fixed order: the same bits on every run, differentiable through ``wp.Tape``);
the sparsity structure is computed on the host.

weft supports Warp's compact layout and masked updates; the padded layout (``row_capacity``,
``topology="padded"``) raises ``NotImplementedError``.
"""

from .algebra import bsr_axpy, bsr_axpy_work_arrays, bsr_mm, bsr_mm_work_arrays, bsr_mv, bsr_scale
from .build import (
    bsr_assign,
    bsr_compress,
    bsr_copy,
    bsr_diag,
    bsr_from_triplets,
    bsr_get_diag,
    bsr_identity,
    bsr_set_diag,
    bsr_set_from_triplets,
    bsr_set_identity,
    bsr_set_transpose,
    bsr_transposed,
)
from .funcs import bsr_block_index, bsr_row_index
from .matrix import (
    BSR_STATUS_ROW_CAPACITY_EXCEEDED,
    BSR_STATUS_SUCCESS,
    BsrMatrix,
    bsr_matrix_t,
    bsr_set_zero,
    bsr_zeros,
)

__all__ = [
    "BSR_STATUS_ROW_CAPACITY_EXCEEDED",
    "BSR_STATUS_SUCCESS",
    "BsrMatrix",
    "bsr_assign",
    "bsr_axpy",
    "bsr_axpy_work_arrays",
    "bsr_block_index",
    "bsr_compress",
    "bsr_copy",
    "bsr_diag",
    "bsr_from_triplets",
    "bsr_get_diag",
    "bsr_identity",
    "bsr_matrix_t",
    "bsr_mm",
    "bsr_mm_work_arrays",
    "bsr_mv",
    "bsr_row_index",
    "bsr_scale",
    "bsr_set_diag",
    "bsr_set_from_triplets",
    "bsr_set_identity",
    "bsr_set_transpose",
    "bsr_set_zero",
    "bsr_transposed",
    "bsr_zeros",
]
