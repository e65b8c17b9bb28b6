"""wp.Mesh kernel queries against NumPy brute force over every triangle: closest point (unsigned
and the four sign tests), furthest point, rays (closest hit, any hit, hit count, watertight shared
edges), AABB / sphere iteration, evaluation and accessors, groups, refits, degenerate and empty
meshes, Warp's legacy out-argument forms, gradients against finite differences, and the
constructor's validation.

Barycentric convention (Warp's): a point on face (v0, v1, v2) is u*v0 + v*v1 + (1-u-v)*v2."""

from __future__ import annotations

import numpy as np
import pytest

import weft as wp

BIG = 1.0e6


# ------------------------------------------------------------------------------ test meshes


def icosphere(bumps=0.12, scale=(1.0, 0.8, 1.2), seed=0):
    """A once-subdivided icosahedron (42 vertices, 80 faces) with outward winding, its vertex radii
    jittered by up to ``bumps`` (a closed, star-shaped, non-convex surface) and scaled per axis."""
    t = (1.0 + 5.0**0.5) / 2.0
    v = [(-1, t, 0), (1, t, 0), (-1, -t, 0), (1, -t, 0), (0, -1, t), (0, 1, t)]
    v += [(0, -1, -t), (0, 1, -t), (t, 0, -1), (t, 0, 1), (-t, 0, -1), (-t, 0, 1)]
    f = [
        (0, 11, 5),
        (0, 5, 1),
        (0, 1, 7),
        (0, 7, 10),
        (0, 10, 11),
        (1, 5, 9),
        (5, 11, 4),
        (11, 10, 2),
        (10, 7, 6),
        (7, 1, 8),
    ]
    f += [
        (3, 9, 4),
        (3, 4, 2),
        (3, 2, 6),
        (3, 6, 8),
        (3, 8, 9),
        (4, 9, 5),
        (2, 4, 11),
        (6, 2, 10),
        (8, 6, 7),
        (9, 8, 1),
    ]
    verts = [np.array(x, dtype=np.float64) / np.linalg.norm(x) for x in v]
    mid = {}

    def midpoint(i, j):
        key = (min(i, j), max(i, j))
        if key not in mid:
            m = verts[i] + verts[j]
            verts.append(m / np.linalg.norm(m))
            mid[key] = len(verts) - 1
        return mid[key]

    faces = []
    for a, b, c in f:
        ab, bc, ca = midpoint(a, b), midpoint(b, c), midpoint(c, a)
        faces += [(a, ab, ca), (b, bc, ab), (c, ca, bc), (ab, bc, ca)]
    pts = np.array(verts)
    tri = np.array(faces, dtype=np.int32)
    n = np.cross(pts[tri[:, 1]] - pts[tri[:, 0]], pts[tri[:, 2]] - pts[tri[:, 0]])
    flip = np.einsum("ij,ij->i", n, pts[tri].mean(axis=1)) < 0.0
    tri[flip] = tri[flip][:, ::-1]
    rng = np.random.default_rng(seed)
    pts = pts * (1.0 + bumps * rng.uniform(-1.0, 1.0, size=(len(pts), 1))) * np.array(scale)
    return pts.astype(np.float32), tri


def make_mesh(pts, tri, **kwargs):
    return wp.Mesh(
        points=wp.array(pts, dtype=wp.vec3),
        indices=wp.array(np.asarray(tri, np.int32).reshape(-1), dtype=wp.int32),
        **kwargs,
    )


def grid_quads(n=2):
    """A flat n x n grid of unit quads in z = 0, two triangles each (shared diagonals, edges and
    interior vertices), wound with +z normals."""
    xs = np.linspace(0.0, 1.0, n + 1)
    pts = np.array([(x, y, 0.0) for y in xs for x in xs], dtype=np.float32)
    tri = []
    for j in range(n):
        for i in range(n):
            a, b, c, d = j * (n + 1) + i, j * (n + 1) + i + 1, (j + 1) * (n + 1) + i + 1, (j + 1) * (n + 1) + i
            tri += [(a, b, c), (a, c, d)]
    return pts, np.array(tri, dtype=np.int32)


# ------------------------------------------------------------------------- NumPy references


def tri_vertices(pts, tri):
    p = pts.astype(np.float64)
    return p[tri[:, 0]], p[tri[:, 1]], p[tri[:, 2]]


def brute_closest(p, pts, tri):
    """Closest point of every face to every query point: (u, v, squared distance), each (P, F).

    Projects onto the face's plane (inside: done), else takes the nearest of the three edges as
    clamped segments; written independently of the kernel's region tests."""
    a, b, c = tri_vertices(pts, tri)
    p = np.asarray(p, np.float64)[:, None, :]
    e0, e1, pc = a - c, b - c, p - c
    m00, m01, m11 = (e0 * e0).sum(-1), (e0 * e1).sum(-1), (e1 * e1).sum(-1)
    r0, r1 = (pc * e0).sum(-1), (pc * e1).sum(-1)
    det = m00 * m11 - m01 * m01
    u_in, v_in = (r0 * m11 - r1 * m01) / det, (r1 * m00 - r0 * m01) / det
    inside = (u_in >= 0) & (v_in >= 0) & (u_in + v_in <= 1)
    best_d2 = np.full(u_in.shape, np.inf)
    best_u, best_v = np.zeros_like(u_in), np.zeros_like(u_in)
    # segments x + s (y - x) and the barycentrics of their points: ab, bc, ca
    for x, y, uv in ((a, b, lambda s: (1 - s, s)), (b, c, lambda s: (0 * s, 1 - s)), (c, a, lambda s: (s, 0 * s))):
        e = y - x
        s = np.clip(((p - x) * e).sum(-1) / (e * e).sum(-1), 0.0, 1.0)
        d2 = ((x + s[..., None] * e - p) ** 2).sum(-1)
        better = d2 < best_d2
        su, sv = uv(s)
        best_d2 = np.where(better, d2, best_d2)
        best_u, best_v = np.where(better, su, best_u), np.where(better, sv, best_v)
    q_in = u_in[..., None] * a + v_in[..., None] * b + (1 - u_in - v_in)[..., None] * c
    d2_in = ((q_in - p) ** 2).sum(-1)
    return np.where(inside, u_in, best_u), np.where(inside, v_in, best_v), np.where(inside, d2_in, best_d2)


def eval_bary(pts, tri, face, u, v):
    a, b, c = tri_vertices(pts, tri)
    return u[:, None] * a[face] + v[:, None] * b[face] + (1 - u - v)[:, None] * c[face]


def winding_number(p, pts, tri):
    """Generalized winding number (sum of signed solid angles / 4 pi): ~1 inside, ~0 outside."""
    a, b, c = tri_vertices(pts, tri)
    x, y, z = a - p[:, None], b - p[:, None], c - p[:, None]
    lx, ly, lz = (np.linalg.norm(w, axis=-1) for w in (x, y, z))
    num = (x * np.cross(y, z)).sum(-1)
    den = lx * ly * lz + (x * y).sum(-1) * lz + (x * z).sum(-1) * ly + (y * z).sum(-1) * lx
    return (2.0 * np.arctan2(num, den)).sum(-1) / (4.0 * np.pi)


def brute_rays(starts, dirs, pts, tri):
    """Ray-triangle (Moller-Trumbore, float64) for every ray and face: t, u, v (each (R, F); t is
    inf where the ray misses) and the smallest barycentric of every hit (how close to an edge)."""
    a, b, c = tri_vertices(pts, tri)
    s = np.asarray(starts, np.float64)[:, None, :]
    d = np.asarray(dirs, np.float64)[:, None, :]
    e1, e2 = b - a, c - a
    pv = np.cross(d, e2)
    det = (e1 * pv).sum(-1)
    with np.errstate(divide="ignore", invalid="ignore"):
        inv = 1.0 / det
        tv = s - a
        bb = (tv * pv).sum(-1) * inv  # weight of b
        qv = np.cross(tv, e1)
        cc = (d * qv).sum(-1) * inv  # weight of c
        t = (e2 * qv).sum(-1) * inv
    aa = 1.0 - bb - cc
    hit = (det != 0) & (aa >= 0) & (bb >= 0) & (cc >= 0) & (t >= 0)
    margin = np.minimum(np.minimum(aa, bb), cc)
    return np.where(hit, t, np.inf), aa, bb, np.where(hit, margin, np.inf)


# ------------------------------------------------------------------------------ closest point


@wp.func
def store_point(
    q: wp.MeshQueryPoint, i: int, k: int, faces: wp.array2d(dtype=wp.int32), uvs: wp.array2d(dtype=wp.vec3)
):
    faces[i, k] = wp.where(q.result, q.face, -1)
    uvs[i, k] = wp.vec3(q.u, q.v, q.sign)


@wp.kernel
def point_queries(
    mesh: wp.uint64,
    wn_mesh: wp.uint64,
    pts: wp.array(dtype=wp.vec3),
    max_dist: wp.array(dtype=float),
    min_dist: wp.array(dtype=float),
    faces: wp.array2d(dtype=wp.int32),
    uvs: wp.array2d(dtype=wp.vec3),
    pos: wp.array(dtype=wp.vec3),
):
    i = wp.tid()
    p = pts[i]
    d = max_dist[i]
    q = wp.mesh_query_point_no_sign(mesh, p, d)
    store_point(q, i, 0, faces, uvs)
    if q.result:
        pos[i] = wp.mesh_eval_position(mesh, q.face, q.u, q.v)
    store_point(wp.mesh_query_point(mesh, p, d), i, 1, faces, uvs)
    store_point(wp.mesh_query_point_sign_normal(mesh, p, d), i, 2, faces, uvs)
    store_point(wp.mesh_query_point_sign_winding_number(wn_mesh, p, d), i, 3, faces, uvs)
    store_point(wp.mesh_query_point_sign_parity(mesh, p, d, 5, 0.1), i, 4, faces, uvs)
    store_point(wp.mesh_query_furthest_point_no_sign(mesh, p, min_dist[i]), i, 5, faces, uvs)


def run_point_queries(mesh, wn_mesh, p, max_dist, min_dist):
    n = len(p)
    faces = wp.zeros((n, 6), dtype=wp.int32)
    uvs = wp.zeros((n, 6), dtype=wp.vec3)
    pos = wp.zeros(n, dtype=wp.vec3)
    inputs = [
        mesh.id,
        wn_mesh.id,
        wp.array(p, dtype=wp.vec3),
        wp.array(max_dist, dtype=float),
        wp.array(min_dist, dtype=float),
    ]
    wp.launch(point_queries, dim=n, inputs=[*inputs, faces, uvs, pos])
    return faces.numpy(), uvs.numpy(), pos.numpy()


def closest_point_cases(pts, tri, rng):
    """~200 query points: random around the mesh, on faces, at vertices, on edge midpoints, far away."""
    a, b, c = (x.astype(np.float32) for x in tri_vertices(pts, tri))
    rand = np.concatenate([rng.uniform(-1.7, 1.7, size=(90, 3)), rng.uniform(-0.6, 0.6, size=(30, 3))])
    f = rng.integers(0, len(tri), 24)
    w = rng.dirichlet([1.0, 1.0, 1.0], 24).astype(np.float32)
    on_face = w[:, :1] * a[f] + w[:, 1:2] * b[f] + w[:, 2:] * c[f]
    at_vertex = pts[rng.choice(len(pts), 12, replace=False)]
    e = rng.integers(0, len(tri), 12)
    on_edge = (a[e] + b[e]) * np.float32(0.5)
    far = rng.normal(size=(16, 3))
    far = far / np.linalg.norm(far, axis=1, keepdims=True) * rng.uniform(20.0, 200.0, (16, 1))
    # just outside a vertex / an edge, along the outward direction: vertex and edge regions
    near_vertex = pts[:12] * 1.15
    near_edge = on_edge[:8] * 1.2
    return np.concatenate([rand, on_face, at_vertex, on_edge, far, near_vertex, near_edge]).astype(np.float32)


@pytest.fixture(scope="module")
def sphere_cache():
    """The sphere meshes, built once per device for this module (keyed by device alias)."""
    return {}


@pytest.fixture
def sphere_data(sphere_cache):
    """An icosphere mesh and its winding-number twin on the test's device (a module fixture would be
    made before the test's device is the default, on the CPU)."""
    key = wp.get_device().alias
    if key not in sphere_cache:
        pts, tri = icosphere()
        sphere_cache[key] = (pts, tri, make_mesh(pts, tri), make_mesh(pts, tri, support_winding_number=True))
    return sphere_cache[key]


def test_closest_point_and_signs_vs_brute_force(sphere_data):
    pts, tri, mesh, wn_mesh = sphere_data
    rng = np.random.default_rng(1)
    p = closest_point_cases(pts, tri, rng)
    n = len(p)
    faces, uvs, pos = run_point_queries(mesh, wn_mesh, p, np.full(n, BIG), np.zeros(n))

    bu, bv, bd2 = brute_closest(p, pts, tri)
    best = np.sqrt(bd2.min(axis=1))
    for k in range(5):  # every closest-point variant finds the same face, u, v
        face = faces[:, k]
        assert (face >= 0).all(), k
        rows = np.arange(n)
        # the face is a closest face and (u, v) is the brute-force closest point on it
        np.testing.assert_allclose(np.sqrt(bd2[rows, face]), best, atol=1e-5, rtol=2e-5)
        np.testing.assert_allclose(uvs[:, k, 0], bu[rows, face], atol=2e-4)
        np.testing.assert_allclose(uvs[:, k, 1], bv[rows, face], atol=2e-4)
        q = eval_bary(pts, tri, face, uvs[:, k, 0].astype(np.float64), uvs[:, k, 1].astype(np.float64))
        np.testing.assert_allclose(np.linalg.norm(q - p, axis=1), best, atol=1e-5, rtol=2e-5)
    np.testing.assert_allclose(pos, eval_bary(pts, tri, faces[:, 0], uvs[:, 0, 0], uvs[:, 0, 1]), atol=1e-5)
    # a unique closest face is the one reported
    second = np.sort(bd2, axis=1)[:, 1]
    unique = np.sqrt(second) - best > 1e-3
    assert unique.sum() > 40
    for k in range(5):
        np.testing.assert_array_equal(faces[unique, k], bd2[unique].argmin(axis=1))
    # points on the surface: distance ~0; at vertices the barycentrics are a vertex's
    on_surface = slice(120, 120 + 24 + 12 + 12)
    assert (best[on_surface] < 1e-5).all()
    assert (np.linalg.norm(pos[120:168] - p[120:168], axis=1) < 1e-5).all()
    uv_vertex = uvs[144:156, 0, :2]
    w3 = np.concatenate([uv_vertex, 1.0 - uv_vertex.sum(axis=1, keepdims=True)], axis=1)
    np.testing.assert_allclose(np.sort(w3, axis=1), np.tile([0.0, 0.0, 1.0], (12, 1)), atol=1e-5)

    # signs: unsigned query reports 0; the four sign tests agree with the winding number
    np.testing.assert_array_equal(uvs[:, 0, 2], 0.0)
    inside = winding_number(p.astype(np.float64), pts, tri) > 0.5
    clear = best > 0.05
    assert inside[clear].sum() > 15 and (~inside[clear]).sum() > 100
    for k in (1, 2, 3, 4):
        s = uvs[clear, k, 2]
        np.testing.assert_array_equal(s < 0.0, inside[clear], err_msg=f"sign variant {k}")

    # furthest point: the vertex farthest from p (u, v one-hot), over all non-degenerate faces
    vd = np.linalg.norm(pts.astype(np.float64)[None] - p[:, None], axis=2).max(axis=1)
    ff = faces[:, 5]
    assert (ff >= 0).all()
    q = eval_bary(pts, tri, ff, uvs[:, 5, 0], uvs[:, 5, 1])
    np.testing.assert_allclose(np.linalg.norm(q - p, axis=1), vd, rtol=1e-5)
    w3 = np.concatenate([uvs[:, 5, :2], 1.0 - uvs[:, 5, :2].sum(axis=1, keepdims=True)], axis=1)
    np.testing.assert_array_equal(np.sort(w3, axis=1), np.tile([0.0, 0.0, 1.0], (n, 1)))

    # cutoffs: max_dist / min_dist just beyond the answer find nothing, just within find it
    far_enough = best > 0.01
    within = run_point_queries(mesh, wn_mesh, p, np.where(far_enough, best * 1.01, BIG), vd * 0.99)[0]
    beyond = run_point_queries(mesh, wn_mesh, p, np.where(far_enough, best * 0.99, BIG), vd * 1.01)[0]
    np.testing.assert_array_equal(within, faces)
    for k in range(5):
        np.testing.assert_array_equal(beyond[far_enough, k], -1)
        np.testing.assert_array_equal(beyond[~far_enough, k], faces[~far_enough, k])
    np.testing.assert_array_equal(beyond[:, 5], -1)


def test_sign_of_a_box_and_degenerate_faces(sphere_data):
    """A unit cube (12 faces, Warp's example winding) and a mesh whose nearest face is degenerate."""
    _, _, _, wn_sphere = sphere_data
    pts = np.array([[0, 0, 0], [1, 0, 0], [1, 1, 0], [0, 1, 0], [0, 0, 1], [1, 0, 1], [1, 1, 1], [0, 1, 1]], np.float32)
    tri = np.array(
        [0, 3, 2, 0, 2, 1, 4, 5, 6, 4, 6, 7, 0, 1, 5, 0, 5, 4, 2, 3, 7, 2, 7, 6, 0, 4, 7, 0, 7, 3, 1, 2, 6, 1, 6, 5]
    )
    tri = tri.reshape(-1, 3)
    cube = make_mesh(pts, tri, support_winding_number=True)
    rng = np.random.default_rng(2)
    p = rng.uniform(-0.5, 1.5, size=(60, 3)).astype(np.float32)
    p[0] = (0.5, 0.5, 0.25)
    n = len(p)
    faces, uvs, pos = run_point_queries(cube, cube, p, np.full(n, BIG), np.zeros(n))
    inside = (p > 0).all(axis=1) & (p < 1).all(axis=1)
    dist = np.sqrt(brute_closest(p, pts, tri)[2].min(axis=1))
    clear = dist > 0.02
    for k in (1, 2, 3, 4):
        np.testing.assert_array_equal(uvs[clear, k, 2] < 0.0, inside[clear], err_msg=f"sign variant {k}")
    np.testing.assert_allclose(pos[0], [0.5, 0.5, 0.0], atol=1e-6)
    np.testing.assert_allclose(np.linalg.norm(pos - p, axis=1), dist, atol=1e-5)

    # a zero-area face (collinear corners) next to the query point is skipped by point queries
    pts = np.array([[0, 0, 0], [1, 0, 0], [2, 0, 0], [-5, -5, 3], [5, -5, 3], [0, 5, 3]], np.float32)
    tri = np.array([[0, 1, 2], [3, 4, 5]])
    mesh = make_mesh(pts, tri)
    p = np.array([[1.0, 0.1, 0.2], [0.5, 0.0, 0.0]], np.float32)
    faces, uvs, _ = run_point_queries(mesh, wn_sphere, p, np.full(2, BIG), np.zeros(2))
    np.testing.assert_array_equal(faces[:, [0, 1, 2, 4, 5]], 1)
    only_degenerate = make_mesh(pts[:3], tri[:1])
    faces = run_point_queries(only_degenerate, wn_sphere, p, np.full(2, BIG), np.zeros(2))[0]
    np.testing.assert_array_equal(faces[:, [0, 1, 2, 4, 5]], -1)
    # sphere queries do see degenerate faces: a segment (collinear corners) and a point
    pts = np.array([[0, 0, 0], [1, 0, 0], [2, 0, 0], [5, 5, 5], [5, 5, 5], [5, 5, 5]], np.float32)
    mesh = make_mesh(pts, [[0, 1, 2], [3, 4, 5]])
    c = np.array([[1.5, 0.1, 0], [1.5, 0.3, 0], [-0.1, 0.05, 0.0], [2.1, 0, 0], [5, 5, 5.1], [5, 5, 5.3]], np.float32)
    hits = run_overlaps(mesh, 2, c, c, np.full(6, 0.2, np.float32))
    np.testing.assert_array_equal(hits[1], [[1, 0], [0, 0], [1, 0], [1, 0], [0, 1], [0, 0]])


# ------------------------------------------------------------------------------------ rays


@wp.kernel
def ray_queries(
    mesh: wp.uint64,
    starts: wp.array(dtype=wp.vec3),
    dirs: wp.array(dtype=wp.vec3),
    max_t: wp.array(dtype=float),
    ints: wp.array2d(dtype=wp.int32),
    tuvs: wp.array(dtype=wp.vec4),
    normals: wp.array(dtype=wp.vec3),
    hit_pos: wp.array2d(dtype=wp.vec3),
):
    i = wp.tid()
    s = starts[i]
    d = dirs[i]
    q = wp.mesh_query_ray(mesh, s, d, max_t[i])
    ints[i, 0] = wp.where(q.result, q.face, -1)
    ints[i, 1] = wp.where(wp.mesh_query_ray_anyhit(mesh, s, d, max_t[i]), 1, 0)
    ints[i, 2] = wp.mesh_query_ray_count_intersections(mesh, s, d)
    tuvs[i] = wp.vec4(q.t, q.u, q.v, q.sign)
    normals[i] = q.normal
    if q.result:
        hit_pos[i, 0] = s + q.t * d
        hit_pos[i, 1] = wp.mesh_eval_position(mesh, q.face, q.u, q.v)


def run_rays(mesh, starts, dirs, max_t):
    n = len(starts)
    ints = wp.zeros((n, 3), dtype=wp.int32)
    tuvs = wp.zeros(n, dtype=wp.vec4)
    normals = wp.zeros(n, dtype=wp.vec3)
    hit_pos = wp.zeros((n, 2), dtype=wp.vec3)
    inputs = [
        mesh.id,
        wp.array(starts, dtype=wp.vec3),
        wp.array(dirs, dtype=wp.vec3),
        wp.array(np.asarray(max_t), dtype=float),
    ]
    wp.launch(ray_queries, dim=n, inputs=[*inputs, ints, tuvs, normals, hit_pos])
    return ints.numpy(), tuvs.numpy(), normals.numpy(), hit_pos.numpy()


def test_rays_vs_brute_force(sphere_data):
    pts, tri, mesh, _ = sphere_data
    rng = np.random.default_rng(3)
    # from outside towards points near the centre (hits), random directions (some miss), from
    # inside (exactly one hit of a face's back: the mesh is star-shaped about the origin)
    s_out = rng.normal(size=(100, 3))
    s_out *= 3.0 / np.linalg.norm(s_out, axis=1, keepdims=True)
    d_out = rng.uniform(-0.6, 0.6, (100, 3)) - s_out
    d_out *= rng.uniform(0.3, 2.0, (100, 1))  # t counts multiples of |dir|
    s_rand = rng.uniform(-2.5, 2.5, (60, 3))
    d_rand = rng.normal(size=(60, 3))
    s_in = rng.uniform(-0.05, 0.05, (40, 3))
    d_in = rng.normal(size=(40, 3))
    starts = np.concatenate([s_out, s_rand, s_in]).astype(np.float32)
    dirs = np.concatenate([d_out, d_rand, d_in]).astype(np.float32)
    n = len(starts)
    ints, tuvs, normals, hit_pos = run_rays(mesh, starts, dirs, np.full(n, BIG))

    bt, bu, bv, margin = brute_rays(starts, dirs, pts, tri)
    t_min = bt.min(axis=1)
    hit = np.isfinite(t_min)
    assert hit.sum() > 130 and (~hit).sum() > 5
    np.testing.assert_array_equal(ints[:, 0] >= 0, hit)
    np.testing.assert_array_equal(ints[:, 1], hit)
    # hit counts: rays clear of every edge (a ray through an edge may count both faces)
    clean = np.where(np.isfinite(margin), margin, 1.0).min(axis=1) > 1e-4
    assert clean.sum() > 180
    np.testing.assert_array_equal(ints[clean, 2], np.isfinite(bt[clean]).sum(axis=1))
    np.testing.assert_array_equal(ints[160:, 2], 1)

    rows = np.flatnonzero(hit)
    face = ints[rows, 0]
    np.testing.assert_allclose(tuvs[rows, 0], t_min[rows], rtol=2e-5, atol=1e-6)
    np.testing.assert_allclose(bt[rows, face], t_min[rows], rtol=2e-5, atol=1e-6)
    np.testing.assert_allclose(tuvs[rows, 1], bu[rows, face], atol=2e-5)
    np.testing.assert_allclose(tuvs[rows, 2], bv[rows, face], atol=2e-5)
    a, b, c = tri_vertices(pts, tri)
    nrm = np.cross(b - a, c - a)
    nrm /= np.linalg.norm(nrm, axis=1, keepdims=True)
    np.testing.assert_allclose(normals[rows], nrm[face], atol=1e-5)
    front = (nrm[face] * dirs[rows]).sum(axis=1) < 0
    np.testing.assert_array_equal(np.sign(tuvs[rows, 3]), np.where(front, 1.0, -1.0))  # > 0: the front
    assert (tuvs[160:, 3] < 0.0).all()  # from inside: the back of a face
    np.testing.assert_allclose(hit_pos[rows, 0], hit_pos[rows, 1], atol=2e-5)
    np.testing.assert_allclose(
        np.asarray(hit_pos[rows, 1], np.float64), eval_bary(pts, tri, face, tuvs[rows, 1], tuvs[rows, 2]), atol=1e-5
    )
    np.testing.assert_array_equal(ints[~hit, 0], -1)

    # max_t just short of the first hit: no hit (closest or any); just beyond: the same hit
    t_ref = np.where(hit, t_min, 1.0)
    short = run_rays(mesh, starts, dirs, t_ref * 0.999)[0]
    np.testing.assert_array_equal(short[:, :2], np.stack([np.full(n, -1), np.zeros(n)], axis=1))
    long = run_rays(mesh, starts, dirs, t_ref * 1.001)
    np.testing.assert_array_equal(long[0][:, 0], ints[:, 0])
    np.testing.assert_array_equal(long[0][:, 1], hit)
    np.testing.assert_allclose(long[1][rows, 0], tuvs[rows, 0])


def test_rays_watertight_on_shared_edges_and_parallel():
    pts, tri = grid_quads(2)
    mesh = make_mesh(pts, tri)
    rng = np.random.default_rng(4)
    # targets on interior edges (diagonals, the mid lines) and the interior vertex, exactly in float32
    s = rng.uniform(0.0, 1.0, 40).astype(np.float32)
    targets = [np.stack([0.5 * s, 0.5 * s, 0 * s], 1), np.stack([0.5 + 0.5 * s, 0.5 * s, 0 * s], 1)]
    targets += [np.stack([np.full_like(s, 0.5), s, 0 * s], 1), np.stack([s, np.full_like(s, 0.5), 0 * s], 1)]
    targets += [np.array([[0.5, 0.5, 0.0]] * 4, np.float32)]
    targets = np.concatenate(targets).astype(np.float32)
    m = len(targets)
    dirs = np.concatenate([np.tile([[0.0, 0.0, -1.0]], (m, 1)), rng.uniform(-0.4, 0.4, (m, 3)) + [0.0, 0.0, -1.0]])
    dirs = dirs.astype(np.float32)
    targets = np.concatenate([targets, targets])
    starts = (targets - dirs * np.float32(1.5)).astype(np.float32)
    ints, tuvs, _, hit_pos = run_rays(mesh, starts, dirs, np.full(len(starts), BIG))
    assert (ints[:, 0] >= 0).all() and (ints[:, 1] == 1).all() and (ints[:, 2] >= 1).all()
    np.testing.assert_allclose(tuvs[:, 0], 1.5, rtol=1e-4)
    np.testing.assert_allclose(hit_pos[:, 1], targets, atol=1e-5)
    assert (tuvs[:, 3] > 0.0).all()  # from above: the front (+z normals)
    # from below: every ray still hits, the back
    up = run_rays(mesh, (targets + dirs * np.float32(1.5)).astype(np.float32), -dirs, np.full(len(starts), BIG))
    assert (up[0][:, 1] == 1).all() and (up[1][:, 3] < 0.0).all()

    # many slanted rays from near and far at points of the grid lines and diagonals of a 3 x 3
    # grid: flat node bounds meet on shared sides, where a box test without a rounding margin leaks
    pts, tri = grid_quads(3)
    n = 12000
    s = rng.uniform(0.01, 0.99, n).astype(np.float32)
    k = (rng.integers(1, 3, n) / 3.0).astype(np.float32)
    cell = rng.integers(0, 3, (n, 2))
    kind = rng.integers(0, 3, n)
    tx = np.where(kind == 0, k, np.where(kind == 1, s, (cell[:, 0] + s) / 3.0))
    ty = np.where(kind == 0, s, np.where(kind == 1, k, (cell[:, 1] + s) / 3.0))
    targets = np.stack([tx, ty, np.zeros(n)], axis=1).astype(np.float32)
    dirs = rng.uniform(-2.0, 2.0, (n, 3)).astype(np.float32)
    dirs[:, 2] = -np.abs(dirs[:, 2]) - 0.05
    starts = (targets - dirs * rng.uniform(0.1, 10.0, (n, 1))).astype(np.float32)
    for leaf in (1, 4):
        ints = run_rays(make_mesh(pts, tri, bvh_leaf_size=leaf), starts, dirs, np.full(n, BIG))[0]
        assert (ints[:, 0] >= 0).all() and (ints[:, 1] == 1).all(), (leaf, np.flatnonzero(ints[:, 0] < 0))

    # rays parallel to the plane (above it, or inside it) meet no face
    starts = np.array([[-1.0, 0.3, 0.5], [-1.0, 0.3, 0.0], [0.2, 0.3, 1e-3], [0.5, 0.5, 2.0]], np.float32)
    dirs = np.array([[1.0, 0.0, 0.0], [1.0, 0.2, 0.0], [0.0, 1.0, 0.0], [0.0, 0.0, 1.0]], np.float32)
    ints = run_rays(make_mesh(*grid_quads(2)), starts, dirs, np.full(4, BIG))[0]
    np.testing.assert_array_equal(ints, [[-1, 0, 0]] * 4)  # the last points away


def latlong_sphere(side: int, wobble: float = 0.0):
    """A bumpy sphere on a side x side latitude-longitude grid (2 side (side - 1) faces)."""
    th = np.linspace(0.05, np.pi - 0.05, side)
    th, ph = np.meshgrid(th, np.linspace(0.0, 2 * np.pi, side, endpoint=False), indexing="ij")
    r = 1.0 + 0.05 * np.sin(7.0 * th) * np.cos(5.0 * ph) + wobble * np.sin(3.0 * ph)
    pts = np.stack([r * np.sin(th) * np.cos(ph), r * np.sin(th) * np.sin(ph), r * np.cos(th)], axis=-1).reshape(-1, 3)
    i, j = np.meshgrid(np.arange(side - 1), np.arange(side), indexing="ij")
    a, b = i * side + j, i * side + (j + 1) % side
    c, d = (i + 1) * side + j, (i + 1) * side + (j + 1) % side
    tri = np.concatenate([np.stack([a, c, b], -1).reshape(-1, 3), np.stack([b, c, d], -1).reshape(-1, 3)])
    return pts.astype(np.float32), tri.astype(np.int32)


def binary_tree_only(mesh):
    """The mesh with its 4-wide tree dropped: its rays walk the binary tree, as on a GPU."""
    mesh._tree.host_wide = None
    mesh._write_descriptor(None)
    return mesh


def test_wide_and_binary_trees_report_the_same_hits():
    """On the CPU a mesh's rays walk a 4-wide copy of its tree: every ray result (face included:
    of faces hit at the same t the lowest index wins, whatever the walk) is the binary tree's,
    before and after a refit; rays aimed at vertices and edges hit several faces at one t."""
    pts, tri = latlong_sphere(40)
    rng = np.random.default_rng(12)
    n = 600
    s = rng.normal(size=(n, 3))
    s *= rng.uniform(0.0, 3.0, (n, 1)) / np.linalg.norm(s, axis=1, keepdims=True)
    vertex = pts[rng.integers(0, len(pts), n)]
    e = tri[rng.integers(0, len(tri), n)]
    edge = 0.5 * (pts[e[:, 0]] + pts[e[:, 1]])
    pick = rng.integers(0, 3, (n, 1))
    d = np.where(pick == 0, vertex - s, np.where(pick == 1, edge - s, rng.normal(size=(n, 3))))
    axis = rng.random(n) < 0.15  # parallel to two slabs: the per-lane path
    d[axis] = np.eye(3)[rng.integers(0, 3, axis.sum())] * rng.choice([-1.0, 1.0], (axis.sum(), 1))
    s, d = s.astype(np.float32), d.astype(np.float32)
    max_t = np.where(rng.random(n) < 0.2, rng.uniform(0.0, 2.0, n), BIG)
    for wobble in (0.0, 0.05):
        wide = make_mesh(pts, tri)
        binary = binary_tree_only(make_mesh(pts, tri))
        if wobble:  # moved points: both trees refitted
            moved = latlong_sphere(40, wobble)[0]
            for m in (wide, binary):
                m.points.assign(moved)
                m.refit()
        a, b = run_rays(wide, s, d, max_t), run_rays(binary, s, d, max_t)
        hits = a[0][:, 0] >= 0
        assert hits.sum() > 300 and (~hits).sum() > 50
        for x, y in zip(a, b):
            np.testing.assert_array_equal(x, y)


def test_legacy_out_argument_forms(sphere_data):
    mesh = sphere_data[2]

    @wp.kernel
    def legacy(mesh: wp.uint64, p: wp.array(dtype=wp.vec3), d: wp.array(dtype=wp.vec3), out: wp.array2d(dtype=float)):
        i = wp.tid()
        sign = float(0.0)
        face = int(0)
        u = float(0.0)
        v = float(0.0)
        found = wp.mesh_query_point(mesh, p[i], 1.0e6, sign, face, u, v)
        out[i, 0] = wp.where(found, float(face), -1.0)
        out[i, 1] = u
        out[i, 2] = v
        out[i, 3] = sign
        t = float(0.0)
        normal = wp.vec3()
        hit = wp.mesh_query_ray(mesh, p[i], d[i], 1.0e6, t, u, v, sign, normal, face)
        out[i, 4] = wp.where(hit, float(face), -1.0)
        out[i, 5] = t
        out[i, 6] = u
        out[i, 7] = v
        out[i, 8] = sign
        out[i, 9] = normal[2]

    rng = np.random.default_rng(5)
    p = rng.uniform(-2.0, 2.0, (30, 3)).astype(np.float32)
    d = (rng.uniform(-1.0, 1.0, (30, 3)) - p).astype(np.float32)
    out = wp.zeros((30, 10), dtype=float)
    wp.launch(legacy, dim=30, inputs=[mesh.id, wp.array(p, dtype=wp.vec3), wp.array(d, dtype=wp.vec3), out])
    out = out.numpy()
    ints, tuvs, normals, _ = run_rays(mesh, p, d, np.full(30, BIG))
    faces, uvs, _ = run_point_queries(mesh, mesh, p, np.full(30, BIG), np.zeros(30))
    np.testing.assert_array_equal(out[:, 0], faces[:, 1])
    np.testing.assert_allclose(out[:, 1:4], uvs[:, 1], atol=1e-6)
    np.testing.assert_array_equal(out[:, 4], ints[:, 0])
    hit = ints[:, 0] >= 0
    assert hit.sum() > 10
    np.testing.assert_allclose(out[hit, 5:9], tuvs[hit], atol=1e-6)
    np.testing.assert_allclose(out[hit, 9], normals[hit, 2], atol=1e-6)


# ----------------------------------------------------------------- AABB / sphere / accessors


@wp.kernel
def overlap_queries(
    mesh: wp.uint64,
    lo: wp.array(dtype=wp.vec3),
    hi: wp.array(dtype=wp.vec3),
    radius: wp.array(dtype=float),
    hits: wp.array3d(dtype=wp.int32),
):
    i = wp.tid()
    query = wp.mesh_query_aabb(mesh, lo[i], hi[i])
    face = int(0)
    while wp.mesh_query_next(query, face):
        wp.atomic_add(hits, 0, i, face, 1)
    center = 0.5 * (lo[i] + hi[i])
    sphere = wp.mesh_query_sphere(mesh, center, radius[i])
    face = int(0)
    while wp.mesh_query_aabb_next(sphere, face):
        wp.atomic_add(hits, 1, i, face, 1)
    bvh = wp.bvh_query_aabb(wp.mesh_get_bvh(mesh), lo[i], hi[i])
    item = int(0)
    while wp.bvh_query_next(bvh, item):
        wp.atomic_add(hits, 2, i, item, 1)


def run_overlaps(mesh, num_faces, lo, hi, radius):
    hits = wp.zeros((3, len(lo), num_faces), dtype=wp.int32)
    inputs = [mesh.id, wp.array(lo, dtype=wp.vec3), wp.array(hi, dtype=wp.vec3), wp.array(radius, dtype=float)]
    wp.launch(overlap_queries, dim=len(lo), inputs=[*inputs, hits])
    return hits.numpy()


def brute_overlaps(pts, tri, lo, hi, radius):
    corners = pts[tri]  # float32, as the kernel's bounds
    flo, fhi = corners.min(axis=1), corners.max(axis=1)
    aabb = ((flo[None] <= hi[:, None]) & (fhi[None] >= lo[:, None])).all(axis=2)
    center = 0.5 * (lo.astype(np.float64) + hi)
    d2 = brute_closest(center, pts, tri)[2]
    return aabb.astype(np.int32), (d2 <= radius[:, None] ** 2).astype(np.int32)


def test_aabb_and_sphere_iteration(sphere_data):
    pts, tri, mesh, _ = sphere_data
    rng = np.random.default_rng(6)
    c = rng.uniform(-1.5, 1.5, (40, 3))
    h = rng.uniform(0.02, 0.8, (40, 3))
    lo, hi = (c - h).astype(np.float32), (c + h).astype(np.float32)
    lo[0], hi[0] = (-3.0, -3.0, -3.0), (3.0, 3.0, 3.0)  # everything
    lo[1], hi[1] = (5.0, 5.0, 5.0), (6.0, 6.0, 6.0)  # nothing
    radius = rng.uniform(0.05, 1.0, 40).astype(np.float32)
    hits = run_overlaps(mesh, len(tri), lo, hi, radius)
    aabb, sphere = brute_overlaps(pts, tri, lo, hi, radius)
    np.testing.assert_array_equal(hits[0], aabb)
    np.testing.assert_array_equal(hits[1], sphere)
    np.testing.assert_array_equal(hits[2], aabb)  # the mesh's BVH: items are faces
    assert hits[0, 0].all() and not hits[:, 1].any()
    assert 0 < sphere.sum() < sphere.size and (sphere <= aabb + 1).all()


@wp.kernel
def mesh_accessors(
    mesh: wp.uint64, faces: wp.array(dtype=wp.int32), bary: wp.array(dtype=wp.vec2), out: wp.array2d(dtype=wp.vec3)
):
    i = wp.tid()
    f = faces[i]
    out[i, 0] = wp.mesh_eval_position(mesh, f, bary[i][0], bary[i][1])
    out[i, 1] = wp.mesh_eval_velocity(mesh, f, bary[i][0], bary[i][1])
    out[i, 2] = wp.mesh_eval_face_normal(mesh, f)
    m = wp.mesh_get(mesh)
    for k in range(3):
        out[i, 3 + k] = wp.mesh_get_point(mesh, 3 * f + k)
        idx = wp.mesh_get_index(mesh, 3 * f + k)
        out[i, 6 + k] = wp.vec3(float(idx), float(m.indices[3 * f + k]), 0.0)
        out[i, 9 + k] = m.points[idx] + m.velocities[idx] - wp.mesh_get_velocity(mesh, 3 * f + k)


def test_eval_and_accessors(sphere_data):
    pts, tri, _, _ = sphere_data
    rng = np.random.default_rng(7)
    vel = rng.normal(size=pts.shape).astype(np.float32)
    mesh = make_mesh(pts, tri, velocities=wp.array(vel, dtype=wp.vec3))
    faces = rng.integers(0, len(tri), 50).astype(np.int32)
    bary = rng.dirichlet([1.0, 1.0, 1.0], 50)[:, :2].astype(np.float32)
    out = wp.zeros((50, 12), dtype=wp.vec3)
    wp.launch(
        mesh_accessors, dim=50, inputs=[mesh.id, wp.array(faces, dtype=wp.int32), wp.array(bary, dtype=wp.vec2), out]
    )
    out = out.numpy()
    u, v = bary[:, 0].astype(np.float64), bary[:, 1].astype(np.float64)
    np.testing.assert_allclose(out[:, 0], eval_bary(pts, tri, faces, u, v), atol=1e-6)
    np.testing.assert_allclose(out[:, 1], eval_bary(vel, tri, faces, u, v), atol=1e-5)
    a, b, c = tri_vertices(pts, tri)
    nrm = np.cross(b - a, c - a)[faces]
    np.testing.assert_allclose(out[:, 2], nrm / np.linalg.norm(nrm, axis=1, keepdims=True), atol=1e-6)
    np.testing.assert_array_equal(out[:, 3:6], pts[tri[faces]])
    np.testing.assert_array_equal(out[:, 6:9, 0], tri[faces])
    np.testing.assert_array_equal(out[:, 6:9, 1], tri[faces])
    np.testing.assert_allclose(out[:, 9:12], pts[tri[faces]], atol=1e-6)


# ------------------------------------------------------------------------ groups and updates


def test_grouped_mesh_rays_and_empty_mesh():
    # five unit triangles stacked along z, groups with sparse ids
    base = np.array([[0.0, 0.0, 0.0], [1.0, 0.0, 0.0], [0.0, 1.0, 0.0]], np.float32)
    pts = np.concatenate([base + [0.0, 0.0, z] for z in range(5)]).astype(np.float32)
    tri = np.arange(15, dtype=np.int32).reshape(5, 3)
    group_ids = np.array([7, 2**31 - 1, 7, 0, 2**31 - 1], np.int32)
    mesh = make_mesh(pts, tri, groups=wp.array(group_ids, dtype=wp.int32))

    @wp.kernel
    def grouped(mesh: wp.uint64, groups: wp.array(dtype=wp.int32), out: wp.array2d(dtype=wp.int32)):
        i = wp.tid()
        root = wp.mesh_get_group_root(mesh, groups[i])
        start = wp.vec3(0.2, 0.2, -1.0)
        up = wp.vec3(0.0, 0.0, 1.0)
        q = wp.mesh_query_ray(mesh, start, up, 1.0e6, root)
        out[i, 0] = wp.where(q.result, q.face, -1)
        out[i, 1] = wp.where(root >= 0, 1, 0)
        out[i, 2] = wp.mesh_query_ray_count_intersections(mesh, start, up, root)
        out[i, 3] = wp.where(wp.mesh_query_ray_anyhit(mesh, start, up, 2.5, root), 1, 0)

    groups = np.array([7, 2**31 - 1, 0, 1, -1], np.int32)
    out = wp.zeros((5, 4), dtype=wp.int32)
    wp.launch(grouped, dim=5, inputs=[mesh.id, wp.array(groups, dtype=wp.int32), out])
    # group 7: faces 0 (z=0), 2; 2**31-1: 1, 4; 0: face 3 (z=3, beyond max_t 2.5 from z=-1); 1, -1: none -> whole mesh
    np.testing.assert_array_equal(out.numpy(), [[0, 1, 2, 1], [1, 1, 2, 1], [3, 1, 1, 0], [0, 0, 5, 1], [0, 0, 5, 1]])

    # a mesh without faces finds nothing
    empty = wp.Mesh(points=wp.array(pts, dtype=wp.vec3), indices=wp.zeros(0, dtype=wp.int32))
    faces = run_point_queries(empty, empty, pts[:3], np.full(3, BIG), np.zeros(3))[0]
    np.testing.assert_array_equal(faces, -1)
    ints = run_rays(empty, pts[:3] - 1, np.ones((3, 3), np.float32), np.full(3, BIG))[0]
    np.testing.assert_array_equal(ints, [[-1, 0, 0]] * 3)
    hits = run_overlaps(
        empty, 1, np.full((2, 3), -9, np.float32), np.full((2, 3), 9, np.float32), np.full(2, 9.0, np.float32)
    )
    assert not hits.any()


def test_refit_and_new_points(sphere_data):
    pts, tri, _, _ = sphere_data
    points = wp.array(pts, dtype=wp.vec3)
    mesh = wp.Mesh(points=points, indices=wp.array(tri.reshape(-1), dtype=wp.int32), support_winding_number=True)
    rng = np.random.default_rng(8)
    p = rng.uniform(-1.5, 1.5, (40, 3)).astype(np.float32)
    lo, hi = p - 0.3, p + 0.3
    radius = np.full(40, 0.3, np.float32)

    def check(cur):
        n = len(p)
        faces, uvs, _ = run_point_queries(mesh, mesh, p, np.full(n, BIG), np.zeros(n))
        d2 = brute_closest(p, cur, tri)[2]
        np.testing.assert_allclose(d2[np.arange(n), faces[:, 0]], d2.min(axis=1), atol=1e-6)
        inside = winding_number(p.astype(np.float64), cur, tri) > 0.5
        clear = np.sqrt(d2.min(axis=1)) > 0.05
        for k in (1, 2, 3, 4):
            np.testing.assert_array_equal(uvs[clear, k, 2] < 0, inside[clear])
        hits = run_overlaps(mesh, len(tri), lo, hi, radius)
        aabb, sphere = brute_overlaps(cur, tri, lo, hi, radius)
        np.testing.assert_array_equal(hits[0], aabb)
        np.testing.assert_array_equal(hits[1], sphere)
        t = brute_rays(p, -p, cur, tri)[0].min(axis=1)
        ints, tuvs, _, _ = run_rays(mesh, p, -p, np.full(n, BIG))
        np.testing.assert_array_equal(ints[:, 0] >= 0, np.isfinite(t))
        np.testing.assert_allclose(tuvs[np.isfinite(t), 0], t[np.isfinite(t)], rtol=1e-4)

    check(pts)
    moved = (pts * np.float32(0.7) + np.float32([0.4, -0.3, 0.2])).astype(np.float32)
    points.assign(moved)  # in place, then refit
    mesh.refit()
    check(moved)
    moved2 = (pts * np.float32([1.3, 0.9, 1.1]) - np.float32([0.2, 0.1, 0.0])).astype(np.float32)
    mesh.points = wp.array(moved2, dtype=wp.vec3)  # a new array: refits by itself
    check(moved2)


def test_velocities_setter(sphere_data):
    pts, tri, _, _ = sphere_data
    vel = np.ones_like(pts)
    mesh = make_mesh(pts, tri, velocities=wp.array(vel, dtype=wp.vec3))
    mesh.velocities = wp.array(vel * 3.0, dtype=wp.vec3)
    out = wp.zeros((1, 12), dtype=wp.vec3)
    inputs = [mesh.id, wp.array([0], dtype=wp.int32), wp.array(np.array([[0.2, 0.3]], np.float32), dtype=wp.vec2), out]
    wp.launch(mesh_accessors, dim=1, inputs=inputs)
    np.testing.assert_allclose(out.numpy()[0, 1], [3.0, 3.0, 3.0], rtol=1e-6)
    assert mesh.velocities.numpy()[0, 0] == 3.0
    with pytest.raises(RuntimeError):
        mesh.velocities = wp.array(vel[:-1], dtype=wp.vec3)


# ------------------------------------------------------------------------------- gradients


@wp.kernel
def closest_distance(mesh: wp.uint64, pts: wp.array(dtype=wp.vec3), out: wp.array(dtype=float)):
    i = wp.tid()
    q = wp.mesh_query_point_no_sign(mesh, pts[i], 1.0e6)
    out[i] = wp.length(pts[i] - wp.mesh_eval_position(mesh, q.face, q.u, q.v))


@wp.kernel
def ray_loss(
    mesh: wp.uint64, starts: wp.array(dtype=wp.vec3), dirs: wp.array(dtype=wp.vec3), out: wp.array(dtype=float)
):
    i = wp.tid()
    q = wp.mesh_query_ray(mesh, starts[i], dirs[i], 1.0e6)
    out[i] = q.t + 0.5 * q.u - 0.25 * q.v


@wp.kernel
def eval_loss(
    mesh: wp.uint64,
    faces: wp.array(dtype=wp.int32),
    u: wp.array(dtype=float),
    v: wp.array(dtype=float),
    w: wp.array(dtype=wp.vec3),
    out: wp.array(dtype=float),
):
    i = wp.tid()
    wp.atomic_add(out, 0, wp.dot(w[i], wp.mesh_eval_position(mesh, faces[i], u[i], v[i])))


def per_point_fd(f, x, eps):
    """Central differences of an elementwise function f: (n, 3) -> (n,) at x, as (n, 3)."""
    g = np.zeros_like(x, dtype=np.float64)
    for k in range(3):
        xp, xm = x.copy(), x.copy()
        xp[:, k] += eps
        xm[:, k] -= eps
        g[:, k] = (f(xp).astype(np.float64) - f(xm)) / (2 * eps)
    return g


def test_closest_point_gradient_vs_fd():
    pts, tri = icosphere(bumps=0.0, scale=(1.0, 1.0, 1.0))
    mesh = make_mesh(pts, tri)
    a, b, c = tri_vertices(pts, tri)
    n = np.cross(b - a, c - a)
    n /= np.linalg.norm(n, axis=1, keepdims=True)
    face_pts = (a + b + c)[:6] / 3 + 0.3 * n[:6]  # interior of a face
    edge_pts = (0.5 * (a + b))[10:16] * 1.2  # out past an edge, off the faces' normal cones
    vert_pts = pts[[1, 5, 9, 20, 30, 40]] * 1.5  # out past a vertex
    inner = (a + b + c)[20:26] / 3 * 0.6  # inside, nearest a face interior
    x = np.concatenate([face_pts, edge_pts, vert_pts, inner]).astype(np.float32)
    m = len(x)

    def dist(xx):
        out = wp.zeros(m, dtype=float)
        wp.launch(closest_distance, dim=m, inputs=[mesh.id, wp.array(xx.astype(np.float32), dtype=wp.vec3), out])
        return out.numpy()

    xs = wp.array(x, dtype=wp.vec3, requires_grad=True)
    out = wp.zeros(m, dtype=float, requires_grad=True)
    tape = wp.Tape()
    with tape:
        wp.launch(closest_distance, dim=m, inputs=[mesh.id, xs, out])
    tape.backward(grads={out: wp.array(np.ones(m, np.float32), dtype=float)})
    grad = xs.grad.numpy()
    fd = per_point_fd(dist, x.astype(np.float64), 1e-3)
    np.testing.assert_allclose(grad, fd, atol=2e-3)
    # and the analytic answer: the unit vector from the closest point
    u, v, d2 = brute_closest(x, pts, tri)
    assert np.allclose(out.numpy(), np.sqrt(d2.min(axis=1)), atol=1e-5)
    f, r = d2.argmin(axis=1), np.arange(m)
    nonzero = (np.stack([u[r, f], v[r, f], 1.0 - u[r, f] - v[r, f]], axis=1) > 1e-6).sum(axis=1)
    np.testing.assert_array_equal(nonzero, [3] * 6 + [2] * 6 + [1] * 6 + [3] * 6)  # face, edge, vertex, face
    np.testing.assert_allclose(np.linalg.norm(grad, axis=1), 1.0, atol=1e-4)


def test_ray_gradient_vs_fd(sphere_data):
    pts, tri, mesh, _ = sphere_data
    rng = np.random.default_rng(9)
    a, b, c = tri_vertices(pts, tri)
    f = rng.choice(len(tri), 16, replace=False)
    w = rng.dirichlet([4.0, 4.0, 4.0], 16)  # well inside the face
    target = w[:, :1] * a[f] + w[:, 1:2] * b[f] + w[:, 2:] * c[f]
    starts = (target * 2.5 + rng.normal(scale=0.2, size=(16, 3))).astype(np.float32)
    dirs = ((target - starts) * rng.uniform(0.5, 1.5, (16, 1))).astype(np.float32)
    m = len(starts)

    def loss(s, d):
        out = wp.zeros(m, dtype=float)
        wp.launch(
            ray_loss,
            dim=m,
            inputs=[
                mesh.id,
                wp.array(s.astype(np.float32), dtype=wp.vec3),
                wp.array(d.astype(np.float32), dtype=wp.vec3),
                out,
            ],
        )
        return out.numpy()

    s_arr = wp.array(starts, dtype=wp.vec3, requires_grad=True)
    d_arr = wp.array(dirs, dtype=wp.vec3, requires_grad=True)
    out = wp.zeros(m, dtype=float, requires_grad=True)
    tape = wp.Tape()
    with tape:
        wp.launch(ray_loss, dim=m, inputs=[mesh.id, s_arr, d_arr, out])
    tape.backward(grads={out: wp.array(np.ones(m, np.float32), dtype=float)})
    bt, bu, bv, _ = brute_rays(starts, dirs, pts, tri)
    k = bt.argmin(axis=1)
    r = np.arange(m)
    np.testing.assert_allclose(out.numpy(), bt[r, k] + 0.5 * bu[r, k] - 0.25 * bv[r, k], rtol=1e-4, atol=1e-5)
    s64, d64 = starts.astype(np.float64), dirs.astype(np.float64)
    np.testing.assert_allclose(
        s_arr.grad.numpy(), per_point_fd(lambda s: loss(s, d64), s64, 1e-3), rtol=2e-2, atol=2e-3
    )
    np.testing.assert_allclose(
        d_arr.grad.numpy(), per_point_fd(lambda d: loss(s64, d), d64, 1e-3), rtol=2e-2, atol=2e-3
    )


def test_eval_position_gradient_into_points(sphere_data):
    pts, tri, _, _ = sphere_data
    points = wp.array(pts, dtype=wp.vec3, requires_grad=True)
    mesh = wp.Mesh(points=points, indices=wp.array(tri.reshape(-1), dtype=wp.int32))
    rng = np.random.default_rng(10)
    k = 24
    faces = rng.integers(0, len(tri), k).astype(np.int32)
    bary = rng.dirichlet([1.0, 1.0, 1.0], k).astype(np.float32)
    w = rng.normal(size=(k, 3)).astype(np.float32)
    args = [wp.array(faces, dtype=wp.int32), wp.array(bary[:, 0], dtype=float, requires_grad=True)]
    args += [wp.array(bary[:, 1], dtype=float, requires_grad=True), wp.array(w, dtype=wp.vec3)]
    out = wp.zeros(1, dtype=float, requires_grad=True)
    tape = wp.Tape()
    with tape:
        wp.launch(eval_loss, dim=k, inputs=[mesh.id, *args, out])
    tape.backward(loss=out)

    def loss(cur):
        points.assign(cur.astype(np.float32))
        mesh.refit()
        o = wp.zeros(1, dtype=float)
        wp.launch(eval_loss, dim=k, inputs=[mesh.id, *args, o])
        return float(o.numpy()[0])

    eps = 1e-2  # the loss is linear in the points
    fd = np.zeros(pts.shape)
    base = pts.astype(np.float64)
    for vi in np.unique(tri[faces]):
        for c in range(3):
            xp, xm = base.copy(), base.copy()
            xp[vi, c] += eps
            xm[vi, c] -= eps
            fd[vi, c] = (loss(xp) - loss(xm)) / (2 * eps)
    np.testing.assert_allclose(points.grad.numpy(), fd, atol=2e-3)
    a, b, c = tri_vertices(pts, tri)
    np.testing.assert_allclose(args[1].grad.numpy(), (w * (a - c)[faces]).sum(axis=1), rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(args[2].grad.numpy(), (w * (b - c)[faces]).sum(axis=1), rtol=1e-5, atol=1e-5)


# ---------------------------------------------------------------------------------- errors


def test_constructor_validation():
    pts = wp.array(np.zeros((6, 3), np.float32), dtype=wp.vec3)
    idx = wp.array(np.arange(6, dtype=np.int32), dtype=wp.int32)
    with pytest.raises(RuntimeError, match="points"):
        wp.Mesh(points=wp.array(np.zeros((6, 3)), dtype=wp.vec3d), indices=idx)
    with pytest.raises(RuntimeError, match="points"):
        wp.Mesh(points=wp.array(np.zeros((12, 3), np.float32), dtype=wp.vec3)[::2], indices=idx)
    with pytest.raises(RuntimeError, match="indices"):
        wp.Mesh(points=pts, indices=wp.array(np.arange(6), dtype=wp.int64))
    with pytest.raises(RuntimeError, match="indices"):
        wp.Mesh(points=pts, indices=wp.array(np.arange(12, dtype=np.int32), dtype=wp.int32)[::2])
    with pytest.raises(RuntimeError, match="velocities"):
        wp.Mesh(points=pts, indices=idx, velocities=wp.zeros(6, dtype=float))
    with pytest.raises(RuntimeError, match="groups"):
        wp.Mesh(points=pts, indices=idx, groups=wp.zeros(2, dtype=wp.int64))
    with pytest.raises(RuntimeError, match="groups"):
        wp.Mesh(points=pts, indices=idx, groups=wp.zeros(3, dtype=wp.int32))
    with pytest.raises(ValueError, match="bvh_leaf_size"):
        wp.Mesh(points=pts, indices=idx, bvh_leaf_size=0)
    with pytest.raises(ValueError):
        wp.Mesh(points=pts, indices=idx, bvh_constructor="octree")
    mesh = wp.Mesh(points=pts, indices=idx)
    with pytest.raises(RuntimeError):
        mesh.points = wp.array(np.zeros((5, 3), np.float32), dtype=wp.vec3)
