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
import dataclasses
import typing

from .. import types as wt
from .. import vector_types as vt
from ..builtins import registry as reg
from ..builtins.registry import Overload
from ..tile import ops
from ..tile.types import TileType, tile
from . import intrinsics as intr
from . import typing_rules as tr
from .control_flow import StaticTuple
from .errors import WarpCodegenError, WarpCodegenTypeError, WarpCodegenValueError
from .special_calls import register_special
from .statics import Static
from .cnames import ctype_name

if typing.TYPE_CHECKING:
    from .frontend import Lowerer

_REQUIRED = object()


@dataclasses.dataclass(frozen=True)
class ElementOp:
    """What a ``TILE_MAP`` / ``TILE_REDUCE`` call applies per element: the C++ names of the
    operation and of its adjoint, which of the call's arguments are tiles (the others are
    captured as they are), and whether gradients pass through it."""

    symbol: str
    adj_symbol: str
    tiles: tuple
    differentiable: bool
    axis: int = -1  # TILE_REDUCE: the dimension folded (-1: all of them)


# ------------------------------------------------------------------------------ arguments


def _bind(lw: Lowerer, node, params) -> dict:
    """The call's argument nodes by parameter name (``params``: (name, default) pairs, default
    ``_REQUIRED`` for none); defaults for the ones left out."""
    name = ast.unparse(node.func)
    names = [n for n, _ in params]
    if len(node.args) > len(names):
        raise lw.error(f"{name}() takes at most {len(names)} arguments, got {len(node.args)}", node, WarpCodegenTypeError)
    given = dict(zip(names, node.args))
    for k in node.keywords:
        if k.arg not in names:
            raise lw.error(f"{name}() got an unexpected keyword argument '{k.arg}'", node, WarpCodegenTypeError)
        if k.arg in given:
            raise lw.error(f"{name}() got multiple values for argument '{k.arg}'", node, WarpCodegenTypeError)
        given[k.arg] = k.value
    out = {}
    for n, default in params:
        if n in given:
            out[n] = given[n]
        elif default is _REQUIRED:
            raise lw.error(f"{name}() missing required argument '{n}'", node, WarpCodegenTypeError)
        else:
            out[n] = default
    return out


def _static(lw: Lowerer, x, what: str, node):
    """The build-time value of argument ``x`` (an AST node or a default)."""
    if not isinstance(x, ast.AST):
        return x
    if isinstance(x, ast.Attribute):  # a.dtype of an array argument
        try:
            v = lw.static_value(x)
        except WarpCodegenError:
            v = None
        if v is not None:
            return v
    try:
        return lw.static_eval(x)
    except WarpCodegenError:
        raise lw.error(
            f"the {what} must be a compile-time constant (known when the kernel is built)", node, WarpCodegenValueError
        ) from None


def _shape(lw: Lowerer, x, node) -> tuple:
    value = _static(lw, x, "tile shape", node)
    dims = value if isinstance(value, (tuple, list)) else (value,)
    try:
        dims = tuple(int(d) for d in dims)
    except (TypeError, ValueError):
        raise lw.error(f"a tile shape is an int or a tuple of ints, got {value!r}", node, WarpCodegenValueError) from None
    if not 1 <= len(dims) <= 4 or any(d < 0 for d in dims):
        raise lw.error(f"a tile has 1 to 4 non-negative dimensions, got {dims}", node, WarpCodegenValueError)
    return dims


def _dtype(lw: Lowerer, x, node):
    value = _static(lw, x, "dtype", node)
    try:
        return wt.resolve_array_dtype(value)
    except TypeError as e:
        raise lw.error(str(e), node, WarpCodegenTypeError) from None


def _tile_arg(lw: Lowerer, x, what: str, node):
    v = lw.expr(x)
    if not isinstance(v.type, TileType):
        raise lw.error(f"{ast.unparse(node.func)}(): {what} must be a tile, got {wt.type_repr(v.type)}", node, WarpCodegenTypeError)
    return v


def _int_list(lw: Lowerer, x, node) -> list:
    """Runtime int values of an offset / index argument: a tuple, a single int, or a tuple value."""
    if x is None:
        return []
    if isinstance(x, ast.Tuple):
        items = [lw.expr(e) for e in x.elts]
    else:
        v = lw.expr_or_tuple(x)
        if isinstance(v, StaticTuple):
            items = list(v.items)
        elif isinstance(v, Static):
            raise lw.error(f"'{ast.unparse(x)}' is not an integer offset", node, WarpCodegenTypeError)
        elif isinstance(v.type, wt.TupleType):
            items = [lw.call(intr.TUPLE_GET, [v], t, attr=k, node=node) for k, t in enumerate(v.type.types)]
        else:
            items = [v]
    for v in items:
        if not wt.is_int(v.type):
            raise lw.error(f"tile offsets and indices are integers, got {wt.type_repr(v.type)}", node, WarpCodegenTypeError)
    return [lw.cast(v, wt.int32) for v in items]


def _padded(lw: Lowerer, items: list) -> list:
    return items + [lw.const(0, wt.int32)] * (4 - len(items))


def _emit(lw: Lowerer, symbol: str, args: list, rtype, node, differentiable=True, side_effect=False):
    ov = Overload(tuple((f"arg{k}", a.type) for k, a in enumerate(args)), rtype, symbol, differentiable, side_effect)
    return lw.call(ov, args, rtype, node=node)


def _targs(*parts) -> str:
    return "<" + ", ".join(ctype_name(p) if not isinstance(p, (int, str)) else str(p) for p in parts) + ">"


def _rebind(lw: Lowerer, target_node, value):
    """Warp updates the tile named by ``target_node`` in place: rebind the name to ``value`` (and
    write it back into the tile it is a view of, if it is one)."""
    if isinstance(target_node, ast.Name):
        lw.assign_to(ast.Name(id=target_node.id, ctx=ast.Store()), value)
        write_back(lw, target_node.id, target_node)
    elif isinstance(target_node, (ast.Attribute, ast.Subscript)):
        lw.assign_to(target_node, value)
    return value


# ------------------------------------------------------------------------------------ views
#
# In Warp a sub-tile (``row = t[i]``, ``wp.tile_view(t, ...)``) aliases its parent, so updating it
# in place (``wp.tile_assign(row, u)``, ``row[j] = x``, ``wp.tile_matmul(a, b, row)``) changes
# the parent. weft's tiles are values: the frontend remembers which name was bound to a view of
# which tile, and after an in-place update of the view writes its new value back into the
# parent (``tile_slice_set`` / ``tile_assign``), which is rebound in turn.


def _views(lw: Lowerer) -> dict:
    return lw.__dict__.setdefault("tile_views", {})


def view_parent(lw: Lowerer, value_node):
    """The name of the tile ``value_node`` takes a view of (``t[i]``, ``t[1:3, :]``,
    ``wp.tile_view(t, ...)``), or None."""
    if isinstance(value_node, ast.Subscript) and isinstance(value_node.value, ast.Name):
        base = value_node.value.id
    elif isinstance(value_node, ast.Call) and value_node.args and isinstance(value_node.args[0], ast.Name):
        try:
            if lw.static_value(value_node.func) is not ops.tile_view:
                return None
        except WarpCodegenError:
            return None
        base = value_node.args[0].id
    else:
        return None
    v = lw.env.get(base)
    if not (hasattr(v, "type") and isinstance(v.type, TileType)):
        return None
    if isinstance(value_node, ast.Subscript) and not is_view(v, value_node):
        return None
    return base


def note_assignment(lw: Lowerer, name: str, value_node):
    """``name = value``: remember (or forget) that ``name`` is a view of another tile."""
    views = _views(lw)
    views.pop(name, None)
    parent = view_parent(lw, value_node)
    if parent is not None and parent != name:
        views[name] = (parent, value_node)


def write_back(lw: Lowerer, name: str, node):
    """After ``name`` (a view) was updated in place: its parent takes the new values."""
    rec = _views(lw).get(name)
    if rec is None:
        return
    parent, view_node = rec
    pv, v = lw.env.get(parent), lw.env.get(name)
    if not (hasattr(pv, "type") and isinstance(pv.type, TileType)):
        return
    sub = view_node
    if isinstance(view_node, ast.Call):
        a = _bind(lw, view_node, [("t", _REQUIRED), ("offset", _REQUIRED), ("shape", None)])
        sub = _view_as_subscript(lw, view_node, a) or view_node
    if isinstance(sub, ast.Subscript):
        new = assign(lw, pv, sub, v)
    else:
        new = _emit(lw, "tile_assign", [pv, v] + _padded(lw, _int_list(lw, a["offset"], node)), pv.type, node)
    lw.assign_to(ast.Name(id=parent, ctx=ast.Store()), new)
    write_back(lw, parent, node)


# --------------------------------------------------------------------------- construction


def _reject_struct(lw: Lowerer, dtype, op: str, node):
    if getattr(dtype, "_kind", None) == "struct":
        raise lw.error(f"{op}() does not take tiles of a Warp struct ({wt.type_repr(dtype)})", node, WarpCodegenTypeError)


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
    n = max(0, -(-(stop - start) // step)) if isinstance(step, int) and isinstance(start, int) and isinstance(stop, int) else max(0, int(-(-(stop - start) // step)))
    dtype = _dtype(lw, kw["dtype"], node) if "dtype" in kw else (wt.float32 if any(isinstance(v, float) for v in values) else wt.int32)
    _reject_struct(lw, dtype, "tile_arange", node)
    t = TileType(dtype, (n,))
    return _emit(
        lw, f"tile_arange{_targs(dtype, n)}", [lw.const(start, dtype), lw.const(step, dtype)], t, node, differentiable=False
    )


# ------------------------------------------------------------------------ loads and stores


def _array_arg(lw: Lowerer, x, node):
    arr = lw.expr(x)
    if not isinstance(arr.type, wt.ArrayType):
        raise lw.error(f"{ast.unparse(node.func)}() takes an array, got {wt.type_repr(arr.type)}", node, WarpCodegenTypeError)
    return arr


def _offsets(lw: Lowerer, x, ndim: int, node) -> list:
    offs = _int_list(lw, x, node) if x is not None else []
    if len(offs) > ndim:
        raise lw.error(f"{ast.unparse(node.func)}(): {len(offs)} offsets for {ndim} dimension(s)", node, WarpCodegenValueError)
    return _padded(lw, offs)


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
    return _emit(lw, f"tile_load{_targs(t.dtype, *shape)}", [arr] + _offsets(lw, a["offset"], len(shape), node), t, node)


def _store_like(symbol, returns):
    def handler(lw: Lowerer, node):
        a = _bind(lw, node, [("a", _REQUIRED), ("t", _REQUIRED), ("offset", None), ("bounds_check", True), ("aligned", False)])
        arr = _array_arg(lw, a["a"], node)
        if returns:  # an atomic add: Warp's element types only
            from .tile_data_calls import check_atomic_dtype

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
        return _emit(lw, symbol, args, t.type if returns else None, node, side_effect=True)

    return handler


# ---------------------------------------------------------------------------- element-wise


def _element_op(lw: Lowerer, target, elem_args, node):
    """Resolve ``target`` (a builtin or a user func) for element arguments; returns (symbol,
    adjoint symbol, adapted args, result type, differentiable)."""
    if isinstance(target, reg.Builtin):
        try:
            ov, args, rtype = tr.choose_overload(target, elem_args, lambda v, t: lw.const(v, t))
        except TypeError as e:
            raise lw.error(str(e), node, WarpCodegenTypeError) from None
        return f"weft::{ov.symbol}", f"weft::adj_{ov.symbol}", args, rtype, ov.differentiable
    if getattr(target, "_weft_kind", None) == "func":
        try:
            inst, args = target.specialize(list(elem_args), lambda v, t: lw.const(v, t))
        except WarpCodegenError as e:
            raise lw.through_call(e, node) from None
        except TypeError as e:
            raise lw.error(str(e), node, WarpCodegenTypeError) from None
        if inst.ret_type is None or inst.ref_params:
            raise lw.error(f"tile_map(): '{target.key}' must return a value and take no wp.ref parameters", node)
        if inst not in lw.fn.callees:
            lw.fn.callees.append(inst)
        return inst.symbol, f"adj_{inst.symbol}", args, inst.ret_type, inst.differentiable
    raise lw.error(f"{ast.unparse(node.func)}(): {target!r} is not a builtin or a @wp.func", node, WarpCodegenTypeError)


def tile_map(lw: Lowerer, target, args: list, node):
    """``target`` applied per element to the tiles among ``args`` (one shape); other args are
    passed as they are to every element's call."""
    tiles = tuple(k for k, a in enumerate(args) if isinstance(a.type, TileType))
    shapes = {args[k].type.shape for k in tiles}
    if not tiles or len(shapes) != 1:
        raise lw.error(
            f"{ast.unparse(node.func) if isinstance(node, ast.Call) else 'a tile operation'}: tiles of one shape needed, "
            f"got {', '.join(wt.type_repr(a.type) for a in args)}",
            node,
            WarpCodegenValueError,
        )
    if len(tiles) > 3:
        raise lw.error("element-wise tile operations take up to 3 tiles", node)
    dummies = [lw.fn.new_var(a.type.dtype) if k in tiles else a for k, a in enumerate(args)]
    sym, adj_sym, adapted, rtype, diff = _element_op(lw, target, dummies, node)
    final = [args[k] if k in tiles else adapted[k] for k in range(len(args))]
    result = TileType(rtype, shapes.pop())
    return lw.call(intr.TILE_MAP, final, result, attr=ElementOp(sym, adj_sym, tiles, diff), node=node)


def _function_arg(lw: Lowerer, x, node):
    v = lw.argument(x)
    if not isinstance(v, Static):
        raise lw.error(f"{ast.unparse(node.func)}(): the first argument is a builtin or a @wp.func", node, WarpCodegenTypeError)
    return v.value


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
    structs = [t for t in elem if _is_struct(t)]
    if structs:
        return _struct_binop(lw, builtin, a, b, elem, node)
    return tile_map(lw, builtin, [a, b], node)


def _is_struct(t) -> bool:
    return getattr(t, "_kind", None) == "struct"


def struct_element_binop(lw: Lowerer, builtin, a, b, node):
    """``t[i] += s`` of a tile of structs: the element and ``s`` added (or subtracted) field by
    field; other operators are refused as Warp does."""
    if builtin.name not in ("add", "sub") or a.type != b.type:
        what = "bitwise inplace" if builtin.name.startswith("bit_") else builtin.name
        raise lw.error(
            f"{what} operations on elements of a Warp struct ({wt.type_repr(a.type)}) are not supported",
            node,
            WarpCodegenTypeError,
        )
    return _emit(lw, builtin.name, [a, b], a.type, node, differentiable=wt.is_differentiable(a.type))


def _struct_binop(lw: Lowerer, builtin, a, b, elem, node):
    """``+`` and ``-`` of tiles of one struct type: field by field (the struct's generated
    ``weft::add`` / ``weft::sub``)."""
    if builtin.name not in ("add", "sub") or elem[0] != elem[1]:
        what = "bitwise inplace" if builtin.name.startswith("bit_") else builtin.name
        raise lw.error(
            f"{what} operations on tiles of a Warp struct ({wt.type_repr(elem[0])}) are not supported: "
            "structs add and subtract field by field, nothing else",
            node,
            WarpCodegenTypeError,
        )
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
    axis = _static(lw, a["axis"], "axis", node)
    if axis is None:
        return _emit(lw, "tile_sum", [t], TileType(t.type.dtype, (1,)), node)
    axis = int(axis) + (t.type.ndim if int(axis) < 0 else 0)
    if not 0 <= axis < t.type.ndim:
        raise lw.error(f"tile_sum(): axis {axis} of a {t.type.ndim}-D tile", node, WarpCodegenValueError)
    shape = tuple(d for k, d in enumerate(t.type.shape) if k != axis) or (1,)
    r = TileType(t.type.dtype, shape)
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
    axis = _static(lw, a["axis"], "axis", node)
    if axis is not None:
        axis = int(axis) + (t.type.ndim if int(axis) < 0 else 0)
        if not 0 <= axis < t.type.ndim:
            raise lw.error(f"tile_reduce(): axis {axis} of a {t.type.ndim}-D tile", node, WarpCodegenValueError)
    e = lw.fn.new_var(t.type.dtype)
    try:
        sym, adj_sym, _, rtype, _ = _element_op(lw, target, [e, e], node)
    except WarpCodegenTypeError as err:
        if getattr(t.type.dtype, "_kind", None) == "struct":
            raise lw.error(f"tile_reduce(): no overload of the operation takes a Warp struct ({err.bare_msg})", node, WarpCodegenTypeError) from None
        raise
    if rtype != t.type.dtype:
        raise lw.error(
            f"tile_reduce(): the operation must return the tile element type {wt.type_repr(t.type.dtype)}, "
            f"it returns {wt.type_repr(rtype)}",
            node,
            WarpCodegenTypeError,
        )
    if axis is None:
        return lw.call(intr.TILE_REDUCE, [t], TileType(rtype, (1,)), attr=ElementOp(sym, adj_sym, (0,), False), node=node)
    shape = tuple(d for k, d in enumerate(t.type.shape) if k != axis) or (1,)
    op = ElementOp(sym, adj_sym, (0,), False, axis)
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
    import math

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


def _slice_call_as_slice(lw: Lowerer, e):
    """``slice(a, b, c)`` written in a kernel, as the ``ast.Slice`` it means; else None."""
    if not (isinstance(e, ast.Call) and isinstance(e.func, ast.Name) and e.func.id == "slice" and not e.keywords):
        return None
    args = list(e.args)
    if not 1 <= len(args) <= 3:
        raise lw.error("slice() takes 1 to 3 arguments", e, WarpCodegenTypeError)
    if len(args) == 1:
        args = [None] + args
    return ast.Slice(*(args + [None] * (3 - len(args))))


def _view_as_subscript(lw: Lowerer, node, a):
    """``wp.tile_view(t, offset=(slice(...), ...))`` as the subscript ``t[...]`` it equals, or
    None when the offset holds no slice."""
    off = a["offset"]
    elts = off.elts if isinstance(off, ast.Tuple) else [off]
    slices = [_slice_call_as_slice(lw, e) for e in elts]
    if not any(sl is not None for sl in slices):
        return None
    if a["shape"] is not None:
        raise lw.error("tile_view(): pass either 'shape' together with a slice offset, not both: a slice gives the shape", node, WarpCodegenValueError)
    items = [sl if sl is not None else e for sl, e in zip(slices, elts)]
    sub = ast.Subscript(value=a["t"], slice=ast.Tuple(items, ast.Load()) if len(items) > 1 else items[0], ctx=ast.Load())
    return ast.copy_location(sub, node)


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


def view(lw: Lowerer, t, offs, shape, node):
    if len(shape) > t.type.ndim:
        raise lw.error(f"a view of shape {shape} of a {t.type.ndim}-D tile", node, WarpCodegenValueError)
    r = TileType(t.type.dtype, tuple(shape))
    return _emit(lw, f"tile_view<{ctype_name(r)}>", [t] + _padded(lw, offs), r, node)


def _tile_assign(lw: Lowerer, node):
    a = _bind(lw, node, [("dst", _REQUIRED), ("src", _REQUIRED), ("offset", None)])
    dst = _tile_arg(lw, a["dst"], "the destination", node)
    src = lw.expr(a["src"])
    if not isinstance(src.type, TileType):  # tile_assign(dst, value, offset): one element
        offs = _int_list(lw, a["offset"], node)
        return _rebind(lw, a["dst"], set_element(lw, dst, offs, src, node))
    if src.type.dtype != dst.type.dtype:
        raise lw.error("tile_assign(): tiles of different dtypes", node, WarpCodegenTypeError)
    offs = _int_list(lw, a["offset"], node) if a["offset"] is not None else []
    new = _emit(lw, "tile_assign", [dst, src] + _padded(lw, offs), dst.type, node)
    return _rebind(lw, a["dst"], new)


# ------------------------------------------------------------------------ element access


def _element_indices(lw: Lowerer, t, idx, node):
    if len(idx) != t.type.ndim:
        raise lw.error(f"a {t.type.ndim}-D tile indexed with {len(idx)} indices", node, WarpCodegenValueError)
    return [lw.const(lw.loc(node).id, wt.int32)] + _padded(lw, idx)


def get_element(lw: Lowerer, t, idx, node):
    return _emit(lw, "tile_extract", [t] + _element_indices(lw, t, idx, node), t.type.dtype, node)


def set_element(lw: Lowerer, t, idx, v, node, add=False):
    v = lw.cast(v, t.type.dtype) if wt.is_scalar(v.type) and wt.is_scalar(t.type.dtype) else v
    if v.type != t.type.dtype:
        raise lw.error(f"a {wt.type_repr(v.type)} assigned to an element of a tile of {wt.type_repr(t.type.dtype)}", node, WarpCodegenTypeError)
    return _emit(lw, "tile_add_at" if add else "tile_set", [t] + _element_indices(lw, t, idx, node) + [v], t.type, node)


def _index_plan(lw: Lowerer, t, node):
    """How ``t[...]`` indexes: per source dimension, an int32 value (an index, or a slice's start)
    and a step (None for an integer index); the result's shape. Slices are NumPy's, with bounds
    known when the kernel is built; integer indices may be runtime values."""
    nodes = lw.index_nodes(node)
    shape = t.type.shape
    if len(nodes) > len(shape):
        raise lw.error(f"a {len(shape)}-D tile indexed with {len(nodes)} indices", node, WarpCodegenValueError)
    nodes = nodes + [ast.Slice(None, None, None)] * (len(shape) - len(nodes))
    values, steps, out = [], [], []
    for d, n in enumerate(nodes):
        if isinstance(n, ast.Slice):
            bounds = [None if b is None else _static(lw, b, "slice bound", node) for b in (n.lower, n.upper, n.step)]
            if bounds[2] == 0:
                raise lw.error("slice step cannot be zero", node, WarpCodegenValueError)
            start, stop, step = slice(*bounds).indices(shape[d])
            length = len(range(start, stop, step))
            if length == 0:
                raise lw.error(f"the slice gives a zero-length axis: an empty tile ({ast.unparse(node)})", node, WarpCodegenValueError)
            values.append(lw.const(start, wt.int32))
            steps.append(step)
            out.append(length)
            continue
        v = lw.expr(n)
        if not wt.is_int(v.type):
            raise lw.error(
                f"tile indices must be integers or slices, got {wt.type_repr(v.type)} in {ast.unparse(node)}",
                node,
                WarpCodegenTypeError,
            )
        if v.is_const and not -shape[d] <= int(v.const) < shape[d]:
            raise lw.error(f"index {v.const} is out of bounds for axis {d} of size {shape[d]}", node, WarpCodegenValueError)
        values.append(lw.cast(v, wt.int32))
        steps.append(None)
    return values, steps, tuple(out)


def _slice_call(lw: Lowerer, symbol, t, values, steps, out_shape, extra, rtype, node):
    mask = sum(1 << d for d, st in enumerate(steps) if st is None)
    strides = [st or 0 for st in steps] + [0] * (4 - len(steps))
    view_t = TileType(t.type.dtype, out_shape)
    targs = f"<{ctype_name(view_t)}, {mask}, {', '.join(str(x) for x in strides)}>"
    args = [t, lw.const(lw.loc(node).id, wt.int32)] + _padded(lw, values) + extra
    return _emit(lw, f"{symbol}{targs}", args, rtype, node)


def _advanced_index(lw: Lowerer, t, node):
    """``t[idx, :]`` with an int tile ``idx``: the rows at those indices, or None."""
    nodes = lw.index_nodes(node)
    first = lw.expr(nodes[0]) if not isinstance(nodes[0], ast.Slice) else None
    if first is None or not isinstance(first.type, TileType):
        return None, first
    if not wt.is_int(first.type.dtype) or first.type.ndim != 1:
        raise lw.error("tile advanced indexing takes a 1-D integer index tile", node, WarpCodegenValueError)
    if any(not (isinstance(n, ast.Slice) and n.lower is None and n.upper is None and n.step is None) for n in nodes[1:]):
        raise lw.error("tile advanced indexing requires ':' on all other axes", node, WarpCodegenValueError)
    r = TileType(t.type.dtype, (first.type.shape[0], *t.type.shape[1:]))
    loc = lw.const(lw.loc(node).id, wt.int32)
    return _emit(lw, f"tile_gather_rows<{ctype_name(r)}>", [t, loc, first], r, node), first


def subscript(lw: Lowerer, t, node):
    """``t[i, j]``: an element; ``t[i]``, ``t[2:6, :]``, ``t[::-1]``: the sub-tile (NumPy's
    basic indexing); ``t[idx, :]`` with an int tile: those rows."""
    nodes = lw.index_nodes(node)
    if not isinstance(nodes[0], ast.Slice):
        probe = lw.expr(nodes[0])
        if isinstance(probe.type, TileType):
            if not wt.is_int(probe.type.dtype):
                raise lw.error("tile advanced indexing needs an integer index tile", node, WarpCodegenValueError)
            return _advanced_index(lw, t, node)[0]
    if len(nodes) == t.type.ndim and not any(isinstance(n, ast.Slice) for n in nodes):
        values, _, _ = _index_plan(lw, t, node)
        return get_element(lw, t, values, node)
    values, steps, out = _index_plan(lw, t, node)
    return _slice_call(lw, "tile_slice", t, values, steps, out, [], TileType(t.type.dtype, out), node)


def is_view(t, node) -> bool:
    """Whether the subscript ``node`` of tile ``t`` names a sub-tile rather than an element."""
    nodes = node.slice.elts if isinstance(node.slice, ast.Tuple) else [node.slice]
    return len(nodes) < t.type.ndim or any(isinstance(n, ast.Slice) for n in nodes)


def assign(lw: Lowerer, t, node, v):
    """``t[...] = v``: the new value of ``t`` (an element, or a sub-tile of ``v``'s shape)."""
    if not is_view(t, node):
        values, _, _ = _index_plan(lw, t, node)
        return set_element(lw, t, values, v, node)
    values, steps, out = _index_plan(lw, t, node)
    if not isinstance(v.type, TileType):
        raise lw.error(f"assigning to a tile slice requires a tile of matching shape {out}, got {wt.type_repr(v.type)}", node, WarpCodegenTypeError)
    if v.type.shape != out:
        raise lw.error(f"tile slice assignment: shape mismatch, a tile of shape {v.type.shape} does not fit the slice of shape {out}", node, WarpCodegenValueError)
    if v.type.dtype != t.type.dtype:
        raise lw.error("tile slice assignment: tiles of different dtypes", node, WarpCodegenTypeError)
    return _slice_call(lw, "tile_slice_set", t, values, steps, out, [v], t.type, node)


def _tile_extract(lw: Lowerer, node):
    if len(node.args) < 2:
        raise lw.error("tile_extract(a, *indices) takes a tile and its indices", node, WarpCodegenTypeError)
    t = _tile_arg(lw, node.args[0], "the value", node)
    return get_element(lw, t, [lw.cast(lw.expr(n), wt.int32) for n in node.args[1:]], node)


# ---------------------------------------------------------------------- threads and tiles


def _tile_from_thread_value(lw: Lowerer, node):
    a = _bind(lw, node, [("x", _REQUIRED), ("preserve_type", False)])
    x = lw.expr(a["x"])
    preserve = bool(_static(lw, a["preserve_type"], "preserve_type", node))
    if wt.is_scalar(x.type) or preserve or not hasattr(x.type, "_shape"):
        return _emit(lw, "tile_from_value", [x], TileType(x.type, (1,)), node)
    r = TileType(x.type._scalar, (*x.type._shape, 1))
    return _emit(lw, f"tile_from_components<{ctype_name(r)}>", [x], r, node)


def _untile(lw: Lowerer, node):
    a = _bind(lw, node, [("t", _REQUIRED)])
    t = _tile_arg(lw, a["t"], "the value", node)
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
    return lw.const(1, wt.int32)


# -------------------------------------------------------------------------------- products


def _tile_matmul(lw: Lowerer, node):
    a = _bind(lw, node, [("a", _REQUIRED), ("b", _REQUIRED), ("out", None), ("alpha", 1.0), ("beta", None)])
    x = _tile_arg(lw, a["a"], "a", node)
    y = _tile_arg(lw, a["b"], "b", node)
    if x.type.ndim != 2 or y.type.ndim != 2 or x.type.shape[1] != y.type.shape[0]:
        raise lw.error(f"tile_matmul(): shapes {x.type.shape} and {y.type.shape} do not multiply", node, WarpCodegenValueError)
    dtype = x.type.dtype
    if y.type.dtype != dtype or not wt.is_float(dtype):
        raise lw.error("tile_matmul(): two tiles of one float type", node, WarpCodegenTypeError)
    shape = (x.type.shape[0], y.type.shape[1])
    if a["out"] is not None:
        out = _tile_arg(lw, a["out"], "out", node)
        if out.type != TileType(dtype, shape):
            raise lw.error(f"tile_matmul(): out is {out.type!r}, the product is {TileType(dtype, shape)!r}", node, WarpCodegenValueError)
        beta = 1.0 if a["beta"] is None else a["beta"]
    else:
        out = _emit(lw, f"tile_zeros{_targs(dtype, *shape)}", [], TileType(dtype, shape), node, differentiable=False)
        beta = 0.0 if a["beta"] is None else a["beta"]
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

from . import tile_data_calls, tile_linalg_calls  # noqa: E402, F401 (register their operations)
