"""Builtins called from Python: ``wp.sin(wp.float32(1.23))``, ``wp.length_sq(wp.vec2b(...))``.

The call runs the builtin's native code in a one-thread kernel made for the argument types
(built once per signature, cached on disk like any kernel), so the result is exactly what a
kernel computes: float32 arithmetic for float32, wrapping integer arithmetic, the same NaN and
rounding rules. Python ``int`` / ``float`` arguments are int32 / float32 and NumPy scalars
their own type, as in Warp; a signature no overload takes raises ``RuntimeError``.

Results: float32 and int32 scalars come back as Python ``float`` / ``int``, other scalar types
as weft scalar values (``wp.float64(...)``), composites as composite values;
``wp.config.legacy_scalar_return_types`` makes every float a ``float`` and every int an ``int``.
"""

from __future__ import annotations

import threading

import numpy as np

from .. import config
from .. import types as wt
from .. import vector_types as vt
from ..codegen import typing_rules as tr

_kernels: dict = {}
_lock = threading.Lock()


def _value_type(v):
    """The weft type a Python value has as a builtin argument (None: not a kernel value)."""
    if isinstance(v, (bool, np.bool_)):
        return wt.bool
    if isinstance(v, np.generic):  # before int / float: np.float64 is a float subclass
        return wt.dtype_from_numpy(v.dtype)
    if isinstance(v, int):
        return wt.int32
    if isinstance(v, float):
        return wt.float32
    if isinstance(v, wt.scalar_base):
        return type(v)
    if vt.is_composite(type(v)):
        return type(v)
    return None


def _type_name(v) -> str:
    if isinstance(v, (bool, int, float, np.generic)):
        return type(v).__name__
    t = _value_type(v)
    return wt.type_repr(t) if t is not None else type(v).__name__


def _as_argument(v, t):
    """``v`` as a launch argument of type ``t`` (integers wrap around, as a C cast does)."""
    if wt.is_scalar(t):
        return t(v.item() if isinstance(v, np.generic) else v)
    return v


def _numbers(out):
    """A result array's values as numbers (bfloat16's NumPy view is its uint16 bits without
    ml_dtypes)."""
    v = out.numpy()
    if v.dtype == np.uint16 and getattr(out.dtype, "_scalar", out.dtype) is wt.bfloat16:
        v = wt.np_bfloat16_bits_to_float32(v)
    return v


def _convert_result(value, rtype):
    if vt.is_composite(rtype):
        return rtype(*np.asarray(value).reshape(-1).tolist())
    v = np.asarray(value).item()
    if rtype is wt.bool:
        return bool(v)
    if config.legacy_scalar_return_types:
        return float(v) if wt.is_float(rtype) else int(v)
    if rtype is wt.float32:
        return float(v)
    if rtype is wt.int32:
        return int(v)
    return rtype(v)


def _kernel_for(builtin, types):
    key = (builtin.name, types)
    with _lock:
        found = _kernels.get(key)
        if found is None:
            fit = tr._first_fit(builtin, list(types))
            from . import _host_kernels

            if fit is None or fit[1] is None:
                found = (None, None)
            elif isinstance(fit[1], wt.TupleType):  # several outputs: a tuple of values
                found = (_host_kernels.make_multi(builtin, types, fit[1].types), fit[1])
            else:
                found = (_host_kernels.make(builtin, types, fit[1]), fit[1])
            _kernels[key] = found
    return found


def call(builtin, args, kwargs):
    """Evaluate ``builtin(*args, **kwargs)`` on the CPU with the builtin's native code."""
    if kwargs:
        names = [n for n, _ in builtin.overloads[0].params]
        args = list(args)
        for n in names[len(args) :]:
            if n not in kwargs:
                break
            args.append(kwargs.pop(n))
        if kwargs:
            raise TypeError(f"wp.{builtin.name}() got unexpected keyword argument(s) {', '.join(kwargs)}")
    names = [n for n, _ in builtin.overloads[0].params]
    args = list(args) + [builtin.defaults[n] for n in names[len(args) :] if n in builtin.defaults]
    types = tuple(_value_type(a) for a in args)
    kernel, rtype = _kernel_for(builtin, types) if all(t is not None for t in types) else (None, None)
    if kernel is None:
        shown = ", ".join(_type_name(a) for a in args)
        raise RuntimeError(f"Couldn't find a function '{builtin.name}' compatible with the arguments '{shown}'")
    from .launch import launch
    from ..array_constructors import zeros

    rtypes = rtype.types if isinstance(rtype, wt.TupleType) else (rtype,)
    outs = [zeros(1, dtype=t, device="cpu") for t in rtypes]
    launch(kernel, 1, inputs=[_as_argument(a, t) for a, t in zip(args, types)] + outs, device="cpu")
    values = tuple(_convert_result(_numbers(o)[0], t) for o, t in zip(outs, rtypes))
    return values if isinstance(rtype, wt.TupleType) else values[0]
