"""Tile linear algebra (weft/tile/ops_linalg.py, codegen/tile_linalg_calls.py,
native/tile/tile_linalg.h): Cholesky factorization, triangular and Cholesky solves, their in-place
forms, FFTs; results against NumPy for float32 and float64, gradients against finite differences."""

import functools

import numpy as np
import pytest

import weft as wp
from tests.fd_check import central_differences

N = 5  # not a power of two
R = 3  # right-hand-side columns
TOL = {np.float32: 2e-5, np.float64: 1e-11}
DTYPES = {np.float32: wp.float32, np.float64: wp.float64}


def _spd(n, seed):
    rng = np.random.default_rng(seed)
    a = rng.standard_normal((n, n))
    return a @ a.T + n * np.eye(n)


def _solve_triangular(m, b, lower):
    """m x = b using only m's lower (upper) triangle (NumPy reference)."""
    return np.linalg.solve(np.tril(m) if lower else np.triu(m), b)


# ------------------------------------------------------------------------- kernels
# One kernel computes every variant of an operation (outputs side by side): few kernels to build.


@functools.cache
def _cholesky_kernel(dtype):
    """(A given by its lower triangle, A given by its upper triangle) -> the lower factor, the
    upper factor, and the same from the in-place form."""
    matrix = wp.array2d(dtype=dtype)

    @wp.kernel(module="unique")
    def k(ga_lo: matrix, ga_up: matrix, lo: matrix, up: matrix, lo_inplace: matrix, up_inplace: matrix):
        a_lo = wp.tile_load(ga_lo, shape=(N, N))
        a_up = wp.tile_load(ga_up, shape=(N, N))
        wp.tile_store(lo, wp.tile_cholesky(a_lo))
        wp.tile_store(up, wp.tile_cholesky(a_up, fill_mode="upper"))
        wp.tile_cholesky_inplace(a_lo)
        wp.tile_cholesky_inplace(a_up, fill_mode="upper")
        wp.tile_store(lo_inplace, a_lo)
        wp.tile_store(up_inplace, a_up)

    return k


@functools.cache
def _solve_kernel(dtype, ndim, inplace):
    """(a lower factor L, an upper factor U, right-hand sides y) -> L^-1 y, U^-1 y,
    (L L^T)^-1 y and (U^T U)^-1 y, from the out-of-place or the in-place forms."""
    rhs_shape = (N, R) if ndim == 2 else (N,)
    matrix = wp.array2d(dtype=dtype)
    rhs = wp.array2d(dtype=dtype) if ndim == 2 else wp.array1d(dtype=dtype)

    @wp.kernel(module="unique")
    def k(gl: matrix, gu: matrix, gy: rhs, x_lower: rhs, x_upper: rhs, x_chol_lo: rhs, x_chol_up: rhs):
        lo = wp.tile_load(gl, shape=(N, N))
        up = wp.tile_load(gu, shape=(N, N))
        y = wp.tile_load(gy, shape=rhs_shape)
        if wp.static(inplace):
            a = wp.tile_load(gy, shape=rhs_shape)
            b = wp.tile_load(gy, shape=rhs_shape)
            c = wp.tile_load(gy, shape=rhs_shape)
            d = wp.tile_load(gy, shape=rhs_shape)
            wp.tile_lower_solve_inplace(lo, a)
            wp.tile_upper_solve_inplace(up, b)
            wp.tile_cholesky_solve_inplace(lo, c)
            wp.tile_cholesky_solve_inplace(up, d, fill_mode="upper")
            wp.tile_store(x_lower, a)
            wp.tile_store(x_upper, b)
            wp.tile_store(x_chol_lo, c)
            wp.tile_store(x_chol_up, d)
        else:
            wp.tile_store(x_lower, wp.tile_lower_solve(lo, y))
            wp.tile_store(x_upper, wp.tile_upper_solve(up, y))
            wp.tile_store(x_chol_lo, wp.tile_cholesky_solve(lo, y))
            wp.tile_store(x_chol_up, wp.tile_cholesky_solve(up, y, fill_mode="upper"))

    return k


# ------------------------------------------------------------------------------ helpers


def _run(kernel, inputs, out_shapes, dtype, adj_outs=None):
    """Launch ``kernel(*inputs, *outputs)`` on one block; returns the outputs and, given their
    gradients adj_outs, the inputs' gradients."""
    wdt = DTYPES[dtype]
    arrays = [wp.array(x.astype(dtype), dtype=wdt, requires_grad=True) for x in inputs]
    outs = [wp.zeros(shape, dtype=wdt, requires_grad=True) for shape in out_shapes]
    with wp.Tape() as tape:
        wp.launch_tiled(kernel, dim=[1], inputs=[*arrays, *outs], block_dim=32)
    results = [o.numpy() for o in outs]
    if adj_outs is None:
        return results, None
    tape.backward(grads={o: wp.array(g.astype(dtype), dtype=wdt) for o, g in zip(outs, adj_outs)})
    return results, [a.grad.numpy() for a in arrays]


def _check_grads(kernel, inputs, out_shapes, seed):
    """The kernel's float64 input gradients against finite differences of sum_k sum(w_k * out_k)."""
    rng = np.random.default_rng(seed)
    ws = [rng.standard_normal(shape) for shape in out_shapes]
    _, grads = _run(kernel, inputs, out_shapes, np.float64, adj_outs=ws)
    for k, g in enumerate(grads):

        def loss(x, k=k):
            args = list(inputs)
            args[k] = x
            outs, _ = _run(kernel, args, out_shapes, np.float64)
            return float(sum(np.sum(w * o) for w, o in zip(ws, outs)))

        np.testing.assert_allclose(g, central_differences(loss, inputs[k].copy()), rtol=1e-5, atol=1e-6)


# --------------------------------------------------------------------------- Cholesky


def _cholesky_inputs(seed):
    """A as its lower triangle and as its upper one, garbage in the triangle not read."""
    a = _spd(N, seed)
    junk = np.random.default_rng(seed).standard_normal((N, N))
    return [np.tril(a) + np.triu(junk, 1), np.triu(a) + np.tril(junk, -1)]


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_cholesky_matches_numpy_and_reads_one_triangle(dtype):
    inputs = _cholesky_inputs(seed=1)
    lower = np.linalg.cholesky(_spd(N, seed=1))
    outs, _ = _run(_cholesky_kernel(DTYPES[dtype]), inputs, [(N, N)] * 4, dtype)
    for out, expected in zip(outs, [lower, lower.T, lower, lower.T]):
        np.testing.assert_allclose(out, expected, rtol=TOL[dtype], atol=TOL[dtype])


def test_cholesky_of_a_matrix_not_positive_definite_is_nan():
    outs, _ = _run(_cholesky_kernel(wp.float64), [-np.eye(N)] * 2, [(N, N)] * 4, np.float64)
    assert all(np.isnan(o[0, 0]) for o in outs)


def test_cholesky_gradient():
    # the gradient lands on the triangle that is read; finite differences see the same
    _check_grads(_cholesky_kernel(wp.float64), _cholesky_inputs(seed=2), [(N, N)] * 4, seed=3)


# ------------------------------------------------------------------------------ solves


def _solve_inputs(ndim, seed):
    """(L, U, y): factors of SPD matrices with garbage in the triangle not read, and y."""
    rng = np.random.default_rng(seed)
    lower = np.linalg.cholesky(_spd(N, seed)) + np.triu(rng.standard_normal((N, N)), 1)
    upper = np.linalg.cholesky(_spd(N, seed + 1)).T + np.tril(rng.standard_normal((N, N)), -1)
    return [lower, upper, rng.standard_normal((N, R) if ndim == 2 else (N,))]


def _solve_references(lower, upper, y):
    lo, up = np.tril(lower), np.triu(upper)
    return [np.linalg.solve(lo, y), np.linalg.solve(up, y), np.linalg.solve(lo @ lo.T, y), np.linalg.solve(up.T @ up, y)]


@pytest.mark.parametrize("dtype,inplace", [(np.float32, False), (np.float64, False), (np.float64, True)])
@pytest.mark.parametrize("ndim", [1, 2])
def test_solves_match_numpy(dtype, inplace, ndim):
    inputs = _solve_inputs(ndim, seed=4)
    outs, _ = _run(_solve_kernel(DTYPES[dtype], ndim, inplace), inputs, [inputs[2].shape] * 4, dtype)
    for out, expected in zip(outs, _solve_references(*inputs)):
        np.testing.assert_allclose(out, expected, rtol=TOL[dtype] * 10, atol=TOL[dtype] * 10)


@pytest.mark.parametrize("ndim", [1, 2])
@pytest.mark.parametrize("inplace", [False, True])
def test_solve_gradients(ndim, inplace):
    inputs = _solve_inputs(ndim, seed=6)
    _check_grads(_solve_kernel(wp.float64, ndim, inplace), inputs, [inputs[2].shape] * 4, seed=8)


# --------------------------------------------------------------------------------- FFT


@functools.cache
def _fft_kernel(vec, shape):
    """x -> (fft(x), ifft(x)) along the last dimension."""
    array = wp.array(dtype=vec, ndim=len(shape))

    @wp.kernel(module="unique")
    def k(gx: array, gy: array, gz: array):
        y = wp.tile_load(gx, shape=shape)
        z = wp.tile_load(gx, shape=shape)
        wp.tile_fft(y)
        wp.tile_ifft(z)
        wp.tile_store(gy, y)
        wp.tile_store(gz, z)

    return k


def _fft_run(vec, real, cplx, x, adjs=None):
    """(fft(x), ifft(x)) and, given their gradients adjs, x's gradient."""
    shape = x.shape

    def to_wp(c, **kw):
        return wp.array(c.astype(cplx).view(real).reshape(*shape, 2), dtype=vec, **kw)

    def to_np(a):
        return a.numpy().view(cplx).reshape(shape)

    xa = to_wp(x, requires_grad=True)
    outs = [wp.zeros(shape, dtype=vec, requires_grad=True) for _ in range(2)]
    with wp.Tape() as tape:
        wp.launch_tiled(_fft_kernel(vec, shape), dim=[1], inputs=[xa, *outs], block_dim=32)
    if adjs is None:
        return [to_np(o) for o in outs], None
    tape.backward(grads={o: to_wp(g) for o, g in zip(outs, adjs)})
    return [to_np(o) for o in outs], to_np(xa.grad)


FFT_TYPES = [(wp.vec2f, np.float32, np.complex64, 2e-5), (wp.vec2d, np.float64, np.complex128, 1e-12)]


def _complex(rng, shape):
    return rng.standard_normal(shape) + 1j * rng.standard_normal(shape)


@pytest.mark.parametrize("vec,real,cplx,tol", FFT_TYPES)
@pytest.mark.parametrize("shape", [(3, 16), (2, 2, 6), (4, 1)])
def test_fft_and_gradient_match_numpy(vec, real, cplx, tol, shape):
    rng = np.random.default_rng(12)
    x, adj_fft, adj_ifft = _complex(rng, shape), _complex(rng, shape), _complex(rng, shape)
    n = shape[-1]
    (y, z), grad = _fft_run(vec, real, cplx, x, [adj_fft, adj_ifft])
    # each transform's matrix F is symmetric: the gradient of Re<adj, F x> is conj(F) adj
    expected_grad = np.fft.ifft(adj_fft) * n + np.fft.fft(adj_ifft)
    scale = tol * n
    np.testing.assert_allclose(y, np.fft.fft(x), rtol=scale, atol=scale)
    np.testing.assert_allclose(z, np.fft.ifft(x) * n, rtol=scale, atol=scale)
    np.testing.assert_allclose(grad, expected_grad, rtol=scale, atol=scale)


def test_fft_then_ifft_scales_by_size():
    x = _complex(np.random.default_rng(13), (3, 16))
    (y, _), _ = _fft_run(wp.vec2d, np.float64, np.complex128, x)
    (_, z), _ = _fft_run(wp.vec2d, np.float64, np.complex128, y)
    np.testing.assert_allclose(z, 16 * x, atol=1e-12)


# ------------------------------------------------------------------------------ errors


def _build(kernel, *arrays):
    wp.launch_tiled(kernel, dim=[1], inputs=list(arrays), block_dim=32)


def test_cholesky_of_a_non_square_tile_is_an_error():
    @wp.kernel(module="unique")
    def k(a: wp.array2d[float]):
        wp.tile_cholesky(wp.tile_load(a, shape=(2, 3)))

    with pytest.raises(wp.WarpCodegenValueError, match="square"):
        _build(k, wp.zeros((2, 3), dtype=float))


def test_bad_fill_mode_is_an_error():
    @wp.kernel(module="unique")
    def k(a: wp.array2d[float]):
        wp.tile_cholesky(wp.tile_load(a, shape=(2, 2)), fill_mode="diagonal")

    with pytest.raises(wp.WarpCodegenValueError, match="fill_mode"):
        _build(k, wp.zeros((2, 2), dtype=float))


def test_solve_with_mismatched_rows_is_an_error():
    @wp.kernel(module="unique")
    def k(a: wp.array2d[float], b: wp.array1d[float]):
        wp.tile_lower_solve(wp.tile_load(a, shape=(2, 2)), wp.tile_load(b, shape=3))

    with pytest.raises(wp.WarpCodegenValueError, match="rows"):
        _build(k, wp.zeros((2, 2), dtype=float), wp.zeros(3, dtype=float))


def test_fft_of_a_real_tile_is_an_error():
    @wp.kernel(module="unique")
    def k(a: wp.array2d[float]):
        t = wp.tile_load(a, shape=(2, 4))
        wp.tile_fft(t)

    with pytest.raises(wp.WarpCodegenTypeError, match="vec2f"):
        _build(k, wp.zeros((2, 4), dtype=float))
