"""The array object: typed, strided, up-to-4-d memory that kernels read and write.

Contract:
  - An ``array`` is either a TYPE ANNOTATION (``wp.array(dtype=float, ndim=2)``, ``wp.array[float]``:
    no storage, ``is_annotation`` is true) or a real array with storage on a device.
  - A real array is described by ``ptr`` (integer address of element 0), ``shape``, ``strides``
    (in BYTES, like NumPy) and ``dtype``; it keeps its memory alive through ``_owner`` (on the CPU,
    the NumPy buffer it was allocated in or wraps). Views (slicing, reshape, transpose) share the
    owner and view ``grad`` the same way, so ``a[1:].grad`` is ``a.grad[1:]``.
  - ``__ctype__()`` returns the ``types.array_t`` that crosses into C++; it is cached and rebuilt
    only when ``grad``, ``requires_grad`` or ``retain_grad`` change (the layout is immutable).
  - Element types are scalar types from ``weft.types``. A dtype may also carry a trailing element
    shape (``_shape``) and a scalar type (``_scalar``), e.g. vec3 = 3 float32s; everything that needs
    the NumPy layout of an element goes through ``_np_layout``.
  - Device-specific memory operations (allocate, read to the host, write, fill) go through the
    device's ``allocator`` (``runtime/memory.py``, ``runtime/cuda_memory.py``); arrays on a GPU
    also export ``__cuda_array_interface__`` and DLPack capsules of kind kDLCUDA.
"""

from __future__ import annotations

import ctypes
import operator
import sys
import typing
from typing import Any

import numpy as np

from . import types
from .array_annotation import _ArrayAnnotation, _ArrayAnnotationBase, parse_subscript
from .runtime import cpu_capture, recording
from .runtime.device import Device, get_device
from .runtime.memory import host_view as _host_view  # noqa: F401  (re-exported for array_constructors)
from .array_layout import (
    _resolve_dtype,
    _np_layout,
    _dtype_size,
    _dtype_name,
    _prod,
    _normalize_shape,
    _check_dims,
    _contiguous_strides,
    _byte_span,
    _index_layout,
    _reshape_dims,
)

MAX_DIMS = types.MAX_DIMS

_ShapeArray = ctypes.c_int32 * MAX_DIMS
_StrideArray = ctypes.c_int64 * MAX_DIMS
_INT32_MAX = 2**31 - 1


# ---------------------------------------------------------------------------------------------
# device memory: each device's ``allocator`` (runtime/memory.py) allocates and moves the data
# ---------------------------------------------------------------------------------------------


def _alloc(device: Device, nbytes: int, pinned: bool, zero: bool):
    """Allocate ``nbytes`` on ``device``; return ``(ptr, owner)`` where ``owner`` keeps it alive."""
    return device.allocator.alloc(nbytes, zero, pinned)


# ---------------------------------------------------------------------------------------------
# the array
# ---------------------------------------------------------------------------------------------


class array:
    """A fixed-size multi-dimensional array of elements of one type (at most 4 dimensions).

    Called with no ``data``, ``shape`` or ``ptr`` it is a type annotation for kernel
    parameters, e.g. ``wp.array(dtype=float)`` or ``wp.array(dtype=wp.float64, ndim=2)``.

    Args:
        data: Initial contents: a list/tuple, a NumPy array, another ``array`` or any object with
            ``__array_interface__``. Nested sequences give the shape.
        dtype: Element type. ``float`` is float32 and ``int`` is int32; when omitted it is inferred
            from ``data`` through NumPy (a list of Python floats gives float64, of ints int64).
        shape: An int or a tuple of ints. With ``data``, the data is reshaped to it.
        strides: Byte strides per dimension (with ``ptr`` or a fresh allocation); default contiguous.
        ptr: Integer address of existing memory to wrap (the caller keeps it alive).
        capacity: Number of bytes addressable from ``ptr`` (computed when omitted).
        device: Where the array lives (default: the current device).
        pinned: Whether host memory is pinned (recorded only; meaningful once CUDA exists).
        copy: With ``copy=False`` and a NumPy array of matching dtype on the CPU, share its memory.
        deleter: Called as ``deleter(ptr, capacity)`` when the array is garbage collected.
        ndim: Number of dimensions of an annotation (default 1), or a check for real arrays.
        grad: A gradient array of the same dtype, shape, strides and device.
        requires_grad: Allocate a zeroed gradient array.
        retain_grad: Keep the gradient during backward instead of zeroing it after it is read.

    Raises:
        TypeError: Unsupported dtype or data.
        ValueError: Bad shape (more than 4 dimensions...), data that does not fit the shape, or
            an incompatible ``grad``.
    """

    _weft_array_class = True  # what wp.types.type_is_array looks for
    _weft_kernel_constructible = True  # kernels may call wp.array(ptr=..., shape=..., dtype=...)

    def __init__(
        self,
        data=None,
        dtype=Any,
        shape=None,
        strides=None,
        ptr=None,
        capacity=None,
        device=None,
        pinned=False,
        copy=True,
        deleter=None,
        ndim=None,
        grad=None,
        requires_grad=False,
        retain_grad=False,
    ):
        self._reset()
        self._retain_grad = bool(retain_grad)
        self.deleter = deleter
        if data is None and shape is None and ptr is None:
            self._init_annotation(dtype, ndim)
            return
        if data is not None:
            if ptr is not None:
                raise ValueError("Pass either data= or ptr= to wp.array, not both")
            self._init_from_data(data, dtype, shape, device, pinned, copy)
        elif ptr is not None:
            self._init_from_ptr(ptr, dtype, shape, strides, capacity, device, pinned)
        else:
            self._init_new(dtype, shape, strides, device, pinned)
        if ndim is not None and ndim != self.ndim:
            raise ValueError(f"Expected a {ndim}-d array but the given data/shape has shape {self.shape}")
        if grad is not None:
            self.grad = grad
        elif requires_grad:
            self._alloc_grad()
        _check_retain(self)

    # -- construction --------------------------------------------------------------------------

    def _reset(self):
        self._grad = None
        self._requires_grad = False
        self._retain_grad = False
        self._ctype = None
        self._array_interface = None
        self._owner = None
        self._ref = None  # the array this one is a view of
        self._is_read = False
        self._is_annotation = False
        self.deleter = None

    def _set_layout(self, ptr, dtype, shape, strides, device, pinned, owner, capacity=None):
        itemsize = _dtype_size(dtype)
        self.ptr = ptr
        self.dtype = dtype
        self.shape = shape
        self.strides = strides
        self.ndim = len(shape)
        self.size = _prod(shape)
        self.device = device
        self.pinned = bool(pinned) and device.is_cpu
        self._owner = owner
        self.is_contiguous = strides == _contiguous_strides(shape, itemsize)
        if capacity is None:
            capacity = _byte_span(shape, strides, itemsize)[1]
        self.capacity = capacity

    def _init_annotation(self, dtype, ndim):
        self._is_annotation = True
        self.dtype = dtype if dtype is Any else _resolve_dtype(dtype)
        self.ndim = 1 if ndim is None else int(ndim)
        if not 1 <= self.ndim <= MAX_DIMS:
            raise ValueError(f"Array annotations take ndim between 1 and {MAX_DIMS}, got {ndim}")
        self.shape = (0,) * self.ndim
        self.strides = (0,) * self.ndim
        self.size = 0
        self.capacity = 0
        self.ptr = None
        self.device = None
        self.pinned = False
        self.is_contiguous = False

    def _init_new(self, dtype, shape, strides, device, pinned, zero=True):
        dtype = types.float32 if dtype is Any else _resolve_dtype(dtype)
        shape = _normalize_shape(shape)
        device = get_device(device)
        itemsize = _dtype_size(dtype)
        strides = _contiguous_strides(shape, itemsize) if strides is None else tuple(int(s) for s in strides)
        if len(strides) != len(shape):
            raise ValueError(
                f"Invalid number of strides, expected {len(shape)} strides, got {len(strides)}: strides {strides} "
                f"must have one entry per dimension of shape {shape}"
            )
        lo, hi = _byte_span(shape, strides, itemsize)
        ptr, owner = _alloc(device, hi - lo, pinned, zero)
        if ptr is not None:
            ptr -= lo  # negative strides: element 0 is not at the start of the buffer
        self._set_layout(ptr, dtype, shape, strides, device, pinned, owner, hi - lo)

    def _init_from_ptr(self, ptr, dtype, shape, strides, capacity, device, pinned):
        if dtype is Any:
            raise TypeError("wp.array(ptr=...) needs an explicit dtype")
        if shape is None:
            raise ValueError("wp.array(ptr=...) needs an explicit shape")
        dtype = _resolve_dtype(dtype)
        shape = _normalize_shape(shape)
        strides = _contiguous_strides(shape, _dtype_size(dtype)) if strides is None else tuple(int(s) for s in strides)
        if len(strides) != len(shape):
            raise ValueError(f"Invalid number of strides, expected {len(shape)} strides, got {len(strides)}")
        ptr = int(ptr.value if isinstance(ptr, ctypes.c_void_p) else ptr) or None
        self._set_layout(ptr, dtype, shape, strides, get_device(device), pinned, None, capacity)

    def _init_from_data(self, data, dtype, shape, device, pinned, copy):
        if not isinstance(data, array) and hasattr(data, "__cuda_array_interface__"):
            from .interop.cuda_interface import wrap_cuda_interface

            wrapped = wrap_cuda_interface(data, None if dtype is Any else dtype)
            if (device is None or get_device(device) is wrapped.device) and shape is None:
                # GPU memory on the requested device is shared, never copied (the exporter stays alive)
                w = wrapped
                self._set_layout(w.ptr, w.dtype, w.shape, w.strides, w.device, False, data, w.capacity)
                return
            data = wrapped
        device = get_device(device)
        if isinstance(data, array):
            if data.is_annotation:
                raise TypeError("Cannot build an array from an array type annotation")
            if dtype is Any:
                dtype = data.dtype
            data = data.numpy()
        if isinstance(data, (list, tuple)) and data and all(hasattr(x, "_struct") for x in data):
            # a list of struct instances: pack each through its ctypes mirror
            if dtype is Any:
                dtype = data[0]._struct
            data = np.frombuffer(b"".join(bytes(x._ctype()) for x in data), dtype=dtype.np_dtype).copy()
        arr, dtype = _to_numpy(data, dtype)
        _, trailing = _np_layout(dtype)
        arr = _fit_shape(arr, dtype, trailing, shape)
        outer_ndim = arr.ndim - len(trailing)
        out_shape = tuple(arr.shape[:outer_ndim]) or (1,)
        _check_dims(out_shape)
        shareable = (
            device.is_cpu
            and not copy
            and not pinned  # read-only memory is shared too, as in Warp (JAX arrays through NumPy are)
            and all(s > 0 for s in arr.strides)
            and _inner_contiguous(arr, trailing)
        )
        if shareable and arr.ndim > 0:
            strides = tuple(arr.strides[:outer_ndim])
            self._set_layout(arr.ctypes.data, dtype, out_shape, strides, device, pinned, arr)
            return
        self._init_new(dtype, out_shape, None, device, pinned, zero=False)
        if self.size:
            device.allocator.upload(self, arr.reshape(out_shape + trailing))

    # -- annotations ---------------------------------------------------------------------------

    def __class_getitem__(cls, params):
        """``wp.array[float]``: an annotation (``array_annotation._ArrayAnnotation``) equal to
        ``wp.array(dtype=float)``; ``wp.array[float, Literal[2]]`` (``[float, 2]``, ``[float, Any]``)
        gives the dimensions too."""
        dtype, ndim = parse_subscript(params, getattr(cls, "ndim_fixed", None))
        return _ArrayAnnotation(dtype, ndim)

    @property
    def is_annotation(self) -> bool:
        """True if this object is a type annotation without storage."""
        return self._is_annotation

    def __eq__(self, other):
        """Annotations are equal when they describe the same kernel type (``wp.array[float] ==
        wp.array(dtype=wp.float32)``); arrays with data are equal only to themselves."""
        if self._is_annotation and isinstance(other, array) and other._is_annotation:
            return self.kernel_type() == other.kernel_type()
        if self._is_annotation and isinstance(other, _ArrayAnnotationBase):
            return other == self
        return self is other

    def __hash__(self):
        return hash(self.kernel_type()) if self._is_annotation else object.__hash__(self)

    def kernel_type(self) -> types.ArrayType:
        """The kernel-side type of this array or annotation: ``ArrayType(dtype, ndim)``."""
        return types.ArrayType(self.dtype, self.ndim)

    def _require_data(self, what: str):
        if self._is_annotation:
            raise TypeError(f"{self!r} is a type annotation without data; cannot {what} it")

    # -- gradients -----------------------------------------------------------------------------

    @property
    def grad(self):
        """The gradient array (same dtype, shape, strides and device), or None."""
        return self._grad

    @grad.setter
    def grad(self, grad):
        if grad is None:
            self._grad = None
            self._requires_grad = False
            self._retain_grad = False
        else:
            if not isinstance(grad, array):
                grad = array(grad, dtype=self.dtype, device=self.device, copy=False)
            self._check_grad(grad)
            self._grad = grad
            self._requires_grad = True
        self._ctype = None

    def _check_grad(self, grad):
        for name in ("dtype", "shape", "strides", "device"):
            mine, theirs = getattr(self, name), getattr(grad, name)
            if mine != theirs:
                raise ValueError(f"The gradient array is incompatible: expected {name} {mine}, got {theirs}")

    @property
    def requires_grad(self) -> bool:
        """Whether the array tracks a gradient; setting True allocates a zeroed ``grad``."""
        return self._requires_grad

    @requires_grad.setter
    def requires_grad(self, value):
        if value and self._grad is None:
            self._alloc_grad()
        elif not value:
            self._grad = None
            self._retain_grad = False  # nothing left to retain
        self._requires_grad = bool(value)
        self._ctype = None

    @property
    def retain_grad(self) -> bool:
        """Whether backward keeps this array's gradient instead of zeroing it after reading it."""
        return self._retain_grad

    @retain_grad.setter
    def retain_grad(self, value):
        self._retain_grad = bool(value)
        _check_retain(self)
        self._ctype = None

    def _alloc_grad(self):
        grad = array.__new__(array)
        grad._reset()
        grad._init_new(self.dtype, self.shape, self.strides, self.device, self.pinned, zero=True)
        self._grad = grad
        self._requires_grad = True
        self._ctype = None

    # -- crossing into C++ ---------------------------------------------------------------------

    def __ctype__(self) -> types.array_t:
        """The ``array_t`` descriptor passed to kernels (cached)."""
        c = self._ctype
        if c is None:
            self._require_data("pass")
            grad = self._grad
            c = types.array_t(
                self.ptr or 0,
                (grad.ptr or 0) if grad is not None else 0,
                _ShapeArray(*self.shape),
                _StrideArray(*self.strides),
                self.ndim,
                types.ARRAY_RETAIN_GRAD if self._retain_grad else 0,
            )
            self._ctype = c
        return c

    # -- views ---------------------------------------------------------------------------------

    def _view(self, offset, shape, strides, dtype=None):
        """A view sharing memory, ``offset`` bytes from ``ptr``; the gradient is viewed alike."""
        v = array.__new__(array)
        v._reset()
        ptr = None if self.ptr is None else self.ptr + offset
        dtype = self.dtype if dtype is None else dtype
        capacity = max(self.capacity - offset, 0)
        v._set_layout(ptr, dtype, shape, strides, self.device, self.pinned, self._owner, capacity)
        v._ref = self
        v._is_read = self._is_read
        v._retain_grad = self._retain_grad
        if self._grad is not None:
            v._grad = self._grad._view(offset, shape, strides, dtype)
            v._requires_grad = True
        return v

    def __getitem__(self, key):
        self._require_data("index")
        if any(isinstance(k, array) for k in (key if isinstance(key, tuple) else (key,))):
            from .indexed_array import index_with_arrays

            return index_with_arrays(self, key)  # a wp.indexedarray
        offset, shape, strides = _index_layout(self.shape, self.strides, key)
        return self._view(offset, shape, strides)

    def reshape(self, shape):
        """Return a view with a new shape (one dimension may be -1). Contiguous arrays only.

        Raises:
            RuntimeError: The array is not contiguous (call ``.contiguous()`` first).
            ValueError: The new shape has a different number of elements.
        """
        self._require_data("reshape")
        if not self.is_contiguous:
            raise RuntimeError("Reshaping non-contiguous arrays is unsupported; call a.contiguous().reshape(...)")
        dims = _reshape_dims(self.size, shape, self.shape)
        return self._view(0, dims, _contiguous_strides(dims, _dtype_size(self.dtype)))

    def flatten(self):
        """Return a 1-d view of a contiguous array (the array itself if already 1-d)."""
        if self.ndim == 1:
            return self
        if not self.is_contiguous:
            raise RuntimeError("Flattening non-contiguous arrays is unsupported; call a.contiguous().flatten()")
        return self.reshape(-1)

    def transpose(self, axes=None):
        """Return a view with permuted axes (reversed when ``axes`` is None)."""
        self._require_data("transpose")
        if axes is None:
            axes = tuple(range(self.ndim))[::-1]
        axes = tuple(operator.index(a) for a in axes)
        if sorted(axes) != list(range(self.ndim)):
            raise ValueError(f"axes {axes} must be a permutation of 0..{self.ndim - 1}")
        if self.ndim == 1:
            return self
        shape = tuple(self.shape[a] for a in axes)
        strides = tuple(self.strides[a] for a in axes)
        return self._view(0, shape, strides)

    def view(self, dtype):
        """Return a view of the same memory as another dtype, as in Warp: of the same byte size,
        or a vector / matrix array as its scalars (trailing dimensions added), or a scalar array
        as vectors / matrices (its trailing dimensions, contiguous, taken as their shape).

        Raises:
            TypeError: The sizes do not fit (the message says which).
        """
        self._require_data("view")
        dtype = _resolve_dtype(dtype)
        src_shape, dst_shape = getattr(self.dtype, "_shape", ()), getattr(dtype, "_shape", ())
        src_scalar, dst_scalar = getattr(self.dtype, "_scalar", self.dtype), getattr(dtype, "_scalar", dtype)
        if _dtype_size(dtype) == _dtype_size(self.dtype):
            return self._view(0, self.shape, self.strides, dtype)
        prefix = f"cannot create an array view with dtype {_dtype_name(dtype)} from source dtype {_dtype_name(self.dtype)}: "
        if src_shape and not dst_shape:  # vectors / matrices as their scalars
            if _dtype_size(src_scalar) != _dtype_size(dtype):
                raise ArrayViewError(
                    prefix + f"source scalar dtype {_dtype_name(src_scalar)} has size {_dtype_size(src_scalar)} bytes, "
                    f"but target dtype has size {_dtype_size(dtype)} bytes"
                )
            inner = _contiguous_strides(src_shape, _dtype_size(dtype))
            return self._view(0, self.shape + tuple(src_shape), self.strides + inner, dtype)
        if dst_shape and not src_shape:  # scalars as vectors / matrices
            if _dtype_size(dst_scalar) != _dtype_size(self.dtype):
                raise ArrayViewError(
                    prefix + f"source dtype has size {_dtype_size(self.dtype)} bytes, but target scalar dtype "
                    f"{_dtype_name(dst_scalar)} has size {_dtype_size(dst_scalar)} bytes"
                )
            k = len(dst_shape)
            inner = _contiguous_strides(tuple(dst_shape), _dtype_size(self.dtype))
            if tuple(self.shape[-k:]) != tuple(dst_shape) or tuple(self.strides[-k:]) != inner:
                raise ArrayViewError(
                    prefix + f"the array's trailing dimensions {tuple(self.shape[-k:])} must be contiguous and "
                    f"match the target's shape {tuple(dst_shape)}"
                )
            outer = tuple(self.shape[:-k]) or (1,)
            strides = tuple(self.strides[:-k]) or (_dtype_size(dtype),)
            return self._view(0, outer, strides, dtype)
        raise ArrayViewError(
            prefix + f"source dtype has size {_dtype_size(self.dtype)} bytes, but target dtype has size "
            f"{_dtype_size(dtype)} bytes"
        )

    def contiguous(self):
        """Return this array if contiguous, else a contiguous copy."""
        self._require_data("copy")
        return self if self.is_contiguous else clone(self, requires_grad=False)

    def to(self, device, requires_grad=None):
        """Return the array on ``device`` (this array if it is already there, else a copy)."""
        device = get_device(device)
        if device == self.device:
            return self
        return clone(self, device=device, requires_grad=requires_grad)

    # -- host access ---------------------------------------------------------------------------

    @property
    def __array_interface__(self):
        if self._is_annotation or not self.device.is_cpu:
            # AttributeError makes hasattr() false, so NumPy falls back to other protocols.
            raise AttributeError("__array_interface__ is only available for arrays on the CPU")
        interface = self._array_interface
        if interface is None:
            np_dtype, trailing = _np_layout(self.dtype)
            interface = {
                "data": (self.ptr or 0, False),
                "shape": self.shape + trailing,
                "strides": self.strides + _contiguous_strides(trailing, np_dtype.itemsize),
                # bfloat16 travels as its uint16 bit patterns (NumPy has no array-interface code for it)
                "typestr": "<u2" if getattr(self.dtype, "_scalar", self.dtype) is types.bfloat16 else np_dtype.str,
                "version": 3,
            }
            if np_dtype.fields is not None:
                interface["descr"] = np_dtype.descr  # records (arrays of structs) keep their field names
            self._array_interface = interface
        return interface

    @property
    def __cuda_array_interface__(self):
        if self._is_annotation or not self.device.is_cuda:
            raise AttributeError("__cuda_array_interface__ is only available for arrays on a CUDA device")
        from .interop.cuda_interface import cuda_array_interface

        return cuda_array_interface(self)

    def cptr(self):
        """A ctypes pointer to the first element, typed as one element's C layout (``c_float``,
        the vector class, a struct's C struct): ``a.cptr()[i]`` reads element ``i`` of a contiguous
        CPU array in place. None for an empty array.

        Raises:
            TypeError: the array is a type annotation without data.
            RuntimeError: the array is on a GPU (its address cannot be read on the host).
        """
        self._require_data("take the address of")
        if not self.device.is_cpu:
            raise RuntimeError(
                f"cptr() gives a host pointer, but the array is on {self.device}; "
                "read it with .numpy() or make a CPU copy with .to('cpu')"
            )
        if self.ptr is None:
            return None
        ctype = self.dtype.ctype if hasattr(self.dtype, "ctype") else self.dtype
        return ctypes.cast(self.ptr, ctypes.POINTER(ctype))

    def numpy(self) -> np.ndarray:
        """A NumPy array of the contents: a zero-copy view on the CPU, a copy from a GPU (which
        waits for the device's current stream). Vector/matrix components are trailing dims."""
        self._require_data("convert")
        if self.ptr is None:
            np_dtype, trailing = _np_layout(self.dtype)
            return np.zeros(self.shape + trailing, dtype=np_dtype)
        return self.device.allocator.download(self)

    def __dlpack__(self, *, stream=None, max_version=None, dl_device=None, copy=None):
        """Export the array as a DLPack capsule (zero-copy; vector/matrix components become trailing
        dimensions), for ``np.from_dlpack``, ``torch.from_dlpack``, ``jax.dlpack.from_dlpack``...

        On a GPU the capsule is of kind kDLCUDA and ``stream`` (the consumer's stream handle) is
        made to wait for the work weft queued on the device's current stream.
        """
        self._require_data("export")
        scalar = getattr(self.dtype, "_scalar", self.dtype)
        if self.device.is_cuda or scalar in (types.bool, types.bfloat16):  # NumPy exports neither
            from .interop.cuda_interface import export_dlpack

            return export_dlpack(self, stream)
        # NumPy's exporter writes the DLPack structs; the NumPy view keeps this array alive.
        options = {"max_version": max_version, "dl_device": dl_device, "copy": copy}
        options = {k: v for k, v in options.items() if v is not None}  # NumPy < 2 only takes stream=
        return self.numpy().__dlpack__(stream=stream, **options)

    def __dlpack_device__(self):
        """The DLPack device of the array: ``(1, 0)`` (kDLCPU) or ``(2, ordinal)`` (kDLCUDA)."""
        self._require_data("export")
        return (1, 0) if self.device.is_cpu else (2, self.device.ordinal)

    def __array__(self, dtype=None, copy=None):
        a = self.numpy()
        if dtype is not None:
            a = a.astype(dtype, copy=False)
        return a.copy() if copy else a

    def list(self):
        """The elements as a flat Python list: numbers, vector / matrix values, struct instances."""
        a = self.numpy()
        _, trailing = _np_layout(self.dtype)
        rows = a.reshape((self.size,) + trailing)
        if getattr(self.dtype, "_kind", None) == "struct":
            return [self.dtype.from_record(r, self.device) for r in rows]
        if getattr(self.dtype, "_scalar", self.dtype) is types.bfloat16:  # numbers, with or without ml_dtypes
            rows = types.np_bfloat16_bits_to_float32(rows.view(np.uint16))
        if trailing:
            return [self.dtype(*r.reshape(-1).tolist()) for r in rows]
        return rows.tolist()

    def __len__(self):
        self._require_data("take the length of")
        return self.shape[0]

    def __str__(self):
        if self._is_annotation:
            return repr(self)
        return str(self.numpy())

    def __repr__(self):
        if self._is_annotation:
            prefix = "array" if self.ndim == 1 else f"array{self.ndim}d"
            return f"{prefix}(dtype={_dtype_name(self.dtype)})"
        body = np.array2string(self.numpy(), separator=", ", prefix="array(")
        device = "" if self.device.is_cpu else f", device='{self.device}'"
        return f"array({body}, dtype={_dtype_name(self.dtype)}{device})"

    # -- writing -------------------------------------------------------------------------------

    def zero_(self):
        """Set every element to zero."""
        self._fill(0, "array.zero_")

    def fill_(self, value):
        """Set every element to ``value``.

        Inside a ``wp.Tape`` the fill is recorded (see ``_record_write``); outside one it
        re-initialises the array for the overwrite check (``verify_autograd_array_access``).

        Raises:
            ValueError: ``value`` cannot be converted to the array's dtype.
        """
        self._fill(value, "array.fill_")

    def _fill(self, value, operation):
        self._require_data("fill")
        fm = recording.active_forward_mode()
        if fm is not None:  # wp.autograd.jvp/hvp: a constant's tangent is zero
            fm.fill(self)
        if self.device.is_cpu and cpu_capture._active and cpu_capture.defer(
            self.device, lambda: self._fill(value, operation)
        ):
            return  # a CPU graph capture records the fill
        if self.size:
            np_dtype, trailing = _np_layout(self.dtype)
            if isinstance(value, types.scalar_base):
                value = value.value
            elif getattr(value, "_struct", None) is not None and value._struct is self.dtype:
                value = np.frombuffer(bytes(value._ctype()), dtype=np_dtype)[0]  # a struct instance: its record
            elif np_dtype.fields is not None and isinstance(value, (int, float)) and value == 0:
                value = np.zeros((), dtype=np_dtype)  # a struct array filled with 0: zeroed, as in Warp
            elif hasattr(value, "_shape") and hasattr(value, "__array__"):
                value = value.__array__()  # a vector / matrix value: its numbers, not its storage bits
            try:
                v = types.to_storage(value, getattr(self.dtype, "_scalar", self.dtype)) if np_dtype.fields is None else np.asarray(value, dtype=np_dtype)
                if trailing and v.ndim == 1 and v.size == _prod(trailing):
                    v = v.reshape(trailing)  # a matrix given as its flat row-major values, as Warp takes it
                np.broadcast_to(v, trailing)
            except (TypeError, ValueError, OverflowError) as e:
                raise ValueError(f"Cannot fill a {_dtype_name(self.dtype)} array with {value!r}: {e}") from None
            self.device.allocator.fill(self, v)
        if operation is None or recording.active_tape() is None:
            self._is_read = False  # (re-)initialisation
        elif self.size:
            _record_write(operation, self, None, _whole)

    def assign(self, src):
        """Copy ``src`` (an array, NumPy array or nested list of the same shape) into this array.

        Inside a ``wp.Tape`` it is recorded like ``wp.copy``.

        Raises:
            ValueError: ``src`` has a different shape (contiguous arrays of equal size are accepted).
        """
        self._require_data("assign to")
        if not isinstance(src, array):
            src = array(src, dtype=self.dtype, copy=False, device="cpu")
        same_size_flat = src.size == self.size and src.is_contiguous and self.is_contiguous
        if src.shape != self.shape and not same_size_flat:
            raise ValueError(f"Cannot assign data of shape {src.shape} to an array of shape {self.shape}")
        _copy(self, src, 0, 0, 0, "array.assign")

    # -- gradient bookkeeping for the tape -----------------------------------------------------

    def mark_init(self):
        """Clear the 'has been read by a launch' flag."""
        self._is_read = False

    def mark_read(self):
        """Record that a launch read this array (and, through views, its parents)."""
        a = self
        while a is not None:
            a._is_read = True
            a = a._ref

    def mark_write(self, read_in_same_kernel=False, **kwargs):
        """Warn (on stderr) when a launch or copy writes this array after an earlier one on the tape
        read it: the backward pass of the reader would replay the overwritten values.

        Args:
            read_in_same_kernel: the writing kernel itself may read the array before writing it
                (an in-place update); warns even if no earlier launch read it.
            kwargs: where the write happens: ``arg_name``, ``kernel_name``, ``filename`` and
                ``lineno`` for a kernel launch, or ``operation``, ``filename`` and ``lineno``.

        Returns:
            Whether a warning was printed.
        """
        if not (self._is_read or read_in_same_kernel):
            return False
        where, by = "", ""
        if all(k in kwargs for k in ("arg_name", "kernel_name", "filename", "lineno")):
            where = (
                f" passed to argument {kwargs['arg_name']} in kernel {kwargs['kernel_name']} "
                f"at {kwargs['filename']}:{kwargs['lineno']}"
            )
        elif all(k in kwargs for k in ("operation", "filename", "lineno")):  # Warp's words for copies
            op = kwargs["operation"]
            by = " by an array copy" if op in ("wp.copy", "array.assign") else f" by {op}"
            by += f" at {kwargs['filename']}:{kwargs['lineno']}"
        if self._is_read:
            what = f"is being written to{by} but has already been read from in a previous launch"
        else:
            what = f"is being written to{by} after it has been read from within the same kernel"
        print(
            f"Warning: Array {self}{where} {what}. This may corrupt gradient computation in the backward pass.",
            file=sys.stderr,
        )
        return True

    def __del__(self):
        deleter = getattr(self, "deleter", None)
        if deleter is not None and getattr(self, "ptr", None) is not None:
            deleter(self.ptr, self.capacity)


# ---------------------------------------------------------------------------------------------
# helpers for construction from data
# ---------------------------------------------------------------------------------------------


def _to_numpy(data, dtype):
    """Convert ``data`` to a NumPy array and resolve the weft dtype (inferring it if ``Any``)."""
    if dtype is Any or dtype is None:
        try:
            arr = np.asarray(data)
        except (TypeError, ValueError, OverflowError) as e:
            raise TypeError(f"Cannot convert {type(data).__name__} to an array: {e}") from None
        dtype = types.scalar_from_numpy(arr.dtype) if arr.dtype.kind != "O" else None
        if dtype is None:
            raise TypeError(
                f"Cannot infer an array dtype from data of NumPy dtype {arr.dtype} "
                f"(ragged or non-numeric data?); pass dtype= explicitly"
            )
        return arr, dtype
    dtype = _resolve_dtype(dtype)
    np_dtype, _ = _np_layout(dtype)
    try:
        arr = types.to_storage(data, getattr(dtype, "_scalar", dtype)) if np_dtype.fields is None else np.asarray(data, dtype=np_dtype)
    except (TypeError, ValueError, OverflowError) as e:
        raise TypeError(f"Cannot convert the data to a {_dtype_name(dtype)} array: {e}") from None
    return arr, dtype


def _fit_shape(arr, dtype, trailing, shape):
    """Reshape ``arr`` to ``shape`` + the element shape, or make its inner dims match the element shape."""
    if shape is not None:
        target = _normalize_shape(shape) + trailing
        if arr.size != _prod(target):
            raise ValueError(
                f"Data with {arr.size} values cannot fill an array of shape {target[: len(target) - len(trailing)]} "
                f"and dtype {_dtype_name(dtype)} ({_prod(target)} values)"
            )
        return arr.reshape(target)
    if not trailing or arr.shape[arr.ndim - len(trailing) :] == trailing:
        return arr
    while arr.ndim > 1 and arr.shape[-1] == 1:  # (n, 3, 1) column vectors: inner 1s dropped, as in Warp
        arr = arr.reshape(arr.shape[:-1])
    if arr.shape[arr.ndim - len(trailing) :] == trailing:
        return arr
    length = _prod(trailing)
    if arr.ndim >= 1 and arr.shape[-1] % length == 0:
        # flat inner dimension holding whole elements, e.g. (n, 6) floats as (n, 2) vec3s
        outer = arr.shape[:-1] + ((arr.shape[-1] // length,) if arr.shape[-1] != length else ())
        return arr.reshape(outer + trailing)
    raise ValueError(
        f"Data of shape {arr.shape} does not fit dtype {_dtype_name(dtype)}: its inner dimensions "
        f"must be {trailing} or a multiple of {length}"
    )


def _inner_contiguous(arr, trailing) -> bool:
    if not trailing:
        return True
    inner = arr.strides[arr.ndim - len(trailing) :]
    return inner == _contiguous_strides(trailing, arr.itemsize)


# ---------------------------------------------------------------------------------------------
# annotation helpers (also constructors: wp.array2d(data, dtype=float) works)
# ---------------------------------------------------------------------------------------------


class ArrayViewError(TypeError, ValueError):
    """``array.view`` to a dtype whose size does not fit (a TypeError, as in Warp; also the
    ValueError weft raised before)."""


def _check_retain(a):
    if a._retain_grad and not a._requires_grad and not a._is_annotation:
        a._retain_grad = False
        raise ValueError(
            "retain_grad=True needs an array with a gradient: pass requires_grad=True (or set "
            "a.requires_grad = True first)"
        )


_ArrayAnnotation.concrete = array  # what wp.array[...] annotations stand for


class _FixedNdimArray(array):
    """``wp.array`` with a fixed number of dimensions: a constructor (``wp.array2d(data,
    dtype=float)``), an annotation (``wp.array2d(dtype=float)``) and, as in Warp, an annotation by
    subscript (``wp.array2d[float]``)."""

    ndim_fixed = 0

    def __init__(self, *args, **kwargs):
        ndim = kwargs.pop("ndim", None)
        if ndim is not None and ndim != self.ndim_fixed:
            raise TypeError(f"wp.array{self.ndim_fixed}d has {self.ndim_fixed} dimensions, not ndim={ndim}")
        super().__init__(*args, ndim=self.ndim_fixed, **kwargs)


class array1d(_FixedNdimArray):
    """``wp.array(..., ndim=1)``: a 1-d array or annotation (also ``wp.array1d[dtype]``)."""

    ndim_fixed = 1


class array2d(_FixedNdimArray):
    """``wp.array(..., ndim=2)``: a 2-d array or annotation (also ``wp.array2d[dtype]``)."""

    ndim_fixed = 2


class array3d(_FixedNdimArray):
    """``wp.array(..., ndim=3)``: a 3-d array or annotation (also ``wp.array3d[dtype]``)."""

    ndim_fixed = 3


class array4d(_FixedNdimArray):
    """``wp.array(..., ndim=4)``: a 4-d array or annotation (also ``wp.array4d[dtype]``)."""

    ndim_fixed = 4


from .array_annotation import is_array  # noqa: E402,F401 (wp.is_array: any array kind or annotation)


# Constructors live in array_constructors.py; re-exported here (weft.array.zeros etc.).
from .array_constructors import *  # noqa: E402,F401,F403
from .array_constructors import _copy, _new, _record_write, _whole, clone  # noqa: E402,F401
