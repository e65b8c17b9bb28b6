"""Index ranges: which array accesses stay inside their array, and under which per-launch test.

Contract: ``IndexRanges(fn).condition(call)`` takes a kernel's ``load`` / ``store`` of an array
parameter and returns the ``Cond`` under which every index of the access is inside its array
(``0 <= index < a.shape[d]``) in every thread that runs it, or None when nothing short of the
per-access check can tell. A ``Cond`` is data, never C++: alternatives (tuples) of atoms, each
atom a ``Form`` meaning ``form >= 0``, over launch-invariant symbols:

    ("launch", d)        the launch's bounds.shape[d] (the range of tid coordinate d)
    ("size",)            the launch's size, as the renderer gives it: clamped to [0, 2^31 + 1]
    ("shape", name, d)   array parameter ``name``'s shape[d]
    ("param", name)      int32 parameter ``name``

``TRUE`` is one empty alternative: the access is in range whatever the launch. The renderer
tests the other conditions once per launch and runs the unchecked body when all of them hold
(``emit.fast_condition``); the checked body runs otherwise. It reads the IR and writes nothing.

The reasoning is goal-directed: ``bound(v, b, upper)`` asks for ``v <= b`` (or ``v >= b``), ``b``
a ``Form``, and walks the int32 arithmetic defining ``v``: constants and invariant symbols, tid
coordinates (``0 <= tid_d <= launch_d - 1``), range-loop indices, ``+``/``-`` with one invariant
operand, ``min``/``max``/``clamp`` (weft's clamp is ``min(max(lo, x), hi)``), ``where`` and the
phis of ``if``. Every ``+``/``-`` also asks that its exact result fits in an int32, so a value
that would wrap is never taken for the unwrapped one. Anything else is unprovable.

A proof that needs a launch test is only used for accesses no ``if`` guards (``condition``):
a guarded access is typically guarded *because* the test would fail (``if i < n - 1: a[i + 1]``),
and a failing test would send the whole launch to the checked body.
"""

from __future__ import annotations

import dataclasses

from .. import types as wt
from . import intrinsics as intr
from . import ir

INT32_MIN, INT32_MAX = -(2**31), 2**31 - 1
# what each symbol kind can be (the renderer clamps the launch size; launch.py keeps every launch
# dimension in [0, INT32_MAX]; array shapes are int32 and never negative)
_RANGES = {
    "launch": (0, INT32_MAX),
    "size": (0, 2**31 + 1),
    "shape": (0, INT32_MAX),
    "param": (INT32_MIN, INT32_MAX),
}
# a Form stays small, so a condition computed in int64 at launch time cannot overflow
_MAX_TERMS, _MAX_COEF, _MAX_CONST = 6, 16, 2**40
_MAX_ALTERNATIVES, _MAX_DEPTH = 4, 32


@dataclasses.dataclass(frozen=True)
class Form:
    """``const + sum(coef * symbol)``: ``terms`` sorted by symbol, no zero coefficients."""

    terms: tuple = ()
    const: int = 0

    @staticmethod
    def symbol(sym) -> "Form":
        return Form(((sym, 1),))

    def __add__(self, other: "Form") -> "Form":
        acc = dict(self.terms)
        for sym, c in other.terms:
            acc[sym] = acc.get(sym, 0) + c
        return Form(tuple(sorted((s, c) for s, c in acc.items() if c)), self.const + other.const)

    def __neg__(self) -> "Form":
        return Form(tuple((s, -c) for s, c in self.terms), -self.const)

    def __sub__(self, other: "Form") -> "Form":
        return self + -other

    def plus(self, c: int) -> "Form":
        return Form(self.terms, self.const + c)

    def small(self) -> bool:
        """Whether the form is within the sizes that keep its int64 evaluation exact."""
        return (
            len(self.terms) <= _MAX_TERMS
            and all(abs(c) <= _MAX_COEF for _, c in self.terms)
            and abs(self.const) <= _MAX_CONST
        )

    def extremes(self) -> tuple:
        """The smallest and largest value over the symbols' ranges."""
        lo = hi = self.const
        for sym, c in self.terms:
            a, b = (c * x for x in _RANGES[sym[0]])
            lo, hi = lo + min(a, b), hi + max(a, b)
        return lo, hi


TRUE = ((),)  # one alternative that needs nothing
FALSE = ()  # no alternative: unprovable


def _strongest(alt) -> tuple:
    """An alternative's atoms, sorted, only the strongest of those that differ in their constant
    (``n - 1 >= 0`` implies ``n + 5 >= 0``)."""
    best: dict = {}
    for f in alt:
        if f.terms not in best or f.const < best[f.terms].const:
            best[f.terms] = f
    return tuple(sorted(best.values(), key=repr))


def _canonical(alts) -> tuple:
    """Alternatives sorted (deterministic C++), those implied by a smaller one dropped, capped."""
    alts = sorted({_strongest(a) for a in alts}, key=lambda a: (len(a), repr(a)))
    kept = []
    for a in alts:
        if not any(set(k) <= set(a) for k in kept):
            kept.append(a)
    return tuple(kept[:_MAX_ALTERNATIVES])  # dropping an alternative only strengthens the condition


def all_of(*conds) -> tuple:
    out = TRUE
    for c in conds:
        out = _canonical(a + b for a in out for b in c)
        if not out:
            return FALSE
    return out


def any_of(*conds) -> tuple:
    return _canonical(a for c in conds for a in c)


def atom(form: Form) -> tuple:
    """``form >= 0``: TRUE or FALSE when the symbols' ranges decide it, else a launch test."""
    if not form.small():
        return FALSE
    lo, hi = form.extremes()
    if lo >= 0:
        return TRUE
    if hi < 0:
        return FALSE
    return ((form,),)


def guarded_calls(block, inside: bool = False, out: set | None = None) -> set:
    """Ids of the calls an ``if`` (at any depth) guards."""
    out = set() if out is None else out
    for s in block:
        if isinstance(s, ir.If):
            guarded_calls(s.then, True, out)
            guarded_calls(s.orelse, True, out)
        elif isinstance(s, ir.Loop):
            if s.cond_block is not None:
                guarded_calls(s.cond_block, inside, out)
            guarded_calls(s.body, inside, out)
        elif isinstance(s, ir.Call) and inside:
            out.add(id(s))
    return out


def _operands(s) -> list:
    """The vars a statement reads (a loop: its bounds, condition and state; an if: its test)."""
    if isinstance(s, ir.Call):
        return list(s.args)
    if isinstance(s, (ir.Assign, ir.Read)):
        return [s.src]
    if isinstance(s, ir.If):
        return [s.cond]
    return [s.start, s.stop, s.step, s.cond, *s.exit_flags, *s.carried]


def _confined(fn: ir.Function, loop: ir.Loop) -> bool:
    """Whether a range loop's index is read inside its body only, and indexes no other loop:
    after the loop it would hold the first value past ``stop``, outside the range."""
    inside = {id(s) for s in ir.walk(loop.body)}
    idx = loop.index.id
    for s in ir.walk(fn.body):
        if isinstance(s, ir.Loop) and s is not loop and s.index is not None and s.index.id == idx:
            return False
        if id(s) not in inside and any(v is not None and v.id == idx for v in _operands(s)):
            return False
    return fn.ret is None or fn.ret.id != idx


def _int_const(v):
    """An int constant's value (within int32, as the C++ literal has it), or None."""
    c = v.const if v.is_const else None
    ok = isinstance(c, int) and not isinstance(c, bool) and INT32_MIN <= c <= INT32_MAX
    return c if ok else None


class IndexRanges:
    """The index facts of one kernel: what defines each int32 var, and the proofs built on them."""

    def __init__(self, fn: ir.Function):
        reassigned = {s.dst.id for s in ir.walk(fn.body) if isinstance(s, ir.Assign)}
        fixed = [p for p in fn.params if p.var.id not in reassigned and not p.var.mutable]
        self.arrays = {p.var.id: p.name for p in fixed if isinstance(p.var.type, wt.ArrayType)}
        self.symbols = {p.var.id: Form.symbol(("param", p.name)) for p in fixed if p.var.type is wt.int32}
        self.defs, self.loops = {}, {}
        for s in ir.walk(fn.body):
            if isinstance(s, ir.Call) and s.result is not None:
                self.defs[s.result.id] = s
                if s.callee == intr.SHAPE and s.args[0].id in self.arrays and isinstance(s.attr, int):
                    self.symbols[s.result.id] = Form.symbol(("shape", self.arrays[s.args[0].id], s.attr))
            elif isinstance(s, ir.Loop) and s.kind == "range" and s.index is not None:
                if s.index.id not in reassigned and _confined(fn, s):  # mutable, but only the loop writes it
                    self.loops[s.index.id] = s
        self.guarded = guarded_calls(fn.body)
        self.memo: dict = {}
        self.forms: dict = {}

    def condition(self, call: ir.Call):
        """The ``Cond`` under which the load/store ``call`` of an array parameter indexes inside
        the array, or None (unprovable, or guarded by an ``if`` and not provable statically)."""
        arr = call.args[0]
        name = self.arrays.get(arr.id)
        if name is None or call.callee not in (intr.LOAD, intr.STORE):
            return None
        conds = []
        for d, v in enumerate(call.args[1 : 1 + arr.type.ndim]):
            last = Form.symbol(("shape", name, d)).plus(-1)
            conds += [self.bound(v, Form(), False), self.bound(v, last, True)]
        cond = all_of(*conds)
        if not cond or (cond != TRUE and id(call) in self.guarded):
            return None
        return cond

    def entered(self, loop) -> tuple:
        """The ``Cond`` under which ``for j in range(start, stop, step)`` runs its body at least
        once wherever it is reached: ``step`` a positive constant and ``start`` / ``stop``
        launch-invariant, so ``stop - start - 1 >= 0``. FALSE for any other loop."""
        if loop.kind != "range" or loop.index is None:
            return FALSE
        step = _int_const(loop.step)
        start, stop = self.form(loop.start), self.form(loop.stop)
        if step is None or step <= 0 or start is None or stop is None:
            return FALSE
        return atom(stop - start.plus(1))

    def last_offset(self, v, depth: int = 0):
        """``(k, lo, hi, steps)`` when ``v`` is the launch's last thread coordinate plus the int32
        constant ``k`` (``l``, ``l - 1``, ``1 + l``), ``lo`` / ``hi`` the least and greatest
        offset along the way and ``steps`` the ids of the add / sub calls on the way; else None.
        A 1-D launch's thread index is its last coordinate."""
        s = self.defs.get(v.id)
        if s is None or v.mutable or v.type is not wt.int32 or depth > _MAX_DEPTH:
            return None
        if s.callee == intr.TID:
            d, n = s.attr
            return (0, 0, 0, ()) if d == n - 1 else None
        if not (ir.is_builtin(s.callee) and s.callee.symbol in ("add", "sub") and len(s.args) == 2):
            return None
        x, y = s.args
        inner, c = None, _int_const(y)
        if c is not None:
            inner = self.last_offset(x, depth + 1)
            c = c if s.callee.symbol == "add" else -c
        elif s.callee.symbol == "add" and (c := _int_const(x)) is not None:
            inner = self.last_offset(y, depth + 1)
        if inner is None:
            return None
        k = inner[0] + c
        return k, min(inner[1], k), max(inner[2], k), (*inner[3], id(s))

    def interior(self) -> tuple:
        """``(lows, highs, identity, steps)``: the interior of the launch's last thread coordinate ``c``,
        ``c >= L`` for every Form ``L`` in ``lows`` and ``c <= H`` for every ``H`` in ``highs``,
        inside which each ``min`` / ``max`` / ``clamp`` call of ``identity`` (pairs of the call's
        id and the position of its argument) returns that argument, ``c`` plus a constant,
        unchanged: ``wp.max(l - 1, 0)`` needs ``l >= 1``, ``wp.min(l + 1, n - 1)`` needs
        ``l <= n - 2``. A body for the interior's tasks renders those calls as their argument,
        so a stencil's neighbours along the last dimension are contiguous loads. Nothing wraps
        there either: ``steps`` are the ids of the adds and subtracts of constants computing
        those arguments, which the body may compute in plain (not wrapping) arithmetic that the
        compiler sees as affine in the task."""
        lows, highs, identity, steps = [], [], [], []

        def no_wrap(lo, hi, chain):  # c + offset stays inside int32 for every offset on the way (c >= 0)
            steps.extend(chain)
            if hi > 0:
                highs.append(Form(const=INT32_MAX - hi))
            if lo < INT32_MIN:
                lows.append(Form(const=INT32_MIN - lo))

        for s in self.defs.values():
            if not ir.is_builtin(s.callee) or any(a.type is not wt.int32 for a in s.args):
                continue
            sym = s.callee.symbol
            if sym in ("min", "max") and len(s.args) == 2:
                for pos in (0, 1):
                    off, f = self.last_offset(s.args[pos]), self.form(s.args[1 - pos])
                    if off is not None and f is not None:
                        (lows if sym == "max" else highs).append(f.plus(-off[0]))
                        no_wrap(*off[1:])
                        identity.append((id(s), pos))
                        break
            elif sym == "clamp" and len(s.args) == 3 and (off := self.last_offset(s.args[0])) is not None:
                lo, hi = self.form(s.args[1]), self.form(s.args[2])
                if lo is not None and hi is not None:
                    lows.append(lo.plus(-off[0]))
                    highs.append(hi.plus(-off[0]))
                    no_wrap(*off[1:])
                    identity.append((id(s), 0))
        lows, highs = list(dict.fromkeys(lows)), list(dict.fromkeys(highs))
        if len(lows) > _MAX_ALTERNATIVES or len(highs) > _MAX_ALTERNATIVES or not all(f.small() for f in lows + highs):
            return (), (), (), ()  # the entry would test too much: no interior body
        return tuple(lows), tuple(highs), tuple(identity), tuple(dict.fromkeys(steps))

    def form(self, v, depth: int = 0):
        """The ``Form`` equal to a launch-invariant var, or None: an int32 constant, a symbol, or
        a sum or difference of those that cannot wrap whatever the symbols (``a.shape[0] - 1``)."""
        c = _int_const(v)
        if c is not None and v.type is wt.int32:
            return Form(const=c)
        if v.id in self.symbols or depth > _MAX_DEPTH:
            return self.symbols.get(v.id)
        if v.id not in self.forms:
            self.forms[v.id] = self._sum_form(v, depth)
        return self.forms[v.id]

    def _sum_form(self, v, depth: int):
        """``form`` of an int32 add/sub of two invariant forms, if its range fits int32."""
        s = self.defs.get(v.id)
        if not (s is not None and ir.is_builtin(s.callee) and s.callee.symbol in ("add", "sub") and not v.mutable):
            return None
        if not all(x.type is wt.int32 for x in (v, *s.args)):
            return None
        x, y = (self.form(a, depth + 1) for a in s.args)
        if x is None or y is None:
            return None
        f = x + y if s.callee.symbol == "add" else x - y
        lo, hi = f.extremes()
        return f if f.small() and INT32_MIN <= lo and hi <= INT32_MAX else None

    def bound(self, v, b: Form, upper: bool, depth: int = 0) -> tuple:
        """The ``Cond`` under which ``v <= b`` (``upper``) or ``v >= b`` wherever ``v`` is computed."""
        key = (v.id, b, upper)
        if key not in self.memo:
            self.memo[key] = self._bound(v, b, upper, depth) if depth < _MAX_DEPTH else FALSE
        return self.memo[key]

    def _bound(self, v, b: Form, upper: bool, depth: int) -> tuple:
        if v.type is not wt.int32 or not b.small():
            return FALSE
        if v.id in self.loops:
            return self._loop_index(self.loops[v.id], b, upper, depth)
        if v.mutable:
            return FALSE
        f = self.form(v)
        if f is not None:
            return atom(b - f if upper else f - b)
        s = self.defs.get(v.id)
        if s is None:
            return FALSE
        if s.callee == intr.TID:
            return self._tid(s, b, upper)
        if s.callee == intr.PHI:
            return all_of(*(self.bound(x, b, upper, depth + 1) for x in s.args[1:3]))
        if s.callee == intr.CAST:
            return self.bound(s.args[0], b, upper, depth + 1) if s.args[0].type is wt.int32 else FALSE
        rule = _RULES.get(s.callee.symbol) if ir.is_builtin(s.callee) else None
        operands = s.args[1:] if rule is _where else s.args  # where's condition is a bool
        if rule is None or not all(x.type is wt.int32 for x in operands):
            return FALSE
        return rule(self, s.args, b, upper, depth + 1)

    def _tid(self, s, b: Form, upper: bool) -> tuple:
        """A thread index: coordinate d of ``n`` is in [0, launch_d - 1]; the linear one (``n`` 1)
        is int32(task), in [0, size - 1] when the size fits in 2^31."""
        d, n = s.attr
        if n > 1:
            return atom(b - Form.symbol(("launch", d)).plus(-1)) if upper else atom(-b)
        size = Form.symbol(("size",))
        fits = atom(-size.plus(-(2**31)))
        return all_of(fits, atom(b - size.plus(-1)) if upper else atom(-b))

    def _loop_index(self, loop, b: Form, upper: bool, depth: int) -> tuple:
        """``for j in range(start, stop, step)``, ``step`` a positive constant: ``j`` is in
        [start, stop - 1], and ``j += step`` after the last iteration must not wrap (a wrapped
        ``j`` is negative, still below ``stop``, and the loop would go on)."""
        step = _int_const(loop.step)
        if step is None or step <= 0 or loop.start.type is not wt.int32 or loop.stop.type is not wt.int32:
            return FALSE
        no_wrap = self.bound(loop.stop, Form(const=INT32_MAX + 1 - step), True, depth + 1)
        if upper:
            return all_of(no_wrap, self.bound(loop.stop, b.plus(1), True, depth + 1))
        return all_of(no_wrap, self.bound(loop.start, b, False, depth + 1))

    def _shifted(self, e, x: Form, b: Form, upper: bool, depth: int) -> tuple:
        """``e + x`` against ``b``, ``x`` invariant: ``e`` against ``b - x``, and the sum fits."""
        fits = all_of(
            self.bound(e, Form(const=INT32_MAX) - x, True, depth),
            self.bound(e, Form(const=INT32_MIN) - x, False, depth),
        )
        return all_of(fits, self.bound(e, b - x, upper, depth)) if fits else FALSE


def _add(r: IndexRanges, args, b: Form, upper: bool, depth: int) -> tuple:
    x, y = args
    if r.form(y) is not None:
        return r._shifted(x, r.form(y), b, upper, depth)
    if r.form(x) is not None:
        return r._shifted(y, r.form(x), b, upper, depth)
    return FALSE


def _sub(r: IndexRanges, args, b: Form, upper: bool, depth: int) -> tuple:
    x, y = args
    if r.form(y) is not None:
        return r._shifted(x, -r.form(y), b, upper, depth)
    xf = r.form(x)
    if xf is None:
        return FALSE
    # x - y with x invariant: fits when x - MAX <= y <= x - MIN; x - y <= b when y >= x - b
    fits = all_of(
        r.bound(y, xf - Form(const=INT32_MAX), False, depth),
        r.bound(y, xf - Form(const=INT32_MIN), True, depth),
    )
    return all_of(fits, r.bound(y, xf - b, not upper, depth)) if fits else FALSE


def _min(r: IndexRanges, args, b: Form, upper: bool, depth: int) -> tuple:
    parts = [r.bound(x, b, upper, depth) for x in args]
    return any_of(*parts) if upper else all_of(*parts)


def _max(r: IndexRanges, args, b: Form, upper: bool, depth: int) -> tuple:
    parts = [r.bound(x, b, upper, depth) for x in args]
    return all_of(*parts) if upper else any_of(*parts)


def _clamp(r: IndexRanges, args, b: Form, upper: bool, depth: int) -> tuple:
    """``clamp(x, lo, hi) = min(max(lo, x), hi)`` (native/scalar.h), also when ``lo > hi``."""
    x, lo, hi = (r.bound(v, b, upper, depth) for v in args)
    if upper:
        return any_of(hi, all_of(lo, x))
    return all_of(any_of(lo, x), hi)


def _where(r: IndexRanges, args, b: Form, upper: bool, depth: int) -> tuple:
    return all_of(*(r.bound(x, b, upper, depth) for x in args[1:]))


_RULES = {"add": _add, "sub": _sub, "min": _min, "max": _max, "clamp": _clamp, "where": _where}
