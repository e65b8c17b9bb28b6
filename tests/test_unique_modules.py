"""Kernels in modules of their own (``module="unique"``), their ``module_options``, the overloads
a generic kernel collects from its launches, and ``wp.force_load`` building modules ahead of
their launches."""

from typing import Any

import numpy as np
import pytest

import weft as wp
from weft.codegen.errors import WarpCodegenError


def test_the_same_definition_on_another_line_is_the_same_kernel():
    @wp.kernel(module="unique")
    def doubled(x: wp.array(dtype=float)):
        i = wp.tid()
        x[i] = x[i] * 2.0

    first = doubled

    @wp.kernel(module="unique")
    def doubled(x: wp.array(dtype=float)):  # noqa: F811 (redefined on purpose)
        i = wp.tid()
        x[i] = x[i] * 2.0

    assert doubled is first and doubled.module is first.module
    x = wp.array([1.0, 2.0], dtype=float)
    wp.launch(doubled, 2, [x])
    np.testing.assert_array_equal(x.numpy(), [2.0, 4.0])


def _writer(value):
    @wp.kernel(module="unique")
    def write(out: wp.array(dtype=float)):
        out[wp.tid()] = value

    return write


def test_other_closure_values_get_modules_of_their_own():
    one, two, one_again = _writer(1.0), _writer(2.0), _writer(1.0)
    assert one is one_again and one.module is one_again.module
    assert two is not one and two.module is not one.module and two.module.name != one.module.name
    wp.set_module_options({"enable_backward": False}, one.module.name)  # touches only that kernel's module
    assert not one.enable_backward and two.enable_backward
    out = wp.zeros(2, dtype=float)
    wp.launch(one, 1, [out])
    wp.launch(two, 2, [out])
    np.testing.assert_array_equal(out.numpy(), [2.0, 2.0])


@wp.func
def _add_ten(x: int):
    return x + 10


@wp.func
def _add_twenty(x: int):
    return x + 20


def _applying(helper, table):
    @wp.kernel(module="unique")
    def apply(inp: wp.array(dtype=int), out: wp.array(dtype=int)):
        i = wp.tid()
        out[i] = helper(inp[i]) + wp.static(table[1])

    return apply


def test_closure_bound_funcs_and_lists_tell_modules_apart():
    ten, twenty = _applying(_add_ten, [0, 1]), _applying(_add_twenty, [0, 1])
    ten_100 = _applying(_add_ten, [0, 100])
    assert len({ten.module.name, twenty.module.name, ten_100.module.name}) == 3
    assert _applying(_add_ten, [0, 1]) is ten
    inp, out = wp.array([1, 2, 3], dtype=int), wp.zeros(3, dtype=int)
    for kernel, expected in ((ten, [12, 13, 14]), (twenty, [22, 23, 24]), (ten_100, [111, 112, 113])):
        wp.launch(kernel, 3, [inp, out])
        np.testing.assert_array_equal(out.numpy(), expected)


def _plain(a: wp.array(dtype=float)):
    a[wp.tid()] = 1.0


def test_module_options_follow_warps_rules():
    k = wp.kernel(module="unique", module_options={"enable_backward": False, "mode": "release"})(_plain)
    assert k.module.options["mode"] == "release" and not k.enable_backward
    assert wp.kernel(module="unique")(_plain).module is not k.module  # other options, other module
    with pytest.raises(TypeError, match="must be a dict, got str"):
        wp.kernel(module="unique", module_options="fast_math")(_plain)
    for module in (None, "some_shared_module"):
        for options in ({"mode": "release"}, {}):
            with pytest.raises(ValueError, match='module_options requires module="unique"'):
                wp.kernel(module=module, module_options=options)(_plain)
    with pytest.raises(ValueError, match=r"unknown module_options: 'fast_mth'.*Valid options are: .*'fast_math'"):
        wp.kernel(module="unique", module_options={"fast_mth": True})(_plain)
    a = wp.zeros(3, dtype=float)
    wp.launch(k, 3, [a])
    np.testing.assert_array_equal(a.numpy(), 1.0)


def test_a_generic_kernel_lists_the_overloads_its_launches_made():
    @wp.kernel(module="unique")
    def twice(x: wp.array(dtype=Any), y: wp.array(dtype=Any)):
        i = wp.tid()
        y[i] = x[i] + x[i]

    assert twice.is_generic and len(twice.overloads) == 0
    hashes = []
    for dtype in (wp.float32, wp.float64, wp.int32, wp.float32):
        x = wp.array([1, 2, 3], dtype=dtype)
        y = wp.zeros(3, dtype=dtype)
        wp.launch(twice, 3, [x, y])
        np.testing.assert_array_equal(y.numpy(), [2, 4, 6])
        hashes.append(twice.module.get_module_hash())
    assert len(twice.overloads) == 3
    assert all(not o.is_generic and o.generic_parent is twice for o in twice.overloads.values())
    assert len(set(hashes[:3])) == 3 and hashes[3] == hashes[2]  # a new overload is new code; a reused one is not
    ovl = wp.overload(twice, [wp.array(dtype=wp.float64), wp.array(dtype=wp.float64)])
    assert len(twice.overloads) == 3 and any(o is ovl for o in twice.overloads.values())  # the launch's
    y = wp.zeros(2, dtype=wp.float64)
    wp.launch(ovl, 2, [wp.array([0.5, 1.5], dtype=wp.float64), y])  # an overload launches like a kernel
    np.testing.assert_array_equal(y.numpy(), [1.0, 3.0])


def _loaded(kernel) -> bool:
    return all(inst.binding.forward_ptr is not None for inst in kernel._instances.values()) and bool(kernel._instances)


def test_force_load_builds_modules_before_their_launches():
    ks = [_writer(10.0 + k) for k in range(2)]
    assert not any(_loaded(k) for k in ks)
    wp.force_load(device="cpu", modules=[k.module for k in ks], max_workers=2)
    assert all(_loaded(k) for k in ks)
    wp.force_load(device=["cpu"], modules=[ks[0].module.name], max_workers=None)  # names; already loaded
    out = wp.zeros(1, dtype=float)
    wp.launch(ks[1], 1, [out])
    assert out.numpy()[0] == 11.0
    with pytest.raises(ValueError, match="max_workers"):
        wp.force_load(device="cpu", modules=[ks[0].module], max_workers=-1)


def test_force_load_leaves_out_a_kernel_that_does_not_compile():
    @wp.kernel(module="weft_test_force_load_mixed")
    def broken(out: wp.array(dtype=float)):
        out[0] = wp.no_such_builtin(1.0)

    @wp.kernel(module="weft_test_force_load_mixed")
    def fine(out: wp.array(dtype=float)):
        out[0] = 7.0

    wp.force_load(device="cpu", modules=[fine.module])  # builds what compiles
    assert _loaded(fine) and not broken._instances
    out = wp.zeros(1, dtype=float)
    wp.launch(fine, 1, [out])
    assert out.numpy()[0] == 7.0
    with pytest.raises(WarpCodegenError, match="no_such_builtin"):  # the broken one, at its launch
        wp.launch(broken, 1, [out])
