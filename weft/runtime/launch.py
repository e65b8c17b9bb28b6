"""``wp.launch``: bind arguments, run a kernel's native entry point over the grid, record on tapes.

Contract: argument conversion is prepared once per kernel instance (a ``Launcher`` with one
converter per parameter and a ctypes struct type mirroring the C++ argument struct); a launch
converts, packs and makes one call into the runtime. Bad arguments raise before any native call.
Runtime errors reported by the kernel (out-of-bounds indices) are raised as ``IndexError``.
"""

from __future__ import annotations

import ctypes
import typing

import numpy as np

from .. import config
from .. import types as wt
from . import module as mod
from . import recording

_array_cls = []  # filled lazily to avoid importing array at module import


def _array_class():
    if not _array_cls:
        from ..array import array

        _array_cls.append(array)
    return _array_cls[0]


def _scalar_converter(t):
    if t is wt.float16:
        return lambda v: int(np.float16(v).view(np.uint16))
    if t is wt.bool:
        return lambda v: bool(v.value if isinstance(v, wt.Scalar) else v)
    py = float if wt.is_float(t) else int

    def convert(v):
        if isinstance(v, wt.Scalar):
            v = v.value
        return py(v)

    return convert


def _struct_converter(t, name, key):
    def convert(v):
        if getattr(v, "_struct", None) is not t:
            raise TypeError(f"kernel '{key}' argument '{name}' expects a {t.key} struct, got {type(v).__name__}")
        return v._ctype()

    return convert


def _composite_converter(t, name, key):
    def convert(v):
        if isinstance(v, t):
            return v
        try:
            return t(*v) if not isinstance(v, (int, float)) else t(v)
        except (TypeError, ValueError):
            raise TypeError(f"kernel '{key}' argument '{name}' expects {t.__name__}, got {v!r}") from None

    return convert


class Launcher:
    """Per-instance argument packing: converters and the ctypes mirror of ``wp_args_<kernel>``."""

    def __init__(self, inst):
        self.inst = inst
        kernel = inst.kernel
        fields = []
        self.kinds = []
        for name, t in zip(kernel.arg_names, inst.arg_types):
            if isinstance(t, wt.ArrayType):
                fields.append((name, wt.array_t))
                self.kinds.append(("array", t))
            elif wt.is_scalar(t):
                fields.append((name, t.ctype))
                self.kinds.append(("scalar", _scalar_converter(t)))
            elif getattr(t, "_kind", None) == "struct":
                fields.append((name, t.ctype))
                self.kinds.append(("scalar", _struct_converter(t, name, kernel.key)))
            elif getattr(t, "_kind", None):
                fields.append((name, t.ctype))
                self.kinds.append(("scalar", _composite_converter(t, name, kernel.key)))
            else:
                raise TypeError(f"kernel '{kernel.key}' parameter '{name}' has unsupported type {t!r}")
        if not fields:
            fields = [("_unused", ctypes.c_int32)]
        self.struct = type(f"wp_args_{inst.symbol}", (ctypes.Structure,), {"_fields_": fields})
        self.names = list(kernel.arg_names)

    def pack(self, params, adj_params=None):
        s = self.struct()
        arr_cls = _array_class()
        for k, (name, (kind, info), value) in enumerate(zip(self.names, self.kinds, params)):
            if kind == "array":
                if value is None:
                    continue  # a null array: any access fails the bounds check
                if not isinstance(value, arr_cls):
                    value = _coerce_array(value, info)
                    if value is None:
                        raise self.type_error(k, name, info, params[k])
                if value.dtype is not info.dtype or value.ndim != info.ndim:
                    kt = value.kernel_type()
                    if kt != info and not (info.dtype is typing.Any and kt.ndim == info.ndim):
                        raise self.type_error(k, name, info, value)
                ct = value.__ctype__()
                if adj_params is not None:
                    ct = _with_grad(ct, value, adj_params[k] if k < len(adj_params) else None, name, self.inst)
                setattr(s, name, ct)
            else:
                try:
                    setattr(s, name, info(value))
                except (TypeError, ValueError):
                    raise TypeError(
                        f"kernel '{self.inst.kernel.key}' argument '{name}' (position {k}) expects "
                        f"{wt.type_repr(self.inst.arg_types[k])}, got {type(value).__name__} {value!r}"
                    ) from None
        return s

    def type_error(self, k, name, expected, got):
        desc = repr(got.kernel_type()) if hasattr(got, "kernel_type") else type(got).__name__
        return TypeError(
            f"kernel '{self.inst.kernel.key}' argument '{name}' (position {k}) expects {expected!r}, got {desc}"
        )


def _coerce_array(value, t):
    """Objects that can stand in for an array argument: NumPy arrays of the right dtype (wrapped
    without a copy, so the kernel's writes land in them, as in Warp) and interop hooks."""
    if isinstance(value, np.ndarray) and t.dtype is not typing.Any:
        try:
            a = _array_class()(value, dtype=t.dtype, copy=False)
        except (TypeError, ValueError):
            return None
        return a if a.ptr == value.ctypes.data else None  # never silently work on a copy
    for hook in recording.array_coercions:
        r = hook(value, t)
        if r is not None:
            return r
    return None


def _with_grad(ct, value, adj, name, inst):
    """A copy of an array's ctypes view whose ``grad`` is the adjoint array passed by the user."""
    out = wt.array_t()
    ctypes.pointer(out)[0] = ct
    if adj is None or not hasattr(adj, "ptr"):
        return out
    if tuple(adj.shape) != tuple(value.shape) or tuple(adj.strides) != tuple(value.strides):
        raise ValueError(
            f"kernel '{inst.kernel.key}': the adjoint array for '{name}' must have the shape and strides of the "
            f"array it belongs to ({value.shape}), got {adj.shape}"
        )
    out.grad = adj.ptr
    if value.grad is None or adj.ptr != value.grad.ptr:
        # A separate adjoint array given to an explicit adjoint launch is the caller's input: the
        # backward kernel adds into the other adjoints from it but never clears it (as in Warp).
        out.flags |= wt.ARRAY_RETAIN_GRAD
    return out


def _instance_for(kernel, params):
    inst = _lookup_instance(kernel, params)
    if inst.generation != mod._generation[0] or (inst.global_captures and kernel.globals_changed(inst)):
        inst = kernel.refresh(inst)
    return inst


def _lookup_instance(kernel, params):
    if not kernel.is_generic:
        inst = kernel._instances.get(kernel._arg_types_key)
        return inst if inst is not None else kernel.default_instance()
    types_ = []
    for t, v in zip(kernel.arg_types, params):
        if t is typing.Any or (isinstance(t, wt.ArrayType) and t.dtype is typing.Any):
            if hasattr(v, "kernel_type"):
                types_.append(v.kernel_type())
            elif isinstance(v, wt.Scalar):
                types_.append(type(v))
            elif isinstance(v, (bool, int, float)):
                types_.append(wt.type_from_annotation(type(v)))
            else:
                raise TypeError(f"kernel '{kernel.key}': cannot infer a type for argument {v!r}")
        else:
            types_.append(t)
    return kernel.instance_for(types_)


_bounds_cache: dict = {}


def make_bounds(dim) -> wt.launch_bounds_t:
    """The launch grid for ``dim`` (cached: launches reuse the same few grids)."""
    key = int(dim) if isinstance(dim, (int, np.integer)) else tuple(int(d) for d in dim)
    b = _bounds_cache.get(key)
    if b is None:
        b = _make_bounds(dim)
        if len(_bounds_cache) > 256:
            _bounds_cache.clear()
        _bounds_cache[key] = b
    return b


def _make_bounds(dim) -> wt.launch_bounds_t:
    shape = (dim,) if isinstance(dim, (int, np.integer)) else tuple(dim)
    if not 1 <= len(shape) <= wt.MAX_DIMS:
        raise ValueError(f"launch dim must have 1 to {wt.MAX_DIMS} dimensions, got {dim!r}")
    b = wt.launch_bounds_t()
    size = 1
    for k, n in enumerate(shape):
        n = int(n)
        if n < 0:
            raise ValueError(f"launch dim must not be negative, got {dim!r}")
        b.shape[k] = n
        size *= n
    b.ndim = len(shape)
    b.size = size
    return b


class kernel_error_t(ctypes.Structure):
    """Mirror of ``weft::kernel_error`` (native/core.h)."""

    _fields_ = [
        ("code", ctypes.c_int32),
        ("loc", ctypes.c_int32),
        ("dim", ctypes.c_int32),
        ("ndim", ctypes.c_int32),
        ("index", ctypes.c_int64 * 4),
        ("shape", ctypes.c_int32 * 4),
    ]


class launch_context_t(ctypes.Structure):
    """Mirror of ``weft::launch_context`` (native/core.h)."""

    _fields_ = [
        ("bounds", wt.launch_bounds_t),
        ("has_error", ctypes.c_int32),
        ("error", kernel_error_t),
        ("serial", ctypes.c_int32),
    ]


_launch_fn: list = []


def _bind_launch_fn():
    _launch_fn.append(mod.runtime_library().weft_launch)
    return _launch_fn[0]


def run(inst, bounds, args_struct, adjoint: bool):
    """Run a built instance's forward or backward entry point; raise on kernel errors."""
    ptr = inst.backward_ptr if adjoint else inst.forward_ptr
    if adjoint and ptr is None:
        raise RuntimeError(
            f"kernel '{inst.kernel.key}' was built with enable_backward=False, so it has no backward pass; "
            "enable it with @wp.kernel(enable_backward=True) or wp.set_module_options({'enable_backward': True})"
        )
    if adjoint and inst.ir.adjoint_error:
        raise RuntimeError(inst.ir.adjoint_error)
    ctx = launch_context_t()
    ctx.bounds = bounds
    launch_fn = _launch_fn[0] if _launch_fn else _bind_launch_fn()
    launch_fn(
        ptr,
        ctypes.addressof(ctx),
        ctypes.addressof(args_struct),
        bounds.size,
        config.cpu_threads,
        config.cpu_min_tasks_per_thread,
    )
    if ctx.has_error:
        raise _kernel_error(inst, ctx)


def _kernel_error(inst, ctx):
    e = ctx.error
    file, line, text = inst.module_locs[inst.loc_base + e.loc]
    n = e.ndim
    idx = tuple(e.index[k] for k in range(n))
    shape = tuple(e.shape[k] for k in range(n))
    return IndexError(
        f"index {idx if n > 1 else idx[0]} is out of bounds for an array of shape {shape} "
        f"(dimension {e.dim}) in kernel '{inst.kernel.key}' at {file}:{line}: {text}"
    )


def launch(
    kernel,
    dim,
    inputs: typing.Sequence = (),
    outputs: typing.Sequence = (),
    adj_inputs: typing.Sequence = (),
    adj_outputs: typing.Sequence = (),
    device=None,
    stream=None,
    adjoint: bool = False,
    record_tape: bool = True,
    record_cmd: bool = False,
    max_blocks: int = 0,
    block_dim: int = 256,
):
    """Run ``kernel`` over a grid of ``dim`` threads.

    Args:
        kernel: a ``@wp.kernel``.
        dim: number of threads, or a tuple of up to 4 grid dimensions.
        inputs, outputs: kernel arguments in parameter order (outputs follow inputs).
        adj_inputs, adj_outputs: with ``adjoint=True``, the adjoint (gradient) arrays matching
            ``inputs`` and ``outputs``; ``None`` entries use the argument's own ``.grad``.
        device: "cpu" (the only device here) or None for the current device.
        adjoint: run the backward (adjoint) kernel instead of the forward one.
        record_tape: record the launch on the active ``wp.Tape``.
        record_cmd: return a ``wp.Launch`` object without running the kernel.

    Raises:
        TypeError: wrong number or types of arguments.
        IndexError: an array index was out of bounds while the kernel ran (debug mode).
    """
    if getattr(kernel, "_weft_kind", None) != "kernel":
        raise TypeError(f"wp.launch() expects a @wp.kernel, got {kernel!r}")
    params = list(inputs) + list(outputs)
    if len(params) != len(kernel.arg_names):
        raise TypeError(
            f"kernel '{kernel.key}' takes {len(kernel.arg_names)} arguments ({', '.join(kernel.arg_names)}) "
            f"but {len(params)} were given"
        )
    _check_device(device)
    inst = _instance_for(kernel, params)
    bounds = make_bounds(dim)
    if inst.tid_ndim > 1 and inst.tid_ndim != bounds.ndim:
        raise ValueError(
            f"kernel '{kernel.key}' unpacks wp.tid() into {inst.tid_ndim} indices but was launched with a "
            f"{bounds.ndim}-dimensional dim={dim!r}"
        )
    if record_cmd:
        from .launch_object import Launch

        return Launch(
            kernel,
            device,
            adjoint=adjoint,
            dim=dim,
            inputs=inputs,
            outputs=outputs,
            adj_inputs=adj_inputs,
            adj_outputs=adj_outputs,
        )
    inst.kernel.module.ensure_built(inst)
    if inst.launcher is None:
        inst.launcher = Launcher(inst)
    adj_params = list(adj_inputs) + list(adj_outputs) if adjoint else None
    if adjoint and len(adj_params) != len(params):
        raise TypeError(
            f"kernel '{kernel.key}': an adjoint launch needs adj_inputs/adj_outputs matching its {len(params)} arguments, "
            f"got {len(adj_params)}"
        )
    args_struct = inst.launcher.pack(params, adj_params)
    tape = recording.active_tape()
    if tape is not None and record_tape and not adjoint:
        tape.record_launch(kernel, inst, dim, list(inputs), list(outputs), device)
    run(inst, bounds, args_struct, adjoint)


def _check_device(device):
    if device is None or device == "cpu":
        return
    from .device import get_device

    d = get_device(device)
    if not d.is_cpu:
        raise RuntimeError(f"device {d} is not supported on this machine")
