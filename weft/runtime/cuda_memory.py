"""Memory on CUDA devices: allocation, memsets, host<->device and device<->device copies.

Contract: ``CudaAllocator`` is the ``allocator`` of every ``CudaDevice``, with the same methods as
the CPU's ``memory.HostAllocator`` (``alloc``, ``download``, ``upload``, ``fill``), so the array code
never branches on the device kind. An allocation is owned by a ``DeviceBuffer`` that frees it when
the last array (or view) using it is garbage collected. During a graph capture, a stream-ordered
allocation made on the captured stream is a graph allocation: freeing it during that capture adds a
free node to the graph; every other free is postponed until no capture may still record it (weft's
captures have ended, external ones too, and the current stream is not being captured), since a
free queued on a capturing stream would land in the graph instead of running. Work is queued on the
device's current stream: uploads and device-side copies are asynchronous, downloads (``a.numpy()``) wait.

Contiguous arrays and flat ranges move with a single driver copy; strided arrays whose elements
form rows of one width at one pitch (row slices, strided 1-d views...) with one ``cuMemcpy2D``.
Other layouts (transposes...) are copied through the host: the byte span the array covers is
moved in one transfer and NumPy gathers or scatters the elements (a read-modify-write for uploads).

Pinned host memory (``pinned=True`` on CPU arrays) is allocated with ``cuMemHostAlloc`` in the
first GPU's context (portable, so every context sees it as pinned).
"""

from __future__ import annotations

import ctypes

import numpy as np

from ..array_layout import _byte_span, _dtype_size, _np_layout
from . import cuda_driver as cu
from .cuda import ContextGuard


class DeviceBuffer:
    """Owns one device allocation; frees it when garbage collected."""

    __slots__ = ("__weakref__", "device", "nbytes", "pooled", "ptr")

    def __init__(self, device, ptr: int, nbytes: int, pooled: bool):
        self.device = device
        self.ptr = ptr
        self.nbytes = nbytes
        self.pooled = pooled

    def __del__(self):
        if cu.exiting():
            return
        try:
            self.device.allocator.free(self)
        except Exception:  # interpreter shutdown: the driver may already be gone
            pass


class PinnedBuffer:
    """Owns page-locked host memory from ``cuMemHostAlloc``."""

    __slots__ = ("device", "nbytes", "ptr")

    def __init__(self, ptr: int, nbytes: int, device):
        self.ptr = ptr
        self.nbytes = nbytes
        self.device = device

    def __del__(self):
        if cu.exiting():
            return
        try:
            with ContextGuard(self.device):
                cu.api().cuMemFreeHost(self.ptr)
        except Exception:  # interpreter shutdown
            pass


def alloc_pinned(nbytes: int, zero: bool):
    """Page-locked host memory: ``(ptr, owner)``, the owner being a NumPy byte view that keeps the
    ``PinnedBuffer`` alive (so host code sees an ordinary NumPy buffer)."""
    from .device import get_cuda_devices

    if nbytes == 0:
        return None, None
    device = get_cuda_devices()[0]
    drv = cu.api()
    with ContextGuard(device):
        ptr = int(cu.check(drv.cuMemHostAlloc(nbytes, drv.CU_MEMHOSTALLOC_PORTABLE), f"cuMemHostAlloc({nbytes})"))
    owner = PinnedBuffer(ptr, nbytes, device)
    view = np.ctypeslib.as_array((ctypes.c_uint8 * nbytes).from_address(ptr))
    holder = _Holder(view, owner)
    if zero:
        view[...] = 0
    return ptr, holder


class _Holder:
    """A NumPy view of foreign memory together with the object that owns that memory."""

    __slots__ = ("owner", "view")

    def __init__(self, view, owner):
        self.view = view
        self.owner = owner


def _is_capturing(device, stream_handle: int) -> bool:
    drv = cu.api()
    with ContextGuard(device):
        status = cu.check(drv.cuStreamIsCapturing(stream_handle), "cuStreamIsCapturing")
    return status != drv.CUstreamCaptureStatus.CU_STREAM_CAPTURE_STATUS_NONE


def is_pinned(a) -> bool:
    return a.device.is_cpu and a.pinned


class CudaAllocator:
    """Allocation and data movement for one ``CudaDevice``."""

    def __init__(self, device):
        self.device = device

    # -- allocation ------------------------------------------------------------------------------

    def alloc(self, nbytes: int, zero: bool, pinned: bool = False):
        """``(ptr, owner)`` for ``nbytes`` of device memory (``pinned`` is meaningless here)."""
        if nbytes == 0:
            return None, None
        return self.alloc_raw(nbytes, zero)

    def alloc_raw(self, nbytes: int, zero: bool, pooled: bool | None = None):
        """``(ptr, DeviceBuffer)``: stream-ordered from the memory pool when ``pooled`` (default:
        when the pool is enabled), else ``cuMemAlloc``; zeroed on the current stream if ``zero``."""
        device = self.device
        drv = cu.api()
        pooled = device.is_mempool_enabled if pooled is None else pooled
        with ContextGuard(device):
            stream = device.stream.cuda_stream
            if pooled:
                ptr = cu.check(drv.cuMemAllocAsync(nbytes, stream), f"cuMemAllocAsync({nbytes} bytes) on {device}")
            else:
                ptr = cu.check(drv.cuMemAlloc(nbytes), f"cuMemAlloc({nbytes} bytes) on {device}")
            ptr = int(ptr)
            if pooled and (device._captures or device._external_captures):
                capture = self._capture_of(stream)
                if capture is not None:  # an allocation node of the graph being captured
                    capture.allocations.add(ptr)
            if zero:
                cu.check(drv.cuMemsetD8Async(ptr, 0, nbytes, stream), "cuMemsetD8Async")
        return ptr, DeviceBuffer(device, ptr, nbytes, pooled)

    def free(self, buf: DeviceBuffer):
        device = self.device
        if buf.pooled and (device._captures or device._external_captures):
            self._drop_ended_external()
            for capture in (*device._captures.values(), *device._external_captures.values()):
                if buf.ptr in capture.allocations:  # freed in the graph that allocates it: a free node
                    capture.allocations.discard(buf.ptr)
                    with ContextGuard(device):
                        cu.check(
                            cu.api().cuMemFreeAsync(buf.ptr, capture.stream.cuda_stream), "cuMemFreeAsync (capture)"
                        )
                    return
        if self.recording():
            device._deferred_frees.append((buf.ptr, buf.pooled))
            return
        self._free_deferred()
        self.free_ptr(buf.ptr, buf.pooled)

    def recording(self) -> bool:
        """Whether a free queued now could be recorded into a graph instead of running: a weft capture
        is active on the device, an external capture weft was told about is still recording, or the
        current stream (where frees are queued) is being captured by other code."""
        device = self.device
        if device._captures:
            return True
        if device._external_captures:
            self._drop_ended_external()
            if device._external_captures:
                return True
        return _is_capturing(device, device.stream.cuda_stream)

    def release_deferred(self):
        """Free the postponed allocations, unless a capture may still record the frees."""
        if self.device._deferred_frees and not self.recording():
            self._free_deferred()

    def _free_deferred(self):
        frees, self.device._deferred_frees = self.device._deferred_frees, []
        for ptr, pooled in frees:
            self.free_ptr(ptr, pooled)

    def _capture_of(self, stream_handle: int):
        """The registered capture recording the stream ``stream_handle`` (None if there is none)."""
        device = self.device
        capture = device._captures.get(stream_handle)
        return capture if capture is not None else device._external_captures.get(stream_handle)

    def _drop_ended_external(self):
        """Forget the unregistered external captures whose stream is no longer being captured."""
        ended = self.device._external_captures
        for handle in [h for h in ended if not _is_capturing(self.device, h)]:
            del ended[handle]

    def free_ptr(self, ptr: int, pooled: bool):
        drv = cu.api()
        with ContextGuard(self.device):
            if pooled:
                drv.cuMemFreeAsync(ptr, self.device.stream.cuda_stream)
            else:
                drv.cuMemFree(ptr)

    # -- raw bytes (kernel error records) --------------------------------------------------------

    def read_raw(self, host_addr: int, dev_ptr: int, nbytes: int):
        """Copy ``nbytes`` from the device to host memory and wait for it."""
        with ContextGuard(self.device):
            cu.check(cu.api().cuMemcpyDtoH(host_addr, dev_ptr, nbytes), "cuMemcpyDtoH")

    def clear_raw(self, dev_ptr: int, nbytes: int, stream):
        """Zero ``nbytes`` at ``dev_ptr`` on ``stream`` and wait for it: the bytes are kernel-error
        records that later launches on any stream may use, so the memset must have completed (a
        synchronous ``cuMemsetD8`` runs on the legacy stream, which non-blocking streams do not wait for,
        and may return before it completes)."""
        drv = cu.api()
        with ContextGuard(self.device):
            cu.check(drv.cuMemsetD8Async(dev_ptr, 0, nbytes, stream.cuda_stream), "cuMemsetD8Async")
            cu.check(drv.cuStreamSynchronize(stream.cuda_stream), f"synchronizing {stream}")

    # -- arrays ----------------------------------------------------------------------------------

    def download(self, a, raw: bool = False) -> np.ndarray:
        """A host copy of ``a``'s elements (shape ``a.shape`` + element dims; opaque bytes if ``raw``)."""
        if a.ptr is None or a.size == 0:
            return np.zeros(a.shape + _trailing(a, raw), dtype=_host_dtype(a, raw))
        rows = None if a.is_contiguous else _rows(a.shape, a.strides, _dtype_size(a.dtype))
        if rows is not None:  # rows of contiguous bytes at one pitch: a single 2-D copy
            out = np.empty(a.shape + _trailing(a, raw), dtype=_host_dtype(a, raw))
            width, height, pitch = rows
            stream = self.device.stream
            _memcpy_2d((out.ctypes.data, False, width), (a.ptr, True, pitch), width, height, stream)
            with ContextGuard(self.device):
                cu.check(cu.api().cuStreamSynchronize(stream.cuda_stream), f"synchronizing {stream}")
            self.device.check_stream_errors(stream)
            return out
        lo, hi = _span(a)
        buf = np.empty(hi - lo, dtype=np.uint8)
        stream = self.device.stream
        with ContextGuard(self.device):
            drv = cu.api()
            cu.check(
                drv.cuMemcpyDtoHAsync(buf.ctypes.data, a.ptr + lo, hi - lo, stream.cuda_stream), "cuMemcpyDtoHAsync"
            )
            cu.check(drv.cuStreamSynchronize(stream.cuda_stream), f"synchronizing {stream}")
        self.device.check_stream_errors(stream)
        if a.is_contiguous:
            return buf.view(_host_dtype(a, raw)).reshape(a.shape + _trailing(a, raw))
        return np.ascontiguousarray(_strided_view(buf, a, -lo, raw))

    def upload(self, a, values: np.ndarray, raw: bool = False):
        """Store ``values`` (shaped like ``download(a, raw)``) into ``a`` (asynchronously)."""
        if a.ptr is None or a.size == 0:
            return
        dtype = _host_dtype(a, raw)
        values = np.broadcast_to(np.asarray(values, dtype=dtype), a.shape + _trailing(a, raw))
        lo, hi = _span(a)
        rows = None if a.is_contiguous else _rows(a.shape, a.strides, _dtype_size(a.dtype))
        if a.is_contiguous:
            host = np.ascontiguousarray(values)
        elif rows is not None:  # rows of contiguous bytes at one pitch: a single 2-D copy
            host = np.ascontiguousarray(values)
            width, height, pitch = rows
            self._keep_for_capture(host)
            _memcpy_2d((a.ptr, True, pitch), (host.ctypes.data, False, width), width, height, self.device.stream)
            return
        else:  # read the span, scatter the elements into it, write it back
            host = np.empty(hi - lo, dtype=np.uint8)
            self._read_into(host, a.ptr + lo)
            _strided_view(host, a, -lo, raw)[...] = values
        self.write_bytes(a.ptr + lo, host)

    def fill(self, a, value: np.ndarray):
        """Set every element of ``a`` to the element ``value`` (NumPy, element dims trailing).

        A contiguous array is filled by memsets, with no host memory involved (so a fill captured
        in a graph stays valid): one memset when the element's bytes repeat every 1, 2 or 4 bytes,
        else one strided 2-D memset per 4-, 2- or 1-byte word of the element."""
        if a.ptr is None or a.size == 0:
            return
        itemsize = _dtype_size(a.dtype)
        pattern = np.ascontiguousarray(value).tobytes()
        if not a.is_contiguous or len(pattern) != itemsize:
            self.upload(a, np.broadcast_to(value, a.shape + _trailing(a, False)))
            return
        nbytes = a.size * itemsize
        drv = cu.api()
        with ContextGuard(self.device):
            stream = self.device.stream.cuda_stream
            if pattern == pattern[:1] * itemsize:
                cu.check(drv.cuMemsetD8Async(a.ptr, pattern[0], nbytes, stream), "cuMemsetD8Async")
            elif itemsize % 4 == 0 and pattern == pattern[:4] * (itemsize // 4):
                word = int.from_bytes(pattern[:4], "little")
                cu.check(drv.cuMemsetD32Async(a.ptr, word, nbytes // 4, stream), "cuMemsetD32Async")
            elif itemsize == 2:
                half = int.from_bytes(pattern, "little")
                cu.check(drv.cuMemsetD16Async(a.ptr, half, nbytes // 2, stream), "cuMemsetD16Async")
            else:
                self._fill_words(a.ptr, pattern, a.size, stream)

    def _fill_words(self, ptr: int, pattern: bytes, count: int, stream):
        """``count`` elements of ``pattern`` at ``ptr``: the k-th word of every element is set by
        one 2-D memset (rows one element apart, one word wide)."""
        itemsize = len(pattern)
        unit = 4 if itemsize % 4 == 0 else 2 if itemsize % 2 == 0 else 1
        drv = cu.api()
        memset = {4: drv.cuMemsetD2D32Async, 2: drv.cuMemsetD2D16Async, 1: drv.cuMemsetD2D8Async}[unit]
        for k in range(0, itemsize, unit):
            word = int.from_bytes(pattern[k : k + unit], "little")
            cu.check(memset(ptr + k, itemsize, word, 1, count, stream), f"cuMemsetD2D{8 * unit}Async")

    def write_bytes(self, dev_ptr: int, host: np.ndarray):
        """Queue a copy of the contiguous host array ``host`` to ``dev_ptr`` on the current stream.

        The copy reads pageable host memory before returning (the driver stages it), so ``host``
        may be released afterwards; except during a graph capture, where the graph's copy node reads
        ``host`` at every replay: the capture then keeps ``host`` for the graph's lifetime."""
        stream = self.device.stream.cuda_stream
        self._keep_for_capture(host)
        with ContextGuard(self.device):
            cu.check(cu.api().cuMemcpyHtoDAsync(dev_ptr, host.ctypes.data, host.nbytes, stream), "cuMemcpyHtoDAsync")

    def _keep_for_capture(self, host: np.ndarray):
        """If the current stream is being captured, keep ``host`` (the source of a copy queued now)
        for the lifetime of the graph, whose copy node reads it at every replay."""
        if self.device._captures or self.device._external_captures:
            capture = self._capture_of(self.device.stream.cuda_stream)
            if capture is not None:
                capture.host_buffers.append(host)

    def _read_into(self, host: np.ndarray, dev_ptr: int):
        stream = self.device.stream.cuda_stream
        with ContextGuard(self.device):
            drv = cu.api()
            cu.check(drv.cuMemcpyDtoHAsync(host.ctypes.data, dev_ptr, host.nbytes, stream), "cuMemcpyDtoHAsync")
            cu.check(drv.cuStreamSynchronize(stream), "cuStreamSynchronize")


_MAX_PITCH = 2**31  # cuMemcpy2D rejects larger pitches (CU_DEVICE_ATTRIBUTE_MAX_PITCH)


def _rows(shape, strides, itemsize):
    """``(width_bytes, height, pitch)`` when the layout is ``height`` rows of ``width_bytes``
    contiguous bytes, ``pitch`` bytes apart (what ``cuMemcpy2D`` copies); None otherwise."""
    if any(st <= 0 for n, st in zip(shape, strides) if n > 1):
        return None
    width = itemsize
    d = len(shape) - 1
    while d >= 0 and (shape[d] == 1 or strides[d] == width):
        width *= shape[d]
        d -= 1
    if d < 0:
        return width, 1, width
    height, pitch = shape[d], strides[d]
    step = pitch * height
    for e in range(d - 1, -1, -1):
        if shape[e] == 1:
            continue
        if strides[e] != step:
            return None
        height *= shape[e]
        step *= shape[e]
    return (width, height, pitch) if width <= pitch < _MAX_PITCH else None


def _memcpy_2d(dst, src, width: int, height: int, stream):
    """Queue a ``cuMemcpy2DAsync``; ``dst``/``src`` are ``(address, on_device, pitch)``."""
    drv = cu.api()
    m = drv.CUDA_MEMCPY2D()
    host, device = drv.CUmemorytype.CU_MEMORYTYPE_HOST, drv.CUmemorytype.CU_MEMORYTYPE_DEVICE
    (d_addr, d_dev, d_pitch), (s_addr, s_dev, s_pitch) = dst, src
    m.dstMemoryType = device if d_dev else host
    if d_dev:
        m.dstDevice = d_addr
    else:
        m.dstHost = d_addr
    m.dstPitch = d_pitch
    m.srcMemoryType = device if s_dev else host
    if s_dev:
        m.srcDevice = s_addr
    else:
        m.srcHost = s_addr
    m.srcPitch = s_pitch
    m.WidthInBytes = width
    m.Height = height
    with ContextGuard(stream.device):
        cu.check(drv.cuMemcpy2DAsync(m, stream.cuda_stream), "cuMemcpy2DAsync")


def _trailing(a, raw: bool) -> tuple:
    return () if raw else _np_layout(a.dtype)[1]


def _host_dtype(a, raw: bool) -> np.dtype:
    return np.dtype(f"V{_dtype_size(a.dtype)}") if raw else _np_layout(a.dtype)[0]


def _span(a):
    """``(lo, hi)``: the byte range ``a`` covers, relative to ``a.ptr``."""
    return _byte_span(a.shape, a.strides, _dtype_size(a.dtype))


def _strided_view(buf: np.ndarray, a, offset: int, raw: bool) -> np.ndarray:
    """A NumPy view of ``a``'s elements inside the byte buffer ``buf``, element 0 at byte ``offset``."""
    dtype = _host_dtype(a, raw)
    trailing = _trailing(a, raw)
    inner = []
    step = dtype.itemsize
    for n in reversed(trailing):
        inner.insert(0, step)
        step *= n
    return np.ndarray(a.shape + trailing, dtype=dtype, buffer=buf, offset=offset, strides=a.strides + tuple(inner))


# ---------------------------------------------------------------------------------------------
# copies between arrays
# ---------------------------------------------------------------------------------------------


def _copy_stream(dest, src, stream):
    """The stream a copy runs on: the given one, else the current stream of the CUDA side (dest first)."""
    if stream is not None:
        return stream
    return dest.device.stream if dest.device.is_cuda else src.device.stream


def copy_bytes(dest, src, dest_byte: int, src_byte: int, nbytes: int, stream=None):
    """Copy ``nbytes`` contiguous bytes between two arrays' memory (at least one on a GPU).

    Device-to-host copies into pageable memory wait for completion; into pinned memory they are
    asynchronous (as in Warp: synchronise before reading the host array).
    """
    if nbytes == 0:
        return
    s = _copy_stream(dest, src, stream)
    drv = cu.api()
    d, sp = dest.ptr + dest_byte, src.ptr + src_byte
    with ContextGuard(s.device):
        h = s.cuda_stream
        if dest.device.is_cuda and src.device.is_cuda:
            if dest.device is src.device:
                cu.check(drv.cuMemcpyDtoDAsync(d, sp, nbytes, h), "cuMemcpyDtoDAsync")
            else:
                other = src.device if s.device is dest.device else dest.device
                s.wait_stream(other.stream)
                cu.check(
                    drv.cuMemcpyPeerAsync(d, dest.device.context, sp, src.device.context, nbytes, h),
                    "cuMemcpyPeerAsync",
                )
        elif dest.device.is_cuda:
            cu.check(drv.cuMemcpyHtoDAsync(d, sp, nbytes, h), "cuMemcpyHtoDAsync")
        else:
            cu.check(drv.cuMemcpyDtoHAsync(d, sp, nbytes, h), "cuMemcpyDtoHAsync")
            if not is_pinned(dest):
                cu.check(drv.cuStreamSynchronize(h), "cuStreamSynchronize")


def _region_rows(a, offset: int, count: int, flat: bool):
    """``(address, width, height, pitch)`` of the copied elements of ``a`` as rows, or None."""
    itemsize = _dtype_size(a.dtype)
    if not flat:
        rows = _rows(a.shape, a.strides, itemsize)
        return None if rows is None else (a.ptr,) + rows
    if a.is_contiguous:
        return a.ptr + offset * itemsize, count * itemsize, 1, count * itemsize
    stride = a.strides[0]  # a 1-d strided array (flat copies are between contiguous or 1-d arrays)
    if stride < itemsize:
        return None
    return a.ptr + offset * stride, itemsize, count, stride


def _copy_rows(dest, src, dest_offset, src_offset, count, flat, stream) -> bool:
    """Copy with one ``cuMemcpy2DAsync`` when both sides are rows of one width; False if not."""
    d = _region_rows(dest, dest_offset, count, flat)
    s = _region_rows(src, src_offset, count, flat)
    if d is None or s is None:
        return False
    total = count * _dtype_size(src.dtype)
    if d[2] == 1:  # contiguous destination: shaped like the source's rows
        d = (d[0], s[1], s[2], s[1])
    if s[2] == 1:
        s = (s[0], d[1], d[2], d[1])
    if (
        d[1:3] != s[1:3]
        or d[1] * d[2] != total
        or dest.device.is_cuda
        and src.device.is_cuda
        and dest.device is not src.device
    ):
        return False
    st = _copy_stream(dest, src, stream)
    _memcpy_2d((d[0], dest.device.is_cuda, d[3]), (s[0], src.device.is_cuda, s[3]), s[1], s[2], st)
    if dest.device.is_cpu and not is_pinned(dest):
        with ContextGuard(st.device):
            cu.check(cu.api().cuStreamSynchronize(st.cuda_stream), "cuStreamSynchronize")
    return True


def copy_arrays(dest, src, dest_offset: int, src_offset: int, count: int, flat: bool, stream=None):
    """``wp.copy`` when at least one side is on a GPU (arguments already validated by the caller).

    ``flat``: copy ``count`` elements between flat element ranges; otherwise whole arrays of equal shape.
    """
    itemsize = _dtype_size(src.dtype)
    if not flat:
        dest_offset, src_offset, count = 0, 0, src.size
    if count == 0 or dest.ptr is None or src.ptr is None:
        return
    if dest.is_contiguous and src.is_contiguous:
        copy_bytes(dest, src, dest_offset * itemsize, src_offset * itemsize, count * itemsize, stream)
        return
    if _copy_rows(dest, src, dest_offset, src_offset, count, flat, stream):
        return
    # other layouts: gather the source elements on the host, scatter them into the destination
    values = src.device.allocator.download(src, raw=True)
    if flat:
        values = values.reshape(-1)[src_offset : src_offset + count]
        target = dest.device.allocator.download(dest, raw=True)
        flat_target = target.reshape(-1)  # flat copies are between contiguous or 1-d arrays
        flat_target[dest_offset : dest_offset + count] = values
        dest.device.allocator.upload(dest, flat_target.reshape(dest.shape), raw=True)
    else:
        dest.device.allocator.upload(dest, values, raw=True)
