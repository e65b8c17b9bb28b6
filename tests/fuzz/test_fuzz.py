"""The gradient fuzzer in CI: a fixed campaign of generated programs (``fuzz_gen``), each one's
tape gradient checked against finite differences (``fuzz_check``), within a time budget."""

from __future__ import annotations

import os

import campaign
import fuzz_gen
import pytest

CI_SEED = 20261126
CI_COUNT = 240
CI_BUDGET_S = 120.0  # no new batch of 40 starts after this; a slow machine checks fewer programs


def test_generated_programs_are_deterministic_and_valid_python():
    for index in range(50):
        p = fuzz_gen.program(CI_SEED, index)
        assert p == fuzz_gen.program(CI_SEED, index)
        compile(fuzz_gen.module_source([p]), f"<program {index}>", "exec")
    assert fuzz_gen.program(CI_SEED, 0).source != fuzz_gen.program(CI_SEED + 1, 0).source


def test_the_campaign_covers_the_constructs_it_promises():
    used = set().union(*(fuzz_gen.program(CI_SEED, i).constructs for i in range(CI_COUNT)))
    promised = {
        "alias", "augassign", "if", "static_loop", "dynamic_loop", "while_loop", "break", "continue",
        "early_return", "func_early_return", "func_call_value", "array_func", "array_func_arrays_only", "store", "atomic",
        "vec", "vec_component_write", "mat", "mat_vec_mul", "conditional_expression",
        "builtin:cross", "builtin:normalize", "builtin:length", "builtin:dot",
    }  # fmt: skip
    assert promised <= used, promised - used
    assert {f"builtin:{name}" for name in fuzz_gen.SMOOTH_UNARY} <= used


@pytest.mark.fixed_device(
    "its time budget is sized for the CPU: on a GPU every batch is an NVRTC build (20 programs took 102 s on an "
    "H200, all passing: docs/gpu.md); run campaign.py under wp.ScopedDevice('cuda:0') to fuzz a GPU"
)
def test_tape_gradients_of_generated_programs_match_finite_differences(tmp_path):
    data = campaign.campaign(CI_SEED, CI_COUNT, 40, str(tmp_path), CI_BUDGET_S, log=lambda _: None)
    assert data["programs"] >= 80
    if data["failures"]:
        pytest.fail(campaign.format_report(data))
    assert data["statuses"]["ok"] >= 0.8 * data["programs"]  # most programs get a verdict, not "kink"


def test_warp_subset_programs_leave_out_what_warp_gets_wrong():
    used = set().union(*(fuzz_gen.program(CI_SEED, i, warp_subset=True).constructs for i in range(200)))
    assert not used & fuzz_gen.WARP_SUBSET_EXCLUDES
    assert not used & {f"builtin:{b}" for b in fuzz_gen.WARP_DIFFERENT_BUILTINS}
    assert {"if", "static_loop", "func_call_value", "atomic", "struct", "quat", "mat"} <= used
    # the default campaign is unchanged by the subset's existence
    assert fuzz_gen.program(CI_SEED, 3).source != fuzz_gen.program(CI_SEED, 3, warp_subset=True).source


@pytest.mark.skipif(not os.environ.get("WEFT_BENCH_WARP_PYTHON"), reason="needs warp-lang: set WEFT_BENCH_WARP_PYTHON")
def test_warp_subset_programs_agree_with_warp_lang(tmp_path):
    import sys

    import warp_compare

    sys.path.insert(0, str(tmp_path))
    results = warp_compare.compare_batch(CI_SEED, list(range(40)), os.environ["WEFT_BENCH_WARP_PYTHON"], str(tmp_path))
    differ = [(i, detail) for i, outcome, detail in results if outcome not in ("agree", "warp-error")]
    assert not differ, differ
