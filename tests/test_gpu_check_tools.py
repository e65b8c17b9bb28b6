"""The tools that run the suite on a GPU: device parametrisation (conftest.py + devices.py), the
simulated driver for a whole session, and tools/gpu_report.py's report."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

pytestmark = pytest.mark.fixed_device("runs pytest and the report tool in subprocesses")


def _pytest(args, env_extra, timeout=600):
    env = {k: v for k, v in os.environ.items() if k not in ("WEFT_TEST_DEVICES", "WEFT_TEST_SIMULATED_CUDA")}
    env.update(env_extra)
    return subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", *args],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )


def test_tests_run_on_each_requested_device_and_fixed_device_tests_once():
    pytest.importorskip("cuda.bindings.nvrtc")
    from weft.runtime import nvrtc

    if not nvrtc.available():
        pytest.skip("the simulated GPU loads NVRTC-built images")
    selection = "launch_scalar_conversions or numpy_array_for_array_param or out_of_bounds_2d"
    out = _pytest(
        ["-q", "-rA", "tests/test_runtime.py", "-k", selection],
        {"WEFT_TEST_DEVICES": "cpu,cuda:0", "WEFT_TEST_SIMULATED_CUDA": "1"},
    )
    assert out.returncode == 0, out.stdout[-3000:] + out.stderr[-3000:]
    passed = sorted(line.split()[1].split("::")[1] for line in out.stdout.splitlines() if line.startswith("PASSED"))
    assert passed == [
        "test_launch_accepts_numpy_array_for_array_param[cpu]",  # fixed_device: the CPU only
        "test_launch_scalar_conversions[cpu]",
        "test_launch_scalar_conversions[cuda:0]",
        "test_out_of_bounds_2d[cpu]",
        "test_out_of_bounds_2d[cuda:0]",  # the launch raises its IndexError on the (simulated) GPU too
    ]


def test_default_run_keeps_test_ids():
    out = _pytest(["-q", "--collect-only", "tests/test_runtime.py", "-k", "launch_scalar_conversions"], {})
    assert "tests/test_runtime.py::test_launch_scalar_conversions\n" in out.stdout, out.stdout


def test_report_counts_failures_and_phases(tmp_path):
    logs = tmp_path / "logs"
    logs.mkdir()
    (logs / "mode.txt").write_text("real GPU\n")
    (logs / "env.log").write_text("NVIDIA H200, 580.159.04, 143771 MiB, 9.0\n")
    (logs / "phases.txt").write_text("install 0 12\nsmoke 0 3\nsuite 124 400\n")
    (logs / "smoke.log").write_text("saxpy on 1M floats matches NumPy\nSMOKE OK\n")
    (logs / "suite.xml").write_text(
        """<?xml version="1.0" encoding="utf-8"?><testsuites><testsuite name="pytest">
        <testcase classname="tests.test_a" name="test_ok[cuda:0]" time="0.1"/>
        <testcase classname="tests.test_a" name="test_ok2[cuda:0]" time="0.1"/>
        <testcase classname="tests.test_b" name="test_bad[cuda:0]" time="0.2">
          <failure message="AssertionError: 1.0 != 2.0">trace</failure></testcase>
        <testcase classname="tests.test_b" name="test_skip" time="0"><skipped message="no torch"/></testcase>
        </testsuite></testsuites>"""
    )
    report = tmp_path / "report.md"
    subprocess.run([sys.executable, os.path.join(ROOT, "tools", "gpu_report.py"), str(logs), str(report)], check=True)
    text = report.read_text()
    assert "NVIDIA H200, 580.159.04" in text and "Mode: real GPU." in text
    assert (
        "| test suite on cuda:0 | TIMED OUT | 400 |" in text and "| smoke test (tools/gpu_smoke.py) | ok | 3 |" in text
    )
    assert "2 passed, 1 failed, 1 skipped" in text
    assert "`tests.test_b::test_bad[cuda:0]` (failure) | AssertionError: 1.0 != 2.0 |" in text
    assert "Failures by file: test_b 1/2" in text
    assert "SMOKE OK" in text
    assert "tests/test_cuda_runtime.py" in text and "No results" in text  # that phase never ran


def test_report_falls_back_to_the_pytest_log_when_the_junit_file_is_missing(tmp_path):
    logs = tmp_path / "logs"
    logs.mkdir()
    (logs / "phases.txt").write_text("cuda_runtime 124 150\n")
    (logs / "cuda_runtime.log").write_text(
        "FAILED tests/test_cuda_runtime.py::test_streams_and_events - CudaError: CUDA error in cuStreamCreate\n"
        "ERROR tests/test_cuda_runtime.py::test_mempool_toggle - RuntimeError: boom\n"
        "===== 2 failed, 30 passed, 1 skipped, 1 error in 140.00s =====\n"
    )
    report = tmp_path / "report.md"
    subprocess.run([sys.executable, os.path.join(ROOT, "tools", "gpu_report.py"), str(logs), str(report)], check=True)
    text = report.read_text()
    assert "30 passed, 3 failed, 1 skipped" in text
    assert (
        "`tests/test_cuda_runtime.py::test_streams_and_events` (failed) | CudaError: CUDA error in cuStreamCreate |"
        in text
    )
