"""The compiler's stages (codegen/pipeline.py): lower, verify, analyze, differentiate, each from
immutable inputs; no stage after lowering may change the IR."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

import weft as wp
from weft.codegen import access, pipeline
from weft.codegen import adjoint as ad
from weft.codegen.emit_cpu import CPURenderer
from weft.codegen.emit_cuda import CUDARenderer
from weft.codegen.source import Source


def scale_rows(x: wp.array(dtype=float), y: wp.array(dtype=float), k: float):
    i = wp.tid()
    y[i] = k * x[i]


_kernel = wp.kernel(scale_rows)
PARAMS = dict(zip(_kernel.arg_names, _kernel.default_instance().arg_types))  # the parameter types, resolved


def test_compile_function_runs_every_stage():
    compiled = pipeline.compile_function(Source(scale_rows), PARAMS, True, "scale_rows_test")
    assert compiled.ir.is_kernel and [p.name for p in compiled.ir.params] == ["x", "y", "k"]
    assert set(compiled.facts.tid_arrays) == {"x", "y"}  # indexed by the thread: bounds tested per launch
    assert compiled.facts.exclusive_loads  # x[i] belongs to thread i alone
    assert any(isinstance(r, ad.AdjCall) for r in compiled.adjoint())
    with pytest.raises(dataclasses.FrozenInstanceError):
        compiled.facts = access.NO_FACTS


def test_a_stage_that_writes_into_the_ir_is_caught(monkeypatch):
    real = access.analyze

    def meddling(fn):
        facts = real(fn)
        next(s for s in fn.body if hasattr(s, "attr")).attr = "tampered"
        return facts

    monkeypatch.setattr(access, "analyze", meddling)
    monkeypatch.setattr(wp.config, "verify_ir", True)
    with pytest.raises(AssertionError, match="changed the IR of 'scale_rows_meddled'"):
        pipeline.compile_function(Source(scale_rows), PARAMS, True, "scale_rows_meddled")


def test_a_construct_without_adjoint_fails_only_when_a_backward_pass_is_built(monkeypatch):
    def no_rule(block):
        raise NotImplementedError("no adjoint rule for intrinsic 'frobnicate'")

    monkeypatch.setattr(ad, "reverse_block", no_rule)
    compiled = pipeline.compile_function(Source(scale_rows), PARAMS, True, "scale_rows_no_adjoint")
    assert compiled.reverse is None and compiled.facts.tid_arrays  # the forward stages still ran
    with pytest.raises(NotImplementedError, match="frobnicate"):
        compiled.adjoint()


@wp.kernel
def k_scatter_springs(x: wp.array(dtype=float), ends: wp.array(dtype=int), f: wp.array(dtype=float)):
    t = wp.tid()
    d = x[ends[2 * t + 1]] - x[ends[2 * t]]
    wp.atomic_sub(f, ends[2 * t], d)
    wp.atomic_add(f, ends[2 * t + 1], d)


def test_the_cpu_staging_plan_is_made_by_the_pipeline_not_the_renderer():
    inst = k_scatter_springs.default_instance()
    assert inst.compiled.stage_plan is not None  # a straight-line scatter: its backward runs staged
    assert k_pipeline_end_to_end.default_instance().compiled.stage_plan is None  # no scatter: plain loop
    assert "_backward_staged_body" in CPURenderer().render_kernel(inst)
    assert "staged" not in CUDARenderer().render_kernel(inst)  # the CUDA renderer ignores the plan


@wp.kernel
def k_pipeline_end_to_end(x: wp.array(dtype=float), y: wp.array(dtype=float)):
    i = wp.tid()
    y[i] = wp.sin(x[i]) * x[i]


def test_kernels_hold_their_compiled_program():
    inst = k_pipeline_end_to_end.default_instance()
    assert isinstance(inst.compiled, pipeline.Compiled) and inst.ir is inst.compiled.ir
    assert inst.facts is inst.compiled.facts
    xs = np.linspace(-1, 1, 8, dtype=np.float32)
    x = wp.array(xs, dtype=float, requires_grad=True)
    y = wp.zeros(8, dtype=float, requires_grad=True)
    tape = wp.Tape()
    with tape:
        wp.launch(k_pipeline_end_to_end, dim=8, inputs=[x, y])
    tape.backward(grads={y: np.ones(8, dtype=np.float32)})
    np.testing.assert_allclose(x.grad.numpy(), np.cos(xs) * xs + np.sin(xs), rtol=1e-5)
