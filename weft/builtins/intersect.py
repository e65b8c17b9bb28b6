"""Geometric tests between primitives: ``wp.intersect_tri_tri`` and ``wp.closest_point_edge_edge``
(Warp 1.19's signatures; C++ and adjoint in native/intersect.h, semantics documented there).

Called from Python outside a kernel they run their native code like any builtin (Warp only
offers them inside kernels).
"""

from __future__ import annotations

from .. import types as wt
from .. import vector_types as vt
from .registry import builtin, p

_vec3f = vt.vector(3, wt.float32)
_vec3d = vt.vector(3, wt.float64)


def _tri_tri_params(v):
    return p("v0", v, "v1", v, "v2", v, "u0", v, "u1", v, "u2", v)


intersect_tri_tri = (
    builtin(
        "intersect_tri_tri",
        "1 if triangles (v0, v1, v2) and (u0, u1, u2) intersect (touching and coplanar overlap "
        "included), else 0: Moller's interval test. The float64 overload is the more robust one "
        "near degenerate configurations.",
        "geometry",
    )
    .add(_tri_tri_params(_vec3f), wt.int32, differentiable=False)
    .add(_tri_tri_params(_vec3d), wt.int32, differentiable=False)
)

closest_point_edge_edge = builtin(
    "closest_point_edge_edge",
    "Closest points of segments [p1, q1] and [p2, q2] as vec3(s, t, d): the points are "
    "p1 + s (q1 - p1) and p2 + t (q2 - p2), s and t in [0, 1], d their distance. An edge whose "
    "squared length is <= epsilon is treated as a point (weight 0). Differentiable in the "
    "endpoints (not in epsilon); held s constant for nearly parallel edges, as Warp does.",
    "geometry",
).add(p("p1", _vec3f, "q1", _vec3f, "p2", _vec3f, "q2", _vec3f, "epsilon", wt.float32), _vec3f)

__all__ = ["closest_point_edge_edge", "intersect_tri_tri"]
