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


@wp.struct
class WithArrays:
    i: int
    a1: wp.array(dtype=int)
    a2: wp.array2d(dtype=float)


def test_struct_arrays_fill_with_zero_and_list_their_array_fields():
    s = WithArrays()
    s.i = 4
    s.a1 = wp.array([1, 2, 3], dtype=int)
    s.a2 = wp.zeros((2, 5), dtype=float)
    a = wp.full(3, s, dtype=WithArrays)
    items = a.list()
    assert [x.i for x in items] == [4, 4, 4]
    assert items[1].a1.ptr == s.a1.ptr and items[1].a1.numpy().tolist() == [1, 2, 3]  # the same memory
    assert items[2].a2.shape == (2, 5) and items[2].a2.dtype is wp.float32
    a.fill_(0)
    assert a.list()[0].i == 0 and a.list()[0].a1 is None  # a null array field
