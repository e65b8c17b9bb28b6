"""Differentiable mass-spring cloth: throw a square of cloth so that it drapes over a sphere.

A square cloth of ``n x n`` particles (32 x 32 by default, 1.6 m wide) starts flat, above
and to the side of a sphere resting on the ground, with an initial velocity ``v0`` shared by
every particle. It falls under gravity, hits the sphere and drapes over it. Forces:

* springs (Hooke spring + damper along the spring) to the 4 grid neighbours (structural) and
  along the diagonals of every grid cell (shear);
* bending: a quadratic energy ``0.5 k |x_a - 2 x_b + x_c|^2`` on every three consecutive
  particles along a grid row or column. Unlike "bend springs" between particles two cells
  apart, it resists out-of-plane zig-zags of the flat sheet linearly. With bend springs only,
  the sheet crumples at the grid scale when it is compressed against the sphere; that
  buckling is chaotic (a 1e-9 perturbation of the start changed the loss by 10 %) and its
  gradient is useless;
* contact with the sphere and the ground: a soft penalty force, as in ``bounce.py``: a spring
  whose force ramps in quadratically over the first ``contact_eps`` of penetration (C1 in the
  state), times a damping factor ``exp(-kd v_n)`` (smooth, unlike a clamped Hunt-Crossley
  ``max(1 - kd v_n, 0)``, whose kinks made finite differences disagree with the gradient at
  the 1e-3 level), plus friction: a smoothed Coulomb force ``mu f_n`` against the tangential
  velocity, applied implicitly (``v_t / (1 + dt mu f_n / sqrt(|v_t|^2 + eps^2))``), so that
  it never reverses the sliding direction however stiff it gets;
* gravity (a vec3) and a little air drag.

Time integration is semi-implicit (symplectic) Euler with ``substeps`` (16) sub-steps per
frame at 60 frames per second. Every sub-step is three launches recorded on one ``wp.Tape``:

* ``springs`` (one thread per spring) and ``bending`` (one thread per triple) accumulate their
  forces on the particles with ``wp.atomic_add`` / ``wp.atomic_sub`` into row ``s`` of ``f``;
* ``integrate`` (one thread per particle): forces, gravity, drag, contacts, then
  ``v += a dt; x += v dt``, reading row ``s`` of ``x``, ``v``, ``f`` and writing row ``s + 1``.

The scalar and vector parameters (``dt``, gravity as a vec3, the sphere's centre and radius,
stiffnesses, damping, friction...) travel in one ``@wp.struct`` (``SimParams``), the topology
(spring pairs, rest lengths and stiffnesses, bending triples) in a second struct of arrays
(``Topology``).

The loss is the squared horizontal distance between the cloth's centre of mass at the last
frame and the sphere's axis (``centroid`` + ``loss`` launches); ``tape.backward(loss)`` gives
its gradient with respect to ``v0``. The example

1. checks this gradient once against central finite differences, in float64 (where both are
   accurate to many digits), and prints the relative error;
2. starting from a plain drop (``v0 = 0``, the cloth lands off-centre and hangs to one side),
   runs a few steps of gradient descent on the horizontal components of ``v0`` in float32;
3. renders the initial and the optimised throw.

Run::

    python -m weft.examples.cloth [--frames N] [--iters N] [--grid N] [--out DIR] [--no-check] [--no-gif]
                                  [--device cpu|cuda:0]

Everything runs on ``--device`` (default ``cpu``): the state, topology and parameter arrays and
every launch, forward and adjoint. The host reads results (losses, positions, energies) with
``.numpy()``, which copies them from a GPU.

Outputs in DIR (default ``./examples_output/cloth/``): ``cloth_frames.png`` (six snapshots of
the optimised throw), ``cloth_compare.png`` (final drape of the initial and the optimised
throw, and the loss curve), ``cloth.gif`` (both throws animated side by side; needs pillow),
``loss.txt``. Images need matplotlib and are skipped without it.

The kernels and structs are built by ``make_kernels(dtype)`` so the same simulation runs in
float32 (the demo) or float64 (the finite-difference checks, here and in
``tests/test_example_cloth.py``).
"""

import argparse
import os
import sys
import time

import numpy as np

import weft as wp

_KERNELS: dict = {}
_VEC3 = {wp.float32: wp.vec3, wp.float64: wp.vec3d}


def make_kernels(dtype=wp.float32):
    """The structs and kernels for scalar type ``dtype`` (``wp.float32`` or ``wp.float64``),
    built once per dtype. Returns a dict with keys ``vec3``, ``SimParams``, ``Topology``,
    ``init``, ``springs``, ``bending``, ``integrate``, ``centroid``, ``loss`` and ``sgd``."""
    if dtype in _KERNELS:
        return _KERNELS[dtype]
    vec3 = _VEC3[dtype]

    @wp.struct
    class SimParams:
        dt: dtype  # sub-step [s]
        gravity: vec3  # [m/s^2]
        inv_mass: dtype  # 1 / particle mass [1/kg]
        spring_kd: dtype  # damper along every spring [N s/m]
        bend_ke: dtype  # stiffness of the bending term [N/m] (see the bending kernel)
        bend_kd: dtype  # bending damping [N s/m]
        drag: dtype  # air drag (acceleration per unit velocity) [1/s]
        sphere_center: vec3
        sphere_radius: dtype  # includes half the cloth's thickness
        ground_z: dtype  # height of the ground plane (z up), includes half the thickness
        contact_ke: dtype  # contact stiffness per unit mass [1/s^2]
        contact_kd: dtype  # contact damping [s/m]: the normal force is scaled by exp(-kd v_n)
        contact_eps: dtype  # penetration over which the contact spring ramps in [m]
        mu: dtype  # friction coefficient
        friction_eps: dtype  # velocity below which friction turns viscous [m/s]

    @wp.struct
    class Topology:
        spring_i: wp.array(dtype=int)  # first particle of each spring
        spring_j: wp.array(dtype=int)  # second particle
        spring_rest: wp.array(dtype=dtype)  # rest length [m]
        spring_ke: wp.array(dtype=dtype)  # stiffness [N/m]
        bend: wp.array2d(dtype=int)  # (a, b, c): three consecutive particles along a grid line

    @wp.kernel
    def init(
        rest: wp.array(dtype=vec3),
        v0: wp.array(dtype=vec3),
        x: wp.array2d(dtype=vec3),
        v: wp.array2d(dtype=vec3),
    ):
        # x[s, :] / v[s, :]: positions / velocities after s sub-steps; row 0 is the initial state.
        i = wp.tid()
        x[0, i] = rest[i]
        v[0, i] = v0[0]

    @wp.kernel
    def springs(
        top: Topology,
        p: SimParams,
        x: wp.array2d(dtype=vec3),
        v: wp.array2d(dtype=vec3),
        f: wp.array2d(dtype=vec3),
        s: int,
    ):
        k = wp.tid()
        a = top.spring_i[k]
        b = top.spring_j[k]
        d = x[s, b] - x[s, a]
        length = wp.length(d)
        n = d / length
        # spring (Hooke) + damper along the spring; positive = pulls a and b together
        stretch_rate = wp.dot(v[s, b] - v[s, a], n)
        fs = n * (top.spring_ke[k] * (length - top.spring_rest[k]) + p.spring_kd * stretch_rate)
        wp.atomic_add(f, s, a, fs)
        wp.atomic_sub(f, s, b, fs)

    @wp.kernel
    def bending(
        top: Topology,
        p: SimParams,
        x: wp.array2d(dtype=vec3),
        v: wp.array2d(dtype=vec3),
        f: wp.array2d(dtype=vec3),
        s: int,
    ):
        # Quadratic bending energy 0.5 ke |x_a - 2 x_b + x_c|^2 of three consecutive particles
        # (a discrete second derivative along a grid line), plus a damper on its rate. Unlike a
        # spring between a and c, it resists out-of-plane zig-zags of the flat cloth linearly,
        # which keeps the sheet from crumpling at the grid scale when it is compressed.
        k = wp.tid()
        a = top.bend[k, 0]
        b = top.bend[k, 1]
        c = top.bend[k, 2]
        lap = x[s, a] - x[s, b] * 2.0 + x[s, c]
        lap_rate = v[s, a] - v[s, b] * 2.0 + v[s, c]
        fb = lap * p.bend_ke + lap_rate * p.bend_kd
        wp.atomic_sub(f, s, a, fb)
        wp.atomic_add(f, s, b, fb * 2.0)
        wp.atomic_sub(f, s, c, fb)

    @wp.func
    def contact_force(d: dtype, vn: dtype, ke: dtype, kd: dtype, eps: dtype):
        # Normal force per unit mass for penetration d and normal velocity vn (positive =
        # separating): quadratic ramp over the first eps of penetration, linear beyond (C1 in
        # d), times the damping factor exp(-kd vn) (Hunt-Crossley's 1 - kd vn to first order,
        # but smooth and positive: a max(., 0) clamp would put kinks in the loss).
        fn = d * 0.0
        if d > eps:
            fn = ke * (d - 0.5 * eps)
        elif d > 0.0:
            fn = 0.5 * ke * d * d / eps
        return fn * wp.exp(-kd * vn)

    @wp.func
    def collide(vi: vec3, n: vec3, depth: dtype, p: SimParams):
        # Velocity after one sub-step of contact with a surface of outward normal n that the
        # particle penetrates by depth: the normal force, then smoothed Coulomb friction applied
        # implicitly (it shrinks the tangential velocity and never flips it).
        vn = wp.dot(vi, n)
        fn = contact_force(depth, vn, p.contact_ke, p.contact_kd, p.contact_eps)
        vt = vi - n * vn
        c = p.mu * fn / wp.sqrt(wp.dot(vt, vt) + p.friction_eps * p.friction_eps)
        return n * (vn + fn * p.dt) + vt / (1.0 + c * p.dt)

    @wp.kernel
    def integrate(
        p: SimParams,
        x: wp.array2d(dtype=vec3),
        v: wp.array2d(dtype=vec3),
        f: wp.array2d(dtype=vec3),
        s: int,
    ):
        i = wp.tid()
        xi = x[s, i]
        vi = v[s, i]
        # spring forces, gravity, air drag (semi-implicit Euler: velocity first)
        vi = vi + (f[s, i] * p.inv_mass + p.gravity - vi * p.drag) * p.dt
        # contacts, evaluated at the current position with the updated velocity: the sphere...
        r = xi - p.sphere_center
        dist = wp.length(r)
        depth = p.sphere_radius - dist
        if depth > 0.0:
            vi = collide(vi, r / dist, depth, p)
        # ... and the ground
        depth = p.ground_z - xi[2]
        if depth > 0.0:
            vi = collide(vi, vec3(0.0, 0.0, 1.0), depth, p)
        x[s + 1, i] = xi + vi * p.dt
        v[s + 1, i] = vi

    @wp.kernel
    def centroid(x: wp.array2d(dtype=vec3), s: int, weight: dtype, out: wp.array(dtype=vec3)):
        i = wp.tid()
        wp.atomic_add(out, 0, x[s, i] * weight)

    @wp.kernel
    def loss(c: wp.array(dtype=vec3), target: vec3, out: wp.array(dtype=dtype)):
        # squared horizontal (x, y) distance of the centre of mass to the target
        d = c[0] - target
        out[0] = d[0] * d[0] + d[1] * d[1]

    @wp.kernel
    def sgd(x: wp.array(dtype=vec3), g: wp.array(dtype=vec3), lr: dtype):
        i = wp.tid()
        x[i] = x[i] - g[i] * lr

    kernels = {
        "vec3": vec3,
        "SimParams": SimParams,
        "Topology": Topology,
        "init": init,
        "springs": springs,
        "bending": bending,
        "integrate": integrate,
        "centroid": centroid,
        "loss": loss,
        "sgd": sgd,
    }
    _KERNELS[dtype] = kernels
    return kernels


def grid_springs(n: int, spacing: float, ke: float, ke_shear: float):
    """Springs of an ``n x n`` particle grid (particle ``r * n + c``): structural (grid
    neighbours) and shear (cell diagonals). Returns NumPy arrays ``(i, j, rest, ke)``."""
    idx = np.arange(n * n).reshape(n, n)
    pairs, rest, ke_all = [], [], []

    def add(a, b, length, k):
        pairs.append(np.stack([a.ravel(), b.ravel()], axis=1))
        rest.append(np.full(a.size, length))
        ke_all.append(np.full(a.size, k))

    add(idx[:, :-1], idx[:, 1:], spacing, ke)  # structural, along rows
    add(idx[:-1, :], idx[1:, :], spacing, ke)  # structural, along columns
    add(idx[:-1, :-1], idx[1:, 1:], spacing * np.sqrt(2.0), ke_shear)  # shear
    add(idx[:-1, 1:], idx[1:, :-1], spacing * np.sqrt(2.0), ke_shear)
    pairs = np.concatenate(pairs)
    return pairs[:, 0].astype(np.int32), pairs[:, 1].astype(np.int32), np.concatenate(rest), np.concatenate(ke_all)


def grid_bends(n: int) -> np.ndarray:
    """Triples of consecutive particles along every grid row and column, shape (m, 3)."""
    idx = np.arange(n * n).reshape(n, n)
    rows = np.stack([idx[:, :-2].ravel(), idx[:, 1:-1].ravel(), idx[:, 2:].ravel()], axis=1)
    cols = np.stack([idx[:-2, :].ravel(), idx[1:-1, :].ravel(), idx[2:, :].ravel()], axis=1)
    return np.concatenate([rows, cols]).astype(np.int32)


def grid_triangles(n: int) -> np.ndarray:
    """Two triangles per grid cell, shape (2 (n - 1)^2, 3), for rendering."""
    idx = np.arange(n * n).reshape(n, n)
    a, b, c, d = idx[:-1, :-1].ravel(), idx[:-1, 1:].ravel(), idx[1:, :-1].ravel(), idx[1:, 1:].ravel()
    return np.concatenate([np.stack([a, b, d], 1), np.stack([a, d, c], 1)])


class ClothSim:
    """The cloth, the sphere and the recorded simulation.

    Args:
        dtype: ``wp.float32`` or ``wp.float64``.
        n: particles per side of the square cloth.
        frames: rendered frames per simulation; the loss is measured after the last one.
        substeps: integration sub-steps per frame (three launches each).
        fps: frames per simulated second.
        size: side of the cloth [m]; ``density``: its mass per area [kg/m^2].
        start: centre of the cloth at t = 0 (it starts flat, horizontal).
        ke, ke_shear: spring stiffnesses [N/m]; ``spring_kd``: spring damping [N s/m].
        bend_stiffness: bending rigidity D [N m] of the cloth; the ``bending`` kernel's stiffness is
            ``D / (2 spacing^2)``, so that the cloth bends alike at every grid resolution.
        bend_kd: bending damping [N s/m].
        sphere_center, sphere_radius: the obstacle (the radius includes the cloth's thickness);
            ``ground_z``: height of the ground plane.
        contact_ke [1/s^2], contact_kd [s/m], contact_eps [m], mu, friction_eps [m/s]: contact.
        target: the loss is the squared (x, y) distance of the final centre of mass to it.
        device: where the arrays live and the kernels run (``"cpu"``, ``"cuda:0"``, a ``wp.Device``);
            None: the current default device, ``wp.get_device()``. A ``v0`` passed to ``forward``
            must live there too (``v0_array`` puts it there).
    """

    def __init__(
        self,
        dtype=wp.float32,
        n: int = 32,
        frames: int = 90,
        substeps: int = 16,
        fps: float = 60.0,
        size: float = 1.6,
        density: float = 0.2,
        start=(-0.3, 0.2, 0.7),
        ke: float = 40.0,
        ke_shear: float = 20.0,
        spring_kd: float = 0.03,
        bend_stiffness: float = 0.0266,
        bend_kd: float = 0.0,
        drag: float = 0.5,
        gravity=(0.0, 0.0, -9.81),
        sphere_center=(0.0, 0.0, 0.0),
        sphere_radius: float = 0.4,
        ground_z: float = -0.37,
        contact_ke: float = 2.0e4,
        contact_kd: float = 0.5,
        contact_eps: float = 0.01,
        mu: float = 1.0,
        friction_eps: float = 0.05,
        target=(0.0, 0.0, 0.0),
        device=None,
    ):
        self.device = device = wp.get_device(device)
        self.dtype = dtype
        self.kernels = k = make_kernels(dtype)
        vec3 = k["vec3"]
        self.n = n
        self.num_particles = n * n
        self.frames = frames
        self.substeps = substeps
        self.num_substeps = frames * substeps
        self.fps = fps
        self.dt = 1.0 / (fps * substeps)
        self.size = size
        self.spacing = size / (n - 1)
        self.sphere_center = np.asarray(sphere_center, dtype=np.float64)
        self.sphere_radius = sphere_radius
        self.ground_z = ground_z
        self.target = np.asarray(target, dtype=np.float64)
        self.start = np.asarray(start, dtype=np.float64)
        self.mass = density * size * size / self.num_particles

        p = k["SimParams"]()
        p.dt = self.dt
        p.gravity = vec3(*gravity)
        p.inv_mass = 1.0 / self.mass
        p.spring_kd = spring_kd
        p.bend_ke = bend_stiffness / (2.0 * self.spacing**2)
        p.bend_kd = bend_kd
        p.drag = drag
        p.sphere_center = vec3(*sphere_center)
        p.sphere_radius = sphere_radius
        p.ground_z = ground_z
        p.contact_ke = contact_ke
        p.contact_kd = contact_kd
        p.contact_eps = contact_eps
        p.mu = mu
        p.friction_eps = friction_eps
        self.params = p

        si, sj, srest, ske = grid_springs(n, self.spacing, ke, ke_shear)
        bends = grid_bends(n)
        self.num_springs = len(si)
        self.num_bends = len(bends)
        top = k["Topology"]()
        top.spring_i = wp.array(si, dtype=int, device=device)
        top.spring_j = wp.array(sj, dtype=int, device=device)
        top.spring_rest = wp.array(srest, dtype=dtype, device=device)
        top.spring_ke = wp.array(ske, dtype=dtype, device=device)
        top.bend = wp.array(bends, dtype=int, device=device)
        self.topology = top

        u = (np.arange(n) * self.spacing) - 0.5 * size
        gx, gy = np.meshgrid(u, u, indexing="xy")  # particle r * n + c sits at (u[c], u[r])
        rest = np.stack([gx.ravel(), gy.ravel(), np.zeros(n * n)], axis=1) + self.start
        self.rest_np = rest
        self.rest = wp.array(rest, dtype=vec3, device=device)
        self.triangles = grid_triangles(n)

        shape = (self.num_substeps + 1, self.num_particles)
        self.x = wp.zeros(shape, dtype=vec3, requires_grad=True, device=device)
        self.v = wp.zeros(shape, dtype=vec3, requires_grad=True, device=device)
        self.f = wp.zeros(shape, dtype=vec3, requires_grad=True, device=device)
        self.com = wp.zeros(1, dtype=vec3, requires_grad=True, device=device)
        self.loss = wp.zeros(1, dtype=dtype, requires_grad=True, device=device)
        self.tape = wp.Tape()

    def forward(self, v0):
        """Record the whole simulation and the loss on ``self.tape`` (launches run as recorded).
        ``v0`` is a weft array of one vec3 (the initial velocity of every particle) on ``self.device``."""
        k = self.kernels
        n = self.num_particles
        device = self.device
        # the force rows and the centre of mass are accumulated with atomics: start from zero
        self.f.zero_()
        self.com.zero_()
        with self.tape:
            wp.launch(k["init"], dim=n, inputs=[self.rest, v0, self.x, self.v], device=device)
            for s in range(self.num_substeps):
                wp.launch(
                    k["springs"],
                    dim=self.num_springs,
                    inputs=[self.topology, self.params, self.x, self.v, self.f, s],
                    device=device,
                )
                if self.num_bends:
                    wp.launch(
                        k["bending"],
                        dim=self.num_bends,
                        inputs=[self.topology, self.params, self.x, self.v, self.f, s],
                        device=device,
                    )
                wp.launch(k["integrate"], dim=n, inputs=[self.params, self.x, self.v, self.f, s], device=device)
            wp.launch(k["centroid"], dim=n, inputs=[self.x, self.num_substeps, 1.0 / n, self.com], device=device)
            target = self.kernels["vec3"](*self.target)
            wp.launch(k["loss"], dim=1, inputs=[self.com, target], outputs=[self.loss], device=device)
        return self.loss

    def v0_array(self, v0_np, requires_grad=False):
        """The initial velocity ``v0_np`` (three numbers) as a weft array of one vec3 on ``self.device``."""
        return wp.array(
            np.asarray(v0_np, dtype=np.float64).reshape(1, 3),
            dtype=self.kernels["vec3"],
            requires_grad=requires_grad,
            device=self.device,
        )

    def loss_and_grad(self, v0_np):
        """Simulate from the initial velocity ``v0_np`` (three numbers) and return
        ``(loss, dloss/dv0)`` as a float and a NumPy array of 3. Leaves the tape reset."""
        v0 = self.v0_array(v0_np, requires_grad=True)
        self.forward(v0)
        self.tape.backward(self.loss)
        value = float(self.loss.numpy()[0])
        grad = v0.grad.numpy().astype(np.float64).reshape(3).copy()
        self.tape.reset()
        return value, grad

    def eval_loss(self, v0_np) -> float:
        """Loss of a throw (no gradient); used for finite differences."""
        self.forward(self.v0_array(v0_np))
        self.tape.reset()
        return float(self.loss.numpy()[0])

    def positions(self) -> np.ndarray:
        """Particle positions of the last simulation at every frame, shape (frames + 1, n * n, 3)."""
        return self.x.numpy()[:: self.substeps].astype(np.float64)

    def center_of_mass(self) -> np.ndarray:
        return self.com.numpy().reshape(3).astype(np.float64)

    def energy(self) -> np.ndarray:
        """Mechanical energy (kinetic + gravitational + springs + bending; not the contact
        penalty) per frame of the last simulation, shape (frames + 1,)."""
        x = self.x.numpy()[:: self.substeps].astype(np.float64)
        v = self.v.numpy()[:: self.substeps].astype(np.float64)
        top = self.topology
        si, sj = top.spring_i.numpy(), top.spring_j.numpy()
        rest, ke = top.spring_rest.numpy().astype(np.float64), top.spring_ke.numpy().astype(np.float64)
        bends = top.bend.numpy()
        g = np.array([self.params.gravity[c] for c in range(3)], dtype=np.float64)
        kinetic = 0.5 * self.mass * (v * v).sum(axis=(1, 2))
        potential = -self.mass * (x @ g).sum(axis=1)
        stretch = np.linalg.norm(x[:, sj] - x[:, si], axis=2) - rest
        elastic = 0.5 * (ke * stretch * stretch).sum(axis=1)
        lap = x[:, bends[:, 0]] - 2.0 * x[:, bends[:, 1]] + x[:, bends[:, 2]]
        bending = 0.5 * self.params.bend_ke * (lap * lap).sum(axis=(1, 2))
        return kinetic + potential + elastic + bending


def finite_difference_check(sim: ClothSim, v0, h: float = 1e-6):
    """Tape gradient vs central differences of ``sim`` at ``v0``. Returns
    ``(grad, fd, relative_error)`` with the error ``|grad - fd| / |fd|``."""
    _, grad = sim.loss_and_grad(v0)
    fd = np.array(
        [(sim.eval_loss(np.add(v0, h * e)) - sim.eval_loss(np.subtract(v0, h * e))) / (2 * h) for e in np.eye(3)]
    )
    err = float(np.linalg.norm(grad - fd) / max(np.linalg.norm(fd), 1e-300))
    return grad, fd, err


def optimize(sim: ClothSim, v0_init, iters: int = 6, lr: float = 6.0, max_step: float = 0.5, log=None):
    """Gradient descent on the initial velocity (its horizontal components: the loss measures
    a horizontal distance, and the vertical throw is kept as given).

    Each iteration: tape forward, ``tape.backward(loss)``, an ``sgd`` launch on ``v0``, and
    ``tape.reset()``. A step never moves ``v0`` by more than ``max_step`` [m/s]. Everything runs
    on ``sim.device``; losses and positions are read back with ``.numpy()``.

    Args:
        sim: the simulation (its ``device`` is where ``v0`` is allocated and updated).
        v0_init: the initial guess, three numbers.
        iters: gradient-descent steps.
        lr: learning rate.
        max_step: the largest change of ``v0`` in one step [m/s].
        log: called as ``log(it, loss, v0, grad, centre_of_mass)`` (NumPy values) for every
            iteration; ``grad`` is None for the last one, which only evaluates the final velocity.

    Returns:
        ``(v0, losses, frames)``: the final velocity (NumPy), the loss of every iteration, and
        ``{iteration: positions}`` for the first and the last simulation.
    """
    v0 = sim.v0_array(v0_init, requires_grad=True)
    losses, frames = [], {}
    for it in range(iters + 1):
        sim.forward(v0)
        value = float(sim.loss.numpy()[0])
        losses.append(value)
        if it in (0, iters):
            frames[it] = sim.positions()
        if it == iters:  # the last entry only evaluates the final velocity
            if log is not None:
                log(it, value, v0.numpy().reshape(3), None, sim.center_of_mass())
            sim.tape.reset()
            break
        sim.tape.backward(sim.loss)
        g = v0.grad.numpy().astype(np.float64).reshape(3)
        if log is not None:
            log(it, value, v0.numpy().reshape(3), g.copy(), sim.center_of_mass())
        g[2] = 0.0
        norm = float(np.linalg.norm(g))
        if norm * lr > max_step:
            g *= max_step / (lr * norm)
        v0.grad.assign(g.reshape(1, 3))
        wp.launch(sim.kernels["sgd"], dim=1, inputs=[v0, v0.grad, lr], device=sim.device)
        sim.tape.reset()
    return v0.numpy().astype(np.float64).reshape(3), losses, frames


# ----------------------------------------------------------------------------------------------
# rendering (matplotlib)


def _sphere_mesh(center, radius, nu=28, nv=16):
    """Triangles of a UV sphere, shape (m, 3, 3)."""
    u = np.linspace(0.0, 2.0 * np.pi, nu + 1)
    w = np.linspace(0.0, np.pi, nv + 1)
    p = np.stack(
        [np.outer(np.cos(u), np.sin(w)), np.outer(np.sin(u), np.sin(w)), np.outer(np.ones_like(u), np.cos(w))], axis=-1
    )
    p = p * radius + center
    a, b, c, d = p[:-1, :-1], p[1:, :-1], p[1:, 1:], p[:-1, 1:]
    # counter-clockwise seen from outside: the normals point out
    tris = np.concatenate([np.stack([a, c, b], -2).reshape(-1, 3, 3), np.stack([a, d, c], -2).reshape(-1, 3, 3)])
    return tris


class _Renderer:
    """Draws the sphere and the cloth as one Poly3DCollection, so that matplotlib's per-polygon
    depth sorting (painter's algorithm) puts the cloth in front of or behind the sphere."""

    def __init__(self, sim: ClothSim, elev=28.0, azim=-60.0, fine=True):
        self.sim = sim
        self.elev, self.azim = elev, azim
        self.fine = fine
        # drawn a little smaller than the collision radius (which includes the cloth's
        # thickness), and finely tessellated: the painter's algorithm sorts whole polygons
        self.sphere_radius = sim.sphere_radius * 0.92
        nu, nv = (48, 24) if fine else (32, 16)
        self.sphere = _sphere_mesh(sim.sphere_center, self.sphere_radius, nu=nu, nv=nv)
        self.floor_z = sim.sphere_center[2] - self.sphere_radius
        self.light = np.array([0.4, -0.5, 0.8])
        self.light /= np.linalg.norm(self.light)
        self.sphere_colors = self._shade(self.sphere, np.array([0.62, 0.64, 0.70]), two_sided=False)
        # checkerboard of 4 x 4 cells, to make the folds visible
        n = sim.n
        cell = np.arange((n - 1) * (n - 1))
        checker = (cell // (n - 1) // 4 + cell % (n - 1) // 4) % 2
        checker = np.concatenate([checker, checker])  # two triangles per cell
        self.cloth_base = np.where(checker[:, None] > 0, np.array([0.85, 0.33, 0.20]), np.array([0.95, 0.62, 0.25]))

    def _shade(self, tris, base, two_sided=True):
        nrm = np.cross(tris[:, 1] - tris[:, 0], tris[:, 2] - tris[:, 0])
        nrm /= np.maximum(np.linalg.norm(nrm, axis=1, keepdims=True), 1e-12)
        lam = nrm @ self.light
        lam = np.abs(lam) if two_sided else np.maximum(lam, 0.0)
        rgb = np.clip(base * (0.35 + 0.65 * lam[:, None]), 0.0, 1.0)
        return np.concatenate([rgb, np.ones((len(rgb), 1))], axis=1)

    def polys(self, x):
        """Vertices and face colours of the sphere + the cloth with particle positions ``x``."""
        cloth = x[self.sim.triangles]
        colors = self._shade(cloth, self.cloth_base)
        return np.concatenate([self.sphere, cloth]), np.concatenate([self.sphere_colors, colors])

    def setup_axes(self, ax, title=None):
        from mpl_toolkits.mplot3d.art3d import Poly3DCollection

        ax.view_init(elev=self.elev, azim=self.azim)
        lim = 0.9
        c = self.sim.sphere_center
        ax.set_xlim(c[0] - lim, c[0] + lim)
        ax.set_ylim(c[1] - lim, c[1] + lim)
        ax.set_zlim(self.floor_z, self.floor_z + 1.25)
        ax.set_box_aspect((2 * lim, 2 * lim, 1.25))
        ax.set_axis_off()
        # the floor, drawn first (always behind everything else)
        floor = np.array([[-lim, -lim], [lim, -lim], [lim, lim], [-lim, lim]]) + c[:2]
        floor = np.concatenate([floor, np.full((4, 1), self.floor_z)], axis=1)
        ax.add_collection3d(Poly3DCollection([floor], facecolors=[(0.86, 0.87, 0.84)], edgecolors=[(0.6, 0.6, 0.6)]))
        if title:
            ax.set_title(title, fontsize=10)

    def draw(self, ax, x, title=None):
        from mpl_toolkits.mplot3d.art3d import Poly3DCollection

        self.setup_axes(ax, title)
        verts, colors = self.polys(x)
        # edges in the face colour hide the anti-aliasing seams between triangles (but cost time)
        edges = colors if self.fine else "none"
        coll = Poly3DCollection(verts, facecolors=colors, edgecolors=edges, linewidths=0.25 if self.fine else 0.0)
        ax.add_collection3d(coll)
        return coll

    def update(self, coll, x):
        verts, colors = self.polys(x)
        coll.set_verts(verts)
        coll.set_facecolor(colors)
        if self.fine:
            coll.set_edgecolor(colors)


def _matplotlib():
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt

        return plt
    except ImportError:
        return None


def plot_frames(sim: ClothSim, frames: np.ndarray, path, title) -> bool:
    """Six snapshots of one simulation (``frames``: positions per frame) in a 2 x 3 grid.
    False if matplotlib is missing."""
    plt = _matplotlib()
    if plt is None:
        return False
    last = len(frames) - 1
    picks = sorted({0, last // 5, 2 * last // 5, 3 * last // 5, 4 * last // 5, last})
    r = _Renderer(sim)
    fig = plt.figure(figsize=(13, 8))
    for k, f in enumerate(picks):
        ax = fig.add_subplot(2, 3, k + 1, projection="3d", computed_zorder=False)
        r.draw(ax, frames[f], title=f"frame {f}  (t = {f / sim.fps:.2f} s)")
    fig.suptitle(title)
    fig.subplots_adjust(left=0.0, right=1.0, bottom=0.0, top=0.93, wspace=0.0, hspace=0.05)
    fig.savefig(path, dpi=90)
    plt.close(fig)
    return True


def plot_compare(sim: ClothSim, runs, losses, path) -> bool:
    """Final drapes of the initial and the optimised throw, and the loss curve. ``runs`` is a
    list of ``(label, frames, v0)``. False if matplotlib is missing."""
    plt = _matplotlib()
    if plt is None:
        return False
    r = _Renderer(sim)
    fig = plt.figure(figsize=(15, 5))
    for k, (label, frames, v0) in enumerate(runs):
        ax = fig.add_subplot(1, 3, k + 1, projection="3d", computed_zorder=False)
        x = frames[-1]
        com = x.mean(axis=0)
        r.draw(ax, x, title=f"{label} throw, v0 = ({v0[0]:+.2f}, {v0[1]:+.2f}, {v0[2]:+.2f}) m/s")
        # vertical lines above the cloth through its centre of mass (black) and through the
        # target, the sphere's axis (red); the loss is their squared distance
        z0, z1 = x[:, 2].max() + 0.05, x[:, 2].max() + 0.45
        ax.plot([com[0]] * 2, [com[1]] * 2, [z0, z1], "k-", lw=2, zorder=11, label="centre of mass")
        ax.plot([sim.target[0]] * 2, [sim.target[1]] * 2, [z0, z1], "r--", lw=2, zorder=11, label="sphere axis")
        ax.set_zlim(r.floor_z, z1)
        ax.set_box_aspect((1.8, 1.8, z1 - r.floor_z))
        ax.legend(loc="lower left", fontsize=8)
    ax = fig.add_subplot(1, 3, 3)
    ax.semilogy(range(len(losses)), losses, "o-", ms=4)
    ax.set_xlabel("gradient-descent iteration")
    ax.set_ylabel("loss [m$^2$]")
    ax.set_title("squared horizontal distance, centre of mass to sphere axis", fontsize=10)
    ax.grid(alpha=0.3, which="both")
    fig.tight_layout()
    fig.savefig(path, dpi=90)
    plt.close(fig)
    return True


def write_gif(sim: ClothSim, runs, path, titles=None, every: int = 3, fps: int = 20) -> str:
    """Animate simulations side by side (``runs``: a list of positions per frame, all of the
    same length) into a GIF with matplotlib's PillowWriter. Returns "" on success, or why it
    was skipped."""
    plt = _matplotlib()
    if plt is None:
        return "matplotlib is not installed"
    try:
        import PIL  # noqa: F401
        from matplotlib.animation import FuncAnimation, PillowWriter
    except ImportError:
        return "pillow is not installed"
    r = _Renderer(sim, fine=False)
    titles = titles or [""] * len(runs)
    fig = plt.figure(figsize=(5.0 * len(runs), 4.6))
    colls = []
    for k, frames in enumerate(runs):
        ax = fig.add_subplot(1, len(runs), k + 1, projection="3d", computed_zorder=False)
        colls.append(r.draw(ax, frames[0], title=titles[k]))
    fig.subplots_adjust(left=0.0, right=1.0, bottom=0.0, top=0.92, wspace=0.0)
    label = fig.text(0.5, 0.02, "", ha="center", fontsize=10)
    n = len(runs[0])
    picks = list(range(0, n, every))
    if picks[-1] != n - 1:
        picks.append(n - 1)

    def update(f):
        for coll, frames in zip(colls, runs):
            r.update(coll, frames[f])
        label.set_text(f"t = {f / sim.fps:.2f} s")
        return colls

    anim = FuncAnimation(fig, update, frames=picks, blit=False)
    anim.save(path, writer=PillowWriter(fps=fps), dpi=72)
    plt.close(fig)
    return ""


def main(argv=None) -> int:
    """Run the example from the command line (``argv``: the arguments, default ``sys.argv[1:]``).

    Returns:
        The exit status, 0.
    """
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--frames", type=int, default=90, help="simulated frames at 60 fps (default 90)")
    parser.add_argument("--iters", type=int, default=6, help="gradient-descent iterations (default 6)")
    parser.add_argument("--lr", type=float, default=6.0, help="learning rate (default 6.0)")
    parser.add_argument("--grid", type=int, default=32, help="particles per side of the cloth (default 32)")
    parser.add_argument(
        "--threads",
        type=int,
        default=1,
        help="wp.config.cpu_threads while the example runs (default 1: the kernels are small, and on one "
        "thread a simulation ran 1.7x faster than on two, with no contention on the force atomics; "
        "ignored on a GPU)",
    )
    parser.add_argument("--no-check", action="store_true", help="skip the finite-difference check")
    parser.add_argument("--no-gif", action="store_true", help="skip the animated GIF")
    parser.add_argument("--out", default=os.path.join(".", "examples_output", "cloth"), help="output folder")
    parser.add_argument("--device", default="cpu", help="weft device that runs everything (default cpu; e.g. cuda:0)")
    args = parser.parse_args(argv)

    threads = wp.config.cpu_threads
    wp.config.cpu_threads = args.threads
    try:
        return _run(args)
    finally:
        wp.config.cpu_threads = threads


def _run(args) -> int:
    device = wp.get_device(args.device)
    v0_init = (0.0, 0.0, 0.0)
    sim = ClothSim(dtype=wp.float32, n=args.grid, frames=args.frames, device=device)
    launches = sim.num_substeps * (3 if sim.num_bends else 2) + 3
    print(
        f"cloth on {device} ({device.name}): {sim.n}x{sim.n} particles, {sim.num_springs} springs, "
        f"{sim.num_bends} bending triples; "
        f"{sim.frames} frames x {sim.substeps} sub-steps = {launches} launches per simulation; "
        f"dropped from {tuple(sim.start.tolist())} onto a sphere of radius {sim.sphere_radius} "
        f"at {tuple(sim.sphere_center.tolist())}"
    )
    t_start = time.perf_counter()

    grad64 = None
    if not args.no_check:
        t0 = time.perf_counter()
        sim64 = ClothSim(dtype=wp.float64, n=args.grid, frames=args.frames, device=device)
        h = 1e-6
        grad64, fd, err = finite_difference_check(sim64, v0_init, h=h)
        print(
            f"gradient check at v0 = {v0_init}, float64 on {device} ({time.perf_counter() - t0:.2f} s):\n"
            f"  dloss/dv0, tape:                  {np.array2string(grad64, precision=9)}\n"
            f"  central differences (h = {h:g}): {np.array2string(fd, precision=9)}\n"
            f"  relative error {err:.2e}"
        )
        del sim64

    every = max(1, args.iters // 10)

    def log(it, value, v, g, com):
        if it == 0 and g is not None and grad64 is not None:
            err32 = float(np.linalg.norm(g - grad64) / np.linalg.norm(grad64))
            print(
                f"  float32 tape gradient {np.array2string(g, precision=6)}: relative difference to float64 {err32:.2e}"
            )
        if it % every == 0 or it == args.iters:
            gs = "" if g is None else f"  dloss/dv0 = ({g[0]:+.5f}, {g[1]:+.5f}, {g[2]:+.5f})"
            print(
                f"  iter {it:3d}  loss {value:.6f}  v0 = ({v[0]:+.4f}, {v[1]:+.4f}, {v[2]:+.4f})"
                f"  centre of mass ({com[0]:+.3f}, {com[1]:+.3f}, {com[2]:+.3f}){gs}"
            )

    t0 = time.perf_counter()
    v0, losses, runs = optimize(sim, v0_init, iters=args.iters, lr=args.lr, log=log)
    elapsed = time.perf_counter() - t0
    print(
        f"optimised on {device} in {elapsed:.2f} s ({args.iters + 1} taped simulations, {args.iters} backward): "
        f"loss {losses[0]:.4g} -> {losses[-1]:.4g}; v0 = ({v0[0]:.4f}, {v0[1]:.4f}, {v0[2]:.4f})"
    )
    final = runs[args.iters]
    if not np.all(np.isfinite(final)):
        print("warning: the simulation produced non-finite positions")

    os.makedirs(args.out, exist_ok=True)
    np.savetxt(os.path.join(args.out, "loss.txt"), np.asarray(losses), header=f"loss per iteration, on {device}")
    t0 = time.perf_counter()
    png = os.path.join(args.out, "cloth_frames.png")
    title = f"optimised throw: v0 = ({v0[0]:+.2f}, {v0[1]:+.2f}, {v0[2]:+.2f}) m/s"
    if plot_frames(sim, final, png, title):
        print(f"wrote {png}")
        png = os.path.join(args.out, "cloth_compare.png")
        plot_compare(sim, [("initial", runs[0], np.asarray(v0_init)), ("optimised", final, v0)], losses, png)
        print(f"wrote {png}")
        if not args.no_gif:
            gif = os.path.join(args.out, "cloth.gif")
            why = write_gif(sim, [runs[0], final], gif, titles=["initial throw", "optimised throw"])
            print(f"wrote {gif}" if not why else f"{why}: skipped the GIF")
        print(f"rendered in {time.perf_counter() - t0:.2f} s")
    else:
        print("matplotlib is not installed: skipped the images (pip install matplotlib)")
    print(f"total {time.perf_counter() - t_start:.1f} s (simulations on {device})")
    print(f"output folder: {os.path.abspath(args.out)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
