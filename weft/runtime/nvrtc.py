"""CUDA build: compile a module's CUDA C++ with NVRTC into PTX or CUBIN, through the disk cache.

Contract: ``cached_image(stem, source, arch, use_ptx, defines)`` returns the PTX text (as bytes,
NUL-free) or the CUBIN of ``source`` for ``sm_<arch>``, reusing a verified cache entry when the
source, headers, NVRTC version, architecture, output kind and defines match. A compile error
raises ``WeftBuildError`` naming the Python line of the first diagnostic that points at a
generated statement (the ``// @py file:line`` comments the emitter writes), like the CPU path.
``cached_images(stem, source, arch, defines, fast)`` gives both the PTX and the CUBIN from one
NVRTC run (``compile_both``), and ``images_job`` runs it in a process pool.

Needs ``cuda-python`` (``cuda.bindings.nvrtc``) and an NVRTC library (the ``nvidia-cuda-nvrtc``
wheel); neither is imported until a CUDA build is requested, so the CPU path never loads them.
No GPU or driver is needed: NVRTC only compiles.
"""

from __future__ import annotations

import functools
import hashlib
import os
import re

from ..codegen.errors import WeftBuildError
from ..log import debug as log_debug
from . import cpu
from .disk_cache import _write_atomic, read_verified

# Fixed options: C++17 like the host build, IEEE math (no --use_fast_math: NaN/inf semantics of
# the builtins rely on it), unannotated functions default to device code, no warnings (generated
# code declares variables it may not use; the CPU build passes -w too).
BASE_OPTIONS = ["-std=c++17", "-default-device", "-w"]

# Less device optimisation for a much faster compilation (about 4.5x less CPU time on the test
# suite's modules): for builds that only prove that code compiles (tests/test_cuda_codegen.py
# checks every kernel of the suite this way); every stage (front end, NVVM, ptxas) still runs.
FAST_OPTION = "--Ofast-compile=max"


def _nvrtc():
    """The ``cuda.bindings.nvrtc`` module, or a WeftBuildError telling how to install it."""
    try:
        from cuda.bindings import nvrtc
    except ImportError as e:
        raise WeftBuildError(
            "building CUDA kernels needs NVRTC through cuda-python: "
            "`pip install cuda-python nvidia-cuda-nvrtc` (or `pip install weft[cuda]`)"
        ) from e
    return nvrtc


def available() -> bool:
    """True when cuda-python and an NVRTC library can be loaded (no GPU is needed)."""
    try:
        version()
    except WeftBuildError:
        return False
    return True


def _check(result, what: str):
    """Unpack a cuda-python ``(err, *values)`` tuple, raising on a failed call."""
    err, *values = result
    if int(err) != 0:
        raise WeftBuildError(f"NVRTC {what} failed: {err}")
    return values[0] if len(values) == 1 else values


@functools.cache
def version() -> tuple:
    """NVRTC (major, minor); part of the cache key. Loads the library on first use: where
    cuda-python does not find it alone, from an ``nvidia-cuda-nvrtc`` wheel on ``sys.path``."""
    nvrtc = _nvrtc()
    try:
        result = nvrtc.nvrtcVersion()
    except Exception as first:  # the bindings' loader raises several error types
        found = preload_wheel_library()
        try:
            result = nvrtc.nvrtcVersion() if found else None
        except Exception:  # noqa: BLE001
            result = None
        if result is None:
            raise WeftBuildError(
                f"cuda-python found no NVRTC library ({first}); `pip install nvidia-cuda-nvrtc`"
            ) from first
    major, minor = _check(result, "version query")
    from .cuda_driver import pin_loaded_library

    pin_loaded_library("libnvrtc.so")  # never unmapped before the process ends (cuda_driver's doc)
    return int(major), int(minor)


def preload_wheel_library():
    """Load libnvrtc from an ``nvidia-cuda-nvrtc`` wheel (``site-packages/nvidia/*/lib``, or
    ``bin`` on Windows) into the process, so that the bindings' loader finds it already loaded.
    Returns the path loaded, or None."""
    import ctypes
    import glob
    import sys

    pattern = ("nvidia", "*", "bin", "nvrtc64_*.dll") if os.name == "nt" else ("nvidia", "*", "lib", "libnvrtc.so.*")
    for entry in sys.path:
        for path in sorted(glob.glob(os.path.join(entry or ".", *pattern)), reverse=True):
            try:
                ctypes.CDLL(path, mode=getattr(ctypes, "RTLD_GLOBAL", 0))
                return path
            except OSError:
                continue
    return None


def supported_archs() -> list:
    """The sm_XX numbers this NVRTC can target."""
    nvrtc = _nvrtc()
    n = _check(nvrtc.nvrtcGetNumSupportedArchs(), "arch query")
    if not n:
        return []
    return [int(a) for a in _check(nvrtc.nvrtcGetSupportedArchs(), "arch query")]


def options(arch: int, use_ptx: bool, defines=(), fast: bool = False) -> list:
    """Command-line options for one compilation (also part of the cache key)."""
    target = f"compute_{arch}" if use_ptx else f"sm_{arch}"
    out = [f"-arch={target}", *BASE_OPTIONS, *[f"-D{d}" for d in defines], f"-I{cpu.NATIVE_DIR}"]
    if fast and version() >= (12, 8):
        out.append(FAST_OPTION)
    return out


def compile_source(source: str, name: str, arch: int, use_ptx: bool, defines=()) -> bytes:
    """Compile CUDA C++ ``source`` (``name`` is the file name shown in diagnostics) to PTX for
    ``compute_<arch>`` or CUBIN for ``sm_<arch>``."""
    kind = "ptx" if use_ptx else "cubin"
    return _compile(source, name, arch, use_ptx, (kind,), defines)[kind]


def compile_both(source: str, name: str, arch: int, defines=(), fast: bool = False) -> tuple:
    """One NVRTC run for ``sm_<arch>`` giving ``(ptx, cubin)``: NVRTC lowers to PTX for
    ``compute_<arch>`` before assembling, and that PTX is the one a ``compute_<arch>`` compilation
    returns (tests/test_cuda_codegen.py checks), at the cost of one compilation instead of two."""
    out = _compile(source, name, arch, False, ("ptx", "cubin"), defines, fast)
    return out["ptx"], out["cubin"]


def _compile(source: str, name: str, arch: int, use_ptx: bool, kinds, defines, fast: bool = False) -> dict:
    nvrtc = _nvrtc()
    opts = [o.encode() for o in options(arch, use_ptx, defines, fast)]
    prog = _check(nvrtc.nvrtcCreateProgram(source.encode(), name.encode(), 0, [], []), "program creation")
    try:
        (err,) = nvrtc.nvrtcCompileProgram(prog, len(opts), opts)
        if int(err) != 0:
            log = _program_log(nvrtc, prog)
            raise WeftBuildError(
                f"NVRTC failed on generated CUDA code ({name}, sm_{arch})"
                f"{python_origin(source, name, log)}:\n{log.strip()[:6000]}"
            )
        out = {}
        if "ptx" in kinds:
            size = _check(nvrtc.nvrtcGetPTXSize(prog), "PTX size")
            buf = b" " * size
            _check((nvrtc.nvrtcGetPTX(prog, buf)[0], None), "PTX fetch")
            out["ptx"] = buf.rstrip(b"\0")
        if "cubin" in kinds:
            size = _check(nvrtc.nvrtcGetCUBINSize(prog), "CUBIN size")
            buf = b" " * size
            _check((nvrtc.nvrtcGetCUBIN(prog, buf)[0], None), "CUBIN fetch")
            out["cubin"] = buf
        return out
    finally:
        nvrtc.nvrtcDestroyProgram(prog)


def _program_log(nvrtc, prog) -> str:
    size = _check(nvrtc.nvrtcGetProgramLogSize(prog), "log size")
    buf = b" " * size
    nvrtc.nvrtcGetProgramLog(prog, buf)
    return buf.rstrip(b"\0").decode(errors="replace")


def python_origin(source: str, name: str, log: str) -> str:
    """' for Python line file:N' for the first diagnostic that points at a generated statement.

    NVRTC writes diagnostics as ``name(LINE): error: ...``."""
    lines = source.splitlines()
    for m in re.finditer(re.escape(name) + r"\((\d+)\)", log):
        k = int(m.group(1)) - 1
        if 0 <= k < len(lines) and "// @py " in lines[k]:
            return " for Python line " + lines[k].split("// @py ", 1)[1].strip()
    return ""


def cache_key(source: str, arch: int, use_ptx: bool, defines=(), fast: bool = False) -> str:
    """sha256 over the weft version, source, headers, NVRTC version, options and output kind."""
    from .disk_cache import VERSION, headers_digest

    parts = [
        VERSION,
        source,
        headers_digest(),
        "nvrtc {}.{}".format(*version()),
        *options(arch, use_ptx, defines, fast),
    ]
    parts.append("ptx" if use_ptx else "cubin")
    return hashlib.sha256("\n".join(parts).encode()).hexdigest()[:16]


def _cache_paths(stem: str, source: str, arch: int, use_ptx: bool, defines, fast: bool = False) -> tuple:
    from .disk_cache import cache_dir

    base = os.path.join(cache_dir(), f"{stem}_sm{arch}_{cache_key(source, arch, use_ptx, defines, fast)}")
    image_path = base + (".ptx" if use_ptx else ".cubin")
    return base, image_path, image_path + ".sha256"


def _store(base: str, image_path: str, sum_path: str, source, image: bytes):
    """Write an image and its checksum (and, unless ``source`` is None, the source beside them)."""
    if source is not None:
        _write_atomic(base + ".cu", source.encode())
    _write_atomic(image_path, image)
    _write_atomic(sum_path, hashlib.sha256(image).hexdigest().encode())


def cached_image(stem: str, source: str, arch: int, use_ptx: bool, defines=()) -> bytes:
    """The compiled image of ``source``, from the disk cache when a verified entry exists."""
    base, image_path, sum_path = _cache_paths(stem, source, arch, use_ptx, defines)
    image = read_verified(image_path, sum_path)
    if image is None:
        log_debug(f"building {stem} for CUDA ({'compute' if use_ptx else 'sm'}_{arch})")
        image = compile_source(source, os.path.basename(base) + ".cu", arch, use_ptx, defines)
        _store(base, image_path, sum_path, source, image)
    return image


def cached_images(stem: str, source: str, arch: int, defines=(), fast: bool = False) -> tuple:
    """``(ptx, cubin)`` of ``source`` for ``arch``, from the cache or from one NVRTC run
    (``fast``: with ``FAST_OPTION``, cached apart from the fully optimised images)."""
    ptx_paths = _cache_paths(stem, source, arch, True, defines, fast)
    cubin_paths = _cache_paths(stem, source, arch, False, defines, fast)
    ptx, cubin = read_verified(*ptx_paths[1:]), read_verified(*cubin_paths[1:])
    if ptx is None or cubin is None:
        log_debug(f"building {stem} for CUDA (sm_{arch})")
        ptx, cubin = compile_both(source, os.path.basename(cubin_paths[0]) + ".cu", arch, defines, fast)
        _store(*ptx_paths, None, ptx)  # one copy of the source: NVRTC's messages name the CUBIN's
        _store(*cubin_paths, source, cubin)
    return ptx, cubin


def images_job(job: tuple) -> tuple:
    """Process-pool worker: ``job = (cache_dir, stem, source, arch, defines, fast)`` ->
    ``(True, (ptx, cubin))`` or ``(False, error message)``. Lets callers compile many modules or
    archs on all cores (one NVRTC compilation runs on one core)."""
    from .. import config

    cache, stem, source, arch, defines, fast = job
    config.kernel_cache_dir = cache
    try:
        return True, cached_images(stem, source, arch, defines, fast)
    except WeftBuildError as e:
        return False, str(e)
