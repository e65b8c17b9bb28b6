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

    python -m weft.examples.torch_optimize [--iters N] [--lr LR] [--device cpu|cuda:0]

Everything runs on ``--device`` (default ``cpu``): the parameters, observations and the loss are
torch tensors on the matching torch device (``wp.device_to_torch``: torch ``"cuda:0"`` for weft
``"cuda:0"``), the bridge shares them with weft without copying, and the simulation allocates its
arrays and launches its kernels where the parameters live. A GPU run needs a CUDA build of torch.

It prints the device, the loss every few iterations, falling by orders of magnitude, and the
recovered drag. Needs PyTorch (``pip install torch``).
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
    """Record the simulation on the active tape; return the positions of every frame.

    Args:
        v0: every particle's launch velocity, a weft array of ``n`` vec3s.
        drag: the drag coefficient, a weft array of one float on the same device as ``v0``.

    Returns:
        The positions, a ``(FRAMES + 1, n)`` vec3 array on ``v0``'s device, where every launch runs.
    """
    n = v0.shape[0]
    device = v0.device
    x = wp.zeros((FRAMES + 1, n), dtype=wp.vec3, requires_grad=True, device=device)
    v = wp.zeros((FRAMES + 1, n), dtype=wp.vec3, requires_grad=True, device=device)
    wp.launch(init, dim=n, inputs=[v0, x, v], device=device)
    for t in range(FRAMES):
        wp.launch(step, dim=n, inputs=[x, v, drag, t, DT, wp.vec3(*GRAVITY)], device=device)
    return x


# the recorded simulation as a differentiable torch op; argument 0 is a (n, 3) tensor of vec3s
simulate_op = wp.torch_function(simulate, dtypes=[wp.vec3])


def torch_device(device=None) -> str:
    """The torch device matching a weft device (None: the current default device, ``wp.get_device()``):
    ``"cpu"`` or ``"cuda:N"``."""
    return wp.device_to_torch(wp.get_device(device))


def make_problem(n: int = 16, seed: int = 0, device=None):
    """Hidden true parameters, the observations they produce, and a poor initial guess.

    Args:
        n: number of particles.
        seed: seed of the (CPU) generator of the true launch velocities, so that every device
            fits the same problem.
        device: the weft device to run on (None: ``wp.get_device()``); the tensors are made on
            the matching torch device.

    Returns:
        ``(observed, v0, drag, true_v0, true_drag)``: the observed positions, the initial guesses
        (leaf tensors that require grad) and the true parameters.
    """
    import torch

    where = torch_device(device)
    gen = torch.Generator().manual_seed(seed)
    # drawn on the CPU whatever torch's default device is (the generator is a CPU one)
    scale, offset = torch.tensor([6.0, 4.0, 6.0], device="cpu"), torch.tensor([-3.0, 4.0, -3.0], device="cpu")
    true_v0 = (torch.rand(n, 3, generator=gen, device="cpu") * scale + offset).to(where)
    true_drag = torch.tensor([0.15], device=where)
    with torch.no_grad():
        observed = simulate_op(true_v0, true_drag)[list(OBSERVED)].clone()
    v0 = torch.zeros(n, 3, device=where)
    v0[:, 1] = 5.0
    drag = torch.tensor([0.02], device=where, requires_grad=True)
    return observed, v0.requires_grad_(), drag, true_v0, true_drag


def optimize(iters: int = 100, lr: float = 0.25, log=None, device=None):
    """Adam on the launch velocities and the drag coefficient.

    Args:
        iters: Adam steps.
        lr: learning rate of the launch velocities (the drag's is ``0.08 lr``).
        log: called as ``log(iteration, loss, drag)`` (floats) for every iteration.
        device: the weft device that runs the simulation (None: ``wp.get_device()``); the torch
            tensors live on the matching torch device, ``torch_device(device)``.

    Returns:
        ``(losses, v0_error, drag)``: the loss of every iteration, the largest error of the
        fitted launch velocities and the fitted drag coefficient.
    """
    import torch

    observed, v0, drag, true_v0, _ = make_problem(device=device)
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
    """Run the example from the command line (``argv``: the arguments, default ``sys.argv[1:]``).

    Returns:
        The exit status: 0 if the loss fell, 1 if it did not or torch is missing.
    """
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--iters", type=int, default=100, help="Adam iterations (default 100)")
    parser.add_argument("--lr", type=float, default=0.25, help="learning rate for the velocities (default 0.25)")
    parser.add_argument("--device", default="cpu", help="weft device that runs everything (default cpu; e.g. cuda:0)")
    args = parser.parse_args(argv)
    try:
        import torch
    except ImportError:
        print("this example needs PyTorch: pip install torch")
        return 1
    device = wp.get_device(args.device)
    if device.is_cuda and not torch.cuda.is_available():
        print(f"running on {device} needs a CUDA build of PyTorch; this torch ({torch.__version__}) has no CUDA")
        return 1
    print(
        f"torch_optimize on {device} ({device.name}; torch device {torch_device(device)}): 16 particles, "
        f"{FRAMES} step launches per simulation, fitting launch velocities and drag to positions observed "
        f"at frames {OBSERVED} (true drag 0.15)"
    )
    every = max(1, args.iters // 10)

    def log(it, value, drag):
        if it % every == 0 or it == args.iters:
            print(f"  iter {it:4d}  loss {value:.6f}  drag {drag:.4f}")

    t0 = time.perf_counter()
    losses, v0_error, drag = optimize(args.iters, args.lr, log, device=device)
    print(
        f"optimised on {device} in {time.perf_counter() - t0:.2f} s: loss {losses[0]:.4g} -> {losses[-1]:.4g}; "
        f"drag {drag:.4f} (true 0.15), largest launch-velocity error {v0_error:.4f}"
    )
    return 0 if np.isfinite(losses[-1]) and losses[-1] < losses[0] else 1


if __name__ == "__main__":
    sys.exit(main())
