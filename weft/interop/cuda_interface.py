"""GPU memory across libraries: ``__cuda_array_interface__`` and DLPack capsules of kind kDLCUDA.

Contract:
  - ``cuda_array_interface(a)`` is the version-3 interface dict of a weft array on a GPU
    (vector/matrix components as trailing dimensions, ``stream`` = the device's current stream,
    1 when that is the legacy default stream: the spec disallows 0).
  - ``wrap_cuda_interface(obj, dtype)`` wraps an object exporting ``__cuda_array_interface__``
    as a weft array on the GPU holding the memory, without copying; the current weft stream of that
    device first waits for the exporter's stream (when it names one).
  - ``export_dlpack(a, stream)`` builds a legacy ``"dltensor"`` capsule (kDLCUDA) for a weft
    array on a GPU; the consumer's ``stream`` waits for weft's current stream. The capsule keeps
    the array alive until the consumer calls the deleter (or the unconsumed capsule is collected).
    CPU arrays of the types NumPy's exporter refuses (bool, bfloat16) use it too (kDLCPU).
  - ``import_dlpack(source, dtype)`` takes a kDLCUDA producer: the capsule is opened by hand
    (NumPy only opens CPU capsules), renamed ``"used_dltensor"`` as the protocol requires, and
    its deleter runs when the weft array that wraps it is garbage collected; ``import_capsule``
    does the same for CPU capsules of types NumPy cannot open (bfloat16).
"""

from __future__ import annotations

import ctypes

import numpy as np

from .. import types
from ..array import array
from ..array_layout import _contiguous_strides, _np_layout
from . import _memory

KDL_CPU, KDL_CUDA, KDL_CUDA_HOST = 1, 2, 3


def cuda_array_interface(a, typestr=None) -> dict:
    """The ``__cuda_array_interface__`` (version 3) of the GPU array ``a``."""
    np_dtype, trailing = _np_layout(a.dtype)
    strides = a.strides + _contiguous_strides(trailing, np_dtype.itemsize)
    return {
        "shape": a.shape + trailing,
        "typestr": typestr or np_dtype.str,
        "data": (a.ptr or 0, False),
        "strides": None if a.is_contiguous else strides,
        "version": 3,
        "stream": _protocol_stream(a.device.stream.cuda_stream),
    }


def _protocol_stream(handle: int) -> int:
    """A stream handle as the interchange protocols spell it: the legacy default stream (the driver's
    0, the NULL stream) is 1, since 0 is ambiguous there."""
    return handle or 1


def _device_of_pointer(ptr: int):
    from ..runtime import cuda_driver as cu
    from ..runtime.cuda import ContextGuard
    from ..runtime.device import get_device

    drv = cu.api()
    attr = drv.CUpointer_attribute.CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL
    with ContextGuard(_current_cuda()):  # the query needs a current context (any one: addresses are unified)
        ordinal = cu.check(drv.cuPointerGetAttribute(attr, ptr), "cuPointerGetAttribute")
    return get_device(f"cuda:{int(ordinal)}")


def _wait_foreign_stream(device, handle: int):
    """Make ``device``'s current stream wait for the work queued on a foreign stream handle."""
    from ..runtime import cuda_driver as cu
    from ..runtime.cuda import ContextGuard

    stream = device.stream
    if handle in (None, 0) or handle == _protocol_stream(stream.cuda_stream):
        return
    drv = cu.api()
    event = stream.cached_event
    with ContextGuard(device):
        cu.check(drv.cuEventRecord(event.cuda_event, handle), "cuEventRecord")
    stream.wait_event(event)


def wrap_cuda_interface(obj, dtype=None) -> array:
    """A weft array over the GPU memory an object exports with ``__cuda_array_interface__``."""
    desc = obj.__cuda_array_interface__
    np_dtype = np.dtype(desc["typestr"])
    scalar = types.scalar_from_numpy(np_dtype) if np_dtype.kind != "V" else None
    if scalar is None:
        raise TypeError(f"Cannot wrap CUDA memory of type {desc['typestr']} as a weft array: weft has no such type")
    shape = tuple(desc["shape"])
    strides = desc.get("strides")
    strides = tuple(strides) if strides is not None else _contiguous_strides(shape, np_dtype.itemsize)
    ptr = int(desc["data"][0])
    device = _device_of_pointer(ptr) if ptr else _current_cuda()
    _wait_foreign_stream(device, desc.get("stream"))
    dtype, shape, strides = _memory.element_layout(shape, strides, scalar, dtype, "CUDA array")
    return _memory.wrap_memory(ptr or None, dtype, shape, strides, obj, device)


def _current_cuda():
    from ..runtime.device import get_device

    return get_device("cuda")


# ---------------------------------------------------------------------------------------------
# DLPack
# ---------------------------------------------------------------------------------------------


class DLDevice(ctypes.Structure):
    _fields_ = [("device_type", ctypes.c_int32), ("device_id", ctypes.c_int32)]


class DLDataType(ctypes.Structure):
    _fields_ = [("code", ctypes.c_uint8), ("bits", ctypes.c_uint8), ("lanes", ctypes.c_uint16)]


class DLTensor(ctypes.Structure):
    _fields_ = [
        ("data", ctypes.c_void_p),
        ("device", DLDevice),
        ("ndim", ctypes.c_int32),
        ("dtype", DLDataType),
        ("shape", ctypes.POINTER(ctypes.c_int64)),
        ("strides", ctypes.POINTER(ctypes.c_int64)),
        ("byte_offset", ctypes.c_uint64),
    ]


class DLManagedTensor(ctypes.Structure):
    pass


_Deleter = ctypes.CFUNCTYPE(None, ctypes.POINTER(DLManagedTensor))
DLManagedTensor._fields_ = [("dl_tensor", DLTensor), ("manager_ctx", ctypes.c_void_p), ("deleter", _Deleter)]

_CAPSULE_NAME = b"dltensor"
_USED_NAME = b"used_dltensor"
_exported: dict = {}  # address of a DLManagedTensor we made -> what it keeps alive

_py = ctypes.pythonapi


def _proto(name, restype, *argtypes):
    # private prototypes: setting argtypes on ctypes.pythonapi's shared functions would change them
    # for every other user in the process
    return ctypes.PYFUNCTYPE(restype, *argtypes)((name, _py))


class _CapsuleAPI:
    PyCapsule_New = _proto("PyCapsule_New", ctypes.py_object, ctypes.c_void_p, ctypes.c_char_p, ctypes.c_void_p)
    PyCapsule_IsValid = _proto("PyCapsule_IsValid", ctypes.c_int, ctypes.py_object, ctypes.c_char_p)
    PyCapsule_GetPointer = _proto("PyCapsule_GetPointer", ctypes.c_void_p, ctypes.py_object, ctypes.c_char_p)
    PyCapsule_SetName = _proto("PyCapsule_SetName", ctypes.c_int, ctypes.py_object, ctypes.c_char_p)


_api = _CapsuleAPI

_DL_CODES = {"i": 0, "u": 1, "f": 2, "b": 6}
_DL_BFLOAT = 4


def _dl_dtype(scalar) -> DLDataType:
    """The DLPack type of a weft scalar type (kDLBool for bool, kDLBfloat for bfloat16)."""
    bits = 8 * scalar.size
    if scalar is types.bool:
        return DLDataType(_DL_CODES["b"], 8, 1)
    if scalar is types.bfloat16:
        return DLDataType(_DL_BFLOAT, 16, 1)
    return DLDataType({"int": 0, "uint": 1, "float": 2}[scalar.kind], bits, 1)


def _dl_scalar(code: int, bits: int):
    """The weft scalar type of a DLPack type code and width, or None."""
    if code == _DL_CODES["b"] and bits == 8:
        return types.bool
    if code == _DL_BFLOAT and bits == 16:
        return types.bfloat16
    kind = {0: "i", 1: "u", 2: "f"}.get(code)
    return types.scalar_from_numpy(np.dtype(f"{kind}{bits // 8}")) if kind and bits in (8, 16, 32, 64) else None


def _release(managed_ptr):
    _exported.pop(ctypes.cast(managed_ptr, ctypes.c_void_p).value, None)


_deleter = _Deleter(_release)


# The destructor receives a capsule that is being deallocated: it must not become a Python object
# again (its reference count is zero), so it is inspected through raw-pointer prototypes.
_raw_is_valid = _proto("PyCapsule_IsValid", ctypes.c_int, ctypes.c_void_p, ctypes.c_char_p)
_raw_get_pointer = _proto("PyCapsule_GetPointer", ctypes.c_void_p, ctypes.c_void_p, ctypes.c_char_p)


@ctypes.CFUNCTYPE(None, ctypes.c_void_p)
def _capsule_destructor(capsule_ptr):
    # A capsule still named "dltensor" was never consumed: its tensor must be released here.
    if _raw_is_valid(capsule_ptr, _CAPSULE_NAME):
        _exported.pop(_raw_get_pointer(capsule_ptr, _CAPSULE_NAME), None)


def export_dlpack(a, stream=None):
    """A DLPack capsule (kDLCUDA, or kDLCPU for a CPU array) viewing the array ``a``.

    Args:
        a: The array.
        stream: On a GPU, the consumer's stream handle (None or 1: the legacy default stream, 2:
            the per-thread default stream, -1: no synchronisation); it is made to wait for weft's
            current stream of the device. Unused on the CPU.
    """
    on_cpu = getattr(a.device, "is_cpu", False)
    if not on_cpu and stream != -1:
        consumer = 1 if stream is None else _protocol_stream(int(stream))
        from ..runtime import cuda_driver as cu
        from ..runtime.cuda import ContextGuard

        own = a.device.stream
        if consumer != _protocol_stream(own.cuda_stream):
            event = own.record_event(own.cached_event)
            with ContextGuard(a.device):
                cu.check(cu.api().cuStreamWaitEvent(consumer, event.cuda_event, 0), "cuStreamWaitEvent")
    np_dtype, trailing = _np_layout(a.dtype)
    shape = a.shape + trailing
    elem = np_dtype.itemsize
    strides = tuple(s // elem for s in a.strides) + tuple(s // elem for s in _contiguous_strides(trailing, elem))
    shape_arr = (ctypes.c_int64 * len(shape))(*shape)
    strides_arr = (ctypes.c_int64 * len(shape))(*strides)
    managed = DLManagedTensor()
    t = managed.dl_tensor
    t.data = a.ptr or 0
    t.device = DLDevice(KDL_CPU, 0) if on_cpu else DLDevice(KDL_CUDA, a.device.ordinal)
    t.ndim = len(shape)
    t.dtype = _dl_dtype(getattr(a.dtype, "_scalar", a.dtype))
    t.shape = shape_arr
    t.strides = strides_arr
    t.byte_offset = 0
    managed.deleter = _deleter
    addr = ctypes.addressof(managed)
    _exported[addr] = (managed, shape_arr, strides_arr, a)
    return _api.PyCapsule_New(addr, _CAPSULE_NAME, ctypes.cast(_capsule_destructor, ctypes.c_void_p))


class _ImportedTensor:
    """Owns a consumed DLManagedTensor: calls its deleter when the wrapping array goes away."""

    def __init__(self, managed_ptr: int):
        self.managed = ctypes.cast(managed_ptr, ctypes.POINTER(DLManagedTensor))

    def __del__(self):
        try:
            from ..runtime import cuda_driver
        except ImportError:  # the interpreter is shutting down
            return
        if cuda_driver.exiting():  # the producer (torch, JAX...) may be torn down already
            return
        deleter = self.managed.contents.deleter
        if deleter:
            deleter(self.managed)


def import_dlpack(source, dtype=None) -> array:
    """A weft array over the GPU memory of a kDLCUDA DLPack producer (no copy)."""
    from ..runtime.device import get_device

    _, ordinal = source.__dlpack_device__()
    device = get_device(f"cuda:{int(ordinal)}")
    capsule = source.__dlpack__(stream=_protocol_stream(device.stream.cuda_stream))
    return import_capsule(capsule, dtype, device, KDL_CUDA)


def import_capsule(capsule, dtype, device, device_type) -> array:
    """A weft array over the memory of an unconsumed ``"dltensor"`` capsule on ``device`` (of
    DLPack type ``device_type``), no copy; the capsule is marked consumed.

    Raises:
        BufferError: not an unconsumed capsule, or on another kind of device.
        TypeError: a data type weft has no type for.
    """
    if not _api.PyCapsule_IsValid(capsule, _CAPSULE_NAME):
        raise BufferError("the DLPack producer returned a capsule that is not an unconsumed 'dltensor'")
    ptr = _api.PyCapsule_GetPointer(capsule, _CAPSULE_NAME)
    t = ctypes.cast(ptr, ctypes.POINTER(DLManagedTensor)).contents.dl_tensor
    if t.device.device_type != device_type:
        raise BufferError(f"expected a DLPack tensor of device type {device_type}, got {t.device.device_type}")
    scalar = _dl_scalar(t.dtype.code, t.dtype.bits) if t.dtype.lanes == 1 else None
    if scalar is None:
        raise TypeError(f"Cannot wrap DLPack data of type code {t.dtype.code} ({t.dtype.bits} bits) as a weft array")
    shape = tuple(t.shape[k] for k in range(t.ndim))
    elem = scalar.size
    if t.strides:
        strides = tuple(t.strides[k] * elem for k in range(t.ndim))
    else:
        strides = _contiguous_strides(shape, elem)
    _api.PyCapsule_SetName(capsule, _USED_NAME)  # consumed: the producer's capsule no longer owns it
    owner = _ImportedTensor(ptr)
    dtype, shape, strides = _memory.element_layout(shape, strides, scalar, dtype, "DLPack tensor")
    data = (t.data or 0) + t.byte_offset
    return _memory.wrap_memory(data or None, dtype, shape, strides, owner, device)
