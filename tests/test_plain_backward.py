"""Gradient adds of a kernel's reads into arrays it only reads (a stencil's neighbours): the CPU
backward pass of a share that owns its gradient memory (one thread, or private copies) runs a
body whose adds are plain, with no test of the thread context per add; other shares add through
the per-thread table. Reading an array's shape does not stop its gradient from accumulating.
Gradients must match a NumPy adjoint whatever the number of threads and the path taken."""

import numpy as np
import pytest

import weft as wp
from tests.threads import with_threads
from weft.codegen import access

pytestmark = pytest.mark.fixed_device("the CPU task loops and their accumulation paths")


@wp.kernel
def blur3(a: wp.array3d(dtype=float), b: wp.array3d(dtype=float), k: float):
    i, j, l = wp.tid()
    ni = a.shape[0]
    nl = a.shape[2]
    c = a[i, j, l]
    s = a[wp.max(i - 1, 0), j, l] + a[wp.min(i + 1, ni - 1), j, l]
    s += a[i, j, wp.max(l - 1, 0)] + a[i, j, wp.min(l + 1, nl - 1)]
    b[i, j, l] = c + k * (s - 4.0 * c)


@wp.kernel
def window1(x: wp.array(dtype=float), lo: int, y: wp.array(dtype=float)):
    i = wp.tid()
    n = x.shape[0]
    p = i + lo
    y[i] = 0.5 * x[wp.max(p - 1, 0)] + x[p] - 2.0 * x[wp.min(p + 1, n - 1)]


def blur3_adjoint(shape, k, seed):
    """d(sum(seed * blur3(a))) / da in float64."""
    ni, nj, nl = shape
    i, j, l = np.meshgrid(np.arange(ni), np.arange(nj), np.arange(nl), indexing="ij")
    grad = np.zeros(shape)
    seed = seed.astype(np.float64)
    np.add.at(grad, (i, j, l), (1.0 - 4.0 * k) * seed)
    for ii, ll in ((np.maximum(i - 1, 0), l), (np.minimum(i + 1, ni - 1), l), (i, np.maximum(l - 1, 0)), (i, np.minimum(l + 1, nl - 1))):
        np.add.at(grad, (ii, j, ll), k * seed)
    return grad


def test_shape_reads_leave_the_gradient_accumulating():
    facts = access.analyze(blur3.default_instance().ir)
    assert facts.accum_backward == ("a",)
    assert access.analyze(window1.default_instance().ir).accum_backward == ("x",)


@pytest.mark.parametrize("threads", [1, 2, 3])
@pytest.mark.parametrize("shape", [(9, 5, 37), (2, 3, 130)])
def test_stencil_gradient_matches_numpy(threads, shape):
    rng = np.random.default_rng(sum(shape))
    a = wp.array(rng.random(shape).astype(np.float32), requires_grad=True)
    b = wp.zeros(shape, dtype=float, requires_grad=True)
    tape = wp.Tape()
    with tape:
        wp.launch(blur3, dim=shape, inputs=[a, b, 0.15])
    seed = rng.standard_normal(shape).astype(np.float32)
    with_threads(threads, lambda: tape.backward(grads={b: wp.array(seed)}))
    np.testing.assert_allclose(a.grad.numpy(), blur3_adjoint(shape, 0.15, seed), rtol=1e-5, atol=1e-5)
    source = next(iter(blur3._instances.values())).binding.source
    assert "blur3" in source and "_backward_fast_plain_body" in source


@pytest.mark.parametrize("threads", [1, 2, 3])
@pytest.mark.parametrize("n, dim, lo", [(100_000, 1_000, 40_000), (5_003, 5_003, 0), (777, 700, 77)])
def test_window_gradient_matches_numpy(threads, n, dim, lo):
    # a launch much smaller than the array it reads adds through the per-thread table (no
    # private copies on several threads); the others through copies or one thread's plain adds
    rng = np.random.default_rng(n)
    x = wp.array(rng.random(n).astype(np.float32), requires_grad=True)
    y = wp.zeros(dim, dtype=float, requires_grad=True)
    tape = wp.Tape()
    with tape:
        wp.launch(window1, dim=dim, inputs=[x, lo], outputs=[y])
    seed = rng.standard_normal(dim).astype(np.float32)
    with_threads(threads, lambda: tape.backward(grads={y: wp.array(seed)}))
    p = np.arange(dim) + lo
    expected = np.zeros(n)
    s64 = seed.astype(np.float64)
    np.add.at(expected, np.maximum(p - 1, 0), 0.5 * s64)
    np.add.at(expected, p, s64)
    np.add.at(expected, np.minimum(p + 1, n - 1), -2.0 * s64)
    np.testing.assert_allclose(x.grad.numpy(), expected, rtol=1e-5, atol=1e-6)
