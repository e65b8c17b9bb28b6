"""The public tile operations, with Warp's names and signatures.

Each is an object callable only inside kernels and funcs: the frontend lowers its calls
(``codegen/tile_calls.py``) to the C++ of ``native/tile/``. Called from Python they raise.
"""

from __future__ import annotations


class TileOperation:
    """A tile operation usable in kernels (``wp.tile_load``...): lowered where it is called.

    Args:
        name: the public name (``tile_load``).
        signature: the parameters as written in a call, for the docstring's first line and the reference.
        doc: what the operation gives or does, one sentence.
        inout: ``(position, keyword)`` pairs of the tiles it updates in place.
        args: the parameters' descriptions, ``"name: text"`` each (the docstring's ``Args:``).
        returns: what a call evaluates to (the docstring's ``Returns:``), None for an in-place operation.
        example: one line of kernel code that calls it (shown as literal code, not run).
    """

    def __init__(self, name: str, signature: str, doc: str, inout: tuple = (), args=(), returns=None, example=None):
        self.inout = tuple(k for k, _ in inout)  # the tiles it updates in place, by position
        self.inout_names = tuple(n for _, n in inout)  # and by keyword
        self.__name__ = name
        self.__qualname__ = name
        self.signature = signature
        self.__doc__ = _docstring(name, signature, doc, args, returns, example)

    def __call__(self, *args, **kwargs):
        raise RuntimeError(f"wp.{self.__name__}() can only be called inside kernels and funcs")

    def __repr__(self):
        return f"<tile operation wp.{self.__name__}>"


def _docstring(name, signature, doc, args, returns, example) -> str:
    """A Google-style docstring: the call and its one-sentence summary, then Args / Returns / Example."""
    parts = [f"``wp.{name}({signature})``: {doc}"]
    if args:
        parts.append("Args:\n" + "\n".join(f"    {a}" for a in args))
    if returns:
        parts.append(f"Returns:\n    {returns}")
    if example:
        parts.append(f"Example::\n\n    {example}")
    return "\n\n".join(parts)


def _op(name, signature, doc, inout=(), args=(), returns=None, example=None):
    return TileOperation(name, signature, doc, inout, args, returns, example)


_STORAGE = "storage: ``'register'`` or ``'shared'``; accepted for Warp compatibility (weft places tiles itself)."
_SHAPE = "shape: the tile's shape, an int or a tuple of ints known when the kernel is built."
_DTYPE = "dtype: the element type: a scalar, vector or matrix type (``float`` is float32)."


# construction
tile_zeros = _op(
    "tile_zeros", "shape, dtype=float, storage='register'", "a tile of zeros.",
    args=(_SHAPE, _DTYPE, _STORAGE), returns="A new tile of ``shape`` and ``dtype``, every element zero.",
    example="t = wp.tile_zeros(shape=(16, 16), dtype=wp.float32)",
)
tile_ones = _op(
    "tile_ones", "shape, dtype=float, storage='register'", "a tile of ones.",
    args=(_SHAPE, _DTYPE, _STORAGE), returns="A new tile of ``shape`` and ``dtype``, every element one.",
    example="t = wp.tile_ones(shape=8, dtype=int)",
)
tile_full = _op(
    "tile_full", "shape, value, dtype=None, storage='register'", "a tile with every element `value`.",
    args=(_SHAPE, "value: the value of every element.", "dtype: the element type (default: the type of ``value``).",
          _STORAGE),
    returns="A new tile of ``shape`` filled with ``value``.",
    example="t = wp.tile_full(shape=(4, 4), value=2.5, dtype=float)",
)
tile_empty = _op(
    "tile_empty", "shape, dtype=float, storage='register'", "a tile whose elements are to be written (zeroed by weft).",
    args=(_SHAPE, _DTYPE, _STORAGE), returns="A new tile of ``shape`` and ``dtype`` (weft zeroes it).",
    example="t = wp.tile_empty(shape=(16, 16), dtype=float)",
)
tile_arange = _op(
    "tile_arange", "*args, dtype=int, storage='register'",
    "a 1-D tile of `start, start+step, ...` below `stop` (NumPy's arange).",
    args=("*args: ``stop``, ``start, stop`` or ``start, stop, step`` (``start`` defaults to 0, ``step`` to 1), "
          "constants known when the kernel is built; also accepted as keywords.",
          "dtype: the element type (default int32).", _STORAGE),
    returns="A 1-D tile of ``ceil((stop - start) / step)`` elements. Not differentiable.",
    example="t = wp.tile_arange(0, 32, 2, dtype=float)",
)
# memory
tile_load = _op(
    "tile_load",
    "a, shape, offset=(0, ...), storage='register', bounds_check=True, aligned=False",
    "the tile of `shape` read from array `a` at `offset`; elements outside the array read as zero.",
    args=("a: the array to read, with as many dimensions as ``shape``.", _SHAPE,
          "offset: the index of the tile's first element in ``a``, one int per dimension (default all zero).",
          _STORAGE,
          "bounds_check: accepted for Warp compatibility; weft always reads elements outside ``a`` as zero.",
          "aligned: accepted for Warp compatibility; it changes nothing in weft."),
    returns="A new tile of ``shape`` with ``a``'s element type.",
    example="t = wp.tile_load(a, shape=(16, 16), offset=(i * 16, j * 16))",
)
tile_store = _op(
    "tile_store", "a, t, offset=(0, ...), bounds_check=True",
    "write tile `t` to array `a` at `offset` (elements outside the array are skipped).",
    args=("a: the array written, with as many dimensions as ``t``; a scalar tile is converted to its "
          "element type.",
          "t: the tile to write.",
          "offset: the index in ``a`` of the tile's first element, one int per dimension (default all zero).",
          "bounds_check: accepted for Warp compatibility; weft always skips elements outside ``a``."),
    example="wp.tile_store(out, t, offset=(i * 16, 0))",
)
tile_atomic_add = _op(
    "tile_atomic_add",
    "a, t, offset=(0, ...), bounds_check=True",
    "add tile `t` into array `a` at `offset` atomically; returns the elements' previous values as a tile.",
    args=("a: the array added into (an element type atomics support), with as many dimensions as ``t``.",
          "t: the tile to add.",
          "offset: the index in ``a`` of the tile's first element, one int per dimension (default all zero).",
          "bounds_check: accepted for Warp compatibility; weft always skips elements outside ``a``."),
    returns="A tile of ``t``'s shape holding the values of ``a``'s elements before the addition.",
    example="wp.tile_atomic_add(total, wp.tile_sum(t))",
)
# threads
untile = _op(
    "untile", "t", "this thread's value of a tile made by `wp.tile(x)`.",
    args=("t: a tile made by ``wp.tile(x)`` (one element per thread of the block).",),
    returns="This thread's element of ``t``, of ``t``'s element type.",
    example="x = wp.untile(wp.tile_map(wp.sin, wp.tile(v)))",
)
block_dim = _op(
    "block_dim", "", "the number of threads in a block (1: weft runs each block on one thread).",
    returns="The number of threads of the block, an int (1 wherever a block runs on one thread).",
    example="n = wp.block_dim()",
)
# element-wise
tile_map = _op(
    "tile_map", "op, a, *args", "`op` (a builtin or user func) applied to the elements of tiles of one shape; a new tile.",
    args=("op: a kernel builtin or ``@wp.func`` taking one element of each tile.",
          "a: the first tile.",
          "*args: more tiles of ``a``'s shape, one per further parameter of ``op``."),
    returns="A new tile of ``a``'s shape holding ``op``'s results; its element type is ``op``'s return type.",
    example="c = wp.tile_map(wp.add, a, b)",
)
tile_astype = _op(
    "tile_astype", "t, dtype", "the tile with its elements converted to `dtype`.",
    args=("t: the tile to convert.", "dtype: the new element type."),
    returns="A new tile of ``t``'s shape with elements of ``dtype``.",
    example="f = wp.tile_astype(counts, wp.float32)",
)
# reductions
_REDUCED = "a: the tile to reduce."
tile_sum = _op(
    "tile_sum", "a, axis=None", "the sum of the elements as a one-element tile (or along `axis`).",
    args=(_REDUCED, "axis: the dimension summed over (a constant); None sums every element."),
    returns="A one-element tile of ``a``'s element type, or with ``axis`` a tile without that dimension.",
    example="s = wp.tile_sum(t)",
)
tile_min = _op(
    "tile_min", "a", "the smallest element as a one-element tile.",
    args=(_REDUCED,), returns="A one-element tile of ``a``'s element type.", example="m = wp.tile_min(t)",
)
tile_max = _op(
    "tile_max", "a", "the largest element as a one-element tile.",
    args=(_REDUCED,), returns="A one-element tile of ``a``'s element type.", example="m = wp.tile_max(t)",
)
tile_argmin = _op(
    "tile_argmin", "a", "the linear index of the (first) smallest element as a one-element int tile.",
    args=(_REDUCED,), returns="A one-element int32 tile: the row-major index of the smallest element.",
    example="k = wp.tile_argmin(t)[0]",
)
tile_argmax = _op(
    "tile_argmax", "a", "the linear index of the (first) largest element as a one-element int tile.",
    args=(_REDUCED,), returns="A one-element int32 tile: the row-major index of the largest element.",
    example="k = wp.tile_argmax(t)[0]",
)
tile_reduce = _op(
    "tile_reduce", "op, a", "`op` folded over the elements in order, as a one-element tile.",
    args=("op: a binary kernel builtin or ``@wp.func`` (``wp.mul``, ``wp.max``...) taking and returning the "
          "element type.", _REDUCED),
    returns="A one-element tile of ``a``'s element type.",
    example="p = wp.tile_reduce(wp.mul, t)",
)
# shapes
tile_transpose = _op(
    "tile_transpose", "a", "the transpose of a 2-D tile.",
    args=("a: a 2-D tile.",), returns="A tile of shape ``(a.shape[1], a.shape[0])``.",
    example="at = wp.tile_transpose(a)",
)
tile_broadcast = _op(
    "tile_broadcast", "a, shape", "the tile broadcast to `shape` (NumPy's rules).",
    args=("a: the tile to broadcast.", "shape: the new shape; ``a``'s dimensions must be 1 or equal to its own."),
    returns="A tile of ``shape`` repeating ``a``'s elements.",
    example="row = wp.tile_broadcast(bias, shape=(16, 8))",
)
tile_reshape = _op(
    "tile_reshape", "t, shape", "the elements in another shape of the same size (one dimension may be -1).",
    args=("t: the tile to reshape.", "shape: the new shape, of ``t``'s size; one dimension may be -1 (inferred)."),
    returns="A tile of ``shape`` holding ``t``'s elements in row-major order.",
    example="flat = wp.tile_reshape(t, shape=-1)",
)
tile_squeeze = _op(
    "tile_squeeze", "t, axis=None", "the tile without its dimensions of size 1 (or only `axis`).",
    args=("t: the tile to squeeze.", "axis: a dimension (or tuple of them) of size 1 to drop; None drops all."),
    returns="A tile with ``t``'s elements and fewer dimensions.",
    example="v = wp.tile_squeeze(t)",
)
tile_view = _op(
    "tile_view",
    "t, offset, shape=None",
    "the part of `t` at `offset` (indices of its first dimensions) of `shape` (default: the rest of its dimensions).",
    args=("t: the tile viewed.", "offset: indices into ``t``'s first dimensions, a tuple of ints.",
          "shape: the view's shape (default: ``t``'s dimensions after those ``offset`` indexes)."),
    returns="A tile of ``shape`` holding that part of ``t``.",
    example="row = wp.tile_view(t, offset=(i,))",
)
tile_assign = _op(
    "tile_assign", "dst, src, offset", "write tile `src` into tile `dst` at `offset` (in place).", inout=((0, "dst"),),
    args=("dst: the tile written (updated in place).", "src: the tile copied, with as many dimensions as ``dst``.",
          "offset: the index in ``dst`` of ``src``'s first element, one int per dimension."),
    example="wp.tile_assign(big, small, offset=(0, 8))",
)
tile_extract = _op(
    "tile_extract", "a, *indices", "one element of a tile (also written `a[i, j]`).",
    args=("a: the tile read.", "*indices: one int index per dimension of ``a``."),
    returns="The element, of ``a``'s element type.",
    example="x = wp.tile_extract(t, i, j)",
)
# products
tile_matmul = _op(
    "tile_matmul",
    "a, b, out=None, alpha=1.0, beta=1.0",
    "the product `a @ b` of 2-D tiles; with `out`, `out = alpha * a @ b + beta * out` in place.",
    inout=((2, "out"),),
    args=("a: a 2-D tile of shape ``(M, K)``.", "b: a 2-D tile of shape ``(K, N)`` and ``a``'s element type.",
          "out: a tile of shape ``(M, N)`` updated in place; None returns a new tile.",
          "alpha: the factor of the product (with ``out``).",
          "beta: the factor of ``out``'s previous value (used only with ``out``)."),
    returns="Without ``out``, a new ``(M, N)`` tile holding ``alpha * a @ b``; with ``out``, nothing.",
    example="wp.tile_matmul(a, b, acc)  # acc += a @ b",
)

__all__ = [name for name, v in dict(globals()).items() if isinstance(v, TileOperation)]
