"""Kernel-language features Warp programs lean on: generic composite annotations
(``wp.types.vector(length=Any, dtype=...)`` and kin) on kernel and func parameters, and the
``expect_eq`` / ``expect_neq`` / ``expect_near`` checks that print instead of stopping.

Formats and behaviours are warp-lang 1.19's unless a comment says otherwise.
"""

import enum
from typing import Any

import numpy as np
import pytest

import weft as wp

AnyVec = wp.types.vector(length=Any, dtype=wp.float32)
AnyMat = wp.types.matrix(shape=(Any, Any), dtype=wp.float32)


def test_generic_annotations_are_described_and_compared_by_their_parts():
    assert repr(AnyVec) == "vector(length=Any, dtype=float32)"
    assert repr(wp.types.matrix((Any, 3), Any)) == "matrix(shape=(Any, 3), dtype=Any)"
    assert repr(wp.types.quaternion(Any)) == "quaternion(dtype=Any)"
    assert repr(wp.types.transformation(Any)) == "transformation(dtype=Any)"
    assert wp.types.vector(Any, float) == AnyVec and hash(wp.types.vector(Any, float)) == hash(AnyVec)
    assert AnyVec.accepts(wp.vec2) and AnyVec.accepts(wp.types.vector(7, wp.float32))
    assert not AnyVec.accepts(wp.vec3d) and not AnyVec.accepts(wp.mat22) and not AnyVec.accepts(wp.float32)
    rows3 = wp.types.matrix((3, Any), Any)
    assert rows3.accepts(wp.mat33d) and rows3.accepts(wp.types.matrix((3, 4), wp.float16))
    assert not rows3.accepts(wp.mat22)
    assert wp.types.quaternion(Any).accepts(wp.quath) and not wp.types.quaternion(Any).accepts(wp.vec4)


@wp.func
def any_length(v: AnyVec):
    return wp.length(v)


@wp.func
def trace_any(m: AnyMat):
    t = float(0.0)
    for i in range(len(m)):
        t += m[i, i]
    return t


@wp.kernel
def k_generic_composites(v: AnyVec, m: AnyMat, sizes: wp.array(dtype=int), out: wp.array(dtype=float)):
    sizes[0] = len(v)
    sizes[1] = len(m)
    out[0] = any_length(v)
    out[1] = trace_any(m)
    out[2] = any_length(wp.vec2(3.0, 4.0))  # a func instance per concrete type


@pytest.mark.parametrize("n, rows", [(2, 2), (3, 4), (5, 3)])
def test_generic_kernel_parameters_take_each_concrete_type(n, rows):
    rng = np.random.default_rng(n * 10 + rows)
    vals = rng.uniform(-2, 2, n)
    mvals = rng.uniform(-2, 2, (rows, rows))
    v = wp.types.vector(n, wp.float32)(*vals.tolist())
    m = wp.types.matrix((rows, rows), wp.float32)(*mvals.ravel().tolist())
    sizes, out = wp.zeros(2, dtype=int), wp.zeros(3, dtype=float)
    wp.launch(k_generic_composites, dim=1, inputs=[v, m], outputs=[sizes, out])
    assert sizes.numpy().tolist() == [n, rows]
    np.testing.assert_allclose(out.numpy(), [np.linalg.norm(vals), np.trace(mvals), 5.0], rtol=1e-5)


def test_generic_kernel_parameter_refuses_a_mismatched_type():
    sizes, out = wp.zeros(2, dtype=int), wp.zeros(3, dtype=float)
    with pytest.raises(TypeError, match=r"argument 'v' expects vector\(length=Any, dtype=float32\), got vec3d"):
        wp.launch(k_generic_composites, dim=1, inputs=[wp.vec3d(), wp.mat22()], outputs=[sizes, out])


@wp.func
def scaled(q: wp.types.quaternion(Any), s: float):
    return wp.length(q) * s


@wp.kernel
def k_generic_grad(x: wp.array(dtype=wp.vec3), y: wp.array(dtype=float)):
    i = wp.tid()
    y[i] = any_length(x[i]) * any_length(x[i]) + scaled(wp.quat(x[i][0], x[i][1], x[i][2], 1.0), 2.0)


def test_gradients_flow_through_generic_funcs():
    rng = np.random.default_rng(3)
    xs = rng.uniform(-1, 1, (4, 3)).astype(np.float32)
    x = wp.array(xs, dtype=wp.vec3, requires_grad=True)
    y = wp.zeros(4, dtype=float, requires_grad=True)
    tape = wp.Tape()
    with tape:
        wp.launch(k_generic_grad, dim=4, inputs=[x], outputs=[y])
    tape.backward(grads={y: wp.ones(4, dtype=float)})
    q = np.sqrt((xs**2).sum(axis=1) + 1.0)
    np.testing.assert_allclose(y.numpy(), (xs**2).sum(axis=1) + 2.0 * q, rtol=1e-5)
    expected = 2.0 * xs + 2.0 * xs / q[:, None]  # d/dx |x|^2 + 2 |(x, 1)|
    np.testing.assert_allclose(x.grad.numpy(), expected, rtol=1e-4)


@wp.kernel
def k_expectations(x: wp.array(dtype=float), out: wp.array(dtype=float)):
    wp.expect_eq(x[0], 1.0)
    wp.expect_eq(x[0], 2.0)
    wp.expect_neq(x[0], 2.0)
    wp.expect_neq(int(x[0]), 1)
    wp.expect_near(x[0], 1.0000001)
    wp.expect_near(x[0], 1.5, 0.25)
    wp.expect_eq(wp.vec3(1.0, 2.0, 3.0), wp.vec3(1.0, 2.0, 3.0))
    wp.expect_neq(wp.vec2(1.0, 2.0), wp.vec2(1.0, 2.0))
    wp.expect_near(wp.vec2(1.0, 2.0), wp.vec2(1.0, 2.05), 0.1)
    wp.expect_near(wp.vec2(1.0, 2.0), wp.vec2(1.0, 2.5), 0.1)
    out[0] = x[0] * 3.0  # the kernel goes on after a failed expectation


def test_expectations_print_each_failure_and_the_kernel_goes_on(capfd):
    capfd.readouterr()
    x = wp.array([1.0], dtype=float, requires_grad=True)
    out = wp.zeros(1, dtype=float, requires_grad=True)
    tape = wp.Tape()
    with tape:
        wp.launch(k_expectations, dim=1, inputs=[x], outputs=[out])
    wp.synchronize()
    lines = capfd.readouterr().out.splitlines()
    assert lines == [
        "Error: expect_eq(1, 2) failed",
        "Error: expect_neq(1, 1) failed",
        "Error: expect_near(1, 1.5) failed",
        "Error: expect_neq(1 2 , 1 2 ) failed",  # composites print as wp.print shows them
        "Error: expect_near(1 2 , 1 2.5 ) failed",
    ], lines
    assert out.numpy()[0] == 3.0
    tape.backward(grads={out: wp.ones(1, dtype=float)})
    assert x.grad.numpy()[0] == 3.0  # no adjoint of their own; the backward pass does not print again
    assert capfd.readouterr().out == ""


@wp.kernel
def k_matrix_expectations(m: wp.array(dtype=wp.mat22)):
    wp.expect_near(m[0], wp.mat22(1.0, 2.0, 3.0, 4.05), 0.1)  # close enough: silent
    wp.expect_near(m[0], wp.mat22(1.0, 2.0, 3.0, 4.0))
    wp.expect_near(m[0], wp.mat22(1.0, 2.0, 3.0, 5.0), 0.1)
    wp.expect_near(wp.quat(0.0, 0.0, 0.0, 1.0), wp.quat(0.0, 0.0, 0.01, 1.0), 0.1)  # quaternions too: silent


def test_expect_near_compares_matrices_and_quaternions_component_by_component(capfd):
    capfd.readouterr()
    wp.launch(k_matrix_expectations, 1, [wp.array([wp.mat22(1.0, 2.0, 3.0, 4.0)], dtype=wp.mat22)])
    wp.synchronize()
    out = capfd.readouterr().out
    assert out.count("Error: expect_near(") == 1 and "5" in out


def test_expectations_on_the_host_print_like_the_kernel(capfd):
    capfd.readouterr()
    wp.expect_eq(1, 2)
    wp.expect_eq(3, 3)
    wp.expect_neq(2.0, 2.0)
    wp.expect_near(1.0, 1.0000001)
    wp.expect_near(1.0, 1.1, 0.05)
    assert capfd.readouterr().out.splitlines() == [
        "Error: expect_eq(1, 2) failed",
        "Error: expect_neq(2.0, 2.0) failed",
        "Error: expect_near(1.0, 1.1) failed",
    ]


# ---------------------------------------------------------------------------------------------
# wp.overload: declared instances of generic kernels


@wp.kernel
def k_fill_generic(a: wp.array(dtype=Any), value: Any):
    a[wp.tid()] = value


fill_int = wp.overload(k_fill_generic, [wp.array(dtype=int), int])
fill_vec3 = wp.overload(k_fill_generic, {"a": wp.array(dtype=wp.vec3), "value": wp.vec3})


def test_overload_by_list_and_by_name_launches_its_instance():
    assert not fill_int.is_generic and fill_int.generic_parent is k_fill_generic
    assert len(k_fill_generic.overloads) == 2
    assert wp.overload(k_fill_generic, [wp.array(dtype=int), int]) is fill_int  # one per signature
    a = wp.zeros(4, dtype=int)
    wp.launch(fill_int, dim=4, inputs=[a, 7])
    np.testing.assert_array_equal(a.numpy(), [7, 7, 7, 7])
    v = wp.zeros(2, dtype=wp.vec3)
    wp.launch(fill_vec3, dim=2, inputs=[v, wp.vec3(1.0, 2.0, 3.0)])
    np.testing.assert_array_equal(v.numpy(), [[1.0, 2.0, 3.0]] * 2)
    with pytest.raises(TypeError, match="argument 'a'"):
        wp.launch(fill_int, dim=4, inputs=[wp.zeros(4, dtype=float), 1])  # the instance's types are fixed
    b = wp.zeros(3, dtype=float)
    wp.launch(k_fill_generic, dim=3, inputs=[b, 2.5])  # the generic kernel still takes any types
    np.testing.assert_array_equal(b.numpy(), [2.5, 2.5, 2.5])


def test_overload_refuses_what_does_not_fit():
    with pytest.raises(TypeError, match="argument 'a' cannot be generic"):
        wp.overload(k_fill_generic, [wp.array(dtype=Any), int])
    with pytest.raises(TypeError, match="argument 'a' type mismatch"):
        wp.overload(k_fill_generic, [wp.array2d(dtype=float), float])
    with pytest.raises(RuntimeError, match="Invalid argument name 'b'"):
        wp.overload(k_fill_generic, {"b": int})
    with pytest.raises(RuntimeError, match="2 parameters"):
        wp.overload(k_fill_generic, [wp.array(dtype=int)])
    with pytest.raises(RuntimeError, match="not generic"):
        wp.overload(k_generic_grad, [wp.array(dtype=wp.vec3), wp.array(dtype=float)])


@wp.kernel
def k_apply(v: Any, m: Any, out: wp.array(dtype=float)):
    out[0] = float(wp.length(m * v))


@wp.overload
def k_apply(v: wp.vec2, m: wp.mat22, out: wp.array(dtype=float)): ...


@wp.overload
def k_apply(v: wp.vec3d, m: wp.mat33d, out: wp.array(dtype=float)):
    """A stub may hold a docstring."""


def test_overload_decorator_declares_instances_built_with_the_module():
    assert isinstance(k_apply, wp.Kernel) and k_apply.is_generic
    assert set(k_apply.overloads) == {
        (wp.vec2, wp.mat22, wp.array(dtype=float).kernel_type()),
        (wp.vec3d, wp.mat33d, wp.array(dtype=float).kernel_type()),
    }
    wp.get_module(__name__).load(wp.get_device("cpu"))
    assert all(ovl._arg_types_key in k_apply._instances for ovl in k_apply.overloads.values())
    out = wp.zeros(1, dtype=float)
    wp.launch(k_apply, dim=1, inputs=[wp.vec2(3.0, 4.0), wp.mat22(2.0, 0.0, 0.0, 2.0), out])
    assert out.numpy()[0] == pytest.approx(10.0)
    wp.launch(k_apply, dim=1, inputs=[wp.vec3d(1.0, 2.0, 2.0), wp.mat33d(np.eye(3)), out])
    assert out.numpy()[0] == pytest.approx(3.0)


def test_overload_stub_must_be_empty_and_annotated():
    @wp.kernel
    def k_stubbed(x: Any, out: wp.array(dtype=float)):
        out[0] = float(x)

    with pytest.raises(RuntimeError, match="Only pass, ellipsis"):

        @wp.overload
        def k_stubbed(x: float, out: wp.array(dtype=float)):
            return

    with pytest.raises(RuntimeError, match="Incomplete argument annotations"):

        @wp.overload
        def k_stubbed(x, out: wp.array(dtype=float)): ...

    with pytest.raises(RuntimeError, match="Failed to find a kernel named 'no_such_kernel'"):

        @wp.overload
        def no_such_kernel(x: float): ...

    assert not k_stubbed.overloads


# ---------------------------------------------------------------------------------------------
# wp.Int / wp.Float / wp.Scalar, type attributes, overload order


@wp.func
def component_sum(v: wp.types.vector(3, wp.Int)) -> wp.Int:
    return v[0] + v[1] + v[2]


@wp.func
def twice(x: wp.Float):
    return x + x


@wp.kernel
def k_constrained(x: wp.Scalar, ints: wp.array(dtype=wp.int16), out: wp.array(dtype=wp.float64)):
    s = component_sum(wp.vec3s(wp.int16(1), wp.int16(2), wp.int16(3)))
    ints[0] = s
    out[0] = wp.float64(twice(wp.float16(1.5)))
    out[1] = twice(wp.float64(2.25))
    out[2] = wp.float64(x)


def test_constrained_type_variables():
    assert set(wp.Float.__constraints__) == {wp.float16, wp.bfloat16, wp.float32, wp.float64}
    assert wp.int8 in wp.Int.__constraints__ and wp.float32 not in wp.Int.__constraints__
    assert set(wp.Scalar.__constraints__) == set(wp.Int.__constraints__) | set(wp.Float.__constraints__)
    ints, out = wp.zeros(1, dtype=wp.int16), wp.zeros(3, dtype=wp.float64)
    wp.launch(k_constrained, dim=1, inputs=[wp.uint8(9), ints, out])
    assert ints.numpy()[0] == 6
    np.testing.assert_array_equal(out.numpy(), [3.0, 4.5, 9.0])
    with pytest.raises(TypeError, match="argument 'x' expects Scalar, got bool"):
        wp.launch(k_constrained, dim=1, inputs=[wp.bool(True), ints, out])


@wp.kernel
def k_type_attributes(a: wp.array(dtype=Any), out: wp.array(dtype=float)):
    first = a[0]
    copy = a.dtype(first)  # the array's element type
    zero = type(first)()
    scale = type(a).dtype.dtype(2.0) if False else first.dtype(2.0)  # the component type
    v = wp.types.vector(length=2, dtype=first.dtype)
    m = wp.identity(n=v.length, dtype=v.dtype)
    out[0] = float(first.length)
    out[1] = float(wp.trace(m))
    out[2] = float(wp.length(copy + zero) * scale)


def test_type_attributes_in_kernels():
    """``a.dtype`` of an array, ``x.dtype`` / ``x.length`` of a value, ``type(x)`` and types built
    from them, all resolved when the kernel is built."""
    out = wp.zeros(3, dtype=float)
    wp.launch(k_type_attributes, dim=1, inputs=[wp.array([[3.0, 4.0, 0.0]], dtype=wp.vec3), out])
    np.testing.assert_allclose(out.numpy(), [3.0, 2.0, 10.0])
    wp.launch(k_type_attributes, dim=1, inputs=[wp.array([[0.0, 1.0, 0.0, 0.0]], dtype=wp.vec4d), out])
    np.testing.assert_allclose(out.numpy(), [4.0, 2.0, 2.0])


@wp.struct
class Pair:
    a: float
    b: wp.vec2


@wp.kernel
def k_struct_positional(x: Any, out: wp.array(dtype=float)):
    p = Pair(1.5, wp.vec2(2.0, 3.0))
    q = type(x)(x.a * 2.0, b=x.b)
    out[0] = p.a + p.b[1]
    out[1] = q.a + q.b[0]


def test_struct_construction_by_position_and_generic_struct_parameters():
    out = wp.zeros(2, dtype=float)
    x = Pair()
    x.a, x.b = 0.25, wp.vec2(4.0, 5.0)
    wp.launch(k_struct_positional, dim=1, inputs=[x, out])
    np.testing.assert_allclose(out.numpy(), [4.5, 4.5])


@wp.func
def pick(a: float, b: float):
    return a * b


@wp.func
def pick(a: Any, b: Any):
    return a + b


@wp.func
def pick(a: int, b: int):
    return a - b


@wp.kernel
def k_overload_order(out: wp.array(dtype=float)):
    out[0] = float(pick(17, 25))  # int literals: the int overload, defined last
    out[1] = pick(7.0, 10.0)  # the float overload
    out[2] = float(pick(wp.int8(2), wp.int8(3)))  # only the generic one takes int8
    v = pick(wp.vec2(1.0, 2.0), wp.vec2(10.0, 20.0))
    out[3] = v[1]


def test_concrete_overloads_win_over_generic_ones_whatever_the_order():
    out = wp.zeros(4, dtype=float)
    wp.launch(k_overload_order, dim=1, inputs=[out])
    np.testing.assert_array_equal(out.numpy(), [-8.0, 70.0, 5.0, 22.0])


def test_subscript_annotations_name_the_same_types():
    from typing import Literal

    assert wp.types.Vector[wp.float32, Literal[3]] is wp.vec3
    assert wp.types.Vector[wp.float16, 5] is wp.types.vector(5, wp.float16)
    assert wp.types.Matrix[wp.float64, Literal[2], Literal[3]] is wp.types.matrix((2, 3), wp.float64)
    assert wp.types.Quaternion[wp.float32] is wp.quat and wp.types.Transformation[wp.float64] is wp.transformd
    assert wp.types.Vector[wp.Float, Any] == wp.types.vector(Any, wp.Float)
    assert wp.vec3d._shape_ == (3,) and wp.types.matrix((2, 3), float)._shape_ == (2, 3) and wp.quat._wp_scalar_type_ is wp.float32
    assert wp.float64._type_ is __import__("ctypes").c_double
    with pytest.raises(TypeError, match="2 parameters"):
        wp.types.Vector[wp.float32]
    with pytest.raises(TypeError, match="positive integer"):
        wp.types.Matrix[wp.float32, Literal[0], Literal[2]]


@wp.func
def _subscript_length(v: wp.types.Vector[wp.Float, Any]):
    return wp.length(v)


@wp.kernel
def _subscript_lengths(a: wp.array(dtype=wp.vec3d), b: wp.array(dtype=wp.vec2), out: wp.array(dtype=wp.float64)):
    i = wp.tid()
    out[i] = _subscript_length(a[i]) + wp.float64(_subscript_length(b[i]))


def test_subscript_generic_annotation_takes_each_concrete_type():
    a = wp.array([[3.0, 4.0, 0.0], [1.0, 2.0, 2.0]], dtype=wp.vec3d)
    b = wp.array([[6.0, 8.0], [0.0, 0.5]], dtype=wp.vec2)
    out = wp.zeros(2, dtype=wp.float64)
    wp.launch(_subscript_lengths, 2, [a, b, out])
    np.testing.assert_allclose(out.numpy(), [15.0, 3.5])


@wp.func
def _twice(x: float):
    return x * 2.0


@wp.func
def _cube(x: float):
    return x * x * x


@wp.func
def _apply(g: wp.Function, x: float):
    return g(x)


@wp.func
def _apply_default(g: wp.Function = _twice, x: float = 3.0):
    return g(x)


@wp.func
def _apply_pair(g: wp.Function, x: float, y: float):
    h = g  # a local naming the function
    return h(x, y)


@wp.kernel
def _function_arguments(x: wp.array(dtype=float), out: wp.array(dtype=float)):
    i = wp.tid()
    f = _cube
    out[i] = _apply(_twice, x[i]) + _apply(f, x[i]) + _apply(g=wp.sin, x=x[i])
    out[i] += _apply_default() + _apply_pair(wp.max, x[i], 0.25)


def test_funcs_and_builtins_as_function_arguments():
    xs = np.array([0.5, -1.0, 2.0], dtype=np.float32)
    x = wp.array(xs, dtype=float, requires_grad=True)
    out = wp.zeros(3, dtype=float, requires_grad=True)
    tape = wp.Tape()
    with tape:
        wp.launch(_function_arguments, 3, [x, out])
    expected = 2 * xs + xs**3 + np.sin(xs) + 6.0 + np.maximum(xs, 0.25)
    np.testing.assert_allclose(out.numpy(), expected, rtol=1e-6)
    tape.backward(grads={out: wp.ones(3, dtype=float)})
    np.testing.assert_allclose(x.grad.numpy(), 2 + 3 * xs**2 + np.cos(xs) + (xs > 0.25), rtol=1e-6)


def test_a_function_parameter_refuses_a_value_and_a_value_parameter_refuses_a_function():
    @wp.kernel(module="unique")
    def value_for_function(out: wp.array(dtype=float)):
        out[0] = _apply(1.0, 2.0)

    @wp.kernel(module="unique")
    def function_for_value(out: wp.array(dtype=float)):
        out[0] = _twice(_cube)

    with pytest.raises(wp.codegen.WarpCodegenTypeError, match="expects Function, got float32"):
        wp.launch(value_for_function, 1, [wp.zeros(1, dtype=float)])
    with pytest.raises(wp.codegen.WarpCodegenTypeError, match="got the function"):
        wp.launch(function_for_value, 1, [wp.zeros(1, dtype=float)])


_explicit_module = wp.Module("weft_tests_explicit_module")


@wp.func(module=_explicit_module, name="renamed_offset")
def _offset(x: float):
    return x + 1.0


@wp.kernel(module=_explicit_module)
def _in_explicit_module(out: wp.array(dtype=float)):
    out[0] = _offset(2.0)


def test_funcs_and_kernels_join_an_explicit_module():
    assert _offset.key == "renamed_offset" and _offset.module is _explicit_module
    assert _in_explicit_module.module is _explicit_module
    out = wp.zeros(1, dtype=float)
    wp.launch(_in_explicit_module, 1, [out])
    assert out.numpy()[0] == 3.0


@wp.kernel
def _math_constants(f: wp.array(dtype=float), d: wp.array(dtype=wp.float64)):
    f[0] = wp.pi
    f[1] = wp.inf
    f[2] = -wp.INF
    f[3] = wp.nan
    f[4] = wp.tau * 0.5
    v = wp.vec3d(wp.PI, wp.E, wp.half_pi)  # a global number adapts to its use: full double precision
    d[0] = v[0]
    d[1] = v[1]
    d[2] = wp.float64(wp.ln2) + wp.float64(wp.log2e) * wp.float64(wp.ln10) * wp.float64(wp.log10e)
    d[3] = wp.float64(wp.phi)


def test_math_constants_in_kernels():
    f = wp.zeros(5, dtype=float)
    d = wp.zeros(4, dtype=wp.float64)
    wp.launch(_math_constants, 1, [f, d])
    np.testing.assert_array_equal(f.numpy()[:3], np.array([np.pi, np.inf, -np.inf], dtype=np.float32))
    assert np.isnan(f.numpy()[3]) and f.numpy()[4] == np.float32(np.pi)
    assert d.numpy()[0] == np.pi and d.numpy()[1] == np.e
    np.testing.assert_allclose(d.numpy()[2:], [np.log(2.0) + 1.0 / np.log(2.0), (1 + 5**0.5) / 2], rtol=1e-15)


def test_constant_accepts_values_kernels_hold():
    assert wp.constant(2.5) == 2.5 and wp.constant(wp.vec2(1.0, 2.0))[1] == 2.0
    with pytest.raises(TypeError, match="Invalid constant type: <class 'tuple'>"):
        wp.constant((1, 2))
    assert isinstance(bool(wp.bool(False)), bool) and bool(wp.float32(0.5))


def test_host_scalar_arithmetic_computes_in_the_type():
    assert (wp.int8(100) + wp.int8(100)) == -56 and type(wp.int8(1) + 1) is wp.int8  # wraps, keeps the type
    assert wp.uint8(1) - 5 == 252 and -wp.uint32(1) == 2**32 - 1
    assert wp.int32(-7) % wp.int32(2) == -1 and wp.int32(-7) / wp.int32(2) == -3  # C truncation
    assert wp.int32(7) / 0 == 0 and wp.int64(7) % 0 == 0  # as in kernels
    assert wp.float32(1.0) / wp.float32(3.0) == np.float32(1.0) / np.float32(3.0)
    assert wp.float16(2.0) * 3 == 6.0 and 24 / wp.float64(2.0) == 12.0 and wp.float32(2.0) ** 3 == 8.0
    assert wp.float32(-7.5) % 2.0 == -1.5 and abs(wp.int16(-3)) == 3 and +wp.float64(1.5) == 1.5
    assert wp.float32(1.0) < 2 and wp.int8(3) >= wp.int8(3)
    with pytest.raises(TypeError, match="float types"):
        wp.int32(2) ** wp.int32(3)
    with pytest.raises(TypeError, match="cannot combine float32 and float64"):
        wp.float32(1.0) + wp.float64(1.0)


@wp.kernel
def _bare_builtin_names(out: wp.array(dtype=float)):
    a = vec3(1.0, 2.0, 3.0)  # noqa: F821 (Warp resolves builtins and types without wp.)
    m = mat22(1.0, 2.0, 3.0, 4.0)  # noqa: F821
    out[0] = dot(a, a) + m[1, 1] + float32(0.5)  # noqa: F821


def test_builtins_and_types_resolve_without_the_wp_prefix():
    out = wp.zeros(1, dtype=float)
    wp.launch(_bare_builtin_names, 1, [out])
    assert out.numpy()[0] == 18.5


@wp.func
def _weighted(values: tuple[wp.vec3d, wp.float64]) -> wp.float64:
    return wp.length(values[0]) * values[1]


@wp.func
def _alternating(values: tuple[wp.float64, ...]):
    out = wp.float64(0.0)
    for i in range(len(values)):  # unrolled: len of a tuple is known at build time
        out += values[-1 - i] * wp.float64(i + 1)
    return out


@wp.func
def _split(x: wp.float64) -> tuple[wp.float64, wp.float64]:
    return x * x, wp.sin(x)


@wp.kernel
def _tuple_values(x: wp.array(dtype=wp.float64), y: wp.array(dtype=wp.float64)):
    i = wp.tid()
    a = x[i]
    t = (wp.vec3d(a, 2.0, a * a), a, 3)  # a tuple as one value
    y[i] = _weighted((t[0], t[1])) + wp.float64(len(t) + wp.static(len(t)))
    s = _split(a)
    sq, sn = s
    y[i] += _alternating((sq, sn, a)) + s[-1] * wp.float64(t[2])


def test_tuples_as_values_arguments_and_results():
    from tests import fd_check

    xs = np.array([0.3, -1.2, 2.0])
    inner = np.sqrt(xs**2 + 4.0 + xs**4) * xs + 6.0
    expected = inner + (xs * 1 + np.sin(xs) * 2 + xs * xs * 3) + np.sin(xs) * 3.0
    fd_check.tape_vs_fd(_tuple_values, xs, (3,), np.random.default_rng(5), expected=expected)


def test_tuple_index_must_be_known_at_build_time():
    @wp.kernel(module="unique")
    def dynamic_index(n: int, out: wp.array(dtype=float)):
        t = (1.0, 2.0)
        out[0] = t[n]

    with pytest.raises(wp.codegen.WarpCodegenKeyError, match="indexed with a constant"):
        wp.launch(dynamic_index, 1, [1, wp.zeros(1, dtype=float)])


@wp.struct
class _Pun:
    f: wp.float16
    i: wp.int16


@wp.kernel
def _bit_casts(out: wp.array(dtype=wp.int32), f: wp.array(dtype=float)):
    f[0] = wp.cast(wp.int32(0x3FA00000), wp.float32)
    p = _Pun()
    p.f = wp.float16(2.0)
    p.i = wp.int16(123)
    out[0] = wp.cast(p, wp.int32)  # a struct's bytes
    out[1] = wp.cast(wp.vec2h(wp.float16(1.0), wp.float16(0.0)), int)


def test_cast_reinterprets_bytes():
    out = wp.zeros(2, dtype=wp.int32)
    f = wp.zeros(1, dtype=float)
    wp.launch(_bit_casts, 1, [out, f])
    assert f.numpy()[0] == 1.25
    assert out.numpy().tolist() == [0x007B4000, 0x3C00]

    @wp.kernel(module="unique")
    def wrong_size(out: wp.array(dtype=float)):
        out[0] = wp.cast(wp.int64(1), wp.float32)

    with pytest.raises(wp.codegen.WarpCodegenTypeError, match="int64 has 8 bytes, float32 4"):
        wp.launch(wrong_size, 1, [wp.zeros(1, dtype=float)])


@wp.kernel
def _wp_float_int(a: wp.array(dtype=wp.float16), out: wp.array(dtype=float)):
    out[0] = wp.float(a[0]) * 2.0 + float(wp.int(2.7))  # wp.float / wp.int convert like float / int


def test_wp_float_and_wp_int_convert_in_kernels():
    out = wp.zeros(1, dtype=float)
    wp.launch(_wp_float_int, 1, [wp.array([1.5], dtype=wp.float16), out])
    assert out.numpy()[0] == 5.0


@wp.func
def _square(x: float):
    return x * x


@wp.kernel
def _gradients_in_kernels(x: wp.array(dtype=float), out: wp.array(dtype=float)):
    i = wp.tid()
    out[0] = wp.grad(_square)(x[i])  # d(x^2)/dx
    db, da = wp.grad(wp.atan2)(x[i], 2.0)  # a tuple for several arguments
    out[1] = db
    out[2] = da
    f = _square
    out[3] = wp.grad(f)(3.0) * x[i]  # a constant for the backward pass
    out[4] = wp.grad(_apply)(_square, x[i])


def test_grad_of_funcs_and_builtins_in_kernels():
    x = wp.array([3.0], dtype=float, requires_grad=True)
    out = wp.zeros(5, dtype=float, requires_grad=True)
    tape = wp.Tape()
    with tape:
        wp.launch(_gradients_in_kernels, 1, [x, out])
    np.testing.assert_allclose(out.numpy(), [6.0, 2.0 / 13.0, -3.0 / 13.0, 18.0, 6.0], rtol=1e-6)
    tape.backward(grads={out: wp.array([0.0, 0.0, 0.0, 1.0, 0.0], dtype=float)})
    assert x.grad.numpy()[0] == 6.0  # only out[3] = 6 x depends on x outside the grad call


def test_a_return_annotation_must_match_what_the_func_returns():
    @wp.func
    def halves(x: float) -> int:
        return x * 0.5

    @wp.kernel(module="unique")
    def uses_halves(out: wp.array(dtype=float)):
        out[0] = float(halves(2.0))

    with pytest.raises(wp.codegen.WarpCodegenTypeError, match="annotated as `int` but the code returns a value of type `float32`"):
        wp.launch(uses_halves, 1, [wp.zeros(1, dtype=float)])


def test_tile_annotations_type_func_parameters_not_kernel_parameters():
    from typing import Literal

    @wp.func
    def passthrough(t: wp.tile[float, Literal[8], Literal[4]]) -> wp.tile[float, Literal[8], Literal[4]]:
        return t

    assert repr(wp.tile[float, Literal[8], 4]) == "tile[float32, 8, 4]" and wp.types.is_tile(wp.tile[float])

    @wp.kernel(module="unique")
    def uses_tile_func(out: wp.array2d[float]):
        wp.tile_store(out, passthrough(wp.tile_full(shape=(8, 4), value=2.5, dtype=float)))

    out = wp.zeros((8, 4), dtype=float)
    wp.launch_tiled(uses_tile_func, dim=[1], inputs=[out], block_dim=8)
    assert np.all(out.numpy() == 2.5)

    @wp.kernel(module="unique")
    def takes_tile(t: wp.tile[float, 8, 4]):
        pass

    with pytest.raises(TypeError, match="tiles live inside kernels"):
        wp.launch(takes_tile, 1, [None])


@wp.func
def _takes_function(g: wp.Function, x: float):
    return x


@wp.func_grad(_takes_function)
def _adj_takes_function(g: wp.Function, x: float, adj_ret: float):
    wp.adjoint[x] += 3.0 * adj_ret


def test_custom_gradients_of_funcs_with_function_parameters_are_refused():
    @wp.kernel(module="unique")
    def uses_it(out: wp.array(dtype=float)):
        out[0] = _takes_function(_twice, 1.0)

    with pytest.raises(wp.codegen.WarpCodegenError, match="wp.Function parameters cannot have custom gradients"):
        wp.launch(uses_it, 1, [wp.zeros(1, dtype=float)])


@wp.kernel(enable_backward=False)
def _grad_in_forward_only_kernel(out: wp.array(dtype=float)):
    out[0] = wp.grad(_apply)(_square, 3.0)  # the adjoints of _apply and of what it calls are rendered
    g = wp.grad(_square)  # wp.grad(f) bound to a local
    out[1] = g(2.0)


def test_grad_in_a_forward_only_kernel_renders_the_adjoints_it_needs():
    out = wp.zeros(2, dtype=float)
    wp.launch(_grad_in_forward_only_kernel, 1, [out])
    assert out.numpy().tolist() == [6.0, 4.0]


def test_specially_lowered_builtins_cannot_be_passed_as_values():
    @wp.kernel(module="unique")
    def passes_printf(out: wp.array(dtype=float)):
        out[0] = _apply(wp.printf, 0.5)

    with pytest.raises(wp.codegen.WarpCodegenTypeError, match="unsupported built-in function 'printf'"):
        wp.launch(passes_printf, 1, [wp.zeros(1, dtype=float)])


def _make_overloaded_closure(value: int):
    @wp.func
    def f():
        return value

    @wp.func
    def f(x: int):  # noqa: F811 (another signature in the same call: an overload)
        return value * x

    return f


_closure_a = _make_overloaded_closure(2)
_closure_b = _make_overloaded_closure(3)


@wp.kernel
def _closure_overloads(out: wp.array(dtype=int)):
    out[0] = _closure_a()
    out[1] = _closure_a(2)
    out[2] = _closure_b()
    out[3] = _closure_b(2)


def test_closures_overload_within_one_factory_call_only():
    out = wp.zeros(4, dtype=int)
    wp.launch(_closure_overloads, 1, [out])
    assert out.numpy().tolist() == [2, 4, 3, 6]
    made = []
    for k in range(2):  # the same signature again: separate funcs, each with its own body

        @wp.func
        def g(x: int):
            return x + k

        made.append(g)
    assert made[0] is not made[1]


def _string_annotated_kernel(dtype):
    def fill(out: "wp.array(dtype=dtype)", value: "dtype"):
        i = wp.tid()
        out[i] = value + dtype(1)

    return wp.Kernel(func=fill, module="unique")


def test_string_annotations_resolve_in_the_factory_closure():
    for dtype in (wp.float64, wp.int16):
        out = wp.zeros(3, dtype=dtype)
        wp.launch(_string_annotated_kernel(dtype), 3, [out, dtype(4)])
        assert out.dtype is dtype and out.numpy().tolist() == [5, 5, 5]


@wp.func
def _sum3(a: float, b: float, c: float):
    return a + b + c


@wp.kernel
def k_spread_arguments(arr: wp.array(dtype=float), out: wp.array(dtype=float)):
    v = wp.vec3(1.0, 2.0, 3.0)
    out[0] = wp.max(*v[1:])  # a vector slice: 3
    w = wp.vec4(*v, 4.0)  # components then more arguments
    out[1] = w[3] + w[0]  # 5
    m = wp.mat22(1.0, 2.0, 3.0, 4.0)
    r = wp.matrix_from_rows(*m)  # the rows of a matrix
    out[2] = r[1, 0]  # 3
    q = wp.quat(0.0, 0.0, 0.5, 1.0)
    out[3] = wp.vec2(*q[2:])[0]  # a quaternion slice: 0.5
    out[4] = _sum3(*arr[1:6:2])  # a constant array slice: arr[1] + arr[3] + arr[5]
    t = (7.0, 8.0)
    out[5] = wp.max(*t)  # a tuple: 8


def test_starred_arguments_spread_into_calls():
    out = wp.zeros(6, dtype=float)
    wp.launch(k_spread_arguments, 1, [wp.array(np.arange(8, dtype=np.float32)), out])
    np.testing.assert_array_equal(out.numpy(), [3.0, 5.0, 3.0, 0.5, 1.0 + 3.0 + 5.0, 8.0])


def test_spreading_what_is_not_known_at_build_time_is_refused():
    @wp.kernel(module="unique")
    def runtime_bound(arr: wp.array(dtype=int), n: int):
        wp.vec3i(*arr[:n])

    @wp.kernel(module="unique")
    def no_upper_bound(arr: wp.array(dtype=int)):
        wp.vec3i(*arr[0:])

    @wp.kernel(module="unique")
    def a_scalar():
        x = 42
        wp.vec3i(*x)

    a = wp.zeros(10, dtype=int)
    with pytest.raises(wp.codegen.WarpCodegenValueError, match="Slice component must be a compile-time constant"):
        wp.launch(runtime_bound, 1, [a, 3])
    with pytest.raises(wp.codegen.WarpCodegenValueError, match="requires explicit upper bound"):
        wp.launch(no_upper_bound, 1, [a])
    with pytest.raises(wp.codegen.WarpCodegenTypeError, match="Starred expressions are only supported for"):
        wp.launch(a_scalar, 1, [])


class _Mode(enum.IntEnum):
    SLOW = 1
    FAST = 2


class _Flags(enum.IntFlag):
    A = 1
    B = 2
    C = 4


@wp.kernel
def k_enums(mode: int, out: wp.array(dtype=int)):
    out[0] = _Mode.FAST.value + int(_Mode.SLOW) * 10
    out[1] = _Flags.A | _Flags.C
    if mode == _Mode.FAST:
        out[2] = _Flags.B.value
    else:
        out[2] = -1


def test_int_enum_members_are_constants_with_their_value():
    out = wp.zeros(3, dtype=int)
    wp.launch(k_enums, 1, [2, out])
    np.testing.assert_array_equal(out.numpy(), [12, 5, 2])
    wp.launch(k_enums, 1, [1, out])
    assert out.numpy()[2] == -1


def _make_offset_kernel(c):
    @wp.kernel(module="unique")
    def add_offset(x: wp.array(dtype=float)):
        i = wp.tid()
        x[i] = x[i] + c

    return add_offset


def test_an_identical_unique_definition_is_the_same_kernel():
    kernels = []
    for _ in range(3):

        @wp.kernel(module="unique")
        def scaled(x: wp.array(dtype=Any), s: Any):
            i = wp.tid()
            x[i] = x[i] * s

        kernels.append(scaled)
    assert kernels[0] is kernels[1] is kernels[2]
    one, two, one_again = _make_offset_kernel(1.0), _make_offset_kernel(2.0), _make_offset_kernel(1.0)
    assert one is one_again and one is not two  # a different closure value is a different kernel
    x = wp.zeros(2, dtype=float)
    wp.launch(one, 2, [x])
    wp.launch(two, 2, [x])
    np.testing.assert_array_equal(x.numpy(), [3.0, 3.0])


def test_unique_definitions_with_other_annotation_types_are_other_kernels():
    kernels = []
    for dtype in (wp.float32, wp.float64):
        V = wp.types.vector(2, dtype)  # only the annotation names it: not a closure value

        @wp.kernel(module="unique")
        def first(a: wp.array(dtype=V), out: wp.array(dtype=float)):
            out[0] = float(a[0][0])

        kernels.append(first)
    assert kernels[0] is not kernels[1]
    out = wp.zeros(1, dtype=float)
    wp.launch(kernels[1], 1, [wp.array([[2.5, 0.0]], dtype=wp.vec2d), out])
    assert out.numpy()[0] == 2.5
