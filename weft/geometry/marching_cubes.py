"""Marching cubes: a triangle mesh of one level set of a scalar field sampled on a 3-D grid.

Input: a ``float32`` array of shape ``(nx, ny, nz)``, the field's values at the grid's nodes,
and a threshold. Output: ``verts`` (``vec3``, one per grid edge whose two end values lie on
different sides of the threshold) and ``indices`` (``int32``, three per triangle).

The work is three launches and two prefix sums, each multi-threaded like any launch:

1. one thread per node finds the case of the cell whose lowest corner it is (bit ``c`` set
   when corner ``c`` is at or above the threshold), that cell's triangle count from the case
   table, and which of the node's three edges (+x, +y, +z) cross the threshold; inclusive
   prefix sums number the crossing edges, which fixes the vertex order (node-major, then x,
   y, z) and count, and place each cell's triangles;
2. one thread per node places the vertices of its crossing edges by linear interpolation
   between the edge's end nodes (the only differentiable step: recorded on an active
   ``wp.Tape``, so gradients flow from ``verts`` back into ``field``);
3. one thread per cell writes its triangles as indices of the edge vertices of step 1.

Invariants: a vertex is shared by every cell around its edge, so the mesh is connected and,
away from the grid's boundary, closed (each mesh edge belongs to exactly two triangles).
Triangles wind counter-clockwise seen from the side at or above the threshold: for a signed
distance field (negative inside) their normals point outward.

The case table is built here, at import, from the cube's geometry (``_build_case_table``)
rather than typed in; it is the classic one (Lorensen & Cline, in Bourke's numbering: 256
cases, 820 triangles), resolving ambiguous faces by keeping corners at or above the threshold
apart, which every cell does alike, so neighbouring cells agree on their shared face.
"""

from __future__ import annotations

import warnings

import numpy as np

from ..array import array, array3d, empty, zeros
from ..builtins.scalar import clamp, lerp, where
from ..builtins.vector import cw_mul
from ..codegen.intrinsics import tid
from ..kernel import func, kernel
from ..runtime.launch import launch
from ..types import float32, int32
from ..utils import array_scan
from ..vector_types import vec3  # made by globals().update there, so not in weft.types

# ---------------------------------------------------------------------------------------------
# Tables: the cube's corners and edges, and the triangles of each of the 256 cases
# ---------------------------------------------------------------------------------------------

# Corner c of a cell at node (i, j, k) is node (i, j, k) + CUBE_CORNER_OFFSETS[c]: the z = 0
# face counter-clockwise from the origin, then the z = 1 face likewise.
_CORNERS = ((0, 0, 0), (1, 0, 0), (1, 1, 0), (0, 1, 0), (0, 0, 1), (1, 0, 1), (1, 1, 1), (0, 1, 1))

# Edge e joins corners EDGE_TO_CORNERS[e], listed from the lower to the higher coordinate:
# the z = 0 face's four edges, the z = 1 face's, then the four edges along z.
_EDGES = ((0, 1), (1, 2), (3, 2), (0, 3), (4, 5), (5, 6), (7, 6), (4, 7), (0, 4), (1, 5), (2, 6), (3, 7))


def _edge_axis(e: int) -> int:
    a, b = _EDGES[e]
    return next(d for d in range(3) if _CORNERS[a][d] != _CORNERS[b][d])


def _cube_faces() -> list:
    """The six faces of the cube, each as its four corners counter-clockwise seen from outside."""
    faces = []
    for axis in range(3):
        u, v = (axis + 1) % 3, (axis + 2) % 3  # (u, v, axis) is right-handed
        for side in (0, 1):
            ring = [(0, 0), (1, 0), (1, 1), (0, 1)]  # counter-clockwise seen from +axis
            if side == 0:
                ring.reverse()  # seen from -axis
            corners = []
            for cu, cv in ring:
                p = [0, 0, 0]
                p[axis], p[u], p[v] = side, cu, cv
                corners.append(_CORNERS.index(tuple(p)))
            faces.append(tuple(corners))
    return faces


def _edge_between(a: int, b: int) -> int:
    return next(e for e, pair in enumerate(_EDGES) if set(pair) == {a, b})


def _case_loops(case: int, faces: list) -> list:
    """The closed polygons (lists of edges) of one case.

    On each face, every maximal run of consecutive corners at or above the threshold (set bits
    of ``case``) is cut off by one segment; two such corners on a diagonal are separate runs.
    A segment runs from the edge after its run to the edge before it, which keeps the run on
    its left seen from outside: the chained loops then wind counter-clockwise seen from the
    set corners. Each crossing edge lies on two faces, so it starts one segment and ends one.
    """
    inside = [(case >> c) & 1 for c in range(8)]
    successor = {}
    for ring in faces:
        for s in range(4):
            if inside[ring[s]] and not inside[ring[s - 1]]:
                t = s
                while inside[ring[(t + 1) % 4]]:
                    t += 1
                after = _edge_between(ring[t % 4], ring[(t + 1) % 4])
                successor[after] = _edge_between(ring[s - 1], ring[s])
    loops, seen = [], set()
    for start in sorted(successor):
        if start in seen:
            continue
        loop = [start]
        while successor[loop[-1]] != start:
            loop.append(successor[loop[-1]])
        seen.update(loop)
        loops.append(loop)
    return loops


def _fan_apex(loop: list, faces: list) -> int:
    """Where to root a loop's triangle fan: the first vertex none of whose diagonals joins two
    edges of one cube face (the neighbouring cell could draw that diagonal too, and the mesh
    edge would then have four triangles). Every loop of the 256 cases has such a vertex."""

    def face_set(e):
        return {f for f, ring in enumerate(faces) if set(_EDGES[e]) <= set(ring)}

    n = len(loop)
    for apex in range(n):
        if all(not (face_set(loop[apex]) & face_set(loop[(apex + d) % n])) for d in range(2, n - 1)):
            return apex
    raise AssertionError(f"no clean fan for loop {loop}")  # unreachable for the cube


def _build_case_table() -> tuple:
    """``(case_to_tri_range, tri_local_indices)``: case ``c``'s triangles are the edge triples
    ``tri_local_indices[case_to_tri_range[c]:case_to_tri_range[c + 1]]``."""
    faces = _cube_faces()
    ranges, tris = [0], []
    for case in range(256):
        for loop in _case_loops(case, faces):
            apex = _fan_apex(loop, faces)
            ring = loop[apex:] + loop[:apex]
            for t in range(1, len(ring) - 1):
                tris.extend((ring[0], ring[t], ring[t + 1]))
        ranges.append(len(tris))
    return tuple(ranges), tuple(tris)


_CASE_TO_TRI_RANGE, _TRI_LOCAL_INDICES = _build_case_table()

# For the face kernel: edge e of a cell is the edge of node cell + offset along axis,
# as (offset x, offset y, offset z, axis).
_EDGE_NODE_AXIS = tuple(_CORNERS[a] + (_edge_axis(e),) for e, (a, _b) in enumerate(_EDGES))

# ---------------------------------------------------------------------------------------------
# Kernels
# ---------------------------------------------------------------------------------------------


@func
def _edge_end(i: int, j: int, k: int, axis: int):
    """The node one step from node (i, j, k) along +axis."""
    return i + where(axis == 0, 1, 0), j + where(axis == 1, 1, 0), k + where(axis == 2, 1, 0)


@func
def _edge_crossing(field: array3d(dtype=float32), threshold: float32, i: int, j: int, k: int, axis: int) -> int:
    """1 when the edge from node (i, j, k) along +axis exists and its ends lie on different
    sides of the threshold (one at or above, one below), else 0."""
    i1, j1, k1 = _edge_end(i, j, k, axis)
    if i1 >= field.shape[0] or j1 >= field.shape[1] or k1 >= field.shape[2]:
        return 0
    above0 = where(field[i, j, k] >= threshold, 1, 0)
    above1 = where(field[i1, j1, k1] >= threshold, 1, 0)
    return where(above0 != above1, 1, 0)


@func
def _edge_slot(field: array3d(dtype=float32), i: int, j: int, k: int, axis: int) -> int:
    """Position of the edge (node (i, j, k), axis) in the flat per-edge arrays."""
    return ((i * field.shape[1] + j) * field.shape[2] + k) * 3 + axis


@func
def _corner_bit(value: float32, threshold: float32, bit: int) -> int:
    return where(value >= threshold, bit, 0)


@func
def _cell_case(field: array3d(dtype=float32), threshold: float32, i: int, j: int, k: int) -> int:
    """Bit c set when corner c (``CUBE_CORNER_OFFSETS[c]`` from node (i, j, k)) is at or above."""
    return (
        _corner_bit(field[i, j, k], threshold, 1)
        + _corner_bit(field[i + 1, j, k], threshold, 2)
        + _corner_bit(field[i + 1, j + 1, k], threshold, 4)
        + _corner_bit(field[i, j + 1, k], threshold, 8)
        + _corner_bit(field[i, j, k + 1], threshold, 16)
        + _corner_bit(field[i + 1, j, k + 1], threshold, 32)
        + _corner_bit(field[i + 1, j + 1, k + 1], threshold, 64)
        + _corner_bit(field[i, j + 1, k + 1], threshold, 128)
    )


@func
def _cell_slot(field: array3d(dtype=float32), i: int, j: int, k: int) -> int:
    return (i * (field.shape[1] - 1) + j) * (field.shape[2] - 1) + k


@kernel
def _classify_nodes(
    field: array3d(dtype=float32),
    threshold: float32,
    case_to_tri_range: array(dtype=int32),
    edge_marks: array(dtype=int32),
    cell_cases: array(dtype=int32),
    tri_counts: array(dtype=int32),
):
    """Per node: whether each of its three edges crosses the threshold, and the case and
    triangle count of the cell it is the lowest corner of (if any)."""
    i, j, k = tid()
    edge = _edge_slot(field, i, j, k, 0)
    if i + 1 < field.shape[0] and j + 1 < field.shape[1] and k + 1 < field.shape[2]:
        case = _cell_case(field, threshold, i, j, k)
        cell = _cell_slot(field, i, j, k)
        cell_cases[cell] = case
        tri_counts[cell] = (case_to_tri_range[case + 1] - case_to_tri_range[case]) // 3
        # the node is corner 0; its edges end at corners 1 (x), 3 (y) and 4 (z)
        edge_marks[edge] = (case ^ (case >> 1)) & 1
        edge_marks[edge + 1] = (case ^ (case >> 3)) & 1
        edge_marks[edge + 2] = (case ^ (case >> 4)) & 1
    else:
        for axis in range(3):
            edge_marks[edge + axis] = _edge_crossing(field, threshold, i, j, k, axis)


@kernel
def _place_edge_vertices(
    field: array3d(dtype=float32),
    threshold: float32,
    lower: vec3,
    spacing: vec3,
    vert_end: array(dtype=int32),
    verts: array(dtype=vec3),
):
    """Vertex ``vert_end[edge] - 1`` (an inclusive count of crossing edges) of each crossing edge
    of a node, where the field, linear along the edge, reaches the threshold."""
    i, j, k = tid()
    f0 = field[i, j, k]
    p0 = lower + cw_mul(vec3(float32(i), float32(j), float32(k)), spacing)
    for axis in range(3):
        if _edge_crossing(field, threshold, i, j, k, axis) == 1:
            i1, j1, k1 = _edge_end(i, j, k, axis)
            f1 = field[i1, j1, k1]
            t = clamp((threshold - f0) / (f1 - f0), 0.0, 1.0)
            p1 = lower + cw_mul(vec3(float32(i1), float32(j1), float32(k1)), spacing)
            verts[vert_end[_edge_slot(field, i, j, k, axis)] - 1] = lerp(p0, p1, t)


@kernel
def _write_cell_triangles(
    field: array3d(dtype=float32),
    cell_cases: array(dtype=int32),
    case_to_tri_range: array(dtype=int32),
    tri_local_indices: array(dtype=int32),
    edge_node_axis: array(dtype=int32),
    vert_end: array(dtype=int32),
    tri_end: array(dtype=int32),
    indices: array(dtype=int32),
):
    """Each cell's triangles, at ``tri_end[cell]`` (an inclusive count) minus its own count."""
    i, j, k = tid()
    cell = _cell_slot(field, i, j, k)
    case = cell_cases[cell]
    first = case_to_tri_range[case]
    n = case_to_tri_range[case + 1] - first
    out = 3 * tri_end[cell] - n
    for s in range(n):
        e = tri_local_indices[first + s]
        edge = _edge_slot(
            field,
            i + edge_node_axis[4 * e],
            j + edge_node_axis[4 * e + 1],
            k + edge_node_axis[4 * e + 2],
            edge_node_axis[4 * e + 3],
        )
        indices[out + s] = vert_end[edge] - 1


# ---------------------------------------------------------------------------------------------
# Host side
# ---------------------------------------------------------------------------------------------

_EDGE_NODE_AXIS_FLAT = tuple(x for row in _EDGE_NODE_AXIS for x in row)


def _tables(device) -> tuple:
    """The case, triangle and edge tables as ``int32`` arrays on ``device``. Made per call (11 KB):
    a module-level cache would hold device memory until interpreter shutdown."""
    return tuple(
        array(t, dtype=int32, device=device) for t in (_CASE_TO_TRI_RANGE, _TRI_LOCAL_INDICES, _EDGE_NODE_AXIS_FLAT)
    )


def _inclusive_total(counts) -> int:
    """Turn ``counts`` into its inclusive prefix sum, in place; return the total."""
    array_scan(counts, counts, inclusive=True)
    return int(counts[-1:].numpy()[0])


def _validate_field(field) -> None:
    if len(field.shape) != 3:
        raise ValueError(f"Expected a 3D array for 'field', but got an array with shape {field.shape}.")
    if any(n < 2 for n in field.shape):
        raise ValueError(
            f"Expected 'field' to have at least 2 nodes on each axis, but got an array with shape {field.shape}."
        )
    if field.dtype is not float32:
        raise TypeError(f"Expected a dtype of wp.float32 for 'field', but got {field.dtype}.")


def _grid_frame(shape: tuple, lower, upper) -> tuple:
    """``(lower, spacing)``: node (i, j, k) lies at ``lower + (i, j, k) * spacing``. By default
    node (i, j, k) lies at (i, j, k): ``lower`` is the origin and ``upper`` the last node."""
    lower = np.zeros(3, np.float32) if lower is None else np.array([float(x) for x in lower], np.float32)
    upper = np.array(shape, np.float32) - 1 if upper is None else np.array([float(x) for x in upper], np.float32)
    # in float32, as the vertices are computed (and as Warp does: same bits)
    spacing = (upper - lower) / (np.array(shape, np.float32) - 1)
    return vec3(*lower.tolist()), vec3(*spacing.tolist())


def _extract(field, threshold: float, lower, upper) -> tuple:
    """``(verts, indices)`` of the level set ``threshold`` of ``field`` (see the module docstring)."""
    _validate_field(field)
    device = field.device
    nx, ny, nz = field.shape
    threshold = float(threshold)
    origin, spacing = _grid_frame(field.shape, lower, upper)
    case_to_tri_range, tri_local_indices, edge_node_axis = _tables(device)

    # classify edges and cells, then number the crossing edges (vertices) and the triangles
    nodes, cells = (nx, ny, nz), (nx - 1, ny - 1, nz - 1)
    vert_end = zeros(nx * ny * nz * 3, dtype=int32, device=device)
    cell_cases = zeros(cells[0] * cells[1] * cells[2], dtype=int32, device=device)
    tri_end = zeros(cells[0] * cells[1] * cells[2], dtype=int32, device=device)
    inputs = [field, threshold, case_to_tri_range, vert_end, cell_cases, tri_end]
    launch(_classify_nodes, nodes, inputs, device=device, record_tape=False)
    n_verts = _inclusive_total(vert_end)
    n_tris = _inclusive_total(tri_end)

    # vertices: the one launch a tape differentiates
    verts = empty(n_verts, dtype=vec3, device=device, requires_grad=field.requires_grad)
    if n_verts > 0:
        inputs = [field, threshold, origin, spacing, vert_end]
        launch(_place_edge_vertices, nodes, inputs, outputs=[verts], device=device)

    # triangles: integers, nothing to differentiate
    indices = empty(3 * n_tris, dtype=int32, device=device)
    if n_tris > 0:
        inputs = [field, cell_cases, case_to_tri_range, tri_local_indices, edge_node_axis, vert_end, tri_end, indices]
        launch(_write_cell_triangles, cells, inputs, device=device, record_tape=False)
    return verts, indices


# ---------------------------------------------------------------------------------------------
# Public API (warp.MarchingCubes, alias of warp.geometry.IsoSurfaceMarchingCubes in Warp 1.19)
# ---------------------------------------------------------------------------------------------

_UNSET = object()  # tells an argument left out from one passed as None


def _deprecated(message: str) -> None:
    warnings.warn(message, DeprecationWarning, stacklevel=3)


class IsoSurfaceMarchingCubes:
    """A reusable marching cubes context for fields of one grid size.

    Construct it with the grid's node counts, then call :meth:`surface` for each field; the
    mesh is left in :attr:`verts` and :attr:`indices`. :meth:`extract` does the same without
    a context. Gradients flow from :attr:`verts` back to a ``field`` with ``requires_grad``
    when the call is recorded on a ``wp.Tape`` (through the edge interpolation; which edges
    and triangles appear is discrete).

    Args:
        nx: Number of grid nodes along x (one more than the number of cells).
        ny: Number of grid nodes along y.
        nz: Number of grid nodes along z.
        lower: Position of node (0, 0, 0); ``None``: the origin.
        upper: Position of node (nx-1, ny-1, nz-1); ``None``: (nx-1, ny-1, nz-1), so that node
            (i, j, k) lies at (i, j, k).
        domain_bounds_lower_corner: Deprecated name of ``lower`` (keyword only).
        domain_bounds_upper_corner: Deprecated name of ``upper`` (keyword only).
        max_verts, max_tris, device: Accepted and ignored, with a ``DeprecationWarning``
            (keyword only; outputs are sized to fit and made on the field's device).

    Raises:
        TypeError: a bound given under both its names.

    Attributes:
        verts: ``wp.array`` of ``vec3``, the vertices (``None`` before :meth:`surface`).
        indices: flat ``wp.array`` of ``int32``, three vertex indices per triangle.
    """

    CUBE_CORNER_OFFSETS = _CORNERS
    """(x, y, z) offset of each of the cube's 8 corners from its cell's node; bit c of a case."""
    EDGE_TO_CORNERS = _EDGES
    """The two corners (indices into :attr:`CUBE_CORNER_OFFSETS`) of each of the 12 edges."""
    CASE_TO_TRI_RANGE = _CASE_TO_TRI_RANGE
    """257 offsets: case c's triangles are ``TRI_LOCAL_INDICES[CASE_TO_TRI_RANGE[c]:CASE_TO_TRI_RANGE[c+1]]``."""
    TRI_LOCAL_INDICES = _TRI_LOCAL_INDICES
    """Edge indices (0-11), three per triangle, of every case's triangles (2460 = 820 x 3)."""

    def __init__(
        self,
        nx: int,
        ny: int,
        nz: int,
        lower=None,
        upper=None,
        *,
        domain_bounds_lower_corner=_UNSET,
        domain_bounds_upper_corner=_UNSET,
        max_verts=_UNSET,
        max_tris=_UNSET,
        device=_UNSET,
    ):
        lower = _renamed_bound(lower, domain_bounds_lower_corner, "lower", "domain_bounds_lower_corner")
        upper = _renamed_bound(upper, domain_bounds_upper_corner, "upper", "domain_bounds_upper_corner")
        for name, value in (("max_verts", max_verts), ("max_tris", max_tris), ("device", device)):
            if value is not _UNSET:
                _deprecated(f"MarchingCubes() argument `{name}` is deprecated and ignored; outputs are sized to fit.")
        self.nx, self.ny, self.nz = nx, ny, nz
        self.lower = lower
        self.upper = upper
        self.verts = None
        self.indices = None

    @property
    def domain_bounds_lower_corner(self):
        """Deprecated name of :attr:`lower`."""
        _deprecated("MarchingCubes.domain_bounds_lower_corner is deprecated; use `lower`.")
        return self.lower

    @domain_bounds_lower_corner.setter
    def domain_bounds_lower_corner(self, value):
        _deprecated("MarchingCubes.domain_bounds_lower_corner is deprecated; use `lower`.")
        self.lower = value

    @property
    def domain_bounds_upper_corner(self):
        """Deprecated name of :attr:`upper`."""
        _deprecated("MarchingCubes.domain_bounds_upper_corner is deprecated; use `upper`.")
        return self.upper

    @domain_bounds_upper_corner.setter
    def domain_bounds_upper_corner(self, value):
        _deprecated("MarchingCubes.domain_bounds_upper_corner is deprecated; use `upper`.")
        self.upper = value

    def resize(self, nx: int, ny: int, nz: int) -> None:
        """Set the grid's node counts for the next :meth:`surface` call."""
        self.nx, self.ny, self.nz = nx, ny, nz

    def surface(self, field, threshold: float) -> None:
        """Extract the level set ``threshold`` of ``field`` into :attr:`verts` and :attr:`indices`.

        Args:
            field: ``float32`` array of shape ``(nx, ny, nz)``, the values at the grid's nodes.
            threshold: The field value on the surface.

        Raises:
            ValueError: ``field``'s shape is not ``(nx, ny, nz)`` (or has an axis under 2 nodes).
            TypeError: ``field`` is not ``float32``.
        """
        if tuple(field.shape) != (self.nx, self.ny, self.nz):
            raise ValueError(
                f"Field shape {field.shape} does not match context grid dimensions {(self.nx, self.ny, self.nz)}."
            )
        self.verts, self.indices = _extract(field, threshold, self.lower, self.upper)

    @classmethod
    def extract(cls, field, threshold: float = 0.0, *, lower=None, upper=None) -> tuple:
        """The level set ``threshold`` of ``field`` as a triangle mesh, without a context.

        Args:
            field: 3-D ``float32`` array of the values at the grid's nodes (2+ nodes per axis).
            threshold: The field value on the surface.
            lower: Position of node (0, 0, 0); ``None``: the origin.
            upper: Position of the last node; ``None``: its index triple.

        Returns:
            ``(verts, indices)``: a ``vec3`` array and a flat ``int32`` array, three vertex
            indices per triangle, counter-clockwise seen from the side at or above ``threshold``.

        Raises:
            ValueError: ``field`` is not 3-D, or has fewer than 2 nodes along an axis.
            TypeError: ``field`` is not ``float32``.
        """
        return _extract(field, threshold, lower, upper)

    @staticmethod
    def extract_surface_marching_cubes(
        field, threshold: float = 0.0, domain_bounds_lower_corner=None, domain_bounds_upper_corner=None
    ) -> tuple:
        """Deprecated name of :meth:`extract` (bounds by their old names, positional allowed)."""
        _deprecated("MarchingCubes.extract_surface_marching_cubes() is deprecated; use MarchingCubes.extract().")
        return _extract(field, threshold, domain_bounds_lower_corner, domain_bounds_upper_corner)


def _renamed_bound(value, old_value, name: str, old_name: str):
    """A bound given as ``name`` or (deprecated) ``old_name``, never both."""
    if old_value is _UNSET:
        return value
    _deprecated(f"MarchingCubes() argument `{old_name}` is deprecated; use `{name}`.")
    if old_value is None:
        return value
    if value is not None:
        raise TypeError(f"Cannot specify both `{name}` and `{old_name}`.")
    return old_value


MarchingCubes = IsoSurfaceMarchingCubes
