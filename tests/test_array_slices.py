"""Array slicing in kernels, as in Warp: ``a[start:stop:step]``, mixed with integer indices
(``a[i, 1:]``), gives a subarray sharing the parent's memory and gradient, with Python's slice
rules (negative bounds and steps, clipping), checked against NumPy's views."""

import numpy as np
import pytest

import weft as wp


@wp.kernel
def k_copy_dynamic_slice(
    a: wp.array2d(dtype=wp.float64), r0: int, r1: int, rs: int, c0: int, c1: int, cs: int, out: wp.array2d(dtype=wp.float64), shape: wp.array(dtype=int)
):
    sub = a[r0:r1:rs, c0:c1:cs]
    shape[0] = sub.shape[0]
    shape[1] = sub.shape[1]
    shape[2] = sub.shape[2]  # past its dimensions: 0, as in Warp
    for i in range(sub.shape[0]):
        for j in range(sub.shape[1]):
            out[i, j] = sub[i, j]


def test_dynamic_slices_match_numpy():
    rng = np.random.default_rng(2)
    x = rng.random((7, 5))
    a = wp.array(x, dtype=wp.float64)
    cases = [(0, 7, 1, 0, 5, 1), (1, 6, 2, 4, 0, -1), (6, -9, -3, -1, -6, -2), (-2, 100, 1, 3, 3, 1), (5, 1, 1, 0, 5, 4)]
    for r0, r1, rs, c0, c1, cs in cases:
        out = wp.zeros((7, 5), dtype=wp.float64)
        shape = wp.zeros(3, dtype=int)
        wp.launch(k_copy_dynamic_slice, 1, [a, r0, r1, rs, c0, c1, cs, out, shape])
        want = x[r0:r1:rs, c0:c1:cs]
        assert tuple(shape.numpy()) == (*want.shape, 0)
        np.testing.assert_array_equal(out.numpy()[: want.shape[0], : want.shape[1]], want)


@wp.kernel
def k_literal_slices(a: wp.array3d(dtype=int), out: wp.array(dtype=int)):
    s1 = a[1, ::-1, 2:]  # an integer entry drops its dimension
    out[0] = s1.ndim
    out[1] = s1.shape[0]
    out[2] = s1.shape[1]
    out[3] = s1[0, 0]
    out[4] = s1[2, 1]
    s2 = a[:, 2][::2]  # a slice of a slice
    out[5] = s2.shape[0]
    out[6] = s2[1, 3]
    s3 = a[-1:]  # fewer entries than dimensions: the rest kept whole
    out[7] = s3.shape[0] * 100 + s3.shape[1] * 10 + s3.shape[2]
    out[8] = s3[0, 2, 3]


def test_literal_slices_and_integer_entries_match_numpy():
    x = np.arange(3 * 4 * 5, dtype=np.int32).reshape(3, 4, 5)
    out = wp.zeros(9, dtype=int)
    wp.launch(k_literal_slices, 1, [wp.array(x), out])
    s1, s2, s3 = x[1, ::-1, 2:], x[:, 2][::2], x[-1:]
    expected = [2, s1.shape[0], s1.shape[1], s1[0, 0], s1[2, 1], s2.shape[0], s2[1, 3]]
    expected += [s3.shape[0] * 100 + s3.shape[1] * 10 + s3.shape[2], s3[0, 2, 3]]
    np.testing.assert_array_equal(out.numpy(), expected)


@wp.kernel
def k_write_through_slice(a: wp.array(dtype=float)):
    evens = a[::2]
    for i in range(evens.shape[0]):
        evens[i] = float(10 * i)
    tail = a[-3:]
    tail[0] += 0.5


def test_stores_through_a_slice_land_in_the_parent():
    a = wp.zeros(7, dtype=float)
    wp.launch(k_write_through_slice, 1, [a])
    expected = np.zeros(7, np.float32)
    expected[::2] = [0, 10, 20, 30]
    expected[-3] += 0.5
    np.testing.assert_array_equal(a.numpy(), expected)


@wp.kernel
def k_reversed_weighted_sum(x: wp.array(dtype=wp.float64), loss: wp.array(dtype=wp.float64)):
    r = x[::-1]
    s = wp.float64(0.0)
    for i in range(r.shape[0]):
        s += r[i] * r[i] * wp.float64(i + 1)
    loss[0] = s


def test_gradients_flow_through_slices():
    x = np.array([0.5, -1.0, 2.0, 1.5])
    a = wp.array(x, dtype=wp.float64, requires_grad=True)
    loss = wp.zeros(1, dtype=wp.float64, requires_grad=True)
    tape = wp.Tape()
    with tape:
        wp.launch(k_reversed_weighted_sum, 1, [a, loss])
    tape.backward(loss=loss)
    weights = np.arange(len(x), 0, -1, dtype=np.float64)  # x[k] is r[n - 1 - k], weighted n - k
    np.testing.assert_allclose(loss.numpy()[0], np.sum(weights * x * x))
    np.testing.assert_allclose(a.grad.numpy(), 2.0 * weights * x)


@wp.kernel
def k_step(a: wp.array(dtype=float), step: int, out: wp.array(dtype=int)):
    out[0] = a[::step].shape[0]


@wp.kernel
def k_bad_row(a: wp.array2d(dtype=float), i: int, out: wp.array(dtype=int)):
    out[0] = a[i, 1:].shape[0]


def test_zero_steps_and_bad_integer_entries_raise():
    a = wp.zeros(4, dtype=float)
    out = wp.zeros(1, dtype=int)
    with pytest.raises(ValueError, match="slice step cannot be zero in kernel"):
        wp.launch(k_step, 1, [a, 0, out])
    wp.launch(k_step, 1, [a, -3, out])
    assert out.numpy()[0] == 2

    @wp.kernel(module="unique")
    def literal_zero(a: wp.array(dtype=float)):
        b = a[::0]

    with pytest.raises(wp.codegen.WarpCodegenValueError, match="Slice step cannot be zero"):
        wp.launch(literal_zero, 1, [a])
    with pytest.raises(IndexError, match="k_bad_row"):
        wp.launch(k_bad_row, 1, [wp.zeros((2, 3), dtype=float), 2, out])
