"""``wp.map(f, *inputs)``: a func or builtin applied element by element to arrays (scalars are
broadcast), giving a new array or filling ``out``; the arithmetic operators of arrays use it.

Inputs are flattened (a non-contiguous one is copied first) and run through a 1-D kernel made
once per function and element types (``_map_kernels``); the result takes the common shape.
Launches are recorded on an active tape like any other, so gradients flow through them.
"""

from __future__ import annotations

import threading

import numpy as np

from .. import types as wt
from .. import vector_types as vt
from ..codegen import typing_rules as tr

_kernels: dict = {}  # (function key, element types) -> (kernel, result types, function): Warp's map_cache
_lock = threading.Lock()


def _is_array(x) -> bool:
    return hasattr(x, "kernel_type") and hasattr(x, "shape") and not isinstance(x, type)


def _element_type(x):
    if isinstance(x, (bool, np.bool_)):
        return wt.bool
    if isinstance(x, np.generic):
        return wt.dtype_from_numpy(x.dtype)
    if isinstance(x, int):
        return wt.int32
    if isinstance(x, float):
        return wt.float32
    if isinstance(x, wt.scalar_base) or vt.is_composite(type(x)):
        return type(x)
    return None


class MapError(TypeError):
    """``wp.map`` was given a function or output that does not fit its inputs."""


_wrapped: dict = {}  # identity of a python function (_identity) -> (the function, its weft Function)


def _frozen(value):
    """``value`` as part of a cache key: itself when hashable, else its identity."""
    try:
        hash(value)
    except TypeError:
        return ("id", id(value))
    return (type(value), value)


def _code_key(code):
    """A code object by what it computes (its bytecode, constants, names and signature), not by
    where it was written: ``lambda x: 2 * x`` on two lines is one function."""
    consts = tuple(_code_key(c) if hasattr(c, "co_code") else _frozen(c) for c in code.co_consts)
    return (code.co_code, consts, code.co_names, code.co_varnames, code.co_freevars, code.co_argcount, code.co_flags)


def _identity(fn):
    """What makes two Python functions the same func to compile: their code (``_code_key``),
    the module globals it reads, and the values of its closure cells and defaults. A lambda
    evaluated again (in a loop, at each call of the enclosing function, or written out again)
    is the same func and reuses its kernels."""
    cells = tuple(_frozen(c.cell_contents) for c in fn.__closure__ or ())
    defaults = tuple(_frozen(d) for d in fn.__defaults__ or ())
    return (_code_key(fn.__code__), id(fn.__globals__), cells, defaults)


def _as_func(fn):
    """A plain Python function or lambda as a weft func (made once per code and closure values,
    in the map kernels' module); weft funcs and builtins as they are."""
    if getattr(fn, "_weft_kind", None) == "func" or not callable(fn) or not hasattr(fn, "__code__"):
        return fn
    key = _identity(fn)
    with _lock:
        found = _wrapped.get(key)
        if found is None:
            from ..kernel import Function
            from . import _map_kernels
            from .module import get_module

            name = f"{fn.__qualname__}_{len(_wrapped):x}"
            found = _wrapped[key] = (fn, Function(fn, get_module(_map_kernels.MODULE), key=name))
    return found[1]


def _warp_name(fn) -> str:
    """A function's name as Warp's messages give it (``outer.<locals>.f`` -> ``outer__locals__f``)."""
    name = getattr(fn, "key", None) or getattr(fn, "name", None) or getattr(fn, "__qualname__", str(fn))
    return str(name).replace(".", "__").replace("<", "").replace(">", "")


def _kernel_for(fn, dtypes):
    key = (id(fn), dtypes)
    with _lock:
        found = _kernels.get(key)
        if found is None:
            from . import _map_kernels

            if getattr(fn, "_weft_kind", None) == "func":
                rtype = _func_result(fn, dtypes)
            else:
                fit = tr._first_fit(fn, list(dtypes))
                rtype = fit[1] if fit is not None else None
                if rtype is None:
                    raise MapError(
                        f"Function {_warp_name(fn)} does not support the provided argument "
                        f"types {', '.join(wt.type_repr(t) for t in dtypes)}"
                    )
            if rtype is None:
                raise MapError("The provided function must return a value")
            rtypes = tuple(rtype.types) if isinstance(rtype, wt.TupleType) else (rtype,)
            found = (_map_kernels.make(fn, dtypes, rtypes), rtypes, fn)  # fn kept alive with its id
            _kernels[key] = found
    return found[0], found[1]


def _func_result(fn, dtypes):
    """The result type of a weft func for element types ``dtypes`` (its instance's)."""
    from ..codegen import ir

    params = len(fn.param_names())
    if params != len(dtypes) and not fn.param_defaults():
        raise MapError(
            f"Number of input arguments ({len(dtypes)}) does not match expected number of function arguments ({params})"
        )
    f = ir.Function("map_probe", False)
    args = [f.new_var(t) for t in dtypes]
    try:
        inst, _ = fn.specialize(args, lambda v, t: f.new_var(t, const=v))
    except TypeError as e:
        raise MapError(
            f"Function {_warp_name(fn)} does not support the provided argument types "
            f"{', '.join(wt.type_repr(t) for t in dtypes)} ({e})"
        ) from None
    return inst.value_ret_type


def _broadcast_shape(arrays) -> tuple:
    shape = tuple(arrays[0].shape)
    for a in arrays[1:]:
        try:
            shape = tuple(np.broadcast_shapes(shape, tuple(a.shape)))
        except ValueError:
            raise ValueError(f"Shapes {shape} and {tuple(a.shape)} are not broadcastable") from None
    return shape


def _flat_input(x, shape, device):
    """An array input as a contiguous 1-d array over ``shape`` (broadcast by a gather kernel,
    so that gradients reach the original)."""
    from ..array_constructors import array as make_array
    from ..array_constructors import empty
    from . import _map_kernels
    from .launch import launch

    x = x if getattr(x, "is_contiguous", False) else x.contiguous()  # an indexed array is gathered
    if tuple(x.shape) == shape:
        return x.flatten()
    index = np.broadcast_to(np.arange(x.size, dtype=np.int32).reshape(x.shape), shape).reshape(-1)
    out = empty(index.size, dtype=x.dtype, device=device, requires_grad=getattr(x, "requires_grad", False))
    launch(_map_kernels.gather, index.size, inputs=[x.flatten(), make_array(index, device=device)], outputs=[out], device=device)
    return out


def array_map(fn, *inputs, out=None, return_kernel=False, block_dim=256, device=None):
    """Apply ``fn`` element-wise to the arrays in ``inputs`` and return the result array, or fill
    ``out``. ``fn`` is a ``@wp.func``, a builtin, or a Python function or lambda (compiled as a
    func). Array shapes broadcast as in NumPy; scalars and vector values are broadcast too; up
    to sixteen inputs. A function returning several values gives a list of arrays (``out`` is then
    a list too). ``return_kernel=True`` returns the element-wise kernel over 1-d arrays (its
    inputs, then the outputs) instead of running it.

    Args:
        fn: the function applied to each element (its parameters take the inputs' element types).
        *inputs: arrays, scalars or vector values, one per parameter of ``fn``.
        out: an array (or a list of arrays) to write the results into, instead of new ones.
        return_kernel: return the kernel instead of running it.
        block_dim: threads per block of the GPU launch.
        device: where to run (default: the device of the first array input).

    Returns:
        The result array (a list of arrays for a function with several results), or the kernel.

    Raises:
        ValueError: no array input, more than sixteen inputs, or shapes that do not broadcast.
        TypeError (``MapError``): ``fn`` takes other arguments or returns no value, or ``out``
            does not fit.

    Example:
        ``y = wp.map(wp.mul, x, 3.0)`` (a new array of ``3 x``); ``wp.map(lambda a, b: a + b, x, y, out=z)``.
    """
    from ..array_constructors import empty, full
    from . import _map_kernels

    fn = _as_func(fn)
    if not 1 <= len(inputs) <= _map_kernels.MAX_INPUTS:
        raise ValueError(f"wp.map takes one to {_map_kernels.MAX_INPUTS} inputs, got {len(inputs)}")
    arrays = [x for x in inputs if _is_array(x)]
    if not arrays:
        raise ValueError("map requires at least one warp.array input")
    shape = _broadcast_shape(arrays)
    device = device or arrays[0].device
    size = int(np.prod(shape)) if shape else 1
    flat = []
    for x in inputs:
        if _is_array(x):
            flat.append(_flat_input(x, shape, device))
            continue
        t = _element_type(x)
        if t is None:
            raise TypeError(f"wp.map: {type(x).__name__} is neither an array nor a kernel value")
        like = arrays[0]
        if t in (wt.int32, wt.float32) and isinstance(x, (int, float)) and wt.is_scalar(like.dtype):
            t = like.dtype  # an untyped Python number takes the arrays' element type
        flat.append(full(size, x if not wt.is_scalar(t) else t(x), dtype=t, device=device))
    dtypes = tuple(a.dtype for a in flat)
    kernel, rtypes = _kernel_for(fn, dtypes)
    if return_kernel:
        return kernel
    if out is None:
        grad = any(getattr(a, "requires_grad", False) for a in arrays)
        outs = [empty(shape, dtype=t, device=device, requires_grad=grad) for t in rtypes]
    else:
        outs = _check_outputs(out, shape, rtypes)
    from .launch import launch

    # an indexed array (or other non-flattenable output) is filled through a contiguous temporary
    direct = [o if hasattr(o, "flatten") else empty(shape, dtype=o.dtype, device=device) for o in outs]
    launch(kernel, size, inputs=flat, outputs=[o.flatten() for o in direct], device=device)
    for o, d in zip(outs, direct):
        if d is not o:
            from ..array_constructors import copy

            copy(o, d)
    return outs[0] if len(rtypes) == 1 else outs


def _check_outputs(out, shape, rtypes) -> list:
    """The output arrays ``out`` names (one array, or a list of them), checked against the
    function's results."""
    many = len(rtypes) > 1
    if isinstance(out, (list, tuple)):
        if len(out) != len(rtypes):
            raise MapError(
                f"Number of provided output arrays ({len(out)}) does not match expected number of function "
                f"outputs ({len(rtypes)})"
            )
        outs = list(out)
    elif many:
        raise MapError(
            f"Invalid output provided, expected {len(rtypes)} Warp arrays with shape {shape} and dtypes "
            f"({', '.join(wt.type_repr(t) for t in rtypes)})"
        )
    else:
        outs = [out]
    for k, (o, t) in enumerate(zip(outs, rtypes)):
        which = f"Output array {k}" if many else "Output array"
        if tuple(o.shape) != shape:
            raise MapError(f"{which} shape {tuple(o.shape)} does not match expected shape {shape}")
        if o.dtype != t:
            raise MapError(f"{which} dtype {wt.type_repr(o.dtype)} does not match expected dtype {wt.type_repr(t)}")
        if hasattr(o, "is_contiguous") and not (o.is_contiguous or o.ndim == 1):
            raise MapError(f"wp.map: out must be contiguous or 1-d, got strides {o.strides}")
    return outs


def _binary(name, reflected=False):
    def op(self, other):
        from ..builtins import scalar as sb

        fn = getattr(sb, name)
        try:
            return array_map(fn, other, self) if reflected else array_map(fn, self, other)
        except TypeError:
            return NotImplemented

    op.__name__ = f"__{'r' if reflected else ''}{name}__"
    return op


def _inplace(name):
    def op(self, other):
        from ..builtins import scalar as sb

        array_map(getattr(sb, name), self, other, out=self)
        return self

    return op


def install_operators(cls):
    """Give the array class its element-wise arithmetic: ``a + b``, ``2.0 * a``, ``a %= 3``, ``-a``..."""
    from ..builtins import scalar as sb

    for py, name in (("add", "add"), ("sub", "sub"), ("mul", "mul"), ("truediv", "div"),
                     ("floordiv", "floordiv"), ("mod", "mod"), ("pow", "pow")):  # fmt: skip
        setattr(cls, f"__{py}__", _binary(name))
        setattr(cls, f"__r{py}__", _binary(name, reflected=True))
        setattr(cls, f"__i{py}__", _inplace(name))
    cls.__neg__ = lambda self: array_map(sb.neg, self)
    cls.__pos__ = lambda self: array_map(sb.pos, self)
