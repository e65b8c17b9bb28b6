"""Intrinsics: kernel operations that are not ordinary builtins (array access, atomics, thread
index, casts, printing, tuples), and the public Python objects that name them (``wp.tid``...).

Contract: an intrinsic is identified by a string used as ``ir.Call.callee``. This module owns
the list of intrinsic names, which of them have side effects (skipped when the backward pass
replays the forward), and the Python-builtin -> weft mapping used by name resolution.
"""

from __future__ import annotations

import builtins as _py

from .. import types as wt
from ..builtins import scalar as sb

LOAD = "load"
STORE = "store"
CAST = "cast"
PHI = "phi"
TID = "tid"
SHAPE = "shape"
ZERO = "zero"
LOGICAL_AND = "logical_and"
LOGICAL_OR = "logical_or"
TUPLE_MAKE = "make_tuple"
TUPLE_GET = "tuple_get"
PRINT_VALUE = "print_value"
PRINT_STR = "print_str"
PRINT_NEWLINE = "print_newline"
PRINTF = "printf"
CONSTRUCT = "construct"  # attr: C++ constructor name, templated on the result type
EXTRACT = "extract"
ASSIGN_COPY = "assign_copy"
GET_FIELD = "get_field"  # attr: (struct type, field name)
SET_FIELD = "set_field"
ADJ_READ = "adj_read"  # wp.adjoint[x] inside @wp.func_grad; attr: forward parameter index
ADJ_ACCUM = "adj_accum"
ADJ_SET = "adj_set"
ATOMICS = {
    "atomic_add": "atomic_add",
    "atomic_sub": "atomic_sub",
    "atomic_min": "atomic_min",
    "atomic_max": "atomic_max",
}

SIDE_EFFECTS = {STORE, PRINT_VALUE, PRINT_STR, PRINT_NEWLINE, PRINTF, *ATOMICS.values()}


def has_side_effect(callee) -> bool:
    """Whether a call writes memory or prints (an intrinsic, a builtin or a user func)."""
    from . import ir

    if ir.is_intrinsic(callee):
        return callee in SIDE_EFFECTS
    if ir.is_builtin(callee):
        return callee.side_effect
    ir.check_callee(callee)
    return callee.has_side_effects


# ---------------------------------------------------------------------------------------------
# Public objects. Outside kernels they either evaluate in Python or explain where they work.


def _kernel_only(name):
    def fn(*args, **kwargs):
        raise RuntimeError(f"wp.{name}() can only be called inside a @wp.kernel or @wp.func")

    fn.__name__ = name
    fn.__qualname__ = name
    fn.__doc__ = f"Kernel intrinsic ``{name}``; valid only inside kernels and funcs."
    return fn


tid = _kernel_only("tid")
tid.__doc__ = "The index of the current thread; ``i, j = wp.tid()`` for 2-D launches."
printf = _kernel_only("printf")
printf.__doc__ = "C-style formatted printing from a kernel: ``wp.printf('%d %f\\n', i, x)``."
atomic_add = _kernel_only("atomic_add")
atomic_add.__doc__ = "Atomically add a value to ``arr[i, ...]``; returns the previous value."
atomic_sub = _kernel_only("atomic_sub")
atomic_sub.__doc__ = "Atomically subtract a value from ``arr[i, ...]``; returns the previous value."
atomic_min = _kernel_only("atomic_min")
atomic_min.__doc__ = "Atomically store min(arr[i, ...], value); returns the previous value."
atomic_max = _kernel_only("atomic_max")
atomic_max.__doc__ = "Atomically store max(arr[i, ...], value); returns the previous value."


class _Adjoint:
    """``wp.adjoint[x]``: inside a ``@wp.func_grad`` body, the adjoint of forward parameter x."""

    def __getitem__(self, key):
        raise RuntimeError("wp.adjoint[...] can only be used inside a @wp.func_grad function")

    def __repr__(self):
        return "wp.adjoint"


adjoint = _Adjoint()


def static(expr):
    """Evaluate ``expr`` at build time (in kernels); in Python it returns ``expr`` unchanged."""
    return expr


def constant(x):
    """Mark a global as a compile-time constant captured by kernels; returns ``x``."""
    return x


# Python builtins that mean a weft builtin inside kernels (resolved by value).
python_builtin_map = {
    id(obj): (obj, target)
    for obj, target in (
        (_py.min, sb.min),
        (_py.max, sb.max),
        (_py.abs, sb.abs),
        (_py.round, sb.round),
        (_py.pow, sb.pow),
        (_py.float, wt.float32),
        (_py.int, wt.int32),
        (_py.bool, wt.bool),
    )
}
