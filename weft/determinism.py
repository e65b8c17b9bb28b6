"""``wp.DeterministicMode``: how reproducible the results of kernels using atomics must be.

Set globally with ``wp.config.deterministic`` (taken by each module when it is created), per
module with ``wp.set_module_options({"deterministic": mode})``, or for one kernel with
``@wp.kernel(module="unique", module_options={"deterministic": mode})``, as in Warp.

What weft does with it (``runtime/launch.py`` ``launch_order``, ``codegen/ordering.py``): a pass
whose result can depend on the order its threads run in (float atomics, atomics whose result is
used, shared gradient adds in a backward pass) runs its threads in task order, as one thread
would, under ``GPU_TO_GPU`` (the same bits for any ``wp.config.cpu_threads``); under
``RUN_TO_RUN`` a pass whose order-dependent work is all accumulations keeps its threads
(private copies summed in a fixed order, or shares taking turns: ``native/accumulate.h``), the
same bits in every run with the same thread count. On a GPU such passes run on one thread.
Passes that cannot depend on thread order run on all threads as usual.
"""

from __future__ import annotations

import enum


class DeterministicMode(enum.IntEnum):
    """How reproducible atomics must be (Warp's names and values)."""

    NOT_GUARANTEED = 0
    """Atomics combine values in the order threads happen to run (fastest)."""
    RUN_TO_RUN = 1
    """The same bits in every run of the same program on the same machine."""
    GPU_TO_GPU = 2
    """The same bits across devices and thread counts (weft: also across ``cpu_threads``)."""


def check_mode(value, where: str) -> DeterministicMode:
    """``value`` as a ``DeterministicMode``; ``where`` names the setting in the error.

    Raises:
        ValueError: not a ``wp.DeterministicMode`` value.
    """
    if not isinstance(value, DeterministicMode):
        raise ValueError(f"{where} must be a wp.DeterministicMode value, got {value!r}")
    return value


def check_max_records(value, where: str) -> int:
    """A checked ``deterministic_max_records``: a non-negative int (0: the default bound).

    Raises:
        TypeError: not an int (a bool is not one here).
        ValueError: negative.
    """
    if isinstance(value, bool) or not isinstance(value, int):
        raise TypeError(f"{where} must be a non-negative int, got {type(value).__name__} {value!r}")
    if value < 0:
        raise ValueError(f"{where} must be a non-negative int, got {value}")
    return value
