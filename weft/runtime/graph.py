"""CUDA graphs: capture a stream's launches, copies and memsets once, replay them cheaply.

Contract: ``capture_begin`` starts a stream capture (``cuStreamBeginCapture``, thread-local mode)
on a stream of a CUDA device and registers a ``Capture`` on the device, so that launches queued on
that stream during the capture take their kernel-error records from the capture (they stay valid
for every replay). Captures are keyed by the ``CUstream`` handle, so any ``wp.Stream`` wrapping the
captured stream finds the capture. Memory allocated from the pool on the captured stream is a graph
allocation: freed during the capture it gets a free node; other memory released during the capture
is freed after it (``cuda_memory``). ``capture_end`` ends it (``cuStreamEndCapture``), instantiates
the graph (``cuGraphInstantiate`` with AUTO_FREE_ON_LAUNCH, so that allocations a launch left unfreed
are freed by the next launch instead of making it fail) and returns a ``Graph``; ``capture_launch``
replays it with ``cuGraphLaunch``. A ``Graph`` keeps the modules of its kernels, its error records
and the host memory its captured uploads read alive; the arrays a graph uses must be kept alive by the caller (as in Warp).
"""

from __future__ import annotations

from . import cpu_capture
from . import cuda_driver as cu
from .cuda import ContextGuard, ErrorSlots, force_load
from .device import get_device

_GRAPH_ERROR_SLOTS = 4096


class Capture:
    """State of one active capture: its stream and the kernel-error records of its launches.

    The records are allocated (and zeroed) before the capture begins, since memory cannot be
    allocated synchronously during a capture; launches beyond their number, and all launches of
    an external capture (already begun by other code), run without error reporting (a null
    context: failing threads still stop before touching memory).
    """

    def __init__(self, device, stream, external: bool):
        self.device = device
        self.stream = stream
        self.external = external
        self.slots = [] if external else [ErrorSlots(device, _GRAPH_ERROR_SLOTS, stream, persistent=True)]
        self.modules: set = set()  # CudaModules of the captured launches
        self.allocations: set = set()  # pool allocations made on the stream during the capture, not yet freed
        self.host_buffers: list = []  # host memory that captured copies read at every replay

    def error_slot(self, inst) -> int:
        addr = self.slots[0].take(inst) if self.slots else None
        return 0 if addr is None else addr


class Graph:
    """A captured, instantiated CUDA graph (returned by ``wp.capture_end``)."""

    def __init__(self, device, graph, graph_exec, slots, modules=(), host_buffers=()):
        self.device = device
        self.graph = graph
        self.graph_exec = graph_exec
        self.slots = slots  # kernel-error records of the captured launches
        self.modules = set(modules)  # keeps the captured kernels' code loaded
        self.host_buffers = list(host_buffers)  # the host sources of its copy nodes

    def __del__(self):
        if cu.exiting():
            return
        try:
            with ContextGuard(self.device):
                drv = cu.api()
                if self.graph_exec is not None:
                    drv.cuGraphExecDestroy(self.graph_exec)
                if self.graph is not None:
                    drv.cuGraphDestroy(self.graph)
        except Exception:  # interpreter shutdown
            pass


def _capture_stream(device, stream):
    if stream is not None:
        if device is not None and get_device(device) is not stream.device:
            raise RuntimeError(f"The stream belongs to {stream.device}, not to {get_device(device)}")
        return stream.device, stream
    d = get_device(device)
    if not d.is_cuda:
        raise RuntimeError(f"Graph capture needs a CUDA device, got '{d}'")
    return d, d.stream


def _driver_needs_preload() -> bool:
    """Drivers before CUDA 12.3 cannot load modules during a capture."""
    return cu.check(cu.api().cuDriverGetVersion(), "cuDriverGetVersion") < 12030


def _cpu_device(device, stream):
    """The CPU device a capture call names (no stream, a CPU device or the current one), or None."""
    if stream is not None:
        return None
    d = get_device(device)
    return d if d.is_cpu else None


def capture_begin(device=None, stream=None, force_module_load=None, external: bool = False):
    """Begin capturing the work queued on a stream into a CUDA graph, or, on the CPU, the work
    issued on the device into a ``CpuGraph`` (recorded, not run; see ``cpu_capture``).

    Args:
        device: The device (default: the current device); on a GPU its current stream is captured.
        stream: The ``wp.Stream`` to capture instead.
        force_module_load: Compile and load every kernel first (default: only on drivers older than
            CUDA 12.3, which cannot load modules during a capture).
        external: The capture was already begun by other code on this stream.

    Raises:
        RuntimeError: The device is not a CUDA device, or a capture is already active on the stream.
    """
    cpu = _cpu_device(device, stream)
    if cpu is not None:
        if external:
            raise RuntimeError("external=True names a CUDA stream capture begun elsewhere; the CPU has none")
        cpu_capture.begin(cpu)  # kernels are built as their launches are recorded: nothing to preload
        return
    device, stream = _capture_stream(device, stream)
    key = stream.cuda_stream
    if key in device._captures:
        raise RuntimeError(f"A graph capture is already active on {stream}")
    if force_module_load is None:
        force_module_load = _driver_needs_preload()
    if force_module_load:
        force_load(device)
    capture = Capture(device, stream, external)
    if external:
        previous = device._external_captures.pop(key, None)  # registered again while still recording
        if previous is not None:
            capture.allocations = previous.allocations
    else:
        drv = cu.api()
        mode = drv.CUstreamCaptureMode.CU_STREAM_CAPTURE_MODE_THREAD_LOCAL
        with ContextGuard(device):
            cu.check(drv.cuStreamBeginCapture(stream.cuda_stream, mode), "cuStreamBeginCapture")
    device._captures[key] = capture


def capture_end(device=None, stream=None) -> Graph | None:
    """End the capture begun by ``capture_begin`` and return the instantiated ``Graph``.

    For an external capture (``external=True``) the capture is only unregistered and None is
    returned: the code that began it ends it (until then, frees stay postponed).

    Raises:
        RuntimeError: No capture is active on the stream, or the driver rejected the capture.
    """
    cpu = _cpu_device(device, stream)
    if cpu is not None:
        return cpu_capture.end(cpu)
    device, stream = _capture_stream(device, stream)
    capture = device._captures.pop(stream.cuda_stream, None)
    if capture is None:
        raise RuntimeError(f"No graph capture is active on {stream}; call wp.capture_begin() first")
    try:
        if capture.external:
            device._external_captures[stream.cuda_stream] = capture  # kept until its stream stops capturing
            return None
        drv = cu.api()
        auto_free = drv.CUgraphInstantiate_flags.CUDA_GRAPH_INSTANTIATE_FLAG_AUTO_FREE_ON_LAUNCH
        with ContextGuard(device):
            graph = cu.check(drv.cuStreamEndCapture(stream.cuda_stream), "cuStreamEndCapture")
            try:
                graph_exec = cu.check(drv.cuGraphInstantiate(graph, int(auto_free)), "cuGraphInstantiate")
            except cu.CudaError:
                drv.cuGraphDestroy(graph)
                raise
        return Graph(device, graph, graph_exec, capture.slots, capture.modules, capture.host_buffers)
    finally:
        device.allocator.release_deferred()


def is_conditional_graph_supported() -> bool:
    """Whether captured graphs can hold conditional nodes (``wp.capture_if`` / ``capture_while``
    in Warp): never in weft, whose captures record straight-line work; code that checks this
    falls back to host-side loops, as with Warp on an older driver."""
    return False


def is_capture_allocation_supported(device=None) -> bool:
    """Whether arrays can be allocated while work on ``device`` is being captured: always on the
    CPU (allocations happen as the work is recorded), and on a GPU when it has a memory pool
    (pool allocations made during a capture become allocation nodes of the graph)."""
    d = get_device(device)
    return True if d.is_cpu else bool(d.is_mempool_supported)


def capture_launch(graph: Graph, stream=None):
    """Replay a captured graph on ``stream`` (default: the current stream of the graph's device);
    a ``CpuGraph`` runs its recorded work on the CPU."""
    if isinstance(graph, cpu_capture.CpuGraph):
        if not cpu_capture.defer(graph.device, graph.launch):  # inside another capture: recorded
            graph.launch()
        return
    if stream is None:
        stream = graph.device.stream
    elif stream.device is not graph.device:
        raise RuntimeError(f"A graph captured on {graph.device} cannot be launched on a stream of {stream.device}")
    with ContextGuard(graph.device):
        cu.check(cu.api().cuGraphLaunch(graph.graph_exec, stream.cuda_stream), "cuGraphLaunch")
    pending = graph.device._pending_slots
    for s in graph.slots:
        if s not in pending:
            pending.append(s)


class ScopedCapture:
    """Capture the work of a ``with`` block into a graph (a CUDA graph, or a ``CpuGraph`` on the
    CPU), available as ``.graph`` afterwards.

    Args:
        device, stream, force_module_load, external: As for ``wp.capture_begin``.

    Example:
        With a kernel ``step`` and an array ``x``::

            with wp.ScopedCapture() as capture:
                wp.launch(step, dim=n, inputs=[x])
            wp.capture_launch(capture.graph)
    """

    def __init__(self, device=None, stream=None, force_module_load=None, external: bool = False):
        self.device = device
        self.stream = stream
        self.force_module_load = force_module_load
        self.external = external
        self.graph = None
        self.active = False

    def __enter__(self):
        capture_begin(self.device, self.stream, self.force_module_load, self.external)
        self.active = True
        return self

    def __exit__(self, exc_type, exc, tb):
        self.active = False
        try:
            self.graph = capture_end(self.device, self.stream)
        except Exception:
            if exc_type is None:
                raise  # a failed capture with no other error in flight is reported
