"""NanoVDB grids as bytes, for ``wp.Volume``: the node layouts, a grid builder, readers of a
grid's metadata, topology and blind data, and the ``.nvdb`` file container.

Contract: a grid is a little-endian byte buffer laid out as NanoVDB (ABI version 32) lays it out,
so kernels (``native/geometry/volume.h``) read grids built here and grids loaded from files alike,
and a saved grid loads in NanoVDB and in Warp. Written from the format's public description:

- the grid header (672 bytes: magic, version, name, the index-to-world map, bounds, voxel size,
  class, value type, blind metadata), then the tree header (64 bytes: where each level's nodes
  start, relative to the tree, and how many there are);
- the root: bounds, the number of tiles, the background value and statistics, then its tiles
  (key of a 4096^3 region, child offset relative to the root, state, value);
- upper internal nodes (32^3 entries of 128^3 voxels), lower internal nodes (16^3 entries of
  8^3 voxels) and leaves (8^3 values): bounds, active-value and child bit masks, statistics, then
  a table of values or child offsets (relative to the node itself);
- index grids (``OnIndex``) store no values: a leaf holds the index of its first active voxel and
  prefix sums of its mask's words, so voxel ``n`` of a leaf has index ``offset + rank(n)``.

Nodes of each level lie in one run, breadth first, children in the order of their parents'
tables, so a leaf's position in its run is its position in ``get_tiles()``.
"""

from __future__ import annotations

import dataclasses
import struct
import zlib

import numpy as np

MAGIC_GRID_OLD = 0x304244566F6E614E  # "NanoVDB0": grids and files of older versions
MAGIC_GRID = 0x314244566F6E614E  # "NanoVDB1": a grid
MAGIC_FILE = 0x324244566F6E614E  # "NanoVDB2": a file
VERSION = (32 << 21) | (8 << 10) | 0  # grids written here: ABI 32 (version 32.8.0, as Warp 1.19 writes)
FILE_VERSION = (32 << 21) | (3 << 10) | 3  # file headers: readable by NanoVDB 32.3 and later

GRID_SIZE, TREE_SIZE, BLIND_META_SIZE, FILE_META_SIZE = 672, 64, 288, 176
UPPER_VALUE_MASK, UPPER_CHILD_MASK, UPPER_BASE = 32, 32 + 4096, 32 + 2 * 4096
LOWER_VALUE_MASK, LOWER_CHILD_MASK, LOWER_BASE = 32, 32 + 512, 32 + 2 * 512
LEAF_VALUE_MASK, LEAF_BASE = 16, 80

CLASS_UNKNOWN, CLASS_FOG_VOLUME, CLASS_INDEX_GRID = 0, 2, 8
FLAG_HAS_BBOX, FLAG_BREADTH_FIRST = 1 << 1, 1 << 5


def _align(x: int, a: int) -> int:
    return (x + a - 1) // a * a


@dataclasses.dataclass(frozen=True)
class Layout:
    """Where things are in the nodes of a grid of one value type (byte offsets inside a node).

    ``value_size`` / ``value_align``: a stored value; ``stats_size``: the average and standard
    deviation fields; ``leaf_kind``: "values" (a dense table of 512 values), "index" (an offset and
    prefix sums; every voxel indexed) or "onindex" (active voxels indexed), "mask" suffixing the
    kinds whose leaves carry a second mask.
    """

    code: int
    name: str
    value_size: int
    value_align: int
    stats_size: int
    leaf_kind: str = "values"
    scalar: str = ""  # numpy scalar of a value's components ("" for index grids)
    components: int = 1

    @property
    def root_background(self):
        return _align(28, self.value_align)

    @property
    def root_size(self):
        return _align(self._stats_end(self.root_background + self.value_size), 32)

    @property
    def tile_value(self):
        return _align(20, self.value_align)

    @property
    def tile_size(self):
        return _align(self.tile_value + self.value_size, 32)

    @property
    def table_stride(self):
        return _align(max(self.value_size, 8), 8)

    @property
    def upper_table(self):
        return _align(self._stats_end(UPPER_BASE), 32)

    @property
    def upper_size(self):
        return self.upper_table + 32768 * self.table_stride

    @property
    def lower_table(self):
        return _align(self._stats_end(LOWER_BASE), 32)

    @property
    def lower_size(self):
        return self.lower_table + 4096 * self.table_stride

    @property
    def leaf_table(self):
        return LEAF_BASE if self.is_index else _align(self._stats_end(LEAF_BASE), 32)

    @property
    def leaf_size(self):
        if self.is_index:
            return 160 if self.leaf_kind.endswith("mask") else 96
        return self.leaf_table + 512 * self.value_size

    @property
    def is_index(self):
        return self.leaf_kind != "values"

    def _stats_end(self, start):
        """End of (minimum, maximum, average, standard deviation) stored from ``start``."""
        maximum = start + self.value_size
        average = _align(maximum + self.value_size, self.stats_size)
        return average + 2 * self.stats_size

    def value_dtype(self):
        """The numpy dtype of one stored value (index grids: uint64)."""
        if self.is_index:
            return np.dtype(np.uint64)
        s = np.dtype(self.scalar)
        return s if self.components == 1 else np.dtype((s, (self.components,)))


def _value(code, name, scalar, components=1, stats=None):
    size = np.dtype(scalar).itemsize
    stats = stats or (8 if size == 8 else 4)
    return Layout(code, name, size * components, size, stats, "values", scalar, components)


def _index(code, name, kind):
    return Layout(code, name, 8, 8, 8, kind)


LAYOUTS = {
    lay.code: lay
    for lay in (
        _value(1, "float", "f4"),
        _value(2, "double", "f8"),
        _value(3, "int16", "i2"),
        _value(4, "int32", "i4"),
        _value(5, "int64", "i8"),
        _value(6, "Vec3f", "f4", 3),
        _value(7, "Vec3d", "f8", 3),
        _value(9, "Half", "f2"),
        _value(10, "uint32", "u4"),
        _value(17, "Vec4f", "f4", 4),
        _value(18, "Vec4d", "f8", 4),
        _index(19, "Index", "index"),
        _index(20, "OnIndex", "onindex"),
        _index(21, "IndexMask", "index_mask"),
        _index(22, "OnIndexMask", "onindex_mask"),
        _value(24, "Vec3u8", "u1", 3),
        _value(25, "Vec3u16", "u2", 3),
        _value(26, "uint8", "u1"),
    )
}
LAYOUT_BY_NAME = {lay.name: lay for lay in LAYOUTS.values()}
# names of NanoVDB's other value types, for GridInfo.type_str of loaded grids weft cannot read
_OTHER_TYPE_NAMES = {0: "?", 8: "Mask", 11: "bool", 12: "RGBA8", 13: "Float4", 14: "Float8", 15: "Float16"}
_OTHER_TYPE_NAMES.update({16: "FloatN", 23: "PointIndex"})


def type_name(code: int) -> str:
    """NanoVDB's name of a value type code ("float", "Vec3f", "OnIndex"...)."""
    lay = LAYOUTS.get(code)
    return lay.name if lay else _OTHER_TYPE_NAMES.get(code, "?")


# ------------------------------------------------------------------------------------ coordinates


def root_keys(origins: np.ndarray) -> np.ndarray:
    """The root-table key of each coordinate's 4096^3 region (21 bits per axis, x highest)."""
    u = origins.astype(np.int64) & 0xFFFFFFFF
    return ((u[:, 0] >> 12) << 42) | ((u[:, 1] >> 12) << 21) | (u[:, 2] >> 12)


def upper_slot(c: np.ndarray) -> np.ndarray:
    """Entry of a coordinate's lower node in its upper node's table."""
    return (((c[:, 0] & 4095) >> 7) << 10) | (((c[:, 1] & 4095) >> 7) << 5) | ((c[:, 2] & 4095) >> 7)


def lower_slot(c: np.ndarray) -> np.ndarray:
    """Entry of a coordinate's leaf in its lower node's table."""
    return (((c[:, 0] & 127) >> 3) << 8) | (((c[:, 1] & 127) >> 3) << 4) | ((c[:, 2] & 127) >> 3)


LEAF_OFFSETS = np.stack(np.meshgrid(np.arange(8), np.arange(8), np.arange(8), indexing="ij"), -1).reshape(512, 3)
LEAF_OFFSETS = LEAF_OFFSETS.astype(np.int32)  # voxel n of a leaf sits at origin + LEAF_OFFSETS[n]


# ------------------------------------------------------------------------------------ building


@dataclasses.dataclass
class Capacity:
    """Node counts a grid's buffer reserves (rebuildable volumes); None: exactly what is built."""

    leaves: int
    lowers: int
    uppers: int


def _node_order(origins):
    """Sort leaves breadth first: by their upper node's origin (signed x, then y, then z: NanoVDB's
    coordinate order, so tiles and voxels come in the order Warp gives them), then upper-table
    slot, then lower-table slot."""
    up = origins & ~4095
    order = np.lexsort((lower_slot(origins), upper_slot(origins), up[:, 2], up[:, 1], up[:, 0]))
    return origins[order], order


def _group_starts(*cols):
    """Index of the first row of each run of equal rows of the given sorted columns."""
    n = len(cols[0])
    new = np.ones(n, dtype=bool)
    if n:
        new[1:] = np.any(np.stack([c[1:] != c[:-1] for c in cols]), axis=0)
    return np.flatnonzero(new)


def _strided(buf, offset, count, stride, dtype, inner=()):
    """A (count, *inner) view of ``buf`` of ``dtype`` elements, rows ``stride`` bytes apart."""
    dtype = np.dtype(dtype)
    inner_strides = tuple(int(np.prod(inner[k + 1 :], dtype=np.int64)) * dtype.itemsize for k in range(len(inner)))
    return np.ndarray((count, *inner), dtype=dtype, buffer=buf, offset=offset, strides=(stride, *inner_strides))


def _fill_values(buf, offset, count, stride, per_node, entry_stride, layout, background):
    """Write ``background`` into the ``per_node`` entries (``entry_stride`` bytes apart) of the
    tables of ``count`` nodes, ``stride`` bytes apart."""
    if count == 0:
        return
    raw = np.frombuffer(background[: layout.value_size], dtype=np.uint8)
    shape, strides = (count, per_node, layout.value_size), (stride, entry_stride, 1)
    np.ndarray(shape, dtype=np.uint8, buffer=buf, offset=offset, strides=strides)[...] = raw


class GridSpec:
    """What a grid is built from: its value layout, background (raw bytes), index-to-world map
    (3x3 matrix and translation), name and class."""

    def __init__(self, layout: Layout, background: bytes, matrix, translation, name: bytes = b""):
        self.layout = layout
        self.background = bytes(background) if background is not None else bytes(8)
        self.matrix = np.asarray(matrix, dtype=np.float64).reshape(3, 3)
        self.translation = np.asarray(translation, dtype=np.float64).reshape(3)
        self.name = name


def grid_bytes_needed(layout: Layout, cap: Capacity) -> int:
    """Size of a grid with room for ``cap`` nodes."""
    root = layout.root_size + cap.uppers * layout.tile_size
    nodes = cap.uppers * layout.upper_size + cap.lowers * layout.lower_size + cap.leaves * layout.leaf_size
    return _align(GRID_SIZE + TREE_SIZE + root + nodes, 32)


def build_grid(spec: GridSpec, origins: np.ndarray, masks: np.ndarray | None = None, capacity: Capacity | None = None):
    """A grid whose leaves have the given origins (multiples of 8, unique) and active masks
    ((n, 8) uint64, None: all active); every stored value is the background.

    Returns:
        (buffer, leaf order): the grid as a uint8 array and, for each stored leaf, the row of
        ``origins`` it came from.
    """
    lay = spec.layout
    origins = np.asarray(origins, dtype=np.int32).reshape(-1, 3)
    if masks is None:
        masks = np.full((len(origins), 8), np.uint64(0xFFFFFFFFFFFFFFFF), dtype=np.uint64)
    origins, order = _node_order(origins)
    masks = np.ascontiguousarray(masks[order], dtype=np.uint64)
    keys = root_keys(origins)
    up_starts = _group_starts(keys)
    lo_starts = _group_starts(keys, upper_slot(origins))
    n_leaf, n_lower, n_upper = len(origins), len(lo_starts), len(up_starts)
    cap = capacity or Capacity(n_leaf, n_lower, n_upper)
    size = grid_bytes_needed(lay, cap)
    buf = np.zeros(size, dtype=np.uint8)

    tree = GRID_SIZE
    root = tree + TREE_SIZE
    upper0 = root + lay.root_size + cap.uppers * lay.tile_size
    lower0 = upper0 + cap.uppers * lay.upper_size
    leaf0 = lower0 + cap.lowers * lay.lower_size
    upper_of_lower = np.searchsorted(up_starts, lo_starts, side="right") - 1
    lower_of_leaf = np.searchsorted(lo_starts, np.arange(n_leaf), side="right") - 1
    upper_of_leaf = upper_of_lower[lower_of_leaf] if n_leaf else lower_of_leaf

    bits = np.unpackbits(masks.view(np.uint8), axis=1, bitorder="little").astype(bool)
    counts = bits.sum(axis=1)
    leaf_lo, leaf_hi = _leaf_bounds(origins, bits)
    used = counts > 0

    _write_leaves(buf, lay, spec.background, leaf0, masks, leaf_lo, leaf_hi, counts)
    lower = _Level(lower0, lay.lower_size, lay.lower_table, LOWER_CHILD_MASK, 4096)
    _write_internal(
        buf,
        lay,
        spec.background,
        lower,
        n_lower,
        _bounds_of(leaf_lo, leaf_hi, used, lower_of_leaf, n_lower),
        lower_slot(origins),
        lower_of_leaf,
        leaf0,
        lay.leaf_size,
    )
    upper = _Level(upper0, lay.upper_size, lay.upper_table, UPPER_CHILD_MASK, 32768)
    _write_internal(
        buf,
        lay,
        spec.background,
        upper,
        n_upper,
        _bounds_of(leaf_lo, leaf_hi, used, upper_of_leaf, n_upper),
        upper_slot(origins[lo_starts]),
        upper_of_lower,
        lower0,
        lay.lower_size,
    )
    lo, hi = _bounds_of(leaf_lo, leaf_hi, used, np.zeros(n_leaf, np.int64), 1)
    _write_root(buf, lay, spec.background, root, keys[up_starts], upper0, lo[0], hi[0])
    voxels = int(counts.sum())
    index_count = voxels if lay.leaf_kind.startswith("on") else 512 * n_leaf
    struct.pack_into(
        "<QQQQIIIIIIQ",
        buf,
        tree,
        leaf0 - tree if n_leaf else 0,
        lower0 - tree if n_lower else 0,
        upper0 - tree if n_upper else 0,
        root - tree,
        n_leaf,
        n_lower,
        n_upper,
        n_leaf,
        n_lower,
        n_upper,
        voxels,
    )  # tile counts: as NanoVDB 32.6+
    _write_grid_header(buf, spec, size, (lo[0], hi[0]) if used.any() else None, 1 + index_count if lay.is_index else 0)
    return buf, order


@dataclasses.dataclass
class _Level:
    """Where the nodes of one internal level are and how they are shaped."""

    start: int
    size: int
    table: int
    child_mask: int
    entries: int


def _leaf_bounds(origins, bits):
    """Per leaf, the (min, max) coordinates of its active voxels (the origin when none is)."""
    n = len(origins)
    cube = bits.reshape(n, 8, 8, 8)
    lo = np.zeros((n, 3), dtype=np.int32)
    hi = np.zeros((n, 3), dtype=np.int32)
    for axis, others in enumerate(((2, 3), (1, 3), (1, 2))):
        occ = cube.any(axis=others)
        lo[:, axis] = np.argmax(occ, axis=1)
        hi[:, axis] = 7 - np.argmax(occ[:, ::-1], axis=1)
    none = ~bits.any(axis=1)
    hi[none] = 0
    return origins + lo, origins + hi


def _bounds_of(leaf_lo, leaf_hi, used, parent, n_parents):
    """(min, max) voxel bounds of the active voxels under each of ``n_parents`` nodes (zeros when
    a node has none)."""
    lo = np.full((n_parents, 3), np.iinfo(np.int32).max, dtype=np.int64)
    hi = np.full((n_parents, 3), np.iinfo(np.int32).min, dtype=np.int64)
    np.minimum.at(lo, parent[used], leaf_lo[used])
    np.maximum.at(hi, parent[used], leaf_hi[used])
    empty = lo[:, 0] > hi[:, 0]
    lo[empty], hi[empty] = 0, 0
    return lo.astype(np.int32), hi.astype(np.int32)


def _write_leaves(buf, lay, background, leaf0, masks, leaf_lo, leaf_hi, counts):
    n = len(masks)
    if n == 0:
        return
    size = lay.leaf_size
    _strided(buf, leaf0, n, size, np.int32, (3,))[...] = leaf_lo
    dif = _strided(buf, leaf0 + 12, n, size, np.uint8, (4,))
    dif[:, :3] = (leaf_hi - leaf_lo).astype(np.uint8)
    dif[:, 3] = 2  # leaf flag: has a bounding box
    _strided(buf, leaf0 + LEAF_VALUE_MASK, n, size, np.uint64, (8,))[...] = masks
    if not lay.is_index:
        _fill_values(buf, leaf0 + lay.leaf_table, n, size, 512, lay.value_size, lay, background)
        return
    onindex = lay.leaf_kind.startswith("on")
    per_leaf = counts if onindex else np.full(n, 512)
    first = 1 + np.concatenate([[0], np.cumsum(per_leaf)[:-1]]).astype(np.uint64)
    _strided(buf, leaf0 + lay.leaf_table, n, size, np.uint64)[...] = first
    if not onindex:
        return  # Index leaves index every voxel: no prefix sums
    words = np.unpackbits(masks.view(np.uint8), axis=1, bitorder="little").reshape(n, 8, 64).sum(axis=2)
    cum = np.cumsum(words, axis=1).astype(np.uint64)
    prefix = np.zeros(n, dtype=np.uint64)
    for w in range(1, 8):  # 9 bits per word: the active voxels before word w
        prefix |= cum[:, w - 1] << np.uint64(9 * (w - 1))
    _strided(buf, leaf0 + lay.leaf_table + 8, n, size, np.uint64)[...] = prefix
    if lay.leaf_kind.endswith("mask"):
        _strided(buf, leaf0 + 96, n, size, np.uint64, (8,))[...] = masks


def _write_internal(buf, lay, background, level: _Level, n, bounds, child_slots, parents, child0, child_size):
    """Write ``n`` internal nodes: bounds, child masks, child offsets (relative to the parent)
    and inactive background tiles everywhere else (their value masks stay clear)."""
    if n == 0:
        return
    lo, hi = bounds
    _strided(buf, level.start, n, level.size, np.int32, (3,))[...] = lo
    _strided(buf, level.start + 12, n, level.size, np.int32, (3,))[...] = hi
    _fill_values(buf, level.start + level.table, n, level.size, level.entries, lay.table_stride, lay, background)
    parents = np.asarray(parents, dtype=np.int64)
    slots = np.asarray(child_slots, dtype=np.int64)
    parent_at = level.start + parents * level.size
    entry = parent_at + level.table + slots * lay.table_stride  # 8-aligned: sizes and tables are
    buf.view(np.int64)[entry // 8] = child0 + np.arange(len(parents), dtype=np.int64) * child_size - parent_at
    masks = np.zeros((n, level.entries // 64), dtype=np.uint64)
    np.bitwise_or.at(masks, (parents, slots >> 6), np.uint64(1) << (slots & 63).astype(np.uint64))
    _strided(buf, level.start + level.child_mask, n, level.size, np.uint64, (level.entries // 64,))[...] = masks


def _write_root(buf, lay, background, root, keys, upper0, lo, hi):
    n_upper = len(keys)
    struct.pack_into("<6iI", buf, root, *[int(x) for x in lo], *[int(x) for x in hi], n_upper)
    value = np.frombuffer(background[: lay.value_size], dtype=np.uint8)
    bg = root + lay.root_background
    buf[bg : bg + lay.value_size] = value
    for t in range(n_upper):
        tile = root + lay.root_size + t * lay.tile_size
        struct.pack_into("<QqI", buf, tile, int(keys[t]), upper0 + t * lay.upper_size - root, 0)


def inverse3(m: np.ndarray) -> np.ndarray:
    """The inverse of a 3x3 matrix as the adjugate times 1 / det (in double; NanoVDB's rounding,
    so written maps match theirs bit for bit)."""
    m = np.asarray(m, dtype=np.float64)
    adj = np.array(
        [
            [
                m[1, 1] * m[2, 2] - m[1, 2] * m[2, 1],
                m[0, 2] * m[2, 1] - m[0, 1] * m[2, 2],
                m[0, 1] * m[1, 2] - m[0, 2] * m[1, 1],
            ],
            [
                m[1, 2] * m[2, 0] - m[1, 0] * m[2, 2],
                m[0, 0] * m[2, 2] - m[0, 2] * m[2, 0],
                m[0, 2] * m[1, 0] - m[0, 0] * m[1, 2],
            ],
            [
                m[1, 0] * m[2, 1] - m[1, 1] * m[2, 0],
                m[0, 1] * m[2, 0] - m[0, 0] * m[2, 1],
                m[0, 0] * m[1, 1] - m[0, 1] * m[1, 0],
            ],
        ]
    )
    det = m[0, 0] * adj[0, 0] + m[0, 1] * adj[1, 0] + m[0, 2] * adj[2, 0]
    return adj * (1.0 / det)


def _write_grid_header(buf, spec: GridSpec, size, bounds, index_count):
    lay = spec.layout
    m, t = spec.matrix, spec.translation
    inv = inverse3(m)
    struct.pack_into(
        "<QQIIIIQ", buf, 0, MAGIC_GRID, 0xFFFFFFFFFFFFFFFF, VERSION, FLAG_HAS_BBOX | FLAG_BREADTH_FIRST, 0, 1, size
    )
    name = spec.name[:255]
    buf[40 : 40 + len(name)] = np.frombuffer(name, dtype=np.uint8)
    struct.pack_into("<9f9f3ff9d9d3dd", buf, 296, *m.ravel(), *inv.ravel(), *t, 1.0, *m.ravel(), *inv.ravel(), *t, 1.0)
    wlo = whi = np.zeros(3)
    if bounds is not None:  # the world bounds of the index bounds' corners (voxels are unit cubes)
        lo, hi = np.asarray(bounds[0], np.float64), np.asarray(bounds[1], np.float64) + 1.0
        corners = np.array([[x, y, z] for x in (lo[0], hi[0]) for y in (lo[1], hi[1]) for z in (lo[2], hi[2])])
        world = corners @ m.T + t
        wlo, whi = world.min(axis=0), world.max(axis=0)
    voxel_size = m @ np.ones(3)
    cls = CLASS_INDEX_GRID if lay.is_index else CLASS_UNKNOWN
    # no blind data: its metadata would start at the grid's end
    struct.pack_into("<6d3dIIqIIQQ", buf, 560, *wlo, *whi, *voxel_size, cls, lay.code, size, 0, 0, index_count, 0)


# ------------------------------------------------------------------------------------ reading


@dataclasses.dataclass
class GridHeader:
    """The fields of a grid header and its tree header that volumes report."""

    magic: int
    version: int
    grid_index: int
    grid_count: int
    grid_size: int
    name: str
    matf: np.ndarray  # 3x3 float32, index to world
    vecf: np.ndarray  # translation
    voxel_size: tuple
    grid_class: int
    grid_type: int
    blind_offset: int
    blind_count: int
    leaf_offset: int  # from the grid's start
    node_counts: tuple  # (leaf, lower, upper)
    voxel_count: int

    @property
    def layout(self) -> Layout:
        return LAYOUTS.get(self.grid_type)

    @property
    def type_str(self) -> str:
        return type_name(self.grid_type)


def read_header(buf, offset: int = 0) -> GridHeader:
    """Parse the grid header (and tree header) at ``offset`` of a uint8 buffer."""
    b = bytes(buf[offset : offset + GRID_SIZE + TREE_SIZE])
    magic, _, version, _, gidx, gcount, gsize = struct.unpack_from("<QQIIIIQ", b, 0)
    name = b[40:296].split(b"\0", 1)[0].decode("ascii", errors="replace")
    mat = np.array(struct.unpack_from("<9f", b, 296), dtype=np.float32).reshape(3, 3)
    vec = np.array(struct.unpack_from("<3f", b, 296 + 72), dtype=np.float32)
    vsize = struct.unpack_from("<3d", b, 608)
    gclass, gtype, boff, bcount = struct.unpack_from("<IIqI", b, 632)
    leaf, _, _, _, nleaf, nlower, nupper, _, _, _, voxels = struct.unpack_from("<QQQQIIIIIIQ", b, GRID_SIZE)
    return GridHeader(
        magic,
        version,
        gidx,
        gcount,
        gsize,
        name,
        mat,
        vec,
        vsize,
        gclass,
        gtype,
        boff,
        bcount,
        GRID_SIZE + leaf,
        (nleaf, nlower, nupper),
        voxels,
    )


def check_grid(buf, offset: int = 0) -> GridHeader:
    """The header of a grid weft can read, or RuntimeError saying why not."""
    if len(buf) - offset < GRID_SIZE + TREE_SIZE:
        raise RuntimeError("NanoVDB signature not found on grid!")
    h = read_header(buf, offset)
    if h.magic not in (MAGIC_GRID, MAGIC_GRID_OLD):
        raise RuntimeError("NanoVDB signature not found on grid!")
    if h.version >> 21 != 32:
        raise RuntimeError("Unsupported NanoVDB version")
    return h


def leaf_origins(buf, h: GridHeader, offset: int = 0, count: int | None = None) -> np.ndarray:
    """The origin (multiple of 8) of each of the first ``count`` leaves, in storage order."""
    n = h.node_counts[0] if count is None else min(count, h.node_counts[0])
    lay = h.layout
    if n == 0 or lay is None:
        return np.zeros((0, 3), dtype=np.int32)
    mins = _strided(buf, offset + h.leaf_offset, n, lay.leaf_size, np.int32, (3,))
    return (mins & ~7).astype(np.int32)


def leaf_masks(buf, h: GridHeader, offset: int = 0, count: int | None = None) -> np.ndarray:
    n = h.node_counts[0] if count is None else min(count, h.node_counts[0])
    return np.array(_strided(buf, offset + h.leaf_offset + LEAF_VALUE_MASK, n, h.layout.leaf_size, np.uint64, (8,)))


def voxel_indices(buf, h: GridHeader, offset: int = 0):
    """(coordinates, index) of every indexable voxel: for index grids the voxels the grid gives
    an index (index - 1), for value grids every voxel of every leaf (leaf * 512 + n)."""
    lay = h.layout
    origins = leaf_origins(buf, h, offset)
    n = len(origins)
    coords = (origins[:, None, :] + LEAF_OFFSETS[None]).reshape(-1, 3)
    if not lay.is_index:
        return coords, np.arange(n * 512, dtype=np.int64)
    masks = leaf_masks(buf, h, offset)
    first = _strided(buf, offset + h.leaf_offset + lay.leaf_table, n, lay.leaf_size, np.uint64).astype(np.int64)
    if lay.leaf_kind.startswith("on"):
        bits = np.unpackbits(masks.view(np.uint8), axis=1, bitorder="little").astype(bool)
        rank = np.cumsum(bits, axis=1) - bits
        idx = (first[:, None] + rank).reshape(-1)
        keep = bits.reshape(-1)
        return coords[keep], idx[keep] - 1
    return coords, (first[:, None] + np.arange(512)[None]).reshape(-1) - 1


def blind_metadata(buf, h: GridHeader, offset: int = 0):
    """Each blind data entry: (name, absolute data offset, value count, value size, type name)."""
    out = []
    for k in range(h.blind_count):
        at = offset + h.blind_offset + k * BLIND_META_SIZE
        b = bytes(buf[at : at + BLIND_META_SIZE])
        data, count, vsize, _, _, dtype = struct.unpack_from("<qQIIII", b, 0)
        name = b[32:288].split(b"\0", 1)[0].decode("ascii", errors="replace")
        out.append((name, at + data, count, vsize, type_name(dtype)))
    return out


# ------------------------------------------------------------------------------------ files

CODECS = {"none": 0, "zip": 1, "blosc": 2}


def _blosc():
    try:
        import blosc
    except ImportError as err:
        raise RuntimeError(
            f"NanoVDB blosc compression needs the blosc Python module, which could not be imported: {err}"
        ) from err
    return blosc


def read_file(data: bytes) -> bytes:
    """The grids of the first segment of an ``.nvdb`` file (or a raw grid buffer), uncompressed
    and concatenated."""
    data = bytes(data)
    if len(data) < 16:
        raise RuntimeError("NanoVDB signature not found")
    magic, version, grid_count, codec = struct.unpack_from("<QIHH", data, 0)
    if magic == MAGIC_GRID and len(data) >= GRID_SIZE:
        return data  # a raw grid buffer (new-style grid magic), no file header
    if magic not in (MAGIC_GRID_OLD, MAGIC_FILE):
        raise RuntimeError("NanoVDB signature not found")
    if version >> 21 != 32:
        raise RuntimeError("Unsupported NanoVDB version")
    pos, sizes = 16, []
    for _ in range(grid_count):
        grid_size, file_size = struct.unpack_from("<QQ", data, pos)
        name_size = struct.unpack_from("<I", data, pos + 136)[0]
        sizes.append((grid_size, file_size))
        pos += FILE_META_SIZE + name_size
    out = bytearray()
    for grid_size, file_size in sizes:
        if codec == 0:
            chunk = data[pos : pos + grid_size]
            pos += grid_size
        else:
            n = struct.unpack_from("<Q", data, pos)[0]
            packed = data[pos + 8 : pos + 8 + n]
            pos += 8 + n
            if codec == 1:
                chunk = zlib.decompress(packed)
            elif codec == 2:
                chunk = _blosc().decompress(packed)
            else:
                raise RuntimeError(f"Unsupported codec code: {codec}")
        out += chunk
    if len(out) < GRID_SIZE or struct.unpack_from("<Q", out, 0)[0] not in (MAGIC_GRID, MAGIC_GRID_OLD):
        raise RuntimeError("NanoVDB signature not found on grid!")
    return bytes(out)


def write_file(path, data: np.ndarray, codec: str = "none"):
    """Write the grids of a buffer (grid 0 first, ``grid_count`` of them) as one ``.nvdb`` segment.

    Raises:
        RuntimeError: an unknown codec, a missing blosc module, or a buffer that starts at a
            grid other than the first of its sequence.
    """
    if codec not in CODECS:
        raise RuntimeError(f"Unsupported codec requested: {codec}")
    code = CODECS[codec]
    compress = {0: bytes, 1: zlib.compress, 2: lambda b: _blosc().compress(b)}[code]
    first = read_header(data, 0)
    if first.grid_index > 0:
        raise RuntimeError(
            "Saving of aliased Volumes is not supported. Use `save_to_nvdb` on the original volume, "
            "before any `load_next_grid` calls."
        )
    metas, blobs, pos = [], [], 0
    for _ in range(first.grid_count):
        h = read_header(data, pos)
        raw = bytes(data[pos : pos + h.grid_size])
        blob = compress(raw)
        name = bytes(data[pos + 40 : pos + 296]).split(b"\0", 1)[0] + b"\0"
        metas.append(_file_meta(data, pos, h, len(blob), code, name))
        blobs.append(blob if code == 0 else struct.pack("<Q", len(blob)) + blob)
        pos += h.grid_size
    with open(path, "wb") as f:
        f.write(struct.pack("<QIHH", MAGIC_GRID_OLD, FILE_VERSION, first.grid_count, code))
        f.writelines(metas)
        f.writelines(blobs)
    return path


def _file_meta(data, pos, h: GridHeader, file_size, code, name):
    b = bytes(data[pos + 560 : pos + 640])
    world = struct.unpack_from("<6d", b, 0)
    vsize = struct.unpack_from("<3d", b, 48)
    root = pos + GRID_SIZE + struct.unpack_from("<Q", bytes(data[pos + GRID_SIZE + 24 : pos + GRID_SIZE + 32]))[0]
    bbox = struct.unpack_from("<6i", bytes(data[root : root + 24]))
    head = struct.pack("<QQQQII", h.grid_size, file_size, 0, h.voxel_count, h.grid_type, h.grid_class)
    head += struct.pack("<6d6i3dI", *world, *bbox, *vsize, len(name))
    head += struct.pack("<4I3IHHI", *h.node_counts, 1, 0, 0, 0, code, 0, h.version)
    return head + name
