"""Array layout math: dtypes as NumPy layouts, shapes, byte strides, view indexing and
reshape. Pure functions of shapes and dtypes (no storage, no devices)."""

from __future__ import annotations

import operator
from typing import Any

import numpy as np

from . import types

MAX_DIMS = types.MAX_DIMS
_INT32_MAX = 2**31 - 1

# ---------------------------------------------------------------------------------------------
# dtypes
# ---------------------------------------------------------------------------------------------


_resolve_dtype = types.resolve_array_dtype  # (kept under the name the array modules use)


def _np_layout(dtype) -> tuple[np.dtype, tuple[int, ...]]:
    """The NumPy scalar dtype and the trailing element shape of ``dtype`` (``()`` for scalars)."""
    scalar = getattr(dtype, "_scalar", dtype)
    return scalar.np_dtype, tuple(getattr(dtype, "_shape", ()))


def _dtype_size(dtype) -> int:
    """Size of one element of ``dtype`` in bytes."""
    np_dtype, trailing = _np_layout(dtype)
    return np_dtype.itemsize * _prod(trailing)


def _dtype_name(dtype) -> str:
    if dtype is Any:
        return "Any"
    if types.is_scalar(dtype):
        return dtype.cname
    return getattr(dtype, "__name__", str(dtype))


def _infer_scalar_dtype(value):
    """The weft dtype of a Python / NumPy / weft scalar value (used by ``full``)."""
    if isinstance(value, types.scalar_base):
        return type(value)
    if isinstance(value, (bool, np.bool_)):
        return types.bool
    if isinstance(value, int):
        return types.int32
    if isinstance(value, float):
        return types.float32
    if isinstance(value, np.generic):
        dtype = types.scalar_from_numpy(value.dtype)
        if dtype is not None:
            return dtype
    if getattr(value, "_struct", None) is not None:  # a struct instance
        return value._struct
    if getattr(type(value), "_kind", None) in ("vector", "matrix", "quaternion", "transform"):
        return type(value)
    if hasattr(value, "__len__"):  # a sequence: a vector or matrix of its elements' type, as in Warp
        from . import vector_types as vt

        na = np.asarray(value)
        scalar = types.scalar_from_numpy(na.dtype)
        if scalar is not None and na.ndim == 1 and na.size:
            return vt.vector(na.size, scalar)
        if scalar is not None and na.ndim == 2 and na.size:
            return vt.matrix(na.shape, scalar)
    raise TypeError(f"Cannot infer an array dtype from the value {value!r}; pass dtype= explicitly")


# ---------------------------------------------------------------------------------------------
# shapes and strides
# ---------------------------------------------------------------------------------------------


def _prod(values) -> int:
    n = 1
    for v in values:
        n *= v
    return n


def _normalize_shape(shape) -> tuple[int, ...]:
    """Turn ``shape`` (an int or a sequence of ints) into a validated tuple.

    Raises:
        TypeError: ``shape`` is not an int or a sequence of ints.
        ValueError: More than 4 dimensions, or a negative or too large dimension.
    """
    if shape is None:
        return (0,)
    try:
        dims = (operator.index(shape),)
    except TypeError:
        try:
            dims = tuple(operator.index(d) for d in shape)
        except TypeError:
            raise TypeError(f"Array shape must be an int or a tuple of ints, got {shape!r}") from None
    _check_dims(dims)
    return dims


def _check_dims(dims: tuple[int, ...]) -> None:
    if len(dims) > MAX_DIMS:
        raise ValueError(
            f"Arrays may have at most {MAX_DIMS} dimensions, got shape {dims} ({len(dims)} dimensions); "
            f"reshape the data or use a vector/matrix dtype for the inner dimensions"
        )
    if len(dims) == 0:
        raise ValueError("Array shape must have at least one dimension")
    for d in dims:
        if d < 0:
            raise ValueError(f"Array shapes must be non-negative, got shape {dims}")
        if d > _INT32_MAX:
            raise ValueError(
                f"Invalid array shape {dims}: Array shapes must not exceed the maximum representable value of a "
                f"signed 32-bit integer ({_INT32_MAX}); every dimension must be in [0, {_INT32_MAX}]"
            )


def _contiguous_strides(shape: tuple[int, ...], itemsize: int) -> tuple[int, ...]:
    strides = [0] * len(shape)
    step = itemsize
    for i in range(len(shape) - 1, -1, -1):
        strides[i] = step
        step *= shape[i]
    return tuple(strides)


def _byte_span(shape, strides, itemsize) -> tuple[int, int]:
    """Lowest and one-past-highest byte offsets (relative to element 0) touched by a layout."""
    if _prod(shape) == 0:
        return 0, 0
    lo = hi = 0
    for n, s in zip(shape, strides):
        if s >= 0:
            hi += (n - 1) * s
        else:
            lo += (n - 1) * s
    return lo, hi + itemsize


def _index_layout(shape, strides, key):
    """Byte offset, shape and strides of the view ``a[key]`` (ints and positive-step slices).

    Raises:
        RuntimeError: Every dimension is indexed by an int (single-element reads, unsupported as in Warp).
        IndexError: Too many indices or an index out of bounds.
        TypeError / ValueError: An index that is not an int or slice, or a non-positive step.
    """
    if not isinstance(key, tuple):
        key = (key,)
    ndim = len(shape)
    if len(key) > ndim:
        raise IndexError(f"Too many indices ({len(key)}) for a {ndim}-d array")
    if len(key) == ndim and all(_as_index(k) is not None for k in key):
        # Warp does not read single elements through Python indexing; neither do we.
        raise RuntimeError(
            "Item indexing is not supported on wp.array objects; use a slice for a view, "
            "or read values on the host with a.numpy()[...] or a.list()"
        )
    offset = 0
    new_shape, new_strides = [], []
    for dim, k in enumerate(key):
        n, s = shape[dim], strides[dim]
        if isinstance(k, slice):
            start, stop, step = k.indices(n)
            if step <= 0:
                raise ValueError(f"Array slices need a positive step, got {k}")
            length = max(0, (stop - start + step - 1) // step)
            offset += start * s if length else 0
            new_shape.append(length)
            new_strides.append(s * step)
            continue
        i = _as_index(k)
        if i is None:
            raise TypeError(f"Array indices must be ints or slices, got {type(k).__name__}: {k!r}")
        if not -n <= i < n:
            raise IndexError(f"Index {i} is out of bounds for dimension {dim} with size {n}")
        offset += (i % n) * s
    new_shape.extend(shape[len(key) :])
    new_strides.extend(strides[len(key) :])
    return offset, tuple(new_shape), tuple(new_strides)


def _reshape_dims(size, shape, source_shape=None) -> tuple[int, ...]:
    """Resolve a reshape target (an int or ints, at most one -1) for an array of ``size`` elements."""
    try:
        dims = [operator.index(shape)]
    except TypeError:
        dims = [operator.index(d) for d in shape]
    if dims.count(-1) > 1:
        raise ValueError(f"Cannot reshape to {tuple(dims)}: at most one dimension may be -1")
    if -1 in dims:
        known = _prod(d for d in dims if d != -1)
        if known == 0 or size % known:
            of = f"of shape {tuple(source_shape)} (size {size})" if source_shape is not None else f"of size {size}"
            raise ReshapeError(f"cannot reshape array {of} into shape {tuple(dims)}")
        dims[dims.index(-1)] = size // known
    dims = tuple(dims)
    _check_dims(dims)
    if _prod(dims) != size:
        of = f"of shape {tuple(source_shape)} (size {size})" if source_shape is not None else f"of size {size}"
        raise ReshapeError(f"cannot reshape array {of} into shape {dims} (size {_prod(dims)})")
    return dims


class ReshapeError(ValueError, RuntimeError):
    """A reshape to another number of elements (a ValueError; also the RuntimeError Warp raises)."""


def _as_index(k):
    """``k`` as an int if it is an integer index (not a bool), else None."""
    if isinstance(k, (bool, np.bool_)):
        return None
    try:
        return operator.index(k)
    except TypeError:
        return None
