"""Run a Python program against the simulated CUDA driver (a dry run of GPU code on a CPU machine).

    python tests/simulated_cuda.py -m weft.examples.bounce --device cuda:0
    python tests/simulated_cuda.py benchmarks/run.py --device cuda:0 --quick

The simulated driver (``cuda_fake_driver.py``) serves ``cuda:0`` from host memory and runs each
kernel through its CPU entry point after NVRTC has compiled its CUDA image, so the program's
device handling (allocations, copies, launches, streams, interop) is exercised without a GPU.
Timings under it mean nothing. Programs that start further Python processes run those without it.
"""

from __future__ import annotations

import os
import runpy
import sys

HERE = os.path.dirname(os.path.abspath(__file__))


def main(argv: list) -> None:
    if not argv or (argv[0] == "-m" and len(argv) < 2):
        raise SystemExit(__doc__)
    sys.path.insert(0, HERE)
    import devices

    devices.install_simulated_driver()
    if argv[0] == "-m":
        sys.argv = [argv[1], *argv[2:]]
        runpy.run_module(argv[1], run_name="__main__", alter_sys=True)
    else:
        sys.argv = list(argv)
        sys.path.insert(0, os.path.dirname(os.path.abspath(argv[0])))
        runpy.run_path(argv[0], run_name="__main__")


if __name__ == "__main__":
    main(sys.argv[1:])
