"""The runtime's launch entry: the CPython-extension build of native/runtime.cpp, and the ctypes
library that stands in where no extension can be built. Both must run kernels and report errors."""

import os
import sysconfig

import numpy as np
import pytest

import weft as wp
from weft.runtime import launch as launch_mod
from weft.runtime import module as mod
pytestmark = pytest.mark.fixed_device("the CPU runtime's launch paths (extension and ctypes) and thread tuner")



@wp.kernel
def k_write_index(a: wp.array(dtype=float), idx: wp.array(dtype=int)):
    i = wp.tid()
    a[idx[i]] = float(i)


def _run_through(launch):
    saved = list(launch_mod._launch_fn)
    launch_mod._launch_fn[:] = [launch]
    try:
        n = 5000
        a = wp.zeros(n, dtype=float)
        wp.launch(k_write_index, dim=n, inputs=[a, wp.array(np.arange(n, dtype=np.int32)[::-1].copy(), dtype=int)])
        np.testing.assert_array_equal(a.numpy(), np.arange(n, dtype=np.float32)[::-1])
        bad = np.arange(n, dtype=np.int32)
        bad[-1] = n + 2
        with pytest.raises(IndexError, match=f"index {n + 2} is out of bounds"):
            wp.launch(k_write_index, dim=n, inputs=[a, wp.array(bad, dtype=int)])
        cmd = wp.launch(k_write_index, dim=n, inputs=[a, wp.array(bad, dtype=int)], record_cmd=True)
        with pytest.raises(IndexError):
            cmd.launch()
    finally:
        launch_mod._launch_fn[:] = saved


@pytest.mark.skipif(
    not os.path.exists(os.path.join(sysconfig.get_paths()["include"], "Python.h")), reason="no Python headers"
)
def test_extension_runtime_is_used_when_python_headers_exist():
    launch = mod.runtime_launch()
    assert type(launch).__name__ == "builtin_function_or_method"
    _run_through(launch)
    with pytest.raises(TypeError, match="7 integers"):
        launch(1, 2, 3)


def test_ctypes_runtime_runs_kernels_and_reports_errors():
    _run_through(mod.runtime_library().weft_launch)


@wp.kernel
def k_axpy(x: wp.array(dtype=float), y: wp.array(dtype=float)):
    i = wp.tid()
    y[i] = 2.0 * x[i] + y[i]


@pytest.mark.parametrize("which", ["extension", "ctypes"])
def test_adaptive_launches_try_both_choices_and_stay_correct(which, monkeypatch):
    if which == "extension" and type(mod.runtime_launch()).__name__ != "builtin_function_or_method":
        pytest.skip("no Python headers: no extension runtime")
    launch = mod.runtime_launch() if which == "extension" else mod.runtime_library().weft_launch
    monkeypatch.setattr(launch_mod, "_launch_fn", [launch])
    monkeypatch.setattr(mod, "_runtime_ext", mod._runtime_ext if which == "extension" else [None])
    monkeypatch.setattr(wp.config, "cpu_threads", 2)
    monkeypatch.setattr(wp.config, "cpu_adaptive", True)
    n = 4096 + (0 if which == "extension" else 1)  # same size class; separate runtimes anyway
    x = wp.array(np.arange(n, dtype=np.float32), dtype=float)
    y = wp.zeros(n, dtype=float)
    for _ in range(40):
        wp.launch(k_axpy, dim=n, inputs=[x, y])
    np.testing.assert_array_equal(y.numpy(), 80.0 * np.arange(n, dtype=np.float32))
    inst = k_axpy.default_instance()
    state = mod.runtime_tuner_state(inst.binding.forward_ptr, n)
    assert state["launches"] == 40 and state["serial_samples"] >= 2 and state["pool_samples"] >= 2
    assert state["serial_seconds"] > 0 and state["pool_seconds"] > 0
    assert state["choice"] in ("serial", "pool")


@wp.kernel
def k_fill_one(y: wp.array(dtype=float)):
    i = wp.tid()
    y[i] = 1.0


def test_non_adaptive_launches_leave_the_tuner_alone(monkeypatch):
    monkeypatch.setattr(wp.config, "cpu_threads", 2)
    monkeypatch.setattr(wp.config, "cpu_adaptive", False)
    n = 3000
    y = wp.zeros(n, dtype=float)
    for _ in range(3):
        wp.launch(k_fill_one, dim=n, inputs=[y])
    assert y.numpy().sum() == n
    assert mod.runtime_tuner_state(k_fill_one.default_instance().binding.forward_ptr, n) is None


@wp.kernel
def k_slow(x: wp.array(dtype=float), n: int, y: wp.array(dtype=float)):
    i = wp.tid()
    s = x[i]
    for _ in range(n):
        s = wp.sin(s) + 0.5
    y[i] = s


def test_long_launches_are_not_tried_on_one_thread(monkeypatch):
    monkeypatch.setattr(wp.config, "cpu_threads", 2)
    monkeypatch.setattr(wp.config, "cpu_adaptive", True)
    n = 20_000
    x = wp.array(np.linspace(0.0, 1.0, n, dtype=np.float32), dtype=float)
    y = wp.zeros(n, dtype=float)
    for _ in range(8):
        wp.launch(k_slow, dim=n, inputs=[x, 2000, y])  # ~40M sines: far above the 5 ms limit
    state = mod.runtime_tuner_state(k_slow.default_instance().binding.forward_ptr, n)
    assert state["pool_seconds"] > 0.005
    assert state["serial_samples"] == 0 and state["choice"] == "pool" and state["launches"] == 8


@wp.kernel
def k_vec3_param(v: wp.vec3, out: wp.array(dtype=wp.vec3)):
    out[0] = v


def test_a_single_number_for_a_vector_parameter_is_refused():
    out = wp.zeros(1, dtype=wp.vec3)
    for value in (123, 1.5, wp.float32(1.5), np.float32(2.0)):
        with pytest.raises(RuntimeError, match="argument 'v' expects vec3f but got a single value"):
            wp.launch(k_vec3_param, 1, [value, out])
    with pytest.raises(TypeError, match="Failed to convert argument for param v to vec3f"):
        wp.launch(k_vec3_param, 1, [None, out])
    for value in ((1.0, 2.0, 3.0), [1.0, 2.0, 3.0], np.array([1.0, 2.0, 3.0]), wp.vec3(1.0, 2.0, 3.0)):
        wp.launch(k_vec3_param, 1, [value, out])
        assert out.numpy().tolist() == [[1.0, 2.0, 3.0]]


@wp.kernel
def k_log_of(x: wp.array(dtype=float), y: wp.array(dtype=float)):
    i = wp.tid()
    y[i] = wp.log(x[i])


def test_verify_fp_names_the_argument_and_index_of_a_non_finite_value(monkeypatch):
    monkeypatch.setattr(wp.config, "verify_fp", True)
    y = wp.zeros(3, dtype=float)
    with pytest.raises(FloatingPointError, match=r"argument 'y' holds a non-finite value \(-inf at index \(1,\)\) after"):
        wp.launch(k_log_of, 3, inputs=[wp.array([1.0, 0.0, 2.0], dtype=float), y])
    with pytest.raises(FloatingPointError, match=r"argument 'x' holds a non-finite value \(nan at index \(1,\)\) after"):
        wp.launch(k_log_of, 2, inputs=[wp.array([1.0, np.nan], dtype=float), wp.zeros(2, dtype=float)])
    wp.launch(k_log_of, 3, inputs=[wp.array([1.0, 2.0, 4.0], dtype=float), y])  # y held -inf before: only what a launch leaves is checked
    np.testing.assert_allclose(y.numpy(), np.log([1.0, 2.0, 4.0]), rtol=1e-6)
    monkeypatch.setattr(wp.config, "verify_fp", False)
    wp.launch(k_log_of, 3, inputs=[wp.array([1.0, 0.0, 2.0], dtype=float), y])  # off: no check
