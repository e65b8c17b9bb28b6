"""The issue-4 examples: weft/examples/overwrite.py (an overwritten array corrupts a gradient; the
tape warns; two fixes) and weft/examples/struct_jacobian.py (a struct kernel's Jacobian, row by
row, against weft.autograd.jacobian, jacobian_fd and the analytic one); and the device handling of
weft/examples/torch_optimize.py (its CPU run is also tested in test_interop_torch.py)."""

import numpy as np
import pytest

import weft as wp
from weft.examples import overwrite, struct_jacobian, torch_optimize

WARNING = "is being written to but has already been read from in a previous launch"


@pytest.fixture(scope="module")
def overwrite_result(tmp_path_factory):
    return overwrite.run(n=3, out_dir=str(tmp_path_factory.mktemp("overwrite")), verbose=False)


def test_overwrite_warns_naming_the_array_argument_and_kernel(overwrite_result):
    text = overwrite_result["warning"]
    assert WARNING in text and "This may corrupt gradient computation in the backward pass." in text
    assert "argument a in kernel overwrite" in text
    assert overwrite_result["separate_warning"] == "" and overwrite_result["copy_warning"] == ""


def test_overwrite_gradient_flows_through_square_at_the_overwritten_values(overwrite_result):
    r = overwrite_result
    # square's adjoint ran (a.grad is not zero) but with a = c, so the gradient is 2 c, not 2 a0
    np.testing.assert_allclose(r["naive"], 2.0 * r["c"])
    assert not np.allclose(r["naive"], r["expected"])
    assert r["gradcheck_naive"] is False and "FAIL" in r["gradcheck_report"]


def test_overwrite_fixes_give_the_analytic_gradient(overwrite_result):
    np.testing.assert_allclose(overwrite_result["separate"], overwrite_result["expected"], rtol=1e-6)
    np.testing.assert_allclose(overwrite_result["copy"], overwrite_result["expected"], rtol=1e-6)


def test_overwrite_main_writes_the_tape_graph(tmp_path, capsys):
    assert overwrite.main(["--n", "2", "--out", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert WARNING in out and "both fixes match" in out
    dot = (tmp_path / "overwrite_tape.dot").read_text()
    assert "digraph tape" in dot and 'label="square' in dot and 'label="overwrite' in dot


def test_struct_jacobian_agrees_four_ways():
    r = struct_jacobian.run(n=4, verbose=False)
    assert r["errors"]["struct, row by row"] < 1e-12
    assert r["errors"]["weft.autograd.jacobian"] < 1e-12
    assert r["errors"]["weft.autograd.jacobian_fd"] < 1e-6
    j = r["methods"]["struct, row by row"]
    assert j["energy"].shape == (4, 12) and j["force"].shape == (12, 12)
    assert np.abs(j["force"]).max() > 0.1  # not trivially zero


def test_struct_jacobian_main_writes_the_plot(tmp_path, capsys):
    assert struct_jacobian.main(["--n", "3", "--out", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert "all four Jacobians agree to 1e-6: yes" in out
    try:
        import matplotlib  # noqa: F401
    except ImportError:
        assert "skipped the plot" in out
    else:
        assert (tmp_path / "jacobian.png").stat().st_size > 1000


# --- torch_optimize on the test's device (weft_device, see conftest.py) ----------------------------


def _torch_on(device):
    """torch, or a skip when the weft device is a GPU and this torch cannot put tensors there."""
    torch = pytest.importorskip("torch")
    if device.is_cuda and not torch.cuda.is_available():
        pytest.skip(f"torch {torch.__version__} has no CUDA: its tensors cannot live on weft's {device}")
    return torch


def _simulate_and_backward(device, v0_np, drag_value):
    """The weft side of torch_optimize's op: the simulation recorded on ``device`` and its adjoint
    for the seed "ones at the observed frames". Returns the positions and the gradients of v0 and drag."""
    v0 = wp.array(v0_np, dtype=wp.vec3, requires_grad=True, device=device)
    drag = wp.array([drag_value], dtype=wp.float32, requires_grad=True, device=device)
    tape = wp.Tape()
    with tape:
        x = torch_optimize.simulate(v0, drag)
    assert x.device == v0.device == wp.get_device(device)
    seed = np.zeros((torch_optimize.FRAMES + 1, len(v0_np), 3), dtype=np.float32)
    seed[list(torch_optimize.OBSERVED)] = 1.0
    tape.backward(grads={x: seed})
    return x.numpy(), v0.grad.numpy(), drag.grad.numpy()


def _reference_positions(v0, drag):
    """torch_optimize's simulation in float64 NumPy: positions (FRAMES + 1, n, 3)."""
    dt, gravity = torch_optimize.DT, np.array(torch_optimize.GRAVITY)
    x = [np.zeros_like(v0)]
    v = v0
    for _ in range(torch_optimize.FRAMES):
        v = v + (gravity - drag * np.linalg.norm(v, axis=-1, keepdims=True) * v) * dt
        x.append(x[-1] + v * dt)
    return np.stack(x)


def test_torch_optimize_simulation_runs_where_its_parameters_live(weft_device):
    # no torch needed: the arrays and launches follow the parameters' device; positions and the
    # adjoint match a float64 NumPy simulation and its central differences
    v0_np = np.random.default_rng(3).uniform(-3.0, 5.0, size=(5, 3))
    x, g_v0, g_drag = _simulate_and_backward(weft_device, v0_np, 0.15)
    np.testing.assert_allclose(x, _reference_positions(v0_np, 0.15), rtol=1e-4, atol=1e-5)

    def seeded(v0, drag):  # what the seed of _simulate_and_backward sums: the observed positions
        return _reference_positions(v0, drag)[list(torch_optimize.OBSERVED)].sum(axis=(0, 2))  # per particle

    h = 1e-6
    fd_v0 = np.stack([(seeded(v0_np + h * e, 0.15) - seeded(v0_np - h * e, 0.15)) / (2 * h) for e in np.eye(3)], 1)
    fd_drag = (seeded(v0_np, 0.15 + h) - seeded(v0_np, 0.15 - h)).sum() / (2 * h)
    np.testing.assert_allclose(g_v0, fd_v0, rtol=1e-3, atol=1e-4)
    np.testing.assert_allclose(g_drag[0], fd_drag, rtol=1e-3)


def test_torch_optimize_picks_the_matching_torch_device(weft_device):
    expected = "cpu" if weft_device.is_cpu else f"cuda:{weft_device.ordinal}"
    assert torch_optimize.torch_device(weft_device) == expected
    assert torch_optimize.torch_device(weft_device.alias) == expected
    assert torch_optimize.torch_device() == expected  # None: the default device, the test's
    assert torch_optimize.torch_device("cpu") == "cpu"


def test_torch_optimize_on_the_device_matches_cpu(weft_device):
    torch = _torch_on(weft_device)
    observed, v0, drag, true_v0, _ = torch_optimize.make_problem(n=4, device=weft_device)
    for t in (observed, v0, drag, true_v0):
        assert t.device == torch.device(torch_optimize.torch_device(weft_device))
    losses, v0_error, fitted_drag = torch_optimize.optimize(iters=8, device=weft_device)
    assert losses[-1] < 0.2 * losses[0] and np.isfinite(v0_error) and fitted_drag >= 0.0
    if not weft_device.is_cpu:
        losses_cpu, _, drag_cpu = torch_optimize.optimize(iters=8, device="cpu")
        np.testing.assert_allclose(losses, losses_cpu, rtol=1e-3)
        assert fitted_drag == pytest.approx(drag_cpu, rel=1e-3, abs=1e-5)


def test_torch_optimize_main_with_device(capsys, weft_device):
    torch = pytest.importorskip("torch")
    device = weft_device.alias
    status = torch_optimize.main(["--iters", "6", "--device", device])
    out = capsys.readouterr().out
    if weft_device.is_cuda and not torch.cuda.is_available():  # says so instead of failing inside torch
        assert status == 1 and f"running on {device} needs a CUDA build of PyTorch" in out
        return
    assert status == 0
    assert f"torch_optimize on {device} ({weft_device.name}; torch device {device})" in out
    assert f"optimised on {device} in" in out
    first = float(out.split("iter    0  loss ")[1].split()[0])
    last = float(out.split(" -> ")[1].split(";")[0])
    assert last < 0.5 * first
