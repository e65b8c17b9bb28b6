"""Programs that ``tests/test_distributed.py`` runs under ``mpiexec -n P`` (P = 1, 2, 4).

python tests/mpi_programs.py checks
    halo exchanges (1-, 2-, 3-D, several process grids and halo widths), their adjoints, the
    collectives and their adjoints, scatter / gather, exchanges inside ``wp.checkpoint``; raises on the first mismatch and rank 0
    prints ``checks passed`` with what it checked.
python tests/mpi_programs.py heat --size N --steps S --out FILE.npz [--fd I,J ...]
    the distributed_heat example's loss and gradient for a fixed problem; rank 0 saves the
    loss, the gathered gradient and central differences of the loss at the global entries
    ``--fd`` into FILE.npz.
"""

from __future__ import annotations

import argparse
import sys

import numpy as np
from mpi4py import MPI

import weft as wp
import weft.distributed as wd


def _grids(size: int) -> list:
    """(global shape, process grid, halo) cases for this many ranks."""
    cases = [((13,), (size,), 1), ((9, 11), None, 1), ((12, 10), (size, 1), 2), ((10, 12), (1, size), 1)]
    cases.append(((7, 8, 9), (1, 1, size) if size < 4 else (1, 2, 2), 1))
    cases.append(((8, 9, 10), None, 2))
    return cases


def _sum_all(x: float) -> float:
    return MPI.COMM_WORLD.allreduce(float(x))


def check_halo(global_shape, grid, halo) -> None:
    d = wd.Decomposition(global_shape, process_grid=grid, halo=halo)
    rank = d.rank
    # values: every interior element holds its global flat index, every ghost a negative id of its own
    ids = -1.0 - (rank * 10**6 + np.arange(np.prod(d.local_shape), dtype=np.float64).reshape(d.local_shape))
    grid_index = np.indices(d.interior_shape)
    glob = tuple(g + o for g, o in zip(grid_index, d.offset))
    ids[d.interior] = np.ravel_multi_index(glob, d.global_shape)
    a = wp.array(ids, dtype=wp.float64)
    d.exchange(a)
    got = a.numpy()
    pos = np.indices(d.local_shape)
    gpos = [p + o - halo for p, o in zip(pos, d.offset)]
    inside = np.all([(g >= 0) & (g < n) for g, n in zip(gpos, d.global_shape)], axis=0)
    expect = np.ravel_multi_index([np.clip(g, 0, n - 1) for g, n in zip(gpos, d.global_shape)], d.global_shape)
    assert np.array_equal(got[inside], expect[inside]), f"rank {rank}: ghost values wrong for {d}"
    assert np.all(got[~inside] < 0), f"rank {rank}: a ghost outside the grid was written"
    # adjoint: <E x, w> = <x, E^T w> summed over all ranks, for random x and w (ghosts included)
    rng = np.random.default_rng(100 + rank)
    x0, w = rng.standard_normal(d.local_shape), rng.standard_normal(d.local_shape)
    x = wp.array(x0, dtype=wp.float64, requires_grad=True)
    tape = wp.Tape()
    with tape:
        d.exchange(x)
    forward = _sum_all(np.sum(x.numpy() * w))
    tape.backward(grads={x: w})
    adjoint = _sum_all(np.sum(x0 * x.grad.numpy()))
    assert abs(forward - adjoint) <= 1e-10 * max(1.0, abs(forward)), (
        f"rank {rank}: adjoint mismatch {forward} {adjoint}"
    )
    # scatter / gather of a global field (vector elements)
    full = np.arange(np.prod(global_shape) * 3, dtype=np.float32).reshape(tuple(global_shape) + (3,))
    local = d.scatter(full if rank == 0 else None)
    assert np.array_equal(local[d.interior], full[d.global_slices()])
    back = d.gather(wp.array(local, dtype=wp.vec3))
    assert rank != 0 or np.array_equal(back, full)


def check_collectives() -> None:
    comm = MPI.COMM_WORLD
    rank, size = comm.Get_rank(), comm.Get_size()
    rng = np.random.default_rng(7 + rank)
    # allreduce sum: values, and dL/dx_q = sum_r dL/dy_r
    x = wp.array(np.full(5, rank + 1.0), dtype=wp.float64, requires_grad=True)
    seed = rng.standard_normal(5)
    tape = wp.Tape()
    with tape:
        wd.allreduce(x)
    assert np.allclose(x.numpy(), size * (size + 1) / 2)
    tape.backward(grads={x: seed})
    assert np.allclose(x.grad.numpy(), comm.allreduce(seed))
    # max: the gradient goes to the lowest rank holding each maximum
    values = np.array([rank, -rank, 3.0, rank % 2], dtype=np.float32)
    x = wp.array(values, dtype=float, requires_grad=True)
    tape = wp.Tape()
    with tape:
        wd.allreduce(x, op="max")
    assert np.array_equal(x.numpy(), [size - 1, 0.0, 3.0, min(1, size - 1)])
    g = rng.standard_normal(4).astype(np.float32)
    tape.backward(grads={x: g})
    total = comm.allreduce(g)
    owners = [size - 1, 0, 0, 1 if size > 1 else 0]
    expect = np.where(np.array(owners) == rank, total, 0.0)
    assert np.allclose(x.grad.numpy(), expect, rtol=1e-6), (rank, x.grad.numpy(), expect)
    # broadcast: root's values everywhere; root's gradient is the sum, the others' zero
    root = size - 1
    x = wp.array(np.full((2, 3), 10.0 * rank), dtype=wp.float64, requires_grad=True)
    tape = wp.Tape()
    with tape:
        wd.broadcast(x, root=root)
    assert np.allclose(x.numpy(), 10.0 * root)
    g = rng.standard_normal((2, 3))
    tape.backward(grads={x: g})
    total = comm.allreduce(g)
    assert np.allclose(x.grad.numpy(), total if rank == root else 0.0)


@wp.kernel
def smooth(u: wp.array2d(dtype=wp.float64), v: wp.array2d(dtype=wp.float64)):
    """A nonlinear 5-point step on the interior of a block with one ghost layer."""
    i, j = wp.tid()
    c = u[i + 1, j + 1]
    s = u[i, j + 1] + u[i + 2, j + 1] + u[i + 1, j] + u[i + 1, j + 2]
    v[i + 1, j + 1] = 0.5 * c + 0.125 * s + wp.float64(0.1) * c * c


def check_checkpoint() -> None:
    """Steps with exchanges in ``wp.checkpoint`` segments give the plain tape's gradient: the
    segments' exchanges run again in backward, on every rank in the same order."""
    d = wd.Decomposition((12, 10), halo=1)
    start = d.scatter(np.random.default_rng(5).random((12, 10)) if d.rank == 0 else None)
    weights = d.scatter(np.random.default_rng(6).random((12, 10)) if d.rank == 0 else None)

    def segment(u, n):
        for _ in range(n):
            d.exchange(u)
            v = wp.zeros(d.local_shape, dtype=wp.float64, requires_grad=True)
            wp.launch(smooth, dim=d.interior_shape, inputs=[u], outputs=[v])
            u = v
        return u

    grads = []
    for checkpointed in (False, True):
        u0 = wp.array(start, dtype=wp.float64, requires_grad=True)
        tape = wp.Tape()
        with tape:
            u = u0
            for _ in range(3):
                u = wp.checkpoint(segment, u, 2) if checkpointed else segment(u, 2)
        seed = np.zeros(d.local_shape)
        seed[d.interior] = weights[d.interior]
        tape.backward(grads={u: seed})
        grads.append(u0.grad.numpy()[d.interior].copy())
    assert np.allclose(grads[0], grads[1], rtol=1e-12, atol=0), f"rank {d.rank}: checkpointed gradient differs"
    assert np.abs(grads[0]).max() > 0


def checks() -> int:
    for case in _grids(MPI.COMM_WORLD.Get_size()):
        check_halo(*case)
    check_collectives()
    check_checkpoint()
    if MPI.COMM_WORLD.Get_rank() == 0:
        count = len(_grids(MPI.COMM_WORLD.Get_size()))
        print(f"checks passed: {count} decompositions, collectives, checkpoints", flush=True)
    return 0


def heat_problem(size: int, seed: int = 3) -> tuple:
    """``(true initial field, field the gradient is taken at)``, global, float32."""
    from weft.examples.distributed_heat import true_initial_field

    rng = np.random.default_rng(seed)
    return true_initial_field(size), rng.random((size, size), dtype=np.float32)


def heat(size: int, steps: int, out: str, fd_entries: list) -> int:
    from weft.examples.distributed_heat import HeatProblem

    wp.config.cpu_threads = 1
    d = wd.Decomposition((size, size), halo=1)
    truth, at = heat_problem(size)
    problem = HeatProblem(d, steps)
    problem.set_target_from(d.scatter(truth if d.rank == 0 else None)[d.interior])
    local = d.scatter(at if d.rank == 0 else None)
    loss, grad = problem.loss_and_grad(local[d.interior])
    padded = np.zeros(d.local_shape, dtype=np.float32)
    padded[d.interior] = grad
    full_grad = d.gather(padded)
    fd = []
    for i, j in fd_entries:
        # the loss is quadratic in the field: a central difference is exact up to rounding for any step
        values = []
        for step in (1.0, -1.0):
            bumped = at.copy()
            bumped[i, j] += step
            part = d.scatter(bumped if d.rank == 0 else None)[d.interior]
            values.append(problem.loss_and_grad(part)[0])
        fd.append((values[0] - values[1]) / 2.0)
    if d.rank == 0:
        np.savez(out, loss=loss, grad=full_grad, fd=np.array(fd), grid=np.array(d.process_grid))
        print(f"heat: {d.size} rank(s), loss {loss:.6e}", flush=True)
    return 0


def main(argv) -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("program", choices=("checks", "heat"))
    parser.add_argument("--size", type=int, default=32)
    parser.add_argument("--steps", type=int, default=10)
    parser.add_argument("--out", default="heat.npz")
    parser.add_argument("--fd", nargs="*", default=[])
    args = parser.parse_args(argv)
    if args.program == "checks":
        return checks()
    return heat(args.size, args.steps, args.out, [tuple(int(v) for v in e.split(",")) for e in args.fd])


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
