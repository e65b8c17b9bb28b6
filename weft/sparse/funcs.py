"""Kernel-side helpers for BSR matrices (``wp.func``s usable in user kernels)."""

from __future__ import annotations

from ..array import array
from ..kernel import func
from ..types import int32


@func
def bsr_row_index(offsets: array(dtype=int32), row_count: int, block_index: int) -> int:
    """The row holding block ``block_index`` of a compact matrix with ``row_count`` rows, or -1
    when ``block_index`` is past the last block (binary search in ``offsets``)."""
    if block_index < 0 or block_index >= offsets[row_count]:
        return -1
    lo = int(0)
    hi = row_count
    while hi - lo > 1:  # offsets[lo] <= block_index < offsets[hi]
        mid = (lo + hi) // 2
        if offsets[mid] <= block_index:
            lo = mid
        else:
            hi = mid
    return lo


@func
def bsr_block_index(row: int, col: int, bsr_offsets: array(dtype=int32), bsr_columns: array(dtype=int32)) -> int:
    """The index of the block at (``row``, ``col``) of a compact matrix, or -1 if it is not
    stored (binary search in the row's sorted columns)."""
    if row < 0:
        return -1
    lo = bsr_offsets[row]
    hi = bsr_offsets[row + 1]
    while lo < hi:
        mid = (lo + hi) // 2
        c = bsr_columns[mid]
        if c == col:
            return mid
        if c < col:
            lo = mid + 1
        else:
            hi = mid
    return -1
