"""Loop-indexed accesses ``a[j]`` in ``for j in range(start, stop)`` with launch-invariant bounds
run unchecked when one test per launch shows the range inside the array (access.py
``access.analyze``); otherwise the checked body runs and raises as before."""

import numpy as np
import pytest

import weft as wp
from weft.codegen import access


@wp.kernel
def k_pair_sums(x: wp.array(dtype=float), n: int, out: wp.array(dtype=float)):
    i = wp.tid()
    s = float(0.0)
    for j in range(n):
        s += x[j] * x[i]
    out[i] = s


@wp.kernel
def k_strided_range(x: wp.array(dtype=float), start: int, stop: int, out: wp.array(dtype=float)):
    i = wp.tid()
    s = float(0.0)
    for j in range(start, stop, 2):
        s += x[j]
    out[i] = s + float(i)


@wp.kernel
def k_not_invariant(x: wp.array(dtype=float), counts: wp.array(dtype=int), out: wp.array(dtype=float)):
    i = wp.tid()
    s = float(0.0)
    for j in range(counts[i]):  # the stop differs per thread: stays checked
        s += x[j]
    out[i] = s


@wp.kernel
def k_loop_loss(x: wp.array(dtype=float), n: int, loss: wp.array(dtype=float)):
    i = wp.tid()
    s = float(0.0)
    for j in range(n):
        s += wp.sin(x[j]) * x[i]
    wp.atomic_add(loss, 0, s)


def test_analysis_finds_invariant_loop_accesses():
    ir = k_pair_sums.default_instance().ir
    facts = access.analyze(ir)
    assert facts.loop_bounds == (("x", ("const", 0), ("param", "n")),)
    ir = k_strided_range.default_instance().ir
    facts = access.analyze(ir)
    # a step other than 1 goes to index_ranges.py, which also tests that j += step cannot wrap
    assert facts.loop_bounds == ()
    assert [(name, ndim) for name, ndim, _ in facts.range_checks] == [("x", 1)]
    ir = k_not_invariant.default_instance().ir
    facts = access.analyze(ir)
    assert facts.loop_bounds == ()


def test_in_range_loops_match_numpy():
    xs = np.linspace(-0.5, 1.0, 300, dtype=np.float32)
    out = wp.zeros(300, dtype=float)
    wp.launch(k_pair_sums, dim=300, inputs=[wp.array(xs, dtype=float), 300, out])
    np.testing.assert_allclose(out.numpy(), xs.sum() * xs, rtol=1e-4, atol=1e-5)
    wp.launch(k_strided_range, dim=4, inputs=[wp.array(xs, dtype=float), 3, 300, out])
    np.testing.assert_allclose(out.numpy()[:4], xs[3:300:2].sum() + np.arange(4), rtol=1e-5)


def test_out_of_range_loops_still_raise():
    x = wp.array(np.ones(10, dtype=np.float32), dtype=float)
    out = wp.zeros(4, dtype=float)
    with pytest.raises(IndexError, match="index 10 is out of bounds"):
        wp.launch(k_pair_sums, dim=4, inputs=[x, 11, out])
    with pytest.raises(IndexError, match="index 11 is out of bounds"):
        wp.launch(k_strided_range, dim=4, inputs=[x, 1, 13, out])
    # a negative start counts from the end (Python's rule), through the checked body
    wp.launch(k_strided_range, dim=1, inputs=[x, -3, 0, out])
    assert out.numpy()[0] == 2.0
    counts = wp.array(np.array([3, 12, 1, 0], dtype=np.int32), dtype=int)
    with pytest.raises(IndexError, match="index 10 is out of bounds"):
        wp.launch(k_not_invariant, dim=4, inputs=[x, counts, out])


def test_gradient_through_unchecked_loop_matches_analytic():
    xs = np.linspace(-1.0, 1.0, 64, dtype=np.float32)
    x = wp.array(xs, dtype=float, requires_grad=True)
    loss = wp.zeros(1, dtype=float, requires_grad=True)
    tape = wp.Tape()
    with tape:
        wp.launch(k_loop_loss, dim=64, inputs=[x, 64, loss])
    tape.backward(loss)
    # loss = sum_i x_i * S with S = sum_j sin(x_j): d/dx_k = S + cos(x_k) * sum_i x_i
    x64 = xs.astype(np.float64)
    expected = np.sin(x64).sum() + np.cos(x64) * x64.sum()
    np.testing.assert_allclose(x.grad.numpy(), expected, rtol=1e-4, atol=1e-4)


# Constant indices (``drag[0]``) and the contiguity the unchecked body needs: one test per launch
# picks the unchecked body; a short array or a strided view sends the launch to the checked one.


@wp.kernel
def k_const_index(v: wp.array(dtype=float), coef: wp.array(dtype=float), out: wp.array(dtype=float)):
    i = wp.tid()
    out[i] = v[i] * coef[0] + coef[2]


def test_analysis_finds_constant_indices():
    ir = k_const_index.default_instance().ir
    facts = access.analyze(ir)
    assert facts.const_bounds == (("coef", (0,)), ("coef", (2,)))
    assert sorted(facts.tid_arrays) == ["out", "v"]


def test_constant_indices_in_and_out_of_range():
    v = np.arange(1000, dtype=np.float32)
    out = wp.zeros(1000, dtype=float)
    wp.launch(k_const_index, dim=1000, inputs=[wp.array(v), wp.array([2.0, 0.0, 0.5], dtype=float), out])
    np.testing.assert_array_equal(out.numpy(), v * 2.0 + 0.5)
    with pytest.raises(IndexError, match="k_const_index"):
        wp.launch(k_const_index, dim=1000, inputs=[wp.array(v), wp.array([2.0, 0.0], dtype=float), out])


def test_strided_views_take_the_checked_body_and_stay_right():
    base = np.arange(4000, dtype=np.float32)
    big = wp.array(base)
    coef = wp.array(np.array([3.0, 0.0, 1.0, 0.0, -1.0, 0.0], dtype=np.float32))
    out_big = wp.zeros(4000, dtype=float)
    # every second element: the stride is not the element size
    wp.launch(k_const_index, dim=2000, inputs=[big[::2], coef[::2], out_big[1::2]])
    got = out_big.numpy()
    np.testing.assert_array_equal(got[1::2], base[::2] * 3.0 + -1.0)
    np.testing.assert_array_equal(got[::2], np.zeros(2000, dtype=np.float32))
    # in place (out is v): element-wise kernels may be vectorized; each thread reads before it writes
    wp.launch(k_const_index, dim=4000, inputs=[big, coef, big])
    np.testing.assert_array_equal(big.numpy(), base * 3.0 + 1.0)


@wp.kernel
def k_mat_ops(a: wp.array(dtype=wp.mat33), b: wp.array(dtype=wp.mat33), out: wp.array(dtype=wp.mat33),
              dets: wp.array(dtype=float)):
    i = wp.tid()
    c = a[i] * b[i]
    d = wp.determinant(c)
    out[i] = wp.inverse(c) * wp.transpose(a[i]) + b[i] * d
    dets[i] = d


def test_mat33_elements_through_their_stride_contiguous_or_not():
    # 9-component elements are addressed through the array's stride in the fast body (array.h
    # offset_by_element_size), so strided views run it too; singular matrices invert to zero
    n = 1000
    rng = np.random.default_rng(21)
    a = np.eye(3, dtype=np.float32) + 0.3 * rng.random((2 * n, 3, 3), dtype=np.float32)
    b = np.eye(3, dtype=np.float32) + 0.3 * rng.random((2 * n, 3, 3), dtype=np.float32)
    a[4] = 0.0  # singular product at element 4 (contiguous) and 2 (every-second view)
    a64, b64 = a.astype(np.float64), b.astype(np.float64)

    def expected(x, y):
        c = x @ y
        d = np.linalg.det(c)
        inv = np.zeros_like(c)
        ok = d != 0
        inv[ok] = np.linalg.inv(c[ok])
        return inv @ np.transpose(x, (0, 2, 1)) + y * d[:, None, None], d

    wa, wb = wp.array(a, dtype=wp.mat33), wp.array(b, dtype=wp.mat33)
    for sl, dim in ((slice(0, 2 * n), 2 * n), (slice(0, 2 * n, 2), n)):
        out = wp.zeros(2 * n, dtype=wp.mat33)
        dets = wp.zeros(2 * n, dtype=float)
        wp.launch(k_mat_ops, dim=dim, inputs=[wa[sl], wb[sl], out[sl], dets[sl]])
        want, want_d = expected(a64[sl], b64[sl])
        np.testing.assert_allclose(out.numpy()[sl], want, rtol=2e-4, atol=2e-4)
        np.testing.assert_allclose(dets.numpy()[sl], want_d, rtol=2e-4, atol=2e-5)
        if sl.step == 2:
            np.testing.assert_array_equal(out.numpy()[1::2], 0.0)


# Affine thread indices (``ends[2 * i + 1]``): one test per launch covers the last thread's index.


@wp.kernel
def k_pairs(ends: wp.array(dtype=int), x: wp.array(dtype=float), out: wp.array(dtype=float)):
    t = wp.tid()
    a = ends[2 * t]
    b = ends[t * 2 + 1]
    out[t] = x[a] - x[b] + x[3 + 3 * t]


@wp.kernel
def k_not_affine(x: wp.array(dtype=float), shift: int, out: wp.array(dtype=float)):
    t = wp.tid()
    out[t] = x[2 * t - 1 + shift] + x[t * t]  # a negative constant, a product of thread indices


def test_analysis_finds_affine_thread_indices():
    ir = k_pairs.default_instance().ir
    facts = access.analyze(ir)
    assert facts.affine_bounds == (("ends", 2, 0), ("ends", 2, 1), ("x", 3, 3))
    ir = k_not_affine.default_instance().ir
    facts = access.analyze(ir)
    assert facts.affine_bounds == ()


@pytest.mark.fixed_device("reads the kernel's CPU source")
def test_affine_indices_in_range_out_of_range_and_strided():
    rng = np.random.default_rng(5)
    n = 3000
    xs = rng.random(3 * n + 3).astype(np.float32)
    ends = rng.integers(0, 3 * n, size=2 * n).astype(np.int32)
    want = xs[ends[0::2]] - xs[ends[1::2]] + xs[3 + 3 * np.arange(n)]
    x, out = wp.array(xs), wp.zeros(n, dtype=float)
    wp.launch(k_pairs, dim=n, inputs=[wp.array(ends), x, out])
    np.testing.assert_array_equal(out.numpy(), want)
    # the unchecked body's per-launch test covers the last thread's pair (c = 1 decides for k = 2)
    src = k_pairs.default_instance().binding.source.splitlines()
    test = next(line for line in src if "__builtin_expect" in line and "arg_ends" in line)
    assert "weft::int64(2) * (local_bounds.size - 1) + 1 < weft::int64(local_args.arg_ends.shape[0])" in test
    assert "weft::int64(3) * (local_bounds.size - 1) + 3 < weft::int64(local_args.arg_x.shape[0])" in test
    assert "(local_bounds.size - 1) + 0 <" not in test
    # too short for the last thread's affine index: the checked body runs and names the access
    with pytest.raises(IndexError, match=r"index 9000 is out of bounds .* shape \(9000,\).*k_pairs.*x\[3 \+ 3 \* t\]"):
        wp.launch(k_pairs, dim=n, inputs=[wp.array(ends), wp.array(xs[: 3 * n]), out])
    with pytest.raises(IndexError, match=r"index 5999 .* shape \(5999,\).*k_pairs.*ends\[t \* 2 \+ 1\]"):
        wp.launch(k_pairs, dim=n, inputs=[wp.array(ends[:-1]), x, out])
    # a strided view of the index array: addressed through its stride, same numbers
    wide = np.zeros(4 * n, dtype=np.int32)
    wide[::2] = ends
    out2 = wp.zeros(n, dtype=float)
    wp.launch(k_pairs, dim=n, inputs=[wp.array(wide)[::2], x, out2])
    np.testing.assert_array_equal(out2.numpy(), want)


def test_affine_index_gradients_match_numpy():
    # the backward pass of the unchecked body: gradients scattered through the pair indices
    rng = np.random.default_rng(6)
    n = 2000
    xs = rng.random(3 * n + 3).astype(np.float32)
    ends = rng.integers(0, len(xs), size=2 * n).astype(np.int32)
    x = wp.array(xs, requires_grad=True)
    out = wp.zeros(n, dtype=float, requires_grad=True)
    tape = wp.Tape()
    with tape:
        wp.launch(k_pairs, dim=n, inputs=[wp.array(ends), x, out])
    out.grad.fill_(1.0)
    tape.backward()
    want = np.zeros(len(xs))
    np.add.at(want, ends[0::2], 1.0)
    np.add.at(want, ends[1::2], -1.0)
    np.add.at(want, 3 + 3 * np.arange(n), 1.0)
    np.testing.assert_allclose(x.grad.numpy(), want, atol=1e-6)


# Loops that run at least once: in the fast body a range loop with launch-invariant bounds is a
# do-while loop, its first test done once per launch (``entry_checks``). With no test before the
# first trip GCC can vectorise the task loop around it, several threads in the lanes of a vector.


@wp.kernel
def k_gravity(pos: wp.array(dtype=wp.vec3), mass: wp.array(dtype=float), start: int, stop: int,
              acc: wp.array(dtype=wp.vec3)):
    i = wp.tid()
    p = pos[i]
    a = wp.vec3(0.0, 0.0, 0.0)
    for j in range(start, stop):
        d = pos[j] - p
        inv = 1.0 / wp.sqrt(wp.dot(d, d) + 0.01)
        a = a + d * (mass[j] * inv * inv * inv)
    acc[i] = a


@wp.kernel
def k_first_above(x: wp.array(dtype=float), n: int, limit: float, out: wp.array(dtype=int)):
    i = wp.tid()
    found = int(-1)
    for j in range(n):
        if x[j] * float(i + 1) > limit:
            found = j
            break
    for k in range(3):
        found += k
    out[i] = found


def test_analysis_finds_loops_that_run_at_least_once():
    facts = access.analyze(k_gravity.default_instance().ir)
    assert len(facts.entered_loops) == 1
    (cond,) = facts.entry_checks  # stop - start - 1 >= 0
    assert [sorted(t for t in f.terms) for alt in cond for f in alt] == [[(("param", "start"), -1), (("param", "stop"), 1)]]
    facts = access.analyze(k_first_above.default_instance().ir)
    assert len(facts.entered_loops) == 1 and len(facts.entry_checks) == 1  # range(3) is unrolled
    facts = access.analyze(k_not_invariant.default_instance().ir)
    assert facts.entered_loops == frozenset() and facts.entry_checks == ()


def _gravity_float32(pos, mass, start, stop):
    """The kernel's arithmetic in float32, one IEEE operation at a time in the kernel's order."""
    a = np.zeros_like(pos)
    f32 = np.float32
    for j in range(start, stop):
        d = pos[j] - pos
        r2 = (d[:, 0] * d[:, 0] + d[:, 1] * d[:, 1]) + d[:, 2] * d[:, 2]
        inv = f32(1.0) / np.sqrt(r2 + f32(0.01))
        a = a + d * (((mass[j] * inv) * inv) * inv)[:, None]
    return a


@pytest.mark.fixed_device("compares the CPU's bits with NumPy's float32 arithmetic")
def test_gravity_loop_gives_numpys_float32_bits_for_every_trip_count():
    rng = np.random.default_rng(8)
    n = 203  # not a multiple of any vector width
    pos = rng.standard_normal((n, 3)).astype(np.float32)
    mass = rng.uniform(0.5, 1.5, n).astype(np.float32)
    wpos, wmass = wp.array(pos, dtype=wp.vec3), wp.array(mass)
    acc = wp.zeros(n, dtype=wp.vec3)
    # (0, n) and (5, 6) run the do-while body; (7, 7) and (9, 2) enter no loop: the checked body
    for start, stop in ((0, n), (5, 6), (7, 7), (9, 2)):
        wp.launch(k_gravity, dim=n, inputs=[wpos, wmass, start, stop, acc])
        np.testing.assert_array_equal(acc.numpy(), _gravity_float32(pos, mass, start, stop))
    with pytest.raises(IndexError, match="k_gravity"):
        wp.launch(k_gravity, dim=n, inputs=[wpos, wmass, 0, n + 1, acc])
    src = k_gravity.default_instance().binding.source
    assert "} while (" in src and "-weft::int64(local_args.arg_start) + weft::int64(local_args.arg_stop) - 1 >= 0" in src


def test_loops_with_break_and_constant_loops_run_as_before():
    xs = np.array([0.1, 0.3, 0.2, 0.9, 0.4], dtype=np.float32)
    out = wp.zeros(6, dtype=int)
    for n in (5, 2, 0):
        wp.launch(k_first_above, dim=6, inputs=[wp.array(xs), n, 0.75, out])
        want = []
        for i in range(6):
            hits = [j for j in range(n) if xs[j] * np.float32(i + 1) > np.float32(0.75)]
            want.append((hits[0] if hits else -1) + 3)
        np.testing.assert_array_equal(out.numpy(), want)
