"""wp.DeterministicMode on the CPU: under RUN_TO_RUN and GPU_TO_GPU, kernels whose results can
depend on the order their threads run in give the same bits in every run and for every
wp.config.cpu_threads (the bits one thread gives), forward and backward; float64 references
check the values. Kernels live in modules of their own, one per mode, as Warp's guide suggests.
"""

import numpy as np
import pytest

import weft as wp
from weft.codegen.ordering import order_dependence

pytestmark = pytest.mark.fixed_device("CPU thread counts")

MODES = (wp.DeterministicMode.RUN_TO_RUN, wp.DeterministicMode.GPU_TO_GPU)
THREADS = (1, 2, 3)
RUNS = 10


def _scatter(mode, dtype=float):
    @wp.kernel(module="unique", module_options={"deterministic": mode})
    def scatter(values: wp.array(dtype=dtype), bins: wp.array(dtype=int), out: wp.array(dtype=dtype)):
        t = wp.tid()
        wp.atomic_add(out, bins[t], values[t])

    return scatter


def _scatter_2d(mode):
    @wp.kernel(module="unique", module_options={"deterministic": mode})
    def scatter_2d(values: wp.array2d(dtype=float), rows: wp.array2d(dtype=int), out: wp.array2d(dtype=float)):
        i, j = wp.tid()
        out[rows[i, j], j] += values[i, j]

    return scatter_2d


def _scatter_3d(mode):
    @wp.kernel(module="unique", module_options={"deterministic": mode})
    def scatter_3d(values: wp.array3d(dtype=float), out: wp.array3d(dtype=float)):
        i, j, k = wp.tid()
        wp.atomic_add(out, i % 2, j % 3, k % 2, values[i, j, k])
        wp.atomic_sub(out, 1, 2, 0, 0.5 * values[i, j, k])

    return scatter_3d


def _compact(mode):
    @wp.kernel(module="unique", module_options={"deterministic": mode})
    def compact(values: wp.array(dtype=float), count: wp.array(dtype=int), out: wp.array(dtype=float)):
        t = wp.tid()
        v = values[t]
        if v > 0.0:
            slot = wp.atomic_add(count, 0, 1)
            out[slot] = v

    return compact


def _bits(a) -> bytes:
    return np.ascontiguousarray(a.numpy()).tobytes()


def _runs(launch):
    """The result bytes of RUNS launches at each thread count."""
    saved = wp.config.cpu_threads
    try:
        results = {}
        for threads in THREADS:
            wp.config.cpu_threads = threads
            results[threads] = {launch() for _ in range(RUNS)}
        return results
    finally:
        wp.config.cpu_threads = saved


def _assert_one_result(results, mode):
    """RUN_TO_RUN: one result per thread count; GPU_TO_GPU: one result for all of them."""
    assert all(len(r) == 1 for r in results.values()), {t: len(r) for t, r in results.items()}
    if mode == wp.DeterministicMode.GPU_TO_GPU:
        assert len(set().union(*results.values())) == 1


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("nbins", [1, 16, 1000, 1_000_000])
def test_scatter_adds_give_the_same_bits_at_every_thread_count(mode, nbins):
    rng = np.random.default_rng(nbins)
    n = 200_000
    values_np = rng.standard_normal(n).astype(np.float32) * 1e3
    bins_np = rng.integers(0, nbins, n).astype(np.int32)
    values, bins = wp.array(values_np), wp.array(bins_np)
    out = wp.zeros(nbins, dtype=float)
    kernel = _scatter(mode)

    def launch():
        out.zero_()
        wp.launch(kernel, n, [values, bins, out])
        return _bits(out)

    _assert_one_result(_runs(launch), mode)
    reference = np.bincount(bins_np, weights=values_np.astype(np.float64), minlength=nbins)
    np.testing.assert_allclose(out.numpy(), reference, rtol=1e-4, atol=1e-2 * np.sqrt(n / nbins) + 1e-3)
    # the bits of one thread adding in task order
    serial = np.zeros(nbins, dtype=np.float32)
    if nbins <= 16 and mode == wp.DeterministicMode.GPU_TO_GPU:
        for b in range(nbins):
            acc = np.float32(0.0)
            for v in values_np[bins_np == b]:
                acc = np.float32(acc + v)
            serial[b] = acc
        assert _bits(out) == serial.tobytes()


@pytest.mark.parametrize("mode", MODES)
def test_2d_3d_and_vector_targets(mode):
    rng = np.random.default_rng(7)
    values = wp.array(rng.standard_normal((300, 40)).astype(np.float32))
    rows_np = rng.integers(0, 5, (300, 40)).astype(np.int32)
    out2 = wp.zeros((5, 40), dtype=float)
    k2 = _scatter_2d(mode)

    def launch_2d():
        out2.zero_()
        wp.launch(k2, (300, 40), [values, wp.array(rows_np), out2])
        return _bits(out2)

    _assert_one_result(_runs(launch_2d), mode)
    ref2 = np.zeros((5, 40))
    np.add.at(ref2, (rows_np, np.arange(40)[None, :].repeat(300, 0)), values.numpy().astype(np.float64))
    np.testing.assert_allclose(out2.numpy(), ref2, rtol=1e-4, atol=1e-3)

    v3 = wp.array(rng.standard_normal((20, 30, 40)).astype(np.float32))
    out3 = wp.zeros((2, 3, 2), dtype=float)
    k3 = _scatter_3d(mode)

    def launch_3d():
        out3.zero_()
        wp.launch(k3, (20, 30, 40), [v3, out3])
        return _bits(out3)

    _assert_one_result(_runs(launch_3d), mode)
    ref3 = np.zeros((2, 3, 2))
    v = v3.numpy().astype(np.float64)
    for i in range(2):
        for j in range(3):
            for k in range(2):
                ref3[i, j, k] = v[i::2, j::3, k::2].sum()
    ref3[1, 2, 0] -= 0.5 * v.sum()
    np.testing.assert_allclose(out3.numpy(), ref3, rtol=1e-4, atol=1e-2)

    vec_np = rng.standard_normal((50_000, 3)).astype(np.float32)
    bins_np = rng.integers(0, 8, 50_000).astype(np.int32)
    outv = wp.zeros(8, dtype=wp.vec3)
    kv = _scatter(mode, wp.vec3)
    vecs, bins = wp.array(vec_np, dtype=wp.vec3), wp.array(bins_np)

    def launch_vec():
        outv.zero_()
        wp.launch(kv, 50_000, [vecs, bins, outv])
        return _bits(outv)

    _assert_one_result(_runs(launch_vec), mode)
    refv = np.stack([np.bincount(bins_np, weights=vec_np[:, c].astype(np.float64), minlength=8) for c in range(3)], 1)
    np.testing.assert_allclose(outv.numpy(), refv, rtol=1e-4, atol=1e-2)


@pytest.mark.parametrize("mode", MODES)
def test_a_counter_hands_out_slots_in_task_order(mode):
    rng = np.random.default_rng(3)
    values_np = rng.standard_normal(100_000).astype(np.float32)
    values = wp.array(values_np)
    count = wp.zeros(1, dtype=int)
    out = wp.zeros(100_000, dtype=float)
    kernel = _compact(mode)

    def launch():
        count.zero_()
        out.zero_()
        wp.launch(kernel, 100_000, [values, count, out])
        return _bits(out)

    _assert_one_result(_runs(launch), mode)
    positive = values_np[values_np > 0.0]
    assert count.numpy()[0] == len(positive)
    np.testing.assert_array_equal(out.numpy()[: len(positive)], positive)  # Warp's deterministic slots


def _springs(mode):
    @wp.kernel(module="unique", module_options={"deterministic": mode})
    def spring_energy(
        x: wp.array(dtype=wp.vec3), springs: wp.array(dtype=wp.vec2i), rest: float, energy: wp.array(dtype=float)
    ):
        s = wp.tid()
        a, b = springs[s][0], springs[s][1]
        d = wp.length(x[a] - x[b]) - rest
        wp.atomic_add(energy, 0, 0.5 * d * d)

    return spring_energy


@pytest.mark.parametrize("mode", MODES)
def test_the_backward_of_a_spring_scatter_gives_the_same_bits(mode):
    rng = np.random.default_rng(11)
    n, m = 2000, 20000
    x_np = rng.standard_normal((n, 3)).astype(np.float32)
    springs_np = rng.integers(0, n, (m, 2)).astype(np.int32)
    springs_np = springs_np[springs_np[:, 0] != springs_np[:, 1]]
    x = wp.array(x_np, dtype=wp.vec3, requires_grad=True)
    springs = wp.array(springs_np, dtype=wp.vec2i)
    energy = wp.zeros(1, dtype=float, requires_grad=True)
    kernel = _springs(mode)
    inst = next(iter(kernel._instances.values()), None) or kernel.default_instance()
    assert all(order_dependence(inst))  # both passes combine floats in shared memory

    def launch():
        tape = wp.Tape()
        energy.zero_()
        with tape:
            wp.launch(kernel, len(springs_np), [x, springs, 0.5, energy])
        tape.backward(loss=energy)
        result = _bits(energy) + _bits(x.grad)
        tape.zero()
        return result

    _assert_one_result(_runs(launch), mode)
    # float64 reference of the gradient
    xd = x_np.astype(np.float64)
    d = xd[springs_np[:, 0]] - xd[springs_np[:, 1]]
    length = np.linalg.norm(d, axis=1)
    g = ((length - 0.5) / length)[:, None] * d
    ref = np.zeros_like(xd)
    np.add.at(ref, springs_np[:, 0], g)
    np.add.at(ref, springs_np[:, 1], -g)
    tape = wp.Tape()
    energy.zero_()
    with tape:
        wp.launch(kernel, len(springs_np), [x, springs, 0.5, energy])
    tape.backward(loss=energy)
    np.testing.assert_allclose(x.grad.numpy(), ref, rtol=1e-3, atol=1e-3)


@wp.kernel
def k_pure(a: wp.array(dtype=float), b: wp.array(dtype=float)):
    i = wp.tid()
    b[i] = 2.0 * a[i]


@wp.kernel
def k_int_histogram(bins: wp.array(dtype=int), hist: wp.array(dtype=int)):
    wp.atomic_add(hist, bins[wp.tid()], 1)


def test_passes_that_do_not_depend_on_thread_order_keep_all_threads():
    for kernel, expected in ((k_pure, (None, None)), (k_int_histogram, (None, None))):
        inst = kernel.default_instance()
        assert order_dependence(inst) == expected, kernel.key
    scatter = _scatter(wp.DeterministicMode.RUN_TO_RUN).default_instance()
    forward, backward = order_dependence(scatter)
    assert "float atomic_add" in forward and backward is None  # the backward of a scatter is a gather
    compact = _compact(wp.DeterministicMode.RUN_TO_RUN).default_instance()
    assert "previous value is used" in order_dependence(compact)[0]
    launch = wp.runtime.launch
    # RUN_TO_RUN keeps all threads for accumulations (copies summed in a fixed order, or turns)
    assert scatter.accumulations_only == (True, True)
    assert launch.launch_order(scatter, False) == launch.ORDERED
    gpu_to_gpu = _scatter(wp.DeterministicMode.GPU_TO_GPU).default_instance()
    assert launch.launch_order(gpu_to_gpu, False) == launch.SERIAL  # the bits of one thread
    assert compact.accumulations_only[0] is False and launch.launch_order(compact, False) == launch.SERIAL
    assert launch.launch_order(k_pure.default_instance(), False) == launch.FREE  # not deterministic, nor needs to be
    saved = wp.config.cpu_threads
    try:
        wp.config.cpu_threads = 3
        ctx = launch.launch_context_t()
        assert launch.cpu_launch_args(gpu_to_gpu, False, ctx) == (1, False, False)  # one thread, fixed split
        assert launch.cpu_launch_args(scatter, False, ctx) == (3, False, True) and ctx.ordered == 1
    finally:
        wp.config.cpu_threads = saved


def test_modes_follow_warps_settings():
    assert [int(m) for m in wp.DeterministicMode] == [0, 1, 2]
    assert wp.config.deterministic is wp.DeterministicMode.NOT_GUARANTEED
    with pytest.raises(ValueError, match="wp.DeterministicMode"):
        wp.config.deterministic = 1
    saved = wp.config.deterministic
    try:
        wp.config.deterministic = wp.DeterministicMode.GPU_TO_GPU
        made_now = wp.get_module("weft_test_determinism_made_now")  # takes the global setting
        assert made_now.options["deterministic"] is wp.DeterministicMode.GPU_TO_GPU
    finally:
        wp.config.deterministic = saved
    assert made_now.options["deterministic"] is wp.DeterministicMode.GPU_TO_GPU  # kept afterwards
    assert wp.get_module("weft_test_determinism_later").options["deterministic"] is saved
    for bad, error in ((True, TypeError), (1.5, TypeError), ("2", TypeError), (-1, ValueError)):
        with pytest.raises(error, match="deterministic_max_records"):
            wp.set_module_options({"deterministic_max_records": bad}, "weft_test_determinism_later")
    with pytest.raises(ValueError, match="deterministic"):
        wp.set_module_options({"deterministic": "yes"}, "weft_test_determinism_later")
    wp.set_module_options({"deterministic_max_records": 2}, "weft_test_determinism_later")
    assert wp.get_module_options("weft_test_determinism_later")["deterministic_max_records"] == 2


@pytest.mark.parametrize("mode", MODES)
def test_recorded_launches_and_toggled_modules_follow_the_mode(mode):
    rng = np.random.default_rng(5)
    values_np = rng.standard_normal(100_000).astype(np.float32) * 100
    values, bins = wp.array(values_np), wp.array(np.zeros(100_000, dtype=np.int32))
    out = wp.zeros(1, dtype=float)
    kernel = _scatter(wp.DeterministicMode.NOT_GUARANTEED)
    cmd = wp.launch(kernel, 100_000, [values, bins, out], record_cmd=True)
    wp.set_module_options({"deterministic": mode}, kernel.module.name)  # read at each launch: no rebuild

    def launch():
        out.zero_()
        cmd.launch()
        return _bits(out)

    _assert_one_result(_runs(launch), mode)
    wp.set_module_options({"deterministic": wp.DeterministicMode.NOT_GUARANTEED}, kernel.module.name)
    out.zero_()
    cmd.launch()  # back to the usual path: the same sum up to rounding
    np.testing.assert_allclose(out.numpy()[0], values_np.astype(np.float64).sum(), rtol=1e-4)
