"""Fit simulation parameters with ``torch.optim.Adam`` through a weft simulation.

``n`` particles are thrown from the origin under gravity and quadratic air drag. A weft tape
records the simulation (one ``init`` launch, then one ``step`` launch per frame); the bridge
``wp.torch_function`` turns the whole recorded simulation into a differentiable torch op that
maps the parameters (every particle's launch velocity, a ``(n, 3)`` tensor seen by the kernels as
``wp.vec3``, and the drag coefficient) to the trajectories, a ``(frames + 1, n, 3)`` tensor.

The loss is computed in torch: the mean squared distance between simulated and "observed"
positions at a few frames, where the observations were simulated with hidden true parameters.
Adam recovers those parameters; gradients flow torch → weft adjoint kernels → torch.

Run::

    python -m weft.examples.torch_optimize [--iters N] [--lr LR]

It prints the loss every few iterations, falling by orders of magnitude, and the recovered drag.
Needs PyTorch (``pip install torch``).
"""

import argparse
import sys
import time

import numpy as np

import weft as wp

FRAMES = 60
DT = 1.0 / 60.0
OBSERVED = (20, 40, 60)  # frames at which the positions are observed
GRAVITY = (0.0, -9.8, 0.0)


@wp.kernel
def init(v0: wp.array(dtype=wp.vec3), x: wp.array2d(dtype=wp.vec3), v: wp.array2d(dtype=wp.vec3)):
    i = wp.tid()
    x[0, i] = wp.vec3(0.0, 0.0, 0.0)
    v[0, i] = v0[i]


@wp.kernel
def step(
    x: wp.array2d(dtype=wp.vec3),
    v: wp.array2d(dtype=wp.vec3),
    drag: wp.array(dtype=float),
    t: int,
    dt: float,
    gravity: wp.vec3,
):
    # semi-implicit Euler with quadratic drag: reads frame t, writes frame t + 1
    i = wp.tid()
    vel = v[t, i]
    acc = gravity - drag[0] * wp.length(vel) * vel
    vel = vel + acc * dt
    x[t + 1, i] = x[t, i] + vel * dt
    v[t + 1, i] = vel


def simulate(v0, drag):
    """Record the simulation on the active tape; return the positions of every frame."""
    n = v0.shape[0]
    x = wp.zeros((FRAMES + 1, n), dtype=wp.vec3, requires_grad=True)
    v = wp.zeros((FRAMES + 1, n), dtype=wp.vec3, requires_grad=True)
    wp.launch(init, dim=n, inputs=[v0, x, v])
    for t in range(FRAMES):
        wp.launch(step, dim=n, inputs=[x, v, drag, t, DT, wp.vec3(*GRAVITY)])
    return x


# the recorded simulation as a differentiable torch op; argument 0 is a (n, 3) tensor of vec3s
simulate_op = wp.torch_function(simulate, dtypes=[wp.vec3])


def make_problem(n: int = 16, seed: int = 0):
    """Hidden true parameters, the observations they produce, and a poor initial guess."""
    import torch

    gen = torch.Generator().manual_seed(seed)
    true_v0 = torch.rand(n, 3, generator=gen) * torch.tensor([6.0, 4.0, 6.0]) + torch.tensor([-3.0, 4.0, -3.0])
    true_drag = torch.tensor([0.15])
    with torch.no_grad():
        observed = simulate_op(true_v0, true_drag)[list(OBSERVED)].clone()
    v0 = torch.zeros(n, 3)
    v0[:, 1] = 5.0
    return observed, v0.requires_grad_(), torch.tensor([0.02], requires_grad=True), true_v0, true_drag


def optimize(iters: int = 100, lr: float = 0.25, log=None):
    """Adam on the launch velocities and the drag coefficient.

    Returns ``(losses, v0_error, drag)``: the loss of every iteration, the largest error of the
    fitted launch velocities and the fitted drag coefficient.
    """
    import torch

    observed, v0, drag, true_v0, _ = make_problem()
    opt = torch.optim.Adam([{"params": [v0]}, {"params": [drag], "lr": lr * 0.08}], lr=lr)
    losses = []
    for it in range(iters + 1):
        opt.zero_grad()
        traj = simulate_op(v0, drag)
        loss = ((traj[list(OBSERVED)] - observed) ** 2).sum(dim=-1).mean()
        losses.append(loss.item())
        if log is not None:
            log(it, loss.item(), drag.item())
        if it == iters:
            break
        loss.backward()
        opt.step()
        with torch.no_grad():
            drag.clamp_(min=0.0)
    return losses, (v0 - true_v0).abs().max().item(), drag.item()


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--iters", type=int, default=100, help="Adam iterations (default 100)")
    parser.add_argument("--lr", type=float, default=0.25, help="learning rate for the velocities (default 0.25)")
    args = parser.parse_args(argv)
    try:
        import torch  # noqa: F401
    except ImportError:
        print("this example needs PyTorch: pip install torch")
        return 1
    print(
        f"torch_optimize: 16 particles, {FRAMES} step launches per simulation, fitting launch velocities "
        f"and drag to positions observed at frames {OBSERVED} (true drag 0.15)"
    )
    every = max(1, args.iters // 10)

    def log(it, value, drag):
        if it % every == 0 or it == args.iters:
            print(f"  iter {it:4d}  loss {value:.6f}  drag {drag:.4f}")

    t0 = time.perf_counter()
    losses, v0_error, drag = optimize(args.iters, args.lr, log)
    print(
        f"optimised in {time.perf_counter() - t0:.2f} s: loss {losses[0]:.4g} -> {losses[-1]:.4g}; "
        f"drag {drag:.4f} (true 0.15), largest launch-velocity error {v0_error:.4f}"
    )
    return 0 if np.isfinite(losses[-1]) and losses[-1] < losses[0] else 1


if __name__ == "__main__":
    sys.exit(main())
