"""The kernel-side types of geometry queries: ``wp.MeshQueryPoint``, ``wp.MeshQueryRay``,
``wp.BvhQuery``, ``wp.MeshQueryAABB`` and the struct ``wp.mesh_get`` returns.

Each is a weft struct type whose C++ definition lives in ``native/geometry/*.h`` (fields named
``f_<field>`` as weft structs name them), so kernels read ``query.face`` like any struct field and
the adjoint machinery of structs applies; the iteration queries have no readable fields.
"""

from __future__ import annotations

from .. import types as wt
from .. import vector_types as vt
from ..struct import Struct


class NativeStruct(Struct):
    """A struct type defined by a native header under a fixed C++ name (no generated definition)."""

    def __init__(self, cls, cname: str):
        super().__init__(cls)
        self.cname = self._cname = cname

    def cpp_definition(self) -> str:
        return ""

    def __repr__(self):
        return f"<weft native struct {self.key}>"


_vec3 = vt.vector(3, wt.float32)


class MeshQueryPoint:
    """The result of a closest/furthest-point mesh query: ``result`` (a face was found), ``sign``
    (< 0 inside, >= 0 outside; 0 for the unsigned queries), ``face`` and the barycentric
    coordinates ``u``, ``v`` of the point (``u``: weight of the face's first vertex, ``v``: of the
    second)."""

    result: wt.bool
    sign: wt.float32
    face: wt.int32
    u: wt.float32
    v: wt.float32


class MeshQueryRay:
    """The closest hit of a ray (``wp.mesh_query_ray``): ``result``, ``sign`` (> 0: the front of
    the face was hit), ``face``, ``t`` (in multiples of the direction's length), barycentrics
    ``u``, ``v`` and the unit face ``normal``."""

    result: wt.bool
    sign: wt.float32
    face: wt.int32
    t: wt.float32
    u: wt.float32
    v: wt.float32
    normal: _vec3


class BvhQuery:
    """An iteration over the items of a BVH (``wp.bvh_query_aabb`` / ``_ray`` / ``_sphere`` /
    ``_capsule``), advanced by ``wp.bvh_query_next``; opaque."""


class MeshQueryAABB:
    """An iteration over the faces of a mesh (``wp.mesh_query_aabb`` / ``wp.mesh_query_sphere``),
    advanced by ``wp.mesh_query_next``; opaque."""


class Mesh:
    """A mesh's arrays as a kernel sees them (``wp.mesh_get``): ``points``, ``velocities``,
    ``indices``."""

    points: wt.ArrayType(_vec3, 1)
    velocities: wt.ArrayType(_vec3, 1)
    indices: wt.ArrayType(wt.int32, 1)


MeshQueryPoint = NativeStruct(MeshQueryPoint, "weft::mesh_query_point_t")
MeshQueryRay = NativeStruct(MeshQueryRay, "weft::mesh_query_ray_t")
BvhQuery = NativeStruct(BvhQuery, "weft::bvh_query_t")
MeshQueryAABB = NativeStruct(MeshQueryAABB, "weft::mesh_query_aabb_t")
MeshView = NativeStruct(Mesh, "weft::mesh_view_t")
