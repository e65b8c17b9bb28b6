"""Type rules used by the frontend: overload resolution for builtins and funcs, and the
adaptation of untyped Python literals to the type of the other operands.

Contract: functions here take weft types / IR vars and return a choice (an overload, a list of
possibly converted argument vars) or raise ``TypeError`` with a readable message; the frontend
wraps that message with the source location.
"""

from __future__ import annotations

import types as _pytypes
import typing

import numpy as np

from .. import types as wt
from .. import vector_types as vt
from ..builtins import registry as reg
from ..reference import Reference
from ..tile.ops_data import TileStackType
from ..tile.types import TileAnnotation, TileType
from .errors import WarpCodegenTypeError
from .statics import Static


def literal_fits(value, target) -> bool:
    """Whether an untyped Python literal may take the scalar type ``target``."""
    if not wt.is_scalar(target):
        return False
    if isinstance(value, bool):
        return target is wt.bool or wt.is_int(target)
    if isinstance(value, int):
        if wt.is_int(target):
            info = np.iinfo(target.np_dtype)
            return info.min <= value <= info.max
        return wt.is_float(target)
    if isinstance(value, float):
        return wt.is_float(target)
    return False


def convert_literal(value, target):
    """The Python value of ``value`` as the scalar type ``target``, converted as C++ converts it
    (what the kernel would compute): integers wrap around (``wp.uint32(-1)`` is 4294967295),
    floats to integers truncate toward zero."""
    if wt.is_int(target) and not isinstance(value, bool) and not (isinstance(value, float) and not np.isfinite(value)):
        bits = 8 * target.np_dtype.itemsize
        wrapped = int(value) % (1 << bits)  # int() truncates a float toward zero, as a C cast
        if target.kind == "int" and wrapped >= 1 << (bits - 1):
            wrapped -= 1 << bits
        return wrapped
    return target._convert(value)  # the scalar type's own conversion (bfloat16 rounds, whatever its NumPy dtype)


def choose_overload(builtin, args, make_const):
    """Pick the first overload of ``builtin`` that accepts ``args``.

    Literals (``Var.literal``) first try their own type; if no overload fits, each literal is
    retyped to the type of the first non-literal scalar argument it fits (so ``x * 2.0`` works
    for float64 ``x``). Returns ``(overload, args, result_type)``.
    """
    arg_types = [a.type for a in args]
    found = _first_fit(builtin, arg_types)
    if found is not None:
        return found[0], args, found[1]
    typed = [getattr(a.type, "_scalar", a.type) for a in args if not a.literal]
    typed = [t for t in typed if wt.is_scalar(t) and t is not wt.bool]
    if typed and any(a.literal for a in args):
        target = typed[0]
        new_args = [
            make_const(convert_literal(a.const, target), target) if a.literal and literal_fits(a.const, target) else a
            for a in args
        ]
        found = _first_fit(builtin, [a.type for a in new_args])
        if found is not None:
            return found[0], new_args, found[1]
    shown = ", ".join(wt.type_repr(t) for t in arg_types)
    if getattr(builtin, "mismatch_reason", None):
        raise TypeError(f"{builtin.name}({shown}): {builtin.mismatch_reason}")
    cands = "; ".join(builtin.name + ov.signature() for ov in builtin.overloads[:6])
    raise TypeError(
        f"{_mixed_types_lead(arg_types)}no overload of '{builtin.name}' accepts argument types ({shown}). Candidates: {cands}. "
        f"Mixed scalar types need an explicit cast, e.g. wp.float64(x) or float(x)"
    )


def _mixed_types_lead(arg_types) -> str:
    """Warp's words when the arguments differ only in their scalar types: scalars of different
    types, or vectors/matrices of one shape with different scalar types."""
    names = [wt.type_repr(t) for t in arg_types]
    if len(arg_types) < 2 or len(set(names)) < 2:
        return ""
    if all(wt.is_scalar(t) for t in arg_types):
        return f"Input types must be the same, got {names}: "
    shapes = {(getattr(t, "_kind", None), getattr(t, "_shape", None)) for t in arg_types}
    if len(shapes) == 1 and next(iter(shapes))[0] is not None:
        return f"Input types must be exactly the same, got {names}: "
    return ""


def _first_fit(builtin, arg_types):
    """The first overload accepting ``arg_types`` and its result type; a callable type rule may
    refuse a combination (e.g. mismatched matrix shapes) by returning None."""
    arg_types = [wt.array_twin(t) for t in arg_types]  # builtins take local arrays as arrays
    for ov in builtin.overloads:
        b = ov.bind(arg_types)
        if b is None:
            continue
        result = ov.result_type(b, arg_types)
        if result is None and ov.returns is not None:
            continue
        return ov, result
    return None


class FunctionParam:
    """The type of a ``g: wp.Function`` func parameter: a func or builtin chosen at build time.
    Generic: each function passed makes its own instance, where ``g`` names that function."""

    def __repr__(self):
        return "Function"


FUNCTION = FunctionParam()


class FunctionValue:
    """The concrete type of a ``wp.Function`` parameter: the function passed (a weft func or a
    builtin), compared by identity; its repr names it stably (it enters generated symbols)."""

    __slots__ = ("value",)

    def __init__(self, value):
        self.value = value

    def __eq__(self, other):
        return isinstance(other, FunctionValue) and other.value is self.value

    def __hash__(self):
        return id(self.value)

    def __repr__(self):
        v = self.value
        module = getattr(getattr(v, "module", None), "name", "")
        return f"Function({module}:{getattr(v, 'key', getattr(v, 'name', v))}#{getattr(v, 'index', 0)})"


def is_function_target(value) -> bool:
    """A value a ``wp.Function`` parameter takes: a weft func or a builtin."""
    if isinstance(value, reg.Builtin):
        return True
    return getattr(value, "_weft_kind", None) == "func" and not isinstance(value, type)


class TupleTemplate:
    """A generic tuple parameter: ``tuple`` (any tuple) or ``tuple[T, ...]`` (any length, items
    of type T)."""

    def __init__(self, item=None):
        self.item = item

    def accepts(self, t) -> bool:
        return isinstance(t, wt.TupleType) and (self.item is None or all(x == self.item for x in t.types))

    def __eq__(self, other):
        return isinstance(other, TupleTemplate) and other.item == self.item

    def __hash__(self):
        return hash((TupleTemplate, self.item))

    def __repr__(self):
        return "tuple" if self.item is None else f"tuple[{wt.type_repr(self.item)}, ...]"


def _tuple_annotation(annotation):
    """``tuple[int, float]`` -> TupleType; ``tuple`` / ``tuple[T, ...]`` -> TupleTemplate."""
    args = typing.get_args(annotation)
    if not args:
        return TupleTemplate()
    if len(args) == 2 and args[1] is Ellipsis:
        return TupleTemplate(annotation_type(args[0]))
    types_ = [annotation_type(a) for a in args]
    if any(t is None or is_generic(t) for t in types_):
        return None
    return wt.TupleType(types_)


def annotation_type(annotation):
    """Map a parameter annotation to a weft type, ``typing.Any`` for generic, or None if unknown."""
    if typing.get_origin(annotation) in (typing.Union, _pytypes.UnionType):
        raise WarpCodegenTypeError(
            f"Union type annotations are only supported at Python scope, not in kernels and funcs: {annotation!r}"
        )
    if annotation is tuple or typing.get_origin(annotation) is tuple:
        return _tuple_annotation(annotation)
    if isinstance(annotation, (TileAnnotation, TileType, TileStackType)):
        return annotation  # a tile (stack) parameter: matches tiles of its dtype and shape
    if isinstance(annotation, type) and getattr(annotation, "_weft_kind", None) == "func":
        return FUNCTION  # g: wp.Function
    if annotation is typing.Any or isinstance(
        annotation, (vt.GenericComposite, wt.ArrayType, wt.IndexedArrayType, *wt.FABRIC_KINDS, typing.TypeVar)
    ):
        return annotation
    if getattr(annotation, "_kind", None) and getattr(annotation, "_scalar", None) is not None:
        return annotation  # vector / matrix / quaternion / transform classes
    if isinstance(annotation, Reference):  # a by-reference func parameter has its value's type
        return annotation_type(annotation.dtype)
    kernel_type = getattr(annotation, "kernel_type", None)
    if callable(kernel_type):
        return kernel_type()
    return wt.type_from_annotation(annotation)


def is_generic(t) -> bool:
    """A parameter type that each use makes concrete: ``Any``, a type variable (``wp.Float``), a
    composite or an array with a generic part."""
    return (
        t is typing.Any
        or t is FUNCTION
        or isinstance(t, (vt.GenericComposite, typing.TypeVar, TupleTemplate, TileAnnotation))
        or (wt.is_array_like(t) and (vt.is_generic_dtype(t.dtype) or t.ndim is typing.Any))
    )


def template_accepts(template, concrete) -> bool:
    """Whether the concrete type ``concrete`` instantiates the (maybe generic) parameter type
    ``template``: ``Any`` takes anything, ``array(dtype=Any)`` an array of its dimensions, a
    generic composite the composites it accepts, a concrete type only itself."""
    if template is typing.Any:
        return True
    if isinstance(template, typing.TypeVar):
        return wt.is_scalar(concrete) and vt.dtype_fits(template, concrete)
    if isinstance(template, (vt.GenericComposite, TupleTemplate, TileAnnotation)):
        return template.accepts(concrete)
    if isinstance(concrete, wt.LocalArrayType) and type(template) is wt.ArrayType:
        return template_accepts(template, wt.array_twin(concrete))  # a local array is an array
    if wt.is_array_like(template) and (vt.is_generic_dtype(template.dtype) or template.ndim is typing.Any):
        return (
            type(concrete) is type(template)
            and (template.ndim is typing.Any or concrete.ndim == template.ndim)
            and vt.dtype_fits(template.dtype, concrete.dtype)
        )
    return template == concrete


def param_accepts(param_type, arg) -> typing.Optional[object]:
    """Whether a func parameter of ``param_type`` takes ``arg``; returns the arg's adapted type.
    A function (``statics.Static`` of a func or builtin) fits only a ``wp.Function`` parameter."""
    if param_type is FUNCTION or isinstance(arg, Static):
        fits = param_type is FUNCTION and isinstance(arg, Static) and is_function_target(arg.value)
        return FunctionValue(arg.value) if fits else None
    if param_type is typing.Any or param_type is None:
        return arg.type
    if isinstance(param_type, (vt.GenericComposite, typing.TypeVar, TupleTemplate, TileAnnotation)) or (
        wt.is_array_like(param_type) and wt.is_array_like(arg.type)
    ):
        return arg.type if template_accepts(param_type, arg.type) else None
    if param_type == arg.type:
        return param_type
    if arg.literal and literal_fits(arg.const, param_type):
        return param_type
    return None
