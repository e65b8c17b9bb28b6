"""Geometry workloads (wp.Mesh): building a face BVH, refitting it, casting camera rays; written
against the Warp API like workloads.py, which lists them in its SECTIONS."""

# No `from __future__ import annotations`: kernel annotations must be evaluated where `wp` is bound.
import numpy as np

MESH_SIDE = 317  # a (MESH_SIDE-1) x (MESH_SIDE-1) lat-long sphere grid: ~200k triangles
RAYS_SIDE = 512


def bumpy_sphere(side: int):
    """Vertices and triangles of a bumpy sphere on a side x side latitude-longitude grid."""
    th, ph = np.meshgrid(np.linspace(0.05, np.pi - 0.05, side), np.linspace(0.0, 2.0 * np.pi, side, endpoint=False), indexing="ij")
    r = 1.0 + 0.05 * np.sin(7.0 * th) * np.cos(5.0 * ph)
    pts = np.stack([r * np.sin(th) * np.cos(ph), r * np.sin(th) * np.sin(ph), r * np.cos(th)], axis=-1).reshape(-1, 3)
    i, j = np.meshgrid(np.arange(side - 1), np.arange(side), indexing="ij")
    a = i * side + j
    b = i * side + (j + 1) % side
    c = (i + 1) * side + j
    d = (i + 1) * side + (j + 1) % side
    tris = np.concatenate([np.stack([a, c, b], -1).reshape(-1, 3), np.stack([b, c, d], -1).reshape(-1, 3)])
    return pts.astype(np.float32), tris.astype(np.int32).reshape(-1)


def _geometry_kernels(wp):
    @wp.kernel
    def cast_rays(mesh: wp.uint64, side: int, depth: wp.array(dtype=float)):
        tid = wp.tid()
        x = float(tid % side) / float(side) * 2.0 - 1.0
        y = float(tid // side) / float(side) * 2.0 - 1.0
        start = wp.vec3(0.0, 0.0, 3.0)
        d = wp.normalize(wp.vec3(x * 0.5, y * 0.5, -1.0))
        q = wp.mesh_query_ray(mesh, start, d, 100.0)
        t = float(0.0)
        if q.result:
            t = q.t
        depth[tid] = t

    @wp.kernel
    def wobble(rest: wp.array(dtype=wp.vec3), s: float, points: wp.array(dtype=wp.vec3)):
        i = wp.tid()
        points[i] = rest[i] * (1.0 + s * wp.sin(rest[i][0] * 9.0))

    @wp.kernel
    def count_neighbours(grid: wp.uint64, points: wp.array(dtype=wp.vec3), radius: float, counts: wp.array(dtype=int)):
        tid = wp.tid()
        i = wp.hash_grid_point_id(grid, tid)
        p = points[i]
        n = int(0)
        query = wp.hash_grid_query(grid, p, radius)
        index = int(0)
        while wp.hash_grid_query_next(query, index):
            if wp.length(points[index] - p) <= radius:
                n += 1
        counts[i] = n

    return {"cast_rays": cast_rays, "wobble": wobble, "count_neighbours": count_neighbours}


def geometry_section(wp, device, sync, Workload, kernels):
    """The mesh rows: build (SAH), refit after moving the points, 512x512 camera rays."""
    k = kernels(wp, _geometry_kernels)
    pts_np, tris_np = bumpy_sphere(MESH_SIDE)
    rest = wp.array(pts_np, dtype=wp.vec3, device=device)
    points = wp.array(pts_np, dtype=wp.vec3, device=device)
    indices = wp.array(tris_np, dtype=wp.int32, device=device)
    mesh = [wp.Mesh(points=points, indices=indices)]
    depth = wp.zeros(RAYS_SIDE * RAYS_SIDE, dtype=float, device=device)
    phase = [0]

    def build():
        mesh[0] = wp.Mesh(points=points, indices=indices)
        sync()

    def refit_prepare():
        phase[0] += 1
        wp.launch(k.wobble, dim=len(rest), inputs=[rest, 0.01 * (phase[0] % 3), points], device=device)
        sync()

    def refit():
        mesh[0].refit()
        sync()

    def rays():
        wp.launch(k.cast_rays, dim=RAYS_SIDE * RAYS_SIDE, inputs=[mesh[0].id, RAYS_SIDE, depth], device=device)
        sync()

    def rays_prepare():
        wp.launch(k.wobble, dim=len(rest), inputs=[rest, 0.0, points], device=device)
        mesh[0].refit()
        sync()

    n_tris = len(tris_np) // 3
    return [
        Workload(f"mesh build {n_tris // 1000}k tris", "wp.Mesh(points, indices): SAH BVH over a bumpy sphere's faces", build, reps=7),
        Workload(f"mesh refit {n_tris // 1000}k tris", "mesh.refit() after moving every vertex", refit, prepare=refit_prepare, reps=9),
        Workload(
            f"raycast {RAYS_SIDE}x{RAYS_SIDE}, {n_tris // 1000}k tris",
            "wp.mesh_query_ray closest hits of pinhole-camera rays",
            rays,
            prepare=rays_prepare,
            check=lambda: float(depth.numpy().astype(np.float64).sum()),
        ),
    ]


def hash_grid_section(wp, device, sync, Workload, kernels):
    """The hash grid rows: building over 100k random points, counting neighbours within a radius."""
    k = kernels(wp, _geometry_kernels)
    pts = np.random.default_rng(11).random((N_POINTS, 3)).astype(np.float32)
    points = wp.array(pts, dtype=wp.vec3, device=device)
    grid = wp.HashGrid(128, 128, 128, device=device)
    grid.build(points, GRID_RADIUS)
    counts = wp.zeros(N_POINTS, dtype=int, device=device)

    def build():
        grid.build(points, GRID_RADIUS)
        sync()

    def count():
        wp.launch(k.count_neighbours, dim=N_POINTS, inputs=[grid.id, points, GRID_RADIUS, counts], device=device)
        sync()

    return [
        Workload("hash grid build 100k", "wp.HashGrid(128, 128, 128).build(points, 0.04) of 100k random points in the unit cube", build),
        Workload(
            "hash grid neighbours 100k",
            "one thread per point counting the points within 0.04 (about 27) through wp.hash_grid_query",
            count,
            check=lambda: float(counts.numpy().astype(np.float64).sum()),
        ),
    ]


N_POINTS = 100_000
GRID_RADIUS = 0.04
ROWS = ("mesh build 200k tris", "mesh refit 200k tris", "raycast 512x512, 200k tris")
GRID_ROWS = ("hash grid build 100k", "hash grid neighbours 100k")
