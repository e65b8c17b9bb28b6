"""Shared gradient check for kernels of the form ``k(x, y, *extra)`` over float64 arrays: the tape
gradient of sum(w * y) with respect to x against central finite differences."""

import numpy as np

import weft as wp

F64 = wp.float64


def central_differences(f, x, eps=1e-6):
    """Central differences of the scalar ``f(x)`` for every element of the float64 array ``x``
    (``f`` gets a perturbed copy)."""
    x = np.asarray(x, dtype=np.float64)
    g = np.zeros_like(x)
    for k in range(x.size):
        xp, xm = x.copy(), x.copy()
        xp.flat[k] += eps
        xm.flat[k] -= eps
        g.flat[k] = (f(xp) - f(xm)) / (2 * eps)
    return g


def run(kernel, x_np, y_shape, extra=(), dim=None):
    """Forward only: y(x) as a NumPy array."""
    x = wp.array(np.asarray(x_np, dtype=np.float64), dtype=F64)
    y = wp.zeros(y_shape, dtype=F64)
    wp.launch(kernel, dim=dim if dim is not None else x_np.shape, inputs=[x, y, *extra])
    return y.numpy().copy()


def tape_vs_fd(kernel, x_np, y_shape, rng, extra=(), dim=None, eps=1e-6, rtol=1e-6, atol=1e-8, expected=None, w=None):
    """Assert the tape gradient equals central differences (and, if given, that y equals
    ``expected``). ``w`` defaults to random weights from ``rng``. Returns (y, analytic gradient)."""
    x_np = np.asarray(x_np, dtype=np.float64)
    w = rng.uniform(0.5, 1.5, size=y_shape) if w is None else np.asarray(w, dtype=np.float64)
    x = wp.array(x_np, dtype=F64, requires_grad=True)
    y = wp.zeros(y_shape, dtype=F64, requires_grad=True)
    tape = wp.Tape()
    with tape:
        wp.launch(kernel, dim=dim if dim is not None else x_np.shape, inputs=[x, y, *extra])
    y_val = y.numpy().copy()
    if expected is not None:
        np.testing.assert_allclose(y_val, expected, rtol=1e-12, atol=1e-12)
    tape.backward(grads={y: w})
    analytic = x.grad.numpy().copy()
    numeric = np.zeros_like(x_np)
    for k in range(x_np.size):
        xp, xm = x_np.copy(), x_np.copy()
        xp.flat[k] += eps
        xm.flat[k] -= eps
        fp = np.sum(w * run(kernel, xp, y_shape, extra, dim))
        fm = np.sum(w * run(kernel, xm, y_shape, extra, dim))
        numeric.flat[k] = (fp - fm) / (2 * eps)
    np.testing.assert_allclose(analytic, numeric, rtol=rtol, atol=atol)
    return y_val, analytic
