"""``wp.launch``: bind arguments, run a kernel's native entry point over the grid, record on tapes.

Contract: argument conversion is prepared once per kernel instance (a ``Launcher`` with one
converter per parameter and a ctypes struct type mirroring the C++ argument struct); a launch
converts, packs and makes one call into the runtime. Bad arguments raise before any native call.
Runtime errors reported by the kernel (out-of-bounds indices) are raised as ``IndexError``.
"""

from __future__ import annotations

import ctypes
import threading
import typing

import numpy as np

from .. import config
from ..determinism import DeterministicMode
from .. import types as wt
from .. import vector_types as vt
from ..codegen import typing_rules as tr
from . import cpu_capture
from . import device as _device
from . import handles
from . import module as mod
from . import recording

_array_cls = []  # filled lazily to avoid importing array at module import


def _array_class():
    if not _array_cls:
        from ..array import array

        _array_cls.append(array)
    return _array_cls[0]


def _scalar_converter(t):
    if wt.is_bit_stored(t):
        return lambda v: t.to_bits(v.value if isinstance(v, wt.scalar_base) else v)
    if t is wt.bool:
        return lambda v: bool(v.value if isinstance(v, wt.scalar_base) else v)
    py = float if wt.is_float(t) else int

    def convert(v):
        if isinstance(v, wt.scalar_base):
            v = v.value
        return py(v)

    return convert


def _struct_converter(t, name, key):
    def convert(v):
        if getattr(v, "_struct", None) is not t:
            raise TypeError(f"kernel '{key}' argument '{name}' expects a {t.key} struct, got {type(v).__name__}")
        return v._ctype()

    return convert


class _DescriptorConverter:
    """Checks and converts a ``wp.indexedarray`` or Fabric array argument (None: an empty one,
    any access of which fails the bounds check). An indexed array's gradient is its data
    array's; Fabric arrays have none."""

    def __init__(self, t, name, key):
        self.t, self.name, self.key = t, name, key
        self.ctype = wt.DESCRIPTOR_CTYPES[type(t)]

    def __call__(self, value, k, device):
        if value is None:
            return self.ctype()
        kt = getattr(value, "kernel_type", None)
        kt = kt() if callable(kt) else None
        if type(kt) is not type(self.t) or not (
            kt == self.t or (self.t.dtype is typing.Any and kt.ndim == self.t.ndim)
        ):
            got = _array_desc(kt) if kt is not None else type(value).__name__
            raise ArrayArgumentError(
                f"kernel '{self.key}' argument '{self.name}' (position {k}) expects an array of type "
                f"{_array_desc(self.t)}, but passed value has type {got}"
            )
        expected = _device._cpu if device is None else device
        if value.device is not expected:
            raise RuntimeError(
                f"kernel '{self.key}' argument '{self.name}' (position {k}) is an {self.t._kind_name} on device "
                f"'{value.device}' but the kernel is launched on '{expected}'"
            )
        return value.__ctype__()


class CompositeArgumentError(TypeError, ValueError, RuntimeError):
    """A launch argument that cannot become the vector / matrix / quaternion / transform its
    parameter expects (a TypeError; also the RuntimeError / ValueError Warp raises for it)."""


def _composite_converter(t, name, key):
    def convert(v):
        if isinstance(v, t):
            return v
        if isinstance(v, (int, float, np.number, np.bool_, wt.scalar_base)):  # no silent fill, as in Warp
            raise CompositeArgumentError(
                f"kernel '{key}' argument '{name}' expects {t.__name__} but got a single value ({v!r}); "
                f"pass {t.__name__}(...) or a sequence of {t._length} values"
            )
        try:
            return t(*v)
        except (TypeError, ValueError):
            raise CompositeArgumentError(
                f"Failed to convert argument for param {name} to {t.__name__}: kernel '{key}' argument '{name}' "
                f"expects {t.__name__}, got {v!r}"
            ) from None

    return convert


class Launcher:
    """Per-instance argument packing: converters and the ctypes mirror of ``wp_args_<kernel>``.

    ``pack`` fills a fresh argument struct for one launch, taking a fast path for the common
    argument kinds (a ``wp.array`` of exactly the parameter's dtype and ndim, a Python value of the
    scalar's own type); everything else goes through ``set_arg``, which checks and converts one
    argument. ``wp.Launch`` uses ``set_arg`` to re-pack a single field of its kept struct.
    """

    def __init__(self, inst):
        self.inst = inst
        kernel = inst.kernel
        fields = []
        # one (name, is_array, info, exact) per parameter: info is the ArrayType for arrays, else
        # the value converter; exact is the Python type stored without conversion (or None).
        self.fields = []
        for name, t in zip(kernel.arg_names, inst.arg_types):
            if isinstance(t, wt.ArrayType):
                fields.append((name, wt.array_t))
                self.fields.append((name, True, t, None))
            elif wt.descriptor_ctype(t) is not None:  # an indexed or Fabric array
                fields.append((name, wt.descriptor_ctype(t)))
                self.fields.append((name, False, _DescriptorConverter(t, name, kernel.key), None))
            elif wt.is_scalar(t):
                fields.append((name, t.ctype))
                self.fields.append((name, False, _scalar_converter(t), _exact_python_type(t)))
            elif getattr(t, "_kind", None) == "struct":
                fields.append((name, t.ctype))
                self.fields.append((name, False, _struct_converter(t, name, kernel.key), None))
            elif getattr(t, "_kind", None):
                fields.append((name, t.ctype))
                self.fields.append((name, False, _composite_converter(t, name, kernel.key), None))
            else:
                raise TypeError(f"kernel '{kernel.key}' parameter '{name}' has unsupported type {t!r}")
        if not fields:
            fields = [("_unused", ctypes.c_int32)]
        self.struct = type(f"wp_args_{inst.symbol}", (ctypes.Structure,), {"_fields_": fields})
        self.names = list(kernel.arg_names)
        self.index = {name: k for k, name in enumerate(self.names)}
        self.tid_ndim = inst.tid_ndim
        # the wp.uint64 parameters: geometry ids are checked against their devices (handles.py)
        self.handle_fields = tuple(k for k, t in enumerate(inst.arg_types) if t is wt.uint64)
        self._cached: dict = {}  # device ordinal (-1: CPU) -> (keys, struct) of the last forward launch (see pack)

    def pack(self, params, adj_params=None, device=None):
        """The argument struct holding ``params`` (with ``adj_params`` as the arrays' adjoints),
        for a launch on ``device`` (None: the CPU; a CUDA device: every array must live there).

        A forward launch with the same arguments as the previous one on the same device (the same
        array descriptors, equal plain scalars) reuses its struct: kernels never write their
        argument struct (and ``cuLaunchKernel`` copies it), and an array's descriptor object is
        replaced whenever anything it holds changes (its gradient, its flags), so identity is a
        safe test. Only descriptors are kept, never the arrays.
        """
        if adj_params is not None:
            s = self.struct()
            for k, value in enumerate(params):
                self.set_arg(s, k, value, adj_params[k], adjoint=True, device=device)  # (checks geometry ids)
            return s
        arr_cls = _array_cls[0] if _array_cls else _array_class()
        ordinal = -1 if device is None else device.ordinal
        cached = self._cached.get(ordinal)  # one read: another Python thread may replace it meanwhile
        if cached is not None:
            for (_, is_array, info, exact), value, key in zip(self.fields, params, cached[0]):
                if is_array:
                    if value.__class__ is not arr_cls or value.__ctype__() is not key:
                        break
                elif value.__class__ is not exact or (value is not key and (value != key or not value)):
                    break  # (zeros only when identical: 0.0 == -0.0)
            else:
                return cached[1]
        s = self.struct()
        keys = []
        cacheable = True
        for k, ((name, is_array, info, exact), value) in enumerate(zip(self.fields, params)):
            if is_array:
                if (
                    value.__class__ is arr_cls
                    and value.dtype is info.dtype
                    and value.ndim == info.ndim
                    and value.device.ordinal == ordinal
                ):
                    ct = value.__ctype__()
                    setattr(s, name, ct)
                    keys.append(ct)
                    continue
            elif value.__class__ is exact:
                setattr(s, name, value)
                keys.append(value)
                continue
            self.set_arg(s, k, value, device=device)
            cacheable = False  # a converted value: not compared by the next launch
        if self.handle_fields:
            handles.check_all(self.inst.kernel.key, self.names, self.handle_fields, params, device)
        self._cached[ordinal] = (keys, s) if cacheable else None
        return s

    def set_arg(self, s, k, value, adj=None, adjoint=False, raw=False, device=None):
        """Check, convert and store argument ``k`` into struct ``s``.

        With ``raw``, a scalar, struct or composite ``value`` is a ctypes value (or a plain number)
        stored without conversion; an ``array_t`` is always taken raw. With ``adjoint``, ``adj`` is
        the array's adjoint (None: its own ``.grad``; an ``array_t``: taken raw); scalar adjoints
        are not part of the ABI and are ignored. Arrays must live on ``device`` (None: the CPU).
        """
        name, is_array, info, _ = self.fields[k]
        if isinstance(info, _DescriptorConverter):
            setattr(s, name, value if raw and isinstance(value, info.ctype) else info(value, k, device))
            return
        if not is_array:
            try:
                if raw:
                    setattr(s, name, value.value if isinstance(value, ctypes._SimpleCData) else value)
                else:
                    setattr(s, name, info(value))
                if k in self.handle_fields:  # (wp.Launch re-packs one field through here)
                    handles.check(self.inst.kernel.key, name, k, getattr(s, name), device)
            except CompositeArgumentError:
                raise
            except (TypeError, ValueError, OverflowError):
                raise TypeError(
                    f"kernel '{self.inst.kernel.key}' argument '{name}' (position {k}) expects "
                    f"{wt.type_repr(self.inst.arg_types[k])}, got {type(value).__name__} {value!r}"
                ) from None
            return
        if value is None:
            setattr(s, name, wt.array_t())  # a null array: any access fails the bounds check
            return
        if isinstance(value, wt.array_t):
            ct = value
        else:
            if not isinstance(value, _array_class()):
                coerced = _coerce_array(value, info)
                if coerced is None:
                    raise self.type_error(k, name, info, value)
                value = coerced
            if value.dtype is not info.dtype or value.ndim != info.ndim:
                kt = value.kernel_type()
                if kt != info and not (info.dtype is typing.Any and kt.ndim == info.ndim):
                    raise self.type_error(k, name, info, value)
            expected = _device._cpu if device is None else device
            if value.device is not expected or (isinstance(adj, _array_class()) and adj.device is not expected):
                where = value.device if value.device is not expected else adj.device
                raise RuntimeError(
                    f"kernel '{self.inst.kernel.key}' argument '{name}' (position {k}) is an array on device "
                    f"'{where}' but the kernel is launched on '{expected}'; copy it with a.to('{expected}')"
                )
            ct = value.__ctype__()
        if adjoint:
            ct = _with_grad(ct, value, adj, name, self.inst)
        setattr(s, name, ct)

    def type_error(self, k, name, expected, got):
        desc = _array_desc(got.kernel_type()) if hasattr(got, "kernel_type") else type(got).__name__
        return ArrayArgumentError(
            f"kernel '{self.inst.kernel.key}' argument '{name}' (position {k}) expects an array of type "
            f"{_array_desc(expected)}, but passed value has type {desc}"
        )


class ArrayArgumentError(TypeError, RuntimeError):
    """A launch argument that is not an array of the parameter's type (a TypeError; also the
    RuntimeError Warp raises for it)."""


def _array_desc(t) -> str:
    """``array(ndim=2, dtype=float32)``: an array type as Warp's launch errors write it."""
    if not wt.is_array_like(t):
        return repr(t)
    kind = "array" if isinstance(t, wt.ArrayType) else t._kind_name
    return f"{kind}(ndim={t.ndim}, dtype={wt.type_repr(t.dtype)})"


def _exact_python_type(t):
    """The Python type whose values a scalar field of type ``t`` stores without conversion."""
    if wt.is_bit_stored(t):
        return None  # stored as its bit pattern
    if t is wt.bool:
        return bool
    return float if wt.is_float(t) else int


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
    """A copy of an array's ctypes view whose ``grad`` is the adjoint array passed by the user
    (a ``wp.array``, or an ``array_t`` taken as is); None keeps the array's own gradient."""
    out = wt.array_t()
    ctypes.pointer(out)[0] = ct
    if isinstance(adj, wt.array_t):
        ptr = adj.data
    elif adj is not None and hasattr(adj, "ptr"):
        n = ct.ndim
        shape, strides = tuple(ct.shape[:n]), tuple(ct.strides[:n])
        if tuple(adj.shape) != shape or tuple(adj.strides) != strides:
            raise ValueError(
                f"kernel '{inst.kernel.key}': the adjoint array for '{name}' must have the shape and strides of the "
                f"array it belongs to ({shape}), got {adj.shape}"
            )
        ptr = adj.ptr or 0
    else:
        return out
    if ptr != ct.grad:
        # A separate adjoint array given to an explicit adjoint launch is the caller's input: the
        # backward kernel adds into the other adjoints from it but never clears it (as in Warp).
        out.flags |= wt.ARRAY_RETAIN_GRAD
    out.grad = ptr
    return out


_kernel_instances: dict = {}  # non-generic kernel -> its instance: no hashing of argument types per launch


def _instance_for(kernel, params):
    """The kernel instance for these arguments, re-lowered if a func or captured global changed."""
    inst = None if kernel.is_generic else _kernel_instances.get(kernel)
    if inst is None:
        inst = _lookup_instance(kernel, params)
        if not kernel.is_generic:
            _kernel_instances[kernel] = inst
    if inst.generation != mod._generation[0] or (inst.global_captures and kernel.globals_changed(inst)):
        inst = _refreshed(kernel, inst)
    return inst


def current_instance(kernel, arg_types):
    """The up-to-date instance of ``kernel`` for ``arg_types`` (``wp.Launch`` replays check this)."""
    inst = kernel.instance_for(arg_types)
    if inst.generation != mod._generation[0] or (inst.global_captures and kernel.globals_changed(inst)):
        inst = _refreshed(kernel, inst)
    return inst


def _refreshed(kernel, inst):
    inst = kernel.refresh(inst)
    if not kernel.is_generic:
        _kernel_instances[kernel] = inst
    return inst


def _lookup_instance(kernel, params):
    if not kernel.is_generic:
        inst = kernel._instances.get(kernel._arg_types_key)
        return inst if inst is not None else kernel.default_instance()
    types_ = []
    for name, t, v in zip(kernel.arg_names, kernel.arg_types, params):
        if not tr.is_generic(t):
            types_.append(t)
            continue
        if isinstance(t, tr.TileAnnotation):
            raise TypeError(
                f"kernel '{kernel.key}' parameter '{name}' is a {t!r}: tiles live inside kernels; pass an array "
                "and wp.tile_load() it"
            )
        if hasattr(v, "kernel_type"):
            concrete = v.kernel_type()
        elif isinstance(v, wt.scalar_base) or vt.is_composite(type(v)):
            concrete = type(v)
        elif getattr(v, "_struct", None) is not None:  # a @wp.struct instance
            concrete = v._struct
        elif isinstance(v, (bool, int, float)):
            concrete = wt.type_from_annotation(type(v))
        else:
            raise TypeError(f"kernel '{kernel.key}': cannot infer a type for argument '{name}' from {v!r}")
        if not tr.template_accepts(t, concrete):
            raise TypeError(
                f"kernel '{kernel.key}' argument '{name}' expects {wt.type_repr(t)}, got {wt.type_repr(concrete)} {v!r}"
            )
        types_.append(concrete)
    return kernel.instance_for(types_)


def prepare(inst) -> Launcher:
    """Build ``inst`` if needed and return its argument packer."""
    inst.kernel.module.ensure_built(inst)
    if inst.binding.launcher is None:
        inst.binding.launcher = Launcher(inst)
    return inst.binding.launcher


_bounds_cache: dict = {}


def make_bounds(dim) -> wt.launch_bounds_t:
    """The launch grid for ``dim`` (cached: launches reuse the same few grids)."""
    b = _bounds_cache.get(dim) if dim.__class__ is int else None
    if b is None:
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
        if n > 2**31 - 1:  # launch_bounds holds int32 dims; a wrapped one would void the bounds tests
            raise ValueError(f"each launch dimension must fit in an int32 (at most 2^31 - 1), got {dim!r}")
        b.shape[k] = n
        size *= n
    b.ndim = len(shape)
    b.size = size
    return b


def check_grid(inst, bounds, dim):
    # launch_tiled adds a trailing dimension (the thread in the block: 1 on the CPU), which a kernel
    # may leave out of wp.tid() as in Warp: `i, j = wp.tid()` for dim=(M, N) tiled
    trailing_ones = bounds.ndim > inst.tid_ndim and all(bounds.shape[k] == 1 for k in range(inst.tid_ndim, bounds.ndim))
    # on a GPU a tile kernel's last dimension may be the threads of its block (cuda.tile_lanes)
    block = inst.holds_tiles and bounds.ndim == inst.tid_ndim + 1
    if inst.tid_ndim > 1 and inst.tid_ndim != bounds.ndim and not trailing_ones and not block:
        raise ValueError(
            f"kernel '{inst.kernel.key}' unpacks wp.tid() into {inst.tid_ndim} indices but was launched with a "
            f"{bounds.ndim}-dimensional dim={dim!r}"
        )


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
        ("parts", ctypes.c_int32),
        ("ordered", ctypes.c_int32),
        ("turn", ctypes.c_int64),
    ]


_launch_fn: list = []


def launch_fn():
    """The runtime's launch function (bound once; see ``module.runtime_launch``)."""
    if not _launch_fn:
        _launch_fn.append(mod.runtime_launch())
    return _launch_fn[0]


def entry_point(inst, adjoint: bool) -> int:
    """The address of a built instance's forward or backward entry point; raise if there is none."""
    if not adjoint:
        if inst.binding.forward_ptr is None:
            inst.kernel.module.ensure_built(inst)
        return inst.binding.forward_ptr
    if inst.binding.backward_ptr is None and inst.binding.forward_ptr is None:
        inst.kernel.module.ensure_built(inst)
    if inst.binding.backward_ptr is None and inst.backward_enabled:
        inst.kernel.module.ensure_backward(inst)  # the backward library is built on first use
    if inst.binding.backward_ptr is None and inst.backward_error and inst.kernel.enable_backward:
        raise RuntimeError(f"kernel '{inst.kernel.key}' has no backward pass: {inst.backward_error}")
    if inst.binding.backward_ptr is None:
        raise RuntimeError(
            f"kernel '{inst.kernel.key}' was built with enable_backward=False, so it has no backward pass; "
            "enable it with @wp.kernel(enable_backward=True) or wp.set_module_options({'enable_backward': True})"
        )
    if inst.ir.adjoint_error:
        raise RuntimeError(inst.ir.adjoint_error)
    return inst.binding.backward_ptr


FREE, ORDERED, SERIAL = 0, 1, 2  # launch_order: how a pass's threads may run


def launch_order(inst, adjoint: bool) -> int:
    """How this pass of ``inst`` must run under its module's ``wp.DeterministicMode``: ``FREE``
    (nothing asks for determinism, or its bits do not depend on thread order), ``ORDERED``
    (``RUN_TO_RUN`` and everything order-dependent is an accumulation: all threads, with private
    copies summed in a fixed order or shares taking turns, native/accumulate.h) or ``SERIAL``
    (its tasks in order, as one thread runs them: the same bits for any thread count)."""
    mode = inst.kernel.module.options.get("deterministic")
    if not mode or inst.order_dependence[adjoint] is None:
        return FREE
    if mode == DeterministicMode.RUN_TO_RUN and inst.accumulations_only[adjoint]:
        return ORDERED
    return SERIAL


def in_task_order(inst, adjoint: bool) -> bool:
    """Whether a GPU launch of this pass must run its tasks in order (one GPU thread)."""
    return launch_order(inst, adjoint) != FREE


def cpu_launch_args(inst, adjoint: bool, ctx, was_ordered: bool = False) -> tuple:
    """``(threads, adaptive, ordered)`` for a CPU launch of this pass. Sets ``ctx.ordered`` and
    ``ctx.turn`` for an ordered launch, and clears them when ``was_ordered`` (a reused context)."""
    order = launch_order(inst, adjoint)
    if order == FREE:
        if was_ordered:
            ctx.ordered = 0
        return config.cpu_threads, config.cpu_adaptive, False
    ctx.ordered, ctx.turn = order == ORDERED, 0
    # a fixed split (no timing-based choice between one and all threads): the same bits every run
    return (1 if order == SERIAL else config.cpu_threads), False, order == ORDERED


def pool_policy(inst) -> tuple:
    """``(min tasks per worker, adaptive)`` for a CPU launch of ``inst``. A kernel holding tiles
    (``inst.holds_tiles``) runs a whole block's work per task, so a launch of a few tasks is worth
    the thread pool (small launches of ordinary kernels skip it: config.cpu_min_tasks_per_thread),
    and it skips the runtime's one-thread trials (config.cpu_adaptive), whose noisy first samples
    could keep such launches on one thread."""
    if inst.holds_tiles:
        return 1, False
    return config.cpu_min_tasks_per_thread, config.cpu_adaptive


def run(inst, bounds, args_struct, adjoint: bool):
    """Run a built instance's forward or backward entry point; raise on kernel errors."""
    ptr = inst.binding.backward_ptr if adjoint else inst.binding.forward_ptr
    if adjoint or ptr is None:
        ptr = entry_point(inst, adjoint)
    ctx = launch_context_t()
    ctx.bounds = bounds
    min_tasks, adaptive = pool_policy(inst)
    if inst.kernel.module.options.get("deterministic"):
        threads, adaptive, _ = cpu_launch_args(inst, adjoint, ctx)
    else:
        threads = config.cpu_threads
    if (_launch_fn[0] if _launch_fn else launch_fn())(
        ptr,
        ctypes.addressof(ctx),
        ctypes.addressof(args_struct),
        bounds.size,
        threads,
        min_tasks,
        adaptive,
    ):
        raise kernel_error(inst, ctx)


def kernel_error(inst, ctx):
    """The exception for the error a kernel recorded in its launch context: ``IndexError`` for an
    index out of bounds, ``AssertionError`` for a failed ``assert``, ``MemoryError``."""
    e = ctx.error
    if e.code == 3:
        return MemoryError(
            f"kernel '{inst.kernel.key}' ran out of memory for the checkpoints of a dynamic loop in its "
            f"backward pass (asked for {e.index[0]} bytes in one thread)"
        )
    if e.code == 4:
        return MemoryError(
            f"kernel '{inst.kernel.key}' ran out of memory for the per-thread copies of the arrays it "
            "accumulates into (set wp.config.cpu_threads = 1 to run it on one thread)"
        )
    file, line, text = inst.binding.module_locs[inst.binding.loc_base + e.loc]
    if e.code == 5:
        return AssertionError(f"assertion failed in kernel '{inst.kernel.key}' at {file}:{line}: {text}")
    if e.code == 6:
        return ValueError(f"slice step cannot be zero in kernel '{inst.kernel.key}' at {file}:{line}: {text}")
    if e.code == 2:
        return IndexError(
            f"component index {e.index[0]} is out of range for a vector/matrix/quaternion of size {e.shape[0]} "
            f"in kernel '{inst.kernel.key}' at {file}:{line}: {text}"
        )
    n = e.ndim
    idx = tuple(e.index[k] for k in range(n))
    shape = tuple(e.shape[k] for k in range(4) if e.shape[k] >= 0)
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
        device: "cpu", "cuda:N", a ``Device``, or None for the current device.
        stream: on a GPU, the ``wp.Stream`` to queue the launch on (default: the device's current one).
        adjoint: run the backward (adjoint) kernel instead of the forward one.
        record_tape: record the launch on the active ``wp.Tape``.
        record_cmd: return a ``wp.Launch`` holding the packed arguments, without running the
            kernel (nor recording it on a tape); ``cmd.launch()`` runs it, forward or adjoint.
        max_blocks, block_dim: on a GPU, the cap on thread blocks (0: hardware limit; kernels loop
            grid-stride) and the threads per block.

    Returns:
        None, or the ``wp.Launch`` with ``record_cmd=True``.

    Raises:
        TypeError: wrong number or types of arguments.
        IndexError: an array index was out of bounds while the kernel ran (debug mode).
    """
    if getattr(kernel, "_weft_kind", None) != "kernel":
        raise TypeError(f"wp.launch() expects a @wp.kernel, got {kernel!r}")
    if config.verify_fp and not record_cmd and not getattr(_fp_check, "active", False):
        _fp_check.active = True
        try:
            launch(
                kernel, dim, inputs, outputs, adj_inputs, adj_outputs, device, stream, adjoint, record_tape,
                record_cmd, max_blocks, block_dim,
            )
        finally:
            _fp_check.active = False
        _verify_finite(kernel, [*inputs, *outputs], "after")
        return None
    params = [*inputs, *outputs]
    if len(params) != len(kernel.arg_names):
        raise TypeError(
            f"kernel '{kernel.key}' takes {len(kernel.arg_names)} arguments ({', '.join(kernel.arg_names)}) "
            f"but {len(params)} were given"
        )
    fm = recording.active_forward_mode()
    if fm is not None and not adjoint and not record_cmd:  # wp.autograd.jvp/hvp: the tangent kernel runs
        return fm.launch(
            kernel, params, dim=dim, device=device, stream=stream, record_tape=record_tape,
            max_blocks=max_blocks, block_dim=block_dim,
        )
    adj_params = None
    if adjoint:
        adj_params = [*adj_inputs, *adj_outputs]
        if len(adj_params) != len(params):
            raise TypeError(
                f"kernel '{kernel.key}': an adjoint launch needs adj_inputs/adj_outputs matching its "
                f"{len(params)} arguments, got {len(adj_params)}"
            )
        relaid = None if record_cmd else _relaid_adjoints(params, adj_params, len(inputs))
        if relaid is not None:  # adjoint arrays laid out unlike their arrays: run on copies
            adj_params, copy_back = relaid
            result = launch(
                kernel, dim, inputs, outputs, adj_params[: len(inputs)], adj_params[len(inputs) :], device,
                stream, adjoint, record_tape, record_cmd, max_blocks, block_dim,
            )
            from ..array_constructors import copy

            for dst, src in copy_back:
                copy(dst, src)
            return result
    if (device is not None and device != "cpu") or _device._current.ordinal >= 0:
        target = _device.get_device(device)
        if target.ordinal >= 0:
            from . import cuda_launch

            return cuda_launch.launch(
                kernel,
                dim,
                params,
                inputs,
                outputs,
                adj_params,
                target,
                stream,
                adjoint,
                record_tape,
                record_cmd,
                max_blocks,
                block_dim,
            )
    inst = _instance_for(kernel, params)
    bounds = make_bounds(dim)
    launcher = inst.binding.launcher or prepare(inst)
    if launcher.tid_ndim > 1:
        check_grid(inst, bounds, dim)
    if record_cmd or (cpu_capture._active and cpu_capture.is_capturing(_device.get_device("cpu"))):
        from .launch_object import Launch

        cmd = Launch._recorded(kernel, inst, device, bounds, params, adj_params, adjoint)
        if record_cmd:
            return cmd
        if not adjoint and record_tape and recording.active_tape() is not None:
            recording.active_tape().record_launch(kernel, inst, dim, list(inputs), list(outputs), device)
        cmd.launch()  # recorded by the CPU graph capture, run by wp.capture_launch
        return None
    args_struct = launcher.pack(params, adj_params)
    if not adjoint and record_tape:
        tape = recording.active_tape()
        if tape is not None:
            tape.record_launch(kernel, inst, dim, list(inputs), list(outputs), device)
    run(inst, bounds, args_struct, adjoint)


_fp_check = threading.local()  # .active: inside a launch wp.config.verify_fp is checking


def _verify_finite(kernel, params, when: str):
    """``wp.config.verify_fp``: after a launch, the float values of its arguments (scalars,
    arrays of floats, vectors or matrices) must be finite (an output may hold anything before).

    Raises:
        FloatingPointError: naming the kernel, the argument, the first bad value and its index.
    """
    for name, v in zip(kernel.arg_names, params):
        if hasattr(v, "numpy") and hasattr(v, "dtype") and not getattr(v, "is_annotation", True):
            scalar = getattr(v.dtype, "_scalar", v.dtype)
            if not (wt.is_scalar(scalar) and wt.is_float(scalar)):
                continue
            values = np.asarray(v.numpy(), dtype=np.float64)
        elif isinstance(v, (float, np.floating)) or (isinstance(v, wt.scalar_base) and wt.is_float(type(v))):
            values = np.asarray([float(v)])
        else:
            continue
        bad = ~np.isfinite(values)
        if bad.any():
            where = tuple(int(i) for i in np.argwhere(bad)[0])
            raise FloatingPointError(
                f"kernel '{kernel.key}': argument '{name}' holds a non-finite value ({values[where]} at index "
                f"{where}) {when} the launch (wp.config.verify_fp)"
            )


def _relaid_adjoints(params, adj_params, n_inputs):
    """For an adjoint launch whose adjoint arrays have their array's shape but other strides (a
    gradient from another library, ``grad_out[::2]``): ``(adjoint params, copy-backs)`` using
    copies laid out like each array — the inputs' adjoints are copied back after the launch, the
    outputs' are only read (their originals are left as they were) — else None."""
    out, copy_back = list(adj_params), []
    for k, (p, adj) in enumerate(zip(params, adj_params)):
        if not (hasattr(p, "strides") and hasattr(adj, "strides") and hasattr(adj, "ptr")):
            continue
        if tuple(p.shape) != tuple(adj.shape) or tuple(p.strides) == tuple(adj.strides) or p.dtype != adj.dtype:
            continue
        from ..array_constructors import copy, empty

        tmp = empty(p.shape, dtype=p.dtype, device=adj.device, strides=p.strides)
        copy(tmp, adj)
        out[k] = tmp
        if k < n_inputs:
            copy_back.append((adj, tmp))
    return (out, copy_back) if copy_back or out != list(adj_params) else None


def _check_device(device):
    """Resolve a device argument (raising for an unknown or unavailable device)."""
    if device is None or device == "cpu":
        return
    _device.get_device(device)
