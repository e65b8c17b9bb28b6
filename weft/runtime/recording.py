"""Process-wide recording state shared by launch and tape: the stack of active tapes and the
hooks that let other libraries' objects (torch tensors...) stand in for array arguments."""

from __future__ import annotations

import contextlib

_tapes: list = []
array_coercions: list = []
# forward-mode evaluations (weft/forward_mode.py), innermost last; None pauses them
forward_modes: list = []


def active_forward_mode():
    """The ``ForwardMode`` launches and copies report to, or None."""
    return forward_modes[-1] if forward_modes else None


def active_tape():
    return _tapes[-1] if _tapes else None


def push_tape(tape):
    """Start recording into ``tape``.

    Raises:
        RuntimeError: another tape is recording (as in Warp, tapes do not nest: the outer one
            would silently miss the inner one's launches).
    """
    if _tapes and _tapes[-1] is not None:
        raise RuntimeError(
            "a wp.Tape is already recording: tapes cannot be nested (the outer tape would miss the inner "
            "one's launches); record into the one tape, or exit it before entering another"
        )
    _tapes.append(tape)


@contextlib.contextmanager
def paused():
    """No tape records inside this block (weft's own scratch work: finite differences, the forward
    pass of a torch function), and a private tape may be entered there."""
    _tapes.append(None)
    try:
        yield
    finally:
        _tapes.pop()


def pop_tape(tape):
    if not _tapes or _tapes[-1] is not tape:
        raise RuntimeError("wp.Tape scopes must be exited in the reverse order they were entered")
    _tapes.pop()
