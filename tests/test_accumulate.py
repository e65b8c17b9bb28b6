"""Combined accumulations (native/accumulate.h): atomic adds nobody observes and gradient adds of
read-only arrays are summed per thread and added once. Threaded results must equal serial ones
(exactly where the sums are exact, within float tolerance otherwise), and everything the analysis
must refuse (used results, arrays also read or written, overlapping arguments) stays atomic."""

import numpy as np
import pytest
from threads import with_threads

import weft as wp
from weft.codegen import access


@wp.kernel
def k_bins(x: wp.array(dtype=float), bins: wp.array(dtype=float), nbins: int):
    i = wp.tid()
    wp.atomic_add(bins, i % nbins, x[i])


@wp.kernel
def k_bins_f64(x: wp.array(dtype=wp.float64), bins: wp.array(dtype=wp.float64), nbins: int):
    i = wp.tid()
    wp.atomic_add(bins, i % nbins, x[i])


@wp.kernel
def k_scatter_vec3(src: wp.array(dtype=wp.vec3), dst_index: wp.array(dtype=int), dst: wp.array(dtype=wp.vec3)):
    i = wp.tid()
    wp.atomic_add(dst, dst_index[i], src[i])


@wp.kernel
def k_scatter_mat22(src: wp.array(dtype=wp.mat22), dst: wp.array2d(dtype=wp.mat22)):
    i = wp.tid()
    wp.atomic_add(dst, i % 3, i % 5, src[i])


@wp.kernel
def k_springs(x: wp.array(dtype=wp.vec3), ends: wp.array(dtype=int), f: wp.array(dtype=wp.vec3)):
    t = wp.tid()
    i = ends[2 * t]
    j = ends[2 * t + 1]
    d = x[i] - x[j]
    wp.atomic_sub(f, i, d)
    wp.atomic_add(f, j, d)


@wp.kernel
def k_sub_composites(q: wp.array(dtype=wp.quat), tf: wp.array(dtype=wp.transform), qs: wp.array(dtype=wp.quat),
                     tfs: wp.array(dtype=wp.transform)):
    i = wp.tid()
    wp.atomic_sub(qs, i % 2, q[i])
    wp.atomic_sub(tfs, i % 3, tf[i])


@wp.kernel
def k_used_result(acc: wp.array(dtype=float), out: wp.array(dtype=float)):
    i = wp.tid()
    out[i] = wp.atomic_add(acc, 0, 1.0)


@wp.kernel
def k_add_then_read(acc: wp.array(dtype=float), view: wp.array(dtype=float), out: wp.array(dtype=float)):
    i = wp.tid()
    wp.atomic_add(acc, i, 1.0)
    out[i] = view[i]


@wp.kernel
def k_add_and_load_same(acc: wp.array(dtype=float), out: wp.array(dtype=float)):
    i = wp.tid()
    wp.atomic_add(acc, i, 1.0)
    out[i] = acc[i]


@wp.kernel
def k_drag(v: wp.array(dtype=float), drag: wp.array(dtype=float), out: wp.array(dtype=float)):
    i = wp.tid()
    s = v[i]
    out[i] = s - drag[0] * s * wp.abs(s) + drag[1] * s


@wp.kernel
def k_gather(x: wp.array(dtype=wp.vec3), idx: wp.array(dtype=int), out: wp.array(dtype=float)):
    i = wp.tid()
    out[i] = wp.length(x[idx[i]]) + wp.dot(x[i], x[i])


@wp.kernel
def k_loss(x: wp.array(dtype=float), loss: wp.array(dtype=float)):
    i = wp.tid()
    wp.atomic_add(loss, 0, x[i] * x[i])


def test_analysis_marks_only_unobserved_adds():
    def params(kernel, *types):
        inst = kernel.get_instance(*types) if types else kernel.default_instance()
        return list(access.analyze(inst.ir).accum_params)

    assert params(k_bins) == ["bins"]  # x is only read by its own thread: an exclusive, plain gradient add
    assert params(k_used_result) == []  # the old value is used
    assert params(k_add_and_load_same) == []  # the array is also read
    assert params(k_add_then_read) == ["acc"]  # view: thread-exclusive reads; overlap is checked at launch
    assert sorted(params(k_drag)) == ["drag"]  # only read, at index 0 by every thread
    assert sorted(params(k_gather)) == ["x"]


@pytest.mark.parametrize("nbins", [1, 7, 1024, 5000])
def test_float_bins_threaded_equal_serial_and_numpy(nbins):
    n = 400_000
    xs = np.full(n, 0.25, dtype=np.float32)  # every partial sum is exact in float32

    def run():
        bins = wp.zeros(nbins, dtype=float)
        wp.launch(k_bins, dim=n, inputs=[wp.array(xs, dtype=float), bins, nbins])
        return bins.numpy()

    expected = np.bincount(np.arange(n) % nbins, weights=xs, minlength=nbins).astype(np.float32)
    np.testing.assert_array_equal(with_threads(1, run), expected)
    np.testing.assert_array_equal(with_threads(2, run), expected)
    np.testing.assert_array_equal(with_threads(3, run), expected)


def test_double_bins_and_repeated_launches_flush_every_time():
    n = 300_000
    rng = np.random.default_rng(3)
    xs = rng.standard_normal(n)
    bins = wp.zeros(64, dtype=wp.float64)
    x = wp.array(xs, dtype=wp.float64)
    for _ in range(3):
        with_threads(2, lambda: wp.launch(k_bins_f64, dim=n, inputs=[x, bins, 64]))
    expected = 3 * np.bincount(np.arange(n) % 64, weights=xs, minlength=64)
    np.testing.assert_allclose(bins.numpy(), expected, rtol=1e-10, atol=1e-9)


def test_vec3_scatter_threaded_matches_serial():
    n, m = 200_000, 9000  # more targets than table slots: evictions are exercised
    rng = np.random.default_rng(4)
    src = rng.standard_normal((n, 3)).astype(np.float32)
    idx = rng.integers(0, m, n).astype(np.int32)

    def run():
        dst = wp.zeros(m, dtype=wp.vec3)
        wp.launch(k_scatter_vec3, dim=n, inputs=[wp.array(src, dtype=wp.vec3), wp.array(idx, dtype=int), dst])
        return dst.numpy()

    expected = np.zeros((m, 3))
    np.add.at(expected, idx, src.astype(np.float64))
    one, two = with_threads(1, run), with_threads(2, run)
    np.testing.assert_allclose(one, expected, rtol=1e-4, atol=1e-4)
    np.testing.assert_allclose(two, one, rtol=1e-4, atol=1e-4)


def test_spring_forces_add_and_sub_threaded_match_numpy():
    m, n = 3000, 60_000
    rng = np.random.default_rng(7)
    xs = rng.standard_normal((m, 3)).astype(np.float32)
    ends = rng.integers(0, m, (n, 2)).astype(np.int32)

    def run():
        f = wp.zeros(m, dtype=wp.vec3)
        wp.launch(k_springs, dim=n, inputs=[wp.array(xs, dtype=wp.vec3), wp.array(ends.ravel(), dtype=int), f])
        return f.numpy()

    d = (xs[ends[:, 0]] - xs[ends[:, 1]]).astype(np.float64)
    expected = np.zeros((m, 3))
    np.add.at(expected, ends[:, 0], -d)
    np.add.at(expected, ends[:, 1], d)
    assert access.analyze(k_springs.default_instance().ir).accum_params == ("x", "ends", "f")
    np.testing.assert_allclose(with_threads(2, run), expected, rtol=1e-4, atol=1e-4)
    np.testing.assert_allclose(with_threads(1, run), expected, rtol=1e-4, atol=1e-4)


def test_sub_of_quaternions_and_transforms():
    n = 30_000
    rng = np.random.default_rng(8)
    q = rng.integers(-3, 4, (n, 4)).astype(np.float32)  # small integers: every sum is exact
    tf = rng.integers(-3, 4, (n, 7)).astype(np.float32)

    def run():
        qs, tfs = wp.zeros(2, dtype=wp.quat), wp.zeros(3, dtype=wp.transform)
        wp.launch(
            k_sub_composites, dim=n, inputs=[wp.array(q, dtype=wp.quat), wp.array(tf, dtype=wp.transform), qs, tfs]
        )
        return qs.numpy(), tfs.numpy()

    eq, et = np.zeros((2, 4)), np.zeros((3, 7))
    np.add.at(eq, np.arange(n) % 2, -q)
    np.add.at(et, np.arange(n) % 3, -tf)
    for threads in (1, 2):
        got_q, got_t = with_threads(threads, run)
        np.testing.assert_array_equal(got_q, eq)
        np.testing.assert_array_equal(got_t, et)


def test_matrix_scatter_into_2d_array():
    n = 100_000
    src = np.tile(np.array([[1.0, 2.0], [3.0, 4.0]], dtype=np.float32), (n, 1, 1))

    def run():
        dst = wp.zeros((3, 5), dtype=wp.mat22)
        wp.launch(k_scatter_mat22, dim=n, inputs=[wp.array(src, dtype=wp.mat22), dst])
        return dst.numpy()

    counts = np.zeros((3, 5))
    np.add.at(counts, (np.arange(n) % 3, np.arange(n) % 5), 1.0)
    expected = counts[:, :, None, None] * src[0]
    np.testing.assert_array_equal(with_threads(2, run), expected)
    np.testing.assert_array_equal(with_threads(1, run), expected)


def test_used_atomic_results_stay_atomic_under_threads():
    n = 200_000
    acc = wp.zeros(1, dtype=float)
    out = wp.zeros(n, dtype=float)
    with_threads(2, lambda: wp.launch(k_used_result, dim=n, inputs=[acc, out]))
    # each thread saw a distinct previous value: 0, 1, ..., n-1 in some order
    np.testing.assert_array_equal(np.sort(out.numpy()), np.arange(n, dtype=np.float32))
    assert acc.numpy()[0] == n


def test_overlapping_arguments_turn_accumulation_off():
    n = 100_000
    acc = wp.zeros(n, dtype=float)
    out = wp.zeros(n, dtype=float)
    # view is acc itself: each thread must read back its own add
    with_threads(2, lambda: wp.launch(k_add_then_read, dim=n, inputs=[acc, acc, out]))
    np.testing.assert_array_equal(out.numpy(), np.ones(n, dtype=np.float32))
    # an overlapping slice (different base pointer) is caught too
    big = wp.zeros(n + 10, dtype=float)
    out.zero_()
    with_threads(2, lambda: wp.launch(k_add_then_read, dim=n, inputs=[big[0:n], big[0:n], out]))
    np.testing.assert_array_equal(out.numpy(), np.ones(n, dtype=np.float32))
    # apart: accumulated, and still right
    other = wp.zeros(n, dtype=float)
    acc.zero_()
    with_threads(2, lambda: wp.launch(k_add_then_read, dim=n, inputs=[acc, other, out]))
    np.testing.assert_array_equal(acc.numpy(), np.ones(n, dtype=np.float32))
    np.testing.assert_array_equal(out.numpy(), np.zeros(n, dtype=np.float32))


def test_shared_read_gradient_threaded_matches_serial_and_analytic():
    n = 300_000
    rng = np.random.default_rng(5)
    vs = rng.standard_normal(n).astype(np.float32)

    def run():
        v = wp.array(vs, dtype=float, requires_grad=True)
        drag = wp.array([0.1, 0.2], dtype=float, requires_grad=True)
        out = wp.zeros(n, dtype=float, requires_grad=True)
        loss = wp.zeros(1, dtype=float, requires_grad=True)
        tape = wp.Tape()
        with tape:
            wp.launch(k_drag, dim=n, inputs=[v, drag, out])
            wp.launch(k_loss, dim=n, inputs=[out, loss])
        tape.backward(loss)
        return loss.numpy()[0], drag.grad.numpy().copy(), v.grad.numpy().copy()

    l1, d1, g1 = with_threads(1, run)
    l2, d2, g2 = with_threads(2, run)
    v64 = vs.astype(np.float64)
    out = v64 - 0.1 * v64 * np.abs(v64) + 0.2 * v64
    np.testing.assert_allclose([l1, l2], (out * out).sum(), rtol=1e-4)
    expected_drag = [(2 * out * -v64 * np.abs(v64)).sum(), (2 * out * v64).sum()]
    # 300k float32 additions in sequence (one thread) drift by ~1e-4 relative; partial sums less
    np.testing.assert_allclose(d1, expected_drag, rtol=1e-3)
    np.testing.assert_allclose(d2, expected_drag, rtol=1e-3)
    np.testing.assert_array_equal(g2, g1)  # thread-exclusive gradients: plain adds, bitwise equal


def test_gather_gradient_threaded_matches_serial():
    n, m = 200_000, 5000
    rng = np.random.default_rng(6)
    xs = rng.standard_normal((n, 3)).astype(np.float32)
    idx = rng.integers(0, m, n).astype(np.int32)

    def run():
        x = wp.array(xs, dtype=wp.vec3, requires_grad=True)
        out = wp.zeros(n, dtype=float, requires_grad=True)
        tape = wp.Tape()
        with tape:
            wp.launch(k_gather, dim=n, inputs=[x, wp.array(idx, dtype=int), out])
        tape.backward(grads={out: np.ones(n, dtype=np.float32)})
        return x.grad.numpy().copy()

    one, two = with_threads(1, run), with_threads(2, run)
    expected = 2.0 * xs.astype(np.float64)
    unit = xs[idx] / np.linalg.norm(xs[idx], axis=1, keepdims=True)
    np.add.at(expected, idx, unit.astype(np.float64))
    np.testing.assert_allclose(one, expected, rtol=1e-4, atol=1e-4)
    np.testing.assert_allclose(two, one, rtol=1e-4, atol=1e-4)


# Private copies (accumulate.h): small targets get one zeroed copy per extra thread, summed in
# share order by the last thread; big, strided or non-float targets keep the table.


@pytest.mark.fixed_device("the CPU thread pool's private copies and their order")
def test_private_copies_sum_in_a_fixed_order():
    n, m = 300_000, 2000
    rng = np.random.default_rng(11)
    src = rng.standard_normal((n, 3)).astype(np.float32)  # inexact sums: the order shows
    idx = rng.integers(0, m, n).astype(np.int32)
    src_w, idx_w = wp.array(src, dtype=wp.vec3), wp.array(idx, dtype=int)

    def run():
        dst = wp.zeros(m, dtype=wp.vec3)
        wp.launch(k_scatter_vec3, dim=n, inputs=[src_w, idx_w, dst])
        return dst.numpy()

    expected = np.zeros((m, 3))
    np.add.at(expected, idx, src.astype(np.float64))
    for threads in (2, 3, 8):  # 8: more threads than this machine's cores (the barrier yields)
        first = with_threads(threads, run)
        np.testing.assert_allclose(first, expected, rtol=1e-4, atol=1e-4)
        for _ in range(3):
            np.testing.assert_array_equal(with_threads(threads, run), first)


def test_targets_too_big_or_strided_for_copies_stay_right():
    rng = np.random.default_rng(12)
    # 1000 tasks into 200k bins: more than 4 scalars per task, so the table takes it
    n, m = 1000, 200_000
    xs = rng.standard_normal(n).astype(np.float32)
    bins_idx = (np.arange(n) * 197) % m

    @wp.kernel
    def k_spread(x: wp.array(dtype=float), bins: wp.array(dtype=float), stride: int, nbins: int):
        i = wp.tid()
        wp.atomic_add(bins, (i * stride) % nbins, x[i])

    def spread(bins):
        wp.launch(k_spread, dim=n, inputs=[wp.array(xs, dtype=float), bins, 197, m])
        return bins.numpy()

    expected = np.zeros(m, dtype=np.float32)
    np.add.at(expected, bins_idx, xs)
    np.testing.assert_array_equal(with_threads(2, lambda: spread(wp.zeros(m, dtype=float))), expected)
    # a strided view of a bigger array: no private copy can mirror its layout
    big = wp.zeros(2 * 4000, dtype=float)
    view = big[::2]
    xs2 = np.full(400_000, 0.5, dtype=np.float32)
    with_threads(2, lambda: wp.launch(k_bins, dim=len(xs2), inputs=[wp.array(xs2, dtype=float), view, 4000]))
    got = big.numpy()
    np.testing.assert_array_equal(got[::2], np.full(4000, 50.0, dtype=np.float32))
    np.testing.assert_array_equal(got[1::2], np.zeros(4000, dtype=np.float32))


def test_private_gradient_copies_for_a_spring_backward():
    # the backward accumulates into the gradients of x and v (read-only arrays) from every spring
    @wp.kernel
    def k_spring_energy(x: wp.array(dtype=wp.vec3), v: wp.array(dtype=wp.vec3), ends: wp.array(dtype=int),
                        e: wp.array(dtype=float)):
        t = wp.tid()
        i = ends[2 * t]
        j = ends[2 * t + 1]
        d = x[i] - x[j]
        e[t] = wp.dot(d, d) + wp.dot(v[i], v[j])

    m, n = 4000, 50_000
    rng = np.random.default_rng(13)
    xs = rng.standard_normal((m, 3)).astype(np.float32)
    vs = rng.standard_normal((m, 3)).astype(np.float32)
    ends = rng.integers(0, m, (n, 2)).astype(np.int32)

    def run():
        x = wp.array(xs, dtype=wp.vec3, requires_grad=True)
        v = wp.array(vs, dtype=wp.vec3, requires_grad=True)
        e = wp.zeros(n, dtype=float, requires_grad=True)
        tape = wp.Tape()
        with tape:
            wp.launch(k_spring_energy, dim=n, inputs=[x, v, wp.array(ends.ravel(), dtype=int), e])
        tape.backward(grads={e: np.ones(n, dtype=np.float32)})
        return x.grad.numpy().copy(), v.grad.numpy().copy()

    x64, v64 = xs.astype(np.float64), vs.astype(np.float64)
    d = x64[ends[:, 0]] - x64[ends[:, 1]]
    gx, gv = np.zeros((m, 3)), np.zeros((m, 3))
    np.add.at(gx, ends[:, 0], 2 * d)
    np.add.at(gx, ends[:, 1], -2 * d)
    np.add.at(gv, ends[:, 0], v64[ends[:, 1]])
    np.add.at(gv, ends[:, 1], v64[ends[:, 0]])
    for threads in (1, 2, 3):
        got_x, got_v = with_threads(threads, run)
        np.testing.assert_allclose(got_x, gx, rtol=1e-4, atol=1e-4)
        np.testing.assert_allclose(got_v, gv, rtol=1e-4, atol=1e-4)


def test_kernel_error_during_private_copies_leaves_the_next_launch_right():
    n, m = 200_000, 500
    idx = (np.arange(n) % m).astype(np.int32)
    bad = idx.copy()
    bad[n - 10] = m + 7  # out of bounds in the last share
    xs = np.full(n, 0.5, dtype=np.float32)
    src = wp.array(np.repeat(xs[:, None], 3, axis=1), dtype=wp.vec3)

    def launch(index):
        dst = wp.zeros(m, dtype=wp.vec3)
        wp.launch(k_scatter_vec3, dim=n, inputs=[src, wp.array(index, dtype=int), dst])
        return dst.numpy()

    def run():
        with pytest.raises(IndexError, match="k_scatter_vec3"):
            launch(bad)
        return launch(idx)

    expected = np.full((m, 3), 0.5 * n / m, dtype=np.float32)
    for threads in (2, 3):
        np.testing.assert_array_equal(with_threads(threads, run), expected)


GRADIENT_OF_A_READ_ONLY_INPUT = """
import numpy as np
import weft as wp

wp.config.quiet = True
wp.config.cpu_threads, wp.config.cpu_adaptive = 2, False


@wp.kernel
def horner(x: wp.array(dtype=float), c: wp.array(dtype=float), n: int, y: wp.array(dtype=float)):
    i = wp.tid()
    s = float(1.0)
    for j in range(n):
        s = s * x[i] + c[j]
    y[i] = s


rng = np.random.default_rng(3)
xs = rng.uniform(0.5, 1.0, 50_000).astype(np.float32)
cs = rng.uniform(0.0, 0.1, 8).astype(np.float32)
x = wp.array(xs, dtype=float, requires_grad=True)
c = wp.array(cs, dtype=float)  # no gradient: its accumulated adjoint has nowhere to go
y = wp.zeros(len(xs), dtype=float, requires_grad=True)
tape = wp.Tape()
with tape:
    wp.launch(horner, dim=len(xs), inputs=[x, c, len(cs), y])
y.grad.fill_(1.0)
tape.backward()
print(repr(x.grad.numpy().astype(np.float64).tolist()))
"""


def test_threaded_backward_whose_only_accumulated_gradient_is_none_in_a_new_process(tmp_path):
    # A worker thread that never held private copies got a null space for the 0 bytes of a launch
    # whose every accumulation target is None, and the launch raised MemoryError. Only a new
    # process has such workers, so this runs in one.
    import ast
    import os
    import subprocess
    import sys

    script = tmp_path / "read_only_input.py"
    script.write_text(GRADIENT_OF_A_READ_ONLY_INPUT)
    env = dict(os.environ)
    env.pop("WEFT_CPU_THREADS", None)
    out = subprocess.run(
        [sys.executable, str(script)], env=env, capture_output=True, text=True, timeout=600, check=False
    )
    assert out.returncode == 0, out.stdout + out.stderr
    got = np.array(ast.literal_eval(out.stdout.strip().splitlines()[-1]))
    rng = np.random.default_rng(3)
    xs = rng.uniform(0.5, 1.0, 50_000)
    cs = rng.uniform(0.0, 0.1, 8).astype(np.float32).astype(np.float64)
    xs = xs.astype(np.float32).astype(np.float64)
    s, ds = np.ones_like(xs), np.zeros_like(xs)
    for cj in cs:
        s, ds = s * xs + cj, ds * xs + s
    np.testing.assert_allclose(got, ds, rtol=1e-5)


@wp.kernel
def k_grid_scatter(x: wp.array(dtype=wp.vec2), m: wp.array(dtype=float), grid: wp.array2d(dtype=float), mom: wp.array2d(dtype=wp.vec2)):
    p = wp.tid()
    i = int(x[p][0])
    j = int(x[p][1])
    for di in range(2):
        for dj in range(2):
            wp.atomic_add(grid, i + di, j + dj, m[p])
            wp.atomic_sub(mom, i + di, j + dj, m[p] * x[p])


def test_shares_that_own_their_memory_add_plainly_and_keep_bounds_checks():
    """One thread, or a share adding into private copies, runs the body whose accumulations are
    plain adds (no test of the thread context per add); the bounds checks stay."""
    rng = np.random.default_rng(9)
    n, g = 50_000, 32
    x = rng.uniform(0, g - 1, (n, 2)).astype(np.float32)
    m = rng.uniform(0.5, 1.5, n).astype(np.float32)

    def run(points):
        grid, mom = wp.zeros((g, g), dtype=float), wp.zeros((g, g), dtype=wp.vec2)
        wp.launch(k_grid_scatter, n, inputs=[wp.array(points, dtype=wp.vec2), wp.array(m, dtype=float), grid, mom])
        return grid.numpy(), mom.numpy()

    want_g, want_m = np.zeros((g, g)), np.zeros((g, g, 2))
    i, j = x[:, 0].astype(int), x[:, 1].astype(int)
    for di in range(2):
        for dj in range(2):
            np.add.at(want_g, (i + di, j + dj), m)
            np.add.at(want_m, (i + di, j + dj), -(m[:, None] * x))
    for threads in (1, 2):
        got_g, got_m = with_threads(threads, lambda: run(x))
        np.testing.assert_allclose(got_g, want_g, rtol=1e-4)
        np.testing.assert_allclose(got_m, want_m, rtol=1e-4, atol=1e-2)
    inst = next(iter(k_grid_scatter._instances.values()))
    source = inst.binding.source
    assert "_forward_fast_plain_body" in source and "weft::plain_add(" in source and "weft::plain_sub(" in source
    bad = x.copy()
    bad[n // 2] = (g - 0.5, 5.0)  # i == g - 1, so i + 1 is out of bounds
    for threads in (1, 2):
        with pytest.raises(IndexError, match="k_grid_scatter"):
            with_threads(threads, lambda: run(bad))
