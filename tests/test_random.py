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


@wp.kernel
def _normal_and_its_uniforms(normal: wp.array(dtype=float), first: wp.array(dtype=float), second: wp.array(dtype=float)):
    i = wp.tid()
    a = wp.rand_init(42, i)
    normal[i] = wp.randn(a)
    b = wp.rand_init(42, i)
    first[i] = wp.randf(b)
    second[i] = wp.randf(b)


def test_randn_is_warps_box_muller_of_the_next_two_uniforms():
    n = 4096
    normal, u1, u2 = (wp.zeros(n, dtype=float) for _ in range(3))
    wp.launch(_normal_and_its_uniforms, dim=n, inputs=[normal, u1, u2])
    u1, u2 = u1.numpy().astype(np.float64) + 5.96e-8, u2.numpy().astype(np.float64)
    np.testing.assert_allclose(normal.numpy(), np.sqrt(-2.0 * np.log(u1)) * np.cos(2.0 * np.pi * u2), rtol=2e-5, atol=2e-5)
    # the first values for seed 42, offsets 0..7, as warp-lang 1.19 draws them
    warp_values = [0.21022405, 0.50227046, 1.1879874, -0.22280009, -0.6748511, -0.47663918, 1.3172607, -0.5659789]
    np.testing.assert_allclose(normal.numpy()[:8], warp_values, rtol=1e-5, atol=1e-6)


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


# --- noise ----------------------------------------------------------------------------------


@wp.kernel
def k_noise(seed: int, xs: wp.array(dtype=wp.vec4), out: wp.array2d(dtype=float)):
    i = wp.tid()
    s = wp.rand_init(seed)
    x = xs[i]
    out[i, 0] = wp.noise(s, x[0])
    out[i, 1] = wp.noise(s, wp.vec2(x[0], x[1]))
    out[i, 2] = wp.noise(s, wp.vec3(x[0], x[1], x[2]))
    out[i, 3] = wp.noise(s, x)
    out[i, 4] = wp.pnoise(s, x[0], 3)
    out[i, 5] = wp.pnoise(s, wp.vec2(x[0], x[1]), 3, 5)
    out[i, 6] = wp.pnoise(s, wp.vec3(x[0], x[1], x[2]), 3, 5, 2)
    out[i, 7] = wp.pnoise(s, x, 3, 5, 2, 4)
    out[i, 8] = wp.randf(s)  # noise does not advance the state


@wp.kernel
def k_curl(seed: int, xs: wp.array(dtype=wp.vec4), c2: wp.array(dtype=wp.vec2), c3: wp.array(dtype=wp.vec3), c4: wp.array(dtype=wp.vec3)):
    i = wp.tid()
    s = wp.rand_init(seed)
    x = xs[i]
    c2[i] = wp.curlnoise(s, wp.vec2(x[0], x[1]))
    c3[i] = wp.curlnoise(s, wp.vec3(x[0], x[1], x[2]), wp.uint32(3), 2.0, 0.5)
    c4[i] = wp.curlnoise(s, x, wp.uint32(2))


@wp.kernel
def k_noise_loss(seed: int, xs: wp.array(dtype=wp.vec4), w: wp.array2d(dtype=float), loss: wp.array(dtype=float)):
    i = wp.tid()
    s = wp.rand_init(seed)
    x = xs[i]
    v = w[i, 0] * wp.noise(s, x[0]) + w[i, 1] * wp.noise(s, wp.vec2(x[0], x[1]))
    v += w[i, 2] * wp.noise(s, wp.vec3(x[0], x[1], x[2])) + w[i, 3] * wp.noise(s, x)
    v += w[i, 4] * wp.pnoise(s, wp.vec3(x[0], x[1], x[2]), 3, 5, 2) + w[i, 5] * wp.pnoise(s, x[1], 4)
    c2 = wp.curlnoise(s, wp.vec2(x[0], x[1]))
    c3 = wp.curlnoise(s, wp.vec3(x[0], x[1], x[2]), wp.uint32(2), 2.0, 0.5)
    c4 = wp.curlnoise(s, x)
    v += w[i, 6] * c2[0] + w[i, 7] * c2[1] + w[i, 8] * c3[0] + w[i, 9] * c3[1] + w[i, 10] * c3[2]
    v += w[i, 11] * c4[0] + w[i, 12] * c4[1] + w[i, 13] * c4[2]
    loss[i] = v


def noise_at(xs_np, seed=1):
    xs = wp.array(xs_np.astype(np.float32), dtype=wp.vec4)
    out = wp.zeros((len(xs_np), 9), dtype=float)
    wp.launch(k_noise, len(xs_np), inputs=[seed, xs, out])
    return out.numpy().astype(np.float64)


def test_noise_range_lattice_and_state():
    rng = np.random.default_rng(0)
    a = noise_at(rng.uniform(-20, 20, (N, 4)))
    assert np.all(np.abs(a[:, :8]) <= 1.0)
    assert np.all(a[:, :8].std(0) > 0.05) and np.all(np.abs(a[:, :8].mean(0)) < 0.05)
    # zero at integer lattice points
    lat = noise_at(rng.integers(-50, 50, (100, 4)).astype(np.float64))
    assert np.all(lat[:, :8] == 0)
    # the state is a seed: randf after noise is the first draw of the state
    assert np.all(a[:, 8] == a[0, 8]) and a[0, 8] == np.float32(wp.randf(wp.rand_init(1)))
    # another seed, another field
    b = noise_at(rng.uniform(-20, 20, (100, 4)), seed=2)
    assert not np.allclose(b[:, :4], noise_at(rng.uniform(-20, 20, (100, 4)))[:, :4])


def test_noise_continuity_and_periodicity():
    rng = np.random.default_rng(1)
    x = rng.uniform(-10, 10, (2000, 4))
    h = 1e-3
    d = np.abs(noise_at(x + h) - noise_at(x))[:, :8]
    assert d.max() < 20 * h  # Lipschitz: no jumps across cells
    shifted = x + np.array([3, 5, 2, 4]) * rng.integers(-3, 4, (2000, 1))
    a, b = noise_at(x), noise_at(shifted)
    assert np.allclose(a[:, 4:8], b[:, 4:8], atol=2e-5)
    assert not np.allclose(a[:, :4], b[:, :4], atol=1e-2)  # plain noise is not periodic


def test_curlnoise_divergence_free():
    rng = np.random.default_rng(2)
    n, h = 500, 1e-2
    x = rng.uniform(-5, 5, (n, 4))

    def curl(xx):
        xs = wp.array(xx.astype(np.float32), dtype=wp.vec4)
        c2, c3, c4 = wp.zeros(len(xx), dtype=wp.vec2), wp.zeros(len(xx), dtype=wp.vec3), wp.zeros(len(xx), dtype=wp.vec3)
        wp.launch(k_curl, len(xx), inputs=[1, xs, c2, c3, c4])
        return c2.numpy().astype(np.float64), c3.numpy().astype(np.float64), c4.numpy().astype(np.float64)

    base = curl(x)
    assert base[0].std() > 0.1 and base[1].std() > 0.1 and base[2].std() > 0.1
    div2, div3 = np.zeros(n), np.zeros(n)
    for k in range(3):
        e = np.zeros(4)
        e[k] = h
        p, m = curl(x + e), curl(x - e)
        if k < 2:
            div2 += (p[0][:, k] - m[0][:, k]) / (2 * h)
        div3 += (p[1][:, k] - m[1][:, k]) / (2 * h)
    scale = np.abs(base[1]).mean() / h
    assert np.abs(div2).max() < 0.02 * scale and np.abs(div3).max() < 0.02 * scale


def noise_loss(x_np, w, grad=False):
    """Per-point weighted sum of every noise kind at x (points do not interact), and with
    ``grad`` its gradient w.r.t. x from the tape."""
    xs = wp.array(x_np.astype(np.float32), dtype=wp.vec4, requires_grad=grad)
    loss = wp.zeros(len(x_np), dtype=float, requires_grad=grad)
    if not grad:
        wp.launch(k_noise_loss, len(x_np), inputs=[1, xs, w, loss])
        return loss.numpy().astype(np.float64)
    tape = wp.Tape()
    with tape:
        wp.launch(k_noise_loss, len(x_np), inputs=[1, xs, w, loss])
    tape.backward(grads={loss: wp.ones(len(x_np), dtype=float)})
    return xs.grad.numpy().astype(np.float64)


@wp.kernel(module="test_random_curl_alone")
def k_curl_pair(seed: int, xs: wp.array(dtype=wp.vec4), w: wp.array2d(dtype=float), loss: wp.array(dtype=float)):
    i = wp.tid()
    s = wp.rand_init(seed)
    x = xs[i]
    c2 = wp.curlnoise(s, wp.vec2(x[0], x[1]))
    c4 = wp.curlnoise(s, x)
    loss[i] = w[i, 0] * c2[0] + w[i, 1] * c2[1] + w[i, 2] * c4[0] + w[i, 3] * c4[1] + w[i, 4] * c4[2]


def test_curl_noise_gradients_in_a_module_of_their_own():
    # Alone in its module, this kernel's backward is inlined further than in this file's big
    # module; g++ 12.2 then miscompiled the noise corner loop (see native/noise.h).
    rng = np.random.default_rng(5)
    n = 256
    x_np = rng.uniform(-4, 4, (n, 4))
    w = wp.array(rng.normal(size=(n, 5)).astype(np.float32), dtype=float)

    def loss_of(x, grad=False):
        xs = wp.array(x.astype(np.float32), dtype=wp.vec4, requires_grad=grad)
        loss = wp.zeros(n, dtype=float, requires_grad=grad)
        tape = wp.Tape()
        with tape:
            wp.launch(k_curl_pair, n, inputs=[1, xs, w, loss])
        if not grad:
            return loss.numpy().astype(np.float64)
        tape.backward(grads={loss: wp.ones(n, dtype=float)})
        return xs.grad.numpy().astype(np.float64)

    g = loss_of(x_np, grad=True)
    h = 1e-3
    fd = np.zeros_like(g)
    for k in range(4):
        e = np.zeros(4)
        e[k] = h
        fd[:, k] = (loss_of(x_np + e) - loss_of(x_np - e)) / (2 * h)
    assert np.abs(g).max() > 0.1
    assert np.allclose(g, fd, rtol=2e-2, atol=2e-2 * np.abs(fd).max())


def test_noise_gradients_match_finite_differences():
    rng = np.random.default_rng(3)
    n = 256
    x_np = rng.uniform(-4, 4, (n, 4))
    w = wp.array(rng.normal(size=(n, 14)).astype(np.float32), dtype=float)
    g = noise_loss(x_np, w, grad=True)
    h = 1e-3
    fd = np.zeros_like(g)
    for k in range(4):
        e = np.zeros(4)
        e[k] = h
        fd[:, k] = (noise_loss(x_np + e, w) - noise_loss(x_np - e, w)) / (2 * h)
    assert np.abs(g).max() > 0.1
    assert np.allclose(g, fd, rtol=2e-2, atol=2e-2 * np.abs(fd).max())


@wp.kernel
def k_keywords(out: wp.array(dtype=wp.vec2)):
    s = wp.rand_init(1)
    out[0] = wp.curlnoise(s, wp.vec2(0.3, 0.4), gain=0.25)
    out[1] = wp.curlnoise(s, wp.vec2(0.3, 0.4), wp.uint32(1), 2.0, 0.25)
    out[2] = wp.curlnoise(s, wp.vec2(0.3, 0.4), 2, lacunarity=2.0)
    out[3] = wp.curlnoise(s, wp.vec2(0.3, 0.4), 2)
    out[4] = wp.vec2(wp.randf(s, low=1.0, high=2.0), wp.randf(s, 1.0, 2.0))


def test_keyword_arguments_and_defaults():
    out = wp.zeros(5, dtype=wp.vec2)
    wp.launch(k_keywords, 1, inputs=[out])
    a = out.numpy()
    # equal up to floating-point contraction (the two call sites may fuse multiply-adds differently)
    np.testing.assert_allclose(a[0], a[1], rtol=1e-6)
    np.testing.assert_allclose(a[2], a[3], rtol=1e-6)
    assert not np.array_equal(a[0], a[2])
    assert 1.0 <= a[4][0] < 2.0 and 1.0 <= a[4][1] < 2.0 and a[4][0] != a[4][1]


@wp.kernel
def k_random_in_grad(x: wp.array(dtype=float), y: wp.array(dtype=float)):
    i = wp.tid()
    s = wp.rand_init(3, i)
    r = 0.0
    for j in range(3):
        r = r + wp.randf(s)
    y[i] = x[i] * r + wp.noise(s, x[i])


def test_backward_replays_the_same_draws():
    n, h = 16, 1e-3
    x_np = np.linspace(0.1, 2, n)

    def f(xv):
        y = wp.zeros(n, dtype=float)
        wp.launch(k_random_in_grad, n, inputs=[wp.array(xv.astype(np.float32)), y])
        return y.numpy().astype(np.float64)

    x = wp.array(x_np.astype(np.float32), requires_grad=True)
    y = wp.zeros(n, dtype=float, requires_grad=True)
    tape = wp.Tape()
    with tape:
        wp.launch(k_random_in_grad, n, inputs=[x, y])
    tape.backward(grads={y: wp.ones(n, dtype=float)})
    fd = (f(x_np + h) - f(x_np - h)) / (2 * h)
    assert np.allclose(x.grad.numpy(), fd, rtol=1e-3, atol=1e-3)
