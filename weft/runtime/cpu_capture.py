"""Graph capture on the CPU: ``wp.ScopedCapture()`` / ``wp.capture_begin()`` with a CPU device.

There is no native graph on the CPU. As in Warp, the work issued on the device while a capture is
active is recorded instead of run: kernel launches (as prepared ``wp.Launch`` objects, forward or
adjoint), copies and fills. ``capture_end`` returns a ``CpuGraph``; ``wp.capture_launch(graph)``
replays the recorded work in order, each launch at the cost of a ``Launch.launch()``. Arrays are
held by the graph, so they stay alive as long as it does.

Contract: ``begin(device)`` / ``end(device)`` open and close one capture per CPU device;
``defer(device, op)`` records the zero-argument callable ``op`` when a capture is active on
``device`` (and says so), else does nothing and returns False: the callers (launches, copies,
fills) then run the work themselves.
"""

from __future__ import annotations

_active: dict = {}  # device -> the ops recorded so far


class CpuGraph:
    """Work captured on the CPU (``wp.capture_end``), replayed by ``wp.capture_launch``."""

    def __init__(self, device, ops):
        self.device = device
        self.ops = list(ops)

    def launch(self):
        """Run the captured work once, in the order it was issued."""
        for op in self.ops:
            op()

    def __repr__(self):
        return f"<CpuGraph on {self.device}: {len(self.ops)} operations>"


def begin(device):
    """Start recording the work issued on the CPU ``device``.

    Raises:
        RuntimeError: a capture is already active on it.
    """
    if device in _active:
        raise RuntimeError(f"A graph capture is already active on {device}")
    _active[device] = []


def end(device) -> CpuGraph:
    """Stop recording on ``device`` and return what was recorded.

    Raises:
        RuntimeError: no capture is active on it.
    """
    ops = _active.pop(device, None)
    if ops is None:
        raise RuntimeError(f"No graph capture is active on {device}; call wp.capture_begin() first")
    return CpuGraph(device, ops)


def is_capturing(device) -> bool:
    """Whether a capture is recording the CPU ``device``'s work."""
    return bool(_active) and device in _active


def defer(device, op) -> bool:
    """Record ``op`` if a capture is active on ``device``; True when it was recorded."""
    if not _active:
        return False
    ops = _active.get(device)
    if ops is None:
        return False
    ops.append(op)
    return True
