"""Order dependence: whether a pass of a kernel can give different bits depending on the order in
which its threads run (the question behind ``wp.config.deterministic``, runtime/determinism.py).

A pass depends on thread order when its threads combine values in shared memory in an order the
scheduler picks:

- float atomics (``wp.atomic_add`` / ``atomic_sub`` / ``atomic_min`` / ``atomic_max``, ``+=`` on
  array elements): float addition is not associative, and min / max pick between ``-0.0`` and
  ``+0.0`` by arrival;
- any atomic whose result the thread uses (a counter handing out slots: which thread gets which
  slot depends on arrival), ``atomic_exch`` and ``atomic_cas``, on every type;
- in the backward pass, the gradient adds of array reads that other threads may share (the
  transpose of a gather is a scatter-add), and gradient adds in funcs and custom gradients.

Integer add / sub / min / max and bitwise atomics whose result is unused are exact and
commutative: they do not depend on order. Neither do plain stores (a race between two stores to
one element is a bug in the kernel, not a rounding question).

Some order-dependent adds are *accumulations* (``codegen/access.py``: adds whose result nothing
in the kernel observes, into arrays the pass touches in no other way); the CPU runtime can make
those reproducible without giving up threads (``native/accumulate.h``: private copies summed in
a fixed order, or shares taking turns).

Contract: ``order_dependence(inst)`` returns ``(forward, backward)``, each None (the pass gives
the same bits in any order) or a short reason; ``accumulations_only(inst)`` says per pass whether
every order-dependent operation is an accumulation. Both read the IR and the access facts only.
"""

from __future__ import annotations

from .. import types as wt
from . import intrinsics as intr
from . import ir
from .access import _operand_uses
from .adjoint import has_float_elements, is_shared_atomic


def _atomic_reason(s, uses) -> str | None:
    """Why one atomic call depends on thread order, or None."""
    name = s.callee
    used = s.result is not None and s.result.id in uses
    if name == intr.ATOMIC_CAS or name == intr.ATOMICS["atomic_exch"]:
        return f"{name} (the winner depends on arrival)"
    if used:
        return f"{name} whose previous value is used (which thread sees which value depends on arrival)"
    if name in intr.DIFFERENTIABLE_ATOMICS and has_float_elements(s.args[0].type):  # exact for integers
        return f"float {name} (the order of float operations depends on arrival)"
    return None


def _forward_reason(fn: ir.Function, facts, seen: set, skip_accumulations: bool) -> str | None:
    """Why the forward code of ``fn`` (and the funcs it calls) depends on thread order; with
    ``skip_accumulations``, not counting the kernel's accumulations."""
    if id(fn) in seen:
        return None
    seen.add(id(fn))
    uses = _operand_uses(fn)
    for s in ir.walk(fn.body):
        if not isinstance(s, ir.Call):
            continue
        if is_shared_atomic(s):  # (an atomic on a thread's own storage is its business)
            if skip_accumulations and id(s) in facts.accum_calls:
                continue
            why = _atomic_reason(s, uses)
            if why:
                return why
        elif ir.is_func(s.callee) and s.callee.ir is not None:
            why = _forward_reason(s.callee.ir, _NO_FACTS, seen, skip_accumulations)
            if why:
                return f"{why}, in func '{s.callee.function.key}'"
    return None


def _backward_reason(fn: ir.Function, facts, seen: set, skip_accumulations: bool = False) -> str | None:
    """Why the backward code of ``fn`` depends on thread order: its shared gradient adds (with
    ``skip_accumulations``, not counting those the kernel accumulates)."""
    if id(fn) in seen:
        return None
    seen.add(id(fn))
    for s in ir.walk(fn.body):
        if not isinstance(s, ir.Call):
            continue
        if s.callee == intr.LOAD and has_float_elements(s.args[0].type):
            if isinstance(s.args[0].type, wt.LocalArrayType) or id(s) in facts.exclusive_loads:
                continue  # no gradient, or an element only this thread reads: a plain add
            if skip_accumulations and id(s) in facts.accum_calls:
                continue
            return "gradient adds of array reads that threads may share"
        if s.callee == intr.ADJ_ACCUM:
            return "gradient adds of a custom gradient (wp.adjoint[...] +=)"
        if ir.is_func(s.callee):
            callee = s.callee
            for sub in (callee.grad_ir, callee.ir if callee.grad_ir is None else None):
                if sub is not None:
                    why = _backward_reason(sub, _NO_FACTS, seen)
                    if why:
                        return f"{why}, in func '{callee.function.key}'"
    return None


class _NoFacts:
    exclusive_loads = frozenset()  # a func's reads are never proved exclusive
    accum_calls = frozenset()  # nor accumulations


_NO_FACTS = _NoFacts()


def order_dependence(inst) -> tuple:
    """``(forward, backward)`` reasons why the kernel instance's passes depend on thread order
    (None: they do not)."""
    forward = _forward_reason(inst.ir, inst.facts, set(), False)
    backward = _backward_reason(inst.ir, inst.facts, set()) if inst.backward_enabled else None
    return forward, backward


def accumulations_only(inst) -> tuple:
    """``(forward, backward)``: whether everything order-dependent in each pass is one of the
    kernel's accumulations (True also for a pass with nothing order-dependent)."""
    forward = _forward_reason(inst.ir, inst.facts, set(), True) is None
    backward = not inst.backward_enabled or _backward_reason(inst.ir, inst.facts, set(), True) is None
    return forward, backward
