"""The devices of live geometry handles, so a launch never hands a kernel an address it cannot read.

A ``wp.Mesh``, ``wp.Bvh``, ``wp.HashGrid`` or ``wp.Volume`` reaches kernels as a ``wp.uint64`` id:
the address of its descriptor or grid in the memory of the device it was made on. Passed to a
kernel launched on another device, that address is read as if it were local: on a GPU the launch
fails with an illegal-address error that poisons the whole CUDA context (every later call of the
process fails), on the CPU the process crashes. Warp lets both happen. weft's geometry objects
register their ids here while they live, and ``Launcher.pack`` looks up every ``wp.uint64``
argument: an id of another device raises ``RuntimeError`` naming the kernel, the argument and what
to do, before anything runs.
"""

from __future__ import annotations

# id -> (what it is, e.g. "wp.Mesh", the device it lives on)
_live: dict = {}


def register(handle: int, kind: str, device) -> None:
    """Record that ``handle`` (a live geometry id) is an address on ``device``."""
    if handle:
        _live[int(handle)] = (kind, device)


def release(handle) -> None:
    """Forget ``handle`` (its object released it; the address may be reused)."""
    if handle:
        _live.pop(int(handle), None)


def check(kernel_key: str, name: str, position: int, value, device) -> None:
    """Raise if ``value`` is the id of a live geometry object on a device other than ``device``
    (None: the CPU), for argument ``name`` at ``position`` of kernel ``kernel_key``."""
    entry = _live.get(value)
    if entry is None:
        return
    kind, where = entry
    here_cpu = device is None or device.is_cpu
    if (where.is_cpu and here_cpu) or where is device:
        return
    target = "cpu" if here_cpu else str(device)
    raise RuntimeError(
        f"kernel '{kernel_key}' argument '{name}' (position {position}) is the id of a {kind} on device "
        f"'{where}' but the kernel is launched on '{target}'; make the {kind} on '{target}' (its arrays "
        f"there) or launch on '{where}'"
    )


def check_all(kernel_key: str, names, positions, params, device) -> None:
    """``check`` for each ``wp.uint64`` parameter position in ``positions``."""
    if not _live:
        return
    for k in positions:
        value = params[k]
        if value.__class__ is not int:
            value = getattr(value, "value", value)
            try:
                value = int(value)
            except (TypeError, ValueError):
                continue
        check(kernel_key, names[k], k, value, device)
