"""Modules: group kernels by Python module, render them into one translation unit, build it
through the on-disk cache and bind the native entry points.

Contract: ``Module.ensure_built(instance)`` returns with ``instance.binding.forward_ptr`` set, and
``Module.ensure_backward(instance)`` with ``binding.backward_ptr`` set (when the backward pass is
enabled). All not-yet-built instances of the module are built together, as one C++ file keyed by
a sha256 over the source, headers, compiler and flags. The backward pass of such a batch is a
second library, built on the first backward launch of one of its kernels: most builds are for
forward launches, and compiling the forward pass alone takes half the time. (When a tape is
recording at the first launch, both passes are compiled into one library at once.)
Cache entries are written atomically and verified by a checksum before loading; a damaged entry
is rebuilt.
"""

from __future__ import annotations

import concurrent.futures
import ctypes
import functools
import hashlib
import os
import re
import shutil
import sys
import tempfile
import threading

from .. import config, log
from ..codegen.emit import join_unit, split_units
from ..codegen.emit_cpu import CPURenderer
from . import cache_key, cpu, recording
from .disk_cache import VERSION, _write_atomic, cache_dir, headers_digest, read_verified, runtime_digest  # noqa: F401 (re-exported)


_modules: dict = {}
_lock = threading.RLock()
_generation = [0]


def definitions_changed():
    """Called when a func is (re)defined: kernels lowered before may be stale."""
    _generation[0] += 1


def generation() -> int:
    return _generation[0]


def load_module(module=None, device=None, recursive=False, block_dim=None):
    """Build a module's kernels for ``device`` ahead of their launches (``wp.load_module``).

    Args:
        module: a Python module, its name, or a weft module; None: the caller's module.
        device: where to load them (default: the current device).
        recursive: also load the weft modules of the Python module's submodules.
        block_dim: accepted for Warp compatibility (see ``Module.load``).
    """
    import inspect

    if module is None:
        module = inspect.stack()[1].frame.f_globals.get("__name__", "__main__")
    name = module.name if isinstance(module, Module) else module if isinstance(module, str) else module.__name__
    names = [n for n in list(_modules) if n == name or (recursive and n.startswith(name + "."))]
    if not names and not _defines_weft_types(sys.modules.get(name)):
        raise RuntimeError(
            f"Module '{name}' does not contain any Warp kernels, functions, or structs (weft found none "
            "defined in it); import it first, or pass the module that defines them"
        )
    for n in names:
        get_module(n).load(device, block_dim)


def force_load(device=None, modules=None, block_dim=None, max_workers=None):
    """Build and load kernels now instead of at their first launches (Warp's ``wp.force_load``).

    Args:
        device: a device or a list of them; None: every device (the CPU and each GPU).
        modules: weft modules, Python modules or module names; None: every module with kernels
            defined outside weft (weft's own kernels build when first used).
        block_dim: accepted for Warp compatibility (see ``Module.load``).
        max_workers: how many modules Warp builds at once (None: ``wp.config.load_module_max_workers``).
            Accepted for compatibility: weft builds the modules one after another, each build
            compiling its translation units side by side on all cores.

    A kernel that does not compile is left out, as by ``wp.load_module``: it reports its error
    when it is launched, and the module's other kernels work (Warp fails the whole module).

    Raises:
        ValueError: ``max_workers`` is negative.
    """
    from .device import get_device, get_devices

    workers = config.load_module_max_workers if max_workers is None else max_workers
    if workers is not None and (isinstance(workers, bool) or not isinstance(workers, int) or workers < 0):
        raise ValueError(f"wp.force_load(): max_workers must be None or an int >= 0, got {workers!r}")
    if device is None:
        devices = get_devices()
    elif isinstance(device, (list, tuple)):
        devices = [get_device(d) for d in device]
    else:
        devices = [get_device(device)]
    if modules is None:
        targets = [m for m in list(_modules.values()) if m.kernels and not m.name.startswith(("weft.", "weft_"))]
    else:
        targets = [m if isinstance(m, Module) else get_module(getattr(m, "__name__", m)) for m in modules]
    for dev in devices:
        for m in targets:
            m.load(dev, block_dim)


def _defines_weft_types(pymodule) -> bool:
    """Whether a Python module holds a @wp.struct (structs have nothing to build, but loading
    their module is not an error)."""
    return pymodule is not None and any(getattr(v, "_kind", None) == "struct" for v in vars(pymodule).values())


def get_module(name: str) -> "Module":
    """The weft module of kernels named ``name`` (a Python module's name; made on first use), as
    ``wp.get_module``: its ``options`` apply to the kernels in it."""
    m = _modules.get(name)
    if m is None:
        m = _modules[name] = Module(name)
    return m


def build_options(options=None) -> tuple:
    """The preprocessor defines of a build: ``WEFT_RELEASE`` in release mode (the module's
    ``mode`` option, else ``wp.config.mode``)."""
    mode = (options or {}).get("mode") or config.mode
    if mode not in ("debug", "release"):
        raise ValueError(f"mode must be 'debug' or 'release', got {mode!r}")
    return ("WEFT_RELEASE",) if mode == "release" else ()


def cpu_tuning(options: dict) -> tuple:
    """``(optimization_level, cpu_compiler_flags)`` of a module: its options, else ``wp.config``."""
    level = options.get("optimization_level")
    isa = options.get("cpu_compiler_flags")
    return (
        config.optimization_level if level is None else level,
        config.cpu_compiler_flags if isa is None else isa,
    )


def cache_entry(stem: str, source: str, defines, include_dirs=(), tuning=(None, None)) -> str:
    """The cache path (without extension) of the library built from ``source`` with these options."""
    d = cache_dir()
    tuned = [repr(tuning)] if tuning != (None, None) else []
    key = hashlib.sha256(
        "\n".join(
            [VERSION, source, headers_digest(), cpu.compiler_identity(d), " ".join(cpu.BASE_FLAGS + cpu.GCC_FLAGS)]
            + [*defines, *include_dirs]
            + tuned
        ).encode()
    ).hexdigest()[:16]
    return os.path.join(d, f"{stem}_{key}")


def cached_library(stem: str, source: str, defines, include_dirs=(), units=None, tuning=(None, None)) -> ctypes.CDLL:
    """Build (or reuse from the cache) a shared library for ``source``; return it loaded.
    ``units``: the same code as several translation units, compiled side by side when building.
    ``tuning``: ``cpu_tuning`` of the module."""
    base = cache_entry(stem, source, defines, include_dirs, tuning)
    so_path, sum_path, cpp_path = base + ".so", base + ".sha256", base + ".cpp"
    lib = _load_verified(so_path, sum_path) if config.cache_kernels else None
    if lib is not None:
        return lib
    _write_atomic(cpp_path, source.encode())
    log.debug(f"building {stem} ({cpp_path}{f', as {len(units)} units' if units else ''})")
    if units and len(units) > 1:
        unit_dir = tempfile.mkdtemp(prefix=os.path.basename(base) + ".units_", dir=os.path.dirname(base))
        paths = [os.path.join(unit_dir, f"unit{k}.cpp") for k in range(len(units))]
        for path, text in zip(paths, units):
            with open(path, "w") as f:
                f.write(text)
        cpu.compile_units(paths, so_path, defines, include_dirs, tuning)
        shutil.rmtree(unit_dir, ignore_errors=True)  # kept when the build fails: its errors name them
    else:
        cpu.compile_shared(cpp_path, so_path, defines, include_dirs, tuning)
    with open(so_path, "rb") as f:
        _write_atomic(sum_path, hashlib.sha256(f.read()).hexdigest().encode())
    return ctypes.CDLL(so_path)


def _load_verified(so_path, sum_path):
    if read_verified(so_path, sum_path) is None:
        return None
    try:
        return ctypes.CDLL(so_path)
    except OSError:
        return None


_UNSET = object()
# Module options read when a kernel launches, not when it is built: changing one rebuilds nothing.
LAUNCH_OPTIONS = frozenset({"deterministic", "deterministic_max_records"})


class Module:
    """All kernels defined in one Python module."""

    def __init__(self, name: str):
        self.name = name
        self.kernels: list = []
        self.pending: list = []
        self.options: dict = {
            "enable_backward": config.enable_backward,  # as in Warp: the global default when the module is made
            "mode": None,  # None: wp.config.mode
            "optimization_level": None,
            "cpu_compiler_flags": None,
            # as in Warp: the global settings when the module is made (weft/determinism.py)
            "deterministic": config.deterministic,
            "deterministic_max_records": config.deterministic_max_records,
        }
        self.lazy_backward: list = []  # _Batch objects whose backward library is not built yet
        self.cuda_loaded: dict = {}  # CUDA ordinal -> aot.AotModule (set by load_aot_module)
        self._func_names: dict = {}
        # the funcs and structs defined in the module, by name (a definition again replaces the
        # entry); the funcs' source stands for kernels that do not compile in the module hash
        self.functions: dict = {}
        self.structs: dict = {}

    def set_options(self, options: dict):
        """Update the module's options; kernels built with the old ones are built again at
        their next launch (launches and tapes recorded before keep the code they ran).

        Raises:
            ValueError, TypeError: a ``deterministic`` value that is not a ``wp.DeterministicMode``,
                or a ``deterministic_max_records`` that is not a non-negative int.
        """
        from ..determinism import check_max_records, check_mode

        if "deterministic" in options:
            check_mode(options["deterministic"], f"module '{self.name}' option 'deterministic'")
        if "deterministic_max_records" in options:
            check_max_records(options["deterministic_max_records"], f"module '{self.name}' option 'deterministic_max_records'")
        changed = any(self.options.get(k, _UNSET) != v for k, v in options.items() if k not in LAUNCH_OPTIONS)
        self.options.update(options)
        if changed:  # the next launch of each kernel checks its instance (kernel.py: fingerprint)
            for k in self.kernels:
                for inst in k._instances.values():
                    inst.generation = -1

    def add_kernel(self, kernel) -> int:
        """Register a kernel; returns how many kernels of the same name came before it."""
        index = sum(1 for k in self.kernels if k.key == kernel.key)
        self.kernels.append(kernel)
        return index

    def add_func(self, function) -> int:
        self.functions[function.key] = function
        index = self._func_names.get(function.key, 0)
        self._func_names[function.key] = index + 1
        return index

    def add_instance(self, inst):
        self.pending.append(inst)

    def ensure_built(self, inst):
        if inst.binding.forward_ptr is not None:
            return
        with _lock:
            if inst.binding.forward_ptr is not None:
                return
            prefetch_runtime()  # every launch needs it: compile it while this module is lowered and built
            self.lower_unlaunched_kernels()
            # one instance per symbol: a kernel re-lowered since (a changed func or constant) leaves
            # only its latest instance pending, and the one asked for wins over any other
            latest = {i.symbol: i for i in self.pending if i.binding.forward_ptr is None}
            latest[inst.symbol] = inst
            batch = list(latest.values())
            self.build(batch)
            built = {i.symbol for i in batch}  # superseded instances of these kernels are dropped too
            self.pending = [i for i in self.pending if i.binding.forward_ptr is None and i.symbol not in built]

    def load(self, device=None, block_dim=None):
        """Build (or load from the cache) the module's code for ``device`` now instead of at the
        first launch, as Warp's ``Module.load``: every non-generic kernel, and every instance a
        launch already made. ``block_dim`` is accepted for Warp compatibility (weft's CPU
        entry points and CUDA launches take the block size at launch). Returns the module.
        A kernel that does not lower is left out: it reports its error when it is launched, and
        the module's other kernels work (Warp fails the whole module).

        Raises:
            WeftBuildError: the C++ (or NVRTC) build of the lowered kernels fails.
        """
        from .device import get_device

        dev = get_device(device)
        self.lower_unlaunched_kernels()  # a kernel that does not compile is left out (see there)
        instances = [i for k in self.kernels for i in k._instances.values()]
        if dev.is_cuda:
            from . import cuda

            for inst in instances:
                cuda.functions(inst, dev)
        else:
            for inst in instances:
                self.ensure_built(inst)
        return self

    def lower_unlaunched_kernels(self):
        """Prepare every non-generic kernel of the module and every declared overload of its
        generic ones (``wp.overload``) so that one build covers them all (a module's kernels
        usually launch together). A kernel that fails to compile is left out here; it reports its
        error when it is launched itself."""
        from ..codegen.errors import WarpCodegenError

        for k in self.kernels:
            declared = list(k.overloads.values()) if k.is_generic else [k]  # wp.overload instances
            for kernel in declared:
                if kernel._arg_types_key in kernel._instances:
                    continue
                try:
                    kernel.default_instance()
                except (WarpCodegenError, TypeError, ValueError, KeyError, AttributeError, RuntimeError):
                    pass

    def unload(self):
        """Forget the module's loaded code on every device, as Warp's ``Module.unload``: the next
        launch of one of its kernels loads it again (from the build cache). Work already captured
        in a graph or held by a ``wp.Launch`` keeps the code it was prepared with."""
        with _lock:
            for kernel in self.kernels:
                for inst in kernel._instances.values():
                    inst.binding.reset_cpu()
                    inst.binding.library = None
                    inst.binding.cuda_functions = {}
                    if inst not in self.pending:
                        self.pending.append(inst)

    def mark_modified(self):
        """Lower and build the kernels again at their next launch, as Warp's ``Module.mark_modified``.
        weft already does so by itself when a func is redefined or a global or closure value a
        kernel baked in changes; this forces it (e.g. after changing what a func reads through
        ``wp.static``-evaluated objects in place)."""
        definitions_changed()

    def load_instance(self, kernel, arg_types):
        """The instance of ``kernel`` for ``arg_types`` found in the kernel cache by the fast key,
        with the others built in the same library, all bound to it and none lowered; None when
        the cache holds no verified entry for what the module would build now (cache_key.bind)."""
        if not config.cache_kernels or not cache_key.enabled:
            return None
        with _lock:
            return cache_key.bind(self, kernel, arg_types)

    def hash_module(self) -> bytes:
        """The module's content hash (SHA-256 bytes, Warp's ``Module.hash_module``): the generated
        code of every kernel it would build now (forward and backward), the funcs and constants
        they use, and the build options. It changes exactly when what the kernels compute or how
        they are built changes; a module defined again with the same code hashes the same.
        A kernel that does not compile (it reports its error when launched) counts by its source
        text and that of the module's funcs."""
        from .launch import current_instance

        self.lower_unlaunched_kernels()
        instances = []
        for k in self.kernels:
            for arg_types in list(k._instances):
                instances.append(current_instance(k, arg_types))  # re-lowered if a func or constant changed
        funcs = self.funcs_of(instances)
        source = CPURenderer(("forward", "backward")).render_module(instances, funcs)
        # symbols carry the module's name: replaced by their position, the hash is the code's own
        for k, symbol in enumerate([i.symbol for i in instances] + [f.symbol for f in funcs]):
            source = source.replace(symbol, f"@{k}")
        source = re.sub(r"  // @py [^\n]*", "", source)  # where each line came from is not what it computes
        unlowered = [k for k in self.kernels if not k._instances and not k.is_generic]
        if unlowered:  # kernels that do not compile: their text and the module's funcs stand for their code
            texts = [_source_text(k.pyfunc) for k in unlowered]
            texts += [_source_text(o) for f in self.functions.values() for o in f.overloads]
            source += "\n".join(["", "// not compiled:"] + texts)
        # kernel options (launch_bounds, cuda_max_registers, cluster_dim) shape the GPU build only
        kernel_options = sorted(sorted((k, repr(v)) for k, v in kernel.options.items()) for kernel in self.kernels)
        options = repr(
            (build_options(self.options), cpu_tuning(self.options), self.options.get("enable_backward"), kernel_options)
        )
        return hashlib.sha256("\n".join([VERSION, source, options]).encode()).digest()

    def get_module_hash(self, block_dim=None) -> bytes:
        """Warp's name for ``hash_module``; ``block_dim`` is accepted for compatibility (weft's
        code does not depend on the block size)."""
        return self.hash_module()

    @property
    def references(self) -> set:
        """The other modules whose funcs this module's kernels call, directly or through other
        funcs, however a kernel reaches them (``ref.f()``, or ``f = ref.f`` then ``f()``): the
        modules whose redefinitions make these kernels compile again. Kernels not yet lowered
        are lowered first (as for ``hash_module``)."""
        from .launch import current_instance

        self.lower_unlaunched_kernels()
        found = set()
        for k in self.kernels:
            for arg_types in list(k._instances):
                for f in current_instance(k, arg_types).funcs:
                    module = f.function.module
                    if module is not None and module is not self:
                        found.add(module)
        return found

    @property
    def dependents(self) -> set:
        """The modules whose kernels call this module's funcs (the inverse of ``references``):
        the modules that a redefinition here makes compile again."""
        return {m for m in list(_modules.values()) if m is not self and m.kernels and self in m.references}

    @staticmethod
    def funcs_of(instances) -> list:
        """The funcs the instances call (transitively), each once, in dependency order."""
        funcs, seen = [], set()
        for inst in instances:
            for f in inst.funcs:
                if f.symbol not in seen:
                    seen.add(f.symbol)
                    funcs.append(f)
        return funcs

    def stem(self) -> str:
        """The module's name as a file-name prefix in the cache."""
        return "".join(ch if ch.isalnum() else "_" for ch in self.name)[-40:]

    def build(self, instances):
        """Build the forward pass of ``instances`` (and their backward pass if a tape is recording)."""
        both = recording.active_tape() is not None
        candidates = cache_key.candidates(self, [(inst.kernel, inst.arg_types) for inst in instances])
        renderer = CPURenderer(("forward", "backward") if both else ("forward",))
        source, units = module_units(renderer, instances, self.funcs_of(instances))
        lib = cached_library(
            self.stem(), source, build_options(self.options), units=units, tuning=cpu_tuning(self.options)
        )
        try:  # the next process finds this library without lowering (cache_key.py)
            cache_key.record(self, candidates, instances, lib._name[: -len(".so")], renderer.locs, both)
        except Exception as e:  # noqa: BLE001 -- a missing entry costs the next process a lowering, never a build
            log.debug(f"no fast cache entry for module {self.name}: {type(e).__name__}: {e}")
        if not both and any(inst.backward_enabled for inst in instances):
            self.lazy_backward.append(_Batch(instances, renderer))
        for inst in instances:
            inst.binding.library = lib
            inst.binding.loc_base = 0
            # The batch's error locations; the backward render appends its own to the same list.
            inst.binding.module_locs = renderer.locs
            if both and inst.backward_enabled:
                inst.binding.backward_ptr = _entry_address(lib, inst, "backward")
            inst.binding.forward_ptr = _entry_address(lib, inst, "forward")
            inst.binding.source = source

    def ensure_backward(self, inst):
        """Build (or load from the cache) the backward library of ``inst``'s batch, if not yet done."""
        self.ensure_built(inst)
        with _lock:
            for batch in self.lazy_backward:
                if inst in batch.instances:
                    # a failed build raises and the batch stays: the next backward launch builds
                    # (and reports) again instead of finding no backward pass at all
                    batch.build_backward(self)
                    self.lazy_backward.remove(batch)
                    return

    def cuda_build(self, instances, arch: int, use_ptx: bool = True, tile_lanes: int = 1) -> "CudaBuild":
        """Render the instances for CUDA and compile them with NVRTC for ``sm_<arch>`` (PTX for
        ``compute_<arch>`` when ``use_ptx``), through the disk cache. Needs no GPU. ``tile_lanes``:
        the threads of a block sharing each tile (native/tile/tile_cuda.h; 1: one thread per block).

        Raises:
            WeftBuildError: NVRTC is missing, or rejected the code (mapped to the Python line).
        """
        from ..codegen.emit_cuda import CUDARenderer
        from . import nvrtc

        renderer = CUDARenderer()
        source = renderer.render_module(instances, self.funcs_of(instances))
        defines = build_options(self.options) + ((f"WEFT_TILE_LANES={int(tile_lanes)}",) if tile_lanes > 1 else ())
        image = nvrtc.cached_image(self.stem(), source, int(arch), use_ptx, defines)
        entries = {inst.symbol: renderer.entry_points(inst) for inst in instances}
        build = CudaBuild(image, entries, list(renderer.locs), source)
        build.shared_bytes = renderer.tile_memory.bytes_for(tile_lanes)
        return build

    def cuda_image(self, instances, arch: int, use_ptx: bool = True) -> bytes:
        """PTX text or CUBIN bytes of the instances' CUDA entry points (see ``cuda_build``)."""
        return self.cuda_build(instances, arch, use_ptx).image


def _source_text(pyfunc) -> str:
    """A function's source text as compiled (``codegen.source``), or its qualname where there is none."""
    from ..codegen.source import Source

    try:
        return Source(pyfunc).text
    except RuntimeError:
        return pyfunc.__qualname__


def module_units(renderer, instances, funcs) -> tuple:
    """The module's C++ source, and the same code split into translation units to compile in
    parallel (None: one unit; cpu.unit_count decides)."""
    prelude, kernels = renderer.render_parts(instances, funcs)
    n = cpu.unit_count(sum(len(k) for k in kernels), len(kernels))
    return join_unit(prelude, kernels), (split_units(prelude, kernels, n) if n > 1 else None)


def _entry_address(lib, inst, mode: str) -> int:
    return ctypes.cast(getattr(lib, f"{inst.symbol}_cpu_{mode}"), ctypes.c_void_p).value



class _Batch:
    """Instances whose forward pass was built together, with the renderer that rendered it: the
    backward render continues its table of error locations, so that a location id means the same
    in both libraries (the instances' ``module_locs``)."""

    def __init__(self, instances, renderer, source=None):
        self.instances = list(instances)
        self.renderer = renderer  # None: loaded by the fast key (cache_key.py), from the C++ at ``source``
        self.source = source

    def build_backward(self, module):
        if self.renderer is None:
            self.render_loaded_forward(module)
        todo = [inst for inst in self.instances if inst.backward_enabled and inst.binding.forward_ptr is not None]
        self.renderer.passes = ("backward",)
        source, units = module_units(self.renderer, todo, module.funcs_of(todo))
        lib = cached_library(
            module.stem() + "_adj", source, build_options(module.options), units=units, tuning=cpu_tuning(module.options)
        )
        for inst in todo:  # (ctypes never unloads a library: the addresses stay valid)
            inst.binding.backward_ptr = _entry_address(lib, inst, "backward")

    def render_loaded_forward(self, module):
        """Lower the instances of a library loaded by the fast key and render its forward pass
        again: the backward render continues its table of error locations. The code must be the
        library's own, else the two passes would not match."""
        renderer = CPURenderer(("forward",))
        source, _ = module_units(renderer, self.instances, module.funcs_of(self.instances))
        with open(self.source) as f:
            loaded = f.read()
        if source != loaded or [tuple(loc) for loc in renderer.locs] != list(self.instances[0].binding.module_locs):
            raise RuntimeError(
                f"module '{module.name}': the code loaded from the kernel cache is not what its kernels compile to "
                "now (a definition changed since it was loaded); launch the kernels again to rebuild them"
            )
        for inst in self.instances:
            inst.binding.module_locs = renderer.locs
        self.renderer = renderer


class CudaBuild:
    """One CUDA compilation of a set of kernel instances.

    Attributes:
        image: PTX (bytes, no trailing NUL) or CUBIN.
        entry_points: instance symbol -> [``{sym}_cuda_forward``, ``{sym}_cuda_backward``] (no
            backward name when the instance was built without a backward pass).
        locs: source locations; a kernel error's ``loc`` indexes this list (-1: no location).
        source: the CUDA C++ that was compiled.
        shared_bytes: the dynamic shared memory a block of its tile kernels needs.
    """

    def __init__(self, image: bytes, entry_points: dict, locs: list, source: str):
        self.image = image
        self.entry_points = entry_points
        self.locs = locs
        self.source = source
        self.shared_bytes = 0


_runtime: list = []


def _runtime_source() -> str:
    with open(os.path.join(cpu.NATIVE_DIR, "runtime.cpp")) as f:
        return f.read()


def runtime_launch():
    """The runtime's ``launch(entry, ctx, args, n, nthreads, min_per_thread) -> has_error``: from
    the runtime built as a CPython extension module (a cheap call), or, where that cannot be built
    (no Python headers), ``weft_launch`` of the ctypes-loaded runtime library."""
    if not _runtime_ext:
        with _lock:
            if not _runtime_ext:
                _runtime_ext.append(_runtime_future[0].result() if _runtime_future else _load_runtime_extension())
    ext = _runtime_ext[0]
    return ext.launch if ext is not None else runtime_library().weft_launch


def runtime_sort_pairs32(keys: int, values: int, n: int, kind: int, begin_bit: int, end_bit: int):
    """Stable in-place radix sort of ``n`` contiguous (32-bit key, 32-bit value) pairs at these
    addresses (native/sort.h; kind 0: unsigned bits [begin_bit, end_bit), 1: int32, 2: float32)."""
    runtime_launch()
    ext = _runtime_ext[0]
    if ext is not None:
        ext.sort_pairs32(keys, values, n, kind, begin_bit, end_bit)
        return
    if not runtime_library().weft_radix_sort_pairs32(keys, values, n, kind, begin_bit, end_bit):
        raise MemoryError(f"radix_sort_pairs: no memory for the scratch space of {n} pairs")


@functools.cache
def _runtime_extension_build():
    """``cached_library`` arguments of the runtime extension; None without Python headers."""
    include = _python_include_dir()
    if not include:
        return None
    # the include directory names the Python version, so it keys the cache entry too
    return ("weft_runtime_py", _runtime_source(), ("WEFT_PYTHON_MODULE",), (include,))


def _python_include_dir():
    """The directory of this interpreter's ``Python.h``, or None. The usual place (under
    ``sys.base_prefix``) is tried before asking ``sysconfig``, whose import and path scheme cost
    about 1.3 ms, a tenth of a warm module load."""
    version = f"python{sys.version_info[0]}.{sys.version_info[1]}{getattr(sys, 'abiflags', '')}"
    usual = os.path.join(sys.base_prefix, "include", version)
    if os.path.exists(os.path.join(usual, "Python.h")):
        return usual
    import sysconfig

    include = sysconfig.get_paths().get("include")
    return include if include and os.path.exists(os.path.join(include, "Python.h")) else None


def runtime_tuner_state(entry: int, n: int):
    """What the runtime measured for entry point ``entry`` at grid size ``n`` (config.cpu_adaptive):
    samples and time estimates for one thread and for the pool, and its current choice; None if
    that pair never ran multi-threaded."""
    runtime_launch()
    ext = _runtime_ext[0]
    if ext is not None:
        out = ext.tuner_state(entry, n)
    else:
        out = (ctypes.c_double * 6)()
        if not runtime_library().weft_tuner_state(entry, n, out):
            out = None
    if out is None:
        return None
    return {
        "serial_samples": int(out[0]),
        "pool_samples": int(out[1]),
        "serial_seconds": out[2],
        "pool_seconds": out[3],
        "launches": int(out[4]),
        "choice": "serial" if out[5] == 0 else "pool",
    }


@functools.cache
def installed_runtime():
    """``weft._runtime``, the runtime extension built at install time (setup.py), when it was built
    from the runtime source this weft has; else None (then the kernel cache gets one)."""
    try:
        from .. import _runtime
    except ImportError:
        return None
    return _runtime if getattr(_runtime, "source_hash", None) == runtime_digest() else None


def _load_runtime_extension():
    import importlib.machinery
    import importlib.util

    installed = installed_runtime()
    if installed is not None:
        return installed
    build = _runtime_extension_build()
    if build is None:
        return None
    try:
        lib = cached_library(*build)
    except Exception:  # noqa: BLE001 -- no extension: the ctypes runtime does the same job
        return None
    loader = importlib.machinery.ExtensionFileLoader("weft_runtime_ext", lib._name)
    spec = importlib.util.spec_from_file_location("weft_runtime_ext", lib._name, loader=loader)
    module = importlib.util.module_from_spec(spec)
    loader.exec_module(module)
    return module


_runtime_ext: list = []
_runtime_future: list = []


def prefetch_runtime():
    """Start compiling the runtime extension in a background thread if the cache lacks it.
    Called before the first module build: the host compiler then builds the runtime and the
    module's kernels at the same time, on two cores. (A cached runtime is loaded when first
    needed, in about 2 ms: a thread would only add its start-up and GIL hand-offs.)"""
    if _runtime_ext or _runtime_future or installed_runtime() is not None:
        return
    build = _runtime_extension_build()
    if build is None or os.path.exists(cache_entry(*build) + ".so"):
        return
    future = concurrent.futures.Future()

    def work():
        try:
            future.set_result(_load_runtime_extension())
        except BaseException as e:  # noqa: BLE001 -- re-raised by runtime_launch's result()
            future.set_exception(e)

    _runtime_future.append(future)
    # Not a daemon: a process that exits before its first launch waits for the compiler rather
    # than leaving it orphaned and a temporary file in the cache.
    threading.Thread(target=work, name="weft-runtime-build").start()


def runtime_library() -> ctypes.CDLL:
    """The thread-pool runtime (native/runtime.cpp) as a ctypes library, built once into the cache."""
    if not _runtime:
        with _lock:
            if not _runtime:
                lib = cached_library("weft_runtime", _runtime_source(), ())
                lib.weft_launch.restype = ctypes.c_int
                lib.weft_launch.argtypes = [
                    ctypes.c_void_p,
                    ctypes.c_void_p,
                    ctypes.c_void_p,
                    ctypes.c_int64,
                    ctypes.c_int,
                    ctypes.c_int64,
                    ctypes.c_int,
                ]
                lib.weft_tuner_state.restype = ctypes.c_int
                lib.weft_tuner_state.argtypes = [ctypes.c_void_p, ctypes.c_int64, ctypes.POINTER(ctypes.c_double)]
                lib.weft_radix_sort_pairs32.restype = ctypes.c_int
                lib.weft_radix_sort_pairs32.argtypes = [
                    ctypes.c_void_p,
                    ctypes.c_void_p,
                    ctypes.c_int64,
                    ctypes.c_int,
                    ctypes.c_int,
                    ctypes.c_int,
                ]
                _runtime.append(lib)
    return _runtime[0]


def set_module_options(options: dict, module=None):
    """Set build options for the kernels of a Python module.

    Options take effect for kernels built afterwards; a kernel's own decorator options win over them.

    Args:
        options: option names and values, among ``enable_backward`` (generate backward passes),
            ``mode`` (``"debug"`` or ``"release"``), ``optimization_level`` (0-3),
            ``cpu_compiler_flags``, ``deterministic`` (a ``wp.DeterministicMode``) and
            ``deterministic_max_records``.
        module: the Python module (object or name) whose kernels the options apply to; by default,
            the module that calls this function.

    Example:
        >>> wp.set_module_options({"enable_backward": False})
    """
    import inspect

    if module is None:
        module = inspect.stack()[1].frame.f_globals.get("__name__", "__main__")
    name = module if isinstance(module, str) else getattr(module, "__name__", str(module))
    get_module(name).set_options(options)


def get_module_options(module=None) -> dict:
    """The build options of a Python module's kernels (see ``set_module_options``).

    Args:
        module: the Python module (object or name); by default, the module that calls this function.

    Returns:
        A new dict of option names and values (changing it changes nothing).
    """
    import inspect

    if module is None:
        module = inspect.stack()[1].frame.f_globals.get("__name__", "__main__")
    name = module if isinstance(module, str) else getattr(module, "__name__", str(module))
    return dict(get_module(name).options)


def clear_kernel_cache():
    """Delete every cached build in the kernel cache directory."""
    import shutil

    d = cache_dir()
    for name in os.listdir(d):
        p = os.path.join(d, name)
        if os.path.isdir(p):
            shutil.rmtree(p, ignore_errors=True)
        else:
            try:
                os.unlink(p)
            except OSError:
                pass
    for m in _modules.values():
        m.lazy_backward.clear()
        for k in m.kernels:
            for inst in k._instances.values():
                inst.binding.reset_cpu()
                if inst not in m.pending:
                    m.pending.append(inst)
