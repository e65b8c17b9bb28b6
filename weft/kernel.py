"""User-facing compiled objects: ``@wp.kernel`` -> ``Kernel``, ``@wp.func`` -> ``Function``.

Contract: a ``Kernel`` owns one ``KernelInstance`` per distinct argument-type signature (one
for non-generic kernels); a ``Function`` owns one ``FuncInstance`` per call-site signature.
Instances hold the lowered IR and a stable C++ symbol; the module (runtime/module.py) turns
instances into native code. Nothing here renders C++.
"""

from __future__ import annotations

import ast
import copy
import hashlib
import inspect
import typing

import numpy as np

from . import types as wt
from .codegen import adjoint as ad
from .codegen import frontend, ir, ordering, pipeline
from .codegen import intrinsics as intr
from .codegen import typing_rules as tr
from .codegen.access import array_access
from .codegen.errors import WarpCodegenError
from .codegen.source import Source, snapshot
from .codegen.statics import Static
from .codegen.tangent import TANGENT_SUFFIX
from .codegen.tile_cuda import TileOverload
from .native_func import native_instance
from .reference import is_reference
from .runtime import module as mod
from .runtime.binding import Binding


def _signature(pyfunc) -> inspect.Signature:
    """The signature with string annotations (``from __future__ import annotations``, or written
    as strings) evaluated in the function's globals and closure (``"wp.array(dtype=dtype)"`` in
    a kernel factory)."""
    closure = {}
    for name, cell in zip(pyfunc.__code__.co_freevars, pyfunc.__closure__ or ()):
        try:
            closure[name] = cell.cell_contents
        except ValueError:  # an empty cell
            pass
    try:
        return inspect.signature(pyfunc, eval_str=True, locals=closure)
    except Exception:
        return inspect.signature(pyfunc)


def _short_hash(*parts) -> str:
    return hashlib.sha256(repr(parts).encode()).hexdigest()[:7]


def _c_ident(name: str) -> str:
    return "".join(ch if ch.isalnum() else "_" for ch in name)


def _tile_references(src, names, arg_types, refs) -> list:
    """Tile (and tile stack) parameters the func updates in place: Warp passes tiles by reference,
    so the caller sees the change; weft makes them ``wp.ref`` parameters (copied back after the
    call)."""
    from .codegen.ast_scans import rebound_names

    from .tile.ops_data import TileStackType

    tiles = [n for n, t in zip(names, arg_types) if isinstance(t, (wt.TileType, TileStackType)) and n not in refs]
    if not tiles:
        return []

    def resolve(node):
        chain = []
        while isinstance(node, ast.Attribute):
            chain.append(node.attr)
            node = node.value
        if not isinstance(node, ast.Name):
            return None
        obj = src.globals.get(node.id, src.closure.get(node.id))
        for attr in reversed(chain):
            obj = getattr(obj, attr, None)
        return obj

    rebound = rebound_names(src.tree.body, resolve)
    return [n for n in tiles if n in rebound]


def _value_ret_type(ret_type, n_refs):
    """What a call of the func gives its caller: its IR result, less the ``n_refs`` final values
    of reference parameters that follow the result in a func with ``wp.ref[T]`` parameters."""
    if not n_refs:
        return ret_type
    extra = len(ret_type.types) - n_refs
    return ret_type.types[0] if extra else None


def _default_argument(value, make_const):
    """A parameter's default as an argument: a function (for ``wp.Function``) or a constant."""
    if tr.is_function_target(value):
        return Static(value)
    return make_const(value, wt.type_from_annotation(type(value)))


def _describe(arg) -> str:
    return f"the function {arg.value!r}" if isinstance(arg, Static) else wt.type_repr(arg.type)


def _ref_flags(pyfunc) -> tuple:
    return tuple(is_reference(p.annotation) for p in _signature(pyfunc).parameters.values())


def _captures_changed(captures) -> bool:
    """Whether a global or closure value baked in as a constant (or a func alias) now has another value."""
    for d, name, value in captures:
        cur = d.get(name, _MISSING)
        if cur is not value and not (type(cur) is type(value) and cur == value):
            return True
    return False


class FuncInstance(ir.FuncCallee):
    """A func specialised for concrete argument types (what a call of the func names in the IR)."""

    def __init__(self, function, overload_index, pyfunc, arg_types):
        self.function = function
        self.arg_types = tuple(arg_types)
        self.generation = mod.generation()
        self.pyfunc = pyfunc  # the overload this instance specialises
        self.symbol = f"{_c_ident(pyfunc.__name__)}_{_short_hash(function.module.name, pyfunc.__qualname__, function.key, function.index, overload_index, self.arg_types, function.native)}"
        if function.native is not None:
            native_instance(self, function, pyfunc, arg_types)
            return
        if (function.grad_for(pyfunc) or function.custom_replay) and any(
            isinstance(t, tr.FunctionValue) for t in arg_types
        ):
            raise TypeError(
                f"func '{function.key}': funcs with wp.Function parameters cannot have custom gradients or replay "
                "functions (@wp.func_grad / @wp.func_replay)"
            )
        src = Source(pyfunc)
        sig = _signature(pyfunc)
        names = list(sig.parameters)
        ret_ann = sig.return_annotation
        ret_ann = None if ret_ann is inspect.Signature.empty else ret_ann
        refs = [n for n, p in sig.parameters.items() if is_reference(p.annotation)]
        refs += _tile_references(src, names, arg_types, refs)
        self.ref_params = tuple(names.index(n) for n in refs)
        self.compiled = pipeline.compile_function(
            src, dict(zip(names, arg_types)), False, self.symbol, ret_ann, ref_params=refs
        )
        self.ir = self.compiled.ir
        self.ret_type = self.ir.ret_type
        self.value_ret_type = _value_ret_type(self.ret_type, len(refs))
        self.has_side_effects = self.ir.has_side_effects
        self.differentiable = ad.is_differentiable_function(self.ir, self.compiled.reverse)
        self.source = src.text
        self._param_names = names
        self.grad_ir = self.replay_ir = None  # lower_customs() sets them once this instance is known
        self.backward_error = self.compiled.reverse_error
        # Calls replayed by a backward pass use <symbol>_replay when this is set.
        self.has_replay_variant = self.has_side_effects

    def lower_customs(self):
        """Lower the ``@wp.func_grad`` / ``@wp.func_replay`` bodies. Done after the instance is
        registered, so that they may call the func itself (a gradient written with the forward:
        ``wp.adjoint[x] += adj * f(x) * (1.0 - f(x))``)."""
        function = self.function
        if getattr(function, "native", None) is not None:
            return
        grad_fn = function.grad_for(self.pyfunc)
        if grad_fn:
            self.grad_ir = self._lower_custom_grad(grad_fn, self._param_names)
            self.differentiable = True
            self.backward_error = None  # the custom gradient replaces the func's own adjoint
        if function.custom_replay:
            self.replay_ir = self._lower_custom_replay(function.custom_replay)
            self.has_replay_variant = True

    def _lower_custom_grad(self, grad_fn, names):
        """Lower a ``@wp.func_grad`` body: the forward's parameters, then the adjoint of the
        result; ``wp.adjoint[x]`` names the adjoint of forward parameter ``x``."""
        gnames = list(_signature(grad_fn).parameters)
        n = len(names)
        if isinstance(self.ret_type, wt.TupleType) and self.ref_params:
            raise TypeError(f"@wp.func_grad of a func with wp.ref parameters is not supported; '{self.function.key}' has them")
        if self.ret_type is None:  # a func that writes arrays: its gradient takes the forward parameters only
            rets = ()
        else:
            rets = tuple(self.ret_type.types) if isinstance(self.ret_type, wt.TupleType) else (self.ret_type,)
        if len(gnames) != n + len(rets) or gnames[:n] != names:
            what = "one parameter for the adjoint of the result" if len(rets) == 1 else (
                f"{len(rets)} parameters for the adjoints of its {len(rets)} results" if rets else "nothing (it returns nothing)"
            )
            raise TypeError(
                f"@wp.func_grad({self.function.key}) must take the forward parameters ({', '.join(names)}) followed by "
                f"{what}, got ({', '.join(gnames)})"
            )
        types_ = dict(zip(gnames, self.arg_types + rets))
        ir_, _ = frontend.lower_function(
            Source(grad_fn), types_, False, f"adj_{self.symbol}", adjoint_targets={nm: k for k, nm in enumerate(names)}
        )
        return ir_

    def _lower_custom_replay(self, replay_fn):
        names = list(_signature(replay_fn).parameters)
        ir_, _ = frontend.lower_function(
            Source(replay_fn), dict(zip(names, self.arg_types)), False, f"{self.symbol}_replay"
        )
        if ir_.ret_type != self.ret_type:
            raise TypeError(f"@wp.func_replay({self.function.key}) must return what the func returns")
        return ir_

    def __repr__(self):
        return f"<FuncInstance {self.symbol}>"

    def is_stale(self) -> bool:
        """Lowered before the latest (re)definition of a func, or a constant it baked in changed
        since: its callers lower it again."""
        if self.generation != mod.generation():
            return True
        ir_ = getattr(self, "ir", None)
        return bool(ir_ is not None and ir_.global_captures and _captures_changed(ir_.global_captures))


class Function:
    """A ``@wp.func``: callable from kernels and other funcs, overloaded by argument types."""

    _weft_kind = "func"

    def __init__(self, pyfunc, module, native=None, key=None):
        self.key = key or pyfunc.__qualname__
        self.__name__ = pyfunc.__name__
        self.__qualname__ = pyfunc.__qualname__
        self.__doc__ = pyfunc.__doc__
        self.__module__ = pyfunc.__module__
        self.module = module
        self.overloads: list = []
        self._instances: dict = {}
        self._in_progress: set = set()
        self.custom_grad = None  # set by @wp.func_grad: every overload's, unless it has its own
        self.custom_grads: dict = {}  # overload annotations -> its @wp.func_grad
        self.custom_replay = None  # set by @wp.func_replay
        self.native = native  # ir.NativeSnippets of a @wp.func_native, else None
        self.index = module.add_func(self)
        self.add_overload(pyfunc)

    @property
    def func(self):
        """The Python function of the latest definition (as Warp's ``Function.func``)."""
        return self.__wrapped__

    def add_overload(self, pyfunc):
        snapshot(pyfunc)
        self.__wrapped__ = pyfunc  # inspect.signature(func) shows the latest definition, as in Warp
        sig = self._annotations(pyfunc)
        for k, existing in enumerate(self.overloads):
            if self._annotations(existing) == sig and _ref_flags(existing) != _ref_flags(pyfunc):
                raise RuntimeError(
                    f"func '{self.key}': overloads cannot differ only in which parameters are wp.ref[T]; "
                    "rename one of them"
                )
            if self._annotations(existing) == sig:
                self.overloads[k] = pyfunc  # redefinition replaces
                self._instances.clear()
                mod.definitions_changed()
                return
        self.overloads.append(pyfunc)
        self._instances.clear()
        mod.definitions_changed()

    def grad_for(self, pyfunc):
        """The ``@wp.func_grad`` of the overload ``pyfunc``: its own, else the func's (None if none)."""
        return self.custom_grads.get(self._annotations(pyfunc), self.custom_grad)

    def set_grad(self, grad_fn):
        """Attach a ``@wp.func_grad``: to the one overload whose parameter annotations open the
        gradient's parameter list (an overloaded func gets one gradient per overload, as in Warp),
        else to every overload."""
        try:
            gann = self._annotations(grad_fn)
        except TypeError:
            gann = None
        matches = []
        if gann is not None and len(self.overloads) > 1:
            for f in self.overloads:
                fann = self._annotations(f)
                if gann[: len(fann)] == fann:
                    matches.append(fann)
        if len(matches) == 1:
            self.custom_grads[matches[0]] = grad_fn
        else:
            self.custom_grad = grad_fn
        self._instances.clear()
        mod.definitions_changed()

    @staticmethod
    def _annotations(pyfunc):
        params = _signature(pyfunc).parameters.values()
        try:
            return tuple(
                tr.annotation_type(p.annotation) if p.annotation is not inspect.Parameter.empty else typing.Any
                for p in params
            )
        except TypeError as e:
            where = f"{pyfunc.__code__.co_filename}:{pyfunc.__code__.co_firstlineno}"
            raise type(e)(f"func '{pyfunc.__qualname__}' ({where}): {e}") from None

    def reference_param_names(self) -> dict:
        """``{name: position}`` of the ``wp.ref[T]`` parameters of any overload."""
        out = {}
        for f in self.overloads:
            for k, (name, p) in enumerate(_signature(f).parameters.items()):
                if is_reference(p.annotation):
                    out[name] = k
        return out

    def param_names(self) -> list:
        return list(_signature(self.overloads[0]).parameters)

    def param_defaults(self) -> dict:
        params = _signature(self.overloads[0]).parameters.values()
        return {p.name: p.default for p in params if p.default is not inspect.Parameter.empty}

    def specialize(self, args, make_const):
        """Pick the overload for ``args`` (IR vars) and return ``(FuncInstance, adapted args)``.

        As in Warp, an overload with concrete annotations that the argument types match exactly
        wins, then a generic one (``Any``, ``wp.Float`` ...), whatever the definition order; last,
        weft lets an untyped literal take a concrete parameter's type (``f(1)`` for ``x: float``).
        """
        errors = []
        overloads = list(enumerate(self.overloads))
        generic = {k for k, f in overloads if any(tr.is_generic(t) for t in self._annotations(f))}
        phases = (
            [(k, f, False) for k, f in overloads if k not in generic]
            + [(k, f, True) for k, f in overloads if k in generic]
            + [(k, f, True) for k, f in overloads if k not in generic]
        )
        for k, pyfunc, literals in phases:
            params = list(_signature(pyfunc).parameters.values())
            args_k = list(args)
            if len(args_k) < len(params):
                for p in params[len(args_k) :]:
                    if p.default is inspect.Parameter.empty:
                        break
                    args_k.append(_default_argument(p.default, make_const))
            if len(args_k) != len(params):
                errors.append(f"{len(params)} parameters, got {len(args)} arguments")
                continue
            types_ = []
            for p, a in zip(params, args_k):
                ann = tr.annotation_type(p.annotation) if p.annotation is not inspect.Parameter.empty else typing.Any
                t = tr.param_accepts(ann, a)
                if t is None or (not literals and not isinstance(a, Static) and t != a.type):
                    if literals:
                        errors.append(f"parameter '{p.name}' expects {wt.type_repr(ann)}, got {_describe(a)}")
                    break
                types_.append(t)
            else:
                args_k = [
                    a if isinstance(a, Static) or a.type == t else make_const(tr.convert_literal(a.const, t), t)
                    for a, t in zip(args_k, types_)
                ]
                return self.instance(k, pyfunc, tuple(types_)), args_k
        raise TypeError(
            f"no overload of func '{self.key}' matches these arguments: " + "; ".join(dict.fromkeys(errors))
        )

    def instance(self, k, pyfunc, types_) -> FuncInstance:
        key = (k, types_)
        inst = self._instances.get(key)
        if inst is not None and inst.is_stale():
            inst = None  # lowered before a func was (re)defined or a constant it baked in changed
        if inst is None:
            if key in self._in_progress:
                raise TypeError(f"func '{self.key}' calls itself; recursion is not supported in kernels")
            self._in_progress.add(key)
            try:
                inst = FuncInstance(self, k, pyfunc, types_)
            finally:
                self._in_progress.discard(key)
            self._instances[key] = inst
            try:
                inst.lower_customs()
            except BaseException:
                self._instances.pop(key, None)
                raise
        return inst

    def __call__(self, *args, **kwargs):
        """Called from Python, a func runs the Python body of the overload its arguments fit
        (an exact type match first; a Python int fits float parameters too).

        Raises:
            RuntimeError: several overloads and none fits the arguments.
        """
        if len(self.overloads) == 1:
            return self.overloads[0](*args, **kwargs)
        best, best_score = None, 0
        for pyfunc in self.overloads:
            try:
                bound = _signature(pyfunc).bind(*args, **kwargs)
            except TypeError:
                continue
            bound.apply_defaults()
            scores = [_host_fit(ann, v) for ann, v in zip(self._annotations(pyfunc), bound.arguments.values())]
            if all(scores) and sum(scores) > best_score:
                best, best_score = pyfunc, sum(scores)
        if best is None:
            raise RuntimeError(f"Error calling function '{self.key}', no overload found for arguments {args}")
        return best(*args, **kwargs)

    def __repr__(self):
        return f"<weft func {self.key}>"


def _host_fit(ann, value) -> int:
    """How well a Python value fits a parameter type when a func is called from Python: 2 an
    exact match, 1 a value the type can take (an int for a float, anything for ``Any``), 0 not."""
    if ann is typing.Any or tr.is_generic(ann):
        return 1
    if isinstance(ann, wt.ArrayType):
        return 2 if getattr(value, "dtype", None) == ann.dtype and getattr(value, "ndim", None) == ann.ndim else 0
    if wt.is_scalar(ann):
        if type(value) is ann:
            return 2
        if isinstance(value, bool):
            return 2 if ann is wt.bool else 0
        if isinstance(value, (int, np.integer)):
            return 2 if wt.is_int(ann) else 1 if wt.is_float(ann) else 0
        if isinstance(value, (float, np.floating)):
            return 2 if ann is wt.float32 else 1 if wt.is_float(ann) else 0
        return 0
    if type(value) is ann:
        return 2
    return 1 if isinstance(value, ann if isinstance(ann, type) else ()) else 0


class KernelInstance:
    """A kernel specialised for concrete parameter types: its compiled program (``compiled``:
    IR, access facts, adjoint program) and the runtime's ``binding`` to native code.

    An instance loaded from the kernel cache by its fast key (``loaded``: the entry's record, see
    runtime/cache_key.py) starts with only what a launch needs (``tid_ndim``, ``holds_tiles``,
    ``backward_enabled`` ...) and its binding set; it is lowered when something first asks for
    its IR (a backward build, the tape's access facts), through ``__getattr__``.
    """

    def __init__(self, kernel, arg_types, loaded=None):
        self.kernel = kernel
        self.arg_types = tuple(arg_types)
        self.symbol = f"{_c_ident(kernel.pyfunc.__name__)}_{_short_hash(kernel.module.name, kernel.key, kernel.index, self.arg_types)}"
        self.binding = Binding()  # the runtime's: native code, entry points, launcher (runtime/binding.py)
        self._access = None
        self._order = None
        self._accumulations = None
        if loaded is None:
            self._lower()
            return
        record, captures = loaded
        self._deferred = True
        self._tid_ndim = record["tid_ndim"]
        self.holds_tiles = record["holds_tiles"]
        self.spreads_tiles = record["spreads_tiles"]
        self.backward_enabled = record["backward_enabled"]
        self.backward_error = record["backward_error"]
        self.generation = mod.generation()
        self.global_captures = captures

    def _lower(self):
        kernel, arg_types = self.kernel, self.arg_types
        src = Source(kernel.pyfunc)
        primal = getattr(kernel, "tangent_of", None)
        if primal is None:
            self.compiled = pipeline.compile_function(src, dict(zip(kernel.arg_names, arg_types)), True, self.symbol)
        else:  # a tangent kernel (tangent_kernel): lowered with the primal's parameters, then transformed
            n = len(primal.arg_names)
            self.compiled = pipeline.compile_tangent(src, dict(zip(kernel.arg_names[:n], arg_types[:n])), self.symbol)
        self.ir = self.compiled.ir
        self._tid_ndim = self.ir.tid_ndim
        self.facts = self.compiled.facts
        self.funcs = _func_closure(self.ir)
        # a kernel holding tiles: each of its threads is a whole block's work (runtime/launch.py)
        bodies = [self.ir] + [f.ir for f in self.funcs if getattr(f, "ir", None) is not None]
        self.holds_tiles = any(isinstance(v.type, wt.TileType) for fn in bodies for v in fn.vars)
        # on CUDA its tiles may be spread over a block's threads (native/tile/tile_cuda.h, runtime/cuda.py
        # tile_lanes): every thread then runs its other code, so that code must be the same in all
        # of them and touch no memory
        self.spreads_tiles = self.holds_tiles and not any(_thread_bound(fn) for fn in bodies)
        # why no backward pass can be built (a construct without an adjoint, here or in a func)
        self.backward_error = self.compiled.reverse_error or next(
            (f.backward_error for f in self.funcs if getattr(f, "backward_error", None)), None
        )
        self.backward_enabled = kernel.enable_backward and self.backward_error is None
        if self.backward_enabled:
            _check_native_references(kernel, self.funcs)
        self.generation = mod.generation()
        self.global_captures = [c for f in [self.ir] + [f.ir for f in self.funcs] for c in f.global_captures]
        # the module's options are part of what was built (mode, optimisation, backward)
        options = repr(sorted((k, repr(v)) for k, v in kernel.module.options.items() if k not in mod.LAUNCH_OPTIONS))
        self.fingerprint = "\n".join([str(self.ir)] + [str(f.ir) for f in self.funcs] + [options])

    @property
    def deferred(self) -> bool:
        """Loaded from the cache by its fast key and not lowered yet (see the class doc)."""
        return self.__dict__.get("_deferred", False)

    def __getattr__(self, name):
        # only reached for attributes not set: those of the lowering, on a deferred instance
        if name in _LOWERED and self.__dict__.get("_deferred"):
            self._lower_deferred()
            return getattr(self, name)
        raise AttributeError(f"'KernelInstance' object has no attribute '{name}'")

    def _lower_deferred(self):
        """Lower a deferred instance now. What the launch used is kept (the loaded library was
        built from code with these facts); a lowering that disagrees with them is an error, not a
        silent mix (runtime/module.py also compares the rendered code before a backward build)."""
        kept = (self._tid_ndim, self.holds_tiles, self.backward_enabled, self.generation, self.global_captures)
        del self._deferred
        self._lower()
        if (self._tid_ndim, self.holds_tiles, self.backward_enabled) != kept[:3]:
            raise RuntimeError(
                f"kernel '{self.kernel.key}': its code loaded from the kernel cache does not match what it compiles to now; "
                "clear the kernel cache (wp.clear_kernel_cache())"
            )
        self.generation, self.global_captures = kept[3], kept[4]

    @property
    def tid_ndim(self) -> int:
        return self._tid_ndim

    @property
    def access(self) -> dict:
        """``{param path: {"read", "write"}}`` (see codegen/access.py)."""
        if self._access is None:
            self._access = array_access(self.ir)
        return self._access

    @property
    def order_dependence(self) -> tuple:
        """``(forward, backward)``: why each pass's bits may depend on the order its threads run
        in, or None (codegen/ordering.py); deterministic launches run such passes in task order."""
        if self._order is None:
            self._order = ordering.order_dependence(self)
        return self._order

    @property
    def accumulations_only(self) -> tuple:
        """``(forward, backward)``: whether all that is order-dependent in each pass is an
        accumulation (codegen/ordering.py), which the CPU runtime makes reproducible on all threads."""
        if self._accumulations is None:
            self._accumulations = ordering.accumulations_only(self)
        return self._accumulations


# what KernelInstance._lower sets that a deferred instance lacks until it is lowered
_LOWERED = frozenset({"compiled", "ir", "facts", "funcs", "fingerprint"})


def _check_native_references(kernel, funcs):
    """A native snippet writing through a ``wp.ref[T]`` parameter with no ``adj_snippet`` would
    cut the gradient of what it writes: refused in kernels with a backward pass, as in Warp."""
    for f in funcs:
        if f.native is not None and f.ref_params and f.native.adjoint is None:
            raise WarpCodegenError(
                f"Cannot call '{f.function.key}' with wp.ref[T] parameters from kernel '{kernel.key}', whose "
                "backward pass is enabled: the snippet has no adj_snippet, so the gradient of what it writes "
                "would be lost. Give it an adj_snippet, or declare the kernel with enable_backward=False",
                kernel.key,
                *_definition_site(kernel.pyfunc),
            )


def _definition_site(pyfunc) -> tuple:
    """``(file, line, col, line text)`` of a function's definition, for error messages."""
    code = pyfunc.__code__
    try:
        text = inspect.getsourcelines(pyfunc)[0][0]
    except (OSError, TypeError):
        text = ""
    return code.co_filename, code.co_firstlineno, 0, text


_MEMORY_INTRINSICS = frozenset(
    [intr.LOAD, intr.STORE, intr.ATOMIC_CAS, intr.ADDRESS_OF_ELEMENT, intr.PRINT_VALUE, intr.PRINT_STR,
     intr.PRINT_NEWLINE, intr.PRINTF, *intr.ATOMICS.values()]
)


def _thread_bound(fn) -> bool:
    """Whether ``fn`` does something each thread of a block would do again if its tiles were
    spread over them: reads values that differ between the threads, or outside tile operations
    reads or writes array elements, prints, or calls a builtin with side effects."""
    if fn.thread_values:
        return True
    for s in ir.walk(fn.body):
        c = getattr(s, "callee", None)
        if c is None or isinstance(c, TileOverload):
            continue
        if ir.is_intrinsic(c) and c in _MEMORY_INTRINSICS:
            return True
        if ir.is_builtin(c) and getattr(c, "side_effect", False):
            return True
    return False


def _func_closure(fn_ir) -> list:
    """FuncInstances called transitively, callees before callers."""
    order, seen = [], set()

    def visit(inst):
        if id(inst) in seen:
            return
        seen.add(id(inst))
        for ir_ in (inst.ir, inst.grad_ir, inst.replay_ir):
            for c in ir_.callees if ir_ is not None else ():
                visit(c)
        order.append(inst)

    for c in fn_ir.callees:
        visit(c)
    return order


class Kernel:
    """A ``@wp.kernel``: launched with ``wp.launch`` over a grid of threads."""

    _weft_kind = "kernel"

    def __init__(self, func, key=None, module=None, options=None, code_transformers=None, source=None):
        """A kernel of the Python function ``func`` (``@wp.kernel`` makes one; Warp's signature).

        Args:
            func: the kernel's Python function (its source is read with ``inspect``).
            key: its name in messages and generated symbols (default: the function's qualname).
            module: a weft module, a module name, ``"unique"`` (a module of its own), or None for
                the function's Python module.
            options: per-kernel options; ``enable_backward`` is the one weft reads.

        Raises:
            NotImplementedError: ``code_transformers`` or ``source`` (Warp's AST and source
                overrides) were given.
        """
        if code_transformers or source is not None:
            raise NotImplementedError(
                f"wp.Kernel({func.__qualname__}): code_transformers and source= are not supported by weft; "
                "define the kernel as a Python function"
            )
        pyfunc = func
        snapshot(pyfunc)  # compile the code Python ran, even if the file changes before the first launch
        self.pyfunc = pyfunc
        self.func = pyfunc
        self.key = key or pyfunc.__qualname__
        self.__name__ = pyfunc.__name__
        self.__qualname__ = pyfunc.__qualname__
        self.__doc__ = pyfunc.__doc__
        self.__module__ = pyfunc.__module__
        self.module = _module_for(pyfunc, module)
        self.options = dict(options or {})
        sig = _signature(pyfunc)
        self.arg_names = list(sig.parameters)
        self.arg_types = []
        for p in sig.parameters.values():
            if p.annotation is inspect.Parameter.empty:
                raise TypeError(
                    f"kernel '{self.key}' parameter '{p.name}' needs a type annotation, e.g. {p.name}: wp.array(dtype=float)"
                )
            try:
                t = tr.annotation_type(p.annotation)
            except TypeError as e:
                where = f"{pyfunc.__code__.co_filename}:{pyfunc.__code__.co_firstlineno}"
                raise type(e)(f"kernel '{self.key}' ({where}) parameter '{p.name}': {e}") from None
            if t is None:
                raise TypeError(
                    f"kernel '{self.key}' parameter '{p.name}' has an unsupported annotation {p.annotation!r}"
                )
            self.arg_types.append(t)
        self.is_generic = any(tr.is_generic(t) for t in self.arg_types)
        self._arg_types_key = tuple(self.arg_types)
        self._instances: dict = {}
        self.overloads: dict = {}  # concrete arg types -> Kernel: wp.overload's and each launch's
        self.generic_parent = None
        # Kernels made by a factory share a qualname; the index keeps their symbols apart.
        self.index = self.module.add_kernel(self)

    @property
    def adj(self):
        """What the kernel does with its parameters (``kernel.adj.args[i].is_read`` /
        ``.is_write``), as Warp's ``Kernel.adj`` (``kernel_access.KernelAccess``)."""
        from .kernel_access import KernelAccess

        return KernelAccess(self)

    @property
    def enable_backward(self) -> bool:
        if self.options.get("enable_backward") is not None:
            return self.options["enable_backward"]
        return self.module.options.get("enable_backward", True)

    def instance_for(self, arg_types) -> KernelInstance:
        key = tuple(arg_types)
        inst = self._instances.get(key)
        if inst is None:
            inst = self.module.load_instance(self, key)  # from the cache by its fast key (adopt), or None
        if inst is None:
            inst = KernelInstance(self, key)
            self._instances[key] = inst
            self.module.add_instance(inst)
            if self.is_generic and key not in self.overloads:
                self._overload_kernel(key)  # as in Warp, a launch's specialization is an overload
        return inst

    def adopt(self, arg_types, record, captures) -> KernelInstance:
        """Register the instance for ``arg_types`` loaded from the kernel cache (runtime/cache_key.py:
        ``record`` and the ``captures`` a launch compares); not lowered until its IR is needed."""
        key = tuple(arg_types)
        inst = KernelInstance(self, key, loaded=(record, captures))
        self._instances[key] = inst
        if self.is_generic and key not in self.overloads:
            self._overload_kernel(key)
        return inst

    def globals_changed(self, inst) -> bool:
        """Whether a module global this instance baked in as a constant now has another value."""
        return _captures_changed(inst.global_captures)

    def refresh(self, inst) -> KernelInstance:
        """After a func was (re)defined, re-lower ``inst``; keep it if its code did not change (an
        instance loaded by its fast key and never lowered has no code to compare: it is replaced)."""
        fresh = KernelInstance(self, inst.arg_types)
        if not inst.deferred and fresh.fingerprint == inst.fingerprint:
            inst.generation = fresh.generation
            inst.global_captures = fresh.global_captures
            return inst
        self._instances[inst.arg_types] = fresh
        self.module.add_instance(fresh)
        return fresh

    def add_overload(self, arg_types) -> Kernel:
        """The instance of this generic kernel for the concrete ``arg_types`` (one per parameter),
        as a kernel that ``wp.launch`` takes; it is built with the rest of the module.

        Raises:
            RuntimeError: the kernel is not generic, or the number of types is wrong.
            TypeError: a type is itself generic or does not fit its parameter.
        """
        if not self.is_generic:
            raise RuntimeError(f"Only generic kernels can be overloaded; kernel '{self.key}' is not generic")
        if len(arg_types) != len(self.arg_types):
            raise RuntimeError(
                f"kernel '{self.key}' has {len(self.arg_types)} parameters, the overload gives {len(arg_types)} types"
            )
        concrete = []
        for name, template, given in zip(self.arg_names, self.arg_types, arg_types):
            t = tr.annotation_type(given)
            if t is None or tr.is_generic(t):
                raise TypeError(f"kernel '{self.key}' argument '{name}' cannot be generic, got {given!r}")
            if not tr.template_accepts(template, t):
                raise TypeError(
                    f"kernel '{self.key}' argument '{name}' type mismatch: expected {wt.type_repr(template)}, got {wt.type_repr(t)}"
                )
            concrete.append(t)
        return self._overload_kernel(tuple(concrete))

    def _overload_kernel(self, key) -> Kernel:
        """The entry of ``overloads`` for the concrete types ``key`` (made on first use)."""
        ovl = self.overloads.get(key)
        if ovl is None:
            ovl = copy.copy(self)  # same function, module, options and instances; concrete types
            ovl.arg_types, ovl._arg_types_key = list(key), key
            ovl.is_generic, ovl.overloads, ovl.generic_parent = False, {}, self
            self.overloads[key] = ovl
        return ovl

    def default_instance(self) -> KernelInstance:
        if self.is_generic:
            raise TypeError(f"kernel '{self.key}' is generic; its types come from the launch arguments")
        return self.instance_for(self.arg_types)

    def __call__(self, *args, **kwargs):
        raise RuntimeError(
            f"kernel '{self.key}' cannot be called directly; use wp.launch({self.key}, dim=..., inputs=[...])"
        )

    def __repr__(self):
        return f"<weft kernel {self.key}>"


_MISSING = object()


def tangent_kernel(kernel: Kernel) -> Kernel:
    """The forward-mode twin of ``kernel`` (``wp.autograd.jvp`` launches it): it takes the
    kernel's arguments followed by one tangent per argument (``<name>__tangent``, of the same
    type: the tangent array of a float array, zero or the value itself for the rest) and
    computes the kernel's results and their tangents (codegen/tangent.py). Made once per kernel;
    built with the kernel's module like any other kernel."""
    twin = kernel.__dict__.get("_tangent_kernel")
    if twin is None or twin.tangent_of is not kernel:  # (a copy made by _overload_kernel inherits it)
        twin = copy.copy(kernel)
        twin.tangent_of = kernel
        twin.key = f"{kernel.key} (forward mode)"
        twin.arg_names = list(kernel.arg_names) + [n + TANGENT_SUFFIX for n in kernel.arg_names]
        twin.arg_types = list(kernel.arg_types) * 2
        twin._arg_types_key = tuple(twin.arg_types)
        twin._instances, twin.overloads, twin.generic_parent = {}, {}, None
        twin.__dict__.pop("_tangent_kernel", None)
        kernel._tangent_kernel = twin
    return twin


def _module_for(pyfunc, module):
    """The weft module a kernel joins: given, named, its own (``"unique"``), or its function's."""
    if module is None:
        return mod.get_module(pyfunc.__module__)
    if module == "unique":  # as Warp: a module of its own, named after the function
        return mod.get_module(f"{pyfunc.__module__}.{pyfunc.__qualname__}")
    if isinstance(module, str):
        return mod.get_module(module)
    return module


def kernel(
    f=None,
    *,
    name=None,
    enable_backward=None,
    launch_bounds=None,
    cuda_max_registers=None,
    enable_cuda_smem_spilling=None,
    cluster_dim=None,
    module=None,
    module_options=None,
    entry_point_abi=None,
    grid_stride=None,
):
    """Decorator: compile a Python function into a kernel launched with ``wp.launch``.

    Args:
        name: the kernel's key (messages, generated symbols); a valid C++ identifier.
        enable_backward: generate the backward (adjoint) entry point; defaults to the module
            option ``enable_backward`` (True).
        launch_bounds: ``max_threads`` or ``(max_threads, min_blocks)``: CUDA's
            ``__launch_bounds__`` on the kernel's GPU entry points; a GPU launch with a larger
            ``block_dim`` raises. No effect on the CPU.
        cuda_max_registers: the most registers a GPU thread of this kernel may use (CUDA's
            ``__maxnreg__`` on its entry points; the compiler spills the rest to local memory).
            Not together with ``launch_bounds``, which CUDA does not allow. No effect on the CPU.
        cluster_dim: thread block clusters of this many blocks (1 to 16; CUDA's
            ``__cluster_dims__(n, 1, 1)``) on GPUs of compute capability 9.0 and newer, where the
            launch rounds its grid up to whole clusters (the extra blocks find no work: entry
            points loop grid-stride); on older GPUs and the CPU the kernel runs unclustered.
        module: a module name, a weft module, or ``"unique"`` (a module of its own) instead of the
            function's Python module.
        module_options: options set on the kernel's module (``wp.set_module_options``).
        entry_point_abi: ``"warp"`` (the only entry-point layout weft has).
        grid_stride: accepted for Warp compatibility: weft's GPU entry points always loop
            grid-stride over the launch, which gives the same results either way.

    Raises:
        NotImplementedError: ``enable_cuda_smem_spilling`` or another ``entry_point_abi``,
            which weft does not support.
        TypeError: ``cluster_dim`` is not an int.
        ValueError: ``name`` is not a C++ identifier, ``launch_bounds`` or
            ``cuda_max_registers`` is malformed, or both are given, or ``cluster_dim`` is out of
            range.
    """
    unsupported = {"enable_cuda_smem_spilling": enable_cuda_smem_spilling}
    given = [k for k, v in unsupported.items() if v is not None]
    if given or entry_point_abi not in (None, "warp"):
        what = ", ".join(
            given + ([f"entry_point_abi={entry_point_abi!r}"] if entry_point_abi not in (None, "warp") else [])
        )
        raise NotImplementedError(f"@wp.kernel({what}): not supported by weft")
    if name is not None and not (isinstance(name, str) and name.isidentifier() and name.isascii()):
        raise ValueError(f"@wp.kernel(name={name!r}): the kernel name must be a valid C++ identifier")
    options = {}
    if enable_backward is not None:
        options["enable_backward"] = enable_backward
    if launch_bounds is not None:
        options["launch_bounds"] = _launch_bounds(launch_bounds)
    if cuda_max_registers is not None:
        if isinstance(cuda_max_registers, bool) or not isinstance(cuda_max_registers, int) or cuda_max_registers <= 0:
            raise ValueError(f"cuda_max_registers must be a positive int, got {cuda_max_registers!r}")
        if launch_bounds is not None:
            raise ValueError("@wp.kernel: give launch_bounds or cuda_max_registers, not both (CUDA allows one of them)")
        options["cuda_max_registers"] = cuda_max_registers
    if cluster_dim is not None and _cluster_dim(cluster_dim) > 1:
        options["cluster_dim"] = cluster_dim  # 1 is no clustering: the same kernel as without

    def wrap(fn):
        if module_options is not None:
            _check_module_options(fn, module, module_options)
        target = module
        if module == "unique":
            target = _unique_module(fn, name, options, module_options)
            existing = _same_unique_kernel(fn, name, options, target)
            if existing is not None:
                return existing  # as in Warp: an identical unique definition is the same kernel
        k = Kernel(fn, key=name, module=target, options=options or None)
        if module_options:
            k.module.set_options(module_options)
        return k

    return wrap(f) if f is not None else wrap


MAX_CLUSTER_DIM = 16  # blocks per cluster on sm_90 / sm_100 (beyond 8 needs a non-portable size)


def _cluster_dim(value) -> int:
    """A checked ``cluster_dim``: an int block count in [1, MAX_CLUSTER_DIM] (launches are 1-D)."""
    if isinstance(value, bool) or not isinstance(value, int):
        raise TypeError(
            f"@wp.kernel(cluster_dim={value!r}): cluster_dim is a block count (an int): launch grids are one-dimensional"
        )
    if not 1 <= value <= MAX_CLUSTER_DIM:
        raise ValueError(f"@wp.kernel(cluster_dim={value}): cluster_dim must be between 1 and {MAX_CLUSTER_DIM}")
    return value


def _same_value(a, b) -> bool:
    if a is b:
        return True
    if type(a) is not type(b):
        return False
    if isinstance(a, (list, tuple)):
        return len(a) == len(b) and all(_same_value(x, y) for x, y in zip(a, b))
    if isinstance(a, dict):
        return a.keys() == b.keys() and all(_same_value(a[k], b[k]) for k in a)
    annotation = getattr(a, "is_annotation", False) is True and callable(getattr(a, "kernel_type", None))
    if not (annotation or isinstance(a, (int, float, str, bytes, bool, tuple, type(None)))):
        return False  # anything else counts as the same only when it is the same object
    try:
        return bool(a == b)
    except Exception:  # noqa: BLE001 -- a value that cannot be compared is a different one
        return False


def _described(value) -> str:
    """A value as part of a unique module's name: its repr when that is its content (numbers,
    strings, tuples, lists and dicts of them, weft types), a func or kernel by name, else its
    type's name (the module is then shared with other values of the type, and the kernels in it
    are told apart by identity)."""
    if isinstance(value, (int, float, str, bytes, bool, type(None))):
        return repr(value)
    if isinstance(value, (tuple, list)):
        inner = ", ".join(_described(v) for v in value)
        return f"({inner})" if isinstance(value, tuple) else f"[{inner}]"
    if isinstance(value, dict):
        return "{" + ", ".join(f"{_described(k)}: {_described(v)}" for k, v in value.items()) + "}"
    if getattr(value, "_weft_kind", None) in ("func", "kernel"):  # by name: a func bound in a factory
        return f"{value._weft_kind} {value.module.name}.{value.key}"
    if getattr(value, "is_annotation", False) is True or isinstance(value, type):
        try:
            return wt.type_repr(value)
        except Exception:  # noqa: BLE001 -- a type weft does not describe: its name
            return getattr(value, "__qualname__", type(value).__qualname__)
    return type(value).__qualname__


def _unique_module(fn, name, options, module_options):
    """The module of a ``module="unique"`` kernel: one per distinct definition (code, closure
    values, defaults, annotations, kernel and module options), named after the function and a
    digest of these, so a factory making kernels with other captured values or options gives each
    a module of its own, and an identical definition finds the module of the first."""
    from .runtime.array_map import _code_key

    cells = [_described(c.cell_contents) for c in (fn.__closure__ or ()) if _cell_set(c)]
    parts = (
        name or fn.__qualname__,
        repr(_code_key(fn.__code__)),
        cells,
        [_described(d) for d in fn.__defaults__ or ()],
        sorted((k, _described(v)) for k, v in getattr(fn, "__annotations__", {}).items()),
        sorted((k, _described(v)) for k, v in options.items()),
        sorted((k, _described(v)) for k, v in (module_options or {}).items()),
    )
    digest = hashlib.sha256(repr(parts).encode()).hexdigest()[:8]
    return mod.get_module(f"{fn.__module__}.{fn.__qualname__}_{digest}")


# Warp's module options (wp.set_module_options); weft acts on enable_backward, mode,
# optimization_level and cpu_compiler_flags and keeps the others for code that reads them back.
MODULE_OPTION_NAMES = frozenset(
    {
        "max_unroll", "enable_backward", "enable_mathdx_gemm", "enable_mathdx_solver", "enable_mathdx_fft",
        "fast_math", "fuse_fp", "lineinfo", "cuda_output", "mode", "optimization_level", "cpu_compiler_flags",
        "block_dim", "compile_time_trace", "strip_hash", "extra_build_options", "deterministic",
        "deterministic_max_records", "default_grid_stride",
    }
)  # fmt: skip


def _check_module_options(fn, module, module_options):
    """Warp's rules for ``@wp.kernel(module_options=...)``: a dict of known option names, and only
    with ``module="unique"`` (the options are the module's, shared by all its kernels)."""
    where = f"@wp.kernel for '{fn.__name__}'"
    if not isinstance(module_options, dict):
        raise TypeError(f"{where}: module_options must be a dict, got {type(module_options).__name__}.")
    if module != "unique":
        raise ValueError(
            f'{where}: module_options requires module="unique" (the options apply to the whole module). '
            "Use wp.set_module_options() to set the options of a shared module."
        )
    unknown = sorted(set(module_options) - MODULE_OPTION_NAMES)
    if unknown:
        raise ValueError(
            f"{where}: unknown module_options: {', '.join(repr(k) for k in unknown)}. "
            f"Valid options are: {', '.join(repr(k) for k in sorted(MODULE_OPTION_NAMES))}."
        )


def _same_unique_kernel(fn, name, options, module):
    """The kernel of ``module="unique"`` already made from the same definition (same code, same
    closure values, defaults and annotations, same globals, same options), or None: defining such a kernel again
    in a loop or a factory gives back that kernel, its compiled instances included. The code counts
    by what it computes, not where it is written: the same definition on another line is the same."""
    from .runtime.array_map import _code_key

    key = name or fn.__qualname__
    code = _code_key(fn.__code__)
    cells = [c.cell_contents for c in (fn.__closure__ or ()) if _cell_set(c)]
    for k in module.kernels:
        old = k.pyfunc
        if k.key != key or old.__globals__ is not fn.__globals__ or _code_key(old.__code__) != code:
            continue
        if dict(k.options) != dict(options) or not _same_value(old.__defaults__, fn.__defaults__):
            continue
        old_ann, new_ann = getattr(old, "__annotations__", {}), getattr(fn, "__annotations__", {})
        if old_ann.keys() != new_ann.keys() or not all(_same_value(old_ann[n], new_ann[n]) for n in new_ann):
            continue  # annotations are evaluated when the function is defined: a type may differ
        old_cells = [c.cell_contents for c in (old.__closure__ or ()) if _cell_set(c)]
        if len(old_cells) == len(cells) and all(_same_value(a, b) for a, b in zip(old_cells, cells)):
            return k
    return None


def _cell_set(cell) -> bool:
    try:
        cell.cell_contents
    except ValueError:  # an empty cell
        return False
    return True


def overload(kernel, arg_types=None):
    """Declare a concrete instance of a generic kernel, built with its module.

    ``wp.overload(k, [wp.array[float], float])`` (types in parameter order) or
    ``wp.overload(k, {"value": float})`` (by name; the other parameters keep their annotations)
    returns the instance, a kernel ``wp.launch`` takes. As a decorator on a function of the same
    name whose body is only ``...``, ``pass`` or a docstring, the function's annotations give
    the types and the generic kernel is returned.

    Raises:
        RuntimeError: the kernel is not generic, a name is not one of its parameters, the stub
            has a body or a parameter without annotation, or no kernel (or several) has the
            stub's name.
        TypeError: a type is generic or does not fit its parameter.
    """
    if isinstance(kernel, Kernel):
        if isinstance(arg_types, dict):
            types_ = list(kernel.arg_types)
            for name, t in arg_types.items():
                if name not in kernel.arg_names:
                    raise RuntimeError(f"Invalid argument name '{name}' in overload of kernel '{kernel.key}'")
                types_[kernel.arg_names.index(name)] = t
        elif isinstance(arg_types, (list, tuple)):
            types_ = list(arg_types)
        elif arg_types is None:
            types_ = []
        else:
            raise TypeError("Kernel overload types must be given in a list or dict")
        return kernel.add_overload(types_)
    if not inspect.isfunction(kernel):
        raise RuntimeError(f"wp.overload() takes a kernel or a function stub, got {kernel!r}")
    stub = kernel
    target = _find_kernel(stub)
    src = Source(stub)
    body = src.tree.body
    if not all(_is_stub_statement(st) for st in body):
        raise RuntimeError(
            f"Illegal statement in kernel overload definition '{stub.__name__}'. Only pass, ellipsis (...), "
            "comments, or docstrings are allowed"
        )
    sig = _signature(stub)
    if any(p.annotation is inspect.Parameter.empty for p in sig.parameters.values()):
        raise RuntimeError(f"Incomplete argument annotations on kernel overload {stub.__name__}")
    if sig.return_annotation not in (inspect.Signature.empty, None, type(None)):
        raise TypeError(
            "Return annotations are not allowed on @wp.overload stubs; omit the return annotation or use `-> None`."
        )
    target.add_overload([p.annotation for p in sig.parameters.values()])
    return target


def _is_stub_statement(st) -> bool:
    return isinstance(st, ast.Pass) or (
        isinstance(st, ast.Expr)
        and isinstance(st.value, ast.Constant)
        and (isinstance(st.value.value, str) or st.value.value is ...)
    )


def _find_kernel(stub) -> Kernel:
    """The kernel a ``@wp.overload`` stub names: the latest of its qualified name in the stub's
    module, else the one kernel made from a function of that name under a custom key."""
    module = mod.get_module(stub.__module__)
    by_key = [k for k in module.kernels if k.key == stub.__qualname__ and k.generic_parent is None]
    if by_key:
        return by_key[-1]
    named = {k.key: k for k in module.kernels if k.pyfunc.__qualname__ == stub.__qualname__}
    if len(named) > 1:
        raise RuntimeError(
            f"Ambiguous kernel lookup for '{stub.__qualname__}': it matches several custom-named kernels "
            f"({', '.join(repr(k) for k in named)}). Pass the kernel object to wp.overload() instead of using the decorator form."
        )
    if not named:
        raise RuntimeError(f"Failed to find a kernel named '{stub.__name__}' in module {stub.__module__}")
    return next(iter(named.values()))


def _launch_bounds(value) -> tuple:
    """``(max_threads,)`` or ``(max_threads, min_blocks)`` from an int or a tuple of positive ints."""
    bounds = (value,) if isinstance(value, int) else tuple(value)
    if not 1 <= len(bounds) <= 2 or not all(isinstance(b, int) and not isinstance(b, bool) and b > 0 for b in bounds):
        raise ValueError(f"launch_bounds must be a positive int or a tuple of one or two positive ints, got {value!r}")
    return bounds


_funcs: dict = {}


_P = typing.ParamSpec("_P")
_R = typing.TypeVar("_R")


@typing.overload
def func(f: typing.Callable[_P, _R]) -> typing.Callable[_P, _R]: ...


@typing.overload
def func(
    f: None = None, *, name: str | None = None, module=None
) -> typing.Callable[[typing.Callable[_P, _R]], typing.Callable[_P, _R]]: ...


def func(f=None, *, name=None, module=None):
    """Decorator: a function callable from kernels and other funcs. Defining another ``@wp.func``
    with the same name and different annotations adds an overload; with the same annotations it
    makes a new func for that name (keeping the other overloads), while references taken to the
    earlier one keep its code, as in Warp.

    Args:
        name: the func's name in messages and symbols (default: the function's qualname).
        module: the weft module it belongs to: a ``wp.Module``, a module name, ``"unique"`` (one
            of its own), or None for the function's Python module.
    """
    if f is None:
        return lambda g: func(g, name=name, module=module)
    key = (f.__module__, name or f.__qualname__, None if module is None else _module_for(f, module).name)
    if "<locals>" in f.__qualname__:
        # Funcs made inside a function: a definition with other annotations, in the same call of
        # that function (the name still bound in its frame), adds an overload; anything else (a
        # loop redefining the same signature, another call of a factory) makes another func.
        existing = _bound_in_defining_frame(f)
        if existing is not None and existing.key == (name or f.__qualname__):
            sig, refs = Function._annotations(f), _ref_flags(f)
            same = [o for o in existing.overloads if Function._annotations(o) == sig]
            if not same or any(_ref_flags(o) != refs for o in same):
                existing.add_overload(f)  # an overload (or the error for one differing only by wp.ref)
                return existing
        return Function(f, _module_for(f, module), key=name)
    existing = _funcs.get(key)
    if existing is not None:
        sig = Function._annotations(f)
        same = [o for o in existing.overloads if Function._annotations(o) == sig]
        if not same or _ref_flags(same[0]) != _ref_flags(f) or existing.native is not None:
            existing.add_overload(f)  # another signature: an overload (or the wp.ref conflict error)
            return existing
        # The same signature again (as in Warp): a new func that replaces it for the name, keeping
        # the other overloads; references taken to the earlier func keep its code.
        fn = Function(f, _module_for(f, module), key=name)
        fn.overloads = [f if o is same[0] else o for o in existing.overloads]
        _funcs[key] = fn
        return fn
    fn = Function(f, _module_for(f, module), key=name)
    _funcs[key] = fn
    return fn


def _bound_in_defining_frame(f):
    """The weft func the name of ``f`` is bound to in the frame running its ``def`` (a few frames up
    from the decorator), or None."""
    import sys

    enclosing = f.__qualname__.rsplit(".<locals>.", 1)[0]
    frame = sys._getframe(1)
    for _ in range(8):
        if frame is None:
            return None
        if getattr(frame.f_code, "co_qualname", frame.f_code.co_name) == enclosing:
            bound = frame.f_locals.get(f.__name__)
            return bound if isinstance(bound, Function) else None
        frame = frame.f_back
    return None


def native_function(pyfunc, snippets) -> Function:
    """The ``Function`` of a ``@wp.func_native`` stub (see native_func.py)."""
    return Function(pyfunc, mod.get_module(pyfunc.__module__), native=snippets)


def func_grad(forward):
    """Decorator: replace the adjoint of ``forward`` (a ``@wp.func``).

    The decorated function takes the forward's parameters and then the adjoints of its results
    (none for a func that returns nothing), and accumulates into ``wp.adjoint[param]`` (for an
    array parameter, its gradient array: ``wp.adjoint[xs][i] += ...``). For an overloaded func,
    the gradient belongs to the overload whose parameter annotations it starts with. The
    parameter lists are checked when a kernel using ``forward`` is compiled.

    Args:
        forward: the ``@wp.func`` whose gradient to replace.

    Returns:
        A decorator taking the gradient function.

    Raises:
        TypeError: ``forward`` is not a ``@wp.func``.

    Example:
        For a func ``safe_sqrt(x: float)``::

            @wp.func_grad(safe_sqrt)
            def adj_safe_sqrt(x: float, adj_ret: float):
                wp.adjoint[x] += adj_ret * 0.5 / wp.max(wp.sqrt(x), 1.0e-3)
    """
    if getattr(forward, "_weft_kind", None) != "func":
        raise TypeError("@wp.func_grad takes a @wp.func")

    def wrap(grad_fn):
        snapshot(grad_fn)
        forward.set_grad(grad_fn)
        return grad_fn

    return wrap


def func_replay(forward):
    """Decorator: replace what the backward pass runs when it replays ``forward``.

    The backward pass first recomputes (replays) the forward values it needs; a replay function
    computes them another way, e.g. without repeating a side effect.

    Args:
        forward: the ``@wp.func`` whose replay to replace; the replay function takes the same
            parameters and returns the same result.

    Returns:
        A decorator taking the replay function.

    Raises:
        TypeError: ``forward`` is not a ``@wp.func``.
    """
    if getattr(forward, "_weft_kind", None) != "func":
        raise TypeError("@wp.func_replay takes a @wp.func")

    def wrap(replay_fn):
        snapshot(replay_fn)
        forward.custom_replay = replay_fn
        forward._instances.clear()
        mod.definitions_changed()
        return replay_fn

    return wrap
