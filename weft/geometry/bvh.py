"""``wp.Bvh``: a bounding volume hierarchy over boxes, queried from kernels by its ``id``
(``wp.bvh_query_aabb`` / ``_ray`` / ``_sphere`` / ``_capsule`` with ``wp.bvh_query_next``).

The tree is built on the host (``native/geometry/build.cpp``: binned SAH or median splits, one
subtree per group) and lives in arrays on the BVH's device next to a ``bvh_t`` descriptor whose
address is the id (layout in ``native/geometry/bvh.h``). ``Tree`` is that machinery, shared with
``wp.Mesh``, whose items are faces.
"""

from __future__ import annotations

import ctypes
import enum

import numpy as np

from .. import types as wt
from .. import vector_types as vt
from ..runtime import handles
from . import native

_vec3 = vt.vector(3, wt.float32)
_NODE_DTYPE = np.dtype([("lo", np.float32, 3), ("a", np.int32), ("hi", np.float32, 3), ("b", np.int32)])
_WIDE_NODE_BYTES = 128  # bvh4_node_t


def is_cubql_available() -> bool:
    """Whether BVHs can be built with NVIDIA's cuBQL library: never in weft (``constructor="cubql"``
    builds with SAH)."""
    return False


class BvhConstructor(enum.IntEnum):
    """How a BVH is built: ``SAH`` (surface-area heuristic, the default on the CPU), ``MEDIAN``
    (median splits), ``LBVH`` and ``CUBQL`` (GPU builders in Warp; weft builds with SAH instead)."""

    SAH = 0
    MEDIAN = 1
    LBVH = 2
    CUBQL = -1

    @classmethod
    def from_str(cls, value: str) -> "BvhConstructor":
        try:
            return cls[value.upper()]
        except KeyError:
            names = ", ".join(m.name.lower() for m in cls)
            raise ValueError(f"Unknown BVH constructor '{value}', expected one of: {names}") from None


def resolve_constructor(constructor, device) -> BvhConstructor:
    """The constructor a request names (None: SAH), as Warp reads it."""
    if constructor is None:
        return BvhConstructor.SAH
    if not isinstance(constructor, BvhConstructor):
        constructor = BvhConstructor.from_str(str(constructor))
    return constructor


class bvh_t(ctypes.Structure):
    """Mirror of ``weft::bvh_t``."""

    _fields_ = [
        ("nodes", ctypes.c_uint64),
        ("prims", ctypes.c_uint64),
        ("item_lowers", ctypes.c_uint64),
        ("item_uppers", ctypes.c_uint64),
        ("tri_points", ctypes.c_uint64),
        ("tri_indices", ctypes.c_uint64),
        ("group_ids", ctypes.c_uint64),
        ("group_roots", ctypes.c_uint64),
        ("wide", ctypes.c_uint64),
        ("leaf_tris", ctypes.c_uint64),
        ("num_nodes", ctypes.c_int32),
        ("num_items", ctypes.c_int32),
        ("root", ctypes.c_int32),
        ("num_groups", ctypes.c_int32),
    ]


def host_vec3(a) -> np.ndarray:
    """A contiguous (n, 3) float32 host copy (or view, on the CPU) of a vec3 array."""
    return np.ascontiguousarray(a.numpy(), dtype=np.float32).reshape(-1, 3)


def to_device(values: np.ndarray, device):
    """``values`` as a weft array on ``device`` (a uint8 array of its bytes for records); on the
    CPU the array shares the NumPy buffer (no copy)."""
    from ..array import array

    if values.dtype.fields is not None:
        values = values.view(np.uint8).reshape(-1)
    values = np.ascontiguousarray(values)
    return array(values, device=device, copy=not device.is_cpu)


class Tree:
    """The nodes, leaf order and group roots of one BVH on one device, built from item bounds.

    ``build(lowers, uppers)`` takes (n, 3) float32 host arrays; ``refit(lowers, uppers)`` updates
    the node bounds for moved items, keeping the topology. ``descriptor(lowers_ptr, uppers_ptr)``
    is the ``bvh_t`` kernels read, pointing at this tree's device arrays.

    With ``wide`` (a mesh on the CPU) the tree also keeps a 4-wide copy of itself (``bvh4_node_t``
    of ``native/geometry/bvh.h``, 128-byte nodes on cache lines) for the mesh's ray queries,
    rebuilt with the tree and refitted from it.
    """

    def __init__(self, device, constructor: BvhConstructor, leaf_size: int, groups=None, wide: bool = False):
        self.device = device
        self.constructor = constructor
        self.leaf_size = int(leaf_size)
        self.groups = None if groups is None else np.ascontiguousarray(groups, dtype=np.int32)
        self.wide = bool(wide) and device.is_cpu
        self.host_wide = None
        self.leaf_tris = None

    def build(self, lowers: np.ndarray, uppers: np.ndarray):
        n = lowers.shape[0]
        groups = self.groups
        nodes = np.zeros(max(2 * n, 1), dtype=_NODE_DTYPE)
        prims = np.zeros(max(n, 1), dtype=np.int32)
        group_ids = np.zeros(max(n, 1), dtype=np.int32)
        group_roots = np.full(max(n, 1), -1, dtype=np.int32)
        order = np.zeros(max(2 * n, 1), dtype=np.int32)
        num_groups, order_count, root = ctypes.c_int(0), ctypes.c_int(0), ctypes.c_int(-1)
        median = 1 if self.constructor == BvhConstructor.MEDIAN else 0
        count = native.library().weft_bvh_build(
            lowers.ctypes.data,
            uppers.ctypes.data,
            n,
            groups.ctypes.data if groups is not None and n else None,
            self.leaf_size,
            median,
            nodes.ctypes.data,
            prims.ctypes.data,
            group_ids.ctypes.data,
            group_roots.ctypes.data,
            ctypes.byref(num_groups),
            order.ctypes.data,
            ctypes.byref(order_count),
            ctypes.byref(root),
        )
        self.num_items, self.num_nodes, self.root, self.num_groups = n, count, root.value, num_groups.value
        self.host_nodes, self.order = nodes, order[: order_count.value].copy()
        self.host_prims = prims
        self.nodes = to_device(nodes, self.device)
        self.prims = to_device(prims, self.device)
        self.group_ids = to_device(group_ids[: max(num_groups.value, 1)], self.device)
        self.group_roots = to_device(group_roots[: max(num_groups.value, 1)], self.device)
        self.leaf_tris = None
        if self.wide:
            self._widen()

    def set_triangles(self, indices: np.ndarray):
        """A mesh's faces (host int32 array, 3 per face) in leaf order, what its refits read (one
        sequential sweep instead of a gather through ``prims``) and its CPU rays too."""
        n = self.num_items
        self.leaf_tris = np.zeros(max(3 * n, 1), dtype=np.int32)
        if n:
            leaf_triangles = native.library().weft_mesh_leaf_triangles
            leaf_triangles(self.host_prims.ctypes.data, n, indices.ctypes.data, self.leaf_tris.ctypes.data)

    def _widen(self):
        """The 4-wide copy of the tree (CPU only: kernels read the host buffer), 64-byte aligned.
        Room for one wide node per inner binary node; the pages never written are never touched."""
        self.host_wide = None
        if self.root < 0:
            return
        room = self.num_nodes // 2 + 1
        raw = np.zeros(room * _WIDE_NODE_BYTES + 64, dtype=np.uint8)
        start = -raw.ctypes.data % 64
        wide = raw[start : start + room * _WIDE_NODE_BYTES]
        self.wide_slot_of = np.full(self.num_nodes, -1, dtype=np.int32)
        widen = native.library().weft_bvh_widen
        count = widen(self.host_nodes.ctypes.data, self.root, wide.ctypes.data, self.wide_slot_of.ctypes.data)
        self.host_wide = wide[: count * _WIDE_NODE_BYTES]

    def _wide_target(self):
        """The refits' last two arguments: where the 4-wide tree's boxes go (None, None: no tree)."""
        if self.host_wide is None:
            return None, None
        return self.host_wide.ctypes.data, self.wide_slot_of.ctypes.data

    def refit(self, lowers: np.ndarray, uppers: np.ndarray):
        """New node bounds for the items' bounds (host arrays), in place on the CPU."""
        refit = native.library().weft_bvh_refit
        nodes = self.host_nodes  # on the CPU, the very buffer kernels read
        refit(
            nodes.ctypes.data,
            self.root,
            self.num_items,
            self.host_prims.ctypes.data,
            lowers.ctypes.data,
            uppers.ctypes.data,
            *self._wide_target(),
        )
        if not self.device.is_cpu:
            self.nodes.assign(nodes.view(np.uint8).reshape(-1))

    def current_nodes(self) -> np.ndarray:
        """The nodes as a host record array."""
        return self.host_nodes

    def refit_mesh(self, points: np.ndarray, indices: np.ndarray):
        """New node bounds for a mesh's faces from its vertices (host arrays), in place on the CPU;
        the faces in leaf order when ``set_triangles`` gave them, else ``indices`` through ``prims``."""
        nodes = self.host_nodes
        leaf_order = self.leaf_tris is not None
        native.library().weft_mesh_refit(
            nodes.ctypes.data,
            self.root,
            self.num_items,
            None if leaf_order else self.host_prims.ctypes.data,
            points.ctypes.data,
            (self.leaf_tris if leaf_order else indices).ctypes.data,
            *self._wide_target(),
        )
        if not self.device.is_cpu:
            self.nodes.assign(nodes.view(np.uint8).reshape(-1))

    def descriptor(self, lowers_ptr: int, uppers_ptr: int, tri_points: int = 0, tri_indices: int = 0) -> bvh_t:
        """The ``bvh_t`` kernels read: items are boxes (``lowers_ptr`` / ``uppers_ptr``) or, for a
        mesh, triangles (``tri_points`` / ``tri_indices``)."""
        return bvh_t(
            self.nodes.ptr or 0,
            self.prims.ptr or 0,
            lowers_ptr or 0,
            uppers_ptr or 0,
            tri_points or 0,
            tri_indices or 0,
            self.group_ids.ptr or 0,
            self.group_roots.ptr or 0,
            self.host_wide.ctypes.data if self.host_wide is not None and self.leaf_tris is not None else 0,
            self.leaf_tris.ctypes.data if self.host_wide is not None and self.leaf_tris is not None else 0,
            self.num_nodes,
            self.num_items,
            self.root,
            self.num_groups,
        )


def _check_bounds_array(a, name):
    if a.dtype != _vec3 or not a.is_contiguous:
        raise RuntimeError(f"{name} should be a contiguous array of type wp.vec3")


class Releasable:
    """``__new__`` / ``__del__`` of the geometry objects kernels know by ``id`` (as Warp's): an
    object never initialised has ``id`` None, and deleting one releases its tree and descriptor
    at once (the id becomes invalid)."""

    def __new__(cls, *args, **kwargs):
        instance = super().__new__(cls)
        instance.id = None
        return instance

    def __del__(self):
        if not getattr(self, "id", None):
            return
        handles.release(self.id)
        self.id = None
        self.__dict__.pop("_descriptor", None)
        self.__dict__.pop("_tree", None)


class Bvh(Releasable):
    """A bounding volume hierarchy over ``len(lowers)`` boxes ``[lowers[i], uppers[i]]``.

    Args:
        lowers, uppers: contiguous ``wp.vec3`` arrays on one device (the BVH's device).
        constructor: ``"sah"`` (default), ``"median"``; ``"lbvh"`` and ``"cubql"`` build with SAH.
        groups: optional ``wp.int32`` array, a group id (any int32) per box: each group gets its own
            subtree, whose root ``wp.bvh_get_group_root(id, group)`` returns for confined queries.
        leaf_size: boxes per leaf (>= 1).

    ``id`` is what kernels receive (a ``wp.uint64``); after changing ``lowers`` / ``uppers`` call
    ``refit()`` (same tree, new bounds) or ``rebuild()`` (a new tree).
    """

    def __init__(self, lowers, uppers, constructor=None, groups=None, leaf_size: int = 1):
        self.id = None
        if len(lowers) != len(uppers):
            raise RuntimeError("The same number of lower and upper bounds must be provided")
        if lowers.device != uppers.device:
            raise RuntimeError("Lower and upper bounds must live on the same device")
        _check_bounds_array(lowers, "lowers")
        _check_bounds_array(uppers, "uppers")
        if groups is not None:
            if groups.dtype != wt.int32 or not groups.is_contiguous:
                raise RuntimeError("groups should be a contiguous array of type wp.int32")
            if groups.device != lowers.device:
                raise RuntimeError("groups must live on the same device as lowers/uppers")
            if len(groups) != len(lowers):
                raise RuntimeError("groups must have the same length as lowers/uppers")
        constructor = resolve_constructor(constructor, lowers.device)
        if constructor == BvhConstructor.CUBQL and groups is not None:
            raise RuntimeError("Grouped BVHs are not supported with constructor='cubql'")
        if leaf_size < 1:
            raise ValueError(f"leaf_size must be greater than or equal to 1, current value: {leaf_size}")
        self.device = lowers.device
        self.lowers, self.uppers, self.groups = lowers, uppers, groups
        self._constructor = constructor
        self._leaf_size = leaf_size
        self._build(constructor)

    def _build(self, constructor):
        group_values = None if self.groups is None else self.groups.numpy()
        self._tree = Tree(self.device, constructor, self._leaf_size, group_values)
        self._tree.build(host_vec3(self.lowers), host_vec3(self.uppers))
        desc = self._tree.descriptor(self.lowers.ptr, self.uppers.ptr)
        self._descriptor = to_device(np.frombuffer(bytes(desc), dtype=np.uint8), self.device)
        handles.release(self.id)
        self.id = self._descriptor.ptr
        handles.register(self.id, "wp.Bvh", self.device)

    def refit(self):
        """Update the node bounds after ``lowers`` / ``uppers`` changed (the tree keeps its shape)."""
        self._tree.refit(host_vec3(self.lowers), host_vec3(self.uppers))

    def rebuild(self, constructor=None):
        """Build a new tree from the current ``lowers`` / ``uppers`` (``constructor`` as in the
        constructor; None keeps the current one). The id changes only if the item count did."""
        if constructor is not None:
            new = resolve_constructor(constructor, self.device)
            if (new == BvhConstructor.CUBQL) != (self._constructor == BvhConstructor.CUBQL):
                raise ValueError("Cannot switch a BVH to or from constructor='cubql' in place; create a new BVH instead")
            self._constructor = new
        tree = Tree(self.device, self._constructor, self._leaf_size, None if self.groups is None else self.groups.numpy())
        tree.build(host_vec3(self.lowers), host_vec3(self.uppers))
        self._tree = tree
        self._descriptor.assign(np.frombuffer(bytes(tree.descriptor(self.lowers.ptr, self.uppers.ptr)), dtype=np.uint8))
