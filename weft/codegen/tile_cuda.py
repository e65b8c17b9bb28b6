"""Tile operations in the CUDA renderer: which run spread over a block's threads, which run on its
first thread, and how much shared memory a kernel's tile operations need.

On CUDA a tile is spread over the threads of a block (``native/tile/tile_cuda.h``). The operations
of ``LOCAL`` have spread implementations there and are called as on the CPU; every other tile
operation is wrapped in ``weft::tile_serial``: the block gathers its tile arguments into shared
memory, the first thread calls the whole-tile implementation (``weft::full::``), and the results
(written adjoints included, marked ``weft::tile_out``) are spread back. ``SharedMemory`` adds up
what the wrappers and the shared-memory operations of a module need, in bytes: a fixed part and a
part per thread of the block (per-thread partial sums), so that the launch can size the block's
dynamic shared memory for its ``block_dim``.
"""

from __future__ import annotations

import dataclasses

from .. import types as wt
from ..builtins.registry import Overload
from ..tile.types import TileType

# tile operations written for spread tiles in tile_cuda.h (their adjoints too)
LOCAL = frozenset(
    {
        "tile_zeros",
        "tile_ones",
        "tile_full",
        "tile_arange",
        "tile_load",
        "tile_store",
        "tile_atomic_add",
        "tile_astype",
        "tile_reshape",
        "tile_sum",
        "tile_matmul",
    }
)

_UNKNOWN_BYTES = 1024  # a value of a type whose size is not known here (a query's state)


@dataclasses.dataclass(frozen=True)
class TileOverload(Overload):
    """An overload made by a tile operation's lowering (``tile_args._emit``)."""


def holds_tiles(t) -> bool:
    """Whether a value of type ``t`` is or holds a tile (or a block's tile stack)."""
    from ..tile.ops_data import TileStackType

    if isinstance(t, (TileType, TileStackType)):
        return True
    return isinstance(t, wt.TupleType) and any(holds_tiles(x) for x in t.types)


def block_wide(call) -> bool:
    """Whether ``call`` (an ``ir.Call`` of a ``TileOverload``) works on tiles, rather than on one
    of their elements (``t[i] += s`` of a struct tile adds two structs)."""
    types = [x.type for x in call.args] + ([call.result.type] if call.result is not None else [])
    return any(holds_tiles(t) for t in types)


def base_name(symbol: str) -> str:
    """``tile_load`` of ``tile_load<weft::float32, 16, 16>``."""
    return symbol.split("<", 1)[0]


def is_local(symbol: str) -> bool:
    return base_name(symbol) in LOCAL


def whole(text: str) -> str:
    """C++ text naming spread tiles (``weft::tile_t<...>`` in template arguments) rewritten to
    name whole tiles, for a call into ``weft::full``."""
    return text.replace("weft::tile_t<", "weft::full::tile_t<")


def serial(callee: str, args: list, bound: str = "") -> str:
    """``weft::tile_serial``: ``callee`` (a ``weft::`` operation) called on the block's first
    thread with whole tiles; ``bound``: C++ text of leading arguments passed as they are (a
    reduction's lambda)."""
    inner = "weft::full::" + whole(callee.removeprefix("weft::"))
    lead = f"{bound}, " if bound else ""
    return f"weft::tile_serial([&](auto&&... x) {{ return {inner}({lead}x...); }}{''.join(', ' + a for a in args)})"


def out(arg: str) -> str:
    return f"weft::tile_out({arg})"


def _align(n: int) -> int:
    return (n + 15) // 16 * 16


def nbytes(t) -> int:
    """An upper bound of the bytes of one value of type ``t`` held whole in shared memory."""
    from ..type_queries import type_size_in_bytes
    from ..tile.ops_data import TileStackType

    if isinstance(t, TileType):
        return _align(max(t.size, 1) * nbytes(t.dtype))
    if isinstance(t, wt.TupleType):
        return sum(_align(nbytes(x)) for x in t.types) + 16
    if isinstance(t, TileStackType):
        return _align(t.capacity * nbytes(t.dtype) + 8)
    if getattr(t, "_kind", None) == "struct" and str(getattr(t, "_cname", "")).startswith("weft::"):
        # a struct defined by a native header (a query's state): its C++ size is not known here
        return _UNKNOWN_BYTES
    try:
        return type_size_in_bytes(t)
    except (TypeError, AttributeError, ValueError):
        return _UNKNOWN_BYTES


class SharedMemory:
    """The shared memory a module's tile operations need on CUDA (see the module docstring)."""

    def __init__(self):
        self.fixed = 0
        self.per_lane = 0

    def bytes_for(self, lanes: int) -> int:
        """Dynamic shared memory of a block of ``lanes`` threads (0: none needed)."""
        if lanes <= 1:
            return 0
        return max(self.fixed, (lanes + 1) * self.per_lane)

    def serial(self, arg_types: list, out_types: list, result_type):
        need = sum(nbytes(t) for t in arg_types if isinstance(t, TileType))
        need += sum(_align(nbytes(t)) for t in out_types)
        if result_type is not None:
            need += _align(nbytes(result_type))
        self.fixed = max(self.fixed, need)

    def local(self, symbol: str, arg_types: list, adjoint: bool):
        """A LOCAL operation's need: matrix products stage their operands, sums their partials."""
        name = base_name(symbol)
        if name == "tile_matmul":
            t = arg_types[2].dtype  # the product's type
            a, b, c = (TileType(t, x.shape) for x in arg_types[:3])
            self.fixed = max(self.fixed, nbytes(a) + nbytes(b) + (nbytes(c) if adjoint else 0))
        elif name == "tile_sum":
            self.per_lane = max(self.per_lane, nbytes(arg_types[0].dtype))
        elif name == "tile_full" and adjoint:
            self.lane_sum(arg_types[0])

    def lane_sum(self, t):
        """``weft::tile_lane_sum`` of a value of type ``t`` (one scalar component at a time)."""
        scalar = getattr(t, "_scalar", t)
        self.per_lane = max(self.per_lane, nbytes(scalar) if wt.is_scalar(scalar) else 8)
