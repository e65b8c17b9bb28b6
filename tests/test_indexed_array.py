"""wp.indexedarray: arrays seen through per-dimension index arrays, on the host and in kernels
(reads, writes, atomics, subarrays, gradients), checked against NumPy's fancy indexing."""

from typing import Any, Literal

import numpy as np
import pytest

import weft as wp


def ids(values):
    return wp.array(np.asarray(values, np.int32), dtype=wp.int32)


def np_indexed(x, index_lists):
    """NumPy's view of ``x`` through per-dimension index lists (None: the whole dimension)."""
    out = x
    for d, idx in enumerate(index_lists):
        if idx is not None:
            out = np.take(out, idx, axis=d)
    return out


@wp.kernel
def k_scale_1d(a: wp.indexedarray(dtype=float), s: float):
    i = wp.tid()
    a[i] = a[i] * s


@wp.kernel
def k_add_2d(a: wp.indexedarray2d(dtype=float), out: wp.array2d(dtype=float)):
    i, j = wp.tid()
    out[i, j] = a[i, j]
    a[i, j] += 100.0


@wp.kernel
def k_count(a: wp.indexedarray(dtype=wp.int32)):
    i = wp.tid()
    wp.atomic_add(a, i, 1)


@wp.kernel
def k_inc_any(a: Any):
    i, j, k = wp.tid()
    a[i, j, k] = a[i, j, k] + 1


@wp.kernel
def k_inc_4d(a: wp.indexedarray4d(dtype=wp.int32)):
    i, j, k, l = wp.tid()
    a[i, j, k, l] = a[i, j, k, l] + 1


@wp.kernel
def k_row_sums(a: wp.indexedarray2d(dtype=float), out: wp.array(dtype=float)):
    i = wp.tid()
    row = a[i]  # an indexed subarray
    s = float(0.0)
    for j in range(len(row)):
        s += row[j]
    out[i] = s


@wp.kernel
def k_shapes(a: wp.indexedarray3d(dtype=float), out: wp.array(dtype=int)):
    out[0] = a.shape[0]
    out[1] = a.shape[1]
    out[2] = a.shape[2]
    plane = a[1]
    out[3] = plane.shape[0]
    out[4] = len(a[0, 1])


@wp.kernel
def k_sum_squares(a: wp.indexedarray(dtype=wp.float64), loss: wp.array(dtype=wp.float64)):
    i = wp.tid()
    wp.atomic_add(loss, 0, a[i] * a[i] * wp.float64(0.5) + wp.sin(a[i]))


@wp.kernel
def k_read(a: wp.indexedarray(dtype=float), i: int, out: wp.array(dtype=float)):
    out[0] = a[i]  # IA:read


def test_shape_and_numpy_follow_the_indices():
    x = np.arange(60, dtype=np.float32).reshape(3, 4, 5)
    data = wp.array(x)
    a = wp.indexedarray(data, [ids([2, 0]), None, ids([4, 4, 1])])
    assert a.shape == (2, 4, 3) and a.ndim == 3 and a.size == 24 and len(a) == 2
    assert a.dtype is wp.float32 and a.device is data.device
    np.testing.assert_array_equal(a.numpy(), np_indexed(x, [[2, 0], None, [4, 4, 1]]))
    single = wp.indexedarray(data, ids([1]))  # one index array: the first dimension
    assert single.shape == (1, 4, 5)
    whole = wp.indexedarray(data)
    np.testing.assert_array_equal(whole.numpy(), x)


def test_construction_errors():
    data = wp.zeros((3, 3), dtype=float)
    with pytest.raises(ValueError, match="int32"):
        wp.indexedarray(data, [wp.array([0, 1], dtype=wp.int64)])
    with pytest.raises(ValueError, match="one-dimensional"):
        wp.indexedarray(data, [wp.zeros((2, 2), dtype=wp.int32)])
    with pytest.raises(ValueError, match="exceeds"):
        wp.indexedarray(data, [None, None, ids([0])])
    with pytest.raises(ValueError, match="dtype"):
        wp.indexedarray(data, dtype=wp.float64)
    with pytest.raises(ValueError, match="dimensionality"):
        wp.indexedarray1d(data)
    with pytest.raises(ValueError, match="Warp array"):
        wp.indexedarray(np.zeros(3))


def test_annotations_by_call_and_subscript_are_equal():
    assert wp.indexedarray[float] == wp.indexedarray(dtype=wp.float32)
    assert wp.indexedarray[wp.vec3, Literal[2]] == wp.indexedarray2d(dtype=wp.vec3)
    assert hash(wp.indexedarray[float]) == hash(wp.indexedarray1d(dtype=float))
    assert wp.indexedarray[float] != wp.array[float]
    assert wp.array[float, Literal[3]] == wp.array3d(dtype=float)
    assert wp.array[float] != wp.array[float, 2]


def test_array_indexing_with_index_arrays_makes_an_indexed_array():
    x = np.arange(1000, dtype=np.int32).reshape(10, 10, 10)
    data = wp.array(x)
    I = ids([7, 0, 3])
    a = data[I, 2:5, I]
    assert isinstance(a, wp.indexedarray)
    np.testing.assert_array_equal(a.numpy(), x[np.ix_([7, 0, 3], [2, 3, 4], [7, 0, 3])])
    b = data[4, I]  # an integer drops its dimension first
    np.testing.assert_array_equal(b.numpy(), x[4][[7, 0, 3]])
    np.testing.assert_array_equal(data[I].numpy(), wp.indexedarray(data, [I]).numpy())


def test_kernels_read_and_write_through_the_indices():
    x = np.arange(8, dtype=np.float32)
    data = wp.array(x)
    wp.launch(k_scale_1d, 3, [wp.indexedarray(data, ids([6, 1, 3])), 2.0])
    expected = x.copy()
    expected[[6, 1, 3]] *= 2.0
    np.testing.assert_array_equal(data.numpy(), expected)

    y = np.arange(20, dtype=np.float32).reshape(4, 5)
    data2 = wp.array(y)
    a = wp.indexedarray(data2, [ids([3, 1]), ids([0, 4, 2])])
    out = wp.zeros((2, 3), dtype=float)
    wp.launch(k_add_2d, a.shape, [a, out])
    np.testing.assert_array_equal(out.numpy(), y[np.ix_([3, 1], [0, 4, 2])])
    y[np.ix_([3, 1], [0, 4, 2])] += 100.0
    np.testing.assert_array_equal(data2.numpy(), y)


def test_atomics_accumulate_repeated_indices():
    counts = wp.zeros(4, dtype=wp.int32)
    wp.launch(k_count, 6, [wp.indexedarray(counts, ids([2, 0, 2, 2, 3, 0]))])
    np.testing.assert_array_equal(counts.numpy(), [2, 0, 3, 1])


def test_a_generic_kernel_takes_arrays_and_indexed_arrays():
    data = wp.zeros((4, 4, 4), dtype=wp.int32)
    wp.launch(k_inc_any, data.shape, [data])
    a = wp.indexedarray(data, [ids([0, 3]), None, ids([1])])
    wp.launch(k_inc_any, a.shape, [a])
    expected = np.ones((4, 4, 4), np.int32)
    expected[np.ix_([0, 3], range(4), [1])] += 1
    np.testing.assert_array_equal(data.numpy(), expected)


def test_four_dimensional_indexed_arrays():
    data = wp.zeros((3, 3, 3, 3), dtype=wp.int32)
    picks = [[0, 2], None, [1], [2, 0]]
    a = wp.indexedarray(data, [ids(p) if p is not None else None for p in picks])
    wp.launch(k_inc_4d, a.shape, [a])
    expected = np.zeros((3, 3, 3, 3), np.int32)
    expected[np.ix_([0, 2], range(3), [1], [2, 0])] = 1
    np.testing.assert_array_equal(data.numpy(), expected)


def test_subarrays_and_shapes_in_kernels():
    x = np.random.default_rng(1).random((5, 6)).astype(np.float32)
    a = wp.indexedarray(wp.array(x), [ids([4, 0, 2]), ids([5, 1])])
    out = wp.zeros(3, dtype=float)
    wp.launch(k_row_sums, 3, [a, out])
    np.testing.assert_allclose(out.numpy(), x[np.ix_([4, 0, 2], [5, 1])].sum(axis=1), rtol=1e-6)

    b = wp.indexedarray(wp.zeros((3, 4, 5), dtype=float), [None, ids([0, 2])])
    shapes = wp.zeros(5, dtype=int)
    wp.launch(k_shapes, 1, [b, shapes])
    np.testing.assert_array_equal(shapes.numpy(), [3, 2, 5, 2, 5])


def test_gradients_flow_into_the_data_array():
    x = np.linspace(-1.0, 2.0, 6)
    picks = [5, 1, 1, 3]  # index 1 twice: its gradient counts twice

    def loss_of(values, grad=False):
        data = wp.array(values, dtype=wp.float64, requires_grad=grad)
        loss = wp.zeros(1, dtype=wp.float64, requires_grad=grad)
        tape = wp.Tape()
        with tape:
            wp.launch(k_sum_squares, len(picks), [wp.indexedarray(data, ids(picks)), loss])
        if grad:
            tape.backward(loss=loss)
            return data.grad.numpy()
        return loss.numpy()[0]

    expected = np.zeros_like(x)
    for p in picks:
        expected[p] += x[p] + np.cos(x[p])
    g = loss_of(x, grad=True)
    np.testing.assert_allclose(g, expected, rtol=1e-12)
    eps = 1e-6
    fd = [(loss_of(x + eps * e) - loss_of(x - eps * e)) / (2 * eps) for e in np.eye(len(x))]
    np.testing.assert_allclose(g, fd, rtol=1e-6, atol=1e-9)


def test_indices_are_bounds_checked_on_both_levels():
    data = wp.array(np.arange(5, dtype=np.float32))
    out = wp.zeros(1, dtype=float)
    with pytest.raises(IndexError, match=r"index 2 is out of bounds for an array of shape \(2,\).*k_read"):
        wp.launch(k_read, 1, [wp.indexedarray(data, ids([1, 3])), 2, out])
    with pytest.raises(IndexError, match=r"index 9 is out of bounds for an array of shape \(5,\)"):
        wp.launch(k_read, 1, [wp.indexedarray(data, ids([1, 9])), 1, out])  # a bad index buffer
    wp.launch(k_read, 1, [wp.indexedarray(data, ids([1, 3])), -1, out])
    assert out.numpy()[0] == 3.0


def test_a_plain_array_is_refused_for_an_indexed_parameter():
    with pytest.raises(TypeError, match="expects an array of type indexedarray"):
        wp.launch(k_scale_1d, 1, [wp.zeros(3, dtype=float), 1.0])
    with pytest.raises(RuntimeError, match="indexedarray"):  # Warp's exception type too
        wp.launch(k_read, 1, [wp.indexedarray(wp.zeros(3, dtype=wp.float64)), 0, wp.zeros(1, dtype=float)])


def test_host_writes_fill_zero_assign_and_copies():
    x = np.arange(12, dtype=np.float32).reshape(3, 4)
    data = wp.array(x)
    a = wp.indexedarray(data, [ids([2, 0]), ids([3, 1])])
    a.fill_(7.0)
    x[np.ix_([2, 0], [3, 1])] = 7.0
    np.testing.assert_array_equal(data.numpy(), x)
    a.assign(np.array([[1, 2], [3, 4]], np.float32))
    x[np.ix_([2, 0], [3, 1])] = [[1, 2], [3, 4]]
    np.testing.assert_array_equal(data.numpy(), x)
    c = a.contiguous()
    assert isinstance(c, wp.array) and c.is_contiguous and not a.is_contiguous
    np.testing.assert_array_equal(c.numpy(), [[1, 2], [3, 4]])
    assert a.list() == [1.0, 2.0, 3.0, 4.0]
    np.testing.assert_array_equal(wp.clone(a).numpy(), c.numpy())
    assert wp.zeros_like(a).shape == (2, 2)
    wp.copy(a, wp.full((2, 2), 9.0, dtype=float))
    assert np.all(a.numpy() == 9.0)
    a.zero_()
    x[np.ix_([2, 0], [3, 1])] = 0.0
    np.testing.assert_array_equal(data.numpy(), x)


def test_fill_with_vectors_and_structs():
    data = wp.zeros(4, dtype=wp.vec3h)
    a = wp.indexedarray(data, ids([3, 1]))
    a.fill_(wp.vec3h(1.5, -2.0, 4.0))
    expected = np.zeros((4, 3), np.float16)
    expected[[3, 1]] = [1.5, -2.0, 4.0]
    np.testing.assert_array_equal(data.numpy(), expected)

    pts = wp.zeros(3, dtype=Particle)
    p = Particle()
    p.pos = wp.vec2(1.0, 2.0)
    p.id = 8
    wp.indexedarray(pts, ids([2])).fill_(p)
    got = pts.list()
    assert got[2].id == 8 and got[2].pos == wp.vec2(1.0, 2.0) and got[0].id == 0


@wp.struct
class Particle:
    pos: wp.vec2
    id: int


@wp.struct
class Holder:
    items: wp.indexedarray(dtype=float)
    step: float


@wp.kernel
def k_struct_field(h: Holder):
    i = wp.tid()
    h.items[i] = h.items[i] + h.step


def test_an_indexed_array_inside_a_struct():
    data = wp.zeros(5, dtype=float)
    h = Holder()
    h.items = wp.indexedarray(data, ids([4, 2]))
    h.step = 1.5
    wp.launch(k_struct_field, 2, [h])
    np.testing.assert_array_equal(data.numpy(), [0, 0, 1.5, 0, 1.5])
    assert len(h.numpy_value()) == 2
    assert np.dtype(Holder.numpy_dtype()) == Holder.np_dtype


def test_a_copy_through_an_indexed_array_is_differentiable():
    src = wp.array(np.array([1.0, 2.0, 3.0], np.float32), requires_grad=True)
    dst_data = wp.zeros(5, dtype=float, requires_grad=True)
    dst = wp.indexedarray(dst_data, ids([4, 0, 2]))
    loss = wp.zeros(1, dtype=float, requires_grad=True)
    tape = wp.Tape()
    with tape:
        wp.copy(dst, src)
        wp.launch(k_weighted, 5, [dst_data, loss])
    tape.backward(loss=loss)
    np.testing.assert_array_equal(dst_data.numpy(), [2, 0, 3, 0, 1])
    np.testing.assert_allclose(src.grad.numpy(), [5.0, 1.0, 3.0])  # weights i + 1 at 4, 0, 2


@wp.kernel
def k_weighted(a: wp.array(dtype=float), loss: wp.array(dtype=float)):
    i = wp.tid()
    wp.atomic_add(loss, 0, a[i] * float(i + 1))
