"""Process-wide recording state shared by launch and tape: the stack of active tapes and the
hooks that let other libraries' objects (torch tensors...) stand in for array arguments."""

from __future__ import annotations

_tapes: list = []
array_coercions: list = []


def active_tape():
    return _tapes[-1] if _tapes else None


def push_tape(tape):
    _tapes.append(tape)


def pop_tape(tape):
    if not _tapes or _tapes[-1] is not tape:
        raise RuntimeError("wp.Tape scopes must be exited in the reverse order they were entered")
    _tapes.pop()
