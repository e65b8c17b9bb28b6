"""Stochastic gradient descent with momentum, dampening, weight decay and Nesterov momentum."""

from __future__ import annotations

import typing

from ..kernel import kernel
from ..runtime.launch import launch
from ..codegen.intrinsics import tid
from ..array import array
from ._common import flat_grads, flat_view, scalar_info, state_for


@kernel
def _sgd_step(
    g: array(dtype=typing.Any),
    b: array(dtype=typing.Any),
    lr: typing.Any,
    momentum: typing.Any,
    dampening: typing.Any,
    weight_decay: typing.Any,
    nesterov: int,
    first: int,
    use_momentum: int,
    params: array(dtype=typing.Any),
):
    i = tid()
    x = params[i]
    d = g[i] + weight_decay * x
    if use_momentum != 0:
        if first != 0:
            b[i] = d
        else:
            b[i] = momentum * b[i] + (1.0 - dampening) * d
        if nesterov != 0:
            d = d + momentum * b[i]
        else:
            d = b[i]
    params[i] = x - lr * d


class SGD:
    """Stochastic Gradient Descent optimizer with optional momentum (as ``warp.optim.SGD``).

    Each ``step(grad)`` updates every parameter ``p`` with its gradient ``g``::

        g = g + weight_decay * p
        if momentum != 0:
            b = g                                   (first step)
            b = momentum * b + (1 - dampening) * g  (later steps)
            g = g + momentum * b if nesterov else b
        p = p - lr * g

    Args:
        params: List of arrays to optimise (float16/32/64 scalars, vectors or matrices),
            or None to set them later with :meth:`set_params`.
        lr: Learning rate.
        momentum: Momentum factor (0 disables momentum).
        dampening: Dampening of the momentum.
        weight_decay: L2 penalty added to the gradient.
        nesterov: Use Nesterov momentum.
    """

    def __init__(self, params=None, lr=0.001, momentum=0.0, dampening=0.0, weight_decay=0.0, nesterov=False):
        self.b = []
        self.params = []
        self._flat = []
        self.lr = lr
        self.momentum = momentum
        self.dampening = dampening
        self.weight_decay = weight_decay
        self.nesterov = nesterov
        self.t = 0
        self.set_params(params)

    def set_params(self, params):
        """Set the arrays to optimise. Momentum buffers that already fit a parameter (same
        position, size, type and device) are kept with their state; the others are new and zeroed
        (and then the step count restarts)."""
        self.params = list(params) if params is not None else []
        self._flat = [flat_view(p) for p in self.params]
        old = getattr(self, "b", [])
        self.b = [state_for(p, old[k] if k < len(old) else None) for k, p in enumerate(self.params)]
        if len(old) != len(self.b) or any(a is not b for a, b in zip(old, self.b)):
            self.t = 0

    def reset_internal_state(self):
        """Zero the momentum buffers and the step counter."""
        for b in self.b:
            b.zero_()
        self.t = 0

    def step(self, grad):
        """Apply one step; ``grad`` is a list of arrays matching ``params``."""
        grads = flat_grads(grad, self.params)
        for p, fp, g, b in zip(self.params, self._flat, grads, self.b):
            if g is None:
                continue
            SGD.step_detail(g, b, self.lr, self.momentum, self.dampening, self.weight_decay, self.nesterov, self.t, fp)
        self.t += 1

    @staticmethod
    def step_detail(g, b, lr, momentum, dampening, weight_decay, nesterov, t, params):
        """One SGD step on 1-d scalar arrays ``params`` / ``g`` / ``b`` (``t`` = steps done so far)."""
        s, _ = scalar_info(params)
        launch(
            _sgd_step,
            dim=params.shape[0],
            inputs=[g, b, s(lr), s(momentum), s(dampening), s(weight_decay), int(bool(nesterov)), int(t == 0),
                    int(momentum != 0.0), params],
            device=params.device,
        )
