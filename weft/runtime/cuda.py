"""The CUDA runtime: GPU devices, their primary contexts, loaded modules and kernel launches.

Contract:
  - ``discover()`` runs once (from ``device.get_cuda_devices``): it probes the driver through
    ``cuda_driver`` and registers one ``CudaDevice`` per GPU under ``"cuda:N"``. Without
    cuda-python, a driver or a GPU it registers nothing and returns the reason.
  - A ``CudaDevice`` is the PRIMARY context of its GPU (shared with the CUDA runtime API, hence with
    torch/JAX), retained on first use. Every driver call that needs a context runs inside
    ``ContextGuard(device)``, which makes the device's context current and restores the previous one.
  - ``load_module(device, image)`` loads PTX (JIT-compiled by the driver) or CUBIN and returns a
    ``CudaModule`` whose ``function(name)`` gives a ``CUfunction``. Kernel instances keep their
    per-device functions in ``inst.binding.cuda_functions[ordinal] = (module, forward, backward, locs)``; the
    CPU fields (``forward_ptr``...) are untouched.
  - ``launch_kernel`` calls ``{symbol}_cuda_forward/backward(bounds, args, ctx)`` with a grid that
    covers ``bounds.size`` threads (capped; the kernels loop grid-stride) on a stream.

Kernel errors (out-of-bounds indices, debug mode) on a GPU: each debug launch gets one
``launch_context`` record in device memory (``ErrorSlots``, a per-device ring; graph captures get
their own). Errors are read back, and raised as ``IndexError`` exactly like on the CPU, when the
device is synchronised (``wp.synchronize``, ``wp.synchronize_device``, the ring filling up), when
``a.numpy()`` (or another download) waits for the stream that ran every launch since the last
check, or right after the launch when ``wp.config.verify_cuda`` is true.
"""

from __future__ import annotations

import atexit
import ctypes
import threading

from .. import config
from . import cuda_driver as cu
from . import launch as _launch
from .device import Device, _register_device

_lock = threading.RLock()


def discover() -> str:
    """Register every CUDA device; return why there are none ("" when there are some)."""
    count, reason = cu.probe()
    found = []
    for ordinal in range(count):
        try:
            found.append(CudaDevice(ordinal))
            _register_device(found[-1])
        except cu.CudaError as e:
            return f"querying CUDA device {ordinal} failed: {e}"
    if found:
        atexit.register(_at_exit, found)
    return reason


def _at_exit(devices):
    """Interpreter exit: let every device finish its queued work, then stop releasing driver
    resources (``cuda_driver.exiting``); the driver reclaims them when the process ends."""
    for device in devices:
        if device.has_context:
            try:
                with ContextGuard(device):
                    cu.api().cuCtxSynchronize()
            except Exception:  # noqa: BLE001, S110 (exit: a failed synchronisation must not stop the others)
                pass
    cu.mark_exiting()


def _attr(drv, handle, name: str) -> int:
    return cu.check(drv.cuDeviceGetAttribute(getattr(drv.CUdevice_attribute, name), handle), name)


def _optional(query):
    try:
        return query()
    except (cu.CudaError, AttributeError, TypeError, ValueError):
        return None


def _uuid(drv, handle) -> str:
    h = bytes(cu.check(drv.cuDeviceGetUuid(handle), "cuDeviceGetUuid").bytes).hex()
    return f"GPU-{h[:8]}-{h[8:12]}-{h[12:16]}-{h[16:20]}-{h[20:32]}"


def _pci_bus_id(drv, handle) -> str:
    bus = cu.check(drv.cuDeviceGetPCIBusId(64, handle), "cuDeviceGetPCIBusId")
    return bus if isinstance(bus, str) else bytes(bus).split(b"\0")[0].decode()


class CudaDevice(Device):
    """One GPU (its primary context). Created by ``discover``; get it with ``wp.get_device("cuda:N")``.

    Attributes beyond ``Device``'s: ``handle`` (the ``CUdevice``), ``max_shared_memory_per_block``,
    ``is_mempool_enabled`` (allocations use the stream-ordered pool when true).
    """

    def __init__(self, ordinal: int):
        drv = cu.api()
        handle = cu.check(drv.cuDeviceGet(ordinal), f"cuDeviceGet({ordinal})")
        raw_name = cu.check(drv.cuDeviceGetName(256, handle), "cuDeviceGetName")
        major = _attr(drv, handle, "CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR")
        minor = _attr(drv, handle, "CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR")
        super().__init__(f"cuda:{ordinal}", raw_name.split(b"\0")[0].decode(), ordinal, 10 * major + minor)
        self.handle = handle
        self.sm_count = _attr(drv, handle, "CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT")
        self.max_shared_memory_per_block = _attr(drv, handle, "CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK")
        self.is_uva = bool(_attr(drv, handle, "CU_DEVICE_ATTRIBUTE_UNIFIED_ADDRESSING"))
        # attributes that older drivers may not know
        self.is_mempool_supported = bool(
            _optional(lambda: _attr(drv, handle, "CU_DEVICE_ATTRIBUTE_MEMORY_POOLS_SUPPORTED"))
        )
        self.is_mempool_enabled = self.is_mempool_supported
        self.is_ipc_supported = _optional(lambda: bool(_attr(drv, handle, "CU_DEVICE_ATTRIBUTE_IPC_EVENT_SUPPORTED")))
        self.is_cubin_supported = self.arch in nvrtc_archs()
        self.is_primary = True
        self.total_memory = cu.check(drv.cuDeviceTotalMem(handle), "cuDeviceTotalMem")
        # identification only: a driver that cannot report it still gives a usable device
        self.uuid = _optional(lambda: _uuid(drv, handle))
        self.pci_bus_id = _optional(lambda: _pci_bus_id(drv, handle))
        self._context = None
        self._stream = None
        self._captures: dict = {}  # CUstream handle -> graph.Capture, while capturing
        # CUstream handle -> graph.Capture of an external capture that was unregistered (capture_end)
        # while its stream may still be capturing: frees wait until the stream stops
        self._external_captures: dict = {}
        self._deferred_frees: list = []  # (ptr, pooled) released while a capture could record the free
        self._errors = None  # ErrorSlots ring for debug launches (created on first use)
        self._pending_slots: list = []  # graph ErrorSlots replayed since the last check
        from .cuda_memory import CudaAllocator

        self.allocator = CudaAllocator(self)

    # -- context ---------------------------------------------------------------------------------

    @property
    def context(self):
        """The device's primary ``CUcontext`` (retained on first access)."""
        if self._context is None:
            with _lock:
                if self._context is None:
                    drv = cu.api()
                    self._context = cu.check(drv.cuDevicePrimaryCtxRetain(self.handle), f"retaining {self}'s context")
        return self._context

    @property
    def has_context(self) -> bool:
        return self._context is not None

    def make_current(self):
        """Make this device's context current on the calling thread."""
        cu.check(cu.api().cuCtxSetCurrent(self.context), f"cuCtxSetCurrent({self})")

    @property
    def free_memory(self) -> int:
        """Bytes of free device memory (as the driver reports them now)."""
        with ContextGuard(self):
            free, _ = cu.check(cu.api().cuMemGetInfo(), "cuMemGetInfo")
        return free

    # -- streams ---------------------------------------------------------------------------------

    @property
    def stream(self):
        """The device's current ``wp.Stream`` (a stream weft creates on first use)."""
        if self._stream is None:
            with _lock:
                if self._stream is None:
                    from .stream import Stream

                    self._stream = Stream(self)
        return self._stream

    @stream.setter
    def stream(self, stream):
        self.set_stream(stream)

    @property
    def has_stream(self) -> bool:
        return self._stream is not None

    def set_stream(self, stream, sync: bool = True):
        """Make ``stream`` the device's current stream.

        Args:
            stream: A ``wp.Stream`` of this device.
            sync: Make the new stream wait for the work queued on the previous one.

        Raises:
            RuntimeError: The stream belongs to another device.
        """
        if stream.device is not self:
            raise RuntimeError(f"Stream of device {stream.device} cannot be made current on device {self}")
        if sync and self._stream is not None and self._stream is not stream:
            stream.wait_stream(self._stream)
        self._stream = stream

    @property
    def is_capturing(self) -> bool:
        """Whether a graph capture is active on one of this device's streams."""
        return bool(self._captures)

    def get_cuda_output_format(self) -> str:
        """``"ptx"`` or ``"cubin"``: what kernels are compiled to for this device (see ``module_format``)."""
        return module_format(self)

    def get_cuda_compile_arch(self) -> int:
        """The architecture kernels are compiled for on this device."""
        return compile_arch(self)

    # -- memory pool -----------------------------------------------------------------------------

    def mempool_release_threshold(self, value: int | None = None) -> int:
        """Get (and with ``value``, first set) the bytes the default memory pool keeps reserved
        instead of returning them to the OS at synchronisations."""
        drv = cu.api()
        attr = drv.CUmemPool_attribute.CU_MEMPOOL_ATTR_RELEASE_THRESHOLD
        with ContextGuard(self):
            pool = cu.check(drv.cuDeviceGetDefaultMemPool(self.handle), "cuDeviceGetDefaultMemPool")
            if value is not None:
                cu.check(drv.cuMemPoolSetAttribute(pool, attr, drv.cuuint64_t(int(value))), "cuMemPoolSetAttribute")
            return int(cu.check(drv.cuMemPoolGetAttribute(pool, attr), "cuMemPoolGetAttribute"))

    # -- synchronisation and kernel errors ---------------------------------------------------------

    def synchronize(self):
        """Wait for all work on the device, then raise the first kernel error recorded since the last check."""
        if self._context is None:
            return
        with ContextGuard(self):
            cu.check(cu.api().cuCtxSynchronize(), f"synchronizing {self}")
        if self._deferred_frees:
            self.allocator.release_deferred()
        self.check_kernel_errors()

    def check_kernel_errors(self):
        """Raise (as ``IndexError``) the first error recorded by a debug launch (device synchronised)."""
        slots = [s for s in [self._errors] + self._pending_slots if s is not None]
        self._pending_slots = []
        error = None
        for s in slots:
            found = s.collect()
            if error is None:
                error = found
        if error is not None:
            raise error

    def error_slot(self, inst, stream) -> int:
        """The device address of a ``launch_context`` for one debug launch of ``inst`` on ``stream``."""
        capture = self._captures.get(stream.cuda_stream) if self._captures else None
        if capture is not None:
            return capture.error_slot(inst)
        if self._errors is None:
            self._errors = ErrorSlots(self, 1024, stream)
        addr = self._errors.take(inst, stream.cuda_stream)
        if addr is None:  # the ring is full: wait for the launches that use it and report their errors
            self.synchronize()
            addr = self._errors.take(inst, stream.cuda_stream)
        return addr

    def check_stream_errors(self, stream):
        """After ``stream`` was synchronised: raise the kernel errors of the debug launches since the
        last check if they all ran on that stream (then they have all completed); otherwise leave
        them for the next device synchronisation."""
        ring = self._errors
        if ring is None or not ring.insts or self._pending_slots or ring.streams != {stream.cuda_stream}:
            return
        error = ring.collect()
        if error is not None:
            raise error


def device_of_context(context=None):
    """The registered GPU whose primary context is ``context`` (``None``: the calling thread's
    current context), for ``wp.map_cuda_device``.

    Raises:
        RuntimeError: No context is current, or ``context`` is not a GPU's primary context (weft
            loads modules and allocates memory in primary contexts only: the ones the CUDA
            runtime, PyTorch and JAX use).
    """
    drv = cu.api()
    if context is None:
        ctx = cu.check(drv.cuCtxGetCurrent(), "cuCtxGetCurrent")
        if not int(ctx):
            raise RuntimeError(
                "wp.map_cuda_device(): no CUDA context is current on this thread; "
                "pass context=... or make the context current first"
            )
        handle = int(cu.check(drv.cuCtxGetDevice(), "cuCtxGetDevice"))
    else:
        ctx = context if isinstance(context, drv.CUcontext) else drv.CUcontext(int(getattr(context, "value", context) or 0))
        if not int(ctx):
            raise RuntimeError("wp.map_cuda_device(): the context is a null pointer")
        cu.check(drv.cuCtxPushCurrent(ctx), "cuCtxPushCurrent")
        try:
            handle = int(cu.check(drv.cuCtxGetDevice(), "cuCtxGetDevice"))
        finally:
            cu.check(drv.cuCtxPopCurrent(), "cuCtxPopCurrent")
    from .device import get_cuda_devices

    for device in get_cuda_devices():
        if int(device.handle) == handle and int(device.context) == int(ctx):
            return device
    raise RuntimeError(
        f"wp.map_cuda_device(): context {int(ctx):#x} is not the primary context of a GPU; weft "
        "runs kernels in primary contexts only (those of the CUDA runtime, PyTorch and JAX)"
    )


class ContextGuard:
    """``with ContextGuard(device):`` makes the device's context current, restoring the previous one."""

    __slots__ = ("device", "previous")

    def __init__(self, device):
        self.device = device
        self.previous = None

    def __enter__(self):
        drv = cu.api()
        ctx = self.device.context
        current = cu.check(drv.cuCtxGetCurrent(), "cuCtxGetCurrent")
        if int(current) != int(ctx):
            cu.check(drv.cuCtxSetCurrent(ctx), f"cuCtxSetCurrent({self.device})")
            self.previous = current
        return self.device

    def __exit__(self, exc_type, exc, tb):
        if self.previous is not None:
            cu.api().cuCtxSetCurrent(self.previous)
            self.previous = None


# ---------------------------------------------------------------------------------------------
# kernel errors
# ---------------------------------------------------------------------------------------------


def _context_type():
    from .launch import launch_context_t

    return launch_context_t


class ErrorSlots:
    """Device memory for ``capacity`` launch contexts, and the kernel instance using each one."""

    def __init__(self, device, capacity: int, stream, persistent: bool = False):
        self.device = device
        self.capacity = capacity
        self.persistent = persistent
        self.size = ctypes.sizeof(_context_type())
        # plain (not stream-ordered) memory, zeroed on ``stream`` (the first launch's) and waited for:
        # usable from any stream at once
        self.ptr, self._owner = device.allocator.alloc_raw(capacity * self.size, zero=False, pooled=False)
        device.allocator.clear_raw(self.ptr, capacity * self.size, stream)
        self.insts: list = []
        self.streams: set = set()  # handles of the streams the used records' launches ran on

    def take(self, inst, stream_handle: int = 0):
        """The address of the next free record (None when full), assigned to ``inst``."""
        k = len(self.insts)
        if k >= self.capacity:
            return None
        self.insts.append(inst)
        self.streams.add(stream_handle)
        return self.ptr + k * self.size

    def collect(self):
        """Read the used records; return the ``IndexError`` of the first failing launch (or None)
        and clear them. The device must be synchronised."""
        n = len(self.insts)
        if n == 0:
            return None
        records = (_context_type() * n)()
        self.device.allocator.read_raw(ctypes.addressof(records), self.ptr, n * self.size)
        error = None
        for inst, ctx in zip(self.insts, records):
            if ctx.has_error:
                error = kernel_error(inst, self.device, ctx)
                break
        if error is not None:
            self.device.allocator.clear_raw(self.ptr, n * self.size, self.device.stream)
        if not self.persistent:
            self.insts = []  # the ring starts over; a graph's records belong to its launches for good
            self.streams = set()
        return error


def kernel_error(inst, device, ctx):
    """The ``IndexError`` for an error a kernel recorded on the GPU (worded as on the CPU)."""
    from .launch import kernel_error as cpu_kernel_error

    key = device.ordinal
    if isinstance(inst, SpreadLaunch):
        inst, key = inst.inst, (device.ordinal, inst.tile_lanes)
    locs = inst.binding.cuda_functions[key][3]
    view = _ErrorView(locs)
    return cpu_kernel_error(view.bind(inst), ctx)


class _ErrorView:
    """Presents a CUDA image's source locations to ``launch.kernel_error`` (which reads
    ``binding.module_locs[binding.loc_base + loc]``): the image's error ids index its ``locs``
    directly."""

    def __init__(self, locs):
        self.module_locs = _Locs(locs)
        self.loc_base = 0
        self.kernel = None
        self.binding = self  # the view is its own binding: only the locations are read

    def bind(self, inst):
        self.kernel = inst.kernel
        return self


class _Locs:
    def __init__(self, locs):
        self.locs = locs

    def __getitem__(self, k):
        if 0 <= k < len(self.locs):
            return tuple(self.locs[k])
        return ("<unknown file>", 0, "<no source location>")


# ---------------------------------------------------------------------------------------------
# modules
# ---------------------------------------------------------------------------------------------


class CudaModule:
    """A loaded CUDA module (PTX or CUBIN image) on one device."""

    def __init__(self, device, image: bytes):
        self.device = device
        if not image.startswith(b"\x7fELF") and not image.endswith(b"\0"):
            image = image + b"\0"  # PTX text must be NUL-terminated for cuModuleLoadData
        with ContextGuard(device):
            self.handle = cu.check(cu.api().cuModuleLoadData(image), f"loading a CUDA module on {device}")
        self._functions: dict = {}

    def function(self, name: str):
        """The ``CUfunction`` called ``name``.

        Raises:
            CudaError: The module has no such function.
        """
        f = self._functions.get(name)
        if f is None:
            # the module belongs to the device's context (and with lazy loading this call loads the kernel)
            with ContextGuard(self.device):
                f = cu.check(cu.api().cuModuleGetFunction(self.handle, name.encode()), f"cuModuleGetFunction({name})")
            self._functions[name] = f
        return f

    def __del__(self):
        handle = getattr(self, "handle", None)
        if handle is None or cu.exiting():
            return
        try:
            with ContextGuard(self.device):
                cu.api().cuModuleUnload(handle)
        except Exception:  # interpreter shutdown: the driver may already be gone
            pass


def load_module(device, image: bytes) -> CudaModule:
    """Load a PTX or CUBIN ``image`` on the CUDA ``device``."""
    from .device import get_device

    return CudaModule(get_device(device), image)


_nvrtc_archs: list = []


def nvrtc_archs() -> tuple:
    """The architectures NVRTC can build CUBIN for (empty when NVRTC is missing)."""
    if not _nvrtc_archs:
        try:
            from cuda.bindings import nvrtc

            archs = cu.check(nvrtc.nvrtcGetSupportedArchs(), "nvrtcGetSupportedArchs")
            _nvrtc_archs.append(tuple(int(a) for a in archs))
        except Exception:  # no NVRTC: modules can still be loaded from AOT images
            _nvrtc_archs.append(())
    return _nvrtc_archs[0]


def compile_arch(device) -> int:
    """The newest architecture NVRTC supports that the device can run (the device's own if none)."""
    fitting = [a for a in nvrtc_archs() if a <= device.arch]
    return max(fitting) if fitting else device.arch


def module_format(device) -> str:
    """``config.cuda_output`` when set, else CUBIN when the driver is older than NVRTC (its JIT could
    not read NVRTC's newer PTX) and NVRTC supports the device's arch, else PTX."""
    fmt = getattr(config, "cuda_output", None)
    if fmt in ("ptx", "cubin"):
        return fmt
    driver_version = cu.check(cu.api().cuDriverGetVersion(), "cuDriverGetVersion")
    try:
        from cuda.bindings import nvrtc

        major, minor = cu.check(nvrtc.nvrtcVersion(), "nvrtcVersion")
        nvrtc_version = 1000 * major + 10 * minor
    except Exception:
        nvrtc_version = 0
    if device.is_cubin_supported and driver_version < nvrtc_version:
        return "cubin"
    return "ptx"


def functions(inst, device, tile_lanes: int = 1):
    """``(module, forward, backward, locs)`` of ``inst`` on ``device``, loading on first use.

    An image loaded with ``wp.load_aot_module`` for the device is used when it has the instance;
    otherwise all not-yet-loaded instances of the kernel's module are compiled into one image
    (a module's kernels usually launch together), as on the CPU. ``tile_lanes`` > 1: the kernel
    built alone with its tiles spread over that many threads per block (``tile_lanes``).
    """
    if tile_lanes > 1:
        return _spread_functions(inst, device, tile_lanes)
    entry = inst.binding.cuda_functions.get(device.ordinal)
    if entry is not None:
        return entry
    from . import module as mod

    module = inst.kernel.module
    with mod._lock:
        entry = inst.binding.cuda_functions.get(device.ordinal)
        if entry is not None:
            return entry
        aot = getattr(module, "cuda_loaded", {}).get(device.ordinal)
        if aot is not None and inst.symbol in aot.functions:
            fwd, bwd = aot.functions[inst.symbol]
            inst.binding.cuda_functions[device.ordinal] = (aot.loaded, fwd, bwd, aot.locs)
            return inst.binding.cuda_functions[device.ordinal]
        module.lower_unlaunched_kernels()
        batch = [
            i
            for k in module.kernels
            for i in k._instances.values()
            if device.ordinal not in i.binding.cuda_functions and i.generation == mod._generation[0]
        ]
        if inst not in batch:
            batch.append(inst)
        use_ptx = module_format(device) == "ptx"
        build = module.cuda_build(batch, compile_arch(device) if use_ptx else device.arch, use_ptx)
        loaded = load_module(device, build.image)
        for i in batch:
            fwd = loaded.function(f"{i.symbol}_cuda_forward")
            bwd = loaded.function(f"{i.symbol}_cuda_backward") if i.backward_enabled else None
            i.binding.cuda_functions[device.ordinal] = (loaded, fwd, bwd, build.locs)
    return inst.binding.cuda_functions[device.ordinal]


def _spread_functions(inst, device, lanes: int):
    key = (device.ordinal, lanes)
    entry = inst.binding.cuda_functions.get(key)
    if entry is not None:
        return entry
    from . import module as mod

    with mod._lock:
        entry = inst.binding.cuda_functions.get(key)
        if entry is None:
            use_ptx = module_format(device) == "ptx"
            arch = compile_arch(device) if use_ptx else device.arch
            build = inst.kernel.module.cuda_build([inst], arch, use_ptx, tile_lanes=lanes)
            loaded = load_module(device, build.image)
            loaded.shared_bytes = build.shared_bytes
            fwd = loaded.function(f"{inst.symbol}_cuda_forward")
            bwd = loaded.function(f"{inst.symbol}_cuda_backward") if inst.backward_enabled else None
            for f in (fwd, bwd):
                if f is not None and build.shared_bytes:
                    _allow_shared(inst, device, f, build.shared_bytes, lanes)
            entry = inst.binding.cuda_functions[key] = (loaded, fwd, bwd, build.locs)
    return entry


def _allow_shared(inst, device, f, shared: int, lanes: int):
    """Let kernel function ``f`` launch with ``shared`` bytes of dynamic shared memory (beyond the
    48 KiB a launch gets without asking), or say why the device has too little."""
    drv = cu.api()
    with ContextGuard(device):
        static = cu.check(
            drv.cuFuncGetAttribute(drv.CUfunction_attribute.CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES, f), "shared size"
        )
        limit = _attr(drv, device.handle, "CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN")
        if static + shared > limit:
            raise RuntimeError(
                f"kernel '{inst.kernel.key}' needs {static + shared} bytes of shared memory for its tiles with "
                f"block_dim={lanes}, more than {device} has per block ({limit}); use smaller tiles or a smaller "
                "block_dim"
            )
        cu.check(
            drv.cuFuncSetAttribute(f, drv.CUfunction_attribute.CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, shared),
            f"giving kernel '{inst.kernel.key}' {shared} bytes of shared memory",
        )


def tile_lanes(inst, bounds, block_dim: int, adjoint: bool) -> int:
    """The threads of a block that share each tile of a launch of ``inst`` (native/tile/tile_cuda.h):
    ``block_dim`` when the launch's last dimension is the block (``wp.launch_tiled``, or Warp's
    ``dim=(..., block_dim)``), the kernel does not read the thread's index in the block
    (``wp.tid()`` gives no index or one fewer than the launch has dimensions) nor values that differ
    between its threads (``inst.spreads_tiles``), and the launch is not run in task order; else 1
    (each thread a whole block, as on the CPU)."""
    if block_dim <= 1 or not inst.spreads_tiles or bounds.ndim < 1:
        return 1
    if bounds.shape[bounds.ndim - 1] != block_dim or inst.tid_ndim not in (0, bounds.ndim - 1):
        return 1
    if _launch.in_task_order(inst, adjoint):
        return 1
    return block_dim


class SpreadLaunch:
    """An error slot's owner for a launch of ``inst`` built with ``tile_lanes`` > 1 (its own image,
    its own source locations)."""

    __slots__ = ("inst", "tile_lanes")

    def __init__(self, inst, lanes: int):
        self.inst, self.tile_lanes = inst, lanes


def force_load(device):
    """Compile and load every lowered kernel of every module on ``device`` (before a graph capture).

    A module that fails to build is skipped here: launching one of its kernels reports the error.
    """
    from ..codegen.errors import WarpCodegenError, WeftBuildError
    from . import module as mod

    for module in list(mod._modules.values()):
        module.lower_unlaunched_kernels()
        current = [i for k in module.kernels for i in k._instances.values() if i.generation == mod._generation[0]]
        try:
            for inst in current:
                functions(inst, device)  # the first call builds the module's whole batch
        except (WarpCodegenError, WeftBuildError, cu.CudaError):
            continue


# ---------------------------------------------------------------------------------------------
# launches
# ---------------------------------------------------------------------------------------------

_MAX_GRID = 2**31 - 1


class _Params(ctypes.Structure):
    """The ``void*`` array ``cuLaunchKernel`` reads: pointers to bounds, args and the context pointer."""

    _fields_ = [("ptrs", ctypes.c_void_p * 3), ("ctx", ctypes.c_uint64)]


def entry_function(inst, device, adjoint: bool):
    """The forward or backward ``CUfunction`` of ``inst`` on ``device``.

    Raises:
        RuntimeError: A backward launch of a kernel built without (or unable to have) a backward pass.
    """
    _, fwd, bwd, _ = functions(inst, device)
    if not adjoint:
        return fwd
    if bwd is None:
        raise RuntimeError(
            f"kernel '{inst.kernel.key}' was built with enable_backward=False, so it has no backward pass; "
            "enable it with @wp.kernel(enable_backward=True) or wp.set_module_options({'enable_backward': True})"
        )
    if inst.ir.adjoint_error:
        raise RuntimeError(inst.ir.adjoint_error)
    return bwd


def launch_kernel(inst, device, bounds, args_struct, adjoint, stream=None, block_dim=256, max_blocks=0, fn=None):
    """Launch ``inst`` on ``device`` over ``bounds`` (asynchronously, on ``stream`` or the device's).

    Args:
        inst: The kernel instance.
        device: Its ``CudaDevice``.
        bounds: The ``launch_bounds_t`` of the grid.
        args_struct: The packed ``wp_args_<symbol>`` struct (device pointers in its arrays).
        adjoint: Run the backward entry point.
        stream: A ``wp.Stream`` of the device (default: the device's current stream).
        block_dim: Threads per block.
        max_blocks: Cap on the number of blocks (0: the hardware limit; kernels loop grid-stride).
        fn: The ``CUfunction`` when the caller already has it (``wp.Launch``).
    """
    size = bounds.size
    if size == 0:
        return
    launch_bounds = inst.kernel.options.get("launch_bounds")
    if launch_bounds and block_dim > launch_bounds[0]:
        raise ValueError(
            f"kernel '{inst.kernel.key}' was declared with launch_bounds={launch_bounds[0]} threads per block, "
            f"but is launched with block_dim={block_dim}; pass block_dim={launch_bounds[0]} or less to wp.launch"
        )
    lanes = tile_lanes(inst, bounds, block_dim, adjoint) if inst.holds_tiles else 1
    shared = 0
    if lanes > 1:  # the kernel built for spread tiles (its own image: fn was the one-lane entry)
        loaded, fwd, bwd, _ = functions(inst, device, lanes)
        fn, shared = (bwd if adjoint else fwd), loaded.shared_bytes
        if fn is None:
            entry_function(inst, device, adjoint)  # raises why there is no backward pass
    elif fn is None:
        fn = entry_function(inst, device, adjoint)
    if stream is None:
        stream = device.stream
    cluster = inst.kernel.options.get("cluster_dim")
    if _launch.in_task_order(inst, adjoint):  # deterministic: one thread runs the tasks in order (grid-stride)
        if cluster and device.arch >= 90:
            raise RuntimeError(
                f"kernel '{inst.kernel.key}' has cluster_dim={cluster}: a deterministic launch runs its tasks on "
                "one GPU thread, and a clustered kernel launches whole clusters of blocks; drop cluster_dim or "
                "run it with the 'deterministic' module option set to wp.DeterministicMode.NOT_GUARANTEED"
            )
        block_dim, max_blocks = 1, 1
    blocks = (size + block_dim - 1) // block_dim
    cap = max_blocks if max_blocks > 0 else _MAX_GRID
    grid = min(blocks, cap)
    if cluster:  # whole clusters; the extra blocks' grid-stride loops find no work
        grid = min(-(-grid // cluster) * cluster, _MAX_GRID // cluster * cluster)
    params = _Params()
    params.ptrs[0] = ctypes.addressof(bounds)
    params.ptrs[1] = ctypes.addressof(args_struct)
    params.ptrs[2] = ctypes.addressof(params) + _Params.ctx.offset
    if (inst.kernel.module.options.get("mode") or config.mode) != "release":
        params.ctx = device.error_slot(inst if lanes == 1 else SpreadLaunch(inst, lanes), stream)
    if device._captures:
        capture = device._captures.get(stream.cuda_stream)
        if capture is not None:  # the graph must keep the kernel's module loaded
            capture.modules.add(inst.binding.cuda_functions[device.ordinal if lanes == 1 else (device.ordinal, lanes)][0])
    drv = cu.api()
    with ContextGuard(device):
        cu.check(
            drv.cuLaunchKernel(
                fn, grid, 1, 1, block_dim, 1, 1, shared, stream.cuda_stream, ctypes.addressof(params), 0
            ),
            f"launching kernel '{inst.kernel.key}' on {device}",
        )
    if getattr(config, "verify_cuda", False) and not device._captures:
        device.synchronize()
