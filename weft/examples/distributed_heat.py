"""Differentiable heat diffusion split over MPI ranks: recover an initial temperature field.

An ``N`` x ``N`` plate (zero temperature held at its edges) diffuses for ``S`` explicit steps,
``u <- u + alpha * laplace(u)``. Given only the final field of an unknown initial one, gradient
descent on ``L = 1/2 sum (u_S - target)^2`` recovers the initial field (as far as diffusion left
a trace of it). The plate is cut into blocks over a 2-D grid of ``P`` ranks
(``wp.distributed.Decomposition``); every step exchanges the blocks' ghost layers
(``halo_exchange``), and ``wp.Tape`` differentiates through all the exchanges and the final
``allreduce`` of the loss. The loss and gradient do not depend on ``P``.

Run::

    mpiexec -n P python -m weft.examples.distributed_heat [--size 1024] [--steps 200] [--iters 5]
                                                          [--out DIR] [--device cpu|cuda]

(``python -m weft.examples.distributed_heat`` alone runs one rank.) Rank 0 prints the loss and
gradient norm of every iteration, the time per step (forward and backward) and the share of it
spent in halo exchanges (the slowest rank's, waiting for neighbours included), then
``final loss L grad_norm G``, and writes ``distributed_heat.png`` (the true, final and recovered
fields; needs matplotlib) into DIR (default ``./examples_output/distributed_heat/``).
``--device cuda`` gives each rank of a node its own GPU.
"""

from __future__ import annotations

import argparse
import os
import sys
import time

import numpy as np

import weft as wp
import weft.distributed as wd


@wp.kernel
def diffuse(u: wp.array2d(dtype=float), alpha: float, v: wp.array2d(dtype=float)):
    """One explicit step on the interior of a block with one ghost layer."""
    i, j = wp.tid()
    i = i + 1
    j = j + 1
    c = u[i, j]
    v[i, j] = c + alpha * (u[i - 1, j] + u[i + 1, j] + u[i, j - 1] + u[i, j + 1] - 4.0 * c)


@wp.kernel
def misfit(u: wp.array2d(dtype=float), target: wp.array2d(dtype=float), loss: wp.array(dtype=wp.float64)):
    """This block's part of 1/2 sum (u - target)^2, summed in float64: a million float32 terms
    added in an order that depends on the threads and ranks would differ in the fourth digit."""
    i, j = wp.tid()
    d = u[i + 1, j + 1] - target[i + 1, j + 1]
    wp.atomic_add(loss, 0, wp.float64(0.5 * d * d))


def true_initial_field(n: int) -> np.ndarray:
    """The field to recover: a hot ring, a warm square and thin bars (about as wide as the
    distance heat spreads in 200 steps on a 1024 grid) on a cold plate."""
    y, x = np.mgrid[0:n, 0:n] / n
    ring = np.exp(-(((np.hypot(x - 0.35, y - 0.4) - 0.18) / 0.03) ** 2))
    square = 0.6 * ((np.abs(x - 0.72) < 0.12) & (np.abs(y - 0.68) < 0.12))
    bars = 0.8 * ((np.abs(y - 0.2) < 0.08) & (np.abs(x - 0.72) < 0.14) & (np.mod(x - 0.58, 0.04) < 0.015))
    return (ring + square + bars).astype(np.float32)


class HeatProblem:
    """The states of one rank's block for every step, reused by every gradient evaluation.

    Args:
        decomposition: a 2-D ``wp.distributed.Decomposition`` with halo 1.
        steps: diffusion steps.
        alpha: diffusion number (stable for <= 0.25).
    """

    def __init__(self, decomposition, steps: int, alpha: float = 0.2):
        self.decomp = decomposition
        self.steps = steps
        self.alpha = alpha
        shape = decomposition.local_shape
        # states[0] is the unknown initial field; ghosts at the plate's edges stay 0 (the boundary)
        self.states = [wp.zeros(shape, dtype=float, requires_grad=True) for _ in range(steps + 1)]
        self.target = wp.zeros(shape, dtype=float)
        self.loss = wp.zeros(1, dtype=wp.float64, requires_grad=True)
        self.tape = wp.Tape()

    def run(self):
        """Diffuse ``states[0]`` for ``steps`` steps (recorded when a tape records)."""
        for k in range(self.steps):
            self.decomp.exchange(self.states[k])
            wp.launch(
                diffuse,
                dim=self.decomp.interior_shape,
                inputs=[self.states[k], self.alpha],
                outputs=[self.states[k + 1]],
            )
        return self.states[-1]

    def loss_and_grad(self, initial: np.ndarray):
        """The global loss for this rank's block ``initial`` of the initial field (interior only)
        and this rank's block of its gradient (a NumPy array of the interior)."""
        self.tape.reset()
        self.states[0][self.decomp.interior].assign(initial)  # a view: works on a GPU too
        self.loss.zero_()
        with self.tape:
            u = self.run()
            wp.launch(misfit, dim=self.decomp.interior_shape, inputs=[u, self.target, self.loss])
            wd.allreduce(self.loss)  # every rank now holds the global loss
        # the seeds of all ranks add up (the allreduce's adjoint sums them): seed the one loss once
        seed = np.array([1.0 if self.decomp.rank == 0 else 0.0])
        self.tape.backward(grads={self.loss: seed})
        return float(self.loss.numpy()[0]), self.states[0].grad.numpy()[self.decomp.interior].copy()

    def set_target_from(self, initial: np.ndarray):
        """Make the target the final field of the block ``initial`` (interior) of an initial field."""
        self.states[0][self.decomp.interior].assign(initial)
        final = self.run()
        wp.copy(self.target, final)


def global_norm(local: np.ndarray, comm) -> float:
    """The 2-norm of a field from each rank's block."""
    return float(np.sqrt(comm.allreduce(float(np.sum(local.astype(np.float64) ** 2)))))


def _plot(fields: dict, path: str) -> bool:
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return False
    fig, axes = plt.subplots(1, len(fields), figsize=(4.2 * len(fields), 4.0))
    for ax, (title, field) in zip(axes, fields.items()):
        im = ax.imshow(field, origin="lower", cmap="inferno", vmin=0.0, vmax=max(1e-6, float(field.max())))
        ax.set_title(title)
        ax.set_xticks([])
        ax.set_yticks([])
        fig.colorbar(im, ax=ax, fraction=0.046)
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)
    return True


def _setup_device(device: str) -> None:
    """One CUDA device per rank of a node, or the CPU cores shared among the node's ranks."""
    if device == "cuda":
        wp.set_device(f"cuda:{wd.local_rank()}")
    elif "WEFT_CPU_THREADS" not in os.environ:
        wp.config.cpu_threads = max(1, (os.cpu_count() or 1) // wd.local_size())


def _time_report(seconds: float, iters: int, steps: int, comm, MPI) -> str:
    """Where the time of the gradient descent went: the slowest rank's figures (collective). The
    halo exchange times include waiting for the neighbours, so they measure imbalance too."""
    times = wd.timings()
    forward = comm.allreduce(times.get("halo_exchange", {}).get("seconds", 0.0), op=MPI.MAX)
    backward = comm.allreduce(times.get("halo_exchange.backward", {}).get("seconds", 0.0), op=MPI.MAX)
    total = comm.allreduce(seconds, op=MPI.MAX)
    per_step = 1e3 / (max(iters, 1) * max(steps, 1))  # seconds in all iterations -> ms per step
    return (
        f"{total / max(iters, 1):.3f} s per iteration, {total * per_step:.2f} ms per step (forward and backward); "
        f"halo exchanges {(forward + backward) * per_step:.2f} ms per step ({100.0 * (forward + backward) / total:.1f}%): "
        f"forward {forward * per_step:.2f} ms, backward {backward * per_step:.2f} ms"
    )


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--size", type=int, default=1024, help="grid points per side (default 1024)")
    parser.add_argument("--steps", type=int, default=200, help="diffusion steps (default 200)")
    parser.add_argument("--iters", type=int, default=5, help="gradient descent iterations (default 5)")
    parser.add_argument("--lr", type=float, default=1.5, help="gradient descent step (default 1.5; < 2 is stable)")
    parser.add_argument("--out", default=os.path.join("examples_output", "distributed_heat"))
    parser.add_argument("--device", choices=("cpu", "cuda"), default="cpu")
    args = parser.parse_args(argv)

    _setup_device(args.device)
    decomp = wd.Decomposition((args.size, args.size), halo=1)
    comm = decomp.comm
    from mpi4py import MPI  # weft.distributed has imported it

    rank0 = decomp.rank == 0
    if rank0:
        print(
            f"{args.size} x {args.size} grid, {args.steps} steps, {decomp.size} rank(s) on a "
            f"{decomp.process_grid[0]} x {decomp.process_grid[1]} process grid, {wp.config.cpu_threads} thread(s) per rank"
        )
    problem = HeatProblem(decomp, args.steps)
    truth = decomp.scatter(true_initial_field(args.size) if rank0 else None)[decomp.interior]
    problem.set_target_from(truth)
    initial = np.zeros(decomp.interior_shape, dtype=np.float32)
    loss = grad_norm = 0.0
    wd.reset_timings()
    t0 = time.perf_counter()
    for it in range(args.iters):
        loss, grad = problem.loss_and_grad(initial)
        grad_norm = global_norm(grad, comm)
        if rank0:
            print(f"iter {it:3d}  loss {loss:.6e}  grad_norm {grad_norm:.6e}", flush=True)
        if it < args.iters - 1:
            initial -= args.lr * grad
    report = _time_report(time.perf_counter() - t0, args.iters, args.steps, comm, MPI)
    recovered = decomp.gather(problem.states[0])
    final = decomp.gather(problem.target)
    if rank0:
        print(report)
        os.makedirs(args.out, exist_ok=True)
        png = os.path.join(args.out, "distributed_heat.png")
        fields = {"true initial field": true_initial_field(args.size), f"after {args.steps} steps (target)": final}
        fields["recovered initial field"] = recovered
        print(f"wrote {png}" if _plot(fields, png) else "matplotlib is not installed: skipped the picture")
        print(f"output folder: {os.path.abspath(args.out)}")
        print(f"final loss {loss:.6e} grad_norm {grad_norm:.6e}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
