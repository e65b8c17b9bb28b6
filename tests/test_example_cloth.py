"""The cloth example (weft/examples/cloth.py) on a small 8 x 8 cloth: the simulation is sane
(finite, stays outside the sphere, loses energy), its gradient matches finite differences, and
a gradient step improves the throw, on every device the suite runs on (``weft_device``, see
conftest.py), with the same numbers as on the CPU."""

import numpy as np
import pytest

import weft as wp
from weft.examples import cloth

N = 8
FRAMES = 60  # 1 s: the cloth falls (~0.3 s), hits the sphere and drapes over it
V0 = (0.3, -0.2, 0.5)


@pytest.fixture(scope="module")
def cache():
    """Simulations and their results, built once per device for this module ((name, alias) keys)."""
    return {}


@pytest.fixture
def sim64(cache, weft_device):
    """The float64 simulation on the test's device (given explicitly, not through the default)."""
    key = ("sim64", weft_device.alias)
    if key not in cache:
        cache[key] = cloth.ClothSim(dtype=wp.float64, n=N, frames=FRAMES, device=weft_device)
    return cache[key]


@pytest.fixture
def run64(cache, sim64, weft_device):
    """Loss, gradient and every sub-step's positions/velocities of one float64 simulation."""
    key = ("run64", weft_device.alias)
    if key not in cache:
        loss, grad = sim64.loss_and_grad(V0)
        cache[key] = {
            "loss": loss,
            "grad": grad,
            "x": sim64.x.numpy().astype(np.float64),
            "v": sim64.v.numpy().astype(np.float64),
            "energy": sim64.energy(),
            "frames": sim64.positions(),
        }
    return cache[key]


def _arrays(sim) -> dict:
    """The weft arrays a simulation holds, its topology's included."""
    found = {name: a for name, a in vars(sim).items() if isinstance(a, wp.array)}
    for name in ("spring_i", "spring_j", "spring_rest", "spring_ke", "bend"):
        found[f"topology.{name}"] = getattr(sim.topology, name)
    return found


def test_simulation_is_finite_and_recorded_per_substep(sim64, run64):
    assert np.isfinite(run64["loss"]) and run64["loss"] > 0.0
    assert np.all(np.isfinite(run64["x"])) and np.all(np.isfinite(run64["v"]))
    assert run64["frames"].shape == (FRAMES + 1, N * N, 3)
    # row 0 is the flat cloth at the start position, moving with v0
    np.testing.assert_allclose(run64["x"][0], sim64.rest_np)
    np.testing.assert_allclose(run64["v"][0], np.tile(V0, (N * N, 1)))


def test_one_forward_records_three_launches_per_substep(sim64):
    sim64.forward(sim64.v0_array(V0))
    try:
        kinds = [rec.kernel for rec in sim64.tape.launches]
        k = sim64.kernels
        assert len(kinds) == 3 * sim64.num_substeps + 3
        for name in ("springs", "bending", "integrate"):
            assert kinds.count(k[name]) == sim64.num_substeps == FRAMES * sim64.substeps
    finally:
        sim64.tape.reset()


def test_cloth_lands_on_the_sphere_without_going_through(sim64, run64):
    x = run64["x"]
    dist = np.linalg.norm(x - sim64.sphere_center, axis=2)
    # soft contact: some penetration, but never deep (collision radius 0.4; ~1 cm at impact)
    assert dist.min() > sim64.sphere_radius - 0.03
    assert x[:, :, 2].min() > sim64.ground_z - 0.03
    # it did touch the sphere, and lies on it at the end: a good part of the particles rest on
    # its surface, among them one near the top, and the rest of the cloth hangs down around it
    assert dist.min() < sim64.sphere_radius
    final = run64["frames"][-1]
    on_sphere = np.abs(np.linalg.norm(final - sim64.sphere_center, axis=1) - sim64.sphere_radius) < 0.02
    assert on_sphere.sum() >= N * N // 8
    assert final[on_sphere, 2].max() > 0.35
    assert final[:, 2].min() < 0.0


def test_height_and_energy_decrease(sim64, run64):
    frames, energy = run64["frames"], run64["energy"]
    height = frames[:, :, 2].mean(axis=1)
    assert height[-1] < height[0] - 0.3
    # the total (kinetic + gravity + springs + bending) energy never grows by more than the
    # penalty energy stored in the contact, and most of it is dissipated by the end
    assert energy.max() <= energy[0] * 1.01
    assert energy[-1] < energy[0] - 0.5 * (energy[0] - energy.min())
    # the cloth slows down once it lies on the sphere
    speed = np.linalg.norm(run64["v"][:: sim64.substeps], axis=2).mean(axis=1)
    assert speed[-1] < 0.5 * speed.max()


def test_gradient_matches_central_differences(sim64, run64):
    grad = run64["grad"]
    h = 1e-6
    fd = np.array(
        [(sim64.eval_loss(np.add(V0, h * e)) - sim64.eval_loss(np.subtract(V0, h * e))) / (2 * h) for e in np.eye(3)]
    )
    np.testing.assert_allclose(grad, fd, rtol=1e-5, atol=1e-6 * np.abs(fd).max())
    g2, _, err = cloth.finite_difference_check(sim64, V0, h=h)
    np.testing.assert_allclose(g2, grad, rtol=1e-9)
    assert err < 1e-5


def test_float32_gradient_close_to_float64(run64):
    sim32 = cloth.ClothSim(dtype=wp.float32, n=N, frames=FRAMES)
    loss32, g32 = sim32.loss_and_grad(V0)
    assert abs(loss32 - run64["loss"]) < 1e-4 * run64["loss"] + 1e-7
    g64 = run64["grad"]
    np.testing.assert_allclose(g32, g64, rtol=1e-2, atol=1e-3 * np.abs(g64).max())


def test_gradient_steps_reduce_the_loss():
    sim = cloth.ClothSim(dtype=wp.float32, n=N, frames=FRAMES)
    v0, losses, frames = cloth.optimize(sim, (0.0, 0.0, 0.0), iters=2)
    assert len(losses) == 3 and sorted(frames) == [0, 2]
    assert losses[-1] < 0.3 * losses[0]
    assert v0[2] == 0.0 and v0[0] > 0.0 and v0[1] < 0.0  # thrown towards the sphere (start is at -x, +y)


def test_sim_lives_on_the_device_it_is_given(weft_device):
    # explicitly on the CPU even when the test's default device is a GPU, and the other way round
    for device in {"cpu", weft_device.alias}:
        sim = cloth.ClothSim(n=3, frames=1, substeps=1, device=device)
        assert sim.device == wp.get_device(device)
        arrays = _arrays(sim)
        assert {"rest", "x", "v", "f", "com", "loss", "topology.bend"} <= set(arrays)
        for name, a in arrays.items():
            assert a.device == sim.device and (a.grad is None or a.grad.device == sim.device), name
        assert sim.v0_array((0.0, 0.0, 1.0)).device == sim.device
    assert cloth.ClothSim(n=3, frames=1, substeps=1).device == wp.get_device() == weft_device  # None: the default


def test_device_matches_cpu_in_float64(sim64, run64):
    # the same simulation and gradient on the test's device as on the CPU, within rounding
    if sim64.device.is_cpu:
        ref = run64
    else:
        cpu = cloth.ClothSim(dtype=wp.float64, n=N, frames=FRAMES, device="cpu")
        loss, grad = cpu.loss_and_grad(V0)
        ref = {"loss": loss, "grad": grad, "x": cpu.x.numpy()}
    assert run64["loss"] == pytest.approx(ref["loss"], rel=1e-8)
    np.testing.assert_allclose(run64["grad"], ref["grad"], rtol=1e-6, atol=1e-9 * np.abs(ref["grad"]).max())
    np.testing.assert_allclose(run64["x"], ref["x"], rtol=0.0, atol=1e-8)


def test_main_runs_on_the_given_device(tmp_path, capsys, weft_device):
    device = weft_device.alias
    args = ["--grid", "6", "--frames", "10", "--iters", "2", "--no-gif", "--out", str(tmp_path), "--device", device]
    assert cloth.main(args) == 0
    out = capsys.readouterr().out
    assert f"cloth on {device} ({weft_device.name})" in out and f"float64 on {device}" in out
    assert f"optimised on {device} in" in out and f"simulations on {device}" in out
    assert float(out.split("relative error ")[1].split()[0]) < 1e-5
    losses = np.loadtxt(tmp_path / "loss.txt")
    assert f"on {device}" in (tmp_path / "loss.txt").read_text().splitlines()[0]
    # the float32 demo: the loss falls, and matches a CPU run of the same optimisation
    _, losses_cpu, _ = cloth.optimize(cloth.ClothSim(n=6, frames=10, device="cpu"), (0.0, 0.0, 0.0), iters=2)
    assert len(losses) == 3 and losses[-1] < 0.5 * losses[0]
    np.testing.assert_allclose(losses, losses_cpu, rtol=1e-3)


def test_main_writes_outputs(tmp_path, capsys):
    args = ["--grid", str(N), "--frames", "12", "--iters", "1", "--out", str(tmp_path)]
    assert cloth.main(args) == 0
    out = capsys.readouterr().out
    assert "relative error" in out and "output folder" in out
    rel = float(out.split("relative error ")[1].split()[0])
    assert rel < 1e-5
    assert len(np.loadtxt(tmp_path / "loss.txt")) == 2
    pytest.importorskip("matplotlib")
    assert (tmp_path / "cloth_frames.png").stat().st_size > 10_000
    assert (tmp_path / "cloth_compare.png").stat().st_size > 10_000
    pytest.importorskip("PIL")
    assert (tmp_path / "cloth.gif").stat().st_size > 10_000
