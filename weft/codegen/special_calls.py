"""Calls the frontend lowers specially (``wp.tid``, ``wp.static``, ``print``, ``wp.printf``,
``len``, atomics, ``wp.constant``): each handler takes the ``Lowerer`` and the ``ast.Call`` and
returns the resulting value. Registered by the identity of the Python object called."""

from __future__ import annotations

import ast

from .. import types as wt
from . import intrinsics as intr
from . import ir
from .errors import UnsupportedConstruct
from .frontend import Lowerer, Static, register_special


def _call_tid(lw: Lowerer, node):
    if node.args:
        raise lw.error("wp.tid() takes no arguments", node)
    return lw.tid(1, node)[0]


def _call_static(lw: Lowerer, node):
    if len(node.args) != 1:
        raise lw.error("wp.static() takes one expression", node)
    value = lw.static_eval(node.args[0])
    result = lw.from_python(value, "static", node)
    if isinstance(result, Static) and not callable(value) and not isinstance(value, type):
        raise lw.error(f"wp.static() produced {value!r}, which kernels cannot use", node)
    return result


def _call_print(lw: Lowerer, node):
    for k, a in enumerate(node.args):
        if k:
            lw.call(intr.PRINT_STR, [], None, attr=" ", node=node)
        v = lw.visit(a)
        if isinstance(v, str):
            lw.call(intr.PRINT_STR, [], None, attr=v, node=node)
        elif isinstance(v, ir.Var) and wt.is_scalar(v.type):
            lw.call(intr.PRINT_VALUE, [v], None, node=node)
        else:
            raise lw.error("print() in kernels takes strings and scalar values", a, UnsupportedConstruct)
    lw.call(intr.PRINT_NEWLINE, [], None, node=node)


def _call_printf(lw: Lowerer, node):
    if not node.args or not isinstance(node.args[0], ast.Constant) or not isinstance(node.args[0].value, str):
        raise lw.error("wp.printf() needs a constant format string first", node)
    args = []
    for a in node.args[1:]:
        v = lw.expr(a)
        if wt.is_float(v.type) and v.type is not wt.float64:
            v = lw.cast(v, wt.float64)
        args.append(v)
    lw.call(intr.PRINTF, args, None, attr=node.args[0].value, node=node)


def _call_len(lw: Lowerer, node):
    v = lw.expr(node.args[0])
    if not isinstance(v.type, wt.ArrayType):
        raise lw.error("len() takes an array in kernels", node)
    return lw.call(intr.SHAPE, [v], wt.int32, attr=0)


def _call_atomic(name):
    def handler(lw: Lowerer, node):
        args = lw.call_args(node, ["arr", "i", "j", "k", "l", "value"])
        if len(args) < 3 or not isinstance(args[0].type, wt.ArrayType):
            raise lw.error(f"wp.{name}(array, index..., value) needs an array, indices and a value", node)
        arr, idx, value = args[0], args[1:-1], args[-1]
        if len(idx) != arr.type.ndim:
            raise lw.error(f"wp.{name} on a {arr.type.ndim}-d array needs {arr.type.ndim} indices", node)
        value = lw.coerce_store_value(arr, value, node)
        return lw.call(intr.ATOMICS[name], [arr] + idx + [value], arr.type.dtype, node=node)

    return handler


def _call_constant(lw: Lowerer, node):
    return lw.from_python(lw.static_eval(node.args[0]), "constant", node)


register_special(intr.tid, _call_tid)
register_special(intr.static, _call_static)
register_special(print, _call_print)
register_special(intr.printf, _call_printf)
register_special(len, _call_len)
register_special(intr.constant, _call_constant)
for _name in intr.ATOMICS:
    register_special(getattr(intr, _name), _call_atomic(_name))
