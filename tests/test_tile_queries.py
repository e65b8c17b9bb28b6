"""Tiled BVH and mesh queries (wp.tile_bvh_query_*, wp.tile_mesh_query_aabb, their *_tiled names,
wp.tile_query_valid): every item once, the same items as a brute-force overlap test."""

import numpy as np

import weft as wp


@wp.kernel
def tiled_aabb_kernel(bvh: wp.uint64, lo: wp.vec3, hi: wp.vec3, hits: wp.array[int], calls: wp.array[int]):
    query = wp.tile_bvh_query_aabb(bvh, lo, hi)
    while wp.tile_query_valid(query):
        item = wp.untile(wp.tile_bvh_query_next(query))
        wp.atomic_add(calls, 0, 1)
        if item >= 0:
            wp.atomic_add(hits, item, 1)


@wp.kernel
def tiled_ray_kernel(bvh: wp.uint64, start: wp.vec3, d: wp.vec3, hits: wp.array[int]):
    query = wp.bvh_query_ray_tiled(bvh, start, d)
    while wp.tile_query_valid(query):
        item = wp.untile(wp.bvh_query_next_tiled(query))
        if item >= 0:
            wp.atomic_add(hits, item, 1)


@wp.kernel
def tiled_mesh_kernel(mesh: wp.uint64, lo: wp.vec3, hi: wp.vec3, hits: wp.array[int]):
    query = wp.tile_mesh_query_aabb(mesh, lo, hi)
    while wp.tile_query_valid(query):
        face = wp.untile(wp.tile_mesh_query_aabb_next(query))
        if face >= 0:
            wp.atomic_add(hits, face, 1)


def _boxes(n, seed):
    rng = np.random.default_rng(seed)
    lo = rng.random((n, 3)).astype(np.float32) * 5.0
    return lo, lo + rng.random((n, 3)).astype(np.float32)


def test_tiled_bvh_aabb_query_reports_each_overlap_once():
    lo, hi = _boxes(200, 1)
    bvh = wp.Bvh(wp.array(lo, dtype=wp.vec3), wp.array(hi, dtype=wp.vec3))
    qlo, qhi = np.array([1.0, 1.0, 1.0]), np.array([3.0, 3.5, 4.0])
    hits, calls = wp.zeros(200, dtype=int), wp.zeros(1, dtype=int)
    wp.launch_tiled(tiled_aabb_kernel, dim=1, inputs=[bvh.id, wp.vec3(*qlo), wp.vec3(*qhi), hits, calls], block_dim=64)
    expect = np.all((lo <= qhi) & (hi >= qlo), axis=1).astype(int)
    np.testing.assert_array_equal(hits.numpy(), expect)
    assert calls.numpy()[0] == expect.sum()  # valid turns false right after the last item


def test_tiled_bvh_ray_query_matches_slab_test():
    lo, hi = _boxes(200, 2)
    bvh = wp.Bvh(wp.array(lo, dtype=wp.vec3), wp.array(hi, dtype=wp.vec3))
    start, d = np.array([-1.0, 2.0, 2.5]), np.array([1.0, 0.1, 0.05])
    hits = wp.zeros(200, dtype=int)
    wp.launch_tiled(tiled_ray_kernel, dim=1, inputs=[bvh.id, wp.vec3(*start), wp.vec3(*d), hits], block_dim=64)
    with np.errstate(divide="ignore"):
        t1, t2 = (lo - start) / d, (hi - start) / d
    tmin = np.minimum(t1, t2).max(axis=1)
    tmax = np.maximum(t1, t2).min(axis=1)
    expect = ((tmax >= np.maximum(tmin, 0.0))).astype(int)
    np.testing.assert_array_equal(hits.numpy(), expect)


def test_tiled_mesh_aabb_query_finds_the_faces_whose_bounds_overlap():
    rng = np.random.default_rng(3)
    pts = rng.random((300, 3)).astype(np.float32) * 4.0
    tris = rng.integers(0, 300, size=(100, 3)).astype(np.int32)
    mesh = wp.Mesh(points=wp.array(pts, dtype=wp.vec3), indices=wp.array(tris.reshape(-1), dtype=wp.int32))
    qlo, qhi = np.array([1.0, 1.0, 1.0]), np.array([2.5, 2.0, 3.0])
    hits = wp.zeros(100, dtype=int)
    wp.launch_tiled(tiled_mesh_kernel, dim=1, inputs=[mesh.id, wp.vec3(*qlo), wp.vec3(*qhi), hits], block_dim=32)
    flo, fhi = pts[tris].min(axis=1), pts[tris].max(axis=1)
    expect = np.all((flo <= qhi) & (fhi >= qlo), axis=1).astype(int)
    np.testing.assert_array_equal(hits.numpy(), expect)
