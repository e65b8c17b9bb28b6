"""wp.intersect_tri_tri and wp.closest_point_edge_edge (weft/builtins/intersect.py, native/intersect.h).

- intersect_tri_tri against a NumPy separating-axis reference on random triangle pairs (float32
  and float64 overloads), kept a clear margin away from touching; plus hand-made cases: touching,
  shared edges, coplanar overlap / containment / separation;
- closest_point_edge_edge against a NumPy reference that minimises the distance over the unit
  square (interior critical point, else the best of the four clamped sides): distances always,
  s and t where the closest pair is unique; degenerate edges; Warp's documented example;
- its gradient (the tape's, through (s, t, d) with random weights) against central differences of
  the float64 reference, at samples where the reference is smooth; bounded near parallel edges;
- Python-scope calls, and the kernels' CUDA build with NVRTC (skipped without NVRTC).
"""

import numpy as np
import pytest

import weft as wp

RNG_SEED = 20240611


# ---------------------------------------------------------------------------------------------
# References (float64 NumPy)


def _axes(v, u):
    """Candidate separating axes of triangle pairs (n, 3, 3) x (n, 3, 3): both normals, the nine
    edge cross products, and each triangle's in-plane edge normals (for coplanar pairs)."""
    ev = np.roll(v, -1, axis=1) - v
    eu = np.roll(u, -1, axis=1) - u
    nv = np.cross(ev[:, 0], ev[:, 1])
    nu = np.cross(eu[:, 0], eu[:, 1])
    axes = [nv, nu]
    axes += [np.cross(ev[:, i], eu[:, j]) for i in range(3) for j in range(3)]
    axes += [np.cross(nv, ev[:, i]) for i in range(3)] + [np.cross(nu, eu[:, i]) for i in range(3)]
    return np.stack(axes, axis=1)  # (n, 17, 3)


def tri_tri_gap(v, u):
    """Largest separation of the two triangles along a unit candidate axis: > 0 when they are
    apart (by that much), <= 0 when they intersect (separating axis theorem)."""
    axes = _axes(v, u)
    norm = np.linalg.norm(axes, axis=2, keepdims=True)
    ok = norm[..., 0] > 1e-9
    axes = axes / np.where(norm > 1e-9, norm, 1.0)
    pv = np.einsum("nak,nvk->nav", axes, v)
    pu = np.einsum("nak,nvk->nav", axes, u)
    gap = np.maximum(pu.min(axis=2) - pv.max(axis=2), pv.min(axis=2) - pu.max(axis=2))
    return np.where(ok, gap, -np.inf).max(axis=1)


def edge_edge_reference(p1, q1, p2, q2):
    """(s, t, d) minimising |p1 + s d1 - p2 - t d2| over [0, 1]^2, one pair of edges (float64):
    the interior stationary point when it lies inside, else the best clamped side."""
    d1, d2, r = q1 - p1, q2 - p2, p1 - p2

    def dist(s, t):
        return np.linalg.norm(r + s * d1 - t * d2)

    a, b, e = d1 @ d1, d1 @ d2, d2 @ d2
    c, f = d1 @ r, d2 @ r
    candidates = []
    det = a * e - b * b
    if det > 1e-12 * a * e:
        s = (b * f - c * e) / det
        t = (a * f - b * c) / det
        if 0.0 <= s <= 1.0 and 0.0 <= t <= 1.0:
            candidates.append((s, t))
    for t in (0.0, 1.0):  # s free on the sides t = 0 / t = 1
        candidates.append((np.clip((b * t - c) / a, 0.0, 1.0) if a > 0 else 0.0, t))
    for s in (0.0, 1.0):
        candidates.append((s, np.clip((b * s + f) / e, 0.0, 1.0) if e > 0 else 0.0))
    s, t = min(candidates, key=lambda st: dist(*st))
    return np.array([s, t, dist(s, t)])


def unique_closest_pair(p1, q1, p2, q2, margin=1e-2):
    """Whether the closest pair is unique and robust: clearly non-parallel edges."""
    d1, d2 = q1 - p1, q2 - p2
    sin2 = np.linalg.norm(np.cross(d1, d2)) ** 2 / ((d1 @ d1) * (d2 @ d2))
    return sin2 > margin


# ---------------------------------------------------------------------------------------------
# Kernels


@wp.kernel
def tri_tri_f32(v: wp.array2d(dtype=wp.vec3), u: wp.array2d(dtype=wp.vec3), hit: wp.array(dtype=int)):
    i = wp.tid()
    hit[i] = wp.intersect_tri_tri(v[i, 0], v[i, 1], v[i, 2], u[i, 0], u[i, 1], u[i, 2])


@wp.kernel
def tri_tri_f64(v: wp.array2d(dtype=wp.vec3d), u: wp.array2d(dtype=wp.vec3d), hit: wp.array(dtype=int)):
    i = wp.tid()
    hit[i] = wp.intersect_tri_tri(v[i, 0], v[i, 1], v[i, 2], u[i, 0], u[i, 1], u[i, 2])


@wp.kernel
def edge_edge(
    p1: wp.array(dtype=wp.vec3),
    q1: wp.array(dtype=wp.vec3),
    p2: wp.array(dtype=wp.vec3),
    q2: wp.array(dtype=wp.vec3),
    eps: float,
    out: wp.array(dtype=wp.vec3),
):
    i = wp.tid()
    out[i] = wp.closest_point_edge_edge(p1[i], q1[i], p2[i], q2[i], eps)


def run_tri_tri(v, u):
    """Both overloads on (n, 3, 3) vertex batches: (float32 hits, float64 hits)."""
    n = v.shape[0]
    hits = []
    for kernel, dtype in ((tri_tri_f32, wp.vec3), (tri_tri_f64, wp.vec3d)):
        out = wp.zeros(n, dtype=int)
        wp.launch(kernel, dim=n, inputs=[wp.array(v, dtype=dtype), wp.array(u, dtype=dtype), out])
        hits.append(out.numpy())
    return hits


def run_edge_edge(p1, q1, p2, q2, eps=1e-6):
    out = wp.zeros(len(p1), dtype=wp.vec3)
    arrays = [wp.array(np.asarray(x, dtype=np.float32), dtype=wp.vec3) for x in (p1, q1, p2, q2)]
    wp.launch(edge_edge, dim=len(p1), inputs=[*arrays, eps, out])
    return out.numpy().astype(np.float64)


# ---------------------------------------------------------------------------------------------
# intersect_tri_tri


def test_tri_tri_random_pairs_match_the_separating_axis_reference():
    rng = np.random.default_rng(RNG_SEED)
    n = 4000
    v = rng.normal(size=(n, 3, 3))
    u = v.mean(axis=1, keepdims=True) + rng.normal(size=(n, 3, 3)) * rng.uniform(0.5, 1.5, size=(n, 1, 1))
    u += rng.normal(scale=0.3, size=(n, 1, 3))
    gap = tri_tri_gap(v, u)
    clear = np.abs(gap) > 1e-3  # away from touching, where float32 rounding may decide
    expected = (gap <= 0).astype(np.int32)
    hit32, hit64 = run_tri_tri(v, u)
    assert 0.2 < expected[clear].mean() < 0.8, "the sample should mix hits and misses"
    np.testing.assert_array_equal(hit64[clear], expected[clear])
    np.testing.assert_array_equal(hit32[clear], expected[clear])
    assert clear.sum() > 0.95 * n


def test_tri_tri_is_symmetric_and_ignores_vertex_order():
    rng = np.random.default_rng(RNG_SEED + 1)
    n = 1000
    v = rng.normal(size=(n, 3, 3))
    u = rng.normal(size=(n, 3, 3)) + 0.5
    base = run_tri_tri(v, u)[1]
    np.testing.assert_array_equal(run_tri_tri(u, v)[1], base)
    np.testing.assert_array_equal(run_tri_tri(v[:, ::-1], np.roll(u, 1, axis=1))[1], base)


def test_tri_tri_triangles_sharing_a_vertex_always_touch():
    """A shared vertex lies on both planes: its crossing is the vertex itself, exactly (Warp 1.19
    misses about one such pair in seven to rounding)."""
    rng = np.random.default_rng(RNG_SEED + 8)
    n = 3000
    v = rng.normal(size=(n, 3, 3))
    u = v.mean(axis=1, keepdims=True) + rng.normal(size=(n, 3, 3))
    u[:, 0] = v[:, 0]
    hit32, hit64 = run_tri_tri(v, u)
    assert hit64.all() and hit32.all()


COPLANAR_CASES = [
    # (v, u, expected): triangles in the plane z = 0.25 (v) and z = 0.25 (u), then special cases
    ([[0, 0, 0], [2, 0, 0], [0, 2, 0]], [[1, 1, -1], [1, 1, 1], [1, -1, 0]], 1),  # Warp's example
    ([[0, 0, 0], [1, 0, 0], [0, 1, 0]], [[0.2, 0.2, 0], [3, 0.2, 0], [0.2, 3, 0]], 1),  # coplanar overlap
    ([[0, 0, 0], [4, 0, 0], [0, 4, 0]], [[0.5, 0.5, 0], [1, 0.5, 0], [0.5, 1, 0]], 1),  # u inside v
    ([[0.5, 0.5, 0], [1, 0.5, 0], [0.5, 1, 0]], [[0, 0, 0], [4, 0, 0], [0, 4, 0]], 1),  # v inside u
    ([[0, 0, 0], [1, 0, 0], [0, 1, 0]], [[1, 1, 0], [2, 1, 0], [1, 2, 0]], 0),  # coplanar apart
    ([[0, 0, 0], [1, 0, 0], [0, 1, 0]], [[1, 0, 0], [2, 0, 0], [1, 1, 0]], 1),  # coplanar, touch at a vertex
    ([[0, 0, 0], [1, 0, 0], [0, 1, 0]], [[1, 0, 0], [0, 1, 0], [1, 1, 0]], 1),  # coplanar, shared edge
    ([[0, 0, 0], [1, 0, 0], [0, 1, 0]], [[0, 0, 1], [1, 0, 1], [0, 1, 1]], 0),  # parallel planes
    ([[0, 0, 0], [1, 0, 0], [0, 1, 0]], [[0.2, 0.2, 0], [0.2, 0.2, 1], [1, 1, 1]], 1),  # u touches v's plane inside
    ([[0, 0, 0], [1, 0, 0], [0, 1, 0]], [[2, 2, 0], [2, 2, 1], [3, 3, 1]], 0),  # touches the plane outside v
    ([[0, 0, 0], [1, 0, 0], [0, 1, 0]], [[0, 0, 0], [-1, 0, 1], [0, -1, 1]], 1),  # shared vertex only
    ([[0, 0, 0], [1, 0, 0], [0, 1, 0]], [[0, 0, 0], [1, 0, 0], [0, 0, 1]], 1),  # shared edge, at an angle
    ([[0, 0, 0], [1, 0, 0], [0, 1, 0]], [[0.5, -1, -1], [0.5, -1, 1], [0.5, -2, 0]], 0),  # crosses the plane, beside v
]


@pytest.mark.parametrize("v, u, expected", COPLANAR_CASES, ids=[str(k) for k in range(len(COPLANAR_CASES))])
def test_tri_tri_special_cases(v, u, expected):
    v = np.array([v], dtype=np.float64)
    u = np.array([u], dtype=np.float64)
    for shift in (0.0, 0.25):  # also off the coordinate planes
        hit32, hit64 = run_tri_tri(v + shift, u + shift)
        assert hit64[0] == expected
        assert hit32[0] == expected


def test_tri_tri_coplanar_random_pairs_in_a_tilted_plane():
    rng = np.random.default_rng(RNG_SEED + 2)
    n = 2000
    q, _ = np.linalg.qr(rng.normal(size=(3, 3)))  # a random rotation: the plane z' = 0 tilted
    v2 = rng.uniform(-1, 1, size=(n, 3, 2))
    u2 = rng.uniform(-1, 1, size=(n, 3, 2)) + rng.normal(scale=0.8, size=(n, 1, 2))
    lift = np.concatenate((v2, np.zeros((n, 3, 1))), axis=2) @ q.T
    lift_u = np.concatenate((u2, np.zeros((n, 3, 1))), axis=2) @ q.T
    gap = tri_tri_gap(lift, lift_u)
    clear = np.abs(gap) > 1e-3
    hit64 = run_tri_tri(lift, lift_u)[1]
    np.testing.assert_array_equal(hit64[clear], (gap[clear] <= 0).astype(np.int32))


def test_tri_tri_from_python_scope():
    a = [wp.vec3(0.0, 0.0, 0.0), wp.vec3(2.0, 0.0, 0.0), wp.vec3(0.0, 2.0, 0.0)]
    b = [wp.vec3(1.0, 1.0, -1.0), wp.vec3(1.0, 1.0, 1.0), wp.vec3(1.0, -1.0, 0.0)]
    assert wp.intersect_tri_tri(*a, *b) == 1
    assert wp.intersect_tri_tri(*a, *[x + wp.vec3(5.0, 0.0, 0.0) for x in b]) == 0
    assert wp.intersect_tri_tri(*[wp.vec3d(x) for x in a], *[wp.vec3d(x) for x in b]) == 1


def test_tri_tri_refuses_mixed_precision_and_is_not_differentiable():
    overloads = wp.intersect_tri_tri.overloads
    assert len(overloads) == 2 and not any(ov.differentiable for ov in overloads)
    with pytest.raises(RuntimeError, match="intersect_tri_tri"):
        wp.intersect_tri_tri(*[wp.vec3(0.0)] * 3, *[wp.vec3d(0.0)] * 3)


# ---------------------------------------------------------------------------------------------
# closest_point_edge_edge: forward


def test_edge_edge_random_pairs_match_the_reference():
    rng = np.random.default_rng(RNG_SEED + 3)
    n = 3000
    p1, q1, p2, q2 = (rng.normal(size=(n, 3)).astype(np.float32) for _ in range(4))
    got = run_edge_edge(p1, q1, p2, q2)
    ref = np.array([edge_edge_reference(*(x[i].astype(np.float64) for x in (p1, q1, p2, q2))) for i in range(n)])
    np.testing.assert_allclose(got[:, 2], ref[:, 2], rtol=1e-4, atol=1e-5)
    unique = np.array([unique_closest_pair(p1[i], q1[i], p2[i], q2[i]) for i in range(n)])
    assert unique.mean() > 0.9
    np.testing.assert_allclose(got[unique, :2], ref[unique, :2], atol=2e-4)
    assert np.all((got[:, :2] >= 0.0) & (got[:, :2] <= 1.0))
    # the reported distance is the distance of the reported points
    c1 = p1 + got[:, :1] * (q1 - p1)
    c2 = p2 + got[:, 1:2] * (q2 - p2)
    np.testing.assert_allclose(np.linalg.norm(c2 - c1, axis=1), got[:, 2], rtol=1e-5, atol=1e-6)


def test_edge_edge_parallel_edges_give_a_closest_pair():
    rng = np.random.default_rng(RNG_SEED + 4)
    n = 500
    p1, q1 = rng.normal(size=(n, 3)), rng.normal(size=(n, 3))
    shift = rng.normal(size=(n, 3))
    scale = rng.uniform(-2.0, 2.0, size=(n, 1))
    p2 = p1 + shift
    q2 = p2 + scale * (q1 - p1)
    got = run_edge_edge(p1, q1, p2, q2)
    ref = np.array([edge_edge_reference(p1[i], q1[i], p2[i], q2[i]) for i in range(n)])
    np.testing.assert_allclose(got[:, 2], ref[:, 2], rtol=1e-4, atol=1e-4)


EDGE_CASES = [
    # p1, q1, p2, q2, expected (s, t, d)
    ([0, 0, 0], [1, 0, 0], [0.5, 1, 1], [0.5, 1, -1], (0.5, 0.5, 1.0)),  # Warp's documented example
    ([0, 0, 0], [1, 1, 0], [0, 1, 0], [1, 0, 0], (0.5, 0.5, 0.0)),  # crossing
    ([0, 0, 0], [1, 1, 0], [2, 2, 0], [3, 3, 0], (1.0, 0.0, np.sqrt(2.0))),  # collinear, apart
    ([0, 0, 0], [0, 0, 0], [1, 1, 1], [1, 1, 1], (0.0, 0.0, np.sqrt(3.0))),  # two points
    ([0, 0, 0], [0, 0, 0], [0, 1, 0], [1, 0, 0], (0.0, 0.5, np.sqrt(0.5))),  # first edge a point
    ([10, 0, 0], [10, 0, 0], [0, 0, 0], [1, 0, 0], (0.0, 1.0, 9.0)),  # its projection clamps
    ([1, 0, 0], [0, 1, 0], [1, 1, 0], [1, 1, 0], (0.5, 0.0, np.sqrt(0.5))),  # second edge a point
    ([0, 0, 0], [1, 0, 0], [2, 1, 0], [3, 1, 0], (1.0, 0.0, np.sqrt(2.0))),  # t clamped to 0
    ([0, 0, 0], [1, 0, 0], [-3, 1, 0], [-2, 1, 0], (0.0, 1.0, np.sqrt(5.0))),  # t clamped to 1
]


@pytest.mark.parametrize("p1, q1, p2, q2, expected", EDGE_CASES, ids=[str(k) for k in range(len(EDGE_CASES))])
def test_edge_edge_special_cases(p1, q1, p2, q2, expected):
    got = run_edge_edge(*([x] for x in (p1, q1, p2, q2)))[0]
    np.testing.assert_allclose(got, expected, atol=1e-6)


def test_edge_edge_epsilon_makes_short_edges_points():
    # edge 1 has squared length 1e-4: a segment for eps 1e-6, a point (s = 0) for eps 1e-3
    p1, q1 = [[0.5, 0.0, 0.0]], [[0.5, 0.01, 0.0]]
    p2, q2 = [[0.0, 1.0, 0.0]], [[1.0, 1.0, 0.0]]
    np.testing.assert_allclose(run_edge_edge(p1, q1, p2, q2, 1e-6)[0], (1.0, 0.5, 0.99), atol=1e-6)
    np.testing.assert_allclose(run_edge_edge(p1, q1, p2, q2, 1e-3)[0], (0.0, 0.5, 1.0), atol=1e-6)


def test_edge_edge_from_python_scope():
    r = wp.closest_point_edge_edge(
        wp.vec3(0.0, 0.0, 0.0), wp.vec3(1.0, 0.0, 0.0), wp.vec3(0.5, 1.0, 1.0), wp.vec3(0.5, 1.0, -1.0), 1.0e-6
    )
    assert isinstance(r, wp.vec3)
    np.testing.assert_allclose(np.array(r), (0.5, 0.5, 1.0), atol=1e-7)


# ---------------------------------------------------------------------------------------------
# closest_point_edge_edge: gradient


def tape_gradients(p1, q1, p2, q2, w, eps=1e-6):
    """d(sum w * out)/d(p1, q1, p2, q2) from the tape (float32)."""
    arrays = [wp.array(np.asarray(x, dtype=np.float32), dtype=wp.vec3, requires_grad=True) for x in (p1, q1, p2, q2)]
    out = wp.zeros(len(p1), dtype=wp.vec3, requires_grad=True)
    tape = wp.Tape()
    with tape:
        wp.launch(edge_edge, dim=len(p1), inputs=[*arrays, eps, out])
    tape.backward(grads={out: wp.array(np.asarray(w, dtype=np.float32), dtype=wp.vec3)})
    return [a.grad.numpy().astype(np.float64) for a in arrays]


def reference_gradient(points, w, h):
    """Central differences of w . edge_edge_reference (float64) in each of the 12 coordinates."""
    g = np.zeros((4, 3))
    for k in range(4):
        for ax in range(3):
            plus = [x.copy() for x in points]
            minus = [x.copy() for x in points]
            plus[k][ax] += h
            minus[k][ax] -= h
            g[k, ax] = w @ (edge_edge_reference(*plus) - edge_edge_reference(*minus)) / (2 * h)
    return g


def test_edge_edge_gradient_matches_finite_differences():
    rng = np.random.default_rng(RNG_SEED + 5)
    n = 300
    points = [rng.normal(size=(n, 3)).astype(np.float32).astype(np.float64) for _ in range(4)]
    w = rng.uniform(0.5, 1.5, size=(n, 3))
    got = tape_gradients(*points, w)
    checked = 0
    branches = set()
    for i in range(n):
        pts = [x[i] for x in points]
        if not unique_closest_pair(*pts, margin=0.05):
            continue
        coarse, fine = reference_gradient(pts, w[i], 1e-4), reference_gradient(pts, w[i], 1e-6)
        if not np.allclose(coarse, fine, rtol=1e-4, atol=1e-5):  # a kink within reach: skip
            continue
        s, t, _ = edge_edge_reference(*pts)
        branches.add((0 < s < 1, 0 < t < 1))
        analytic = np.stack([g[i] for g in got])
        np.testing.assert_allclose(analytic, fine, rtol=2e-3, atol=2e-3 * np.abs(fine).max(), err_msg=f"sample {i}")
        checked += 1
    assert checked > 150
    assert branches == {(True, True), (True, False), (False, True), (False, False)}


def test_edge_edge_gradient_of_a_degenerate_edge_matches_finite_differences():
    rng = np.random.default_rng(RNG_SEED + 6)
    for degenerate in (0, 1):
        for _ in range(20):
            pts = [rng.normal(size=3) for _ in range(4)]
            pts[2 * degenerate + 1] = pts[2 * degenerate].copy()  # q = p: a point
            w = rng.uniform(0.5, 1.5, size=3)
            fine = reference_gradient([x.copy() for x in pts], w, 1e-6)
            # the reference's derivatives move the point apart; hold the degenerate edge together
            # by differentiating w.r.t. p and q jointly: the sum of their gradients
            got = np.stack([g[0] for g in tape_gradients(*([x] for x in pts), [w])])
            k = 2 * degenerate
            np.testing.assert_allclose(got[k] + got[k + 1], fine[k] + fine[k + 1], rtol=1e-3, atol=1e-4)
            other = 2 - k
            np.testing.assert_allclose(got[other : other + 2], fine[other : other + 2], rtol=1e-3, atol=1e-4)


def test_edge_edge_gradient_stays_bounded_for_nearly_parallel_edges():
    rng = np.random.default_rng(RNG_SEED + 7)
    n = 400
    p1 = rng.normal(size=(n, 3))
    d1 = rng.normal(size=(n, 3))
    tilt = 10.0 ** rng.uniform(-7, -2, size=(n, 1)) * rng.normal(size=(n, 3))
    p2 = p1 + rng.normal(size=(n, 3))
    q2 = p2 + d1 * rng.uniform(0.5, 2.0, size=(n, 1)) + tilt
    grads = tape_gradients(p1, p1 + d1, p2, q2, np.tile([0.0, 0.0, 1.0], (n, 1)))
    for g in grads:
        assert np.all(np.isfinite(g))
        assert np.abs(g).max() < 10.0  # d(distance)/d(endpoint) is at most 1 in exact arithmetic


def test_edge_edge_epsilon_gets_no_gradient_and_overloads_are_declared():
    (ov,) = wp.closest_point_edge_edge.overloads
    assert ov.differentiable
    assert [n for n, _ in ov.params] == ["p1", "q1", "p2", "q2", "epsilon"]


# ---------------------------------------------------------------------------------------------
# CUDA: the header compiles with NVRTC (forward and adjoint entry points)


@pytest.mark.parametrize("kernel", [tri_tri_f32, tri_tri_f64, edge_edge], ids=lambda k: k.key)
def test_kernels_compile_for_cuda(kernel):
    nvrtc = pytest.importorskip("weft.runtime.nvrtc")
    pytest.importorskip("cuda.bindings.nvrtc", reason="needs NVRTC: pip install cuda-python nvidia-cuda-nvrtc")
    if not nvrtc.available():
        pytest.skip("no NVRTC library loads")
    inst = kernel.default_instance()
    build = kernel.module.cuda_build([inst], 75, use_ptx=True)
    text = build.image.decode()
    assert f"{inst.symbol}_cuda_forward" in text
    assert f"{inst.symbol}_cuda_backward" in text
