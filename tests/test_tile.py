"""Tiles (weft/tile, codegen/tile_calls.py, native/tile): loads and stores with padding,
element-wise ops, reductions, reshaping, slicing, products, wp.tile/untile; results against
NumPy and gradients against finite differences."""

import numpy as np
import pytest

import weft as wp
from tests.fd_check import central_differences

M = wp.constant(8)
N = wp.constant(4)


@wp.kernel
def copy_map_kernel(a: wp.array2d[float], b: wp.array2d[float]):
    i, j = wp.tid()
    t = wp.tile_load(a, shape=(M, N), offset=(i * M, j * N))
    u = wp.tile_map(wp.sin, t) * 2.0 + t - wp.tile_ones(shape=(M, N), dtype=float)
    wp.tile_store(b, -u, offset=(i * M, j * N))


def test_load_map_store_and_gradient():
    rng = np.random.default_rng(1)
    x = rng.random((20, 12), dtype=np.float32)  # 20 rows: the last row block is partial (padded)
    a = wp.array(x, requires_grad=True)
    b = wp.zeros_like(a, requires_grad=True)
    with wp.Tape() as tape:
        wp.launch_tiled(copy_map_kernel, dim=[3, 3], inputs=[a, b], block_dim=64)
    np.testing.assert_allclose(b.numpy(), -(2 * np.sin(x) + x - 1), rtol=1e-5, atol=1e-6)
    b.grad = wp.ones_like(b)
    tape.backward()
    np.testing.assert_allclose(a.grad.numpy(), -(2 * np.cos(x) + 1), rtol=1e-5, atol=1e-6)


@wp.kernel
def gemm_kernel(a: wp.array2d[wp.float64], b: wp.array2d[wp.float64], c: wp.array2d[wp.float64]):
    i, j = wp.tid()
    acc = wp.tile_zeros(shape=(M, N), dtype=wp.float64)
    for k in range(a.shape[1] // M):  # a dynamic loop carrying the accumulator
        ta = wp.tile_load(a, shape=(M, M), offset=(i * M, k * M))
        tb = wp.tile_load(b, shape=(M, N), offset=(k * M, j * N))
        wp.tile_matmul(ta, tb, acc)
    wp.tile_store(c, acc, offset=(i * M, j * N))


def test_matmul_accumulates_in_a_loop_with_gradients():
    rng = np.random.default_rng(2)
    x, y = rng.standard_normal((16, 24)), rng.standard_normal((24, 8))

    def run(xv, yv, grad_of=None):
        a, b = wp.array(xv, dtype=wp.float64, requires_grad=True), wp.array(yv, dtype=wp.float64, requires_grad=True)
        c = wp.zeros((16, 8), dtype=wp.float64, requires_grad=True)
        with wp.Tape() as tape:
            wp.launch_tiled(gemm_kernel, dim=[2, 2], inputs=[a, b, c], block_dim=32)
        if grad_of is not None:
            c.grad = wp.array(grad_of, dtype=wp.float64)
            tape.backward()
        return a, b, c

    w = rng.standard_normal((16, 8))
    a, b, c = run(x, y, w)
    np.testing.assert_allclose(c.numpy(), x @ y, rtol=1e-12)
    np.testing.assert_allclose(a.grad.numpy(), w @ y.T, rtol=1e-10)
    np.testing.assert_allclose(b.grad.numpy(), x.T @ w, rtol=1e-10)


@wp.kernel
def reduce_kernel(a: wp.array2d[float], out: wp.array2d[float], idx: wp.array2d[int]):
    i = wp.tid()
    t = wp.tile_load(a[i], shape=(M,))
    out[i, 0] = wp.tile_sum(t)[0]
    out[i, 1] = wp.tile_max(t)[0]
    out[i, 2] = wp.tile_min(t)[0]
    out[i, 3] = wp.tile_reduce(wp.mul, t)[0]
    idx[i, 0] = wp.tile_argmax(t)[0]
    idx[i, 1] = wp.tile_argmin(t)[0]


def test_reductions_match_numpy_and_differentiate():
    rng = np.random.default_rng(3)
    x = rng.random((5, 8), dtype=np.float32) + 0.5
    a = wp.array(x, requires_grad=True)
    out = wp.zeros((5, 4), dtype=float, requires_grad=True)
    idx = wp.zeros((5, 2), dtype=int)
    with wp.Tape() as tape:
        wp.launch_tiled(reduce_kernel, dim=[5], inputs=[a, out, idx], block_dim=32)
    o = out.numpy()
    np.testing.assert_allclose(o[:, 0], x.sum(1), rtol=1e-5)
    np.testing.assert_allclose(o[:, 1], x.max(1))
    np.testing.assert_allclose(o[:, 2], x.min(1))
    np.testing.assert_allclose(o[:, 3], x.prod(1), rtol=1e-5)
    np.testing.assert_array_equal(idx.numpy(), np.stack([x.argmax(1), x.argmin(1)], 1))
    g = np.zeros((5, 4), dtype=np.float32)
    g[:, :3] = [1.0, 10.0, 100.0]
    out.grad = wp.array(g)
    tape.backward()
    expect = np.ones_like(x)
    expect[np.arange(5), x.argmax(1)] += 10.0
    expect[np.arange(5), x.argmin(1)] += 100.0
    np.testing.assert_allclose(a.grad.numpy(), expect, rtol=1e-6)


@wp.kernel
def shapes_kernel(a: wp.array2d[wp.float64], out: wp.array2d[wp.float64], loss: wp.array[wp.float64]):
    t = wp.tile_load(a, shape=(M, N))
    tt = wp.tile_transpose(t)  # (N, M)
    rows = t[2:6, :]  # (4, N)
    flipped = t[::-1, 1]  # (M,)
    col_sums = wp.tile_sum(t, axis=0)  # (N,)
    b = wp.tile_broadcast(wp.tile_reshape(col_sums, shape=(1, N)), shape=(M, N))
    v = wp.tile_view(t, offset=(3,))  # row 3, (N,)
    t[0, 0] = 7.0
    t[1:3, :] = rows[0:2, :] * 3.0
    wp.tile_store(out, t + b)
    s = wp.tile_sum(tt * tt)[0] + wp.tile_sum(flipped * wp.tile_arange(M, dtype=wp.float64))[0] + wp.tile_sum(v)[0]
    loss[0] = s + wp.tile_sum(t * t)[0]


def test_reshaping_slicing_and_element_writes():
    rng = np.random.default_rng(4)
    x = rng.standard_normal((8, 4))

    def run(xv, backward=False):
        a = wp.array(xv, dtype=wp.float64, requires_grad=True)
        out = wp.zeros((8, 4), dtype=wp.float64)
        loss = wp.zeros(1, dtype=wp.float64, requires_grad=True)
        with wp.Tape() as tape:
            wp.launch_tiled(shapes_kernel, dim=[1], inputs=[a, out, loss], block_dim=16)
        if backward:
            tape.backward(loss)
        return a, out, loss.numpy()[0]

    a, out, loss = run(x)
    t = x.copy()
    t[0, 0] = 7.0
    t[1:3, :] = x[2:4, :] * 3.0
    np.testing.assert_allclose(out.numpy(), t + x.sum(0)[None, :], rtol=1e-12)
    expect = (x * x).sum() + (x[::-1, 1] * np.arange(8)).sum() + x[3].sum() + (t * t).sum()
    assert loss == pytest.approx(expect, rel=1e-12)
    a, _, _ = run(x, backward=True)
    np.testing.assert_allclose(a.grad.numpy(), central_differences(lambda v: run(v)[2], x.copy()), rtol=1e-6, atol=1e-6)


@wp.func
def smooth_max(x: float, y: float):
    return wp.log(wp.exp(x) + wp.exp(y))


@wp.kernel
def user_map_kernel(a: wp.array[float], b: wp.array[float], out: wp.array[float]):
    ta = wp.tile_load(a, shape=(M,))
    tb = wp.tile_load(b, shape=(M,))
    wp.tile_store(out, wp.tile_map(smooth_max, ta, tb))


def test_tile_map_with_a_user_func_and_gradients():
    rng = np.random.default_rng(5)
    x, y = rng.standard_normal(8).astype(np.float32), rng.standard_normal(8).astype(np.float32)
    a, b = wp.array(x, requires_grad=True), wp.array(y, requires_grad=True)
    out = wp.zeros(8, dtype=float, requires_grad=True)
    with wp.Tape() as tape:
        wp.launch_tiled(user_map_kernel, dim=[1], inputs=[a, b, out], block_dim=8)
    np.testing.assert_allclose(out.numpy(), np.logaddexp(x, y), rtol=1e-5)
    out.grad = wp.ones_like(out)
    tape.backward()
    np.testing.assert_allclose(a.grad.numpy(), 1 / (1 + np.exp(y - x)), rtol=1e-4)
    np.testing.assert_allclose(b.grad.numpy(), 1 / (1 + np.exp(x - y)), rtol=1e-4)


@wp.kernel
def thread_tile_kernel(x: wp.array[wp.vec3], out: wp.array[wp.vec3], total: wp.array[float]):
    i, lane = wp.tid()
    t = wp.tile(x[i])  # a vec3 spreads over the first dimension: shape (3, block_dim)
    out[i] = wp.untile(t * 2.0)
    wp.tile_atomic_add(total, wp.tile_sum(wp.tile(wp.length(x[i]))))


def test_tile_from_thread_values_and_atomic_add():
    rng = np.random.default_rng(6)
    xs = rng.standard_normal((10, 3)).astype(np.float32)
    x = wp.array(xs, dtype=wp.vec3)
    out = wp.zeros(10, dtype=wp.vec3)
    total = wp.zeros(1, dtype=float)
    wp.launch_tiled(thread_tile_kernel, dim=[10], inputs=[x, out, total], block_dim=64)
    np.testing.assert_allclose(out.numpy(), 2 * xs, rtol=1e-6)
    assert total.numpy()[0] == pytest.approx(np.linalg.norm(xs, axis=1).sum(), rel=1e-5)
    assert wp.block_dim is not None


def test_errors_name_the_kernel_line():
    @wp.kernel(module="unique")
    def bad_slice():
        t = wp.tile_ones(shape=(M, N), dtype=float)
        v = t[4:4, :]

    with pytest.raises(ValueError, match="empty tile"):
        wp.launch_tiled(bad_slice, dim=[1], inputs=[], block_dim=8)

    @wp.kernel(module="unique")
    def bad_matmul():
        a = wp.tile_ones(shape=(M, N), dtype=float)
        c = wp.tile_matmul(a, a)

    with pytest.raises(ValueError, match="do not multiply"):
        wp.launch_tiled(bad_matmul, dim=[1], inputs=[], block_dim=8)

    @wp.kernel(module="unique")
    def bad_index(k: int, out: wp.array[float]):
        t = wp.tile_ones(shape=(M,), dtype=float)
        out[0] = t[k]

    out = wp.zeros(1, dtype=float)
    with pytest.raises(IndexError):
        wp.launch_tiled(bad_index, dim=[1], inputs=[20, out], block_dim=8)
    wp.launch_tiled(bad_index, dim=[1], inputs=[-1, out], block_dim=8)  # from the end, as NumPy
    assert out.numpy()[0] == 1.0


def test_launch_tiled_needs_block_dim():
    with pytest.raises(RuntimeError, match="block_dim"):
        wp.launch_tiled(copy_map_kernel, dim=[1], inputs=[])


@wp.struct
class Particle:
    mass: float
    vel: wp.vec3


@wp.func
def heavier(a: Particle, b: Particle):
    return wp.where(a.mass < b.mass, b, a)


@wp.kernel
def struct_tile_kernel(p: wp.array[Particle], total: wp.array[Particle], heaviest: wp.array[Particle]):
    t = wp.tile_load(p, shape=(M,))
    d = t + t - t  # field by field
    d[0] += t[1]
    wp.tile_store(total, wp.tile_sum(d))
    wp.tile_store(heaviest, wp.tile_reduce(heavier, t))


def test_struct_tiles_add_field_by_field():
    rng = np.random.default_rng(7)
    ps = []
    for k in range(8):
        q = Particle()
        q.mass = float(rng.random())
        q.vel = wp.vec3(*rng.standard_normal(3))
        ps.append(q)
    p = wp.array(ps, dtype=Particle)
    total = wp.zeros(1, dtype=Particle)
    heaviest = wp.zeros(1, dtype=Particle)
    wp.launch_tiled(struct_tile_kernel, dim=[1], inputs=[p, total, heaviest], block_dim=8)
    mass = np.array([q.mass for q in ps], dtype=np.float32)
    vel = np.array([list(q.vel) for q in ps], dtype=np.float32)
    out = total.numpy()[0]
    assert out["mass"] == pytest.approx(mass.sum() + mass[1], rel=1e-5)
    np.testing.assert_allclose(out["vel"], vel.sum(0) + vel[1], rtol=1e-5, atol=1e-6)
    assert heaviest.numpy()[0]["mass"] == pytest.approx(mass.max())


@wp.func
def scale_in_place(t: wp.tile[float, 4, 4], s: float):
    t *= s  # the caller's tile changes (Warp passes tiles by reference)


@wp.kernel
def views_kernel(a: wp.array2d[float], out: wp.array2d[float], prod: wp.array[float]):
    t = wp.tile_load(a, shape=(4, 4))
    b = wp.tile_zeros(shape=(4, 4), dtype=float)
    for i in range(a.shape[0]):  # a dynamic loop: b is carried through the view's write-back
        row = b[i]
        wp.tile_assign(row, t[3 - i] * 2.0)
    scale_in_place(b, 0.5)
    wp.tile_store(out, b)
    wp.tile_store(prod, wp.tile_reduce(wp.mul, t, axis=1))


def test_views_write_back_and_funcs_update_tiles_in_place():
    rng = np.random.default_rng(8)
    x = rng.random((4, 4), dtype=np.float32) + 0.5
    out = wp.zeros((4, 4), dtype=float)
    prod = wp.zeros(4, dtype=float)
    wp.launch_tiled(views_kernel, dim=[1], inputs=[wp.array(x), out, prod], block_dim=8)
    np.testing.assert_allclose(out.numpy(), x[::-1], rtol=1e-6)
    np.testing.assert_allclose(prod.numpy(), x.prod(1), rtol=1e-5)


@wp.kernel
def tanh_exp_kernel(a: wp.array[wp.float64], loss: wp.array[wp.float64]):
    t = wp.tile_load(a, shape=(M,))
    u = wp.tile_map(wp.tanh, t) * wp.tile_map(wp.exp, t * 0.5)
    loss[0] = wp.tile_sum(u * u)[0]


def test_tanh_and_exp_maps_differentiate_from_their_results():
    rng = np.random.default_rng(9)
    x = rng.standard_normal(8)

    def run(xv, backward=False):
        a = wp.array(xv, dtype=wp.float64, requires_grad=True)
        loss = wp.zeros(1, dtype=wp.float64, requires_grad=True)
        with wp.Tape() as tape:
            wp.launch_tiled(tanh_exp_kernel, dim=[1], inputs=[a, loss], block_dim=8)
        if backward:
            tape.backward(loss)
        return a, loss.numpy()[0]

    assert run(x)[1] == pytest.approx(((np.tanh(x) * np.exp(0.5 * x)) ** 2).sum(), rel=1e-12)
    a, _ = run(x, backward=True)
    np.testing.assert_allclose(a.grad.numpy(), central_differences(lambda v: run(v)[1], x.copy(), eps=1e-6), rtol=1e-6)


@wp.kernel
def mixed_matmul_kernel(a: wp.array2d[wp.float16], b: wp.array2d[wp.float32], c: wp.array2d[wp.float64]):
    ta = wp.tile_load(a, shape=(M, N))
    tb = wp.tile_load(b, shape=(N, M))
    tc = wp.tile_load(c, shape=(M, M))
    wp.tile_matmul(ta, tb, tc, alpha=0.5, beta=-2.0)  # computed in the output's type
    wp.tile_store(c, tc)  # c read then written: its gradient is consumed by the store, then the load's


def test_mixed_precision_matmul_and_store_consumes_the_gradient():
    rng = np.random.default_rng(10)
    x = rng.random((8, 4)).astype(np.float16)
    y = rng.random((4, 8)).astype(np.float32)
    z = rng.random((8, 8))
    a, b = wp.array(x, requires_grad=True), wp.array(y, requires_grad=True)
    c = wp.array(z, dtype=wp.float64, requires_grad=True)
    with wp.Tape() as tape:
        wp.launch_tiled(mixed_matmul_kernel, dim=[1], inputs=[a, b, c], block_dim=8)
    np.testing.assert_allclose(c.numpy(), 0.5 * x.astype(np.float64) @ y - 2.0 * z, rtol=1e-6)
    g = rng.random((8, 8))
    tape.backward(grads={c: wp.array(g, dtype=wp.float64)})
    np.testing.assert_allclose(c.grad.numpy(), -2.0 * g, rtol=1e-12)
    np.testing.assert_allclose(a.grad.numpy(), 0.5 * g @ y.T, rtol=2e-3, atol=2e-3)  # float16 gradient
    np.testing.assert_allclose(b.grad.numpy(), 0.5 * x.astype(np.float64).T @ g, rtol=1e-5)


@wp.func
def push_twice(s: wp.tile_stack(capacity=8, dtype=int), v: int):
    wp.tile_stack_push(s, v, True)
    wp.tile_stack_push(s, v + 1, True)


@wp.kernel
def stack_func_kernel(out: wp.array[int]):
    s = wp.tile_stack(capacity=8, dtype=int)
    push_twice(s, 5)  # the caller's stack changes (Warp passes stacks by reference)
    out[0] = wp.tile_stack_count(s)
    v, slot = wp.tile_stack_pop(s)
    out[1] = v


def test_funcs_update_a_stack_passed_to_them():
    out = wp.zeros(2, dtype=int)
    wp.launch_tiled(stack_func_kernel, dim=[1], inputs=[out], block_dim=8)
    np.testing.assert_array_equal(out.numpy(), [2, 6])
    import pytest as _pytest

    with _pytest.raises(TypeError, match="bfloat16 .out."):

        @wp.kernel(module="unique")
        def bf16_out(a: wp.array2d[wp.bfloat16]):
            t = wp.tile_load(a, shape=(M, M))
            wp.tile_store(a, wp.tile_matmul(t, t))

        wp.launch_tiled(bf16_out, dim=[1], inputs=[wp.zeros((8, 8), dtype=wp.bfloat16)], block_dim=8)


@wp.kernel
def tile_double_kernel(src: wp.array[float], dst: wp.array[float]):
    wp.tile_store(dst, wp.tile_load(src, shape=(M,)) * 2.0)


def test_tile_loads_and_stores_count_as_array_reads_and_writes(capsys):
    # the tape's overwrite check sees tile accesses like element accesses
    x = wp.array(np.arange(8, dtype=np.float32), requires_grad=True)
    y = wp.zeros(8, dtype=float, requires_grad=True)
    saved = wp.config.verify_autograd_array_access
    wp.config.verify_autograd_array_access = True
    try:
        with wp.Tape():
            wp.launch_tiled(tile_double_kernel, dim=[1], inputs=[x, y], block_dim=8)
            wp.launch_tiled(tile_double_kernel, dim=[1], inputs=[y, x], block_dim=8)  # writes x, read before
    finally:
        wp.config.verify_autograd_array_access = saved
    text = "".join(capsys.readouterr())
    assert "passed to argument dst in kernel tile_double_kernel" in text, text
    assert "is being written to but has already been read from in a previous launch" in text, text
    np.testing.assert_array_equal(x.numpy(), np.arange(8) * 4.0)


@wp.kernel
def shared_weights_kernel(w: wp.array2d[float], x: wp.array2d[float], out: wp.array2d[float]):
    i = wp.tid()
    t = wp.tile_load(x, shape=(M, N), offset=(i * M, 0))
    wp.tile_store(out, wp.tile_matmul(t, wp.tile_load(w, shape=(N, N))), offset=(i * M, 0))


def test_gradients_of_an_array_every_block_reads_sum_over_threads():
    # w's gradient is added by every block: per-thread private copies, summed once (accumulate.h)
    rng = np.random.default_rng(11)
    wv, xv = rng.standard_normal((4, 4)), rng.standard_normal((8 * 64, 4))
    w = wp.array(wv, dtype=float, requires_grad=True)
    x = wp.array(xv, dtype=float, requires_grad=True)
    out = wp.zeros((8 * 64, 4), dtype=float, requires_grad=True)
    g = rng.standard_normal((8 * 64, 4))
    for threads in (1, 2):
        saved = wp.config.cpu_threads
        wp.config.cpu_threads = threads
        try:
            w.grad.zero_()
            x.grad.zero_()
            tape = wp.Tape()
            with tape:
                wp.launch_tiled(shared_weights_kernel, dim=[64], inputs=[w, x, out], block_dim=8)
            tape.backward(grads={out: wp.array(g, dtype=float)})
        finally:
            wp.config.cpu_threads = saved
        np.testing.assert_allclose(w.grad.numpy(), xv.T @ g, rtol=1e-4, atol=1e-4)
        np.testing.assert_allclose(x.grad.numpy(), g @ wv.T, rtol=1e-4, atol=1e-4)


@wp.kernel
def index_once_kernel(counter: wp.array[int], out: wp.array[float]):
    t = wp.tile_arange(M, dtype=float)
    out[0] = t[wp.atomic_add(counter, 0, 1) + 2]  # the index expression runs once


def test_a_tile_index_expression_runs_once():
    counter = wp.zeros(1, dtype=int)
    out = wp.zeros(1, dtype=float)
    wp.launch_tiled(index_once_kernel, dim=[1], inputs=[counter, out], block_dim=8)
    assert counter.numpy()[0] == 1 and out.numpy()[0] == 2.0


def _matmul_kernel(m, k, n):
    TM, TK, TN = wp.constant(m), wp.constant(k), wp.constant(n)

    @wp.kernel(module="unique")
    def matmul_tiles(a: wp.array2d[float], b: wp.array2d[float], c: wp.array2d[float]):
        i = wp.tid()
        ta = wp.tile_load(a, shape=(TM, TK))
        tb = wp.tile_load(b, shape=(TK, TN))
        wp.tile_store(c, wp.tile_matmul(ta, tb))

    return matmul_tiles


@pytest.mark.parametrize("m,k,n", [(5, 7, 3), (16, 24, 40), (64, 64, 1), (8, 32, 16)])
def test_matmul_gradients_for_rectangular_tiles(m, k, n):
    """Both operand gradients of a product against NumPy, for shapes whose a-gradient reads b
    transposed through a gathered copy (b up to 64 KB, more than one column) or directly (one
    column). Tiles stay small: the CUDA compile-all test builds every kernel of the suite, and a
    one-thread-per-block build of large tiles took NVRTC gigabytes."""
    rng = np.random.default_rng(m * 1000 + k * 10 + n)
    x, y, w = (rng.standard_normal(s).astype(np.float32) for s in ((m, k), (k, n), (m, n)))
    a, b = wp.array(x, requires_grad=True), wp.array(y, requires_grad=True)
    c = wp.zeros((m, n), dtype=float, requires_grad=True)
    with wp.Tape() as tape:
        wp.launch_tiled(_matmul_kernel(m, k, n), dim=[1], inputs=[a, b, c], block_dim=64)
    np.testing.assert_allclose(c.numpy(), x.astype(np.float64) @ y, rtol=1e-4, atol=1e-4)
    c.grad = wp.array(w)
    tape.backward()
    np.testing.assert_allclose(a.grad.numpy(), w.astype(np.float64) @ y.T, rtol=1e-4, atol=1e-4)
    np.testing.assert_allclose(b.grad.numpy(), x.T.astype(np.float64) @ w, rtol=1e-4, atol=1e-4)
