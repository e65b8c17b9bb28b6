"""``wp.Volume``: sparse voxel volumes, NanoVDB grids held in one device buffer whose address is
the volume's ``id`` (kernels read and write it with ``wp.volume_*``; native/geometry/volume.h).

Grids are built on the host from the active tiles (8^3 voxel leaves) or voxels (index grids), in
NumPy (geometry/nanovdb.py), then copied to the volume's device; loading an ``.nvdb`` file copies
its grids as they are, and saving writes the buffer back. Topology queries (``get_tiles``,
``get_voxels``, counts, grid info) read the buffer's headers and leaves.

Rebuildable volumes reserve node capacity at allocation: ``rebuild`` lays the new topology out
in the same buffer (same size, same id), reporting overflows in a status array as Warp does.
"""

from __future__ import annotations

import ctypes
import math
import weakref
from typing import ClassVar, NamedTuple

import numpy as np

from .. import types as wt
from .. import vector_types as vt
from ..runtime import handles
from ..runtime.device import get_device
from ..type_queries import is_composite
from . import nanovdb as nv

_vec3 = vt.vector(3, wt.float32)
_mat33 = vt.matrix((3, 3), wt.float32)
_live: weakref.WeakValueDictionary = weakref.WeakValueDictionary()  # grid address -> Volume using it


def _array_cls():
    from ..array import array

    return array


def _to_device(host: np.ndarray, device):
    """A new uint8 array on ``device`` holding ``host``'s bytes (CPU: shares a writable copy)."""
    data = np.array(host, dtype=np.uint8, copy=True).reshape(-1)
    return _array_cls()(data, dtype=wt.uint8, device=device, copy=not device.is_cpu)


def _host_copy(arr) -> np.ndarray:
    """The bytes of a uint8 weft array as a NumPy array (a view on the CPU)."""
    return arr.numpy().reshape(-1).view(np.uint8)


class Volume:
    """A sparse volume: a NanoVDB grid (float, double, int32, int64, uint32, vec3f/d, vec4f/d
    values, or an index grid) on one device, sampled, looked up and written by kernels through
    its ``id``.

    Args:
        data: uint8 array holding one or more NanoVDB grids (no file header); None leaves the
            volume empty (the classmethods fill it).
        copy: copy ``data`` into the volume's own buffer (else alias it).

    Raises:
        RuntimeError: ``data`` holds no NanoVDB grid of a supported version.
    """

    CLOSEST: ClassVar[int] = 0
    """Sample the nearest voxel."""
    LINEAR: ClassVar[int] = 1
    """Sample with trilinear interpolation."""

    REBUILD_SUCCESS: ClassVar[int] = 0
    REBUILD_LEAF_CAPACITY_EXCEEDED: ClassVar[int] = 1 << 0
    REBUILD_LOWER_CAPACITY_EXCEEDED: ClassVar[int] = 1 << 1
    REBUILD_UPPER_CAPACITY_EXCEEDED: ClassVar[int] = 1 << 2
    REBUILD_VOXEL_CAPACITY_EXCEEDED: ClassVar[int] = 1 << 3
    REBUILD_INVALID_INPUT: ClassVar[int] = 1 << 4

    class RebuildInfo(NamedTuple):
        """Capacity reserved for rebuilds: input kind ("tiles", "voxels" or None), voxels, leaf,
        lower and upper nodes."""

        kind: str | None
        max_voxel_count: int
        max_leaf_node_count: int
        max_lower_node_count: int
        max_upper_node_count: int

    class ActiveStats(NamedTuple):
        """The current topology: indexable voxels, leaf, lower and upper nodes."""

        voxel_count: int
        leaf_node_count: int
        lower_node_count: int
        upper_node_count: int

    class GridInfo(NamedTuple):
        """Grid metadata: name, size in bytes, position in its buffer's sequence of grids, value
        type name (NanoVDB's), index-to-world translation and matrix."""

        name: str
        size_in_bytes: int
        grid_index: int
        grid_count: int
        type_str: str
        translation: object
        transform_matrix: object

    class FeatureArrayInfo(NamedTuple):
        """A blind data array stored with the grid: name, address, value size, count, type name."""

        name: str
        ptr: int
        value_size: int
        value_count: int
        type_str: str

    _nvdb_type_to_dtype: ClassVar[dict] = {
        "float": wt.float32,
        "double": wt.float64,
        "int16": wt.int16,
        "int32": wt.int32,
        "int64": wt.int64,
        "Vec3f": vt.vector(3, wt.float32),
        "Vec3d": vt.vector(3, wt.float64),
        "Half": wt.float16,
        "uint32": wt.uint32,
        "bool": wt.bool,
        "Vec4f": vt.vector(4, wt.float32),
        "Vec4d": vt.vector(4, wt.float64),
        "Vec3u8": vt.vector(3, wt.uint8),
        "Vec3u16": vt.vector(3, wt.uint16),
        "uint8": wt.uint8,
    }
    _nvdb_index_types = ("Index", "OnIndex", "IndexMask", "OnIndexMask")
    # value types volumes are allocated with (Warp's list)
    _supported_allocation_types = ("int32", "uint32", "int64", "float", "double", "Vec3f", "Vec3d", "Vec4f")

    def __new__(cls, *args, **kwargs):
        instance = super().__new__(cls)
        instance.id = None  # a Volume never initialised (or released) has no id; __del__ then does nothing
        return instance

    def __init__(self, data=None, copy: bool = True):
        self._rebuild_info = Volume.RebuildInfo(None, 0, 0, 0, 0)
        self._rebuild = None  # (layout, background bytes) of rebuildable volumes
        if data is None:
            return
        self.device = data.device
        head = _host_copy(data[: min(data.size, nv.GRID_SIZE + nv.TREE_SIZE)]) if data.size else np.zeros(0, np.uint8)
        try:
            nv.check_grid(head)
        except RuntimeError as e:
            raise RuntimeError(f"Failed to create volume from input array: {e}") from None
        self._attach(_to_device(_host_copy(data), self.device) if copy else data)

    def _attach(self, buffer):
        """Make ``buffer`` (a uint8 array on the volume's device) the volume's grid."""
        self._buffer = buffer
        self.id = buffer.ptr
        _live[self.id] = self
        handles.register(self.id, "wp.Volume", self.device)

    def __del__(self):
        """Release the volume's buffer now (the id becomes invalid)."""
        vid = getattr(self, "id", None)
        if not vid:
            return
        self.id = None
        if _live.get(vid) is self:
            del _live[vid]
            handles.release(vid)
        self.__dict__.pop("_buffer", None)

    # ----------------------------------------------------------------------- reading the buffer

    def _header(self) -> nv.GridHeader:
        if not self.id:
            raise RuntimeError("Invalid Volume")
        return nv.read_header(_host_copy(self._buffer[: nv.GRID_SIZE + nv.TREE_SIZE]))

    def _host(self) -> np.ndarray:
        """The volume's grid bytes on the host (a view on the CPU, a copy otherwise)."""
        return _host_copy(self._buffer)

    def array(self):
        """The volume's buffer as a uint8 array (all its grids; it aliases the volume's memory)."""
        return _array_cls()(ptr=self._buffer.ptr, dtype=wt.uint8, shape=self._buffer.size, device=self.device)

    # ----------------------------------------------------------------------- metadata

    def get_grid_info(self) -> Volume.GridInfo:
        """The grid's name, size, index and count in its sequence, value type and transform."""
        h = self._header()
        return Volume.GridInfo(
            h.name,
            h.grid_size,
            h.grid_index,
            h.grid_count,
            h.type_str,
            _vec3(*h.vecf.tolist()),
            _mat33(*h.matf.ravel().tolist()),
        )

    @property
    def dtype(self):
        """The weft type of the voxel values (None for index grids and types weft lacks)."""
        return Volume._nvdb_type_to_dtype.get(self._header().type_str)

    @property
    def is_index(self) -> bool:
        """Whether the grid stores indices (into external arrays) rather than values."""
        return self._header().type_str in Volume._nvdb_index_types

    @property
    def is_rebuildable(self) -> bool:
        """Whether the volume reserved capacity for ``rebuild``."""
        return self._rebuild_info.kind is not None

    def get_rebuild_info(self) -> Volume.RebuildInfo:
        """The rebuild input kind and reserved capacities (zeros and None when not rebuildable)."""
        return self._rebuild_info

    def get_voxel_size(self) -> tuple:
        """The world-space diagonal of a voxel, ``transform @ (1, 1, 1)``."""
        return tuple(float(np.float32(x)) for x in self._header().voxel_size)

    def _active_counts(self, h: nv.GridHeader):
        leaves = h.node_counts[0]
        voxels = h.voxel_count if h.type_str in ("OnIndex", "OnIndexMask") else leaves * 512
        return voxels, leaves

    def get_tile_count(self) -> int:
        """The number of tiles (leaves): reserved capacity for rebuildable volumes."""
        if self.is_rebuildable:
            return self._rebuild_info.max_leaf_node_count
        return self._header().node_counts[0]

    def get_voxel_count(self) -> int:
        """The number of indexable voxels (active ones of index grids, 512 per tile otherwise);
        reserved capacity for rebuildable volumes."""
        if self.is_rebuildable:
            return self._rebuild_info.max_voxel_count
        return self._active_counts(self._header())[0]

    def get_active_stats(self) -> Volume.ActiveStats:
        """The current topology's voxel, leaf, lower and upper node counts."""
        h = self._header()
        return Volume.ActiveStats(self._active_counts(h)[0], *h.node_counts)

    def _check_out(self, out, rows):
        from ..type_queries import type_scalar_type, type_size

        if out is None:
            from ..array_constructors import empty

            return empty(shape=(rows, 3), dtype=wt.int32, device=self.device)
        if out.device != self.device or out.shape[0] < rows:
            raise RuntimeError(f"'out' array must an array with at least {rows} rows on device {self.device}")
        vec_like = (out.ndim == 1 and type_size(out.dtype) == 3) or (
            out.ndim == 2 and out.shape[1] == 3 and type_size(out.dtype) == 1
        )
        if not (out.is_contiguous and type_scalar_type(out.dtype) is wt.int32 and vec_like):
            raise RuntimeError(
                "'out' must be a contiguous 1D array with type vec3i or a 2D array of type int32 with shape (N, 3) "
            )
        return out

    @staticmethod
    def _write_rows(out, rows: np.ndarray, at=None):
        host = np.array(out.numpy(), dtype=np.int32).reshape(-1, 3)
        if at is None:
            host[: len(rows)] = rows
        else:
            host[at] = rows
        out.assign(host.reshape(out.shape))

    def get_tiles(self, out=None):
        """The index-space origins of the tiles (leaves), in storage order.

        Args:
            out: optional contiguous ``vec3i`` array or ``(n, 3)`` int32 array on the volume's
                device with at least ``get_tile_count()`` rows.
        """
        if not self.id:
            raise RuntimeError("Invalid Volume")
        count = self.get_tile_count()
        out = self._check_out(out, count)
        buf = self._host()
        self._write_rows(out, nv.leaf_origins(buf, nv.read_header(buf), count=count))
        return out

    def get_voxels(self, out=None):
        """The index-space coordinates of the indexable voxels, each at its index (the value
        ``wp.volume_lookup_index`` gives).

        Args:
            out: optional array as for ``get_tiles``, with at least ``get_voxel_count()`` rows.
        """
        if not self.id:
            raise RuntimeError("Invalid Volume")
        count = self.get_voxel_count()
        out = self._check_out(out, count)
        buf = self._host()
        coords, index = nv.voxel_indices(buf, nv.read_header(buf))
        keep = (index >= 0) & (index < count)
        self._write_rows(out, coords[keep], index[keep])
        return out

    # ----------------------------------------------------------------------- blind data

    def get_feature_array_count(self) -> int:
        """The number of supplemental (blind) data arrays stored with the grid."""
        return self._header().blind_count

    def get_feature_array_info(self, feature_index: int) -> Volume.FeatureArrayInfo:
        """Name, address, value size, count and type name of a blind data array."""
        h = self._header()
        if not 0 <= feature_index < h.blind_count:
            raise RuntimeError("Invalid feature array")
        head = _host_copy(self._buffer[: h.blind_offset + h.blind_count * nv.BLIND_META_SIZE])
        name, offset, count, size, type_str = nv.blind_metadata(head, h)[feature_index]
        return Volume.FeatureArrayInfo(name, self._buffer.ptr + offset, size, count, type_str)

    def feature_array(self, feature_index: int, dtype=None):
        """A blind data array as a weft array (aliasing the grid), of ``dtype`` (default: from
        the metadata, bytes for unknown types)."""
        from ..type_queries import type_size_in_bytes
        from ..types import type_repr

        info = self.get_feature_array_info(feature_index)
        if dtype is None:
            dtype = Volume._nvdb_type_to_dtype.get(info.type_str, wt.uint8)
        count, size = info.value_count, info.value_size
        if type_size_in_bytes(dtype) == 1:
            count, size = count * size, 1
        elif size == 1 and count % type_size_in_bytes(dtype) == 0:
            size = type_size_in_bytes(dtype)
            count //= size
        if type_size_in_bytes(dtype) != size:
            raise RuntimeError(f"Cannot cast feature data of size {size} to array dtype {type_repr(dtype)}")
        return _array_cls()(ptr=info.ptr, dtype=dtype, shape=count, device=self.device)

    # ----------------------------------------------------------------------- files and aliasing

    @classmethod
    def load_from_nvdb(cls, file_or_buffer, device=None) -> Volume:
        """A volume holding the grids of an ``.nvdb`` file (a file object or its bytes; codecs
        none, zip, and blosc with the ``blosc`` module) or of a raw grid buffer.

        Raises:
            RuntimeError: not NanoVDB data, an unsupported version or codec.
        """
        try:
            data = file_or_buffer.read()
        except AttributeError:
            data = file_or_buffer
        grids = np.frombuffer(nv.read_file(data), dtype=np.uint8)
        nv.check_grid(grids)
        volume = cls(data=None)
        volume.device = get_device(device)
        volume._attach(_to_device(grids, volume.device))
        return volume

    def save_to_nvdb(self, path, codec: str = "none"):
        """Write the volume's grids to an ``.nvdb`` file.

        Args:
            path: file to write.
            codec: ``"none"``, ``"zip"`` or ``"blosc"`` (needs the ``blosc`` module).

        Raises:
            RuntimeError: an unknown codec, no blosc module, or a volume that is not the first
                grid of its buffer (``load_next_grid`` volumes).
        """
        return nv.write_file(path, self._host(), codec)

    @classmethod
    def load_from_address(cls, grid_ptr: int, buffer_size: int = 0, device=None) -> Volume:
        """A volume aliasing the grid at ``grid_ptr`` (no file header) of ``buffer_size`` bytes
        (0: that one grid's size) on ``device``.

        Raises:
            RuntimeError: a null address, or an address a live volume already uses.
        """
        if not grid_ptr:
            raise RuntimeError("Invalid grid buffer pointer")
        if grid_ptr in _live:
            raise RuntimeError("A Warp Volume has already been created for this grid, aliasing it is not possible.")
        device = get_device(device)
        array = _array_cls()
        if not buffer_size:
            head = array(ptr=grid_ptr, dtype=wt.uint8, shape=nv.GRID_SIZE + nv.TREE_SIZE, device=device)
            buffer_size = nv.read_header(_host_copy(head)).grid_size
        return cls(array(ptr=grid_ptr, dtype=wt.uint8, shape=buffer_size, device=device), copy=False)

    def load_next_grid(self) -> Volume | None:
        """A volume for the next grid of this volume's buffer (aliasing it), or None."""
        grid = self.get_grid_info()
        size = self._buffer.size
        if grid.grid_index + 1 >= grid.grid_count or size <= grid.size_in_bytes:
            return None
        nxt = Volume.load_from_address(self.id + grid.size_in_bytes, size - grid.size_in_bytes, self.device)
        nxt._previous_grid = self  # keeps the aliased buffer alive
        return nxt

    # ----------------------------------------------------------------------- allocation

    @staticmethod
    def _normalize_voxel_size(voxel_size) -> tuple:
        """``voxel_size`` as three positive finite floats.

        Raises:
            TypeError: not a number or a sequence. ValueError: not 3 long, or not positive and finite.
        """
        if isinstance(voxel_size, (int, float, np.floating, np.integer)) and not isinstance(voxel_size, bool):
            s = float(voxel_size)
            voxel_size = (s, s, s)
        elif isinstance(voxel_size, (list, tuple, np.ndarray, ctypes.Array)) or is_composite(voxel_size):
            voxel_size = tuple(float(v) for v in voxel_size)
            if len(voxel_size) != 3:
                raise ValueError(f"voxel_size must be a scalar or a 3-element sequence, got length {len(voxel_size)}")
        else:
            raise TypeError(
                f"voxel_size must be a numeric scalar or a sequence of 3 floats, got {type(voxel_size).__name__}"
            )
        if not all(math.isfinite(v) and v > 0.0 for v in voxel_size):
            raise ValueError(f"All voxel_size components must be finite and positive, got {voxel_size}")
        return voxel_size

    @staticmethod
    def _transform(voxel_size, transform):
        """The index-to-world matrix from ``voxel_size`` or ``transform`` (exactly one given)."""
        if transform is None:
            if voxel_size is None:
                raise ValueError("Either 'voxel_size' or 'transform' must be provided")
            return np.diag(Volume._normalize_voxel_size(voxel_size)).astype(np.float32)
        if voxel_size is not None:
            raise ValueError("Only one of 'voxel_size' or 'transform' must be provided")
        return np.array(transform, dtype=np.float32).reshape(3, 3)

    @classmethod
    def allocate(
        cls, min, max, voxel_size, bg_value=0.0, translation=(0.0, 0.0, 0.0), points_in_world_space=False, device=None
    ) -> Volume:
        """A volume whose tiles cover the voxels [min, max] (inclusive; world coordinates when
        ``points_in_world_space``), all values ``bg_value`` (which also sets the value type)."""
        voxel_size = cls._normalize_voxel_size(voxel_size)
        if points_in_world_space:
            vs = np.asarray(voxel_size, dtype=np.float32)
            min = np.around((np.array(min, dtype=np.float32) - translation) / vs)
            max = np.around((np.array(max, dtype=np.float32) - translation) / vs)
        lo, hi = np.array(min, dtype=np.int32) // 8, np.array(max, dtype=np.int32) // 8
        grid = np.stack(np.meshgrid(*[np.arange(a, b + 1) for a, b in zip(lo, hi)], indexing="ij"), -1)
        tiles = (grid.reshape(-1, 3) * 8).astype(np.int32)
        points = _array_cls()(tiles, dtype=wt.int32, device=get_device(device))
        return cls.allocate_by_tiles(points, voxel_size, bg_value, translation, device)

    @classmethod
    def load_from_numpy(cls, ndarray, min_world=(0.0, 0.0, 0.0), voxel_size=1.0, bg_value=0.0, device=None) -> Volume:
        """A volume holding a dense NumPy array (3-d scalars, or 4-d with 3 components when
        ``bg_value`` is a sequence); voxel (0, 0, 0) sits at ``min_world``."""
        from . import volume_build as vb

        voxel_size = cls._normalize_voxel_size(voxel_size)
        vector = hasattr(bg_value, "__len__")
        shape = [math.ceil(s / 8) * 8 for s in ndarray.shape[:3]]
        dtype = np.float32 if vector or not isinstance(bg_value, int) else np.int32
        padded = np.full((*shape, 3) if vector else shape, bg_value, dtype=dtype)
        padded[: ndarray.shape[0], : ndarray.shape[1], : ndarray.shape[2]] = ndarray
        hi = [min_world[d] + (shape[d] - 1) * voxel_size[d] for d in range(3)]
        volume = cls.allocate(min_world, hi, voxel_size, bg_value, min_world, True, device)
        vb.fill_dense(volume, padded)
        return volume

    @classmethod
    def allocate_by_tiles(
        cls,
        tile_points,
        voxel_size=None,
        bg_value=0.0,
        translation=(0.0, 0.0, 0.0),
        device=None,
        transform=None,
        rebuildable=False,
        max_tiles=None,
        max_lower_nodes=None,
        max_upper_nodes=None,
        status=None,
        point_mask=None,
    ) -> Volume:
        """A volume with an active tile (8^3 voxels, all ``bg_value``) for each point.

        Args:
            tile_points: contiguous ``vec3i`` / ``(n, 3)`` int32 index-space points or ``vec3f`` /
                ``(n, 3)`` float32 world-space points, any number per tile.
            voxel_size: scalar or 3 sizes (or give ``transform``, a 3x3 index-to-world matrix).
            bg_value: value outside the tiles and the value type (int32, uint32, int64, float32,
                float64, vec3f/d, vec4f; a Python sequence is a float vector); None: an index grid.
            translation: world position of voxel (0, 0, 0).
            device: where the volume lives.
            rebuildable, max_tiles, max_lower_nodes, max_upper_nodes: reserve node capacity for
                ``rebuild`` (any capacity given makes the volume rebuildable).
            status: one-element uint32 array receiving ``Volume.REBUILD_*`` flags.
            point_mask: int32 array, one entry per point; points with 0 are ignored.

        Raises:
            RuntimeError: points, mask or status of the wrong type or shape.
            TypeError: an unsupported ``bg_value`` type. ValueError: bad sizes or capacities.
        """
        from . import volume_build as vb

        return vb.allocate(
            cls,
            "tiles",
            tile_points,
            voxel_size,
            bg_value,
            translation,
            device,
            transform,
            rebuildable,
            (max_tiles, max_lower_nodes, max_upper_nodes),
            status,
            point_mask,
        )

    @classmethod
    def allocate_by_voxels(
        cls,
        voxel_points,
        voxel_size=None,
        translation=(0.0, 0.0, 0.0),
        device=None,
        transform=None,
        rebuildable=False,
        max_active_voxels=None,
        max_leaf_nodes=None,
        max_lower_nodes=None,
        max_upper_nodes=None,
        status=None,
        point_mask=None,
    ) -> Volume:
        """An index volume with an active voxel for each point (arguments as ``allocate_by_tiles``;
        ``max_active_voxels`` and ``max_leaf_nodes`` are the voxel capacities)."""
        from . import volume_build as vb

        caps = (max_active_voxels, max_leaf_nodes, max_lower_nodes, max_upper_nodes)
        return vb.allocate(
            cls,
            "voxels",
            voxel_points,
            voxel_size,
            None,
            translation,
            device,
            transform,
            rebuildable,
            caps,
            status,
            point_mask,
        )

    def rebuild(self, points, status=None, point_mask=None):
        """Lay out a new topology from ``points`` (tile or voxel points, as the volume was
        allocated) in the reserved capacity, keeping the transform, background and value type;
        every value becomes the background. Returns ``status``.

        Raises:
            RuntimeError: the volume is not rebuildable, or bad points, mask or status.
        """
        from . import volume_build as vb

        if self._rebuild_info.kind is None:
            raise RuntimeError("Volume is not rebuildable")
        return vb.rebuild(self, points, status, point_mask)
