"""Autodiff: forward IR -> reverse-pass statements.

Contract: ``reverse_block(block)`` returns the list of reverse statements for ``block``: each
forward statement that carries a gradient maps, in reverse order, to one ``Adj*`` record. The
backward entry point is then: replay the forward (side effects skipped, loop state checkpointed)
followed by these records. A loop's reverse runs its iterations backwards; each iteration
restores the checkpointed loop-carried values, zeroes the adjoints of the body's values, replays
the body and runs the body's reverse.

Which statements contribute is decided by each intrinsic's ``OpInfo.adjoint`` rule
(``intrinsics.OPS``), a builtin overload's ``differentiable`` flag and a func's own body; an
intrinsic with no ``OpInfo`` raises, naming it.
"""

from __future__ import annotations

import dataclasses

from .. import types as wt
from . import intrinsics as intr
from . import ir


def is_differentiable_type(t) -> bool:
    """Types whose values carry gradients (``types.is_differentiable``)."""
    return wt.is_differentiable(t)


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


def contributes(stmt: ir.Call) -> bool:
    callee = stmt.callee
    if ir.is_intrinsic(callee):
        return intr.op_info(callee).adjoint(stmt)  # raises, naming the intrinsic, when it has none
    if ir.is_builtin(callee):  # contributes when a value it touches is differentiable
        return callee.differentiable and intr.operands_differentiable(stmt)
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
