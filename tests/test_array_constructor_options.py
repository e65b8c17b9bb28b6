"""Constructor options Warp programs use: ``strides=`` for empty/zeros (a column-major layout
seen through NumPy), and Warp's older ``n=`` for a 1-d shape."""

import numpy as np

import weft as wp


def test_zeros_with_strides_is_a_column_major_array():
    a = wp.zeros((2, 3), dtype=wp.float32, strides=(4, 8))
    assert a.shape == (2, 3) and a.strides == (4, 8) and not a.is_contiguous
    a.assign(np.arange(6, dtype=np.float32).reshape(2, 3))
    np.testing.assert_array_equal(a.numpy(), np.arange(6).reshape(2, 3))
    np.testing.assert_array_equal(a.contiguous().numpy(), np.arange(6).reshape(2, 3))
    e = wp.empty((3, 2), dtype=wp.float64, strides=(8, 24))
    assert e.strides == (8, 24)


def test_n_is_a_one_dimensional_shape():
    assert wp.zeros(n=5, dtype=wp.vec2).shape == (5,)
    assert wp.empty(n=3).shape == (3,)


def test_column_vectors_fill_vector_arrays():
    x = np.arange(12, dtype=np.float32).reshape(4, 3, 1)  # (n, 3, 1), as np.matmul results come
    a = wp.array(x, dtype=wp.vec3)
    assert a.shape == (4,)
    np.testing.assert_array_equal(a.numpy(), x[..., 0])


def test_negative_and_huge_shapes_are_refused():
    import pytest

    for shape in (-1, (10, -1), -(2**32)):
        with pytest.raises(ValueError, match="Array shapes must be non-negative"):
            wp.zeros(shape=shape, dtype=int)
    with pytest.raises(ValueError, match="every dimension must be in"):
        wp.zeros(shape=2**31, dtype=wp.int8)


def test_strides_must_match_the_dimensions():
    import pytest

    with pytest.raises(ValueError, match="Invalid number of strides, expected 2 strides, got 1"):
        wp.empty((0, 3), dtype=wp.int32, strides=(4,))
