"""A simulated CUDA driver for testing weft's CUDA runtime on a machine without a GPU.

It answers the ``cuda.bindings.driver`` calls weft makes, with the same ``(CUresult, *values)``
results and the real enums, over HOST memory: "device" allocations are host buffers, copies and
memsets happen at once, streams and events are handles, a graph capture records the operations
queued on the capturing stream and a graph launch replays them. As documented for the driver, a
stream-ordered allocation during a capture is a graph allocation (its address is reserved, the
memory exists from the graph launch until a free node, ``cuMemFreeAsync`` or, with
AUTO_FREE_ON_LAUNCH, the next launch), a free during a capture must name a graph allocation, and a
graph launch fails while a previous launch's allocations are unfreed unless instantiated with
AUTO_FREE_ON_LAUNCH. Calls that need a current context fail without one. ``cuLaunchKernel`` reads the
kernel parameters the way the driver does (a ``void*`` array pointing at the launch bounds, the
argument struct and the launch-context pointer), copies them at launch time, and runs the SAME
kernel instance through its CPU entry point; a kernel error is written into the launch context in
"device" memory as a GPU kernel would, with the error id of the CUDA build's source locations.

What this proves: weft's runtime logic (device discovery, allocators, copies, streams, events,
graph capture bookkeeping, argument packing with device pointers, error slots, interop glue) is
consistent end to end. What it cannot prove: anything about real GPUs (the PTX itself, timing,
asynchrony, driver validation). Those are the GPU tests in ``test_cuda_runtime.py``.
"""

from __future__ import annotations

import ctypes
import itertools
import threading
import time

from cuda.bindings import driver as _real

from weft.runtime import launch as _launch
from weft.runtime import module as _module

OK = _real.CUresult.CUDA_SUCCESS
INVALID_VALUE = _real.CUresult.CUDA_ERROR_INVALID_VALUE
INVALID_CONTEXT = _real.CUresult.CUDA_ERROR_INVALID_CONTEXT
AUTO_FREE_ON_LAUNCH = int(_real.CUgraphInstantiate_flags.CUDA_GRAPH_INSTANTIATE_FLAG_AUTO_FREE_ON_LAUNCH)


class FakeGraph(list):
    """The operations recorded by a capture, and the addresses of its allocation nodes."""

    def __init__(self):
        super().__init__()
        self.allocs: list = []


class FakeGraphExec:
    def __init__(self, graph: FakeGraph, flags: int):
        self.ops = list(graph)
        self.allocs = list(graph.allocs)
        self.flags = int(flags)


class _Uuid:
    bytes = bytes(range(16))


class FakeFunction:
    def __init__(self, name: str):
        self.name = name


class FakeDriver:
    """The subset of ``cuda.bindings.driver`` weft uses, simulated on the host."""

    def __init__(self, device_count: int = 1):
        self.device_count = device_count
        self._buffers: dict = {}  # address -> ctypes buffer ("device" and pinned memory)
        self._graph_memory: dict = {}  # address -> ctypes buffer reserved by a graph allocation node
        self.memsets: list = []  # (address, stream) of each asynchronous memset
        self._handles = itertools.count(0x1000, 0x10)
        self._local = threading.local()
        self._capturing: dict = {}  # stream handle -> list of recorded operations
        self._event_times: dict = {}
        self.launches = 0
        self.copies_2d = 0
        self.pool_attrs: dict = {}
        self.loaded_images: list = []

    def __getattr__(self, name):  # enums and constants come from the real bindings
        return getattr(_real, name)

    # -- devices and contexts ------------------------------------------------------------------

    def cuInit(self, flags):
        return (OK,)

    def cuDeviceGetCount(self):
        return (OK, self.device_count)

    def cuDeviceGet(self, ordinal):
        return (OK, int(ordinal))

    def cuDeviceGetName(self, length, dev):
        return (OK, f"Simulated GPU {dev}".encode().ljust(length, b"\0"))

    def cuDeviceGetAttribute(self, attr, dev):
        A = _real.CUdevice_attribute
        values = {
            A.CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR: 8,
            A.CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR: 6,
            A.CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT: 4,
            A.CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK: 49152,
            A.CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN: 101376,
            A.CU_DEVICE_ATTRIBUTE_UNIFIED_ADDRESSING: 1,
            A.CU_DEVICE_ATTRIBUTE_MEMORY_POOLS_SUPPORTED: 1,
            A.CU_DEVICE_ATTRIBUTE_IPC_EVENT_SUPPORTED: 1,
        }
        return (OK, values[attr])

    def cuDeviceGetUuid(self, dev):
        return (OK, _Uuid())

    def cuDeviceGetPCIBusId(self, length, dev):
        return (OK, f"0000:0{dev + 1}:00.0".encode())

    def cuDeviceTotalMem(self, dev):
        return (OK, 8 << 30)

    def cuDevicePrimaryCtxRetain(self, dev):
        return (OK, 0xC000 + int(dev))

    def cuCtxGetCurrent(self):
        return (OK, getattr(self._local, "ctx", 0))

    def cuCtxSetCurrent(self, ctx):
        self._local.ctx = int(ctx)
        return (OK,)

    def cuCtxSynchronize(self):
        return (OK,)

    def cuCtxGetDevice(self):
        ctx = getattr(self._local, "ctx", 0)
        if not ctx:
            return (_real.CUresult.CUDA_ERROR_INVALID_CONTEXT, 0)
        return (OK, int(ctx) & 0xFF)  # primary contexts are 0xC000 + ordinal, others 0xD000 + ordinal

    def cuCtxPushCurrent(self, ctx):
        self._local.stack = getattr(self._local, "stack", []) + [getattr(self._local, "ctx", 0)]
        self._local.ctx = int(ctx)
        return (OK,)

    def cuCtxPopCurrent(self):
        popped = getattr(self._local, "ctx", 0)
        self._local.ctx = self._local.stack.pop()
        return (OK, popped)

    def cuCtxGetStreamPriorityRange(self):
        return (OK, 0, -1)

    def cuMemGetInfo(self):
        return (OK, 6 << 30, 8 << 30)

    def cuDriverGetVersion(self):
        return (OK, 12080)

    def cuDeviceGetDefaultMemPool(self, dev):
        return (OK, 0xD000 + int(dev))

    def cuMemPoolSetAttribute(self, pool, attr, value):
        self.pool_attrs[(int(pool), int(attr))] = int(value)
        return (OK,)

    def cuMemPoolGetAttribute(self, pool, attr):
        return (OK, _real.cuuint64_t(self.pool_attrs.get((int(pool), int(attr)), 0)))

    def cuPointerGetAttribute(self, attr, ptr):
        if not self._has_context():
            return (INVALID_CONTEXT, None)
        return (OK, 0)

    def _has_context(self) -> bool:
        return getattr(self._local, "ctx", 0) != 0

    # -- memory --------------------------------------------------------------------------------

    def _alloc(self, n):
        buf = (ctypes.c_uint8 * max(int(n), 1))()
        addr = ctypes.addressof(buf)
        self._buffers[addr] = buf
        return addr

    def cuMemAlloc(self, n):
        return (OK, self._alloc(n))

    def cuMemAllocAsync(self, n, stream):
        graph = self._capturing.get(int(stream))
        if graph is None:
            return (OK, self._alloc(n))
        buf = (ctypes.c_uint8 * max(int(n), 1))()  # an allocation node: the address is fixed now
        addr = ctypes.addressof(buf)
        self._graph_memory[addr] = buf
        graph.allocs.append(addr)
        graph.append(lambda: self._buffers.__setitem__(addr, buf))
        return (OK, addr)

    def cuMemHostAlloc(self, n, flags):
        return (OK, self._alloc(n))

    def cuMemFree(self, ptr):
        if self._buffers.pop(int(ptr), None) is None:
            return (INVALID_VALUE,)
        return (OK,)

    def cuMemFreeAsync(self, ptr, stream):
        graph = self._capturing.get(int(stream))
        if graph is None:
            return self.cuMemFree(ptr)
        ptr = int(ptr)
        if ptr not in self._graph_memory:  # a free node must free a graph allocation
            return (INVALID_VALUE,)
        graph.append(lambda: self._buffers.pop(ptr))
        return (OK,)

    def cuMemFreeHost(self, ptr):
        return self.cuMemFree(ptr)

    def _queue(self, stream, op):
        ops = self._capturing.get(int(stream))
        if ops is not None:
            ops.append(op)
        else:
            op()
        return (OK,)

    def _memcpy(self, dst, src, n, stream=0):
        dst, src, n = int(dst), int(src), int(n)
        return self._queue(stream, lambda: ctypes.memmove(dst, src, n))

    def cuMemcpyHtoDAsync(self, dst, src, n, stream):
        return self._memcpy(dst, src, n, stream)

    def cuMemcpyDtoHAsync(self, dst, src, n, stream):
        return self._memcpy(dst, src, n, stream)

    def cuMemcpyDtoDAsync(self, dst, src, n, stream):
        return self._memcpy(dst, src, n, stream)

    def cuMemcpyDtoH(self, dst, src, n):
        return self._memcpy(dst, src, n)

    def cuMemcpyPeerAsync(self, dst, dst_ctx, src, src_ctx, n, stream):
        return self._memcpy(dst, src, n, stream)

    def cuMemcpy2DAsync(self, m, stream):
        device = _real.CUmemorytype.CU_MEMORYTYPE_DEVICE
        dst = int(m.dstDevice) if m.dstMemoryType == device else int(m.dstHost)
        src = int(m.srcDevice) if m.srcMemoryType == device else int(m.srcHost)
        width, height, dpitch, spitch = int(m.WidthInBytes), int(m.Height), int(m.dstPitch), int(m.srcPitch)
        assert dpitch >= width and spitch >= width
        self.copies_2d += 1

        def op():
            for r in range(height):
                ctypes.memmove(dst + r * dpitch, src + r * spitch, width)

        return self._queue(stream, op)

    def _memset(self, ptr, value, count, width, stream=0):
        ptr, pattern = int(ptr), int(value).to_bytes(width, "little")

        def op():
            ctypes.memmove(ptr, pattern * int(count), width * int(count))

        return self._queue(stream, op)

    def cuMemsetD8Async(self, ptr, value, n, stream):
        self.memsets.append((int(ptr), int(stream)))
        return self._memset(ptr, value, n, 1, stream)

    def cuMemsetD16Async(self, ptr, value, n, stream):
        self.memsets.append((int(ptr), int(stream)))
        return self._memset(ptr, value, n, 2, stream)

    def cuMemsetD32Async(self, ptr, value, n, stream):
        self.memsets.append((int(ptr), int(stream)))
        return self._memset(ptr, value, n, 4, stream)

    def _memset_2d(self, ptr, pitch, value, width, height, unit, stream):
        ptr, row = int(ptr), int(value).to_bytes(unit, "little") * int(width)

        def op():
            for r in range(int(height)):
                ctypes.memmove(ptr + r * int(pitch), row, len(row))

        return self._queue(stream, op)

    def cuMemsetD2D8Async(self, ptr, pitch, value, width, height, stream):
        self.memsets.append((int(ptr), int(stream)))
        return self._memset_2d(ptr, pitch, value, width, height, 1, stream)

    def cuMemsetD2D16Async(self, ptr, pitch, value, width, height, stream):
        self.memsets.append((int(ptr), int(stream)))
        return self._memset_2d(ptr, pitch, value, width, height, 2, stream)

    def cuMemsetD2D32Async(self, ptr, pitch, value, width, height, stream):
        self.memsets.append((int(ptr), int(stream)))
        return self._memset_2d(ptr, pitch, value, width, height, 4, stream)

    def cuMemsetD8(self, ptr, value, n):
        return self._memset(ptr, value, n, 1)

    # -- streams and events --------------------------------------------------------------------

    def cuStreamCreateWithPriority(self, flags, priority):
        return (OK, next(self._handles))

    def cuStreamGetPriority(self, stream):
        return (OK, 0)

    def cuStreamGetFlags(self, stream):
        return (OK, 0)

    def cuStreamDestroy(self, stream):
        return (OK,)

    def cuStreamSynchronize(self, stream):
        return (OK,)

    def cuStreamQuery(self, stream):
        return (OK,)

    def cuStreamIsCapturing(self, stream):
        S = _real.CUstreamCaptureStatus
        active = int(stream) in self._capturing
        return (OK, S.CU_STREAM_CAPTURE_STATUS_ACTIVE if active else S.CU_STREAM_CAPTURE_STATUS_NONE)

    def cuStreamWaitEvent(self, stream, event, flags):
        return (OK,)

    def cuEventCreate(self, flags):
        return (OK, next(self._handles))

    def cuEventDestroy(self, event):
        return (OK,)

    def cuEventRecord(self, event, stream):
        event = int(event)
        return self._queue(stream, lambda: self._event_times.__setitem__(event, time.perf_counter()))

    def cuEventRecordWithFlags(self, event, stream, flags):
        return self.cuEventRecord(event, stream)

    def cuEventSynchronize(self, event):
        return (OK,)

    def cuEventQuery(self, event):
        return (OK,)

    def cuEventElapsedTime(self, start, end):
        return (OK, 1000.0 * (self._event_times[int(end)] - self._event_times[int(start)]))

    # -- graphs ------------------------------------------------------------------------------

    def cuStreamBeginCapture(self, stream, mode):
        self._capturing[int(stream)] = FakeGraph()
        return (OK,)

    def cuStreamEndCapture(self, stream):
        return (OK, self._capturing.pop(int(stream)))

    def cuGraphInstantiate(self, graph, flags):
        return (OK, FakeGraphExec(graph, flags))

    def cuGraphLaunch(self, graph_exec, stream):
        unfreed = [a for a in graph_exec.allocs if a in self._buffers]  # left by a previous launch
        if unfreed:
            if not graph_exec.flags & AUTO_FREE_ON_LAUNCH:
                return (INVALID_VALUE,)
            for addr in unfreed:
                del self._buffers[addr]
        for op in graph_exec.ops:
            self._queue(stream, op)
        return (OK,)

    def cuGraphDestroy(self, graph):
        return (OK,)

    def cuGraphExecDestroy(self, graph_exec):
        return (OK,)

    # -- modules and launches ------------------------------------------------------------------

    def cuModuleLoadData(self, image):
        self.loaded_images.append(bytes(image))
        return (OK, next(self._handles))

    def cuModuleUnload(self, handle):
        return (OK,)

    def cuModuleGetFunction(self, handle, name):
        if not self._has_context():
            return (INVALID_CONTEXT, None)
        return (OK, FakeFunction(name.decode()))

    def cuFuncGetAttribute(self, attrib, f):
        return (OK, 0)  # no static shared memory, no limits

    def cuFuncSetAttribute(self, f, attrib, value):
        return (OK,)

    def cuLaunchKernel(self, f, gx, gy, gz, bx, by, bz, shared, stream, params, extra):
        assert gx >= 1 and bx >= 1 and gy == gz == by == bz == 1 and shared >= 0 and extra == 0
        symbol, _, kind = f.name.rpartition("_cuda_")
        inst = _find_instance(symbol)
        ptrs = (ctypes.c_void_p * 3).from_address(int(params))
        bounds = _launch.wt.launch_bounds_t.from_buffer_copy(
            ctypes.string_at(ptrs[0], ctypes.sizeof(_launch.wt.launch_bounds_t))
        )
        last = bounds.ndim - 1
        if inst.holds_tiles and bx > 1 and last >= 0 and bounds.shape[last] == bx:
            # tiles spread over the block's threads (cuda.tile_lanes): the CPU runs a block as one thread
            bounds.shape[last] = 1
            bounds.size //= bx
        args = inst.binding.launcher.struct.from_buffer_copy(ctypes.string_at(ptrs[1], ctypes.sizeof(inst.binding.launcher.struct)))
        ctx_ptr = ctypes.c_uint64.from_address(ptrs[2]).value
        self.launches += 1
        return self._queue(stream, lambda: _run_on_cpu(inst, kind == "backward", bounds, args, ctx_ptr))


def _find_instance(symbol):
    for m in list(_module._modules.values()):
        for k in m.kernels:
            for inst in k._instances.values():
                if inst.symbol == symbol:
                    return inst
    raise KeyError(symbol)


def _run_on_cpu(inst, adjoint, bounds, args, ctx_ptr):
    """Run the instance's CPU entry point; record a kernel error into the GPU-side context."""
    ptr = _launch.entry_point(inst, adjoint)
    ctx = _launch.launch_context_t()
    ctx.bounds = bounds
    _launch.launch_fn()(ptr, ctypes.addressof(ctx), ctypes.addressof(args), bounds.size, 1, 1 << 30, False)
    if not ctx.has_error or not ctx_ptr:
        return
    target = _launch.launch_context_t.from_address(ctx_ptr)
    if target.has_error:
        return  # the first error wins, as with atomicCAS on the GPU
    cpu_loc = tuple(inst.binding.module_locs[inst.binding.loc_base + ctx.error.loc])
    cuda_locs = [tuple(x) for x in next(iter(inst.binding.cuda_functions.values()))[3]]
    ctx.error.loc = cuda_locs.index(cpu_loc) if cpu_loc in cuda_locs else -1
    target.error = ctx.error
    target.has_error = 1
