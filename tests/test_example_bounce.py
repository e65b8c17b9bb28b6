"""The bouncing-ball example (weft/examples/bounce.py): its gradient matches finite differences
and a few gradient-descent steps bring the ball closer to the target."""

import numpy as np
import pytest

import weft as wp
from weft.examples import bounce


@pytest.fixture(scope="module")
def sim64():
    return bounce.BounceSim(dtype=wp.float64)


@pytest.mark.parametrize("v0", [(2.0, 1.0), (2.65, 1.55), (3.0, 2.0)])
def test_gradient_matches_central_differences(sim64, v0):
    v = wp.array(np.array(v0), dtype=wp.float64, requires_grad=True)
    loss, grad = sim64.loss_and_grad(v)
    assert np.isfinite(loss) and loss > 0.0
    h = 1e-6
    fd = np.array(
        [(sim64.eval_loss(np.add(v0, h * e)) - sim64.eval_loss(np.subtract(v0, h * e))) / (2 * h) for e in np.eye(2)]
    )
    np.testing.assert_allclose(grad, fd, rtol=1e-5, atol=1e-6 * max(1.0, np.abs(fd).max()))


def test_gradient_is_repeatable_and_tape_resets(sim64):
    # loss_and_grad zeroes and resets the tape: a second call gives the same gradient, not twice it
    v = wp.array(np.array([2.0, 1.0]), dtype=wp.float64, requires_grad=True)
    l1, g1 = sim64.loss_and_grad(v)
    v.grad.zero_()
    l2, g2 = sim64.loss_and_grad(v)
    assert l1 == l2
    np.testing.assert_array_equal(g1, g2)
    assert len(sim64.tape.launches) == 0


def test_float32_gradient_close_to_float64(sim64):
    v0 = np.array([2.0, 1.0])
    _, g64 = sim64.loss_and_grad(wp.array(v0, dtype=wp.float64, requires_grad=True))
    sim32 = bounce.BounceSim(dtype=wp.float32)
    _, g32 = sim32.loss_and_grad(wp.array(v0, dtype=wp.float32, requires_grad=True))
    np.testing.assert_allclose(g32, g64, rtol=2e-2, atol=2e-2 * np.abs(g64).max())


def test_one_forward_records_one_launch_per_step(sim64):
    v = wp.array(np.array([2.0, 1.0]), dtype=wp.float64, requires_grad=True)
    sim64.forward(v)
    try:
        n_step = sum(1 for rec in sim64.tape.launches if rec.kernel is sim64.kernels["step"])
        assert n_step == sim64.steps == 100
    finally:
        sim64.tape.reset()


def test_short_optimisation_reduces_loss():
    sim = bounce.BounceSim(dtype=wp.float32)
    _, losses, trajectories = bounce.optimize(sim, (2.0, 1.0), iters=6)
    assert len(losses) == 7 and sorted(trajectories) == list(range(7))
    assert losses[-1] < 0.05 * losses[0]
    assert all(b < a for a, b in zip(losses[1:], losses[2:]))  # monotone after the first big step
    end = trajectories[6][-1]
    assert np.linalg.norm(end - sim.target) < np.linalg.norm(trajectories[0][-1] - sim.target)


def test_main_writes_outputs(tmp_path, capsys):
    assert bounce.main(["--iters", "3", "--out", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert "output folder" in out and "loss" in out
    assert (tmp_path / "loss.txt").exists()
    assert len(np.loadtxt(tmp_path / "loss.txt")) == 4
    pytest.importorskip("matplotlib")
    assert (tmp_path / "bounce.png").stat().st_size > 10_000
