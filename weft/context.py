"""Devices, modules and the runtime's capabilities under the module name Warp uses for them
(``warp.context``), for code that imports them from there (``from warp.context import Device``).

Everything here is the same object as the top-level name (``weft.Device`` ...), except the
capability query ``_is_graph_capture_allocation_supported``, Warp's name for
``weft.runtime.graph.is_capture_allocation_supported``.
"""

from .kernel import Function, Kernel
from .runtime.device import (
    Device,
    get_cuda_device_count,
    get_cuda_devices,
    get_device,
    get_devices,
    get_preferred_device,
    is_cpu_available,
    is_cuda_available,
    is_mempool_supported,
    set_device,
    synchronize,
    synchronize_device,
)
from .runtime.graph import is_capture_allocation_supported, is_conditional_graph_supported
from .runtime.module import Module, get_module

_is_graph_capture_allocation_supported = is_capture_allocation_supported

__all__ = [
    "Device",
    "Function",
    "Kernel",
    "Module",
    "get_cuda_device_count",
    "get_cuda_devices",
    "get_device",
    "get_devices",
    "get_module",
    "get_preferred_device",
    "is_capture_allocation_supported",
    "is_conditional_graph_supported",
    "is_cpu_available",
    "is_cuda_available",
    "is_mempool_supported",
    "set_device",
    "synchronize",
    "synchronize_device",
]
