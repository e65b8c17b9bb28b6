"""Lowering of the tile operations (``wp.tile_load``, ``wp.tile_matmul``, tile arithmetic...).

Each handler reads the call's arguments with Warp's parameter names, evaluates the ones a tile's
type depends on (shapes, dtypes, axes) when the kernel is built, computes the result's
``TileType`` and emits a call of the C++ function of ``native/tile/`` that implements it, whose
template arguments carry those build-time values. Operations Warp performs in place (``out`` of
``tile_matmul``, ``tile_assign``, ``t[i, j] = x``) become a pure call and a rebinding of the
name, so they differentiate like any value. Element-wise operations (``tile_map``, operators on
tiles) are ``TILE_MAP`` intrinsics: the renderer passes the element operation as a lambda.
"""

from __future__ import annotations

import ast
import math
import typing

from .. import types as wt
from .. import vector_types as vt
from ..tile import ops
from ..tile.types import TileType, tile
from . import composite
from . import intrinsics as intr
from .cnames import ctype_name
from .errors import WarpCodegenTypeError, WarpCodegenValueError
from .special_calls import register_special
from .tile_args import (
    _REQUIRED,
    ElementOp,
    _array_arg,
    _bind,
    _dtype,
    _element_op,
    _emit,
    _function_arg,
    _int_list,
    _offsets,
    _padded,
    _reject_struct,
    _shape,
    _static,
    _targs,
    _tile_arg,
    reduced_axis,
    tile_map,
)
from .tile_data_calls import check_atomic_dtype
from .tile_views import _rebind, _view_as_subscript, get_element, set_element, subscript, view

if typing.TYPE_CHECKING:
    from .frontend import Lowerer


# --------------------------------------------------------------------------- construction


def _fill(symbol):
    def handler(lw: Lowerer, node):
        a = _bind(lw, node, [("shape", _REQUIRED), ("dtype", float), ("storage", "register")])
        t = TileType(_dtype(lw, a["dtype"], node), _shape(lw, a["shape"], node))
        if symbol == "tile_ones":
            _reject_struct(lw, t.dtype, symbol, node)
        return _emit(lw, f"{symbol}{_targs(t.dtype, *t.shape)}", [], t, node, differentiable=False)

    return handler


def _tile_full(lw: Lowerer, node):
    a = _bind(lw, node, [("shape", _REQUIRED), ("value", _REQUIRED), ("dtype", None), ("storage", "register")])
    value = lw.expr(a["value"])
    dtype = _dtype(lw, a["dtype"], node) if a["dtype"] is not None else value.type
    value = lw.cast(value, dtype) if wt.is_scalar(dtype) and wt.is_scalar(value.type) else value
    if value.type != dtype:
        raise lw.error(f"tile_full(): value of type {wt.type_repr(value.type)} for a tile of {wt.type_repr(dtype)}", node, WarpCodegenTypeError)
    t = TileType(dtype, _shape(lw, a["shape"], node))
    return _emit(lw, f"tile_full{_targs(t.dtype, *t.shape)}", [value], t, node)


def _tile_arange(lw: Lowerer, node):
    kw = {k.arg: k.value for k in node.keywords}
    if set(kw) - {"start", "stop", "step", "dtype", "storage"}:
        raise lw.error("tile_arange(*args, dtype=..., storage=...): unexpected keyword arguments", node, WarpCodegenTypeError)
    values = [_static(lw, x, "tile_arange bounds", node) for x in node.args]
    for name in ("start", "stop", "step"):
        if name in kw:
            values.append(_static(lw, kw[name], "tile_arange bounds", node))
    if not 1 <= len(values) <= 3:
        raise lw.error("tile_arange() takes stop, or start, stop[, step]", node, WarpCodegenTypeError)
    start, stop, step = (0, values[0], 1) if len(values) == 1 else (values[0], values[1], values[2] if len(values) == 3 else 1)
    if step == 0:
        raise lw.error("tile_arange(): step must not be zero", node, WarpCodegenValueError)
    n = max(0, int(-(-(stop - start) // step)))  # ceil((stop - start) / step), ints or floats
    dtype = _dtype(lw, kw["dtype"], node) if "dtype" in kw else (wt.float32 if any(isinstance(v, float) for v in values) else wt.int32)
    _reject_struct(lw, dtype, "tile_arange", node)
    t = TileType(dtype, (n,))
    return _emit(
        lw, f"tile_arange{_targs(dtype, n)}", [lw.const(start, dtype), lw.const(step, dtype)], t, node, differentiable=False
    )


# ------------------------------------------------------------------------ loads and stores


def _tile_load(lw: Lowerer, node):
    a = _bind(
        lw, node,
        [("a", _REQUIRED), ("shape", _REQUIRED), ("offset", None), ("storage", "register"), ("bounds_check", True), ("aligned", False)],
    )
    arr = _array_arg(lw, a["a"], node)
    shape = _shape(lw, a["shape"], node)
    if len(shape) != arr.type.ndim:
        raise lw.error(
            f"tile_load(): a {len(shape)}-D tile shape {shape} for a {arr.type.ndim}-D array", node, WarpCodegenValueError
        )
    t = TileType(arr.type.dtype, shape)
    offsets = _offsets(lw, a["offset"], len(shape), node)
    return _emit(lw, f"tile_load{_targs(t.dtype, *shape)}", [arr] + offsets, t, node, array_access="read")


def _store_like(symbol, returns):
    def handler(lw: Lowerer, node):
        a = _bind(lw, node, [("a", _REQUIRED), ("t", _REQUIRED), ("offset", None), ("bounds_check", True), ("aligned", False)])
        arr = _array_arg(lw, a["a"], node)
        if returns:  # an atomic add: Warp's element types only
            check_atomic_dtype(lw, arr.type.dtype, node)
        t = _tile_arg(lw, a["t"], "the value", node)
        if t.type.ndim != arr.type.ndim:
            raise lw.error(f"{symbol}(): a {t.type.ndim}-D tile for a {arr.type.ndim}-D array", node, WarpCodegenValueError)
        if t.type.dtype != arr.type.dtype:
            if wt.is_scalar(t.type.dtype) and wt.is_scalar(arr.type.dtype):
                t = _astype(lw, t, arr.type.dtype, node)
            else:
                raise lw.error(
                    f"{symbol}(): a tile of {wt.type_repr(t.type.dtype)} for an array of {wt.type_repr(arr.type.dtype)}",
                    node,
                    WarpCodegenTypeError,
                )
        args = [arr, t] + _offsets(lw, a["offset"], t.type.ndim, node)
        access = "update" if returns else "write"
        return _emit(lw, symbol, args, t.type if returns else None, node, side_effect=True, array_access=access)

    return handler


# ---------------------------------------------------------------------------- element-wise


def _tile_map(lw: Lowerer, node):
    if len(node.args) < 2 or node.keywords:
        raise lw.error("tile_map(op, a, *args) takes a function and one or more tiles", node, WarpCodegenTypeError)
    target = _function_arg(lw, node.args[0], node)
    return tile_map(lw, target, [lw.expr(x) for x in node.args[1:]], node)


_VERBS = {"mul": "multiply", "div": "divide"}


def binop(lw: Lowerer, builtin, a, b, node):
    """``a + b``, ``a * 2.0``... with a tile operand: element-wise. ``*`` and ``/`` of tiles of
    vectors or matrices take a scalar (tile) on one side, as in Warp."""
    verb = _VERBS.get(builtin.name)
    elem = [x.type.dtype if isinstance(x.type, TileType) else x.type for x in (a, b)]
    if verb and not any(wt.is_scalar(t) for t in elem):
        if isinstance(a.type, TileType) and isinstance(b.type, TileType):
            raise lw.error(
                f"Cannot {verb} {a.type!r} by {b.type!r}: the element type must be scalar on one side",
                node,
                WarpCodegenTypeError,
            )
        raise lw.error(
            f"Cannot {verb} {wt.type_repr(a.type)} by {wt.type_repr(b.type)}: at least one operand must be a scalar type",
            node,
            WarpCodegenTypeError,
        )
    if isinstance(a.type, TileType) and isinstance(b.type, TileType) and a.type.shape != b.type.shape:
        raise lw.error(f"tiles of shapes {a.type.shape} and {b.type.shape} in one operation", node, WarpCodegenValueError)
    if any(composite.is_struct(t) for t in elem):
        return _struct_binop(lw, builtin, a, b, elem, node)
    return tile_map(lw, builtin, [a, b], node)


def _check_struct_op(lw: Lowerer, builtin, a_type, b_type, what: str, node):
    """Structs add and subtract field by field (their generated ``weft::add`` / ``weft::sub``),
    two of one type; any other operator on them is refused, as Warp does."""
    if builtin.name not in ("add", "sub") or a_type != b_type:
        op = "bitwise inplace" if builtin.name.startswith("bit_") else builtin.name
        raise lw.error(
            f"{op} operations on {what} of a Warp struct ({wt.type_repr(a_type)}) are not supported: "
            "structs add and subtract field by field, nothing else",
            node,
            WarpCodegenTypeError,
        )


def struct_element_binop(lw: Lowerer, builtin, a, b, node):
    """``t[i] += s`` of a tile of structs: the element and ``s`` added (or subtracted) field by
    field."""
    _check_struct_op(lw, builtin, a.type, b.type, "elements", node)
    return _emit(lw, builtin.name, [a, b], a.type, node, differentiable=wt.is_differentiable(a.type))


def _struct_binop(lw: Lowerer, builtin, a, b, elem, node):
    """``+`` and ``-`` of tiles of one struct type, element by element."""
    _check_struct_op(lw, builtin, elem[0], elem[1], "tiles", node)
    tiles = tuple(k for k, x in enumerate((a, b)) if isinstance(x.type, TileType))
    shape = (a.type if isinstance(a.type, TileType) else b.type).shape
    op = ElementOp(f"weft::{builtin.name}", f"weft::adj_{builtin.name}", tiles, wt.is_differentiable(elem[0]))
    return lw.call(intr.TILE_MAP, [a, b], TileType(elem[0], shape), attr=op, node=node)


def _astype(lw: Lowerer, t, dtype, node):
    if t.type.dtype == dtype:
        return t
    r = TileType(dtype, t.type.shape)
    return _emit(lw, f"tile_astype{_targs(dtype)}", [t], r, node, differentiable=wt.is_float(dtype) and wt.is_float(t.type.dtype))


def _tile_astype(lw: Lowerer, node):
    a = _bind(lw, node, [("t", _REQUIRED), ("dtype", _REQUIRED)])
    return _astype(lw, _tile_arg(lw, a["t"], "the value", node), _dtype(lw, a["dtype"], node), node)


# ------------------------------------------------------------------------------ reductions


def _tile_sum(lw: Lowerer, node):
    a = _bind(lw, node, [("a", _REQUIRED), ("axis", None)])
    t = _tile_arg(lw, a["a"], "the value", node)
    axis, shape = reduced_axis(lw, t, a["axis"], node)
    r = TileType(t.type.dtype, shape)
    if axis is None:
        return _emit(lw, "tile_sum", [t], r, node)
    return _emit(lw, f"tile_sum_axis<{ctype_name(r)}, {axis}>", [t], r, node)


def _reduction(symbol, int_result=False):
    def handler(lw: Lowerer, node):
        a = _bind(lw, node, [("a", _REQUIRED)])
        t = _tile_arg(lw, a["a"], "the value", node)
        _reject_struct(lw, t.type.dtype, symbol, node)
        r = TileType(wt.int32 if int_result else t.type.dtype, (1,))
        return _emit(lw, symbol, [t], r, node, differentiable=not int_result)

    return handler


def _tile_reduce(lw: Lowerer, node):
    a = _bind(lw, node, [("op", _REQUIRED), ("a", _REQUIRED), ("axis", None)])
    target = _function_arg(lw, a["op"], node)
    t = _tile_arg(lw, a["a"], "the value", node)
    axis, shape = reduced_axis(lw, t, a["axis"], node)
    e = lw.fn.new_var(t.type.dtype)
    try:
        sym, adj_sym, _, rtype, _ = _element_op(lw, target, [e, e], node)
    except WarpCodegenTypeError as err:
        if composite.is_struct(t.type.dtype):
            raise lw.error(f"tile_reduce(): no overload of the operation takes a Warp struct ({err.bare_msg})", node, WarpCodegenTypeError) from None
        raise
    if rtype != t.type.dtype:
        raise lw.error(
            f"tile_reduce(): the operation must return the tile element type {wt.type_repr(t.type.dtype)}, "
            f"it returns {wt.type_repr(rtype)}",
            node,
            WarpCodegenTypeError,
        )
    op = ElementOp(sym, adj_sym, (0,), False, -1 if axis is None else axis)
    return lw.call(intr.TILE_REDUCE, [t], TileType(rtype, shape), attr=op, node=node)


# ---------------------------------------------------------------------------------- shapes


def _tile_transpose(lw: Lowerer, node):
    a = _bind(lw, node, [("a", _REQUIRED)])
    t = _tile_arg(lw, a["a"], "the value", node)
    if t.type.ndim != 2:
        raise lw.error(f"tile_transpose() takes a 2-D tile, got {t.type.shape}", node, WarpCodegenValueError)
    return _emit(lw, "tile_transpose", [t], TileType(t.type.dtype, t.type.shape[::-1]), node)


def _tile_broadcast(lw: Lowerer, node):
    a = _bind(lw, node, [("a", _REQUIRED), ("shape", _REQUIRED), ("storage", "register")])
    t = _tile_arg(lw, a["a"], "the value", node)
    shape = _shape(lw, a["shape"], node)
    src = t.type.shape
    if len(src) > len(shape) or any(s not in (1, d) for s, d in zip(src[::-1], shape[::-1])):
        raise lw.error(f"tile_broadcast(): shape {src} does not broadcast to {shape}", node, WarpCodegenValueError)
    r = TileType(t.type.dtype, shape)
    return _emit(lw, f"tile_broadcast<{ctype_name(r)}>", [t], r, node)


def reshape(lw: Lowerer, t, shape, node):
    shape = list(shape)
    if shape.count(-1) > 1:
        raise lw.error("tile_reshape(): at most one dimension may be -1", node, WarpCodegenValueError)
    if -1 in shape:
        known = 1
        for d in shape:
            known *= d if d != -1 else 1
        shape[shape.index(-1)] = t.type.size // known if known else 0
    if math.prod(shape) != t.type.size:
        raise lw.error(f"tile_reshape(): cannot reshape a tile of shape {t.type.shape} to {tuple(shape)}", node, WarpCodegenValueError)
    r = TileType(t.type.dtype, tuple(shape))
    return _emit(lw, f"tile_reshape<{ctype_name(r)}>", [t], r, node)


def _tile_reshape(lw: Lowerer, node):
    a = _bind(lw, node, [("t", _REQUIRED), ("shape", _REQUIRED), ("storage", "register")])
    t = _tile_arg(lw, a["t"], "the value", node)
    shape = _static(lw, a["shape"], "tile shape", node)
    return reshape(lw, t, shape if isinstance(shape, (tuple, list)) else (shape,), node)


def _tile_squeeze(lw: Lowerer, node):
    a = _bind(lw, node, [("t", _REQUIRED), ("axis", None)])
    t = _tile_arg(lw, a["t"], "the value", node)
    axis = _static(lw, a["axis"], "axis", node)
    shape = t.type.shape
    if axis is None:
        axes = {k for k, d in enumerate(shape) if d == 1}
    else:
        axes = {int(x) % len(shape) for x in (axis if isinstance(axis, (tuple, list)) else (axis,))}
        if any(shape[k] != 1 for k in axes):
            raise lw.error(f"tile_squeeze(): dimension(s) {sorted(axes)} of shape {shape} are not of size 1", node, WarpCodegenValueError)
    new = tuple(d for k, d in enumerate(shape) if k not in axes) or (1,)
    return reshape(lw, t, new, node)


def _tile_view(lw: Lowerer, node):
    a = _bind(lw, node, [("t", _REQUIRED), ("offset", _REQUIRED), ("shape", None)])
    t = _tile_arg(lw, a["t"], "the value", node)
    sub = _view_as_subscript(lw, node, a)
    if sub is not None:
        return subscript(lw, t, sub)
    elts = a["offset"].elts if isinstance(a["offset"], ast.Tuple) else [a["offset"]]
    offs = []
    for d, e in enumerate(elts):
        v = lw.expr(e)
        if not wt.is_int(v.type):
            raise lw.error(f"tile_view() offsets must be integers or slices, got {wt.type_repr(v.type)}", node, WarpCodegenTypeError)
        if d < t.type.ndim and v.is_const and not 0 <= int(v.const) < t.type.shape[d]:
            raise lw.error(f"tile_view(): offset {v.const} is out of bounds for axis {d} of size {t.type.shape[d]}", node, WarpCodegenValueError)
        offs.append(lw.cast(v, wt.int32))
    if len(offs) > t.type.ndim:
        raise lw.error(f"tile_view(): {len(offs)} offsets for a {t.type.ndim}-D tile", node, WarpCodegenValueError)
    shape = _shape(lw, a["shape"], node) if a["shape"] is not None else t.type.shape[len(offs) :] or (1,)
    return view(lw, t, offs, shape, node)


def _tile_assign(lw: Lowerer, node):
    a = _bind(lw, node, [("dst", _REQUIRED), ("src", _REQUIRED), ("offset", None)])
    dst = _tile_arg(lw, a["dst"], "the destination", node)
    src = lw.expr(a["src"])
    if not isinstance(src.type, TileType):  # tile_assign(dst, value, offset): one element
        offs = _int_list(lw, a["offset"], node)
        return _rebind(lw, a["dst"], set_element(lw, dst, offs, src, node))
    if src.type.dtype != dst.type.dtype:
        raise lw.error("tile_assign(): tiles of different dtypes", node, WarpCodegenTypeError)
    offs = _int_list(lw, a["offset"], node)
    new = _emit(lw, "tile_assign", [dst, src] + _padded(lw, offs), dst.type, node)
    return _rebind(lw, a["dst"], new)


# ------------------------------------------------------------------------ element access


def _tile_extract(lw: Lowerer, node):
    if len(node.args) < 2:
        raise lw.error("tile_extract(a, *indices) takes a tile and its indices", node, WarpCodegenTypeError)
    t = _tile_arg(lw, node.args[0], "the value", node)
    return get_element(lw, t, [lw.cast(lw.expr(n), wt.int32) for n in node.args[1:]], node)


# ---------------------------------------------------------------------- threads and tiles


def _tile_from_thread_value(lw: Lowerer, node):
    a = _bind(lw, node, [("x", _REQUIRED), ("preserve_type", False)])
    x = lw.expr(a["x"])
    lw.fn.thread_values = True
    preserve = bool(_static(lw, a["preserve_type"], "preserve_type", node))
    if wt.is_scalar(x.type) or preserve or not hasattr(x.type, "_shape"):
        return _emit(lw, "tile_from_value", [x], TileType(x.type, (1,)), node)
    r = TileType(x.type._scalar, (*x.type._shape, 1))
    return _emit(lw, f"tile_from_components<{ctype_name(r)}>", [x], r, node)


def _untile(lw: Lowerer, node):
    a = _bind(lw, node, [("t", _REQUIRED)])
    t = _tile_arg(lw, a["t"], "the value", node)
    lw.fn.thread_values = True
    shape = t.type.shape
    if shape[-1] != 1:
        raise lw.error(f"untile() takes a tile made by wp.tile() (last dimension the block size, 1), got {shape}", node, WarpCodegenValueError)
    if len(shape) == 1:
        v = t.type.dtype
    elif len(shape) == 2 and wt.is_scalar(t.type.dtype):
        v = vt.vector(shape[0], t.type.dtype)
    elif len(shape) == 3 and wt.is_scalar(t.type.dtype):
        v = vt.matrix((shape[0], shape[1]), t.type.dtype)
    else:
        raise lw.error(f"untile() of a tile of shape {shape}", node, WarpCodegenValueError)
    return _emit(lw, f"tile_to_value<{ctype_name(v)}>", [t], v, node)


def _block_dim(lw: Lowerer, node):
    if node.args or node.keywords:
        raise lw.error("wp.block_dim() takes no arguments", node, WarpCodegenTypeError)
    lw.fn.thread_values = True
    return lw.const(1, wt.int32)


# -------------------------------------------------------------------------------- products


def _tile_matmul(lw: Lowerer, node):
    a = _bind(lw, node, [("a", _REQUIRED), ("b", _REQUIRED), ("out", None), ("alpha", 1.0), ("beta", None)])
    x = _tile_arg(lw, a["a"], "a", node)
    y = _tile_arg(lw, a["b"], "b", node)
    if x.type.ndim != 2 or y.type.ndim != 2 or x.type.shape[1] != y.type.shape[0]:
        raise lw.error(f"tile_matmul(): shapes {x.type.shape} and {y.type.shape} do not multiply", node, WarpCodegenValueError)
    for t in (x, y):
        if getattr(t.type.dtype, "_kind", None) == "vector":
            raise lw.error("tile_matmul() does not support complex tiles (vec2 elements); multiply real tiles", node, WarpCodegenTypeError)
        if not wt.is_float(t.type.dtype):
            raise lw.error(f"tile_matmul() multiplies float tiles, got {t.type!r}", node, WarpCodegenTypeError)
    shape = (x.type.shape[0], y.type.shape[1])
    if a["out"] is not None:
        out = _tile_arg(lw, a["out"], "out", node)
        dtype = out.type.dtype
        if out.type.shape != shape or not wt.is_float(dtype):
            raise lw.error(f"tile_matmul(): out is {out.type!r}, the product has shape {shape}", node, WarpCodegenValueError)
        beta = 1.0 if a["beta"] is None else a["beta"]
    else:
        dtype = x.type.dtype  # the product of the return form has a's type
        out = None
        beta = 0.0 if a["beta"] is None else a["beta"]
    if dtype is wt.bfloat16:
        raise lw.error(
            "tile_matmul() does not support a bfloat16 'out' tile: accumulate in float16, float32 or float64 "
            "(a and b may be bfloat16)",
            node,
            WarpCodegenTypeError,
        )
    if out is None:
        out = _emit(lw, f"tile_zeros{_targs(dtype, *shape)}", [], TileType(dtype, shape), node, differentiable=False)
    scalars = [lw.cast(lw.expr(v) if isinstance(v, ast.AST) else lw.const(v), dtype) for v in (a["alpha"], beta)]
    r = _emit(lw, "tile_matmul", [x, y, out] + scalars, out.type, node)
    if a["out"] is not None:
        _rebind(lw, a["out"], r)
    return r


for _op, _handler in {
    ops.tile_zeros: _fill("tile_zeros"),
    ops.tile_empty: _fill("tile_zeros"),
    ops.tile_ones: _fill("tile_ones"),
    ops.tile_full: _tile_full,
    ops.tile_arange: _tile_arange,
    ops.tile_load: _tile_load,
    ops.tile_store: _store_like("tile_store", False),
    ops.tile_atomic_add: _store_like("tile_atomic_add", True),
    ops.tile_map: _tile_map,
    ops.tile_astype: _tile_astype,
    ops.tile_sum: _tile_sum,
    ops.tile_min: _reduction("tile_min"),
    ops.tile_max: _reduction("tile_max"),
    ops.tile_argmin: _reduction("tile_argmin", int_result=True),
    ops.tile_argmax: _reduction("tile_argmax", int_result=True),
    ops.tile_reduce: _tile_reduce,
    ops.tile_transpose: _tile_transpose,
    ops.tile_broadcast: _tile_broadcast,
    ops.tile_reshape: _tile_reshape,
    ops.tile_squeeze: _tile_squeeze,
    ops.tile_view: _tile_view,
    ops.tile_assign: _tile_assign,
    ops.tile_extract: _tile_extract,
    ops.untile: _untile,
    ops.block_dim: _block_dim,
    ops.tile_matmul: _tile_matmul,
    tile: _tile_from_thread_value,
}.items():
    register_special(_op, _handler)

