"""The module of the cold-build / warm-load workloads: 4 funcs and 9 kernels.

Imported by ``workloads.py --build-probe`` in a fresh process, with ``wp`` the framework named
by ``$WEFT_BENCH_BACKEND`` (weft or warp): the same source builds under both. ``run(wp)``
launches every kernel once (tiny grids), which makes each framework build (or load from its
cache) the whole module, and returns the output arrays (``checksum`` sums them).
"""

import importlib
import os

import numpy as np

wp = importlib.import_module(os.environ.get("WEFT_BENCH_BACKEND", "warp"))


@wp.func
def smooth_kernel(r: float, h: float):
    q = wp.max(1.0 - r / h, 0.0)
    return q * q * q


@wp.func
def spring_force(xi: wp.vec3, xj: wp.vec3, rest: float, ke: float):
    d = xi - xj
    l = wp.length(d) + 1.0e-6
    return d * (ke * (l - rest) / l)


@wp.func
def rotate(q: wp.vec3, angle: float, v: wp.vec3):
    axis = wp.normalize(q)
    c = wp.cos(angle)
    s = wp.sin(angle)
    return v * c + wp.cross(axis, v) * s + axis * (wp.dot(axis, v) * (1.0 - c))


@wp.func
def polar_energy(m: wp.mat33):
    d = wp.determinant(m)
    t = wp.trace(wp.mul(wp.transpose(m), m))
    return 0.5 * (t - 3.0) - wp.log(wp.abs(d) + 1.0e-6)


@wp.kernel
def k_saxpy(a: float, x: wp.array(dtype=float), y: wp.array(dtype=float), out: wp.array(dtype=float)):
    i = wp.tid()
    out[i] = a * x[i] + y[i]


@wp.kernel
def k_density(p: wp.array(dtype=wp.vec3), h: float, n: int, out: wp.array(dtype=float)):
    i = wp.tid()
    s = float(0.0)  # noqa: UP018 (Warp needs float() to let a dynamic loop update s)
    for j in range(n):
        s = s + smooth_kernel(wp.length(p[i] - p[j]), h)
    out[i] = s


@wp.kernel
def k_springs(p: wp.array(dtype=wp.vec3), n: int, ke: float, f: wp.array(dtype=wp.vec3)):
    i = wp.tid()
    j = (i + 1) % n
    fs = spring_force(p[i], p[j], 0.5, ke)
    wp.atomic_sub(f, i, fs)
    wp.atomic_add(f, j, fs)


@wp.kernel
def k_integrate(
    x: wp.array(dtype=wp.vec3),
    v: wp.array(dtype=wp.vec3),
    f: wp.array(dtype=wp.vec3),
    dt: float,
    out: wp.array(dtype=wp.vec3),
):
    i = wp.tid()
    vn = v[i] + (f[i] + wp.vec3(0.0, -9.8, 0.0)) * dt
    out[i] = x[i] + vn * dt


@wp.kernel
def k_rotate(x: wp.array(dtype=wp.vec3), axis: wp.vec3, out: wp.array(dtype=wp.vec3)):
    i = wp.tid()
    out[i] = rotate(axis, float(i) * 0.01, x[i])


@wp.kernel
def k_energy(m: wp.array(dtype=wp.mat33), out: wp.array(dtype=float)):
    i = wp.tid()
    out[i] = polar_energy(m[i])


@wp.kernel
def k_mat_inverse(m: wp.array(dtype=wp.mat33), out: wp.array(dtype=wp.mat33)):
    i = wp.tid()
    a = m[i]
    out[i] = wp.mul(wp.inverse(a), wp.transpose(a)) + wp.outer(a[0], a[1])


@wp.kernel
def k_reduce(x: wp.array(dtype=float), loss: wp.array(dtype=float)):
    i = wp.tid()
    v = x[i]
    if v > 0.5:
        wp.atomic_add(loss, 0, v * v)
    else:
        wp.atomic_add(loss, 0, wp.sqrt(wp.abs(v)))


@wp.kernel
def k_clamp_norm(x: wp.array(dtype=wp.vec3), lo: float, hi: float, out: wp.array(dtype=float)):
    i = wp.tid()
    l = wp.length(x[i])
    while l > hi:
        l = l * 0.5
    out[i] = wp.clamp(l, lo, hi)


def run(wp, device="cpu"):
    """Launch each of the 9 kernels once on small inputs; return the output arrays."""
    n = 64
    rng = np.random.default_rng(7)
    f1 = lambda: wp.array(rng.random(n).astype(np.float32), dtype=float, device=device)
    v3 = lambda: wp.array(rng.random((n, 3)).astype(np.float32), dtype=wp.vec3, device=device)
    m33 = wp.array((np.eye(3) + 0.1 * rng.random((n, 3, 3))).astype(np.float32), dtype=wp.mat33, device=device)
    x, y, p, v = f1(), f1(), v3(), v3()
    o1 = wp.zeros(n, dtype=float, device=device)
    o2 = wp.zeros(n, dtype=float, device=device)
    o3 = wp.zeros(n, dtype=float, device=device)
    o4 = wp.zeros(n, dtype=float, device=device)
    loss = wp.zeros(1, dtype=float, device=device)
    f = wp.zeros(n, dtype=wp.vec3, device=device)
    ov1 = wp.zeros(n, dtype=wp.vec3, device=device)
    ov2 = wp.zeros(n, dtype=wp.vec3, device=device)
    om = wp.zeros(n, dtype=wp.mat33, device=device)
    wp.launch(k_saxpy, dim=n, inputs=[2.0, x, y, o1], device=device)
    wp.launch(k_density, dim=n, inputs=[p, 0.5, n, o2], device=device)
    wp.launch(k_springs, dim=n, inputs=[p, n, 10.0, f], device=device)
    wp.launch(k_integrate, dim=n, inputs=[p, v, f, 0.01, ov1], device=device)
    wp.launch(k_rotate, dim=n, inputs=[p, wp.vec3(0.0, 0.0, 1.0), ov2], device=device)
    wp.launch(k_energy, dim=n, inputs=[m33, o3], device=device)
    wp.launch(k_mat_inverse, dim=n, inputs=[m33, om], device=device)
    wp.launch(k_reduce, dim=n, inputs=[x, loss], device=device)
    wp.launch(k_clamp_norm, dim=n, inputs=[p, 0.1, 1.0, o4], device=device)
    wp.synchronize_device(device)
    return [o1, o2, o3, o4, loss, f, ov1, ov2, om]


def checksum(arrs):
    return float(sum(np.abs(a.numpy()).astype(np.float64).sum() for a in arrs))
