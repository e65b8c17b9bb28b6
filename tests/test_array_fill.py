"""array.fill_ / wp.full with vector, matrix and struct values: the values' numbers, never their
storage bits (float16 vectors), matrices given flat, struct instances as records."""

import numpy as np

import weft as wp


def test_fill_with_a_half_precision_vector_stores_its_values():
    a = wp.zeros(3, dtype=wp.vec2h)
    a.fill_(wp.vec2h(17.0, 42.0))
    np.testing.assert_array_equal(a.numpy(), np.tile(np.float16([17.0, 42.0]), (3, 1)))
    m = wp.full(2, wp.mat22h(1.0, 2.0, 3.0, 4.0), dtype=wp.mat22h)
    np.testing.assert_array_equal(m.numpy()[1], np.float16([[1, 2], [3, 4]]))


def test_fill_a_matrix_array_with_flat_row_major_values():
    a = wp.zeros((2, 2), dtype=wp.types.matrix((2, 3), wp.float32))
    a.fill_(np.arange(6, dtype=np.float32))
    np.testing.assert_array_equal(a.numpy()[1, 0], np.arange(6, dtype=np.float32).reshape(2, 3))
    a.fill_([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]])
    np.testing.assert_array_equal(a.numpy()[0, 1], [[1, 2, 3], [4, 5, 6]])


@wp.struct
class Body:
    mass: wp.float64
    vel: wp.vec3h
    tag: wp.int8


def test_fill_a_struct_array_with_an_instance():
    b = Body()
    b.mass = 2.5
    b.vel = wp.vec3h(0.5, -1.0, 8.0)
    b.tag = 7
    a = wp.zeros(4, dtype=Body)
    a.fill_(b)
    rec = a.numpy()
    np.testing.assert_array_equal(rec["mass"], [2.5] * 4)
    np.testing.assert_array_equal(rec["vel"][3], np.float16([0.5, -1.0, 8.0]))
    assert a.list()[2].tag == 7
    # Warp's record helpers: the dtype as a dict NumPy builds it from, an instance as a tuple
    assert np.dtype(Body.numpy_dtype()) == Body.np_dtype
    assert Body.numpy_dtype()["names"] == ["mass", "vel", "tag"]
    row = np.array([b.numpy_value()], dtype=Body.numpy_dtype())
    assert row["mass"][0] == 2.5 and row["tag"][0] == 7


def test_full_infers_the_dtype_from_composite_struct_and_sequence_values():
    m = wp.full(2, wp.mat22h(1.0, 2.0, 3.0, 4.0))
    assert m.dtype is wp.mat22h and m.numpy()[1].tolist() == [[1.0, 2.0], [3.0, 4.0]]
    b = Body()
    b.tag = 3
    s = wp.full(3, b)
    assert s.dtype is Body and [r.tag for r in s.list()] == [3, 3, 3]
    v = wp.full((2, 2), [1.5, 2.5, 3.5])  # a sequence: a vector of its NumPy type, as in Warp
    assert v.dtype is wp.types.vector(3, wp.float64) and v.shape == (2, 2)
    np.testing.assert_array_equal(v.numpy()[1, 0], [1.5, 2.5, 3.5])
