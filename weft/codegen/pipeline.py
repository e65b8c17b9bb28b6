"""The compiler's stages for one kernel or func, read top to bottom in ``compile_function``.

Contract: ``compile_function(src, param_types, is_kernel, symbol, ...)`` returns a frozen
``Compiled``:

- ``ir``: the typed IR the frontend lowered (``ir.verify`` checked it); no later stage changes it;
- ``facts``: what the access analysis found (``access.AccessFacts``; none for a func);
- ``stage_plan``: for a kernel whose backward pass the CPU can run as staged, vectorised chunks,
  the plan of those chunks (``staging.plan``; only the CPU renderer uses it), else None;
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
from . import access, frontend, ir, staging
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

    def adjoint(self) -> tuple:
        """The adjoint program.

        Raises:
            NotImplementedError: a construct of the function has no adjoint (named in the message).
        """
        if self.reverse is None:
            raise NotImplementedError(self.reverse_error)
        return self.reverse


def compile_function(src: Source, param_types: dict, is_kernel: bool, symbol: str, ret_annotation=None) -> Compiled:
    """Lower, verify, analyze and differentiate one function.

    Raises:
        WarpCodegenError: the source is not a valid kernel or func (from the frontend, with the
            file, line and what is wrong).
    """
    fn, _ = frontend.lower_function(src, param_types, is_kernel, symbol, ret_annotation)  # lower + verify
    lowered = str(fn) if config.verify_ir else None
    facts = access.analyze(fn)  # which accesses are exclusive, bounds-tested, locally summed
    try:
        reverse, reverse_error = tuple(ad.reverse_block(fn.body)), None  # the adjoint program
    except NotImplementedError as e:
        reverse, reverse_error = None, str(e)
    plan = None  # the CPU's staged backward loop (target-specific, but a pure function of the above)
    if is_kernel and reverse is not None:
        plan = staging.plan(fn, facts, reverse, ir.assigned_var_ids(fn))
    if lowered is not None:
        ir.verify(fn)
        if str(fn) != lowered:
            raise AssertionError(f"a compiler stage changed the IR of '{symbol}' after lowering")
    return Compiled(fn, facts, reverse, reverse_error, plan)
