"""``wp.address_of(x)``: the address of storage as a uint64, for ``@wp.func_native`` snippets.

What a snippet writes through the address is what later reads see: of a local (and only of that
local, not of other names bound to its earlier value), an array element, a struct field or a
component. Temporaries and names bound to bare literals have no address (compile errors).
"""

import numpy as np
import pytest

import weft as wp
from tests import fd_check


@wp.func_native("*(int32_t*)ptr = 42;")
def _store_42(ptr: wp.uint64): ...


@wp.func_native("*(float*)ptr = *(float*)ptr + 1.0f;")
def _increment(ptr: wp.uint64): ...


@wp.func_native("return *(double*)ptr;")
def _read_f64(ptr: wp.uint64) -> wp.float64: ...


@wp.struct
class _Inner:
    value: float


@wp.struct
class _Outer:
    inner: _Inner
    count: int


@wp.kernel(enable_backward=False)
def _write_local(out: wp.array(dtype=wp.int32)):
    val = wp.int32(0)
    earlier = val
    _store_42(wp.address_of(val))
    out[0] = val
    out[1] = earlier  # bound to the value before the write: unchanged


def test_a_write_through_a_local_address_is_seen_by_later_reads():
    out = wp.zeros(2, dtype=wp.int32)
    wp.launch(_write_local, dim=1, inputs=[out])
    np.testing.assert_array_equal(out.numpy(), [42, 0])


@wp.kernel(enable_backward=False)
def _write_elements(a: wp.array(dtype=float), m: wp.array2d(dtype=wp.mat22), outers: wp.array(dtype=_Outer)):
    i = wp.tid()
    _increment(wp.address_of(a[i]))
    _increment(wp.address_of(m[i, 0][1, 0]))
    _increment(wp.address_of(m[i, 1][0][1]))
    _increment(wp.address_of(outers[i].inner.value))
    _increment(wp.address_of(outers[i].inner.value))


def test_array_elements_fields_and_matrix_entries():
    a = wp.array([1.0, 2.0, 3.0], dtype=float)
    m = wp.zeros((3, 2), dtype=wp.mat22)
    outers = wp.zeros(3, dtype=_Outer)
    wp.launch(_write_elements, dim=3, inputs=[a, m, outers])
    np.testing.assert_allclose(a.numpy(), [2.0, 3.0, 4.0])
    expect = np.zeros((3, 2, 2, 2), np.float32)
    expect[:, 0, 1, 0] = 1.0
    expect[:, 1, 0, 1] = 1.0
    np.testing.assert_array_equal(m.numpy(), expect)
    np.testing.assert_array_equal(outers.numpy()["inner"]["value"], [2.0, 2.0, 2.0])


@wp.kernel(enable_backward=False)
def _write_components(out: wp.array(dtype=float), k: int):
    v = wp.vec3(1.0, 2.0, 3.0)
    _increment(wp.address_of(v.y))
    _increment(wp.address_of(v[k]))
    box = _Outer()
    box.inner.value = 4.0
    _increment(wp.address_of(box.inner.value))
    q = wp.quat(0.0, 0.0, 0.0, 1.0)
    _increment(wp.address_of(q.w))
    t = wp.transform_identity()
    _increment(wp.address_of(t[6]))
    out[0] = v[0]
    out[1] = v[1]
    out[2] = v[2]
    out[3] = box.inner.value
    out[4] = q.w
    out[5] = t[6]


def test_struct_fields_and_components_of_locals():
    out = wp.zeros(6, dtype=float)
    wp.launch(_write_components, dim=1, inputs=[out, -1])  # v[-1] is v.z, as in Python
    np.testing.assert_allclose(out.numpy(), [1.0, 3.0, 4.0, 5.0, 2.0, 2.0])


def test_a_variable_component_index_is_checked_at_run_time():
    out = wp.zeros(6, dtype=float)
    with pytest.raises(IndexError, match="component index 3 is out of range"):
        wp.launch(_write_components, dim=1, inputs=[out, 3])


@wp.func
def _twice_through_address(x: wp.float64) -> wp.float64:
    y = x
    p = wp.address_of(y)  # the address is taken, nothing written: y keeps flowing
    return y + y + wp.float64(p - p)


@wp.kernel
def _differentiable(x: wp.array(dtype=wp.float64), out: wp.array(dtype=wp.float64)):
    i = wp.tid()
    v = x[i] * x[i]
    got = _read_f64(wp.address_of(v))  # a snippet reads the value: a constant for the gradient
    out[i] = v * wp.float64(3.0) + got * wp.float64(0.0) + _twice_through_address(x[i])


def test_a_backward_pass_runs_through_kernels_that_take_addresses():
    rng = np.random.default_rng(3)
    x = np.array([0.5, -1.25, 2.0])
    y, grad = fd_check.tape_vs_fd(_differentiable, x, 3, rng, w=np.ones(3))
    np.testing.assert_allclose(y, 3.0 * x**2 + 2.0 * x, rtol=1e-12)
    np.testing.assert_allclose(grad, 6.0 * x + 2.0, rtol=1e-12)


def _launch(kernel):
    wp.launch(kernel, dim=1, inputs=[wp.zeros(1, dtype=wp.uint64)])


def test_temporaries_have_no_address():
    @wp.kernel(module="unique", enable_backward=False)
    def of_sum(out: wp.array(dtype=wp.uint64)):
        x = wp.int32(1)
        y = wp.int32(2)
        out[0] = wp.address_of(x + y)

    @wp.kernel(module="unique", enable_backward=False)
    def of_constructed_component(out: wp.array(dtype=wp.uint64)):
        out[0] = wp.address_of(wp.vec3f(1.0, 2.0, 3.0).x)

    @wp.kernel(module="unique", enable_backward=False)
    def of_returned_field(out: wp.array(dtype=wp.uint64)):
        out[0] = wp.address_of(_Outer().count)

    for k in (of_sum, of_constructed_component, of_returned_field):
        with pytest.raises(wp.codegen.WarpCodegenError, match="temporary value with no storage"):
            _launch(k)


def test_names_bound_to_bare_literals_have_no_address():
    @wp.kernel(module="unique", enable_backward=False)
    def of_int_literal(out: wp.array(dtype=wp.uint64)):
        x = 0
        out[0] = wp.address_of(x)

    @wp.kernel(module="unique", enable_backward=False)
    def of_float_literal(out: wp.array(dtype=wp.uint64)):
        x = 1.5
        out[0] = wp.address_of(x)

    with pytest.raises(wp.codegen.WarpCodegenError, match=r"x = wp\.int32\(0\)"):
        _launch(of_int_literal)
    with pytest.raises(wp.codegen.WarpCodegenError, match=r"x = wp\.float32\(1\.5\)"):
        _launch(of_float_literal)


def test_whole_arrays_constant_components_out_of_range_and_extra_arguments_are_refused():
    @wp.kernel(module="unique", enable_backward=False)
    def of_array(out: wp.array(dtype=wp.uint64)):
        out[0] = wp.address_of(out)

    @wp.kernel(module="unique", enable_backward=False)
    def of_component_3(out: wp.array(dtype=wp.uint64)):
        v = wp.vec3()
        out[0] = wp.address_of(v[3])

    @wp.kernel(module="unique", enable_backward=False)
    def of_two(out: wp.array(dtype=wp.uint64)):
        v = wp.vec3()
        out[0] = wp.address_of(v, v)

    with pytest.raises(wp.codegen.WarpCodegenError, match=r"is an array: take the address of an element"):
        _launch(of_array)
    with pytest.raises(IndexError, match="component index 3 is out of range"):
        _launch(of_component_3)
    with pytest.raises(wp.codegen.WarpCodegenError, match="takes one argument"):
        _launch(of_two)


def test_address_of_outside_kernels_explains_itself():
    with pytest.raises(RuntimeError, match="inside a @wp.kernel"):
        wp.address_of(1)
