"""``wp.HashGrid``: points bucketed into the cells of a wrapping grid, queried from kernels by its
``id`` (``wp.hash_grid_query`` / ``wp.hash_grid_query_next``, ``wp.hash_grid_point_id``; see
``native/geometry/hashgrid.h`` for the layout and the hashing).

A build is a few launches on the grid's device, each multi-threaded like any launch:

1. clear the cell ranges the previous build wrote (one thread per old point: a build costs
   O(points), not O(cells));
2. one thread per point computes its physical cell (the same native function the queries use)
   and its index;
3. a stable radix sort orders (cell, index) pairs by cell; a grouped build sorts by group first,
   then stably by cell, and stores each position's 64-bit (cell, group) key;
4. one thread per sorted position marks where its cell's run starts and ends.

The sort runs on the host (weft's native radix sort; on a GPU the pairs make a round trip), so on
the CPU a build inside ``wp.ScopedCapture`` is recorded and rerun on replay, while on a GPU it
cannot be captured. The descriptor kernels read (``hash_grid_t``) lives in a device array whose
address is the id, rewritten in place by each build, so the id never changes.
"""

from __future__ import annotations

import ctypes
import operator
import typing

import numpy as np

from .. import types as wt
from .. import vector_types as vt
from ..array import array
from ..array_constructors import empty, zeros
from ..builtins.hash_grid import hash_grid_cell_of, hash_grid_point_key
from ..codegen.intrinsics import tid
from ..kernel import kernel
from ..runtime import cpu_capture, handles
from ..runtime.device import get_device
from ..runtime.launch import launch
from ..types import int32, uint64

_MAX_CELL_COUNT = (1 << 31) - 1
_SCALARS = {
    wt.float16: (np.float16, ctypes.c_uint16),
    wt.float32: (np.float32, ctypes.c_float),
    wt.float64: (np.float64, ctypes.c_double),
}


def _descriptor_type(dtype):
    """The ctypes mirror of ``weft::hash_grid_t<T>`` for the coordinate type ``dtype``."""
    scalar = _SCALARS[dtype][1]  # float16 as its bits
    fields = [(n, ctypes.c_uint64) for n in ("point_cells", "point_ids", "point_keys", "cell_starts", "cell_ends")]
    fields += [(n, ctypes.c_int32) for n in ("dim_x", "dim_y", "dim_z", "num_points", "has_groups", "scalar_bytes")]
    fields += [("cell_width", scalar), ("cell_width_inv", scalar)]
    return type(f"hash_grid_t_{dtype.__name__}", (ctypes.Structure,), {"_fields_": fields})


_DESCRIPTORS = {t: _descriptor_type(t) for t in _SCALARS}


# ------------------------------------------------------------------------------------ build kernels


@kernel(enable_backward=False)
def _clear_cells(cells: array(dtype=int32), starts: array(dtype=int32), ends: array(dtype=int32)):
    c = cells[tid()]
    starts[c] = 0
    ends[c] = 0


@kernel(enable_backward=False)
def _point_cells(grid: uint64, points: array(dtype=typing.Any), cells: array(dtype=int32), ids: array(dtype=int32)):
    i = tid()
    cells[i] = hash_grid_cell_of(grid, points[i])
    ids[i] = i


@kernel(enable_backward=False)
def _point_cells_grouped(
    grid: uint64,
    points: array(dtype=typing.Any),
    groups: array(dtype=int32),
    cells: array(dtype=int32),
    group_keys: array(dtype=int32),
    ids: array(dtype=int32),
):
    i = tid()
    cells[i] = hash_grid_cell_of(grid, points[i])
    group_keys[i] = groups[i]
    ids[i] = i


@kernel(enable_backward=False)
def _gather(values: array(dtype=int32), ids: array(dtype=int32), out: array(dtype=int32)):
    j = tid()
    out[j] = values[ids[j]]


@kernel(enable_backward=False)
def _point_keys(
    cells: array(dtype=int32), ids: array(dtype=int32), groups: array(dtype=int32), keys: array(dtype=uint64)
):
    j = tid()
    keys[j] = hash_grid_point_key(cells[j], groups[ids[j]])


@kernel(enable_backward=False)
def _cell_ranges(cells: array(dtype=int32), n: int32, starts: array(dtype=int32), ends: array(dtype=int32)):
    i = tid()
    c = cells[i]
    if i == 0 or cells[i - 1] != c:
        starts[c] = i
    if i == n - 1 or cells[i + 1] != c:
        ends[c] = i + 1


def _sort_pairs(keys, values, n: int):
    """Stable sort of the first ``n`` (key, value) int32 pairs by the keys' unsigned bits."""
    from ..runtime.module import runtime_sort_pairs32

    if keys.device.is_cpu:
        runtime_sort_pairs32(keys.ptr, values.ptr, n, 0, 0, 32)
        return
    k, v = keys[:n].numpy(), values[:n].numpy()
    runtime_sort_pairs32(k.ctypes.data, v.ctypes.data, n, 0, 0, 32)
    keys[:n].assign(k)
    values[:n].assign(v)


def _flat(a):
    """A 1-d array of the elements of ``a`` (itself, a view, or a contiguous copy)."""
    if a.ndim == 1:
        return a
    return a.contiguous().flatten()


# ------------------------------------------------------------------------------------ the grid


class HashGrid:
    """A hash grid over points for neighbour queries in kernels.

    Args:
        dim_x, dim_y, dim_z: cells along each axis; space wraps, so any point has a cell.
        device: the device of the grid (and of the points it is built from).
        dtype: coordinate type, ``wp.float32`` (default), ``wp.float16`` or ``wp.float64``; the
            points must be of the matching ``vec3`` type.

    Attributes:
        id: what kernels receive (a ``wp.uint64``); fixed for the grid's life.
        device, dtype: as given.
        reserved: whether point storage was allocated (by ``reserve`` or ``build``).
        groups: the group ids of the last build (None: ungrouped).

    Raises:
        TypeError: dimensions that are not integers, or an unsupported ``dtype``.
        RuntimeError: dimensions that are not positive, or more than 2^31 - 1 cells.
    """

    def __new__(cls, *args, **kwargs):
        instance = super().__new__(cls)
        instance.id = None  # a HashGrid never initialised (or released) has no id; __del__ then does nothing
        return instance

    def __init__(self, dim_x, dim_y, dim_z, device=None, dtype=None):
        dtype = wt.float32 if dtype is None or dtype is float else dtype
        if dtype not in _SCALARS:
            raise TypeError(f"Unsupported dtype {dtype} for HashGrid. Supported types: float16, float32, float64")
        self.dtype = dtype
        self._vec_type = vt.vector(3, dtype)
        self.device = get_device(device)
        try:
            dims = tuple(operator.index(d) for d in (dim_x, dim_y, dim_z))
        except TypeError as e:
            raise TypeError("HashGrid dimensions must be integers") from e
        if min(dims) <= 0:
            raise RuntimeError("Hash grid dimensions must be positive")
        cells = dims[0] * dims[1] * dims[2]
        if cells > _MAX_CELL_COUNT:
            raise RuntimeError(
                "Hash grid cell count exceeds supported limit: "
                f"{dims[0]} * {dims[1]} * {dims[2]} = {cells} > {_MAX_CELL_COUNT}"
            )
        self._dim_x, self._dim_y, self._dim_z = dims
        self.cell_starts = zeros(cells, dtype=int32, device=self.device)
        self.cell_ends = zeros(cells, dtype=int32, device=self.device)
        self.point_cells = self.point_ids = self.point_keys = None
        self._cells_scratch = self._groups_scratch = None
        self._num_points = 0  # points of the last build: their cells are the ranges to clear
        self._max_points = self._max_keys = 0
        self._desc = _DESCRIPTORS[dtype]()
        self._desc.dim_x, self._desc.dim_y, self._desc.dim_z = dims
        self._desc.scalar_bytes = np.dtype(_SCALARS[dtype][0]).itemsize
        self._desc.cell_starts, self._desc.cell_ends = self.cell_starts.ptr, self.cell_ends.ptr
        self._descriptor = zeros(ctypes.sizeof(self._desc), dtype=wt.uint8, device=self.device)
        self._write_descriptor()
        self.id = self._descriptor.ptr
        handles.register(self.id, "wp.HashGrid", self.device)
        self.reserved = False
        self.groups = None

    def __del__(self):
        """Release the device memory of the grid now (the id becomes invalid)."""
        if not getattr(self, "id", None):
            return
        handles.release(self.id)
        self.id = None
        for name in ("_descriptor", "cell_starts", "cell_ends", "point_cells", "point_ids", "point_keys"):
            self.__dict__.pop(name, None)

    # -------------------------------------------------------------------- public methods

    def build(self, points, radius, groups=None):
        """Bucket ``points`` into cells of width ``radius`` (call again whenever the points move).

        Args:
            points: array of the grid's ``vec3`` type (any shape and strides), on its device.
            radius: the cell width; queries are fastest with a radius close to it.
            groups: optional ``wp.int32`` array, one group id (any int32) per point: a query given
                a group then visits that group's points only.

        Raises:
            TypeError: points of another type. ValueError: ``radius <= 0``.
            RuntimeError: arrays on another device, or groups of another type or length.
        """
        if points.dtype != self._vec_type:
            raise TypeError(f"Hash grid points should have type {self._vec_type.__name__}, got {points.dtype}")
        if radius <= 0.0:
            raise ValueError(f"Hash grid cell width must be positive, got {radius}")
        if points.device != self.device:
            raise RuntimeError("points must live on the same device as this HashGrid")
        if groups is not None:
            if groups.dtype != int32:
                raise RuntimeError("groups should be an array of type wp.int32")
            if groups.device != self.device:
                raise RuntimeError("groups must live on the same device as this HashGrid")
            if groups.size != points.size:
                raise RuntimeError("groups must have the same length as points")

        def run():
            self._build(_flat(points), float(radius), None if groups is None else _flat(groups))

        self.groups = groups
        self.reserved = True
        if self.device.is_cpu and cpu_capture.defer(self.device, run):
            return  # recorded: runs (on the arrays' contents then) at each replay
        if self.device.is_capturing:
            raise RuntimeError(
                "HashGrid.build() cannot be captured into a CUDA graph in weft (its sort runs on the host)"
            )
        run()

    def reserve(self, num_points, with_groups=False):
        """Allocate point storage for builds of up to ``num_points`` points.

        Args:
            num_points: points the grid should accommodate without reallocating.
            with_groups: also allocate what grouped builds need.

        Raises:
            NotImplementedError: called while a CPU graph capture is active.
        """
        if self.device.is_cpu and cpu_capture.is_capturing(self.device):
            raise NotImplementedError(
                "HashGrid.reserve() cannot be called during CPU graph capture; reserve before capture"
            )
        self._reserve(int(num_points), bool(with_groups))
        self.reserved = True

    # -------------------------------------------------------------------- build steps

    def _reserve(self, n: int, with_groups: bool):
        dev = self.device
        if n > self._max_points:
            cap = n * 3 // 2
            self.point_cells = empty(cap, dtype=int32, device=dev)
            self.point_ids = empty(cap, dtype=int32, device=dev)
            self._cells_scratch = self._groups_scratch = None
            self._max_points = cap
        if with_groups and self._cells_scratch is None:
            self._cells_scratch = empty(self._max_points, dtype=int32, device=dev)
            self._groups_scratch = empty(self._max_points, dtype=int32, device=dev)
        if with_groups and n > self._max_keys:
            cap = max(n * 3 // 2, 1)
            self.point_keys = empty(cap, dtype=uint64, device=dev)
            self._max_keys = cap

    def _build(self, points, radius: float, groups):
        n = points.shape[0]
        dev, starts, ends = self.device, self.cell_starts, self.cell_ends
        if self._num_points:
            launch(_clear_cells, self._num_points, [self.point_cells, starts, ends], device=dev, record_tape=False)
            self._num_points = 0
        self._reserve(n, groups is not None)
        np_scalar = _SCALARS[self.dtype][0]
        width = np_scalar(radius)
        inv = np_scalar(1) / width
        d = self._desc
        if self.dtype is wt.float16:
            d.cell_width, d.cell_width_inv = int(width.view(np.uint16)), int(inv.view(np.uint16))
        else:
            d.cell_width, d.cell_width_inv = float(width), float(inv)
        d.point_cells, d.point_ids = self.point_cells.ptr, self.point_ids.ptr
        d.point_keys = self.point_keys.ptr if groups is not None and self.point_keys is not None else 0
        d.has_groups, d.num_points = int(groups is not None), n
        self._write_descriptor()
        if n == 0:
            return
        cells, ids = self.point_cells, self.point_ids
        if groups is None:
            launch(_point_cells, n, [self.id, points, cells, ids], device=dev, record_tape=False)
            _sort_pairs(cells, ids, n)
        else:
            unsorted, group_keys = self._cells_scratch, self._groups_scratch
            launch(
                _point_cells_grouped,
                n,
                [self.id, points, groups, unsorted, group_keys, ids],
                device=dev,
                record_tape=False,
            )
            _sort_pairs(group_keys, ids, n)  # by group (its bits, as the low half of the key), then stably by cell
            launch(_gather, n, [unsorted, ids, cells], device=dev, record_tape=False)
            _sort_pairs(cells, ids, n)
            launch(_point_keys, n, [cells, ids, groups, self.point_keys], device=dev, record_tape=False)
        launch(_cell_ranges, n, [cells, n, starts, ends], device=dev, record_tape=False)
        self._num_points = n

    def _write_descriptor(self):
        raw = ctypes.string_at(ctypes.addressof(self._desc), ctypes.sizeof(self._desc))
        if self.device.is_cpu:
            ctypes.memmove(self._descriptor.ptr, raw, len(raw))
        else:
            self._descriptor.assign(np.frombuffer(raw, dtype=np.uint8))
