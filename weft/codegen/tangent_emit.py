"""C++ of the ``jvp_adjoint`` intrinsic (forward mode, see ``tangent``): a call's tangent
evaluated from its adjoint.

For a call ``y = f(x...)`` whose result has components ``y_k``, ``dy_k = sum_i <adj_f(x, e_k)_i,
dx_i>``: the adjoint seeded with the unit vector ``e_k`` gives row k of the Jacobian, and
``weft::tangent_dot`` (native/tangent.h) contracts it with each operand's tangent. One adjoint
call per result component, in an immediately called lambda (as ``wp.grad`` calls are rendered).
"""

from __future__ import annotations

from .. import vector_types as vt
from . import ir
from .cnames import ctype_name
from .tangent_rules import float_paths


def accessor(path) -> str:
    """The C++ member access of a ``tangent_rules.float_paths`` path ("" for a scalar)."""
    out = []
    for step in path:
        if step[0] == "field":
            out.append(f".f_{step[1]}")  # struct fields, as struct.py and native structs name them
        elif step[0] == "item":
            out.append(".tail" * step[1] + ".head")  # native/tuple.h
        elif step[0] == "at2":
            out.append(f".data[{step[1]}][{step[2]}]")
        else:
            out.append(f"[{step[1]}]")
    return "".join(out)


def _leaf_type(t, path):
    for step in path:
        if step[0] == "field":
            t = t.vars[step[1]]
        elif step[0] == "item":
            t = t.types[step[1]]
        else:
            t = vt.scalar_of(t)
    return t


def render(r, b, s, a) -> str:
    callee, positions = s.attr
    n = len(s.args) - len(positions)
    xs, dots = a[:n], a[n:]
    rt = ctype_name(s.result.type)
    name = f"weft::adj_{callee.symbol}" if ir.is_builtin(callee) else f"adj_{callee.symbol}"
    grads = [f"g{k}" for k in range(n)]
    decls = " ".join(f"{ctype_name(x.type)} g{k}{{}};" for k, x in enumerate(s.args[:n]))
    terms = [
        f"weft::tangent_dot(g{k}{accessor(p)}, {d}{accessor(p)})"
        for k, d in zip(positions, dots)
        for p in float_paths(s.args[k].type)
    ]
    contraction = " + ".join(terms) or "0.0"
    parts = []
    for p in float_paths(s.result.type):
        acc = accessor(p)
        st = ctype_name(_leaf_type(s.result.type, p))
        seed = f"{rt} e{{}}; e{acc} = {st}(1.0);" if acc else f"{rt} e = {st}(1.0);"
        call = f"{name}({', '.join(xs + grads + ['e'])});"
        parts.append(f"{{ {decls} {seed} {call} t{acc} = {st}({contraction}); }}")
    return f"[&]() {{ {rt} t{{}}; {' '.join(parts)} return t; }}()"
