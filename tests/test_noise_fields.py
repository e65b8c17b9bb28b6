"""wp.noise / wp.pnoise / wp.curlnoise draw Warp's noise fields: checked against a float64 NumPy
model of the construction (lattice hash, normalized gradients, nested quintic lerps, Warp's
curl combination and state chain), written from the description in weft/native/noise.h. The
curl fields are differences of the model's noise gradients, taken by central differences in
float64, so the kernel's analytic gradients are checked too.
"""

import numpy as np
import test_random  # its noise kernels

import weft as wp

PRIMES = np.array([73856093, 19349663, 53471161, 10000019], dtype=np.uint64)
MASK = np.uint64(0xFFFFFFFF)


def rand_hash(x):
    """The generator's 32-bit hash on uint64 arrays holding uint32 values."""
    s = (x * np.uint64(747796405) + np.uint64(2891336453)) & MASK
    w = (((s >> ((s >> np.uint64(28)) + np.uint64(4))) ^ s) * np.uint64(277803737)) & MASK
    return (w >> np.uint64(22)) ^ w


def rand_init(seed, offset):
    return rand_hash((np.uint64(seed) + rand_hash(np.uint64(offset))) & MASK)


def lattice_gradient(state, idx):
    """Gradients (n, D) of lattice points idx (n, D) for a uint32 state."""
    d = idx.shape[1]
    u = idx.astype(np.int64).astype(np.uint64) & MASK
    h = (u[:, d - 1] * PRIMES[d - 1] + np.uint64(state)) & MASK
    for k in range(d - 2, -1, -1):
        h = ((u[:, k] * PRIMES[k]) & MASK) ^ h
    draws = []
    for _ in range(d):
        h = rand_hash(h)
        draws.append((h >> np.uint64(8)).astype(np.float64) / 16777216.0)
    g = np.stack(draws, 1)
    if d == 1:
        return 2.0 * g - 1.0
    g -= 0.5
    return g / np.linalg.norm(g, axis=1, keepdims=True)


def fade(t):
    return t * t * t * (t * (t * 6.0 - 15.0) + 10.0)


def noise_model(state, x, periods=None):
    """Perlin noise at points x (n, D), float64; periods wrap the lattice (non-negative modulo)."""
    n, d = x.shape
    lo = np.floor(x).astype(np.int64)
    f = x - lo
    if periods is not None:
        p = np.asarray(periods)
        lo = np.mod(lo, p)
        hi = np.mod(lo + 1, p)
    else:
        hi = lo + 1
    values = []
    for c in range(1 << d):
        bits = np.array([(c >> k) & 1 for k in range(d)])
        idx = np.where(bits == 1, hi, lo)
        values.append(np.sum(lattice_gradient(state, idx) * (f - bits), axis=1))
    for k in range(d):  # x first, then y, z, t
        s = fade(f[:, k])
        values = [(values[c + 1] - values[c]) * s + values[c] for c in range(0, len(values), 2)]
    return values[0]


def model_gradient(state, x, h=1e-6):
    g = np.zeros_like(x)
    for k in range(x.shape[1]):
        e = np.zeros(x.shape[1])
        e[k] = h
        g[:, k] = (noise_model(state, x + e) - noise_model(state, x - e)) / (2 * h)
    return g


def curl_model(state, x, octaves, lacunarity, gain):
    d = x.shape[1]
    fields = 1 if d == 2 else 3
    sums = [np.zeros_like(x) for _ in range(fields)]
    freq, amp = 1.0, 1.0
    state = np.uint64(state)
    for _ in range(octaves):
        for m in range(fields):
            if m == 1:
                state = rand_init(state, 10019689)
            elif m == 2:
                state = rand_init(state, 13112221)
            sums[m] += amp * model_gradient(state, freq * x)
        amp *= gain
        freq *= lacunarity
    if d == 2:
        return np.stack([-sums[0][:, 1], sums[0][:, 0]], 1)
    s1, s2, s3 = sums
    return np.stack([s3[:, 1] - s2[:, 2], s1[:, 2] - s3[:, 0], s2[:, 0] - s1[:, 1]], 1)


def test_noise_fields_match_the_model():
    rng = np.random.default_rng(11)
    n, seed = 300, 42
    x = rng.uniform(-6.0, 6.0, (n, 4)).astype(np.float32)
    xs = wp.array(x, dtype=wp.vec4)
    out = wp.zeros((n, 9), dtype=float)
    c2, c3, c4 = wp.zeros(n, dtype=wp.vec2), wp.zeros(n, dtype=wp.vec3), wp.zeros(n, dtype=wp.vec3)
    wp.launch(test_random.k_noise, n, [seed, xs, out])  # noise 1-4-d, pnoise with periods 3, 5, 2, 4
    wp.launch(test_random.k_curl, n, [seed, xs, c2, c3, c4])  # curl: (xy), (xyz, 3 octaves), (xyzt, 2)
    got = out.numpy().astype(np.float64)
    x64 = x.astype(np.float64)
    state = int(rand_hash(np.uint64(seed)))

    for d in range(1, 5):
        np.testing.assert_allclose(got[:, d - 1], noise_model(state, x64[:, :d]), atol=2e-6)
        periods = [3, 5, 2, 4][:d]
        np.testing.assert_allclose(got[:, 3 + d], noise_model(state, x64[:, :d], periods), atol=2e-6)
    assert got[:, :8].std(0).min() > 0.05

    np.testing.assert_allclose(c2.numpy(), curl_model(state, x64[:, :2], 1, 2.0, 0.5), atol=5e-5)
    np.testing.assert_allclose(c3.numpy(), curl_model(state, x64[:, :3], 3, 2.0, 0.5), atol=5e-5)
    np.testing.assert_allclose(c4.numpy(), curl_model(state, x64, 2, 2.0, 0.5), atol=5e-5)
    assert min(np.abs(c.numpy()).max() for c in (c2, c3, c4)) > 0.5
