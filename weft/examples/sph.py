"""Smoothed-particle hydrodynamics: a dam break in a box, with neighbours found by ``wp.HashGrid``.

A block of water (``nx x ny x nz`` particles on a lattice of spacing ``h / 2``, 15 x 20 x 8 =
2400 by default) stands against the left wall of a closed box and collapses under gravity. The
fluid is weakly compressible (Müller et al. 2003, with the symmetric pressure force of
Monaghan 1992):

* density by summation over the neighbours within the smoothing length ``h`` (poly6 kernel);
* pressure from a linear equation of state ``p = c^2 (rho - rho0)``, clamped at zero so that
  the free surface does not pull particles together;
* acceleration ``- sum_j m (p_i / rho_i^2 + p_j / rho_j^2) grad W_spiky`` (momentum
  conserving) plus a viscous term ``mu / rho_i sum_j m (v_j - v_i) / rho_j lap W_visc`` and
  gravity;
* semi-implicit Euler, then the walls: a particle that left the box is put back on the wall
  and its normal velocity reversed and damped.

Every sub-step rebuilds the hash grid (cell width ``h``) from the current positions and makes
three launches of one thread per particle: ``density``, ``forces`` and ``integrate``. Each
neighbour loop is ``for j in wp.hash_grid_query(grid, x_i, h)`` and keeps the candidates closer
than ``h``. Threads take particles in the grid's cell order (``wp.hash_grid_point_id``), so that
neighbouring threads read neighbouring particles. The time step follows from the sound speed
(a CFL number of 0.4).

Run::

    python -m weft.examples.sph [--frames N] [--out DIR] [--no-gif] [--device cpu|cuda:0]

Outputs in DIR (default ``./examples_output/sph/``): ``sph_frames.png`` (six snapshots seen
from the side, particles coloured by speed), ``sph.gif`` (the whole run; needs pillow) and
``sph_frame_NNN.png`` for the six snapshots. Images need matplotlib and are skipped without it.
"""

from __future__ import annotations

import argparse
import math
import os
import time

import numpy as np

import weft as wp


@wp.func
def poly6(r2: float, h: float):
    """The poly6 smoothing kernel at squared distance ``r2`` (zero beyond ``h``)."""
    d = h * h - r2
    if d <= 0.0:
        return 0.0
    return 315.0 / (64.0 * wp.pi * wp.pow(h, 9.0)) * d * d * d


@wp.kernel
def density(
    grid: wp.uint64, x: wp.array(dtype=wp.vec3), mass: float, h: float, rho0: float, c2: float,
    rho: wp.array(dtype=float), p: wp.array(dtype=float),
):  # fmt: skip
    i = wp.hash_grid_point_id(grid, wp.tid())
    xi = x[i]
    s = float(0.0)
    for j in wp.hash_grid_query(grid, xi, h):
        s += poly6(wp.length_sq(x[j] - xi), h)
    rho[i] = mass * s
    p[i] = c2 * wp.max(mass * s - rho0, 0.0)


@wp.kernel
def forces(
    grid: wp.uint64, x: wp.array(dtype=wp.vec3), v: wp.array(dtype=wp.vec3), rho: wp.array(dtype=float),
    p: wp.array(dtype=float), mass: float, h: float, c: float, alpha: float, gravity: wp.vec3,
    lo: wp.vec3, hi: wp.vec3, a: wp.array(dtype=wp.vec3),
):  # fmt: skip
    i = wp.hash_grid_point_id(grid, wp.tid())
    xi = x[i]
    vi = v[i]
    pri = p[i] / (rho[i] * rho[i])
    spiky = 45.0 / (wp.pi * wp.pow(h, 6.0))  # -grad_i W_spiky = spiky (h - r)^2 (x_i - x_j) / r
    f = wp.vec3(0.0)
    for j in wp.hash_grid_query(grid, xi, h):
        d = xi - x[j]
        r = wp.length(d)
        if j != i and r < h and r > 1.0e-9:
            w = h - r
            # artificial viscosity (Monaghan): only between approaching particles
            vd = wp.dot(vi - v[j], d)
            visc = float(0.0)
            if vd < 0.0:
                visc = -alpha * c * h * vd / (0.5 * (rho[i] + rho[j]) * (r * r + 0.01 * h * h))
            f += (mass * (pri + p[j] / (rho[j] * rho[j]) + visc) * spiky * w * w / r) * d
    # walls: a stiff damped spring within h / 4 of each face
    stiff = c * c / h
    reach = 0.25 * h
    for k in range(3):
        below = reach - (xi[k] - lo[k])
        if below > 0.0:
            f[k] += stiff * below - 2.0 * wp.sqrt(stiff) * wp.min(vi[k], 0.0)
        above = reach - (hi[k] - xi[k])
        if above > 0.0:
            f[k] -= stiff * above + 2.0 * wp.sqrt(stiff) * wp.max(vi[k], 0.0)
    a[i] = f + gravity


@wp.kernel
def integrate(
    x: wp.array(dtype=wp.vec3), v: wp.array(dtype=wp.vec3), a: wp.array(dtype=wp.vec3), dt: float,
    lo: wp.vec3, hi: wp.vec3, restitution: float,
):  # fmt: skip
    i = wp.tid()
    vi = v[i] + a[i] * dt
    xi = x[i] + vi * dt
    for k in range(3):
        if xi[k] < lo[k]:
            xi[k] = lo[k]
            vi[k] = -restitution * vi[k]
        elif xi[k] > hi[k]:
            xi[k] = hi[k]
            vi[k] = -restitution * vi[k]
    x[i] = xi
    v[i] = vi


class DamBreak:
    """The simulation state and parameters; ``step()`` advances one sub-step, ``frame()`` one
    frame (``fps`` per second), ``positions()`` / ``speeds()`` read the particles back.

    Args:
        nx, ny, nz: particles of the initial block along x (across the box), y (up), z (depth).
        h: smoothing length [m] (also the hash grid's cell width); particles start ``h / 2`` apart.
        box: the box's size (x, y, z) [m]; its lower corner is the origin.
        fps: frames per second of ``frame()``.
        device: where the particles live and every launch runs.
    """

    def __init__(self, nx=15, ny=20, nz=8, h=0.04, box=(0.8, 0.6, 0.16), fps=30, device=None):
        self.device = wp.get_device(device)
        self.h, self.fps = float(h), fps
        self.box = np.asarray(box, dtype=np.float32)
        self.n = nx * ny * nz
        spacing = 0.5 * self.h
        g = np.stack(np.meshgrid(np.arange(nx), np.arange(ny), np.arange(nz), indexing="ij"), -1).reshape(-1, 3)
        start = (g + 0.5) * spacing + np.random.default_rng(0).uniform(-0.01, 0.01, (self.n, 3)) * spacing
        self.rho0 = 1000.0
        self.gravity = wp.vec3(0.0, -9.81, 0.0)
        c = 8.0 * math.sqrt(2.0 * 9.81 * ny * spacing)  # 8 x the fastest flow: ~2 % density variation
        self.c2 = c * c
        self.c = c
        self.alpha = 0.08  # artificial viscosity
        self.restitution = 0.3
        self.substeps = max(1, math.ceil(1.0 / (fps * 0.4 * self.h / c)))
        self.dt = 1.0 / (fps * self.substeps)
        self.lo = wp.vec3(0.0, 0.0, 0.0)
        self.hi = wp.vec3(*[float(b) for b in self.box])
        dev = self.device
        self.x = wp.array(start.astype(np.float32), dtype=wp.vec3, device=dev)
        self.v = wp.zeros(self.n, dtype=wp.vec3, device=dev)
        self.a = wp.zeros(self.n, dtype=wp.vec3, device=dev)
        self.rho = wp.zeros(self.n, dtype=float, device=dev)
        self.p = wp.zeros(self.n, dtype=float, device=dev)
        dims = [max(1, math.ceil(b / self.h)) for b in self.box]
        self.grid = wp.HashGrid(*dims, device=dev)
        # the lattice's summation density is not rho0: pick the mass that makes the fullest particle rho0
        self.mass = 1.0
        self._density()
        self.mass = self.rho0 / float(self.rho.numpy().max())
        self.time = 0.0

    def _density(self):
        self.grid.build(self.x, self.h)
        inputs = [self.grid.id, self.x, self.mass, self.h, self.rho0, self.c2]
        wp.launch(density, self.n, inputs, [self.rho, self.p], device=self.device)

    def step(self):
        """Advance one sub-step of ``dt`` seconds."""
        self._density()
        inputs = [self.grid.id, self.x, self.v, self.rho, self.p, self.mass, self.h, self.c, self.alpha, self.gravity]
        wp.launch(forces, self.n, inputs + [self.lo, self.hi], [self.a], device=self.device)
        inputs = [self.x, self.v, self.a, self.dt, self.lo, self.hi, self.restitution]
        wp.launch(integrate, self.n, inputs, device=self.device)
        self.time += self.dt

    def frame(self):
        """Advance one frame (``substeps`` sub-steps)."""
        for _ in range(self.substeps):
            self.step()

    def positions(self) -> np.ndarray:
        return self.x.numpy().copy()

    def speeds(self) -> np.ndarray:
        return np.linalg.norm(self.v.numpy(), axis=1)


# ---------------------------------------------------------------------------------- rendering


def _matplotlib():
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt

        return plt
    except ImportError:
        return None


def _draw(ax, sim: DamBreak, x, speed, t):
    """Side view (x right, y up) of one frame, particles coloured by speed, far ones drawn first."""
    order = np.argsort(-x[:, 2])
    ax.scatter(x[order, 0], x[order, 1], c=speed[order], s=6, cmap="viridis", vmin=0.0, vmax=3.0, linewidths=0)
    ax.set_xlim(0.0, sim.box[0])
    ax.set_ylim(0.0, sim.box[1])
    ax.set_aspect("equal")
    ax.set_xticks([])
    ax.set_yticks([])
    ax.set_title(f"t = {t:.2f} s", fontsize=10)


def write_pictures(sim: DamBreak, frames, out: str, gif: bool) -> list:
    """Six snapshots (one PNG each and a 2 x 3 sheet) and optionally a GIF of ``frames``
    (``(t, positions, speeds)`` per frame). Returns the paths written (none without matplotlib)."""
    plt = _matplotlib()
    if plt is None:
        return []
    written = []
    last = len(frames) - 1
    picks = sorted({0, last // 5, 2 * last // 5, 3 * last // 5, 4 * last // 5, last})
    sheet = plt.figure(figsize=(12, 6.2))
    for k, f in enumerate(picks):
        t, x, speed = frames[f]
        _draw(sheet.add_subplot(2, 3, k + 1), sim, x, speed, t)
        fig = plt.figure(figsize=(5, 4))
        _draw(fig.add_subplot(1, 1, 1), sim, x, speed, t)
        path = os.path.join(out, f"sph_frame_{f:03d}.png")
        fig.savefig(path, dpi=80)
        plt.close(fig)
        written.append(path)
    sheet.suptitle(f"SPH dam break: {sim.n} particles, hash grid neighbour queries (colour: speed, 0-3 m/s)")
    sheet.tight_layout()
    path = os.path.join(out, "sph_frames.png")
    sheet.savefig(path, dpi=80)
    plt.close(sheet)
    written.append(path)
    if gif:
        try:
            import PIL  # noqa: F401
            from matplotlib.animation import FuncAnimation, PillowWriter
        except ImportError:
            return written
        fig = plt.figure(figsize=(5, 4))
        ax = fig.add_subplot(1, 1, 1)

        def show(f):
            ax.clear()
            _draw(ax, sim, frames[f][1], frames[f][2], frames[f][0])

        path = os.path.join(out, "sph.gif")
        FuncAnimation(fig, show, frames=range(0, len(frames), 2)).save(path, writer=PillowWriter(fps=15), dpi=60)
        plt.close(fig)
        written.append(path)
    return written


def main(argv=None) -> int:
    """Run the example from the command line (``argv``: the arguments, default ``sys.argv[1:]``).

    Returns:
        The exit status: 0, or 1 when the simulation produced non-finite positions.
    """
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--frames", type=int, default=36, help="simulated frames at 30 fps (default 36)")
    parser.add_argument("--no-gif", action="store_true", help="skip the animated GIF")
    parser.add_argument("--out", default=os.path.join(".", "examples_output", "sph"), help="output folder")
    parser.add_argument("--device", default="cpu", help="weft device that runs everything (default cpu; e.g. cuda:0)")
    args = parser.parse_args(argv)

    t0 = time.perf_counter()
    sim = DamBreak(device=args.device)
    print(
        f"sph on {sim.device}: {sim.n} particles, h = {sim.h} m, {args.frames} frames x {sim.substeps} sub-steps "
        f"(dt = {sim.dt * 1e3:.3f} ms), hash grid {sim.grid._dim_x}x{sim.grid._dim_y}x{sim.grid._dim_z}"
    )
    frames = [(0.0, sim.positions(), sim.speeds())]
    for _ in range(args.frames):
        sim.frame()
        frames.append((sim.time, sim.positions(), sim.speeds()))
    elapsed = time.perf_counter() - t0
    x = frames[-1][1]
    steps = args.frames * sim.substeps
    print(
        f"simulated {sim.time:.2f} s in {elapsed:.2f} s ({1e3 * elapsed / max(steps, 1):.2f} ms per sub-step, "
        f"build included); front at x = {x[:, 0].max():.3f} m, max density {sim.rho.numpy().max() / sim.rho0:.3f} rho0"
    )
    if not np.all(np.isfinite(x)):
        print("warning: the simulation produced non-finite positions")
        return 1
    os.makedirs(args.out, exist_ok=True)
    written = write_pictures(sim, frames, args.out, gif=not args.no_gif)
    if written:
        print(f"wrote {len(written)} pictures to {os.path.abspath(args.out)}")
    else:
        print(f"matplotlib is not installed: no pictures (output folder {os.path.abspath(args.out)})")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
