"""Putting communication on the recording ``wp.Tape``.

Contract: ``recording_tape(a)`` is the tape an operation on ``a`` records on (None when no tape
records or ``a`` has no gradient: then there is nothing to differentiate); ``mark(a, operation)``
does what ``wp.config.verify_autograd_array_access`` asks of an in-place write of ``a``.
"""

from __future__ import annotations

from .. import config
from ..array_constructors import _user_location
from ..runtime import recording


def recording_tape(a):
    """The active tape, if it should record an in-place operation on ``a``."""
    tape = recording.active_tape()
    if tape is None or a.grad is None:
        return None
    return tape


def mark(a, operation: str) -> None:
    """Warn (as a kernel launch would) when ``operation`` overwrites ``a`` after an earlier recorded
    launch read it, then mark ``a`` as read: the operation reads it too."""
    if not config.verify_autograd_array_access or recording.active_tape() is None:
        return
    filename, lineno = _user_location()
    a.mark_write(operation=operation, filename=filename, lineno=lineno)
    a.mark_read()
