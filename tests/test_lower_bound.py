"""wp.lower_bound in kernels: the first element of a sorted range not less than a value, with
Warp's conventions (the last index of the range when every element is less), over several
element types, against NumPy's searchsorted."""

import numpy as np
import pytest

import weft as wp


@wp.kernel
def k_lower_bound(arr: wp.array(dtype=wp.float64), values: wp.array(dtype=wp.float64), out: wp.array(dtype=int)):
    i = wp.tid()
    out[i] = wp.lower_bound(arr, values[i])


@wp.kernel
def k_lower_bound_range(arr: wp.array(dtype=wp.int64), begin: int, end: int, values: wp.array(dtype=wp.int64), out: wp.array(dtype=int)):
    i = wp.tid()
    out[i] = wp.lower_bound(arr, begin, end, values[i])


@wp.kernel
def k_lower_bound_literal(arr: wp.array(dtype=float), out: wp.array(dtype=int)):
    out[0] = wp.lower_bound(arr, 2)  # an int literal searched in a float array
    out[1] = wp.lower_bound(arr, 2.5)


@wp.kernel
def k_lower_bound_out_of_range(arr: wp.array(dtype=float), out: wp.array(dtype=int)):
    out[0] = wp.lower_bound(arr, 0, 9, 1.0)


def expected(arr, values, begin, end):
    found = begin + np.searchsorted(arr[begin:end], values, side="left")
    return np.minimum(found, max(end - 1, begin))  # Warp's clamp to the range's last index


def test_matches_searchsorted_on_random_sorted_data():
    rng = np.random.default_rng(5)
    arr = np.sort(rng.uniform(-3.0, 3.0, 50))
    arr[10:14] = arr[10]  # repeated keys: the first of them
    values = np.concatenate([rng.uniform(-4.0, 4.0, 60), arr[[0, 10, 49]]])
    out = wp.zeros(len(values), dtype=int)
    wp.launch(k_lower_bound, len(values), [wp.array(arr), wp.array(values), out])
    np.testing.assert_array_equal(out.numpy(), expected(arr, values, 0, len(arr)))


@pytest.mark.parametrize("begin,end", [(0, 7), (2, 5), (3, 4), (4, 4)])
def test_sub_ranges_of_an_integer_array(begin, end):
    arr = np.array([1, 2, 2, 3, 8, 9, 10], dtype=np.int64)
    values = np.arange(0, 12, dtype=np.int64)
    out = wp.zeros(len(values), dtype=int)
    wp.launch(k_lower_bound_range, len(values), [wp.array(arr), begin, end, wp.array(values), out])
    np.testing.assert_array_equal(out.numpy(), expected(arr, values, begin, end))


def test_literal_values_take_the_element_type_and_reads_are_checked():
    arr = wp.array(np.array([0.0, 1.0, 2.0, 3.0], np.float32))
    out = wp.zeros(2, dtype=int)
    wp.launch(k_lower_bound_literal, 1, [arr, out])
    np.testing.assert_array_equal(out.numpy(), [2, 3])
    with pytest.raises(IndexError):
        wp.launch(k_lower_bound_out_of_range, 1, [arr, out])
