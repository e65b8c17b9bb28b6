"""wp.MarchingCubes: the case table from first principles, meshes of known surfaces (a sphere,
a plane, noise) checked for position, count, closedness, orientation and topology against NumPy
references, the Warp 1.19 API (bounds, deprecated names, validation, empty output), and the
gradient from the vertices back into the field."""

from __future__ import annotations

import collections
import warnings

import numpy as np
import pytest

import weft as wp
from weft.geometry.marching_cubes import IsoSurfaceMarchingCubes

MC = wp.MarchingCubes
CORNERS = np.array(MC.CUBE_CORNER_OFFSETS)


@wp.kernel
def sphere_sdf(field: wp.array3d(dtype=float), center: wp.vec3, radius: float):
    i, j, k = wp.tid()
    field[i, j, k] = wp.length(wp.vec3(float(i), float(j), float(k)) - center) - radius


@wp.kernel
def sphere_sdf_unit(field: wp.array3d(dtype=float), radius: wp.array(dtype=float)):
    """Sphere at the origin, nodes spread over [-1, 1]^3."""
    i, j, k = wp.tid()
    n = float(field.shape[0] - 1)
    p = wp.vec3(2.0 * float(i) / n - 1.0, 2.0 * float(j) / n - 1.0, 2.0 * float(k) / n - 1.0)
    field[i, j, k] = wp.length(p) - radius[0]


@wp.kernel
def mesh_area(verts: wp.array(dtype=wp.vec3), indices: wp.array(dtype=wp.int32), area: wp.array(dtype=float)):
    t = wp.tid()
    p0 = verts[indices[3 * t]]
    p1 = verts[indices[3 * t + 1]]
    p2 = verts[indices[3 * t + 2]]
    wp.atomic_add(area, 0, 0.5 * wp.length(wp.cross(p1 - p0, p2 - p0)))


@wp.kernel
def weighted_sum(verts: wp.array(dtype=wp.vec3), w: wp.array(dtype=wp.vec3), out: wp.array(dtype=float)):
    t = wp.tid()
    wp.atomic_add(out, 0, wp.dot(verts[t], w[t]))


def sphere_field(shape, center, radius):
    field = wp.zeros(shape, dtype=float)
    wp.launch(sphere_sdf, dim=shape, inputs=[field, wp.vec3(*center), float(radius)])
    return field


def crossing_edges(f, threshold):
    """NumPy reference: every grid edge whose ends lie on either side of the threshold, in the order
    node-major then axis, as (start node, end node)."""
    out = []
    above = f >= threshold
    for i, j, k in np.ndindex(f.shape):
        for axis in range(3):
            n1 = [i, j, k]
            n1[axis] += 1
            if n1[axis] < f.shape[axis] and above[i, j, k] != above[tuple(n1)]:
                out.append(((i, j, k), tuple(n1)))
    return out


def reference_vertices(f, threshold, lower, spacing):
    verts = []
    for n0, n1 in crossing_edges(f, threshold):
        f0, f1 = float(f[n0]), float(f[n1])
        t = np.clip((threshold - f0) / (f1 - f0), 0.0, 1.0)
        verts.append(lower + (np.array(n0) + t * (np.array(n1) - np.array(n0))) * spacing)
    return np.array(verts).reshape(-1, 3)


def case_codes(f, threshold):
    above = (f >= threshold).astype(np.int64)
    nx, ny, nz = f.shape
    code = np.zeros((nx - 1, ny - 1, nz - 1), np.int64)
    for c, (dx, dy, dz) in enumerate(CORNERS):
        code += above[dx : dx + nx - 1, dy : dy + ny - 1, dz : dz + nz - 1] << c
    return code


def edge_counts(tris):
    """Undirected and directed edge multiplicities of a triangle list."""
    directed = collections.Counter()
    for t in tris:
        for s in range(3):
            directed[(t[s], t[(s + 1) % 3])] += 1
    undirected = collections.Counter()
    for (a, b), n in directed.items():
        undirected[(min(a, b), max(a, b))] += n
    return undirected, directed


def check_mesh(verts, tris):
    assert verts.ndim == 2 and verts.shape[1] == 3 and np.isfinite(verts).all()
    assert tris.ndim == 2 and tris.shape[1] == 3
    assert (tris >= 0).all() and (tris < len(verts)).all()
    assert (tris[:, 0] != tris[:, 1]).all() and (tris[:, 1] != tris[:, 2]).all() and (tris[:, 0] != tris[:, 2]).all()
    assert np.array_equal(np.unique(tris), np.arange(len(verts)))  # every vertex used


# --- the tables ------------------------------------------------------------------------------


def test_tables_shape_and_types():
    assert MC is IsoSurfaceMarchingCubes
    assert isinstance(MC.CUBE_CORNER_OFFSETS, tuple) and len(MC.CUBE_CORNER_OFFSETS) == 8
    assert isinstance(MC.EDGE_TO_CORNERS, tuple) and len(MC.EDGE_TO_CORNERS) == 12
    assert len(MC.CASE_TO_TRI_RANGE) == 257 and len(MC.TRI_LOCAL_INDICES) == 2460
    assert MC.CASE_TO_TRI_RANGE[0] == 0 and MC.CASE_TO_TRI_RANGE[-1] == 2460
    assert all(isinstance(x, int) for x in MC.CASE_TO_TRI_RANGE + MC.TRI_LOCAL_INDICES)
    # every corner of the unit cube once; every edge joins two corners one axis apart, low to high
    assert sorted(MC.CUBE_CORNER_OFFSETS) == sorted(np.ndindex(2, 2, 2))
    for a, b in MC.EDGE_TO_CORNERS:
        d = CORNERS[b] - CORNERS[a]
        assert sorted(d.tolist()) == [0, 0, 1]
    assert len({frozenset(e) for e in MC.EDGE_TO_CORNERS}) == 12
    offsets = wp.array(MC.CUBE_CORNER_OFFSETS, dtype=wp.vec3ub)
    assert offsets.numpy()[1].tolist() == [1, 0, 0]
    assert wp.array(MC.EDGE_TO_CORNERS, dtype=wp.vec2ub).numpy()[0].tolist() == [0, 1]


def test_case_triangles_close_the_crossing_edges():
    """Every case's triangles use exactly its crossing edges; inside a case an edge joins at most two
    triangles, and the edges used one way only (the polygons' outlines) start and end once at each
    crossing edge; every triangle faces the corners at or above the threshold."""
    for case in range(256):
        _check_case(case)


def _check_case(case):
    r = MC.CASE_TO_TRI_RANGE
    tris = np.array(MC.TRI_LOCAL_INDICES[r[case] : r[case + 1]]).reshape(-1, 3)
    above = [(case >> c) & 1 for c in range(8)]
    crossing = {e for e, (a, b) in enumerate(MC.EDGE_TO_CORNERS) if above[a] != above[b]}
    assert set(tris.ravel().tolist()) == crossing
    if not crossing:
        return
    undirected, directed = edge_counts(tris)
    assert max(undirected.values()) <= 2
    # the polygon boundaries: directed edges without their reverse; each vertex starts and ends one
    boundary = [e for e in directed if (e[1], e[0]) not in directed]
    assert sorted(a for a, _ in boundary) == sorted(crossing) == sorted(b for _, b in boundary)
    # orientation: values +1 / -1 at the corners, vertices at edge midpoints; the normal of every
    # triangle points up the field's gradient (trilinear, evaluated at the triangle's centroid)
    mid = np.array([(CORNERS[a] + CORNERS[b]) / 2 for a, b in MC.EDGE_TO_CORNERS])
    values = np.array([1.0 if above[c] else -1.0 for c in range(8)])
    for t in tris:
        p = mid[t]
        n = np.cross(p[1] - p[0], p[2] - p[0])
        assert np.linalg.norm(n) > 0
        x = p.mean(axis=0)
        grad = np.zeros(3)
        for c in range(8):
            w = [x[d] if CORNERS[c][d] else 1 - x[d] for d in range(3)]
            for d in range(3):
                dw = w.copy()
                dw[d] = 1.0 if CORNERS[c][d] else -1.0
                grad[d] += values[c] * np.prod(dw)
        assert np.dot(n, grad) > 0


def test_table_single_corner_cases():
    """Textbook: one corner at or above cuts off a triangle of its three edges, facing the corner."""
    r = MC.CASE_TO_TRI_RANGE
    for c in range(8):
        tri = MC.TRI_LOCAL_INDICES[r[1 << c] : r[(1 << c) + 1]]
        assert sorted(tri) == sorted(e for e, pair in enumerate(MC.EDGE_TO_CORNERS) if c in pair)
    assert MC.TRI_LOCAL_INDICES[r[1] : r[2]] == (0, 8, 3)


# --- meshes ----------------------------------------------------------------------------------


def test_sphere_positions_order_and_topology():
    shape, center, radius = (30, 27, 33), np.array([14.2, 13.1, 16.3]), 9.3
    field = sphere_field(shape, center, radius)
    mc = MC(nx=shape[0], ny=shape[1], nz=shape[2])
    mc.surface(field=field, threshold=0.0)
    verts, tris = mc.verts.numpy(), mc.indices.numpy().reshape(-1, 3)
    assert mc.indices.dtype is wp.int32 and mc.verts.dtype is wp.vec3
    check_mesh(verts, tris)

    # vertices: one per crossing edge, in node-then-axis order, linearly interpolated
    expected = reference_vertices(field.numpy(), 0.0, np.zeros(3), np.ones(3))
    np.testing.assert_allclose(verts, expected, atol=2e-5)
    assert np.abs(np.linalg.norm(verts - center, axis=1) - radius).max() < 0.03

    # triangles: as many as the table gives the cells' cases
    counts = np.diff(np.array(MC.CASE_TO_TRI_RANGE)) // 3
    assert len(tris) == counts[case_codes(field.numpy(), 0.0)].sum()

    # closed, consistently oriented, a sphere (Euler characteristic 2), facing outward
    undirected, directed = edge_counts(tris)
    assert set(undirected.values()) == {2}
    assert set(directed.values()) == {1}
    assert len(verts) - len(undirected) + len(tris) == 2
    p = verts[tris]
    normals = np.cross(p[:, 1] - p[:, 0], p[:, 2] - p[:, 0])
    assert (np.einsum("ij,ij->i", normals, p.mean(axis=1) - center) > 0).all()
    volume = np.einsum("ij,ij->i", p[:, 0], np.cross(p[:, 1], p[:, 2])).sum() / 6.0
    assert abs(volume - 4.0 / 3.0 * np.pi * radius**3) / volume < 0.01


def test_bounds_map_nodes_affinely():
    shape = (20, 24, 18)
    field = sphere_field(shape, (9.5, 11.0, 8.7), 6.1)
    v0, i0 = MC.extract(field, 0.0)
    lower, upper = (-1.0, 2.0, 0.5), (3.0, 4.0, 9.0)
    v1, i1 = MC.extract(field, 0.0, lower=lower, upper=upper)
    spacing = (np.array(upper) - np.array(lower)) / (np.array(shape) - 1)
    np.testing.assert_allclose(v1.numpy(), np.array(lower) + v0.numpy() * spacing, rtol=1e-5, atol=1e-5)
    assert np.array_equal(i0.numpy(), i1.numpy())
    # the stateful form with the bounds given at construction (new and deprecated names)
    mc = MC(*shape, lower, upper)
    mc.surface(field, 0.0)
    np.testing.assert_array_equal(mc.verts.numpy(), v1.numpy())
    with pytest.warns(DeprecationWarning):
        old = MC(*shape, domain_bounds_lower_corner=lower, domain_bounds_upper_corner=upper)
    old.surface(field, 0.0)
    np.testing.assert_array_equal(old.verts.numpy(), v1.numpy())
    with pytest.warns(DeprecationWarning):
        v2, _ = MC.extract_surface_marching_cubes(field, 0.0, lower, upper)
    np.testing.assert_array_equal(v2.numpy(), v1.numpy())
    with pytest.warns(DeprecationWarning):
        assert tuple(old.domain_bounds_lower_corner) == lower


def test_plane_and_threshold():
    """A linear field: every vertex on the plane, triangles facing up the gradient."""
    shape = (9, 7, 8)
    x = np.arange(shape[0], dtype=np.float32)[:, None, None] + np.zeros(shape, np.float32)
    field = wp.array(x, dtype=float)
    verts, indices = MC.extract(field, threshold=3.3)
    v, t = verts.numpy(), indices.numpy().reshape(-1, 3)
    check_mesh(v, t)
    np.testing.assert_allclose(v[:, 0], 3.3, atol=1e-5)
    assert len(v) == shape[1] * shape[2]
    assert len(t) == 2 * (shape[1] - 1) * (shape[2] - 1)
    n = np.cross(v[t[:, 1]] - v[t[:, 0]], v[t[:, 2]] - v[t[:, 0]])
    assert (n[:, 0] > 0).all() and np.allclose(n[:, 1:], 0, atol=1e-5)


def test_noise_is_manifold():
    """Random values: ambiguous cases everywhere; every interior mesh edge still has two triangles,
    each once in each direction (neighbouring cells agree on the faces they share)."""
    rng = np.random.default_rng(3)
    f = rng.standard_normal((13, 11, 12)).astype(np.float32)
    field = wp.array(f, dtype=float)
    verts, indices = MC.extract(field, threshold=0.2)
    v, t = verts.numpy(), indices.numpy().reshape(-1, 3)
    check_mesh(v, t)
    np.testing.assert_allclose(v, reference_vertices(f, 0.2, np.zeros(3), np.ones(3)), atol=2e-5)
    undirected, directed = edge_counts(t)
    assert max(undirected.values()) == 2 and max(directed.values()) == 1
    # an edge with one triangle lies on the grid's boundary
    lo, hi = np.zeros(3), np.array(f.shape) - 1
    for (a, b), n in undirected.items():
        if n == 1:
            pa, pb = v[a], v[b]
            on = [(abs(pa[d] - s) < 1e-6 and abs(pb[d] - s) < 1e-6) for d in range(3) for s in (lo[d], hi[d])]
            assert any(on)


def test_empty_output_and_resize():
    field = sphere_field((16, 16, 16), (0.5, 0.5, 0.5), 0.25)
    mc = MC(16, 16, 16)
    mc.surface(field, threshold=1000.0)
    assert mc.verts.shape == (0,) and mc.indices.shape == (0,)
    assert mc.verts.numpy().shape == (0, 3) and mc.indices.dtype is wp.int32
    mc.resize(8, 9, 10)
    with pytest.raises(ValueError, match="does not match"):
        mc.surface(field, 0.0)
    small = sphere_field((8, 9, 10), (4.0, 4.0, 5.0), 2.5)
    mc.surface(small, 0.0)
    check_mesh(mc.verts.numpy(), mc.indices.numpy().reshape(-1, 3))


def test_validation():
    with pytest.raises(ValueError, match="3D"):
        MC.extract(wp.zeros((4, 4), dtype=float))
    for shape in ((1, 8, 8), (8, 8, 1), (0, 8, 8)):
        with pytest.raises(ValueError, match="at least 2 nodes"):
            MC.extract(wp.zeros(shape, dtype=float))
    with pytest.raises(TypeError, match="float32"):
        MC.extract(wp.zeros((4, 4, 4), dtype=wp.float64))
    with pytest.raises(TypeError, match="both"), warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        MC(4, 4, 4, lower=(0, 0, 0), domain_bounds_lower_corner=(0, 0, 0))
    with pytest.warns(DeprecationWarning, match="max_verts"):
        MC(4, 4, 4, max_verts=100)
    # a 2x2x2 field is the smallest with a cell
    field = wp.array(np.array([-1, 1, 1, 1, 1, 1, 1, 1], np.float32).reshape(2, 2, 2), dtype=float)
    verts, indices = MC.extract(field)
    assert len(verts) == 3 and len(indices) == 3


# --- gradients -------------------------------------------------------------------------------


def test_vertex_gradient_matches_interpolation_derivative():
    """d/dfield of sum(w . verts): vertex = p0 + t (p1 - p0), t = (c - f0) / (f1 - f0), so
    dt/df0 = (c - f1) / (f1 - f0)^2 and dt/df1 = (f0 - c) / (f1 - f0)^2."""
    rng = np.random.default_rng(7)
    f = rng.uniform(-1, 1, (6, 7, 5)).astype(np.float32)
    f[np.abs(f) < 0.05] += 0.1  # keep every value off the threshold
    c = 0.02
    field = wp.array(f, dtype=float, requires_grad=True)
    lower, upper = np.array([0.5, -1.0, 2.0]), np.array([3.0, 2.0, 4.0])
    spacing = (upper - lower) / (np.array(f.shape) - 1)
    tape = wp.Tape()
    with tape:
        verts, _ = MC.extract(field, c, lower=tuple(lower), upper=tuple(upper))
        w = wp.array(rng.standard_normal((len(verts), 3)).astype(np.float32), dtype=wp.vec3)
        loss = wp.zeros(1, dtype=float, requires_grad=True)
        wp.launch(weighted_sum, dim=len(verts), inputs=[verts, w, loss])
    tape.backward(loss)
    expected = np.zeros(f.shape)
    for (n0, n1), wv in zip(crossing_edges(f, c), w.numpy()):
        f0, f1 = float(f[n0]), float(f[n1])
        dp = (np.array(n1) - np.array(n0)) * spacing
        expected[n0] += np.dot(wv, dp) * (c - f1) / (f1 - f0) ** 2
        expected[n1] += np.dot(wv, dp) * (f0 - c) / (f1 - f0) ** 2
    np.testing.assert_allclose(field.grad.numpy(), expected, rtol=1e-4, atol=1e-4)


def test_area_gradient_of_sphere():
    """Area of a sphere of radius r is 4 pi r^2; its derivative 8 pi r, through field and mesh."""
    radius = wp.array([0.5], dtype=float, requires_grad=True)
    with wp.Tape() as tape:
        field = wp.zeros((48, 48, 48), dtype=float, requires_grad=True)
        wp.launch(sphere_sdf_unit, dim=field.shape, inputs=[field, radius])
        verts, indices = MC.extract(field, 0.0, lower=(-1.0, -1.0, -1.0), upper=(1.0, 1.0, 1.0))
        area = wp.zeros(1, dtype=float, requires_grad=True)
        wp.launch(mesh_area, dim=len(indices) // 3, inputs=[verts, indices, area])
    assert abs(area.numpy()[0] - np.pi) < 1e-2
    tape.backward(area)
    assert abs(radius.grad.numpy()[0] - 4.0 * np.pi) < 2e-2


def test_vertices_do_not_depend_on_how_the_grid_is_split():
    """The same extraction gives the same bits on one thread and on two: a vectorised task loop's
    peeled tasks must round like its vector lanes (CPU builds do not contract a * b + c into
    FMAs; with contraction 79 of 2088 coordinates moved by an ulp)."""
    from tests.threads import with_threads

    shape = (20, 24, 18)
    field = sphere_field(shape, (9.5, 11.0, 8.7), 6.1)

    def run():
        return MC.extract(field, 0.0, lower=(-1.0, 2.0, 0.5), upper=(3.0, 4.0, 9.0))[0].numpy()

    np.testing.assert_array_equal(with_threads(1, run), with_threads(2, run))
