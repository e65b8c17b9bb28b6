"""Wrapping foreign memory as weft arrays: the layout rules shared by the torch, DLPack and JAX bridges.

Contract: a foreign buffer is described by its element-0 address, its shape and byte strides in
SCALARS (the way torch, NumPy and DLPack see it) and its scalar weft type. ``wrap_memory`` turns
that into a ``wp.array`` of any requested dtype without copying: a scalar dtype keeps the shape and
strides; a vector/matrix dtype consumes trailing dimensions, which must equal its ``_shape`` and be
contiguous (anything else raises: weft never silently works on a copy). The array keeps the
foreign owner alive for as long as it (or a view of it) lives.
"""

from __future__ import annotations

from .. import types
from ..array import _resolve_dtype, array

MAX_DIMS = types.MAX_DIMS


class KeepAlive:
    """A do-nothing array ``deleter`` that holds the foreign owner of the memory (a tensor, a NumPy
    view of a DLPack capsule...) until the weft array is garbage collected."""

    __slots__ = ("owner",)

    def __init__(self, owner):
        self.owner = owner

    def __call__(self, ptr, capacity):
        self.owner = None


def dtype_name(dtype) -> str:
    return getattr(dtype, "__name__", None) or getattr(dtype, "cname", None) or str(dtype)


def scalars_compatible(requested, source) -> bool:
    """Whether memory of scalar type ``source`` may be viewed as scalar type ``requested``: the same
    type, integers of the same size that differ only in signedness (torch has no uint32), or
    bool and a one-byte integer (either way)."""
    if requested is source:
        return True
    ints = ("int", "uint")
    if "bool" in (requested.kind, source.kind):
        other = source if requested.kind == "bool" else requested
        return other.kind in ints and other.size == 1
    return requested.kind in ints and source.kind in ints and requested.size == source.size


def element_layout(shape, strides, scalar, dtype, what: str):
    """Resolve ``dtype`` (None: ``scalar``) over a buffer of ``scalar`` elements.

    Args:
        shape: The buffer's shape in scalars (may be ``()`` for a 0-d buffer).
        strides: Its strides in bytes, one per dimension.
        scalar: The weft scalar type of the buffer.
        dtype: The requested weft dtype (scalar, vector or matrix), or None.
        what: How to name the source in error messages ("PyTorch tensor", ...).

    Returns:
        ``(dtype, outer_shape, outer_strides)`` of the weft array: a 0-d buffer, or a vector dtype
        that takes every dimension, gives a one-element array.

    Raises:
        RuntimeError: The scalar types do not match, or the trailing dimensions do not fit a
            vector/matrix dtype (wrong sizes or not contiguous), as ``wp.from_torch`` in Warp.
    """
    dtype = scalar if dtype is None else _resolve_dtype(dtype)
    elem_scalar = getattr(dtype, "_scalar", dtype)
    if not scalars_compatible(elem_scalar, scalar):
        parts = f" (its components are {elem_scalar.cname})" if elem_scalar is not dtype else ""
        if what == "DLPack tensor":  # Warp's words, DLPack's type names (bool is 'bool8')
            source = "bool8" if scalar.cname == "bool" else scalar.cname
            raise RuntimeError(
                f"Incompatible data types: DLPack {source} and Warp {dtype_name(dtype)}{parts}; convert the data first"
            )
        raise RuntimeError(
            f"Cannot view a {what} of {scalar.cname} values as a weft array of {dtype_name(dtype)}{parts}; "
            "convert the data first"
        )
    shape, strides = tuple(shape), tuple(strides)
    trailing = tuple(getattr(dtype, "_shape", ()))
    if trailing:
        n = len(trailing)
        if shape[len(shape) - n :] != trailing:
            raise RuntimeError(
                f"Cannot view a {what} of shape {shape} as a weft array of {dtype_name(dtype)}: its inner "
                f"dimensions must be {trailing}"
            )
        step = scalar.size
        for dim in range(len(shape) - 1, len(shape) - n - 1, -1):
            if shape[dim] > 1 and strides[dim] != step:
                raise RuntimeError(
                    f"Cannot view a {what} of shape {shape} and byte strides {strides} as a weft array of "
                    f"{dtype_name(dtype)}: the inner {trailing} components are not contiguous "
                    f"(call .contiguous() on it first)"
                )
            step *= shape[dim]
        shape, strides = shape[: len(shape) - n], strides[: len(strides) - n]
    if not shape:
        shape, strides = (1,), (types_size(dtype),)
    if len(shape) > MAX_DIMS:
        raise RuntimeError(
            f"Cannot view a {what} with {len(shape)} outer dimensions as a weft array (at most {MAX_DIMS}); "
            f"reshape it or use a vector/matrix dtype for the inner dimensions"
        )
    return dtype, shape, strides


def types_size(dtype) -> int:
    scalar = getattr(dtype, "_scalar", dtype)
    n = 1
    for d in getattr(dtype, "_shape", ()):
        n *= d
    return scalar.size * n


def is_overlapping(shape, strides) -> bool:
    """Whether two different indices of the layout address the same memory (a stride 0 over a
    dimension of size > 1, as ``torch.expand`` or NumPy broadcasting make)."""
    return any(n > 1 and s == 0 for n, s in zip(shape, strides))


def wrap_memory(ptr: int, dtype, shape, strides, owner, device) -> array:
    """A weft array over existing memory (no copy) on ``device`` (always given: a GPU pointer
    wrapped as a CPU array would be dereferenced on the host), keeping ``owner`` alive."""
    return array(ptr=ptr, dtype=dtype, shape=shape, strides=strides, device=device, deleter=KeepAlive(owner))
