"""Scalar builtins: operators, math functions and their type rules (C++ in native/scalar.h)."""

from __future__ import annotations

import math

import numpy as np

from .. import types as wt
from .registry import AnyScalar, Builtin, Float, Int, Scalar, Value, builtin, p


# --- evaluation from Python (outside kernels), e.g. ``wp.sin(0.5)``: each declaration below
# names its host implementation; NumPy's ufuncs give NaN where the C library would (no exceptions)
def abs_(x):
    return x if x >= 0 else -x


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


def _np_binary(ufunc):
    def fn(x, y):
        with np.errstate(all="ignore"):
            return float(ufunc(np.float64(float(x)), np.float64(float(y))))

    return fn


def _expect(name, holds):
    """Host side of an ``expect_*`` builtin: print, as in a kernel, when the expectation fails."""

    def check(a, b, *tolerance):
        if not holds(a, b, *tolerance):
            print(f"Error: {name}({a}, {b}) failed")

    return check


def _near(a, b, tolerance=1e-6):
    return bool(np.all(np.abs(np.asarray(a, dtype=np.float64) - np.asarray(b, dtype=np.float64)) <= tolerance))


def _bool_result(arg_types):
    return wt.bool


_NUMPY_NAMES = {"asin": "arcsin", "acos": "arccos", "atan": "arctan"}


def _unary_float(name, doc, fn=None):
    """A float -> float builtin; its host implementation defaults to NumPy's ufunc of that name."""
    fn = fn or _np_unary(getattr(np, _NUMPY_NAMES.get(name, name)))
    return builtin(name, doc, "scalar math", fn).add(p("x", Float), Float)


def _binary_float(name, doc, fn=None):
    return builtin(name, doc, "scalar math", fn).add(p("x", Float, "y", Float), Float)


# --- operators (the frontend maps Python operators to these) --------------------------------
add = builtin("add", "a + b", "operator", lambda a, b: a + b).add(p("a", Scalar, "b", Scalar), Scalar)
sub = builtin("sub", "a - b", "operator", lambda a, b: a - b).add(p("a", Scalar, "b", Scalar), Scalar)
mul = builtin("mul", "a * b", "operator", lambda a, b: a * b).add(p("a", Scalar, "b", Scalar), Scalar)
div = builtin("div", "a / b (integers truncate toward zero)", "operator", _c_div).add(
    p("a", Scalar, "b", Scalar), Scalar
)
floordiv = builtin(
    "floordiv",
    "a // b (rounds toward negative infinity)",
    "operator",
    lambda a, b: math.floor(a / b) if isinstance(a, float) or isinstance(b, float) else (0 if b == 0 else a // b),
).add(p("a", Scalar, "b", Scalar), Scalar)
mod = builtin("mod", "a % b (C fmod semantics for floats, like Warp)", "operator", _c_mod).add(
    p("a", Scalar, "b", Scalar), Scalar
)
div_approx = builtin(
    "div_approx", "a / b allowing a faster, approximate division on GPUs (exact on the CPU)", "operator", lambda a, b: a / b
).add(p("a", Float, "b", Float), Float, symbol="div")
pow = builtin("pow", "x raised to the power y", "scalar math", lambda x, y: _np_binary(np.power)(x, y)).add(  # noqa: A001
    p("x", Float, "y", Float), Float
)
neg = builtin("neg", "-x", "operator", lambda x: -x).add(p("x", Scalar), Scalar)
pos = builtin("pos", "+x", "operator", lambda x: +x).add(p("x", Scalar), Scalar)

bit_and = builtin("bit_and", "a & b", "operator", lambda a, b: a & b).add(
    p("a", Int, "b", Int), Int, differentiable=False
)
bit_or = builtin("bit_or", "a | b", "operator", lambda a, b: a | b).add(
    p("a", Int, "b", Int), Int, differentiable=False
)
bit_xor = builtin("bit_xor", "a ^ b", "operator", lambda a, b: a ^ b).add(
    p("a", Int, "b", Int), Int, differentiable=False
)
lshift = builtin("lshift", "a << b", "operator", lambda a, b: a << b).add(
    p("a", Int, "b", Int), Int, differentiable=False
)
rshift = builtin("rshift", "a >> b", "operator", lambda a, b: a >> b).add(
    p("a", Int, "b", Int), Int, differentiable=False
)
invert = builtin("invert", "~a", "operator", lambda a: ~a).add(p("a", Int), Int, differentiable=False)

# Comparisons and logic: internal (not exported as weft.<name>), never differentiable.
_cmp = {}
for _name in ("eq", "ne", "lt", "le", "gt", "ge"):
    _cmp[_name] = builtin("_" + _name, "comparison", "internal").add(
        p("a", Value, "b", Value), wt.bool, symbol="cmp_" + _name, differentiable=False
    )
logical_not = builtin("_not", "not x", "internal").add(
    p("x", AnyScalar), wt.bool, symbol="logical_not", differentiable=False
)
truth = builtin("_truth", "bool(x)", "internal").add(p("x", AnyScalar), wt.bool, symbol="truth", differentiable=False)

# --- math ----------------------------------------------------------------------------------
min = builtin("min", "The smaller of a and b", "scalar math", lambda a, b: b if not a < b else a).add(
    p("a", Scalar, "b", Scalar), Scalar
)  # noqa: A001
max = builtin("max", "The larger of a and b", "scalar math", lambda a, b: b if not a > b else a).add(
    p("a", Scalar, "b", Scalar), Scalar
)  # noqa: A001
abs = builtin("abs", "Absolute value", "scalar math", abs_).add(p("x", Scalar), Scalar)  # noqa: A001
sign = builtin(
    "sign", "-1 for negative x, 1 otherwise", "scalar math", lambda x: type(x)(-1) if x < 0 else type(x)(1)
).add(p("x", Scalar), Scalar)
clamp = builtin(
    "clamp", "x limited to [a, b]", "scalar math", lambda x, a, b: b if (a if x < a else x) > b else (a if x < a else x)
).add(p("x", Scalar, "a", Scalar, "b", Scalar), Scalar)

sqrt = _unary_float("sqrt", "Square root")
cbrt = _unary_float("cbrt", "Cube root", lambda x: math.copysign(abs_(float(x)) ** (1.0 / 3.0), float(x)))
exp = _unary_float("exp", "e raised to x")
log = _unary_float("log", "Natural logarithm")
log2 = _unary_float("log2", "Base-2 logarithm")
log10 = _unary_float("log10", "Base-10 logarithm")
sin = _unary_float("sin", "Sine (radians)")
cos = _unary_float("cos", "Cosine (radians)")
tan = _unary_float("tan", "Tangent (radians)")
asin = _unary_float("asin", "Arc sine")
acos = _unary_float("acos", "Arc cosine")
atan = _unary_float("atan", "Arc tangent")
atan2 = _binary_float("atan2", "Arc tangent of y / x, in the quadrant of (x, y)", lambda y, x: math.atan2(y, x))
sinh = _unary_float("sinh", "Hyperbolic sine")
cosh = _unary_float("cosh", "Hyperbolic cosine")
tanh = _unary_float("tanh", "Hyperbolic tangent")
erf = _unary_float("erf", "Error function: 2/sqrt(pi) times the integral of exp(-t^2) from 0 to x", lambda x: math.erf(x))
erfc = _unary_float("erfc", "Complementary error function 1 - erf(x)", lambda x: math.erfc(x))


def _erfinv(x):
    """Inverse of erf on the host: bisection to a bracket, then Newton steps."""
    x = float(x)
    if not -1.0 <= x <= 1.0:
        return math.nan
    if abs(x) == 1.0:
        return math.copysign(math.inf, x)
    y = 0.0
    for _ in range(60):
        y -= (math.erf(y) - x) / (2.0 / math.sqrt(math.pi) * math.exp(-y * y))
    return y


erfinv = _unary_float("erfinv", "Inverse error function (erfinv(erf(y)) == y); +-inf at +-1", _erfinv)
erfcinv = _unary_float("erfcinv", "Inverse complementary error function: erfinv(1 - x)", lambda x: _erfinv(1.0 - x))
floor = _unary_float("floor", "Largest integer value not above x")
ceil = _unary_float("ceil", "Smallest integer value not below x")
round = _unary_float("round", "Nearest integer value, halfway cases away from zero", _round_away)  # noqa: A001
rint = _unary_float("rint", "Nearest integer value, halfway cases to even", _np_unary(np.rint))
trunc = _unary_float("trunc", "x rounded toward zero")
frac = _unary_float("frac", "x - trunc(x)", lambda x: float(x) - math.trunc(float(x)))
degrees = _unary_float("degrees", "Radians to degrees")
radians = _unary_float("radians", "Degrees to radians")

def _components(x):
    return list(x._flat()) if hasattr(x, "_flat") else [float(x)]


isnan = builtin(
    "isnan", "True where x (any component of a composite) is NaN", "scalar math",
    lambda x: any(math.isnan(c) for c in _components(x)),
).add(p("x", Float), wt.bool, differentiable=False)  # fmt: skip
isinf = builtin(
    "isinf", "True where x (any component of a composite) is infinite", "scalar math",
    lambda x: any(math.isinf(c) for c in _components(x)),
).add(p("x", Float), wt.bool, differentiable=False)  # fmt: skip
isfinite = builtin(
    "isfinite", "True where x (every component of a composite) is finite", "scalar math",
    lambda x: all(math.isfinite(c) for c in _components(x)),
).add(p("x", Float), wt.bool, differentiable=False)  # fmt: skip

select = builtin(
    "select",
    "select(cond, a, b): b when cond is true, else a (Warp's order)",
    "scalar math",
    lambda c, a, b: b if c else a,
).add(p("cond", AnyScalar, "a", Value, "b", Value), Value)
where = builtin(
    "where", "where(cond, a, b): a when cond is true, else b", "scalar math", lambda c, a, b: a if c else b
).add(p("cond", AnyScalar, "a", Value, "b", Value), Value)
lerp = builtin("lerp", "a * (1 - t) + b * t", "scalar math", lambda a, b, t: a * (1.0 - t) + b * t).add(
    p("a", Float, "b", Float, "t", Float), Float
)
smoothstep = builtin("smoothstep", "Smooth Hermite step of x from edge0 to edge1", "scalar math", _smoothstep).add(
    p("edge0", Float, "edge1", Float, "x", Float), Float
)
expect_eq = builtin(
    "expect_eq", "Print an error when a != b; the kernel goes on", "utility", _expect("expect_eq", lambda a, b: a == b)
).add(p("a", Value, "b", Value), None, differentiable=False, side_effect=True)
expect_neq = builtin(
    "expect_neq", "Print an error when a == b; the kernel goes on", "utility", _expect("expect_neq", lambda a, b: a != b)
).add(p("a", Value, "b", Value), None, differentiable=False, side_effect=True)
for _b in (expect_eq, expect_neq):  # both take two values of one type
    _b.mismatch_reason = "Can't test equality for objects with different types"
expect_near = (
    builtin("expect_near", "Print an error when |a - b| > tolerance (1e-6 by default)", "utility", _expect("expect_near", _near))
    .add(p("a", Float, "b", Float, "tolerance", Float), None, differentiable=False, side_effect=True)
    .add(p("a", Float, "b", Float), None, differentiable=False, side_effect=True)
)
step = builtin("step", "1 when x < 0, else 0 (Warp's convention)", "scalar math", lambda x: 1.0 if x < 0 else 0.0).add(
    p("x", Float), Float
)
step.add(p("x", Int), Int, differentiable=False)
nonzero = builtin(
    "nonzero", "1 when x is not zero (NaN included), else 0", "scalar math", lambda x: type(x)(0 if x == 0 else 1)
).add(p("x", Scalar), Scalar, differentiable=False)
copysign = builtin(
    "copysign", "The magnitude of x with the sign of y (signed zeros too)", "scalar math", math.copysign
).add(p("x", Float, "y", Float), Float)

# The public builtins (``weft.<name>``): every declaration above outside the "internal" group.
__all__ = sorted(
    name
    for name, obj in list(globals().items())
    if isinstance(obj, Builtin) and obj.group != "internal" and not name.startswith("_")
)
