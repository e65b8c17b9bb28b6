"""Numba versions of the rows it can express (see peers.py): ``@njit(parallel=True)`` with ``prange``
over all cores, ``fastmath=True`` as Numba's performance tips advise.

Numba has no autodiff (no backward rows) and no atomics on the CPU: a ``prange`` loop that adds
into shared elements races. So the rows whose forward pass is a gather or a sum are here, written
as its users write them (a sum is a ``prange`` reduction variable; a histogram gives each thread
its own bins over a contiguous chunk and adds them up, the standard privatisation), and the
scatter rows (cloth springs, p2g, FEM assembly) are left out: a correct Numba version would be a
different algorithm (a colouring or a gather over incident elements) or a serial loop, neither
of which is the row's algorithm on all cores. Small fixed-size matrix work (the mat33 row) is
written out in scalars, as Numba users do, since ``np.linalg`` on a 3x3 calls LAPACK per matrix.
"""

import math
import os

# Numba's default threading layer here is GNU OpenMP, whose workers spin while they wait: on this
# 2-core machine shared with other processes that made saxpy 4x slower (16 ms against 4). The
# workqueue layer is Numba's own pool; an explicit NUMBA_THREADING_LAYER still wins.
os.environ.setdefault("NUMBA_THREADING_LAYER", "workqueue")

import numba
import numpy as np
import peers as P
import scatter_workloads as S
import workloads as W
from numba import njit, prange

NAME = "numba"
JIT = {"parallel": True, "fastmath": True, "cache": False}


def init():
    pass


def info():
    return {
        "backend": NAME,
        "version": numba.__version__,
        "mode": "release",
        "threads": numba.get_num_threads(),
        "threading_layer": numba.config.THREADING_LAYER,
    }


@njit(**JIT)
def saxpy(a, x, y, z):
    for i in prange(x.shape[0]):
        z[i] = a * x[i] + y[i]


@njit(**JIT)
def total(x, out):
    s = np.float32(0.0)
    for i in prange(x.shape[0]):
        s += x[i]
    out[0] += s


@njit(**JIT)
def bins_add(x, bins, nbins):
    """``bins[i % nbins] += x[i]``: each chunk of ``x`` sums into its own bins, then the chunks' bins are added."""
    nchunks = numba.get_num_threads()
    part = np.zeros((nchunks, nbins), np.float32)
    n = x.shape[0]
    for c in prange(nchunks):
        lo = n * c // nchunks
        hi = n * (c + 1) // nchunks
        for i in range(lo, hi):
            part[c, i % nbins] += x[i]
    for c in range(nchunks):
        for b in range(nbins):
            bins[b] += part[c, b]


@njit(**JIT)
def loop_carried(x, c, n, y):
    for i in prange(x.shape[0]):
        s = np.float32(1.0)
        for j in range(n):
            s = s * x[i] + c[j]
        y[i] = s


@njit(**JIT)
def sim_step(px0, py0, vx0, vy0, px1, py1, vx1, vy1, drag, dt):
    for i in prange(px0.shape[0]):
        u = vx0[i]
        v = vy0[i]
        y = py0[i]
        speed = math.sqrt(u * u + v * v + np.float32(1.0e-6))
        k = drag[0] * speed
        fx = -k * u
        fy = np.float32(-9.8) - k * v
        if y < 0.0:
            fy = fy - np.float32(1000.0) * y - np.float32(10.0) * v
        u = u + dt * fx
        v = v + dt * fy
        vx1[i] = u
        vy1[i] = v
        px1[i] = px0[i] + dt * u
        py1[i] = y + dt * v


@njit(**JIT)
def sim_loss(px, py, loss):
    s = np.float32(0.0)
    for i in prange(px.shape[0]):
        dx = px[i] - np.float32(1.0)
        s += dx * dx + py[i] * py[i]
    loss[0] += s


@njit(**JIT)
def nbody(pos, mass, acc):
    n = pos.shape[0]
    for i in prange(n):
        px, py, pz = pos[i, 0], pos[i, 1], pos[i, 2]
        ax = ay = az = np.float32(0.0)
        for j in range(n):
            dx = pos[j, 0] - px
            dy = pos[j, 1] - py
            dz = pos[j, 2] - pz
            r2 = dx * dx + dy * dy + dz * dz + np.float32(0.01)
            inv = np.float32(1.0) / math.sqrt(r2)
            s = mass[j] * inv * inv * inv
            ax += dx * s
            ay += dy * s
            az += dz * s
        acc[i, 0] = ax
        acc[i, 1] = ay
        acc[i, 2] = az


@njit(fastmath=True)
def _det3(m):
    return (
        m[0][0] * (m[1][1] * m[2][2] - m[1][2] * m[2][1])
        - m[0][1] * (m[1][0] * m[2][2] - m[1][2] * m[2][0])
        + m[0][2] * (m[1][0] * m[2][1] - m[1][1] * m[2][0])
    )


@njit(fastmath=True)
def _inv3(m, det):
    r = np.float32(1.0) / det
    return (
        (
            (m[1][1] * m[2][2] - m[1][2] * m[2][1]) * r,
            (m[0][2] * m[2][1] - m[0][1] * m[2][2]) * r,
            (m[0][1] * m[1][2] - m[0][2] * m[1][1]) * r,
        ),
        (
            (m[1][2] * m[2][0] - m[1][0] * m[2][2]) * r,
            (m[0][0] * m[2][2] - m[0][2] * m[2][0]) * r,
            (m[0][2] * m[1][0] - m[0][0] * m[1][2]) * r,
        ),
        (
            (m[1][0] * m[2][1] - m[1][1] * m[2][0]) * r,
            (m[0][1] * m[2][0] - m[0][0] * m[2][1]) * r,
            (m[0][0] * m[1][1] - m[0][1] * m[1][0]) * r,
        ),
    )


@njit(fastmath=True)
def _row(A, B, r):
    return (
        A[r, 0] * B[0, 0] + A[r, 1] * B[1, 0] + A[r, 2] * B[2, 0],
        A[r, 0] * B[0, 1] + A[r, 1] * B[1, 1] + A[r, 2] * B[2, 1],
        A[r, 0] * B[0, 2] + A[r, 1] * B[1, 2] + A[r, 2] * B[2, 2],
    )


@njit(**JIT)
def mat_ops(a, b, out, dets):
    for n in prange(a.shape[0]):
        A = a[n]
        B = b[n]
        C = (_row(A, B, 0), _row(A, B, 1), _row(A, B, 2))
        d = _det3(C)
        inv = _inv3(C, d)
        for r in range(3):
            for c in range(3):  # (C^-1 A^T)[r, c] = sum_k C^-1[r, k] A[c, k]
                out[n, r, c] = inv[r][0] * A[c, 0] + inv[r][1] * A[c, 1] + inv[r][2] * A[c, 2] + B[r, c] * d
        dets[n] = d


@njit(**JIT)
def laplace(a, b, k):
    ni, nj, nl = a.shape
    for i in prange(ni):
        im, ip = max(i - 1, 0), min(i + 1, ni - 1)
        for j in range(nj):
            jm, jp = max(j - 1, 0), min(j + 1, nj - 1)
            for l in range(nl):
                c = a[i, j, l]
                s = np.float32(-6.0) * c
                s += a[im, j, l] + a[ip, j, l]
                s += a[i, jm, l] + a[i, jp, l]
                s += a[i, j, max(l - 1, 0)] + a[i, j, min(l + 1, nl - 1)]
                b[i, j, l] = c + k * s


@njit(**JIT)
def field_loss(a, loss):
    flat = a.reshape(-1)
    s = np.float32(0.0)
    for i in prange(flat.shape[0]):
        s += flat[i] * flat[i]
    loss[0] += s


# -- the rows --------------------------------------------------------------------------------------

f32 = np.float32


def saxpy_section():
    x, y = P.saxpy_inputs()
    z = np.zeros_like(x)
    return [W.Workload("saxpy 10M f32", "", lambda: saxpy(f32(2.0), x, y, z), check=lambda: float(z[:1000].sum()))]


def particle_section():
    n, steps = W.N_PARTICLES, W.SIM_STEPS
    states = [[np.zeros(n, np.float32) for _ in range(4)] for _ in range(steps + 1)]
    states[0] = P.particle_inputs()
    drag = np.array([0.1], np.float32)
    loss = np.zeros(1, np.float32)

    def forward():
        loss[0] = 0.0
        for s in range(steps):
            sim_step(*states[s], *states[s + 1], drag, f32(1.0 / 60.0))
        sim_loss(states[-1][0], states[-1][1], loss)

    return [W.Workload("particles fwd, taped", "", forward, check=lambda: float(loss[0]))]


def atomic_section():
    x = P.atomic_inputs()
    acc1, acc0, acc1024 = np.zeros(1, np.float32), np.zeros(1, np.float32), np.zeros(1024, np.float32)

    def zero(a):
        return lambda: a.fill(0.0)

    return [
        W.Workload(
            "atomic_add 10M -> 1", "", lambda: bins_add(x, acc1, 1), prepare=zero(acc1), check=lambda: float(acc1[0])
        ),
        W.Workload(
            "atomic_add 10M -> out[0]", "", lambda: total(x, acc0), prepare=zero(acc0), check=lambda: float(acc0[0])
        ),
        W.Workload(
            "atomic_add 10M -> 1024",
            "",
            lambda: bins_add(x, acc1024, 1024),
            prepare=zero(acc1024),
            check=lambda: float(acc1024.sum()),
        ),
    ]


def loop_section():
    x, c = P.loop_inputs()
    y = np.zeros_like(x)
    return [
        W.Workload(
            "dyn loop 64, fwd", "", lambda: loop_carried(x, c, W.LOOP_ITERS, y), check=lambda: float(y[:1000].sum())
        )
    ]


def compute_section():
    pos, mass = P.nbody_inputs()
    acc = np.zeros_like(pos)
    a, b = P.mat_inputs()
    out, dets = np.zeros_like(a), np.zeros(len(a), np.float32)
    return [
        W.Workload(
            "n-body 4096, all pairs",
            "",
            lambda: nbody(pos, mass, acc),
            check=lambda: float(np.abs(acc).astype(np.float64).sum()),
        ),
        W.Workload(
            "mat33 1M: mul, inverse, det",
            "",
            lambda: mat_ops(a, b, out, dets),
            check=lambda: float(np.abs(out[:10000]).astype(np.float64).sum() + dets[:10000].astype(np.float64).sum()),
        ),
    ]


def stencil_section():
    field0 = P.scatter_inputs()[2]
    fields = [field0] + [np.zeros_like(field0) for _ in range(S.STENCIL_STEPS)]
    loss = np.zeros(1, np.float32)

    def forward():
        loss[0] = 0.0
        for step in range(S.STENCIL_STEPS):
            laplace(fields[step], fields[step + 1], f32(0.1))
        field_loss(fields[-1], loss)

    return [W.Workload(S.ROWS[4], "", forward, check=lambda: float(loss[0]))]


SECTIONS = [
    (("saxpy 10M f32",), saxpy_section),
    (("particles fwd, taped",), particle_section),
    (("atomic_add 10M -> 1", "atomic_add 10M -> out[0]", "atomic_add 10M -> 1024"), atomic_section),
    (("dyn loop 64, fwd",), loop_section),
    (("n-body 4096, all pairs", "mat33 1M: mul, inverse, det"), compute_section),
    ((S.ROWS[4],), stencil_section),
]
