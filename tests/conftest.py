"""Session hooks shared by the test suite.

Every batch of kernel instances the CPU build path builds during the session is recorded, so that
``test_cuda_codegen.py::test_every_suite_kernel_compiles_for_cuda`` (moved to the end of the run by
its ``run_last`` marker) can compile the same kernels for CUDA with NVRTC.

Tests run on the devices ``devices.py`` describes (``--device cuda:0`` or
``WEFT_TEST_DEVICES=cpu,cuda:0``; the CPU alone by default); ``cpu_only`` tests run on the CPU only.
"""

from __future__ import annotations

import pytest

import devices
from weft.runtime import module as _module

if devices.simulated():
    devices.install_simulated_driver()

import weft as wp  # noqa: E402

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
    config.addinivalue_line("markers", "cpu_only(reason): the test is about the CPU itself; it runs on the CPU only")
    config.weft_devices = devices.requested(config.getoption("--device"))


def pytest_generate_tests(metafunc):
    """Parametrise every test over the requested devices (unless that is the CPU alone, so that the
    default run keeps its test ids)."""
    names = metafunc.config.weft_devices
    if names == ["cpu"] or "weft_device" not in metafunc.fixturenames:
        return
    if metafunc.definition.get_closest_marker("cpu_only"):
        names = ["cpu"]
    metafunc.parametrize("weft_device", names, indirect=True, scope="function")


@pytest.fixture(autouse=True)
def weft_device(request):
    """The device this test runs on, made the default device for its duration."""
    name = getattr(request, "param", "cpu")
    if name == "cpu":
        yield wp.get_device("cpu")
        return
    if not wp.is_cuda_available():
        pytest.skip(f"{name} was requested but this machine has no CUDA device")
    with wp.ScopedDevice(name) as device:
        yield device
        device.synchronize()  # a kernel error of the test's last launches fails the test


def pytest_collection_modifyitems(session, config, items):
    """Move ``run_last`` tests to the end, keeping the order of everything else."""
    last = [item for item in items if item.get_closest_marker("run_last")]
    items[:] = [item for item in items if not item.get_closest_marker("run_last")] + last


@pytest.fixture
def cpu_builds() -> list:
    """The (module, instances) batches the CPU build path has built so far in this session."""
    return _cpu_builds
