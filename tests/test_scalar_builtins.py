"""Table-driven tests of every scalar builtin (weft/builtins/scalar.py) and the Python operators,
comparisons, boolean operators and casts that lower to them (CPU only).

One list, ``SPECS``, describes each builtin: how a kernel calls it (the builtin itself and its
aliases: Python operators, ``min``/``max``/``abs``/``round``/``pow``), a NumPy reference, the
input domain of every argument and whether it has a gradient. From that list:

- forward: results in kernels match NumPy for a few hundred sampled inputs, in float32 and
  float64, and in int32/int64 for the int-capable builtins (Warp's C semantics: int ``/``
  truncates, ``//`` floors, ``%`` is C's remainder);
- gradients: in float64, ``wp.Tape`` gradients match central finite differences for every
  argument, at sample points away from kinks (STYLE rule 34); a registry test fails when a
  scalar builtin has no spec;
- kink conventions and semantics spot checks follow warp-lang 1.19 (team FINDINGS.md §1-3) or,
  where weft deliberately differs, weft's documented convention (weft/native/scalar.h).

Speed: every kernel is made at import time by a factory and lowered at once, so the first
launch builds them all in one C++ compile (weft builds a module's lowered, unbuilt kernels
together). Kernels that reproduce known bugs live in their own modules so that a build failure
there cannot take the main batch down.
"""

import dataclasses
import math
import zlib
from collections.abc import Callable
from typing import Any, Optional

import numpy as np
import pytest

import weft as wp
from weft import types as wt
from weft.builtins import registry as reg
from weft.builtins.registry import registry

N = 256  # sampled points per argument
FD_STEP = 1e-6
KINK_MARGIN = 1e-3  # finite differences only at points at least this far from a kink
FLOATS = (wp.float32, wp.float64)
INTS = (wp.int32, wp.int64)
COND = "cond"  # domain marker: an int32 condition argument (values -1, 0, 1, 2)
BUG_MODULE = __name__ + "_known_bugs"
F16_MODULE = __name__ + "_float16"

# ---------------------------------------------------------------------------------------------
# Known weft bugs: (test kind, builtin or case name, dtype name) -> reason. Each case is marked
# xfail(strict=True), so fixing the bug makes the test fail until its entry is removed here.
# Forward cases listed here build in BUG_MODULE.

KNOWN_BUGS: dict = {}  # (kind, name, dtype) -> reason; empty: every known bug is fixed


def bug_marks(kind, name, dtype_name):
    reason = KNOWN_BUGS.get((kind, name, dtype_name))
    return [pytest.mark.xfail(reason=reason, strict=True)] if reason else []


# ---------------------------------------------------------------------------------------------
# Python operators and the other aliases, as funcs so that a kernel factory can call them.


@wp.func
def op_add(a: Any, b: Any):
    return a + b


@wp.func
def op_sub(a: Any, b: Any):
    return a - b


@wp.func
def op_mul(a: Any, b: Any):
    return a * b


@wp.func
def op_div(a: Any, b: Any):
    return a / b


@wp.func
def op_floordiv(a: Any, b: Any):
    return a // b


@wp.func
def op_mod(a: Any, b: Any):
    return a % b


@wp.func
def op_pow(a: Any, b: Any):
    return a**b


@wp.func
def op_neg(a: Any):
    return -a


@wp.func
def op_pos(a: Any):
    return +a


@wp.func
def op_and(a: Any, b: Any):
    return a & b


@wp.func
def op_or(a: Any, b: Any):
    return a | b


@wp.func
def op_xor(a: Any, b: Any):
    return a ^ b


@wp.func
def op_lshift(a: Any, b: Any):
    return a << b


@wp.func
def op_rshift(a: Any, b: Any):
    return a >> b


@wp.func
def op_invert(a: Any):
    return ~a


# ---------------------------------------------------------------------------------------------
# NumPy references. They take the argument arrays in their kernel dtypes and compute in them.


def ref_div(a, b):
    if a.dtype.kind == "i":  # C: truncate toward zero
        q = np.abs(a) // np.abs(b)
        return np.where((a < 0) != (b < 0), -q, q).astype(a.dtype)
    return a / b


def ref_floordiv(a, b):
    return a // b if a.dtype.kind == "i" else np.floor(a / b)


def ref_round(x):
    """Halfway cases away from zero, exactly (no x + 0.5 rounding)."""
    t = np.trunc(x)
    return t + np.where(np.abs(x - t) >= 0.5, np.sign(x), 0).astype(x.dtype)


def ref_sign(x):
    return np.where(x < 0, -1, 1).astype(x.dtype)


def ref_step(x):
    return np.where(x < 0, 1, 0).astype(x.dtype)


def ref_nonzero(x):
    return np.where(x != 0, 1, 0).astype(x.dtype)


def away_from_zeros(a, b):
    return (np.abs(a) > KINK_MARGIN) & (np.abs(b) > KINK_MARGIN)


def ref_clamp(x, lo, hi):
    return np.minimum(np.maximum(lo, x), hi)


def ref_lshift(a, b):
    return (a.astype(np.int64) << b.astype(np.int64)).astype(a.dtype)  # wraps to the type


def ref_erf(x):
    return np.vectorize(math.erf)(np.asarray(x, dtype=np.float64)).astype(np.asarray(x).dtype)


def _erfinv_by_bisection(v):
    lo, hi = -6.0, 6.0
    for _ in range(80):
        mid = 0.5 * (lo + hi)
        lo, hi = (mid, hi) if math.erf(mid) < v else (lo, mid)
    return 0.5 * (lo + hi)


def ref_erfinv(x):
    return np.vectorize(_erfinv_by_bisection)(np.asarray(x, dtype=np.float64)).astype(np.asarray(x).dtype)


def ref_erfcinv(x):
    return ref_erfinv(1.0 - np.asarray(x, dtype=np.float64)).astype(np.asarray(x).dtype)


def ref_erfc(x):
    return np.vectorize(math.erfc)(np.asarray(x, dtype=np.float64)).astype(np.asarray(x).dtype)


def ref_smoothstep(e0, e1, x):
    t = np.clip((x - e0) / (e1 - e0), 0, 1)
    return t * t * (3 - 2 * t)


def ref_lerp(a, b, t):
    return a * (1 - t) + b * t


def ref_where(c, a, b):
    return np.where(c != 0, a, b)


def ref_select(c, a, b):
    return np.where(c != 0, b, a)


# Kink masks for finite differences: each takes the float64 arguments, returns where FD is valid.


def dist_to_int(x):
    return np.abs(x - np.round(x))


def away_from_int(x):
    return dist_to_int(x) > KINK_MARGIN


def away_from_half(x):
    return dist_to_int(x - 0.5) > KINK_MARGIN


def away_from_zero(x):
    return np.abs(x) > KINK_MARGIN


def away_from_tie(a, b):
    return np.abs(a - b) > KINK_MARGIN


def quotient_away_from_int(a, b):
    return away_from_int(a / b)


def away_from_clamp_edges(x, lo, hi):
    return away_from_tie(x, lo) & away_from_tie(x, hi)


def away_from_smoothstep_edges(e0, e1, x):
    return away_from_tie(x, e0) & away_from_tie(x, e1)


def away_from_atan2_cut(y, x):
    """atan2 jumps by 2 pi across the negative x axis and is undefined at the origin."""
    return (np.hypot(x, y) > 0.1) & ((np.abs(y) > KINK_MARGIN) | (x > 0))


# ---------------------------------------------------------------------------------------------
# The spec table.


def R(lo, hi):
    """A float or int interval domain."""
    return ((lo, hi),)


def U(*intervals):
    """A union of intervals."""
    return tuple(intervals)


# Values where rounding and sign conventions show (FINDINGS §2), appended to unary inputs.
ROUNDING_POINTS = (2.5, -2.5, 0.5, 1.5, -0.5, -1.25, 0.0, -0.0, 1.0, -1.0, -2.7, 2.7, 3.5, -3.5)
NONFINITE_POINTS = (math.nan, math.inf, -math.inf, 0.0, -0.0, 1.0, -1.0, 1e30, -1e-30)


@dataclasses.dataclass(frozen=True)
class Spec:
    """How to test one builtin.

    Attributes:
        name: the name in ``weft.builtins.registry.registry``.
        variants: ``(label, callable)`` pairs a kernel calls: the builtin and its aliases.
        ref: NumPy reference on the argument arrays.
        domain: per argument, a union of float intervals or ``COND``; None: not a float builtin.
        int_domain: per argument, a union of int intervals or ``COND``; None: not int-capable.
        grad: whether gradients are checked against finite differences (float64).
        away: kink mask (float64 arguments -> bool array) for the finite differences.
        extra: values appended to the sampled inputs of a unary builtin.
        exact: the float result is exactly representable (compare with ==, not a tolerance).
        out: result dtype when it is not the argument dtype.
        gtol: gradient tolerance (relative and absolute).
    """

    name: str
    variants: tuple
    ref: Callable
    domain: Optional[tuple] = None
    int_domain: Optional[tuple] = None
    grad: bool = True
    away: Optional[Callable] = None
    extra: tuple = ()
    exact: bool = False
    out: Any = None
    gtol: float = 1e-7

    def dtypes(self) -> tuple:
        return (FLOATS if self.domain is not None else ()) + (INTS if self.int_domain is not None else ())


def V(builtin, *aliases):
    """Variants: the builtin itself, then ``(label, callable)`` aliases."""
    return ((f"wp.{builtin.__name__}", builtin),) + aliases


ZI = R(-1000, 1000)
ZNZ = U((-50, -1), (1, 50))  # nonzero divisors
ZSMALL = R(-30, 30)

SPECS = [
    # ------------------------------------------------------------------ operators
    Spec("add", V(wp.add, ("a+b", op_add)), np.add, (R(-10, 10),) * 2, (R(-(10**4), 10**4),) * 2, exact=True),
    Spec("sub", V(wp.sub, ("a-b", op_sub)), np.subtract, (R(-10, 10),) * 2, (R(-(10**4), 10**4),) * 2, exact=True),
    Spec("mul", V(wp.mul, ("a*b", op_mul)), np.multiply, (R(-10, 10),) * 2, (R(-(10**4), 10**4),) * 2, exact=True),
    Spec("div", V(wp.div, ("a/b", op_div)), ref_div, (R(-10, 10), U((-4, -0.5), (0.5, 4))), (ZI, ZNZ), exact=True),
    Spec("div_approx", V(wp.div_approx), ref_div, (R(-10, 10), U((-4, -0.5), (0.5, 4))), exact=True),
    Spec(
        "floordiv",
        V(wp.floordiv, ("a//b", op_floordiv)),
        ref_floordiv,
        (R(-10, 10), U((-4, -0.5), (0.5, 4))),
        (ZI, ZNZ),
        away=quotient_away_from_int,
        exact=True,
    ),
    Spec(
        "mod",
        V(wp.mod, ("a%b", op_mod)),
        np.fmod,
        (R(-10, 10), U((-4, -0.5), (0.5, 4))),
        (ZI, ZNZ),
        away=quotient_away_from_int,
        exact=True,
    ),
    Spec("pow", V(wp.pow, ("pow()", pow), ("a**b", op_pow)), np.power, (R(0.5, 3), R(-3, 3))),
    Spec("neg", V(wp.neg, ("-a", op_neg)), np.negative, (R(-10, 10),), (ZI,), exact=True),
    Spec("pos", V(wp.pos, ("+a", op_pos)), np.positive, (R(-10, 10),), (ZI,), exact=True),
    Spec("bit_and", V(wp.bit_and, ("a&b", op_and)), np.bitwise_and, None, (ZI, ZI), grad=False),
    Spec("bit_or", V(wp.bit_or, ("a|b", op_or)), np.bitwise_or, None, (ZI, ZI), grad=False),
    Spec("bit_xor", V(wp.bit_xor, ("a^b", op_xor)), np.bitwise_xor, None, (ZI, ZI), grad=False),
    Spec("lshift", V(wp.lshift, ("a<<b", op_lshift)), ref_lshift, None, (ZI, R(0, 31)), grad=False),
    Spec("rshift", V(wp.rshift, ("a>>b", op_rshift)), np.right_shift, None, (R(-(10**6), 10**6), R(0, 31)), grad=False),
    Spec("invert", V(wp.invert, ("~a", op_invert)), np.invert, None, (ZI,), grad=False),
    # ------------------------------------------------------------------ min, max, abs, sign, clamp
    Spec("min", V(wp.min, ("min()", min)), np.minimum, (R(-5, 5),) * 2, (ZSMALL,) * 2, away=away_from_tie, exact=True),
    Spec("max", V(wp.max, ("max()", max)), np.maximum, (R(-5, 5),) * 2, (ZSMALL,) * 2, away=away_from_tie, exact=True),
    Spec(
        "abs",
        V(wp.abs, ("abs()", abs)),
        np.abs,
        (R(-5, 5),),
        (ZI,),
        away=away_from_zero,
        extra=ROUNDING_POINTS,
        exact=True,
    ),
    Spec("sign", V(wp.sign), ref_sign, (R(-5, 5),), (ZSMALL,), away=away_from_zero, extra=ROUNDING_POINTS, exact=True),
    Spec(
        "clamp",
        V(wp.clamp),
        ref_clamp,
        (R(-3, 3), R(-2, 0), R(0, 2)),
        (ZSMALL, R(-20, 0), R(0, 20)),
        away=away_from_clamp_edges,
        exact=True,
    ),
    Spec("step", V(wp.step), ref_step, (R(-5, 5),), (ZSMALL,), away=away_from_zero, extra=ROUNDING_POINTS, exact=True),
    Spec("nonzero", V(wp.nonzero), ref_nonzero, (R(-5, 5),), (ZSMALL,), away=away_from_zero, extra=ROUNDING_POINTS, exact=True),
    Spec("copysign", V(wp.copysign), np.copysign, (R(-5, 5), R(-5, 5)), away=away_from_zeros, exact=True),
    # ------------------------------------------------------------------ float math
    Spec("sqrt", V(wp.sqrt), np.sqrt, (R(0.01, 10),)),
    Spec("cbrt", V(wp.cbrt), np.cbrt, (R(-10, 10),), away=lambda x: np.abs(x) > 0.1),
    Spec("exp", V(wp.exp), np.exp, (R(-5, 5),)),
    Spec("log", V(wp.log), np.log, (R(0.1, 10),)),
    Spec("log2", V(wp.log2), np.log2, (R(0.1, 10),)),
    Spec("log10", V(wp.log10), np.log10, (R(0.1, 10),)),
    Spec("sin", V(wp.sin), np.sin, (R(-6, 6),)),
    Spec("cos", V(wp.cos), np.cos, (R(-6, 6),)),
    Spec("tan", V(wp.tan), np.tan, (R(-1.4, 1.4),)),
    Spec("asin", V(wp.asin), np.arcsin, (R(-0.9, 0.9),)),
    Spec("acos", V(wp.acos), np.arccos, (R(-0.9, 0.9),)),
    Spec("atan", V(wp.atan), np.arctan, (R(-10, 10),)),
    Spec("atan2", V(wp.atan2), np.arctan2, (R(-3, 3), R(-3, 3)), away=away_from_atan2_cut),
    Spec("sinh", V(wp.sinh), np.sinh, (R(-4, 4),)),
    Spec("cosh", V(wp.cosh), np.cosh, (R(-4, 4),)),
    Spec("tanh", V(wp.tanh), np.tanh, (R(-4, 4),)),
    Spec("erf", V(wp.erf), ref_erf, (R(-3, 3),)),
    Spec("erfc", V(wp.erfc), ref_erfc, (R(-3, 3),)),
    Spec("erfinv", V(wp.erfinv), ref_erfinv, (R(-0.95, 0.95),)),
    Spec("erfcinv", V(wp.erfcinv), ref_erfcinv, (R(0.05, 1.95),)),
    Spec("floor", V(wp.floor), np.floor, (R(-5, 5),), away=away_from_int, extra=ROUNDING_POINTS, exact=True),
    Spec("ceil", V(wp.ceil), np.ceil, (R(-5, 5),), away=away_from_int, extra=ROUNDING_POINTS, exact=True),
    Spec(
        "round",
        V(wp.round, ("round()", round)),
        ref_round,
        (R(-5, 5),),
        away=away_from_half,
        extra=ROUNDING_POINTS,
        exact=True,
    ),
    Spec("rint", V(wp.rint), np.rint, (R(-5, 5),), away=away_from_half, extra=ROUNDING_POINTS, exact=True),
    Spec("trunc", V(wp.trunc), np.trunc, (R(-5, 5),), away=away_from_int, extra=ROUNDING_POINTS, exact=True),
    # frac's gradient is 1 in weft (Warp 1.19 returns 0; weft/native/scalar.h documents the choice).
    Spec("frac", V(wp.frac), lambda x: x - np.trunc(x), (R(-5, 5),), away=away_from_int, extra=ROUNDING_POINTS),
    Spec("degrees", V(wp.degrees), np.degrees, (R(-10, 10),)),
    Spec("radians", V(wp.radians), np.radians, (R(-500, 500),)),
    Spec("isnan", V(wp.isnan), np.isnan, (R(-1e3, 1e3),), grad=False, extra=NONFINITE_POINTS, out=wp.bool),
    Spec("isinf", V(wp.isinf), np.isinf, (R(-1e3, 1e3),), grad=False, extra=NONFINITE_POINTS, out=wp.bool),
    Spec("isfinite", V(wp.isfinite), np.isfinite, (R(-1e3, 1e3),), grad=False, extra=NONFINITE_POINTS, out=wp.bool),
    # ------------------------------------------------------------------ selection and interpolation
    Spec("where", V(wp.where), ref_where, (COND, R(-5, 5), R(-5, 5)), (COND, ZI, ZI), exact=True),
    Spec("select", V(wp.select), ref_select, (COND, R(-5, 5), R(-5, 5)), (COND, ZI, ZI), exact=True),
    Spec("lerp", V(wp.lerp), ref_lerp, (R(-5, 5), R(-5, 5), R(-1, 2))),
    Spec(
        "smoothstep",
        V(wp.smoothstep),
        ref_smoothstep,
        (R(-2, -0.5), R(0.5, 2), R(-3, 3)),
        away=away_from_smoothstep_edges,
    ),
]
SPEC_BY_NAME = {s.name: s for s in SPECS}

# ---------------------------------------------------------------------------------------------
# Kernel factories (closure variables are resolved by value, so each call is a distinct kernel).


def kernel1(fn, ta, tout, **options):
    def k1(a: wp.array(dtype=ta), out: wp.array(dtype=tout)):
        i = wp.tid()
        out[i] = fn(a[i])

    return wp.kernel(k1, **options)


def kernel2(fn, ta, tb, tout, **options):
    def k2(a: wp.array(dtype=ta), b: wp.array(dtype=tb), out: wp.array(dtype=tout)):
        i = wp.tid()
        out[i] = fn(a[i], b[i])

    return wp.kernel(k2, **options)


def kernel3(fn, ta, tb, tc, tout, **options):
    def k3(a: wp.array(dtype=ta), b: wp.array(dtype=tb), c: wp.array(dtype=tc), out: wp.array(dtype=tout)):
        i = wp.tid()
        out[i] = fn(a[i], b[i], c[i])

    return wp.kernel(k3, **options)


FACTORIES = {1: kernel1, 2: kernel2, 3: kernel3}


def arg_dtypes(spec, dtype) -> list:
    domain = spec.domain if wt.is_float(dtype) else spec.int_domain
    return [wp.int32 if d == COND else dtype for d in domain]


def make_spec_kernel(spec, fn, dtype, **options):
    types_ = arg_dtypes(spec, dtype)
    return FACTORIES[len(types_)](fn, *types_, spec.out or dtype, **options)


KERNELS = {}  # (spec name, variant label, dtype name) -> kernel
for _spec in SPECS:
    for _dt in _spec.dtypes():
        for _label, _fn in _spec.variants:
            _module = BUG_MODULE if ("forward", _spec.name, _dt.cname) in KNOWN_BUGS else None
            KERNELS[_spec.name, _label, _dt.cname] = make_spec_kernel(_spec, _fn, _dt, module=_module)


def compare_kernel(dtype):
    def compare(
        a: wp.array(dtype=dtype), b: wp.array(dtype=dtype), c: wp.array(dtype=dtype), out: wp.array2d(dtype=wp.bool)
    ):
        i = wp.tid()
        out[0, i] = a[i] == b[i]
        out[1, i] = a[i] != b[i]
        out[2, i] = a[i] < b[i]
        out[3, i] = a[i] <= b[i]
        out[4, i] = a[i] > b[i]
        out[5, i] = a[i] >= b[i]
        out[6, i] = a[i] < b[i] < c[i]
        out[7, i] = a[i] >= b[i] > c[i]

    return wp.kernel(compare)


COMPARE_REFS = (
    lambda a, b, c: a == b,
    lambda a, b, c: a != b,
    lambda a, b, c: a < b,
    lambda a, b, c: a <= b,
    lambda a, b, c: a > b,
    lambda a, b, c: a >= b,
    lambda a, b, c: (a < b) & (b < c),
    lambda a, b, c: (a >= b) & (b > c),
)
COMPARE_KERNELS = {dt.cname: compare_kernel(dt) for dt in FLOATS + INTS}


def logic_kernel(dtype):
    def logic(
        a: wp.array(dtype=dtype), b: wp.array(dtype=dtype), c: wp.array(dtype=dtype), out: wp.array2d(dtype=wp.bool)
    ):
        i = wp.tid()
        out[0, i] = a[i] and b[i]
        out[1, i] = a[i] or b[i]
        out[2, i] = a[i] and b[i] or c[i]
        out[3, i] = not a[i]
        out[4, i] = not (a[i] < b[i])
        out[5, i] = a[i] < b[i] and not b[i] < c[i]

    return wp.kernel(logic)


LOGIC_REFS = (
    lambda a, b, c: (a != 0) & (b != 0),
    lambda a, b, c: (a != 0) | (b != 0),
    lambda a, b, c: ((a != 0) & (b != 0)) | (c != 0),
    lambda a, b, c: a == 0,
    lambda a, b, c: ~(a < b),
    lambda a, b, c: (a < b) & ~(b < c),
)
# `not` on a float is rejected by Warp (FINDINGS §1h), so the logic table runs on ints and bools.
LOGIC_KERNELS = {dt.cname: logic_kernel(dt) for dt in (wp.int32, wp.int64, wp.bool)}

# Casts: (label, callable, source dtype, result dtype). The reference is NumPy's astype, which
# truncates floats toward zero and rounds to nearest between float types, like C.
CASTS = (
    ("float(int32)", float, wp.int32, wp.float32),
    ("int(float32)", int, wp.float32, wp.int32),
    ("int(float64)", int, wp.float64, wp.int32),
    ("wp.int32(float32)", wp.int32, wp.float32, wp.int32),
    ("wp.int64(float64)", wp.int64, wp.float64, wp.int64),
    ("wp.int32(int64)", wp.int32, wp.int64, wp.int32),
    ("wp.int64(int32)", wp.int64, wp.int32, wp.int64),
    ("wp.float64(float32)", wp.float64, wp.float32, wp.float64),
    ("wp.float32(float64)", wp.float32, wp.float64, wp.float32),
    ("float(float64)", float, wp.float64, wp.float32),  # float() is float32 in kernels, as in Warp
    ("wp.float64(int64)", wp.float64, wp.int64, wp.float64),
    ("wp.float32(int32)", wp.float32, wp.int32, wp.float32),
)
CAST_KERNELS = {label: kernel1(fn, src, dst) for label, fn, src, dst in CASTS}


@wp.kernel
def where_compare_kernel(a: wp.array(dtype=wp.float64), b: wp.array(dtype=wp.float64), out: wp.array(dtype=wp.float64)):
    i = wp.tid()
    out[i] = wp.where(a[i] < b[i], a[i] * b[i], a[i] - b[i])


# Literals that end up float64 / int64 must keep their Python value (Warp: wp.float64(0.1) == 0.1).
# Warp rejects float64 `x * 0.1` outright (FINDINGS §1a); weft retypes the literal on purpose
# (codegen/typing_rules.py), so it must retype the Python value, not a float32 rounding of it.
# Rows: (case name, expected value); the kernel writes row k of ``out``.
LITERAL_ROWS = (
    ("wp.float64(0.1)", 0.1),
    ("wp.float64(2.7)", 2.7),
    ("annotated a: wp.float64 = 0.1", 0.1),
    ("float64 x * 0.1", 0.1),
    ("float64 x + 0.1 at x = 1", 1.0 + 0.1),
    ("float64 x < 0.1 at x = 0.1 (0.0: false)", 0.0),
)


def literal_kernel(module):
    def float64_literals(x: wp.array(dtype=wp.float64), out: wp.array(dtype=wp.float64)):
        out[0] = wp.float64(0.1)
        out[1] = wp.float64(2.7)
        a: wp.float64 = 0.1
        out[2] = a
        out[3] = x[0] * 0.1
        out[4] = x[0] + 0.1
        out[5] = wp.where(x[1] < 0.1, wp.float64(1.0), wp.float64(0.0))

    return wp.kernel(float64_literals, module=module)


def int64_literal_kernel(module):
    def int64_literal(out: wp.array(dtype=wp.int64)):
        out[0] = wp.int64(5000000000)

    return wp.kernel(int64_literal, module=module)


def short_circuit_kernel(module):
    def guarded(x: wp.array(dtype=wp.float32), out: wp.array2d(dtype=wp.bool)):
        i = wp.tid()
        out[0, i] = i < x.shape[0] and x[i] > 0.0  # x[i] must not be read when i is out of range
        out[1, i] = i >= x.shape[0] or x[i] > 0.0

    return wp.kernel(guarded, module=module)


LITERAL_KERNEL = literal_kernel(BUG_MODULE)
SHORT_CIRCUIT_KERNEL = short_circuit_kernel(BUG_MODULE)
INT64_LITERAL_KERNEL = int64_literal_kernel(BUG_MODULE)

# float16 smoke tests: forward-only kernels (see KNOWN_BUGS for the backward build), in their own
# module; and the same kernel with its backward pass, in another one.
F16_SPECS = ("add", "mul", "div", "min", "abs", "floor", "sqrt", "exp", "sin", "lerp", "isnan", "where")
F16_KERNELS = {
    name: make_spec_kernel(
        SPEC_BY_NAME[name], SPEC_BY_NAME[name].variants[0][1], wp.float16, enable_backward=False, module=F16_MODULE
    )
    for name in F16_SPECS
}
F16_BACKWARD_KERNEL = kernel2(wp.mul, wp.float16, wp.float16, wp.float16, module=F16_MODULE + "_backward")


def _lower_all():
    """Lower every kernel of this module now, so that the first launch builds them in one compile.

    weft lowers a kernel on its first launch and then builds all lowered, unbuilt kernels of the
    module together; without this step each kernel would cost a compiler run of its own. A kernel
    that fails to lower is skipped here (kept in LOWERING_ERRORS); its test reports the error at launch.
    """
    kernels = list(KERNELS.values()) + list(COMPARE_KERNELS.values()) + list(LOGIC_KERNELS.values())
    kernels += list(CAST_KERNELS.values()) + [where_compare_kernel] + list(F16_KERNELS.values())
    kernels += [LITERAL_KERNEL, INT64_LITERAL_KERNEL, SHORT_CIRCUIT_KERNEL]
    errors = {}
    for k in kernels:
        try:
            k.default_instance()
        except Exception as e:  # noqa: BLE001 - reported again by the test that launches the kernel
            errors[k] = e
    return errors


LOWERING_ERRORS = _lower_all()

# ---------------------------------------------------------------------------------------------
# Helpers


def rng_for(*key) -> np.random.Generator:
    return np.random.default_rng(zlib.crc32(repr(key).encode()))


def sample(domain, n, rng, integer: bool) -> np.ndarray:
    """``n`` points drawn uniformly from a union of intervals (integers: inclusive bounds)."""
    if domain == COND:
        return rng.integers(-1, 3, n)
    lengths = np.array([hi - lo for lo, hi in domain], dtype=float)
    which = rng.choice(len(domain), size=n, p=lengths / lengths.sum())
    lo = np.array([d[0] for d in domain])[which]
    hi = np.array([d[1] for d in domain])[which]
    if integer:
        return lo + rng.integers(0, hi - lo + 1)
    return lo + (hi - lo) * rng.random(n)


def sample_args(spec, dtype) -> list:
    """Sampled arguments of ``spec`` as NumPy arrays of their kernel dtypes."""
    integer = not wt.is_float(dtype)
    domain = spec.int_domain if integer else spec.domain
    rng = rng_for(spec.name, integer)
    args = [sample(d, N, rng, integer) for d in domain]
    if spec.extra and len(args) == 1 and not integer:
        args[0] = np.concatenate([args[0], spec.extra])
    return [a.astype(t.np_dtype) for a, t in zip(args, arg_dtypes(spec, dtype))]


def run(kernel, args, dtypes, out_dtype) -> np.ndarray:
    """Launch ``kernel`` on NumPy ``args`` and return its output."""
    arrays = [wp.array(a, dtype=t) for a, t in zip(args, dtypes)]
    out = wp.zeros(len(args[0]), dtype=out_dtype)
    wp.launch(kernel, dim=len(args[0]), inputs=arrays + [out])
    return out.numpy()


def tape_grads(kernel, args, dtypes, out_dtype) -> list:
    """d out[i] / d args[k][i] for every float argument (None for the others), via wp.Tape."""
    arrays = [wp.array(a, dtype=t, requires_grad=wt.is_float(t)) for a, t in zip(args, dtypes)]
    out = wp.zeros(len(args[0]), dtype=out_dtype, requires_grad=True)
    tape = wp.Tape()
    with tape:
        wp.launch(kernel, dim=len(args[0]), inputs=arrays + [out])
    tape.backward(grads={out: np.ones(len(args[0]), dtype=out_dtype.np_dtype)})
    return [a.grad.numpy().copy() if wt.is_float(t) else None for a, t in zip(arrays, dtypes)]


def assert_matches(got, expected, dtype, exact):
    if exact or not wt.is_float(dtype):
        np.testing.assert_array_equal(got, expected)
    elif dtype is wp.float64:
        np.testing.assert_allclose(got, expected, rtol=1e-12, atol=1e-12)
    else:
        np.testing.assert_allclose(got, expected, rtol=1e-5, atol=1e-6)


def dtype_of(name):
    return {t.cname: t for t in FLOATS + INTS + (wp.float16, wp.bool)}[name]


# ---------------------------------------------------------------------------------------------
# 1. Forward values against NumPy


def _forward_cases():
    for spec in SPECS:
        for dt in spec.dtypes():
            for label, _ in spec.variants:
                marks = bug_marks("forward", spec.name, dt.cname)
                yield pytest.param(spec.name, label, dt.cname, marks=marks, id=f"{label}-{dt.cname}")


@pytest.mark.parametrize("name, label, dtype_name", list(_forward_cases()))
def test_forward_matches_numpy(name, label, dtype_name):
    spec, dtype = SPEC_BY_NAME[name], dtype_of(dtype_name)
    args = sample_args(spec, dtype)
    got = run(KERNELS[name, label, dtype_name], args, arg_dtypes(spec, dtype), spec.out or dtype)
    expected = spec.ref(*args)
    if spec.out is None:
        assert expected.dtype == dtype.np_dtype, "reference computed in another dtype"
    assert_matches(got, expected, dtype, spec.exact)


def _compare_cases():
    for dt in FLOATS + INTS:
        yield pytest.param(dt.cname, id=dt.cname)


def tie_heavy_args(dtype, n=N):
    """Arguments from a small set of values, so that ties are common."""
    rng = rng_for("ties", dtype.cname)
    values = np.array([-2, -1, 0, 1, 2] if not wt.is_float(dtype) else [-1.5, -0.5, -0.0, 0.0, 0.5, 1.5])
    return [rng.choice(values, n).astype(dtype.np_dtype) for _ in range(3)]


@pytest.mark.parametrize("dtype_name", list(_compare_cases()))
def test_comparisons_and_chains(dtype_name):
    dtype = dtype_of(dtype_name)
    args = tie_heavy_args(dtype)
    out = wp.zeros((len(COMPARE_REFS), N), dtype=wp.bool)
    wp.launch(COMPARE_KERNELS[dtype_name], dim=N, inputs=[wp.array(a, dtype=dtype) for a in args] + [out])
    got = out.numpy()
    for row, ref in enumerate(COMPARE_REFS):
        np.testing.assert_array_equal(got[row], ref(*args), err_msg=f"comparison row {row}")


@pytest.mark.parametrize("dtype_name", ["int32", "int64", "bool"])
def test_and_or_not(dtype_name):
    dtype = dtype_of(dtype_name)
    rng = rng_for("logic", dtype_name)
    values = np.array([0, 1] if dtype is wp.bool else [-2, 0, 1, 3])
    args = [rng.choice(values, N).astype(dtype.np_dtype) for _ in range(3)]
    out = wp.zeros((len(LOGIC_REFS), N), dtype=wp.bool)
    wp.launch(LOGIC_KERNELS[dtype_name], dim=N, inputs=[wp.array(a, dtype=dtype) for a in args] + [out])
    got = out.numpy()
    for row, ref in enumerate(LOGIC_REFS):
        np.testing.assert_array_equal(got[row], ref(*args), err_msg=f"logic row {row}")


def test_and_or_short_circuit():
    """Warp evaluates the right operand of `and` / `or` only when needed, so guards work."""
    out = wp.zeros((2, 3), dtype=wp.bool)
    wp.launch(SHORT_CIRCUIT_KERNEL, dim=3, inputs=[wp.array([1.0, -1.0], dtype=wp.float32), out])
    np.testing.assert_array_equal(out.numpy(), [[True, False, False], [True, False, True]])


@pytest.mark.parametrize("label, fn, src, dst", CASTS, ids=[c[0] for c in CASTS])
def test_casts(label, fn, src, dst):
    rng = rng_for("cast", label)
    if wt.is_float(src):
        x = np.concatenate([rng.uniform(-1e4, 1e4, N), [-2.7, 2.7, -0.5, 0.5, -0.0, 1.0 / 3.0]])
    else:
        x = np.concatenate([rng.integers(-(10**6), 10**6, N), [0, -1, 2**31 - 1, -(2**31)]])
    x = x.astype(src.np_dtype)
    got = run(CAST_KERNELS[label], [x], [src], dst)
    np.testing.assert_array_equal(got, x.astype(dst.np_dtype))


def test_cast_spot_values():
    """FINDINGS §1e: int() truncates toward zero; float64(float32(-2.7)) widens exactly."""
    x = np.array([-2.7, 2.7, -0.5, -1e-9], dtype=np.float64)
    np.testing.assert_array_equal(run(CAST_KERNELS["int(float64)"], [x], [wp.float64], wp.int32), [-2, 2, 0, 0])
    x32 = np.array([-2.7], dtype=np.float32)
    got = run(CAST_KERNELS["wp.float64(float32)"], [x32], [wp.float32], wp.float64)
    assert got[0] == -2.700000047683716
    got = run(CAST_KERNELS["float(int32)"], [np.array([-3], dtype=np.int32)], [wp.int32], wp.float32)
    assert got[0] == -3.0 and got.dtype == np.float32


@pytest.mark.parametrize(
    "row", [pytest.param(k, marks=bug_marks("literal", "float64", None), id=r[0]) for k, r in enumerate(LITERAL_ROWS)]
)
def test_float64_literals_keep_their_value(row):
    out = wp.zeros(len(LITERAL_ROWS), dtype=wp.float64)
    wp.launch(LITERAL_KERNEL, dim=1, inputs=[wp.array([1.0, 0.1], dtype=wp.float64), out])
    assert out.numpy()[row] == LITERAL_ROWS[row][1]


def test_int64_literal_beyond_int32():
    out = wp.zeros(1, dtype=wp.int64)
    wp.launch(INT64_LITERAL_KERNEL, dim=1, inputs=[out])
    assert out.numpy()[0] == 5000000000


def test_float16_smoke_forward():
    for name in F16_SPECS:
        spec = SPEC_BY_NAME[name]
        args = sample_args(spec, wp.float32)
        with np.errstate(over="ignore"):  # 1e30 becomes inf, which isnan's reference sees too
            args = [a.astype(np.float16) if a.dtype.kind == "f" else a for a in args]
        got = run(F16_KERNELS[name], args, arg_dtypes(spec, wp.float16), spec.out or wp.float16)
        expected = spec.ref(*[a.astype(np.float32) if a.dtype.kind == "f" else a for a in args])
        if spec.out is None:
            expected = expected.astype(np.float16)
        np.testing.assert_allclose(
            got.astype(np.float32), expected.astype(np.float32), rtol=2e-3, atol=2e-3, err_msg=f"float16 {name}"
        )


@pytest.mark.parametrize("case", [pytest.param("mul", marks=bug_marks("float16", "backward", "float16"))])
def test_float16_kernel_with_backward_builds(case):
    a = wp.array(np.array([1.5, -2.0], dtype=np.float16), dtype=wp.float16, requires_grad=True)
    b = wp.array(np.array([2.0, 0.25], dtype=np.float16), dtype=wp.float16, requires_grad=True)
    out = wp.zeros(2, dtype=wp.float16, requires_grad=True)
    tape = wp.Tape()
    with tape:
        wp.launch(F16_BACKWARD_KERNEL, dim=2, inputs=[a, b, out])
    np.testing.assert_array_equal(out.numpy(), np.array([3.0, -0.5], dtype=np.float16))
    tape.backward(grads={out: np.ones(2, dtype=np.float16)})
    np.testing.assert_array_equal(a.grad.numpy(), b.numpy())
    np.testing.assert_array_equal(b.grad.numpy(), a.numpy())


# ---------------------------------------------------------------------------------------------
# 2. Gradients against central finite differences (float64)


def _gradient_cases():
    for spec in SPECS:
        if spec.grad and spec.domain is not None:
            for label, _ in spec.variants:
                marks = bug_marks("gradient", spec.name, "float64")
                yield pytest.param(spec.name, label, marks=marks, id=label)


@pytest.mark.parametrize("name, label", list(_gradient_cases()))
def test_gradient_matches_finite_differences(name, label):
    spec = SPEC_BY_NAME[name]
    dtypes = arg_dtypes(spec, wp.float64)
    args = sample_args(spec, wp.float64)
    if spec.away is not None:
        floats = [a for a, d in zip(args, spec.domain) if d != COND]
        keep = spec.away(*floats)
        assert keep.sum() >= N // 2, "the kink mask leaves too few points"
        args = [a[keep] for a in args]
    kernel = KERNELS[name, label, "float64"]
    grads = tape_grads(kernel, args, dtypes, wp.float64)
    for k, t in enumerate(dtypes):
        if not wt.is_float(t):
            continue
        hi = [a + FD_STEP if j == k else a for j, a in enumerate(args)]
        lo = [a - FD_STEP if j == k else a for j, a in enumerate(args)]
        fd = (run(kernel, hi, dtypes, wp.float64) - run(kernel, lo, dtypes, wp.float64)) / (2 * FD_STEP)
        np.testing.assert_allclose(grads[k], fd, rtol=spec.gtol, atol=spec.gtol, err_msg=f"d {label} / d arg {k}")


def test_cast_gradients():
    """Float-to-float casts pass the gradient through unchanged (it is 1)."""
    for label, src, dst in (
        ("wp.float64(float32)", wp.float32, wp.float64),
        ("wp.float32(float64)", wp.float64, wp.float32),
        ("float(float64)", wp.float64, wp.float32),
    ):
        x = np.array([-2.7, 0.0, 3.25], dtype=src.np_dtype)
        (g,) = tape_grads(CAST_KERNELS[label], [x], [src], dst)
        np.testing.assert_array_equal(g, np.ones(3), err_msg=label)


def test_where_with_comparison_condition_gradient():
    a = np.array([1.0, 3.0, 2.0])
    b = np.array([2.0, 1.0, 2.0])
    got = run(where_compare_kernel, [a, b], [wp.float64] * 2, wp.float64)
    np.testing.assert_array_equal(got, [2.0, 2.0, 0.0])
    ga, gb = tape_grads(where_compare_kernel, [a, b], [wp.float64] * 2, wp.float64)
    np.testing.assert_array_equal(ga, [2.0, 1.0, 1.0])
    np.testing.assert_array_equal(gb, [1.0, -1.0, -1.0])


SCALAR_PATTERNS = (reg.Float, reg.Int, reg.Scalar, reg.Value, reg.AnyScalar, reg.AnyInt)


def is_scalar_overload(overload) -> bool:
    """Scalars in, a scalar out: every parameter is a scalar type or a registry scalar pattern."""
    if not all(any(p is q for q in SCALAR_PATTERNS) or wt.is_scalar(p) for _, p in overload.params):
        return False
    sample = [p if wt.is_scalar(p) else (wp.float64 if p.accepts(wp.float64) else wp.int32) for _, p in overload.params]
    binding = overload.bind(sample)
    return binding is not None and wt.is_scalar(overload.result_type(binding, sample))


def takes_float(overload) -> bool:
    return any(
        p.accepts(wp.float64) if any(p is q for q in SCALAR_PATTERNS) else wt.is_float(p) for _, p in overload.params
    )


def scalar_overloads() -> dict:
    """User-visible builtins (group not "internal") -> their overloads that take scalars only.
    Random numbers and noise (group "random") have their own statistical and gradient tests
    in test_random.py; geometry queries (groups "geometry" and "volumes": ids of meshes, BVHs,
    hash grids and volumes) theirs in test_mesh_queries.py, test_bvh_queries.py, test_hash_grid.py and
    test_volume.py."""
    found = {}
    for name, b in registry.items():
        ovs = [ov for ov in b.overloads if is_scalar_overload(ov)]
        if b.group not in ("internal", "random", "geometry", "volumes") and ovs:
            found[name] = ovs
    return found


def test_every_scalar_builtin_has_a_spec():
    missing = sorted(set(scalar_overloads()) - set(SPEC_BY_NAME))
    assert not missing, f"scalar builtins without an entry in SPECS: {missing}"
    unknown = sorted(set(SPEC_BY_NAME) - set(registry))
    assert not unknown, f"SPECS entries that are not registered builtins: {unknown}"


def test_every_differentiable_float_builtin_has_a_gradient_spec():
    missing = sorted(
        name
        for name, ovs in scalar_overloads().items()
        if any(ov.differentiable and takes_float(ov) for ov in ovs)
        and not (name in SPEC_BY_NAME and SPEC_BY_NAME[name].grad and SPEC_BY_NAME[name].domain is not None)
    )
    assert not missing, f"differentiable builtins without a gradient spec in SPECS: {missing}"


def test_spec_variants_are_the_registered_builtins():
    for spec in SPECS:
        assert spec.variants[0][1] is registry[spec.name], spec.name


# ---------------------------------------------------------------------------------------------
# 3. Kink conventions (Warp's, FINDINGS §3): gradients where the derivative does not exist.
# Rows: (builtin, arguments, expected gradient per argument; None for a condition).

NAN, INF = math.nan, math.inf
LN2 = math.log(2.0)
ZERO_GRAD_POINTS = (0.0, -0.0, 2.0, 2.5, -1.5, -0.5, 0.3)

KINKS = [
    ("abs", (0.0,), (1.0,)),
    ("abs", (-0.0,), (1.0,)),
    ("abs", (-2.0,), (-1.0,)),
    ("abs", (2.0,), (1.0,)),
    ("min", (1.5, 1.5), (0.0, 1.0)),  # a tie sends the gradient to the second argument
    ("max", (1.5, 1.5), (0.0, 1.0)),
    ("min", (1.0, 2.0), (1.0, 0.0)),
    ("max", (1.0, 2.0), (0.0, 1.0)),
    ("clamp", (0.0, 0.0, 1.0), (1.0, 0.0, 0.0)),  # x == lo: x
    ("clamp", (1.0, 0.0, 1.0), (0.0, 0.0, 1.0)),  # x == hi: hi
    ("clamp", (-1.0, 0.0, 1.0), (0.0, 1.0, 0.0)),
    ("clamp", (2.0, 0.0, 1.0), (0.0, 0.0, 1.0)),
    ("clamp", (0.5, 0.0, 1.0), (1.0, 0.0, 0.0)),
    *[
        (name, (x,), (0.0,))
        for name in ("floor", "ceil", "round", "rint", "trunc", "sign", "step")
        for x in ZERO_GRAD_POINTS
    ],
    ("smoothstep", (0.0, 1.0, 0.25), (-0.84375, -0.28125, 1.125)),
    ("smoothstep", (0.0, 1.0, 0.5), (-0.75, -0.75, 1.5)),
    ("smoothstep", (0.0, 1.0, 0.0), (0.0, 0.0, 0.0)),
    ("smoothstep", (0.0, 1.0, 1.0), (0.0, 0.0, 0.0)),
    ("smoothstep", (0.0, 1.0, -1.0), (0.0, 0.0, 0.0)),
    ("smoothstep", (0.0, 1.0, 2.0), (0.0, 0.0, 0.0)),
    ("lerp", (2.0, 10.0, 0.25), (0.75, 0.25, 8.0)),
    ("atan2", (1.0, 1.0), (0.5, -0.5)),
    ("atan2", (1.0, 0.0), (0.0, -1.0)),
    ("atan2", (0.0, 0.0), (0.0, 0.0)),
    ("pow", (2.0, 3.0), (12.0, 8.0 * LN2)),
    ("pow", (0.0, 2.0), (0.0, 0.0)),  # d/dy: weft's documented 0 (Warp: NaN), native/scalar.h
    ("pow", (-2.0, 2.0), (-4.0, NAN)),
    ("div", (1.0, 2.0), (0.5, -0.25)),
    ("sqrt", (0.0,), (INF,)),
    ("asin", (1.5,), (0.0,)),  # the argument is clamped to [-1, 1]
    ("acos", (-1.5,), (0.0,)),
    ("where", (1, 2.0, 3.0), (None, 1.0, 0.0)),
    ("where", (0, 2.0, 3.0), (None, 0.0, 1.0)),
    ("select", (1, 2.0, 3.0), (None, 0.0, 1.0)),  # select(cond, a, b) is b when cond is true
    ("select", (0, 2.0, 3.0), (None, 1.0, 0.0)),
]


def _kink_id(row):
    return f"{row[0]}{row[1]}".replace(" ", "")


@pytest.mark.parametrize("name, args, expected", KINKS, ids=[_kink_id(r) for r in KINKS])
def test_kink_gradient_conventions(name, args, expected):
    spec = SPEC_BY_NAME[name]
    dtypes = arg_dtypes(spec, wp.float64)
    arrays = [np.array([v], dtype=t.np_dtype) for v, t in zip(args, dtypes)]
    grads = tape_grads(KERNELS[name, spec.variants[0][0], "float64"], arrays, dtypes, wp.float64)
    for k, (g, e) in enumerate(zip(grads, expected)):
        if e is not None:
            np.testing.assert_allclose(g[0], e, rtol=1e-12, err_msg=f"{name}{args}: d/d arg {k}")


# ---------------------------------------------------------------------------------------------
# 4. Semantics spot checks (FINDINGS §1-2), in float32 and float64 (ints: int32 and int64).
# Rows: (builtin, arguments, expected value).

FLOAT_POINTS = [
    ("round", (2.5,), 3.0),
    ("round", (-2.5,), -3.0),
    ("round", (0.5,), 1.0),
    ("round", (-0.5,), -1.0),
    ("rint", (2.5,), 2.0),
    ("rint", (-2.5,), -2.0),
    ("rint", (0.5,), 0.0),
    ("rint", (1.5,), 2.0),
    ("frac", (-1.25,), -0.25),
    ("frac", (2.5,), 0.5),
    ("trunc", (-2.7,), -2.0),
    ("floor", (-2.5,), -3.0),
    ("ceil", (-0.5,), -0.0),
    ("sign", (0.0,), 1.0),
    ("sign", (-0.0,), 1.0),
    ("sign", (-3.0,), -1.0),
    ("step", (0.0,), 0.0),
    ("step", (-1.0,), 1.0),
    ("step", (1.0,), 0.0),
    ("nonzero", (0.0,), 0.0),
    ("nonzero", (-0.0,), 0.0),
    ("nonzero", (float("nan"),), 1.0),
    ("nonzero", (-2.5,), 1.0),
    ("copysign", (3.0, -0.0), -3.0),
    ("copysign", (-3.0, 0.0), 3.0),
    ("copysign", (-0.0, 1.0), 0.0),
    ("smoothstep", (0.0, 1.0, 0.25), 0.15625),
    ("smoothstep", (0.0, 1.0, 0.5), 0.5),
    ("smoothstep", (0.0, 1.0, -1.0), 0.0),
    ("smoothstep", (0.0, 1.0, 2.0), 1.0),
    ("smoothstep", (1.0, 0.0, 0.25), 0.84375),
    ("lerp", (2.0, 10.0, 0.25), 4.0),
    ("lerp", (2.0, 10.0, -1.0), -6.0),
    ("lerp", (2.0, 10.0, 2.0), 18.0),
    ("where", (1, 10.0, 20.0), 10.0),
    ("where", (0, 10.0, 20.0), 20.0),
    ("where", (-1, 10.0, 20.0), 10.0),
    ("select", (1, 10.0, 20.0), 20.0),
    ("select", (0, 10.0, 20.0), 10.0),
    ("clamp", (5.0, 0.0, 1.0), 1.0),
    ("clamp", (-5.0, 0.0, 1.0), 0.0),
    ("clamp", (0.5, 1.0, 0.0), 0.0),  # lo > hi gives hi
    ("cbrt", (-8.0,), -2.0),
    ("cbrt", (8.0,), 2.0),
    ("log2", (8.0,), 3.0),
    ("log2", (0.0,), -INF),
    ("log2", (-1.0,), NAN),
    ("log10", (100.0,), 2.0),
    ("sqrt", (-1.0,), NAN),
    ("sqrt", (-0.0,), -0.0),
    ("abs", (-0.0,), 0.0),
    ("neg", (0.0,), -0.0),
    ("degrees", (1.0,), 57.29577951308232),
    ("radians", (180.0,), math.pi),
    ("atan2", (1.0, 0.0), math.pi / 2),
    ("atan2", (1.0, 1.0), math.pi / 4),
    ("atan2", (-1.0, -1.0), -3 * math.pi / 4),
    ("atan2", (0.0, -1.0), math.pi),
    ("atan2", (0.0, 0.0), 0.0),
    ("asin", (2.0,), math.pi / 2),
    ("min", (1.0, NAN), 1.0),
    ("min", (NAN, 1.0), 1.0),
    ("max", (1.0, NAN), 1.0),
    ("max", (NAN, 1.0), 1.0),
    ("pow", (-8.0, 2.0), 64.0),
    ("pow", (-8.0, 3.0), -512.0),
    ("pow", (0.0, 0.0), 1.0),
    ("pow", (0.0, -1.0), INF),
    ("pow", (-8.0, 1.0 / 3.0), NAN),
    ("pow", (3.0, 0.5), math.sqrt(3.0)),
    ("div", (-7.5, 2.0), -3.75),
    ("floordiv", (-7.5, 2.0), -4.0),
    ("mod", (-7.5, 2.0), -1.5),
    ("mod", (7.5, -2.0), 1.5),
    ("mod", (5.0, 0.0), NAN),
    ("isnan", (NAN,), True),
    ("isnan", (INF,), False),
    ("isinf", (-INF,), True),
    ("isinf", (1.0,), False),
    ("isfinite", (1.0,), True),
    ("isfinite", (INF,), False),
    ("isfinite", (NAN,), False),
]

I32_MIN, I32_MAX = -(2**31), 2**31 - 1
INT_POINTS = [
    ("div", (-7, 2), -3),
    ("div", (7, -2), -3),
    ("div", (7, 2), 3),
    ("floordiv", (-7, 2), -4),
    ("floordiv", (7, -2), -4),
    ("mod", (-7, 2), -1),
    ("mod", (7, -2), 1),
    ("abs", (-5,), 5),
    ("sign", (0,), 1),
    ("sign", (-5,), -1),
    ("min", (3, -4), -4),
    ("max", (3, -4), 3),
    ("clamp", (5, 0, 3), 3),
    ("clamp", (-5, 0, 3), 0),
    ("where", (2, 10, 20), 10),
    ("select", (2, 10, 20), 20),
    ("rshift", (-16, 2), -4),
    ("invert", (0,), -1),
    # weft's documented integer conventions (native/scalar.h): no traps, wrap-around.
    ("div", (7, 0), 0),
    ("floordiv", (7, 0), 0),
    ("mod", (7, 0), 0),
]
INT32_POINTS = [
    ("abs", (I32_MIN,), I32_MIN),
    ("add", (I32_MAX, 1), I32_MIN),
    ("div", (I32_MIN, -1), I32_MIN),
    ("neg", (I32_MIN,), I32_MIN),
]


def _point_cases():
    for dt in FLOATS:
        for name, args, expected in FLOAT_POINTS:
            yield pytest.param(name, args, expected, dt.cname, id=f"{name}{args}-{dt.cname}".replace(" ", ""))
    for dt in INTS:
        for name, args, expected in INT_POINTS + (INT32_POINTS if dt is wp.int32 else []):
            yield pytest.param(name, args, expected, dt.cname, id=f"{name}{args}-{dt.cname}".replace(" ", ""))


@pytest.mark.parametrize("name, args, expected, dtype_name", list(_point_cases()))
def test_semantics_spot_checks(name, args, expected, dtype_name):
    spec, dtype = SPEC_BY_NAME[name], dtype_of(dtype_name)
    dtypes = arg_dtypes(spec, dtype)
    arrays = [np.array([v], dtype=t.np_dtype) for v, t in zip(args, dtypes)]
    got = run(KERNELS[name, spec.variants[0][0], dtype_name], arrays, dtypes, spec.out or dtype)[0]
    if isinstance(expected, float) and math.isnan(expected):
        assert math.isnan(got), got
        return
    if dtype is wp.float32:
        np.testing.assert_allclose(got, expected, rtol=1e-6)
    elif dtype is wp.float64 and wp.get_device().is_cuda and isinstance(expected, float) and math.isfinite(expected):
        # CUDA's double-precision log2, pow... are within 1-2 ulp, not correctly rounded
        assert abs(got - expected) <= 2 * np.spacing(abs(expected)), (got, expected)
    else:
        assert got == expected, (got, expected)
    if isinstance(expected, float) and expected == 0.0:
        assert math.copysign(1.0, got) == math.copysign(1.0, expected), f"sign of zero: {got}"


@wp.kernel
def k_literal_casts(u: wp.array(dtype=wp.uint32), i8: wp.array(dtype=wp.int8), i: wp.array(dtype=wp.int32)):
    u[0] = wp.uint32(-1)
    u[1] = wp.uint32(4294967301)
    i8[0] = wp.int8(200)
    i[0] = wp.int32(-2.7)
    i[1] = wp.int32(2.7)


def test_constant_casts_wrap_and_truncate_like_the_kernel_would():
    """A cast of a literal folds at compile time to what the C++ cast computes at run time."""
    u, i8, i = wp.zeros(2, dtype=wp.uint32), wp.zeros(1, dtype=wp.int8), wp.zeros(2, dtype=wp.int32)
    wp.launch(k_literal_casts, dim=1, inputs=[u, i8, i])
    np.testing.assert_array_equal(u.numpy(), [4294967295, 5])
    np.testing.assert_array_equal(i8.numpy(), [-56])
    np.testing.assert_array_equal(i.numpy(), [-2, 2])
