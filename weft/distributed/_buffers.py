"""How the elements of weft arrays reach MPI.

Contract: ``whole(a, write)`` yields one buffer holding all of ``a`` for a collective and writes
it back into ``a`` if it was a copy; ``field(a)`` gives an object that moves rectangular regions
(faces) of ``a`` for the halo exchange. A C-contiguous CPU array is handed to MPI as its own
memory: whole, or a face as an MPI subarray datatype over it (no copy in weft; MPI moves the
bytes). A strided CPU array moves packed copies of its faces. A GPU array is handed over as
device memory when the MPI is CUDA-aware (``_mpi.cuda_aware``, whole arrays), else through host
copies. Nothing here records on a tape: writes back happen under ``recording.paused()``.
"""

from __future__ import annotations

import contextlib

import numpy as np

from ..array_layout import _np_layout
from ..runtime import recording
from ..runtime.device import synchronize_device
from . import _mpi


@contextlib.contextmanager
def whole(a, write: bool):
    """Yield a buffer MPI reads (and with ``write`` fills) holding all of ``a``, in C order.

    Args:
        a: a weft array with data.
        write: copy the buffer back into ``a`` afterwards (when it was a copy).
    """
    if a.device.is_cpu:
        view = a.numpy()
        if view.flags.c_contiguous:
            yield view  # the array's own memory
            return
        packed = np.ascontiguousarray(view)
        yield packed
        if write:
            view[...] = packed
        return
    if _mpi.cuda_aware and a.is_contiguous:
        synchronize_device(a.device)  # MPI reads the memory outside weft's streams
        yield _CudaBuffer(a)  # device memory, no copy
        return
    packed = a.numpy()  # a host copy
    yield packed
    if write:
        with recording.paused():
            a.assign(packed)


class _CudaBuffer:
    """A GPU array offered to mpi4py through ``__cuda_array_interface__`` alone: mpi4py 4.1 tries
    DLPack first, and consuming weft's DLPack capsule of a (simulated) CUDA array failed there."""

    def __init__(self, a):
        self.__cuda_array_interface__ = a.__cuda_array_interface__


def slices(region) -> tuple:
    """A region (``((start, stop), ...)`` per axis) as a NumPy / weft index."""
    return tuple(slice(start, stop) for start, stop in region)


def region_shape(region) -> tuple:
    return tuple(stop - start for start, stop in region)


def field(a):
    """The face mover for ``a``: ``_HostField`` for C-contiguous CPU arrays, else ``_PackedField``."""
    if a.device.is_cpu:
        view = a.numpy()
        if view.flags.c_contiguous:
            return _HostField(view)
        return _PackedField(a, view)
    return _PackedField(a, None)


_subarray_types: dict = {}  # (byte shape, region) -> committed MPI subarray datatype (kept for the process)


class _HostField:
    """Faces of a C-contiguous CPU array, sent and received in place as subarray datatypes."""

    def __init__(self, view: np.ndarray):
        self.view = view
        # elements as bytes: MPI moves any dtype (vectors, structs, float16) as its raw bytes
        self.bytes = view.reshape(-1).view(np.uint8).reshape(view.shape + (view.itemsize,))

    def _datatype(self, region):
        key = (self.bytes.shape, tuple(region))
        t = _subarray_types.get(key)
        if t is None:
            MPI = _mpi.mpi()
            full = self.bytes.shape[len(region) :]  # trailing (vector) dims and the element's bytes
            t = MPI.BYTE.Create_subarray(
                list(self.bytes.shape),
                list(region_shape(region)) + list(full),
                [start for start, _ in region] + [0] * len(full),
                order=MPI.ORDER_C,
            ).Commit()
            _subarray_types[key] = t
        return t

    def send(self, region):
        """An MPI buffer reading ``region``."""
        return [self.bytes, 1, self._datatype(region)]

    def recv(self, region):
        """``(MPI buffer writing region, finish)``: call ``finish()`` once the receive completed."""
        return [self.bytes, 1, self._datatype(region)], _nothing

    def packed_like(self, region) -> np.ndarray:
        """An empty contiguous NumPy array shaped like ``region`` (with the element layout)."""
        return np.empty(region_shape(region) + self.view.shape[len(region) :], dtype=self.view.dtype)

    def add(self, region, values: np.ndarray):
        self.view[slices(region)] += values

    def zero(self, region):
        self.view[slices(region)] = 0


def _nothing():
    return None


class _PackedField:
    """Faces of a strided CPU array (``view`` its NumPy view) or of a GPU array (``view`` None):
    packed contiguous host copies travel through MPI."""

    def __init__(self, a, view):
        self.a = a
        self.view = view

    def _get(self, region) -> np.ndarray:
        if self.view is not None:
            return np.ascontiguousarray(self.view[slices(region)])
        return np.ascontiguousarray(self.a[slices(region)].numpy())  # a copy from the GPU

    def _put(self, region, values: np.ndarray):
        if self.view is not None:
            self.view[slices(region)] = values
            return
        with recording.paused():
            self.a[slices(region)].assign(values)

    def send(self, region):
        return self._get(region)

    def recv(self, region):
        packed = self.packed_like(region)
        return packed, lambda: self._put(region, packed)

    def packed_like(self, region) -> np.ndarray:
        np_dtype, trailing = _np_layout(self.a.dtype)
        return np.empty(region_shape(region) + tuple(trailing), dtype=np_dtype)

    def add(self, region, values: np.ndarray):
        self._put(region, self._get(region) + values)

    def zero(self, region):
        self._put(region, np.zeros_like(self.packed_like(region)))


def host_values(a) -> np.ndarray:
    """A contiguous host copy of ``a``'s elements."""
    return np.array(a.numpy(), copy=True, order="C")


def set_values(a, values: np.ndarray) -> None:
    """Overwrite ``a``'s elements with ``values`` (not recorded on any tape)."""
    if a.device.is_cpu:
        a.numpy()[...] = values
        return
    with recording.paused():
        a.assign(values)
