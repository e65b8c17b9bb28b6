"""``wp.checkpoint(fn, *args)``: gradient checkpointing on a ``wp.Tape``.

A tape keeps every launch it records and, through them, every intermediate array, so the memory
of a differentiated simulation grows with its length. ``outs = wp.checkpoint(fn, *args)`` inside a
recording tape runs ``fn(*args)`` *without* recording its launches and records one entry instead,
which keeps only ``args`` and the outputs: the arrays ``fn`` allocates internally are freed as
soon as it returns. When ``tape.backward()`` reaches the entry it runs ``fn(*args)`` again under
a private tape, seeds the new outputs with the gradients the original outputs received, and
back-propagates through it, which adds the gradients into the arguments' ``.grad``; the private
tape and its arrays are then dropped. So a rollout checkpointed in segments keeps one state per
segment, and runs each segment's forward twice.

``fn`` must compute the same thing when it runs again: it may read only its arguments (and
constants), not arrays that later launches overwrite, and random numbers must come from seeds it
is given. Checkpoints nest (``fn`` may call ``wp.checkpoint`` itself, e.g. a segment of
checkpointed steps), and ``fn`` may launch kernels, ``wp.Launch`` objects, copies, or anything
else a tape records. Outside a recording tape, ``checkpoint`` just calls ``fn``.
"""

from __future__ import annotations

from . import config
from .runtime import recording


def _arrays_in(values) -> list:
    """The arrays in a list of values: arrays themselves, and the arrays of struct instances."""
    out = []
    for v in values:
        if hasattr(v, "arrays") and not hasattr(v, "grad"):  # a struct instance
            out.extend(v.arrays())
        elif hasattr(v, "grad") and hasattr(v, "shape"):
            out.append(v)
    return out


def _outputs(result, name: str) -> list:
    """``fn``'s result as a list of arrays (an array, or a tuple / list of arrays; None: none)."""
    if result is None:
        return []
    values = list(result) if isinstance(result, (tuple, list)) else [result]
    for v in values:
        if not (hasattr(v, "grad") and hasattr(v, "shape")):
            raise TypeError(
                f"wp.checkpoint: {name} must return an array, a tuple of arrays or None, got {type(v).__name__}"
            )
    return values


def checkpoint(fn, *args, **kwargs):
    """Run ``fn(*args, **kwargs)`` keeping only its arguments and outputs on the recording tape;
    its forward runs again when ``tape.backward()`` reaches it (see the module docstring).

    Args:
        fn: a callable that launches kernels on ``args`` and returns an array, a tuple or list of
            arrays, or None (results written into arrays among ``args``).
        args, kwargs: its arguments (arrays, struct instances, scalars...).

    Returns:
        What ``fn`` returned.

    Raises:
        TypeError: ``fn`` returned something other than arrays.
    """
    tape = recording.active_tape()
    name = getattr(fn, "__qualname__", repr(fn))
    if tape is None or recording.active_forward_mode() is not None:
        # forward mode (wp.autograd.hvp records tangent launches): the launches are recorded as
        # they run, since a replay outside forward mode would lose their tangents
        return fn(*args, **kwargs)
    with recording.paused():
        result = fn(*args, **kwargs)
    outputs = _outputs(result, name)
    inputs = _arrays_in(list(args) + list(kwargs.values()))
    if config.verify_autograd_array_access:
        for a in inputs:  # the tape saw no launch read them, but backward will read them again
            if hasattr(a, "mark_read"):
                a.mark_read()

    def backward():
        from .tape import Tape

        with recording.paused():  # a private tape, also while another one records
            replay = Tape()
            with replay:
                again = _outputs(fn(*args, **kwargs), name)
            seeds = {
                new: old.grad
                for new, old in zip(again, outputs)
                if new is not old and getattr(old, "grad", None) is not None
            }
            replay.backward(grads=seeds)

    kept = inputs + [o for o in outputs if not any(o is a for a in inputs)]
    tape.record_func(backward=backward, arrays=kept)
    return result
