"""Python-side composite values (weft/vector_types.py): construction, arithmetic, indexing,
``len``, equality, ``repr``/``str``, NumPy conversion, matrices, quaternions, transforms and the
type factories. No kernels: these run in plain Python.

Expected values and formats are warp-lang 1.19's (checked with the team's warp-lang venv) unless
a comment says weft deliberately differs.
"""

import ctypes
import math
import re

import numpy as np
import pytest

import weft as wp

# ---------------------------------------------------------------------------------------------
# Types and factories


def test_public_names_and_factories():
    assert wp.vec3 is wp.vec3f and wp.mat33 is wp.mat33f and wp.quat is wp.quatf and wp.transform is wp.transformf
    assert wp.types.vector(length=3, dtype=wp.float32) is wp.vec3  # one cached class per parameter set
    assert wp.types.vector(3, wp.float64) is wp.vec3d
    assert wp.types.matrix(shape=(2, 2), dtype=wp.float32) is wp.mat22
    assert wp.types.vector(length=6, dtype=wp.float32) is wp.spatial_vector
    assert wp.types.matrix(shape=(6, 6), dtype=wp.float64) is wp.spatial_matrixd
    assert wp.types.vector(length=3, dtype=float) is wp.vec3
    assert wp.vec3i._scalar is wp.int32 and wp.vec3ui._scalar is wp.uint32 and wp.vec2h._scalar is wp.float16
    assert wp.vec4ub._scalar is wp.uint8 and wp.vec3l._scalar is wp.int64
    assert wp.vec3().__class__.__name__ == "vec3f" and wp.vec3d().__class__.__name__ == "vec3d"
    v5 = wp.types.vector(length=5, dtype=wp.float64)
    assert len(v5()) == 5 and v5._shape == (5,)
    m23 = wp.types.matrix(shape=(2, 3), dtype=wp.float32)
    assert m23._shape == (2, 3) and len(m23()) == 2


def test_ctypes_layout():
    """Instances are ctypes arrays of their components (they pass to kernels by value)."""
    assert ctypes.sizeof(wp.vec3) == 12 and ctypes.sizeof(wp.vec3d) == 24 and ctypes.sizeof(wp.mat33) == 36
    assert ctypes.sizeof(wp.quat) == 16 and ctypes.sizeof(wp.transform) == 28 and ctypes.sizeof(wp.vec3h) == 6


# ---------------------------------------------------------------------------------------------
# Construction


def test_vector_construction():
    assert list(wp.vec3(1, 2, 3)) == [1.0, 2.0, 3.0]
    assert list(wp.vec3(5)) == [5.0, 5.0, 5.0]  # fill
    assert list(wp.vec3()) == [0.0, 0.0, 0.0]
    assert list(wp.vec3([1, 2, 3])) == [1.0, 2.0, 3.0]
    assert list(wp.vec3((1, 2, 3))) == [1.0, 2.0, 3.0]
    assert list(wp.vec3(np.array([1.0, 2.0, 3.0]))) == [1.0, 2.0, 3.0]
    assert list(wp.vec3d(wp.vec3(1.5, 2.5, 3.5))) == [1.5, 2.5, 3.5]  # conversion
    assert list(wp.vec3(True)) == [1.0, 1.0, 1.0]
    assert list(wp.vec3i(1, 2, 3)) == [1, 2, 3] and isinstance(wp.vec3i(1, 2, 3)[0], int)
    assert wp.vec3(0.1)[0] == np.float32(0.1)  # stored as float32
    assert wp.vec3d(0.1)[0] == 0.1
    assert list(wp.vec3h(1.5, 2.0, -3.0)) == [1.5, 2.0, -3.0]
    with pytest.raises(ValueError):
        wp.vec3(1, 2)
    with pytest.raises(TypeError):
        wp.vec3("a", 1, 1)


def test_matrix_construction():
    m = wp.mat22(1, 2, 3, 4)
    assert m[0, 1] == 2.0 and m[1, 0] == 3.0
    assert np.array_equal(np.array(wp.mat22(5.0)).reshape(2, 2), np.full((2, 2), 5.0))
    assert np.array_equal(np.array(wp.mat22()).reshape(2, 2), np.zeros((2, 2)))
    rows = wp.mat22(wp.vec2(1, 2), wp.vec2(3, 4))  # vectors are rows
    assert rows == m
    assert wp.matrix_from_rows(wp.vec2(1, 2), wp.vec2(3, 4)) == m
    assert wp.matrix_from_cols(wp.vec2(1, 3), wp.vec2(2, 4)) == m
    assert wp.mat22(np.array([[1.0, 2.0], [3.0, 4.0]])) == m
    assert np.array_equal(np.array(wp.identity(3, dtype=wp.float64)).reshape(3, 3), np.eye(3))
    assert type(wp.identity(n=2, dtype=float)) is wp.mat22
    m23 = wp.types.matrix(shape=(2, 3), dtype=wp.float32)(1, 2, 3, 4, 5, 6)
    assert m23[1] == wp.vec3(4, 5, 6) and len(m23) == 2


def test_quaternion_and_transform_construction():
    assert list(wp.quat_identity()) == [0.0, 0.0, 0.0, 1.0]
    assert type(wp.quat_identity(dtype=wp.float64)) is wp.quatd
    t = wp.transform(wp.vec3(1, 2, 3), wp.quat(0, 0, 0, 1))
    assert list(t) == [1, 2, 3, 0, 0, 0, 1]
    assert wp.transform([1, 2, 3], [0, 0, 0, 1]) == t
    assert wp.transform(1, 2, 3, 0, 0, 0, 1) == t
    assert wp.transform_identity() == wp.transform((0, 0, 0), (0, 0, 0, 1))
    assert type(wp.transform_identity(dtype=wp.float64)) is wp.transformd
    s = wp.spatial_vector(1, 2, 3, 4, 5, 6)
    assert len(s) == 6 and s[3] == 4.0


# ---------------------------------------------------------------------------------------------
# Indexing, len, attribute access


def test_vector_indexing_and_len():
    v = wp.vec3(1, 2, 3)
    assert len(v) == 3 and len(wp.vec4()) == 4 and len(wp.quat()) == 4 and len(wp.transform()) == 7
    assert v[0] == 1.0 and v[-1] == 3.0 and v.x == 1.0 and v.y == 2.0 and v.z == 3.0
    assert v[1:] == wp.vec2(2, 3) and type(v[1:]) is wp.vec2  # a slice is a shorter vector
    assert list(v) == [1.0, 2.0, 3.0]
    with pytest.raises(IndexError):
        _ = v[3]
    with pytest.raises(IndexError):
        _ = v[-4]
    with pytest.raises(AttributeError):
        _ = v.w
    v[0] = 5
    v.y = 7
    v[-1] = 9
    assert list(v) == [5.0, 7.0, 9.0]
    with pytest.raises(IndexError):
        v[3] = 1.0
    q = wp.quat(1, 2, 3, 4)
    assert (q.x, q.y, q.z, q.w) == (1, 2, 3, 4) and q[3] == 4.0
    q.w = 0.5
    assert q[3] == 0.5


def test_matrix_indexing():
    m = wp.mat33(*range(9))
    assert len(m) == 3
    assert m[1] == wp.vec3(3, 4, 5) and type(m[1]) is wp.vec3  # m[i] is row i
    assert m[1, 2] == 5.0 and m[1][2] == 5.0 and m[-1, 0] == 6.0
    assert [list(r) for r in m] == [[0, 1, 2], [3, 4, 5], [6, 7, 8]]
    m[0, 1] = 10
    m[2] = wp.vec3(7, 7, 7)
    assert m[0] == wp.vec3(0, 10, 2) and m[2] == wp.vec3(7, 7, 7)
    assert m.get_col(0) == wp.vec3(0, 3, 7)


# ---------------------------------------------------------------------------------------------
# Arithmetic


def test_vector_arithmetic():
    a, b = wp.vec3(1, 2, 3), wp.vec3(0.5, -1, 2)
    assert a + b == wp.vec3(1.5, 1, 5) and type(a + b) is wp.vec3
    assert a - b == wp.vec3(0.5, 3, 1)
    assert a * 2.5 == wp.vec3(2.5, 5, 7.5) and 2.5 * a == wp.vec3(2.5, 5, 7.5)
    assert a / 2.0 == wp.vec3(0.5, 1, 1.5)
    assert 2.0 / a == wp.vec3(2.0, 1.0, np.float32(2.0 / 3.0))  # component-wise
    assert -a == wp.vec3(-1, -2, -3) and +a == a
    d = wp.vec3d(1, 2, 3) * 0.1
    assert type(d) is wp.vec3d and d[2] == 3 * 0.1  # float64 arithmetic stays float64
    f = wp.vec3(0.1, 0.2, 0.3) + wp.vec3(0.2, 0.2, 0.2)
    assert f[0] == np.float32(np.float32(0.1) + np.float32(0.2))  # results are stored as float32
    i = wp.vec3i(3, 4, 5)
    assert i + wp.vec3i(1, 1, 1) == wp.vec3i(4, 5, 6) and i * 2 == wp.vec3i(6, 8, 10)
    assert i / 2 == wp.vec3i(1, 2, 2) and type(i / 2) is wp.vec3i
    for bad in (lambda: a * b, lambda: a / b, lambda: a + 1, lambda: a @ b, lambda: a + (1, 1, 1)):
        with pytest.raises(TypeError):
            bad()


def test_matrix_arithmetic():
    m = wp.mat22(1, 2, 3, 4)
    n = wp.mat22(0, 1, 1, 0)
    M, N = np.array([[1.0, 2.0], [3.0, 4.0]]), np.array([[0.0, 1.0], [1.0, 0.0]])

    def arr(x):
        return np.array(x).reshape(x._shape)

    assert np.array_equal(arr(m @ n), M @ N) and np.array_equal(arr(m * n), M @ N)
    assert type(m @ n) is wp.mat22
    assert m @ wp.vec2(1, 1) == wp.vec2(3, 7) and m * wp.vec2(1, 1) == wp.vec2(3, 7)
    assert wp.vec2(1, 1) @ m == wp.vec2(4, 6) and wp.vec2(1, 1) * m == wp.vec2(4, 6)  # row vector
    assert np.array_equal(arr(m + n), M + N) and np.array_equal(arr(m - n), M - N)
    assert np.array_equal(arr(m * 2.0), 2 * M) and np.array_equal(arr(2.0 * m), 2 * M)
    assert np.array_equal(arr(m / 2.0), M / 2) and np.array_equal(arr(-m), -M)
    m23 = wp.types.matrix(shape=(2, 3), dtype=wp.float32)(1, 2, 3, 4, 5, 6)
    assert m23 @ wp.vec3(1, 0, 1) == wp.vec2(4, 10)
    assert wp.vec2(1, 1) @ m23 == wp.vec3(5, 7, 9)
    assert (m @ m23)._shape == (2, 3)


def test_quaternion_product():
    q = wp.quat(1, 2, 3, 4)
    assert q * q == wp.quat(8, 16, 24, 2)  # Hamilton product, (x, y, z, w) layout
    a = wp.quat(0, 0, math.sin(0.5), math.cos(0.5))  # rotation by 1 rad about z
    b = wp.quat(0, 0, math.sin(0.25), math.cos(0.25))  # 0.5 rad
    ab = a * b
    np.testing.assert_allclose(list(ab), [0, 0, math.sin(0.75), math.cos(0.75)], rtol=1e-6)
    assert q * 2.0 == wp.quat(2, 4, 6, 8) and q + q == wp.quat(2, 4, 6, 8) and -q == wp.quat(-1, -2, -3, -4)
    assert type(q * q) is wp.quat


def test_transform_parts_and_product():
    t = wp.transform(wp.vec3(1, 2, 3), wp.quat(0, 0, 0, 1))
    assert t.p == wp.vec3(1, 2, 3) and type(t.p) is wp.vec3
    assert t.q == wp.quat(0, 0, 0, 1) and type(t.q) is wp.quat
    assert t[0] == 1.0 and t[6] == 1.0
    t.p = wp.vec3(7, 8, 9)
    t.q = wp.quat(0, 0, 1, 0)
    assert list(t) == [7, 8, 9, 0, 0, 1, 0]
    # transform_multiply: (a.p + rotate(a.q, b.p), a.q * b.q); a half turn about z flips x and y
    b = wp.transform(wp.vec3(1, 2, 3), wp.quat(0, 0, 0, 1))
    c = t * b
    assert type(c) is wp.transform
    np.testing.assert_allclose(list(c), [6, 6, 12, 0, 0, 1, 0], atol=1e-6)
    assert wp.transform((1, 2, 3), (0, 0, 0, 1)) * wp.transform((1, 2, 3), (0, 0, 0, 1)) == wp.transform(
        (2, 4, 6), (0, 0, 0, 1)
    )


# ---------------------------------------------------------------------------------------------
# Equality, repr/str, NumPy conversion


def test_equality():
    v = wp.vec3(1, 2, 3)
    assert v == wp.vec3(1, 2, 3) and v == (1, 2, 3) and v == [1, 2, 3] and v == np.array([1.0, 2.0, 3.0])
    assert v == wp.vec3d(1, 2, 3)  # values compare, not types
    assert v != wp.vec3(1, 2, 4) and (v == (1, 2)) is False and v != "abc"
    assert wp.mat22(1, 2, 3, 4) == [[1, 2], [3, 4]] and wp.mat22(1, 2, 3, 4) != wp.mat22()
    with pytest.raises(TypeError):
        hash(v)  # mutable, so unhashable (like Warp)


def test_repr_and_str():
    assert repr(wp.vec3(1, 2, 3)) == "vec3f([1.0, 2.0, 3.0])"  # Warp's format
    assert str(wp.vec3(1, 2, 3)) == "[1.0, 2.0, 3.0]"
    assert repr(wp.vec3i(1, 2, 3)) == "vec3i([1, 2, 3])"
    assert repr(wp.quat(0, 0, 0, 1)) == "quatf([0.0, 0.0, 0.0, 1.0])"
    assert repr(wp.transform((1, 2, 3), (0, 0, 0, 1))) == "transformf([1.0, 2.0, 3.0, 0.0, 0.0, 0.0, 1.0])"
    assert str(wp.mat22(1, 2, 3, 4)) == "[[1.0, 2.0],\n [3.0, 4.0]]"
    # weft shows matrix values (Warp 1.19's repr is the default <... object at 0x...>)
    assert repr(wp.mat22(1, 2, 3, 4)) == "mat22f([[1.0, 2.0], [3.0, 4.0]])"


def test_numpy_conversion():
    v = np.array(wp.vec3(1, 2, 3))
    assert v.dtype == np.float32 and v.shape == (3,) and v.tolist() == [1.0, 2.0, 3.0]
    assert np.array(wp.vec3d(1, 2, 3)).dtype == np.float64
    assert np.array(wp.vec3i(1, 2, 3)).dtype == np.int32
    m = wp.mat22(1, 2, 3, 4)
    assert np.array(m).reshape(2, 2).tolist() == [[1, 2], [3, 4]]
    assert m.numpy().shape == (2, 2) and wp.vec3(1, 2, 3).numpy().shape == (3,)
    assert wp.mat22(1, 2, 3, 4).list() == [[1.0, 2.0], [3.0, 4.0]]
    assert np.asarray(wp.vec3(1, 2, 3), dtype=np.float64).dtype == np.float64
    a = wp.array([wp.vec3(1, 2, 3), wp.vec3(4, 5, 6)], dtype=wp.vec3)
    assert a.numpy().tolist() == [[1, 2, 3], [4, 5, 6]]


def test_builtins_callable_from_python():
    v = wp.vec3(1, 2, 3)
    assert wp.dot(v, v) == 14.0
    assert wp.cross(v, wp.vec3(0, 0, 1)) == wp.vec3(2, -1, 0)
    np.testing.assert_allclose(wp.length(v), math.sqrt(14), rtol=1e-6)
    assert wp.transpose(wp.mat22(1, 2, 3, 4)) == wp.mat22(1, 3, 2, 4)


def test_dtype_conversions_with_numpy():
    assert wp.dtype_from_numpy(np.float32) is wp.float32 and wp.dtype_from_numpy(np.dtype("int64")) is wp.int64
    assert wp.dtype_from_numpy(np.bool_) is wp.bool and wp.dtype_to_numpy(wp.uint16) is np.uint16
    assert wp.types.np_dtype_to_warp_type[np.dtype(np.float16)] is wp.float16
    assert wp.types.warp_type_to_np_dtype[wp.float64] is np.float64
    for t in wp.types.scalar_types:
        if t is wp.bfloat16 and wp.dtype_to_numpy(t) is np.uint16:
            continue  # without ml_dtypes bfloat16's NumPy dtype is the uint16 of its bits, as in Warp
        assert wp.dtype_from_numpy(wp.dtype_to_numpy(t)) is t
    with pytest.raises(TypeError, match="complex64"):
        wp.dtype_from_numpy(np.complex64)
    with pytest.raises(TypeError):
        wp.dtype_to_numpy(wp.vec3)


_vec3d_anon = wp.types.vector(length=3, dtype=wp.float64)


@wp.kernel
def _casting_constructors(
    v: wp.array(dtype=wp.vec3h), q: wp.array(dtype=wp.quatd), qf: wp.array(dtype=wp.quat), m: wp.array(dtype=wp.mat22h)
):
    v1 = _vec3d_anon(wp.float64(1.5), wp.float64(2.0), wp.float64(3.0))
    v[0] = wp.types.vector(v1, dtype=wp.float16)  # one composite argument: converted, its length kept
    q1 = wp.types.quaternion(wp.float64(0.0), wp.float64(0.0), wp.float64(0.0), wp.float64(1.0))
    q[0] = q1  # the component type comes from the arguments
    qf[0] = wp.types.quaternion(q1, dtype=wp.float32)
    qf[1] = wp.types.quaternion(wp.types.vector(1.0, 2.0, 3.0), 4.0)
    m[0] = wp.types.matrix(wp.mat22(1.0, 2.0, 3.0, 4.0), dtype=wp.float16)


def test_generic_constructors_convert_and_infer_in_kernels():
    v = wp.zeros(1, dtype=wp.vec3h)
    q = wp.zeros(1, dtype=wp.quatd)
    qf = wp.zeros(2, dtype=wp.quat)
    m = wp.zeros(1, dtype=wp.mat22h)
    wp.launch(_casting_constructors, 1, [v, q, qf, m])
    assert v.numpy().tolist() == [[1.5, 2.0, 3.0]] and q.numpy().tolist() == [[0.0, 0.0, 0.0, 1.0]]
    assert qf.numpy().tolist() == [[0.0, 0.0, 0.0, 1.0], [1.0, 2.0, 3.0, 4.0]]
    assert m.numpy().tolist() == [[[1.0, 2.0], [3.0, 4.0]]]


def test_host_remainder_of_composites_is_component_wise():
    vi = wp.types.vector(3, wp.int8)
    assert (vi(1, -2, 3) % vi(2, 2, 2)) == vi(1, 0, 1) and (vi(7, -7, 1) % wp.int8(3)) == vi(1, -1, 1)
    assert (vi(5, 5, 5) % vi(0, 2, 3)) == vi(0, 1, 2)  # x % 0 is 0 for integers, as in kernels
    assert (wp.vec3(7.5, -7.5, 1.0) % 2.0) == wp.vec3(1.5, -1.5, 1.0)  # fmod for floats


_vec1f = wp.types.vector(1, float)
_vec2f = wp.types.vector(2, float)
_mat23f = wp.types.matrix((2, 3), float)


@wp.kernel
def _slices(out: wp.array(dtype=float)):
    v = wp.vec4(1.0, 2.0, 3.0, 4.0)
    out[0] = wp.where(v[1:] == wp.vec3(2.0, 3.0, 4.0), 1.0, 0.0)
    out[1] = wp.where(v[::-2] == _vec2f(4.0, 2.0), 1.0, 0.0)
    out[2] = wp.where(v[1::-2] == _vec1f(2.0), 1.0, 0.0)
    v[::-1] = wp.vec4(19.0, 20.0, 21.0, 22.0)
    v[1:] += wp.vec3(1.0, 1.0, 1.0)
    out[3] = wp.where(v == wp.vec4(22.0, 22.0, 21.0, 20.0), 1.0, 0.0)
    m = wp.mat33(1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0, 9.0)
    out[4] = wp.where(m[1, :] == wp.vec3(4.0, 5.0, 6.0) and m[:, 1] == wp.vec3(2.0, 5.0, 8.0), 1.0, 0.0)
    out[5] = wp.where(m[1:] == _mat23f(4.0, 5.0, 6.0, 7.0, 8.0, 9.0), 1.0, 0.0)
    m[:, 0] = wp.vec3(0.0, 0.0, 0.0)
    out[6] = m[0, 0] + m[1, 0] + m[2, 0] + m[2, 2]
    q = wp.quat(1.0, 2.0, 3.0, 4.0)
    out[7] = wp.where(q[1:3] == _vec2f(2.0, 3.0), 1.0, 0.0)
    out[8] = float(wp.static(len(v) + len(m)))


@wp.kernel
def _slice_gradients(arr_x: wp.array(dtype=wp.vec2), arr_y: wp.array(dtype=wp.vec4)):
    i = wp.tid()
    y = arr_y[i]
    y[:2] = arr_x[i]
    y[1:-1] += arr_x[i][:2]
    y[3:1:-1] -= arr_x[i][0:]
    arr_y[i] = y


def test_slices_of_vectors_matrices_and_quaternions_in_kernels():
    out = wp.zeros(9, dtype=float)
    wp.launch(_slices, 1, [out])
    assert out.numpy().tolist() == [1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 9.0, 1.0, 7.0]
    x = wp.array([[1.0, 2.0]], dtype=wp.vec2, requires_grad=True)
    y = wp.zeros(1, dtype=wp.vec4, requires_grad=True)
    tape = wp.Tape()
    with tape:
        wp.launch(_slice_gradients, 1, [x, y])
    assert y.numpy().tolist() == [[1.0, 3.0, 0.0, -1.0]]
    tape.backward(grads={y: wp.array([[1.0, 10.0, 100.0, 1000.0]], dtype=wp.vec4)})
    # y0 = x0; y1 = x1 + x0; y2 = x1 - x1; y3 = -x0 (the reversed slice)
    assert x.grad.numpy().tolist() == [[1.0 + 10.0 - 1000.0, 10.0]]


def test_a_slice_assignment_needs_the_slices_shape():
    @wp.kernel(module="unique")
    def wrong_length():
        v = wp.vec4(1.0, 2.0, 3.0, 4.0)
        v[1:] = wp.vec2(5.0, 6.0)

    with pytest.raises(wp.codegen.WarpCodegenValueError, match="isn't compatible with the given slice"):
        wp.launch(wrong_length, 1, [])


def test_host_indexing_errors_name_the_key_and_the_value():
    v = wp.vec3i(1, 2, 3)
    with pytest.raises(KeyError, match="Invalid key None, expected int or slice"):
        v[None]
    with pytest.raises(TypeError, match="Expected to assign a `int32` value but got `str` instead"):
        v[0] = "1"
    with pytest.raises(ValueError, match="Can only assign sequence of same size"):
        v[:1] = (1, 2)
    v[1:] = (7, 8)
    assert v == wp.vec3i(1, 7, 8)
    m = wp.mat22h(1, 2, 3, 4)
    with pytest.raises(KeyError, match="expected one or two indices, got 3"):
        m[0, 1, 2]
    with pytest.raises(KeyError, match="expected int or pair of ints"):
        m[None] = 0
    with pytest.raises(IndexError, match="Invalid row index"):
        m.set_row(2, (0, 0))
    m[0, 1] = 7
    m[1] = (5, 6)
    assert m == wp.mat22h(1, 7, 5, 6)


def test_transform_constructor_defaults_to_the_identity_and_takes_named_parts():
    assert list(wp.transform()) == [0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 1.0]
    assert list(wp.transformd()) == [0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 1.0]
    assert list(wp.transform(p=(1.0, 2.0, 3.0))) == [1.0, 2.0, 3.0, 0.0, 0.0, 0.0, 1.0]
    assert list(wp.transform(q=(4.0, 5.0, 6.0, 7.0), p=(1.0, 2.0, 3.0))) == [1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0]
    assert list(wp.transform((1.0, 2.0, 3.0), q=(4.0, 5.0, 6.0, 7.0))) == [1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0]
    with pytest.raises(TypeError, match="^got an unexpected keyword argument 'pos'$"):
        wp.transform(pos=wp.vec3(), rot=wp.quat())


def test_host_arithmetic_refuses_mixed_scalar_types_as_kernels_do():
    for f, words in [
        (lambda: wp.mat22f(1.0, 2.0, 3.0, 4.0) * wp.mat22d(1.0, 2.0, 3.0, 4.0), "'mul' compatible with the arguments 'mat22f, mat22d'"),
        (lambda: wp.vec3f(1.0, 2.0, 3.0) + wp.vec3d(1.0, 2.0, 3.0), "'add' compatible with the arguments 'vec3f, vec3d'"),
        (lambda: wp.vec3f(1.0, 2.0, 3.0) * wp.float64(2.0), "'mul' compatible with the arguments 'vec3f, float64'"),
        (lambda: wp.quatd() * wp.quatf(), "'mul' compatible with the arguments 'quatd, quatf'"),
    ]:
        with pytest.raises(RuntimeError, match=words):
            f()
    assert wp.vec3d(1.0, 2.0, 3.0) * 2.0 == wp.vec3d(2.0, 4.0, 6.0)  # Python numbers mix with any type
    assert wp.vec3(1.0, 2.0, 3.0) * wp.float32(2.0) == wp.vec3(2.0, 4.0, 6.0)


def test_composite_types_carry_warps_metadata():
    assert wp.vec3._wp_generic_type_str_ == "vec_t" and wp.vec3._wp_type_params_ == (3, wp.float32)
    m = wp.types.matrix((2, 3), wp.float64)
    assert m._wp_generic_type_str_ == "mat_t" and m._wp_type_params_ == (2, 3, wp.float64)
    assert wp.quath._wp_generic_type_str_ == "quat_t" and wp.quath._wp_type_params_ == (wp.float16,)
    assert wp.transformd._wp_generic_type_str_ == "transform_t" and wp.transformd._wp_scalar_type_ is wp.float64


@pytest.mark.fixed_device("reads host memory at an address")
def test_from_ptr_copies_the_value_at_an_address():
    a = wp.array([[1, 2, 3], [4, 5, 6]], dtype=wp.vec3)
    v = wp.vec3.from_ptr(a.ptr + 12)
    assert v == wp.vec3(4.0, 5.0, 6.0)
    a.zero_()
    assert v == wp.vec3(4.0, 5.0, 6.0)  # a copy, not a view
    with pytest.raises(RuntimeError, match="NULL pointer exception"):
        wp.mat22.from_ptr(0)


def test_host_constructor_errors_use_warps_words():
    with pytest.raises(ValueError, match=r"Invalid number of arguments in vector constructor, expected 3 elements, got 2$"):
        wp.vec3(1.0, 2.0)
    with pytest.raises(ValueError, match=r"Invalid number of arguments in matrix constructor, expected 4 elements, got 3$"):
        wp.mat22(1.0, 2.0, 3.0)
    with pytest.raises(TypeError, match=r"expected row of length 2, got \(1, 2, 3\)$"):
        wp.mat22((1, 2, 3), (4, 5, 6))
    assert wp.mat22((1, 2), (3, 4)) == wp.mat22(1.0, 2.0, 3.0, 4.0)


def _compile_error(body):
    k = wp.kernel(body, module="unique")
    with pytest.raises(wp.codegen.WarpCodegenError) as info:
        wp.launch(k, dim=1)
    return str(info.value)


def test_kernel_constructor_errors_end_with_warps_words():
    def vector_without_length():
        wp.types.vector()

    def too_few_values():
        wp.types.vector(1.0, 2.0, length=5)

    def mixed_types():
        x = wp.float64(1.0)
        wp.vec2(x, x)

    def matrix_fill_type():
        x = wp.float32(1.0)
        wp.types.matrix(x, shape=(3, 2), dtype=wp.float16)

    def matrix_without_shape():
        wp.types.matrix(1.0, 2.0, 3.0)

    def unequal_expect():
        wp.expect_neq(wp.vec3f(0.0, 0.0, 0.0), wp.vec2f(0.0, 0.0))

    def slice_of_other_dtype():
        v = wp.vec4(1.0, 2.0, 3.0, 4.0)
        v[1:] = wp.vec3d(5.0, 6.0, 7.0)

    def slice_of_other_length():
        v = wp.vec4(1.0, 2.0, 3.0, 4.0)
        v[1:] = wp.vec2(5.0, 6.0)

    cases = {
        vector_without_length: r"the `length` argument must be specified when zero-initializing a vector$",
        too_few_values: r"incompatible number of values given \(2\) when constructing a vector of length 5$",
        mixed_types: r"cast it \(e.g. float32\(x\)\): all values used to initialize this vector are expected to be of the type `float32`$",
        matrix_fill_type: r"the value used to fill this matrix is expected to be of the type `float16`$",
        matrix_without_shape: r"the `shape` argument must be specified when initializing a matrix by value$",
        unequal_expect: r"Can't test equality for objects with different types$",
        slice_of_other_dtype: r"The provided vector is expected to be of length 3 with dtype float32.$",
        slice_of_other_length: r"The length of the provided vector \(2\) isn't compatible with the given slice \(expected 3\).$",
    }
    for body, pattern in cases.items():
        assert re.search(pattern, _compile_error(body)), (body.__name__, _compile_error(body))


def test_composites_take_array_likes():
    class ArrayLike:  # what a torch tensor or JAX array offers: a length and __array__
        def __init__(self, values):
            self.values = np.asarray(values)

        def __len__(self):
            return len(self.values)

        def __array__(self, dtype=None, copy=None):
            return self.values if dtype is None else self.values.astype(dtype)

    assert wp.vec3(ArrayLike([1.0, 2.0, 3.0])) == wp.vec3(1.0, 2.0, 3.0)
    assert wp.mat22(ArrayLike([[1.0, 2.0], [3.0, 4.0]])) == wp.mat22(1.0, 2.0, 3.0, 4.0)


def test_transform_constructor_forms_and_errors():
    T = wp.transform
    assert list(T()) == [0, 0, 0, 0, 0, 0, 1] and list(T(1.5)) == [1.5] * 7
    assert list(T((1, 2, 3), q=(0, 0, 1, 0))) == [1, 2, 3, 0, 0, 1, 0] == list(T(p=(1, 2, 3), q=(0, 0, 1, 0)))
    assert list(T(wp.vec3(1, 2, 3), wp.quat(0, 0, 0, 1))) == [1, 2, 3, 0, 0, 0, 1] == list(T(*[1, 2, 3, 0, 0, 0, 1]))
    with pytest.raises(TypeError, match="expected a scalar value, got object$"):
        T(object())
    with pytest.raises(TypeError, match="Invalid argument 'p' in transformation constructor: expected a sequence, got float$"):
        T(1.5, 2.5)
    with pytest.raises(TypeError, match="Invalid argument 'q' in transformation constructor: expected a sequence, got float$"):
        T((1.0, 2.0, 3.0), 1.0)
    with pytest.raises(TypeError, match="Invalid argument 'q'"):
        T(q=1.0)
    with pytest.raises(TypeError, match="^multiple values for argument 'q'$"):
        T(*range(7), q=(8, 9, 10, 11))
    with pytest.raises(TypeError, match="^got an unexpected keyword argument 'pos'$"):
        T(*range(7), pos=(1, 2, 3))
