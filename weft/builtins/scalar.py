"""Scalar builtins: operators, math functions and their type rules (C++ in native/scalar.h)."""

from __future__ import annotations

import math

import numpy as np

from .. import types as wt
from .registry import AnyScalar, Float, Int, Scalar, Value, builtin, p, registry


def _bool_result(arg_types):
    return wt.bool


def _unary_float(name, doc, fn=None):
    return builtin(name, doc, "scalar math", fn).add(p("x", Float), Float)


def _binary_float(name, doc, fn=None):
    return builtin(name, doc, "scalar math", fn).add(p("x", Float, "y", Float), Float)


def _py_unary(fn):
    return lambda x: fn(float(x))


# --- operators (the frontend maps Python operators to these) --------------------------------
add = builtin("add", "a + b", "operator").add(p("a", Scalar, "b", Scalar), Scalar)
sub = builtin("sub", "a - b", "operator").add(p("a", Scalar, "b", Scalar), Scalar)
mul = builtin("mul", "a * b", "operator").add(p("a", Scalar, "b", Scalar), Scalar)
div = builtin("div", "a / b (integers truncate toward zero)", "operator").add(p("a", Scalar, "b", Scalar), Scalar)
floordiv = builtin("floordiv", "a // b (rounds toward negative infinity)", "operator").add(
    p("a", Scalar, "b", Scalar), Scalar
)
mod = builtin("mod", "a % b (C fmod semantics for floats, like Warp)", "operator").add(
    p("a", Scalar, "b", Scalar), Scalar
)
pow = builtin("pow", "x raised to the power y", "scalar math", lambda x, y: math.pow(x, y)).add(  # noqa: A001
    p("x", Float, "y", Float), Float
)
neg = builtin("neg", "-x", "operator").add(p("x", Scalar), Scalar)
pos = builtin("pos", "+x", "operator").add(p("x", Scalar), Scalar)

bit_and = builtin("bit_and", "a & b", "operator").add(p("a", Int, "b", Int), Int, differentiable=False)
bit_or = builtin("bit_or", "a | b", "operator").add(p("a", Int, "b", Int), Int, differentiable=False)
bit_xor = builtin("bit_xor", "a ^ b", "operator").add(p("a", Int, "b", Int), Int, differentiable=False)
lshift = builtin("lshift", "a << b", "operator").add(p("a", Int, "b", Int), Int, differentiable=False)
rshift = builtin("rshift", "a >> b", "operator").add(p("a", Int, "b", Int), Int, differentiable=False)
invert = builtin("invert", "~a", "operator").add(p("a", Int), Int, differentiable=False)

# Comparisons and logic: internal (not exported as weft.<name>), never differentiable.
_cmp = {}
for _name in ("eq", "ne", "lt", "le", "gt", "ge"):
    _cmp[_name] = builtin("_" + _name, "comparison", "internal").add(
        p("a", Value, "b", Value), wt.bool, symbol="cmp_" + _name, differentiable=False
    )
logical_not = builtin("_not", "not x", "internal").add(p("x", AnyScalar), wt.bool, symbol="logical_not", differentiable=False)
truth = builtin("_truth", "bool(x)", "internal").add(p("x", AnyScalar), wt.bool, symbol="truth", differentiable=False)

# --- math ----------------------------------------------------------------------------------
min = builtin("min", "The smaller of a and b", "scalar math").add(p("a", Scalar, "b", Scalar), Scalar)  # noqa: A001
max = builtin("max", "The larger of a and b", "scalar math").add(p("a", Scalar, "b", Scalar), Scalar)  # noqa: A001
abs = builtin("abs", "Absolute value", "scalar math").add(p("x", Scalar), Scalar)  # noqa: A001
sign = builtin("sign", "-1 for negative x, 1 otherwise", "scalar math").add(p("x", Scalar), Scalar)
clamp = builtin("clamp", "x limited to [a, b]", "scalar math").add(p("x", Scalar, "a", Scalar, "b", Scalar), Scalar)

sqrt = _unary_float("sqrt", "Square root", _py_unary(math.sqrt))
cbrt = _unary_float("cbrt", "Cube root", lambda x: math.copysign(abs_(float(x)) ** (1.0 / 3.0), float(x)))
exp = _unary_float("exp", "e raised to x", _py_unary(math.exp))
log = _unary_float("log", "Natural logarithm", _py_unary(math.log))
log2 = _unary_float("log2", "Base-2 logarithm", _py_unary(math.log2))
log10 = _unary_float("log10", "Base-10 logarithm", _py_unary(math.log10))
sin = _unary_float("sin", "Sine (radians)", _py_unary(math.sin))
cos = _unary_float("cos", "Cosine (radians)", _py_unary(math.cos))
tan = _unary_float("tan", "Tangent (radians)", _py_unary(math.tan))
asin = _unary_float("asin", "Arc sine", _py_unary(math.asin))
acos = _unary_float("acos", "Arc cosine", _py_unary(math.acos))
atan = _unary_float("atan", "Arc tangent", _py_unary(math.atan))
atan2 = _binary_float("atan2", "Arc tangent of y / x, in the quadrant of (x, y)", lambda y, x: math.atan2(y, x))
sinh = _unary_float("sinh", "Hyperbolic sine", _py_unary(math.sinh))
cosh = _unary_float("cosh", "Hyperbolic cosine", _py_unary(math.cosh))
tanh = _unary_float("tanh", "Hyperbolic tangent", _py_unary(math.tanh))
floor = _unary_float("floor", "Largest integer value not above x", _py_unary(math.floor))
ceil = _unary_float("ceil", "Smallest integer value not below x", _py_unary(math.ceil))
round = _unary_float("round", "Nearest integer value, halfway cases away from zero", None)  # noqa: A001
rint = _unary_float("rint", "Nearest integer value, halfway cases to even", None)
trunc = _unary_float("trunc", "x rounded toward zero", _py_unary(math.trunc))
frac = _unary_float("frac", "x - trunc(x)", None)
degrees = _unary_float("degrees", "Radians to degrees", _py_unary(math.degrees))
radians = _unary_float("radians", "Degrees to radians", _py_unary(math.radians))

isnan = builtin("isnan", "True where x is NaN", "scalar math").add(p("x", Float), wt.bool, differentiable=False)
isinf = builtin("isinf", "True where x is infinite", "scalar math").add(p("x", Float), wt.bool, differentiable=False)
isfinite = builtin("isfinite", "True where x is finite", "scalar math").add(
    p("x", Float), wt.bool, differentiable=False
)

select = builtin("select", "select(cond, a, b): b when cond is true, else a (Warp's order)", "scalar math").add(
    p("cond", AnyScalar, "a", Value, "b", Value), Value
)
where = builtin("where", "where(cond, a, b): a when cond is true, else b", "scalar math").add(
    p("cond", AnyScalar, "a", Value, "b", Value), Value
)
lerp = builtin("lerp", "a * (1 - t) + b * t", "scalar math").add(p("a", Float, "b", Float, "t", Float), Float)
smoothstep = builtin("smoothstep", "Smooth Hermite step of x from edge0 to edge1", "scalar math").add(
    p("edge0", Float, "edge1", Float, "x", Float), Float
)
step = builtin("step", "1 when x < 0, else 0 (Warp's convention)", "scalar math").add(p("x", Float), Float)
step.add(p("x", Int), Int, differentiable=False)


def abs_(x):
    return x if x >= 0 else -x


# --- evaluation from Python (outside kernels), e.g. ``wp.sin(0.5)`` -----------------------------
def _np_unary(ufunc):
    def fn(x):
        with np.errstate(all="ignore"):
            return float(ufunc(np.float64(float(x))))

    return fn


def _c_div(a, b):
    if isinstance(a, float) or isinstance(b, float):
        return a / b
    return 0 if b == 0 else int(a / b) if abs_(a) < 2**52 else (abs_(a) // abs_(b)) * (1 if (a < 0) == (b < 0) else -1)


def _c_mod(a, b):
    if isinstance(a, float) or isinstance(b, float):
        return math.fmod(a, b)
    return 0 if b == 0 else a - b * _c_div(a, b)


def _round_away(x):
    x = float(x)
    return float(math.floor(x + 0.5)) if x >= 0 else float(math.ceil(x - 0.5))


def _smoothstep(e0, e1, x):
    t = (x - e0) / (e1 - e0) if e1 != e0 else (0.0 if x < e0 else 1.0)
    t = 0.0 if t < 0.0 else 1.0 if t > 1.0 else t
    return t * t * (3.0 - 2.0 * t)


_host_impls = {
    "add": lambda a, b: a + b,
    "sub": lambda a, b: a - b,
    "mul": lambda a, b: a * b,
    "div": _c_div,
    "floordiv": lambda a, b: (math.floor(a / b) if isinstance(a, float) or isinstance(b, float) else (0 if b == 0 else a // b)),
    "mod": _c_mod,
    "pow": lambda x, y: _np_binary(np.power)(x, y),
    "neg": lambda x: -x,
    "pos": lambda x: +x,
    "bit_and": lambda a, b: a & b,
    "bit_or": lambda a, b: a | b,
    "bit_xor": lambda a, b: a ^ b,
    "lshift": lambda a, b: a << b,
    "rshift": lambda a, b: a >> b,
    "invert": lambda a: ~a,
    "min": lambda a, b: b if not a < b else a,
    "max": lambda a, b: b if not a > b else a,
    "abs": abs_,
    "sign": lambda x: type(x)(-1) if x < 0 else type(x)(1),
    "clamp": lambda x, a, b: b if (a if x < a else x) > b else (a if x < a else x),
    "cbrt": lambda x: math.copysign(abs_(float(x)) ** (1.0 / 3.0), float(x)),
    "round": _round_away,
    "rint": _np_unary(np.rint),
    "frac": lambda x: float(x) - math.trunc(float(x)),
    "isnan": lambda x: math.isnan(x),
    "isinf": lambda x: math.isinf(x),
    "isfinite": lambda x: math.isfinite(x),
    "select": lambda c, a, b: b if c else a,
    "where": lambda c, a, b: a if c else b,
    "lerp": lambda a, b, t: a * (1.0 - t) + b * t,
    "smoothstep": _smoothstep,
    "step": lambda x: 1.0 if x < 0 else 0.0,
    "atan2": lambda y, x: math.atan2(y, x),
}


def _np_binary(ufunc):
    def fn(x, y):
        with np.errstate(all="ignore"):
            return float(ufunc(np.float64(float(x)), np.float64(float(y))))

    return fn


for _b in list(registry.values()):
    if _b.group == "internal":
        continue
    if _b.name in _host_impls:
        _b.python_impl = _host_impls[_b.name]
    elif hasattr(np, _b.name) and _b.python_impl is not None:
        _b.python_impl = _np_unary(getattr(np, {"asin": "arcsin", "acos": "arccos", "atan": "arctan"}.get(_b.name, _b.name)))
