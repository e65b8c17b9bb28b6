"""wp.checkpoint: a checkpointed segment keeps only its arguments and outputs on the tape and runs
its forward again in backward. Gradients must equal the plain tape's (and finite differences),
the segment's internal arrays must be freed after the forward pass, and checkpoints nest."""

import gc
import weakref

import numpy as np
import pytest

import weft as wp


@wp.kernel
def k_step(x: wp.array(dtype=float), v: wp.array(dtype=float), dt: float, x_out: wp.array(dtype=float),
           v_out: wp.array(dtype=float)):
    i = wp.tid()
    a = -wp.sin(x[i]) - 0.1 * v[i] * wp.abs(v[i])  # a pendulum with quadratic drag
    v_new = v[i] + dt * a
    v_out[i] = v_new
    x_out[i] = x[i] + dt * v_new


@wp.kernel
def k_loss(x: wp.array(dtype=float), v: wp.array(dtype=float), loss: wp.array(dtype=float)):
    i = wp.tid()
    wp.atomic_add(loss, 0, x[i] * x[i] + 0.5 * v[i] * v[i])


DT = 0.05
allocated = []  # weak references to the arrays steps allocate (the memory test)


def step(x, v):
    """One step allocating its new state (as a rollout that keeps every state would)."""
    x_out = wp.empty_like(x, requires_grad=True)
    v_out = wp.empty_like(v, requires_grad=True)
    allocated.append(weakref.ref(x_out))
    wp.launch(k_step, dim=x.shape[0], inputs=[x, v, DT], outputs=[x_out, v_out])
    return x_out, v_out


def segment(x, v, n):
    for _ in range(n):
        x, v = step(x, v)
    return x, v


def nested_segment(x, v, n, inner):
    for _ in range(n // inner):
        x, v = wp.checkpoint(segment, x, v, inner)
    return x, v


def rollout(x0, v0, steps, runner):
    """Loss and gradients of the initial state after ``steps`` steps, the steps run by ``runner``."""
    x = wp.array(x0, dtype=float, requires_grad=True)
    v = wp.array(v0, dtype=float, requires_grad=True)
    loss = wp.zeros(1, dtype=float, requires_grad=True)
    tape = wp.Tape()
    with tape:
        xs, vs = runner(x, v, steps)
        wp.launch(k_loss, dim=x.shape[0], inputs=[xs, vs, loss])
    tape.backward(loss)
    return loss.numpy()[0], x.grad.numpy().copy(), v.grad.numpy().copy(), tape


def plain(x, v, steps):
    return segment(x, v, steps)


def per_step(x, v, steps):
    for _ in range(steps):
        x, v = wp.checkpoint(step, x, v)
    return x, v


def in_segments(x, v, steps, n=5):
    for _ in range(steps // n):
        x, v = wp.checkpoint(segment, x, v, n)
    return x, v


def nested(x, v, steps):
    for _ in range(steps // 10):
        x, v = wp.checkpoint(nested_segment, x, v, 10, 5)
    return x, v


RNG = np.random.default_rng(4)
X0 = RNG.uniform(-1.0, 1.0, 64).astype(np.float32)
V0 = RNG.uniform(-1.0, 1.0, 64).astype(np.float32)


@pytest.mark.parametrize("runner", [per_step, in_segments, nested])
def test_checkpointed_gradients_equal_the_plain_tape(runner):
    loss, gx, gv, _ = rollout(X0, V0, 40, plain)
    loss_c, gx_c, gv_c, _ = rollout(X0, V0, 40, runner)
    np.testing.assert_allclose(loss_c, loss, rtol=1e-6)
    np.testing.assert_allclose(gx_c, gx, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(gv_c, gv, rtol=1e-5, atol=1e-6)
    assert np.abs(gx).max() > 0.1  # the gradients are not trivially zero


def test_checkpointed_gradient_matches_finite_differences():
    x0, v0 = X0[:4].astype(np.float64), V0[:4].astype(np.float64)
    _, gx, _, _ = rollout(x0.astype(np.float32), v0.astype(np.float32), 20, in_segments)

    def loss_of(x):
        x, v = x.copy(), v0.copy()
        for _ in range(20):
            a = -np.sin(x) - 0.1 * v * np.abs(v)
            v = v + DT * a
            x = x + DT * v
        return (x * x + 0.5 * v * v).sum()

    eps = 1e-6
    fd = [(loss_of(x0 + eps * e) - loss_of(x0 - eps * e)) / (2 * eps) for e in np.eye(4)]
    np.testing.assert_allclose(gx, fd, rtol=1e-3, atol=1e-4)


def test_internal_arrays_are_freed_after_the_forward_pass():
    allocated.clear()
    x = wp.array(X0, dtype=float, requires_grad=True)
    v = wp.array(V0, dtype=float, requires_grad=True)
    tape = wp.Tape()
    with tape:
        xs, vs = wp.checkpoint(segment, x, v, 10)
    gc.collect()
    alive = [r for r in allocated if r() is not None]
    assert len(allocated) == 10 and len(alive) == 1 and alive[0]() is xs  # only the output is kept
    allocated.clear()
    xs.grad.fill_(1.0)
    tape.backward()
    assert len(allocated) == 10  # the backward pass ran the segment again
    gc.collect()
    assert sum(r() is not None for r in allocated) == 0  # and let its arrays go
    assert np.abs(x.grad.numpy()).max() > 0.0


@wp.kernel
def k_scale_into(x: wp.array(dtype=float), s: float, y: wp.array(dtype=float)):
    i = wp.tid()
    y[i] = s * x[i] * x[i]


@wp.struct
class Pair:
    a: wp.array(dtype=float)
    b: wp.array(dtype=float)


def write_into(pair, out):
    """Writes an output passed in (returns nothing), reading the input through a struct."""
    wp.launch(k_scale_into, dim=pair.a.shape[0], inputs=[pair.a, 3.0, pair.b])
    wp.launch(k_scale_into, dim=pair.b.shape[0], inputs=[pair.b, 1.0, out])


def test_outputs_written_into_arguments_and_struct_inputs():
    a = wp.array([1.0, 2.0, 0.5], dtype=float, requires_grad=True)
    b = wp.zeros(3, dtype=float, requires_grad=True)
    out = wp.zeros(3, dtype=float, requires_grad=True)
    tape = wp.Tape()
    with tape:
        result = wp.checkpoint(write_into, Pair(a=a, b=b), out)
    assert result is None
    np.testing.assert_allclose(out.numpy(), (3.0 * a.numpy() ** 2) ** 2, rtol=1e-6)
    tape.backward(grads={out: np.ones(3, dtype=np.float32)})
    # out = 9 a^4: d out / d a = 36 a^3
    np.testing.assert_allclose(a.grad.numpy(), 36.0 * a.numpy() ** 3, rtol=1e-5)
    tape.zero()
    assert not a.grad.numpy().any()


def test_outside_a_tape_it_just_runs_and_a_bad_result_is_refused():
    x = wp.array(X0, dtype=float)
    v = wp.array(V0, dtype=float)
    xs, _ = wp.checkpoint(step, x, v)
    np.testing.assert_allclose(xs.numpy(), X0 + DT * (V0 + DT * (-np.sin(X0) - 0.1 * V0 * np.abs(V0))), rtol=1e-5)
    with wp.Tape(), pytest.raises(TypeError, match="must return an array"):
        wp.checkpoint(lambda: 42)


def test_a_second_backward_gives_the_same_gradients():
    x = wp.array(X0, dtype=float, requires_grad=True)
    v = wp.array(V0, dtype=float, requires_grad=True)
    loss = wp.zeros(1, dtype=float, requires_grad=True)
    tape = wp.Tape()
    with tape:
        xs, vs = in_segments(x, v, 10)
        wp.launch(k_loss, dim=64, inputs=[xs, vs, loss])
    tape.backward(loss)
    first = x.grad.numpy().copy()
    tape.zero()
    tape.backward(loss)
    np.testing.assert_array_equal(x.grad.numpy(), first)
