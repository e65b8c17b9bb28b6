"""DLPack interop: any DLPack producer (NumPy, torch, JAX, CuPy...) <-> weft arrays, zero-copy.

Contract: ``from_dlpack`` takes an object with ``__dlpack__`` (or a bare DLPack capsule) on the
CPU, or a producer on a GPU (kDLCUDA, ``cuda_interface.import_dlpack``), and returns a weft array
viewing the same memory, with an optional vector/matrix dtype taking
the trailing dimensions (``_memory.element_layout``). NumPy's DLPack importer does the capsule
bookkeeping (versioned or legacy capsules, the producer's deleter): weft wraps the NumPy view by
address, so even a producer that marks its memory read-only (JAX) is shared, never copied.
``to_dlpack`` returns the capsule of ``array.__dlpack__``.
"""

from __future__ import annotations

import numpy as np

from .. import types
from ..array import array
from . import _memory


class _Capsule:
    """Presents a bare DLPack capsule as a DLPack producer (for ``np.from_dlpack``)."""

    def __init__(self, capsule):
        self.capsule = capsule

    def __dlpack__(self, stream=None, **kwargs):
        capsule, self.capsule = self.capsule, None  # a capsule is consumed once
        if capsule is None:
            raise BufferError("this DLPack capsule was already consumed")
        return capsule

    def __dlpack_device__(self):
        return (1, 0)  # NumPy reads the real device from the capsule and rejects non-CPU memory


def wrap_numpy(host: np.ndarray, dtype=None, owner=None, what: str = "NumPy array") -> array:
    """A weft array over the memory of the NumPy array ``host`` (even a read-only one), no copy.

    Raises:
        TypeError: NumPy dtypes weft has no type for.
        RuntimeError: ``dtype`` does not fit the data (see ``_memory.element_layout``).
    """
    scalar = types.scalar_from_numpy(host.dtype) if host.dtype.kind != "V" else None
    if scalar is None:
        raise TypeError(f"Cannot wrap a {what} of dtype {host.dtype} as a weft array: weft has no such type")
    dtype, shape, strides = _memory.element_layout(host.shape, host.strides, scalar, dtype, what)
    return _memory.wrap_memory(host.ctypes.data, dtype, shape, strides, host if owner is None else owner, "cpu")


def from_dlpack(source, dtype=None) -> array:
    """Convert a DLPack producer or capsule to a weft array without copying.

    Args:
        source: An object with ``__dlpack__`` / ``__dlpack_device__`` (NumPy array, torch tensor,
            JAX array...) with its memory on the CPU or a GPU, or a DLPack capsule on the CPU.
        dtype: The array's dtype; default: the scalar type of the data. A vector/matrix dtype
            takes the trailing dimensions, which must match its shape and be contiguous.

    Returns:
        A ``wp.array`` sharing the memory (it keeps the producer's buffer alive).

    Raises:
        RuntimeError / BufferError: The memory is not on the CPU, or ``dtype`` does not fit.
        TypeError: The data type has no weft equivalent (bfloat16, complex...).
    """
    if isinstance(source, array):
        return source if dtype is None or dtype is source.dtype else source.view(dtype)
    if not hasattr(source, "__dlpack__"):
        if type(source).__name__ != "PyCapsule":
            raise TypeError(f"wp.from_dlpack expects a DLPack producer or capsule, got {type(source).__name__}")
        source = _Capsule(source)
    elif source.__dlpack_device__()[0] == 2:  # kDLCUDA: NumPy cannot open it; weft reads the capsule
        from .cuda_interface import import_dlpack

        return import_dlpack(source, dtype)
    elif source.__dlpack_device__()[0] not in (1, 3):  # only CPU (and CUDA-pinned host) memory remains
        device_type, device_id = source.__dlpack_device__()
        raise TypeError(
            f"Unsupported source device for DLPack: device_type={device_type}, device_id={device_id}; weft reads "
            "CPU and CUDA memory"
        )
    if isinstance(source, _Capsule):  # opened by hand: NumPy cannot open every type (bfloat16)
        from .cuda_interface import KDL_CPU, import_capsule

        return import_capsule(source.capsule, dtype, "cpu", KDL_CPU)
    host = np.from_dlpack(source)
    return wrap_numpy(host, dtype, what="DLPack tensor")


def to_dlpack(a: array):
    """Return a DLPack capsule viewing the weft array ``a`` (vector/matrix components trailing).

    Consumers that accept objects (``np.from_dlpack``, ``torch.from_dlpack``) can take ``a``
    itself, which implements ``__dlpack__`` and ``__dlpack_device__``.

    Args:
        a: A ``wp.array`` holding data (not an annotation).

    Returns:
        A ``PyCapsule`` named ``"dltensor"``, to be consumed once.

    Raises:
        TypeError: ``a`` is not a weft array with data.
    """
    if not isinstance(a, array) or a.is_annotation:
        raise TypeError(f"wp.to_dlpack expects a wp.array with data, got {type(a).__name__}")
    return a.__dlpack__()
