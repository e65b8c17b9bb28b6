"""``f(*v)`` in kernels and funcs: a starred call argument spread into positional arguments.

What can be spread is known when the kernel is built: the components of a vector or quaternion
(``wp.max(*v)``, ``wp.vec4(*v3, 1.0)``, ``wp.vec2(*v[1:3])``), the rows of a matrix
(``wp.matrix_from_rows(*m[:2])``), the items of a tuple, and the elements of an array slice with
constant bounds (``wp.vec3i(*arr[2:5])``: a load per element, checked as any). Each starred
value is evaluated once.

Contract: ``spread(lw, node)`` returns a copy of the ``ast.Call`` ``node`` whose starred
arguments are replaced by names bound (in ``lw.env``) to the values they spread to, and the list
of those names for the caller to drop after lowering the call.
"""

from __future__ import annotations

import ast
import typing

from .. import types as wt
from . import composite, ir
from . import intrinsics as intr
from .control_flow import StaticTuple
from .errors import WarpCodegenTypeError, WarpCodegenValueError

if typing.TYPE_CHECKING:  # annotations only: the frontend imports this module, not the reverse
    from .frontend import Lowerer

_KINDS = "vectors, matrices (their rows), quaternions, tuples and array slices with constant bounds"


def spread(lw: Lowerer, node: ast.Call):
    """``(call without starred arguments, temporary names to drop afterwards)``."""
    names, args = [], []
    for a in node.args:
        if not isinstance(a, ast.Starred):
            args.append(a)
            continue
        for v in _items(lw, a.value):
            name = f"$star{len(lw.env)}_{len(names)}"
            lw.env[name] = v
            names.append(name)
            args.append(ast.copy_location(ast.Name(id=name, ctx=ast.Load()), a))
    call = ast.copy_location(ast.Call(func=node.func, args=args, keywords=node.keywords), node)
    return call, names


def _items(lw: Lowerer, value: ast.expr) -> list:
    """The values ``*value`` spreads to."""
    if isinstance(value, ast.Subscript) and isinstance(value.slice, ast.Slice):
        base = lw.visit(value.value)
        if isinstance(base, ir.Var) and wt.is_array_like(base.type):
            return _array_slice_items(lw, base, value)
    v = lw.expr_or_tuple(value)
    if isinstance(v, StaticTuple):
        return list(v.items)
    if isinstance(v, ir.Var) and isinstance(v.type, wt.TupleType):
        return [lw.call(intr.TUPLE_GET, [v], t, attr=k, node=value) for k, t in enumerate(v.type.types)]
    if isinstance(v, ir.Var) and composite.is_composite(v.type) and v.type._kind in ("vector", "quaternion", "matrix"):
        n = v.type._shape[0]
        return [composite.read(lw, v, [lw.const(k, wt.int32)], value) for k in range(n)]
    raise lw.error(
        f"Starred expressions are only supported for {_KINDS}; got {ast.unparse(value)}",
        value,
        WarpCodegenTypeError,
    )


def _array_slice_items(lw: Lowerer, arr, node: ast.Subscript) -> list:
    """``*arr[start:stop:step]`` with constant bounds: one element load per index."""
    s = node.slice
    if arr.type.ndim != 1:
        raise lw.error("spreading an array slice (*a[i:j]) needs a 1-d array", node, WarpCodegenValueError)
    if s.upper is None:
        raise lw.error(
            "spreading an array slice requires explicit upper bound (*a[i:j]): the array's length is not known "
            "when the kernel is built",
            node,
            WarpCodegenValueError,
        )
    bounds = []
    for part, default in ((s.lower, 0), (s.upper, None), (s.step, 1)):
        if part is None:
            bounds.append(default)
            continue
        k = lw.constant_index(part)
        if k is None:
            raise lw.error(
                f"Slice component must be a compile-time constant to spread an array slice, got {ast.unparse(part)}",
                part,
                WarpCodegenValueError,
            )
        bounds.append(k)
    start, stop, step = bounds
    if start < 0 or stop < 0:
        raise lw.error("slice bounds cannot be negative for arrays when spreading (*a[i:j])", node, WarpCodegenValueError)
    if step <= 0:
        raise lw.error("slice step cannot be negative or zero when spreading an array slice", node, WarpCodegenValueError)
    return [lw.call(intr.LOAD, [arr, lw.const(i, wt.int32)], arr.type.dtype, node=node) for i in range(start, stop, step)]
