"""Lowering of the tile data operations (``wp.tile_sort``, scans, scatter, indexed loads and
stores, block stacks, random tiles, ``wp.tile_dot`` / ``wp.tile_axpy``).

Same scheme as tile_calls.py, whose helpers these handlers share: arguments bound by Warp's
parameter names, build-time values evaluated, one call of the C++ of
``native/tile/tile_data.h``. Operations Warp performs in place return the new values (a tuple
when several change, followed by the call's own value) and the names passed in are rebound.
"""

from __future__ import annotations

import ast
import typing

from .. import types as wt
from ..struct import is_struct
from ..tile import ops_data
from ..tile.ops_data import TileStackType
from ..tile.types import TileType
from . import intrinsics as intr
from .cnames import ctype_name
from .errors import WarpCodegenTypeError, WarpCodegenValueError
from .special_calls import register_special
from .tile_args import (
    _REQUIRED,
    call_name,
    _array_arg,
    _bind,
    _emit,
    _offsets,
    _padded,
    _shape,
    _static,
    _targs,
    _tile_arg,
)
from .tile_views import _rebind

if typing.TYPE_CHECKING:
    from .frontend import Lowerer

_SORT_KEYS = (wt.float32, wt.int32, wt.uint32, wt.int64, wt.uint64)
_SCAN_TYPES = (wt.float32, wt.int32, wt.uint32)
_ATOMIC_SCALARS = (wt.int32, wt.uint32, wt.int64, wt.uint64, wt.float16, wt.bfloat16, wt.float32, wt.float64)


def _tuple_get(lw: Lowerer, v, k: int, node):
    return lw.call(intr.TUPLE_GET, [v], v.type.types[k], attr=k, node=node)


def _rebind_all(lw: Lowerer, result, targets, node):
    """``result`` is a tuple of the new values of the argument nodes ``targets`` (then, when it
    has one more element, the call's value): rebind each; returns the call's value or None."""
    for k, target in enumerate(targets):
        _rebind(lw, target, _tuple_get(lw, result, k, node))
    if len(result.type.types) > len(targets):
        return _tuple_get(lw, result, len(targets), node)
    return None


def _scalar_of(dtype):
    return dtype if wt.is_scalar(dtype) else getattr(dtype, "_scalar", None)


def check_atomic_dtype(lw: Lowerer, dtype, node):
    """Warp's rule for the tile atomic adds: a scalar type with an atomic add (or a struct)."""
    if is_struct(dtype):
        return
    if _scalar_of(dtype) not in _ATOMIC_SCALARS:
        raise lw.error(
            f"{call_name(node)}() only supports tiles with [u]int32, [u]int64, float16, bfloat16, float32, "
            f"or float64 as the underlying scalar type, but got {wt.type_repr(dtype)}",
            node,
            WarpCodegenTypeError,
        )


# ------------------------------------------------------------------------------ ordering


def _tile_sort(lw: Lowerer, node):
    a = _bind(lw, node, [("keys", _REQUIRED), ("values", _REQUIRED)])
    keys = _tile_arg(lw, a["keys"], "keys", node)
    values = _tile_arg(lw, a["values"], "values", node)
    if keys.type.dtype not in _SORT_KEYS:
        raise lw.error(
            f"tile_sort(): keys must be a tile of float32, int32, uint32, int64 or uint64, got {wt.type_repr(keys.type.dtype)}",
            node,
            WarpCodegenTypeError,
        )
    if keys.type.ndim != 1 or keys.type.shape != values.type.shape:
        raise lw.error(
            f"tile_sort(): keys and values are 1-D tiles of one length, got {keys.type.shape} and {values.type.shape}",
            node,
            WarpCodegenValueError,
        )
    r = _emit(lw, "tile_sort", [keys, values], wt.TupleType((keys.type, values.type)), node, differentiable=False)
    return _rebind_all(lw, r, [a["keys"], a["values"]], node)


def _scan(symbol):
    def handler(lw: Lowerer, node):
        a = _bind(lw, node, [("a", _REQUIRED)])
        t = _tile_arg(lw, a["a"], "the value", node)
        if t.type.dtype not in _SCAN_TYPES:
            raise lw.error(
                f"{symbol}() argument must be a tile of type float32, int32, or uint32, got {wt.type_repr(t.type.dtype)}",
                node,
                WarpCodegenTypeError,
            )
        return _emit(lw, symbol, [t], t.type, node, differentiable=False)

    return handler


# ------------------------------------------------------------------------------ scatter


def _scatter(symbol, with_atomic):
    def handler(lw: Lowerer, node):
        tile_node = node.args[0] if node.args else next((k.value for k in node.keywords if k.arg == "a"), None)
        if tile_node is None:
            raise lw.error(f"{symbol}() missing required argument 'a'", node, WarpCodegenTypeError)
        t = _tile_arg(lw, tile_node, "a", node)
        names = "ijkl"[: t.type.ndim]
        params = [("a", _REQUIRED)] + [(n, _REQUIRED) for n in names] + [("value", _REQUIRED), ("has_value", _REQUIRED)]
        a = _bind(lw, node, params + ([("atomic", True)] if with_atomic else []))
        idx = [lw.cast(lw.expr(a[n]), wt.int32) for n in names]
        value = lw.expr(a["value"])
        if wt.is_scalar(value.type) and wt.is_scalar(t.type.dtype) and value.type != t.type.dtype:
            value = lw.cast(value, t.type.dtype)
        if value.type != t.type.dtype:
            raise lw.error(
                f"{symbol}() 'value' type must match tile dtype, got {wt.type_repr(value.type)} and tile dtype "
                f"{wt.type_repr(t.type.dtype)}",
                node,
                WarpCodegenTypeError,
            )
        if with_atomic and not isinstance(_static(lw, a["atomic"], "'atomic' flag", node), bool):
            raise lw.error(f"{symbol}() 'atomic' must be True or False", node, WarpCodegenValueError)
        has_value = lw.cast(lw.expr(a["has_value"]), wt.bool)
        r = _emit(lw, symbol, [t] + _padded(lw, idx) + [value, has_value], t.type, node)
        _rebind(lw, tile_node, r)

    return handler


# ------------------------------------------------------------------ indexed memory access


def _indices_arg(lw: Lowerer, x, node):
    ind = _tile_arg(lw, x, "indices", node)
    if ind.type.ndim != 1 or not wt.is_int(ind.type.dtype):
        raise lw.error(f"{call_name(node)}(): indices must be a 1-D tile of int, got {ind.type!r}", node, WarpCodegenValueError)
    if ind.type.dtype != wt.int32:
        ind = _emit(lw, f"tile_astype{_targs(wt.int32)}", [ind], TileType(wt.int32, ind.type.shape), node, differentiable=False)
    return ind


def _axis(lw: Lowerer, x, ndim: int, node) -> int:
    axis = int(_static(lw, x, "axis", node))
    if not 0 <= axis < ndim:
        raise lw.error(f"{call_name(node)}(): axis {axis} of a {ndim}-D array", node, WarpCodegenValueError)
    return axis


def _check_indexed(lw: Lowerer, arr, ind, shape, axis, node):
    if len(shape) != arr.type.ndim:
        raise lw.error(f"{call_name(node)}(): a {len(shape)}-D tile for a {arr.type.ndim}-D array", node, WarpCodegenValueError)
    if ind.type.shape[0] != shape[axis]:
        raise lw.error(
            f"{call_name(node)}(): the number of elements in the 1D indices tile ({ind.type.shape[0]}) must match the "
            f"tile shape along the specified axis ({shape[axis]})",
            node,
            WarpCodegenValueError,
        )


def _tile_load_indexed(lw: Lowerer, node):
    a = _bind(
        lw, node, [("a", _REQUIRED), ("indices", _REQUIRED), ("shape", _REQUIRED), ("offset", None), ("axis", 0), ("storage", "register")]
    )
    arr = _array_arg(lw, a["a"], node)
    ind = _indices_arg(lw, a["indices"], node)
    shape = _shape(lw, a["shape"], node)
    axis = _axis(lw, a["axis"], arr.type.ndim, node)
    _check_indexed(lw, arr, ind, shape, axis, node)
    r = TileType(arr.type.dtype, shape)
    args = [arr, ind, lw.const(axis, wt.int32)] + _offsets(lw, a["offset"], len(shape), node)
    return _emit(lw, f"tile_load_indexed<{ctype_name(r)}>", args, r, node, array_access="read")


def _store_indexed(symbol, returns):
    def handler(lw: Lowerer, node):
        a = _bind(lw, node, [("a", _REQUIRED), ("indices", _REQUIRED), ("t", _REQUIRED), ("offset", None), ("axis", 0)])
        arr = _array_arg(lw, a["a"], node)
        ind = _indices_arg(lw, a["indices"], node)
        t = _tile_arg(lw, a["t"], "t", node)
        if t.type.dtype != arr.type.dtype:
            raise lw.error(
                f"{symbol}() 'a' and 't' arguments must have the same dtype, got {wt.type_repr(arr.type.dtype)} and "
                f"{wt.type_repr(t.type.dtype)}",
                node,
                WarpCodegenTypeError,
            )
        if returns:
            check_atomic_dtype(lw, t.type.dtype, node)
        axis = _axis(lw, a["axis"], arr.type.ndim, node)
        _check_indexed(lw, arr, ind, t.type.shape, axis, node)
        args = [arr, ind, t, lw.const(axis, wt.int32)] + _offsets(lw, a["offset"], t.type.ndim, node)
        access = "update" if returns else "write"
        return _emit(lw, symbol, args, t.type if returns else None, node, side_effect=True, array_access=access)

    return handler


# ---------------------------------------------------------------------------------- stacks


def _stack_arg(lw: Lowerer, x, node):
    s = lw.expr(x)
    if not isinstance(s.type, TileStackType):
        raise lw.error(f"{call_name(node)}() argument must be a tile_stack, got {wt.type_repr(s.type)}", node, WarpCodegenTypeError)
    return s


def _tile_stack(lw: Lowerer, node):
    a = _bind(lw, node, [("capacity", _REQUIRED), ("dtype", _REQUIRED)])
    capacity = _static(lw, a["capacity"], "tile_stack capacity", node)
    if isinstance(capacity, (bool, float, str)) or not isinstance(capacity, int) or capacity <= 0:
        raise lw.error(f"tile_stack() requires capacity to be a positive integer, got {capacity!r}", node, WarpCodegenValueError)
    dtype = wt.resolve_array_dtype(_static(lw, a["dtype"], "dtype", node))
    t = TileStackType(dtype, capacity)
    return _emit(lw, f"tile_stack_init{_targs(dtype, capacity)}", [], t, node, differentiable=False)


def _tile_stack_push(lw: Lowerer, node):
    a = _bind(lw, node, [("s", _REQUIRED), ("value", _REQUIRED), ("has_value", _REQUIRED)])
    s = _stack_arg(lw, a["s"], node)
    value = lw.expr(a["value"])
    if wt.is_scalar(value.type) and wt.is_scalar(s.type.dtype) and value.type != s.type.dtype and isinstance(a["value"], ast.Constant):
        value = lw.cast(value, s.type.dtype)
    if value.type != s.type.dtype:
        raise lw.error(
            f"tile_stack_push() value type {wt.type_repr(value.type)} does not match stack dtype {wt.type_repr(s.type.dtype)}",
            node,
            WarpCodegenTypeError,
        )
    has_value = lw.cast(lw.expr(a["has_value"]), wt.bool)
    r = _emit(lw, "tile_stack_push", [s, value, has_value], wt.TupleType((s.type, wt.int32)), node, differentiable=False)
    return _rebind_all(lw, r, [a["s"]], node)


def _tile_stack_pop(lw: Lowerer, node):
    a = _bind(lw, node, [("s", _REQUIRED)])
    s = _stack_arg(lw, a["s"], node)
    rtype = wt.TupleType((s.type, wt.TupleType((s.type.dtype, wt.int32))))
    r = _emit(lw, "tile_stack_pop", [s], rtype, node, differentiable=False)
    return _rebind_all(lw, r, [a["s"]], node)


def _tile_stack_clear(lw: Lowerer, node):
    a = _bind(lw, node, [("s", _REQUIRED)])
    s = _stack_arg(lw, a["s"], node)
    _rebind(lw, a["s"], _emit(lw, "tile_stack_clear", [s], s.type, node, differentiable=False))


def _tile_stack_count(lw: Lowerer, node):
    a = _bind(lw, node, [("s", _REQUIRED)])
    return _emit(lw, "tile_stack_count", [_stack_arg(lw, a["s"], node)], wt.int32, node, differentiable=False)


# ----------------------------------------------------------------------------- construction


def _random(symbol, dtype):
    def handler(lw: Lowerer, node):
        a = _bind(lw, node, [("shape", _REQUIRED), ("rng", _REQUIRED), ("min", None), ("max", None), ("storage", "register")])
        shape = _shape(lw, a["shape"], node)
        args = [lw.cast(lw.expr(a["rng"]), wt.uint32)]
        if (a["min"] is None) != (a["max"] is None):
            raise lw.error(f"{symbol}(): 'min' and 'max' must be provided together", node, WarpCodegenValueError)
        if a["min"] is not None:
            args += [lw.cast(lw.expr(a[k]), dtype) for k in ("min", "max")]
        return _emit(lw, f"{symbol}{_targs(*shape)}", args, TileType(dtype, shape), node, differentiable=False)

    return handler


def _tile_from_thread(lw: Lowerer, node):
    a = _bind(lw, node, [("shape", _REQUIRED), ("value", _REQUIRED), ("thread_idx", _REQUIRED), ("storage", "register")])
    shape = _shape(lw, a["shape"], node)
    value = lw.expr(a["value"])
    lw.expr(a["thread_idx"])  # evaluated as Warp does; one thread per block: its value is used
    t = TileType(value.type, shape)
    return _emit(lw, f"tile_full{_targs(value.type, *shape)}", [value], t, node, differentiable=False)


# --------------------------------------------------------------------------- fused products


def _check_pair(lw: Lowerer, x, y, what: str, node):
    if x.type.shape != y.type.shape:
        raise lw.error(f"{call_name(node)}() {what} must have the same shape, got {x.type.shape} and {y.type.shape}", node, WarpCodegenTypeError)
    if x.type.dtype != y.type.dtype:
        raise lw.error(
            f"{call_name(node)}() {what} must have the same dtype, got {wt.type_repr(x.type.dtype)} and {wt.type_repr(y.type.dtype)}",
            node,
            WarpCodegenTypeError,
        )
    if _scalar_of(x.type.dtype) is None:
        raise lw.error(f"{call_name(node)}() takes tiles of scalars, vectors or matrices, got {wt.type_repr(x.type.dtype)}", node, WarpCodegenTypeError)


def _tile_dot(lw: Lowerer, node):
    a = _bind(lw, node, [("a", _REQUIRED), ("b", _REQUIRED)])
    x = _tile_arg(lw, a["a"], "a", node)
    y = _tile_arg(lw, a["b"], "b", node)
    _check_pair(lw, x, y, "arguments", node)
    return _emit(lw, "tile_dot", [x, y], TileType(_scalar_of(x.type.dtype), (1,)), node)


def _tile_axpy(lw: Lowerer, node):
    a = _bind(lw, node, [("alpha", _REQUIRED), ("src", _REQUIRED), ("dest", _REQUIRED)])
    alpha = lw.expr(a["alpha"])
    src = _tile_arg(lw, a["src"], "'src' argument", node)
    dest = _tile_arg(lw, a["dest"], "'dest' argument", node)
    _check_pair(lw, dest, src, "'dest' and 'src'", node)
    scalar = _scalar_of(dest.type.dtype)
    if not wt.is_scalar(alpha.type):
        raise lw.error(f"tile_axpy() 'alpha' must be a scalar, got {wt.type_repr(alpha.type)}", node, WarpCodegenTypeError)
    if alpha.type != scalar:
        if not isinstance(a["alpha"], ast.Constant):
            raise lw.error(
                f"tile_axpy() 'alpha' must match the tile's scalar type, got {wt.type_repr(alpha.type)} for tile scalar "
                f"type {wt.type_repr(scalar)}",
                node,
                WarpCodegenTypeError,
            )
        alpha = lw.cast(alpha, scalar)
    r = _emit(lw, "tile_axpy", [alpha, src, dest], dest.type, node)
    _rebind(lw, a["dest"], r)


# ------------------------------------------------------------------- tile_atomic_add's dtypes


for _op, _handler in {
    ops_data.tile_sort: _tile_sort,
    ops_data.tile_scan_inclusive: _scan("tile_scan_inclusive"),
    ops_data.tile_scan_exclusive: _scan("tile_scan_exclusive"),
    ops_data.tile_scan_max_inclusive: _scan("tile_scan_max_inclusive"),
    ops_data.tile_scan_min_inclusive: _scan("tile_scan_min_inclusive"),
    ops_data.tile_scatter_add: _scatter("tile_scatter_add", True),
    ops_data.tile_scatter_masked: _scatter("tile_scatter_masked", False),
    ops_data.tile_load_indexed: _tile_load_indexed,
    ops_data.tile_store_indexed: _store_indexed("tile_store_indexed", False),
    ops_data.tile_atomic_add_indexed: _store_indexed("tile_atomic_add_indexed", True),
    ops_data.tile_stack: _tile_stack,
    ops_data.tile_stack_push: _tile_stack_push,
    ops_data.tile_stack_pop: _tile_stack_pop,
    ops_data.tile_stack_clear: _tile_stack_clear,
    ops_data.tile_stack_count: _tile_stack_count,
    ops_data.tile_randi: _random("tile_randi", wt.int32),
    ops_data.tile_randf: _random("tile_randf", wt.float32),
    ops_data.tile_from_thread: _tile_from_thread,
    ops_data.tile_dot: _tile_dot,
    ops_data.tile_axpy: _tile_axpy,
}.items():
    register_special(_op, _handler)

