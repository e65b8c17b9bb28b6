"""Tile data operations (tile/ops_data.py, codegen/tile_data_calls.py, native/tile/tile_data.h):
sorting, scans, scatter, indexed loads and stores, block stacks, random tiles, tile_from_thread,
tile_dot and tile_axpy; results against NumPy and gradients against finite differences."""

import numpy as np
import pytest

import weft as wp
from tests.fd_check import central_differences

N = wp.constant(13)
M = wp.constant(4)
K = wp.constant(3)


def _tape_grad(kernel, inputs, grad_of, out, w):
    """Launch kernel(*inputs) on a tape; the gradients of sum(w * out) w.r.t. the arrays grad_of."""
    tape = wp.Tape()
    with tape:
        wp.launch_tiled(kernel, dim=1, inputs=inputs, block_dim=32)
    tape.backward(grads={out: wp.array(w, dtype=out.dtype)})
    return [a.grad.numpy().copy() for a in grad_of]


# ------------------------------------------------------------------------------------ sort


def _sort_kernel(key_type):
    @wp.kernel(enable_backward=False, module="unique")
    def k(keys: wp.array[key_type], vals: wp.array[int], ko: wp.array[key_type], vo: wp.array[int]):
        kt = wp.tile_load(keys, shape=N)
        vt = wp.tile_load(vals, shape=N)
        wp.tile_sort(kt, vt)
        wp.tile_store(ko, kt)
        wp.tile_store(vo, vt)

    return k


@pytest.mark.parametrize("key_type", [wp.int32, wp.int64, wp.uint64, wp.float32])
def test_sort_is_stable_against_numpy(key_type):
    rng = np.random.default_rng(3)
    np_type = wp.dtype_to_numpy(key_type)
    keys = rng.integers(0, 5, size=13).astype(np_type)  # many ties: the order of values checks stability
    if key_type is wp.float32:
        keys = keys - np.float32(2.5)
    vals = np.arange(13, dtype=np.int32)
    ko, vo = wp.zeros(13, dtype=key_type), wp.zeros(13, dtype=int)
    wp.launch_tiled(_sort_kernel(key_type), dim=1, inputs=[wp.array(keys, dtype=key_type), wp.array(vals), ko, vo], block_dim=32)
    order = np.argsort(keys, kind="stable")
    np.testing.assert_array_equal(ko.numpy(), keys[order])
    np.testing.assert_array_equal(vo.numpy(), vals[order])


@wp.struct
class Payload:
    a: float
    v: wp.vec3


@wp.kernel(enable_backward=False)
def sort_struct_kernel(keys: wp.array[int], vals: wp.array[Payload], out: wp.array[Payload]):
    kt = wp.tile_load(keys, shape=M)
    vt = wp.tile_load(vals, shape=M)
    wp.tile_sort(kt, vt)
    wp.tile_store(out, vt)


def test_sort_struct_payload():
    data = []
    for i in range(4):
        p = Payload()
        p.a = float(i)
        p.v = wp.vec3(i, 2 * i, 3 * i)
        data.append(p)
    out = wp.empty(4, dtype=Payload)
    wp.launch_tiled(sort_struct_kernel, dim=1, inputs=[wp.array([3, 0, 2, 1], dtype=int), wp.array(data, dtype=Payload), out], block_dim=32)
    np.testing.assert_array_equal(out.numpy()["a"], [1.0, 3.0, 2.0, 0.0])
    np.testing.assert_array_equal(out.numpy()["v"][:, 1], [2.0, 6.0, 4.0, 0.0])


# ------------------------------------------------------------------------------------ scans


@wp.kernel(enable_backward=False)
def scans_kernel(a: wp.array2d[float], o: wp.array3d[float], ai: wp.array2d[int], oi: wp.array2d[int]):
    t = wp.tile_load(a, shape=(M, K))
    wp.tile_store(o[0], wp.tile_scan_inclusive(t))
    wp.tile_store(o[1], wp.tile_scan_exclusive(t))
    wp.tile_store(o[2], wp.tile_scan_max_inclusive(t))
    wp.tile_store(o[3], wp.tile_scan_min_inclusive(t))
    ti = wp.tile_load(ai, shape=(M, K))
    wp.tile_store(oi, wp.tile_scan_exclusive(ti))


def test_scans_run_in_row_major_order():
    rng = np.random.default_rng(5)
    x = rng.normal(size=(4, 3)).astype(np.float32)
    xi = rng.integers(-9, 9, size=(4, 3)).astype(np.int32)
    o, oi = wp.zeros((4, 4, 3), dtype=float), wp.zeros((4, 3), dtype=int)
    wp.launch_tiled(scans_kernel, dim=1, inputs=[wp.array(x), o, wp.array(xi), oi], block_dim=32)
    f = x.reshape(-1)
    np.testing.assert_allclose(o.numpy()[0].reshape(-1), np.cumsum(f), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(o.numpy()[1].reshape(-1), np.concatenate([[0], np.cumsum(f)[:-1]]), rtol=1e-5, atol=1e-6)
    np.testing.assert_array_equal(o.numpy()[2].reshape(-1), np.maximum.accumulate(f))
    np.testing.assert_array_equal(o.numpy()[3].reshape(-1), np.minimum.accumulate(f))
    np.testing.assert_array_equal(oi.numpy().reshape(-1), np.concatenate([[0], np.cumsum(xi.reshape(-1))[:-1]]))


def test_scan_rejects_other_dtypes():
    @wp.kernel(module="unique")
    def k(a: wp.array[wp.float64], o: wp.array[wp.float64]):
        wp.tile_store(o, wp.tile_scan_inclusive(wp.tile_load(a, shape=M)))

    with pytest.raises(TypeError, match="float32, int32, or uint32"):
        wp.launch_tiled(k, dim=1, inputs=[wp.zeros(4, dtype=wp.float64), wp.zeros(4, dtype=wp.float64)], block_dim=32)


# ------------------------------------------------------------------------------ scatter


@wp.kernel
def scatter_kernel(x: wp.array2d[wp.float64], v: wp.array[wp.float64], y: wp.array2d[wp.float64]):
    t = wp.tile_load(x, shape=(M, K))
    wp.tile_scatter_add(t, 1, 2, v[0], True)
    wp.tile_scatter_add(t, 1, 2, v[1], True, atomic=False)
    wp.tile_scatter_add(t, 0, 0, v[2], False)
    wp.tile_scatter_masked(t, 3, 1, v[3] * v[3], True)
    wp.tile_scatter_masked(t, 0, 1, v[0], False)
    wp.tile_store(y, t * t)


def test_scatter_forward_and_gradients():
    rng = np.random.default_rng(7)
    x0, v0 = rng.normal(size=(4, 3)), rng.normal(size=4)
    w = rng.uniform(0.5, 1.5, size=(4, 3))

    def forward(x, v):
        y = wp.zeros((4, 3), dtype=wp.float64)
        wp.launch_tiled(scatter_kernel, dim=1, inputs=[wp.array(x, dtype=wp.float64), wp.array(v, dtype=wp.float64), y], block_dim=32)
        return y.numpy()

    t = x0.copy()
    t[1, 2] += v0[0] + v0[1]
    t[3, 1] = v0[3] ** 2
    np.testing.assert_allclose(forward(x0, v0), t * t, rtol=1e-12)

    x, v = wp.array(x0, dtype=wp.float64, requires_grad=True), wp.array(v0, dtype=wp.float64, requires_grad=True)
    y = wp.zeros((4, 3), dtype=wp.float64, requires_grad=True)
    gx, gv = _tape_grad(scatter_kernel, [x, v, y], [x, v], y, w)
    np.testing.assert_allclose(gx, central_differences(lambda a: np.sum(w * forward(a, v0)), x0), rtol=1e-6, atol=1e-8)
    np.testing.assert_allclose(gv, central_differences(lambda a: np.sum(w * forward(x0, a)), v0), rtol=1e-6, atol=1e-8)


# ----------------------------------------------------------------- indexed loads and stores


@wp.kernel
def indexed_kernel(x: wp.array2d[wp.float64], idx: wp.array[int], y: wp.array2d[wp.float64], z: wp.array2d[wp.float64]):
    ind = wp.tile_load(idx, shape=M)
    t = wp.tile_load_indexed(x, indices=ind, shape=(M, K), offset=(1, 0), axis=0)
    wp.tile_store_indexed(y, indices=ind, t=t * t, axis=0)
    u = wp.tile_load(x, shape=(K, M))
    wp.tile_atomic_add_indexed(z, indices=ind, t=u, offset=(0, 1), axis=1)


def test_indexed_access_against_numpy_and_gradients():
    rng = np.random.default_rng(11)
    x0 = rng.normal(size=(6, 5))
    idx = np.array([2, -1, 0, 4], dtype=np.int32)  # -1: padding (reads zero, writes nothing)

    def forward(x):
        y, z = wp.zeros((6, 3), dtype=wp.float64), wp.zeros((3, 6), dtype=wp.float64)
        wp.launch_tiled(indexed_kernel, dim=1, inputs=[wp.array(x, dtype=wp.float64), wp.array(idx), y, z], block_dim=32)
        return y.numpy(), z.numpy()

    rows = 1 + idx  # offset 1 along the axis
    t = np.where((rows >= 0)[:, None], x0[np.clip(rows, 0, 5), :3], 0.0)
    y_exp, z_exp = np.zeros((6, 3)), np.zeros((3, 6))
    for k, i in enumerate(idx):
        if 0 <= i < 6:
            y_exp[i] = t[k] ** 2
        if 0 <= 1 + i < 6:
            z_exp[:, 1 + i] += x0[:3, k]
    y_val, z_val = forward(x0)
    np.testing.assert_allclose(y_val, y_exp, rtol=1e-12)
    np.testing.assert_allclose(z_val, z_exp, rtol=1e-12)

    w = rng.uniform(0.5, 1.5, size=(6, 3))
    x = wp.array(x0, dtype=wp.float64, requires_grad=True)
    y = wp.zeros((6, 3), dtype=wp.float64, requires_grad=True)
    z = wp.zeros((3, 6), dtype=wp.float64, requires_grad=True)
    (gx,) = _tape_grad(indexed_kernel, [x, wp.array(idx), y, z], [x], y, w)
    np.testing.assert_allclose(gx, central_differences(lambda a: np.sum(w * forward(a)[0]), x0), rtol=1e-6, atol=1e-8)


# ---------------------------------------------------------------------------------- stacks


@wp.kernel(enable_backward=False)
def stack_kernel(data: wp.array[int], out: wp.array[int]):
    s = wp.tile_stack(capacity=3, dtype=int)
    for i in range(5):
        slot = wp.tile_stack_push(s, data[i], data[i] > 0)
        out[i] = slot
    out[5] = wp.tile_stack_count(s)
    v, slot = wp.tile_stack_pop(s)
    out[6] = v
    out[7] = slot
    wp.tile_stack_clear(s)
    out[8] = wp.tile_stack_count(s)
    v2, slot2 = wp.tile_stack_pop(s)
    out[9] = v2
    out[10] = slot2


def test_stack_push_pop_count_clear():
    out = wp.zeros(11, dtype=int)
    wp.launch_tiled(stack_kernel, dim=1, inputs=[wp.array([4, 0, 7, 9, 5], dtype=int), out], block_dim=32)
    # pushes: 4 -> slot 0, 0 skipped, 7 -> 1, 9 -> 2, 5 overflows; pop gives 9 from slot 2
    np.testing.assert_array_equal(out.numpy(), [0, -1, 1, 2, -1, 3, 9, 2, 0, 0, -1])


@wp.kernel(enable_backward=False)
def struct_scatter_stack_kernel(input: wp.array[Payload], out: wp.array[Payload]):
    acc = wp.tile_zeros(shape=1, dtype=Payload)
    s = wp.tile_stack(capacity=2, dtype=Payload)
    for i in range(3):
        wp.tile_scatter_add(acc, 0, input[i], True)
        wp.tile_stack_push(s, input[i], i != 1)
    out[0] = wp.tile_extract(acc, 0)
    p, slot = wp.tile_stack_pop(s)
    out[1] = p


def test_struct_scatter_add_and_stack():
    data = []
    for i in range(3):
        p = Payload()
        p.a = float(i + 1)
        p.v = wp.vec3(i, 1.0, 0.0)
        data.append(p)
    out = wp.empty(2, dtype=Payload)
    wp.launch_tiled(struct_scatter_stack_kernel, dim=1, inputs=[wp.array(data, dtype=Payload), out], block_dim=32)
    np.testing.assert_allclose(out.numpy()["a"], [6.0, 3.0])
    np.testing.assert_allclose(out.numpy()["v"][0], [3.0, 3.0, 0.0])


# ------------------------------------------------------------------------------- random


def _pcg(x):
    s = (x * 747796405 + 2891336453) & 0xFFFFFFFF
    w = (((s >> ((s >> 28) + 4)) ^ s) * 277803737) & 0xFFFFFFFF
    return ((w >> 22) ^ w) & 0xFFFFFFFF


@wp.kernel(enable_backward=False)
def random_kernel(seed: int, x: wp.array2d[int], y: wp.array2d[float], xr: wp.array2d[int], yr: wp.array2d[float]):
    i = wp.tid()
    rng = wp.rand_init(seed, i)
    wp.tile_store(x, wp.tile_randi(shape=(2, 3), rng=rng), offset=(2 * i, 0))
    wp.tile_store(y, wp.tile_randf(shape=(2, 3), rng=rng), offset=(2 * i, 0))
    wp.tile_store(xr, wp.tile_randi(shape=(2, 3), rng=rng, min=-5, max=5), offset=(2 * i, 0))
    wp.tile_store(yr, wp.tile_randf(shape=(2, 3), rng=rng, min=-5.0, max=5.0), offset=(2 * i, 0))


def test_random_tiles_follow_warps_cpu_sequence():
    x, xr = wp.zeros((4, 3), dtype=int), wp.zeros((4, 3), dtype=int)
    y, yr = wp.zeros((4, 3), dtype=float), wp.zeros((4, 3), dtype=float)
    wp.launch_tiled(random_kernel, dim=2, inputs=[42, x, y, xr, yr], block_dim=32)
    for blk in range(2):
        state = _pcg(_pcg((42 + _pcg(blk)) & 0xFFFFFFFF))  # rand_init, then the block's one thread
        draws = []
        for _ in range(6):
            state = _pcg(state)
            draws.append(state)
        d = np.array(draws, dtype=np.uint64)
        rows = slice(2 * blk, 2 * blk + 2)
        np.testing.assert_array_equal(x.numpy()[rows].reshape(-1), d.astype(np.uint32).view(np.int32))
        unit = (d >> 8).astype(np.float32) * np.float32(1.0 / 16777216.0)
        np.testing.assert_allclose(y.numpy()[rows].reshape(-1), unit, rtol=1e-7)
        np.testing.assert_array_equal(xr.numpy()[rows].reshape(-1), (d % 10).astype(np.int64) - 5)
        np.testing.assert_allclose(yr.numpy()[rows].reshape(-1), 10 * unit - 5, rtol=1e-6, atol=1e-6)


# ------------------------------------------------------------------------ fused products


@wp.kernel
def fused_kernel(a: wp.array[wp.float64], b: wp.array[wp.float64], alpha: wp.array[wp.float64], y: wp.array[wp.float64]):
    ta = wp.tile_load(a, shape=N)
    tb = wp.tile_load(b, shape=N)
    wp.tile_axpy(wp.tile_extract(wp.tile_load(alpha, shape=1), 0), ta, tb)
    d = wp.tile_dot(ta, tb)
    wp.tile_store(y, tb * d[0])


def test_dot_and_axpy_forward_and_gradients():
    rng = np.random.default_rng(13)
    a0, b0, al0 = rng.normal(size=13), rng.normal(size=13), rng.normal(size=1)
    w = rng.uniform(0.5, 1.5, size=13)

    def forward(a, b, al):
        y = wp.zeros(13, dtype=wp.float64)
        arrs = [wp.array(v, dtype=wp.float64) for v in (a, b, al)]
        wp.launch_tiled(fused_kernel, dim=1, inputs=[*arrs, y], block_dim=32)
        return y.numpy()

    bb = b0 + al0[0] * a0
    np.testing.assert_allclose(forward(a0, b0, al0), bb * np.dot(a0, bb), rtol=1e-12)
    arrs = [wp.array(v, dtype=wp.float64, requires_grad=True) for v in (a0, b0, al0)]
    y = wp.zeros(13, dtype=wp.float64, requires_grad=True)
    grads = _tape_grad(fused_kernel, [*arrs, y], arrs, y, w)
    numeric = [
        central_differences(lambda v: np.sum(w * forward(v, b0, al0)), a0),
        central_differences(lambda v: np.sum(w * forward(a0, v, al0)), b0),
        central_differences(lambda v: np.sum(w * forward(a0, b0, v)), al0),
    ]
    for g, n in zip(grads, numeric):
        np.testing.assert_allclose(g, n, rtol=1e-6, atol=1e-8)


@wp.kernel(enable_backward=False)
def fused_vec_kernel(a: wp.array[wp.mat22], b: wp.array[wp.mat22], d: wp.array[float], out: wp.array[wp.mat22]):
    ta = wp.tile_load(a, shape=M)
    tb = wp.tile_load(b, shape=M)
    wp.tile_store(d, wp.tile_dot(ta, tb))
    wp.tile_axpy(0.5, ta, tb)
    wp.tile_store(out, tb)


def test_dot_and_axpy_on_matrices():
    rng = np.random.default_rng(17)
    a0, b0 = rng.normal(size=(4, 2, 2)).astype(np.float32), rng.normal(size=(4, 2, 2)).astype(np.float32)
    d, out = wp.zeros(1, dtype=float), wp.zeros(4, dtype=wp.mat22)
    wp.launch_tiled(fused_vec_kernel, dim=1, inputs=[wp.array(a0, dtype=wp.mat22), wp.array(b0, dtype=wp.mat22), d, out], block_dim=32)
    np.testing.assert_allclose(d.numpy()[0], np.sum(a0 * b0), rtol=1e-5)
    np.testing.assert_allclose(out.numpy(), b0 + 0.5 * a0, rtol=1e-6)


@wp.kernel(enable_backward=False)
def from_thread_kernel(x: wp.array[float], out: wp.array2d[float]):
    v = x[0] * 2.0
    wp.tile_store(out, wp.tile_from_thread(shape=(2, 3), value=v, thread_idx=0))


def test_tile_from_thread_fills_the_blocks_value():
    out = wp.zeros((2, 3), dtype=float)
    wp.launch_tiled(from_thread_kernel, dim=1, inputs=[wp.array([1.5], dtype=float), out], block_dim=32)
    np.testing.assert_array_equal(out.numpy(), np.full((2, 3), 3.0))


def test_tile_atomic_add_rejects_types_without_atomics():
    @wp.kernel(module="unique")
    def k(a: wp.array[wp.int8], o: wp.array[wp.int8]):
        wp.tile_atomic_add(o, wp.tile_load(a, shape=M))

    with pytest.raises(RuntimeError, match="tile_atomic_add.*only supports"):
        wp.launch_tiled(k, dim=1, inputs=[wp.zeros(4, dtype=wp.int8), wp.zeros(4, dtype=wp.int8)], block_dim=32)
