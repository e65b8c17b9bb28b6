"""Builtins called from Python run their native code for the argument types
(weft/runtime/host_calls.py): the result is what a kernel computes."""

import numpy as np
import pytest

import weft as wp


def test_scalar_results_are_computed_in_the_argument_type():
    x = 1.23
    r64 = wp.sin(wp.float64(x))
    assert isinstance(r64, wp.float64) and float(r64) == np.sin(np.float64(x))
    r32 = wp.sin(wp.float32(x))
    assert isinstance(r32, float) and r32 == float(np.sin(np.float32(x)))  # float32 arithmetic
    r16 = wp.sin(wp.float16(x))
    assert isinstance(r16, wp.float16) and abs(float(r16) - np.sin(x)) < 1e-3
    assert wp.sin(x) == wp.sin(wp.float32(x))  # a Python float is a float32


def test_integer_arguments_wrap_as_in_kernels():
    value = -1234567890123456789
    assert wp.int8(300) == 44 and wp.uint8(-1) == 255 and wp.int8(value) == -21  # construction wraps, as a C cast
    assert wp.invert(wp.int8(value)) == 20 and wp.invert(wp.uint16(value)) == 33044
    assert wp.invert(value) == wp.invert(wp.int32(value))  # a Python int is an int32
    assert wp.mul(wp.int16(-1234567890), wp.int16(-1234567890)) == -3004
    assert wp.mul(np.int8(3), np.int8(100)) == 44  # NumPy scalars keep their type
    assert wp.length_sq(wp.vec2b(-1234567890, -1234567890)) == -120


def test_composite_arguments_and_results():
    assert wp.trace(wp.mat22d(1.23, 2.34, 3.45, 4.56)) == wp.float64(1.23 + 4.56)
    assert wp.cross(wp.vec3(1.0, 0.0, 0.0), wp.vec3(0.0, 1.0, 0.0)) == wp.vec3(0.0, 0.0, 1.0)
    q = wp.quat_rpy(0.1, 0.2, 0.3)
    assert type(q) is wp.quat and abs(wp.length(q) - 1.0) < 1e-6
    assert wp.pow(y=4.0, x=2.0) == 16.0  # keywords by parameter name


def test_unmatched_arguments_name_their_types():
    with pytest.raises(RuntimeError, match=r"Couldn't find a function 'mul' compatible with the arguments 'int8, int'$"):
        wp.mul(wp.int8(3), 5)
    with pytest.raises(RuntimeError, match=r"arguments 'int, int16'$"):
        wp.mul(5, np.int16(2))


def test_legacy_scalar_return_types(monkeypatch):
    monkeypatch.setattr(wp.config, "legacy_scalar_return_types", True)
    assert type(wp.sin(wp.float64(1.0))) is float and type(wp.invert(wp.int16(-123))) is int


def test_numpy_float64_scalars_are_float64():
    assert isinstance(wp.sin(np.float64(1.23)), wp.float64)  # np.float64 subclasses float, yet keeps its type


def test_builtins_with_several_outputs_return_a_tuple():
    axis, angle = wp.quat_to_axis_angle(wp.quat_from_axis_angle(wp.vec3(0.0, 0.0, 1.0), 0.5))
    assert type(axis) is wp.vec3 and abs(angle - 0.5) < 1e-6
    A = wp.mat33(1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0, 10.0)
    U, sigma, V = wp.svd3(A)
    U, V = np.asarray(U).reshape(3, 3), np.asarray(V).reshape(3, 3)
    rebuilt = U @ np.diag(np.asarray(sigma)) @ V.T
    np.testing.assert_allclose(rebuilt, np.asarray(A).reshape(3, 3), atol=1e-5)


@wp.func
def _bump_by_type(x: int):
    return x + 1


@wp.func
def _bump_by_type(x: float):  # noqa: F811 (overloads)
    return x + 0.5


@wp.func
def _bump_by_type(x: wp.vec3):  # noqa: F811
    return x + wp.vec3(1.0, 0.0, 0.0)


def test_overloaded_funcs_called_from_python_pick_the_overload_the_arguments_fit():
    assert _bump_by_type(1) == 2 and isinstance(_bump_by_type(1), int)
    assert _bump_by_type(1.0) == 1.5
    assert _bump_by_type(wp.vec3(1.0, 2.0, 3.0)) == wp.vec3(2.0, 2.0, 3.0)
    with pytest.raises(RuntimeError, match=r"Error calling function '_bump_by_type', no overload found for arguments \('a',\)"):
        _bump_by_type("a")
