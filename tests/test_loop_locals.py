"""Variables first assigned inside a dynamic loop and read after it (codegen/control_flow.py,
``read_loop_local``): as in Warp, the read sees the last iteration's value; weft gives zero when the
loop never ran. The variable becomes loop-carried, so gradients through it are exact (checked
against central differences). A read after an enclosing loop still raises."""

import numpy as np
import pytest
from fd_check import run, tape_vs_fd

import weft as wp

F64 = wp.float64


@wp.kernel
def k_while_last(n: int, out: wp.array(dtype=float), out_v: wp.array(dtype=wp.vec3)):
    i = wp.tid()
    j = int(0)
    while j < n + i:
        p = wp.vec3(float(j), 1.0, 2.0)
        s = float(j) * 2.0
        j += 1
    out_v[i] = p
    out[i] = s


def test_while_loop_locals_hold_the_last_iteration():
    out = wp.zeros(3, dtype=float)
    out_v = wp.zeros(3, dtype=wp.vec3)
    wp.launch(k_while_last, dim=3, inputs=[2, out, out_v])
    np.testing.assert_array_equal(out.numpy(), [2.0, 4.0, 6.0])
    np.testing.assert_array_equal(out_v.numpy()[:, 0], [1.0, 2.0, 3.0])
    wp.launch(k_while_last, dim=3, inputs=[-1, out, out_v])  # threads 0 and 1 never loop: zeros
    np.testing.assert_array_equal(out_v.numpy(), [[0.0, 0.0, 0.0], [0.0, 0.0, 0.0], [0.0, 1.0, 2.0]])


@wp.kernel
def k_range_locals(x: wp.array(dtype=F64), y: wp.array(dtype=F64), n: int):
    i = wp.tid()
    for k in range(n):
        v = x[i] * F64(k + 1)
        w = wp.sin(v) * v
    y[i] = w + v * x[i]


def test_range_loop_locals_have_exact_gradients():
    rng = np.random.default_rng(4)
    x = rng.uniform(-1.0, 1.0, size=5)
    v = x * 3.0
    tape_vs_fd(k_range_locals, x, (5,), rng, extra=(3,), expected=np.sin(v) * v + v * x)


@wp.kernel
def k_rejection_sampling(seed: int, out: wp.array(dtype=wp.vec3)):
    i = wp.tid()
    state = wp.rand_init(seed, i)
    r = float(0.0)
    while r < 0.5 or r > 1.0:  # a point in the shell 0.5 <= |p| <= 1 of the cube [-1, 1]^3
        p = wp.vec3(wp.randf(state, -1.0, 1.0), wp.randf(state, -1.0, 1.0), wp.randf(state, -1.0, 1.0))
        r = wp.length(p)
    out[i] = p / r


def test_rejection_sampling_pattern():
    out = wp.zeros(256, dtype=wp.vec3)
    wp.launch(k_rejection_sampling, dim=256, inputs=[7, out])
    np.testing.assert_allclose(np.linalg.norm(out.numpy(), axis=1), 1.0, rtol=1e-6)


@wp.kernel
def k_nested(x: wp.array(dtype=F64), y: wp.array(dtype=F64), n: int):
    i = wp.tid()
    acc = F64(0.0)
    for a in range(n):
        for b in range(a):
            t = x[i] * F64(a + b)
        acc += t * t  # after the inner loop, inside the outer one: carried by the inner loop
    y[i] = acc


def test_read_after_an_inner_loop_inside_the_outer_one():
    rng = np.random.default_rng(5)
    x = rng.uniform(-1.0, 1.0, size=4)
    # a = 0: the inner loop never runs, t = 0; a >= 1: t = x (2a - 1)
    expected = sum((x * (2 * a - 1)) ** 2 for a in range(1, 4))
    tape_vs_fd(k_nested, x, (4,), rng, extra=(4,), expected=expected)


def test_read_after_the_enclosing_loop_still_raises():
    @wp.kernel
    def k_after_outer(x: wp.array(dtype=float), y: wp.array(dtype=float), n: int):
        i = wp.tid()
        for a in range(n):
            for b in range(n):
                t = x[i] * float(b)
        y[i] = t

    with pytest.raises(wp.WarpCodegenKeyError, match="'t' is only assigned inside the loop"):
        wp.launch(k_after_outer, dim=1, inputs=[wp.zeros(1, dtype=float), wp.zeros(1, dtype=float), 2])


@wp.kernel
def k_rebound(x: wp.array(dtype=F64), y: wp.array(dtype=F64), n: int):
    i = wp.tid()
    for k in range(n):
        v = x[i] + F64(k)
    u = v * F64(2.0)
    v = F64(1.0)  # rebound after the loop: later reads see the new value
    y[i] = u + v


def test_rebinding_after_the_loop():
    x = np.array([0.5, 1.5])
    np.testing.assert_allclose(run(k_rebound, x, (2,), extra=(3,)), (x + 2.0) * 2.0 + 1.0)
