"""Warp's public type-introspection helpers (``warp.types.types_equal``, ``type_size``,
``type_is_vector``, ``is_struct`` ...), answered from weft's own types. ``type_is_*`` take a
type, ``is_*`` (except the scalar-type predicates weft already had) a value."""

from __future__ import annotations

import builtins as _py
import typing as _typing
import ctypes

from . import scalar_types as st

_COMPOSITE_KINDS = ("vector", "matrix", "quaternion", "transform")

__all__ = [
    "get_type_code",
    "is_composite",
    "is_matrix",
    "is_quaternion",
    "is_struct",
    "is_transformation",
    "is_value",
    "is_vector",
    "type_is_array",
    "type_is_composite",
    "type_is_float",
    "type_is_int",
    "type_is_matrix",
    "type_is_quaternion",
    "type_is_scalar",
    "type_is_struct",
    "type_is_transformation",
    "type_is_value",
    "type_is_vector",
    "type_length",
    "type_scalar_type",
    "type_size",
    "type_size_in_bytes",
    "type_to_warp",
    "types_equal",
]


def type_to_warp(dtype):
    """Python's ``float`` / ``int`` / ``bool`` as weft's ``float32`` / ``int32`` / ``bool``; other
    types unchanged.

    Args:
        dtype: A type.

    Returns:
        The weft type.
    """
    if dtype is float:
        return st.float32
    if dtype is int:
        return st.int32
    if dtype is _py.bool:
        return st.bool
    return dtype


def _kind(t):
    return getattr(t, "_kind", None) if isinstance(t, type) else None


def type_is_vector(t) -> _py.bool:
    """Whether ``t`` is a vector type.

    Args:
        t: A type (weft's, Python's scalar types, a struct or array type...).

    Returns:
        True or False.
    """
    return _kind(t) == "vector"


def type_is_matrix(t) -> _py.bool:
    """Whether ``t`` is a matrix type.

    Args:
        t: A type (weft's, Python's scalar types, a struct or array type...).

    Returns:
        True or False.
    """
    return _kind(t) == "matrix"


def type_is_quaternion(t) -> _py.bool:
    """Whether ``t`` is a quaternion type.

    Args:
        t: A type (weft's, Python's scalar types, a struct or array type...).

    Returns:
        True or False.
    """
    return _kind(t) == "quaternion"


def type_is_transformation(t) -> _py.bool:
    """Whether ``t`` is a transformation type.

    Args:
        t: A type (weft's, Python's scalar types, a struct or array type...).

    Returns:
        True or False.
    """
    return _kind(t) == "transform"


def type_is_composite(t) -> _py.bool:
    """Whether ``t`` is a vector, matrix, quaternion or transformation type.

    Args:
        t: A type (weft's, Python's scalar types, a struct or array type...).

    Returns:
        True or False.
    """
    return _kind(t) in _COMPOSITE_KINDS


def type_is_struct(t) -> _py.bool:
    """Whether ``t`` is a ``@wp.struct`` type.

    Args:
        t: A type (weft's, Python's scalar types, a struct or array type...).

    Returns:
        True or False.
    """
    return getattr(t, "_kind", None) == "struct" and not isinstance(t, type)


def type_is_int(t) -> _py.bool:
    """Whether ``t`` is an integer scalar type (``int`` counts).

    Args:
        t: A type (weft's, Python's scalar types, a struct or array type...).

    Returns:
        True or False.
    """
    return st.is_int(type_to_warp(t))


def type_is_float(t) -> _py.bool:
    """Whether ``t`` is a floating-point scalar type (``float`` counts).

    Args:
        t: A type (weft's, Python's scalar types, a struct or array type...).

    Returns:
        True or False.
    """
    return st.is_float(type_to_warp(t))


def type_is_scalar(t) -> _py.bool:
    """Whether ``t`` is a numeric or bool scalar type.

    Args:
        t: A type (weft's, Python's scalar types, a struct or array type...).

    Returns:
        True or False.
    """
    return st.is_scalar(type_to_warp(t))


def type_is_value(t) -> _py.bool:
    """Whether ``t`` is a value type: a scalar (Python's included) or a composite.

    Args:
        t: A type (weft's, Python's scalar types, a struct or array type...).

    Returns:
        True or False.
    """
    return type_is_scalar(t) or type_is_composite(t)


def type_is_array(t) -> _py.bool:
    """Whether ``t`` is an array class (``wp.array``, ``wp.indexedarray`` and their n-d forms)."""
    return isinstance(t, type) and getattr(t, "_weft_array_class", False)


def is_composite(x) -> _py.bool:
    """Whether ``x`` is a vector, matrix, quaternion or transformation value.

    Args:
        x: Any value.

    Returns:
        True or False.
    """
    return type_is_composite(type(x))


def is_vector(x) -> _py.bool:
    """Whether ``x`` is a vector value.

    Args:
        x: Any value.

    Returns:
        True or False.
    """
    return type_is_vector(type(x))


def is_matrix(x) -> _py.bool:
    """Whether ``x`` is a matrix value.

    Args:
        x: Any value.

    Returns:
        True or False.
    """
    return type_is_matrix(type(x))


def is_quaternion(x) -> _py.bool:
    """Whether ``x`` is a quaternion value.

    Args:
        x: Any value.

    Returns:
        True or False.
    """
    return type_is_quaternion(type(x))


def is_transformation(x) -> _py.bool:
    """Whether ``x`` is a transformation value.

    Args:
        x: Any value.

    Returns:
        True or False.
    """
    return type_is_transformation(type(x))


def is_struct(x) -> _py.bool:
    """Whether ``x`` is a ``@wp.struct`` instance.

    Args:
        x: Any value.

    Returns:
        True or False.
    """
    return getattr(x, "_struct", None) is not None


def is_value(x) -> _py.bool:
    """Whether ``x`` is a value: a Python or weft scalar, or a composite.

    Args:
        x: Any value.

    Returns:
        True or False.
    """
    return isinstance(x, (int, float, _py.bool, st.scalar_base)) or is_composite(x)


def type_scalar_type(dtype):
    """The scalar type of a composite (``float32`` for ``vec3``), else ``dtype`` itself.

    Args:
        dtype: A scalar or composite type.

    Returns:
        A scalar type.
    """
    return getattr(dtype, "_scalar", dtype) if type_is_composite(dtype) else dtype


def type_length(obj) -> int:
    """The number of components along the first dimension of a composite type or value (3 for
    ``vec3``, 2 for ``mat23``); a tuple's or sequence's length otherwise.

    Args:
        obj: A composite type or value (a scalar counts as 1).

    Returns:
        The length, an int.
    """
    t = obj if isinstance(obj, type) else type(obj)
    if type_is_composite(t):
        return t._shape[0]
    if isinstance(obj, st.TupleType):
        return len(obj.types)
    return len(obj)


def type_size(dtype) -> int:
    """The number of scalars in one element: 1 for a scalar or struct, the component count of a
    vector, matrix, quaternion or transformation.

    Args:
        dtype: An element type.

    Returns:
        The count, an int.
    """
    return dtype._length_ if type_is_composite(dtype) else 1


def type_size_in_bytes(dtype) -> int:
    """The size in bytes of one element of ``dtype``.

    Args:
        dtype: An element type (scalar, composite or struct).

    Returns:
        The size, an int.
    """
    dtype = type_to_warp(dtype)
    if type_is_struct(dtype):
        return ctypes.sizeof(dtype.ctype)
    if type_is_composite(dtype):
        return dtype._length_ * type_size_in_bytes(dtype._scalar)
    return dtype.np_dtype.itemsize if hasattr(dtype, "np_dtype") else ctypes.sizeof(dtype)


def types_equal(a, b) -> _py.bool:
    """Whether two types are the same weft type: Python's scalar types count as weft's, array
    annotations compare by element type, dimensions and kind.

    Args:
        a: A type.
        b: Another type.

    Returns:
        True or False.
    """
    if a is b:
        return True
    return _normalized(a) == _normalized(b)


def _normalized(t):
    t = type_to_warp(t)
    kernel_type = getattr(t, "kernel_type", None)
    if callable(kernel_type) and not isinstance(t, type):
        return kernel_type()
    return t


def _scalar_code(t) -> str:
    if t is st.bool:
        return "b"
    if t is st.bfloat16:
        return "bf2"
    return {"int": "i", "uint": "u", "float": "f"}[t.kind] + str(t.np_dtype.itemsize)


def _dim_code(d) -> str:
    return "?" if d is _typing.Any or isinstance(d, _typing.TypeVar) else str(d)


def get_type_code(t) -> str:
    """Warp's short code of a type, equal for types kernels treat alike: ``f4`` (float32), ``u1``
    (uint8), ``b`` (bool), ``v3f4`` (vec3), ``m22f8`` (mat22d), ``qf4`` / ``tf4`` (quaternions,
    transforms), ``a2v3f4`` (2-d array of vec3, an annotation or an array), ``ia1f4`` (indexed
    array), ``?`` for ``Any`` (``v?f4``: a vector of any length), ``f?`` for ``wp.Float``, a
    struct's C name, ``tr84f4`` for a tile; other objects give their name.

    Args:
        t: A weft type (scalar, composite, struct or array type).

    Returns:
        The code, a str.
    """
    t = type_to_warp(t)
    if t is _typing.Any:
        return "?"
    if isinstance(t, _typing.TypeVar):
        kinds = {c.kind for c in t.__constraints__ if st.is_scalar(c)}
        return ("f" if kinds == {"float"} else "i" if kinds <= {"int", "uint"} and kinds else "") + "?"
    if st.is_scalar(t):
        return _scalar_code(t)
    if not isinstance(t, type) and callable(getattr(t, "kernel_type", None)):
        t = t.kernel_type()  # an array, or an array annotation
    if st.is_array_like(t):
        prefix = {st.IndexedArrayType: "ia", st.FabricArrayType: "fa", st.IndexedFabricArrayType: "ifa"}.get(type(t), "a")
        return f"{prefix}{_dim_code(t.ndim)}{get_type_code(t.dtype)}"
    kind = getattr(t, "_kind", None) or getattr(t, "kind", None)
    if kind in _COMPOSITE_KINDS:  # a composite class, or a generic one (Any parts)
        shape = tuple(getattr(t, "_shape", None) or getattr(t, "shape", ()))
        scalar = getattr(t, "_scalar", None) or getattr(t, "dtype", None)
        dims = "".join(_dim_code(d) for d in shape) if kind in ("vector", "matrix") else ""
        return {"vector": "v", "matrix": "m", "quaternion": "q", "transform": "t"}[kind] + dims + get_type_code(scalar)
    if kind == "struct":
        return t.ctype.__name__
    if hasattr(t, "storage") and hasattr(t, "shape") and hasattr(t, "dtype"):  # a tile annotation
        dims = "?" if t.shape is _typing.Any else "".join(str(d) for d in t.shape)
        return f"t{t.storage[0]}{dims}{get_type_code(t.dtype)}"
    return getattr(t, "__name__", str(t))
