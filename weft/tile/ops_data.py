"""The public tile data operations (TileOperation objects; lowered by codegen/tile_data_calls.py):
sorting, scans, scatter, indexed loads and stores, block stacks, random tiles, fused products.

Warp performs several of them in place (``tile_sort``, ``tile_axpy``, ``tile_scatter_*``,
``tile_stack_*``); weft lowers those to a pure call and rebinds the names passed in.
"""

from __future__ import annotations

from .ops import _STORAGE, _SHAPE, TileOperation, _op


class TileStackType:
    """The type of a ``wp.tile_stack(capacity, dtype)`` value: a block's stack of at most
    ``capacity`` elements of ``dtype`` (interned: equal types are the same object)."""

    __slots__ = ("__weakref__", "capacity", "dtype")
    _interned: dict = {}
    is_tile_value = True  # passed to funcs by reference (kernel._tile_references)

    def __new__(cls, dtype, capacity: int):
        key = (dtype, int(capacity))
        t = cls._interned.get(key)
        if t is None:
            t = object.__new__(cls)
            t.dtype, t.capacity = key
            cls._interned[key] = t
        return t

    def __repr__(self):
        return f"tile_stack({getattr(self.dtype, '__name__', self.dtype)}, capacity={self.capacity})"


# ordering and scans
tile_sort = _op(
    "tile_sort",
    "keys, values",
    "sort the 1-D tiles `keys` and `values` in place by ascending key (stable); keys are "
    "float32, int32, uint32, int64 or uint64. Not differentiable.",
    inout=((0, "keys"), (1, "values")),
    args=("keys: a 1-D tile of keys (updated in place).",
          "values: a 1-D tile of ``keys``'s length, moved with its keys (updated in place)."),
    example="wp.tile_sort(keys, values)",
)
_SCAN = "a: a float32, int32 or uint32 tile, read in row-major order."
tile_scan_inclusive = _op(
    "tile_scan_inclusive", "a", "the inclusive prefix sums of the elements (row-major order) of a float32/int32/uint32 tile.",
    args=(_SCAN,), returns="A tile of ``a``'s shape whose element ``k`` is the sum of elements ``0..k``.",
    example="c = wp.tile_scan_inclusive(t)",
)
tile_scan_exclusive = _op(
    "tile_scan_exclusive", "a", "the exclusive prefix sums (first element 0) of the elements of a float32/int32/uint32 tile.",
    args=(_SCAN,), returns="A tile of ``a``'s shape whose element ``k`` is the sum of elements ``0..k-1``.",
    example="starts = wp.tile_scan_exclusive(counts)",
)
tile_scan_max_inclusive = _op(
    "tile_scan_max_inclusive", "a", "the running maximum of the elements of a float32/int32/uint32 tile.",
    args=(_SCAN,), returns="A tile of ``a``'s shape whose element ``k`` is the largest of elements ``0..k``.",
    example="m = wp.tile_scan_max_inclusive(t)",
)
tile_scan_min_inclusive = _op(
    "tile_scan_min_inclusive", "a", "the running minimum of the elements of a float32/int32/uint32 tile.",
    args=(_SCAN,), returns="A tile of ``a``'s shape whose element ``k`` is the smallest of elements ``0..k``.",
    example="m = wp.tile_scan_min_inclusive(t)",
)
# per-thread writes into a tile
_SCATTER = (
    "a: the tile written (updated in place).",
    "i: the element's index along ``a``'s first dimension.",
    "j, k, l: its indices along the next dimensions, one for each further dimension of ``a``.",
    "value: the value, of ``a``'s element type.",
    "has_value: a bool; nothing is written where it is False.",
)
tile_scatter_add = _op(
    "tile_scatter_add",
    "a, i, [j, k, l,] value, has_value, atomic=True",
    "add `value` to the element of tile `a` at the indices (one per dimension) when `has_value`, in place.",
    inout=((0, "a"),),
    args=_SCATTER + ("atomic: a constant bool, accepted for Warp compatibility; weft adds every value either way.",),
    example="wp.tile_scatter_add(hist, bin, 1, True)",
)
tile_scatter_masked = _op(
    "tile_scatter_masked",
    "a, i, [j, k, l,] value, has_value",
    "write `value` to the element of tile `a` at the indices (one per dimension) when `has_value`, in place.",
    inout=((0, "a"),),
    args=_SCATTER,
    example="wp.tile_scatter_masked(out, slot, x, slot >= 0)",
)
# indexed memory access
_INDEXED = (
    "a: the array, with as many dimensions as the tile.",
    "indices: a 1-D int tile mapping the tile's coordinates along ``axis`` to ``a``'s.",
)
_AXIS = "axis: the dimension whose coordinates ``indices`` maps (default 0)."
_OFFSET = "offset: the index in ``a`` of the tile's first element, one int per dimension (default all zero)."
tile_load_indexed = _op(
    "tile_load_indexed",
    "a, indices, shape, offset=None, axis=0, storage='register'",
    "the tile of `shape` read from array `a` at `offset`, where the coordinates along `axis` are taken "
    "from the 1-D int tile `indices`; elements outside the array (an index of -1...) read as zero.",
    args=_INDEXED + (_SHAPE, _OFFSET, _AXIS, _STORAGE),
    returns="A new tile of ``shape`` with ``a``'s element type.",
    example="rows = wp.tile_load_indexed(a, indices=idx, shape=(8, 4), axis=0)",
)
tile_store_indexed = _op(
    "tile_store_indexed",
    "a, indices, t, offset=None, axis=0",
    "write tile `t` to array `a` at `offset`, its coordinates along `axis` mapped by the 1-D int tile "
    "`indices` (elements outside the array are skipped).",
    args=_INDEXED + ("t: the tile to write.", _OFFSET, _AXIS),
    example="wp.tile_store_indexed(a, indices=idx, t=rows, axis=0)",
)
tile_atomic_add_indexed = _op(
    "tile_atomic_add_indexed",
    "a, indices, t, offset=None, axis=0",
    "add tile `t` atomically into array `a` at `offset`, its coordinates along `axis` mapped by "
    "`indices`; returns the elements' previous values as a tile.",
    args=_INDEXED + ("t: the tile to add.", _OFFSET, _AXIS),
    returns="A tile of ``t``'s shape holding the values of ``a``'s elements before the addition.",
    example="wp.tile_atomic_add_indexed(a, indices=idx, t=rows, axis=0)",
)
# stacks
class _TileStackOperation(TileOperation):
    """``wp.tile_stack``: in a kernel a new empty stack; at Python scope the stack's type, for
    annotating a ``@wp.func`` parameter (``s: wp.tile_stack(capacity=64, dtype=int)``)."""

    def __call__(self, capacity, dtype):
        from ..scalar_types import resolve_array_dtype

        return TileStackType(resolve_array_dtype(dtype), capacity)


tile_stack = _TileStackOperation(
    "tile_stack", "capacity, dtype", "a new empty block stack holding up to `capacity` values of `dtype`.",
    args=("capacity: the most values the stack holds, a constant int.", "dtype: the type of its values."),
    returns="In a kernel, a new empty stack; at Python scope, the stack's type (for annotations).",
    example="s = wp.tile_stack(capacity=64, dtype=int)",
)
_STACK = "s: a stack made by ``wp.tile_stack`` (updated in place)."
tile_stack_push = _op(
    "tile_stack_push",
    "s, value, has_value",
    "push `value` on stack `s` when `has_value`; returns its slot, or -1 (nothing pushed, or the stack is full).",
    inout=((0, "s"),),
    args=(_STACK, "value: the value pushed, of the stack's type.", "has_value: a bool; False pushes nothing."),
    returns="The slot the value went to, an int, or -1 when nothing was pushed.",
    example="slot = wp.tile_stack_push(s, i, d < radius)",
)
tile_stack_pop = _op(
    "tile_stack_pop",
    "s",
    "pop the top of stack `s`: returns `(value, slot)`, or `(dtype(), -1)` when the stack is empty.",
    inout=((0, "s"),),
    args=(_STACK,),
    returns="A tuple ``(value, slot)``; ``(dtype(), -1)`` when the stack was empty.",
    example="v, slot = wp.tile_stack_pop(s)",
)
tile_stack_clear = _op(
    "tile_stack_clear", "s", "empty stack `s`.", inout=((0, "s"),), args=(_STACK,), example="wp.tile_stack_clear(s)"
)
tile_stack_count = _op(
    "tile_stack_count", "s", "the number of values on stack `s`.",
    args=("s: a stack made by ``wp.tile_stack``.",), returns="The number of values on the stack, an int.",
    example="n = wp.tile_stack_count(s)",
)
# construction
_RNG = "rng: a random state (``wp.rand_init(seed)``); each element draws from it and its position, it is not advanced."
tile_randi = _op(
    "tile_randi",
    "shape, rng, min=None, max=None, storage='register'",
    "a tile of random int32 values (in [min, max) when given) drawn from the state `rng` (which is not advanced).",
    args=(_SHAPE, _RNG, "min: the smallest value (with ``max``).", "max: one past the largest value (with ``min``).",
          _STORAGE),
    returns="A new int32 tile of ``shape``.",
    example="r = wp.tile_randi(shape=16, rng=state, min=0, max=10)",
)
tile_randf = _op(
    "tile_randf",
    "shape, rng, min=None, max=None, storage='register'",
    "a tile of random float32 values in [0, 1) (or [min, max)) drawn from the state `rng` (which is not advanced).",
    args=(_SHAPE, _RNG, "min: the lower bound (default 0).", "max: the upper bound, excluded (default 1).", _STORAGE),
    returns="A new float32 tile of ``shape``.",
    example="r = wp.tile_randf(shape=(8, 8), rng=state)",
)
tile_from_thread = _op(
    "tile_from_thread",
    "shape, value, thread_idx, storage='register'",
    "a tile of `shape` filled with thread `thread_idx`'s `value` (a block is one thread in weft: its value).",
    args=(_SHAPE, "value: the value each thread offers.", "thread_idx: the thread of the block whose value is used.",
          _STORAGE),
    returns="A new tile of ``shape``, every element that thread's ``value``.",
    example="t = wp.tile_from_thread(shape=4, value=x, thread_idx=0)",
)
# fused products
tile_dot = _op(
    "tile_dot",
    "a, b",
    "the sum of the element-wise products of two tiles of one shape and dtype (dot products of vectors, "
    "Frobenius products of matrices) as a one-element tile of the scalar type.",
    args=("a: a tile.", "b: a tile of ``a``'s shape and element type."),
    returns="A one-element tile of the elements' scalar type.",
    example="d = wp.tile_dot(u, v)",
)
tile_axpy = _op(
    "tile_axpy",
    "alpha, src, dest",
    "`dest += alpha * src` in place (`alpha` of the tiles' scalar type).",
    inout=((2, "dest"),),
    args=("alpha: the factor, of the tiles' scalar type.", "src: the tile added.",
          "dest: a tile of ``src``'s shape and type (updated in place)."),
    example="wp.tile_axpy(0.5, grad, x)",
)

__all__ = [name for name, v in dict(globals()).items() if isinstance(v, TileOperation)]
