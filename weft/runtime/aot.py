"""Ahead-of-time CUDA builds with Warp's API: ``compile_aot_module`` / ``load_aot_module``.

Contract: ``compile_aot_module`` writes, into ``module_dir``, for a module whose id is
``wp_<module name>_<hash7>`` (``wp_<module name>`` with ``strip_hash``):

    <id>.cu               the CUDA C++ that was compiled
    <id>.sm<arch>.ptx     one per arch (``use_ptx``), or <id>.sm<arch>.cubin
    <id>.meta             JSON: weft version, module name, per kernel instance its key and
                          entry-point names (forward, then backward), and the source locations
                          that kernel error ids index

``hash7`` is the start of the sha256 of the CUDA source, so a changed module gets a new id and
a stale image is never loaded. No GPU is needed to compile; ``load_aot_module`` hands the image
to the CUDA runtime (``runtime/cuda.py`` ``load_module``) and records the loaded functions on the
module (``Module.cuda_loaded[device ordinal]``) for launches on that device.
"""

from __future__ import annotations

import concurrent.futures
import hashlib
import json
import os

from . import module as mod


class AotModule:
    """A CUDA image loaded onto one device.

    Attributes:
        device: the ``wp.Device`` it was loaded on.
        loaded: what ``runtime.cuda.load_module`` returned (``.function(name)``).
        functions: instance symbol -> (forward function, backward function or None).
        locs: source locations indexed by the ``loc`` of a kernel error (-1: none).
        path: the image file.
    """

    def __init__(self, device, loaded, functions: dict, locs: list, path: str):
        self.device = device
        self.loaded = loaded
        self.functions = functions
        self.locs = locs
        self.path = path


def resolve_module(module) -> mod.Module:
    """A weft Module from a Python module object, its name, or a weft Module."""
    if isinstance(module, mod.Module):
        return module
    name = module if isinstance(module, str) else getattr(module, "__name__", None)
    if not isinstance(name, str):
        raise TypeError(f"expected a module, a module name or a weft Module, got {type(module).__name__}")
    m = mod._modules.get(name)
    if m is None or not m.kernels:
        raise ValueError(f"module '{name}' defines no weft kernels (import it before compiling it)")
    return m


def aot_instances(m: mod.Module) -> list:
    """The kernel instances an AOT build covers: every non-generic kernel at its declared types,
    and the instances generic kernels already have (from launches); a generic kernel that was
    never launched has no concrete types and is skipped. A kernel that fails to lower raises."""
    out = []
    for k in m.kernels:
        if k.is_generic:
            out.extend(k._instances.values())
        else:
            out.append(k.default_instance())
    if not out:
        raise ValueError(f"module '{m.name}' has no kernel with concrete argument types to compile")
    return out


def _module_id(m: mod.Module, source: str, strip_hash: bool) -> str:
    name = "".join(ch if ch.isalnum() or ch in "._-" else "_" for ch in m.name)
    return f"wp_{name}" if strip_hash else f"wp_{name}_{hashlib.sha256(source.encode()).hexdigest()[:7]}"


def _arch_list(arch, device) -> list:
    if arch is not None:
        archs = [arch] if isinstance(arch, int) else list(arch)
        return [int(a) for a in archs]
    from .device import get_device

    devices = device if isinstance(device, (list, tuple)) else [device]
    out = []
    for d in devices:
        dev = get_device(d)
        if not dev.is_cuda:
            raise ValueError(
                f"compile_aot_module builds CUDA images; device '{dev.alias}' is not a CUDA device "
                "(pass arch=[...] to compile without a GPU)"
            )
        out.append(int(dev.arch))
    return out


def compile_aot_module(module, device=None, arch=None, module_dir=None, use_ptx=None, strip_hash=None) -> None:
    """Compile a module's kernels for CUDA ahead of time (no GPU needed).

    Args:
        module: a Python module, its name, or a weft Module. Generic kernels contribute the
            instances they already have from launches; a never-launched generic kernel is skipped.
        device: a CUDA device or list of them whose archs to compile for (when ``arch`` is None).
        arch: an int or iterable of ints (e.g. ``[75, 90]``): one image per arch.
        module_dir: output directory (default: the kernel cache directory).
        use_ptx: PTX text for ``compute_<arch>`` (default) or, when False, CUBIN for ``sm_<arch>``.
        strip_hash: name files ``wp_<module>`` instead of ``wp_<module>_<hash7>``. Entry-point names
            always keep their per-instance hash (the ``.meta`` file lists them).

    Raises:
        ValueError: the module has no kernels, or no arch was given and no CUDA device exists.
        WeftBuildError: NVRTC is missing or rejects a kernel (mapped to the Python line).
    """
    m = resolve_module(module)
    archs = _arch_list(arch, device)
    ptx = True if use_ptx is None else bool(use_ptx)
    strip = bool(strip_hash if strip_hash is not None else m.options.get("strip_hash", False))
    m.options["strip_hash"] = strip
    instances = aot_instances(m)
    out_dir = os.fspath(module_dir) if module_dir is not None else mod.cache_dir()
    os.makedirs(out_dir, exist_ok=True)
    # NVRTC releases the GIL: the archs compile in parallel on threads
    with concurrent.futures.ThreadPoolExecutor(max_workers=max(1, min(len(archs), os.cpu_count() or 1))) as pool:
        builds = list(pool.map(lambda a: m.cuda_build(instances, a, ptx), archs))
    ident = _module_id(m, builds[0].source, strip)
    base = os.path.join(out_dir, ident)
    mod._write_atomic(base + ".cu", builds[0].source.encode())
    for a, b in zip(archs, builds):
        mod._write_atomic(f"{base}.sm{a}.{'ptx' if ptx else 'cubin'}", b.image)
    meta = {
        "weft_version": mod.VERSION,
        "module": m.name,
        "kernels": {
            inst.symbol: {"key": inst.kernel.key, "entry_points": builds[0].entry_points[inst.symbol]}
            for inst in instances
        },
        "locs": [list(loc) for loc in builds[0].locs],
    }
    mod._write_atomic(base + ".meta", json.dumps(meta, indent=1).encode())


def load_aot_module(module, device=None, arch=None, module_dir=None, use_ptx=None, strip_hash=False) -> None:
    """Load a module compiled by ``compile_aot_module`` onto a CUDA device, without compiling.

    Args:
        module: a Python module, its name, or a weft Module (the same kernels as when compiled).
        device: the CUDA device (default: the current device, which must be a CUDA device).
        arch: which image to load (default: the best one for the device: PTX of its arch or the
            newest older arch, CUBIN of its arch or an older one of the same major version).
        module_dir: where the files are (default: the kernel cache directory).
        use_ptx: load the PTX (True) or CUBIN (False) image; None tries PTX first, then CUBIN.
        strip_hash: the files were written with ``strip_hash=True``.

    Raises:
        RuntimeError: no CUDA device exists, or ``device`` is not a CUDA device.
        FileNotFoundError: no image or metadata for this module and arch (lists the paths tried).
        ValueError: the metadata does not describe the module's current kernels.
    """
    from .device import get_device

    dev = get_device(device)
    if not dev.is_cuda:
        raise RuntimeError(
            f"load_aot_module loads CUDA images, but device '{dev.alias}' is not a CUDA device"
            + ("" if _any_cuda() else " (weft found no GPU on this machine)")
        )
    m = resolve_module(module)
    instances = aot_instances(m)
    from ..codegen.emit_cuda import CUDARenderer

    source = CUDARenderer().render_module(instances, m.funcs_of(instances))
    out_dir = os.fspath(module_dir) if module_dir is not None else mod.cache_dir()
    base = os.path.join(out_dir, _module_id(m, source, strip_hash))
    kinds = ["ptx", "cubin"] if use_ptx is None else (["ptx"] if use_ptx else ["cubin"])
    tried = [f"{base}.sm{a}.{k}" for k in kinds for a in _candidate_archs(base, k, arch, int(dev.arch))]
    path = next((p for p in tried if os.path.isfile(p)), None)
    if path is None or not os.path.isfile(base + ".meta"):
        raise FileNotFoundError(
            f"no AOT build of module '{m.name}' for {dev.alias} (sm_{dev.arch}): tried {tried + [base + '.meta']}"
        )
    with open(base + ".meta") as f:
        meta = json.load(f)
    missing = [inst.kernel.key for inst in instances if inst.symbol not in meta["kernels"]]
    if missing:
        raise ValueError(f"{base}.meta was compiled from other code: no entry points for kernels {missing}")
    with open(path, "rb") as f:
        image = f.read()
    from . import cuda

    loaded = cuda.load_module(dev, image)
    functions = {}
    for inst in instances:
        names = meta["kernels"][inst.symbol]["entry_points"]
        functions[inst.symbol] = (loaded.function(names[0]), loaded.function(names[1]) if len(names) > 1 else None)
    m.cuda_loaded[dev.ordinal] = AotModule(dev, loaded, functions, [tuple(x) for x in meta["locs"]], path)


def _candidate_archs(base: str, kind: str, arch, device_arch: int) -> list:
    """Archs whose image can run on the device, best first: the requested one; else PTX for the
    device's arch or the newest older one (the driver JIT-compiles PTX forward), or CUBIN for the
    device's arch or an older one of the same major version (binary compatible)."""
    if arch is not None:
        return [int(arch)]
    d, name = os.path.dirname(base), os.path.basename(base)
    built = []
    for f in os.listdir(d) if os.path.isdir(d) else ():
        head, _, ext = f.rpartition(".")
        if ext == kind and head.startswith(name + ".sm") and head[len(name) + 3 :].isdigit():
            built.append(int(head[len(name) + 3 :]))
    ok = [a for a in built if a <= device_arch and (kind == "ptx" or a // 10 == device_arch // 10)]
    return sorted(ok, reverse=True) or [device_arch]


def _any_cuda() -> bool:
    from .device import is_cuda_available

    return is_cuda_available()
