"""Mathematical constants, as Warp exposes them (``wp.pi``, ``wp.inf`` ...). Plain Python floats:
in kernels they are compile-time constants like any other global number."""

import math

from .codegen.intrinsics import constant

E = e = constant(math.e)
LOG2E = log2e = constant(1.0 / math.log(2.0))
LOG10E = log10e = constant(1.0 / math.log(10.0))
LN2 = ln2 = constant(math.log(2.0))
LN10 = ln10 = constant(math.log(10.0))
PHI = phi = constant((1.0 + math.sqrt(5.0)) / 2.0)
PI = pi = constant(math.pi)
HALF_PI = half_pi = constant(math.pi / 2.0)
TAU = tau = constant(math.tau)
INF = inf = constant(math.inf)
NAN = nan = constant(math.nan)

__all__ = [
    "E", "e", "LOG2E", "log2e", "LOG10E", "log10e", "LN2", "ln2", "LN10", "ln10",
    "PHI", "phi", "PI", "pi", "HALF_PI", "half_pi", "TAU", "tau", "INF", "inf", "NAN", "nan",
]  # fmt: skip
