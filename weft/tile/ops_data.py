"""The public tile data operations (TileOperation objects; lowered by codegen/tile_data_calls.py):
sorting, scans, scatter, indexed loads and stores, block stacks, random tiles, fused products.

Warp performs several of them in place (``tile_sort``, ``tile_axpy``, ``tile_scatter_*``,
``tile_stack_*``); weft lowers those to a pure call and rebinds the names passed in.
"""

from __future__ import annotations

from .ops import TileOperation


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


def _op(name, signature, doc, inout=()):
    return TileOperation(name, signature, doc, inout)


# ordering and scans
tile_sort = _op(
    "tile_sort",
    "keys, values",
    "sort the 1-D tiles `keys` and `values` in place by ascending key (stable); keys are "
    "float32, int32, uint32, int64 or uint64. Not differentiable.",
    inout=((0, "keys"), (1, "values")),
)
tile_scan_inclusive = _op(
    "tile_scan_inclusive", "a", "the inclusive prefix sums of the elements (row-major order) of a float32/int32/uint32 tile."
)
tile_scan_exclusive = _op(
    "tile_scan_exclusive", "a", "the exclusive prefix sums (first element 0) of the elements of a float32/int32/uint32 tile."
)
tile_scan_max_inclusive = _op(
    "tile_scan_max_inclusive", "a", "the running maximum of the elements of a float32/int32/uint32 tile."
)
tile_scan_min_inclusive = _op(
    "tile_scan_min_inclusive", "a", "the running minimum of the elements of a float32/int32/uint32 tile."
)
# per-thread writes into a tile
tile_scatter_add = _op(
    "tile_scatter_add",
    "a, i, [j, k, l,] value, has_value, atomic=True",
    "add `value` to the element of tile `a` at the indices (one per dimension) when `has_value`, in place.",
    inout=((0, "a"),),
)
tile_scatter_masked = _op(
    "tile_scatter_masked",
    "a, i, [j, k, l,] value, has_value",
    "write `value` to the element of tile `a` at the indices (one per dimension) when `has_value`, in place.",
    inout=((0, "a"),),
)
# indexed memory access
tile_load_indexed = _op(
    "tile_load_indexed",
    "a, indices, shape, offset=None, axis=0, storage='register'",
    "the tile of `shape` read from array `a` at `offset`, where the coordinates along `axis` are taken "
    "from the 1-D int tile `indices`; elements outside the array (an index of -1...) read as zero.",
)
tile_store_indexed = _op(
    "tile_store_indexed",
    "a, indices, t, offset=None, axis=0",
    "write tile `t` to array `a` at `offset`, its coordinates along `axis` mapped by the 1-D int tile "
    "`indices` (elements outside the array are skipped).",
)
tile_atomic_add_indexed = _op(
    "tile_atomic_add_indexed",
    "a, indices, t, offset=None, axis=0",
    "add tile `t` atomically into array `a` at `offset`, its coordinates along `axis` mapped by "
    "`indices`; returns the elements' previous values as a tile.",
)
# stacks
class _TileStackOperation(TileOperation):
    """``wp.tile_stack``: in a kernel a new empty stack; at Python scope the stack's type, for
    annotating a ``@wp.func`` parameter (``s: wp.tile_stack(capacity=64, dtype=int)``)."""

    def __call__(self, capacity, dtype):
        from ..scalar_types import resolve_array_dtype

        return TileStackType(resolve_array_dtype(dtype), capacity)


tile_stack = _TileStackOperation(
    "tile_stack", "capacity, dtype", "a new empty block stack holding up to `capacity` values of `dtype`."
)
tile_stack_push = _op(
    "tile_stack_push",
    "s, value, has_value",
    "push `value` on stack `s` when `has_value`; returns its slot, or -1 (nothing pushed, or the stack is full).",
    inout=((0, "s"),),
)
tile_stack_pop = _op(
    "tile_stack_pop",
    "s",
    "pop the top of stack `s`: returns `(value, slot)`, or `(dtype(), -1)` when the stack is empty.",
    inout=((0, "s"),),
)
tile_stack_clear = _op("tile_stack_clear", "s", "empty stack `s`.", inout=((0, "s"),))
tile_stack_count = _op("tile_stack_count", "s", "the number of values on stack `s`.")
# construction
tile_randi = _op(
    "tile_randi",
    "shape, rng, min=None, max=None, storage='register'",
    "a tile of random int32 values (in [min, max) when given) drawn from the state `rng` (which is not advanced).",
)
tile_randf = _op(
    "tile_randf",
    "shape, rng, min=None, max=None, storage='register'",
    "a tile of random float32 values in [0, 1) (or [min, max)) drawn from the state `rng` (which is not advanced).",
)
tile_from_thread = _op(
    "tile_from_thread",
    "shape, value, thread_idx, storage='register'",
    "a tile of `shape` filled with thread `thread_idx`'s `value` (a block is one thread in weft: its value).",
)
# fused products
tile_dot = _op(
    "tile_dot",
    "a, b",
    "the sum of the element-wise products of two tiles of one shape and dtype (dot products of vectors, "
    "Frobenius products of matrices) as a one-element tile of the scalar type.",
)
tile_axpy = _op(
    "tile_axpy",
    "alpha, src, dest",
    "`dest += alpha * src` in place (`alpha` of the tiles' scalar type).",
    inout=((2, "dest"),),
)

__all__ = [name for name, v in dict(globals()).items() if isinstance(v, TileOperation)]
