"""IR stage: the lowered form of a small kernel (golden text), the verifier, and deterministic rendering."""

import pytest

import weft as wp
from weft.codegen import intrinsics as intr
from weft.codegen import ir
from weft.codegen.emit_cpu import CPURenderer


@wp.kernel
def masked_sum(x: wp.array(dtype=float), y: wp.array(dtype=float), n: int):
    i = wp.tid()
    s = float(0.0)
    for j in range(n):
        if j == i:
            continue
        s += x[j]
    y[i] = wp.where(s > 1.0, s, 2.0 * s)


GOLDEN = """\
  %4: int32 = tid() [(0, 1)]
  %9 <- %6
  for %10 in range(%7, %2, %8):
    %11 = read %9
    %13: bool = cmp_eq(%10, %4)
    if %13:
    %15: bool = phi(%13, %14, %12)
    %16: bool = logical_not(%15)
    if %16:
      %17: float32 = load(%0, %10)
      %18: float32 = add(%11, %17)
    %19: float32 = phi(%16, %18, %11)
    %9 <- %19
  %20 = read %9
  %22: bool = cmp_gt(%20, %21)
  %24: float32 = mul(%23, %20)
  %25: float32 = where(%22, %20, %24)
  store(%1, %4, %25)"""


def test_lowered_ir_matches_golden_text():
    text = str(masked_sum.default_instance().ir)
    body = "\n".join(text.splitlines()[2:])  # skip the header and the constant table
    assert body == GOLDEN
    assert "const" in text.splitlines()[1]


def test_continue_becomes_a_flag_and_the_sum_is_loop_carried():
    fn = masked_sum.default_instance().ir
    loops = [s for s in ir.walk(fn.body) if isinstance(s, ir.Loop)]
    assert len(loops) == 1
    assert [m.label for m in loops[0].carried] == ["s"]
    assert loops[0].exit_flags == []  # continue does not end the loop


def test_verifier_rejects_double_definition():
    fn = ir.Function("bad", True)
    a = fn.new_var(wp.float32)
    fn.body.append(ir.Call(a, "zero", []))
    fn.body.append(ir.Call(a, "zero", []))
    with pytest.raises(AssertionError, match="defined twice"):
        ir.verify(fn)


def test_rendering_is_deterministic():
    inst = masked_sum.default_instance()
    a = CPURenderer().render_module([inst], inst.funcs)
    b = CPURenderer().render_module([inst], inst.funcs)
    assert a == b
    assert f"{inst.symbol}_cpu_forward" in a and f"{inst.symbol}_cpu_backward" in a


def test_kernel_result_matches_numpy():
    import numpy as np

    xs = np.linspace(-1, 2, 7).astype(np.float32)
    x = wp.array(xs, dtype=float)
    y = wp.zeros(7, dtype=float)
    wp.launch(masked_sum, dim=7, inputs=[x, y, 7])
    s = xs.sum() - xs
    np.testing.assert_allclose(y.numpy(), np.where(s > 1.0, s, 2.0 * s), rtol=1e-5)


def test_callees_are_told_apart_by_type():
    """A call names an intrinsic (a string), a builtin Overload or a user func (FuncCallee), and
    code tells them apart by type: an object that merely has a builtin's attributes is none of them."""
    import types as pytypes

    from weft.builtins.registry import Overload
    from weft.kernel import FuncInstance

    builtin = Overload((), None, "sin")
    assert ir.is_builtin(builtin) and not ir.is_func(builtin) and not ir.is_intrinsic(builtin)
    assert ir.is_intrinsic("load") and not ir.is_builtin("load")
    assert issubclass(FuncInstance, ir.FuncCallee)
    lookalike = pytypes.SimpleNamespace(symbol="sin", differentiable=True, side_effect=False, ir=None)
    with pytest.raises(TypeError, match="FuncCallee"):
        ir.check_callee(lookalike)
    with pytest.raises(TypeError):
        intr.has_side_effect(lookalike)


def test_every_intrinsic_declares_its_op_info_once():
    """Effects, array access and the adjoint rule of each intrinsic live in one OpInfo; an
    intrinsic without one is an error that names it, never a silent default."""
    names = {intr.LOAD, intr.STORE, intr.CAST, intr.PHI, intr.TID, intr.SHAPE, intr.PRINTF, *intr.ATOMICS.values()}
    assert names <= set(intr.OPS)
    assert intr.op_info(intr.STORE).side_effect and intr.writes_array(intr.STORE) and not intr.reads_array(intr.STORE)
    assert intr.reads_array(intr.LOAD) and not intr.has_side_effect(intr.LOAD)
    add = intr.ATOMICS["atomic_add"]
    assert intr.reads_array(add) and intr.writes_array(add) and intr.has_side_effect(add)
    with pytest.raises(NotImplementedError, match="'frobnicate' has no OpInfo"):
        intr.has_side_effect("frobnicate")
