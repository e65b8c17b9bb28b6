"""Clamped and shifted indices (``a[wp.max(i - 1, 0)]``, ``a[wp.min(i + 1, n - 1)]``) run
unchecked when index_ranges.py proves them inside the array, under a test made once per launch
(access.py ``range_checks``); near misses stay checked and raise IndexError as before, and every
result matches NumPy."""

import numpy as np
import pytest

import weft as wp
from weft.codegen import access, index_ranges, intrinsics
from weft.codegen.emit_cpu import CPURenderer
from weft.codegen import ir as wir


@wp.kernel
def k_stencil(a: wp.array3d(dtype=float), b: wp.array3d(dtype=float), k: float):
    i, j, l = wp.tid()
    ni = a.shape[0]
    nj = a.shape[1]
    c = a[i, j, l]
    s = -6.0 * c
    s += a[wp.max(i - 1, 0), j, l] + a[wp.min(i + 1, ni - 1), j, l]
    s += a[i, wp.max(j - 1, 0), l] + a[i, wp.clamp(j + 1, 0, nj - 1), l]
    s += a[i, j, wp.clamp(l - 1, 0, a.shape[2] - 1)] + a[i, j, wp.min(l + 1, a.shape[2] - 1)]
    b[i, j, l] = c + k * s


@wp.kernel
def k_param_clamp(x: wp.array(dtype=float), n: int, out: wp.array(dtype=float)):
    i = wp.tid()
    even = wp.where(i % 2 == 0, i, wp.max(i - 1, 0))  # both choices are in range
    out[i] = x[even] + x[wp.min(i + 1, n - 1)]


@wp.kernel
def k_min_shape(x: wp.array(dtype=float), out: wp.array(dtype=float)):
    i = wp.tid()
    out[i] = x[wp.min(i + 1, x.shape[0])]  # one past the end for the last thread


@wp.kernel
def k_max_minus_one(x: wp.array(dtype=float), out: wp.array(dtype=float)):
    i = wp.tid()
    out[i] = x[wp.max(i - 1, -1)]  # -1 counts from the end (Python's rule), through the check


@wp.kernel
def k_other_shape(x: wp.array(dtype=float), y: wp.array(dtype=float), out: wp.array(dtype=float)):
    i = wp.tid()
    out[i] = x[wp.min(i + 1, y.shape[0] - 1)]


@wp.kernel
def k_wrong_dim(x: wp.array2d(dtype=float), out: wp.array2d(dtype=float)):
    i, j = wp.tid()
    out[i, j] = x[wp.min(i + 1, x.shape[1] - 1), j]


@wp.kernel
def k_wrapping(x: wp.array(dtype=float), k: int, out: wp.array(dtype=float)):
    i = wp.tid()
    out[i] = x[wp.min(i + k, x.shape[0] - 1)]  # i + k wraps to a negative int32 for a large k


@wp.kernel
def k_guarded(x: wp.array(dtype=float), m: int, out: wp.array(dtype=float)):
    i = wp.tid()
    v = x[i]
    if i < x.shape[0] - m:  # the guard, not the launch, keeps i + m inside x
        v += x[i + m]
    out[i] = v


@wp.kernel
def k_strided_loop(x: wp.array(dtype=float), n: int, out: wp.array(dtype=float)):
    i = wp.tid()
    s = float(0.0)
    for j in range(0, n, 1073741824):
        s += x[j]
    out[i] = s


def _accesses(kernel):
    inst = kernel.default_instance()
    facts = access.analyze(inst.ir)
    calls = [s for s in wir.walk(inst.ir.body) if isinstance(s, wir.Call) and s.callee in (intrinsics.LOAD, intrinsics.STORE)]
    return inst, facts, calls


def _stencil_numpy(a, k):
    p = np.pad(a, 1, mode="edge")
    c = p[1:-1, 1:-1, 1:-1]
    s = -6.0 * c
    s += p[:-2, 1:-1, 1:-1] + p[2:, 1:-1, 1:-1] + p[1:-1, :-2, 1:-1] + p[1:-1, 2:, 1:-1]
    s += p[1:-1, 1:-1, :-2] + p[1:-1, 1:-1, 2:]
    return c + k * s


def test_clamped_stencil_indices_are_proven():
    inst, facts, calls = _accesses(k_stencil)
    assert len(calls) == 8 and all(id(s) in facts.tid_indexed for s in calls)
    assert {name for name, _, _ in facts.range_checks} == {"a"}
    fast = CPURenderer().render_module([inst], inst.funcs).split("forward_fast_body(")[1].split("\n}")[0]
    assert fast.count("weft::load_nc(") == 7 and "weft::store_nc(" in fast
    assert "weft::load(" not in fast and "weft::store(" not in fast


def test_clamp_through_params_and_where_is_proven():
    _, facts, calls = _accesses(k_param_clamp)
    assert all(id(s) in facts.tid_indexed for s in calls)
    # x[min(i + 1, n - 1)]: either the launch is shorter than x, or n fits x (and n >= 1)
    (cond,) = [c for name, _, c in facts.range_checks if len(c) > 1]
    assert len(cond) == 2


def test_near_misses_are_not_proven_statically():
    for kernel in (k_min_shape, k_other_shape, k_wrong_dim, k_wrapping):
        _, facts, calls = _accesses(kernel)
        # at best a launch test, never a proof that holds whatever the launch
        assert all(c != index_ranges.TRUE for _, _, c in facts.range_checks)
    _, facts, calls = _accesses(k_max_minus_one)
    load = next(s for s in calls if s.callee == intrinsics.LOAD)
    assert id(load) not in facts.tid_indexed
    _, facts, calls = _accesses(k_guarded)
    loads = [s for s in calls if s.callee == intrinsics.LOAD]
    assert id(loads[0]) in facts.tid_indexed and id(loads[1]) not in facts.tid_indexed


def test_min_shape_launch_test_fails_for_the_whole_array():
    _, facts, _ = _accesses(k_min_shape)
    (alts,) = [c for _, _, c in facts.range_checks]
    # the only alternative asks for a launch shorter than x: x.shape[0] - size - 1 >= 0
    assert len(alts) == 1 and index_ranges.Form(((("shape", "x", 0), 1), (("size",), -1)), -1) in alts[0]


def test_stencil_matches_numpy():
    rng = np.random.default_rng(3)
    a_np = rng.standard_normal((9, 7, 12)).astype(np.float32)
    a = wp.array(a_np, dtype=float)
    b = wp.zeros((9, 7, 12), dtype=float)
    wp.launch(k_stencil, dim=(9, 7, 12), inputs=[a, b, 0.1])
    np.testing.assert_allclose(b.numpy(), _stencil_numpy(a_np, 0.1), rtol=1e-5, atol=1e-5)
    # a launch over part of the array: the clamps are at the array's edges, not the launch's
    b.zero_()
    wp.launch(k_stencil, dim=(4, 7, 5), inputs=[a, b, 0.1])
    full = _stencil_numpy(a_np, 0.1)
    got = b.numpy()
    np.testing.assert_allclose(got[:4, :, :5], full[:4, :, :5], rtol=1e-5, atol=1e-5)
    assert not got[4:].any() and not got[:, :, 5:].any()


def test_stencil_on_strided_views_matches_numpy():
    rng = np.random.default_rng(4)
    big_np = rng.standard_normal((8, 6, 10)).astype(np.float32)
    big = wp.array(big_np, dtype=float)
    view_np = big_np[:, :, ::2]
    out = wp.zeros((8, 6, 5), dtype=float)
    wp.launch(k_stencil, dim=(8, 6, 5), inputs=[big[:, :, ::2], out, 0.25])  # fast_stride fails: checked body
    np.testing.assert_allclose(out.numpy(), _stencil_numpy(view_np, 0.25), rtol=1e-5, atol=1e-5)


def test_stencil_gradient_matches_numpy():
    rng = np.random.default_rng(5)
    shape = (5, 6, 7)
    a_np = rng.standard_normal(shape).astype(np.float32)
    w_np = rng.standard_normal(shape).astype(np.float32)
    a = wp.array(a_np, dtype=float, requires_grad=True)
    b = wp.zeros(shape, dtype=float, requires_grad=True)
    tape = wp.Tape()
    with tape:
        wp.launch(k_stencil, dim=shape, inputs=[a, b, 0.5])
    tape.backward(grads={b: wp.array(w_np, dtype=float)})
    # b = a + k * (sum of the 6 clamped neighbours - 6 a): scatter w back through each neighbour
    expected = (1.0 - 3.0) * w_np.astype(np.float64)
    idx = np.indices(shape)
    for axis in range(3):
        for step in (-1, 1):
            nb = [idx[0], idx[1], idx[2]]
            nb[axis] = np.clip(idx[axis] + step, 0, shape[axis] - 1)
            np.add.at(expected, tuple(n.ravel() for n in nb), 0.5 * w_np.ravel())
    np.testing.assert_allclose(a.grad.numpy(), expected, rtol=1e-4, atol=1e-4)


def test_param_clamp_in_and_out_of_range():
    x_np = np.arange(10, dtype=np.float32)
    x = wp.array(x_np, dtype=float)
    out = wp.zeros(10, dtype=float)
    wp.launch(k_param_clamp, dim=10, inputs=[x, 10, out])
    i = np.arange(10)
    np.testing.assert_array_equal(out.numpy(), x_np[i - i % 2] + x_np[np.minimum(i + 1, 9)])
    with pytest.raises(IndexError, match=r"index 10 is out of bounds for an array of shape \(10,\).*k_param_clamp"):
        wp.launch(k_param_clamp, dim=10, inputs=[x, 11, out])


def test_near_misses_still_raise():
    x = wp.array(np.arange(8, dtype=np.float32), dtype=float)
    out = wp.zeros(8, dtype=float)
    with pytest.raises(IndexError, match=r"index 8 is out of bounds for an array of shape \(8,\).*'k_min_shape'"):
        wp.launch(k_min_shape, dim=8, inputs=[x, out])
    y = wp.zeros(12, dtype=float)
    with pytest.raises(IndexError, match=r"index 8 is out of bounds .*'k_other_shape'.*y\.shape\[0\] - 1"):
        wp.launch(k_other_shape, dim=8, inputs=[x, y, out])
    x2 = wp.zeros((4, 8), dtype=float)
    out2 = wp.zeros((4, 8), dtype=float)
    with pytest.raises(IndexError, match=r"index \(4, 0\) is out of bounds for an array of shape \(4, 8\).*'k_wrong_dim'"):
        wp.launch(k_wrong_dim, dim=(4, 8), inputs=[x2, out2])
    with pytest.raises(IndexError, match=r"out of bounds for an array of shape \(8,\).*'k_wrapping'"):
        wp.launch(k_wrapping, dim=4, inputs=[x, 2**31 - 1, out])


def test_near_misses_in_range_match_numpy():
    x_np = np.arange(8, dtype=np.float32) * 1.5
    x = wp.array(x_np, dtype=float)
    out = wp.zeros(8, dtype=float)
    i = np.arange(8)
    wp.launch(k_min_shape, dim=7, inputs=[x, out])  # a shorter launch: in range
    np.testing.assert_array_equal(out.numpy()[:7], x_np[np.minimum(i[:7] + 1, 8)])
    wp.launch(k_max_minus_one, dim=8, inputs=[x, out])
    np.testing.assert_array_equal(out.numpy(), x_np[np.maximum(i - 1, -1)])  # x[-1] is the last one
    wp.launch(k_other_shape, dim=8, inputs=[x, wp.zeros(8, dtype=float), out])
    np.testing.assert_array_equal(out.numpy(), x_np[np.minimum(i + 1, 7)])
    wp.launch(k_wrapping, dim=8, inputs=[x, 3, out])
    np.testing.assert_array_equal(out.numpy(), x_np[np.minimum(i + 3, 7)])
    wp.launch(k_guarded, dim=8, inputs=[x, 2, out])
    np.testing.assert_array_equal(out.numpy(), x_np + np.append(x_np[2:], [0.0, 0.0]))


def test_strided_loop_index_must_not_wrap():
    _, facts, calls = _accesses(k_strided_loop)
    (cond,) = [c for _, _, c in facts.range_checks]
    # j += 2^30 after the last iteration must fit in an int32: n <= 2^31 - 2^30
    assert index_ranges.Form(((("param", "n"), -1),), 2**31 - 2**30) in cond[0]
    x_np = np.arange(4, dtype=np.float32) + 1.0
    out = wp.zeros(2, dtype=float)
    wp.launch(k_strided_loop, dim=2, inputs=[wp.array(x_np, dtype=float), 4, out])
    np.testing.assert_array_equal(out.numpy(), [1.0, 1.0])


def test_launch_dims_beyond_int32_are_refused():
    # a dimension that wrapped in the int32 launch bounds would make the once-per-launch tests
    # compare against the wrong extent
    x = wp.zeros((4, 8), dtype=float)
    with pytest.raises(ValueError, match="int32"):
        wp.launch(k_wrong_dim, dim=(2**31, 1), inputs=[x, x])
    with pytest.raises(ValueError, match="int32"):
        wp.launch(k_min_shape, dim=2**32 + 3, inputs=[wp.zeros(8, dtype=float), wp.zeros(8, dtype=float)])


@wp.kernel
def k_reversed(x: wp.array(dtype=float), out: wp.array(dtype=float)):
    i = wp.tid()
    n = x.shape[0]
    s = float(0.0)
    for j in range(i, n):
        s += x[n - 1 - j]  # x - y with x invariant: n - 1 - j is in [0, n - 1 - i]
    out[i] = s


def test_reversed_loop_index_is_proven_and_matches_numpy():
    _, facts, calls = _accesses(k_reversed)
    assert all(id(s) in facts.tid_indexed for s in calls)
    x_np = np.arange(1, 7, dtype=np.float32)
    out = wp.zeros(6, dtype=float)
    wp.launch(k_reversed, dim=6, inputs=[wp.array(x_np, dtype=float), out])
    np.testing.assert_array_equal(out.numpy(), [x_np[: 6 - i].sum() for i in range(6)])
