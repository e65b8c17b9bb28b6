"""Forward mode: a kernel's IR -> the IR of its tangent kernel (Jacobian-vector products).

Contract: ``tangent_function(fn)`` returns a new ``ir.Function`` (``fn`` is not changed) that
computes everything ``fn`` computes and, beside every value that carries a tangent, that value's
directional derivative. Its parameters are ``fn``'s followed by one twin per parameter,
``<name>__tangent``, of the same type: the twin of a float array holds the array's tangent (read
where the kernel reads the array, written where it writes it), the twin of a float value or a
struct is the value's tangent, and the twin of anything else is passed and ignored.

The result is ordinary IR: the tangent statements are calls of builtins and intrinsics, so the
reverse pass differentiates a tangent kernel like any other (``hvp`` runs reverse over forward).
Each builtin's tangent comes from ``tangent_rules``; a builtin without a rule there gets the
``jvp_adjoint`` intrinsic, which evaluates the tangent from the builtin's adjoint (one adjoint call
per result component) and has no reverse of its own, so second derivatives through it raise.
User funcs are inlined (their statements are transformed in place), except funcs whose gradient
the user wrote (``@wp.func_grad``) or whose body is native C++: those go through ``jvp_adjoint``
with their adjoint. Constructs with no forward rule (tiles, ``wp.address_of``, Fabric arrays)
raise ``NotImplementedError`` naming the construct.
"""

from __future__ import annotations

import itertools

from .. import types as wt
from . import intrinsics as intr
from . import ir
from . import tangent_rules as rules
from .tangent_rules import has_tangent
from . import typing_rules as tr

TANGENT_SUFFIX = "__tangent"

# Value intrinsics whose result is the same intrinsic applied to the tangents of the operands at
# ``positions`` (the others are passed as they are: indices, conditions).
_LINEAR_POSITIONS = {
    intr.CONSTRUCT: None,  # every operand
    intr.TUPLE_MAKE: None,
    intr.PHI: lambda n: range(1, n),  # phi(cond, a, b)
    intr.EXTRACT: lambda n: (0,),  # extract(base, indices...)
    intr.ASSIGN_COPY: lambda n: (0, n - 1),  # assign_copy(base, indices..., value)
    intr.GET_FIELD: lambda n: (0,),
    intr.SET_FIELD: lambda n: (0, 1),
    intr.TUPLE_GET: lambda n: (0,),
}
# Array-valued intrinsics: the tangent of the result is the same view of the argument's tangent.
_ARRAY_VIEWS = (intr.ARRAY_VIEW, intr.ARRAY_SLICE, intr.INDEXED_VIEW, intr.INDEXED_DATA, intr.LOCAL_VIEW)
# Intrinsics that never carry a tangent (integers, flags, printing, assertions, raw pointers).
_NO_TANGENT = frozenset(
    [intr.TID, intr.SHAPE, intr.ZERO, intr.LOGICAL_AND, intr.LOGICAL_OR, intr.PRINT_VALUE, intr.PRINT_STR,
     intr.PRINT_NEWLINE, intr.PRINTF, intr.ASSERT, intr.BIT_CAST, intr.GRAD_CALL, intr.INDEXED_INDEX,
     intr.ARRAY_PTR, intr.ARRAY_FROM_PTR, intr.ATOMIC_CAS, intr.ADJ_READ, intr.ADJ_ACCUM, intr.ADJ_SET,
     intr.TILE_REDUCE, *intr.BITWISE_ATOMICS]
)
_REFUSED = {
    intr.ADDRESS_OF_LOCAL: "wp.address_of",
    intr.ADDRESS_OF_ELEMENT: "wp.address_of",
    intr.TILE_MAP: "tile operations",
    intr.FABRIC_ELEMENT: "Fabric arrays",
    intr.FABRIC_ROW: "Fabric arrays",
    intr.FABRIC_SIZE: "Fabric arrays",
}


def tangent_function(fn: ir.Function) -> ir.Function:
    """The tangent kernel of the kernel ``fn`` (see the module docstring).

    Raises:
        NotImplementedError: ``fn`` uses a construct forward mode has no rule for (named).
    """
    return _Builder(fn).build()


class _Builder:
    def __init__(self, fn: ir.Function):
        self.src = fn
        self.out = ir.Function(fn.name, fn.is_kernel)
        self.out.locs = list(fn.locs)
        self.scopes = [{}]  # id(source var) -> var of the output, one dict per inlined call
        self.loc_offsets = [0]  # where each scope's locations start in the output's table
        self.callee_locs: dict = {}
        self.dot: dict = {}  # id(output var) -> its tangent var (absent: no tangent, i.e. zero)
        self.loop_ids = itertools.count(1)
        self.blocks = [self.out.body]
        self.inlining: list = []  # funcs being inlined (a recursive func cannot be)

    # ------------------------------------------------------------------ plumbing
    def build(self) -> ir.Function:
        fn, out = self.src, self.out
        params = [ir.Param(p.name, self.m(p.var)) for p in fn.params]
        twins = []
        for p, q in zip(fn.params, params):
            twin = out.new_var(p.var.type, label=p.name + TANGENT_SUFFIX)
            twins.append(ir.Param(p.name + TANGENT_SUFFIX, twin))
            if has_tangent(p.var.type):
                self.dot[id(q.var)] = twin
        out.params = params + twins
        self.block(fn.body)
        for attr in ("tid_ndim", "captures"):
            if hasattr(fn, attr):
                setattr(out, attr, getattr(fn, attr))
        out.has_side_effects = fn.has_side_effects
        out.thread_values = fn.thread_values
        out.adjoint_error = fn.adjoint_error
        out.global_captures = list(fn.global_captures)
        return out

    def m(self, v):
        """The output's var for the source var ``v`` (made on first sight, in the current scope)."""
        if v is None:
            return None
        scope = self.scopes[-1]
        new = scope.get(id(v))
        if new is None:
            new = self.out.new_var(v.type, const=v.const, label=v.label, mutable=v.mutable, literal=v.literal)
            scope[id(v)] = new
            if v.mutable and has_tangent(v.type):
                self.dot[id(new)] = self.out.new_var(v.type, label=f"{v.label}{TANGENT_SUFFIX}", mutable=True)
        return new

    def emit(self, stmt):
        self.blocks[-1].append(stmt)
        if isinstance(stmt, ir.Call) and intr.has_side_effect(stmt.callee):
            self.out.has_side_effects = True

    def call(self, callee, args, result_type, loc, attr=None):
        res = self.out.new_var(result_type) if result_type is not None else None
        self.emit(ir.Call(res, callee, list(args), loc, attr))
        return res

    def const(self, value, t):
        return self.out.new_var(t, const=tr.convert_literal(value, t))

    def d(self, v):
        """The tangent of output var ``v``, or None (zero)."""
        return self.dot.get(id(v))

    def dz(self, v, loc):
        """The tangent of ``v``, or an explicit zero of its type."""
        t = self.d(v)
        return t if t is not None else self.call(intr.ZERO, [], v.type, loc)

    def loc(self, loc):
        if loc is None:
            return None
        return ir.Loc(loc.id + self.loc_offsets[-1], loc.line)

    def nested(self, block) -> ir.Block:
        out = ir.Block()
        self.blocks.append(out)
        try:
            self.block(block)
        finally:
            self.blocks.pop()
        return out

    # ------------------------------------------------------------------ statements
    def block(self, block):
        for s in block:
            if isinstance(s, ir.Call):
                self.call_stmt(s)
            elif isinstance(s, ir.Assign):
                dst, src = self.m(s.dst), self.m(s.src)
                self.emit(ir.Assign(dst, src))
                if self.d(dst) is not None:
                    self.emit(ir.Assign(self.d(dst), self.dz(src, None)))
            elif isinstance(s, ir.Read):
                res, src = self.m(s.result), self.m(s.src)
                self.emit(ir.Read(res, src))
                if self.d(src) is not None:
                    t = self.out.new_var(res.type, label=f"{res.label}{TANGENT_SUFFIX}" if res.label else "")
                    self.emit(ir.Read(t, self.d(src)))
                    self.dot[id(res)] = t
            elif isinstance(s, ir.If):
                cond = self.m(s.cond)
                then = self.nested(s.then)
                orelse = self.nested(s.orelse)
                self.emit(ir.If(cond, then, orelse))
            elif isinstance(s, ir.Loop):
                self.loop(s)
            else:
                raise TypeError(f"unknown IR statement {type(s).__name__}")

    def loop(self, s: ir.Loop):
        carried = [self.m(c) for c in s.carried]
        carried += [self.d(c) for c in carried if self.d(c) is not None]
        new = ir.Loop(
            s.kind,
            ir.Block(),
            index=self.m(s.index),
            start=self.m(s.start),
            stop=self.m(s.stop),
            step=self.m(s.step),
            carried=carried,
            exit_flags=[self.m(f) for f in s.exit_flags],
            id=next(self.loop_ids),
            line=s.line,
        )
        if s.cond_block is not None:
            new.cond_block = self.nested(s.cond_block)
            new.cond = self.m(s.cond)
        new.body = self.nested(s.body)
        self.emit(new)

    def call_stmt(self, s: ir.Call):
        callee = s.callee
        if ir.is_func(callee) and self.inlinable(callee):
            self.inline(callee, s)
            return
        args = [self.m(a) for a in s.args]
        res = self.m(s.result)
        loc = self.loc(s.loc)
        if ir.is_intrinsic(callee) and callee in _REFUSED and any(has_tangent(a.type) for a in args):
            raise NotImplementedError(f"forward mode (wp.autograd.jvp) does not support {_REFUSED[callee]}")
        self.emit(ir.Call(res, callee, args, loc, s.attr))
        if ir.is_func(callee) and callee not in self.out.callees:
            self.out.callees.append(callee)
        new = self.blocks[-1].stmts[-1]
        if ir.is_intrinsic(callee):
            self.intrinsic_tangent(new)
        elif ir.is_builtin(callee):
            if callee.differentiable and res is not None and has_tangent(res.type) and any(self.d(a) for a in args):
                self.dot[id(res)] = rules.tangent_of(self, new)
        elif callee.differentiable and res is not None and has_tangent(res.type) and any(self.d(a) for a in args):
            self.dot[id(res)] = self.via_adjoint(new)

    # ------------------------------------------------------------------ funcs
    def inlinable(self, callee) -> bool:
        return (
            callee.native is None
            and getattr(callee, "grad_ir", None) is None
            and callee.ir is not None
            and callee not in self.inlining
        )

    def inline(self, callee, s: ir.Call):
        """``s`` calls a user func: its statements, transformed, in place of the call."""
        fn = callee.ir
        args = [self.m(a) for a in s.args]
        res = self.m(s.result)
        key = id(fn)
        if key not in self.callee_locs:
            self.callee_locs[key] = len(self.out.locs)
            self.out.locs.extend(fn.locs)
        scope = {id(p.var): a for p, a in zip(fn.params, args)}
        self.scopes.append(scope)
        self.loc_offsets.append(self.callee_locs[key])
        self.inlining.append(callee)
        try:
            # parameters are the func's own locals: a func may rebind one (its SSA gives a new var)
            self.block(fn.body)
            ret = self.m(fn.ret) if fn.ret is not None else None
        finally:
            self.inlining.pop()
            self.loc_offsets.pop()
            self.scopes.pop()
        if res is not None:
            self.emit(ir.Read(res, ret) if ret.mutable else ir.Call(res, intr.COPY, [ret], None))
            if self.d(ret) is not None:
                t = self.out.new_var(res.type)
                self.emit(ir.Read(t, self.d(ret)) if ret.mutable else ir.Call(t, intr.COPY, [self.d(ret)], None))
                self.dot[id(res)] = t

    # ------------------------------------------------------------------ intrinsics
    def intrinsic_tangent(self, s: ir.Call):
        c, args, res = s.callee, s.args, s.result
        if c in _NO_TANGENT:
            return
        if c == intr.LOAD:
            if self.d(args[0]) is not None and res is not None:
                self.dot[id(res)] = self.call(intr.LOAD, [self.d(args[0])] + args[1:], res.type, s.loc, s.attr)
        elif c == intr.STORE:
            if self.d(args[0]) is not None:
                value = self.dz(args[-1], s.loc)
                self.call(intr.STORE, [self.d(args[0])] + args[1:-1] + [value], None, s.loc, s.attr)
        elif c in intr.ATOMICS.values():
            self.atomic_tangent(s)
        elif c in _ARRAY_VIEWS:
            if self.d(args[0]) is not None and res is not None:
                self.dot[id(res)] = self.call(c, [self.d(args[0])] + args[1:], res.type, s.loc, s.attr)
        elif c == intr.LOCAL_STORAGE:
            if has_tangent(res.type):
                self.dot[id(res)] = self.call(c, [], res.type, s.loc, s.attr)
        elif c == intr.COPY:
            if self.d(args[0]) is not None:
                self.dot[id(res)] = self.call(intr.COPY, [self.d(args[0])], res.type, s.loc, s.attr)
        elif c == intr.CAST:
            if self.d(args[0]) is not None and has_tangent(res.type):
                self.dot[id(res)] = self.call(intr.CAST, [self.d(args[0])], res.type, s.loc, s.attr)
        elif c in _LINEAR_POSITIONS:
            self.linear_tangent(s, _LINEAR_POSITIONS[c])
        elif c in _REFUSED:
            return  # none of its operands carries a tangent (checked in call_stmt)
        else:
            raise NotImplementedError(f"forward mode (wp.autograd.jvp) has no rule for the intrinsic '{c}'")

    def linear_tangent(self, s: ir.Call, positions):
        res = s.result
        if res is None or not has_tangent(res.type):
            return
        pos = range(len(s.args)) if positions is None else positions(len(s.args))
        if not any(self.d(s.args[k]) is not None for k in pos):
            return
        args = [self.dz(a, s.loc) if k in pos else a for k, a in enumerate(s.args)]
        self.dot[id(res)] = self.call(s.callee, args, res.type, s.loc, s.attr)

    def atomic_tangent(self, s: ir.Call):
        """add/sub/exch act on the tangent array alike; min/max move the value's tangent in where
        the value won (ties keep the old one, as the reverse pass gives the gradient)."""
        c, args, res = s.callee, s.args, s.result
        arr_dot = self.d(args[0])
        if arr_dot is None or c not in intr.DIFFERENTIABLE_ATOMICS + ("atomic_exch",):
            return
        value = args[-1]
        if c in ("atomic_add", "atomic_sub", "atomic_exch"):
            if self.d(value) is None and c != "atomic_exch" and res is None:
                return  # adding zero
            r = self.call(c, [arr_dot] + args[1:-1] + [self.dz(value, s.loc)], arr_dot.type.dtype, s.loc, s.attr)
            if res is not None:
                self.dot[id(res)] = r
            return
        if not wt.is_scalar(value.type):
            raise NotImplementedError(
                f"forward mode (wp.autograd.jvp) supports {c} on scalars only, not on {wt.type_repr(value.type)}"
            )
        # the old value is the result: the new value won where it is strictly below (min) / above (max)
        if res is None:
            raise NotImplementedError(f"forward mode: {c} without its result")
        won = rules.builtin(self, "lt" if c == "atomic_min" else "gt", [value, res], s.loc)
        then = ir.Block()
        self.blocks.append(then)
        try:
            self.call(intr.STORE, [arr_dot] + args[1:-1] + [self.dz(value, s.loc)], None, s.loc)
        finally:
            self.blocks.pop()
        self.emit(ir.If(won, then, ir.Block()))

    def via_adjoint(self, s: ir.Call):
        """The tangent of a call from its adjoint: ``jvp_adjoint`` (attr: the callee and the
        positions of the operands that carry tangents; operands: the call's, then those tangents)."""
        t = s.result.type
        if not rules.has_components(t):
            name = s.callee.symbol
            raise NotImplementedError(
                f"forward mode (wp.autograd.jvp): the tangent of '{name}' with a result of type {wt.type_repr(t)} "
                "cannot be formed from its adjoint"
            )
        pos = tuple(k for k, a in enumerate(s.args) if self.d(a) is not None)
        if ir.is_func(s.callee):
            s.callee.adjoint_required = True  # its adjoint is rendered with the forward pass
        return self.call(intr.JVP_ADJOINT, s.args + [self.d(s.args[k]) for k in pos], t, s.loc, (s.callee, pos))
