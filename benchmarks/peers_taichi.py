"""Taichi versions of the rows it can express (see peers.py), on ``ti.cpu`` with all cores.

Written as a Taichi user writes them: fields (``ti.field`` / ``ti.Vector.field`` /
``ti.Matrix.field``) with ``needs_grad`` where a row is differentiated, top-level ``for`` loops
that Taichi parallelises, ``+=`` on fields for atomics (Taichi turns a sum into a constant index
into a thread-local reduction itself), and reverse mode through ``kernel.grad()`` called in
reverse launch order (the forward rows run the kernels plainly: Taichi records nothing to
differentiate them later). Time-stepped rows keep the steps in one field with a leading step
axis, as DiffTaichi's examples do. Taichi's defaults stand: release mode (no bounds checks),
``fast_math=True``, float32.
"""

import numpy as np
import peers as P
import scatter_workloads as S
import taichi as ti
import workloads as W

NAME = "taichi"


def init():
    # ad_stack_size: the dyn loop backward's loop-carried value needs a 65-entry adstack; the
    # default (0: sized adaptively) segfaults in Taichi 1.7.4 on that kernel.
    ti.init(arch=ti.cpu, default_fp=ti.f32, log_level=ti.WARN, ad_stack_size=2 * W.LOOP_ITERS)


def info():
    cfg = ti.lang.impl.current_cfg()
    return {
        "backend": NAME,
        "version": ".".join(map(str, ti.__version__)),
        "mode": "release",
        "threads": cfg.cpu_max_num_threads,
    }


def _sync(fn):
    def step():
        fn()
        ti.sync()

    return step


def _vec(n, grad=False, shape=None):
    return ti.Vector.field(3, ti.f32, shape=shape or n, needs_grad=grad)


def _field(shape, grad=False, dtype=ti.f32):
    return ti.field(dtype, shape=shape, needs_grad=grad)


def _scalar(grad=False):
    """A 0-D field, Taichi's idiom for a sum or a loss: ``s[None] += ...`` in a parallel loop becomes
    a thread-local reduction (into a 1-element field ``s[0]``, every add stays an atomic: 5x slower)."""
    return ti.field(ti.f32, shape=(), needs_grad=grad)


# -- saxpy and its backward, shared parameters -----------------------------------------------------


@ti.kernel
def saxpy(a: ti.f32, x: ti.template(), y: ti.template(), z: ti.template()):
    for i in x:
        z[i] = a * x[i] + y[i]


@ti.kernel
def affine(x: ti.template(), w0: ti.template(), w1: ti.template(), z: ti.template()):
    for i in x:
        z[i] = w0[None] * x[i] + w1[None]


def saxpy_section():
    xs, ys = P.saxpy_inputs()
    n = W.N_BIG
    x, y, z = (_field(n, grad=True) for _ in range(3))
    x.from_numpy(xs)
    y.from_numpy(ys)
    w0, w1 = _scalar(grad=True), _scalar(grad=True)  # the two shared parameters (w[0], w[1])
    w0[None] = 2.0
    w1[None] = 0.5

    def seed(params=()):
        def prepare():
            x.grad.fill(0.0)
            for a in params:
                a.grad.fill(0.0)
            z.grad.fill(1.0)
            ti.sync()

        return prepare

    return [
        W.Workload(
            "saxpy 10M f32", "", _sync(lambda: saxpy(2.0, x, y, z)), check=lambda: float(z.to_numpy()[:1000].sum())
        ),
        W.Workload(
            "saxpy 10M backward",
            "",
            _sync(lambda: saxpy.grad(2.0, x, y, z)),
            prepare=seed([y]),
            check=lambda: float(x.grad.to_numpy()[:1000].sum() + y.grad.to_numpy()[:1000].sum()),
        ),
        W.Workload(
            "shared params 10M backward",
            "",
            _sync(lambda: affine.grad(x, w0, w1, z)),
            prepare=seed([w0, w1]),
            check=lambda: float(w1.grad[None]),
        ),
    ]


# -- the taped particle simulation -----------------------------------------------------------------


@ti.kernel
def sim_step(
    s: ti.i32,
    px: ti.template(),
    py: ti.template(),
    vx: ti.template(),
    vy: ti.template(),
    drag: ti.template(),
    dt: ti.f32,
):
    for i in range(px.shape[1]):
        u = vx[s, i]
        v = vy[s, i]
        y = py[s, i]
        speed = ti.sqrt(u * u + v * v + 1.0e-6)
        k = drag[None] * speed
        fx = -k * u
        fy = -9.8 - k * v
        if y < 0.0:
            fy = fy - 1000.0 * y - 10.0 * v
        u = u + dt * fx
        v = v + dt * fy
        vx[s + 1, i] = u
        vy[s + 1, i] = v
        px[s + 1, i] = px[s, i] + dt * u
        py[s + 1, i] = y + dt * v


@ti.kernel
def sim_loss(s: ti.i32, px: ti.template(), py: ti.template(), loss: ti.template()):
    for i in range(px.shape[1]):
        dx = px[s, i] - 1.0
        loss[None] += dx * dx + py[s, i] * py[s, i]


def particle_section():
    n, steps, dt = W.N_PARTICLES, W.SIM_STEPS, 1.0 / 60.0
    state = [_field((steps + 1, n), grad=True) for _ in range(4)]
    for f, init in zip(state, P.particle_inputs()):
        a = np.zeros((steps + 1, n), np.float32)
        a[0] = init
        f.from_numpy(a)
    drag = _scalar(grad=True)
    drag[None] = 0.1
    loss = _scalar(grad=True)
    done = {"forward": False}

    def forward():
        loss.fill(0.0)
        for s in range(steps):
            sim_step(s, *state, drag, dt)
        sim_loss(steps, state[0], state[1], loss)
        ti.sync()
        done["forward"] = True

    def prepare_backward():
        if not done["forward"]:
            forward()
        for f in (*state, drag, loss):
            f.grad.fill(0.0)
        ti.sync()

    def backward():
        loss.grad[None] = 1.0
        sim_loss.grad(steps, state[0], state[1], loss)
        for s in reversed(range(steps)):
            sim_step.grad(s, *state, drag, dt)
        ti.sync()

    return [
        W.Workload("particles fwd, taped", "", forward, check=lambda: float(loss[None])),
        W.Workload("particles backward", "", backward, prepare=prepare_backward, check=lambda: float(drag.grad[None])),
    ]


# -- atomics ---------------------------------------------------------------------------------------


@ti.kernel
def atomic_bins(x: ti.template(), bins: ti.template(), nbins: ti.i32):
    for i in x:
        bins[i % nbins] += x[i]


@ti.kernel
def atomic_total(x: ti.template(), out: ti.template()):
    for i in x:
        out[None] += x[i]


def atomic_section():
    x = _field(W.N_BIG)
    x.from_numpy(P.atomic_inputs())
    acc1, acc0, acc1024 = _field(1), _scalar(), _field(1024)

    def zero(f):
        return lambda: f.fill(0.0)

    return [
        W.Workload(
            "atomic_add 10M -> 1",
            "",
            _sync(lambda: atomic_bins(x, acc1, 1)),
            prepare=zero(acc1),
            check=lambda: float(acc1.to_numpy()[0]),
        ),
        W.Workload(
            "atomic_add 10M -> out[0]",
            "",
            _sync(lambda: atomic_total(x, acc0)),
            prepare=zero(acc0),
            check=lambda: float(acc0[None]),
        ),
        W.Workload(
            "atomic_add 10M -> 1024",
            "",
            _sync(lambda: atomic_bins(x, acc1024, 1024)),
            prepare=zero(acc1024),
            check=lambda: float(acc1024.to_numpy().sum()),
        ),
    ]


# -- a dynamic loop with loop-carried state --------------------------------------------------------


@ti.kernel
def loop_carried(x: ti.template(), c: ti.template(), n: ti.i32, y: ti.template()):
    for i in x:
        s = 1.0
        for j in range(n):
            s = s * x[i] + c[j]
        y[i] = s


def loop_section():
    xs, cs = P.loop_inputs()
    x, y = _field(len(xs), grad=True), _field(len(xs), grad=True)
    c = _field(len(cs), grad=True)
    x.from_numpy(xs)
    c.from_numpy(cs)

    def seed():
        x.grad.fill(0.0)
        c.grad.fill(0.0)
        y.grad.fill(1.0)
        ti.sync()

    return [
        W.Workload(
            "dyn loop 64, fwd",
            "",
            _sync(lambda: loop_carried(x, c, W.LOOP_ITERS, y)),
            check=lambda: float(y.to_numpy()[:1000].sum()),
        ),
        W.Workload(
            "dyn loop 64, backward",
            "",
            _sync(lambda: loop_carried.grad(x, c, W.LOOP_ITERS, y)),
            prepare=seed,
            check=lambda: float(x.grad.to_numpy()[:1000].sum()),
        ),
    ]


# -- compute-bound: n-body, mat33 ------------------------------------------------------------------


@ti.kernel
def nbody(pos: ti.template(), mass: ti.template(), n: ti.i32, acc: ti.template()):
    for i in pos:
        p = pos[i]
        a = ti.Vector([0.0, 0.0, 0.0])
        for j in range(n):
            d = pos[j] - p
            r2 = d.dot(d) + 0.01
            inv = 1.0 / ti.sqrt(r2)
            a += d * (mass[j] * inv * inv * inv)
        acc[i] = a


@ti.kernel
def mat_ops(a: ti.template(), b: ti.template(), out: ti.template(), dets: ti.template()):
    for i in a:
        A = a[i]
        B = b[i]
        C = A @ B
        d = C.determinant()
        out[i] = C.inverse() @ A.transpose() + B * d
        dets[i] = d


def compute_section():
    ps, ms = P.nbody_inputs()
    pos, acc, mass = _vec(W.N_BODIES), _vec(W.N_BODIES), _field(W.N_BODIES)
    pos.from_numpy(ps)
    mass.from_numpy(ms)
    a_np, b_np = P.mat_inputs()
    a, b, out = (ti.Matrix.field(3, 3, ti.f32, shape=W.N_MAT) for _ in range(3))
    dets = _field(W.N_MAT)
    a.from_numpy(a_np)
    b.from_numpy(b_np)
    return [
        W.Workload(
            "n-body 4096, all pairs",
            "",
            _sync(lambda: nbody(pos, mass, W.N_BODIES, acc)),
            check=lambda: float(np.abs(acc.to_numpy()).astype(np.float64).sum()),
        ),
        W.Workload(
            "mat33 1M: mul, inverse, det",
            "",
            _sync(lambda: mat_ops(a, b, out, dets)),
            check=lambda: float(
                np.abs(out.to_numpy()[:10000]).astype(np.float64).sum()
                + dets.to_numpy()[:10000].astype(np.float64).sum()
            ),
        ),
    ]


# -- mass-spring cloth -----------------------------------------------------------------------------


@ti.kernel
def cloth_springs(
    s: ti.i32,
    x: ti.template(),
    v: ti.template(),
    ends: ti.template(),
    rest: ti.template(),
    ke: ti.f32,
    kd: ti.f32,
    f: ti.template(),
):
    for t in rest:
        i = ends[t, 0]
        j = ends[t, 1]
        d = x[s, i] - x[s, j]
        l = d.norm()
        dirn = d / l
        fs = dirn * (ke * (l - rest[t]) + kd * dirn.dot(v[s, i] - v[s, j]))
        f[s, i] -= fs
        f[s, j] += fs


@ti.kernel
def cloth_integrate(
    s: ti.i32, x: ti.template(), v: ti.template(), f: ti.template(), inv_mass: ti.template(), dt: ti.f32
):
    for i in inv_mass:
        g = ti.Vector([0.0, -9.8, 0.0])
        vn = v[s, i] + (f[s, i] + g) * (inv_mass[i] * dt)
        v[s + 1, i] = vn
        x[s + 1, i] = x[s, i] + vn * dt


@ti.kernel
def cloth_loss(s: ti.i32, x: ti.template(), loss: ti.template()):
    for i in range(x.shape[1]):
        loss[None] += x[s, i].dot(x[s, i])


def cloth_section():
    c = P.cloth_inputs()
    n, steps = len(c.x0), W.CLOTH_STEPS
    x, v = _vec(0, True, (steps + 1, n)), _vec(0, True, (steps + 1, n))
    f = _vec(0, True, (steps, n))
    x0 = np.zeros((steps + 1, n, 3), np.float32)
    x0[0] = c.x0
    x.from_numpy(x0)
    ends = _field(c.ends.shape, dtype=ti.i32)
    ends.from_numpy(c.ends)
    rest, inv_mass = _field(len(c.rest)), _field(n)
    rest.from_numpy(c.rest)
    inv_mass.from_numpy(c.inv_mass)
    loss = _scalar(grad=True)
    done = {"forward": False}

    def forward():
        loss.fill(0.0)
        f.fill(0.0)
        for s in range(steps):
            cloth_springs(s, x, v, ends, rest, c.ke, c.kd, f)
            cloth_integrate(s, x, v, f, inv_mass, c.dt)
        cloth_loss(steps, x, loss)
        ti.sync()
        done["forward"] = True

    def prepare_backward():
        if not done["forward"]:
            forward()
        for a in (x, v, f, loss):
            a.grad.fill(0.0)
        ti.sync()

    def backward():
        loss.grad[None] = 1.0
        cloth_loss.grad(steps, x, loss)
        for s in reversed(range(steps)):
            cloth_integrate.grad(s, x, v, f, inv_mass, c.dt)
            cloth_springs.grad(s, x, v, ends, rest, c.ke, c.kd, f)
        ti.sync()

    def grad_check():
        return float(
            np.abs(x.grad.to_numpy()[0]).astype(np.float64).sum()
            + np.abs(v.grad.to_numpy()[0]).astype(np.float64).sum()
        )

    return [
        W.Workload("cloth 128x128 fwd, taped", "", forward, check=lambda: float(loss[None])),
        W.Workload("cloth 128x128 backward", "", backward, prepare=prepare_backward, check=grad_check),
    ]


# -- p2g, FEM assembly, stencil --------------------------------------------------------------------


@ti.kernel
def p2g(x: ti.template(), v: ti.template(), m: ti.template(), grid_m: ti.template(), grid_mv: ti.template()):
    for p in x:
        g = x[p] * float(S.P2G_GRID - 1)
        base = ti.cast(ti.floor(g), ti.i32)
        fr = g - base
        w = [1.0 - fr, fr]  # trilinear weights per axis, as MLS-MPM writes its quadratic ones
        mass = m[p]
        mom = v[p] * mass
        for di, dj, dk in ti.static(ti.ndrange(2, 2, 2)):
            weight = w[di][0] * w[dj][1] * w[dk][2]
            node = base + ti.Vector([di, dj, dk])
            grid_m[node] += weight * mass
            grid_mv[node] += weight * mom


@ti.kernel
def grid_loss(grid_m: ti.template(), grid_mv: ti.template(), loss: ti.template()):
    for i, j, k in grid_m:
        c = ti.Vector([float(i), float(j), float(k)]) * (1.0 / float(S.P2G_GRID))
        loss[None] += grid_mv[i, j, k].dot(c) + 0.1 * grid_m[i, j, k] * grid_m[i, j, k]


@ti.kernel
def fem_forces(
    x: ti.template(),
    tets: ti.template(),
    dm_inv: ti.template(),
    volume: ti.template(),
    mu: ti.f32,
    lam: ti.f32,
    f: ti.template(),
):
    for t in volume:
        i, j, k, l = tets[t, 0], tets[t, 1], tets[t, 2], tets[t, 3]
        x0 = x[i]
        F = ti.Matrix.cols([x[j] - x0, x[k] - x0, x[l] - x0]) @ dm_inv[t]
        J = F.determinant()
        FinvT = F.inverse().transpose()
        P = mu * (F - FinvT) + lam * ti.log(J) * FinvT
        H = -volume[t] * P @ dm_inv[t].transpose()
        f1 = ti.Vector([H[0, 0], H[1, 0], H[2, 0]])
        f2 = ti.Vector([H[0, 1], H[1, 1], H[2, 1]])
        f3 = ti.Vector([H[0, 2], H[1, 2], H[2, 2]])
        f[i] += -(f1 + f2 + f3)
        f[j] += f1
        f[k] += f2
        f[l] += f3


@ti.kernel
def force_loss(f: ti.template(), w: ti.template(), loss: ti.template()):
    for n in f:
        loss[None] += f[n].dot(w[n])


@ti.kernel
def laplace(a: ti.template(), b: ti.template(), k: ti.f32):
    for i, j, l in a:
        ni, nj, nl = a.shape
        c = a[i, j, l]
        s = -6.0 * c
        s += a[ti.max(i - 1, 0), j, l] + a[ti.min(i + 1, ni - 1), j, l]
        s += a[i, ti.max(j - 1, 0), l] + a[i, ti.min(j + 1, nj - 1), l]
        s += a[i, j, ti.max(l - 1, 0)] + a[i, j, ti.min(l + 1, nl - 1)]
        b[i, j, l] = c + k * s


@ti.kernel
def field_loss(a: ti.template(), loss: ti.template()):
    for i, j, l in a:
        loss[None] += a[i, j, l] * a[i, j, l]


def _reverse_rows(names, forward, kernels_backward, loss, grads, check_fwd, check_bwd):
    """A forward row (the kernels, plainly) and its backward row (``kernel.grad()`` in reverse)."""
    done = {"forward": False}

    def run_forward():
        forward()
        ti.sync()
        done["forward"] = True

    def prepare_backward():
        if not done["forward"]:
            run_forward()
        for a in grads:
            a.grad.fill(0.0)
        ti.sync()

    def run_backward():
        loss.grad[None] = 1.0
        kernels_backward()
        ti.sync()

    return [
        W.Workload(names[0], "", run_forward, check=check_fwd),
        W.Workload(names[1], "", run_backward, prepare=prepare_backward, check=check_bwd),
    ]


def _abs_sum(a):
    return float(np.abs(a.to_numpy()).astype(np.float64).sum())


def scatter_section():
    pin, fin, field0 = P.scatter_inputs()
    rows = []

    # particle to grid
    n, g = len(pin.m), S.P2G_GRID
    px, pv, pm = _vec(n, True), _vec(n, True), _field(n, True)
    px.from_numpy(pin.x)
    pv.from_numpy(pin.v)
    pm.from_numpy(pin.m)
    gm, gmv = _field((g, g, g), True), _vec(0, True, (g, g, g))
    p2g_loss = _scalar(True)

    def p2g_forward():
        gm.fill(0.0)
        gmv.fill(0.0)
        p2g_loss.fill(0.0)
        p2g(px, pv, pm, gm, gmv)
        grid_loss(gm, gmv, p2g_loss)

    def p2g_backward():
        grid_loss.grad(gm, gmv, p2g_loss)
        p2g.grad(px, pv, pm, gm, gmv)

    rows += _reverse_rows(
        S.ROWS[0:2],
        p2g_forward,
        p2g_backward,
        p2g_loss,
        (px, pv, pm, gm, gmv, p2g_loss),
        lambda: float(p2g_loss[None]),
        lambda: _abs_sum(px.grad),
    )

    # FEM force assembly
    nn, nt = len(fin.x), len(fin.tets)
    fx, forces, fw = _vec(nn, True), _vec(nn, True), _vec(nn)
    fx.from_numpy(fin.x)
    fw.from_numpy(fin.w)
    tets = _field((nt, 4), dtype=ti.i32)
    tets.from_numpy(fin.tets)
    dm_inv = ti.Matrix.field(3, 3, ti.f32, shape=nt)
    dm_inv.from_numpy(fin.dm_inv)
    volume = _field(nt)
    volume.from_numpy(fin.volume)
    fem_loss = _scalar(True)

    def fem_forward():
        forces.fill(0.0)
        fem_loss.fill(0.0)
        fem_forces(fx, tets, dm_inv, volume, fin.mu, fin.lam, forces)
        force_loss(forces, fw, fem_loss)

    def fem_backward():
        force_loss.grad(forces, fw, fem_loss)
        fem_forces.grad(fx, tets, dm_inv, volume, fin.mu, fin.lam, forces)

    rows += _reverse_rows(
        S.ROWS[2:4],
        fem_forward,
        fem_backward,
        fem_loss,
        (fx, forces, fem_loss),
        lambda: float(fem_loss[None]),
        lambda: _abs_sum(fx.grad),
    )

    # 3-D stencil
    s = S.STENCIL
    fields = [_field((s, s, s), True) for _ in range(S.STENCIL_STEPS + 1)]
    fields[0].from_numpy(field0)
    st_loss = _scalar(True)

    def stencil_forward():
        st_loss.fill(0.0)
        for step in range(S.STENCIL_STEPS):
            laplace(fields[step], fields[step + 1], 0.1)
        field_loss(fields[-1], st_loss)

    def stencil_backward():
        field_loss.grad(fields[-1], st_loss)
        for step in reversed(range(S.STENCIL_STEPS)):
            laplace.grad(fields[step], fields[step + 1], 0.1)

    rows += _reverse_rows(
        S.ROWS[4:6],
        stencil_forward,
        stencil_backward,
        st_loss,
        (*fields, st_loss),
        lambda: float(st_loss[None]),
        lambda: _abs_sum(fields[0].grad),
    )
    return rows


SECTIONS = [
    (("saxpy 10M f32", "saxpy 10M backward", "shared params 10M backward"), saxpy_section),
    (("particles fwd, taped", "particles backward"), particle_section),
    (("atomic_add 10M -> 1", "atomic_add 10M -> out[0]", "atomic_add 10M -> 1024"), atomic_section),
    (("dyn loop 64, fwd", "dyn loop 64, backward"), loop_section),
    (("n-body 4096, all pairs", "mat33 1M: mul, inverse, det"), compute_section),
    (("cloth 128x128 fwd, taped", "cloth 128x128 backward"), cloth_section),
    (S.ROWS, scatter_section),
]
