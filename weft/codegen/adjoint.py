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
from .. import vector_types as vt
from . import intrinsics as intr
from . import ir


def is_differentiable_type(t) -> bool:
    """Types whose values carry gradients (``types.is_differentiable``)."""
    return wt.is_differentiable(t)


def has_float_elements(array_type) -> bool:
    """Whether an array type's elements are floats (scalars, vectors, matrices...)."""
    return wt.is_float(vt.scalar_of(getattr(array_type, "dtype", None)))


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


# ---------------------------------------------------------------------------------------------
# atomics whose values the backward pass would need
# ---------------------------------------------------------------------------------------------


def is_shared_atomic(s) -> bool:
    """An atomic call on an array other threads can see (not a kernel's own local storage)."""
    return isinstance(s, ir.Call) and intr.is_atomic(s.callee) and not isinstance(s.args[0].type, wt.LocalArrayType)


def unreplayed_atomic_error(fn: ir.Function, file: str, name: str) -> str | None:
    """Why a kernel's backward pass cannot be right, or None: it uses the value an atomic
    returned (a counter handing out slots, ``old = wp.atomic_add(...)``) where the gradient
    depends on it (an index into a float array, a float value, a branch or loop bound). The
    backward pass replays the forward without its side effects, so that value is not there
    again; replaying the atomic would change the array a second time (Warp's generated replay
    does, and its gradients then go to the wrong elements)."""
    sources = {}
    for s in ir.walk(fn.body):
        if is_shared_atomic(s) and s.result is not None:
            sources[s.result.id] = s
    if not sources:
        return None
    origin = dict((v, v) for v in sources)  # tainted var id -> the atomic result it comes from
    changed = True
    while changed:
        changed = False
        for s in ir.walk(fn.body):
            if isinstance(s, ir.Call) and s.result is not None and s.result.id not in origin:
                hit = next((origin[a.id] for a in s.args if a is not None and a.id in origin), None)
                if hit is not None:
                    origin[s.result.id] = hit
                    changed = True
            elif isinstance(s, (ir.Assign, ir.Read)):
                dst = s.dst if isinstance(s, ir.Assign) else s.result
                if s.src.id in origin and dst.id not in origin:
                    origin[dst.id] = origin[s.src.id]
                    changed = True

    def culprit(s):
        if isinstance(s, ir.If):
            return origin.get(s.cond.id)
        if isinstance(s, ir.Loop):
            return next((origin[v.id] for v in (s.start, s.stop, s.step, s.cond) if v is not None and v.id in origin), None)
        if not isinstance(s, ir.Call):
            return None
        arrays = intr.reads_array(s.callee) or intr.writes_array(s.callee)
        if arrays and s.args and isinstance(s.args[0].type, wt.ArrayType):
            if not has_float_elements(s.args[0].type):
                return None  # integer bookkeeping
            # an index of a float array access decides which element's gradient is read or
            # added to (the stored or added value itself needs no replay: its adjoint is read)
            indices = s.args[1 : 1 + s.args[0].type.ndim]
            return next((origin[a.id] for a in indices if a is not None and a.id in origin), None)
        hit = next((origin[a.id] for a in s.args if a is not None and a.id in origin), None)
        if hit is not None and s.result is not None and is_differentiable_type(s.result.type):
            return hit  # float math on the value: its adjoint needs the value
        return None

    for s in ir.walk(fn.body):
        hit = culprit(s)
        if hit is not None:
            atomic = sources[hit]
            line = f"{file}:{atomic.loc.line}" if atomic.loc is not None else file
            return (
                f"kernel '{name}' cannot be differentiated (generated backward replay of consumed-return counter "
                f"atomics is not supported): the value returned by wp.{atomic.callee} at {line} "
                "decides what the kernel computes, and the backward pass does not run atomics again (that would "
                "change the array a second time), so its gradient would go to the wrong elements. Store the value "
                "in an array and read it back in a separate kernel, or give this kernel enable_backward=False (or "
                "launch it outside the tape) if it needs no gradient."
            )
    return None
