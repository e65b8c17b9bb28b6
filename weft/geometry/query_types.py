"""The kernel-side types of geometry queries: ``wp.MeshQueryPoint``, ``wp.MeshQueryRay``,
``wp.BvhQuery``, ``wp.MeshQueryAABB``, ``wp.HashGridQuery`` (one per coordinate precision) and
the struct ``wp.mesh_get`` returns.

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


class QueryTiled:
    """A query of tiled kernels (``wp.tile_bvh_query_aabb`` / ``_ray``, ``wp.tile_mesh_query_aabb``,
    and their ``*_tiled`` names), advanced by ``wp.tile_bvh_query_next`` /
    ``wp.tile_mesh_query_aabb_next``; opaque."""


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
MeshQuery = MeshQueryAABB  # Warp's name for any mesh iteration query (AABB or sphere): one type here
MeshView = NativeStruct(Mesh, "weft::mesh_view_t")
QueryTiled = NativeStruct(QueryTiled, "weft::tile_query_t")
BvhQueryTiled = MeshQueryAABBTiled = QueryTiled  # Warp's names: one type here


class _HashGridQueryFamily(NativeStruct):
    """``wp.HashGridQuery``: the float32 query type; ``wp.HashGridQuery[dtype]`` names the query
    of a float16 / float32 / float64 grid (each a native struct of its own, all shown as
    ``HashGridQuery``)."""

    def __init__(self, cls, cname: str, dtype):
        super().__init__(cls, cname)
        self.__name__ = "HashGridQuery"
        self.dtype = dtype

    def __getitem__(self, dtype):
        return hash_grid_query_type(dtype)

    def __repr__(self):
        return f"<weft native struct HashGridQuery[{self.dtype.__name__}]>"


class HashGridQuery:
    """An iteration over the candidate neighbours of a point in a ``wp.HashGrid``
    (``wp.hash_grid_query``), advanced by ``wp.hash_grid_query_next``; opaque."""


class HashGridQueryH:
    """``wp.HashGridQuery[wp.float16]``."""


class HashGridQueryD:
    """``wp.HashGridQuery[wp.float64]``."""


HashGridQuery = _HashGridQueryFamily(HashGridQuery, "weft::hash_grid_query_f", wt.float32)
HashGridQueryH = _HashGridQueryFamily(HashGridQueryH, "weft::hash_grid_query_h", wt.float16)
HashGridQueryD = _HashGridQueryFamily(HashGridQueryD, "weft::hash_grid_query_d", wt.float64)
_HASH_GRID_QUERIES = {wt.float16: HashGridQueryH, wt.float32: HashGridQuery, wt.float64: HashGridQueryD}


def hash_grid_query_type(dtype):
    """The query type of a hash grid of coordinate type ``dtype`` (float16, float32, float64).

    Raises:
        TypeError: another type.
    """
    query = _HASH_GRID_QUERIES.get(wt.float32 if dtype is float else dtype)
    if query is None:
        raise TypeError(f"Unsupported dtype {dtype} for HashGridQuery. Supported types: float16, float32, float64")
    return query
