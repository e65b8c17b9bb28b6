"""``wp.Mesh``: a triangle mesh with a BVH over its faces, queried from kernels by its ``id``
(closest points with four sign tests, rays, AABB / sphere iteration, evaluation on faces; see
``native/geometry/mesh.h``). The descriptor kernels read (``mesh_t``) holds the face BVH first,
then the ``points`` / ``velocities`` / ``indices`` arrays and the winding-number node data.
"""

from __future__ import annotations

import ctypes

import numpy as np

from .. import types as wt
from ..scalar_types import array_t
from ..runtime import handles
from . import native
from .bvh import BvhConstructor, Releasable, Tree, _vec3, bvh_t, host_vec3, resolve_constructor, to_device


class mesh_t(ctypes.Structure):
    """Mirror of ``weft::mesh_t``."""

    _fields_ = [
        ("bvh", bvh_t),
        ("points", array_t),
        ("velocities", array_t),
        ("indices", array_t),
        ("wn_centers", ctypes.c_uint64),
        ("wn_normals", ctypes.c_uint64),
        ("wn_radii", ctypes.c_uint64),
        ("num_points", ctypes.c_int32),
        ("num_tris", ctypes.c_int32),
        ("avg_edge_length", ctypes.c_float),
        ("pad", ctypes.c_int32),
    ]


def _empty_array_t():
    return array_t()


class Mesh(Releasable):
    """A triangle mesh for closest-point, inside/outside, ray and overlap queries in kernels.

    Args:
        points: contiguous ``wp.vec3`` vertex positions.
        indices: contiguous ``wp.int32`` array of ``3 * num_tris`` vertex indices (a 2-d
            ``(num_tris, 3)`` array is read flat).
        velocities: optional ``wp.vec3`` per vertex (``wp.mesh_eval_velocity``).
        support_winding_number: also keep the node data of ``wp.mesh_query_point_sign_winding_number``.
        bvh_constructor: ``"sah"`` (default) or ``"median"`` (``"lbvh"`` / ``"cubql"`` use SAH).
        bvh_leaf_size: faces per BVH leaf (default 4).
        groups: optional ``wp.int32`` group index per face (``wp.mesh_get_group_root``).

    ``id`` is what kernels receive. After moving ``points`` in place call ``refit()``; assigning
    ``mesh.points = new_points`` (same vertex count) refits too.
    """

    def __init__(
        self,
        points,
        indices,
        velocities=None,
        support_winding_number: bool = False,
        bvh_constructor=None,
        bvh_leaf_size=None,
        groups=None,
    ):
        self.id = None
        if points.device != indices.device:
            raise RuntimeError("Mesh points and indices must live on the same device")
        if points.dtype != _vec3 or not points.is_contiguous:
            raise RuntimeError("Mesh points should be a contiguous array of type wp.vec3")
        if velocities is not None and (velocities.dtype != _vec3 or not velocities.is_contiguous):
            raise RuntimeError("Mesh velocities should be a contiguous array of type wp.vec3")
        if indices.dtype != wt.int32 or not indices.is_contiguous:
            raise RuntimeError("Mesh indices should be a contiguous array of type wp.int32")
        if indices.size % 3 != 0:
            raise RuntimeError("Mesh indices should have a size that is a multiple of 3 (three per triangle)")
        constructor = resolve_constructor(bvh_constructor, points.device)
        if constructor == BvhConstructor.CUBQL and (groups is not None or support_winding_number):
            raise RuntimeError("bvh_constructor='cubql' supports neither grouped meshes nor support_winding_number=True")
        if groups is not None:
            if groups.dtype != wt.int32 or not groups.is_contiguous:
                raise RuntimeError("groups should be a contiguous array of type wp.int32")
            if len(groups) * 3 != indices.size:
                raise RuntimeError("groups must have one entry per triangle")
        leaf_size = 4 if bvh_leaf_size is None else int(bvh_leaf_size)
        if leaf_size < 1:
            raise ValueError(f"bvh_leaf_size must be greater than or equal to 1, current value: {leaf_size}")
        self.device = points.device
        self._points, self.indices, self._velocities, self.groups = points, indices, velocities, groups
        self.support_winding_number = bool(support_winding_number)
        self._host_indices = np.ascontiguousarray(indices.numpy(), dtype=np.int32).reshape(-1)
        num_tris = self._host_indices.size // 3
        if num_tris and (self._host_indices.min() < 0 or self._host_indices.max() >= len(points)):
            raise RuntimeError("Mesh indices must lie in [0, len(points))")
        self._tree = Tree(self.device, constructor, leaf_size, None if groups is None else groups.numpy(), wide=True)
        pts = host_vec3(points)
        self._tree.build(*self._face_bounds(pts))  # the face boxes are the build's input only
        self._tree.set_triangles(self._host_indices)
        self._winding = None
        if self.support_winding_number:
            self._update_winding(pts)
        self._descriptor = None
        self._write_descriptor(pts)

    # -- the data kernels read --------------------------------------------------------------------

    def _face_bounds(self, pts: np.ndarray, edges: bool = True):
        """Each face's bounds (host arrays); with ``edges``, the mean edge length
        (``wp.mesh_query_point_sign_normal``'s epsilon unit) too."""
        num_tris = self._host_indices.size // 3
        lowers = np.zeros((num_tris, 3), dtype=np.float32)
        uppers = np.zeros_like(lowers)
        if num_tris:
            mean_edge = native.library().weft_mesh_bounds(
                pts.ctypes.data, self._host_indices.ctypes.data, num_tris, lowers.ctypes.data, uppers.ctypes.data, int(edges)
            )
            if edges:
                self.avg_edge_length = mean_edge
        elif edges:
            self.avg_edge_length = 0.0
        return lowers, uppers

    def _update_winding(self, pts: np.ndarray):
        tree = self._tree
        n = max(tree.num_nodes, 1)
        centers, normals = np.zeros((n, 3), np.float32), np.zeros((n, 3), np.float32)
        radii, areas = np.zeros(n, np.float32), np.zeros(n, np.float32)
        if tree.num_items:
            native.library().weft_mesh_winding_data(
                tree.current_nodes().ctypes.data,
                tree.order.ctypes.data,
                len(tree.order),
                tree.host_prims.ctypes.data,
                pts.ctypes.data,
                self._host_indices.ctypes.data,
                centers.ctypes.data,
                normals.ctypes.data,
                radii.ctypes.data,
                areas.ctypes.data,
            )
        if self._winding is None:
            self._winding = [to_device(x, self.device) for x in (centers, normals, radii)]
        else:
            for dst, src in zip(self._winding, (centers, normals, radii)):
                dst.assign(src)

    def _write_descriptor(self, pts: np.ndarray):
        flat_indices = self.indices if self.indices.ndim == 1 else self.indices.flatten()
        self._flat_indices = flat_indices
        wn = self._winding
        desc = mesh_t(
            self._tree.descriptor(0, 0, self._points.ptr, flat_indices.ptr),  # items: the triangles
            self._points.__ctype__(),
            self._velocities.__ctype__() if self._velocities is not None else _empty_array_t(),
            flat_indices.__ctype__(),
            wn[0].ptr if wn else 0,
            wn[1].ptr if wn else 0,
            wn[2].ptr if wn else 0,
            len(self._points),
            self._host_indices.size // 3,
            self.avg_edge_length,
            0,
        )
        raw = np.frombuffer(bytes(desc), dtype=np.uint8)
        if self._descriptor is None:
            self._descriptor = to_device(raw, self.device)
            self.id = self._descriptor.ptr
            handles.register(self.id, "wp.Mesh", self.device)
        else:
            self._descriptor.assign(raw)

    # -- public ----------------------------------------------------------------------------------

    @property
    def points(self):
        """The vertex positions (``wp.vec3`` array); assigning a new array refits the mesh."""
        return self._points

    @points.setter
    def points(self, points):
        if points is None or points.dtype != _vec3 or not points.is_contiguous:
            raise RuntimeError("Mesh points should be a contiguous array of type wp.vec3")
        if points.device != self.device:
            raise RuntimeError("Mesh points must live on the mesh's device")
        if len(points) != len(self._points):
            raise RuntimeError(
                f"The new points array has {len(points)} vertices; the mesh has {len(self._points)} (create a new wp.Mesh instead)"
            )
        self._points = points
        self._update_bounds(edges=True)  # the new array: new descriptor, new mean edge length

    @property
    def velocities(self):
        """The vertex velocities (``wp.vec3`` array or None); assigning a new array takes effect
        in kernels at once (no refit needed), as in Warp."""
        return self._velocities

    @velocities.setter
    def velocities(self, velocities):
        if velocities is None or velocities.dtype != _vec3 or not velocities.is_contiguous:
            raise RuntimeError("Mesh velocities should be a contiguous array of type wp.vec3")
        if velocities.device != self.device:
            raise RuntimeError("Mesh velocities must live on the mesh's device")
        if velocities.ndim != 1 or len(velocities) != len(self._points):
            raise RuntimeError(
                f"The new velocities array has shape {velocities.shape}; the mesh has {len(self._points)} vertices"
            )
        self._velocities = velocities
        self._write_descriptor(host_vec3(self._points))

    def refit(self):
        """Update the face BVH (and winding-number data) after the vertex positions changed. The
        mean edge length (the unit of ``mesh_query_point_sign_normal``'s ``epsilon``) stays the
        one measured when the points array was given."""
        self._update_bounds(edges=False)

    def _update_bounds(self, edges: bool):
        pts = host_vec3(self._points)
        if edges:
            self._face_bounds(pts, edges=True)
        self._tree.refit_mesh(pts, self._host_indices)
        if self.support_winding_number:
            self._update_winding(pts)
        if edges:
            self._write_descriptor(pts)
