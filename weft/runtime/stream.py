"""CUDA streams and events: ``wp.Stream``, ``wp.Event`` and the functions around them.

Contract: a ``Stream`` wraps a ``CUstream`` of one CUDA device (created by weft, or an external
handle given as ``cuda_stream=``, which the caller keeps alive); an ``Event`` wraps a ``CUevent``.
Each device has a current stream (``device.stream``) on which weft queues its launches, copies and
memsets; ``set_stream`` / ``ScopedStream`` change it. Streams weft creates are blocking with
respect to the legacy default stream, so work that other libraries queue there stays ordered.
"""

from __future__ import annotations

from . import cuda_driver as cu
from .cuda import ContextGuard
from .device import ScopedDevice, get_device


def _cuda_device(device, what: str):
    d = get_device(device)
    if not d.is_cuda:
        raise RuntimeError(f"{what} needs a CUDA device, got '{d}'")
    return d


class Stream:
    """A CUDA stream.

    Args:
        device: The CUDA device (default: the current device).
        priority: -1 for high priority, 0 (default) for low priority; other values are clamped.
        cuda_stream: An existing ``CUstream`` handle (int) to wrap instead of creating one.

    Raises:
        RuntimeError: ``device`` is not a CUDA device, or the stream cannot be created.
        TypeError: ``priority`` is not an int.
    """

    def __init__(self, device=None, priority: int = 0, **kwargs):
        if not isinstance(priority, int):
            raise TypeError(f"Stream priority must be an int, got {type(priority).__name__}")
        self.device = _cuda_device(device, "wp.Stream")
        self._owned = False
        self._cached_event = None
        drv = cu.api()
        handle = kwargs.get("cuda_stream")
        with ContextGuard(self.device):
            if handle is not None:
                self.cuda_stream = int(handle)
                self.priority = cu.check(drv.cuStreamGetPriority(self.cuda_stream), "cuStreamGetPriority")
                return
            least, greatest = cu.check(drv.cuCtxGetStreamPriorityRange(), "cuCtxGetStreamPriorityRange")
            value = greatest if priority < 0 else least
            flags = drv.CUstream_flags.CU_STREAM_DEFAULT
            self.cuda_stream = int(cu.check(drv.cuStreamCreateWithPriority(flags, value), "cuStreamCreateWithPriority"))
            self.priority = -1 if priority < 0 and value != least else 0
        self._owned = True

    def __del__(self):
        if getattr(self, "_owned", False) and not cu.exiting():
            try:
                with ContextGuard(self.device):
                    cu.api().cuStreamDestroy(self.cuda_stream)
            except Exception:  # interpreter shutdown
                pass

    def __repr__(self):
        return f"<wp.Stream {self.cuda_stream:#x} on {self.device}>"

    def __eq__(self, other):
        return isinstance(other, Stream) and other.cuda_stream == self.cuda_stream

    def __hash__(self):
        return hash(self.cuda_stream)

    @property
    def cached_event(self) -> Event:
        """An event kept by the stream for ``wait_stream``."""
        if self._cached_event is None:
            self._cached_event = Event(self.device)
        return self._cached_event

    @property
    def is_capturing(self) -> bool:
        """Whether a graph capture is active on this stream."""
        drv = cu.api()
        with ContextGuard(self.device):
            status = cu.check(drv.cuStreamIsCapturing(self.cuda_stream), "cuStreamIsCapturing")
        return status == drv.CUstreamCaptureStatus.CU_STREAM_CAPTURE_STATUS_ACTIVE

    @property
    def is_complete(self) -> bool:
        """Whether all work queued on the stream has completed."""
        drv = cu.api()
        with ContextGuard(self.device):
            (err,) = drv.cuStreamQuery(self.cuda_stream)
        if err == drv.CUresult.CUDA_ERROR_NOT_READY:
            return False
        cu.check((err,), "cuStreamQuery")
        return True

    @property
    def is_blocking(self) -> bool:
        """Whether the stream synchronises with the legacy default stream."""
        drv = cu.api()
        with ContextGuard(self.device):
            flags = cu.check(drv.cuStreamGetFlags(self.cuda_stream), "cuStreamGetFlags")
        return not (int(flags) & int(drv.CUstream_flags.CU_STREAM_NON_BLOCKING))

    def record_event(self, event: Event | None = None, external: bool = False) -> Event:
        """Record ``event`` (a new one when None) on the stream and return it.

        Raises:
            RuntimeError: The event belongs to another device.
        """
        if event is None:
            event = Event(self.device)
        elif event.device is not self.device:
            raise RuntimeError(f"Event from device {event.device} cannot be recorded on a stream of {self.device}")
        drv = cu.api()
        with ContextGuard(self.device):
            if external:
                flags = drv.CUevent_record_flags.CU_EVENT_RECORD_EXTERNAL
                cu.check(
                    drv.cuEventRecordWithFlags(event.cuda_event, self.cuda_stream, flags), "cuEventRecordWithFlags"
                )
            else:
                cu.check(drv.cuEventRecord(event.cuda_event, self.cuda_stream), "cuEventRecord")
        return event

    def wait_event(self, event: Event, external: bool = False):
        """Make future work on this stream wait until ``event`` has completed."""
        drv = cu.api()
        flags = drv.CUevent_wait_flags.CU_EVENT_WAIT_EXTERNAL if external else 0
        with ContextGuard(self.device):
            cu.check(drv.cuStreamWaitEvent(self.cuda_stream, event.cuda_event, flags), "cuStreamWaitEvent")

    def wait_stream(self, other_stream: Stream, event: Event | None = None, external: bool = False):
        """Make future work on this stream wait for the work queued so far on ``other_stream``."""
        if event is None:
            event = other_stream.cached_event
        other_stream.record_event(event, external)
        self.wait_event(event, external)

    def synchronize(self):
        """Wait on the host until the stream's work has completed."""
        with ContextGuard(self.device):
            cu.check(cu.api().cuStreamSynchronize(self.cuda_stream), f"synchronizing {self}")


class Event:
    """A CUDA event.

    Args:
        device: The CUDA device (default: the current device).
        interprocess: Create an event usable across processes (implies no timing).
        enable_timing: Record timestamps, for ``wp.get_event_elapsed_time``.
        cuda_event: An existing ``CUevent`` handle (int) to wrap instead of creating one.
    """

    def __init__(self, device=None, interprocess: bool = False, enable_timing: bool = False, **kwargs):
        self.device = _cuda_device(device, "wp.Event")
        self.enable_timing = bool(enable_timing)
        self._owned = False
        handle = kwargs.get("cuda_event")
        if handle is not None:
            self.cuda_event = int(handle)
            return
        drv = cu.api()
        flags = 0 if enable_timing else int(drv.CUevent_flags.CU_EVENT_DISABLE_TIMING)
        if interprocess:
            flags |= int(drv.CUevent_flags.CU_EVENT_INTERPROCESS) | int(drv.CUevent_flags.CU_EVENT_DISABLE_TIMING)
        with ContextGuard(self.device):
            self.cuda_event = int(cu.check(drv.cuEventCreate(flags), "cuEventCreate"))
        self._owned = True

    def __del__(self):
        if getattr(self, "_owned", False) and not cu.exiting():
            try:
                with ContextGuard(self.device):
                    cu.api().cuEventDestroy(self.cuda_event)
            except Exception:  # interpreter shutdown
                pass

    @property
    def is_complete(self) -> bool:
        """Whether the work the event captured has completed."""
        drv = cu.api()
        with ContextGuard(self.device):
            (err,) = drv.cuEventQuery(self.cuda_event)
        if err == drv.CUresult.CUDA_ERROR_NOT_READY:
            return False
        cu.check((err,), "cuEventQuery")
        return True

    def synchronize(self):
        """Wait on the host until the event has completed."""
        with ContextGuard(self.device):
            cu.check(cu.api().cuEventSynchronize(self.cuda_event), "cuEventSynchronize")


# ---------------------------------------------------------------------------------------------
# module-level functions (Warp's names)
# ---------------------------------------------------------------------------------------------


def get_stream(device=None) -> Stream:
    """The current stream of a CUDA device (default: the current device).

    Args:
        device: A CUDA device-like value (``"cuda:0"``, a ``wp.Device``); None for the current device.

    Returns:
        The device's current ``wp.Stream``.

    Raises:
        RuntimeError: The device is not a CUDA device.
    """
    return _cuda_device(device, "wp.get_stream").stream


def set_stream(stream: Stream, device=None, sync: bool = False):
    """Make ``stream`` the current stream of its device (or of ``device``).

    Args:
        stream: The new current stream.
        device: The device (default: the stream's).
        sync: Make the new stream wait for the work queued on the previous one.
    """
    d = stream.device if device is None else _cuda_device(device, "wp.set_stream")
    d.set_stream(stream, sync=sync)


def wait_event(event: Event, external: bool = False):
    """Make the current stream wait for ``event`` (work queued after this starts once it completes).

    Args:
        event: The event to wait for, recorded on any stream of the device.
        external: Use CUDA's external flag (an event node visible outside a captured graph); only meaningful while capturing.

    Example:
        ``e = wp.record_event(); ...; wp.wait_event(e)`` (on another stream, after ``wp.set_stream``).
    """
    get_stream().wait_event(event, external)


def record_event(event: Event | None = None, external: bool = False) -> Event:
    """Record ``event`` (a new one when None) on the current stream and return it.

    Args:
        event: The event to record; None creates one on the current device.
        external: Use CUDA's external flag (an event node visible outside a captured graph); only meaningful while capturing.

    Returns:
        The recorded ``wp.Event``.
    """
    return get_stream().record_event(event, external)


def wait_stream(other_stream: Stream, event: Event | None = None, external: bool = False):
    """Make the current stream wait for the work queued so far on ``other_stream``.

    Args:
        other_stream: The stream waited for (a ``wp.Stream`` of the same device).
        event: The event recorded on ``other_stream`` to wait on; None creates one.
        external: Use CUDA's external flag (an event node visible outside a captured graph); only meaningful while capturing.

    Example:
        ``wp.wait_stream(upload_stream)`` before launching kernels that read what it copied.
    """
    get_stream().wait_stream(other_stream, event, external)


def synchronize_stream(stream_or_device=None):
    """Wait on the host for the work queued on a stream (or on a device's current stream).

    Args:
        stream_or_device: A ``wp.Stream``, or a CUDA device-like value whose current stream is waited
            for; None for the current device.
    """
    stream = stream_or_device if isinstance(stream_or_device, Stream) else get_stream(stream_or_device)
    stream.synchronize()


def synchronize_event(event: Event):
    """Wait on the host until ``event`` has completed.

    Args:
        event: A recorded ``wp.Event``.
    """
    event.synchronize()


def get_event_elapsed_time(start_event: Event, end_event: Event, synchronize: bool = True) -> float:
    """Milliseconds between two events recorded with ``enable_timing=True``.

    Args:
        start_event, end_event: The events.
        synchronize: Wait for ``end_event`` first.

    Raises:
        RuntimeError: An event was created without timing.
    """
    if not (start_event.enable_timing and end_event.enable_timing):
        raise RuntimeError("wp.get_event_elapsed_time needs events created with enable_timing=True")
    if synchronize:
        end_event.synchronize()
    with ContextGuard(start_event.device):
        return float(
            cu.check(cu.api().cuEventElapsedTime(start_event.cuda_event, end_event.cuda_event), "cuEventElapsedTime")
        )


class ScopedStream:
    """Makes a stream (and its device) current inside a ``with`` block.

    Args:
        stream: The stream; None makes the block a no-op.
        sync_enter: On entry, the stream waits for the previous current stream of its device.
        sync_exit: On exit, the previous stream waits for the work queued on this one.
    """

    def __init__(self, stream: Stream | None, sync_enter: bool = True, sync_exit: bool = False):
        self.stream = stream
        self.sync_enter = sync_enter
        self.sync_exit = sync_exit
        self._device_scope = None
        self._saved = None

    def __enter__(self):
        if self.stream is not None:
            device = self.stream.device
            self._device_scope = ScopedDevice(device)
            self._device_scope.__enter__()
            self._saved = device.stream
            if self.stream is not self._saved:
                device.set_stream(self.stream, sync=self.sync_enter)
        return self.stream

    def __exit__(self, exc_type, exc, tb):
        if self.stream is None:
            return
        device = self.stream.device
        if self._saved is not self.stream:
            device.set_stream(self._saved, sync=False)
            if self.sync_exit:
                self._saved.wait_stream(self.stream)
        self._device_scope.__exit__(exc_type, exc, tb)
