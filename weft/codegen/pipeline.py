"""The compiler's stages for one kernel or func, read top to bottom in ``compile_function``.

Contract: ``compile_function(src, param_types, is_kernel, symbol, ...)`` returns a frozen
``Compiled``:

- ``ir``: the typed IR the frontend lowered (``ir.verify`` checked it); no later stage changes it;
- ``facts``: what the access analysis found (``access.AccessFacts``; none for a func);
- ``stage_plan``: for a kernel whose backward pass the CPU can run as staged, vectorised chunks,
  the plan of those chunks (``staging.plan``; only the CPU renderer uses it), else None;
  ``forward_stage_plan`` the same for its forward pass (``staging.plan_forward``);
- ``reverse``: the adjoint program, the reverse statements of the body (``adjoint.reverse_block``),
  or None with ``reverse_error`` naming the construct that has no adjoint (raised by ``adjoint()``
  when a backward pass is built, so forward-only kernels still build).

With ``config.verify_ir`` (on in the test suite) the IR's text is compared before and after the
stages that follow lowering, so an analysis that writes into the IR fails at once. What a target
does with a ``Compiled`` (the CPU's staging plan, then rendering) is the build's business
(``runtime/module.py``, ``codegen/emit.py``); nothing here knows about targets.
"""

from __future__ import annotations

import dataclasses

from .. import config
from . import access, frontend, ir, local_arrays, staging, tangent
from . import adjoint as ad
from .source import Source


@dataclasses.dataclass(frozen=True)
class Compiled:
    """One kernel or func after the compiler's stages."""

    ir: ir.Function
    facts: access.AccessFacts
    reverse: tuple | None  # adjoint records (adjoint.AdjCall, AdjIf...), in the order they run
    reverse_error: str | None = None
    stage_plan: staging.StagePlan | None = None
    forward_stage_plan: staging.StagePlan | None = None

    def adjoint(self) -> tuple:
        """The adjoint program.

        Raises:
            NotImplementedError: a construct of the function has no adjoint (named in the message).
        """
        if self.reverse is None:
            raise NotImplementedError(self.reverse_error)
        return self.reverse


def compile_function(
    src: Source, param_types: dict, is_kernel: bool, symbol: str, ret_annotation=None, ref_params=()
) -> Compiled:
    """Run the compiler's stages on one function, in order. ``ref_params``: the names of a
    func's ``wp.ref[T]`` parameters (returned after its result, see ``frontend.Lowerer``).

    Raises:
        WarpCodegenError: the source is not a valid kernel or func (from the frontend, with the
            file, line and what is wrong).
    """
    fn = lower(src, param_types, is_kernel, symbol, ret_annotation, ref_params)
    return _analyse(fn, src, is_kernel, symbol)


def compile_tangent(src: Source, param_types: dict, symbol: str) -> Compiled:
    """The stages for the tangent kernel (forward mode) of the kernel ``src``: lowering, then
    ``tangent.tangent_function``, then the same analyses as any kernel (its adjoint program is
    the reverse of the tangent program: second derivatives).

    Raises:
        WarpCodegenError: as ``compile_function``.
        NotImplementedError: the kernel uses a construct forward mode has no rule for.
    """
    primal = lower(src, param_types, True, symbol)
    fn = tangent.tangent_function(primal)
    ir.verify(fn)
    return _analyse(fn, src, True, symbol)


def _analyse(fn: ir.Function, src: Source, is_kernel: bool, symbol: str) -> Compiled:
    """The stages after lowering: access analysis, the adjoint program, the CPU staging plan."""
    if is_kernel and fn.adjoint_error is None:
        fn.adjoint_error = ad.unreplayed_atomic_error(fn, src.file, src.name)
    unchanged = _IRGuard(fn, symbol)
    facts = access.analyze(fn)
    reverse, reverse_error = differentiate(fn)
    plan = plan_cpu_staging(fn, facts, reverse) if is_kernel else None
    forward_plan = staging.plan_forward(fn, facts, ir.assigned_var_ids(fn)) if is_kernel else None
    unchanged.check()
    return Compiled(fn, facts, reverse, reverse_error, plan, forward_plan)


def lower(
    src: Source, param_types: dict, is_kernel: bool, symbol: str, ret_annotation=None, ref_params=()
) -> ir.Function:
    """Python source -> typed IR (frontend), checked by ``ir.verify``."""
    fn, _ = frontend.lower_function(src, param_types, is_kernel, symbol, ret_annotation, ref_params=ref_params)
    return fn


def differentiate(fn: ir.Function) -> tuple:
    """``(adjoint program, None)``, or ``(None, message)`` naming the construct without an adjoint."""
    try:
        local_arrays.check(fn)
        return tuple(ad.reverse_block(fn.body)), None
    except NotImplementedError as e:
        return None, str(e)


def plan_cpu_staging(fn: ir.Function, facts: access.AccessFacts, reverse) -> staging.StagePlan | None:
    """The CPU's staged backward loop for a kernel (a pure function of the stages before it)."""
    if reverse is None:
        return None
    return staging.plan(fn, facts, reverse, ir.assigned_var_ids(fn))


class _IRGuard:
    """With ``config.verify_ir``: remembers the IR's text and verifies, at ``check()``, that the
    stages run since left it as it was (and that it still passes ``ir.verify``)."""

    def __init__(self, fn: ir.Function, symbol: str):
        self.fn, self.symbol = fn, symbol
        self.text = str(fn) if config.verify_ir else None

    def check(self):
        if self.text is None:
            return
        ir.verify(self.fn)
        if str(self.fn) != self.text:
            raise AssertionError(f"a compiler stage changed the IR of '{self.symbol}' after lowering")
