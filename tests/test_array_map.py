"""wp.map and the element-wise arithmetic operators of arrays."""

import numpy as np
import pytest

import weft as wp


@pytest.mark.parametrize("dtype", [wp.int8, wp.uint16, wp.int32, wp.float16, wp.float32, wp.float64])
def test_operators_with_scalars_compute_in_the_element_type(dtype):
    arr = wp.array((1, 2, 3), dtype=dtype)
    s = dtype(5)
    np_type = dtype.np_dtype.type
    a = np.array([1, 2, 3], dtype=np_type)
    np.testing.assert_array_equal((arr + s).numpy(), a + np_type(5))
    np.testing.assert_array_equal((s - arr).numpy(), np_type(5) - a)  # wraps for unsigned types
    np.testing.assert_array_equal((arr * s).numpy(), a * np_type(5))
    np.testing.assert_array_equal((s % arr).numpy(), np.fmod(np_type(5), a))
    assert (arr + s).dtype is dtype and (arr * 2).dtype is dtype  # an untyped number takes the arrays' type


def test_array_operators_record_gradients_and_update_in_place():
    a = wp.array([1.0, 2.0], dtype=float, requires_grad=True)
    tape = wp.Tape()
    with tape:
        b = a * 3.0 + a
        c = wp.map(wp.sin, b)
    tape.backward(grads={c: wp.ones(2, dtype=float)})
    np.testing.assert_allclose(c.numpy(), np.sin([4.0, 8.0]), rtol=1e-6)
    np.testing.assert_allclose(a.grad.numpy(), 4.0 * np.cos([4.0, 8.0]), rtol=1e-5)
    m = wp.array([[1.0, 2.0], [3.0, 4.0]], dtype=float)
    m += 1.0
    m *= m
    np.testing.assert_array_equal(m.numpy(), [[4.0, 9.0], [16.0, 25.0]])
    np.testing.assert_array_equal((-m).numpy(), -m.numpy())


@wp.func
def _scale_add(x: float, y: float):
    return 2.0 * x + y


def test_map_of_a_func_over_arrays_and_broadcast_values():
    x = wp.array([1.0, 2.0, 3.0], dtype=float)
    y = wp.array([10.0, 20.0, 30.0], dtype=float)
    np.testing.assert_array_equal(wp.map(_scale_add, x, y).numpy(), [12.0, 24.0, 36.0])
    np.testing.assert_array_equal(wp.map(_scale_add, x, 1.0).numpy(), [3.0, 5.0, 7.0])
    out = wp.zeros(3, dtype=float)
    assert wp.map(_scale_add, 0.5, y, out=out) is out
    np.testing.assert_array_equal(out.numpy(), [11.0, 21.0, 31.0])
    v = wp.array([[1.0, 2.0, 3.0]], dtype=wp.vec3)
    np.testing.assert_allclose(wp.map(wp.length, v).numpy(), [np.sqrt(14.0)], rtol=1e-6)
    with pytest.raises(ValueError, match="cannot be combined"):
        wp.map(_scale_add, x, wp.zeros(2, dtype=float))
    with pytest.raises(ValueError, match="at least one array"):
        wp.map(_scale_add, 1.0, 2.0)
