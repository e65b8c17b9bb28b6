"""Session hooks shared by the test suite.

Every batch of kernel instances the CPU build path builds during the session is recorded, so that
``test_cuda_codegen.py::test_every_suite_kernel_compiles_for_cuda`` (moved to the end of the run by
its ``run_last`` marker) can compile the same kernels for CUDA with NVRTC.

Tests run on the devices ``devices.py`` describes (``--device cuda:0`` or
``WEFT_TEST_DEVICES=cpu,cuda:0``; the CPU alone by default); ``fixed_device`` tests run once, as written.
"""

from __future__ import annotations

import devices
import pytest

from weft.runtime import module as _module

if devices.simulated():
    devices.install_simulated_driver()

import weft as wp

wp.config.verify_ir = True  # every compiled kernel and func: no stage after lowering changes its IR

_cpu_builds: list = []  # (weft Module, [KernelInstance]) per successful CPU build, in order
_build = _module.Module.build


def _recording_build(self, instances):
    _build(self, instances)
    _cpu_builds.append((self, list(instances)))


_module.Module.build = _recording_build


def pytest_addoption(parser):
    parser.addoption(
        "--device",
        action="append",
        default=[],
        help="run the device-parametrised tests on this device (repeatable; default: $WEFT_TEST_DEVICES or cpu)",
    )


def pytest_configure(config):
    config.addinivalue_line("markers", "run_last: run after every other collected test")
    config.addinivalue_line(
        "markers",
        "fixed_device(reason): the test chooses its devices itself or is about the CPU (host memory, the C++ "
        "build, the thread pool); it runs once, with the CPU as the default device",
    )
    config.weft_devices = devices.requested(config.getoption("--device"))


def pytest_generate_tests(metafunc):
    """Parametrise every test over the requested devices (unless that is the CPU alone, so that the
    default run keeps its test ids)."""
    names = metafunc.config.weft_devices
    if names == ["cpu"] or "weft_device" not in metafunc.fixturenames:
        return
    if metafunc.definition.get_closest_marker("fixed_device"):
        names = ["cpu"]
    metafunc.parametrize("weft_device", names, indirect=True, scope="function")


@pytest.fixture(autouse=True)
def weft_device(request):
    """The device this test runs on, made the default device for its duration.

    On a GPU every launch is followed by a synchronisation (``wp.config.verify_cuda``), so that a
    kernel error is raised by the launch that made it, as on the CPU, and tests that expect an
    ``IndexError`` from a launch hold on both. The asynchronous reporting itself is tested in
    ``test_cuda_runtime.py``.
    """
    name = getattr(request, "param", "cpu")
    if name == "cpu":
        yield wp.get_device("cpu")
        return
    if not wp.is_cuda_available():
        pytest.skip(f"{name} was requested but this machine has no CUDA device")
    saved = wp.config.verify_cuda
    wp.config.verify_cuda = True
    try:
        with wp.ScopedDevice(name) as device:
            yield device
            device.synchronize()
    finally:
        wp.config.verify_cuda = saved


def pytest_collection_modifyitems(session, config, items):
    """Move ``run_last`` tests to the end, keeping the order of everything else."""
    last = [item for item in items if item.get_closest_marker("run_last")]
    items[:] = [item for item in items if not item.get_closest_marker("run_last")] + last


@pytest.fixture
def cpu_builds() -> list:
    """The (module, instances) batches the CPU build path has built so far in this session."""
    return _cpu_builds
