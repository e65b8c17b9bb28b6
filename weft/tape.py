"""``wp.Tape``: records kernel launches and runs their adjoints in reverse.

Contract: inside ``with tape:``, every ``wp.launch`` (forward, not ``record_cmd``) appends a
``LaunchRecord``. ``backward()`` seeds output gradients and launches each record's backward
entry point in reverse order, with every array argument's ``.grad`` as its adjoint.
"""

from __future__ import annotations

import dataclasses
import typing
import warnings

from . import config
from .runtime import launch as _launch
from .runtime import recording


@dataclasses.dataclass(frozen=True)
class LaunchRecord:
    """One recorded launch: what ran, over which grid, with which arguments."""

    kernel: object
    instance: object
    dim: object
    inputs: tuple
    outputs: tuple
    device: object


@dataclasses.dataclass(frozen=True)
class FuncRecord:
    """A Python-level step recorded with ``Tape.record_func``."""

    backward: typing.Callable
    arrays: tuple


def _resolve(params_by_name: dict, path: tuple):
    v = params_by_name.get(path[0])
    for field in path[1:]:
        v = getattr(v, field, None)
    return v


_warned: set = set()


def _warn_gradient_dead_ends(rec, params, read_later: set):
    """Warn when a launch writes an array that has no gradient buffer, that a later recorded
    launch reads, although this launch reads arrays that do have gradients: the gradient of
    everything computed from that array silently stops there. ``read_later`` collects the ids
    of arrays read by later launches (backward walks the tape in reverse)."""
    by_name = dict(zip(rec.kernel.arg_names, params))
    access = rec.instance.access
    try:
        _check_dead_ends(rec, by_name, access, read_later)
    finally:
        for p, kinds in access.items():
            arr = _resolve(by_name, p)
            if arr is not None and "read" in kinds:
                read_later.add(id(arr))


def _check_dead_ends(rec, by_name, access, read_later):
    reads_with_grad = [
        p for p, kinds in access.items() if "read" in kinds and getattr(_resolve(by_name, p), "grad", None) is not None
    ]
    if not reads_with_grad:
        return
    for path, kinds in access.items():
        if "write" not in kinds:
            continue
        arr = _resolve(by_name, path)
        if arr is None or getattr(arr, "grad", None) is not None or id(arr) not in read_later:
            continue
        key = (rec.kernel.key, path)
        if key in _warned:
            continue
        _warned.add(key)
        warnings.warn(
            f"kernel '{rec.kernel.key}' writes '{'.'.join(path)}', an array created without requires_grad=True, so "
            f"no gradient flows back through it to {', '.join(repr('.'.join(p)) for p in reads_with_grad)}; "
            "create it with requires_grad=True",
            stacklevel=4,
        )


def _check_overwrites(rec, params):
    """Warn (Warp's message) when this launch writes an array an earlier recorded launch read;
    then mark what this launch reads."""
    by_name = dict(zip(rec.kernel.arg_names, params))
    code = rec.kernel.pyfunc.__code__
    for path, kinds in rec.instance.access.items():
        arr = _resolve(by_name, path)
        if arr is not None and "write" in kinds and hasattr(arr, "mark_write"):
            arr.mark_write(
                arg_name=".".join(path), kernel_name=rec.kernel.key, filename=code.co_filename, lineno=code.co_firstlineno
            )
    for path, kinds in rec.instance.access.items():
        arr = _resolve(by_name, path)
        if arr is not None and "read" in kinds and hasattr(arr, "mark_read"):
            arr.mark_read()


class Tape:
    """Records launches for reverse-mode differentiation.

    Use as ``with tape: wp.launch(...)`` and then ``tape.backward(loss)``.
    """

    def __init__(self):
        self.launches: list = []
        self.gradients: dict = {}
        self.loss = None

    def __enter__(self):
        recording.push_tape(self)
        return self

    def __exit__(self, *exc):
        recording.pop_tape(self)

    def record_launch(self, kernel, instance, dim, inputs, outputs, device):
        rec = LaunchRecord(kernel, instance, dim, tuple(inputs), tuple(outputs), device)
        if config.verify_autograd_array_access:
            _check_overwrites(rec, list(inputs) + list(outputs))
        self.launches.append(rec)

    def record_func(self, backward, arrays):
        """Record a Python callable to run (with no arguments) during ``backward``."""
        self.launches.append(FuncRecord(backward, tuple(arrays)))

    def backward(self, loss=None, grads: typing.Optional[dict] = None):
        """Run the recorded launches' adjoints in reverse order.

        Args:
            loss: a one-element array whose gradient is seeded with 1.
            grads: ``{array: seed}`` to seed output gradients explicitly instead.
        """
        if loss is not None:
            if loss.size != 1:
                raise ValueError(f"tape.backward(loss) needs a one-element loss array, got shape {loss.shape}")
            if loss.grad is None:
                raise ValueError("tape.backward(loss): the loss array was created without requires_grad=True")
            loss.grad.fill_(1.0)
            self.loss = loss
        if grads:
            for a, g in grads.items():
                if a.grad is None:
                    a.requires_grad = True
                a.grad.assign(g)
                self.gradients[a] = a.grad
        read_later: set = set()
        for rec in reversed(self.launches):
            if isinstance(rec, FuncRecord):
                rec.backward()
                continue
            params = list(rec.inputs) + list(rec.outputs)
            _warn_gradient_dead_ends(rec, params, read_later)
            adj = [getattr(p, "grad", None) for p in params]
            _launch.launch(
                rec.kernel,
                rec.dim,
                inputs=rec.inputs,
                outputs=rec.outputs,
                adj_inputs=adj[: len(rec.inputs)],
                adj_outputs=adj[len(rec.inputs) :],
                device=rec.device,
                adjoint=True,
                record_tape=False,
            )

    def _arrays(self):
        seen = {}
        for rec in self.launches:
            arrays = rec.arrays if isinstance(rec, FuncRecord) else tuple(rec.inputs) + tuple(rec.outputs)
            for a in arrays:
                for x in a.arrays() if hasattr(a, "arrays") else [a]:
                    if getattr(x, "grad", None) is not None:
                        seen[id(x)] = x
        return list(seen.values())

    def zero(self):
        """Zero the gradients of every array the tape has seen."""
        for a in self._arrays():
            a.grad.zero_()
        for g in self.gradients.values():
            g.zero_()

    def reset(self):
        """Zero gradients and forget all recorded launches."""
        self.zero()
        for rec in self.launches:
            for a in rec.arrays if isinstance(rec, FuncRecord) else tuple(rec.inputs) + tuple(rec.outputs):
                for x in a.arrays() if hasattr(a, "arrays") else [a]:
                    if hasattr(x, "mark_init"):
                        x.mark_init()
        self.launches = []
        self.gradients = {}
        self.loss = None
