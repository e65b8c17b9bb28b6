"""Devices: the places where arrays live and kernels run.

Contract: every device is one ``Device`` object, registered once under its alias (``"cpu"``,
later ``"cuda:0"``...). ``get_device`` turns anything device-like (None, an alias string, a
``Device``) into that object, and is the only way the rest of weft resolves a device argument,
so it is kept cheap: a cached "current device" for None and one dict lookup for strings.

This module never imports CUDA libraries itself. The first question about GPUs (a ``"cuda"``
device name, ``get_cuda_devices``, ``is_cuda_available``...) runs ``runtime/cuda.py``'s discovery
once, which registers a ``CudaDevice`` per GPU through ``_register_device``; without cuda-python, a
driver or a GPU it registers none and a request for ``"cuda"`` fails with a message saying why.
CPU-only programs never trigger it, so they never import cuda-python.

Every device has an ``allocator`` (``runtime/memory.py`` contract) that allocates its memory and
moves array data in and out of it.
"""

from __future__ import annotations

import platform

from .memory import HostAllocator


class Device:
    """A device that holds array memory and runs kernels.

    Attributes:
        alias: The unique name of the device, e.g. ``"cpu"`` or ``"cuda:0"``.
        name: A human-readable label (the processor name for the CPU).
        ordinal: The CUDA ordinal of a GPU, -1 for the CPU.
        arch: The compute capability (10 * major + minor) of a GPU, 0 for the CPU.
    """

    def __init__(self, alias: str, name: str = "", ordinal: int = -1, arch: int = 0):
        self.alias = alias
        self.name = name or alias
        self.ordinal = ordinal
        self.arch = arch
        # Properties Warp exposes for every device; neutral values on the CPU.
        self.sm_count = 0
        self.is_uva = False
        self.is_cubin_supported = False
        self.is_mempool_supported = False
        self.is_ipc_supported = False
        self.is_primary = False
        self.is_mempool_enabled = False
        self.uuid = None
        self.pci_bus_id = None
        self.total_memory = 0
        self.max_shared_memory_per_block = 0
        self.allocator = None

    @property
    def is_cpu(self) -> bool:
        """True for the CPU device."""
        return self.ordinal < 0

    @property
    def is_cuda(self) -> bool:
        """True for a CUDA device."""
        return self.ordinal >= 0

    @property
    def context(self):
        """The CUDA context of the device (None for the CPU)."""
        return None

    @property
    def has_context(self) -> bool:
        """Whether the device has a CUDA context (never for the CPU)."""
        return False

    @property
    def stream(self):
        """The current stream of a CUDA device.

        Raises:
            RuntimeError: The device is not a CUDA device.
        """
        raise RuntimeError(f"Device '{self.alias}' is not a CUDA device and has no streams")

    @property
    def has_stream(self) -> bool:
        """Whether the device has a current stream (never for the CPU)."""
        return False

    @property
    def free_memory(self) -> int:
        """Free memory in bytes (0 for the CPU, as in Warp)."""
        return 0

    @property
    def is_capturing(self) -> bool:
        """Whether a graph capture is active on the device (never for the CPU)."""
        return False

    def make_current(self):
        """Make the device's context current (nothing to do for the CPU)."""

    def synchronize(self):
        """Wait for the device's outstanding work (CPU launches complete before returning)."""

    def __str__(self):
        return self.alias

    def __repr__(self):
        # Warp prints a device as its quoted alias, e.g. 'cpu'.
        return f"'{self.alias}'"

    def __eq__(self, other):
        if self is other:
            return True
        if isinstance(other, Device):
            return other.alias == self.alias
        if isinstance(other, str):
            if other == "cuda":
                return self.is_cuda and self.ordinal == _cuda_current_ordinal
            return other == self.alias
        return NotImplemented

    def __ne__(self, other):
        result = self.__eq__(other)
        return result if result is NotImplemented else not result

    def __hash__(self):
        return hash(self.alias)


def _cpu_name() -> str:
    return platform.processor() or platform.machine() or "CPU"


_cpu = Device("cpu", name=_cpu_name())
_cpu.allocator = HostAllocator()
_devices: dict[str, Device] = {"cpu": _cpu}
_current: Device = _cpu
_cuda_current_ordinal = 0
_cuda_probe: list = []  # [reason there are no GPUs ("" if there are)] once discovery ran


def _discover_cuda() -> str:
    """Find the GPUs once (imports the CUDA runtime, hence cuda-python); return why there are none."""
    if not _cuda_probe:
        from . import cuda

        _cuda_probe.append(cuda.discover())
    return _cuda_probe[0]


def _register_device(device: Device) -> None:
    """Make a device reachable by its alias (used by the CUDA runtime when it finds GPUs)."""
    _devices[device.alias] = device


def _no_cuda_error(ident: str) -> RuntimeError:
    cuda = get_cuda_devices()
    if cuda:
        names = ", ".join(d.alias for d in cuda)
        return RuntimeError(f"Device '{ident}' does not exist: this machine's CUDA devices are {names}")
    reason = _discover_cuda() or "weft found no GPU"
    return RuntimeError(
        f"Device '{ident}' was requested, but no CUDA device is available on this machine ({reason}). "
        f"Use device='cpu', or check wp.is_cuda_available() first."
    )


def get_device(ident=None) -> Device:
    """Return the ``Device`` that a device-like value refers to.

    Args:
        ident: None (the current default device), an alias such as ``"cpu"``, ``"cuda"`` or
            ``"cuda:0"``, or a ``Device`` (returned unchanged).

    Returns:
        The device object.

    Raises:
        RuntimeError: A CUDA device was requested but none is available.
        ValueError: The string is not a known device alias.
        TypeError: ``ident`` is not a device-like value.
    """
    if ident is None:
        return _current
    if isinstance(ident, Device):
        return ident
    if isinstance(ident, str):
        device = _devices.get(ident)
        if device is not None:
            return device
        if ident == "cuda" or ident.startswith("cuda:"):
            cuda = get_cuda_devices()  # discovers the GPUs on first use
            if ident == "cuda" and cuda:
                return _devices.get(f"cuda:{_cuda_current_ordinal}", cuda[0])
            device = _devices.get(ident)
            if device is not None:
                return device
            raise _no_cuda_error(ident)
        known = ", ".join(repr(a) for a in _devices)
        raise ValueError(f"Unknown device {ident!r}: expected one of {known} (or 'cuda:N' on a GPU machine)")
    raise TypeError(f"Expected a device alias string or a wp.Device, got {type(ident).__name__}: {ident!r}")


def set_device(ident) -> None:
    """Set the default device used when a ``device`` argument is omitted.

    Args:
        ident: A device-like value, see ``get_device``.
    """
    global _current
    _current = _make_current(get_device(ident))


def _make_current(device: Device) -> Device:
    """Make ``device``'s context current and remember it as the current CUDA device."""
    global _cuda_current_ordinal
    if device.is_cuda:
        device.make_current()
        _cuda_current_ordinal = device.ordinal
    return device


def get_devices() -> list[Device]:
    """Return all devices on this machine, the CPU first."""
    _discover_cuda()
    return list(_devices.values())


def get_cuda_devices() -> list[Device]:
    """Return the CUDA devices on this machine (empty when there is no GPU)."""
    _discover_cuda()
    return [d for d in _devices.values() if d.is_cuda]


def get_cuda_device_count() -> int:
    """Return the number of CUDA devices on this machine."""
    return len(get_cuda_devices())


def get_cuda_device(ordinal: int | None = None) -> Device:
    """Return the CUDA device with the given ordinal, or the current CUDA device.

    Args:
        ordinal: The CUDA device's index; None for the current CUDA device.

    Returns:
        The ``wp.Device`` of that ordinal.

    Raises:
        RuntimeError: No such CUDA device exists.
    """
    ordinal = _cuda_current_ordinal if ordinal is None else ordinal
    return get_device(f"cuda:{ordinal}")


def map_cuda_device(alias: str, context=None) -> Device:
    """Give the GPU device of a CUDA context the alias ``alias`` and return it.

    The device keeps its arrays, modules and streams; only its name changes (``"cuda:0"`` no
    longer finds it). Mapping the same alias twice is a no-op.

    Args:
        alias: The new, unique device name.
        context: A ``CUcontext`` (or its address); ``None`` takes the calling thread's current
            context. It must be a GPU's primary context, the one weft, the CUDA runtime, PyTorch
            and JAX use.

    Returns:
        The device.

    Raises:
        RuntimeError: No CUDA device is available, no context is current, the context is not a
            primary context, or another device already has the alias.
    """
    if not isinstance(alias, str) or not alias:
        raise ValueError(f"wp.map_cuda_device(): the alias must be a non-empty string, got {alias!r}")
    if not get_cuda_devices():
        raise RuntimeError(f"wp.map_cuda_device({alias!r}): no CUDA device is available on this machine")
    from . import cuda

    device = cuda.device_of_context(context)
    other = _devices.get(alias)
    if other is not None and other is not device:
        raise RuntimeError(f"wp.map_cuda_device({alias!r}): the alias already names device {other.name!r}")
    del _devices[device.alias]
    device.alias = alias
    _devices[alias] = device
    return device


def unmap_cuda_device(alias: str) -> None:
    """Forget the CUDA device named ``alias``: ``get_device(alias)`` and the device lists no longer
    find it. When it is the default device, the CPU becomes the default.

    Args:
        alias: The name given to ``wp.map_cuda_device``.

    Raises:
        RuntimeError: No CUDA device has this alias.
    """
    device = _devices.get(alias) if isinstance(alias, str) else None
    if device is None or not device.is_cuda:
        raise RuntimeError(f"wp.unmap_cuda_device({alias!r}): no CUDA device has this alias")
    del _devices[alias]
    global _current
    if _current is device:
        _current = _cpu


def is_mempool_supported(device=None) -> bool:
    """Whether the device supports stream-ordered allocations (``cuMemAllocAsync``); False for the CPU.

    Args:
        device: A device-like value (``"cpu"``, ``"cuda:0"``, a ``wp.Device``); None for the current device.

    Returns:
        True or False.
    """
    return get_device(device).is_mempool_supported


def is_mempool_enabled(device=None) -> bool:
    """Whether the device's arrays are allocated from its stream-ordered memory pool.

    Args:
        device: A device-like value (``"cpu"``, ``"cuda:0"``, a ``wp.Device``); None for the current device.

    Returns:
        True or False (always False for the CPU).
    """
    return get_device(device).is_mempool_enabled


def set_mempool_enabled(device, enable: bool) -> None:
    """Allocate the device's future arrays from its memory pool (``enable``) or with ``cuMemAlloc``.

    Args:
        device: A CUDA device-like value.
        enable: True to allocate from the pool, False to allocate each array on its own.

    Raises:
        ValueError: ``device`` is not a CUDA device.
        RuntimeError: Enabling the pool on a device that does not support one.
    """
    d = get_device(device)
    if not d.is_cuda:
        raise ValueError(f"Memory pools exist only on CUDA devices, got '{d}'")
    if enable:
        _mempool_device(d)
    d.is_mempool_enabled = bool(enable)


def _mempool_device(device):
    d = get_device(device)
    if not d.is_cuda:
        raise ValueError(f"Memory pools exist only on CUDA devices, got '{d}'")
    if not d.is_mempool_supported:
        raise RuntimeError(f"Device {d} does not support memory pools")
    return d


def set_mempool_release_threshold(device, threshold) -> None:
    """Set how much memory the device's pool keeps reserved instead of releasing it to the OS.

    Args:
        device: A CUDA device.
        threshold: Bytes (an int above 1), or a fraction of the device's memory (a float in [0, 1]).

    Raises:
        ValueError: ``device`` is not a CUDA device, or a negative threshold.
        RuntimeError: The device does not support memory pools.
    """
    d = _mempool_device(device)
    if threshold < 0:
        raise ValueError(f"The release threshold must not be negative, got {threshold}")
    value = int(threshold * d.total_memory) if threshold <= 1.0 else int(threshold)
    d.mempool_release_threshold(value)


def get_mempool_release_threshold(device=None) -> int:
    """The release threshold of the device's memory pool, in bytes (see ``set_mempool_release_threshold``).

    Args:
        device: A device-like value (``"cpu"``, ``"cuda:0"``, a ``wp.Device``); None for the current device (a CUDA device with a pool).

    Returns:
        The threshold in bytes, an int.
    """
    return _mempool_device(device).mempool_release_threshold()


def is_cuda_available() -> bool:
    """Whether at least one CUDA device is available."""
    return get_cuda_device_count() > 0


def get_cuda_driver_version() -> tuple[int, int] | None:
    """The installed CUDA driver's ``(major, minor)`` version, or None without a usable driver."""
    from . import cuda_driver

    return cuda_driver.driver_version()


def get_cuda_toolkit_version() -> tuple[int, int] | None:
    """The ``(major, minor)`` version of the CUDA compiler weft builds kernels with (NVRTC), or
    None where it is not installed (CPU-only)."""
    from . import nvrtc

    try:
        return nvrtc.version()
    except Exception:  # noqa: BLE001 (no NVRTC library or bindings: no CUDA toolkit)
        return None


def get_cuda_supported_archs() -> list[int]:
    """The GPU architectures (compute capabilities as ``10 * major + minor``, sorted) the CUDA
    compiler weft uses (NVRTC) can build for; empty where NVRTC is not installed."""
    from .cuda import nvrtc_archs

    return sorted(set(nvrtc_archs()))


def is_cpu_available() -> bool:
    """Whether the CPU device is available (always true in weft)."""
    return True


def is_device_available(device) -> bool:
    """Whether ``device`` is one of the devices of this machine.

    Args:
        device: A ``wp.Device``.

    Returns:
        True when ``device`` is among ``wp.get_devices()``.
    """
    return device in _devices.values()


def is_peer_access_supported(target_device, peer_device) -> bool:
    """Whether ``peer_device`` can read and write the memory of ``target_device`` directly: two
    CUDA devices the driver reports as peers, or one CUDA device and itself; never the CPU.

    Args:
        target_device: The device whose memory is accessed (device-like value).
        peer_device: The device that accesses it (device-like value).

    Returns:
        True or False.
    """
    target, peer = get_device(target_device), get_device(peer_device)
    if not (target.is_cuda and peer.is_cuda):
        return False
    if target is peer:
        return True
    from . import cuda_driver

    driver = cuda_driver.api()
    err, can = driver.cuDeviceCanAccessPeer(peer.ordinal, target.ordinal)
    return bool(can) if int(err) == 0 else False


def is_peer_access_enabled(target_device, peer_device) -> bool:
    """Whether ``peer_device`` currently accesses ``target_device``'s memory directly. weft
    does not enable access between two GPUs, so this holds for a CUDA device and itself only.

    Args:
        target_device: The device whose memory is accessed (device-like value).
        peer_device: The device that accesses it (device-like value).

    Returns:
        True or False.
    """
    target, peer = get_device(target_device), get_device(peer_device)
    return target.is_cuda and target is peer


def is_mempool_access_supported(target_device, peer_device) -> bool:
    """Whether ``peer_device`` could access the memory pool of ``target_device``: a CUDA device
    with a memory pool and itself (weft does not share pools between GPUs); never the CPU.

    Args:
        target_device: The device whose memory is accessed (device-like value).
        peer_device: The device that accesses it (device-like value).

    Returns:
        True or False.
    """
    target, peer = get_device(target_device), get_device(peer_device)
    return target.is_cuda and target is peer and target.is_mempool_supported


def is_mempool_access_enabled(target_device, peer_device) -> bool:
    """Whether ``peer_device`` accesses the memory pool of ``target_device``: a CUDA device whose
    pool is enabled, and itself.

    Args:
        target_device: The device whose memory is accessed (device-like value).
        peer_device: The device that accesses it (device-like value).

    Returns:
        True or False.
    """
    target, peer = get_device(target_device), get_device(peer_device)
    return is_mempool_access_supported(target, peer) and target.is_mempool_enabled


def get_preferred_device() -> Device:
    """Return the first CUDA device if there is one, otherwise the CPU."""
    cuda = get_cuda_devices()
    return cuda[0] if cuda else _cpu


def synchronize() -> None:
    """Wait for all outstanding work on all devices.

    CPU launches complete before ``wp.launch`` returns, so only GPUs have work to wait for (and
    only if discovery ran: a program that never named a GPU has none). Kernel errors recorded by
    GPU launches since the last check are raised here.
    """
    if _cuda_probe:
        for d in list(_devices.values()):
            d.synchronize()


def synchronize_device(device=None) -> None:
    """Wait for all outstanding work on one device (see ``synchronize``).

    Args:
        device: A device-like value; None means the current device.
    """
    get_device(device).synchronize()


class ScopedDevice:
    """Context manager that makes a device the default inside a ``with`` block.

    Example:
        >>> with wp.ScopedDevice("cpu") as device:
        ...     a = wp.zeros(4)  # allocated on ``device``
    """

    def __init__(self, device):
        self.device = get_device(device)
        self._saved = None
        self._saved_cuda = None

    def __enter__(self) -> Device:
        global _current
        self._saved = _current
        self._saved_cuda = _cuda_current_ordinal
        _current = _make_current(self.device)
        return self.device

    def __exit__(self, exc_type, exc_value, traceback):
        global _current, _cuda_current_ordinal
        _current = self._saved
        if self.device.is_cuda:
            _cuda_current_ordinal = self._saved_cuda
            if self._saved.is_cuda:
                self._saved.make_current()
