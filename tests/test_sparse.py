"""weft.sparse: block-sparse-row matrices, checked against dense NumPy matrices built from the
same data (values, products, transposes, re-blocking), gradients against finite differences."""

import numpy as np
import pytest

import weft as wp
from weft.sparse import (
    BsrMatrix,
    bsr_assign,
    bsr_axpy,
    bsr_block_index,
    bsr_compress,
    bsr_copy,
    bsr_diag,
    bsr_from_triplets,
    bsr_get_diag,
    bsr_identity,
    bsr_mm,
    bsr_mm_work_arrays,
    bsr_mv,
    bsr_row_index,
    bsr_scale,
    bsr_set_diag,
    bsr_set_from_triplets,
    bsr_set_transpose,
    bsr_set_zero,
    bsr_transposed,
    bsr_zeros,
)


def dense(A: BsrMatrix) -> np.ndarray:
    """The dense matrix of ``A``'s stored blocks."""
    br, bc = A.block_shape
    out = np.zeros(A.shape)
    offsets, columns = A.offsets.numpy(), A.columns.numpy()
    values = A.scalar_values.numpy()
    for i in range(A.nrow):
        for b in range(offsets[i], offsets[i + 1]):
            out[i * br : (i + 1) * br, columns[b] * bc : (columns[b] + 1) * bc] += values[b]
    return out


def triplets_dense(shape, block_shape, rows, cols, values):
    out = np.zeros(shape)
    br, bc = block_shape
    for r, c, v in zip(rows, cols, values):
        if 0 <= r < shape[0] // br and 0 <= c < shape[1] // bc:
            out[r * br : (r + 1) * br, c * bc : (c + 1) * bc] += np.reshape(v, block_shape)
    return out


def random_bsr(rng, nrow, ncol, block_shape, scalar=wp.float64, n=12):
    rows = rng.integers(0, nrow, n)
    cols = rng.integers(0, ncol, n)
    values = rng.uniform(-1.0, 1.0, (n, *block_shape))
    block_type = scalar if block_shape == (1, 1) else wp.types.matrix(block_shape, scalar)
    A = bsr_zeros(nrow, ncol, block_type)
    vals = wp.array(values.reshape(n) if block_shape == (1, 1) else values, dtype=block_type)
    bsr_set_from_triplets(A, wp.array(rows, dtype=int), wp.array(cols, dtype=int), vals)
    return A, triplets_dense(A.shape, block_shape, rows, cols, values)


BLOCKS = [(1, 1), (1, 3), (3, 2), (3, 3)]


@pytest.mark.parametrize("block_shape", BLOCKS)
def test_triplets_sum_duplicates_and_sort_each_row(block_shape):
    rng = np.random.default_rng(1)
    A, ref = random_bsr(rng, 4, 5, block_shape, n=30)
    np.testing.assert_allclose(dense(A), ref, atol=1e-12)
    offsets, columns = A.offsets.numpy(), A.columns.numpy()
    assert offsets[-1] == A.nnz == A.nnz_sync()
    for i in range(A.nrow):
        row = columns[offsets[i] : offsets[i + 1]]
        assert np.all(np.diff(row) > 0)  # sorted, no duplicates
    np.testing.assert_array_equal(A.uncompress_rows().numpy(), np.repeat(np.arange(4), np.diff(offsets)))


def test_triplet_options_and_checks():
    rows = wp.array([1, 0, 1, -1, 2, 0], dtype=int)
    cols = wp.array([2, 1, 2, 0, 0, 9], dtype=int)  # (-1, 0) and (0, 9) lie outside a 2 x 3 matrix
    vals = wp.array([1.0, 2.0, 3.0, 4.0, 5.0, 6.0], dtype=float)
    A = bsr_from_triplets(2, 3, rows, cols, vals)
    np.testing.assert_allclose(dense(A), [[0.0, 2.0, 0.0], [0.0, 0.0, 4.0]])

    B = bsr_zeros(2, 3, float)
    bsr_set_from_triplets(B, rows, cols, vals, count=wp.array([2], dtype=int))
    np.testing.assert_allclose(dense(B), [[0.0, 2.0, 0.0], [0.0, 0.0, 1.0]])

    zeros = wp.array([0.0, 0.0, 1.0], dtype=float)
    three = wp.array([0, 1, 1], dtype=int)
    assert bsr_from_triplets(2, 2, three, three, zeros).nnz == 1  # zero blocks pruned by default
    assert bsr_from_triplets(2, 2, three, three, zeros, prune_numerical_zeros=False).nnz == 2

    T = bsr_zeros(2, 3, float)
    bsr_set_from_triplets(T, rows, cols, values=None)  # topology only
    np.testing.assert_array_equal(T.columns.numpy()[: T.nnz], [1, 2])
    np.testing.assert_array_equal(dense(T), np.zeros((2, 3)))

    with pytest.raises(TypeError, match="must be of type int32"):
        bsr_set_from_triplets(B, wp.array([0.0], dtype=float), wp.array([0.0], dtype=float), vals)
    with pytest.raises(ValueError, match="either warp matrix or scalar"):
        bsr_zeros(2, 2, wp.vec3)
    with pytest.raises(ValueError, match="Unknown topology"):
        bsr_zeros(2, 2, float, topology="sparse")


def test_masked_triplets_keep_the_destination_blocks():
    A = bsr_from_triplets(2, 2, wp.array([0, 1], dtype=int), wp.array([0, 1], dtype=int), wp.array([1.0, 1.0]))
    bsr_set_from_triplets(
        A, wp.array([0, 0, 1, 0], dtype=int), wp.array([0, 1, 1, 0], dtype=int), wp.array([2.0, 5.0, 3.0, 4.0]),
        topology="masked",
    )
    np.testing.assert_allclose(dense(A), [[6.0, 0.0], [0.0, 3.0]])  # (0, 1) is not a block of A


@pytest.mark.parametrize("block_shape", BLOCKS)
def test_transpose_of_a_scaled_matrix(block_shape):
    A, ref = random_bsr(np.random.default_rng(2), 4, 5, block_shape)
    T = (2.0 * A).transpose().eval()
    assert T.block_shape == block_shape[::-1]
    np.testing.assert_allclose(dense(T), 2.0 * ref.T, atol=1e-12)
    np.testing.assert_allclose(dense(bsr_transposed(A)), ref.T, atol=1e-12)
    if block_shape[0] != block_shape[1]:
        with pytest.raises(ValueError, match="Destination block shape must be"):
            bsr_set_transpose(A, A)


def test_masked_transpose_writes_only_existing_blocks():
    A, ref = random_bsr(np.random.default_rng(3), 3, 3, (2, 2))
    mask = bsr_diag(rows_of_blocks=3, block_type=A.dtype)
    bsr_set_transpose(mask, A, topology="masked")
    expect = np.zeros_like(ref)
    for i in range(3):
        expect[2 * i : 2 * i + 2, 2 * i : 2 * i + 2] = ref.T[2 * i : 2 * i + 2, 2 * i : 2 * i + 2]
    np.testing.assert_allclose(dense(mask), expect, atol=1e-12)


def test_copies_convert_scalar_types_and_reblock():
    A, ref = random_bsr(np.random.default_rng(4), 4, 8, (4, 2), scalar=wp.float32, n=20)
    for shape in [(2, 2), (1, 1), (4, 4), (8, 8), (4, 2)]:
        B = bsr_copy(A, scalar_type=wp.float64, block_shape=shape)
        assert B.block_shape == shape and B.scalar_type is wp.float64
        np.testing.assert_allclose(dense(B), ref, atol=1e-6)
    with pytest.raises(ValueError, match="Incompatible dest and src block shapes"):
        bsr_copy(A, block_shape=(3, 3))
    with pytest.raises(ValueError, match=r"does not evenly divide the source matrix of total size \(16, 16\)"):
        bsr_copy(A, block_shape=(32, 32))
    S = bsr_copy(A, structure_only=True)
    assert S.nnz == A.nnz and not np.any(S.values.numpy())


def test_masked_assign_extracts_the_coarse_diagonal():
    A, ref = random_bsr(np.random.default_rng(5), 16, 8, (1, 2), n=40)
    D = bsr_diag(rows_of_blocks=4, block_type=wp.types.matrix((4, 4), wp.float64))
    bsr_assign(D, A, topology="masked")
    expect = np.zeros_like(ref)
    for i in range(4):
        expect[4 * i : 4 * i + 4, 4 * i : 4 * i + 4] = ref[4 * i : 4 * i + 4, 4 * i : 4 * i + 4]
    np.testing.assert_allclose(dense(D), expect, atol=1e-12)


@pytest.mark.parametrize("block_shape", BLOCKS)
def test_axpy_union_masked_and_aliased(block_shape):
    rng = np.random.default_rng(6)
    x, xd = random_bsr(rng, 3, 4, block_shape)
    y, yd = random_bsr(rng, 3, 4, block_shape)
    for alpha, beta in [(-1.0, 2.0), (0.0, -1.0), (1.0, 0.0)]:
        yd = alpha * xd + beta * yd
        bsr_axpy(x, y, alpha, beta)
        np.testing.assert_allclose(dense(y), yd, atol=1e-12)
    y += y * 2.0
    np.testing.assert_allclose(dense(y), 3.0 * yd, atol=1e-12)
    first = bsr_from_triplets(3, 4, y.uncompress_rows()[:1], y.columns[:1], y.values[:1], prune_numerical_zeros=False)
    bsr_axpy(y, first, topology="masked")
    assert first.nnz == 1
    np.testing.assert_allclose(first.values.numpy(), 2.0 * y.values[:1].numpy())
    y.ncol += 1
    with pytest.raises(ValueError, match="same number of rows and columns"):
        bsr_axpy(x, y)


@pytest.mark.parametrize("block_shape", BLOCKS)
def test_matrix_vector_products(block_shape):
    rng = np.random.default_rng(7)
    A, ref = random_bsr(rng, 3, 4, block_shape)
    br, bc = block_shape
    vec = lambda n, m: wp.array(rng.uniform(-1, 1, (n, m)) if m > 1 else rng.uniform(-1, 1, n),
                                dtype=wp.types.vector(m, wp.float64) if m > 1 else wp.float64)
    x, y = vec(4, bc), vec(3, br)
    y0 = y.numpy().reshape(-1).copy()
    bsr_mv(A, x, y, alpha=-1.0, beta=2.0)
    np.testing.assert_allclose(y.numpy().reshape(-1), -ref @ x.numpy().reshape(-1) + 2.0 * y0, atol=1e-12)
    np.testing.assert_allclose((A @ x).numpy().reshape(-1), ref @ x.numpy().reshape(-1), atol=1e-12)
    np.testing.assert_allclose((y @ (A * 0.5)).numpy().reshape(-1), 0.5 * y.numpy().reshape(-1) @ ref, atol=1e-12)
    AAt = A @ bsr_transposed(A)
    before = y.numpy().reshape(-1).copy()
    bsr_mv(AAt, y, y, alpha=1.0, beta=-1.0)  # input and output are the same array
    np.testing.assert_allclose(y.numpy().reshape(-1), ref @ ref.T @ before - before, atol=1e-12)
    with pytest.raises(ValueError, match="Incompatible 'x'"):
        bsr_mv(A, y, y)


@pytest.mark.parametrize("block_shape", BLOCKS)
def test_matrix_products(block_shape):
    rng = np.random.default_rng(8)
    x, xd = random_bsr(rng, 3, 2, block_shape)
    y, yd = random_bsr(rng, 2, 3, block_shape[::-1])
    z, zd = random_bsr(rng, 3, 3, (block_shape[0], block_shape[0]))
    work = bsr_mm_work_arrays()
    for alpha, beta in [(-1.0, 2.0), (0.0, -1.0), (2.0, 0.0)]:
        zd = alpha * xd @ yd + beta * zd
        bsr_mm(x, y, z, alpha, beta, work_arrays=work)
        np.testing.assert_allclose(dense(z), zd, atol=1e-12)
    bsr_mm(x, y, z, 2.0, 0.0, work_arrays=work, reuse_topology=True)
    np.testing.assert_allclose(dense(z), 2.0 * xd @ yd, atol=1e-12)
    mask = bsr_diag(rows_of_blocks=3, block_type=z.dtype)
    bsr_mm(x, y, mask, topology="masked")
    full = xd @ yd
    br = block_shape[0]
    expect = np.zeros_like(full)
    for i in range(3):
        expect[br * i : br * (i + 1), br * i : br * (i + 1)] = full[br * i : br * (i + 1), br * i : br * (i + 1)]
    np.testing.assert_allclose(dense(mask), expect, atol=1e-12)
    zd = dense(z)
    bsr_mm(z, z, z, -1.0, 2.0)  # every operand is the destination
    np.testing.assert_allclose(dense(z), -zd @ zd + 2.0 * zd, atol=1e-12)
    with pytest.raises(ValueError, match="Incompatible number of rows/columns"):
        bsr_mm(z, bsr_zeros(2, 2, z.dtype))
    if block_shape[0] != block_shape[1]:
        with pytest.raises(ValueError, match="Incompatible block sizes"):
            bsr_mm(x, x)
    capped = bsr_zeros(3, 3, z.dtype)
    bsr_mm(x, y, capped, max_new_nnz=1)  # as Warp: the first new block is kept, with a warning
    assert capped.nnz == 1
    full_product = dense(bsr_mm(x, y))
    kept_row, kept_col = capped.uncompress_rows().numpy()[0], capped.columns.numpy()[0]
    br_, bc_ = capped.block_shape
    got = dense(capped)[br_ * kept_row : br_ * (kept_row + 1), bc_ * kept_col : bc_ * (kept_col + 1)]
    want = full_product[br_ * kept_row : br_ * (kept_row + 1), bc_ * kept_col : bc_ * (kept_col + 1)]
    np.testing.assert_allclose(got, want, atol=1e-12)


def test_operators():
    rng = np.random.default_rng(9)
    A, a = random_bsr(rng, 3, 3, (2, 2))
    B, b = random_bsr(rng, 3, 3, (2, 2))
    np.testing.assert_allclose(dense(A + B), a + b, atol=1e-12)
    np.testing.assert_allclose(dense(A - 2.0 * B), a - 2.0 * b, atol=1e-12)
    np.testing.assert_allclose(dense((-A).eval()), -a, atol=1e-12)
    np.testing.assert_allclose(dense((A / 4.0).eval()), a / 4.0, atol=1e-12)
    np.testing.assert_allclose(dense(A @ B), a @ b, atol=1e-12)
    C = bsr_copy(A)
    C -= B
    C *= 3.0
    np.testing.assert_allclose(dense(C), 3.0 * (a - b), atol=1e-12)
    bsr_scale(C, 0.5)
    np.testing.assert_allclose(dense(C), 1.5 * (a - b), atol=1e-12)
    bsr_set_zero(C)
    assert C.nnz == 0 and dense(C).sum() == 0.0


def test_diagonals_and_identity():
    rng = np.random.default_rng(10)
    A, a = random_bsr(rng, 4, 4, (3, 3), n=16)
    diag = bsr_get_diag(A)
    for i in range(4):
        np.testing.assert_allclose(diag.numpy()[i], a[3 * i : 3 * i + 3, 3 * i : 3 * i + 3], atol=1e-12)
    np.testing.assert_allclose(dense(bsr_diag(diag)), np.where(np.kron(np.eye(4), np.ones((3, 3))) > 0, a, 0.0), atol=1e-12)
    np.testing.assert_allclose(bsr_get_diag(2.0 * A).numpy(), 2.0 * diag.numpy(), atol=1e-12)
    D = bsr_diag(wp.mat22(1.0, 2.0, 3.0, 4.0), rows_of_blocks=3, cols_of_blocks=4)
    assert D.shape == (6, 8) and D.nnz == 3
    np.testing.assert_allclose(dense(D)[:, :6], np.kron(np.eye(3), [[1.0, 2.0], [3.0, 4.0]]))
    S = bsr_diag(2.5, rows_of_blocks=3)
    np.testing.assert_allclose(dense(S), 2.5 * np.eye(3))
    np.testing.assert_allclose(dense(bsr_identity(2, wp.mat33d)), np.eye(6))
    np.testing.assert_allclose(bsr_identity(3, wp.float64).values.numpy(), np.ones(3))
    bsr_set_diag(S, wp.array([1.0, 2.0], dtype=wp.float32))
    np.testing.assert_allclose(dense(S), np.diag([1.0, 2.0]))


def test_compress_sums_repeated_blocks_differentiably():
    vals = wp.array([1.0, 2.0, 3.0, 0.0], dtype=float, requires_grad=True)
    A = bsr_zeros(1, 3, float)
    A.nnz = 4
    A.offsets = wp.array([0, 4], dtype=int)
    A.columns = wp.array([1, 0, 1, 2], dtype=int)
    A.values = vals
    with wp.Tape() as tape:
        bsr_compress(A)
    assert A.nnz == 2 and A.row_counts is None
    np.testing.assert_array_equal(A.columns.numpy()[:2], [0, 1])
    np.testing.assert_allclose(dense(A), [[2.0, 4.0, 0.0]])
    A.values.grad.assign(np.array([10.0, 1.0], np.float32))
    tape.backward()
    np.testing.assert_allclose(vals.grad.numpy(), [1.0, 10.0, 1.0, 0.0])


def test_gradients_through_triplets_and_products_match_finite_differences():
    rng = np.random.default_rng(11)
    rows = wp.array([0, 1, 1, 2, 0], dtype=int)
    cols = wp.array([1, 0, 2, 2, 1], dtype=int)
    v0 = rng.uniform(-1, 1, (5, 2, 2))
    x0 = rng.uniform(-1, 1, (3, 2))
    w = rng.uniform(-1, 1, (3, 2))

    def loss(v_np, x_np, tape=None):
        v = wp.array(v_np, dtype=wp.mat22d, requires_grad=True)
        x = wp.array(x_np, dtype=wp.vec2d, requires_grad=True)
        with tape if tape is not None else _nothing():
            A = bsr_from_triplets(3, 3, rows, cols, v)
            y = bsr_mv(A @ A, x)
        return float(np.sum(y.numpy() * w)), v, x, y

    tape = wp.Tape()
    _, v, x, y = loss(v0, x0, tape)
    tape.backward(grads={y: wp.array(w, dtype=wp.vec2d)})
    eps = 1e-6
    for arr, base, grad in [(0, v0, v.grad.numpy()), (1, x0, x.grad.numpy())]:
        fd = np.zeros(base.size)
        for k in range(base.size):
            plus, minus = base.copy().reshape(-1), base.copy().reshape(-1)
            plus[k] += eps
            minus[k] -= eps
            args = [v0, x0]
            args[arr] = plus.reshape(base.shape)
            fp = loss(*args)[0]
            args[arr] = minus.reshape(base.shape)
            fm = loss(*args)[0]
            fd[k] = (fp - fm) / (2 * eps)
        np.testing.assert_allclose(grad.reshape(-1), fd, rtol=1e-6, atol=1e-8)


class _nothing:
    def __enter__(self):
        return None

    def __exit__(self, *exc):
        return False


@wp.kernel
def _locate_blocks(
    offsets: wp.array(dtype=int),
    columns: wp.array(dtype=int),
    nrow: int,
    rows_out: wp.array(dtype=int),
    found: wp.array(dtype=int),
):
    b = wp.tid()
    row = bsr_row_index(offsets, nrow, b)
    rows_out[b] = row
    if row >= 0:
        found[b] = bsr_block_index(row, columns[b], offsets, columns)
    else:
        found[b] = bsr_block_index(0, 99, offsets, columns)


def test_kernel_side_row_and_block_lookups():
    A, _ = random_bsr(np.random.default_rng(12), 5, 6, (1, 1), n=15)
    n = A.nnz + 2  # two past the last block
    rows, found = wp.zeros(n, dtype=int), wp.zeros(n, dtype=int)
    columns = wp.zeros(n, dtype=int)
    columns[: A.nnz].assign(A.columns.numpy()[: A.nnz])
    wp.launch(_locate_blocks, dim=n, inputs=[A.offsets, columns, A.nrow, rows, found])
    expect_rows = np.concatenate((A.uncompress_rows().numpy(), [-1, -1]))
    np.testing.assert_array_equal(rows.numpy(), expect_rows)
    np.testing.assert_array_equal(found.numpy(), np.concatenate((np.arange(A.nnz), [-1, -1])))


def test_products_are_bitwise_reproducible():
    rng = np.random.default_rng(13)
    A, _ = random_bsr(rng, 40, 40, (3, 3), scalar=wp.float32, n=600)
    first = (A @ A).values.numpy()
    for _ in range(3):
        np.testing.assert_array_equal((A @ A).values.numpy(), first)


def test_axpy_between_scalar_blocks_and_one_by_one_matrix_blocks():
    rows, cols = wp.array([0, 1], dtype=int), wp.array([1, 0], dtype=int)
    x = bsr_from_triplets(2, 2, rows, cols, wp.array([[[2.0]], [[3.0]]], dtype=wp.types.matrix((1, 1), wp.float32)))
    y = bsr_from_triplets(2, 2, rows[:1], cols[:1], wp.array([5.0], dtype=wp.float32))
    assert x.block_shape == y.block_shape == (1, 1) and x.dtype != y.dtype
    bsr_axpy(x, y, alpha=2.0, beta=-1.0)
    np.testing.assert_allclose(dense(y), [[0.0, 2.0 * 2.0 - 5.0], [6.0, 0.0]])
