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

_kernels: dict = {}
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
            if rtype is None or isinstance(rtype, wt.TupleType):
                raise TypeError(
                    f"wp.map: {getattr(fn, 'key', getattr(fn, 'name', fn))} takes no elements of types "
                    f"({', '.join(wt.type_repr(t) for t in dtypes)}) or returns no single value"
                )
            found = (_map_kernels.make(fn, dtypes, rtype), rtype, fn)  # fn kept alive with its id
            _kernels[key] = found
    return found[0], found[1]


def _func_result(fn, dtypes):
    """The result type of a weft func for element types ``dtypes`` (its instance's)."""
    from ..codegen import ir

    f = ir.Function("map_probe", False)
    args = [f.new_var(t) for t in dtypes]
    try:
        inst, _ = fn.specialize(args, lambda v, t: f.new_var(t, const=v))
    except TypeError as e:
        raise TypeError(f"wp.map: {e}") from None
    return inst.value_ret_type


def array_map(fn, *inputs, out=None, device=None):
    """Apply ``fn`` (a ``@wp.func`` or a builtin) element-wise to the arrays in ``inputs``
    (scalars and vector values are broadcast) and return the result array, or fill ``out``.

    Raises:
        ValueError: no array input, more than three inputs, or arrays of different shapes.
        TypeError: ``fn`` has no overload for the element types.
    """
    from ..array_constructors import empty, full

    if not 1 <= len(inputs) <= 3:
        raise ValueError(f"wp.map takes one to three inputs, got {len(inputs)}")
    arrays = [x for x in inputs if _is_array(x)]
    if not arrays:
        raise ValueError("wp.map needs at least one array input")
    shape = arrays[0].shape
    if any(a.shape != shape for a in arrays):
        raise ValueError(f"wp.map: arrays of shapes {[a.shape for a in arrays]} cannot be combined")
    device = device or arrays[0].device
    flat = []
    for x in inputs:
        if _is_array(x):
            flat.append((x if x.is_contiguous else x.contiguous()).flatten())
            continue
        t = _element_type(x)
        if t is None:
            raise TypeError(f"wp.map: {type(x).__name__} is neither an array nor a kernel value")
        like = next(a for a in arrays)
        if t in (wt.int32, wt.float32) and isinstance(x, (int, float)) and wt.is_scalar(like.dtype):
            t = like.dtype  # an untyped Python number takes the arrays' element type
        flat.append(full(like.size, x if not wt.is_scalar(t) else t(x), dtype=t, device=device))
    dtypes = tuple(a.dtype for a in flat)
    kernel, rtype = _kernel_for(fn, dtypes)
    if out is None:
        grad = any(getattr(a, "requires_grad", False) for a in arrays)
        out = empty(shape, dtype=rtype, device=device, requires_grad=grad)
    elif out.shape != shape or out.dtype != rtype or not (out.is_contiguous or out.ndim == 1):
        raise ValueError(f"wp.map: out must be a contiguous array of shape {shape} and dtype {wt.type_repr(rtype)}")
    from .launch import launch

    launch(kernel, flat[0].size, inputs=flat, outputs=[out.flatten()], device=device)
    return out


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
