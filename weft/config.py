"""Global switches. Set them before the kernels they affect are built (or launched).

Attributes:
    mode: "debug" (default: array indices are bounds-checked on the CPU) or "release" (no checks).
    kernel_cache_dir: where built kernels are cached (default ``$WEFT_CACHE_DIR`` or ~/.cache/weft).
    cpu_threads: threads used for CPU launches (default: all cores; ``$WEFT_CPU_THREADS`` overrides).
    cpu_adaptive: per kernel and grid size, use one thread instead of the pool when that measured
        faster (small grids, contended atomics); False always uses ``cpu_threads``.
    verify_autograd_array_access: warn when a recorded launch overwrites an array an earlier one read.
    verbose: print build activity (the same as ``log_level = wp.LOG_DEBUG``).
    quiet: accepted for Warp compatibility; weft prints nothing by default.
    enable_backward: whether kernels get a backward pass: the default ``enable_backward`` option
        of each weft module made afterwards (``wp.set_module_options`` and the kernel's own
        ``enable_backward`` override it).
    verify_fp: after every launch, raise ``FloatingPointError`` if an argument holds NaN or inf.
    log_level: messages below this level are hidden (``wp.LOG_DEBUG`` 10, ``LOG_INFO`` 20, the
        default, ``LOG_WARNING`` 30, ``LOG_ERROR`` 40; see ``weft/log.py``).
    max_unroll: constant-bound ``range`` loops up to this many iterations are unrolled.
    verify_cuda: synchronise after every GPU launch and raise its kernel errors right away
        (otherwise they are raised at the next ``wp.synchronize``/``wp.synchronize_device``).
    cuda_output: "ptx", "cubin" or None (choose per device: see ``runtime/cuda.py`` ``module_format``).
    optimization_level: the C++ optimisation level of CPU builds, 0-3 (None: 3); a module's
        ``optimization_level`` option overrides it.
    cpu_compiler_flags: flags choosing the instruction set of CPU builds, in place of
        ``-march=native`` (None: native; ``""``: any processor of the architecture); a module's
        ``cpu_compiler_flags`` option overrides it.
    legacy_scalar_return_types: builtins called from Python return plain ``float`` / ``int`` for
        every scalar type (default False: float32 and int32 results are ``float`` / ``int``, other
        types weft scalar values such as ``wp.float64(...)``).
    cache_kernels: reuse built kernels from the disk cache (default True); False builds every
        module afresh (the build is still written to the cache).
    load_module_max_workers: Warp's number of modules ``wp.force_load`` / ``wp.load_module`` build at
        once (0: one after another; None: one per core). Accepted for compatibility: weft builds
        modules one after another and spreads each build's translation units over the cores.
    deterministic: a ``wp.DeterministicMode`` (default ``NOT_GUARANTEED``): how reproducible
        kernels with atomics must be (``weft/determinism.py``); each module takes the value when
        it is created (its ``"deterministic"`` option). Only ``DeterministicMode`` values are
        accepted (``ValueError`` otherwise).
    deterministic_max_records: Warp's per-thread bound on deterministic atomic records (0: the
        default); the ``"deterministic_max_records"`` module option. weft's CPU and CUDA
        deterministic launches need no record buffers, so it only has to be a valid value.
    deterministic_debug: accepted for Warp compatibility (Warp's record-buffer diagnostics).
    verify_ir: check after the compiler's stages that none changed the IR it was given (a
        development switch, on in weft's test suite; ``codegen/pipeline.py``).
    cpu_min_tasks_per_thread: launches with fewer threads than this per CPU worker run on the
        calling thread only (default 256).
    version: weft's version string (also ``wp.__version__``).
"""

import os
import sys
import types

from .determinism import DeterministicMode, check_max_records, check_mode

version = "0.1.0"
mode = "debug"
kernel_cache_dir = None
cache_kernels = True
verbose = False
quiet = False
log_level = 20  # weft.log.LOG_INFO
verify_autograd_array_access = False
verify_fp = False
max_unroll = 16
enable_backward = True
cpu_threads = int(os.environ.get("WEFT_CPU_THREADS", "0")) or (os.cpu_count() or 1)
# Launches with fewer threads than this per CPU worker run on the calling thread only.
cpu_min_tasks_per_thread = 256
# Let the runtime measure, per kernel and grid size, whether the pool or one thread is faster.
cpu_adaptive = True
verify_cuda = False
cuda_output = None
verify_ir = False
optimization_level = None
legacy_scalar_return_types = False
cpu_compiler_flags = None
load_module_max_workers = 0
deterministic = DeterministicMode.NOT_GUARANTEED
deterministic_max_records = 0
deterministic_debug = False


class _Config(types.ModuleType):
    """The config module checks the settings that have a fixed set of values when they are set."""

    def __setattr__(self, name, value):
        if name == "deterministic":
            check_mode(value, "wp.config.deterministic")
        elif name == "deterministic_max_records":
            check_max_records(value, "wp.config.deterministic_max_records")
        super().__setattr__(name, value)


# The settings, as documented in this module's docstring (the API reference reads them from there).
__all__ = [
    "mode", "kernel_cache_dir", "cpu_threads", "cpu_adaptive", "cpu_min_tasks_per_thread",
    "verify_autograd_array_access", "verbose", "quiet", "enable_backward", "verify_fp", "log_level", "max_unroll",
    "verify_cuda", "cuda_output", "optimization_level", "cpu_compiler_flags", "legacy_scalar_return_types",
    "cache_kernels", "load_module_max_workers", "deterministic", "deterministic_max_records",
    "deterministic_debug", "verify_ir", "version",
]  # fmt: skip

sys.modules[__name__].__class__ = _Config
