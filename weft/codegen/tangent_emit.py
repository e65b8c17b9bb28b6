"""C++ of the ``jvp_adjoint`` intrinsic (forward mode, see ``tangent``): a call's tangent
evaluated from its adjoint.

For a call ``y = f(x...)`` whose result has components ``y_k``, ``dy_k = sum_i <adj_f(x, e_k)_i,
dx_i>``: the adjoint seeded with the unit vector ``e_k`` gives row k of the Jacobian, and
``weft::tangent_dot`` (native/tangent.h) contracts it with each operand's tangent. One adjoint
call per result component, in an immediately called lambda (as ``wp.grad`` calls are rendered).
"""

from __future__ import annotations

from .. import types as wt
from .. import vector_types as vt
from . import ir
from .cnames import ctype_name


def components(t) -> list:
    """C++ accessors of the components of a value of type ``t`` ("" for a scalar)."""
    if wt.is_scalar(t):
        return [""]
    if vt.is_vector(t):
        return [f".c[{i}]" for i in range(t._length)]
    if vt.is_matrix(t):
        rows, cols = t._shape
        return [f".data[{i}][{j}]" for i in range(rows) for j in range(cols)]
    if vt.is_quaternion(t) or vt.is_transform(t):
        return [f"[{k}]" for k in range(t._length)]
    raise TypeError(f"no components for {wt.type_repr(t)}")


def render(r, b, s, a) -> str:
    callee, positions = s.attr
    n = len(s.args) - len(positions)
    xs, dots = a[:n], a[n:]
    rt = ctype_name(s.result.type)
    st = ctype_name(vt.scalar_of(s.result.type))
    name = f"weft::adj_{callee.symbol}" if ir.is_builtin(callee) else f"adj_{callee.symbol}"
    grads = [f"g{k}" for k in range(n)]
    decls = " ".join(f"{ctype_name(x.type)} g{k}{{}};" for k, x in enumerate(s.args[:n]))
    contraction = " + ".join(f"weft::tangent_dot(g{k}, {d})" for k, d in zip(positions, dots))
    parts = []
    for acc in components(s.result.type):
        seed = f"{rt} e{{}}; e{acc} = {st}(1.0);" if acc else f"{rt} e = {st}(1.0);"
        call = f"{name}({', '.join(xs + grads + ['e'])});"
        parts.append(f"{{ {decls} {seed} {call} t{acc} = {st}({contraction}); }}")
    return f"[&]() {{ {rt} t{{}}; {' '.join(parts)} return t; }}()"
