"""The CUDA target, proven by compilation: kernels rendered by CUDARenderer compile with NVRTC to
PTX and CUBIN (no GPU needed), compile errors map to Python lines, AOT builds write Warp's files,
and -- last in the session -- every kernel the suite built for the CPU also compiles for CUDA."""

import concurrent.futures
import json
import multiprocessing
import os
import re
import typing

import numpy as np
import pytest

import weft as wp
from weft.codegen.emit_cuda import CUDARenderer
from weft.codegen.errors import WeftBuildError
from weft.runtime import module as wmod
from weft.runtime import nvrtc

pytest.importorskip(
    "cuda.bindings.nvrtc", reason="CUDA codegen tests need NVRTC: pip install cuda-python nvidia-cuda-nvrtc"
)
if not nvrtc.available():
    pytest.skip(
        "cuda-python is installed but no NVRTC library loads (pip install nvidia-cuda-nvrtc)", allow_module_level=True
    )

ARCHS = (75, 90)
pytestmark = pytest.mark.fixed_device("compiles for CUDA with NVRTC; needs no device")



# ------------------------------------------------------------------ kernels covering the headers
@wp.func
def sq(x: float):
    return x * x


@wp.kernel
def k_scalar(a: wp.array(dtype=float), b: wp.array(dtype=wp.float64), out: wp.array(dtype=float)):
    i = wp.tid()
    x = a[i]
    y = wp.sin(x) * wp.exp(-x) + wp.pow(wp.abs(x) + 1.0, 0.5) + sq(wp.atan2(x, 2.0)) + float(i % 3)
    out[i] = y + float(b[i] // wp.float64(2.0)) + wp.clamp(x, -1.0, 1.0) + wp.smoothstep(0.0, 1.0, x)


@wp.kernel
def k_geometry(
    v: wp.array(dtype=wp.vec3),
    m: wp.array(dtype=wp.mat33),
    q: wp.array(dtype=wp.quat),
    t: wp.array(dtype=wp.transform),
    out: wp.array(dtype=wp.vec3),
):
    i = wp.tid()
    p = m[i] * v[i] + wp.cross(v[i], wp.vec3(1.0, 0.0, 0.0)) * wp.length(v[i])
    p = wp.quat_rotate(q[i], p) + wp.transform_point(t[i], p)
    n = wp.normalize(p + wp.vec3(1.0))
    r = wp.transpose(m[i]) * wp.inverse(m[i] + wp.identity(n=3, dtype=float))
    out[i] = n * wp.determinant(r) + wp.vec3(r[0, 1], p[1], wp.dot(n, p))


@wp.struct
class Particle:
    pos: wp.vec3
    mass: float
    vel: wp.array(dtype=wp.vec3)


@wp.kernel
def k_struct(p: Particle, dt: float, out: wp.array(dtype=float)):
    i = wp.tid()
    x = p.pos + p.vel[i] * dt
    out[i] = wp.length(x) * p.mass


@wp.kernel
def k_atomics(
    f16: wp.array(dtype=wp.float16),
    bf16: wp.array(dtype=wp.bfloat16),
    f32: wp.array(dtype=float),
    f64: wp.array(dtype=wp.float64),
    i32: wp.array(dtype=wp.int32),
    i64: wp.array(dtype=wp.int64),
    u32: wp.array(dtype=wp.uint32),
    v3: wp.array(dtype=wp.vec3),
):
    i = wp.tid()
    wp.atomic_add(f16, 0, wp.float16(1.0))
    wp.atomic_max(bf16, 1, wp.bfloat16(float(i)))  # a compare-and-swap loop on the containing word
    wp.atomic_add(f32, 0, float(i))
    wp.atomic_min(f32, 1, float(i))
    wp.atomic_max(f32, 2, float(i))
    wp.atomic_sub(f64, 0, wp.float64(i))
    wp.atomic_max(f64, 1, wp.float64(i))
    wp.atomic_add(i32, 0, i)
    wp.atomic_min(i32, 1, i)
    wp.atomic_add(i64, 0, wp.int64(i))
    wp.atomic_max(i64, 1, wp.int64(i))
    wp.atomic_add(u32, 0, wp.uint32(i))
    wp.atomic_add(v3, 0, wp.vec3(float(i)))


@wp.kernel
def k_random_noise(seed: int, out: wp.array(dtype=float)):
    i = wp.tid()
    s = wp.rand_init(seed, i)
    x = wp.randf(s) + wp.randn(s) + float(wp.randi(s, 0, 10))
    v = wp.sample_unit_sphere(s)
    c = wp.curlnoise(s, wp.vec3(x, 0.5, 0.25))
    out[i] = x + wp.noise(s, x) + wp.pnoise(s, wp.vec2(x, 1.0), 4, 4) + v[0] + c[1]


@wp.kernel
def k_svd(a: wp.array(dtype=wp.mat33), out: wp.array(dtype=wp.vec3)):
    i = wp.tid()
    U = wp.mat33()
    sigma = wp.vec3()
    V = wp.mat33()
    wp.svd3(a[i], U, sigma, V)
    out[i] = sigma + U[0] + V[1]


@wp.kernel
def k_dynamic_loop(x: wp.array(dtype=float), n: int, out: wp.array(dtype=float)):
    i = wp.tid()
    s = x[i]
    for k in range(n):
        s = wp.sin(s) * x[i] + float(k)
    j = int(0)
    while j < n:
        s = s * 0.5 + x[i]
        j += 1
    out[i] = s


@wp.kernel
def k_print(x: wp.array(dtype=float), v: wp.array(dtype=wp.vec3)):
    i = wp.tid()
    wp.printf("thread %d has %f\n", i, x[i])
    print(v[i])
    print(x[i])


@wp.kernel
def k_tid1(out: wp.array(dtype=int)):
    i = wp.tid()
    out[i] = i


@wp.kernel
def k_tid2(out: wp.array2d(dtype=int)):
    i, j = wp.tid()
    out[i, j] = i + j


@wp.kernel
def k_tid3(out: wp.array3d(dtype=int)):
    i, j, k = wp.tid()
    out[i, j, k] = i + j + k


@wp.kernel
def k_tid4(out: wp.array4d(dtype=int)):
    i, j, k, l = wp.tid()
    out[i, j, k, l] = i + j + k + l


@wp.func
def soft_abs(x: float):
    return wp.abs(x)


@wp.func_grad(soft_abs)
def adj_soft_abs(x: float, adj_ret: float):
    wp.adjoint[x] += adj_ret * wp.tanh(10.0 * x)


@wp.kernel
def k_custom_grad(x: wp.array(dtype=float), out: wp.array(dtype=float)):
    i = wp.tid()
    out[i] = soft_abs(x[i])


@wp.kernel(enable_backward=False)
def k_forward_only(x: wp.array(dtype=float)):
    i = wp.tid()
    x[i] = x[i] + 1.0


@wp.kernel
def k_generic(x: wp.array(dtype=typing.Any), y: wp.array(dtype=typing.Any)):
    i = wp.tid()
    y[i] = x[i] + x[i]


@wp.kernel
def k_mesh_bvh(mesh: wp.uint64, bvh: wp.uint64, ps: wp.array(dtype=wp.vec3), out: wp.array(dtype=float)):
    i = wp.tid()
    p = ps[i]
    q = wp.mesh_query_point_sign_winding_number(mesh, p, 10.0)
    q2 = wp.mesh_query_point_sign_normal(mesh, p, 10.0)
    q3 = wp.mesh_query_point_sign_parity(mesh, p, 10.0, 3)
    f = wp.mesh_query_furthest_point_no_sign(mesh, p, 0.0)
    x = wp.mesh_eval_position(mesh, q.face, q.u, q.v) + wp.mesh_eval_velocity(mesh, q2.face, q2.u, q2.v)
    r = wp.mesh_query_ray(mesh, p, wp.vec3(0.0, 0.0, 1.0), 10.0)
    n = wp.mesh_query_ray_count_intersections(mesh, p, wp.vec3(1.0, 0.0, 0.0))
    hit = wp.mesh_query_ray_anyhit(mesh, p, wp.vec3(0.0, 1.0, 0.0), 10.0)
    total = r.t + q.sign + q3.sign + float(n + f.face) + wp.length(x - p) + wp.where(hit, 1.0, 0.0)
    total += wp.length(wp.mesh_eval_face_normal(mesh, 0) + wp.mesh_get_point(mesh, 0)) + float(wp.mesh_get_index(mesh, 0))
    m = wp.mesh_get(mesh)
    total += m.points[0][0]
    face = int(0)
    aabb = wp.mesh_query_aabb(mesh, p - wp.vec3(0.1), p + wp.vec3(0.1))
    while wp.mesh_query_next(aabb, face):
        total += 1.0
    item = int(0)
    query = wp.bvh_query_ray(bvh, p, wp.vec3(1.0, 0.0, 0.0), wp.bvh_get_group_root(bvh, 0))
    while wp.bvh_query_next(query, item, 5.0):
        total += float(item)
    query = wp.bvh_query_capsule(wp.mesh_get_bvh(mesh), p, wp.vec3(1.0, 0.0, 0.0), 0.1)
    while wp.bvh_query_next(query, item):
        total += 1.0
    out[i] = total


ALL = [
    k_scalar,
    k_mesh_bvh,
    k_geometry,
    k_struct,
    k_atomics,
    k_random_noise,
    k_svd,
    k_dynamic_loop,
    k_print,
    k_tid1,
    k_tid2,
    k_tid3,
    k_tid4,
    k_custom_grad,
    k_forward_only,
]


def entries(text: str) -> set:
    return set(re.findall(r"\.entry\s+(\w+)\(", text))


@pytest.mark.parametrize("kernel", ALL, ids=lambda k: k.key)
def test_kernel_compiles_to_ptx_with_forward_and_backward_entries(kernel):
    inst = kernel.default_instance()
    build = kernel.module.cuda_build([inst], 75, use_ptx=True)
    expected = {f"{inst.symbol}_cuda_forward"} | ({f"{inst.symbol}_cuda_backward"} if inst.backward_enabled else set())
    assert entries(build.image.decode()) == expected
    assert build.entry_points[inst.symbol] == sorted(expected, key=lambda n: n.endswith("backward"))


def test_entry_point_shape_and_error_context():
    inst = k_tid2.default_instance()
    src = CUDARenderer().render_module([inst], [])
    sym = inst.symbol
    assert (
        f'extern "C" __global__ void {sym}_cuda_forward(weft::launch_bounds bounds, wp_args_{sym} args, '
        "weft::launch_context* ctx) {" in src
    )
    assert "weft::cuda_set_context(ctx);" in src
    assert "t < bounds.size" in src and "gridDim.x" in src  # grid-stride loop over the launch
    assert "args.arg_out.shape[0] >= bounds.shape[0] && args.arg_out.shape[1] >= bounds.shape[1]" in src
    assert "try" not in src and "throw" not in src
    # the checked body records a bounds error with a compare-and-swap, then the thread exits
    ptx = inst.kernel.module.cuda_image([inst], 75).decode()
    forward = ptx[ptx.index(f".entry {sym}_cuda_forward(") : ptx.index(f".entry {sym}_cuda_backward(")]
    assert "atom.global.cas.b32" in forward or "atom.cas.b32" in forward
    assert re.search(r"^\s*exit;", forward, re.MULTILINE)


def test_release_mode_builds_without_bounds_checks(monkeypatch):
    monkeypatch.setattr(wp.config, "mode", "release")
    inst = k_tid2.default_instance()
    ptx = inst.kernel.module.cuda_image([inst], 75).decode()
    assert not re.search(r"^\s*exit;", ptx, re.MULTILINE) and "cas" not in ptx


def test_both_targets_checkpoint_loops_in_loop_stacks():
    from weft.codegen.emit_cpu import CPURenderer

    inst = k_dynamic_loop.default_instance()
    cuda_src = CUDARenderer().render_module([inst], inst.funcs)
    cpu_src = CPURenderer().render_module([inst], inst.funcs)
    for src in (cuda_src, cpu_src):
        assert "weft::loop_stack<weft::float32>" in src and "std::vector" not in src
    ptx = inst.kernel.module.cuda_image([inst], 75).decode()
    assert f".entry {inst.symbol}_cuda_backward(" in ptx


def test_nvrtc_library_is_found_in_the_wheel():
    import glob
    import sys

    wheel_libs = [p for e in sys.path for p in glob.glob(os.path.join(e or ".", "nvidia", "*", "lib", "libnvrtc.so.*"))]
    if not wheel_libs:
        pytest.skip("NVRTC does not come from an nvidia-cuda-nvrtc wheel here")
    assert nvrtc.preload_wheel_library() in wheel_libs
    assert nvrtc.version() >= (12, 0) and 75 in nvrtc.supported_archs() and 90 in nvrtc.supported_archs()


def test_nvrtc_error_maps_to_the_python_line():
    inst = k_scalar.default_instance()
    src = CUDARenderer().render_module([inst], inst.funcs)
    lines = src.splitlines()
    k = next(n for n, line in enumerate(lines) if "// @py test_cuda_codegen.py:" in line)
    py_line = lines[k].split("// @py ", 1)[1]
    lines[k] = "    undefined_symbol_here(1);" + lines[k][lines[k].index("  // @py") :]
    with pytest.raises(WeftBuildError, match=f"for Python line {re.escape(py_line)}") as info:
        nvrtc.compile_source("\n".join(lines), "broken.cu", 75, True)
    assert "undefined_symbol_here" in str(info.value)


def test_cache_reuses_and_repairs_images(tmp_path, monkeypatch):
    monkeypatch.setattr(wp.config, "kernel_cache_dir", str(tmp_path))
    inst = k_tid1.default_instance()
    src = CUDARenderer().render_module([inst], [])
    first = nvrtc.cached_image("cache_probe", src, 75, True)
    (image,) = [p for p in tmp_path.iterdir() if p.suffix == ".ptx"]
    assert nvrtc.cached_image("cache_probe", src, 75, True) == first
    image.write_bytes(b"garbage")  # a damaged entry is rebuilt, not returned
    assert nvrtc.cached_image("cache_probe", src, 75, True) == first
    assert image.read_bytes() == first
    key_ptx, key_cubin = nvrtc.cache_key(src, 75, True), nvrtc.cache_key(src, 75, False)
    assert len({key_ptx, key_cubin, nvrtc.cache_key(src, 90, True)}) == 3


@pytest.mark.parametrize("use_ptx", [True, False], ids=["ptx", "cubin"])
def test_compile_aot_module_writes_one_image_per_arch(tmp_path, use_ptx):
    wp.launch(k_generic, 4, inputs=[wp.zeros(4, dtype=float), wp.zeros(4, dtype=float)])
    wp.compile_aot_module(__name__, arch=list(ARCHS), use_ptx=use_ptx, module_dir=tmp_path)
    ext = "ptx" if use_ptx else "cubin"
    images = sorted(p.name for p in tmp_path.iterdir() if p.suffix == "." + ext)
    assert len(images) == 2
    ident = images[0].split(".sm")[0]
    assert images == [f"{ident}.sm{a}.{ext}" for a in ARCHS] and ident.startswith("wp_test_cuda_codegen_")
    meta = json.loads((tmp_path / f"{ident}.meta").read_text())
    keys = {v["key"] for v in meta["kernels"].values()}
    assert {k.key for k in ALL} | {"k_generic"} <= keys
    names = [n for k in meta["kernels"].values() for n in k["entry_points"]]
    assert len(names) == 2 * len(meta["kernels"]) - 1  # k_forward_only has no backward entry point
    for a in ARCHS:
        data = (tmp_path / f"{ident}.sm{a}.{ext}").read_bytes()
        if use_ptx:
            assert f".target sm_{a}".encode() in data and entries(data.decode()) == set(names)
        else:
            assert data[:4] == b"\x7fELF" and all(n.encode() in data for n in names)
    assert (tmp_path / f"{ident}.cu").read_text().startswith('#include "weft.h"')


def test_compile_aot_module_strip_hash_and_module_object(tmp_path):
    import sys

    wp.compile_aot_module(sys.modules[__name__], arch=75, module_dir=tmp_path, strip_hash=True)
    assert (tmp_path / "wp_test_cuda_codegen.sm75.ptx").is_file()
    assert (tmp_path / "wp_test_cuda_codegen.meta").is_file()
    wmod.get_module(__name__).options["strip_hash"] = False


@pytest.mark.skipif(wp.is_cuda_available(), reason="checks the error raised on a machine without a GPU")
def test_compile_aot_module_needs_an_arch_without_a_gpu(tmp_path):
    with pytest.raises((ValueError, RuntimeError), match="CUDA"):
        wp.compile_aot_module(__name__, module_dir=tmp_path)
    with pytest.raises(ValueError, match="no weft kernels"):
        wp.compile_aot_module("no_such_module_here", arch=75, module_dir=tmp_path)


@pytest.mark.skipif(wp.is_cuda_available(), reason="checks the error raised on a machine without a GPU")
def test_load_aot_module_without_a_gpu_says_so(tmp_path):
    wp.compile_aot_module(__name__, arch=75, module_dir=tmp_path)
    with pytest.raises(RuntimeError, match="no CUDA device|not a CUDA device"):
        wp.load_aot_module(__name__, device="cuda:0", arch=75, module_dir=tmp_path)
    with pytest.raises(RuntimeError, match="not a CUDA device"):
        wp.load_aot_module(__name__, arch=75, module_dir=tmp_path)


@pytest.fixture
def simulated_gpu():
    """One simulated GPU (sm_86; tests/cuda_fake_driver.py runs "device" kernels through their CPU
    entry points), as in test_cuda_runtime_simulated.py; the GPU-less state is restored after."""
    pytest.importorskip("cuda.bindings.driver")
    if wp.is_cuda_available():
        pytest.skip("a real GPU is present")
    from cuda_fake_driver import FakeDriver

    from weft.runtime import cuda_driver
    from weft.runtime import device as device_mod

    saved = (list(cuda_driver._state), list(device_mod._cuda_probe), dict(device_mod._devices))
    fake = FakeDriver()
    cuda_driver._state[:] = [(fake, 1, "")]
    device_mod._cuda_probe[:] = []
    try:
        yield fake, device_mod.get_device("cuda:0")
        wp.synchronize()
    finally:
        cuda_driver._state[:], device_mod._cuda_probe[:] = saved[0], saved[1]
        device_mod._devices.clear()
        device_mod._devices.update(saved[2])
        device_mod._current = device_mod._cpu
        device_mod._cuda_current_ordinal = 0
        for k in wmod.get_module(__name__).kernels:
            for inst in k._instances.values():
                inst.binding.cuda_functions.clear()
        wmod.get_module(__name__).cuda_loaded.clear()


def test_load_aot_module_serves_launches_without_compiling(tmp_path, simulated_gpu, monkeypatch):
    fake, dev = simulated_gpu
    wp.compile_aot_module(__name__, arch=[75, 90], module_dir=tmp_path)
    monkeypatch.setattr(wmod.Module, "cuda_build", None)  # any compilation from here on would fail
    wp.load_aot_module(__name__, device=dev, module_dir=tmp_path)
    (ptx,) = [p for p in tmp_path.iterdir() if p.name.endswith(".sm75.ptx")]  # newest PTX <= sm_86
    assert [img.rstrip(b"\0") for img in fake.loaded_images] == [ptx.read_bytes()]
    out = wp.zeros((3, 4), dtype=int, device=dev)
    wp.launch(k_tid2, (3, 4), inputs=[out], device=dev)
    np.testing.assert_array_equal(out.numpy(), np.add.outer(np.arange(3), np.arange(4)))


def test_cpu_results_unchanged_by_cuda_rendering():
    """Rendering for CUDA leaves the instance usable on the CPU with the same results."""
    x = wp.array(np.linspace(-2, 2, 8, dtype=np.float32), requires_grad=True)
    out = wp.zeros(8, dtype=float, requires_grad=True)
    k_custom_grad.module.cuda_image([k_custom_grad.default_instance()], 75)
    tape = wp.Tape()
    with tape:
        wp.launch(k_custom_grad, 8, inputs=[x, out])
    tape.backward(grads={out: wp.ones(8, dtype=float)})
    np.testing.assert_allclose(out.numpy(), np.abs(x.numpy()))
    np.testing.assert_allclose(x.grad.numpy(), np.tanh(10 * x.numpy()), rtol=1e-6)


def test_joint_compile_gives_the_compute_ptx_and_the_sm_cubin():
    """compile_both (used to check the whole suite) returns exactly what the separate PTX and
    CUBIN compilations return."""
    insts = [k.default_instance() for k in (k_scalar, k_dynamic_loop, k_atomics)]
    src = CUDARenderer().render_module(insts, wmod.Module.funcs_of(insts))
    ptx, cubin = nvrtc.compile_both(src, "joint.cu", 75)
    assert ptx == nvrtc.compile_source(src, "joint.cu", 75, True)
    assert cubin[:4] == b"\x7fELF" and entries(ptx.decode()) <= {
        n.decode() for n in re.findall(rb"\w+_cuda_\w+", cubin)
    }


def test_load_aot_module_picks_an_image_the_device_can_run(tmp_path):
    from weft.runtime.aot import _candidate_archs

    for name in ("wp_m_0.sm75.ptx", "wp_m_0.sm90.ptx", "wp_m_0.sm80.cubin", "wp_m_0.sm86.cubin"):
        (tmp_path / name).write_bytes(b"")
    base = str(tmp_path / "wp_m_0")
    assert _candidate_archs(base, "ptx", None, 86) == [75]  # PTX JIT-compiles forward, never back
    assert _candidate_archs(base, "ptx", None, 120) == [90, 75]
    assert _candidate_archs(base, "cubin", None, 89) == [86, 80]  # same major version only
    assert _candidate_archs(base, "cubin", None, 90) == [90]  # nothing fits: the exact name is reported
    assert _candidate_archs(base, "ptx", 80, 86) == [80]


# ------------------------------------------------------------------ every kernel of the session
def culprit(src: str, log: str, insts) -> str:
    """The kernel (or func) whose generated code holds the first NVRTC error, by scanning back
    from the error line to the nearest definition."""
    m = re.search(r"\.cu\((\d+)\): (?:catastrophic )?error", log)
    if not m:
        return ""
    kernels = {i.symbol: f"kernel {i.kernel.module.name}.{i.kernel.key}" for i in insts}
    for line in reversed(src.splitlines()[: int(m.group(1))]):
        d = re.match(r"struct wp_args_(\w+)", line) or re.match(
            r"(?:static __device__ inline|extern \"C\" __global__) .*?(?:adj_)?(\w+)\(", line
        )
        if d:
            sym = next((s for s in kernels if d.group(1).startswith(s)), None)
            if sym:
                return kernels[sym]
            callers = [kernels[i.symbol] for i in insts if any(f.symbol == d.group(1) for f in i.funcs)]
            return f"func {d.group(1)} (called by {', '.join(callers)})"
    return ""


def test_a_failing_suite_build_names_the_kernel_or_func():
    insts = [k_scalar.default_instance(), k_custom_grad.default_instance()]
    src = CUDARenderer().render_module(insts, wmod.Module.funcs_of(insts))

    def break_after(marker):
        lines = src.splitlines()
        k = next(n for n, line in enumerate(lines) if marker in line)
        k = next(n for n in range(k, len(lines)) if "// @py" in lines[n])
        lines[k] = "    not_a_function();" + lines[k]
        broken = "\n".join(lines)
        ok, log = nvrtc.images_job((wmod.cache_dir(), "broken", broken, 75, (), True))
        assert not ok
        return culprit(broken, log, insts)

    assert break_after("void k_custom_grad_") == "kernel test_cuda_codegen.k_custom_grad"
    assert break_after("inline weft::float32 soft_abs_") == (
        f"func {soft_abs_symbol(insts)} (called by kernel test_cuda_codegen.k_custom_grad)"
    )


def soft_abs_symbol(insts) -> str:
    return next(f.symbol for i in insts for f in i.funcs if f.symbol.startswith("soft_abs_"))


@pytest.mark.run_last
def test_every_suite_kernel_compiles_for_cuda(cpu_builds):
    """Each batch of kernels the CPU path built in this session, rendered for CUDA and compiled to
    PTX and CUBIN for sm_75 and sm_90: one NVRTC run per arch gives both, with nvrtc.FAST_OPTION
    (every stage runs, with less optimisation: ~4.5x less CPU time than the full build; the tests
    above compile with the production options), through the cache, on all cores, largest
    sources first so that the cores finish together. Tile kernels are also built with their tiles
    spread over 64 threads (sm_90)."""
    if not cpu_builds:
        pytest.skip("no CPU kernels were built in this session")
    jobs, failures = {}, []  # (source, arch, defines) -> (module stem, names, entry points, instances)
    defines = wmod.build_options()
    for m, insts in cpu_builds:
        r = CUDARenderer()
        names = ", ".join(f"{i.kernel.module.name}.{i.kernel.key}" for i in insts)
        try:
            src = r.render_module(insts, m.funcs_of(insts))
        except Exception as e:  # noqa: BLE001 -- a renderer bug is a CUDA failure of these kernels too
            failures.append(f"{names}: rendering failed: {e!r}")
            continue
        for arch in ARCHS:
            jobs.setdefault((src, arch, defines), (m.stem(), names, [n for i in insts for n in r.entry_points(i)], insts))
        # kernels whose tiles a GPU spreads over a block's threads (native/tile/tile_cuda.h) are
        # also built that way, alone, for blocks of 64 threads and sm_90
        for inst in (i for i in insts if i.spreads_tiles):
            r = CUDARenderer()
            spread = r.render_module([inst], m.funcs_of([inst]))
            key = (spread, 90, defines + ("WEFT_TILE_LANES=64",))
            jobs.setdefault(key, (m.stem(), f"{inst.kernel.key} (64 threads)", r.entry_points(inst), [inst]))
    work = sorted(jobs, key=lambda w: -len(w[0]))
    args = [(wmod.cache_dir(), jobs[w][0], *w, True) for w in work]
    ctx = multiprocessing.get_context("spawn")
    with concurrent.futures.ProcessPoolExecutor(max_workers=os.cpu_count() or 1, mp_context=ctx) as pool:
        results = list(pool.map(nvrtc.images_job, args))
    for (src, arch, _), (ok, out) in zip(work, results):
        _, names, entry_names, insts = jobs[(src, arch, _)]
        if not ok:
            failures.append(f"{culprit(src, out, insts) or names} (sm_{arch}): {out}")
            continue
        ptx, cubin = out
        found = entries(ptx.decode())
        missing = [f"{n} (PTX)" for n in entry_names if n not in found]
        missing += [f"{n} (CUBIN)" for n in entry_names if n.encode() not in cubin]
        if missing:
            failures.append(f"{names} (sm_{arch}): missing entry points {missing}")
    assert not failures, f"{len(failures)} CUDA build(s) failed:\n" + "\n\n".join(failures)[:20000]


@pytest.mark.parametrize("arch", [75, 90])
def test_cluster_dims_reach_the_ptx_of_cluster_capable_archs(arch):
    @wp.kernel(cluster_dim=4, module="unique")
    def clustered_scale(x: wp.array(dtype=float)):
        i = wp.tid()
        x[i] = 2.0 * x[i]

    inst = clustered_scale.default_instance()
    text = clustered_scale.module.cuda_build([inst], arch, use_ptx=True).image.decode()
    entries = re.findall(r"\.entry\s+(\w+)\([^{]*?\.reqnctapercluster\s+([\d, ]+)", text, re.S)
    if arch >= 90:  # clusters exist from sm_90 on; below, the kernel is compiled unclustered
        assert sorted(name.rsplit("_", 1)[-1] for name, _ in entries) == ["backward", "forward"]
        assert {n.replace(" ", "") for _, n in entries} == {"4,1,1"}
    else:
        assert entries == [] and "_cuda_forward" in text


@pytest.mark.parametrize("arch", [75, 90])
def test_register_budget_reaches_the_ptx(arch):
    @wp.kernel(cuda_max_registers=40, module="unique")
    def capped_saxpy(a: float, x: wp.array(dtype=float), y: wp.array(dtype=float)):
        i = wp.tid()
        y[i] = a * x[i] + y[i]

    inst = capped_saxpy.default_instance()
    text = capped_saxpy.module.cuda_build([inst], arch, use_ptx=True).image.decode()
    entries = re.findall(r"\.entry\s+(\w+)\([^{]*?\.maxnreg\s+(\d+)", text, re.S)
    assert sorted(name.rsplit("_", 1)[-1] for name, _ in entries) == ["backward", "forward"]
    assert {int(n) for _, n in entries} == {40}
