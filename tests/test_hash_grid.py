"""wp.HashGrid and its kernel queries (weft/geometry/hash_grid.py, native/geometry/hashgrid.h):

- neighbours within a radius, found with ``wp.hash_grid_query_next`` and with ``for``, equal a
  NumPy brute force (as sets), for several radii and cell widths, in float16 / float32 / float64;
- a query reports exactly the points of the (wrapped) cells overlapping its box: points on cell
  boundaries, queries far outside the grid, boxes wider than the grid (each cell once);
- ``reserve`` and rebuilds with more, fewer or no points leave no stale cells;
- ``wp.hash_grid_point_id`` is a permutation ordered by cell (stably), -1 before a build;
- grouped builds, CPU graph capture, Warp's argument errors, gradients through a query loop,
  ``for`` over BVH queries too, and a few steps of the SPH example against NumPy.
"""

import numpy as np
import pytest

import weft as wp

K = 96  # candidates recorded per query


def neighbours_kernel(dtype):
    vec = wp.types.vector(3, dtype)

    @wp.kernel(module="unique")
    def neighbours(
        grid: wp.uint64,
        pts: wp.array(dtype=vec),
        queries: wp.array(dtype=vec),
        r: dtype,
        found: wp.array2d(dtype=wp.int32),
        counts: wp.array(dtype=wp.int32),
    ):
        t = wp.tid()
        p = queries[t]
        n = int(0)
        for j in wp.hash_grid_query(grid, p, r):
            if wp.length(p - pts[j]) <= r:
                if n < K:
                    found[t, n] = j
                n += 1
        counts[t] = n

    return neighbours


@wp.kernel
def candidates(
    grid: wp.uint64,
    queries: wp.array(dtype=wp.vec3),
    r: float,
    found: wp.array2d(dtype=wp.int32),
    counts: wp.array(dtype=wp.int32),
):
    """Every candidate a query reports, with the while form of the loop."""
    t = wp.tid()
    q = wp.hash_grid_query(grid, queries[t], r)
    j = int(0)
    n = int(0)
    while wp.hash_grid_query_next(q, j):
        if n < K:
            found[t, n] = j
        n += 1
    counts[t] = n


@wp.kernel
def point_ids(grid: wp.uint64, out: wp.array(dtype=wp.int32)):
    t = wp.tid()
    out[t] = wp.hash_grid_point_id(grid, t)


@wp.kernel
def grouped_neighbours(
    grid: wp.uint64,
    pts: wp.array(dtype=wp.vec3),
    groups: wp.array(dtype=wp.int32),
    r: float,
    counts: wp.array(dtype=wp.int32),
):
    t = wp.tid()
    p = pts[t]
    n = int(0)
    for j in wp.hash_grid_query(grid, p, r, groups[t]):
        if wp.length(p - pts[j]) <= r:
            n += 1
    counts[t] = n


def query(grid, pts, queries, r, dtype=wp.float32):
    """(counts, list of neighbour sets) of each query point within r (distance in the kernel)."""
    n = len(queries)
    found = wp.full((n, K), -1, dtype=wp.int32)
    counts = wp.zeros(n, dtype=wp.int32)
    wp.launch(neighbours_kernel(dtype), n, [grid.id, pts, queries, dtype(r), found, counts])
    f, c = found.numpy(), counts.numpy()
    return c, [set(f[i, : min(c[i], K)].tolist()) for i in range(n)]


def brute(pts, queries, r):
    d = np.linalg.norm(queries[:, None, :].astype(np.float64) - pts[None, :, :].astype(np.float64), axis=2)
    return d <= r, np.abs(d - r) < 1e-4 * max(r, 1.0)


def check_against_brute(pts_np, q_np, r, counts, sets):
    within, borderline = brute(pts_np, q_np, r)
    lo = (within & ~borderline).sum(1)
    hi = (within | borderline).sum(1)
    assert np.all((lo <= counts) & (counts <= hi))
    for i in range(len(q_np)):
        exact = set(np.flatnonzero(within[i] & ~borderline[i]).tolist())
        loose = set(np.flatnonzero(within[i] | borderline[i]).tolist())
        if counts[i] <= K:
            assert exact <= sets[i] <= loose, i


def physical_cells(p, width, dims):
    """The physical cell of each point, in float64 (points chosen away from cell faces)."""
    v = np.floor(p / width).astype(np.int64)
    c = np.mod(v, dims)
    return (c[:, 2] * dims[1] + c[:, 1]) * dims[0] + c[:, 0]


# ------------------------------------------------------------------------------------ neighbours


@pytest.mark.parametrize("width,r", [(0.1, 0.1), (0.1, 0.17), (0.2, 0.05)])
def test_neighbours_equal_brute_force(width, r):
    rng = np.random.default_rng(3)
    pts_np = (rng.random((1500, 3)) * 1.2 - 0.1).astype(np.float32)
    q_np = np.concatenate([pts_np[:300], (rng.random((100, 3)) * 1.6 - 0.3).astype(np.float32)])
    pts, queries = wp.array(pts_np, dtype=wp.vec3), wp.array(q_np, dtype=wp.vec3)
    grid = wp.HashGrid(16, 16, 16)
    grid.build(pts, width)
    counts, sets = query(grid, pts, queries, r)
    check_against_brute(pts_np, q_np, r, counts, sets)
    assert counts[:300].min() >= 1  # a point finds itself


@pytest.mark.parametrize("dtype", [wp.float16, wp.float64])
def test_neighbours_in_other_precisions(dtype):
    rng = np.random.default_rng(4)
    np_t = {wp.float16: np.float16, wp.float64: np.float64}[dtype]
    pts_np = (rng.random((400, 3)) * 2.0).astype(np_t)
    vec = wp.types.vector(3, dtype)
    pts = wp.array(pts_np, dtype=vec)
    grid = wp.HashGrid(8, 8, 8, dtype=dtype)
    assert grid.dtype is dtype
    grid.build(pts, 0.25)
    counts, _ = query(grid, pts, pts, 0.25, dtype)
    tol_pts = pts_np.astype(np.float64)
    within, _ = brute(tol_pts, tol_pts, 0.25)
    if dtype is wp.float64:
        assert np.array_equal(counts, within.sum(1))
    else:  # float16 distances are rounded: compare away from the radius
        d = np.linalg.norm(tol_pts[:, None] - tol_pts[None], axis=2)
        assert np.all((d <= 0.24).sum(1) <= counts) and np.all(counts <= (d <= 0.26).sum(1))


def test_while_and_for_report_the_same_candidates():
    rng = np.random.default_rng(5)
    pts_np = (rng.random((500, 3))).astype(np.float32)
    pts = wp.array(pts_np, dtype=wp.vec3)
    grid = wp.HashGrid(8, 8, 8)
    grid.build(pts, 0.125)
    n = len(pts_np)
    found = wp.full((n, K), -1, dtype=wp.int32)
    counts = wp.zeros(n, dtype=wp.int32)
    wp.launch(candidates, n, [grid.id, pts, 0.125, found, counts])
    f, c = found.numpy(), counts.numpy()
    within_counts, sets = query(grid, pts, pts, 0.125)
    for i in range(n):
        assert sets[i] <= set(f[i, : c[i]].tolist())
        assert len(set(f[i, : c[i]].tolist())) == c[i]  # each candidate once
    assert np.all(within_counts <= c)


# ------------------------------------------------------------------------------------ cells and wrapping


def test_points_on_cell_boundaries():
    # integer lattice, cell width 1: every point lies on cell faces; neighbours at exactly r count
    g = np.stack(np.meshgrid(*[np.arange(-2, 3)] * 3, indexing="ij"), -1).reshape(-1, 3).astype(np.float32)
    pts = wp.array(g, dtype=wp.vec3)
    grid = wp.HashGrid(4, 4, 4)
    grid.build(pts, 1.0)
    counts, sets = query(grid, pts, pts, 1.0)
    inner = np.all(np.abs(g) <= 1, axis=1)
    assert np.all(counts[inner] == 7)  # itself and six at distance exactly 1
    within, _ = brute(g, g, 1.0)
    assert np.array_equal(counts, within.sum(1))
    for i in range(len(g)):
        assert sets[i] == set(np.flatnonzero(within[i]).tolist())


def test_candidates_are_exactly_the_points_of_the_wrapped_cells():
    rng = np.random.default_rng(6)
    dims = np.array([4, 3, 5])
    width, r = 1.0, 0.6
    pts_np = (rng.random((600, 3)) * 24 - 12).astype(np.float32)
    q_np = np.concatenate([(rng.random((60, 3)) * 40 - 20), [[1e5, -3e5, 7e4], [-0.3, 3.9, 0.0]]]).astype(np.float32)
    pts, queries = wp.array(pts_np, dtype=wp.vec3), wp.array(q_np, dtype=wp.vec3)
    grid = wp.HashGrid(*dims.tolist())
    grid.build(pts, width)
    n = len(q_np)
    found = wp.full((n, 600), -1, dtype=wp.int32)
    counts = wp.zeros(n, dtype=wp.int32)
    wp.launch(candidates_kernel_wide(), n, [grid.id, queries, r, found, counts])
    point_cells = physical_cells(pts_np.astype(np.float64), width, dims)
    f, c = found.numpy(), counts.numpy()
    for i, q in enumerate(q_np.astype(np.float64)):
        lo, hi = np.floor((q - r) / width).astype(np.int64), np.floor((q + r) / width).astype(np.int64)
        hi = np.minimum(hi, lo + dims - 1)
        box = np.stack(np.meshgrid(*[np.arange(a, b + 1) for a, b in zip(lo, hi)], indexing="ij"), -1).reshape(-1, 3)
        cells = set(physical_cells(box + 0.5, 1.0, dims).tolist())
        expected = np.flatnonzero(np.isin(point_cells, list(cells)))
        got = f[i, : c[i]]
        assert len(got) == len(set(got.tolist()))  # no cell visited twice
        assert sorted(got.tolist()) == sorted(expected.tolist()), i
    # the within-radius subset is still exact under wrapping
    counts, sets = query(grid, pts, queries, r)
    check_against_brute(pts_np, q_np, r, counts, sets)


def candidates_kernel_wide():
    @wp.kernel(module="unique")
    def wide(
        grid: wp.uint64,
        queries: wp.array(dtype=wp.vec3),
        r: float,
        found: wp.array2d(dtype=wp.int32),
        counts: wp.array(dtype=wp.int32),
    ):
        t = wp.tid()
        n = int(0)
        for j in wp.hash_grid_query(grid, queries[t], r):
            found[t, n] = j
            n += 1
        counts[t] = n

    return wide


def test_a_box_wider_than_the_grid_visits_each_point_once():
    rng = np.random.default_rng(7)
    pts_np = (rng.random((200, 3)) * 3).astype(np.float32)
    pts = wp.array(pts_np, dtype=wp.vec3)
    grid = wp.HashGrid(3, 2, 4)
    grid.build(pts, 0.5)
    queries = wp.array(pts_np[:10], dtype=wp.vec3)
    found = wp.full((10, K), -1, dtype=wp.int32)
    counts = wp.zeros(10, dtype=wp.int32)
    wp.launch(candidates, 10, [grid.id, queries, 50.0, found, counts])
    c = counts.numpy()
    assert np.all(c == 200)


def test_non_finite_and_huge_coordinates_are_safe():
    pts_np = np.array([[np.nan, 0, 0], [np.inf, -np.inf, 0], [3e38, -3e38, 1e30], [0.1, 0.1, 0.1]], np.float32)
    pts = wp.array(pts_np, dtype=wp.vec3)
    grid = wp.HashGrid(8, 8, 8)
    grid.build(pts, 0.5)
    ids = wp.zeros(4, dtype=wp.int32)
    wp.launch(point_ids, 4, [grid.id, ids])
    assert sorted(ids.numpy().tolist()) == [0, 1, 2, 3]
    q = wp.array(np.array([[0.1, 0.1, 0.1], [np.nan, 1, 1], [1e30, 1e30, -1e30]], np.float32), dtype=wp.vec3)
    found = wp.full((3, K), -1, dtype=wp.int32)
    counts = wp.zeros(3, dtype=wp.int32)
    wp.launch(candidates, 3, [grid.id, q, 0.5, found, counts])
    assert 3 in found.numpy()[0, : counts.numpy()[0]]


# ------------------------------------------------------------------------------------ sorted order, rebuilds


def test_point_id_is_a_permutation_ordered_by_cell():
    rng = np.random.default_rng(8)
    dims = np.array([8, 8, 8])
    pts_np = (rng.random((3000, 3)) * 3 - 1).astype(np.float32)
    pts = wp.array(pts_np, dtype=wp.vec3)
    grid = wp.HashGrid(*dims.tolist())
    before = wp.zeros(4, dtype=wp.int32)
    wp.launch(point_ids, 4, [grid.id, before])
    assert np.all(before.numpy() == -1)  # not built
    grid.build(pts, 0.3)
    ids = wp.zeros(3002, dtype=wp.int32)
    wp.launch(point_ids, 3002, [grid.id, ids])
    order = ids.numpy()
    assert np.all(order[3000:] == -1)  # past the points
    order = order[:3000]
    assert sorted(order.tolist()) == list(range(3000))
    cells = physical_cells(pts_np.astype(np.float64), np.float64(np.float32(0.3)), dims)[order]
    assert np.all(np.diff(cells) >= 0)
    same = np.diff(cells) == 0
    assert np.all(np.diff(order)[same] > 0)  # stable: original order within a cell


def test_reserve_and_rebuild_with_other_point_counts():
    rng = np.random.default_rng(9)
    grid = wp.HashGrid(16, 16, 16)
    grid.reserve(10)
    assert grid.reserved
    for n, scale in ((5, 1.0), (2000, 1.0), (3, 0.2), (700, 2.0), (0, 1.0), (40, 1.0)):
        pts_np = (rng.random((n, 3)) * scale).astype(np.float32)
        pts = wp.array(pts_np, dtype=wp.vec3, shape=(n,)) if n else wp.empty(0, dtype=wp.vec3)
        grid.build(pts, 0.1)
        q_np = (rng.random((200, 3)) * 2).astype(np.float32)
        counts, sets = query(grid, pts, wp.array(q_np, dtype=wp.vec3), 0.1)
        if n == 0:
            assert np.all(counts == 0)
        else:
            check_against_brute(pts_np, q_np, 0.1, counts, sets)
        # no stale candidates: every candidate is a current point
        found = wp.full((200, K), -1, dtype=wp.int32)
        c = wp.zeros(200, dtype=wp.int32)
        wp.launch(candidates, 200, [grid.id, wp.array(q_np, dtype=wp.vec3), 0.1, found, c])
        f = found.numpy()
        assert np.all(f[f >= 0] < max(n, 1)) and (n or not np.any(c.numpy()))
        ids = wp.zeros(max(n, 1), dtype=wp.int32)
        wp.launch(point_ids, max(n, 1), [grid.id, ids])
        assert sorted(ids.numpy().tolist()) == (list(range(n)) if n else [-1])


def test_strided_and_multidimensional_points():
    rng = np.random.default_rng(10)
    pts_np = (rng.random((64, 3))).astype(np.float32)
    ref = wp.array(pts_np, dtype=wp.vec3)
    grid = wp.HashGrid(8, 8, 8)
    grid.build(ref, 0.2)
    expected, _ = query(grid, ref, ref, 0.2)
    buf = wp.zeros(128, dtype=wp.vec3)
    strided = buf[::2]
    wp.copy(strided, ref)
    grid2 = wp.HashGrid(8, 8, 8)
    grid2.build(strided, 0.2)
    assert np.array_equal(query(grid2, ref, ref, 0.2)[0], expected)
    grid3 = wp.HashGrid(8, 8, 8)
    grid3.build(wp.array(pts_np.reshape(8, 8, 3), dtype=wp.vec3), 0.2)
    assert np.array_equal(query(grid3, ref, ref, 0.2)[0], expected)


# ------------------------------------------------------------------------------------ groups


def test_grouped_queries():
    rng = np.random.default_rng(11)
    pts_np = (rng.random((800, 3))).astype(np.float32)
    groups_np = rng.choice(np.array([np.iinfo(np.int32).min, -1, 0, 7, np.iinfo(np.int32).max], np.int32), 800)
    pts, groups = wp.array(pts_np, dtype=wp.vec3), wp.array(groups_np, dtype=wp.int32)
    grid = wp.HashGrid(8, 8, 8)
    grid.build(pts, 0.15, groups=groups)
    assert grid.groups is groups
    counts = wp.zeros(800, dtype=wp.int32)
    wp.launch(grouped_neighbours, 800, [grid.id, pts, groups, 0.15, counts])
    within, _ = brute(pts_np, pts_np, 0.15)
    same = groups_np[:, None] == groups_np[None, :]
    assert np.array_equal(counts.numpy(), (within & same).sum(1))
    # without a group the query sees every group
    all_counts, _ = query(grid, pts, pts, 0.15)
    assert np.array_equal(all_counts, within.sum(1))
    # rebuilt without groups, a group argument filters nothing
    grid.build(pts, 0.15)
    wp.launch(grouped_neighbours, 800, [grid.id, pts, groups, 0.15, counts])
    assert np.array_equal(counts.numpy(), within.sum(1))


# ------------------------------------------------------------------------------------ API


def test_api_errors_and_attributes():
    with pytest.raises(TypeError):
        wp.HashGrid(8, 8, 8, dtype=wp.int32)
    with pytest.raises(TypeError):
        wp.HashGrid(8.5, 8, 8)
    with pytest.raises(RuntimeError, match="positive"):
        wp.HashGrid(0, 8, 8)
    with pytest.raises(RuntimeError, match="cell count exceeds supported limit"):
        wp.HashGrid(1291, 1291, 1291)
    grid = wp.HashGrid(8, 8, 8)
    assert grid.dtype is wp.float32 and isinstance(grid.id, int) and not grid.reserved and grid.groups is None
    pts = wp.zeros(4, dtype=wp.vec3)
    with pytest.raises(ValueError):
        grid.build(pts, 0.0)
    with pytest.raises(TypeError, match="vec3"):
        grid.build(wp.zeros(4, dtype=wp.vec3d), 1.0)
    with pytest.raises(RuntimeError, match="groups"):
        grid.build(pts, 1.0, groups=wp.zeros(3, dtype=wp.int32))
    grid_id = grid.id
    grid.build(pts, 1.0)
    assert grid.id == grid_id  # builds rewrite the descriptor in place
    assert wp.HashGridQuery[wp.float32] is wp.HashGridQuery
    assert wp.HashGridQuery[wp.float64] is not wp.HashGridQuery
    with pytest.raises(TypeError):
        wp.HashGridQuery[wp.int32]
    instance = wp.HashGrid.__new__(wp.HashGrid)
    instance.__del__()  # never initialised: nothing to release


@wp.func
def nearest(query: wp.HashGridQuery[wp.float64], center: wp.vec3d, pts: wp.array(dtype=wp.vec3d), r: wp.float64):
    best = int(-1)
    best_d = r * r
    j = int(0)
    while wp.hash_grid_query_next(query, j):
        d = wp.length_sq(pts[j] - center)
        if d <= best_d:
            best = j
            best_d = d
    return best


@wp.kernel
def nearest_kernel(
    grid: wp.uint64, q: wp.array(dtype=wp.vec3d), pts: wp.array(dtype=wp.vec3d), out: wp.array(dtype=int)
):
    t = wp.tid()
    out[t] = nearest(wp.hash_grid_query(grid, q[t], wp.float64(0.35)), q[t], pts, wp.float64(0.35))


def test_queries_pass_to_funcs():
    pts = wp.array(np.array([[0, 0, 0], [0.2, 0, 0], [0.8, 0, 0], [2, 0, 0]]), dtype=wp.vec3d)
    q = wp.array(np.array([[0.18, 0, 0], [0.72, 0, 0], [1.7, 0, 0], [5, 0, 0]]), dtype=wp.vec3d)
    grid = wp.HashGrid(16, 16, 16, dtype=wp.float64)
    grid.build(pts, 0.5)
    out = wp.zeros(4, dtype=int)
    wp.launch(nearest_kernel, 4, [grid.id, q, pts, out])
    assert out.numpy().tolist() == [1, 2, 3, -1]


@wp.kernel
def pair_energy(grid: wp.uint64, x: wp.array(dtype=wp.vec3), r: float, e: wp.array(dtype=float)):
    i = wp.tid()
    xi = x[i]
    if True:
        q = wp.hash_grid_query(grid, xi, r)
    else:
        q = wp.hash_grid_query(grid, xi, 0.0)
    s = float(0.0)
    j = int(0)
    while wp.hash_grid_query_next(q, j):
        d = wp.length(xi - x[j])
        if d < r:
            s += (r - d) * (r - d)
    wp.atomic_add(e, 0, s)


def test_gradient_through_a_query_loop():
    rng = np.random.default_rng(12)
    x_np = rng.random((60, 3)).astype(np.float64) * 0.6
    r = 0.2

    def energy(x):
        d = np.linalg.norm(x[:, None] - x[None], axis=2)
        return np.sum(np.where(d < r, (r - d) ** 2, 0.0))

    x = wp.array(x_np.astype(np.float32), dtype=wp.vec3, requires_grad=True)
    grid = wp.HashGrid(4, 4, 4)
    grid.build(x, r)
    e = wp.zeros(1, dtype=float, requires_grad=True)
    tape = wp.Tape()
    with tape:
        wp.launch(pair_energy, 60, [grid.id, x, r, e])
    assert e.numpy()[0] == pytest.approx(energy(x_np), rel=1e-4)
    tape.backward(e)
    d = x_np[:, None] - x_np[None]
    n = np.linalg.norm(d, axis=2)
    w = np.where((n < r) & (n > 0), -2 * (r - n) / np.where(n > 0, n, 1), 0.0)
    expected = 2 * np.sum(w[:, :, None] * d, axis=1)  # each pair counted from both ends
    assert np.allclose(x.grad.numpy(), expected, atol=2e-3)


@wp.kernel
def bvh_for(bvh: wp.uint64, lo: wp.array(dtype=wp.vec3), hi: wp.array(dtype=wp.vec3), out: wp.array(dtype=int)):
    t = wp.tid()
    n = int(0)
    for j in wp.bvh_query_aabb(bvh, lo[t], hi[t]):
        n += j + 1
    out[t] = n


def test_for_loops_over_bvh_queries_too():
    rng = np.random.default_rng(13)
    c = rng.random((50, 3)).astype(np.float32)
    lowers, uppers = wp.array(c - 0.05, dtype=wp.vec3), wp.array(c + 0.05, dtype=wp.vec3)
    bvh = wp.Bvh(lowers, uppers)
    out = wp.zeros(50, dtype=int)
    wp.launch(bvh_for, 50, [bvh.id, lowers, uppers, out])
    overlap = np.all((c[:, None] - 0.05 <= c[None] + 0.05) & (c[None] - 0.05 <= c[:, None] + 0.05), axis=2)
    assert np.array_equal(out.numpy(), (overlap * (np.arange(50) + 1)).sum(1))


@pytest.mark.fixed_device("CPU graph capture")
def test_builds_inside_a_cpu_capture_rerun_on_replay():
    src = wp.array(np.array([[0, 0, 0], [5, 0, 0]], np.float32), dtype=wp.vec3)
    pts = wp.zeros(2, dtype=wp.vec3)
    grid = wp.HashGrid(16, 16, 16)
    counts = wp.zeros(2, dtype=wp.int32)
    kernel = neighbours_kernel(wp.float32)
    found = wp.full((2, K), -1, dtype=wp.int32)
    with wp.ScopedCapture() as capture:
        wp.copy(pts, src)
        grid.build(pts, 0.25)
        wp.launch(kernel, 2, [grid.id, pts, pts, 0.25, found, counts])
        with pytest.raises(NotImplementedError, match="reserve before capture"):
            grid.reserve(8)
    assert counts.numpy().tolist() == [0, 0]  # recorded, not run
    wp.capture_launch(capture.graph)
    assert counts.numpy().tolist() == [1, 1]
    src.assign(np.array([[0, 0, 0], [0.1, 0, 0]], np.float32))
    wp.capture_launch(capture.graph)
    assert counts.numpy().tolist() == [2, 2]


# ------------------------------------------------------------------------------------ the SPH example


def test_sph_example_steps():
    from weft.examples import sph

    sim = sph.DamBreak(nx=6, ny=8, nz=4)
    for _ in range(20):
        sim.step()
    x = sim.positions()
    assert np.all(np.isfinite(x))
    assert np.all((x >= -1e-6) & (x <= sim.box + 1e-6))
    assert sim.speeds().max() > 0.05  # it falls
    # densities as the kernel computes them against NumPy
    sim.grid.build(sim.x, sim.h)
    wp.launch(sph.density, sim.n, [sim.grid.id, sim.x, sim.mass, sim.h, sim.rho0, sim.c2], [sim.rho, sim.p])
    r2 = np.sum((x[:, None].astype(np.float64) - x[None]) ** 2, axis=2)
    w = np.where(r2 < sim.h**2, 315.0 / (64 * np.pi * sim.h**9) * (sim.h**2 - r2) ** 3, 0.0)
    assert np.allclose(sim.rho.numpy(), sim.mass * w.sum(1), rtol=1e-4)
    assert sim.rho.numpy().max() < 1.1 * sim.rho0
