"""wp.Bvh kernel queries against NumPy brute force over every box: AABB, ray (with the max_dist
of wp.bvh_query_next), sphere and capsule hit sets for both constructors and two leaf sizes, after
refit() and rebuild(), confined to group roots (sparse ids, missing groups), on an empty BVH, and
the constructor's validation."""

from __future__ import annotations

import numpy as np
import pytest

import weft as wp

INF = float("inf")
AABB, RAY, SPHERE, CAPSULE = range(4)


@wp.kernel
def bvh_queries(
    bvh: wp.uint64,
    grouped: int,
    group: wp.array(dtype=wp.int32),
    lo: wp.array(dtype=wp.vec3),
    hi: wp.array(dtype=wp.vec3),
    start: wp.array(dtype=wp.vec3),
    dir: wp.array(dtype=wp.vec3),
    max_dist: wp.array(dtype=float),
    radius: wp.array(dtype=float),
    roots: wp.array(dtype=wp.int32),
    hits: wp.array3d(dtype=wp.int32),
):
    i = wp.tid()
    root = int(-1)
    if grouped != 0:
        root = wp.bvh_get_group_root(bvh, group[i])
    roots[i] = root
    item = int(-1)
    box = wp.bvh_query_aabb(bvh, lo[i], hi[i], root)
    while wp.bvh_query_next(box, item):
        wp.atomic_add(hits, 0, i, item, 1)
    ray = wp.bvh_query_ray(bvh, start[i], dir[i], root)
    while wp.bvh_query_next(ray, item, max_dist[i]):
        wp.atomic_add(hits, 1, i, item, 1)
    sphere = wp.bvh_query_sphere(bvh, start[i], radius[i], root)
    while wp.bvh_query_next(sphere, item):
        wp.atomic_add(hits, 2, i, item, 1)
    capsule = wp.bvh_query_capsule(bvh, start[i], dir[i], radius[i], root)
    while wp.bvh_query_next(capsule, item, max_dist[i]):
        wp.atomic_add(hits, 3, i, item, 1)
    if grouped == 0:  # the default root argument
        plain = wp.bvh_query_aabb(bvh, lo[i], hi[i])
        while wp.bvh_query_next(plain, item):
            wp.atomic_add(hits, 4, i, item, 1)


class Queries:
    """Random queries of every kind around boxes spread over [0, 10]^3."""

    def __init__(self, rng, n=64):
        c = rng.uniform(-1.0, 11.0, (n, 3))
        h = rng.uniform(0.05, 2.0, (n, 3))
        self.lo, self.hi = (c - h).astype(np.float32), (c + h).astype(np.float32)
        self.lo[0], self.hi[0] = (-1.0, -1.0, -1.0), (12.0, 12.0, 12.0)  # everything
        self.lo[1], self.hi[1] = (20.0, 20.0, 20.0), (21.0, 21.0, 21.0)  # nothing
        self.start = rng.uniform(-2.0, 12.0, (n, 3)).astype(np.float32)
        d = rng.normal(size=(n, 3)) * rng.uniform(0.2, 3.0, (n, 1))
        d[2:8] = [[1, 0, 0], [0, -1, 0], [0, 0, 2], [1, 1, 0], [0, -0.5, 1], [-1, 0, 0.25]]  # zero components
        self.dir = d.astype(np.float32)
        self.max_dist = np.where(rng.uniform(size=n) < 0.4, INF, rng.uniform(0.5, 8.0, n)).astype(np.float32)
        self.radius = rng.uniform(0.0, 2.5, n).astype(np.float32)
        self.radius[-1] = 0.0
        self.group = np.zeros(n, np.int32)


def run(bvh, q, num_items, grouped=False):
    n = len(q.lo)
    hits = wp.zeros((5, n, max(num_items, 1)), dtype=wp.int32)
    roots = wp.zeros(n, dtype=wp.int32)
    arrays = [wp.array(q.group, dtype=wp.int32), wp.array(q.lo, dtype=wp.vec3), wp.array(q.hi, dtype=wp.vec3)]
    arrays += [wp.array(q.start, dtype=wp.vec3), wp.array(q.dir, dtype=wp.vec3)]
    arrays += [wp.array(q.max_dist, dtype=float), wp.array(q.radius, dtype=float)]
    wp.launch(bvh_queries, dim=n, inputs=[bvh.id, int(grouped), *arrays, roots, hits])
    return hits.numpy()[:, :, :num_items], roots.numpy()


def ray_box(start, d, lo, hi, max_t):
    """Whether start + t d meets [lo, hi] for some t in [0, max_t], float64 slabs: (Q, N)."""
    s, d = start.astype(np.float64)[:, None], d.astype(np.float64)[:, None]
    lo, hi = lo.astype(np.float64)[None], hi.astype(np.float64)[None]
    parallel = d == 0
    with np.errstate(divide="ignore", invalid="ignore"):
        ta, tb = (lo - s) / d, (hi - s) / d
    t_in = np.where(parallel, -INF, np.minimum(ta, tb)).max(axis=2)
    t_out = np.where(parallel, INF, np.maximum(ta, tb)).min(axis=2)
    inside_parallel = np.where(parallel, (s >= lo) & (s <= hi), True).all(axis=2)
    return inside_parallel & (np.maximum(t_in, 0.0) <= np.minimum(t_out, max_t.astype(np.float64)[:, None]))


def brute(q, lowers, uppers, member=None):
    """Expected hit matrices (4, Q, N) for the queries in q over boxes [lowers, uppers]."""
    aabb = ((q.lo[:, None] <= uppers[None]) & (q.hi[:, None] >= lowers[None])).all(axis=2)
    ray = ray_box(q.start, q.dir, lowers, uppers, q.max_dist)
    c = q.start.astype(np.float64)[:, None]
    gap = np.maximum(np.maximum(lowers[None] - c, 0.0), c - uppers[None])
    sphere = (gap**2).sum(axis=2) <= q.radius.astype(np.float64)[:, None] ** 2
    r = q.radius[:, None]
    capsule = np.stack(
        [
            ray_box(q.start[i : i + 1], q.dir[i : i + 1], lowers - r[i], uppers + r[i], q.max_dist[i : i + 1])[0]
            for i in range(len(r))
        ]
    )
    out = np.stack([aabb, ray, sphere, capsule]).astype(np.int32)
    return out if member is None else out * member[None]


def random_boxes(rng, n=300):
    c = rng.uniform(0.0, 10.0, (n, 3))
    h = rng.uniform(0.02, 0.6, (n, 3))
    h[:10] = 0.0  # points
    return (c - h).astype(np.float32), (c + h).astype(np.float32)


@pytest.mark.parametrize("constructor", ["sah", "median"])
@pytest.mark.parametrize("leaf_size", [1, 4])
def test_queries_vs_brute_force(constructor, leaf_size):
    rng = np.random.default_rng(11)
    lowers, uppers = random_boxes(rng)
    lo_arr, hi_arr = wp.array(lowers, dtype=wp.vec3), wp.array(uppers, dtype=wp.vec3)
    bvh = wp.Bvh(lo_arr, hi_arr, constructor=constructor, leaf_size=leaf_size)
    q = Queries(rng)
    hits, roots = run(bvh, q, len(lowers))
    expected = brute(q, lowers, uppers)
    for kind in (AABB, RAY, SPHERE, CAPSULE):
        np.testing.assert_array_equal(hits[kind], expected[kind], err_msg=f"kind {kind}")
    np.testing.assert_array_equal(hits[4], expected[AABB])
    assert (roots == -1).all()
    assert hits[AABB, 0].all() and not hits[AABB, 1].any()
    assert hits[RAY].sum() > 15 and hits[SPHERE].sum() > 100 and (hits[CAPSULE] >= hits[RAY]).all()
    assert (
        hits[RAY] < ray_box(q.start, q.dir, lowers, uppers, np.full(len(q.lo), INF, np.float32))
    ).any()  # max_dist cuts

    # refit: move every box, the same tree with new bounds
    shift = rng.uniform(-1.0, 1.0, (len(lowers), 3)).astype(np.float32)
    grow = rng.uniform(0.0, 0.3, (len(lowers), 3)).astype(np.float32)
    lowers2, uppers2 = lowers + shift - grow, uppers + shift + grow
    lo_arr.assign(lowers2)
    hi_arr.assign(uppers2)
    bvh.refit()
    np.testing.assert_array_equal(run(bvh, q, len(lowers))[0][:4], brute(q, lowers2, uppers2))

    # rebuild: a new tree over the boxes moved and reordered, then with the other constructor
    perm = rng.permutation(len(lowers))
    lowers3, uppers3 = lowers2[perm] * np.float32(0.5), uppers2[perm] * np.float32(0.5)
    lo_arr.assign(lowers3)
    hi_arr.assign(uppers3)
    bvh.rebuild()
    np.testing.assert_array_equal(run(bvh, q, len(lowers))[0][:4], brute(q, lowers3, uppers3))
    bvh.rebuild(constructor="median" if constructor == "sah" else "sah")
    np.testing.assert_array_equal(run(bvh, q, len(lowers))[0][:4], brute(q, lowers3, uppers3))


def test_grouped_bvh():
    rng = np.random.default_rng(12)
    lowers, uppers = random_boxes(rng, 240)
    ids = np.array([0, 3, 2**31 - 1, 17], np.int32)
    groups = ids[rng.integers(0, 4, len(lowers))]
    bvh = wp.Bvh(
        wp.array(lowers, dtype=wp.vec3),
        wp.array(uppers, dtype=wp.vec3),
        groups=wp.array(groups, dtype=wp.int32),
        leaf_size=2,
    )
    q = Queries(rng, 40)
    q.group = np.concatenate([np.tile(ids, 9), [1, -1, 5, 2**31 - 2]]).astype(np.int32)  # the last four are missing
    hits, roots = run(bvh, q, len(lowers), grouped=True)
    present = np.isin(q.group, ids)
    assert (roots[present] >= 0).all() and (roots[~present] == -1).all()
    assert len(set(roots[present])) == 4
    member = np.where(present[:, None], groups[None] == q.group[:, None], True)  # missing group: the whole BVH
    expected = brute(q, lowers, uppers, member)
    for kind in (AABB, RAY, SPHERE, CAPSULE):
        np.testing.assert_array_equal(hits[kind], expected[kind], err_msg=f"kind {kind}")
    assert hits[AABB, 0].sum() == (groups == q.group[0]).sum()  # the box covering everything, one group


def test_empty_bvh_and_single_item():
    empty = wp.Bvh(wp.zeros(0, dtype=wp.vec3), wp.zeros(0, dtype=wp.vec3))
    q = Queries(np.random.default_rng(13), 8)
    hits, roots = run(empty, q, 1)
    assert not hits.any() and (roots == -1).all()
    hits, roots = run(empty, q, 1, grouped=True)
    assert not hits.any() and (roots == -1).all()
    lo, hi = np.array([[1.0, 1.0, 1.0]], np.float32), np.array([[2.0, 2.0, 2.0]], np.float32)
    one = wp.Bvh(wp.array(lo, dtype=wp.vec3), wp.array(hi, dtype=wp.vec3), leaf_size=4)
    hits = run(one, q, 1)[0]
    np.testing.assert_array_equal(hits[:4], brute(q, lo, hi))
    assert hits[AABB, 0, 0] == 1


def test_constructor_validation():
    lo = wp.array(np.zeros((4, 3), np.float32), dtype=wp.vec3)
    hi = wp.array(np.ones((4, 3), np.float32), dtype=wp.vec3)
    with pytest.raises(RuntimeError, match="same number"):
        wp.Bvh(lo, wp.array(np.ones((3, 3), np.float32), dtype=wp.vec3))
    with pytest.raises(RuntimeError, match="lowers"):
        wp.Bvh(wp.array(np.zeros((4, 3)), dtype=wp.vec3d), hi)
    with pytest.raises(RuntimeError, match="uppers"):
        wp.Bvh(lo, wp.array(np.ones((4, 3), np.float32).reshape(-1), dtype=float)[:4])
    with pytest.raises(RuntimeError, match="uppers"):
        wp.Bvh(lo, wp.array(np.ones((8, 3), np.float32), dtype=wp.vec3)[::2])
    with pytest.raises(RuntimeError, match="groups"):
        wp.Bvh(lo, hi, groups=wp.zeros(4, dtype=wp.int64))
    with pytest.raises(RuntimeError, match="groups"):
        wp.Bvh(lo, hi, groups=wp.zeros(3, dtype=wp.int32))
    with pytest.raises(RuntimeError, match="groups"):
        wp.Bvh(lo, hi, groups=wp.zeros(8, dtype=wp.int32)[::2])
    with pytest.raises(ValueError, match="leaf_size"):
        wp.Bvh(lo, hi, leaf_size=0)
    with pytest.raises(ValueError):
        wp.Bvh(lo, hi, constructor="octree")
    bvh = wp.Bvh(lo, hi, constructor="median", leaf_size=3)
    assert bvh.id
