"""Session hooks shared by the test suite.

Every batch of kernel instances the CPU build path builds during the session is recorded, so that
``test_cuda_codegen.py::test_every_suite_kernel_compiles_for_cuda`` (moved to the end of the run by
its ``run_last`` marker) can compile the same kernels for CUDA with NVRTC.
"""

from __future__ import annotations

import pytest

from weft.runtime import module as _module

_cpu_builds: list = []  # (weft Module, [KernelInstance]) per successful CPU build, in order
_build = _module.Module.build


def _recording_build(self, instances):
    _build(self, instances)
    _cpu_builds.append((self, list(instances)))


_module.Module.build = _recording_build


def pytest_configure(config):
    config.addinivalue_line("markers", "run_last: run after every other collected test")


def pytest_collection_modifyitems(session, config, items):
    """Move ``run_last`` tests to the end, keeping the order of everything else."""
    last = [item for item in items if item.get_closest_marker("run_last")]
    items[:] = [item for item in items if not item.get_closest_marker("run_last")] + last


@pytest.fixture
def cpu_builds() -> list:
    """The (module, instances) batches the CPU build path has built so far in this session."""
    return _cpu_builds
