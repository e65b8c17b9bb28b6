"""Array constructors (``zeros``, ``ones``, ``full``, ``empty``, the ``_like`` forms,
``clone``, ``from_numpy``) and copies (``copy``), including how copies are recorded on a tape."""

from __future__ import annotations

import os
import sys
from typing import Any

import numpy as np


from . import config
from .array import array, _check_retain, _host_view
from .array_layout import *  # noqa: F403
from .array_layout import (
    _dtype_size,
    _dtype_name,
    _infer_scalar_dtype,
)  # noqa: F401
from .runtime import cpu_capture, recording

# ---------------------------------------------------------------------------------------------
# constructors
# ---------------------------------------------------------------------------------------------


def _new(shape, dtype, device, requires_grad, pinned, retain_grad, zero, strides=None) -> array:
    a = array.__new__(array)
    a._reset()
    a._retain_grad = bool(retain_grad)
    a._init_new(dtype, shape, strides, device, pinned, zero=zero)
    if requires_grad:
        a._alloc_grad()
    _check_retain(a)
    return a


def empty(
    shape=None, dtype=float, device=None, requires_grad=False, pinned=False, retain_grad=False, *, strides=None, n=None
) -> array:
    """Return an uninitialized array.

    Args:
        shape: An int or a tuple of ints.
        dtype: Element type (default float32).
        device: Device-like value (default: current device).
        requires_grad: Allocate a zeroed gradient.
        pinned: Use pinned host memory (recorded only on this build).
        retain_grad: Keep the gradient during backward.
        strides: Byte strides per dimension (default contiguous).
        n: Warp's older spelling of a 1-d ``shape``.
    """
    shape = (n,) if n is not None else shape
    return _new(shape, dtype, device, requires_grad, pinned, retain_grad, zero=False, strides=strides)


def zeros(
    shape=None, dtype=float, device=None, requires_grad=False, pinned=False, retain_grad=False, *, strides=None, n=None
) -> array:
    """Return a new array filled with zeros.

    Args:
        shape: an int or a tuple of up to 4 ints.
        dtype: the element type: a scalar (``float`` is float32, ``int`` int32), vector, matrix or
            struct type.
        device: where to allocate: ``"cpu"``, ``"cuda:N"``, a ``wp.Device`` or None (the current device).
        requires_grad: also allocate a zeroed gradient array (``.grad``) for the tape.
        pinned: use pinned (page-locked) host memory, for faster copies to a GPU.
        retain_grad: keep the gradient when a backward pass reads it.
        strides: byte strides per dimension (default: contiguous).
        n: Warp's older spelling of a 1-D ``shape``.

    Returns:
        A new ``wp.array``.

    Example:
        >>> a = wp.zeros((2, 3), dtype=wp.vec3, requires_grad=True)
        >>> a.shape
        (2, 3)
    """
    shape = (n,) if n is not None else shape
    return _new(shape, dtype, device, requires_grad, pinned, retain_grad, zero=True, strides=strides)


def ones(shape=None, dtype=float, device=None, requires_grad=False, pinned=False, retain_grad=False) -> array:
    """Return a new array with every element (every component, for vectors) equal to one.

    Args:
        shape: an int or a tuple of up to 4 ints.
        dtype: the element type.
        device: where to allocate (default: the current device).
        requires_grad: also allocate a zeroed gradient array.
        pinned: use pinned host memory.
        retain_grad: keep the gradient when a backward pass reads it.

    Returns:
        A new ``wp.array``.

    Example:
        >>> wp.ones(3, dtype=int).numpy()
        array([1, 1, 1], dtype=int32)
    """
    return full(shape, 1, dtype, device, requires_grad, pinned, retain_grad)


def full(shape=None, value=0, dtype=Any, device=None, requires_grad=False, pinned=False, retain_grad=False) -> array:
    """Return an array with every element set to ``value``.

    Args:
        shape: An int or a tuple of ints.
        value: The element value.
        dtype: Element type; when omitted it follows ``value`` (float → float32, int → int32,
            bool → bool, weft/NumPy scalars → their type).
        device, requires_grad, pinned, retain_grad: As for ``empty``.

    Raises:
        ValueError: ``value`` cannot be converted to ``dtype``.
    """
    if dtype is Any or dtype is None:
        dtype = _infer_scalar_dtype(value)
    a = _new(shape, dtype, device, requires_grad, pinned, retain_grad, zero=False)
    a._fill(value, None)  # initialisation: never recorded on a tape
    return a


def _is_indexed(a) -> bool:
    return type(a).__name__ == "indexedarray" and not a.is_annotation  # (weft.indexed_array imports this module)


def _is_fabric(a) -> bool:
    """A Fabric array or indexed Fabric array with data (``weft.fabric_array``)."""
    return type(a).__name__ in ("fabricarray", "indexedfabricarray") and not a.is_annotation


def _copy_fabric(dest, src, dest_offset, src_offset, count):
    """``wp.copy`` where a side is a Fabric array: whole arrays of the same size and dtype,
    through the host (Fabric data takes no gradients, so nothing is recorded on a tape)."""
    _check_whole_copy(dest, src, dest_offset, src_offset, count, _is_fabric, "an array")
    if dest.size != src.size or dest.dtype != src.dtype or dest.ndim != src.ndim:
        raise CopyError(
            f"wp.copy: a Fabric array copy needs the same size, dtype and dimensions, got {dest.shape} "
            f"{_dtype_name(dest.dtype)} and {src.shape} {_dtype_name(src.dtype)}"
        )
    if dest.size:
        dest.assign(src.numpy())


def _like(src, device, requires_grad, pinned, retain_grad, zero) -> array:
    if not (isinstance(src, array) or _is_indexed(src) or _is_fabric(src)) or src.is_annotation:
        raise TypeError(f"Expected a wp.array with data, got {type(src).__name__}")
    device = src.device if device is None else device
    requires_grad = src.requires_grad if requires_grad is None else requires_grad
    pinned = src.pinned if pinned is None else pinned
    return _new(src.shape, src.dtype, device, requires_grad, pinned, retain_grad, zero)


def empty_like(src, device=None, requires_grad=None, pinned=None, retain_grad=False) -> array:
    """Return an uninitialized array with the shape and dtype of ``src``.

    Args:
        src: the array to take the shape and dtype from (an array, indexed array or Fabric array).
        device: where to allocate (default: ``src``'s device).
        requires_grad: allocate a zeroed gradient (default: as ``src``).
        pinned: use pinned host memory (default: as ``src``).
        retain_grad: keep the gradient when a backward pass reads it.

    Returns:
        A new contiguous ``wp.array``.

    Raises:
        TypeError: ``src`` is not an array with data.
    """
    return _like(src, device, requires_grad, pinned, retain_grad, zero=False)


def zeros_like(src, device=None, requires_grad=None, pinned=None, retain_grad=False) -> array:
    """Return an array of zeros with the shape and dtype of ``src``.

    Args:
        src: the array to take the shape and dtype from (an array, indexed array or Fabric array).
        device: where to allocate (default: ``src``'s device).
        requires_grad: allocate a zeroed gradient (default: as ``src``).
        pinned: use pinned host memory (default: as ``src``).
        retain_grad: keep the gradient when a backward pass reads it.

    Returns:
        A new contiguous ``wp.array``.

    Raises:
        TypeError: ``src`` is not an array with data.

    Example:
        >>> x = wp.array([1.0, 2.0], dtype=float, requires_grad=True)
        >>> y = wp.zeros_like(x)   # float32, 2 elements, with a gradient like x
    """
    return _like(src, device, requires_grad, pinned, retain_grad, zero=True)


def ones_like(src, device=None, requires_grad=None, pinned=None, retain_grad=False) -> array:
    """Return an array of ones with the shape and dtype of ``src``.

    Args:
        src: the array to take the shape and dtype from (an array, indexed array or Fabric array).
        device: where to allocate (default: ``src``'s device).
        requires_grad: allocate a zeroed gradient (default: as ``src``).
        pinned: use pinned host memory (default: as ``src``).
        retain_grad: keep the gradient when a backward pass reads it.

    Returns:
        A new contiguous ``wp.array``.

    Raises:
        TypeError: ``src`` is not an array with data.
    """
    return full_like(src, 1, device, requires_grad, pinned, retain_grad)


def full_like(src, value, device=None, requires_grad=None, pinned=None, retain_grad=False) -> array:
    """Return an array with the shape and dtype of ``src`` and every element set to ``value``.

    Args:
        src: the array to take the shape and dtype from (an array, indexed array or Fabric array).
        value: the element value (a scalar, or a value of ``src``'s element type).
        device: where to allocate (default: ``src``'s device).
        requires_grad: allocate a zeroed gradient (default: as ``src``).
        pinned: use pinned host memory (default: as ``src``).
        retain_grad: keep the gradient when a backward pass reads it.

    Returns:
        A new contiguous ``wp.array``.

    Raises:
        TypeError: ``src`` is not an array with data.
    """
    a = _like(src, device, requires_grad, pinned, retain_grad, zero=False)
    a._fill(value, None)  # initialisation: never recorded on a tape
    return a


def clone(src, device=None, requires_grad=None, pinned=None, retain_grad=False) -> array:
    """Return a contiguous copy of ``src`` (its gradient, if any, is fresh and zeroed).

    Args:
        src: the array to copy (an array, indexed array or Fabric array).
        device: where to allocate (default: ``src``'s device).
        requires_grad: allocate a zeroed gradient (default: as ``src``).
        pinned: use pinned host memory (default: as ``src``).
        retain_grad: keep the gradient when a backward pass reads it.

    Returns:
        A new contiguous ``wp.array``.

    Raises:
        TypeError: ``src`` is not an array with data.

    Example:
        >>> a = wp.array([1.0, 2.0, 3.0], dtype=float)
        >>> b = wp.clone(a[::2])   # a contiguous copy of the strided view
    """
    a = _like(src, device, requires_grad, pinned, retain_grad, zero=False)
    copy(a, src)
    return a


class CopyError(ValueError, RuntimeError):
    """A ``wp.copy`` whose arguments do not fit (a ValueError; also the RuntimeError Warp raises)."""


def _check_copy_range(dest_offset, src_offset, count):
    for value in (dest_offset, src_offset, count):
        if isinstance(value, bool) or not isinstance(value, (int, np.integer)):
            raise CopyError(f"wp.copy: dest_offset, src_offset and count must be integers, got {value!r}")
    for value, what in ((src_offset, "Source offset"), (dest_offset, "Destination offset"), (count, "The count")):
        if value < 0:
            raise CopyError(f"wp.copy: {what} must be non-negative, got {value}")


def _check_whole_copy(dest, src, dest_offset, src_offset, count, also_accepted, what):
    """The checks of a ``wp.copy`` that only copies whole arrays (a side is an indexed or a Fabric
    array): both sides arrays with data (``wp.array``, ``wp.indexedarray`` or what
    ``also_accepted`` takes; ``what`` names them in the error), no offsets or count."""
    for name, a in (("dest", dest), ("src", src)):
        if not (isinstance(a, array) or _is_indexed(a) or also_accepted(a)) or a.is_annotation:
            raise TypeError(f"wp.copy: {name} must be {what} with data, got {type(a).__name__}")
    _check_copy_range(dest_offset, src_offset, count)
    if dest_offset or src_offset or count:
        raise CopyError("wp.copy: offsets and counts are not supported for indexed or Fabric arrays; copy whole arrays")


def _copy_indexed(dest, src, dest_offset, src_offset, count):
    """``wp.copy`` where a side is a ``wp.indexedarray``: element by element, whole arrays of the
    same shape, dtype and device; a kernel launch, so a tape records it and gradients flow."""
    from .runtime._indexed_kernels import launch_copy

    _check_whole_copy(dest, src, dest_offset, src_offset, count, lambda a: False, "a wp.array")
    if tuple(dest.shape) != tuple(src.shape) or dest.dtype != src.dtype:
        raise CopyError(
            f"wp.copy: an indexed copy needs the same shape and dtype, got {dest.shape} {_dtype_name(dest.dtype)} "
            f"and {src.shape} {_dtype_name(src.dtype)}"
        )
    if dest.device is not src.device:  # gathered here, moved, scattered there
        src = src.contiguous().to(dest.device)
    if dest.size:
        launch_copy(dest, src, record=True)


def from_numpy(arr, dtype=None, shape=None, device=None, requires_grad=False) -> array:
    """Return a new array holding a copy of the NumPy array ``arr``.

    Args:
        arr: The source data.
        dtype: Element type (inferred from ``arr.dtype`` when None).
        shape: Shape to give the data (default ``arr.shape``).
        device: Device-like value.
        requires_grad: Allocate a zeroed gradient.
    """
    return array(arr, dtype=Any if dtype is None else dtype, shape=shape, device=device, requires_grad=requires_grad)


def copy(dest, src, dest_offset=0, src_offset=0, count=0, stream=None) -> None:
    """Copy elements from ``src`` into ``dest``.

    Contiguous (or 1-d) arrays are copied as flat element ranges: ``count`` elements (all of
    ``src`` after ``src_offset`` when 0) from ``src_offset`` to ``dest_offset``. Other arrays
    must have the same shape and are copied whole. Elements are copied as raw bytes, so the two
    dtypes must have the same size.

    Inside a ``wp.Tape`` the copy is recorded: its backward adds the gradient of the copied part
    of ``dest`` into ``src``'s and clears it in ``dest`` (unless ``dest`` retains its gradient).

    When a side is on a GPU the copy is queued on ``stream`` (default: the current stream of the
    GPU side, the destination's first); a copy into pageable host memory waits for completion, a
    copy into pinned host memory does not (synchronise before reading it).

    Args:
        dest: the array to write (any device).
        src: the array to read (any device).
        dest_offset: the first element of ``dest`` written (flat index; contiguous arrays).
        src_offset: the first element of ``src`` read (flat index; contiguous arrays).
        count: the number of elements to copy; 0 copies all of ``src`` from ``src_offset``.
        stream: the ``wp.Stream`` a GPU copy is queued on.

    Raises:
        TypeError: An argument is not an array with data.
        ValueError: Element sizes differ, a range is out of bounds, or shapes differ.

    Example:
        ``wp.copy(dest, src, dest_offset=1, count=2)`` writes ``src[0:2]`` into ``dest[1:3]``.
    """
    _copy(dest, src, dest_offset, src_offset, count, "wp.copy", stream)
    fm = recording.active_forward_mode()
    if fm is not None:  # wp.autograd.jvp/hvp: the tangents are copied alike
        fm.copy(dest, src, dest_offset, src_offset, count, stream)


def _copy(dest, src, dest_offset, src_offset, count, operation, stream=None):
    if (
        cpu_capture._active
        and getattr(dest, "device", None) is not None
        and dest.device.is_cpu
        and getattr(src, "device", dest.device).is_cpu
        and cpu_capture.defer(dest.device, lambda: _copy(dest, src, dest_offset, src_offset, count, operation, stream))
    ):
        return  # a CPU graph capture records the copy
    if _is_fabric(dest) or _is_fabric(src):
        _copy_fabric(dest, src, dest_offset, src_offset, count)
        return
    if _is_indexed(dest) or _is_indexed(src):
        _copy_indexed(dest, src, dest_offset, src_offset, count)
        return
    for name, a in (("dest", dest), ("src", src)):
        if not isinstance(a, array) or a.is_annotation:
            raise TypeError(f"wp.copy: {name} must be a wp.array with data, got {type(a).__name__}")
    _check_copy_range(dest_offset, src_offset, count)
    if _dtype_size(dest.dtype) != _dtype_size(src.dtype):
        raise CopyError(
            f"wp.copy: element sizes differ (destination dtype={_dtype_name(dest.dtype)}, source dtype="
            f"{_dtype_name(src.dtype)}: {_dtype_size(dest.dtype)} and {_dtype_size(src.dtype)} bytes); convert the data first"
        )
    flat = (dest.is_contiguous or dest.ndim == 1) and (src.is_contiguous or src.ndim == 1)
    if flat:
        count = count or src.size - src_offset
        if src_offset + count > src.size or dest_offset + count > dest.size:
            side = "source" if src_offset + count > src.size else "destination"
            raise CopyError(
                f"wp.copy: cannot copy {count} elements from offset {src_offset} of an array of size {src.size} "
                f"to offset {dest_offset} of an array of size {dest.size}: that exceeds the {side} size"
            )
        if count and not (dest.device.is_cpu and src.device.is_cpu):
            _device_copy(dest, src, dest_offset, src_offset, count, True, stream)
        elif count:
            d = _host_view(dest, raw=True).reshape(-1)
            s = _host_view(src, raw=True).reshape(-1)
            d[dest_offset : dest_offset + count] = s[src_offset : src_offset + count]
        if recording.active_tape() is not None:
            _record_write(operation, dest, src, _flat_range(dest_offset, src_offset, count))
        return
    if dest_offset or src_offset or count not in (0, src.size):
        raise CopyError("wp.copy: offsets and counts are only supported for 1-D or contiguous arrays")
    if dest.shape != src.shape:
        raise CopyError(f"wp.copy: incompatible shapes: destination shape={dest.shape}, source shape={src.shape}")
    if src.size and not (dest.device.is_cpu and src.device.is_cpu):
        _device_copy(dest, src, 0, 0, src.size, False, stream)
    elif src.size:
        _host_view(dest, raw=True)[...] = _host_view(src, raw=True)
    if recording.active_tape() is not None:
        _record_write(operation, dest, src, _whole)


# ---------------------------------------------------------------------------------------------
# copies and fills recorded on a tape
# ---------------------------------------------------------------------------------------------


def _device_copy(dest, src, dest_offset, src_offset, count, flat, stream):
    """A copy with at least one side on a GPU (runtime/cuda_memory.py)."""
    from .runtime.cuda_memory import copy_arrays

    copy_arrays(dest, src, dest_offset, src_offset, count, flat, stream)


def _whole(a, v, which):
    """Region selector for whole-array writes: all of the elements ``v`` (``a``'s on the host)."""
    return v


def _flat_range(dest_offset, src_offset, count):
    """Region selector for a flat copy: ``count`` elements from each side's offset."""

    def region(a, v, which):
        if a.ndim != 1:
            v = v.reshape((a.size,) + v.shape[a.ndim :])  # a contiguous array: a view
        start = dest_offset if which == "dest" else src_offset
        return v[start : start + count]

    return region


def _record_write(operation, dest, src, region):
    """Record on the active tape that ``operation`` wrote ``dest`` (from ``src``, or a constant).

    With ``config.verify_autograd_array_access``, warn if ``dest`` was read earlier on the tape and
    mark ``src`` as read. When gradients are involved, the tape gets the write's backward: the
    gradient of the written region of ``dest`` flows into ``src`` (when the element types match;
    a raw bit copy has no gradient) and is then cleared, since the old values of ``dest`` no longer
    influence anything (arrays with ``retain_grad=True`` keep it).
    """
    tape = recording.active_tape()
    if config.verify_autograd_array_access:
        filename, lineno = _user_location()
        dest.mark_write(operation=operation, filename=filename, lineno=lineno)
        if src is not None:
            src.mark_read()
    if dest.grad is None and (src is None or src.grad is None):
        return

    def backward():
        if dest.grad is None or not dest.size:
            return
        # on the CPU these are views of the gradients; from a GPU, copies written back below
        dest_host = dest.grad.device.allocator.download(dest.grad)
        d = region(dest.grad, dest_host, "dest")
        if src is not None and src.grad is not None and src.dtype is dest.dtype:
            src_host = src.grad.device.allocator.download(src.grad)
            s = region(src.grad, src_host, "src")
            s += d
            if not src.grad.device.is_cpu:
                src.grad.device.allocator.upload(src.grad, src_host)
        if not dest._retain_grad:
            d[...] = 0
            if not dest.grad.device.is_cpu:
                dest.grad.device.allocator.upload(dest.grad, dest_host)

    backward.forward_mode_safe = True  # forward mode copies and fills the tangents alike
    tape.record_func(backward=backward, arrays=[dest] if src is None else [dest, src])


_PACKAGE_DIR = os.path.dirname(os.path.abspath(__file__))


def _user_location():
    """``(filename, lineno)`` of the innermost caller outside the weft package."""
    f = sys._getframe(1)
    while f is not None and os.path.abspath(f.f_code.co_filename).startswith(_PACKAGE_DIR + os.sep):
        f = f.f_back
    return (f.f_code.co_filename, f.f_lineno) if f is not None else ("<unknown>", 0)


# Kernels call these too: wp.zeros(shape, dtype) / wp.empty(shape, dtype) make a fixed-size local
# array there (codegen/special_calls.py).
zeros._weft_kernel_local_array = True
empty._weft_kernel_local_array = True
