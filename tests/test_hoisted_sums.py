"""Accumulations into one element for the whole launch (``wp.atomic_add(loss, 0, v)``, an index
that is a constant or an int argument): each CPU thread sums them in local partial sums and adds
the sum once (access.py ``_hoisting_facts``, emit.py ``hoist_loops``). Results must match NumPy
for every thread count, the index is still checked (when something was added), and the
analysis must leave thread-dependent indices alone."""

import numpy as np
import pytest
from threads import with_threads

import weft as wp
from weft.codegen import access


@wp.kernel
def k_total(x: wp.array(dtype=float), out: wp.array(dtype=float)):
    i = wp.tid()
    wp.atomic_add(out, 0, x[i])


@wp.kernel
def k_two_slots(x: wp.array(dtype=wp.float64), out: wp.array(dtype=wp.float64), k: int):
    i = wp.tid()
    wp.atomic_add(out, k, x[i])  # an int argument
    if x[i] > 0.5:  # only some tasks add
        wp.atomic_sub(out, 0, x[i] * x[i])


@wp.kernel
def k_count(flags: wp.array(dtype=int), n: wp.array(dtype=wp.int64)):
    i = wp.tid()
    if flags[i] != 0:
        wp.atomic_add(n, 0, wp.int64(1))


@wp.kernel
def k_vec_and_grid(p: wp.array2d(dtype=wp.vec3), c: wp.array2d(dtype=wp.vec3)):
    i, j = wp.tid()
    wp.atomic_add(c, 1, 2, p[i, j])  # a 2-d target, a 2-d launch


@wp.kernel
def k_thread_dependent(x: wp.array(dtype=float), out: wp.array(dtype=float)):
    i = wp.tid()
    wp.atomic_add(out, i % 2, x[i])


@wp.kernel
def k_rebound(x: wp.array(dtype=float), out: wp.array(dtype=float), k: int):
    i = wp.tid()
    k = k + i % 2  # the argument is rebound: not the same element for every task
    wp.atomic_add(out, k, x[i])


@wp.kernel
def k_guarded(x: wp.array(dtype=float), out: wp.array(dtype=float), k: int):
    i = wp.tid()
    if x[i] > 2.0:  # never true below: nothing added, so the bad index is never used
        wp.atomic_add(out, k, x[i])


def slots(kernel):
    return access.analyze(kernel.default_instance().ir).hoist_slots


def test_analysis_hoists_only_launch_invariant_indices():
    assert [(name, idx) for name, _, idx in slots(k_total)] == [("out", (("const", 0),))]
    assert [(name, idx) for name, _, idx in slots(k_two_slots)] == [
        ("out", (("param", "k"),)),
        ("out", (("const", 0),)),
    ]
    assert [(name, idx) for name, _, idx in slots(k_vec_and_grid)] == [("c", (("const", 1), ("const", 2)))]
    assert slots(k_thread_dependent) == ()
    assert slots(k_rebound) == ()


@pytest.mark.parametrize("threads", [1, 2, 3])
@pytest.mark.parametrize("n", [0, 1, 7, 8, 9, 1000, 100_003])
def test_float_total_matches_numpy(threads, n):
    x = np.random.default_rng(n).random(n).astype(np.float32)
    xa = wp.array(x)
    out = wp.array([1.5], dtype=float)
    with_threads(threads, lambda: wp.launch(k_total, dim=n, inputs=[xa, out]))
    np.testing.assert_allclose(out.numpy()[0], 1.5 + x.astype(np.float64).sum(), rtol=1e-5)


@pytest.mark.parametrize("threads", [1, 2])
def test_two_targets_add_and_sub_match_numpy(threads):
    x = np.random.default_rng(3).random(50_001)
    out = wp.zeros(4, dtype=wp.float64)
    with_threads(threads, lambda: wp.launch(k_two_slots, dim=x.size, inputs=[wp.array(x), out, 2]))
    expected = np.zeros(4)
    expected[2] = x.sum()
    expected[0] = -(x[x > 0.5] ** 2).sum()
    np.testing.assert_allclose(out.numpy(), expected, rtol=1e-12)


@pytest.mark.parametrize("threads", [1, 2])
def test_integer_count_is_exact(threads):
    flags = (np.arange(123_457) % 3 == 0).astype(np.int32)
    n = wp.array([10], dtype=wp.int64)
    with_threads(threads, lambda: wp.launch(k_count, dim=flags.size, inputs=[wp.array(flags), n]))
    assert n.numpy()[0] == 10 + flags.sum()


def test_vector_sum_into_one_element_of_a_2d_array():
    p = np.random.default_rng(5).random((37, 29, 3)).astype(np.float32)
    c = wp.zeros((3, 4), dtype=wp.vec3)
    with_threads(2, lambda: wp.launch(k_vec_and_grid, dim=(37, 29), inputs=[wp.array(p, dtype=wp.vec3), c]))
    expected = np.zeros((3, 4, 3))
    expected[1, 2] = p.reshape(-1, 3).astype(np.float64).sum(axis=0)
    np.testing.assert_allclose(c.numpy(), expected, rtol=1e-5)


def test_bad_index_raises_only_when_something_is_added():
    x = wp.array(np.ones(100, dtype=np.float32))
    out = wp.zeros(2, dtype=float)
    wp.launch(k_guarded, dim=100, inputs=[x, out, 5])  # no task adds: no error
    assert out.numpy().tolist() == [0.0, 0.0]
    with pytest.raises(IndexError, match="k_total|out of bounds"):
        wp.launch(k_total, dim=100, inputs=[x, wp.zeros(0, dtype=float)])


def test_thread_dependent_and_rebound_indices_stay_right():
    x = np.arange(1000, dtype=np.float32)
    out = wp.zeros(4, dtype=float)
    with_threads(2, lambda: wp.launch(k_thread_dependent, dim=1000, inputs=[wp.array(x), out]))
    np.testing.assert_allclose(out.numpy()[:2], [x[0::2].sum(), x[1::2].sum()])
    out.zero_()
    with_threads(2, lambda: wp.launch(k_rebound, dim=1000, inputs=[wp.array(x), out, 1]))
    np.testing.assert_allclose(out.numpy()[1:3], [x[0::2].sum(), x[1::2].sum()])


def test_gradient_of_a_hoisted_loss():
    @wp.kernel
    def k_square_loss(x: wp.array(dtype=float), loss: wp.array(dtype=float)):
        i = wp.tid()
        wp.atomic_add(loss, 0, x[i] * x[i])

    xs = np.random.default_rng(9).random(10_001).astype(np.float32)
    x = wp.array(xs, requires_grad=True)
    loss = wp.zeros(1, dtype=float, requires_grad=True)
    tape = wp.Tape()
    with tape:
        with_threads(2, lambda: wp.launch(k_square_loss, dim=xs.size, inputs=[x, loss]))
    tape.backward(loss)
    np.testing.assert_allclose(loss.numpy()[0], (xs.astype(np.float64) ** 2).sum(), rtol=1e-5)
    np.testing.assert_allclose(x.grad.numpy(), 2 * xs, rtol=1e-6)


def test_deterministic_mode_gives_the_same_bits_for_every_thread_count():
    x = wp.array(np.random.default_rng(2).random(200_001).astype(np.float32))
    saved = wp.config.deterministic
    wp.config.deterministic = wp.DeterministicMode.GPU_TO_GPU

    @wp.kernel(module="unique")
    def k_total_deterministic(x: wp.array(dtype=float), out: wp.array(dtype=float)):
        wp.atomic_add(out, 0, x[wp.tid()])

    try:
        results = set()
        for threads in (1, 2, 3):
            out = wp.zeros(1, dtype=float)
            with_threads(threads, lambda: wp.launch(k_total_deterministic, dim=x.shape[0], inputs=[x, out]))
            results.add(out.numpy().tobytes())
        assert len(results) == 1
    finally:
        wp.config.deterministic = saved


# -- the backward pass: gradient adds into one element (a parameter every thread reads) --------


@wp.kernel
def k_affine(x: wp.array(dtype=float), w: wp.array(dtype=float), y: wp.array(dtype=float)):
    i = wp.tid()
    y[i] = w[0] * x[i] + w[1]


@wp.kernel
def k_param_loss(x: wp.array(dtype=float), w: wp.array(dtype=float), loss: wp.array(dtype=float)):
    i = wp.tid()
    wp.atomic_add(loss, 0, w[0] * x[i] * x[i] + w[1] * x[i])


def test_analysis_hoists_shared_parameter_gradients():
    back = access.analyze(k_affine.default_instance().ir).hoist_back_slots
    assert sorted((name, idx) for name, _, idx in back) == [("w", (("const", 0),)), ("w", (("const", 1),))]
    assert access.analyze(k_thread_dependent.default_instance().ir).hoist_back_slots == ()


@pytest.mark.parametrize("threads", [1, 2])
def test_shared_parameter_gradient_matches_numpy(threads):
    xs = np.random.default_rng(11).random(100_003).astype(np.float32)
    x = wp.array(xs, requires_grad=True)
    w = wp.array([2.0, 0.5], dtype=float, requires_grad=True)
    y = wp.zeros(xs.size, dtype=float, requires_grad=True)
    tape = wp.Tape()
    with tape:
        with_threads(threads, lambda: wp.launch(k_affine, dim=xs.size, inputs=[x, w], outputs=[y]))
    seed = np.random.default_rng(12).random(xs.size).astype(np.float32)
    with_threads(threads, lambda: tape.backward(grads={y: seed}))
    x64, s64 = xs.astype(np.float64), seed.astype(np.float64)
    np.testing.assert_allclose(w.grad.numpy(), [(s64 * x64).sum(), s64.sum()], rtol=1e-5)
    np.testing.assert_allclose(x.grad.numpy(), 2.0 * seed, rtol=1e-6)


@wp.kernel
def k_param_gather_loss(x: wp.array(dtype=float), idx: wp.array(dtype=int), w: wp.array(dtype=float), loss: wp.array(dtype=float)):
    i = wp.tid()
    v = x[idx[i]]
    wp.atomic_add(loss, 0, w[0] * v * v + w[1] * v)


@pytest.mark.parametrize("threads", [1, 2])
def test_fast_backward_with_a_shared_parameter_matches_numpy(threads):
    # every gradient add goes to the thread's own element or to a thread-local sum: the fast body
    # makes them in place, nothing is staged
    assert k_param_loss.default_instance().compiled.stage_plan is None
    xs = np.random.default_rng(13).random(70_001).astype(np.float32)
    x = wp.array(xs, requires_grad=True)
    w = wp.array([2.0, 0.5], dtype=float, requires_grad=True)
    loss = wp.zeros(1, dtype=float, requires_grad=True)
    tape = wp.Tape()
    with tape:
        with_threads(threads, lambda: wp.launch(k_param_loss, dim=xs.size, inputs=[x, w, loss]))
    with_threads(threads, lambda: tape.backward(loss))
    x64 = xs.astype(np.float64)
    np.testing.assert_allclose(loss.numpy()[0], (2 * x64 * x64 + 0.5 * x64).sum(), rtol=1e-5)
    np.testing.assert_allclose(w.grad.numpy(), [(x64 * x64).sum(), x64.sum()], rtol=1e-5)
    np.testing.assert_allclose(x.grad.numpy(), 4 * xs + 0.5, rtol=1e-6)


@pytest.mark.parametrize("threads", [1, 2])
def test_staged_backward_with_a_shared_parameter_matches_numpy(threads):
    # the gather's gradient scatters (staged); the parameter's adds go to thread-local sums
    assert k_param_gather_loss.default_instance().compiled.stage_plan is not None
    rng = np.random.default_rng(14)
    n, m = 70_001, 997
    xs = rng.random(m).astype(np.float32)
    idx = rng.integers(0, m, n).astype(np.int32)
    x = wp.array(xs, requires_grad=True)
    w = wp.array([2.0, 0.5], dtype=float, requires_grad=True)
    loss = wp.zeros(1, dtype=float, requires_grad=True)
    tape = wp.Tape()
    with tape:
        with_threads(threads, lambda: wp.launch(k_param_gather_loss, dim=n, inputs=[x, wp.array(idx, dtype=int), w, loss]))
    with_threads(threads, lambda: tape.backward(loss))
    v = xs.astype(np.float64)[idx]
    np.testing.assert_allclose(loss.numpy()[0], (2 * v * v + 0.5 * v).sum(), rtol=1e-5)
    np.testing.assert_allclose(w.grad.numpy(), [(v * v).sum(), v.sum()], rtol=1e-5)
    expected = np.zeros(m)
    np.add.at(expected, idx, 4 * v + 0.5)
    np.testing.assert_allclose(x.grad.numpy(), expected, rtol=1e-5)


def test_shared_parameter_without_a_gradient():
    x = wp.array(np.ones(1000, dtype=np.float32), requires_grad=True)
    w = wp.array([3.0, 1.0], dtype=float)  # no gradient: its hoisted sum has nowhere to go
    y = wp.zeros(1000, dtype=float, requires_grad=True)
    tape = wp.Tape()
    with tape:
        wp.launch(k_affine, dim=1000, inputs=[x, w], outputs=[y])
    tape.backward(grads={y: np.ones(1000, dtype=np.float32)})
    np.testing.assert_allclose(x.grad.numpy(), 3.0)
    assert w.grad is None


@wp.kernel
def k_mat_total(m: wp.array(dtype=wp.mat22d), out: wp.array(dtype=wp.mat22d)):
    i = wp.tid()
    wp.atomic_sub(out, 0, m[i])


def test_matrix_sum_into_one_element():
    m = np.random.default_rng(21).random((1003, 2, 2))
    out = wp.zeros(1, dtype=wp.mat22d)
    with_threads(2, lambda: wp.launch(k_mat_total, dim=1003, inputs=[wp.array(m, dtype=wp.mat22d), out]))
    np.testing.assert_allclose(out.numpy()[0], -m.sum(axis=0), rtol=1e-12)
