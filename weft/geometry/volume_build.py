"""Building ``wp.Volume`` grids from points: ``allocate_by_tiles`` / ``allocate_by_voxels`` (exact
or with reserved capacity), ``rebuild``, and filling a volume from a dense NumPy array.

Points arrive in index space (integers) or world space (floats, mapped by the inverse transform
in float32 and rounded to the nearest voxel, NanoVDB's ``floor(x + 0.5)``). Tiles keep the leaves
containing their points, all voxels active, values the background; voxel points make an index
grid (``OnIndex``) whose active voxels are the points. The grid itself is laid out by
``nanovdb.build_grid`` on the host and copied to the volume's device.
"""

from __future__ import annotations

import numpy as np

from .. import types as wt
from .. import vector_types as vt
from ..runtime.device import get_device
from ..type_queries import is_value, type_scalar_type, type_size, type_to_warp, types_equal
from . import nanovdb as nv

_ALL = np.uint64(0xFFFFFFFFFFFFFFFF)


def _points(points, name, device):
    """(n, 3) host copy of contiguous vec3i / vec3f / (n, 3) int32 / float32 points, and whether
    they are world-space."""
    from ..array import array

    ok = isinstance(points, array) and points.is_contiguous and type_scalar_type(points.dtype) in (wt.float32, wt.int32)
    ok = ok and (
        (points.ndim == 1 and type_size(points.dtype) == 3)
        or (points.ndim == 2 and points.shape[1] == 3 and type_size(points.dtype) == 1)
    )
    if not ok:
        raise RuntimeError(
            f"{name} must be contiguous and either a 1D Warp array of vec3f or vec3i or a 2D n-by-3 array of int32 or float32."
        )
    world = type_scalar_type(points.dtype) is wt.float32
    return np.array(points.numpy(), dtype=np.float32 if world else np.int32).reshape(-1, 3), world


def _mask(point_mask, count):
    from ..array import array

    if point_mask is None:
        return None
    if (
        not isinstance(point_mask, array)
        or point_mask.dtype != wt.int32
        or point_mask.ndim != 1
        or not point_mask.is_contiguous
    ):
        raise RuntimeError("point_mask must be a contiguous 1D Warp array with dtype int32")
    if point_mask.shape[0] < count:
        raise RuntimeError(f"point_mask must have at least {count} entries")
    return point_mask.numpy()[:count] != 0


def _status(status, device):
    from ..array import array

    if status is None:
        return None
    if not isinstance(status, array) or status.dtype != wt.uint32 or status.size < 1:
        raise RuntimeError("status must be a Warp array with dtype uint32 and at least one element")
    if status.device != device:
        raise RuntimeError(f"status must be on device {device}")
    return status


def _set_status(status, flags: int):
    if status is not None:
        status[0:1].assign(np.array([flags], dtype=np.uint32))


def _capacity(value, default, name) -> int:
    capacity = default if value is None else value
    try:
        capacity = int(capacity)
    except (TypeError, ValueError) as err:
        raise TypeError(f"{name} must be an integer") from err
    if capacity <= 0:
        raise ValueError(f"{name} must be positive, got {capacity}")
    if capacity >= 2**32:
        raise ValueError(f"{name} must fit in uint32, got {capacity}")
    return capacity


def index_coords(points: np.ndarray, world: bool, matrix, translation) -> np.ndarray:
    """Index-space voxel coordinates of points (world points: inverse map, then nearest voxel)."""
    if not world:
        return points.astype(np.int32)
    inv = nv.inverse3(matrix).astype(np.float32)  # the float inverse map a grid stores
    d = points - np.asarray(translation, np.float32)
    out = np.empty(d.shape, dtype=np.int32)
    for r in range(3):
        out[:, r] = np.floor(d[:, 0] * inv[r, 0] + d[:, 1] * inv[r, 1] + d[:, 2] * inv[r, 2] + np.float32(0.5))
    return out


def value_layout(volume_cls, bg_value, kind="tiles"):
    """The layout of a grid of ``bg_value``'s type and the background's bytes; None: an index
    grid, ``Index`` for tiles (every voxel of a leaf indexed), ``OnIndex`` for voxels (as Warp).

    Raises:
        TypeError: a type volumes cannot be allocated with.
    """
    if bg_value is None:
        return nv.LAYOUT_BY_NAME["Index" if kind == "tiles" else "OnIndex"], bytes(8)
    grid_type = type_to_warp(type(bg_value))
    if isinstance(bg_value, np.generic):
        grid_type = wt.dtype_from_numpy(bg_value.dtype)
    elif not is_value(bg_value) and hasattr(bg_value, "__len__") and len(bg_value) and is_value(bg_value[0]):
        grid_type = vt.vector(len(bg_value), wt.float32)  # plain sequences are float vectors, as in Warp
    names = volume_cls._supported_allocation_types
    name = next((n for n in names if types_equal(grid_type, volume_cls._nvdb_type_to_dtype[n])), None)
    if name is None:
        raise TypeError(
            f"Unsupported bg_value type for volume allocation {wt.type_repr(grid_type)}. "
            f"Supported volume types are {', '.join(names)}."
        )
    lay = nv.LAYOUT_BY_NAME[name]
    values = list(bg_value) if hasattr(bg_value, "__len__") else [getattr(bg_value, "value", bg_value)]
    return lay, np.array(values, dtype=lay.scalar).tobytes()


def unique_rows(rows: np.ndarray, return_inverse: bool = False):
    """``np.unique(rows, axis=0)`` for (n, 3) integer rows, fast: rows packed into one int64 key
    when their ranges fit in 63 bits (always for leaf origins of points a grid can index),
    lexicographic sorting otherwise. Rows come out sorted by x, then y, then z."""
    rows = np.asarray(rows, dtype=np.int64).reshape(-1, 3)
    if len(rows) == 0:
        return (rows.astype(np.int32), np.zeros(0, np.int64)) if return_inverse else rows.astype(np.int32)
    lo = rows.min(axis=0)
    span = rows.max(axis=0) - lo + 1
    bits = [int(s - 1).bit_length() for s in span]
    if sum(bits) <= 63:
        shifted = rows - lo
        key = (shifted[:, 0] << (bits[1] + bits[2])) | (shifted[:, 1] << bits[2]) | shifted[:, 2]
        keys, first, inverse = np.unique(key, return_index=True, return_inverse=True)
        out = rows[first].astype(np.int32)
    else:
        order = np.lexsort((rows[:, 2], rows[:, 1], rows[:, 0]))
        s = rows[order]
        new = np.ones(len(s), dtype=bool)
        new[1:] = np.any(s[1:] != s[:-1], axis=1)
        out = s[new].astype(np.int32)
        inverse = np.empty(len(rows), dtype=np.int64)
        inverse[order] = np.cumsum(new) - 1
    return (out, inverse.reshape(-1)) if return_inverse else out


def _topology(kind, coords):
    """Leaf origins and masks of tile points (whole leaves) or voxel points (one bit each)."""
    origins = coords & ~7
    if kind == "tiles":
        return unique_rows(origins), None
    leaves, which = unique_rows(origins, return_inverse=True)
    local = (coords - origins).astype(np.int64)
    n = (local[:, 0] << 6) | (local[:, 1] << 3) | local[:, 2]
    masks = np.zeros((len(leaves), 8), dtype=np.uint64)
    np.bitwise_or.at(masks, (which, n >> 6), np.uint64(1) << (n & 63).astype(np.uint64))
    return leaves, masks


def _node_counts(origins):
    keys = nv.root_keys(origins)
    lowers = len(unique_rows(origins & ~127))
    return len(origins), lowers, len(np.unique(keys))


def _overflow(kind, origins, masks, cap: nv.Capacity, max_voxels):
    """The ``REBUILD_*`` flags of a topology that does not fit ``cap``."""
    from .volume import Volume

    leaves, lowers, uppers = _node_counts(origins)
    voxels = int(np.unpackbits(masks.view(np.uint8)).sum()) if masks is not None else 512 * leaves
    flags = Volume.REBUILD_LEAF_CAPACITY_EXCEEDED if leaves > cap.leaves else 0
    flags |= Volume.REBUILD_LOWER_CAPACITY_EXCEEDED if lowers > cap.lowers else 0
    flags |= Volume.REBUILD_UPPER_CAPACITY_EXCEEDED if uppers > cap.uppers else 0
    flags |= Volume.REBUILD_VOXEL_CAPACITY_EXCEEDED if voxels > max_voxels else 0
    return flags


def _layout_grid(kind, spec, points, world, mask, cap=None, max_voxels=None):
    """(grid bytes, status flags): the topology of the points (empty when it overflows ``cap``)."""
    coords = index_coords(points, world, spec.matrix, spec.translation)
    if mask is not None:
        coords = coords[mask]
    origins, masks = _topology(kind, coords)
    flags = 0
    if cap is not None:
        flags = _overflow(kind, origins, masks, cap, max_voxels)
        if flags:
            origins, masks = origins[:0], None if masks is None else masks[:0]
    return nv.build_grid(spec, origins, masks, cap)[0], flags


def allocate(cls, kind, points, voxel_size, bg_value, translation, device, transform, rebuildable, caps, status, mask):
    """``Volume.allocate_by_tiles`` (kind "tiles") and ``allocate_by_voxels`` (kind "voxels")."""
    device = get_device(device)
    name = "tile_points" if kind == "tiles" else "voxel_points"
    host, world = _points(points, name, device)
    matrix = cls._transform(voxel_size, transform)
    lay, background = value_layout(cls, bg_value, kind)
    spec = nv.GridSpec(lay, background, matrix, np.asarray(translation, dtype=np.float32))
    rebuildable = bool(rebuildable) or any(c is not None for c in caps)
    mask = _mask(point_mask=mask, count=len(host))
    status = _status(status, device) if rebuildable else None
    cap = max_voxels = None
    if rebuildable:
        if kind == "tiles":
            leaves = _capacity(caps[0], len(host), "max_tiles")
            max_voxels = leaves * 512
        else:
            max_voxels = _capacity(caps[0], len(host), "max_active_voxels")
            leaves = _capacity(caps[1], max_voxels, "max_leaf_nodes")
            caps = caps[1:]
        lowers = _capacity(caps[1], leaves, "max_lower_nodes")
        cap = nv.Capacity(leaves, lowers, _capacity(caps[2], lowers, "max_upper_nodes"))
    grid, flags = _layout_grid(kind, spec, host, world, mask, cap, max_voxels)
    volume = cls(data=None)
    volume.device = device
    volume._attach(_to_device(grid, device))
    if rebuildable:
        volume._rebuild_info = cls.RebuildInfo(kind, max_voxels, cap.leaves, cap.lowers, cap.uppers)
        volume._rebuild = (lay, background)
        _set_status(status, flags)
    return volume


def _to_device(grid, device):
    from .volume import _to_device as to_dev

    return to_dev(grid, device)


def rebuild(volume, points, status, mask):
    """``Volume.rebuild``: the new topology in the same buffer (flags in ``status``)."""
    info = volume._rebuild_info
    name = "tile_points" if info.kind == "tiles" else "voxel_points"
    host, world = _points(points, name, volume.device)
    status = _status(status, volume.device)
    mask = _mask(point_mask=mask, count=len(host))
    h = volume._header()
    lay, background = volume._rebuild
    spec = nv.GridSpec(lay, background, h.matf.astype(np.float64), h.vecf.astype(np.float64), h.name.encode())
    cap = nv.Capacity(info.max_leaf_node_count, info.max_lower_node_count, info.max_upper_node_count)
    grid, flags = _layout_grid(info.kind, spec, host, world, mask, cap, info.max_voxel_count)
    volume._buffer.assign(grid)
    _set_status(status, flags)
    return status


def fill_dense(volume, values: np.ndarray):
    """Set the values of a tile volume whose voxels (i, j, k) cover ``values[i, j, k]`` (shape a
    multiple of 8 per axis, index origin 0)."""
    buf = np.array(volume._host(), copy=True)
    h = nv.read_header(buf)
    lay = h.layout
    origins = nv.leaf_origins(buf, h)
    n = len(origins)
    idx = origins[:, None, :] + nv.LEAF_OFFSETS[None]
    dense = values[idx[..., 0], idx[..., 1], idx[..., 2]].astype(lay.scalar)
    view = np.ndarray(
        (n, 512 * lay.components),
        dtype=np.dtype(lay.scalar),
        buffer=buf,
        offset=h.leaf_offset + lay.leaf_table,
        strides=(lay.leaf_size, np.dtype(lay.scalar).itemsize),
    )
    view[...] = dense.reshape(n, -1)
    volume._buffer.assign(buf)
