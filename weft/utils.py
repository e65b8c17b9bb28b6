"""Utilities around kernels: timing (``ScopedTimer``); array reductions and sorts come later.

Contract: nothing here is part of the compiler pipeline; these helpers only use the public
runtime (devices, arrays, launches).
"""

from __future__ import annotations

import builtins
import time

from .runtime import device as _device


class ScopedTimer:
    """Context manager that measures the wall-clock time of a block of code.

    On exit it prints ``"<name> took <ms> ms"`` (indented when timers are nested) and stores the
    time in ``elapsed`` (milliseconds).

    Args:
        name: Label printed with the time and used as the key in ``dict``.
        active: When False the timer does nothing.
        print: Print the elapsed time on exit.
        detailed: Profile the block with ``cProfile`` and print the statistics on exit.
        dict: A ``dict[str, list[float]]``; the elapsed time is appended to ``dict[name]``.
        use_nvtx: Accepted for compatibility; weft has no NVTX ranges, so the block is timed normally.
        color: NVTX range color (accepted for compatibility, unused).
        synchronize: Wait for outstanding device work before starting and stopping the clock.
        cuda_filter: CUDA activity filter (accepted for compatibility; no CUDA activity on CPU).
        report_func: Called as ``report_func(results, elapsed)`` on exit, ``results`` being a list
            of per-activity timings (empty on the CPU).
        skip_tape: Accepted for compatibility.

    Example:
        >>> with wp.ScopedTimer("step") as t:
        ...     run_step()
        step took 1.23 ms
    """

    enabled = True  # global switch: ScopedTimer.enabled = False silences every timer
    indent = -1  # nesting depth of active timers

    def __init__(
        self,
        name,
        active=True,
        print=True,
        detailed=False,
        dict=None,
        use_nvtx=False,
        color="rapids",
        synchronize=False,
        cuda_filter=0,
        report_func=None,
        skip_tape=False,
    ):
        self.name = name
        self.active = active and self.enabled
        self.print = print
        self.detailed = detailed
        self.dict = dict
        self.use_nvtx = use_nvtx
        self.color = color
        self.synchronize = synchronize
        self.cuda_filter = cuda_filter
        self.report_func = report_func
        self.skip_tape = skip_tape
        self.elapsed = 0.0
        self.extra_msg = ""  # appended to the printed line; may be set inside the block
        self.timing_results = []
        self._start = 0.0
        self._profile = None
        if self.dict is not None and name not in self.dict:
            self.dict[name] = []

    def __enter__(self):
        if not self.active:
            return self
        if self.synchronize:
            _device.synchronize()
        if self.detailed:
            import cProfile

            self._profile = cProfile.Profile()
            self._profile.enable()
        ScopedTimer.indent += 1
        self._start = time.perf_counter()
        return self

    def __exit__(self, exc_type, exc_value, traceback):
        if not self.active:
            return
        if self.synchronize:
            _device.synchronize()
        self.elapsed = (time.perf_counter() - self._start) * 1000.0
        ScopedTimer.indent -= 1
        if self._profile is not None:
            self._profile.disable()
            self._profile.print_stats(sort="tottime")
        if self.dict is not None:
            self.dict[self.name].append(self.elapsed)
        if self.report_func is not None:
            self.report_func(self.timing_results, self.elapsed)
        if self.print:
            pad = "    " * (ScopedTimer.indent + 1)
            builtins.print(f"{pad}{self.name} took {self.elapsed:.2f} ms{self.extra_msg}")
