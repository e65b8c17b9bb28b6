"""Subarrays in kernels: ``row = a[i]`` of a 2-D array (and ``a[i, j]`` of a 3-D one) is an array
sharing the parent's memory and gradient, as in Warp; ``wp.array(ptr=a.ptr, shape=..., dtype=...)``
is a contiguous array over an address, without a gradient."""

import numpy as np
import pytest

import weft as wp


@wp.kernel
def k_weighted_row_sums(a: wp.array2d(dtype=float), out: wp.array(dtype=float)):
    i = wp.tid()
    row = a[i]
    s = float(0.0)
    for j in range(row.shape[0]):
        s += row[j] * float(j + 1)
    out[i] = s


@wp.kernel
def k_write_through_views(a: wp.array2d(dtype=float), b: wp.array3d(dtype=wp.int32)):
    i = wp.tid()
    a[i][0] = float(10 * i)
    row = a[i]
    row[-1] = -1.0
    plane = b[i]
    plane[1, 2] = i + 100
    b[i][0][1] = i + 200
    b[i, 1][0] = i + 300


@wp.func
def dot_row(r: wp.array(dtype=float), w: wp.array(dtype=float)):
    s = float(0.0)
    for j in range(r.shape[0]):
        s += r[j] * w[j]
    return s


@wp.kernel
def k_rows_times_weights(a: wp.array2d(dtype=float), w: wp.array(dtype=float), out: wp.array(dtype=float)):
    i = wp.tid()
    out[i] = dot_row(a[i], w)


@wp.kernel
def k_cell_loss(a: wp.array3d(dtype=float), loss: wp.array(dtype=float)):
    i, j = wp.tid()
    cell = a[i, j]
    wp.atomic_add(loss, 0, cell[0] * cell[1] + wp.sin(a[i][j][2]))


@wp.kernel
def k_view_atomic(counts: wp.array2d(dtype=wp.int32), keys: wp.array(dtype=wp.int32)):
    t = wp.tid()
    wp.atomic_add(counts[keys[t]], t % 2, 1)


@wp.kernel
def k_row_of(a: wp.array2d(dtype=float), i: int, out: wp.array(dtype=float)):
    row = a[i]  # VIEW:oob
    out[0] = row[0]


def test_a_row_view_reads_the_parent_row():
    x = np.arange(12, dtype=np.float32).reshape(3, 4)
    out = wp.zeros(3, dtype=float)
    wp.launch(k_weighted_row_sums, 3, [wp.array(x), out])
    np.testing.assert_allclose(out.numpy(), x @ np.arange(1, 5, dtype=np.float32))


def test_views_of_a_strided_parent_follow_its_strides():
    x = np.arange(40, dtype=np.float32).reshape(5, 8)
    parent = wp.array(x)
    sub = parent[1:4, ::2]  # rows 1..3, every other column
    out = wp.zeros(3, dtype=float)
    wp.launch(k_weighted_row_sums, 3, [sub, out])
    np.testing.assert_allclose(out.numpy(), x[1:4, ::2] @ np.arange(1, 5, dtype=np.float32))


def test_stores_through_views_land_in_the_parent():
    a = wp.zeros((3, 4), dtype=float)
    b = wp.zeros((3, 2, 3), dtype=wp.int32)
    wp.launch(k_write_through_views, 3, [a, b])
    ea = np.zeros((3, 4), np.float32)
    ea[:, 0] = [0, 10, 20]
    ea[:, -1] = -1
    np.testing.assert_array_equal(a.numpy(), ea)
    eb = np.zeros((3, 2, 3), np.int32)
    eb[:, 1, 2] = np.arange(3) + 100
    eb[:, 0, 1] = np.arange(3) + 200
    eb[:, 1, 0] = np.arange(3) + 300
    np.testing.assert_array_equal(b.numpy(), eb)


def test_a_view_passes_to_a_func_taking_an_array_and_differentiates():
    rng = np.random.default_rng(3)
    x = rng.random((4, 5)).astype(np.float32)
    w = rng.random(5).astype(np.float32)
    a = wp.array(x, requires_grad=True)
    wa = wp.array(w, requires_grad=True)
    out = wp.zeros(4, dtype=float, requires_grad=True)
    tape = wp.Tape()
    with tape:
        wp.launch(k_rows_times_weights, 4, [a, wa, out])
    np.testing.assert_allclose(out.numpy(), x @ w, rtol=1e-6)
    seed = rng.random(4).astype(np.float32)
    tape.backward(grads={out: wp.array(seed)})
    np.testing.assert_allclose(a.grad.numpy(), np.outer(seed, w), rtol=1e-6)
    np.testing.assert_allclose(wa.grad.numpy(), seed @ x, rtol=1e-6)


def test_gradients_through_cell_views_match_finite_differences():
    rng = np.random.default_rng(4)
    x = rng.random((2, 3, 3))

    def run(values, grad=False):
        a = wp.array(values, dtype=wp.float64, requires_grad=grad)
        loss = wp.zeros(1, dtype=wp.float64, requires_grad=grad)
        tape = wp.Tape()
        with tape:
            wp.launch(k_cell_loss_64, (2, 3), [a, loss])
        if grad:
            tape.backward(loss=loss)
            return a.grad.numpy()
        return loss.numpy()[0]

    g = run(x, grad=True)
    eps = 1e-6
    fd = np.zeros_like(x)
    for idx in np.ndindex(*x.shape):
        xp, xm = x.copy(), x.copy()
        xp[idx] += eps
        xm[idx] -= eps
        fd[idx] = (run(xp) - run(xm)) / (2 * eps)
    np.testing.assert_allclose(g, fd, rtol=1e-6, atol=1e-8)
    np.testing.assert_allclose(g[..., 2], np.cos(x[..., 2]), rtol=1e-12)


@wp.kernel
def k_cell_loss_64(a: wp.array3d(dtype=wp.float64), loss: wp.array(dtype=wp.float64)):
    i, j = wp.tid()
    cell = a[i, j]
    wp.atomic_add(loss, 0, cell[0] * cell[1] + wp.sin(a[i][j][2]))


def test_atomics_on_a_view_update_the_parent():
    counts = wp.zeros((3, 2), dtype=wp.int32)
    keys = np.array([0, 2, 2, 1, 2, 0, 0], np.int32)
    wp.launch(k_view_atomic, len(keys), [counts, wp.array(keys)])
    expected = np.zeros((3, 2), np.int32)
    for t, k in enumerate(keys):
        expected[k, t % 2] += 1
    np.testing.assert_array_equal(counts.numpy(), expected)


def test_a_view_index_out_of_bounds_raises_index_error():
    a = wp.array(np.ones((3, 2), np.float32))
    out = wp.zeros(1, dtype=float)
    with pytest.raises(IndexError, match="k_row_of"):
        wp.launch(k_row_of, 1, [a, 3, out])
    wp.launch(k_row_of, 1, [a, -1, out])  # negative indices count from the end
    assert out.numpy()[0] == 1.0


def test_storing_a_value_into_a_view_slot_is_refused():
    @wp.kernel
    def k_bad(a: wp.array2d(dtype=float)):
        a[0] = 1.0

    with pytest.raises(wp.WarpCodegenError, match="indexed with 1"):
        wp.launch(k_bad, 1, [wp.zeros((2, 2), dtype=float)])


@wp.struct
class PtrPair:
    a: float
    b: wp.vec2


@wp.kernel
def k_reshape_through_ptr(src: wp.array(dtype=float), rows: int, cols: int, out: wp.array2d(dtype=float)):
    grid = wp.array(ptr=src.ptr, shape=(rows, cols), dtype=float)
    i, j = wp.tid()
    out[i, j] = grid[i, j] * 2.0 + float(grid.shape[1])


@wp.kernel
def k_write_structs_through_ptr(p: wp.uint64):
    pairs = wp.array(ptr=p, shape=2, dtype=PtrPair)
    pairs[1].a = 4.0
    pairs[0].b = wp.vec2(1.0, 2.0)


@wp.kernel
def k_read_past_the_given_shape(src: wp.array(dtype=float), n: int, out: wp.array(dtype=float)):
    v = wp.array(ptr=src.ptr, shape=(n,), dtype=float)
    out[0] = v[n]


def test_arrays_over_an_address_in_kernels():
    src = wp.array(np.arange(6, dtype=np.float32))
    out = wp.zeros((2, 3), dtype=float)
    wp.launch(k_reshape_through_ptr, dim=(2, 3), inputs=[src, 2, 3, out])
    np.testing.assert_array_equal(out.numpy(), np.arange(6).reshape(2, 3) * 2.0 + 3.0)
    pairs = wp.zeros(2, dtype=PtrPair)
    wp.launch(k_write_structs_through_ptr, dim=1, inputs=[pairs.ptr])
    got = pairs.numpy()
    assert got[1]["a"] == 4.0 and list(got[0]["b"]) == [1.0, 2.0] and got[0]["a"] == 0.0


def test_an_array_over_an_address_checks_its_indices():
    with pytest.raises(IndexError, match="k_read_past_the_given_shape"):
        wp.launch(k_read_past_the_given_shape, dim=1, inputs=[wp.zeros(4), 3, wp.zeros(1)])


def test_an_array_over_an_address_takes_no_gradient():
    src = wp.array([1.0, 2.0, 3.0, 4.0, 5.0, 6.0], dtype=float, requires_grad=True)
    out = wp.zeros((2, 3), dtype=float, requires_grad=True)
    tape = wp.Tape()
    with tape:
        wp.launch(k_reshape_through_ptr, dim=(2, 3), inputs=[src, 2, 3, out])
    tape.backward(grads={out: wp.ones((2, 3), dtype=float)})
    np.testing.assert_array_equal(src.grad.numpy(), np.zeros(6))  # the address carries no gradient


def test_kernel_arrays_need_ptr_shape_and_dtype():
    @wp.kernel(module="unique")
    def makes_an_array(out: wp.array(dtype=float)):
        a = wp.array(shape=(3,), dtype=float)
        out[0] = a[0]

    with pytest.raises(wp.codegen.WarpCodegenTypeError, match="ptr=, shape= and dtype="):
        wp.launch(makes_an_array, dim=1, inputs=[wp.zeros(1)])
