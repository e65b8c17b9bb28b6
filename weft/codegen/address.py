"""``wp.address_of(x)``: the address of storage as a ``uint64``, for native snippets
(``@wp.func_native``) that read or write through it.

Contract: ``lower(lw, target, node)`` takes the ``Lowerer`` and the argument's AST and returns the
``uint64`` result var. The argument must name storage: a local variable, an array element, or a
struct field / vector, quaternion, transform or matrix component reached from one of those
(``v.y``, ``s.inner.value``, ``m[i, j]``, ``a[i].x``). Temporaries (``x + y``, ``f().field``,
``wp.vec3(...).x``) and names bound to bare Python literals (as in Warp, ``x = 0`` has no storage
of its own; ``x = wp.int32(0)`` has) are compile errors.

A local's address is that of a fresh copy of its value which the name is rebound to, so what a
snippet writes through the address is what later reads of the name see, and other names bound to
the same value (``y = x`` earlier) keep theirs: value semantics, as everywhere in weft. The result
has no gradient.

The IR: ``address_of_local(var, component indices...)`` and ``address_of_element(array, indices...,
component indices...)`` (the latter counts as a read and a write of the array for the access
analysis), ``attr = steps``: ``("field", name)`` or ``("component", count)`` per step of the path,
rendered as ``weft::address_of(lvalue)`` over ``native/address.h``'s lvalue helpers.
"""

from __future__ import annotations

import ast
import typing

from .. import types as wt
from . import composite
from .ast_scans import subscript_indices
from . import intrinsics as intr
from . import ir
from .errors import UnsupportedConstruct, WarpCodegenTypeError

if typing.TYPE_CHECKING:
    from .frontend import Lowerer

_WHAT = "a local variable, an array element, a struct field or a vector/matrix component"


def lower(lw: Lowerer, target, node) -> ir.Var:
    chain = []
    root = target
    while isinstance(root, (ast.Attribute, ast.Subscript)):
        chain.append(root)
        root = root.value
    chain.reverse()
    if not isinstance(root, ast.Name) or not isinstance(lw.env.get(root.id), ir.Var):
        raise _temporary(lw, target, node)
    cut = _last_array_subscript(lw, lw.env[root.id].type, chain, target, node)
    if cut is None:
        base = _fresh_local(lw, root, node)
        steps, extra = _steps(lw, base.type, chain, node)
        return lw.call(intr.ADDRESS_OF_LOCAL, [base] + extra, wt.uint64, attr=steps, node=node)
    arr = lw.expr(chain[cut].value)
    arr, idx = lw.array_and_index(chain[cut], arr)
    steps, extra = _steps(lw, arr.type.dtype, chain[cut + 1 :], node)
    return lw.call(intr.ADDRESS_OF_ELEMENT, [arr] + idx + extra, wt.uint64, attr=steps, node=node)


def _temporary(lw, target, node):
    return lw.error(
        f"wp.address_of() needs {_WHAT}; '{ast.unparse(target)}' is a temporary value with no storage "
        "(assign it to a variable first)",
        node,
    )


def _last_array_subscript(lw, t, chain, target, node):
    """The position in ``chain`` of the last subscript that indexes an array, or None. Checks
    the path's types on the way (no code is emitted)."""
    cut = None
    for k, n in enumerate(chain):
        if isinstance(n, ast.Subscript) and wt.is_array_like(t):
            cut, t = k, t.dtype
        elif isinstance(n, ast.Attribute) and composite.is_struct(t):
            if n.attr not in t.vars:
                raise lw.error(f"struct {t.key} has no field '{n.attr}'", n, WarpCodegenTypeError)
            t = t.vars[n.attr]
        elif isinstance(n, ast.Attribute) and composite.is_composite(t) and composite.attribute_index(t, n.attr) is not None:
            t = t._scalar
        elif isinstance(n, ast.Subscript) and composite.is_composite(t):
            t = composite.component_type(t, _index_count(n))
        else:
            raise _temporary(lw, target, node)
    if wt.is_array_like(t):
        raise lw.error(
            f"wp.address_of() needs {_WHAT}; '{ast.unparse(target)}' is an array: take the address of "
            "an element, wp.address_of(a[i])",
            node,
            WarpCodegenTypeError,
        )
    return cut


def _index_count(n: ast.Subscript) -> int:
    return len(subscript_indices(n))


def _fresh_local(lw, name: ast.Name, node) -> ir.Var:
    """Rebind ``name`` to a copy of its value and return the copy (see the module docstring)."""
    v = lw.env[name.id]
    if v.id in lw.literal_locals:
        shown = f"wp.{wt.type_repr(v.type)}({v.const!r})"
        raise lw.error(
            f"wp.address_of({name.id}): '{name.id}' is bound to a Python literal, which has no storage of "
            f"its own; give it a type: {name.id} = {shown}",
            node,
        )
    copy = lw.call(intr.COPY, [v], v.type, node=node)
    lw.env[name.id] = copy
    return copy


def _steps(lw, t, chain, node):
    """``(steps, component index vars)`` for the path ``chain`` below a value of type ``t``."""
    steps, extra = [], []
    k = 0
    while k < len(chain):
        n = chain[k]
        if isinstance(n, ast.Attribute) and composite.is_struct(t):
            steps.append(("field", n.attr))
            t = t.vars[n.attr]
        elif isinstance(n, ast.Attribute):
            steps.append(("component", 1))
            extra.append(lw.const(composite.attribute_index(t, n.attr), wt.int32))
            t = t._scalar
        else:
            nodes = subscript_indices(n)
            if composite.has_slice(nodes):
                raise lw.error("wp.address_of() takes one component, not a slice", n, UnsupportedConstruct)
            idx = lw.index_list(n)
            if t._kind == "matrix" and len(idx) == 1:  # m[i][j]: one element, written in two steps
                nxt = chain[k + 1] if k + 1 < len(chain) else None
                if not isinstance(nxt, ast.Subscript) or _index_count(nxt) != 1:
                    raise lw.error(
                        "wp.address_of() of a matrix row is not supported; take an element, m[i, j]",
                        n,
                        UnsupportedConstruct,
                    )
                idx += lw.index_list(nxt)
                k += 1
            want = 2 if t._kind == "matrix" else 1
            if len(idx) != want:
                raise lw.error(
                    f"a {wt.type_repr(t)} component takes {want} index(es), got {len(idx)}", n, WarpCodegenTypeError
                )
            for d, i in enumerate(idx):
                composite.check_index(lw, i, n, t._shape[d])
            steps.append(("component", want))
            extra += idx
            t = t._scalar
        k += 1
    return tuple(steps), extra
