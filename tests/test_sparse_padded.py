"""weft.sparse in Warp's padded layout (weft/sparse/padded.py): rows with reserved slots
(``row_capacity``) and ``row_counts``; every operation reads a padded matrix's active blocks and,
with ``topology="padded"``, writes its result into the destination's slots. Results are checked
against dense NumPy matrices, gradients against the dense chain rule."""

import numpy as np

import weft as wp
from weft.sparse import (
    BSR_STATUS_ROW_CAPACITY_EXCEEDED,
    BSR_STATUS_SUCCESS,
    bsr_assign,
    bsr_axpy,
    bsr_compress,
    bsr_copy,
    bsr_from_triplets,
    bsr_get_diag,
    bsr_mm,
    bsr_mv,
    bsr_set_from_triplets,
    bsr_set_transpose,
    bsr_set_zero,
    bsr_zeros,
)

I32 = wp.int32


def dense(A) -> np.ndarray:
    """The dense matrix of the blocks in use (row_counts-aware)."""
    br, bc = A.block_shape
    out = np.zeros(A.shape)
    offsets, columns = A.offsets.numpy(), A.columns.numpy()
    counts = A.row_counts.numpy() if A.row_counts is not None else np.diff(offsets)
    values = A.scalar_values.numpy()
    for i in range(A.nrow):
        for b in range(offsets[i], offsets[i] + counts[i]):
            out[i * br : (i + 1) * br, columns[b] * bc : (columns[b] + 1) * bc] += values[b]
    return out


def active_columns(A) -> list:
    offsets, counts, columns = A.offsets.numpy(), A.row_counts.numpy(), A.columns.numpy()
    return [list(columns[offsets[r] : offsets[r] + counts[r]]) for r in range(A.nrow)]


def padded_from(rows, cols, vals, shape, capacity, dtype=float):
    A = bsr_zeros(*shape, dtype, row_capacity=capacity)
    bsr_set_from_triplets(A, wp.array(rows, dtype=I32), wp.array(cols, dtype=I32), wp.array(vals, dtype=dtype), topology="padded")
    return A


def test_rows_keep_their_slots_and_reads_see_the_blocks_in_use():
    A = padded_from([1, 0, 1, 0, 1], [2, 1, 2, 0, 1], [4.0, 1.0, 5.0, 2.0, 3.0], (2, 3), wp.array([3, 4], dtype=I32))
    assert A.nnz == 7 and list(A.offsets.numpy()) == [0, 3, 7]
    assert list(A.row_counts.numpy()) == [2, 2] and active_columns(A) == [[0, 1], [1, 2]]  # sorted, repeats summed
    assert list(A.uncompress_rows().numpy()) == [0, 0, -1, 1, 1, -1, -1]
    expect = np.array([[2.0, 1.0, 0.0], [0.0, 3.0, 9.0]])
    np.testing.assert_array_equal(dense(A), expect)
    x = np.array([1.0, -2.0, 0.5])
    np.testing.assert_allclose(bsr_mv(A, wp.array(x, dtype=float)).numpy(), expect @ x, rtol=1e-6)
    np.testing.assert_allclose(bsr_mv(A, wp.array([1.0, 2.0], dtype=float), transpose=True).numpy(), expect.T @ [1.0, 2.0])
    np.testing.assert_array_equal(bsr_get_diag(A).numpy(), [2.0, 3.0])
    compact = bsr_copy(A)
    assert compact.row_counts is None and compact.nnz == 4
    np.testing.assert_array_equal(dense(compact), expect)
    same_slots = bsr_copy(2.0 * A, topology="padded")
    assert list(same_slots.offsets.numpy()) == [0, 3, 7] and list(same_slots.row_counts.numpy()) == [2, 2]
    np.testing.assert_array_equal(dense(same_slots), 2.0 * expect)
    np.testing.assert_array_equal(dense(A + A), 2.0 * expect)  # operators read the blocks in use


def test_results_written_into_padded_destinations():
    rng = np.random.default_rng(3)
    xd = np.where(rng.random((3, 4)) < 0.5, rng.normal(size=(3, 4)), 0.0)
    yd = np.where(rng.random((4, 3)) < 0.5, rng.normal(size=(4, 3)), 0.0)

    def compact(m):
        r, c = np.nonzero(m)
        return bsr_from_triplets(m.shape[0], m.shape[1], wp.array(r, dtype=I32), wp.array(c, dtype=I32), wp.array(m[r, c], dtype=wp.float64))

    X, Y = compact(xd), compact(yd)
    Z = bsr_zeros(3, 3, wp.float64, row_capacity=3)
    bsr_mm(X, Y, Z, topology="padded")
    assert Z.status_sync() == BSR_STATUS_SUCCESS and list(Z.offsets.numpy()) == [0, 3, 6, 9]
    np.testing.assert_allclose(dense(Z), xd @ yd, atol=1e-12)
    bsr_mm(X, Y, Z, alpha=2.0, beta=-1.0, topology="padded")  # z's own blocks are read as well
    np.testing.assert_allclose(dense(Z), xd @ yd, atol=1e-12)
    T = bsr_zeros(4, 3, wp.float64, row_capacity=3)
    bsr_set_transpose(T, X, topology="padded")
    np.testing.assert_allclose(dense(T), xd.T)
    S = bsr_zeros(3, 4, wp.float64, row_capacity=4)
    bsr_assign(S, X, topology="padded")
    bsr_axpy(X, S, alpha=3.0, beta=0.5, topology="padded")
    np.testing.assert_allclose(dense(S), 3.5 * xd, atol=1e-12)
    assert list(S.offsets.numpy()) == [0, 4, 8, 12]
    bsr_axpy(X, S, alpha=1.0, beta=1.0)  # compact topology: the destination becomes compact
    assert S.row_counts is None
    np.testing.assert_allclose(dense(S), 4.5 * xd, atol=1e-12)


def test_rows_without_room_keep_what_fits_and_flag_the_status():
    A = padded_from([0, 0, 1], [0, 2, 1], [1.0, 2.0, 3.0], (2, 3), 1)
    assert A.status_sync() == BSR_STATUS_ROW_CAPACITY_EXCEEDED and "capacity" in A.status_message()
    assert list(A.row_counts.numpy()) == [1, 1] and active_columns(A) == [[0], [1]]
    np.testing.assert_array_equal(dense(A), [[1.0, 0.0, 0.0], [0.0, 3.0, 0.0]])
    bsr_set_from_triplets(A, wp.array([1], dtype=I32), wp.array([2], dtype=I32), wp.array([5.0]), topology="padded")
    assert A.status_sync() == BSR_STATUS_ROW_CAPACITY_EXCEEDED  # stays set until cleared
    A.clear_status()
    assert A.status_sync() == BSR_STATUS_SUCCESS


def test_compress_and_set_zero_keep_the_row_capacity():
    A = bsr_zeros(2, 3, float, row_capacity=wp.array([4, 3], dtype=I32))
    A.row_counts = wp.array([4, 3], dtype=I32)  # unsorted, repeated blocks written by hand
    A.columns = wp.array([2, 0, 2, 1, 1, 2, 1], dtype=I32)
    A.values = wp.array([5.0, 2.0, -1.0, 3.0, 4.0, 8.0, -4.0], dtype=float)
    bsr_compress(A, topology="padded")
    assert list(A.offsets.numpy()) == [0, 4, 7] and list(A.row_counts.numpy()) == [3, 2]
    assert active_columns(A) == [[0, 1, 2], [1, 2]]  # a sum to zero stays (zero inputs are pruned)
    np.testing.assert_array_equal(dense(A), [[2.0, 3.0, 4.0], [0.0, 0.0, 8.0]])
    bsr_set_zero(A, topology="padded")
    assert A.nnz == 7 and list(A.offsets.numpy()) == [0, 4, 7] and not A.row_counts.numpy().any()
    bsr_set_zero(A, topology="padded", row_capacity=wp.array([0, 2], dtype=I32))
    assert A.nnz_sync() == 2 and list(A.offsets.numpy()) == [0, 0, 2]
    B = bsr_zeros(3, 4, float, row_capacity=wp.array([1, 0, 1], dtype=I32), nnz_capacity=8)
    assert B.nnz == 8 and B.values.shape[0] >= 8 and B.nnz_sync() == 2  # storage bound vs slots in rows


def test_gradients_flow_through_padded_triplets_and_products():
    rows, cols = np.array([1, 0, 0, 1]), np.array([0, 1, 0, 0])
    vals = wp.array(np.arange(1.0, 5.0), dtype=wp.float64, requires_grad=True)
    A = bsr_zeros(2, 2, wp.float64, row_capacity=2)
    x = wp.array([0.5, -1.5], dtype=wp.float64, requires_grad=True)
    tape = wp.Tape()
    with tape:
        bsr_set_from_triplets(A, wp.array(rows, dtype=I32), wp.array(cols, dtype=I32), vals, topology="padded")
        y = bsr_mv(A, x)
    tape.backward(grads={y: wp.array([1.0, 10.0], dtype=wp.float64)})
    # y0 = v2 x0 + v1 x1 ; y1 = (v0 + v3) x0: dy/dv = (seed row) * (x of the column)
    np.testing.assert_allclose(vals.grad.numpy(), [10.0 * 0.5, 1.0 * -1.5, 1.0 * 0.5, 10.0 * 0.5])
    np.testing.assert_allclose(x.grad.numpy(), [1.0 * 3.0 + 10.0 * 5.0, 1.0 * 2.0])
