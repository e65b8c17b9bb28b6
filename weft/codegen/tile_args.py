"""What every tile operation's lowering shares: binding a call's arguments by Warp's parameter
names, evaluating the ones a tile's type depends on when the kernel is built (shapes, dtypes,
axes), checking tiles, arrays and offsets, emitting the call of a C++ function of
``native/tile/`` (``_emit``: the renderer prints ``weft::SYMBOL(args)`` and, when differentiable,
``weft::adj_SYMBOL(args, adjoints, adj_ret)``), and element-wise maps (``tile_map``: a
``TILE_MAP`` intrinsic whose element operation the renderer passes as a lambda).
"""

from __future__ import annotations

import ast
import dataclasses
import typing

from .. import types as wt
from ..builtins import registry as reg
from ..tile.types import TileType
from . import composite
from . import intrinsics as intr
from . import typing_rules as tr
from .cnames import ctype_name
from .control_flow import StaticTuple
from .errors import WarpCodegenError, WarpCodegenTypeError, WarpCodegenValueError
from .statics import Static
from .tile_cuda import TileOverload

if typing.TYPE_CHECKING:
    from .frontend import Lowerer


_REQUIRED = object()


def call_name(node) -> str:
    """How the call ``node`` names what it calls (``wp.tile_load``), for error messages."""
    return ast.unparse(node.func)


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
    adj_from_result: str = ""  # a unary map's adjoint from its result: weft::adj_<f>_from_result


# float builtins whose derivative is a function of their value: a map of them differentiates from
# its result (native/tile/tile.h) rather than computing the function a second time
_ADJOINT_FROM_RESULT = {"tanh": "weft::adj_tanh_from_result", "exp": "weft::adj_exp_from_result"}


def _bind(lw: Lowerer, node, params) -> dict:
    """The call's argument nodes by parameter name (``params``: (name, default) pairs, default
    ``_REQUIRED`` for none); defaults for the ones left out."""
    name = call_name(node)
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
        raise lw.error(f"{call_name(node)}(): {what} must be a tile, got {wt.type_repr(v.type)}", node, WarpCodegenTypeError)
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


@dataclasses.dataclass(frozen=True)
class ArrayOverload(TileOverload):
    """A tile operation's overload that touches the array given as its first argument:
    ``array_access`` is ``"read"`` (tile_load), ``"write"`` (tile_store) or ``"update"`` (the
    atomic adds). The access analyses (access.py) count it like an array load or store."""

    array_access: str = "read"


def _emit(lw: Lowerer, symbol: str, args: list, rtype, node, differentiable=True, side_effect=False, array_access=None):
    params = tuple((f"arg{k}", a.type) for k, a in enumerate(args))
    if array_access:
        ov = ArrayOverload(params, rtype, symbol, differentiable, side_effect, array_access)
    else:
        ov = TileOverload(params, rtype, symbol, differentiable, side_effect)
    return lw.call(ov, args, rtype, node=node)


def _targs(*parts) -> str:
    return "<" + ", ".join(ctype_name(p) if not isinstance(p, (int, str)) else str(p) for p in parts) + ">"


def _reject_struct(lw: Lowerer, dtype, op: str, node):
    if composite.is_struct(dtype):
        raise lw.error(f"{op}() does not take tiles of a Warp struct ({wt.type_repr(dtype)})", node, WarpCodegenTypeError)


def reduced_axis(lw: Lowerer, t, x, node):
    """The ``axis`` argument ``x`` of a reduction of tile ``t`` (negative counts from the end) and
    the result's shape: ``(None, (1,))`` without an axis, else t's shape without that dimension."""
    axis = _static(lw, x, "axis", node)
    if axis is None:
        return None, (1,)
    axis = int(axis) + (t.type.ndim if int(axis) < 0 else 0)
    if not 0 <= axis < t.type.ndim:
        raise lw.error(f"{call_name(node)}(): axis {axis} of a {t.type.ndim}-D tile", node, WarpCodegenValueError)
    return axis, tuple(d for k, d in enumerate(t.type.shape) if k != axis) or (1,)


def _array_arg(lw: Lowerer, x, node):
    arr = lw.expr(x)
    if not isinstance(arr.type, wt.ArrayType):
        raise lw.error(f"{call_name(node)}() takes an array, got {wt.type_repr(arr.type)}", node, WarpCodegenTypeError)
    return arr


def _offsets(lw: Lowerer, x, ndim: int, node) -> list:
    offs = _int_list(lw, x, node)
    if len(offs) > ndim:
        raise lw.error(f"{call_name(node)}(): {len(offs)} offsets for {ndim} dimension(s)", node, WarpCodegenValueError)
    return _padded(lw, offs)


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
    raise lw.error(f"{call_name(node)}(): {target!r} is not a builtin or a @wp.func", node, WarpCodegenTypeError)


def tile_map(lw: Lowerer, target, args: list, node):
    """``target`` applied per element to the tiles among ``args`` (one shape); other args are
    passed as they are to every element's call."""
    tiles = tuple(k for k, a in enumerate(args) if isinstance(a.type, TileType))
    shapes = {args[k].type.shape for k in tiles}
    if not tiles or len(shapes) != 1:
        raise lw.error(
            f"{call_name(node) if isinstance(node, ast.Call) else 'a tile operation'}: tiles of one shape needed, "
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
    from_result = ""
    if isinstance(target, reg.Builtin) and len(args) == 1 and wt.is_float(rtype) and rtype == args[0].type.dtype:
        from_result = _ADJOINT_FROM_RESULT.get(sym.removeprefix("weft::"), "")
    return lw.call(intr.TILE_MAP, final, result, attr=ElementOp(sym, adj_sym, tiles, diff, adj_from_result=from_result), node=node)


def _function_arg(lw: Lowerer, x, node):
    v = lw.argument(x)
    if not isinstance(v, Static):
        raise lw.error(f"{call_name(node)}(): the first argument is a builtin or a @wp.func", node, WarpCodegenTypeError)
    return v.value
