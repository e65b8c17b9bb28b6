"""Geometry queries in kernels, with Warp's names and signatures: BVHs (``wp.bvh_query_*``,
``wp.bvh_query_next``, ``wp.bvh_get_group_root``) and meshes (``wp.mesh_query_point*``,
``wp.mesh_query_ray*``, ``wp.mesh_query_aabb`` / ``_sphere`` with ``wp.mesh_query_next``,
``wp.mesh_eval_*``, ``wp.mesh_get*``). C++ in native/geometry/bvh.h and mesh.h.

A BVH or mesh is passed to kernels as its ``id`` (``wp.uint64``). Iteration queries are values:
``wp.bvh_query_next(query, index)`` returns (found, advanced query, index) here and the frontend
rebinds ``query`` and ``index`` (``inout``: Warp advances them in place; codegen/special_calls.py).
Closest-point and ray queries return structs (query_types.py) and are differentiable with
respect to the query point / ray; ``mesh_eval_position`` with respect to the barycentrics and the
mesh's vertices (``mesh.points.grad``).
"""

from __future__ import annotations

import math

from .. import types as wt
from .. import vector_types as vt
from ..geometry import query_types as qt
from ..tile.types import TileType
from .registry import builtin, p

u64, i32, f32, b = wt.uint64, wt.int32, wt.float32, wt.bool
v3 = vt.vector(3, wt.float32)


def _query(name, doc, params, returns, symbol=None, differentiable=False, defaults=None):
    fn = builtin(name, doc, "geometry")
    fn.add(p(*params), returns, symbol, differentiable=differentiable)
    if defaults:
        fn.defaults = dict(defaults)
    return fn


# ------------------------------------------------------------------------------------------ BVH

_ROOT = {"root": -1}
bvh_query_aabb = _query(
    "bvh_query_aabb", "Iterate over the BVH items whose bounds overlap the box [low, high]",
    ("id", u64, "low", v3, "high", v3, "root", i32), qt.BvhQuery, defaults=_ROOT,
)
bvh_query_ray = _query(
    "bvh_query_ray", "Iterate over the BVH items whose bounds the ray start + t dir meets (t >= 0)",
    ("id", u64, "start", v3, "dir", v3, "root", i32), qt.BvhQuery, defaults=_ROOT,
)
bvh_query_sphere = _query(
    "bvh_query_sphere", "Iterate over the BVH items whose bounds meet the sphere (center, radius)",
    ("id", u64, "center", v3, "radius", f32, "root", i32), qt.BvhQuery, defaults=_ROOT,
)
bvh_query_capsule = _query(
    "bvh_query_capsule", "Iterate over the BVH items whose bounds, grown by radius, the segment start + t dir meets",
    ("id", u64, "start", v3, "dir", v3, "radius", f32, "root", i32), qt.BvhQuery, defaults=_ROOT,
)
bvh_query_next = _query(
    "bvh_query_next", "Advance a BVH query: True and the next item's index in `index`, or False when done",
    ("query", qt.BvhQuery, "index", i32, "max_dist", f32), wt.TupleType([b, qt.BvhQuery, i32]),
    defaults={"max_dist": math.inf},
)
bvh_query_next.inout = (0, 1)
bvh_get_group_root = _query(
    "bvh_get_group_root", "The root node of a group's subtree (-1: no such group, i.e. the whole BVH)",
    ("id", u64, "group", i32), i32,
)

# ----------------------------------------------------------------------------------------- meshes

_POINT = ("id", u64, "point", v3, "max_dist", f32)
mesh_query_point = _query(
    "mesh_query_point", "Closest point on the mesh within max_dist; inside/outside by three axis rays",
    _POINT, qt.MeshQueryPoint, differentiable=True,
)
mesh_query_point_no_sign = _query(
    "mesh_query_point_no_sign", "Closest point on the mesh within max_dist, without inside/outside",
    _POINT, qt.MeshQueryPoint, differentiable=True,
)
mesh_query_point_sign_normal = _query(
    "mesh_query_point_sign_normal", "Closest point on the mesh; inside/outside by the angle-weighted pseudo normal",
    (*_POINT, "epsilon", f32), qt.MeshQueryPoint, differentiable=True, defaults={"epsilon": 1.0e-3},
)
mesh_query_point_sign_winding_number = _query(
    "mesh_query_point_sign_winding_number", "Closest point on the mesh; inside when the winding number >= threshold",
    (*_POINT, "accuracy", f32, "threshold", f32), qt.MeshQueryPoint, differentiable=True,
    defaults={"accuracy": 2.0, "threshold": 0.5},
)
mesh_query_point_sign_parity = _query(
    "mesh_query_point_sign_parity", "Closest point on the mesh; inside when most of n_sample rays cross it an odd number of times",
    (*_POINT, "n_sample", i32, "perturbation_scale", f32), qt.MeshQueryPoint, differentiable=True,
    defaults={"n_sample": 1, "perturbation_scale": 0.1},
)
mesh_query_furthest_point_no_sign = _query(
    "mesh_query_furthest_point_no_sign", "Furthest point of the mesh from point, strictly beyond min_dist",
    ("id", u64, "point", v3, "min_dist", f32), qt.MeshQueryPoint,
)
mesh_query_ray = _query(
    "mesh_query_ray", "Closest hit of the ray start + t dir, t in [0, max_t]",
    ("id", u64, "start", v3, "dir", v3, "max_t", f32, "root", i32), qt.MeshQueryRay, differentiable=True, defaults=_ROOT,
)
mesh_query_ray_anyhit = _query(
    "mesh_query_ray_anyhit", "Whether the ray start + t dir hits any face for t in [0, max_t]",
    ("id", u64, "start", v3, "dir", v3, "max_t", f32, "root", i32), b, defaults=_ROOT,
)
mesh_query_ray_count_intersections = _query(
    "mesh_query_ray_count_intersections", "How many faces the ray start + t dir (t >= 0) crosses",
    ("id", u64, "start", v3, "dir", v3, "root", i32), i32, defaults=_ROOT,
)
mesh_query_aabb = _query(
    "mesh_query_aabb", "Iterate over the faces whose bounds overlap the box [low, high]",
    ("id", u64, "low", v3, "high", v3), qt.MeshQueryAABB,
)
mesh_query_sphere = _query(
    "mesh_query_sphere", "Iterate over the faces within radius of center",
    ("id", u64, "center", v3, "radius", f32), qt.MeshQueryAABB,
)
_NEXT_DOC = "Advance a mesh query: True and the next face's index in `index`, or False when done"
mesh_query_next = _query("mesh_query_next", _NEXT_DOC, ("query", qt.MeshQueryAABB, "index", i32), wt.TupleType([b, qt.MeshQueryAABB, i32]))
mesh_query_aabb_next = _query(
    "mesh_query_aabb_next", _NEXT_DOC, ("query", qt.MeshQueryAABB, "index", i32), wt.TupleType([b, qt.MeshQueryAABB, i32]),
    symbol="mesh_query_next",
)
mesh_query_next.inout = mesh_query_aabb_next.inout = (0, 1)

_FACE_UV = ("id", u64, "face", i32, "bary_u", f32, "bary_v", f32)
mesh_eval_position = _query(
    "mesh_eval_position", "The point u v0 + v v1 + (1 - u - v) v2 of a face", _FACE_UV, v3, differentiable=True
)
mesh_eval_velocity = _query(
    "mesh_eval_velocity", "The velocity u w0 + v w1 + (1 - u - v) w2 of a face (zero without velocities)",
    _FACE_UV, v3, differentiable=True,
)
mesh_eval_face_normal = _query("mesh_eval_face_normal", "The unit normal of a face (by its winding)", ("id", u64, "face", i32), v3)
mesh_get_point = _query("mesh_get_point", "The position of the vertex indices[index]", ("id", u64, "index", i32), v3)
mesh_get_velocity = _query("mesh_get_velocity", "The velocity of the vertex indices[index]", ("id", u64, "index", i32), v3)
mesh_get_index = _query("mesh_get_index", "The vertex index indices[index]", ("id", u64, "index", i32), i32)
mesh_get = _query("mesh_get", "The mesh's points, velocities and indices arrays", ("id", u64), qt.MeshView)
mesh_get_bvh = _query("mesh_get_bvh", "The id of the mesh's face BVH (for wp.bvh_query_*)", ("id", u64), u64)
mesh_get_group_root = _query(
    "mesh_get_group_root", "The root node of a face group's subtree (-1: no such group)", ("id", u64, "group", i32), i32
)

# ------------------------------------------------------------------------------- tiled queries
# A block's threads traverse together and each gets the next item as an element of a tile; a
# block is one thread in weft, so the tile holds one item (-1 once done). native/tile/tile_geometry.h

_NEXT_TILE = wt.TupleType([TileType(i32, (1,)), qt.QueryTiled])
_TILED_DOC = "A query for tiled kernels: wp.tile_query_valid(q) while items are left, {next}(q) gives the next as a tile"
TILED_QUERIES = []
for _names, _params, _symbol, _next in (
    (("tile_bvh_query_aabb", "bvh_query_aabb_tiled"), ("id", u64, "low", v3, "high", v3), "tile_bvh_query_aabb", "bvh_query_next_tiled"),
    (("tile_bvh_query_ray", "bvh_query_ray_tiled"), ("id", u64, "start", v3, "dir", v3), "tile_bvh_query_ray", "bvh_query_next_tiled"),
    (("tile_mesh_query_aabb", "mesh_query_aabb_tiled"), ("id", u64, "low", v3, "high", v3), "tile_mesh_query_aabb", "mesh_query_aabb_next_tiled"),
):
    for _name in _names:
        globals()[_name] = _query(_name, _TILED_DOC.format(next=_next), _params, qt.QueryTiled, symbol=_symbol)
for _name in ("tile_bvh_query_next", "bvh_query_next_tiled", "tile_mesh_query_aabb_next", "mesh_query_aabb_next_tiled"):
    _b = _query(
        _name, "The next item of a tiled query as a one-element tile (-1 when none is left); advances the query",
        ("query", qt.QueryTiled), _NEXT_TILE, symbol="tile_query_next",
    )
    _b.inout = (0,)
    globals()[_name] = _b
    TILED_QUERIES.append(_b)
tile_query_valid = _query("tile_query_valid", "Whether a tiled query has items left", ("query", qt.QueryTiled), b)

# `for index in query`: the type of an iteration query -> the builtin advancing it
QUERY_ITERATORS = {qt.BvhQuery: bvh_query_next, qt.MeshQueryAABB: mesh_query_next}

# Warp's older forms with output arguments: (inputs..., then the names receiving the fields).
LEGACY_OUTPUTS = {
    mesh_query_point: (3, ("sign", "face", "u", "v")),
    mesh_query_point_no_sign: (3, ("face", "u", "v")),
    mesh_query_point_sign_normal: (3, ("sign", "face", "u", "v")),
    mesh_query_point_sign_winding_number: (3, ("sign", "face", "u", "v")),
    mesh_query_point_sign_parity: (3, ("sign", "face", "u", "v")),
    mesh_query_furthest_point_no_sign: (3, ("face", "u", "v")),
    mesh_query_ray: (4, ("t", "u", "v", "sign", "normal", "face")),
}
