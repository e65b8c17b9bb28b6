"""``wp.Launch``: a prepared kernel launch that can be re-run and re-parameterised cheaply.

Contract: a ``Launch`` holds everything one launch needs, prepared once: the built kernel
instance, its native entry point (forward, or backward for an adjoint launch), the packed ctypes
argument struct, the launch context with the grid bounds in it, and the addresses of the two.
``launch()`` is one native call and an error check. ``set_param_*`` re-packs only the argument
it changes; ``set_dim`` rewrites the bounds in the kept context. The Python values are kept too,
so the arrays stay alive, and so that the launch can be re-prepared if the kernel is rebuilt
because a func or a captured global changed (never silently running stale code).

An adjoint launch (``adjoint=True``) runs the backward kernel, every time ``launch()`` is called:
its array arguments carry the adjoint arrays given with ``set_param_*(..., adjoint=True)``
(``None``: the array's own ``.grad``), and the gradients accumulate on each replay.
"""

from __future__ import annotations

import ctypes

from .. import config
from . import cpu_capture, recording
from . import launch as _launch
from . import module as _module

_CTYPES = (ctypes._SimpleCData, ctypes.Structure, ctypes.Union, ctypes.Array)


class Launch:
    """A kernel launch recorded with ``wp.launch(..., record_cmd=True)``; run it with ``launch()``.

    Built by hand, ``wp.Launch(kernel, device, adjoint=...)`` starts with a zero-size grid, null
    arrays and zero scalars: set them with ``set_dim`` and ``set_param_*`` before launching.

    Args:
        kernel: the ``@wp.kernel`` to launch.
        device: "cpu", a ``Device`` or None (the current device).
        hooks: accepted for Warp compatibility; ignored.
        params: the kernel's arguments in parameter order, followed (for an adjoint launch) by
            their adjoints. A leading ``launch_bounds_t`` (Warp's layout) is taken as ``bounds``.
        params_addr: accepted for Warp compatibility; ignored (CUDA only).
        bounds: a ``launch_bounds_t`` for the grid (default: zero threads).
        max_blocks, block_dim: the cap on thread blocks and threads per block on a GPU; unused on the CPU.
        adjoint: run the kernel's backward entry point instead of the forward one.

    Raises:
        TypeError: a generic kernel without arguments to infer its types from, or a bad argument.
        RuntimeError: ``adjoint=True`` for a kernel built without a backward pass.
    """

    def __init__(
        self,
        kernel,
        device=None,
        hooks=None,
        params=None,
        params_addr=None,
        bounds=None,
        max_blocks: int = 0,
        block_dim: int = 256,
        adjoint: bool = False,
    ):
        if getattr(kernel, "_weft_kind", None) != "kernel":
            raise TypeError(f"wp.Launch expects a @wp.kernel, got {kernel!r}")
        params = list(params or ())
        if params and isinstance(params[0], _launch.wt.launch_bounds_t):
            bounds = bounds or params[0]
            params = params[1:]
        n = len(kernel.arg_names)
        expected = (n, 2 * n) if adjoint else (n,)
        if params and len(params) not in expected:
            raise TypeError(
                f"wp.Launch of kernel '{kernel.key}' needs {' or '.join(map(str, expected))} params "
                f"(arguments{', then their adjoints' if adjoint else ''}), got {len(params)}"
            )
        values = params[:n] if params else [None] * n
        adj_values = (params[n:] or [None] * n) if adjoint else None
        if kernel.is_generic and not params:
            raise TypeError(
                f"kernel '{kernel.key}' is generic: build its Launch with wp.launch(..., record_cmd=True) "
                "or pass params, so that its argument types are known"
            )
        _launch._check_device(device)
        inst = _launch._instance_for(kernel, values)
        if bounds is None:
            bounds = _launch.wt.launch_bounds_t()
            bounds.ndim = max(inst.tid_ndim, 1)
        if not params:
            values = [_default_value(t) for t in inst.arg_types]
        self.max_blocks = max_blocks
        self.block_dim = block_dim
        self._setup(kernel, inst, device, bounds, values, adj_values, adjoint)
        self._raw = [isinstance(v, _CTYPES) for v in values]
        if adjoint:
            self._adj_raw = [isinstance(v, _CTYPES) for v in adj_values]
        self._bind(inst)

    @classmethod
    def _recorded(cls, kernel, inst, device, bounds, params, adj_params, adjoint):
        """The Launch ``wp.launch(..., record_cmd=True)`` returns (arguments already checked)."""
        self = cls.__new__(cls)
        self.max_blocks = 0
        self.block_dim = 256
        self._setup(kernel, inst, device, bounds, params, adj_params, adjoint)
        self._bind(inst)
        return self

    def _setup(self, kernel, inst, device, bounds, values, adj_values, adjoint):
        from .device import get_device

        self.kernel = kernel
        self.device = get_device(device)
        self.adjoint = bool(adjoint)
        self.fwd_args = list(values)
        self.adj_args = list(adj_values) if adjoint else None
        self._raw = [False] * len(values)  # per argument: given as a ctypes value (no conversion)?
        # struct instances are live, as in Warp: their fields are read again at each launch
        self._live_structs: set = set()
        self._adj_raw = [False] * len(values)
        self._ctx = _launch.launch_context_t()
        self._ctx_addr = ctypes.addressof(self._ctx)
        self._ordered = False  # whether the last CPU launch set ctx.ordered (deterministic mode)
        self.bounds = bounds

    def _bind(self, inst):
        """Prepare the native side for ``inst``: entry point, argument struct, packed arguments."""
        self._module_options = inst.kernel.module.options  # "deterministic" is read at each launch
        if self.device.is_cuda:
            from . import cuda, cuda_launch

            launcher = cuda_launch.device_launcher(inst)
            self._cuda = cuda
            self._entry = cuda.entry_function(inst, self.device, self.adjoint)
            self._library = inst.binding.cuda_functions[self.device.ordinal][0]  # keeps the module loaded
        else:
            launcher = _launch.prepare(inst)
            self._cuda = None
            self._library = inst.binding.library  # keeps the entry point's code loaded
            self._entry = _launch.entry_point(inst, self.adjoint)
        self._inst = inst
        self._launcher = launcher
        self._generation = inst.generation
        self._captures = bool(inst.global_captures)
        self._args = launcher.struct()
        self._args_addr = ctypes.addressof(self._args)
        for k in range(len(self.fwd_args)):
            self._pack(k)
        self._launch_fn = None if self._cuda is not None else _launch.launch_fn()

    def _pack(self, k):
        # An array's adjoint is recognised as raw by its type (array_t), so one flag suffices.
        adj = self.adj_args[k] if self.adjoint else None
        device = None if self.device.is_cpu else self.device
        self._launcher.set_arg(self._args, k, self.fwd_args[k], adj, self.adjoint, self._raw[k], device)
        if not self._raw[k] and getattr(self.fwd_args[k], "_struct", None) is not None:
            self._live_structs.add(k)
        else:
            self._live_structs.discard(k)

    # -- the grid ------------------------------------------------------------------------------

    @property
    def bounds(self):
        """The launch grid (a ``launch_bounds_t``); change it with ``set_dim``."""
        return self._ctx.bounds

    @bounds.setter
    def bounds(self, b):
        self._ctx.bounds = b
        self._size = b.size

    def set_dim(self, dim):
        """Set the launch dimensions (an int or a tuple of up to 4 ints).

        Raises:
            ValueError: ``dim`` is negative or has the wrong number of dimensions for the kernel.
        """
        b = _launch._make_bounds(dim)
        _launch.check_grid(self._inst, b, dim)
        self.bounds = b

    # -- parameters ----------------------------------------------------------------------------

    def _index(self, index: int) -> int:
        n = len(self.fwd_args)
        if not -n <= index < n:
            raise IndexError(f"kernel '{self.kernel.key}' has {n} parameters, got index {index}")
        return index % n

    def _set(self, index, value, adjoint, raw):
        k = self._index(index)
        if adjoint:
            if not self.adjoint:
                raise RuntimeError(
                    f"this Launch of kernel '{self.kernel.key}' runs the forward kernel: it has no adjoint parameters"
                )
            old, old_raw = self.adj_args[k], self._adj_raw[k]
            self.adj_args[k], self._adj_raw[k] = value, raw
        else:
            old, old_raw = self.fwd_args[k], self._raw[k]
            self.fwd_args[k], self._raw[k] = value, raw
        try:
            self._pack(k)
        except Exception:
            if adjoint:
                self.adj_args[k], self._adj_raw[k] = old, old_raw
            else:
                self.fwd_args[k], self._raw[k] = old, old_raw
            raise

    def set_param_at_index(self, index: int, value, adjoint: bool = False):
        """Set the kernel argument at ``index`` (or, with ``adjoint=True``, its adjoint).

        Raises:
            TypeError: ``value`` does not match the parameter's type.
        """
        self._set(index, value, adjoint, raw=False)

    def set_param_at_index_from_ctype(self, index: int, value, adjoint: bool = False):
        """Set the argument at ``index`` from a ctypes value (``array_t``, a struct's ctype, a
        ctypes scalar or a plain number), without type conversion."""
        self._set(index, value, adjoint, raw=True)

    def set_param_by_name(self, name: str, value, adjoint: bool = False):
        """Set the kernel argument called ``name`` (or its adjoint).

        Raises:
            ValueError: the kernel has no parameter ``name``.
        """
        self._set(self._name_index(name), value, adjoint, raw=False)

    def set_param_by_name_from_ctype(self, name: str, value, adjoint: bool = False):
        """Set the argument called ``name`` from a ctypes value, without type conversion."""
        self._set(self._name_index(name), value, adjoint, raw=True)

    def set_params(self, values):
        """Set the kernel arguments, in parameter order, from the first one."""
        for k, v in enumerate(values):
            self._set(k, v, False, raw=False)

    def set_params_from_ctypes(self, values):
        """Set the kernel arguments from ctypes values, without type conversion."""
        for k, v in enumerate(values):
            self._set(k, v, False, raw=True)

    def _name_index(self, name):
        try:
            return self.kernel.arg_names.index(name)
        except ValueError:
            raise ValueError(f"Argument '{name}' not found in kernel '{self.kernel.key}'") from None

    # -- running -------------------------------------------------------------------------------

    def launch(self, stream=None):
        """Run the launch: the adjoint kernel if it was made with ``adjoint=True``.

        Not recorded on an active ``wp.Tape`` (as in Warp). On a GPU it is queued on ``stream``
        (default: the device's current stream).

        Raises:
            IndexError: an array index was out of bounds while the kernel ran (debug mode; on a GPU
                reported at the next device synchronisation, see ``runtime/cuda.py``).
        """
        fm = recording.active_forward_mode()
        if fm is not None and not self.adjoint:  # wp.autograd.jvp/hvp: its tangent kernel runs
            if any(self._raw):
                raise NotImplementedError(
                    f"kernel '{self.kernel.key}': forward mode (wp.autograd.jvp) cannot run a wp.Launch given "
                    "ctypes values (set_param_*_from_ctype); set its parameters as values"
                )
            dim = tuple(int(self.bounds.shape[d]) for d in range(self.bounds.ndim))
            fm.launch(
                self.kernel, self.fwd_args, dim=dim, device=self.device, stream=stream,
                record_tape=False, max_blocks=self.max_blocks, block_dim=self.block_dim,
            )
            return
        if self._cuda is None and cpu_capture._active and cpu_capture.defer(self.device, self._run):
            return  # a CPU graph capture records the launch
        self._run(stream)

    def _run(self, stream=None):
        if self._generation != _module._generation[0] or self._captures:
            self._refresh()
        for k in self._live_structs:  # fields changed since the struct was set are seen
            self._pack(k)
        if self._cuda is not None:
            self._cuda.launch_kernel(
                self._inst, self.device, self._ctx.bounds, self._args, self.adjoint, stream, self.block_dim,
                self.max_blocks, self._entry,
            )
            return
        min_tasks, adaptive = _launch.pool_policy(self._inst)
        if self._ordered or self._module_options.get("deterministic"):
            threads, adaptive, self._ordered = _launch.cpu_launch_args(self._inst, self.adjoint, self._ctx, self._ordered)
        else:
            threads = config.cpu_threads
        if self._launch_fn(
            self._entry,
            self._ctx_addr,
            self._args_addr,
            self._size,
            threads,
            min_tasks,
            adaptive,
        ):
            ctx = self._ctx
            ctx.has_error = 0
            raise _launch.kernel_error(self._inst, ctx)

    def _refresh(self):
        """Re-prepare if the kernel was re-lowered since (a func or a captured global changed)."""
        inst = _launch.current_instance(self.kernel, self._inst.arg_types)
        if inst is not self._inst:
            self._bind(inst)
        self._generation = inst.generation

    def __repr__(self):
        kind = "adjoint " if self.adjoint else ""
        return f"<wp.Launch {kind}of kernel '{self.kernel.key}', dim={tuple(self.bounds.shape[: self.bounds.ndim])}>"


def _default_value(t):
    """The initial value of a parameter of a hand-built Launch: null arrays, zeros (a transform too)."""
    if _launch.wt.is_array_like(t):
        return None
    if getattr(t, "_kind", None) == "struct":
        return t()
    if getattr(t, "_kind", None):
        return t(*([0] * t._length_))
    if t is _launch.wt.bool:
        return False
    return 0.0 if _launch.wt.is_float(t) else 0
