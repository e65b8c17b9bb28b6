"""Loop checkpoints (native/loop_stack.h) hold short loops inline and grow on the heap for long
ones: gradients must be exact on both sides of that boundary, for scalar and composite state."""

import numpy as np
import pytest

import weft as wp


@wp.kernel
def k_power(x: wp.array(dtype=float), n: int, y: wp.array(dtype=float)):
    i = wp.tid()
    s = float(1.0)
    for _ in range(n):
        s = s * x[i]
    y[i] = s


@wp.kernel
def k_rotate(v: wp.array(dtype=wp.vec3), n: int, y: wp.array(dtype=float)):
    i = wp.tid()
    p = v[i]
    for _ in range(n):
        p = wp.vec3(p[1], p[2], p[0]) * 0.999 + wp.vec3(0.001, 0.0, 0.0)
    y[i] = wp.dot(p, p)


@pytest.mark.parametrize("n", [3, 127, 128, 129, 1000])  # 128 floats fit inline
def test_scalar_checkpoints_short_and_long(n):
    xs = np.linspace(0.99, 1.001, 16, dtype=np.float32)
    x = wp.array(xs, dtype=float, requires_grad=True)
    y = wp.zeros(16, dtype=float, requires_grad=True)
    tape = wp.Tape()
    with tape:
        wp.launch(k_power, dim=16, inputs=[x, n, y])
    tape.backward(grads={y: np.ones(16, dtype=np.float32)})
    x64 = xs.astype(np.float64)
    np.testing.assert_allclose(y.numpy(), x64**n, rtol=2e-4)
    np.testing.assert_allclose(x.grad.numpy(), n * x64 ** (n - 1), rtol=2e-3)


@pytest.mark.parametrize("n", [5, 300])  # 42 vec3 fit inline
def test_vector_checkpoints_match_finite_differences(n):
    rng = np.random.default_rng(3)
    vs = rng.uniform(-1.0, 1.0, (8, 3))

    def loss_of(values):
        v = wp.array(values, dtype=wp.vec3)
        y = wp.zeros(8, dtype=float)
        wp.launch(k_rotate, dim=8, inputs=[v, n, y])
        return y.numpy().astype(np.float64).sum()

    v = wp.array(vs.astype(np.float32), dtype=wp.vec3, requires_grad=True)
    y = wp.zeros(8, dtype=float, requires_grad=True)
    tape = wp.Tape()
    with tape:
        wp.launch(k_rotate, dim=8, inputs=[v, n, y])
    tape.backward(grads={y: np.ones(8, dtype=np.float32)})
    h = 1e-2
    fd = np.zeros_like(vs)
    for k in range(8):
        for c in range(3):
            up, down = vs.copy(), vs.copy()
            up[k, c] += h
            down[k, c] -= h
            fd[k, c] = (loss_of(up.astype(np.float32)) - loss_of(down.astype(np.float32))) / (2 * h)
    np.testing.assert_allclose(v.grad.numpy(), fd, rtol=2e-2, atol=2e-3)


def test_out_of_memory_error_is_reported_as_memory_error():
    from weft.runtime import launch as launch_mod

    inst = k_power.default_instance()
    ctx = launch_mod.launch_context_t()
    ctx.has_error = 1
    ctx.error.code = 3  # what loop_stack::grow records when the heap is exhausted
    ctx.error.loc = -1
    ctx.error.index[0] = 1 << 40
    err = launch_mod.kernel_error(inst, ctx)
    assert isinstance(err, MemoryError)
    assert "k_power" in str(err) and str(1 << 40) in str(err)
