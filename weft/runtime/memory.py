"""Host memory: the CPU device's allocator and zero-copy NumPy views of CPU arrays.

Contract: every device has an ``allocator`` with the same four methods, so array code never
branches on the kind of device:

  - ``alloc(nbytes, zero, pinned) -> (ptr, owner)``: ``owner`` keeps the memory alive;
  - ``download(a, raw=False) -> np.ndarray``: the elements of ``a`` on the host (for the CPU a
    zero-copy view; ``raw`` views each element as opaque bytes);
  - ``upload(a, values, raw=False)``: store ``values`` (shaped like ``download(a, raw)``) into ``a``;
  - ``fill(a, value)``: set every element to one element value.

``HostAllocator`` is the CPU's; ``cuda_memory.CudaAllocator`` is a GPU's. Pinned host memory comes
from the CUDA driver when a GPU is available (and is ordinary memory otherwise); nothing here
imports CUDA unless ``pinned=True`` is asked for.
"""

from __future__ import annotations

import numpy as np

from .. import scalar_types as wt
from ..array_layout import _dtype_size

_CPU_ALIGNMENT = 64  # bytes; JAX (XLA) only shares CPU memory through DLPack at this alignment


def alloc_cpu(nbytes: int, zero: bool):
    """``(ptr, owner)`` for ``nbytes`` of ordinary host memory, 64-byte aligned."""
    if nbytes == 0:
        return None, None
    # A NumPy byte buffer is the storage: NumPy frees it when the last array referencing it goes.
    # It is over-allocated and sliced so that element 0 is 64-byte aligned (zero-copy to_jax).
    size = nbytes + _CPU_ALIGNMENT - 1
    raw = np.zeros(size, dtype=np.uint8) if zero else np.empty(size, dtype=np.uint8)
    start = -raw.ctypes.data % _CPU_ALIGNMENT
    buf = raw[start : start + nbytes]
    return buf.ctypes.data, buf


class _HostBuffer:
    """Exposes raw memory to NumPy while holding a reference to the array that owns it."""

    __slots__ = ("__array_interface__", "_owner")

    def __init__(self, interface, owner):
        self.__array_interface__ = interface
        self._owner = owner


def host_view(a, raw: bool = False) -> np.ndarray:
    """A zero-copy NumPy view of the CPU array ``a``; ``raw`` views elements as opaque bytes.

    Raises:
        RuntimeError: ``a`` is not in host memory (copy it with ``a.numpy()`` instead).
    """
    if not a.device.is_cpu:
        raise RuntimeError(f"Array on device '{a.device}' has no host view; use a.numpy() for a copy")
    if raw:
        interface = {
            "data": (a.ptr or 0, False),
            "shape": a.shape,
            "strides": a.strides,
            "typestr": f"|V{_dtype_size(a.dtype)}",
            "version": 3,
        }
    else:
        interface = a.__array_interface__
    view = np.asarray(_HostBuffer(interface, a))
    scalar = getattr(a.dtype, "_scalar", a.dtype)
    if not raw and scalar is wt.bfloat16 and view.dtype != scalar.np_dtype:
        view = view.view(scalar.np_dtype)  # ml_dtypes' bfloat16 over the bit patterns
    np_dtype = getattr(scalar, "np_dtype", None)
    if not raw and np_dtype is not None and np_dtype.fields is not None and view.dtype != np_dtype:
        view = view.view(np_dtype)  # a struct's record dtype (the interface's descr names its padding)
    return view


class HostAllocator:
    """The CPU device's allocator (see the module contract)."""

    def alloc(self, nbytes: int, zero: bool, pinned: bool = False):
        if pinned and nbytes:
            from .device import is_cuda_available

            if is_cuda_available():
                from .cuda_memory import alloc_pinned

                return alloc_pinned(nbytes, zero)
        ptr, owner = alloc_cpu(nbytes, zero)
        if zero and owner is not None:
            from . import cpu_capture

            if cpu_capture._active:  # as on a GPU, where the zeroing memset is a node of the graph
                from .device import get_device

                cpu_capture.defer(get_device("cpu"), lambda: owner.fill(0))
        return ptr, owner

    def download(self, a, raw: bool = False) -> np.ndarray:
        return host_view(a, raw)

    def upload(self, a, values, raw: bool = False):
        host_view(a, raw)[...] = values

    def fill(self, a, value):
        host_view(a)[...] = value
