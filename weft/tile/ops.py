"""The public tile operations, with Warp's names and signatures.

Each is an object callable only inside kernels and funcs: the frontend lowers its calls
(``codegen/tile_calls.py``) to the C++ of ``native/tile/``. Called from Python they raise.
"""

from __future__ import annotations


class TileOperation:
    """A tile operation usable in kernels (``wp.tile_load``...): lowered where it is called."""

    def __init__(self, name: str, signature: str, doc: str, inout: tuple = ()):
        self.inout = tuple(k for k, _ in inout)  # the tiles it updates in place, by position
        self.inout_names = tuple(n for _, n in inout)  # and by keyword
        self.__name__ = name
        self.__qualname__ = name
        self.signature = signature
        self.__doc__ = f"``wp.{name}({signature})``: {doc}"

    def __call__(self, *args, **kwargs):
        raise RuntimeError(f"wp.{self.__name__}() can only be called inside kernels and funcs")

    def __repr__(self):
        return f"<tile operation wp.{self.__name__}>"


def _op(name, signature, doc, inout=()):
    return TileOperation(name, signature, doc, inout)


# construction
tile_zeros = _op("tile_zeros", "shape, dtype=float, storage='register'", "a tile of zeros.")
tile_ones = _op("tile_ones", "shape, dtype=float, storage='register'", "a tile of ones.")
tile_full = _op("tile_full", "shape, value, dtype=None, storage='register'", "a tile with every element `value`.")
tile_empty = _op(
    "tile_empty", "shape, dtype=float, storage='register'", "a tile whose elements are to be written (zeroed by weft)."
)
tile_arange = _op(
    "tile_arange", "*args, dtype=int, storage='register'", "a 1-D tile of `start, start+step, ...` below `stop` (NumPy's arange)."
)
# memory
tile_load = _op(
    "tile_load",
    "a, shape, offset=(0, ...), storage='register', bounds_check=True, aligned=False",
    "the tile of `shape` read from array `a` at `offset`; elements outside the array read as zero.",
)
tile_store = _op(
    "tile_store", "a, t, offset=(0, ...), bounds_check=True", "write tile `t` to array `a` at `offset` (elements outside the array are skipped)."
)
tile_atomic_add = _op(
    "tile_atomic_add",
    "a, t, offset=(0, ...), bounds_check=True",
    "add tile `t` into array `a` at `offset` atomically; returns the elements' previous values as a tile.",
)
# threads
untile = _op("untile", "t", "this thread's value of a tile made by `wp.tile(x)`.")
block_dim = _op("block_dim", "", "the number of threads in a block (1: weft runs each block on one thread).")
# element-wise
tile_map = _op(
    "tile_map", "op, a, *args", "`op` (a builtin or user func) applied to the elements of tiles of one shape; a new tile."
)
tile_astype = _op("tile_astype", "t, dtype", "the tile with its elements converted to `dtype`.")
# reductions
tile_sum = _op("tile_sum", "a, axis=None", "the sum of the elements as a one-element tile (or along `axis`).")
tile_min = _op("tile_min", "a", "the smallest element as a one-element tile.")
tile_max = _op("tile_max", "a", "the largest element as a one-element tile.")
tile_argmin = _op("tile_argmin", "a", "the linear index of the (first) smallest element as a one-element int tile.")
tile_argmax = _op("tile_argmax", "a", "the linear index of the (first) largest element as a one-element int tile.")
tile_reduce = _op("tile_reduce", "op, a", "`op` folded over the elements in order, as a one-element tile.")
# shapes
tile_transpose = _op("tile_transpose", "a", "the transpose of a 2-D tile.")
tile_broadcast = _op("tile_broadcast", "a, shape", "the tile broadcast to `shape` (NumPy's rules).")
tile_reshape = _op("tile_reshape", "t, shape", "the elements in another shape of the same size (one dimension may be -1).")
tile_squeeze = _op("tile_squeeze", "t, axis=None", "the tile without its dimensions of size 1 (or only `axis`).")
tile_view = _op(
    "tile_view",
    "t, offset, shape=None",
    "the part of `t` at `offset` (indices of its first dimensions) of `shape` (default: the rest of its dimensions).",
)
tile_assign = _op(
    "tile_assign", "dst, src, offset", "write tile `src` into tile `dst` at `offset` (in place).", inout=((0, "dst"),)
)
tile_extract = _op("tile_extract", "a, *indices", "one element of a tile (also written `a[i, j]`).")
# products
tile_matmul = _op(
    "tile_matmul",
    "a, b, out=None, alpha=1.0, beta=1.0",
    "the product `a @ b` of 2-D tiles; with `out`, `out = alpha * a @ b + beta * out` in place.",
    inout=((2, "out"),),
)

__all__ = [name for name, v in dict(globals()).items() if isinstance(v, TileOperation)]
