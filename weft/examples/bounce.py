"""Differentiable bouncing ball: find the throw that lands the ball on a target.

A ball of radius ``radius`` is thrown from ``start`` in 2-D under gravity. It bounces off the
ground plane (y = 0) and off a vertical wall (x = ``wall_x``). Contacts are soft: while the
ball penetrates a surface, a penalty force pushes it out (a spring whose force ramps in
quadratically, times a Hunt-Crossley damping factor, plus a little smoothed Coulomb friction
on the ground). The force is C1 in the state, so the simulated map from initial velocity to
final position is C1 too; with a plain ``ke * depth`` spring (or a damper that switches on at
first contact) the loss gets a saw-tooth at the scale of one sub-step and its exact gradient
jumps around, which stalls gradient descent. Sub-steps are short (64 per frame) for the same
reason: the time-discretisation ripple in the loss shrinks with the step.

Every simulation records, on one ``wp.Tape``:

* one launch of ``init`` (copies the initial velocity, the parameter we optimise, into the
  state arrays),
* ``steps`` (100) launches of ``step``, one per frame; each frame integrates ``substeps``
  symplectic-Euler sub-steps, reading row ``t`` of the state arrays and writing row ``t + 1``,
* one launch of ``loss`` (squared distance between the ball's final position and the target).

Each optimisation iteration runs the tape forward, calls ``tape.backward(loss)``, takes a
gradient-descent step on the initial velocity with the ``sgd`` kernel, and resets the tape.

Run::

    python -m weft.examples.bounce [--iters N] [--out DIR] [--device cpu|cuda:0]

Everything runs on ``--device`` (default ``cpu``): the state arrays, the parameter and every
launch, forward and adjoint. The host reads results (losses, trajectories) with ``.numpy()``,
which copies them from a GPU. It prints the device, the loss every few iterations and writes
``bounce.png`` (trajectories + loss curve; needs matplotlib, otherwise the plot is skipped) and
``loss.txt`` into DIR (default ``./examples_output/bounce/``).

The kernels are built by ``make_kernels(dtype)`` so the same simulation runs in float32 (the
demo) or float64 (the finite-difference gradient check in ``tests/test_example_bounce.py``).
"""

import argparse
import os
import sys
import time

import numpy as np

import weft as wp

_KERNELS: dict = {}


def make_kernels(dtype=wp.float32):
    """The simulation kernels for scalar type ``dtype`` (``wp.float32`` or ``wp.float64``),
    built once per dtype. Returns a dict with keys ``init``, ``step``, ``loss`` and ``sgd``."""
    key = dtype
    if key in _KERNELS:
        return _KERNELS[key]

    @wp.kernel
    def init(
        start: wp.array(dtype=dtype),
        v0: wp.array(dtype=dtype),
        q: wp.array2d(dtype=dtype),
        v: wp.array2d(dtype=dtype),
    ):
        # q[t, :] / v[t, :]: position / velocity (x, y) at frame t; row 0 is the initial state.
        i = wp.tid()
        q[0, i] = start[i]
        v[0, i] = v0[i]

    @wp.func
    def contact_force(d: dtype, vn: dtype, ke: dtype, kd: dtype, eps: dtype):
        # Normal force (per unit mass) for penetration depth d and normal velocity vn
        # (positive = separating). The spring ramps in quadratically over the first eps of
        # penetration and is linear (stiffness ke) beyond, so the force is C1 in d: the
        # simulation, and thus the loss, stays differentiable when a contact starts. The
        # Hunt-Crossley damping factor (1 - kd vn) makes bounces inelastic.
        s = d * 0.0
        if d > eps:
            s = ke * (d - 0.5 * eps)
        elif d > 0.0:
            s = 0.5 * ke * d * d / eps
        return wp.max(s * (1.0 - kd * vn), 0.0)

    @wp.kernel
    def step(
        q: wp.array2d(dtype=dtype),
        v: wp.array2d(dtype=dtype),
        t: int,
        substeps: int,
        dt: dtype,
        gravity: dtype,
        radius: dtype,
        wall_x: dtype,
        ke: dtype,
        kd: dtype,
        mu: dtype,
        eps: dtype,
    ):
        # One frame: read state t, integrate `substeps` sub-steps, write state t + 1.
        x = q[t, 0]
        y = q[t, 1]
        vx = v[t, 0]
        vy = v[t, 1]
        for _s in range(substeps):
            # ground (y = 0): normal force plus smoothed Coulomb friction mu f tanh(2 vx)
            f = contact_force(radius - y, vy, ke, kd, eps)
            ax = -mu * f * wp.tanh(vx * 2.0)
            ay = gravity + f
            # wall (x = wall_x): pushes the ball back to the left
            ax = ax - contact_force(x + radius - wall_x, -vx, ke, kd, eps)
            vx = vx + ax * dt
            vy = vy + ay * dt
            x = x + vx * dt
            y = y + vy * dt
        q[t + 1, 0] = x
        q[t + 1, 1] = y
        v[t + 1, 0] = vx
        v[t + 1, 1] = vy

    @wp.kernel
    def loss(
        q: wp.array2d(dtype=dtype),
        t: int,
        target_x: dtype,
        target_y: dtype,
        out: wp.array(dtype=dtype),
    ):
        dx = q[t, 0] - target_x
        dy = q[t, 1] - target_y
        out[0] = dx * dx + dy * dy

    @wp.kernel
    def sgd(x: wp.array(dtype=dtype), g: wp.array(dtype=dtype), lr: dtype):
        i = wp.tid()
        x[i] = x[i] - lr * g[i]

    kernels = {"init": init, "step": step, "loss": loss, "sgd": sgd}
    _KERNELS[key] = kernels
    return kernels


class BounceSim:
    """The ball, the scene and the recorded simulation.

    Args:
        dtype: ``wp.float32`` or ``wp.float64``.
        steps: recorded frames (kernel launches) per simulation.
        substeps: integration sub-steps inside each frame's launch.
        frame_dt: simulated seconds per frame.
        ke: contact stiffness (acceleration per metre of penetration; the ball has unit mass).
        kd: Hunt-Crossley damping [s/m]: the normal force is scaled by ``1 - kd * v_separating``.
        mu: ground friction coefficient.
        contact_eps: penetration over which the contact spring ramps in quadratically.
        device: where the arrays live and the kernels run (``"cpu"``, ``"cuda:0"``, a ``wp.Device``);
            None: the current default device, ``wp.get_device()``. Parameters passed to ``forward``
            and ``loss_and_grad`` must live there too.
    """

    def __init__(
        self,
        dtype=wp.float32,
        steps: int = 100,
        substeps: int = 64,
        frame_dt: float = 0.02,
        start=(0.0, 1.0),
        target=(0.5, 0.5),
        radius: float = 0.1,
        wall_x: float = 2.5,
        gravity: float = -9.8,
        ke: float = 4.0e4,
        kd: float = 0.05,
        mu: float = 0.05,
        contact_eps: float = 0.02,
        device=None,
    ):
        self.device = wp.get_device(device)
        self.dtype = dtype
        self.kernels = make_kernels(dtype)
        self.steps = steps
        self.substeps = substeps
        self.frame_dt = frame_dt
        self.dt = frame_dt / substeps
        self.start = np.asarray(start, dtype=np.float64)
        self.target = np.asarray(target, dtype=np.float64)
        self.radius = radius
        self.wall_x = wall_x
        self.gravity = gravity
        self.ke, self.kd, self.mu, self.contact_eps = ke, kd, mu, contact_eps

        self.start_arr = wp.array(self.start, dtype=dtype, device=self.device)
        self.q = wp.zeros((steps + 1, 2), dtype=dtype, requires_grad=True, device=self.device)
        self.v = wp.zeros((steps + 1, 2), dtype=dtype, requires_grad=True, device=self.device)
        self.loss = wp.zeros(1, dtype=dtype, requires_grad=True, device=self.device)
        self.tape = wp.Tape()

    def forward(self, v0):
        """Record the whole simulation and the loss on ``self.tape`` (launches run as recorded).
        ``v0`` is a weft array of 2 on ``self.device``."""
        k = self.kernels
        with self.tape:
            wp.launch(k["init"], dim=2, inputs=[self.start_arr, v0, self.q, self.v], device=self.device)
            for t in range(self.steps):
                wp.launch(
                    k["step"],
                    dim=1,
                    inputs=[
                        self.q,
                        self.v,
                        t,
                        self.substeps,
                        self.dt,
                        self.gravity,
                        self.radius,
                        self.wall_x,
                        self.ke,
                        self.kd,
                        self.mu,
                        self.contact_eps,
                    ],
                    device=self.device,
                )
            wp.launch(
                k["loss"],
                dim=1,
                inputs=[self.q, self.steps, float(self.target[0]), float(self.target[1])],
                outputs=[self.loss],
                device=self.device,
            )
        return self.loss

    def trajectory(self) -> np.ndarray:
        """Positions of the last simulation, shape (steps + 1, 2)."""
        return self.q.numpy().astype(np.float64)

    def loss_and_grad(self, v0):
        """Simulate from initial velocity ``v0`` (a weft array of 2 on ``self.device``, with
        requires_grad) and return ``(loss, dloss/dv0)`` as a float and a NumPy array. Leaves the tape reset."""
        self.forward(v0)
        self.tape.backward(self.loss)
        value = float(self.loss.numpy()[0])
        grad = v0.grad.numpy().astype(np.float64).copy()
        self.tape.zero()
        self.tape.reset()
        return value, grad

    def eval_loss(self, v0_np) -> float:
        """Loss of a throw given as a NumPy pair (no tape); used for finite differences."""
        v0 = wp.array(np.asarray(v0_np, dtype=np.float64), dtype=self.dtype, device=self.device)
        self.forward(v0)
        self.tape.reset()
        return float(self.loss.numpy()[0])


def optimize(sim: BounceSim, v0_init, iters: int = 40, lr: float = 0.2, max_step: float = 1.0, log=None):
    """Gradient descent on the initial velocity.

    Each iteration: tape forward, ``tape.backward(loss)``, an ``sgd`` launch on the velocity,
    ``tape.zero()`` and ``tape.reset()``. The gradient is clipped to ``max_step / lr`` in norm so
    that a single step never moves the velocity by more than ``max_step`` (stiff contacts give
    occasional large gradients). Everything runs on ``sim.device``; the losses and trajectories
    are read back with ``.numpy()``.

    Args:
        sim: the simulation (its ``device`` is where the velocity is allocated and updated).
        v0_init: the initial guess, two numbers.
        iters: gradient-descent steps.
        lr: learning rate.
        max_step: the largest change of the velocity in one step.
        log: called as ``log(iteration, loss, v0)`` (``v0`` a NumPy pair) for every iteration.

    Returns:
        ``(v0, losses, trajectories)``: the final velocity (NumPy), the loss of every iteration,
        and ``{iteration: positions}`` for the trajectories simulated at each iteration.
    """
    v0 = wp.array(np.asarray(v0_init, dtype=np.float64), dtype=sim.dtype, requires_grad=True, device=sim.device)
    losses, trajectories = [], {}
    for it in range(iters + 1):
        sim.forward(v0)
        value = float(sim.loss.numpy()[0])
        losses.append(value)
        trajectories[it] = sim.trajectory()
        if log is not None:
            log(it, value, v0.numpy())
        if it == iters:  # the last entry only evaluates the final velocity
            sim.tape.reset()
            break
        sim.tape.backward(sim.loss)
        g = v0.grad.numpy().astype(np.float64)
        norm = float(np.linalg.norm(g))
        if norm * lr > max_step:
            v0.grad.assign((g * (max_step / (lr * norm))).astype(v0.grad.numpy().dtype))
        wp.launch(sim.kernels["sgd"], dim=2, inputs=[v0, v0.grad, lr], device=sim.device)
        sim.tape.zero()
        sim.tape.reset()
    return v0.numpy().astype(np.float64), losses, trajectories


def plot(sim: BounceSim, losses, trajectories, path) -> bool:
    """Write the trajectories and the loss curve to ``path``; False if matplotlib is missing."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return False

    iters = sorted(trajectories)
    last = iters[-1]
    shown = sorted({0, last // 8, last // 4, last // 2, last})
    fig, (ax, ax_loss) = plt.subplots(1, 2, figsize=(13, 5), gridspec_kw={"width_ratios": [1.6, 1]})
    cmap = plt.get_cmap("viridis")
    for k, it in enumerate(shown):
        traj = trajectories[it]
        label = "initial" if it == 0 else ("final" if it == last else "intermediate")
        color = cmap(k / max(len(shown) - 1, 1))
        ax.plot(
            traj[:, 0],
            traj[:, 1],
            "-",
            color=color,
            lw=2.2 if it in (0, last) else 1.2,
            label=f"iter {it} ({label}), loss {losses[it]:.3g}",
        )
        # the ball (true radius) where each simulation ends
        ax.add_patch(plt.Circle(tuple(traj[-1]), sim.radius, color=color, fill=False, lw=1.5))
    ax.plot(*sim.start, "ks", ms=7, label="start")
    ax.plot(*sim.target, "r*", ms=18, label="target")
    ax.axhline(0.0, color="saddlebrown", lw=3)
    ax.axvline(sim.wall_x, color="gray", lw=3)
    ax.set_xlabel("x [m]")
    ax.set_ylabel("y [m]")
    ax.set_title(f"ball trajectories ({sim.steps} frames, ground y = 0, wall x = {sim.wall_x})")
    ax.set_aspect("equal")
    ax.set_xlim(-0.3, sim.wall_x + 0.2)
    ax.set_ylim(-0.1, 1.65)
    ax.legend(fontsize=8, loc="upper center", ncol=2)
    ax.grid(alpha=0.3)

    ax_loss.semilogy(range(len(losses)), losses, "o-", ms=3)
    ax_loss.set_xlabel("iteration")
    ax_loss.set_ylabel("loss (squared distance to target)")
    ax_loss.set_title("loss")
    ax_loss.grid(alpha=0.3, which="both")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return True


def main(argv=None) -> int:
    """Run the example from the command line (``argv``: the arguments, default ``sys.argv[1:]``).

    Returns:
        The exit status, 0.
    """
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--iters", type=int, default=40, help="gradient-descent iterations (default 40)")
    parser.add_argument("--lr", type=float, default=0.2, help="learning rate (default 0.2)")
    parser.add_argument("--out", default=os.path.join(".", "examples_output", "bounce"), help="output folder")
    parser.add_argument("--device", default="cpu", help="weft device that runs everything (default cpu; e.g. cuda:0)")
    args = parser.parse_args(argv)

    device = wp.get_device(args.device)
    sim = BounceSim(device=device)
    v0_init = (2.0, 1.0)
    print(
        f"bounce on {device} ({device.name}): {sim.steps} step launches per simulation ({sim.substeps} sub-steps "
        f"each), start {tuple(sim.start.tolist())}, target {tuple(sim.target.tolist())}, initial velocity {v0_init}"
    )
    every = max(1, args.iters // 10)

    def log(it, value, v):
        if it % every == 0 or it == args.iters:
            print(f"  iter {it:4d}  loss {value:.6f}  v0 = ({v[0]:+.4f}, {v[1]:+.4f})")

    t0 = time.perf_counter()
    v0, losses, trajectories = optimize(sim, v0_init, iters=args.iters, lr=args.lr, log=log)
    elapsed = time.perf_counter() - t0
    final = trajectories[args.iters][-1]
    print(
        f"optimised on {device} in {elapsed:.2f} s: loss {losses[0]:.4g} -> {losses[-1]:.4g}; "
        f"v0 = ({v0[0]:.4f}, {v0[1]:.4f}); final position ({final[0]:.4f}, {final[1]:.4f})"
    )

    os.makedirs(args.out, exist_ok=True)
    np.savetxt(os.path.join(args.out, "loss.txt"), np.asarray(losses), header=f"loss per iteration, on {device}")
    png = os.path.join(args.out, "bounce.png")
    if plot(sim, losses, trajectories, png):
        print(f"wrote {png}")
    else:
        print("matplotlib is not installed: skipped the plot (pip install matplotlib)")
    print(f"output folder: {os.path.abspath(args.out)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
