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
    with pytest.raises(ValueError, match=r"Shapes \(3,\) and \(2,\) are not broadcastable"):
        wp.map(_scale_add, x, wp.zeros(2, dtype=float))
    with pytest.raises(ValueError, match="at least one warp.array input"):
        wp.map(_scale_add, 1.0, 2.0)


def test_map_broadcasts_array_shapes_as_numpy_and_gradients_reach_the_originals():
    a = wp.array(np.arange(4, dtype=np.float32).reshape(1, 4), requires_grad=True)
    b = wp.array(np.arange(12, dtype=np.float32).reshape(3, 1, 4) * 0.5, requires_grad=True)
    with wp.Tape() as tape:
        c = wp.map(wp.mul, a, b)
    assert c.shape == (3, 1, 4)
    np.testing.assert_allclose(c.numpy(), a.numpy() * b.numpy())
    tape.backward(grads={c: wp.ones((3, 1, 4), dtype=float)})
    np.testing.assert_allclose(a.grad.numpy(), b.numpy().sum(axis=0))  # summed over the broadcast axis
    np.testing.assert_allclose(b.grad.numpy(), np.broadcast_to(a.numpy(), (3, 1, 4)))


def _four(a, b, c, d):  # a plain Python function: map compiles it as a func
    return a * b + c * d


def test_map_takes_python_functions_lambdas_and_many_inputs():
    x = wp.array(np.arange(4, dtype=np.float32))
    np.testing.assert_allclose(wp.map(_four, x, x, x, 2.0).numpy(), x.numpy() ** 2 + 2.0 * x.numpy())
    first, second = (lambda u: u * 10.0), (lambda u: u - 1.0)  # two lambdas on one line
    np.testing.assert_allclose(wp.map(first, x).numpy(), 10.0 * x.numpy())
    np.testing.assert_allclose(wp.map(second, x).numpy(), x.numpy() - 1.0)
    six = wp.map(lambda a, b, c, d, e, f: a + b + c + d + e + f, x, x, x, x, x, 1.0)
    np.testing.assert_allclose(six.numpy(), 5.0 * x.numpy() + 1.0)
    eight = wp.map(lambda a, b, c, d, e, f, g, h: a + b + c + d + e + f + g + h, x, x, x, x, x, x, x, 2.0)
    np.testing.assert_allclose(eight.numpy(), 7.0 * x.numpy() + 2.0)
    for k in range(2):  # a new lambda object from the same code each time
        np.testing.assert_allclose(wp.map(lambda u: u + 1.0, x).numpy(), x.numpy() + 1.0)
    kernel = wp.map(lambda u: u + 2.0, x, return_kernel=True)
    out = wp.empty(20, dtype=float)
    wp.launch(kernel, dim=20, inputs=[wp.zeros(20, dtype=float)], outputs=[out])
    np.testing.assert_array_equal(out.numpy(), np.full(20, 2.0))


@wp.func
def _no_value(x: float):
    y = x


def test_map_explains_functions_and_outputs_that_do_not_fit():
    x = wp.zeros(3, dtype=float)
    with pytest.raises(TypeError, match="The provided function must return a value"):
        wp.map(_no_value, x)
    with pytest.raises(TypeError, match=r"Number of input arguments \(2\) does not match expected number of function arguments \(1\)"):
        wp.map(lambda u: u, x, x)
    with pytest.raises(TypeError, match=r"Output array shape \(2,\) does not match expected shape \(3,\)"):
        wp.map(wp.sub, x, x, out=wp.empty(2, dtype=float))
    with pytest.raises(TypeError, match="Output array dtype int32 does not match expected dtype float32"):
        wp.map(wp.sub, x, x, out=wp.empty(3, dtype=int))


@wp.func
def _sum_product_and_splat(a: float, b: float):
    return a + b, a * b, wp.vec3(a, b, a)


def test_functions_returning_several_values_give_a_list_of_arrays():
    a = wp.array(np.arange(5, dtype=np.float32), requires_grad=True)
    b = wp.array(np.full(5, 3.0, dtype=np.float32))
    s, p, v = wp.map(_sum_product_and_splat, a, b)
    np.testing.assert_allclose(s.numpy(), a.numpy() + 3.0)
    np.testing.assert_allclose(p.numpy(), a.numpy() * 3.0)
    assert v.dtype is wp.vec3 and v.list()[4] == wp.vec3(4.0, 3.0, 4.0)
    pair = wp.map(lambda x, y: (x - y, y), a, 1.0)
    assert isinstance(pair, list) and len(pair) == 2
    np.testing.assert_allclose(pair[0].numpy(), a.numpy() - 1.0)
    outs = [wp.empty(5, dtype=float), wp.empty(5, dtype=float), wp.empty(5, dtype=wp.vec3)]
    assert wp.map(_sum_product_and_splat, a, b, out=outs) == outs
    np.testing.assert_allclose(outs[1].numpy(), a.numpy() * 3.0)
    with pytest.raises(TypeError, match=r"expected 2 Warp arrays with shape \(5,\) and dtypes \(float32, float32\)$"):
        wp.map(lambda x, y: (x, y), a, b, out=wp.empty(5, dtype=float))
    with pytest.raises(TypeError, match=r"Number of provided output arrays \(1\) does not match expected number of function outputs \(3\)"):
        wp.map(_sum_product_and_splat, a, b, out=[wp.empty(5, dtype=float)])
    tape = wp.Tape()  # gradients flow through each output
    with tape:
        s, p, _ = wp.map(_sum_product_and_splat, a, b)
    tape.backward(grads={p: wp.ones(5, dtype=float)})
    np.testing.assert_allclose(a.grad.numpy(), np.full(5, 3.0))


def test_indexed_arrays_are_inputs_too():
    data = wp.array(np.arange(6, dtype=np.float32), requires_grad=True)
    picked = wp.indexedarray(data, [wp.array([5, 0, 2], dtype=wp.int32)])
    tape = wp.Tape()
    with tape:
        doubled = wp.map(lambda u: u * 2.0, picked)
    np.testing.assert_allclose(doubled.numpy(), [10.0, 0.0, 4.0])
    tape.backward(grads={doubled: wp.ones(3, dtype=float)})
    np.testing.assert_allclose(data.grad.numpy(), [2.0, 0.0, 2.0, 0.0, 0.0, 2.0])


def test_an_indexed_array_can_be_the_output():
    data = wp.array(np.arange(6, dtype=np.float32))
    picked = wp.indexedarray(data, [wp.array([1, 3, 5], dtype=wp.int32)])
    wp.map(lambda u: u * 10.0, picked, out=picked)
    np.testing.assert_array_equal(data.numpy(), [0.0, 10.0, 2.0, 30.0, 4.0, 50.0])
    with pytest.raises(TypeError, match=r"Output array 1 dtype int32 does not match expected dtype float32$"):
        wp.map(lambda x, y: (x, y), data, data, out=[wp.empty(6, dtype=float), wp.empty(6, dtype=int)])


def test_indexed_arrays_take_the_arithmetic_operators():
    data = wp.array(np.arange(6, dtype=np.float32))
    picked = wp.indexedarray(data, [wp.array([1, 3, 5], dtype=wp.int32)])
    scaled = 10.0 * picked
    assert isinstance(scaled, wp.array)
    np.testing.assert_array_equal(scaled.numpy(), [10.0, 30.0, 50.0])
    np.testing.assert_array_equal((picked - picked).numpy(), [0.0, 0.0, 0.0])
    picked += 1.0
    assert isinstance(picked, wp.indexedarray)
    np.testing.assert_array_equal(data.numpy(), [0.0, 2.0, 2.0, 4.0, 4.0, 6.0])  # through the indices


def test_equal_python_functions_share_one_kernel_and_closures_tell_them_apart():
    from weft.utils import map_cache

    x = wp.array(np.arange(4, dtype=np.float32))
    map_cache.clear()
    for _ in range(3):  # one lambda evaluated again, and the same one written out again
        wp.map(lambda u: u * 3.0, x)
    wp.map(lambda u: u * 3.0, x)
    assert len(map_cache) == 1
    wp.map(lambda u: u * 3.0, wp.array(np.arange(4, dtype=np.float64)))  # other element types: a kernel of their own
    assert len(map_cache) == 2
    results = []
    for scale in (2.0, 5.0):  # captured values are compiled in: each value its own func
        results.append(wp.map(lambda u: u * scale, x).numpy())
    np.testing.assert_array_equal(results, [np.arange(4) * 2.0, np.arange(4) * 5.0])
    assert len(map_cache) == 4


def test_a_func_that_does_not_take_the_types_is_named_as_warp_names_it():
    @wp.func
    def takes_an_int(i: int):
        return 5.0 * float(i)

    with pytest.raises(TypeError, match=r"Function test_a_func_that_does_not_take_the_types_is_named_as_warp_names_it__locals__takes_an_int does not support the provided argument types float32"):
        wp.map(takes_an_int, wp.zeros(2, dtype=float))
    with pytest.raises(TypeError, match="Function .*does not support the provided argument types vec3f"):
        wp.map(wp.floor, wp.zeros(2, dtype=wp.vec3))
