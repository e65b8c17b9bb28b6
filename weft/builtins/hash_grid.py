"""Hash grid queries in kernels, with Warp's names and signatures: ``wp.hash_grid_query(id, point,
max_dist[, group])``, ``wp.hash_grid_query_next(query, index)`` and ``wp.hash_grid_point_id(id,
index)``, for grids of float16, float32 and float64 coordinates. C++ in native/geometry/hashgrid.h.

A grid is passed to kernels as its ``id`` (``wp.uint64``). ``wp.hash_grid_query_next`` returns
(found, advanced query, index) here and the frontend rebinds ``query`` and ``index`` (``inout``,
as ``wp.bvh_query_next``); ``for index in wp.hash_grid_query(...)`` loops over the same
candidates (``QUERY_ITERATORS``, read by codegen/control_flow.py).

``hash_grid_cell_of`` and ``hash_grid_point_key`` are internal: the build kernels of
geometry/hash_grid.py use them so that building and querying hash points alike.
"""

from __future__ import annotations

from .. import types as wt
from .. import vector_types as vt
from ..geometry import query_types as qt
from .registry import builtin, p

u64, i32, b = wt.uint64, wt.int32, wt.bool
_PRECISIONS = [(wt.float16, qt.HashGridQueryH), (wt.float32, qt.HashGridQuery), (wt.float64, qt.HashGridQueryD)]

hash_grid_query = builtin(
    "hash_grid_query",
    "Iterate over the points in the grid cells overlapping the box point +- max_dist (candidates: filter "
    "by distance); with `group`, only the points built with that group id",
    "geometry",
)
hash_grid_query_next = builtin(
    "hash_grid_query_next",
    "Advance a hash grid query: True and the next candidate's original index in `index`, or False when done",
    "geometry",
)
hash_grid_point_id = builtin(
    "hash_grid_point_id",
    "The original index of the point at position `index` of the grid's cell-sorted order (-1: not built)",
    "geometry",
)
hash_grid_cell_of = builtin("hash_grid_cell_of", "The physical cell of a point (grid builds)", "internal")
hash_grid_point_key = builtin("hash_grid_point_key", "The (cell, group) sort key of grouped builds", "internal")

for _t, _q in _PRECISIONS:
    _v = vt.vector(3, _t)
    hash_grid_query.add(p("id", u64, "point", _v, "max_dist", _t), _q, differentiable=False)
    hash_grid_query.add(p("id", u64, "point", _v, "max_dist", _t, "group", i32), _q, differentiable=False)
    hash_grid_query_next.add(p("query", _q, "index", i32), wt.TupleType([b, _q, i32]), differentiable=False)
    hash_grid_cell_of.add(p("id", u64, "point", _v), i32, differentiable=False)
hash_grid_query_next.inout = (0, 1)
hash_grid_point_id.add(p("id", u64, "index", i32), i32, differentiable=False)
hash_grid_point_key.add(p("cell", i32, "group", i32), u64, differentiable=False)

# `for index in query`: the query types and the builtin that advances them
QUERY_ITERATORS = {q: hash_grid_query_next for _, q in _PRECISIONS}
