"""Adam: adaptive moment estimation with bias correction."""

from __future__ import annotations

import math
import typing

from ..kernel import kernel
from ..runtime.launch import launch
from ..codegen.intrinsics import tid
from ..array import array
from ..builtins.scalar import sqrt
from ._common import flat_grads, flat_view, scalar_info, state_for


@kernel
def _adam_step(
    g: array(dtype=typing.Any),
    m: array(dtype=typing.Any),
    v: array(dtype=typing.Any),
    lr: typing.Any,
    beta1: typing.Any,
    beta2: typing.Any,
    c1: typing.Any,
    c2: typing.Any,
    eps: typing.Any,
    params: array(dtype=typing.Any),
):
    i = tid()
    gi = g[i]
    mi = beta1 * m[i] + (1.0 - beta1) * gi
    vi = beta2 * v[i] + (1.0 - beta2) * gi * gi
    m[i] = mi
    v[i] = vi
    params[i] = params[i] - lr * (mi * c1) / (sqrt(vi * c2) + eps)


class Adam:
    """Adaptive Moment Estimation optimizer (as ``warp.optim.Adam``).

    Each ``step(grad)`` (step number ``t`` = 1, 2, ...) updates every component::

        m = beta1 * m + (1 - beta1) * g
        v = beta2 * v + (1 - beta2) * g * g
        p = p - lr * (m / (1 - beta1**t)) / (sqrt(v / (1 - beta2**t)) + eps)

    Args:
        params: List of arrays to optimise (float16/32/64 scalars, vectors or matrices),
            or None to set them later with :meth:`set_params`.
        lr: Learning rate.
        betas: ``(beta1, beta2)``, decay rates of the first and second moments.
        eps: Added to the denominator for numerical stability.

    The moments are kept in the parameters' scalar type (float16 parameters get float16 moments).
    """

    def __init__(self, params=None, lr=0.001, betas=(0.9, 0.999), eps=1e-08):
        self.m = []
        self.v = []
        self.params = []
        self._flat = []
        self.lr = lr
        self.beta1 = betas[0]
        self.beta2 = betas[1]
        self.eps = eps
        self.t = 0
        self.set_params(params)

    def set_params(self, params):
        """Set the arrays to optimise. Moment buffers that already fit a parameter (same position,
        size, type and device) are kept with their state, as in Warp; the others are new and zeroed
        (and then the step count restarts)."""
        self.params = list(params) if params is not None else []
        self._flat = [flat_view(p) for p in self.params]
        old_m, old_v = self.m, self.v
        self.m = [state_for(p, old_m[k] if k < len(old_m) else None) for k, p in enumerate(self.params)]
        self.v = [state_for(p, old_v[k] if k < len(old_v) else None) for k, p in enumerate(self.params)]
        kept = len(old_m) == len(self.m) and all(a is b for a, b in zip(old_m + old_v, self.m + self.v))
        if not kept:
            self.t = 0

    def reset_internal_state(self):
        """Zero the moment buffers and the step counter."""
        for a in self.m + self.v:
            a.zero_()
        self.t = 0

    def step(self, grad):
        """Apply one step; ``grad`` is a list of arrays matching ``params``."""
        grads = flat_grads(grad, self.params)
        for fp, g, m, v in zip(self._flat, grads, self.m, self.v):
            if g is None:
                continue
            Adam.step_detail(g, m, v, self.lr, self.beta1, self.beta2, self.t, self.eps, fp)
        self.t += 1

    @staticmethod
    def step_detail(g, m, v, lr, beta1, beta2, t, eps, params):
        """One Adam step on 1-d scalar arrays (``t`` = steps done before this one)."""
        s, _ = scalar_info(params)
        c1 = 1.0 / (1.0 - math.pow(beta1, t + 1.0))
        c2 = 1.0 / (1.0 - math.pow(beta2, t + 1.0))
        launch(
            _adam_step,
            dim=params.shape[0],
            inputs=[g, m, v, s(lr), s(beta1), s(beta2), s(c1), s(c2), s(eps), params],
            device=params.device,
        )
