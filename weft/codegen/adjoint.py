"""Autodiff: forward IR -> reverse-pass statements.

Contract: ``reverse_block(block)`` returns the list of reverse statements for ``block``: each
forward statement that carries a gradient maps, in reverse order, to one ``Adj*`` record. The
backward entry point is then: replay the forward (side effects skipped, loop state checkpointed)
followed by these records. A loop's reverse runs its iterations backwards; each iteration
restores the checkpointed loop-carried values, zeroes the adjoints of the body's values, replays
the body and runs the body's reverse.

Which statements contribute is decided by ``adjoint_rules`` (intrinsics) and the overload's
``differentiable`` flag; a statement with no rule raises, naming it.
"""

from __future__ import annotations

import dataclasses

from .. import types as wt
from . import intrinsics as intr
from . import ir


def is_differentiable_type(t) -> bool:
    """Types whose values carry gradients (float scalars, tuples containing them)."""
    if wt.is_float(t):
        return True
    if isinstance(t, wt.TupleType):
        return any(is_differentiable_type(x) for x in t.types)
    return getattr(t, "_differentiable", False)


@dataclasses.dataclass
class AdjCall:
    """Call the adjoint of ``stmt`` (a forward ``ir.Call``)."""

    stmt: ir.Call


@dataclasses.dataclass
class AdjAssign:
    """Reverse of ``m <- v``: adj_v += adj_m; adj_m = 0."""

    stmt: ir.Assign


@dataclasses.dataclass
class AdjRead:
    """Reverse of ``r = read m``: adj_m += adj_r."""

    stmt: ir.Read


@dataclasses.dataclass
class AdjIf:
    cond: ir.Var
    then: list
    orelse: list


@dataclasses.dataclass
class AdjLoop:
    loop: ir.Loop
    body: list  # reverse statements of the body
    zero: list  # vars whose adjoints are reset at the start of every reverse iteration


def _any_diff(vars_) -> bool:
    return any(v is not None and is_differentiable_type(v.type) for v in vars_)


def _array_dtype_diff(stmt) -> bool:
    return is_differentiable_type(stmt.args[0].type.dtype)


def _never(stmt) -> bool:
    return False


def _values(stmt) -> bool:
    return _any_diff(list(stmt.args) + [stmt.result])


# Intrinsic -> predicate telling whether the statement has a reverse contribution.
adjoint_rules = {
    intr.LOAD: _array_dtype_diff,
    intr.STORE: _array_dtype_diff,
    intr.CAST: lambda s: is_differentiable_type(s.result.type) and is_differentiable_type(s.args[0].type),
    intr.PHI: lambda s: is_differentiable_type(s.result.type),
    intr.TUPLE_MAKE: _values,
    intr.TUPLE_GET: _values,
    intr.CONSTRUCT: _values,
    intr.EXTRACT: _values,
    intr.ASSIGN_COPY: _values,
    intr.GET_FIELD: _values,
    intr.SET_FIELD: _values,
    intr.TID: _never,
    intr.ADJ_READ: _never,
    intr.ADJ_ACCUM: _never,
    intr.ADJ_SET: _never,
    intr.SHAPE: _never,
    intr.ZERO: _never,
    intr.LOGICAL_AND: _never,
    intr.LOGICAL_OR: _never,
    intr.PRINT_VALUE: _never,
    intr.PRINT_STR: _never,
    intr.PRINT_NEWLINE: _never,
    intr.PRINTF: _never,
    **{name: _array_dtype_diff for name in intr.ATOMICS.values()},
}


def contributes(stmt: ir.Call) -> bool:
    callee = stmt.callee
    if ir.is_intrinsic(callee):
        rule = adjoint_rules.get(callee)
        if rule is None:
            raise NotImplementedError(f"no adjoint rule for intrinsic '{callee}'")
        return rule(stmt)
    if ir.is_builtin(callee):  # contributes when a value it touches is differentiable
        return callee.differentiable and _values(stmt)
    # a user func: its own body decides (an array store or atomic inside it contributes even when
    # every argument and the result are arrays or ints)
    ir.check_callee(callee)
    return callee.differentiable


def reverse_block(block: ir.Block) -> list:
    out = []
    for s in reversed(block.stmts):
        if isinstance(s, ir.Call):
            if contributes(s):
                out.append(AdjCall(s))
        elif isinstance(s, ir.Assign):
            if is_differentiable_type(s.dst.type):
                out.append(AdjAssign(s))
        elif isinstance(s, ir.Read):
            if is_differentiable_type(s.result.type):
                out.append(AdjRead(s))
        elif isinstance(s, ir.If):
            t, f = reverse_block(s.then), reverse_block(s.orelse)
            if t or f:
                out.append(AdjIf(s.cond, t, f))
        elif isinstance(s, ir.Loop):
            body = reverse_block(s.body)
            if body:
                zero = [v for v in ir.defined_vars(s.body) if is_differentiable_type(v.type)]
                out.append(AdjLoop(s, body, zero))
        else:
            raise NotImplementedError(f"no adjoint for statement {type(s).__name__}")
    return out


def is_differentiable_function(fn: ir.Function, reverse=None) -> bool:
    """Whether a func has any reverse contribution (else callers skip its adjoint). A func that
    returns one of its parameters unchanged (``return v``) has no reverse statements but still
    passes the gradient through, so a differentiable result counts too. ``reverse``: the body's
    reverse records when already computed (``pipeline.Compiled``); None computes them."""
    if fn.ret is not None and is_differentiable_type(fn.ret.type):
        return True
    return bool(reverse_block(fn.body) if reverse is None else reverse)
