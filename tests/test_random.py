"""Random numbers in kernels (weft/builtins/random.py, native/random.h): distributions checked
statistically (means, variances, Kolmogorov-Smirnov against the exact CDF, shapes), the state
advancing in place, determinism across runs and CPU thread counts, and the values Warp 1.19
gives for the same seeds (same generator).

Every kernel is at module level, so one C++ build serves the whole file.
"""

import math

import numpy as np
import pytest

import weft as wp

N = 20000


def ks_stat(samples, cdf):
    """Kolmogorov-Smirnov statistic of samples against a vectorised CDF (NumPy only)."""
    x = np.sort(np.asarray(samples, dtype=np.float64))
    n = len(x)
    f = cdf(x)
    return max(np.max(np.arange(1, n + 1) / n - f), np.max(f - np.arange(n) / n))


def ks_ok(samples, cdf):
    # critical value at alpha = 0.001 is 1.95 / sqrt(n)
    return ks_stat(samples, cdf) < 1.95 / math.sqrt(len(samples))


@wp.kernel
def k_scalars(seed: int, out: wp.array2d(dtype=float)):
    i = wp.tid()
    s = wp.rand_init(seed, i)
    out[i, 0] = wp.randf(s)
    out[i, 1] = wp.randf(s)
    out[i, 2] = wp.randf(s, -2.0, 3.0)
    out[i, 3] = float(wp.randi(s, -3, 7))
    out[i, 4] = wp.randn(s)
    out[i, 5] = float(wp.randu(s, wp.uint32(5), wp.uint32(9)))
    out[i, 6] = float(wp.poisson(s, 3.5))
    out[i, 7] = float(wp.poisson(s, 60.0))
    out[i, 8] = float(wp.randi(s))
    out[i, 9] = float(wp.randu(s))


@wp.kernel
def k_shapes(seed: int, out2: wp.array2d(dtype=wp.vec2), out3: wp.array2d(dtype=wp.vec3)):
    i = wp.tid()
    s = wp.rand_init(seed, i)
    out2[i, 0] = wp.sample_triangle(s)
    out2[i, 1] = wp.sample_unit_ring(s)
    out2[i, 2] = wp.sample_unit_disk(s)
    out2[i, 3] = wp.sample_unit_square(s)
    out3[i, 0] = wp.sample_unit_sphere_surface(s)
    out3[i, 1] = wp.sample_unit_sphere(s)
    out3[i, 2] = wp.sample_unit_hemisphere_surface(s)
    out3[i, 3] = wp.sample_unit_hemisphere(s)
    out3[i, 4] = wp.sample_unit_cube(s)


@wp.kernel
def k_cdf(seed: int, cdf: wp.array(dtype=float), out: wp.array(dtype=int)):
    i = wp.tid()
    s = wp.rand_init(seed, i)
    out[i] = wp.sample_cdf(s, cdf)


@wp.kernel
def k_loop(seed: int, n: int, out: wp.array2d(dtype=float)):
    # the state carried through a dynamic loop and a branch
    i = wp.tid()
    s = wp.rand_init(seed + i)
    for j in range(n):
        if j % 2 == 0:
            out[i, j] = wp.randf(s)
        else:
            out[i, j] = wp.randf(s) + 1.0


@wp.func
def two_draws(s: wp.uint32) -> float:
    a = wp.randf(s)
    b = wp.randf(s)
    return b - a


@wp.kernel
def k_func(seed: int, out: wp.array(dtype=float)):
    i = wp.tid()
    out[i] = two_draws(wp.rand_init(seed, i))


def run_scalars(seed=7, n=N):
    out = wp.zeros((n, 10), dtype=float)
    wp.launch(k_scalars, n, inputs=[seed, out])
    return out.numpy()


def test_state_advances_and_uniform():
    a = run_scalars()
    u0, u1 = a[:, 0], a[:, 1]
    assert np.mean(u0 == u1) < 0.001  # two draws in a row differ
    for u in (u0, u1):
        assert u.min() >= 0.0 and u.max() < 1.0
        assert abs(u.mean() - 0.5) < 0.01 and abs(u.var() - 1 / 12) < 0.005
        assert ks_ok(u, lambda x: np.clip(x, 0, 1))
        assert np.all(np.mod(u.astype(np.float64) * 2**24, 1.0) == 0)  # multiples of 2^-24
    assert abs(np.corrcoef(u0, u1)[0, 1]) < 0.03
    # consecutive threads are uncorrelated
    assert abs(np.corrcoef(u0[:-1], u0[1:])[0, 1]) < 0.03
    r = a[:, 2]
    assert r.min() >= -2.0 and r.max() < 3.0
    assert ks_ok(r, lambda x: np.clip((x + 2) / 5, 0, 1))


def test_integers():
    a = run_scalars()
    ri = a[:, 3]
    assert set(np.unique(ri)) == set(range(-3, 7))
    counts = np.bincount((ri + 3).astype(int), minlength=10)
    assert np.all(np.abs(counts / N - 0.1) < 0.012)
    ru = a[:, 5]
    assert set(np.unique(ru)) == {5, 6, 7, 8}
    full_i, full_u = a[:, 8], a[:, 9]
    assert full_i.min() < -1e9 and full_i.max() > 1e9
    assert full_u.min() >= 0 and full_u.max() > 4e9
    assert ks_ok(full_u, lambda x: np.clip(x / 2**32, 0, 1))


def test_randn():
    z = run_scalars()[:, 4]
    assert abs(z.mean()) < 0.03 and abs(z.var() - 1) < 0.04
    assert np.all(np.isfinite(z))
    erf = np.vectorize(math.erf)
    assert ks_ok(z, lambda x: 0.5 * (1 + erf(x / math.sqrt(2))))


@pytest.mark.parametrize("col,lam", [(6, 3.5), (7, 60.0)])
def test_poisson(col, lam):
    k = run_scalars()[:, col]
    assert np.all(k == np.floor(k)) and k.min() >= 0
    assert abs(k.mean() - lam) < 4 * math.sqrt(lam / N)
    assert abs(k.var() / lam - 1) < 0.05
    # pmf of the small values against the exact Poisson pmf
    for v in range(int(lam) - 2, int(lam) + 3):
        p = math.exp(-lam + v * math.log(lam) - math.lgamma(v + 1))
        assert abs(np.mean(k == v) - p) < 5 * math.sqrt(p * (1 - p) / N) + 1e-4


def run_shapes(seed=3, n=N):
    o2 = wp.zeros((n, 4), dtype=wp.vec2)
    o3 = wp.zeros((n, 5), dtype=wp.vec3)
    wp.launch(k_shapes, n, inputs=[seed, o2, o3])
    return o2.numpy().astype(np.float64), o3.numpy().astype(np.float64)


def test_planar_shapes():
    o2, _ = run_shapes()
    tri, ring, disk, sq = o2[:, 0], o2[:, 1], o2[:, 2], o2[:, 3]
    assert np.all(tri >= 0) and np.all(tri.sum(1) <= 1 + 1e-6)
    assert np.allclose(tri.mean(0), [1 / 3, 1 / 3], atol=0.01)  # centroid
    assert np.allclose(np.linalg.norm(ring, axis=1), 1, atol=1e-5)
    assert ks_ok(np.arctan2(ring[:, 1], ring[:, 0]), lambda x: (x + np.pi) / (2 * np.pi))
    r = np.linalg.norm(disk, axis=1)
    assert r.max() <= 1 + 1e-6
    assert ks_ok(r, lambda x: np.clip(x, 0, 1) ** 2)  # uniform area: P(r < x) = x^2
    assert np.allclose(disk.mean(0), 0, atol=0.01)
    assert sq.min() >= -0.5 and sq.max() < 0.5
    for c in range(2):
        assert ks_ok(sq[:, c], lambda x: np.clip(x + 0.5, 0, 1))


def test_solid_shapes():
    _, o3 = run_shapes()
    surf, ball, hsurf, hball, cube = (o3[:, k] for k in range(5))
    for s in (surf, hsurf):
        assert np.allclose(np.linalg.norm(s, axis=1), 1, atol=1e-5)
    for b in (ball, hball):
        r = np.linalg.norm(b, axis=1)
        assert r.max() <= 1 + 1e-6
        assert ks_ok(r, lambda x: np.clip(x, 0, 1) ** 3)  # uniform volume
    assert hsurf[:, 2].min() >= 0 and hball[:, 2].min() >= 0
    # on the sphere each coordinate is uniform in [-1, 1]; on the hemisphere z is uniform in [0, 1]
    for c in range(3):
        assert ks_ok(surf[:, c], lambda x: np.clip((x + 1) / 2, 0, 1))
    assert ks_ok(hsurf[:, 2], lambda x: np.clip(x, 0, 1))
    assert np.allclose(surf.mean(0), 0, atol=0.02) and np.allclose(ball.mean(0), 0, atol=0.02)
    assert np.allclose(hball.mean(0), [0, 0, 3 / 8], atol=0.02)  # centroid of the half-ball
    assert cube.min() >= -0.5 and cube.max() < 0.5
    for c in range(3):
        assert ks_ok(cube[:, c], lambda x: np.clip(x + 0.5, 0, 1))


def test_sample_cdf():
    pmf = np.array([0.1, 0.0, 0.25, 0.5, 0.15])
    cdf = wp.array(np.cumsum(pmf).astype(np.float32), dtype=float)
    out = wp.zeros(N, dtype=int)
    wp.launch(k_cdf, N, inputs=[11, cdf, out])
    idx = out.numpy()
    assert idx.min() >= 0 and idx.max() < len(pmf)
    freq = np.bincount(idx, minlength=len(pmf)) / N
    assert freq[1] == 0  # zero-probability bins are never drawn
    assert np.allclose(freq, pmf, atol=0.012)


def test_state_in_loops_and_funcs():
    out = wp.zeros((64, 16), dtype=float)
    wp.launch(k_loop, 64, inputs=[5, 16, out])
    a = out.numpy()
    a[:, 1::2] -= 1.0
    assert a.min() >= 0 and a.max() < 1
    for row in a:
        assert len(np.unique(row)) == 16  # every iteration drew a new value
    d = wp.zeros(1000, dtype=float)
    wp.launch(k_func, 1000, inputs=[5, d])
    assert np.all(d.numpy() != 0)


def test_deterministic_across_runs_and_threads():
    saved = wp.config.cpu_threads
    try:
        wp.config.cpu_threads = 1
        a1, (b1, c1) = run_scalars(seed=42, n=5000), run_shapes(seed=42, n=5000)
        wp.config.cpu_threads = 2
        a2, (b2, c2) = run_scalars(seed=42, n=5000), run_shapes(seed=42, n=5000)
    finally:
        wp.config.cpu_threads = saved
    a3 = run_scalars(seed=42, n=5000)
    assert np.array_equal(a1, a2) and np.array_equal(a1, a3)
    assert np.array_equal(b1, b2) and np.array_equal(c1, c2)
    assert not np.array_equal(a1, run_scalars(seed=43, n=5000))  # the seed matters


def test_python_scope_and_warp_values():
    # Values from warp-lang 1.19 (the same generator): rand_init(1), rand_init(1, 2) and draws.
    s = wp.rand_init(1)
    assert s == 2831084092
    assert wp.rand_init(1, 2) == 2112726488
    assert wp.randi(s) == -383102582 and wp.randu(s) == 3911864714
    assert abs(wp.randf(s) - 0.9108019471168518) < 1e-7
    assert wp.randf(s) == wp.randf(s)  # Python scope does not advance the state
    # kernels agree with the Python scope
    a = run_scalars(seed=1, n=3)
    s0 = wp.rand_init(1, 0)
    assert a[0, 0] == np.float32(wp.randf(s0))
