"""What the backward pass cannot do with local arrays, found before it is built.

A local array (``wp.zeros(shape, dtype)`` in a kernel or func) lives in the thread's memory and
carries no gradient. The backward pass replays the forward, local writes included, then runs the
reverse; a dynamic loop's reverse recomputes each iteration from its checkpointed loop-carried
values. Two patterns would then give a wrong gradient without a word, so they are refused when a
backward pass is built (``pipeline.differentiate`` records the message; forward-only kernels and
``enable_backward=False`` are unaffected):

- a value that depends on the inputs (an *active* value) stored in a local array: its gradient
  would stop there;
- a dynamic loop reading, in a differentiable computation, a local array that is written again
  later (later in the loop, or after it): the recomputed iterations would read the later values.
  A local array the loop body creates itself is private to each iteration and always fine.

Contract: ``check(fn)`` raises ``NotImplementedError`` naming the line and what to do, or returns.
"""

from __future__ import annotations

from .. import types as wt
from . import intrinsics as intr
from . import ir

_VIEWS = (intr.ARRAY_VIEW, intr.ARRAY_SLICE)


def check(fn: ir.Function):
    """Refuse the local-array patterns the backward pass would get wrong (module docstring)."""
    if not any(isinstance(s, ir.Call) and s.callee == intr.LOCAL_STORAGE for s in ir.walk(fn.body)) and not any(
        isinstance(p.var.type, wt.LocalArrayType) for p in fn.params
    ):
        return
    storage = _storages(fn)
    active = _active_vars(fn)
    for s in ir.walk(fn.body):
        if isinstance(s, ir.Call) and intr.writes_local_array(s) and s.args[-1].id in active:
            raise NotImplementedError(
                f"{_where(fn, s)}: a value computed from the inputs is stored in a local array (wp.zeros in a "
                "kernel), which carries no gradient, so the backward pass would lose it. Keep such values in "
                "variables or vectors, or build the kernel with enable_backward=False"
            )
    stmts = list(ir.walk(fn.body))
    position = {id(x): k for k, x in enumerate(stmts)}  # program order
    writes = [(k, st) for k, x in enumerate(stmts) for st in _writes(x, storage)]
    _check_loops(fn, fn.body, storage, position, writes, outer=None)


def _where(fn, stmt) -> str:
    if isinstance(stmt, ir.Loop):
        file = fn.locs[0][0] if fn.locs else ""
        return f"{file}:{stmt.line}" if stmt.line else f"'{fn.name}'"
    if stmt.loc is None:
        return f"'{fn.name}'"
    file, line, _ = fn.locs[stmt.loc.id]
    return f"{file}:{line}"


def _storages(fn) -> dict:
    """var id -> the storage a local array var is over: a LOCAL_STORAGE var id, or ``("param",
    name)`` for a local array parameter of a func."""
    out = {p.var.id: ("param", p.name) for p in fn.params if isinstance(p.var.type, wt.LocalArrayType)}
    changed = True
    while changed:
        changed = False
        for s in ir.walk(fn.body):
            src = dst = None
            if isinstance(s, ir.Call) and s.result is not None and isinstance(s.result.type, wt.LocalArrayType):
                if s.callee == intr.LOCAL_VIEW:
                    src, dst = s.args[0].id, s.result.id
                    if dst not in out:
                        out[dst] = src
                        changed = True
                    continue
                if s.callee in _VIEWS or s.callee == intr.PHI:
                    src, dst = s.args[0 if s.callee in _VIEWS else 1].id, s.result.id
            elif isinstance(s, (ir.Assign, ir.Read)):
                src = s.src.id
                dst = s.dst.id if isinstance(s, ir.Assign) else s.result.id
            if src in out and dst not in out:
                out[dst] = out[src]
                changed = True
    return out


def _active_vars(fn) -> set:
    """Ids of the vars whose values depend on the function's differentiable inputs (its
    differentiable parameters and the arrays it reads, local arrays aside)."""
    active = {p.var.id for p in fn.params if wt.is_differentiable(p.var.type)}
    changed = True
    while changed:
        changed = False
        for s in ir.walk(fn.body):
            if isinstance(s, ir.Call) and s.result is not None:
                if s.result.id in active or not wt.is_differentiable(s.result.type):
                    continue
                reads_memory = any(
                    wt.is_array_like(a.type) and not isinstance(a.type, wt.LocalArrayType) for a in s.args
                )
                if reads_memory or any(a.id in active for a in s.args):
                    active.add(s.result.id)
                    changed = True
            elif isinstance(s, (ir.Assign, ir.Read)):
                dst = s.dst if isinstance(s, ir.Assign) else s.result
                if s.src.id in active and dst.id not in active:
                    active.add(dst.id)
                    changed = True
    return active


def _writes(s, storage) -> list:
    """The storages statement ``s`` writes (a local store or atomic, a func given local arrays,
    a local array created again)."""
    if not isinstance(s, ir.Call):
        return []
    if s.callee == intr.LOCAL_STORAGE:
        return [s.result.id]
    if intr.writes_local_array(s):
        return [storage.get(s.args[0].id, "unknown")]
    if ir.is_func(s.callee) and intr.has_side_effect(s.callee):
        return [storage.get(a.id, "unknown") for a in s.args if isinstance(a.type, wt.LocalArrayType)]
    return []


def _reads(s, storage) -> list:
    """The storages statement ``s`` reads a differentiable value from."""
    if not (isinstance(s, ir.Call) and s.result is not None and wt.is_differentiable(s.result.type)):
        return []
    return [storage.get(a.id, "unknown") for a in s.args if isinstance(a.type, wt.LocalArrayType)]


def _check_loops(fn, block, storage, position, writes, outer):
    """``writes``: ``(position, storage)`` of every local-array write, in program order."""
    for s in block:
        if isinstance(s, ir.If):
            _check_loops(fn, s.then, storage, position, writes, outer)
            _check_loops(fn, s.orelse, storage, position, writes, outer)
        elif isinstance(s, ir.Loop):
            top = outer or s
            body = list(ir.walk(s.body)) + (list(ir.walk(s.cond_block)) if s.cond_block is not None else [])
            private = {x.result.id for x in body if isinstance(x, ir.Call) and x.callee == intr.LOCAL_STORAGE}
            read = {st for x in body for st in _reads(x, storage)} - private
            if read:
                start = position[id(top)]
                later = {st for k, st in writes if k >= start}
                if read & later or (read and "unknown" in later) or ("unknown" in read and later):
                    raise NotImplementedError(
                        f"{_where(fn, s)}: this loop reads a local array (wp.zeros in a kernel) that is written "
                        "again later, in the loop or after it; the backward pass recomputes the loop's "
                        "iterations and would read the later values. Create the local array inside the loop "
                        "body, unroll the loop (range over wp.static(...) constants), or build the kernel "
                        "with enable_backward=False"
                    )
            _check_loops(fn, s.body, storage, position, writes, top)
