"""Staged loops (codegen/staging.py, native/staging.h): the backward pass of a straight-line
scatter kernel runs as a pure loop over chunks of tasks that records its gradient adds, then
applies them in task order; so does the forward pass of one whose arithmetic outweighs its
gathers (an FEM element), recording its atomic adds. Results must match the plain (checked) body
and NumPy for any thread count, arrays without gradient buffers, negative indices and chunk
remainders, and an index out of range must raise the same error, after the same adds, as the
plain loop."""

import numpy as np
import pytest
from markers import location_of

import weft as wp
from weft.codegen.emit_cpu import CPURenderer


@wp.func
def spring_force(xi: wp.vec3, xj: wp.vec3, rest: float, ke: float):
    d = xi - xj
    l = wp.length(d)
    return d / l * (ke * (l - rest))


@wp.kernel
def k_springs(
    x: wp.array(dtype=wp.vec3),
    ends: wp.array(dtype=int),
    rest: wp.array(dtype=float),
    ke: float,
    f: wp.array(dtype=wp.vec3),
):
    t = wp.tid()
    i = ends[2 * t]
    j = ends[2 * t + 1]
    fs = spring_force(x[i], x[j], rest[t], ke)  # a func without array arguments: still staged
    wp.atomic_sub(f, i, fs)
    wp.atomic_add(f, j, fs)


@wp.kernel
def k_springs_branchy(
    x: wp.array(dtype=wp.vec3),
    ends: wp.array(dtype=int),
    rest: wp.array(dtype=float),
    ke: float,
    f: wp.array(dtype=wp.vec3),
):
    t = wp.tid()
    i = ends[2 * t]
    j = ends[2 * t + 1]
    fs = spring_force(x[i], x[j], rest[t], ke)
    if ke > 0.0:  # control flow: keeps the plain loop
        wp.atomic_sub(f, i, fs)
    wp.atomic_add(f, j, fs)


@wp.func
def gathered(x: wp.array(dtype=float), i: int):
    return x[i]


@wp.kernel
def k_func_reads_array(x: wp.array(dtype=float), idx: wp.array(dtype=int), loss: wp.array(dtype=float)):
    t = wp.tid()
    wp.atomic_add(loss, 0, gathered(x, idx[t]))  # its adjoint adds into x.grad itself: not staged


@wp.kernel
def k_scatter_square(x: wp.array(dtype=float), idx: wp.array(dtype=int), out: wp.array(dtype=float)):
    t = wp.tid()
    wp.atomic_add(out, idx[t], x[t] * x[t])  # marker: scatter-read


@wp.kernel
def k_gather_2d(a: wp.array2d(dtype=float), rows: wp.array(dtype=int), w: wp.array(dtype=float), loss: wp.array(dtype=float)):
    t = wp.tid()
    r = rows[t]
    v = a[r, t % 3] * w[t]
    wp.atomic_add(loss, 0, v * v)


def staged_symbols(kernel):
    inst = kernel.default_instance()
    src = CPURenderer().render_module([inst], inst.funcs)
    return "_backward_staged_body" in src


def springs_problem(n_side=13, seed=0):
    rng = np.random.default_rng(seed)
    g = np.arange(n_side * n_side).reshape(n_side, n_side)
    pairs = [(g[:-1, :], g[1:, :]), (g[:, :-1], g[:, 1:]), (g[:-1, :-1], g[1:, 1:])]
    ends = np.concatenate([np.stack([a.ravel(), b.ravel()], -1) for a, b in pairs]).astype(np.int32)
    gx, gz = np.meshgrid(np.arange(n_side), np.arange(n_side), indexing="ij")
    x = np.stack([gx, np.zeros_like(gx), gz], -1).reshape(-1, 3).astype(np.float64) * 0.1
    x += rng.normal(scale=0.01, size=x.shape)
    rest = np.linalg.norm(x[ends[:, 0]] - x[ends[:, 1]], axis=1) * rng.uniform(0.8, 1.2, len(ends))
    seed_f = rng.normal(size=x.shape)
    return x.astype(np.float32), ends, rest.astype(np.float32), seed_f.astype(np.float32)


def springs_backward(kernel, x_np, ends, rest, seed_f, threads, x_grad=True):
    wp.config.cpu_threads = threads
    x = wp.array(x_np, dtype=wp.vec3, requires_grad=x_grad)
    f = wp.zeros(len(x_np), dtype=wp.vec3, requires_grad=True)
    e = wp.array(ends.ravel(), dtype=int)
    r = wp.array(rest, dtype=float, requires_grad=True)
    tape = wp.Tape()
    with tape:
        wp.launch(kernel, dim=len(ends), inputs=[x, e, r, 1000.0, f])
    tape.backward(grads={f: seed_f})
    return (x.grad.numpy() if x_grad else None), r.grad.numpy(), f.numpy()


def springs_reference(x, ends, rest, seed_f, ke=1000.0):
    """d(sum seed_f * f)/dx and /drest in float64."""
    x = x.astype(np.float64)
    i, j = ends[:, 0], ends[:, 1]
    d = x[i] - x[j]
    l = np.linalg.norm(d, axis=1)
    u = d / l[:, None]
    g = seed_f.astype(np.float64)[j] - seed_f.astype(np.float64)[i]  # d loss / d fs
    s = ke * (l - rest)
    # fs = u * s: d fs/d d = s/l (I - u u^T) + ke u u^T
    gu = (g * u).sum(1)
    gd = (s / l)[:, None] * (g - u * gu[:, None]) + ke * u * gu[:, None]
    gx = np.zeros_like(x)
    np.add.at(gx, i, gd)
    np.add.at(gx, j, -gd)
    return gx, -ke * gu


@pytest.fixture
def restore_threads():
    saved = wp.config.cpu_threads
    yield
    wp.config.cpu_threads = saved


def test_straight_line_scatter_kernels_are_staged_and_branchy_ones_are_not():
    assert staged_symbols(k_springs)
    assert staged_symbols(k_gather_2d)
    # its only gradient add is the thread's own x[t], but the scatter's gradient is a gather at
    # a data-dependent index, which the staged body reads branch-free
    assert staged_symbols(k_scatter_square)
    assert not staged_symbols(k_springs_branchy)
    assert not staged_symbols(k_func_reads_array)


@pytest.mark.parametrize("threads", [1, 2, 3])
def test_staged_springs_gradients_match_float64_reference(threads, restore_threads):
    x, ends, rest, seed_f = springs_problem()
    gx, grest, _ = springs_backward(k_springs, x, ends, rest, seed_f, threads)
    ref_x, ref_rest = springs_reference(x, ends, rest, seed_f)
    np.testing.assert_allclose(gx, ref_x, rtol=2e-3, atol=2e-3 * np.abs(ref_x).max())
    np.testing.assert_allclose(grest, ref_rest, rtol=2e-3, atol=2e-3 * np.abs(ref_rest).max())


def test_staged_and_plain_loops_agree(restore_threads):
    # The same springs with and without staging (the branch is always taken): same gradients up
    # to float contraction, and the staged ones do not depend on the thread count.
    x, ends, rest, seed_f = springs_problem(n_side=17, seed=3)  # 816 springs: a partial last chunk
    staged = [springs_backward(k_springs, x, ends, rest, seed_f, t) for t in (1, 2, 3)]
    plain = springs_backward(k_springs_branchy, x, ends, rest, seed_f, 1)
    for s in staged:
        np.testing.assert_allclose(s[0], plain[0], rtol=1e-5, atol=1e-5 * np.abs(plain[0]).max())
        np.testing.assert_allclose(s[1], plain[1], rtol=1e-5, atol=1e-5 * np.abs(plain[1]).max())
    np.testing.assert_array_equal(staged[0][1], staged[2][1])  # exclusive adds: one task each


def test_arrays_without_gradient_buffers(restore_threads):
    x, ends, rest, seed_f = springs_problem(seed=5)
    _, grest, _ = springs_backward(k_springs, x, ends, rest, seed_f, 2, x_grad=False)
    _, ref_rest = springs_reference(x, ends, rest, seed_f)
    np.testing.assert_allclose(grest, ref_rest, rtol=2e-3, atol=2e-3 * np.abs(ref_rest).max())


def test_negative_indices_wrap_like_python(restore_threads):
    wp.config.cpu_threads = 2
    n, m = 200, 7
    rng = np.random.default_rng(1)
    xs = rng.normal(size=n).astype(np.float32)
    idx = rng.integers(-m, m, size=n).astype(np.int32)
    x = wp.array(xs, dtype=float, requires_grad=True)
    out = wp.zeros(m, dtype=float, requires_grad=True)
    seed = rng.normal(size=m).astype(np.float32)
    tape = wp.Tape()
    with tape:
        wp.launch(k_scatter_square, dim=n, inputs=[x, wp.array(idx, dtype=int), out])
    tape.backward(grads={out: seed})
    np.testing.assert_allclose(x.grad.numpy(), 2 * xs * seed[idx % m], rtol=1e-6)


@pytest.mark.parametrize("threads", [1, 2])
def test_gather_from_2d_array(threads, restore_threads):
    wp.config.cpu_threads = threads
    rng = np.random.default_rng(2)
    n = 333
    a_np = rng.normal(size=(5, 3)).astype(np.float32)
    rows = rng.integers(0, 5, size=n).astype(np.int32)
    w_np = rng.normal(size=n).astype(np.float32)
    a = wp.array(a_np, dtype=float, requires_grad=True)
    w = wp.array(w_np, dtype=float, requires_grad=True)
    loss = wp.zeros(1, dtype=float, requires_grad=True)
    tape = wp.Tape()
    with tape:
        wp.launch(k_gather_2d, dim=n, inputs=[a, wp.array(rows, dtype=int), w, loss])
    tape.backward(loss)
    cols = np.arange(n) % 3
    v = a_np[rows, cols].astype(np.float64) * w_np
    ref_a = np.zeros((5, 3))
    np.add.at(ref_a, (rows, cols), 2 * v * w_np)
    np.testing.assert_allclose(a.grad.numpy(), ref_a, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(w.grad.numpy(), 2 * v * a_np[rows, cols], rtol=1e-5, atol=1e-6)


@pytest.mark.fixed_device("staged backward loops and their order of adds are the CPU's")
def test_out_of_range_index_raises_after_the_adds_before_it(restore_threads):
    # One thread: the tasks before the bad one have added their gradients, the rest have not,
    # exactly as in the plain loop; the error names the kernel's line and the index.
    wp.config.cpu_threads = 1
    n, m, bad = 150, 10, 97  # the bad task sits in the second chunk of 64
    xs = np.linspace(0.5, 2.0, n).astype(np.float32)
    idx = (np.arange(n) % m).astype(np.int32)
    idx[bad] = m + 4
    x = wp.array(xs, dtype=float, requires_grad=True)
    out = wp.zeros(m, dtype=float, requires_grad=True)
    out.grad.fill_(1.0)
    with pytest.raises(IndexError) as info:
        wp.launch(
            k_scatter_square,
            dim=n,
            inputs=[x, wp.array(idx, dtype=int), out],
            adj_inputs=[x.grad, None, out.grad],
            adjoint=True,
        )
    msg = str(info.value)
    assert "k_scatter_square" in msg and location_of(__file__, "marker: scatter-read") in msg
    assert str(m + 4) in msg
    expected = np.where(np.arange(n) < bad, 2 * xs, 0.0)
    np.testing.assert_array_equal(x.grad.numpy(), expected.astype(np.float32))


@wp.func
def sin_weight(v: float, w: float):
    return wp.sin(v) * w


@wp.kernel
def k_sin_gather(x: wp.array(dtype=float), w: wp.array(dtype=float), idx: wp.array(dtype=int), out: wp.array(dtype=float)):
    t = wp.tid()
    i = idx[t]
    wp.atomic_add(out, t % 5, sin_weight(x[i], w[i]))  # a C library call, inside a func


@wp.kernel
def k_log_gather(x: wp.array(dtype=float), idx: wp.array(dtype=int), out: wp.array(dtype=float)):
    t = wp.tid()
    wp.atomic_add(out, t % 5, wp.log(x[idx[t]]))  # float32 log: weft's own (math_f32.h), inline


@wp.kernel
def k_log64_gather(x: wp.array(dtype=wp.float64), idx: wp.array(dtype=int), out: wp.array(dtype=wp.float64)):
    t = wp.tid()
    wp.atomic_add(out, t % 5, wp.log(x[idx[t]]))  # float64 log: the C library's


def test_only_bodies_that_call_the_c_library_guard_their_records():
    # a body that calls sinf runs its staged loop scalar anyway: it records an add only when the
    # array has a gradient, so the gradients of arrays without one are not computed
    assert k_sin_gather.default_instance().compiled.stage_plan.guarded
    assert k_log64_gather.default_instance().compiled.stage_plan.guarded
    assert not k_log_gather.default_instance().compiled.stage_plan.guarded
    assert not k_springs.default_instance().compiled.stage_plan.guarded


@pytest.mark.parametrize("threads", [1, 2])
@pytest.mark.parametrize("grads", [("x",), ("w",), ("x", "w")])
def test_guarded_records_with_and_without_gradients(threads, grads, restore_threads):
    wp.config.cpu_threads = threads
    rng = np.random.default_rng(len(grads) + threads)
    n, m = 1_003, 61
    xs = rng.uniform(0.5, 2.0, m).astype(np.float32)
    ws = rng.standard_normal(m).astype(np.float32)
    idx = rng.integers(0, m, n).astype(np.int32)
    x = wp.array(xs, requires_grad="x" in grads)
    w = wp.array(ws, requires_grad="w" in grads)
    out = wp.zeros(5, dtype=float, requires_grad=True)
    tape = wp.Tape()
    with tape:
        wp.launch(k_sin_gather, dim=n, inputs=[x, w, wp.array(idx, dtype=int), out])
    seed = np.arange(1.0, 6.0, dtype=np.float32)
    tape.backward(grads={out: wp.array(seed)})
    s = seed[np.arange(n) % 5].astype(np.float64)
    x64, w64 = xs.astype(np.float64)[idx], ws.astype(np.float64)[idx]
    gx, gw = np.zeros(m), np.zeros(m)
    np.add.at(gx, idx, s * w64 * np.cos(x64))
    np.add.at(gw, idx, s * np.sin(x64))
    if "x" in grads:
        np.testing.assert_allclose(x.grad.numpy(), gx, rtol=1e-5, atol=1e-5)
    else:
        assert x.grad is None
    if "w" in grads:
        np.testing.assert_allclose(w.grad.numpy(), gw, rtol=1e-5, atol=1e-5)
    else:
        assert w.grad is None


@pytest.mark.parametrize("threads", [1, 2])
def test_staged_float32_log_gradients(threads, restore_threads):
    # wp.log of float32 is inline (math_f32.h): the body is not guarded and its loop vectorises
    wp.config.cpu_threads = threads
    rng = np.random.default_rng(7 + threads)
    n, m = 1_001, 83
    xs = rng.uniform(0.1, 3.0, m).astype(np.float32)
    idx = rng.integers(0, m, n).astype(np.int32)
    x = wp.array(xs, requires_grad=True)
    out = wp.zeros(5, dtype=float, requires_grad=True)
    tape = wp.Tape()
    with tape:
        wp.launch(k_log_gather, dim=n, inputs=[x, wp.array(idx, dtype=int), out])
    seed = np.arange(1.0, 6.0, dtype=np.float32)
    tape.backward(grads={out: wp.array(seed)})
    gx = np.zeros(m)
    np.add.at(gx, idx, seed[np.arange(n) % 5] / xs.astype(np.float64)[idx])
    np.testing.assert_allclose(x.grad.numpy(), gx, rtol=1e-5)
    ref = np.zeros(5)
    np.add.at(ref, np.arange(n) % 5, np.log(xs.astype(np.float64)[idx]))
    np.testing.assert_allclose(out.numpy(), ref, rtol=1e-5)


def neo_hookean_kernel(branchy: bool):
    """An FEM element's Neo-Hookean forces (mat33 determinant, inverse and log J); ``branchy``
    puts one add under a condition that always holds, which keeps the plain loop."""

    def neo_hookean(
        x: wp.array(dtype=wp.vec3),
        tets: wp.array2d(dtype=int),
        dm_inv: wp.array(dtype=wp.mat33),
        vol: wp.array(dtype=float),
        mu: float,
        lam: float,
        f: wp.array(dtype=wp.vec3),
    ):
        t = wp.tid()
        i = tets[t, 0]
        j = tets[t, 1]
        k = tets[t, 2]
        l = tets[t, 3]
        x0 = x[i]
        F = wp.matrix_from_cols(x[j] - x0, x[k] - x0, x[l] - x0) * dm_inv[t]
        FinvT = wp.transpose(wp.inverse(F))
        P = mu * (F - FinvT) + lam * wp.log(wp.determinant(F)) * FinvT
        H = -vol[t] * P * wp.transpose(dm_inv[t])
        f1 = wp.vec3(H[0, 0], H[1, 0], H[2, 0])
        f2 = wp.vec3(H[0, 1], H[1, 1], H[2, 1])
        f3 = wp.vec3(H[0, 2], H[1, 2], H[2, 2])
        if branchy:
            if mu > 0.0:
                wp.atomic_sub(f, i, f1 + f2 + f3)
        else:
            wp.atomic_sub(f, i, f1 + f2 + f3)  # marker: element-sub
        wp.atomic_add(f, j, f1)
        wp.atomic_add(f, k, f2)
        wp.atomic_add(f, l, f3)

    return wp.Kernel(neo_hookean, key=f"neo_hookean_{'branchy' if branchy else 'straight'}", module=__name__)


def neo_hookean_problem(seed=4):
    """Points, elements (positively oriented, well shaped), rest shapes' inverses, volumes and
    deformed points of a random mesh of 203 elements (a partial last chunk of 64)."""
    rng = np.random.default_rng(seed)
    n_pts, n_tets = 90, 203  # 203 elements: a partial last chunk of 64
    x_np = rng.uniform(0.0, 1.0, (n_pts, 3)).astype(np.float32)
    def edges(t):
        r = x_np[t]
        return np.stack([r[:, 1] - r[:, 0], r[:, 2] - r[:, 0], r[:, 3] - r[:, 0]], -1)

    tets_np = np.stack([rng.choice(n_pts, 4, replace=False) for _ in range(4 * n_tets)]).astype(np.int32)
    vol6 = np.linalg.det(edges(tets_np))
    tets_np = tets_np[np.abs(vol6) > 0.02][:n_tets]  # well-shaped elements, positively oriented:
    tets_np[np.linalg.det(edges(tets_np)) < 0, 1:3] = tets_np[np.linalg.det(edges(tets_np)) < 0, 2:0:-1]
    dm = edges(tets_np)
    assert len(tets_np) == n_tets and (np.linalg.det(dm) > 0).all()
    deformed = x_np * np.float32(1.05) + rng.normal(scale=0.01, size=x_np.shape).astype(np.float32)
    dm_inv = np.linalg.inv(dm).astype(np.float32)
    vol = (np.abs(np.linalg.det(dm)) / 6).astype(np.float32)
    seed_f = rng.normal(size=(n_pts, 3)).astype(np.float32)
    return deformed, tets_np, dm_inv, vol, seed_f


def neo_hookean_backward(kernel, threads, seed=4):
    wp.config.cpu_threads = threads
    deformed, tets_np, dm_inv_np, vol_np, seed_f = neo_hookean_problem(seed)
    x = wp.array(deformed, dtype=wp.vec3, requires_grad=True)
    dm_inv = wp.array(dm_inv_np, dtype=wp.mat33, requires_grad=True)
    vol = wp.array(vol_np, dtype=float, requires_grad=True)
    f = wp.zeros(len(deformed), dtype=wp.vec3, requires_grad=True)
    tape = wp.Tape()
    with tape:
        wp.launch(kernel, dim=len(tets_np), inputs=[x, wp.array(tets_np, dtype=int), dm_inv, vol, 1.0, 4.0, f])
    tape.backward(grads={f: wp.array(seed_f, dtype=wp.vec3)})
    return f.numpy(), x.grad.numpy(), dm_inv.grad.numpy(), vol.grad.numpy()


def test_fem_element_staged_backward_matches_the_plain_loop_bit_for_bit(restore_threads):
    # Its mat33 records (the gradients of dm_inv) are stored one column per component, and the
    # staged loop vectorises (flattened entry point). Adds are applied in task order and no
    # float operation is contracted, so one thread gives the plain loop's bits exactly.
    straight, branchy = neo_hookean_kernel(False), neo_hookean_kernel(True)
    assert staged_symbols(straight) and not staged_symbols(branchy)
    assert not straight.default_instance().compiled.stage_plan.guarded
    staged = neo_hookean_backward(straight, 1)
    plain = neo_hookean_backward(branchy, 1)
    for a, b in zip(staged, plain):
        np.testing.assert_array_equal(a, b)
    assert all(np.isfinite(a).all() for a in staged) and np.abs(staged[2]).max() > 0
    two = neo_hookean_backward(straight, 2)
    for a, b in zip(two, plain):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-5 * np.abs(b).max())



def neo_hookean_forces_f64(x, tets, dm_inv, vol, mu=1.0, lam=4.0):
    """The element forces in float64 (NumPy)."""
    x, dm_inv = x.astype(np.float64), dm_inv.astype(np.float64)
    e = x[tets]
    F = np.stack([e[:, 1] - e[:, 0], e[:, 2] - e[:, 0], e[:, 3] - e[:, 0]], -1) @ dm_inv
    FinvT = np.transpose(np.linalg.inv(F), (0, 2, 1))
    P = mu * (F - FinvT) + lam * np.log(np.linalg.det(F))[:, None, None] * FinvT
    H = -vol.astype(np.float64)[:, None, None] * P @ np.transpose(dm_inv, (0, 2, 1))
    f = np.zeros_like(x)
    for c in range(3):
        np.add.at(f, tets[:, c + 1], H[:, :, c])
    np.add.at(f, tets[:, 0], -H.sum(2))
    return f


def neo_hookean_forward(kernel, threads, x_np, tets_np, dm_inv_np, vol_np, f_is_x=False):
    wp.config.cpu_threads = threads
    x = wp.array(x_np, dtype=wp.vec3)
    f = x if f_is_x else wp.zeros(len(x_np), dtype=wp.vec3)
    wp.launch(kernel, dim=len(tets_np), inputs=[x, wp.array(tets_np, dtype=int), wp.array(dm_inv_np, dtype=wp.mat33), wp.array(vol_np, dtype=float), 1.0, 4.0, f])
    return f.numpy()


def test_heavy_forward_passes_are_staged_and_light_ones_are_not():
    # the FEM element computes ~13 operations per component it gathers or adds; springs ~1
    assert neo_hookean_kernel(False).default_instance().compiled.forward_stage_plan is not None
    assert neo_hookean_kernel(True).default_instance().compiled.forward_stage_plan is None  # a branch
    assert k_springs.default_instance().compiled.forward_stage_plan is None
    src = CPURenderer().render_module([neo_hookean_kernel(False).default_instance()], [])
    assert "_forward_staged_body" in src and "weft::stage_record" in src


@pytest.mark.parametrize("threads", [1, 2, 3])
def test_fem_element_staged_forward_matches_the_plain_loop_and_float64(threads, restore_threads):
    x, tets, dm_inv, vol, _ = neo_hookean_problem(seed=6)
    staged = neo_hookean_forward(neo_hookean_kernel(False), threads, x, tets, dm_inv, vol)
    plain = neo_hookean_forward(neo_hookean_kernel(True), 1, x, tets, dm_inv, vol)
    if threads == 1:  # the adds in task order, and the same float operations per element
        np.testing.assert_array_equal(staged, plain)
    ref = neo_hookean_forces_f64(x, tets, dm_inv, vol)
    np.testing.assert_allclose(staged, ref, rtol=1e-3, atol=1e-4 * np.abs(ref).max())


def test_staged_forward_with_the_added_array_also_read_keeps_the_plain_loop(restore_threads):
    # f is x: every read of x would see the adds a chunk defers, so the launch takes the plain
    # loop, whose tasks see the adds of the tasks before them (one thread: in order)
    x, tets, dm_inv, vol, _ = neo_hookean_problem(seed=8)
    x = x[: tets.max() + 1]
    staged = neo_hookean_forward(neo_hookean_kernel(False), 1, x, tets, dm_inv, vol, f_is_x=True)
    plain = neo_hookean_forward(neo_hookean_kernel(True), 1, x, tets, dm_inv, vol, f_is_x=True)
    np.testing.assert_array_equal(staged, plain)


@pytest.mark.fixed_device("staged forward loops and their order of adds are the CPU's")
def test_staged_forward_out_of_range_index_raises_after_the_adds_before_it(restore_threads):
    wp.config.cpu_threads = 1
    x, tets, dm_inv, vol, _ = neo_hookean_problem(seed=9)
    bad = 130  # in the third chunk of 64
    tets = tets.copy()
    tets[bad, 0] = len(x) + 3
    f = wp.zeros(len(x), dtype=wp.vec3)
    kernel = neo_hookean_kernel(False)
    with pytest.raises(IndexError) as info:
        wp.launch(kernel, dim=len(tets), inputs=[wp.array(x, dtype=wp.vec3), wp.array(tets, dtype=int), wp.array(dm_inv, dtype=wp.mat33), wp.array(vol, dtype=float), 1.0, 4.0, f])
    msg = str(info.value)
    assert "neo_hookean_straight" in msg and str(len(x) + 3) in msg
    # the elements before the bad one have added their forces, the rest nothing
    expected = neo_hookean_forward(neo_hookean_kernel(True), 1, x, tets[:bad], dm_inv[:bad], vol[:bad])
    np.testing.assert_array_equal(f.numpy(), expected)
