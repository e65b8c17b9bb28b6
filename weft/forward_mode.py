"""Forward-mode autodiff: ``jvp`` (Jacobian-vector products) and ``hvp`` (Hessian-vector
products), as ``wp.autograd.jvp`` / ``wp.autograd.hvp``.

Contract:
  - While a ``ForwardMode`` is active (``recording.forward_modes``), every forward ``wp.launch``
    runs the kernel's tangent kernel (``kernel.tangent_kernel``, codegen/tangent.py) instead:
    the same results, plus the tangent of every float array it writes, kept in a tangent array
    per array (``ForwardMode.twin``). ``wp.copy``, ``array.zero_`` and ``array.fill_`` carry the
    tangents along. One pass, no tape, no backward pass.
  - Tangent arrays are found by memory: a view of an array with a tangent gets the same view of
    that tangent, and an array first seen by a launch starts with a zero tangent.
  - ``hvp`` records the tangent launches on a private tape and runs its backward pass from the
    tangent of the loss (reverse over forward): ``d/dx (grad L . v) = H v``.
  - ``wp.checkpoint`` runs its function directly (its launches are recorded as they run). Other
    steps recorded with ``Tape.record_func`` (collectives, user steps) have no forward rule:
    forward mode refuses them rather than dropping their tangents.
"""

from __future__ import annotations

import contextlib

import numpy as np

from . import types as wt
from .array import array as _array
from .runtime import recording


def _is_float_array(a) -> bool:
    return isinstance(a, _array) and not a.is_annotation and wt.is_float(getattr(a.dtype, "_scalar", a.dtype))


class ForwardMode:
    """The tangents of one forward-mode evaluation: a tangent array per float array, found by
    memory (``twin``); ``requires_grad``: tangents get gradient buffers (``hvp``)."""

    def __init__(self, requires_grad: bool = False):
        self.requires_grad = requires_grad
        self.bases: list = []  # (array, tangent), arrays whose tangents were made or given

    # ------------------------------------------------------------------ tangents
    def set(self, a, tangent):
        """Give the array ``a`` the tangent ``tangent`` (copied into an array laid out like ``a``)."""
        from .array_constructors import copy, empty

        t = empty(a.shape, dtype=a.dtype, device=a.device, strides=a.strides, requires_grad=self.requires_grad)
        if tangent is None:
            t.zero_()
        else:
            with _paused():
                copy(t, tangent)
        self.bases.append((a, t))
        return t

    def find(self, a):
        """The tangent of array ``a`` if it has one (``a`` itself, or a view into an array with one)."""
        for base, t in reversed(self.bases):
            if base is a:
                return t
        lo = a.ptr or 0
        for base, t in reversed(self.bases):
            if base.ptr is None or base.device != a.device or not base.capacity:
                continue
            if base.ptr <= lo < base.ptr + base.capacity:
                view = _array(
                    ptr=t.ptr + (lo - base.ptr), dtype=a.dtype, shape=a.shape, strides=a.strides, device=a.device,
                    capacity=base.capacity - (lo - base.ptr), requires_grad=False,
                )
                view._ref = t  # keeps the tangent's memory alive
                return view
        return None

    def twin(self, a):
        """The tangent argument for the launch argument ``a``: the tangent array of a float array
        (a zero one the first time it is seen), the value itself for the rest (ignored)."""
        if _is_float_array(a):
            t = self.find(a)
            return t if t is not None else self.set(a, None)
        if isinstance(a, _array) or a is None:
            return a
        if getattr(a, "_struct", None) is not None:
            return self.struct_twin(a)
        if isinstance(a, (float, np.floating)) or (isinstance(a, wt.scalar_base) and wt.is_float(type(a))):
            return type(a)(0) if not isinstance(a, float) else 0.0
        if hasattr(a, "_wp_scalar_type_") and wt.is_float(a._wp_scalar_type_):
            return type(a)()  # a vector, matrix, quaternion or transform value: zero
        return a

    def struct_twin(self, s):
        """A struct of the same type holding the tangents of ``s``'s fields."""
        out = s._struct()
        for name in s._struct.vars:
            setattr(out, name, self.twin(getattr(s, name)))
        return out

    # ------------------------------------------------------------------ operations
    def launch(self, kernel, params, **options):
        from .kernel import tangent_kernel
        from .runtime.launch import launch

        twins = [self.twin(p) for p in params]
        with _paused():
            return launch(tangent_kernel(kernel), inputs=[*params, *twins], **options)

    def copy(self, dest, src, dest_offset, src_offset, count, stream):
        """The tangent side of ``wp.copy(dest, src, ...)``."""
        from .array_constructors import copy

        if not (_is_float_array(dest) and _is_float_array(src)):
            return
        with _paused():
            copy(self.twin(dest), self.twin(src), dest_offset, src_offset, count, stream)

    def fill(self, a):
        """The tangent side of ``a.zero_()`` / ``a.fill_(value)``: a constant has none."""
        if _is_float_array(a):
            t = self.find(a)
            if t is not None:
                with _paused():
                    t.zero_()


@contextlib.contextmanager
def _paused():
    recording.forward_modes.append(None)
    try:
        yield
    finally:
        recording.forward_modes.pop()


@contextlib.contextmanager
def _active(fm: ForwardMode):
    recording.forward_modes.append(fm)
    try:
        yield fm
    finally:
        recording.forward_modes.pop()


def _check_arrays(what, arrays, like=None):
    arrays = list(arrays)
    for k, a in enumerate(arrays):
        if not _is_float_array(a):
            raise TypeError(f"wp.autograd.{what}: expected wp.arrays of floats, got {type(a).__name__} at position {k}")
        if like is not None:
            ref = like[k]
            if tuple(a.shape) != tuple(ref.shape) or a.dtype is not ref.dtype:
                raise ValueError(
                    f"wp.autograd.{what}: tangent {k} has shape {tuple(a.shape)} and dtype {wt.type_repr(a.dtype)}; "
                    f"its input has shape {tuple(ref.shape)} and dtype {wt.type_repr(ref.dtype)}"
                )
    return arrays


def jvp(fn, inputs, tangents, outputs) -> list:
    """Jacobian-vector product in one forward-mode pass.

    ``fn()`` launches kernels that read the arrays ``inputs`` and write the arrays ``outputs``.
    ``jvp`` runs it once, each kernel as its tangent kernel, and returns ``J @ t``: the
    derivative of each output in the direction of the input tangents. No tape is recorded and no
    backward pass runs; the outputs hold ``fn``'s results afterwards, as after ``fn()``.

    Args:
        fn: a callable taking no arguments.
        inputs: the float arrays the tangents belong to.
        tangents: one array per input, of its shape and dtype (not modified).
        outputs: the float arrays whose tangents are wanted.

    Returns:
        A list with one new array per output: its tangent.

    Raises:
        TypeError, ValueError: the arrays do not fit.
        NotImplementedError: ``fn`` uses something forward mode has no rule for (named).

    Example:
        ``dy, = wp.autograd.jvp(lambda: wp.launch(k, n, inputs=[x], outputs=[y]), [x], [v], [y])``
    """
    inputs = _check_arrays("jvp", inputs)
    tangents = _check_arrays("jvp", tangents, inputs)
    outputs = _check_arrays("jvp", outputs)
    fm = ForwardMode()
    for x, t in zip(inputs, tangents):
        fm.set(x, t)
    for y in outputs:
        if fm.find(y) is None:
            fm.set(y, None)
    with _active(fm):
        fn()
    return [_owned(fm.twin(y)) for y in outputs]


def hvp(fn, inputs, vectors, loss) -> list:
    """Hessian-vector product: ``H @ v`` of a scalar loss, by reverse mode over forward mode.

    ``fn()`` computes the one-element array ``loss`` from the arrays ``inputs`` by launching
    kernels. ``hvp`` runs it once in forward mode (the tangent of ``loss`` is ``grad L . v``),
    recorded on a private tape, then back-propagates from that tangent. As with ``wp.Tape``,
    gradients flow through the arrays that have ``requires_grad=True``; the inputs are given
    gradient buffers for the call and keep the ones they had.

    Args:
        fn: a callable taking no arguments.
        inputs: the float arrays to differentiate with respect to.
        vectors: one array per input (``v``), of its shape and dtype.
        loss: the one-element float array ``fn`` writes.

    Returns:
        A list with one new array per input: its block of ``H @ v``.

    Raises:
        NotImplementedError: a builtin ``fn`` uses has no second derivative (named), or forward
            mode has no rule for something ``fn`` does.
    """
    from .array_constructors import ones
    from .tape import Tape

    inputs = _check_arrays("hvp", inputs)
    vectors = _check_arrays("hvp", vectors, inputs)
    (loss,) = _check_arrays("hvp", [loss])
    if loss.size != 1:
        raise ValueError(f"wp.autograd.hvp: loss must have one element, it has {loss.size}")
    saved = [(x, x.requires_grad, None if x.grad is None else x.grad.numpy().copy()) for x in inputs]
    fm = ForwardMode(requires_grad=True)
    try:
        for x in inputs:
            x.requires_grad = True
            x.grad.zero_()
        for x, v in zip(inputs, vectors):
            fm.set(x, v)
        loss_dot = fm.find(loss) or fm.set(loss, None)
        tape = Tape()
        with tape, _active(fm):
            fn()
        seed = ones(loss.shape, dtype=loss.dtype, device=loss.device)
        tape.backward(grads={loss_dot: seed})
        result = [_owned(x.grad) for x in inputs]
        tape.reset()
    finally:
        for x, had, grad in saved:
            if grad is not None:
                x.grad.assign(grad)
            elif x.grad is not None:
                x.grad.zero_()
            x.requires_grad = had
    return result


def _owned(a):
    """A copy of ``a`` that owns its memory (tangents of views point into other arrays)."""
    from .array_constructors import clone

    with _paused():
        return clone(a, requires_grad=False)
