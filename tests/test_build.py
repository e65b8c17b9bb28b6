"""Build stage: what a module build compiles (the forward pass first, the backward pass as a second
library on first use, both at once under a recording tape), error locations of the backward
library, and the memoised compiler identity of the cache key."""

import ctypes
import os
import shutil
import subprocess
import sys
import textwrap

import numpy as np
import pytest
from markers import location_of

import weft as wp
from weft.codegen.errors import WeftBuildError
from weft.runtime import cache_key, cpu
from weft.runtime import module as weft_module
pytestmark = pytest.mark.fixed_device("the host C++ build and its cache")


THIS_FILE = os.path.abspath(__file__)


@pytest.fixture
def builds(monkeypatch):
    """(stem, source) of every kernel library requested from the cache during the test (not the
    runtime's, which the first build of a process loads too). The fast cache key is off: a warm
    cache would load the libraries without asking (tests/test_kernel_cache.py tests that path)."""
    seen = []
    real = weft_module.cached_library
    monkeypatch.setattr(cache_key, "enabled", False)

    def record(stem, source, *args, **kwargs):
        if not stem.startswith("weft_runtime"):
            seen.append((stem, source))
        return real(stem, source, *args, **kwargs)

    monkeypatch.setattr(weft_module, "cached_library", record)
    return seen


@wp.kernel(module="tb_lazy")
def k_lazy_square(x: wp.array(dtype=float), y: wp.array(dtype=float)):
    i = wp.tid()
    y[i] = x[i] * x[i]


@wp.kernel(module="tb_lazy")
def k_lazy_scale(x: wp.array(dtype=float), s: float, y: wp.array(dtype=float)):
    i = wp.tid()
    y[i] = x[i] * s


def test_forward_launch_compiles_forward_pass_and_backward_is_built_on_first_use(builds):
    x = wp.array([1.0, 2.0, 3.0], dtype=float, requires_grad=True)
    y = wp.zeros(3, dtype=float, requires_grad=True)
    z = wp.zeros(3, dtype=float, requires_grad=True)
    wp.launch(k_lazy_square, dim=3, inputs=[x, y])
    [(stem, source)] = builds
    assert stem == "tb_lazy"
    assert "k_lazy_square" in source and "k_lazy_scale" in source  # one build for the module
    assert "_cpu_forward" in source and "_cpu_backward" not in source

    wp.launch(k_lazy_scale, dim=3, inputs=[y, 2.0, z])  # already built: nothing compiled
    assert len(builds) == 1
    np.testing.assert_allclose(z.numpy(), [2.0, 8.0, 18.0])

    tape = wp.Tape()
    with tape:
        wp.launch(k_lazy_square, dim=3, inputs=[x, y])
        wp.launch(k_lazy_scale, dim=3, inputs=[y, 2.0, z])
    assert len(builds) == 1
    tape.backward(grads={z: wp.ones(3, dtype=float)})
    [(stem, source)] = builds[1:]  # the backward library of both kernels, built once
    assert stem == "tb_lazy_adj"
    assert "k_lazy_square" in source and "k_lazy_scale" in source
    assert "_cpu_backward" in source and "_cpu_forward" not in source
    np.testing.assert_allclose(x.grad.numpy(), [4.0, 8.0, 12.0])  # d(2 x^2)/dx


@wp.kernel(module="tb_taped")
def k_taped(x: wp.array(dtype=float), y: wp.array(dtype=float)):
    i = wp.tid()
    y[i] = wp.sin(x[i])


def test_first_launch_under_a_recording_tape_compiles_both_passes_at_once(builds):
    x = wp.array([0.5, 1.0], dtype=float, requires_grad=True)
    y = wp.zeros(2, dtype=float, requires_grad=True)
    tape = wp.Tape()
    with tape:
        wp.launch(k_taped, dim=2, inputs=[x, y])
    tape.backward(grads={y: wp.ones(2, dtype=float)})
    [(stem, source)] = builds
    assert stem == "tb_taped" and "_cpu_forward" in source and "_cpu_backward" in source
    np.testing.assert_allclose(x.grad.numpy(), np.cos([0.5, 1.0]), rtol=1e-6)


@wp.kernel(module="tb_backward_error")
def k_gather(x: wp.array(dtype=float), idx: wp.array(dtype=int), y: wp.array(dtype=float)):
    i = wp.tid()
    y[i] = wp.exp(x[idx[i]])  # OOB:gather


def test_backward_library_reports_errors_at_the_python_line():
    x = wp.array([1.0, 2.0], dtype=float)
    y = wp.zeros(2, dtype=float)
    wp.launch(k_gather, dim=2, inputs=[x, wp.array([1, 0], dtype=int)], outputs=[y])  # forward library only
    bad = wp.array([0, 7], dtype=int)
    with pytest.raises(IndexError) as info:
        wp.launch(
            k_gather,
            dim=2,
            inputs=[x, bad],
            outputs=[y],
            adj_inputs=[wp.zeros(2, dtype=float), None],
            adj_outputs=[wp.ones(2, dtype=float)],
            adjoint=True,
        )
    msg = str(info.value)
    assert "index 7" in msg and "k_gather" in msg and location_of(THIS_FILE, "OOB:gather") in msg, msg


def test_compiler_identity_is_memoised_per_compiler_binary(tmp_path, monkeypatch):
    calls = []
    real = cpu._version_line
    monkeypatch.setattr(cpu, "_version_line", lambda cxx: calls.append(cxx) or real(cxx))
    identity = cpu.compiler_identity.__wrapped__  # without the in-process cache
    first = identity(str(tmp_path))
    assert len(calls) == 1 and real(cpu.find_compiler()) in first
    [memo] = os.listdir(tmp_path)
    assert identity(str(tmp_path)) == first and len(calls) == 1  # read back, no process started
    # another compiler binary (different path or modification time) gets its own memo
    monkeypatch.setattr(cpu, "find_compiler", lambda: str(tmp_path / memo))
    identity(str(tmp_path))
    assert len(calls) == 2 and len(os.listdir(tmp_path)) == 2


def test_python_headers_found_where_sysconfig_puts_them():
    import sysconfig

    include = sysconfig.get_paths()["include"]
    if not os.path.exists(os.path.join(include, "Python.h")):
        pytest.skip("no Python headers in this interpreter")
    assert os.path.samefile(weft_module._python_include_dir(), include)


EXIT_BEFORE_LAUNCH = textwrap.dedent(
    """
    import weft as wp

    @wp.kernel
    def k_exit(a: wp.array(dtype=float)):
        a[wp.tid()] = 1.0

    k_exit.module.ensure_built(k_exit.default_instance())  # builds, starts the runtime's compile, exits
    """
)


def test_process_exiting_before_its_first_launch_leaves_a_complete_cache(tmp_path):
    script = tmp_path / "exit_early.py"
    script.write_text(EXIT_BEFORE_LAUNCH)
    cache = tmp_path / "cache"
    env = dict(os.environ, WEFT_CACHE_DIR=str(cache))
    out = subprocess.run(
        [sys.executable, str(script)], env=env, capture_output=True, text=True, timeout=600, check=False
    )
    assert out.returncode == 0, out.stderr
    names = os.listdir(cache)
    assert [n for n in names if n.startswith("__main__") and n.endswith(".so")], names
    if weft_module._runtime_extension_build() is not None and weft_module.installed_runtime() is None:
        assert [n for n in names if n.startswith("weft_runtime_py") and n.endswith(".so")], names
    assert not [n for n in names if n.endswith(".tmp") or n.startswith(".build_")], names


EDITABLE_MODULE = textwrap.dedent(
    """
    import os
    import weft as wp

    wp.config.verbose = True
    if os.environ.get("T_MODE"):
        wp.config.mode = os.environ["T_MODE"]
    SCALE = float(os.environ.get("T_SCALE", "2.0"))

    if os.environ.get("T_FUNC") == "cube":
        @wp.func
        def shape(x: float):
            return x * x * x
    else:
        @wp.func
        def shape(x: float):
            return x * x

    @wp.kernel
    def k_edit(a: wp.array(dtype=float)):
        i = wp.tid()
        a[i] = shape(float(i)) * SCALE

    a = wp.zeros(3, dtype=float)
    wp.launch(k_edit, dim=3, inputs=[a])
    print("RESULT", a.numpy().tolist())
    """
)


def test_disk_cache_entry_changes_with_funcs_constants_and_mode(tmp_path):
    """A new process must not load a library built from other code: an edited func the kernel
    calls, a different value of a global the kernel captures, another mode."""
    script = tmp_path / "editable.py"
    script.write_text(EDITABLE_MODULE)
    env = dict(os.environ, WEFT_CACHE_DIR=str(tmp_path / "cache"))

    def run(**changes):
        out = subprocess.run(
            [sys.executable, str(script)],
            env=dict(env, **changes),
            capture_output=True,
            text=True,
            timeout=600,
            check=False,
        )
        assert out.returncode == 0, out.stderr
        result = [line for line in out.stdout.splitlines() if line.startswith("RESULT")]
        return result[0], "building __main__" in out.stdout

    assert run() == ("RESULT [0.0, 2.0, 8.0]", True)
    assert run() == ("RESULT [0.0, 2.0, 8.0]", False)  # same code: loaded from the cache
    assert run(T_SCALE="3.0") == ("RESULT [0.0, 3.0, 12.0]", True)
    assert run(T_FUNC="cube") == ("RESULT [0.0, 2.0, 16.0]", True)
    assert run(T_MODE="release") == ("RESULT [0.0, 2.0, 8.0]", True)
    assert run() == ("RESULT [0.0, 2.0, 8.0]", False)


def test_gcc_only_flags_are_not_passed_to_clang(tmp_path):
    for line, gcc in (("g++ (Debian 12.2.0-14) 12.2.0", True), ("Apple clang version 15.0.0", False)):
        flags = cpu.compiler_flags(f"/usr/bin/c++\n{line}\nx86_64 Intel(R) Xeon(R)")
        assert flags[: len(cpu.BASE_FLAGS)] == tuple(cpu.BASE_FLAGS)
        assert all((f in flags) == gcc for f in cpu.GCC_FLAGS)
    # the compiler this machine builds with gets the flags its identity calls for
    assert cpu.compiler_flags(cpu.compiler_identity(str(tmp_path)))[: len(cpu.BASE_FLAGS)] == tuple(cpu.BASE_FLAGS)


def test_optimization_level_and_instruction_set_flags():
    identity = "/usr/bin/c++\ng++ (Debian 12.2.0-14) 12.2.0\nx86_64"
    assert "-O1" in cpu.compiler_flags(identity, (1, None)) and "-O3" not in cpu.compiler_flags(identity, (1, None))
    generic = cpu.compiler_flags(identity, (None, ""))
    assert "-march=native" not in generic and "-O3" in generic
    isa = cpu.compiler_flags(identity, (None, "-march=x86-64-v2 -mtune=generic"))
    k = isa.index("-march=x86-64-v2")  # (where the GCC-only flags end: their number changes)
    assert isa[k + 1] == "-mtune=generic" and "-march=native" not in isa
    with pytest.raises(ValueError, match="optimization_level"):
        cpu.compiler_flags(identity, (7, None))


@wp.kernel(module="tb_tuned")
def k_tuned(x: wp.array(dtype=float)):
    x[wp.tid()] = x[wp.tid()] * 3.0


def test_module_options_choose_the_cpu_flags_and_key_the_cache(monkeypatch):
    m = wp.get_module("tb_tuned")
    assert m.options["optimization_level"] is None and m.options["cpu_compiler_flags"] is None
    monkeypatch.setattr(wp.config, "optimization_level", 2)
    assert weft_module.cpu_tuning(m.options) == (2, None)  # the config, unless the module says otherwise
    wp.set_module_options({"optimization_level": 1, "cpu_compiler_flags": ""}, module="tb_tuned")
    try:
        assert weft_module.cpu_tuning(m.options) == (1, "")
        x = wp.array([1.0, 2.0], dtype=float)
        wp.launch(k_tuned, 2, [x])  # built with -O1 and no -march=native
        assert x.numpy().tolist() == [3.0, 6.0]
        assert weft_module.cache_entry("s", "src", (), (), (1, "")) != weft_module.cache_entry("s", "src", ())
    finally:
        wp.set_module_options({"optimization_level": None, "cpu_compiler_flags": None}, module="tb_tuned")


@wp.kernel(module="tb_units")
def k_units_axpy(a: float, x: wp.array(dtype=float), y: wp.array(dtype=float), out: wp.array(dtype=float)):
    i = wp.tid()
    out[i] = a * x[i] + y[i]


@wp.kernel(module="tb_units")
def k_units_rotate(v: wp.array(dtype=wp.vec3), angle: float, out: wp.array(dtype=wp.vec3)):
    i = wp.tid()
    c = wp.cos(angle)
    s = wp.sin(angle)
    out[i] = wp.vec3(c * v[i][0] - s * v[i][2], v[i][1], s * v[i][0] + c * v[i][2])


@wp.kernel(module="tb_units")
def k_units_norms(v: wp.array(dtype=wp.vec3), out: wp.array(dtype=float)):
    i = wp.tid()
    out[i] = wp.length(v[i])


def test_split_units_hold_every_kernel_once_in_order():
    from weft.codegen.emit import join_unit, split_units

    texts = [f"// kernel {k}\n" + "x" * size for k, size in enumerate([50, 10, 40, 30, 5])]
    units = split_units("PRELUDE", texts, 2)
    assert len(units) == 2 and all(u.startswith("PRELUDE\n\n") for u in units)
    for k in range(5):
        assert sum(f"// kernel {k}\n" in u for u in units) == 1
    for u in units:  # kernels keep their module order inside a unit
        found = [k for k in range(5) if f"// kernel {k}\n" in u]
        assert [u.index(f"// kernel {k}\n") for k in found] == sorted(u.index(f"// kernel {k}\n") for k in found)
    assert abs(len(units[0]) - len(units[1])) <= 50  # balanced by size
    assert join_unit("PRELUDE", texts) == "\n\n".join(["PRELUDE", *texts]) + "\n"


def test_module_compiled_as_parallel_units_links_into_one_library(tmp_path, monkeypatch, builds):
    monkeypatch.setattr(wp.config, "kernel_cache_dir", str(tmp_path))
    monkeypatch.setattr(cpu, "MIN_UNIT_CHARS", 1)  # split even this small module
    monkeypatch.setattr(cpu.os, "cpu_count", lambda: 3)
    compiled = []
    real = cpu.compile_units
    monkeypatch.setattr(cpu, "compile_units", lambda paths, *a, **k: (compiled.append(len(paths)), real(paths, *a, **k)))
    n = 5
    x = wp.array(np.arange(n, dtype=np.float32), dtype=float)
    v = wp.array(np.arange(3 * n, dtype=np.float32).reshape(n, 3), dtype=wp.vec3)
    out, norms, rot = wp.zeros(n, dtype=float), wp.zeros(n, dtype=float), wp.zeros(n, dtype=wp.vec3)
    wp.launch(k_units_axpy, dim=n, inputs=[2.0, x, x, out])
    wp.launch(k_units_norms, dim=n, inputs=[v, norms])
    wp.launch(k_units_rotate, dim=n, inputs=[v, np.pi / 2, rot])
    assert compiled == [3]  # one build: three units, one per kernel
    np.testing.assert_allclose(out.numpy(), 3 * np.arange(n))
    np.testing.assert_allclose(norms.numpy(), np.linalg.norm(v.numpy(), axis=1), rtol=1e-6)
    vn = v.numpy()
    np.testing.assert_allclose(rot.numpy(), np.stack([-vn[:, 2], vn[:, 1], vn[:, 0]], 1), atol=1e-5)
    assert not [p for p in os.listdir(tmp_path) if ".units_" in p or p.endswith(".o")]


def test_unit_compile_errors_name_the_python_line(tmp_path):
    bad = tmp_path / "unit1.cpp"
    bad.write_text('#include "weft.h"\nvoid f() {\n    int x = ;  // @py model.py:12\n}\n')
    good = tmp_path / "unit0.cpp"
    good.write_text('#include "weft.h"\nint g() { return 1; }\n')
    with pytest.raises(WeftBuildError) as info:
        cpu.compile_units([str(good), str(bad)], str(tmp_path / "lib.so"))
    assert "for Python line model.py:12" in str(info.value) and "unit1.cpp" in str(info.value)
    assert not (tmp_path / "lib.so").exists() and not (tmp_path / "unit0.o").exists()


def test_a_unit_whose_compiler_was_killed_is_compiled_again_alone(tmp_path, monkeypatch, capsys):
    # the kernel's OOM killer ends a compiler (g++'s cc1plus, which g++ reports as an error) when
    # units side by side need more memory than there is; the unit is compiled again, alone
    mark, real = tmp_path / "killed_once", shutil.which("g++") or shutil.which("c++")
    if real is None:
        pytest.skip("no g++ or c++ on PATH")
    wrapper = tmp_path / "cxx.sh"
    wrapper.write_text(
        "#!/bin/sh\n"
        f'for a in "$@"; do case "$a" in *unit1.cpp) if [ ! -e {mark} ]; then touch {mark}; '
        'echo "g++: fatal error: Killed signal terminated program cc1plus" >&2; exit 1; fi;; esac; done\n'
        f'exec {real} "$@"\n'
    )
    wrapper.chmod(0o755)
    for k in range(2):
        (tmp_path / f"unit{k}.cpp").write_text(f'#include "weft.h"\nWEFT_EXPORT int unit_{k}() {{ return {k + 40}; }}\n')
    out = tmp_path / "lib.so"
    monkeypatch.setenv("CXX", str(wrapper))
    cpu.find_compiler.cache_clear()  # (it is memoised)
    try:
        cpu.compile_units([str(tmp_path / f"unit{k}.cpp") for k in range(2)], str(out))
    finally:
        monkeypatch.delenv("CXX")
        cpu.find_compiler.cache_clear()
    assert mark.exists() and "compiling it again, alone" in capsys.readouterr().out
    lib = ctypes.CDLL(str(out))
    assert lib.unit_0() == 40 and lib.unit_1() == 41


def test_runtime_built_at_install_is_used_when_its_source_matches(monkeypatch):
    installed = weft_module.installed_runtime()
    if installed is None:
        pytest.skip("weft._runtime was not built at install time (no compiler or Python headers then)")
    from weft.runtime.runtime_source import runtime_source_hash

    assert installed.__name__ == "weft._runtime" and installed.source_hash == runtime_source_hash()
    assert weft_module.runtime_digest() == runtime_source_hash()  # (memoised with the cache's digests)
    assert weft_module.runtime_launch() is installed.launch  # launches go through it
    # An edited runtime.cpp (editable install): the stamp no longer matches, so weft builds the
    # runtime into the kernel cache instead of using a stale extension.
    weft_module.installed_runtime.cache_clear()
    monkeypatch.setattr(weft_module, "runtime_digest", lambda: "0" * 32)
    try:
        assert weft_module.installed_runtime() is None
    finally:
        weft_module.installed_runtime.cache_clear()


@wp.kernel(module="tb_no_cache")
def k_no_cache(y: wp.array(dtype=float)):
    y[wp.tid()] = 2.5


def test_cache_kernels_false_compiles_instead_of_loading_from_the_cache(monkeypatch):
    compiles = []
    real = cpu.compile_shared
    monkeypatch.setattr(cpu, "compile_shared", lambda *a, **k: compiles.append(a[0]) or real(*a, **k))
    real_units = cpu.compile_units
    monkeypatch.setattr(cpu, "compile_units", lambda *a, **k: compiles.append(a[0]) or real_units(*a, **k))
    monkeypatch.setattr(wp.config, "cache_kernels", False)
    y = wp.zeros(2, dtype=float)
    wp.launch(k_no_cache, 2, [y])  # built now even where an earlier run left it in the cache
    assert compiles and y.numpy().tolist() == [2.5, 2.5]


@wp.kernel(module="unique")
def k_many_functions(x: wp.array2d(dtype=float), y: wp.array2d(dtype=float)):
    for i in range(12):  # unrolled: 12 x 5 calls and their products
        y[0, i] = 2.0 * wp.log(x[0, i])
        y[1, i] = 2.0 * wp.exp(x[1, i])
        y[2, i] = 2.0 * wp.sin(x[2, i])
        y[3, i] = 2.0 * wp.tanh(x[3, i])
        y[4, i] = 2.0 * wp.sqrt(x[4, i])


@pytest.mark.fixed_device("the CPU compiler's options")
def test_huge_kernels_compile_at_o1_with_the_same_results(monkeypatch):
    # kernels past HUGE_KERNEL_STATEMENTS IR statements get optimize("O1") on their bodies and
    # entry points (one such backward body took 18 GB at -O3); values and gradients unchanged
    from weft.codegen import emit_cpu, ir

    inst = k_many_functions.default_instance()
    count = sum(1 for _ in ir.walk(inst.ir.body))
    assert count < emit_cpu.CPURenderer.HUGE_KERNEL_STATEMENTS
    monkeypatch.setattr(emit_cpu.CPURenderer, "HUGE_KERNEL_STATEMENTS", count - 1)
    xs = np.random.default_rng(9).uniform(0.2, 1.5, (5, 12)).astype(np.float32)
    x = wp.array(xs, requires_grad=True)
    y = wp.zeros((5, 12), dtype=float, requires_grad=True)
    tape = wp.Tape()
    with tape:
        wp.launch(k_many_functions, dim=1, inputs=[x, y])
    src = inst.binding.source
    assert src.count('__attribute__((optimize("O1")))') >= 4  # the bodies and both entry points
    x64 = xs.astype(np.float64)
    want = 2.0 * np.stack([np.log(x64[0]), np.exp(x64[1]), np.sin(x64[2]), np.tanh(x64[3]), np.sqrt(x64[4])])
    np.testing.assert_allclose(y.numpy(), want, rtol=2e-6, atol=1e-6)
    y.grad.fill_(1.0)
    tape.backward()
    dwant = 2.0 * np.stack([1 / x64[0], np.exp(x64[1]), np.cos(x64[2]), 1 - np.tanh(x64[3]) ** 2, 0.5 / np.sqrt(x64[4])])
    np.testing.assert_allclose(x.grad.numpy(), dwant, rtol=2e-6, atol=1e-6)
