"""Modules: group kernels by Python module, render them into one translation unit, build it
through the on-disk cache and bind the native entry points.

Contract: ``Module.ensure_built(instance)`` returns with ``instance.forward_ptr`` (and
``backward_ptr`` when enabled) set. All not-yet-built instances of the module are built
together, as one C++ file keyed by a sha256 over the source, headers, compiler and flags.
Cache entries are written atomically and verified by a checksum before loading; a damaged entry
is rebuilt.
"""

from __future__ import annotations

import ctypes
import hashlib
import os
import threading

from .. import config
from ..codegen.emit import CPURenderer
from . import cpu

VERSION = "0.1.0"

_modules: dict = {}
_lock = threading.RLock()
_generation = [0]


def definitions_changed():
    """Called when a func is (re)defined: kernels lowered before may be stale."""
    _generation[0] += 1


def generation() -> int:
    return _generation[0]


def get_module(name: str) -> "Module":
    m = _modules.get(name)
    if m is None:
        m = _modules[name] = Module(name)
    return m


def cache_dir() -> str:
    d = (
        config.kernel_cache_dir
        or os.environ.get("WEFT_CACHE_DIR")
        or os.path.join(os.path.expanduser("~"), ".cache", "weft", VERSION)
    )
    os.makedirs(d, exist_ok=True)
    return d


def _headers_digest() -> str:
    h = hashlib.sha256()
    for name in sorted(os.listdir(cpu.NATIVE_DIR)):
        if name.endswith((".h", ".cpp")):
            with open(os.path.join(cpu.NATIVE_DIR, name), "rb") as f:
                h.update(name.encode() + f.read())
    return h.hexdigest()


_header_digest_cache: list = []


def headers_digest() -> str:
    if not _header_digest_cache:
        _header_digest_cache.append(_headers_digest())
    return _header_digest_cache[0]


def build_options() -> tuple:
    defines = ("WEFT_RELEASE",) if config.mode == "release" else ()
    return defines


def cached_library(stem: str, source: str, defines, include_dirs=()) -> ctypes.CDLL:
    """Build (or reuse from the cache) a shared library for ``source``; return it loaded."""
    key = hashlib.sha256(
        "\n".join(
            [VERSION, source, headers_digest(), cpu.compiler_identity(), " ".join(cpu.BASE_FLAGS)]
            + [*defines, *include_dirs]
        ).encode()
    ).hexdigest()[:16]
    d = cache_dir()
    base = os.path.join(d, f"{stem}_{key}")
    so_path, sum_path, cpp_path = base + ".so", base + ".sha256", base + ".cpp"
    lib = _load_verified(so_path, sum_path)
    if lib is not None:
        return lib
    _write_atomic(cpp_path, source.encode())
    if config.verbose:
        print(f"weft: building {stem} ({cpp_path})")
    cpu.compile_shared(cpp_path, so_path, defines, include_dirs)
    with open(so_path, "rb") as f:
        _write_atomic(sum_path, hashlib.sha256(f.read()).hexdigest().encode())
    return ctypes.CDLL(so_path)


def _load_verified(so_path, sum_path):
    try:
        with open(so_path, "rb") as f:
            data = f.read()
        with open(sum_path, "rb") as f:
            expected = f.read().decode().strip()
    except OSError:
        return None
    if hashlib.sha256(data).hexdigest() != expected:
        return None  # damaged or half-written entry: rebuild
    try:
        return ctypes.CDLL(so_path)
    except OSError:
        return None


def _write_atomic(path, data: bytes):
    tmp = f"{path}.{os.getpid()}.{threading.get_ident()}.tmp"
    with open(tmp, "wb") as f:
        f.write(data)
    os.replace(tmp, path)


class Module:
    """All kernels defined in one Python module."""

    def __init__(self, name: str):
        self.name = name
        self.kernels: list = []
        self.pending: list = []
        self.options: dict = {"enable_backward": True}
        self.locs: list = []  # source locations of all built instances (runtime errors)
        self.cuda_loaded: dict = {}  # device alias -> aot.AotModule (set by load_aot_module)
        self._func_names: dict = {}

    def add_kernel(self, kernel) -> int:
        """Register a kernel; returns how many kernels of the same name came before it."""
        index = sum(1 for k in self.kernels if k.key == kernel.key)
        self.kernels.append(kernel)
        return index

    def add_func(self, function) -> int:
        index = self._func_names.get(function.key, 0)
        self._func_names[function.key] = index + 1
        return index

    def add_instance(self, inst):
        self.pending.append(inst)

    def ensure_built(self, inst):
        if inst.forward_ptr is not None:
            return
        with _lock:
            if inst.forward_ptr is not None:
                return
            self.lower_unlaunched_kernels()
            batch = [i for i in self.pending if i.forward_ptr is None]
            if inst not in batch:
                batch.append(inst)
            self.build(batch)
            self.pending = [i for i in self.pending if i.forward_ptr is None]

    def lower_unlaunched_kernels(self):
        """Prepare every non-generic kernel of the module so that one build covers them all (a
        module's kernels usually launch together). A kernel that fails to compile is left out
        here; it reports its error when it is launched itself."""
        from ..codegen.errors import WarpCodegenError

        for k in self.kernels:
            if not k.is_generic and not k._instances:
                try:
                    k.default_instance()
                except (WarpCodegenError, TypeError, ValueError, KeyError, AttributeError, RuntimeError):
                    pass

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
        renderer = CPURenderer()
        source = renderer.render_module(instances, self.funcs_of(instances))
        stem = self.stem()
        lib = cached_library(stem, source, build_options())
        base = len(self.locs)
        self.locs.extend(renderer.locs)
        for inst in instances:
            inst.library = lib
            inst.loc_base = base
            inst.module_locs = self.locs
            inst.backward_ptr = (
                ctypes.cast(getattr(lib, f"{inst.symbol}_cpu_backward"), ctypes.c_void_p).value
                if inst.backward_enabled
                else None
            )
            inst.forward_ptr = ctypes.cast(getattr(lib, f"{inst.symbol}_cpu_forward"), ctypes.c_void_p).value
            inst.source = source

    def cuda_build(self, instances, arch: int, use_ptx: bool = True) -> "CudaBuild":
        """Render the instances for CUDA and compile them with NVRTC for ``sm_<arch>`` (PTX for
        ``compute_<arch>`` when ``use_ptx``), through the disk cache. Needs no GPU.

        Raises:
            WeftBuildError: NVRTC is missing, or rejected the code (mapped to the Python line).
        """
        from ..codegen.emit_cuda import CUDARenderer
        from . import nvrtc

        renderer = CUDARenderer()
        source = renderer.render_module(instances, self.funcs_of(instances))
        image = nvrtc.cached_image(self.stem(), source, int(arch), use_ptx, build_options())
        entries = {inst.symbol: renderer.entry_points(inst) for inst in instances}
        return CudaBuild(image, entries, list(renderer.locs), source)

    def cuda_image(self, instances, arch: int, use_ptx: bool = True) -> bytes:
        """PTX text or CUBIN bytes of the instances' CUDA entry points (see ``cuda_build``)."""
        return self.cuda_build(instances, arch, use_ptx).image


class CudaBuild:
    """One CUDA compilation of a set of kernel instances.

    Attributes:
        image: PTX (bytes, no trailing NUL) or CUBIN.
        entry_points: instance symbol -> [``{sym}_cuda_forward``, ``{sym}_cuda_backward``] (no
            backward name when the instance was built without a backward pass).
        locs: source locations; a kernel error's ``loc`` indexes this list (-1: no location).
        source: the CUDA C++ that was compiled.
    """

    def __init__(self, image: bytes, entry_points: dict, locs: list, source: str):
        self.image = image
        self.entry_points = entry_points
        self.locs = locs
        self.source = source


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
                _runtime_ext.append(_load_runtime_extension())
    ext = _runtime_ext[0]
    return ext.launch if ext is not None else runtime_library().weft_launch


def _load_runtime_extension():
    import importlib.machinery
    import importlib.util
    import sysconfig

    include = sysconfig.get_paths().get("include")
    if not include or not os.path.exists(os.path.join(include, "Python.h")):
        return None
    try:  # the include directory names the Python version, so it keys the cache entry too
        lib = cached_library("weft_runtime_py", _runtime_source(), ("WEFT_PYTHON_MODULE",), (include,))
    except Exception:  # noqa: BLE001 -- no extension: the ctypes runtime does the same job
        return None
    loader = importlib.machinery.ExtensionFileLoader("weft_runtime_ext", lib._name)
    spec = importlib.util.spec_from_file_location("weft_runtime_ext", lib._name, loader=loader)
    module = importlib.util.module_from_spec(spec)
    loader.exec_module(module)
    return module


_runtime_ext: list = []


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
                ]
                _runtime.append(lib)
    return _runtime[0]


def set_module_options(options: dict, module=None):
    """Set options (``enable_backward``, ...) for the kernels of a Python module (default: caller's)."""
    import inspect

    if module is None:
        module = inspect.stack()[1].frame.f_globals.get("__name__", "__main__")
    name = module if isinstance(module, str) else getattr(module, "__name__", str(module))
    get_module(name).options.update(options)


def get_module_options(module=None) -> dict:
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
        for k in m.kernels:
            for inst in k._instances.values():
                inst.forward_ptr = None
                inst.backward_ptr = None
                inst.launcher = None
                if inst not in m.pending:
                    m.pending.append(inst)
