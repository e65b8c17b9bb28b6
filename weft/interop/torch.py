"""PyTorch interop: zero-copy tensors <-> arrays (with gradients), tensors as kernel arguments.

Contract:
  - ``from_torch`` / ``to_torch`` share memory, never copy. A gradient crosses with its array:
    ``from_torch(t, requires_grad=True)`` makes ``a.grad`` view ``t.grad`` (allocated as zeros with
    ``t``'s strides when absent); ``to_torch(a)`` of an array with a gradient gives a leaf tensor
    whose ``.grad`` views ``a.grad``.
  - A tensor passed straight to ``wp.launch`` is wrapped by ``coerce_tensor`` (registered in
    ``recording.array_coercions`` when this module is imported) with the kernel's declared dtype.
    A tensor without ``requires_grad`` gets NO gradient buffer, so a backward pass can never write
    into its data; a tensor with ``requires_grad`` gets its gradient accumulated in ``t.grad``.
  - Strided tensors (slices, transposes) are shared as strided arrays; vector/matrix components must
    be contiguous, and overlapping tensors (``expand``) cannot carry a gradient: both raise.
  - torch is imported lazily: importing weft never imports torch.
  - ``torch_function`` / ``torch_kernel`` (in ``weft.interop.torch_bridge``) make weft code a
    differentiable torch op.
"""

from __future__ import annotations

import sys
import typing
import warnings
import weakref

import numpy as np

from .. import types
from ..array import array
from ..runtime import recording
from ..runtime.device import get_device
from . import _memory


def _torch():
    try:
        import torch
    except ImportError:
        raise ImportError("PyTorch interop needs torch: pip install torch (or pip install 'weft[torch]')") from None
    return torch


# ---------------------------------------------------------------------------------------------
# devices and dtypes
# ---------------------------------------------------------------------------------------------

_to_torch_names = {
    types.bool: "bool",
    types.int8: "int8",
    types.uint8: "uint8",
    types.int16: "int16",
    types.uint16: "int16",  # torch's own uint16/32/64 support few ops; Warp maps them to signed
    types.int32: "int32",
    types.uint32: "int32",
    types.int64: "int64",
    types.uint64: "int64",
    types.float16: "float16",
    types.bfloat16: "bfloat16",
    types.float32: "float32",
    types.float64: "float64",
}
_from_torch_names = {
    "bool": types.bool,
    "int8": types.int8,
    "uint8": types.uint8,
    "int16": types.int16,
    "int32": types.int32,
    "int64": types.int64,
    "uint16": types.uint16,
    "uint32": types.uint32,
    "uint64": types.uint64,
    "float16": types.float16,
    "bfloat16": types.bfloat16,
    "float32": types.float32,
    "float64": types.float64,
}


def dtype_to_torch(warp_dtype):
    """Return the torch dtype of a weft scalar type (unsigned 16/32/64-bit map to signed, as in Warp).

    Args:
        warp_dtype: A weft scalar type.

    Returns:
        The matching ``torch.dtype``.

    Raises:
        TypeError: ``warp_dtype`` is not a weft scalar type (vectors have no torch dtype).
    """
    name = _to_torch_names.get(warp_dtype)
    if name is None:
        raise TypeError(f"Cannot convert {warp_dtype!r} to a Torch type")
    return getattr(_torch(), name)


def dtype_from_torch(torch_dtype):
    """Return the weft scalar type of a torch dtype.

    Args:
        torch_dtype: A ``torch.dtype``.

    Returns:
        The weft scalar type (``wp.float32``...).

    Raises:
        TypeError: torch dtypes weft has no type for (complex...).
    """
    name = str(torch_dtype).replace("torch.", "")
    t = _from_torch_names.get(name)
    if t is None:
        raise TypeError(f"Cannot convert {torch_dtype} to a Warp type")
    return t


def device_from_torch(torch_device):
    """Return the weft ``Device`` of a torch device (``torch.device`` or a string like ``"cpu"``).

    Args:
        torch_device: A ``torch.device`` or a device string.

    Returns:
        The matching ``wp.Device``.
    """
    name = str(torch_device)
    if name.startswith("cuda") and ":" not in name:
        name = f"cuda:{_torch().cuda.current_device()}"
    return get_device(name)


def device_to_torch(warp_device) -> str:
    """Return the torch device string (``"cpu"``, ``"cuda:0"``...) of a weft device-like value.

    Args:
        warp_device: A device-like value (``"cpu"``, ``"cuda:0"``, a ``wp.Device``; None for the current one).

    Returns:
        The torch device string.
    """
    d = get_device(warp_device)
    return "cpu" if d.is_cpu else f"cuda:{d.ordinal}"


def stream_from_torch(stream_or_device=None):
    """Return a ``wp.Stream`` wrapping a torch CUDA stream (no new stream is created).

    Args:
        stream_or_device: A ``torch.cuda.Stream``, or a torch device / device string / None whose
            current torch stream is taken.

    Returns:
        A ``wp.Stream`` over the same ``CUstream``.
    """
    torch = _torch()
    if isinstance(stream_or_device, torch.cuda.Stream):
        stream = stream_or_device
    else:
        stream = torch.cuda.current_stream(stream_or_device)
    from ..runtime.stream import Stream

    return Stream(device_from_torch(stream.device), cuda_stream=stream.cuda_stream)


def stream_to_torch(stream_or_device=None):
    """Return a ``torch.cuda.ExternalStream`` wrapping a weft stream (or a device's current stream).

    Args:
        stream_or_device: A ``wp.Stream``, or a CUDA device-like value whose current stream is wrapped; None
            for the current device.

    Returns:
        A ``torch.cuda.ExternalStream`` over the same ``CUstream``.
    """
    torch = _torch()
    from ..runtime.stream import Stream

    stream = stream_or_device if isinstance(stream_or_device, Stream) else get_device(stream_or_device).stream
    return torch.cuda.ExternalStream(stream.cuda_stream, device=device_to_torch(stream.device))


# ---------------------------------------------------------------------------------------------
# tensors -> arrays
# ---------------------------------------------------------------------------------------------


def _layout(t):
    """Shape, byte strides and weft scalar type of a tensor."""
    size = t.element_size()
    return tuple(t.shape), tuple(s * size for s in t.stride()), dtype_from_torch(t.dtype)


def _wrap_tensor(t, dtype) -> array:
    """A weft array over a tensor's data (no gradient), on the tensor's device."""
    if t.device.type not in ("cpu", "cuda"):
        raise RuntimeError(f"wp.from_torch: tensors on '{t.device}' are not supported (only CPU and CUDA tensors)")
    device = device_from_torch(t.device)
    shape, strides, scalar = _layout(t)
    dtype, shape, strides = _memory.element_layout(shape, strides, scalar, dtype, "PyTorch tensor")
    # The detached tensor shares the storage without holding the autograd graph.
    return _memory.wrap_memory(t.data_ptr(), dtype, shape, strides, t.detach(), device)


def _wrap_like(a: array, t) -> array:
    """A weft array over tensor ``t`` with exactly ``a``'s dtype, shape and strides (a gradient)."""
    want_shape, want_strides, _ = _layout(t)
    got = _wrap_tensor(t, a.dtype)
    same = got.shape == a.shape and all(n <= 1 or s1 == s2 for n, s1, s2 in zip(a.shape, got.strides, a.strides))
    if not same:
        raise RuntimeError(
            f"The gradient tensor (shape {want_shape}, byte strides {want_strides}) does not have the layout of the "
            f"array it belongs to (shape {a.shape}, byte strides {a.strides}), so weft cannot share it; "
            "set t.grad = None (weft then allocates one with the tensor's strides) or make the tensor contiguous"
        )
    return _memory.wrap_memory(t.data_ptr(), a.dtype, a.shape, a.strides, t.detach(), got.device)


def _tensor_grad(t):
    """``t.grad``, allocated as zeros with ``t``'s exact strides when absent (so it can be shared)."""
    torch = _torch()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # .grad of a non-leaf tensor warns; Warp reads it too
        g = t.grad
    if g is None:
        g = torch.empty_strided(t.shape, t.stride(), dtype=t.dtype, device=t.device).zero_()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            t.grad = g
    return g


def from_torch(t, dtype=None, requires_grad=None, grad=None, return_ctype=False, retain_grad=False):
    """Convert a torch tensor to a weft array without copying the data.

    Args:
        t: The tensor (CPU or CUDA; the array is on the matching weft device). Strided tensors
            (slices, transposes) become strided arrays.
        dtype: The array's dtype; default: the tensor's scalar type (a ``(n, 3)`` float32 tensor is
            then a 2-d float32 array). A vector/matrix dtype consumes the trailing dimensions, which
            must match its shape and be contiguous: ``(n, 3)`` float32 with ``wp.vec3`` is ``n`` vec3s.
        requires_grad: Whether the array gets a gradient viewing ``t.grad`` (allocated as zeros with
            ``t``'s strides when absent). Default: ``t.requires_grad``.
        grad: A gradient to attach instead (a tensor or a weft array of the same layout).
        return_ctype: Return the low-level ``array_t`` descriptor (accepted by ``wp.launch``).
        retain_grad: Keep the gradient during backward instead of zeroing it after reading it.

    Returns:
        The ``wp.array`` (or its ``array_t`` with ``return_ctype``).

    Raises:
        RuntimeError: The tensor's dtype does not match ``dtype``, its trailing dimensions do not fit
            a vector/matrix dtype, it is on another kind of device, its gradient has another layout, or it
            overlaps itself (``expand``) and a gradient is requested.
    """
    torch = _torch()
    if not isinstance(t, torch.Tensor):
        raise TypeError(f"wp.from_torch expects a torch.Tensor, got {type(t).__name__}")
    if requires_grad is None:
        requires_grad = t.requires_grad
    a = _wrap_tensor(t, dtype)
    if grad is not None:
        a.grad = _wrap_like(a, grad) if isinstance(grad, torch.Tensor) else grad
    elif requires_grad:
        if _memory.is_overlapping(a.shape, a.strides):
            raise RuntimeError(
                f"wp.from_torch: the tensor (shape {tuple(t.shape)}, strides {t.stride()}) repeats elements in memory "
                "(e.g. made by expand()), so it cannot carry a gradient; call .contiguous() on it first"
            )
        a.grad = _wrap_like(a, _tensor_grad(t))
    if retain_grad:
        a.retain_grad = True
    return a.__ctype__() if return_ctype else a


# ---------------------------------------------------------------------------------------------
# arrays -> tensors
# ---------------------------------------------------------------------------------------------

_signed_view = {np.dtype(np.uint16): np.int16, np.dtype(np.uint32): np.int32, np.dtype(np.uint64): np.int64}


def _tensor_view(a: array):
    """A tensor sharing ``a``'s memory (vector/matrix components become trailing dimensions)."""
    torch = _torch()
    bf16 = getattr(a.dtype, "_scalar", a.dtype) is types.bfloat16  # shared as int16 bits, then viewed
    if a.device.is_cuda:
        from .cuda_interface import cuda_array_interface

        np_dtype = np.dtype(np.int16) if bf16 else _memory_np_dtype(a)
        signed = np_dtype if bf16 else _signed_view.get(np_dtype)
        view = _CudaView(cuda_array_interface(a, np.dtype(signed).str if signed else None), a)
        t = torch.as_tensor(view, device=f"cuda:{a.device.ordinal}")
        return t.view(torch.bfloat16) if bf16 else t
    host = a.numpy()  # zero-copy; it keeps ``a`` alive, and the tensor keeps it alive
    if bf16:
        host = host.view(np.int16)
    elif host.dtype in _signed_view:
        host = host.view(_signed_view[host.dtype])
    t = torch.from_numpy(host) if host.flags.writeable else torch.as_tensor(host)
    return t.view(torch.bfloat16) if bf16 else t


class _CudaView:
    """Presents a GPU array to torch through ``__cuda_array_interface__``; torch keeps this object
    (hence the array) alive for as long as the tensor lives."""

    def __init__(self, interface, owner):
        self.__cuda_array_interface__ = interface
        self.owner = owner


def _memory_np_dtype(a):
    return np.dtype(getattr(a.dtype, "_scalar", a.dtype).np_dtype)


def to_torch(a, requires_grad=None):
    """Convert a weft array to a torch tensor without copying the data.

    Args:
        a: The array (on the CPU or a GPU).
        requires_grad: Whether the tensor requires grad; default ``a.requires_grad``. When true, the
            tensor is a leaf whose ``.grad`` views ``a.grad`` (None if ``a`` has no gradient, as in Warp).

    Returns:
        The tensor. Vector/matrix components are trailing dimensions (``n`` vec3s → ``(n, 3)``).
    """
    if not isinstance(a, array) or a.is_annotation:
        raise TypeError(f"wp.to_torch expects a wp.array with data, got {type(a).__name__}")
    if requires_grad is None:
        requires_grad = a.requires_grad
    t = _tensor_view(a)
    if requires_grad:
        t.requires_grad_(True)
        if a.grad is not None:
            t.grad = _tensor_view(a.grad)
    return t


# ---------------------------------------------------------------------------------------------
# tensors passed straight to wp.launch
# ---------------------------------------------------------------------------------------------


# Plain tensors passed to launches again and again (simulation loops) keep their wrapper:
# id(tensor) -> (weak reference, layout key, array). Tensors that require grad are wrapped anew
# each time, since their .grad may have been replaced.
_wrappers: dict = {}
_MAX_WRAPPERS = 256


def coerce_tensor(value, t: types.ArrayType):
    """The coercion hook: a torch tensor given as the array argument of type ``t`` (None if
    ``value`` is not a tensor). The array gets a gradient only if the tensor requires grad."""
    torch = sys.modules.get("torch")  # a tensor exists only if torch was imported
    if torch is None or not isinstance(value, torch.Tensor):
        return None
    dtype = None if t.dtype is typing.Any else t.dtype
    if value.requires_grad:
        return _coerce(value, t, dtype, True)
    key = (dtype, value.data_ptr(), value.shape, value.stride(), value.dtype)
    hit = _wrappers.get(id(value))
    if hit is not None and hit[0]() is value and hit[1] == key:
        return hit[2]
    a = _coerce(value, t, dtype, False)
    if len(_wrappers) >= _MAX_WRAPPERS:
        _wrappers.clear()
    ident = id(value)
    _wrappers[ident] = (weakref.ref(value, lambda _r: _wrappers.pop(ident, None)), key, a)
    return a


def _coerce(value, t, dtype, requires_grad):
    try:
        return from_torch(value, dtype=dtype, requires_grad=requires_grad)
    except RuntimeError as e:  # wrong dtype or layout for this parameter: a type error of the launch
        raise TypeError(f"a torch tensor cannot be passed as {t!r}: {e}") from None


if coerce_tensor not in recording.array_coercions:
    recording.array_coercions.append(coerce_tensor)
