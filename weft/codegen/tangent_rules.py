"""Forward-mode rules of the builtins, as IR (used by ``tangent``).

Contract: ``tangent_of(builder, call)`` emits, through ``builder``, the statements computing the
tangent of the builtin call ``call`` (whose operands are the tangent function's vars) and returns
the var holding it, or None where the tangent is zero. A builtin with a rule here gets a tangent
made of builtin calls, which the reverse pass can differentiate again (second derivatives); any
other builtin, or an overload a rule declines, gets ``builder.via_adjoint(call)``: the tangent
evaluated from the builtin's adjoint, exact but forward-only.

The rules keep the conventions of the adjoints in ``native/`` where a derivative is a choice
(length and normalize of a zero vector have zero derivative; floor, sign, step... have none).
"""

from __future__ import annotations

import math

from .. import types as wt
from .. import vector_types as vt
from ..builtins import scalar as sb
from ..builtins.registry import registry
from ..struct import is_struct
from . import intrinsics as intr
from . import typing_rules as tr

_NAMES: dict = {}


def _name_of(overload) -> str | None:
    if not _NAMES:
        for name, b in registry.items():
            for ov in b.overloads:
                _NAMES[id(ov)] = name
    return _NAMES.get(id(overload))


def has_tangent(t) -> bool:
    """Whether values of type ``t`` carry a tangent: float values, composites of floats, arrays
    of them, and structs and tuples holding any of these."""
    if wt.is_fabric(t):
        return False
    if wt.is_array_like(t) or isinstance(t, wt.FixedArrayType):
        return has_tangent(t.dtype)
    if is_struct(t):
        return any(has_tangent(f) for f in t.vars.values())
    if isinstance(t, wt.TupleType):
        return any(has_tangent(x) for x in t.types)
    return wt.is_differentiable(t)


def float_paths(t) -> list:
    """The float scalars inside a value of type ``t``, as paths: tuples of steps ``("field",
    name)`` (a struct's), ``("item", k)`` (a tuple's), ``("at", i)`` (a vector's, quaternion's
    or transform's component), ``("at2", i, j)`` (a matrix's). A float scalar is ``()``."""
    if wt.is_float(t):
        return [()]
    if vt.is_composite(t):
        if not wt.is_float(vt.scalar_of(t)):
            return []
        if vt.is_matrix(t):
            rows, cols = t._shape
            return [(("at2", i, j),) for i in range(rows) for j in range(cols)]
        return [(("at", i),) for i in range(t._length)]
    if is_struct(t):
        return [(("field", name),) + p for name, ft in t.vars.items() for p in float_paths(ft)]
    if isinstance(t, wt.TupleType):
        return [(("item", k),) + p for k, x in enumerate(t.types) for p in float_paths(x)]
    return []  # integers, arrays (their tangents are arrays of their own), opaque handles


def has_components(t) -> bool:
    """Whether ``jvp_adjoint`` can assemble a tangent of type ``t`` component by component."""
    return bool(float_paths(t))


def builtin(b, name: str, args: list, loc):
    """Emit a call of the builtin ``name`` on ``args`` (its overload chosen as the frontend
    would) and return its result var."""
    target = registry.get(name) or sb._cmp[name]  # the comparisons are the operators' builtins
    ov, args, rtype = tr.choose_overload(target, args, lambda v, t: b.const(v, t))
    return b.call(ov, args, rtype, loc)


class _Emit:
    """Shorthand for building a rule's expression: ``e("mul", x, y)``."""

    def __init__(self, b, loc):
        self.b, self.loc = b, loc

    def __call__(self, name, *args):
        return builtin(self.b, name, list(args), self.loc)

    def const(self, value, like):
        return self.b.const(value, vt.scalar_of(like.type))


def _sum(e, terms):
    terms = [t for t in terms if t is not None]
    out = terms[0]
    for t in terms[1:]:
        out = e("add", out, t)
    return out


# ------------------------------------------------------------------ rule families
_LINEAR = {
    "add", "sub", "neg", "pos", "transpose", "trace", "diag", "get_diag", "degrees", "radians",
    "spatial_top", "spatial_bottom", "skew", "spatial_adjoint", "transform_get_translation",
    "transform_get_rotation",
}
_BILINEAR = {"mul", "dot", "cross", "outer", "cw_mul", "ddot", "spatial_cross", "spatial_cross_dual", "spatial_dot"}
_CONSTANT = {"floor", "ceil", "round", "rint", "trunc", "sign", "step"}  # zero derivative (as the adjoints)


def _linear(b, s, e):
    """f(x...) linear in its float operands: f of their tangents (the others as they are)."""
    args = [b.dz(a, s.loc) if has_tangent(a.type) else a for a in s.args]
    return b.call(s.callee, args, s.result.type, s.loc)


def _bilinear(b, s, e):
    if any(vt.is_transform(a.type) for a in s.args):
        return NotImplemented  # transform products rotate the translation: not bilinear
    x, y = s.args
    dx, dy = b.d(x), b.d(y)
    terms = []
    if dx is not None:
        terms.append(b.call(s.callee, [dx, y], s.result.type, s.loc))
    if dy is not None:
        terms.append(b.call(s.callee, [x, dy], s.result.type, s.loc))
    return _sum(e, terms)


def _where(b, s, e):
    """where(cond, a, b) / select(cond, a, b): the condition is tested, not differentiated."""
    cond, *values = s.args
    return b.call(s.callee, [cond] + [b.dz(v, s.loc) for v in values], s.result.type, s.loc)


def _div(b, s, e):
    x, y = s.args
    if not wt.is_scalar(y.type):
        return NotImplemented
    dx, dy = b.d(x), b.d(y)
    num = dx
    if dy is not None:
        part = e("mul", s.result, dy)
        num = e("sub", dx, part) if dx is not None else e("neg", part)
    return e("div", num, y)


def _pow(b, s, e):
    x, p = s.args
    if not wt.is_scalar(x.type) or b.d(p) is not None:
        return NotImplemented
    if p.is_const and p.const == 0:
        return None
    one = e.const(1.0, p)
    return e("mul", e("mul", p, e("pow", x, e("sub", p, one))), b.d(x))


def _length(b, s, e):
    """d|v| = (v . dv) / |v|, and zero at v == 0 (as adj_length)."""
    v, = s.args
    y = s.result
    zero, one = e.const(0.0, y), e.const(1.0, y)
    pos = e("gt", y, zero)
    q = e("div", e("dot", v, b.d(v)), e("where", pos, y, one))
    return e("where", pos, q, zero)


def _length_sq(b, s, e):
    v, = s.args
    return e("mul", e.const(2.0, s.result), e("dot", v, b.d(v)))


def _normalize(b, s, e):
    """d(v/|v|) = (dv - n (n . dv)) / |v|, and zero at v == 0 (as adj_normalize)."""
    v, = s.args
    n, dv = s.result, b.d(v)
    length = e("length", v)
    zero, one = e.const(0.0, length), e.const(1.0, length)
    pos = e("gt", length, zero)
    q = e("div", e("sub", dv, e("mul", n, e("dot", n, dv))), e("where", pos, length, one))
    return e("where", pos, q, b.call(intr.ZERO, [], n.type, s.loc))


def _scalar_rule(f):
    """A rule of a scalar function ``y = g(x)``: ``f(e, x, y)`` is g'(x), times dx."""

    def rule(b, s, e):
        if len(s.args) != 1 or not wt.is_float(s.args[0].type):
            return NotImplemented
        x, = s.args
        return e("mul", f(e, x, s.result), b.d(x))

    return rule


def _one_minus_sq(e, x, y):
    return e("sub", e.const(1.0, y), e("mul", y, y))


_SCALAR = {
    "sin": lambda e, x, y: e("cos", x),
    "cos": lambda e, x, y: e("neg", e("sin", x)),
    "tan": lambda e, x, y: e("add", e.const(1.0, y), e("mul", y, y)),
    "sinh": lambda e, x, y: e("cosh", x),
    "cosh": lambda e, x, y: e("sinh", x),
    "tanh": _one_minus_sq,
    "exp": lambda e, x, y: y,
    "log": lambda e, x, y: e("div", e.const(1.0, x), x),
    "log2": lambda e, x, y: e("div", e.const(1.0 / math.log(2.0), x), x),
    "log10": lambda e, x, y: e("div", e.const(1.0 / math.log(10.0), x), x),
    "sqrt": lambda e, x, y: e("div", e.const(0.5, y), y),
    "cbrt": lambda e, x, y: e("div", e.const(1.0 / 3.0, y), e("mul", y, y)),
    "atan": lambda e, x, y: e("div", e.const(1.0, x), e("add", e.const(1.0, x), e("mul", x, x))),
    "erf": lambda e, x, y: e("mul", e.const(2.0 / math.sqrt(math.pi), x), e("exp", e("neg", e("mul", x, x)))),
    "frac": lambda e, x, y: e.const(1.0, x),
}

RULES: dict = {
    **{name: _linear for name in _LINEAR},
    **{name: _bilinear for name in _BILINEAR},
    **{name: _scalar_rule(f) for name, f in _SCALAR.items()},
    **{name: (lambda b, s, e: None) for name in _CONSTANT},
    "where": _where,
    "select": _where,
    "div": _div,
    "pow": _pow,
    "length": _length,
    "norm_l2": _length,
    "length_sq": _length_sq,
    "normalize": _normalize,
}


def tangent_of(b, s):
    """The tangent var of the builtin call ``s`` (None: zero), emitted through builder ``b``."""
    rule = RULES.get(_name_of(s.callee))
    if rule is not None:
        out = rule(b, s, _Emit(b, s.loc))
        if out is not NotImplemented:
            return out
    return b.via_adjoint(s)
