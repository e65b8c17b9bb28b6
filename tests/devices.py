"""Which devices the suite's device-parametrised tests run on, and the simulated GPU for dry runs.

Every test runs on the device(s) named by ``--device`` (repeatable) or ``WEFT_TEST_DEVICES``
(comma-separated); the default is ``cpu`` alone, which leaves the suite exactly as it is. A test
parametrised over ``cuda:0`` runs inside ``wp.ScopedDevice("cuda:0")``: the arrays it makes and the
kernels it launches without a ``device=`` argument go to the GPU, and kernel errors are collected by
a device synchronisation when it ends. Tests about the CPU itself (its compiler, thread pool,
host pointers) and tests that pick their devices themselves carry the ``fixed_device`` marker and
run once, as written, whatever the list says.

``WEFT_TEST_SIMULATED_CUDA=1`` installs the simulated driver of ``cuda_fake_driver.py`` for the
whole session, so that a run with ``cuda:0`` in its list can be rehearsed on a machine without a
GPU (device memory in host RAM, kernels run by their CPU entry points after NVRTC compiled them).
"""

from __future__ import annotations

import os

ENV_DEVICES = "WEFT_TEST_DEVICES"
ENV_SIMULATED = "WEFT_TEST_SIMULATED_CUDA"


def requested(option_values) -> list:
    """The device aliases asked for: the ``--device`` options, else the environment, else cpu."""
    names = list(option_values or [])
    if not names:
        names = [d.strip() for d in os.environ.get(ENV_DEVICES, "cpu").split(",") if d.strip()]
    seen = []
    for name in names or ["cpu"]:
        if name not in seen:
            seen.append(name)
    return seen


def simulated() -> bool:
    """Whether the session runs against the simulated CUDA driver."""
    return os.environ.get(ENV_SIMULATED, "") not in ("", "0")


def install_simulated_driver():
    """Make the simulated driver weft's CUDA driver for the rest of the process (one GPU).

    NVRTC still compiles every CUDA image the runtime loads, so a dry run also proves that the
    code compiles for the GPU.
    """
    import cuda_fake_driver

    from weft.runtime import cuda_driver
    from weft.runtime import device as device_mod

    driver = cuda_fake_driver.FakeDriver()
    cuda_driver._state[:] = [(driver, 1, "")]
    device_mod._cuda_probe[:] = []
    return driver
