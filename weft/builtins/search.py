"""Warp's search builtins, written in weft's kernel language (``@wp.func``): they return indices,
so no gradient passes through them."""

from typing import Any

from ..kernel import func


@func
def lower_bound(arr: Any, value: Any):
    """The index of the first element of the sorted 1-d array ``arr`` that is not less than
    ``value``; the last index when every element is less (Warp's convention)."""
    return lower_bound(arr, 0, arr.shape[0], value)


@func
def lower_bound(arr: Any, arr_begin: int, arr_end: int, value: Any):  # noqa: F811 (an overload)
    """The index in ``[arr_begin, arr_end)`` of the first element of the sorted range not less
    than ``value``: ``arr_end - 1`` when every element is less, ``arr_begin`` for an empty range
    (Warp's convention); reads are bounds-checked like any."""
    key = arr.dtype(value)
    lo = int(arr_begin)
    hi = int(arr_end) - 1
    while lo < hi:
        mid = lo + (hi - lo) // 2
        if arr[mid] < key:
            lo = mid + 1
        else:
            hi = mid
    return lo
