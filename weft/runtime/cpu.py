"""Host C++ compilation: find the compiler, compile a translation unit into a shared library.

Contract: ``compile_shared(source_path, output_path, defines)`` either produces ``output_path``
atomically (written to a temporary name, then ``os.replace``) or raises ``WeftBuildError`` whose
message includes the compiler's diagnostics and the generated source path.
"""

from __future__ import annotations

import functools
import hashlib
import os
import shutil
import subprocess
import shlex
import tempfile
import threading

from .. import log
from ..codegen.errors import WeftBuildError

NATIVE_DIR = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "native")

# -ffp-contract=off: g++ otherwise fuses a * b + c into an FMA wherever it likes (even with
# -std=c++17), and whether it does depends on inlining and vectorisation. A vectorised loop's
# peeled tasks then round differently from its vector lanes, so one kernel gave other bits on two
# threads than on one (a marching-cubes vertex moved by an ulp). Products that want FMAs ask for
# them (tile_ops.h tile_fma, math_f32.h).
BASE_FLAGS = ["-std=c++17", "-O3", "-fPIC", "-shared", "-fvisibility=hidden", "-fno-math-errno", "-ffp-contract=off", "-march=native", "-w"]

# For g++ only. inline-unit-growth: a module is one translation unit holding every kernel of a
# Python module, and GCC's default budget (40 % growth of the unit) ran out in modules of a dozen
# kernels, leaving the vector operations of the last ones out of line (the cloth springs'
# backward ran 1.4x slower depending on what else its module held). Compile time did not change
# measurably.
# (Raising large-function-growth / large-function-insns inlined an FEM element's adj_inverse and
# adj_matmul and made its forces 1.7-2.2x faster, but it doubled the g++ time and took 20 GB for
# the largest module of Warp's test suite (test_arithmetic's backward): not worth it as a default.)
GCC_FLAGS = ["--param=inline-unit-growth=200"]


def compiler_flags(identity: str, tuning=(None, None)) -> tuple:
    """The flags for the compiler ``compiler_identity`` describes: BASE_FLAGS, plus GCC_FLAGS
    unless it is clang (its version line is memoised, so this starts no process).

    ``tuning``: ``(optimization_level, isa_flags)`` from ``wp.config`` or the module's options:
    a level 0-3 replaces ``-O3``; a string of flags replaces ``-march=native`` (``""``: code for
    any processor of the architecture). None keeps the default."""
    level, isa = tuning
    flags = list(BASE_FLAGS)
    if level is not None:
        if int(level) not in (0, 1, 2, 3):
            raise ValueError(f"optimization_level must be 0, 1, 2, 3 or None, got {level!r}")
        flags[flags.index("-O3")] = f"-O{int(level)}"
    if isa is not None:
        flags.remove("-march=native")
        flags += shlex.split(isa)
    return tuple(flags) + (() if "clang" in identity.lower() else tuple(GCC_FLAGS))


@functools.lru_cache(maxsize=None)
def find_compiler() -> str:
    """The host C++ compiler: ``$CXX``, else g++ / clang++ / c++ on PATH."""
    cxx = os.environ.get("CXX")
    if cxx:
        path = shutil.which(cxx)
        if path is None:
            raise WeftBuildError(f"CXX is set to '{cxx}' but no such program exists")
        return path
    for name in ("g++", "clang++", "c++"):
        path = shutil.which(name)
        if path:
            return path
    raise WeftBuildError(
        "weft needs a C++17 compiler to build CPU kernels and found none. Install one "
        "(Debian/Ubuntu: `apt-get install g++`; macOS: `xcode-select --install`) or set CXX."
    )


@functools.lru_cache(maxsize=None)
def compiler_identity(memo_dir: str) -> str:
    """Compiler path and version, part of the cache key.

    Running ``$CXX --version`` costs a process start (10-30 ms, most of a warm module load), so
    its answer is memoised in ``memo_dir`` under a name keyed by the compiler binary's path,
    size and modification time: an upgraded compiler gets a new memo.
    """
    cxx = find_compiler()
    try:
        st = os.stat(cxx)
        stamp = f"{os.path.realpath(cxx)}|{st.st_size}|{st.st_mtime_ns}"
    except OSError:
        stamp = cxx
    memo = os.path.join(memo_dir, "compiler_" + hashlib.sha256(stamp.encode()).hexdigest()[:16] + ".txt")
    try:
        with open(memo) as f:
            version = f.read()
    except OSError:
        version = _version_line(cxx)
        tmp = f"{memo}.{os.getpid()}.{threading.get_ident()}.tmp"
        with open(tmp, "w") as f:
            f.write(version)
        os.replace(tmp, memo)
    # -march=native output depends on the processor: a shared cache must not mix machines.
    return cxx + "\n" + version + "\n" + _cpu_model()


def _version_line(cxx: str) -> str:
    try:
        out = subprocess.run([cxx, "--version"], capture_output=True, text=True, timeout=60).stdout
    except (OSError, subprocess.SubprocessError):
        out = ""
    return out.splitlines()[0] if out else ""


def _cpu_model() -> str:
    import platform

    try:  # the first processor's lines are enough: one read of a page (the file lists every core)
        fd = os.open("/proc/cpuinfo", os.O_RDONLY)
        try:
            head = os.read(fd, 16384).decode(errors="replace")
        finally:
            os.close(fd)
        for line in head.splitlines():
            if line.startswith(("model name", "flags")):
                return platform.machine() + " " + line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.machine() + " " + platform.processor()


def compile_shared(source_path: str, output_path: str, defines=(), include_dirs=(), tuning=(None, None)) -> None:
    """Compile ``source_path`` into the shared library ``output_path``."""
    cxx = find_compiler()
    out_dir = os.path.dirname(output_path)
    fd, tmp = tempfile.mkstemp(prefix=".build_", suffix=".so", dir=out_dir)
    os.close(fd)
    includes = [f"-I{d}" for d in (NATIVE_DIR, *include_dirs)]
    flags = compiler_flags(compiler_identity(out_dir), tuning)
    cmd = [cxx, *flags, *[f"-D{d}" for d in defines], *includes, source_path, "-o", tmp]
    try:
        proc = subprocess.run(cmd, capture_output=True, text=True)
        if proc.returncode != 0:
            raise WeftBuildError(
                f"the C++ compiler failed on generated code ({source_path})"
                f"{python_origin(source_path, proc.stderr)}:\n{proc.stderr.strip()[:6000]}"
            )
        os.replace(tmp, output_path)
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)


# Compiling a module as several translation units in parallel pays only when each unit has
# enough kernel code to outweigh parsing weft.h once more (~0.15 s of CPU): a 9-kernel module of
# 46 kB (benchmarks/build_module.py) compiled in 0.73 s as two units, 1.11 s as one.
MIN_UNIT_CHARS = 16_000


def unit_count(kernel_chars: int, kernels: int) -> int:
    """How many translation units to compile a module's kernels in (1: a single unit)."""
    return max(1, min(os.cpu_count() or 1, kernels, kernel_chars // MIN_UNIT_CHARS))


def compile_units(unit_paths: list, output_path: str, defines=(), include_dirs=(), tuning=(None, None)) -> None:
    """Compile the translation units ``unit_paths`` side by side (one compiler process each) and
    link them into the shared library ``output_path``."""
    cxx = find_compiler()
    out_dir = os.path.dirname(output_path)
    includes = [f"-I{d}" for d in (NATIVE_DIR, *include_dirs)]
    flags = [f for f in compiler_flags(compiler_identity(out_dir), tuning) if f != "-shared"]
    objects = [p[: -len(".cpp")] + ".o" for p in unit_paths]
    fd, tmp = tempfile.mkstemp(prefix=".build_", suffix=".so", dir=out_dir)
    os.close(fd)
    try:
        procs = [
            subprocess.Popen(
                _unit_command(cxx, flags, defines, includes, src, obj),
                stdout=subprocess.DEVNULL,
                stderr=subprocess.PIPE,
                text=True,
            )
            for src, obj in zip(unit_paths, objects)
        ]
        errors = [(src, p.communicate()[1], p.returncode) for src, p in zip(unit_paths, procs)]
        # A unit whose compiler was killed (the kernel's OOM killer: a huge kernel's backward
        # took 18 GB, two side by side did not fit in 24) is compiled again, alone. g++ reports
        # its cc1plus killed as an error ("Killed signal terminated program cc1plus").
        for k, (src, stderr, code) in enumerate(errors):
            if code < 0 or (code != 0 and len(unit_paths) > 1 and "killed" in stderr.lower()):
                log.warn(f"the compiler of {src} was killed (out of memory?); compiling it again, alone")
                errors[k] = (src, *_compile_alone(cxx, flags, defines, includes, src, objects[k]))
        for src, stderr, code in errors:
            if code != 0:
                raise WeftBuildError(
                    f"the C++ compiler failed on generated code ({src})"
                    f"{python_origin(src, stderr)}:\n{stderr.strip()[:6000]}"
                )
        proc = subprocess.run([cxx, "-shared", *objects, "-o", tmp], capture_output=True, text=True, check=False)
        if proc.returncode != 0:
            raise WeftBuildError(f"linking the generated code failed ({output_path}):\n{proc.stderr.strip()[:6000]}")
        os.replace(tmp, output_path)
    finally:
        for path in [tmp, *objects]:
            if os.path.exists(path):
                os.unlink(path)


def _unit_command(cxx, flags, defines, includes, src, obj) -> list:
    """The compiler command line making the object file ``obj`` of the unit ``src``."""
    return [cxx, *flags, *[f"-D{d}" for d in defines], *includes, "-c", src, "-o", obj]


def _compile_alone(cxx, flags, defines, includes, src, obj) -> tuple:
    """(stderr, return code) of compiling one unit to an object file, nothing else compiling."""
    cmd = _unit_command(cxx, flags, defines, includes, src, obj)
    proc = subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, check=False)
    return proc.stderr, proc.returncode


def python_origin(source_path: str, stderr: str) -> str:
    """' for Python line file:N' for the first diagnostic that points at a generated statement."""
    import re

    try:
        with open(source_path) as f:
            lines = f.read().splitlines()
    except OSError:
        return ""
    for m in re.finditer(re.escape(os.path.basename(source_path)) + r":(\d+):", stderr):
        k = int(m.group(1)) - 1
        if 0 <= k < len(lines) and "// @py " in lines[k]:
            return " for Python line " + lines[k].split("// @py ", 1)[1].strip()
    return ""
