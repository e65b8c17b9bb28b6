"""Runtime and build stages: wp.launch argument checking, bounds-checked array access (debug and
release modes), the CPU thread pool, the on-disk kernel cache (reuse across processes, damaged
entries, concurrent builds, clearing), module build grouping, devices, and wp.ScopedTimer.

Kernels are defined at module level so that one C++ build covers them. Tests that need a fresh
process (the kernel cache) run a small script with ``subprocess`` and their own cache directory.
"""

import os
import subprocess
import sys
import textwrap
import time

import numpy as np
import pytest
from markers import location_of
from threads import with_threads

import weft as wp
from weft.runtime import module as weft_module

THIS_FILE = os.path.abspath(__file__)


# ---------------------------------------------------------------------------------------------
# kernels
# ---------------------------------------------------------------------------------------------


@wp.kernel
def k_args(a: wp.array(dtype=float), b: wp.array(dtype=int), s: float):
    i = wp.tid()
    a[i] = float(b[i]) * s


@wp.kernel
def k_write_offset(a: wp.array(dtype=float), off: int):
    i = wp.tid()
    a[i + off] = float(i + 1)  # OOB:write


@wp.func
def read_at(a: wp.array(dtype=float), i: int):
    return a[i]  # OOB:func


@wp.kernel
def k_read_in_func(a: wp.array(dtype=float), out: wp.array(dtype=float), off: int):
    i = wp.tid()
    out[i] = read_at(a, i + off)


@wp.kernel
def k_write_2d(a: wp.array2d(dtype=float), off: int):
    i, j = wp.tid()
    a[i, j + off] = float(i * 10 + j)  # OOB:2d


@wp.kernel
def k_gather_square(x: wp.array(dtype=float), idx: wp.array(dtype=int), y: wp.array(dtype=float)):
    i = wp.tid()
    y[i] = x[idx[i]] * x[idx[i]]  # OOB:backward


@wp.kernel
def k_heavy(x: wp.array(dtype=float), y: wp.array(dtype=float)):
    i = wp.tid()
    v = x[i]
    for j in range(6):
        v = wp.sin(v) * 1.1 + v * 0.5 + wp.cos(float(j) * v)
    y[i] = v


@wp.kernel
def k_atomic_sums(
    x: wp.array(dtype=wp.float64),
    ones32: wp.array(dtype=float),
    total64: wp.array(dtype=wp.float64),
    imax: wp.array(dtype=int),
):
    i = wp.tid()
    wp.atomic_add(ones32, 0, 1.0)
    total64[0] += x[i]
    wp.atomic_max(imax, 0, i)
    wp.atomic_min(imax, 1, -i)


@wp.kernel
def k_fill(a: wp.array(dtype=float), v: float):
    i = wp.tid()
    a[i] = v + float(i)


@wp.kernel
def k_scatter_one(a: wp.array(dtype=float), idx: wp.array(dtype=int)):
    i = wp.tid()
    a[idx[i]] = 1.0


@wp.kernel
def k_copy_scaled(a: wp.array(dtype=float), b: wp.array(dtype=float), s: float):
    i = wp.tid()
    b[i] = a[i] * s


@wp.kernel
def k_copy_2d(a: wp.array2d(dtype=float), b: wp.array2d(dtype=float)):
    i, j = wp.tid()
    b[i, j] = a[i, j]


# ---------------------------------------------------------------------------------------------
# launch argument errors
# ---------------------------------------------------------------------------------------------


def launch_error(exc, *args, **kwargs):
    with pytest.raises(exc) as info:
        wp.launch(*args, **kwargs)
    return str(info.value)


def test_launch_wrong_argument_count():
    a, b = wp.zeros(4, dtype=float), wp.zeros(4, dtype=int)
    for inputs in ([a, b], [a, b, 1.0, 2.0], []):
        msg = launch_error(TypeError, k_args, dim=4, inputs=inputs)
        assert "k_args" in msg and "3" in msg and str(len(inputs)) in msg, msg
    np.testing.assert_array_equal(a.numpy(), np.zeros(4))  # nothing ran


def test_launch_wrong_dtype_ndim_and_kind():
    a, b = wp.zeros(4, dtype=float), wp.zeros(4, dtype=int)
    cases = [
        ([a, a, 1.0], "b"),  # float32 array for an int32 array
        ([wp.zeros(4, dtype=wp.float64), b, 1.0], "a"),  # float64 for float32
        ([wp.zeros((2, 2), dtype=float), b, 1.0], "a"),  # 2-D for 1-D
        ([[0.0] * 4, b, 1.0], "a"),  # a list for an array
        ([1.0, b, 1.0], "a"),  # a scalar for an array
        ([a, b, "x"], "s"),  # a string for a float
        ([a, b, a], "s"),  # an array for a float
    ]
    for inputs, param in cases:
        msg = launch_error(TypeError, k_args, dim=4, inputs=inputs)
        assert "k_args" in msg and f"'{param}'" in msg, msg
    # the split between inputs and outputs does not matter
    b.assign(np.array([1, 2, 3, 4], dtype=np.int32))
    wp.launch(k_args, dim=4, inputs=[a], outputs=[b, 0.5])
    np.testing.assert_array_equal(a.numpy(), [0.5, 1.0, 1.5, 2.0])


@pytest.mark.fixed_device("a NumPy array is wrapped without a copy: CPU launches only")
def test_launch_accepts_numpy_array_for_array_param():
    # Warp wraps a matching NumPy array without copying, so the kernel's writes land in it
    a_np = np.zeros(3, dtype=np.float32)
    b_np = np.array([1, 2, 3], dtype=np.int32)
    wp.launch(k_args, dim=3, inputs=[a_np, b_np, 2.0])
    np.testing.assert_array_equal(a_np, [2.0, 4.0, 6.0])


def test_launch_scalar_conversions():
    a, b = wp.zeros(3, dtype=float), wp.array([1, 2, 3], dtype=int)
    wp.launch(k_args, dim=3, inputs=[a, b, 2])  # an int for a float parameter
    np.testing.assert_array_equal(a.numpy(), [2.0, 4.0, 6.0])
    wp.launch(k_args, dim=3, inputs=[a, b, np.float64(0.5)])
    np.testing.assert_array_equal(a.numpy(), [0.5, 1.0, 1.5])
    wp.launch(k_args, dim=3, inputs=[a, b, wp.float32(-1.0)])
    np.testing.assert_array_equal(a.numpy(), [-1.0, -2.0, -3.0])


def test_launch_dim_errors_and_not_a_kernel():
    a = wp.zeros(4, dtype=float)
    with pytest.raises(ValueError):
        wp.launch(k_fill, dim=-1, inputs=[a, 1.0])
    with pytest.raises(ValueError):
        wp.launch(k_write_2d, dim=4, inputs=[wp.zeros((2, 2), dtype=float), 0])  # i, j = tid() on a 1-D grid
    with pytest.raises(TypeError):
        wp.launch(read_at, dim=1, inputs=[a, 0])  # a func, not a kernel
    with pytest.raises((RuntimeError, NotImplementedError)):
        k_fill(a, 1.0)
    wp.launch(k_fill, dim=0, inputs=[a, 1.0])  # dim 0: a no-op
    np.testing.assert_array_equal(a.numpy(), np.zeros(4))


def test_record_cmd_returns_launch_without_running():
    a = wp.zeros(3, dtype=float)
    cmd = wp.launch(k_fill, dim=3, inputs=[a, 10.0], record_cmd=True)
    assert isinstance(cmd, wp.Launch)
    np.testing.assert_array_equal(a.numpy(), np.zeros(3))
    cmd.launch()
    np.testing.assert_array_equal(a.numpy(), [10.0, 11.0, 12.0])
    cmd.set_param_by_name("v", 20.0)
    cmd.set_dim(2)
    cmd.launch()
    np.testing.assert_array_equal(a.numpy(), [20.0, 21.0, 12.0])


# ---------------------------------------------------------------------------------------------
# out-of-bounds indices (debug mode, the default)
# ---------------------------------------------------------------------------------------------


def check_index_error(info, index, shape, kernel_name, marker):
    msg = str(info.value)
    assert f"index {index}" in msg, msg
    assert str(shape) in msg, msg
    assert f"'{kernel_name}'" in msg, msg
    assert location_of(THIS_FILE, marker) in msg, msg
    return msg


def test_out_of_bounds_write_raises_and_process_survives():
    assert wp.config.mode == "debug"
    a = wp.zeros(4, dtype=float)
    with pytest.raises(IndexError) as info:
        wp.launch(k_write_offset, dim=4, inputs=[a, 1])
    msg = check_index_error(info, 4, (4,), "k_write_offset", "OOB:write")
    assert "a[i + off] = float(i + 1)" in msg
    with pytest.raises(IndexError) as info:
        wp.launch(k_write_offset, dim=1, inputs=[a, 10**6])
    check_index_error(info, 10**6, (4,), "k_write_offset", "OOB:write")
    # the same kernel and others keep working
    wp.launch(k_write_offset, dim=4, inputs=[a, 0])
    np.testing.assert_array_equal(a.numpy(), [1.0, 2.0, 3.0, 4.0])
    b = wp.zeros(2, dtype=float)
    wp.launch(k_fill, dim=2, inputs=[b, 5.0])
    np.testing.assert_array_equal(b.numpy(), [5.0, 6.0])


def test_out_of_bounds_view_does_not_touch_parent():
    parent = wp.zeros(8, dtype=float)
    view = parent[0:4]
    with pytest.raises(IndexError):
        wp.launch(k_write_offset, dim=6, inputs=[view, 0])
    assert np.all(parent.numpy()[4:] == 0.0)


def test_negative_index_wraps_like_warp():
    a = wp.zeros(4, dtype=float)
    wp.launch(k_write_offset, dim=1, inputs=[a, -1])
    np.testing.assert_array_equal(a.numpy(), [0.0, 0.0, 0.0, 1.0])


def test_out_of_bounds_inside_func():
    a = wp.zeros(4, dtype=float)
    out = wp.zeros(4, dtype=float)
    with pytest.raises(IndexError) as info:
        wp.launch(k_read_in_func, dim=4, inputs=[a, out, 2])
    check_index_error(info, 4, (4,), "k_read_in_func", "OOB:func")


def test_out_of_bounds_2d():
    a = wp.zeros((2, 3), dtype=float)
    with pytest.raises(IndexError) as info:
        wp.launch(k_write_2d, dim=(2, 3), inputs=[a, 1])
    msg = str(info.value)
    assert "(2, 3)" in msg and "k_write_2d" in msg and location_of(THIS_FILE, "OOB:2d") in msg, msg
    assert "3" in msg.split("is out of bounds")[0], msg
    wp.launch(k_write_2d, dim=(2, 3), inputs=[a, 0])
    np.testing.assert_array_equal(a.numpy(), [[0.0, 1.0, 2.0], [10.0, 11.0, 12.0]])


def test_out_of_bounds_in_backward_pass():
    x = wp.array([1.0, 2.0, 3.0], dtype=float, requires_grad=True)
    y = wp.zeros(3, dtype=float, requires_grad=True)
    idx = wp.array([0, 1, 2], dtype=int)
    tape = wp.Tape()
    with tape:
        wp.launch(k_gather_square, dim=3, inputs=[x, idx, y])
    idx.assign(np.array([0, 1, 7], dtype=np.int32))  # corrupt the indices before backward
    with pytest.raises(IndexError) as info:
        tape.backward(grads={y: np.ones(3, dtype=np.float32)})
    check_index_error(info, 7, (3,), "k_gather_square", "OOB:backward")
    # with valid indices the backward pass works again
    idx.assign(np.array([2, 1, 0], dtype=np.int32))
    x.grad.zero_()
    tape2 = wp.Tape()
    with tape2:
        wp.launch(k_gather_square, dim=3, inputs=[x, idx, y])
    tape2.backward(grads={y: np.ones(3, dtype=np.float32)})
    np.testing.assert_array_equal(x.grad.numpy(), [2.0, 4.0, 6.0])


def test_release_mode_disables_bounds_checks():
    saved = wp.config.mode
    wp.config.mode = "release"
    try:
        # created (and built, on its first launch) while the mode is "release"
        @wp.kernel(module="trt_release_mode")
        def k_release_write(a: wp.array(dtype=float)):
            i = wp.tid()
            a[i] = float(i + 1)

        parent = wp.zeros(8, dtype=float)
        view = parent[0:4]
        wp.launch(k_release_write, dim=6, inputs=[view])
    finally:
        wp.config.mode = saved
    # no check: elements 4 and 5 of the parent were written through the 4-element view
    np.testing.assert_array_equal(parent.numpy(), [1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 0.0, 0.0])
    # the kernels built in debug mode still check
    with pytest.raises(IndexError):
        wp.launch(k_write_offset, dim=6, inputs=[view, 0])


# ---------------------------------------------------------------------------------------------
# CPU threads
# ---------------------------------------------------------------------------------------------


def test_threaded_launch_is_bitwise_equal_to_single_thread():
    n = 1_000_000
    x = wp.array(np.linspace(-3.0, 3.0, n, dtype=np.float32), dtype=float)

    def run():
        y = wp.zeros(n, dtype=float)
        wp.launch(k_heavy, dim=n, inputs=[x, y])
        return y.numpy().copy()

    one = with_threads(1, run)
    two = with_threads(2, run)
    four = with_threads(4, run)
    assert np.isfinite(one).all() and np.std(one) > 0.1
    np.testing.assert_array_equal(one, two)
    np.testing.assert_array_equal(one, four)


def test_atomics_under_threads():
    n = 1_000_000
    xs = (np.arange(n) % 7).astype(np.float64)

    def run():
        ones = wp.zeros(1, dtype=float)
        total = wp.zeros(1, dtype=wp.float64)
        imax = wp.zeros(2, dtype=int)
        wp.launch(k_atomic_sums, dim=n, inputs=[wp.array(xs, dtype=wp.float64), ones, total, imax])
        return ones.numpy()[0], total.numpy()[0], imax.numpy().tolist()

    for threads in (1, 2):
        ones, total, imax = with_threads(threads, run)
        assert ones == float(n)
        assert total == xs.sum()
        assert imax == [n - 1, -(n - 1)]


def test_out_of_bounds_in_a_worker_thread():
    n = 100_000
    a = wp.zeros(n, dtype=float)
    idx = np.arange(n, dtype=np.int32)
    idx[n - 3] = n + 5  # in the last chunk: run by a worker thread, not the caller
    with pytest.raises(IndexError) as info:
        with_threads(2, lambda: wp.launch(k_scatter_one, dim=n, inputs=[a, wp.array(idx, dtype=int)]))
    assert f"index {n + 5}" in str(info.value) and f"({n},)" in str(info.value)
    idx[n - 3] = n - 3
    with_threads(2, lambda: wp.launch(k_scatter_one, dim=n, inputs=[a, wp.array(idx, dtype=int)]))
    assert a.numpy().sum() == n


def test_backward_threaded_equals_single_thread():
    n = 200_000
    xs = np.linspace(-2.0, 2.0, n, dtype=np.float32)

    def run():
        x = wp.array(xs, dtype=float, requires_grad=True)
        y = wp.zeros(n, dtype=float, requires_grad=True)
        tape = wp.Tape()
        with tape:
            wp.launch(k_heavy, dim=n, inputs=[x, y])
        tape.backward(grads={y: np.ones(n, dtype=np.float32)})
        return x.grad.numpy().copy()

    one, two = with_threads(1, run), with_threads(2, run)
    assert np.isfinite(one).all() and np.abs(one).max() > 0.1
    np.testing.assert_array_equal(one, two)


def test_launches_from_several_python_threads():
    import threading

    n = 50_000
    arrays = [wp.zeros(n, dtype=float) for _ in range(3)]
    errors = []

    def work(k):
        try:
            for rep in range(10):
                v = float(k * 100 + rep)
                wp.launch(k_fill, dim=n, inputs=[arrays[k], v])
                if not np.array_equal(arrays[k].numpy(), v + np.arange(n, dtype=np.float32)):
                    errors.append((k, rep))
        except Exception as e:  # noqa: BLE001 -- reported below
            errors.append(e)

    threads = [threading.Thread(target=work, args=(k,)) for k in range(3)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    assert arrays[2].numpy()[7] == 209.0 + 7.0


def test_strided_views_as_kernel_arguments():
    m = wp.array(np.arange(12, dtype=np.float32).reshape(3, 4), dtype=float)
    col = m[:, 1]  # non-contiguous 1-D view
    out = wp.zeros(3, dtype=float)
    wp.launch(k_copy_scaled, dim=3, inputs=[col, out, 10.0])
    np.testing.assert_array_equal(out.numpy(), [10.0, 50.0, 90.0])
    wp.launch(k_copy_scaled, dim=3, inputs=[out, col, 1.0])  # write through the view
    np.testing.assert_array_equal(m.numpy()[:, 1], [10.0, 50.0, 90.0])
    np.testing.assert_array_equal(m.numpy()[:, 0], [0.0, 4.0, 8.0])
    every_other = wp.array(np.arange(10, dtype=np.float32), dtype=float)[::2]
    out5 = wp.zeros(5, dtype=float)
    wp.launch(k_copy_scaled, dim=5, inputs=[every_other, out5, 1.0])
    np.testing.assert_array_equal(out5.numpy(), [0.0, 2.0, 4.0, 6.0, 8.0])
    t = m.transpose()
    o2 = wp.zeros((4, 3), dtype=float)
    wp.launch(k_copy_2d, dim=(4, 3), inputs=[t, o2])
    np.testing.assert_array_equal(o2.numpy(), m.numpy().T)


# ---------------------------------------------------------------------------------------------
# module build grouping
# ---------------------------------------------------------------------------------------------


@pytest.mark.fixed_device("counts the host C++ builds")
def test_first_launch_builds_every_kernel_of_the_module(monkeypatch):
    @wp.kernel(module="trt_grouping")
    def k_group_a(a: wp.array(dtype=float)):
        a[wp.tid()] = 1.0

    @wp.kernel(module="trt_grouping")
    def k_group_b(a: wp.array(dtype=float)):
        a[wp.tid()] = 2.0

    builds = []
    real = weft_module.cached_library
    monkeypatch.setattr(weft_module, "cached_library", lambda *a, **kw: builds.append(a[:1]) or real(*a, **kw))
    a = wp.zeros(2, dtype=float)
    wp.launch(k_group_a, dim=2, inputs=[a])
    np.testing.assert_array_equal(a.numpy(), [1.0, 1.0])
    wp.launch(k_group_b, dim=2, inputs=[a])
    np.testing.assert_array_equal(a.numpy(), [2.0, 2.0])
    assert len(builds) == 1, builds


# ---------------------------------------------------------------------------------------------
# the on-disk kernel cache (separate processes)
# ---------------------------------------------------------------------------------------------

CACHE_SCRIPT = textwrap.dedent(
    """
    import os, sys
    import weft as wp

    wp.config.verbose = True

    @wp.kernel
    def cache_probe(a: wp.array(dtype=float), s: float):
        i = wp.tid()
        a[i] = float(i) * s

    a = wp.zeros(5, dtype=float)
    wp.launch(cache_probe, dim=5, inputs=[a, 2.0])
    print("RESULT", a.numpy().tolist())
    if sys.argv[1:] == ["clear"]:
        d = os.environ["WEFT_CACHE_DIR"]
        print("BEFORE", len(os.listdir(d)))
        wp.clear_kernel_cache()
        print("AFTER", len(os.listdir(d)))
        wp.launch(cache_probe, dim=5, inputs=[a, 3.0])
        print("RESULT2", a.numpy().tolist())
        print("FINAL", len(os.listdir(d)))
    """
)

EXPECTED = "RESULT [0.0, 2.0, 4.0, 6.0, 8.0]"


@pytest.fixture
def cache_env(tmp_path):
    script = tmp_path / "cache_probe_script.py"
    script.write_text(CACHE_SCRIPT)
    cache = tmp_path / "cache"
    cache.mkdir()
    env = dict(os.environ, WEFT_CACHE_DIR=str(cache))
    env.pop("WEFT_CPU_THREADS", None)
    return script, cache, env


def run_script(script, env, *args):
    out = subprocess.run(
        [sys.executable, str(script), *args], env=env, capture_output=True, text=True, timeout=600, check=False
    )
    assert out.returncode == 0, out.stdout + out.stderr
    return out.stdout


def module_files(cache, ext):
    return sorted(p for p in os.listdir(cache) if p.startswith("__main__") and p.endswith(ext))


@pytest.mark.parametrize("level, verbose, shown", [(20, False, False), (10, False, True), (30, True, True)])
def test_build_messages_follow_log_level(tmp_path, monkeypatch, capfd, level, verbose, shown):
    """Building is a debug message: hidden at the default wp.LOG_INFO, shown at wp.LOG_DEBUG or
    with the older wp.config.verbose."""
    monkeypatch.setattr(wp.config, "kernel_cache_dir", str(tmp_path))
    monkeypatch.setattr(wp.config, "log_level", level)
    monkeypatch.setattr(wp.config, "verbose", verbose)
    assert (wp.LOG_DEBUG, wp.LOG_INFO, wp.LOG_WARNING, wp.LOG_ERROR) == (10, 20, 30, 40)

    @wp.kernel(module=f"log_level_probe_{level}_{verbose}")
    def log_level_probe(a: wp.array(dtype=float)):
        a[wp.tid()] = 2.0

    capfd.readouterr()
    a = wp.zeros(3, dtype=float)
    wp.launch(log_level_probe, dim=3, inputs=[a])
    np.testing.assert_array_equal(a.numpy(), [2.0, 2.0, 2.0])
    out = capfd.readouterr().out
    assert ("weft: building" in out) == shown, out
    assert shown or out == ""


def test_cache_reused_by_second_process_and_damaged_entries_rebuilt(cache_env):
    script, cache, env = cache_env
    out = run_script(script, env)
    assert EXPECTED in out and "building __main__" in out, out
    [so] = module_files(cache, ".so")
    so_path = cache / so
    listing = sorted(os.listdir(cache))
    stamp = so_path.stat().st_mtime_ns
    size = so_path.stat().st_size

    # a second process loads the cached build: nothing is compiled, no file is added or rewritten
    out = run_script(script, env)
    assert EXPECTED in out and "building" not in out, out
    assert sorted(os.listdir(cache)) == listing
    assert so_path.stat().st_mtime_ns == stamp

    # a truncated library is rebuilt, not loaded
    with open(so_path, "r+b") as f:
        f.truncate(size // 2)
    out = run_script(script, env)
    assert EXPECTED in out and "building __main__" in out, out
    assert so_path.stat().st_size == size

    # a library with flipped bytes (same size) is rebuilt, not loaded
    data = bytearray(so_path.read_bytes())
    for k in range(size // 3, size // 3 + 64):
        data[k] ^= 0xFF
    so_path.write_bytes(bytes(data))
    out = run_script(script, env)
    assert EXPECTED in out and "building __main__" in out, out
    assert module_files(cache, ".so") == [so]
    assert not [p for p in os.listdir(cache) if p.endswith(".tmp") or p.startswith(".build_")]


def test_two_processes_build_the_same_module_at_once(cache_env):
    script, cache, env = cache_env
    procs = [
        subprocess.Popen(
            [sys.executable, str(script)], env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
        )
        for _ in range(2)
    ]
    outs = [p.communicate(timeout=600) for p in procs]
    for p, (out, err) in zip(procs, outs):
        assert p.returncode == 0, out + err
        assert EXPECTED in out, out + err
    assert len(module_files(cache, ".so")) == 1
    assert not [p for p in os.listdir(cache) if p.endswith(".tmp") or p.startswith(".build_")]
    # what they left behind is a valid cache entry
    out = run_script(script, env)
    assert EXPECTED in out and "building" not in out, out


def test_clear_kernel_cache(cache_env):
    script, _, env = cache_env
    out = run_script(script, env, "clear")
    lines = dict(line.split(" ", 1) for line in out.splitlines() if line.split(" ", 1)[0].isupper())
    assert lines["RESULT"] == "[0.0, 2.0, 4.0, 6.0, 8.0]"
    assert int(lines["BEFORE"]) >= 3  # at least the module's .cpp, .so and checksum
    assert int(lines["AFTER"]) == 0
    assert lines["RESULT2"] == "[0.0, 3.0, 6.0, 9.0, 12.0]"  # rebuilt after clearing
    assert int(lines["FINAL"]) >= 3


# ---------------------------------------------------------------------------------------------
# devices
# ---------------------------------------------------------------------------------------------


@pytest.mark.skipif(wp.is_cuda_available(), reason="checks a machine without a GPU (test_cuda_runtime covers GPUs)")
def test_devices_and_launch_device_argument():
    cpu = wp.get_device()
    assert cpu.is_cpu and cpu == "cpu" and wp.get_device("cpu") is cpu
    assert wp.is_cuda_available() is False
    assert wp.get_cuda_device_count() == 0
    with wp.ScopedDevice("cpu") as d:
        assert wp.get_device() is cpu
        assert d is cpu or d == "cpu"
    a = wp.zeros(3, dtype=float)
    wp.launch(k_fill, dim=3, inputs=[a, 1.0], device="cpu")
    np.testing.assert_array_equal(a.numpy(), [1.0, 2.0, 3.0])
    wp.launch(k_fill, dim=3, inputs=[a, 2.0], device=cpu)
    np.testing.assert_array_equal(a.numpy(), [2.0, 3.0, 4.0])
    with pytest.raises((ValueError, RuntimeError)):
        wp.launch(k_fill, dim=3, inputs=[a, 3.0], device="cuda:0")
    with pytest.raises((ValueError, RuntimeError)):
        wp.get_device("cuda:0")
    np.testing.assert_array_equal(a.numpy(), [2.0, 3.0, 4.0])
    # device aliases for CUDA contexts need a GPU; the CPU is not a CUDA device to unmap
    with pytest.raises(RuntimeError, match="no CUDA device is available"):
        wp.map_cuda_device("mine")
    for alias in ("cpu", "imaginary:0"):
        with pytest.raises(RuntimeError, match="no CUDA device has this alias"):
            wp.unmap_cuda_device(alias)
    assert wp.get_device("cpu") is cpu


# ---------------------------------------------------------------------------------------------
# ScopedTimer
# ---------------------------------------------------------------------------------------------


def test_scoped_timer_times_a_launch(capsys):
    a = wp.zeros(1000, dtype=float)
    wp.launch(k_fill, dim=1000, inputs=[a, 0.0])  # built outside the timer
    capsys.readouterr()
    with wp.ScopedTimer("launch") as t:
        wp.launch(k_fill, dim=1000, inputs=[a, 1.0])
        time.sleep(0.02)
    out = capsys.readouterr().out
    assert out.startswith("launch took ") and out.rstrip().endswith(" ms"), out
    assert 20.0 <= t.elapsed < 5000.0
    assert f"{t.elapsed:.2f}" in out
    assert a.numpy()[999] == 1000.0


def test_scoped_timer_nesting_indent(capsys):
    with wp.ScopedTimer("outer"), wp.ScopedTimer("inner"), wp.ScopedTimer("inner2"):
        pass
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].startswith("        inner2 took ")
    assert lines[1].startswith("    inner took ")
    assert lines[2].startswith("outer took ")


def _scaled_copy(a: wp.array(dtype=float), b: wp.array(dtype=float), k: float):
    i = wp.tid()
    b[i] = k * a[i]


def test_kernel_objects_made_with_warps_constructor():
    """wp.Kernel(func=..., key=..., module=..., options=...) as Warp's tests build kernels."""
    k = wp.Kernel(func=_scaled_copy, key="scaled_copy_no_backward", options={"enable_backward": False})
    assert k.key == "scaled_copy_no_backward" and k.options == {"enable_backward": False} and not k.enable_backward
    assert k.module is wp.get_module(__name__)
    a, b = wp.array([1.0, 2.0], dtype=float), wp.zeros(2, dtype=float)
    wp.launch(k, dim=2, inputs=[a, b, 3.0])
    np.testing.assert_array_equal(b.numpy(), [3.0, 6.0])
    own = wp.Kernel(func=_scaled_copy, module="unique")
    assert own.module is not k.module and own.enable_backward
    named = wp.Kernel(func=_scaled_copy, module=wp.get_module("weft_test_named_module"))
    assert named.module.name == "weft_test_named_module"
    with pytest.raises(NotImplementedError, match="code_transformers"):
        wp.Kernel(func=_scaled_copy, code_transformers=[object()])


def _double_it(a: wp.array(dtype=float)):
    i = wp.tid()
    a[i] = 2.0 * a[i]


@pytest.mark.fixed_device("checks the CPU entry points a load builds")
def test_modules_load_ahead_of_their_launches():
    k = wp.Kernel(func=_double_it, module="unique")
    assert k.module.load("cpu") is k.module
    inst = k.default_instance()
    assert inst.binding.forward_ptr is not None  # built before any launch
    a = wp.array([1.0, 2.0], dtype=float)
    wp.launch(k, dim=2, inputs=[a])
    np.testing.assert_array_equal(a.numpy(), [2.0, 4.0])
    other = wp.Kernel(func=_double_it, module="weft_test_load_module_by_name")
    wp.load_module("weft_test_load_module_by_name", device="cpu")
    assert other.default_instance().binding.forward_ptr is not None
    with pytest.raises(RuntimeError, match="does not contain any Warp kernels, functions, or structs"):
        wp.load_module("no_module_of_this_name")
    import json

    with pytest.raises(RuntimeError, match="'json' does not contain"):
        wp.load_module(json)


@pytest.mark.fixed_device("launch bounds limit the block size on a GPU; the CPU ignores them")
def test_kernel_decorator_options_warp_programs_pass():
    @wp.kernel(name="renamed_scale", launch_bounds=(128, 2), module="unique", module_options={"enable_backward": False})
    def scale_named(a: wp.array(dtype=float)):
        i = wp.tid()
        a[i] = 3.0 * a[i]

    assert scale_named.key == "renamed_scale" and scale_named.options["launch_bounds"] == (128, 2)
    assert scale_named.module.options["enable_backward"] is False and not scale_named.enable_backward
    a = wp.array([1.0, 2.0], dtype=float)
    wp.launch(scale_named, dim=2, inputs=[a])  # launch bounds mean nothing on the CPU
    np.testing.assert_array_equal(a.numpy(), [3.0, 6.0])
    with pytest.raises(ValueError, match="valid C.. identifier"):
        wp.kernel(name="1invalid")(_double_it)
    with pytest.raises(ValueError, match="launch_bounds"):
        wp.kernel(launch_bounds=(0,))(_double_it)
    for bad, error in ((0, ValueError), (17, ValueError), ((2, 1, 1), TypeError), (True, TypeError)):
        with pytest.raises(error, match="cluster_dim"):
            wp.kernel(cluster_dim=bad)(_double_it)
    with pytest.raises(ValueError, match="not both"):
        wp.kernel(cuda_max_registers=32, launch_bounds=128)(_double_it)
    with pytest.raises(ValueError, match="positive int"):
        wp.kernel(cuda_max_registers=0)(_double_it)
    def make(registers):
        @wp.kernel(cuda_max_registers=registers, module="unique")
        def capped(a: wp.array(dtype=float)):
            i = wp.tid()
            a[i] = 2.0 * a[i]

        return capped

    capped = make(32)
    assert capped.options["cuda_max_registers"] == 32 and make(32) is capped
    assert capped.module.hash_module() != make(64).module.hash_module()  # a different GPU build
    a = wp.array([1.0, 2.0], dtype=float)
    wp.launch(capped, dim=2, inputs=[a])  # no effect on the CPU
    np.testing.assert_array_equal(a.numpy(), [2.0, 4.0])

    def clustered(n):
        @wp.kernel(cluster_dim=n, module="unique")
        def k(a: wp.array(dtype=float)):
            a[wp.tid()] = 2.0 * a[wp.tid()]

        return k

    assert clustered(2).module.hash_module() == clustered(2).module.hash_module()
    assert clustered(2).module.hash_module() != clustered(4).module.hash_module()  # another GPU build
    assert clustered(1).options.get("cluster_dim") is None  # clusters of one block: no clustering
    wp.launch(clustered(4), dim=2, inputs=[a])  # the CPU runs it unclustered
    np.testing.assert_array_equal(a.numpy(), [4.0, 8.0])
    with pytest.raises(NotImplementedError, match="external_constant_params"):
        wp.kernel(entry_point_abi="external_constant_params")(_double_it)
    assert wp.kernel(grid_stride=False, entry_point_abi="warp")(_double_it).key == "_double_it"


def test_device_availability_and_peer_queries_on_the_cpu():
    assert wp.is_device_available("cpu") and wp.is_device_available(wp.get_device("cpu"))
    assert not wp.is_device_available("cuda:99")
    for query in (
        wp.is_peer_access_supported,
        wp.is_peer_access_enabled,
        wp.is_mempool_access_supported,
        wp.is_mempool_access_enabled,
    ):
        assert query("cpu", "cpu") is False  # the CPU has no peer or pool access


def test_cuda_driver_version_is_none_without_a_gpu_else_a_pair():
    v = wp.get_cuda_driver_version()
    if wp.is_cuda_available():
        assert isinstance(v, tuple) and len(v) == 2 and v[0] >= 11
    else:
        assert v is None


def test_cuda_supported_archs_and_cpu_shared_memory():
    archs = wp.get_cuda_supported_archs()
    assert isinstance(archs, list) and archs == sorted(set(archs))
    assert all(isinstance(a, int) and 50 <= a <= 150 for a in archs)
    from weft.runtime import nvrtc

    if nvrtc.available():
        assert 75 in archs and 90 in archs
    assert wp.get_device("cpu").max_shared_memory_per_block == 0
