"""A second tape.backward() over the same arrays and gradients replays prepared adjoint launches
(tape._adjoint_cmds); anything that changes the gradients' identity repacks them."""

import numpy as np
import pytest

import weft as wp


@wp.kernel
def k_square(x: wp.array(dtype=float), k: float, y: wp.array(dtype=float)):
    i = wp.tid()
    y[i] = k * x[i] * x[i]


@wp.kernel
def k_sum(y: wp.array(dtype=float), loss: wp.array(dtype=float)):
    i = wp.tid()
    wp.atomic_add(loss, 0, y[i])


@wp.kernel
def k_shift(x: wp.array(dtype=wp.vec3), d: wp.vec3, y: wp.array(dtype=float)):
    i = wp.tid()
    y[i] = wp.dot(x[i] + d, x[i] + d)


def _taped(xs):
    x = wp.array(xs, dtype=float, requires_grad=True)
    y = wp.zeros(len(xs), dtype=float, requires_grad=True)
    loss = wp.zeros(1, dtype=float, requires_grad=True)
    tape = wp.Tape()
    with tape:
        wp.launch(k_square, dim=len(xs), inputs=[x, 3.0, y])
        wp.launch(k_sum, dim=len(xs), inputs=[y], outputs=[loss])
    return tape, x, loss


def test_repeated_backward_replays_and_matches():
    xs = np.linspace(-1.0, 2.0, 50, dtype=np.float32)
    tape, x, loss = _taped(xs)
    tape.backward(loss)
    first = x.grad.numpy().copy()
    np.testing.assert_allclose(first, 6.0 * xs, rtol=1e-6)
    assert all(cmd[1] is not None for cmd in tape._adjoint_cmds.values())
    tape.backward(loss)  # gradients accumulate, as in Warp
    np.testing.assert_allclose(x.grad.numpy(), 2 * first, rtol=1e-6)
    tape.zero()
    tape.backward(loss)
    np.testing.assert_allclose(x.grad.numpy(), first, rtol=1e-6)


def test_new_gradient_array_is_used_after_replacement():
    xs = np.linspace(0.5, 1.5, 20, dtype=np.float32)
    tape, x, loss = _taped(xs)
    tape.backward(loss)
    old = x.grad
    x.grad = wp.zeros_like(old)
    tape.zero()
    tape.backward(loss)
    np.testing.assert_allclose(x.grad.numpy(), 6.0 * xs, rtol=1e-6)
    assert x.grad is not old


def test_composite_value_arguments_replay_until_changed_in_place():
    xs = np.arange(12, dtype=np.float32).reshape(4, 3) / 10.0
    x = wp.array(xs, dtype=wp.vec3, requires_grad=True)
    y = wp.zeros(4, dtype=float, requires_grad=True)
    d = wp.vec3(1.0, 0.0, 0.0)
    tape = wp.Tape()
    with tape:
        wp.launch(k_shift, dim=4, inputs=[x, d, y])
    seed = {y: np.ones(4, dtype=np.float32)}
    tape.backward(grads=seed)
    first = next(iter(tape._adjoint_cmds.values()))[1]
    assert first is not None  # a vector argument no longer forces a repack per backward
    expected = 2.0 * (xs + np.array([1.0, 0.0, 0.0], dtype=np.float32))
    np.testing.assert_allclose(x.grad.numpy(), expected, rtol=1e-6)
    x.grad.zero_()
    tape.backward(grads=seed)
    assert next(iter(tape._adjoint_cmds.values()))[1] is first
    np.testing.assert_allclose(x.grad.numpy(), expected, rtol=1e-6)
    # changed in place: the prepared launch (which packed the old value) is not reused
    d[1] = 2.0
    x.grad.zero_()
    tape.backward(grads=seed)
    assert next(iter(tape._adjoint_cmds.values()))[1] is not first
    expected = 2.0 * (xs + np.array([1.0, 2.0, 0.0], dtype=np.float32))
    np.testing.assert_allclose(x.grad.numpy(), expected, rtol=1e-6)


def test_reset_forgets_prepared_launches():
    tape, x, loss = _taped(np.ones(8, dtype=np.float32))
    tape.backward(loss)
    assert tape._adjoint_cmds
    tape.reset()
    assert tape._adjoint_cmds == {}


def test_tapes_do_not_nest():
    """As in Warp: a tape entered while another records raises, instead of the outer tape silently
    missing the inner one's launches; the outer tape still works afterwards."""
    outer = wp.Tape()
    with outer:
        with pytest.raises(RuntimeError, match="already recording"):
            with wp.Tape():
                pass
    with wp.Tape():  # nothing is left recording
        pass
