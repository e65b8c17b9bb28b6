"""weft.distributed: collectives, block decompositions and halo exchanges over MPI, with their
adjoints on the tape.

One-process tests run in this process (``MPI.COMM_WORLD`` of size 1, no ``mpiexec``; periodic
neighbours make a rank its own neighbour, so the exchange moves real data); the others start
``tests/mpi_programs.py`` under ``mpiexec -n P`` for P = 1, 2, 4 and compare with this process.
They skip only where mpi4py or mpiexec is missing (``pip install -e ".[mpi]"`` installs both).
"""

from __future__ import annotations

import importlib.util
import os
import shutil
import subprocess
import sys

import numpy as np
import pytest

import weft as wp

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
PROGRAMS = os.path.join(HERE, "mpi_programs.py")

HAS_MPI4PY = importlib.util.find_spec("mpi4py") is not None
needs_mpi4py = pytest.mark.skipif(not HAS_MPI4PY, reason='mpi4py is not installed (pip install -e ".[mpi]")')


def find_mpiexec():
    """The mpiexec of this Python's environment (the mpich wheel puts it next to python), else PATH's."""
    for candidate in (
        os.path.join(os.path.dirname(sys.executable), "mpiexec"),
        os.path.join(sys.prefix, "bin", "mpiexec"),
    ):
        if os.access(candidate, os.X_OK):
            return candidate
    return shutil.which("mpiexec")


MPIEXEC = find_mpiexec()
needs_mpiexec = pytest.mark.skipif(
    not (HAS_MPI4PY and MPIEXEC),
    reason='mpi4py or mpiexec is missing (pip install -e ".[mpi]" installs mpi4py and the mpich wheel\'s mpiexec)',
)


def _env() -> dict:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([ROOT] + [p for p in env.get("PYTHONPATH", "").split(os.pathsep) if p])
    env["WEFT_CPU_THREADS"] = "1"  # up to 4 ranks share this machine's cores
    env.pop("WEFT_TEST_SIMULATED_CUDA", None)
    # Open MPI refuses to start as root unless told twice (a GPU machine runs everything as root)
    env.setdefault("OMPI_ALLOW_RUN_AS_ROOT", "1")
    env.setdefault("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1")
    return env


def _launcher_flags() -> list:
    """MPICH (the mpich wheel) runs 4 ranks on 2 cores as they are; Open MPI's mpiexec needs to be
    told that it may (and, as root, that it may run at all)."""
    version = subprocess.run([MPIEXEC, "--version"], capture_output=True, text=True, timeout=30, check=False)
    text = version.stdout + version.stderr
    if not any(mark in text for mark in ("Open MPI", "OpenRTE", "open-mpi.org")):  # Open MPI 4 says "(OpenRTE)"
        return []
    return ["--oversubscribe"] + (["--allow-run-as-root"] if hasattr(os, "geteuid") and os.geteuid() == 0 else [])


def run_mpi(ranks: int, args: list, timeout: float = 120.0) -> str:
    """Run ``python ARGS`` on ``ranks`` MPI processes; return rank 0's output (raise on failure)."""
    cmd = [MPIEXEC, *_launcher_flags(), "-n", str(ranks), sys.executable, *args]
    done = subprocess.run(cmd, cwd=ROOT, env=_env(), capture_output=True, text=True, timeout=timeout, check=False)
    assert done.returncode == 0, f"{' '.join(cmd)} failed ({done.returncode}):\n{done.stdout}\n{done.stderr}"
    return done.stdout


@wp.kernel
def square(x: wp.array(dtype=float), y: wp.array(dtype=float)):
    i = wp.tid()
    y[i] = x[i] * x[i]


@wp.kernel
def weighted_sum(x: wp.array(dtype=float), w: wp.array(dtype=float), loss: wp.array(dtype=float)):
    i = wp.tid()
    wp.atomic_add(loss, 0, w[i] * x[i])


# -- without mpi4py --------------------------------------------------------------------------------


def test_import_weft_needs_no_mpi4py_and_using_distributed_says_how_to_install_it():
    code = (
        "import sys\n"
        "sys.modules['mpi4py'] = None  # as if mpi4py were not installed\n"
        "import weft as wp\n"
        "assert 'mpi4py.MPI' not in sys.modules\n"
        "try:\n"
        "    wp.distributed.allreduce(wp.zeros(3))\n"
        "except ImportError as e:\n"
        "    print('ImportError:', e)\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, env=_env(), capture_output=True, text=True, timeout=60, check=False
    )
    assert done.returncode == 0, done.stderr
    assert 'pip install -e ".[mpi]"' in done.stdout and "ImportError" in done.stdout


# -- collectives on one process ------------------------------------------------------------------


@needs_mpi4py
@pytest.mark.parametrize("op", ["sum", "max", "min"])
@pytest.mark.parametrize("cuda_aware", [False, True])
def test_allreduce_on_one_rank_keeps_values_and_gradients(op, cuda_aware, monkeypatch):
    from weft.distributed import _mpi

    monkeypatch.setattr(_mpi, "cuda_aware", cuda_aware)  # GPU arrays: device memory to MPI, or host copies
    x_np = np.array([0.5, -1.0, 2.0, 3.0], dtype=np.float32)
    w_np = np.array([1.0, 2.0, -1.0, 0.5], dtype=np.float32)
    x = wp.array(x_np, dtype=float, requires_grad=True)
    w = wp.array(w_np, dtype=float)
    y = wp.zeros(4, dtype=float, requires_grad=True)
    loss = wp.zeros(1, dtype=float, requires_grad=True)
    tape = wp.Tape()
    with tape:
        wp.launch(square, dim=4, inputs=[x], outputs=[y])
        assert wp.distributed.allreduce(y, op=op) is y
        wp.launch(weighted_sum, dim=4, inputs=[y, w], outputs=[loss])
    assert sum(type(r).__name__ == "FuncRecord" for r in tape.launches) == 1
    np.testing.assert_allclose(y.numpy(), x_np**2)
    tape.backward(loss)
    np.testing.assert_allclose(x.grad.numpy(), 2.0 * x_np * w_np, rtol=1e-6)
    assert wp.distributed.timings()["allreduce.backward"]["calls"] >= 1


@needs_mpi4py
def test_allreduce_of_vectors_and_integers_and_its_errors():
    v = wp.array(np.arange(6, dtype=np.float32).reshape(2, 3), dtype=wp.vec3)
    np.testing.assert_array_equal(wp.distributed.allreduce(v, op="max").numpy(), np.arange(6).reshape(2, 3))
    i = wp.array([4, 5, 6], dtype=wp.int64)
    np.testing.assert_array_equal(wp.distributed.allreduce(i).numpy(), [4, 5, 6])
    with pytest.raises(ValueError, match="op must be one of 'sum', 'max', 'min'"):
        wp.distributed.allreduce(i, op="prod")
    with pytest.raises(TypeError, match="expected a wp.array with data"):
        wp.distributed.allreduce(np.zeros(3))


@needs_mpi4py
def test_broadcast_on_one_rank_keeps_values_and_gradients():
    x_np = np.array([1.0, -2.0, 4.0], dtype=np.float32)
    x = wp.array(x_np, dtype=float, requires_grad=True)
    y = wp.zeros(3, dtype=float, requires_grad=True)
    loss = wp.zeros(1, dtype=float, requires_grad=True)
    w = wp.array([3.0, 1.0, -1.0], dtype=float)
    tape = wp.Tape()
    with tape:
        wp.launch(square, dim=3, inputs=[x], outputs=[y])
        wp.distributed.broadcast(y, root=0)
        wp.launch(weighted_sum, dim=3, inputs=[y, w], outputs=[loss])
    np.testing.assert_allclose(y.numpy(), x_np**2)
    tape.backward(loss)
    np.testing.assert_allclose(x.grad.numpy(), 2.0 * x_np * np.array([3.0, 1.0, -1.0]), rtol=1e-6)
    with pytest.raises(ValueError, match="root 1 is not a rank of a communicator of size 1"):
        wp.distributed.broadcast(y, root=1)


@needs_mpi4py
def test_cpu_arrays_go_to_mpi4py_directly_without_copies():
    """A weft CPU array is a buffer mpi4py takes as it is (DLPack / array interface): MPI writes
    straight into its memory, which a NumPy view of it shows."""
    from mpi4py import MPI

    a = wp.array(np.arange(6, dtype=np.float32).reshape(2, 3), dtype=float, device="cpu")
    MPI.COMM_WORLD.Allreduce(MPI.IN_PLACE, a, op=MPI.MAX)
    b = wp.zeros((2, 3), dtype=float, device="cpu")
    view = b.numpy()  # shares b's memory
    MPI.COMM_WORLD.Sendrecv(a, dest=0, recvbuf=b, source=0)
    np.testing.assert_array_equal(view, np.arange(6).reshape(2, 3))


# -- decompositions on one process ---------------------------------------------------------------


@needs_mpi4py
def test_decomposition_on_one_rank():
    from mpi4py import MPI

    d = wp.distributed.Decomposition((6, 5, 4), halo=2)
    assert d.process_grid == (1, 1, 1) and d.coords == (0, 0, 0) and d.offset == (0, 0, 0)
    assert d.interior_shape == (6, 5, 4) and d.local_shape == (10, 9, 8)
    assert d.neighbors == ((MPI.PROC_NULL, MPI.PROC_NULL),) * 3
    assert d.interior == (slice(2, 8), slice(2, 7), slice(2, 6))
    assert d.global_slices() == (slice(0, 6), slice(0, 5), slice(0, 4))
    field = np.random.default_rng(0).random((6, 5, 4, 2))
    local = d.scatter(field)
    assert local.shape == (10, 9, 8, 2) and np.array_equal(local[d.interior], field)
    assert np.count_nonzero(local) == np.count_nonzero(field)  # ghosts are zero
    np.testing.assert_array_equal(d.gather(wp.array(local, dtype=wp.vec2d)), field)
    a = d.scatter(np.ones((6, 5, 4), dtype=np.float32))
    assert wp.array(a, dtype=float).shape == d.local_shape
    assert "process_grid=(1, 1, 1)" in repr(d)


@needs_mpi4py
def test_decomposition_rejects_what_does_not_fit():
    Decomposition = wp.distributed.Decomposition
    with pytest.raises(ValueError, match="1 to 3 positive sizes"):
        Decomposition((2, 2, 2, 2))
    with pytest.raises(ValueError, match="product is the 1 ranks"):
        Decomposition((8, 8), process_grid=(2, 1))
    with pytest.raises(ValueError, match="fewer than 3 \\(the halo width"):
        Decomposition((2, 8), halo=3)
    with pytest.raises(ValueError, match="halo must be >= 0"):
        Decomposition((8,), halo=-1)
    with pytest.raises(ValueError, match="expected shape \\(4, 4\\)"):
        Decomposition((4, 4)).scatter(np.zeros((4, 5)))


# -- halo exchange on one process ----------------------------------------------------------------


def _periodic(ndim: int) -> tuple:
    return ((0, 0),) * ndim  # rank 0 is its own neighbour on both sides


@needs_mpi4py
@pytest.mark.parametrize(
    "shape, trailing, halo, dtype",
    [
        ((9,), (), 1, float),
        ((6, 7), (), 2, float),
        ((4, 5, 6), (), 1, wp.float64),
        ((5, 4), (), 1, wp.int32),
        ((5, 4), (3,), 1, wp.vec3),
    ],
)
def test_periodic_exchange_on_one_rank_is_numpy_wrap_padding(shape, trailing, halo, dtype):
    interior = (np.arange(np.prod(shape + trailing)) * 1.5).reshape(shape + trailing)
    pad = [(halo, halo)] * len(shape) + [(0, 0)] * len(trailing)
    a = wp.array(np.pad(interior, pad, constant_values=-7), dtype=dtype)  # ghosts -7 before the exchange
    assert wp.distributed.halo_exchange(a, halo=halo, neighbors=_periodic(len(shape))) is a
    np.testing.assert_array_equal(a.numpy(), np.pad(interior, pad, mode="wrap").astype(a.numpy().dtype))


@needs_mpi4py
@pytest.mark.parametrize("shape, halo", [((7,), 2), ((5, 6), 1), ((4, 5, 3), 1)])
def test_exchange_adjoint_sends_ghost_gradients_back_to_their_owners(shape, halo):
    """Gradient of sum(w * exchanged) is E^T w: every ghost's weight is added to the element it
    copied (found by exchanging an array of element ids), and the ghost's own gradient is zero."""
    local = tuple(n + 2 * halo for n in shape)
    ids = wp.array(np.arange(np.prod(local), dtype=np.float64).reshape(local), dtype=wp.float64)
    wp.distributed.halo_exchange(ids, halo, _periodic(len(shape)))
    source = ids.numpy().astype(np.int64)
    rng = np.random.default_rng(1)
    w = rng.standard_normal(local)
    x = wp.array(rng.standard_normal(local), dtype=wp.float64, requires_grad=True)
    tape = wp.Tape()
    with tape:
        wp.distributed.halo_exchange(x, halo, _periodic(len(shape)))
    tape.backward(grads={x: w})
    expect = np.bincount(source.ravel(), weights=w.ravel(), minlength=w.size).reshape(local)
    np.testing.assert_allclose(x.grad.numpy(), expect, rtol=1e-12)
    interior = tuple(slice(halo, halo + n) for n in shape)
    assert np.count_nonzero(x.grad.numpy()) == np.count_nonzero(x.grad.numpy()[interior])  # ghosts zeroed


@needs_mpi4py
def test_exchange_of_a_strided_array_moves_packed_faces():
    base = wp.array(np.zeros((6, 12), dtype=np.float32), dtype=float, requires_grad=True)
    a = base[:, ::2]  # 6 x 6 with a stride of two elements
    assert not a.is_contiguous
    interior = np.arange(16, dtype=np.float32).reshape(4, 4)
    a[1:5, 1:5].assign(interior)
    tape = wp.Tape()
    with tape:
        wp.distributed.halo_exchange(a, 1, _periodic(2))
    np.testing.assert_array_equal(a.numpy(), np.pad(interior, 1, mode="wrap"))
    np.testing.assert_array_equal(base.numpy()[:, 1::2], 0)  # the elements between stay untouched
    tape.backward(grads={a: np.ones((6, 6), dtype=np.float32)})
    counts = np.pad(np.ones((4, 4)), 1, mode="wrap")  # how often each interior element is seen
    expect = np.zeros((6, 6))
    expect[1:5, 1:5] = np.bincount(
        np.pad(np.arange(16).reshape(4, 4), 1, mode="wrap").ravel(), weights=counts.ravel(), minlength=16
    ).reshape(4, 4)
    np.testing.assert_array_equal(a.grad.numpy(), expect)


@needs_mpi4py
def test_sides_without_neighbours_keep_their_ghosts_and_ghost_gradients():
    from mpi4py import MPI

    none = ((MPI.PROC_NULL, MPI.PROC_NULL),) * 2
    values = np.random.default_rng(2).random((5, 6)).astype(np.float32)
    a = wp.array(values, dtype=float, requires_grad=True)
    tape = wp.Tape()
    with tape:
        wp.distributed.halo_exchange(a, halo=1, neighbors=none)
    np.testing.assert_array_equal(a.numpy(), values)
    seed = np.random.default_rng(3).random((5, 6)).astype(np.float32)
    tape.backward(grads={a: seed})
    np.testing.assert_array_equal(a.grad.numpy(), seed)


@needs_mpi4py
def test_halo_exchange_argument_errors():
    a = wp.zeros((6, 6), dtype=float)
    with pytest.raises(ValueError, match="a \\(low, high\\) rank pair for each of the array's 2 axes"):
        wp.distributed.halo_exchange(a, 1, ((0, 0),))
    with pytest.raises(ValueError, match="axis 1 has 6 layers, fewer than an interior of 3"):
        wp.distributed.halo_exchange(a, (1, 3), _periodic(2))
    with pytest.raises(TypeError, match="expected a wp.array with data"):
        wp.distributed.halo_exchange(np.zeros((6, 6)), 1, _periodic(2))


@needs_mpi4py
def test_verify_autograd_array_access_warns_when_an_exchange_overwrites_a_read_array(capfd):
    from weft.examples.distributed_heat import diffuse

    saved = wp.config.verify_autograd_array_access
    wp.config.verify_autograd_array_access = True
    try:
        u = wp.zeros((6, 6), dtype=float, requires_grad=True)
        v = wp.zeros((6, 6), dtype=float, requires_grad=True)
        with wp.Tape():
            wp.launch(diffuse, dim=(4, 4), inputs=[u, 0.2], outputs=[v])
            wp.distributed.halo_exchange(u, 1, _periodic(2))
    finally:
        wp.config.verify_autograd_array_access = saved
    err = capfd.readouterr().err
    assert "is being written to by wp.distributed.halo_exchange" in err and "test_distributed.py" in err


# -- gradients of the heat example on one process ---------------------------------------------------


def _numpy_heat(u0: np.ndarray, truth: np.ndarray, steps: int, alpha: float = 0.2) -> tuple:
    """Loss and gradient of the heat problem in float64 NumPy (zero Dirichlet edges)."""

    def step(u):
        p = np.pad(u, 1)
        return u + alpha * (p[:-2, 1:-1] + p[2:, 1:-1] + p[1:-1, :-2] + p[1:-1, 2:] - 4.0 * u)

    def run(u):
        for _ in range(steps):
            u = step(u)
        return u

    residual = run(u0.astype(np.float64)) - run(truth.astype(np.float64))
    return 0.5 * np.sum(residual**2), run(residual)  # the step is symmetric: its adjoint is itself


@needs_mpi4py
def test_heat_gradient_on_one_rank_matches_numpy_and_checkpointing():
    sys.path.insert(0, HERE)
    try:
        import mpi_programs
    finally:
        sys.path.remove(HERE)
    from weft.examples.distributed_heat import HeatProblem, diffuse, misfit

    size, steps = 24, 8
    truth, at = mpi_programs.heat_problem(size)
    d = wp.distributed.Decomposition((size, size))
    problem = HeatProblem(d, steps)
    problem.set_target_from(truth)
    loss, grad = problem.loss_and_grad(at)
    ref_loss, ref_grad = _numpy_heat(at, truth, steps)
    assert loss == pytest.approx(ref_loss, rel=1e-5)
    np.testing.assert_allclose(grad, ref_grad, rtol=1e-4, atol=1e-5 * np.abs(ref_grad).max())
    kinds = [type(r).__name__ for r in problem.tape.launches]
    assert kinds.count("FuncRecord") == steps + 1  # every exchange and the allreduce

    # the same steps in checkpointed segments: the exchanges run again in backward, same gradient
    u0 = wp.zeros(d.local_shape, dtype=float, requires_grad=True)
    u0[d.interior].assign(at)

    def segment(u, n):
        for _ in range(n):
            d.exchange(u)
            v = wp.zeros(d.local_shape, dtype=float, requires_grad=True)
            wp.launch(diffuse, dim=d.interior_shape, inputs=[u, problem.alpha], outputs=[v])
            u = v
        return u

    loss_arr = wp.zeros(1, dtype=wp.float64, requires_grad=True)
    tape = wp.Tape()
    with tape:
        u = u0
        for _ in range(steps // 4):
            u = wp.checkpoint(segment, u, 4)
        wp.launch(misfit, dim=d.interior_shape, inputs=[u, problem.target, loss_arr])
        wp.distributed.allreduce(loss_arr)
    tape.backward(loss_arr)
    np.testing.assert_allclose(u0.grad.numpy()[d.interior], grad, rtol=1e-5, atol=1e-6 * np.abs(grad).max())


# -- several processes -------------------------------------------------------------------------------


@needs_mpiexec
@pytest.mark.parametrize("ranks", [2, 4])
def test_exchanges_and_collectives_on_several_ranks(ranks):
    """1-, 2- and 3-D decompositions (halo 1 and 2): ghost values against the global array, the
    adjoint as the exact transpose, collectives and their adjoints, scatter / gather, and
    checkpointed segments of exchanges (replayed in backward on every rank)."""
    out = run_mpi(ranks, [PROGRAMS, "checks"])
    assert "checks passed: 6 decompositions, collectives, checkpoints" in out


@needs_mpiexec
def test_heat_loss_and_gradient_agree_for_1_2_and_4_ranks(tmp_path):
    size, steps = 32, 10
    entries = [(15, 15), (16, 16), (15, 16), (0, 31), (8, 20)]  # on and next to the block edges of P = 2, 4
    results = {}
    for ranks in (1, 2, 4):
        out = tmp_path / f"heat{ranks}.npz"
        run_mpi(
            ranks,
            [PROGRAMS, "heat", "--size", str(size), "--steps", str(steps), "--out", str(out), "--fd"]
            + [f"{i},{j}" for i, j in entries],
        )
        results[ranks] = np.load(out)
    assert tuple(results[2]["grid"]) == (2, 1) and tuple(results[4]["grid"]) == (2, 2)
    sys.path.insert(0, HERE)
    try:
        import mpi_programs
    finally:
        sys.path.remove(HERE)
    truth, at = mpi_programs.heat_problem(size)
    ref_loss, ref_grad = _numpy_heat(at, truth, steps)
    scale = np.abs(ref_grad).max()
    for ranks, r in results.items():
        assert float(r["loss"]) == pytest.approx(float(results[1]["loss"]), rel=1e-9), ranks  # float64 sums
        np.testing.assert_allclose(r["grad"], results[1]["grad"], rtol=0, atol=1e-6 * scale)
        assert float(r["loss"]) == pytest.approx(ref_loss, rel=1e-5)
        np.testing.assert_allclose(r["grad"], ref_grad, rtol=1e-4, atol=1e-5 * scale)
        grad_at = np.array([r["grad"][i, j] for i, j in entries])
        np.testing.assert_allclose(r["fd"], grad_at, rtol=1e-3, atol=1e-4 * scale)  # float32 loss differences


@needs_mpiexec
def test_example_runs_on_two_ranks_and_writes_its_picture(tmp_path):
    out = run_mpi(
        2,
        [
            "-m",
            "weft.examples.distributed_heat",
            "--size",
            "32",
            "--steps",
            "10",
            "--iters",
            "3",
            "--out",
            str(tmp_path),
        ],
    )
    lines = out.strip().splitlines()
    assert "2 rank(s) on a 2 x 1 process grid" in lines[0]
    losses = [float(line.split()[3]) for line in lines if line.startswith("iter")]
    assert len(losses) == 3 and losses[0] > losses[1] > losses[2] > 0
    assert lines[-1].startswith("final loss ") and " grad_norm " in lines[-1]
    assert float(lines[-1].split()[2]) == pytest.approx(losses[-1], rel=1e-5)
    assert f"output folder: {tmp_path}" in out
    assert (tmp_path / "distributed_heat.png").exists() or "skipped the picture" in out


@needs_mpi4py
def test_example_main_runs_without_mpiexec(tmp_path, capsys, monkeypatch):
    from weft.examples import distributed_heat

    monkeypatch.setattr(wp.config, "cpu_threads", wp.config.cpu_threads)  # main shares the cores among ranks

    assert distributed_heat.main(["--size", "16", "--steps", "4", "--iters", "2", "--out", str(tmp_path)]) == 0
    text = capsys.readouterr().out
    assert "1 rank(s) on a 1 x 1 process grid" in text and "final loss" in text.splitlines()[-1]
