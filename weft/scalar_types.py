"""Scalar types and the kernel-level type vocabulary.

Contract: every value that flows through the compiler has a *weft type*, which is one of
  - a scalar type class (``float32``, ``int32``, ``bool`` ...), a subclass of ``scalar_base``;
  - an ``ArrayType(dtype, ndim)`` for array parameters;
  - a ``TupleType`` for multiple return values of funcs.
Python's ``float``/``int``/``bool`` annotations map to ``float32``/``int32``/``bool`` as in Warp.
Type objects are hashable and compare by value; their ``ctype`` / ``np_dtype`` / ``cname``
attributes are what the renderer and the runtime read.
"""

from __future__ import annotations

import builtins as _py
import ctypes
import typing as _typing

import numpy as np


class scalar_base:
    """Base class of scalar types. ``wp.float32(1.5)`` makes a typed Python-side value."""

    ctype = None
    np_dtype = None
    cname = ""
    kind = ""  # "float", "int", "uint" or "bool"
    size = 0

    def __init__(self, x=0):
        self.value = self._convert(x)

    @classmethod
    def _convert(cls, x):
        if isinstance(x, scalar_base):
            x = x.value
        if cls.kind in ("int", "uint") and isinstance(x, (_py.int, np.integer)) and not isinstance(x, _py.bool):
            return _wrap_int(cls, _py.int(x))  # as a C cast: wp.int8(300) == 44
        return cls.np_dtype.type(x).item()

    def __float__(self):
        return float(self.value)

    def __int__(self):
        return int(self.value)

    def __bool__(self):
        return _py.bool(self.value)

    def __index__(self):
        return int(self.value)

    def __eq__(self, other):
        other = other.value if isinstance(other, scalar_base) else other
        return self.value == other

    def __hash__(self):
        return hash(self.value)

    def __repr__(self):
        return f"{type(self).__name__}({self.value!r})"

    def __str__(self):
        return str(self.value)

    # Arithmetic on the host computes what a kernel computes in this type: floats rounded to it,
    # integers wrapping around, integer division truncating and x / 0 == x % 0 == 0 for integers.
    def _binary(self, other, op, reflected=False):
        cls = type(self)
        if isinstance(other, scalar_base):
            if type(other) is not cls:
                raise TypeError(
                    f"cannot combine {cls.__name__} and {type(other).__name__}; convert one, e.g. {cls.__name__}(x)"
                )
            other = other.value
        elif not isinstance(other, (_py.int, _py.float)):
            return NotImplemented
        a, b = (other, self.value) if reflected else (self.value, other)
        return _wrap(cls, op(cls, a, b))

    def __add__(self, o):
        return self._binary(o, _arith(lambda a, b: a + b))

    def __radd__(self, o):
        return self._binary(o, _arith(lambda a, b: a + b), True)

    def __sub__(self, o):
        return self._binary(o, _arith(lambda a, b: a - b))

    def __rsub__(self, o):
        return self._binary(o, _arith(lambda a, b: a - b), True)

    def __mul__(self, o):
        return self._binary(o, _arith(lambda a, b: a * b))

    def __rmul__(self, o):
        return self._binary(o, _arith(lambda a, b: a * b), True)

    def __truediv__(self, o):
        return self._binary(o, _divide)

    def __rtruediv__(self, o):
        return self._binary(o, _divide, True)

    def __mod__(self, o):
        return self._binary(o, _remainder)

    def __rmod__(self, o):
        return self._binary(o, _remainder, True)

    def __pow__(self, o):
        return self._binary(o, _power)

    def __rpow__(self, o):
        return self._binary(o, _power, True)

    def __neg__(self):
        return _wrap(type(self), _arith(lambda a, b: -a)(type(self), self.value, 0))

    def __pos__(self):
        return type(self)(self.value)

    def __abs__(self):
        return _wrap(type(self), _arith(lambda a, b: abs(a))(type(self), self.value, 0))

    def __lt__(self, o):
        return self.value < (o.value if isinstance(o, scalar_base) else o)

    def __le__(self, o):
        return self.value <= (o.value if isinstance(o, scalar_base) else o)

    def __gt__(self, o):
        return self.value > (o.value if isinstance(o, scalar_base) else o)

    def __ge__(self, o):
        return self.value >= (o.value if isinstance(o, scalar_base) else o)


def _wrap_int(cls, v: int) -> int:
    bits = 8 * cls.np_dtype.itemsize
    v %= 1 << bits
    if cls.kind == "int" and v >= 1 << (bits - 1):
        v -= 1 << bits
    return v


def _wrap(cls, v):
    """``v`` as a value of ``cls``: integers wrap around modulo 2**bits, floats round."""
    if cls.kind in ("int", "uint"):
        v = _wrap_int(cls, _py.int(v))
    return cls(v)


def _float_operand(cls):
    """The NumPy type a float scalar type computes in: its own, or float32 for bfloat16 when its
    NumPy dtype is only the uint16 of its bits (no ml_dtypes; the result is rounded back)."""
    return np.float32 if cls.np_dtype == np.uint16 else cls.np_dtype.type


def _arith(f):
    """A +, -, * or negation: exact for integers (wrapped after), in the float type for floats."""

    def op(cls, a, b):
        if cls.kind == "float":
            t = _float_operand(cls)
            with np.errstate(all="ignore"):
                return f(t(a), t(b))
        return f(a, b)

    return op


def _trunc_div(a, b):
    q = abs(a) // abs(b)
    return q if (a < 0) == (b < 0) else -q


def _divide(cls, a, b):
    if cls.kind == "float":
        with np.errstate(all="ignore"):
            return _float_operand(cls)(a) / _float_operand(cls)(b)
    return 0 if b == 0 else _trunc_div(_py.int(a), _py.int(b))


def _remainder(cls, a, b):
    if cls.kind == "float":
        with np.errstate(all="ignore"):
            return np.fmod(_float_operand(cls)(a), _float_operand(cls)(b))
    a, b = _py.int(a), _py.int(b)
    return 0 if b == 0 else a - b * _trunc_div(a, b)


def _power(cls, a, b):
    if cls.kind != "float":
        raise TypeError(f"** is defined for float types, not {cls.__name__}; convert to a float type first")
    with np.errstate(all="ignore"):
        return np.power(_float_operand(cls)(a), _float_operand(cls)(b))


_KIND_WORDS = {"float": "floating-point number", "int": "signed integer", "uint": "unsigned integer", "bool": "boolean"}


def _scalar_doc(name, np_dtype, kind):
    bits = np.dtype(np_dtype).itemsize * 8
    what = "A boolean (stored in one byte)" if kind == "bool" else f"A {bits}-bit {_KIND_WORDS[kind]}"
    return (
        f"{what}: the scalar type ``wp.{name}`` (NumPy ``{np.dtype(np_dtype).name}``).\n\n"
        f"Use it as a kernel annotation or array dtype (``wp.array(dtype=wp.{name})``), or call it to make "
        f"a typed value: ``wp.{name}(x)`` converts ``x`` as a C cast would, in Python and in kernels."
    )


def _scalar(name, ctype, np_dtype, kind):
    cls = type(name, (scalar_base,), {"__doc__": _scalar_doc(name, np_dtype, kind)})
    cls.ctype = ctype
    cls._type_ = ctype  # Warp's name for the ctypes type
    cls._length_ = 1  # Warp's component count, 1 for a scalar (as a vector type's is its length)
    cls.np_dtype = np.dtype(np_dtype)
    cls.cname = name
    cls.kind = kind
    cls.size = cls.np_dtype.itemsize
    cls.__module__ = __name__
    return cls


# bool is spelled ``bool`` in the public API (wp.bool), like Warp.
bool = _scalar("bool", ctypes.c_bool, np.bool_, "bool")  # noqa: A001
int8 = _scalar("int8", ctypes.c_int8, np.int8, "int")
int16 = _scalar("int16", ctypes.c_int16, np.int16, "int")
int32 = _scalar("int32", ctypes.c_int32, np.int32, "int")
int64 = _scalar("int64", ctypes.c_int64, np.int64, "int")
uint8 = _scalar("uint8", ctypes.c_uint8, np.uint8, "uint")
uint16 = _scalar("uint16", ctypes.c_uint16, np.uint16, "uint")
uint32 = _scalar("uint32", ctypes.c_uint32, np.uint32, "uint")
uint64 = _scalar("uint64", ctypes.c_uint64, np.uint64, "uint")
float16 = _scalar("float16", ctypes.c_uint16, np.float16, "float")
float32 = _scalar("float32", ctypes.c_float, np.float32, "float")
float64 = _scalar("float64", ctypes.c_double, np.float64, "float")


def np_float32_to_bfloat16_bits(values) -> np.ndarray:
    """The bfloat16 bit patterns (uint16) of float values: rounded to nearest even from float32,
    a NaN kept a (quiet) NaN. Matches the kernels' conversion (native/core.h)."""
    f = np.asarray(values, dtype=np.float32)
    x = np.ascontiguousarray(f.reshape(-1)).view(np.uint32).astype(np.uint64)
    rounded = ((x + 0x7FFF + ((x >> 16) & 1)) >> 16) & 0xFFFF
    nan = (x & 0x7FFFFFFF) > 0x7F800000
    return np.where(nan, (x >> 16) | 0x40, rounded).astype(np.uint16).reshape(f.shape)


def np_bfloat16_bits_to_float32(bits) -> np.ndarray:
    """The float32 values of bfloat16 bit patterns (uint16)."""
    b = np.asarray(bits, dtype=np.uint16)
    return (b.reshape(-1).astype(np.uint32) << 16).view(np.float32).reshape(b.shape)


def _bfloat16_numpy_dtype():
    """ml_dtypes' bfloat16 when installed (what ``.numpy()`` of a bfloat16 array gives, as in
    Warp), else uint16 holding the bit patterns."""
    try:
        import ml_dtypes
    except ImportError:
        return np.uint16
    return ml_dtypes.bfloat16


bfloat16 = _scalar("bfloat16", ctypes.c_uint16, _bfloat16_numpy_dtype(), "float")
bfloat16._convert = classmethod(
    lambda cls, x: float(np_bfloat16_bits_to_float32(np_float32_to_bfloat16_bits(x.value if isinstance(x, scalar_base) else x)))
)

# The 16-bit float types are stored as bit patterns: to_bits / from_bits convert one value.
float16.to_bits = staticmethod(lambda v: int(np.float16(v).view(np.uint16)))
float16.from_bits = staticmethod(lambda raw: float(np.array([raw], dtype=np.uint16).view(np.float16)[0]))
bfloat16.to_bits = staticmethod(lambda v: int(np_float32_to_bfloat16_bits(v)))
bfloat16.from_bits = staticmethod(lambda raw: float(np_bfloat16_bits_to_float32(raw)))
_bit_stored = (float16, bfloat16)


def is_bit_stored(t) -> _py.bool:
    """float16 and bfloat16: a ctypes field or kernel argument holds their bit pattern."""
    return t in _bit_stored


def to_storage(values, t) -> np.ndarray:
    """``values`` as a NumPy array of the storage dtype of scalar type ``t``. For bfloat16, uint16
    data are bit patterns and anything else numbers to convert (rounded as the kernels round)."""
    if t is bfloat16:
        src = np.asarray(values)
        bits = src if src.dtype == np.uint16 else np_float32_to_bfloat16_bits(src)
        return bits.view(bfloat16.np_dtype)
    return np.asarray(values, dtype=t.np_dtype)


half = float16

# As Warp's: the numeric scalar types (bool is not one), signed before unsigned per width.
int_types = (int8, uint8, int16, uint16, int32, uint32, int64, uint64)
float_types = (float16, bfloat16, float32, float64)
scalar_types = int_types + float_types
_all_scalar_types = (bool,) + scalar_types

# Generic scalar annotations, as Warp's: a parameter annotated ``wp.Float`` (or a composite of
# ``dtype=wp.Float``) takes any of the listed types, one func or kernel instance per type.
Int = _typing.TypeVar("Int", *int_types)
Float = _typing.TypeVar("Float", *float_types)
Scalar = _typing.TypeVar("Scalar", *int_types, *float_types)

_python_to_weft = {_py.float: float32, _py.int: int32, _py.bool: bool}
# bfloat16 has a NumPy dtype of its own only with ml_dtypes (else its uint16 storage is uint16's)
_numpy_typed = tuple(t for t in _all_scalar_types if not (t is bfloat16 and t.np_dtype == np.uint16))
_np_to_weft = {t.np_dtype: t for t in _numpy_typed}


def is_scalar(t) -> _py.bool:
    return isinstance(t, type) and issubclass(t, scalar_base) and t is not scalar_base


def is_float(t) -> _py.bool:
    return is_scalar(t) and t.kind == "float"


def is_differentiable(t) -> bool:
    """Whether values of type ``t`` carry gradients: float scalars, composites and structs of
    floats, tuples containing any of them."""
    if is_float(t):
        return True
    if isinstance(t, TupleType):
        return any(is_differentiable(x) for x in t.types)
    return getattr(t, "_differentiable", False)


def is_int(t) -> _py.bool:
    return is_scalar(t) and t.kind in ("int", "uint")


def is_bool(t) -> _py.bool:
    return t is bool


def type_from_annotation(t):
    """Map a user annotation (``float``, ``wp.float64``, ``np.float32`` ...) to a weft type, or None."""
    if t in _python_to_weft:
        return _python_to_weft[t]
    if is_scalar(t):
        return t
    try:
        return _np_to_weft.get(np.dtype(t))
    except TypeError:
        return None


def resolve_array_dtype(dtype):
    """Map a user dtype (``float``, ``wp.float64``, ``np.int32``, a vector type, a struct...) to
    the weft type an array of it holds.

    Raises:
        TypeError: ``dtype`` is not a type an array can hold.
    """
    if is_scalar(dtype):
        return dtype
    if hasattr(dtype, "_shape") and hasattr(dtype, "_scalar"):
        return dtype  # vector / matrix types and structs (a fixed-size group of scalars)
    try:
        resolved = type_from_annotation(dtype)
    except TypeError:
        resolved = None
    if resolved is None:
        raise TypeError(
            f"Unsupported array dtype {dtype!r}: expected a weft scalar type (wp.float32, wp.int32, ...), "
            f"float, int, bool, or a NumPy dtype such as np.float32"
        )
    return resolved


def scalar_from_numpy(np_dtype):
    """The weft scalar type of a NumPy dtype, or None when weft has none."""
    return _np_to_weft.get(np.dtype(np_dtype))


# As warp.types: NumPy scalar types and dtype objects -> weft scalar types, and back.
np_dtype_to_warp_type = {**{t.np_dtype.type: t for t in _numpy_typed}, **{t.np_dtype: t for t in _numpy_typed}}
warp_type_to_np_dtype = {t: t.np_dtype.type for t in _all_scalar_types}


def dtype_from_numpy(numpy_dtype):
    """The weft scalar type of a NumPy dtype or scalar type (``np.float32`` -> ``wp.float32``).

    Raises:
        TypeError: weft has no scalar type for it.
    """
    t = np_dtype_to_warp_type.get(numpy_dtype)
    if t is None:
        try:
            t = _np_to_weft.get(np.dtype(numpy_dtype))
        except TypeError:
            t = None
    if t is None:
        raise TypeError(f"Cannot convert {numpy_dtype} to a weft (Warp) type")
    return t


def dtype_to_numpy(warp_dtype):
    """The NumPy scalar type of a weft scalar type (``wp.float32`` -> ``np.float32``).

    Raises:
        TypeError: ``warp_dtype`` is not a weft scalar type.
    """
    t = warp_type_to_np_dtype.get(warp_dtype)
    if t is None:
        raise TypeError(f"Cannot convert {warp_dtype} to a NumPy type")
    return t


def type_repr(t) -> str:
    """Short readable name of a weft type, used in error messages.

    Args:
        t: A weft or Python type.

    Returns:
        The name, a str.
    """
    if is_scalar(t):
        return t.cname
    if isinstance(t, (type, _typing.TypeVar)):
        return t.__name__  # vector, matrix and struct classes; wp.Float and kin
    return str(t)


class _ArrayKindType:
    """An interned (element type, dimensions) pair of one array kind, named by ``_kind_name``:
    launch-time checks compare these by identity. Types of different kinds are never equal."""

    __slots__ = ("dtype", "ndim", "__weakref__")
    _kind_name = ""

    def __new__(cls, dtype, ndim: int):
        key = (dtype, ndim)
        t = cls._interned.get(key)
        if t is None:
            t = object.__new__(cls)
            t.dtype = dtype
            t.ndim = ndim
            cls._interned[key] = t
        return t

    def __eq__(self, other):
        return other is self or (type(other) is type(self) and other.dtype == self.dtype and other.ndim == self.ndim)

    def __hash__(self):
        return hash((self._kind_name, self.dtype, self.ndim))

    def __repr__(self):
        if self.ndim is _typing.Any:
            return f"{self._kind_name}({type_repr(self.dtype)}, ndim=Any)"
        dims = f"{self.ndim}d" if self.ndim > 1 else ""
        return f"{self._kind_name}{dims}({type_repr(self.dtype)})"


class ArrayType(_ArrayKindType):
    """Kernel-side type of an array parameter: element type and number of dimensions."""

    __slots__ = ()
    _kind_name = "array"
    _interned: dict = {}


class LocalArrayType(ArrayType):
    """Kernel-side type of an array over a kernel's or func's own storage (``wp.zeros(shape, dtype)``
    inside a kernel): an ``array_t`` like any array (indexing, views, ``.ptr``, passing to funcs),
    kept apart so that its writes replay in the backward pass and funcs taking one get their own
    instance. It carries no gradient."""

    __slots__ = ()
    _kind_name = "localarray"
    _interned: dict = {}


def array_twin(t):
    """The plain array type of a local array type (how builtins and annotations see it)."""
    return ArrayType(t.dtype, t.ndim) if isinstance(t, LocalArrayType) else t


def fixed_array_shape(shape) -> tuple:
    """The shape of a fixed-size array (``wp.zeros`` in a kernel, ``wp.fixedarray``): an int or
    a tuple of 1 to ``MAX_DIMS`` positive ints, as a tuple.

    Raises:
        ValueError: anything else.
    """
    shape = (shape,) if isinstance(shape, int) else tuple(shape or ())
    if not 1 <= len(shape) <= MAX_DIMS or not all(isinstance(d, int) and d > 0 for d in shape):
        raise ValueError(f"a fixed-size array needs 1 to {MAX_DIMS} positive dimensions, got shape {shape}")
    return shape


class FixedArrayType:
    """The storage of a fixed-size array created in a kernel or func: ``shape`` (a tuple of
    positive ints) elements of ``dtype``, held by value (a func returns it to its caller)."""

    __slots__ = ("dtype", "shape", "__weakref__")
    _interned: dict = {}

    def __new__(cls, dtype, shape):
        key = (dtype, tuple(shape))
        t = cls._interned.get(key)
        if t is None:
            t = object.__new__(cls)
            t.dtype = dtype
            t.shape = tuple(shape)
            cls._interned[key] = t
        return t

    @property
    def ndim(self) -> int:
        return len(self.shape)

    @property
    def size(self) -> int:
        n = 1
        for d in self.shape:
            n *= d
        return n

    def __eq__(self, other):
        return other is self or (
            isinstance(other, FixedArrayType) and other.dtype == self.dtype and other.shape == self.shape
        )

    def __hash__(self):
        return hash(("fixedarray", self.dtype, self.shape))

    def __repr__(self):
        return f"fixedarray(shape={self.shape}, dtype={type_repr(self.dtype)})"


class IndexedArrayType(_ArrayKindType):
    """Kernel-side type of a ``wp.indexedarray`` parameter: an array of ``dtype`` with ``ndim``
    dimensions seen through per-dimension index arrays. Distinct from ``ArrayType``: kernels
    reach its elements through its data array (``codegen/frontend.py``)."""

    __slots__ = ()
    _kind_name = "indexedarray"
    _interned: dict = {}


class FabricArrayType(_ArrayKindType):
    """Kernel-side type of a ``wp.fabricarray`` parameter: elements of ``dtype`` spread over
    buckets (``native/fabric.h``); ``ndim`` 1, or 2 for an array of arrays (``a[i]`` is then an
    array). Kernels reach an element through a one-element view (``codegen/frontend.py``)."""

    __slots__ = ()
    _kind_name = "fabricarray"
    _interned: dict = {}


class IndexedFabricArrayType(_ArrayKindType):
    """Kernel-side type of a ``wp.indexedfabricarray`` parameter: a Fabric array seen through one
    int32 index array."""

    __slots__ = ()
    _kind_name = "indexedfabricarray"
    _interned: dict = {}


FABRIC_KINDS = (FabricArrayType, IndexedFabricArrayType)


def is_fabric(t) -> _py.bool:
    """A Fabric array type (plain or indexed)."""
    return isinstance(t, FABRIC_KINDS)


def is_array_like(t) -> _py.bool:
    """An array, indexed array or Fabric array type."""
    return isinstance(t, (ArrayType, IndexedArrayType, FabricArrayType, IndexedFabricArrayType))


class TupleType:
    """Type of a multi-value return from a func."""

    __slots__ = ("types",)

    def __init__(self, types):
        self.types = tuple(types)

    def __eq__(self, other):
        return isinstance(other, TupleType) and other.types == self.types

    def __hash__(self):
        return hash(("tuple", self.types))

    def __repr__(self):
        return "tuple(" + ", ".join(type_repr(t) for t in self.types) + ")"


def is_array(t) -> _py.bool:
    return isinstance(t, ArrayType)


MAX_DIMS = 4


class launch_bounds_t(ctypes.Structure):
    """Mirror of ``weft::launch_bounds`` in ``native/runtime.h``: the launch grid."""

    _fields_ = [("shape", ctypes.c_int32 * MAX_DIMS), ("ndim", ctypes.c_int32), ("size", ctypes.c_int64)]


class array_t(ctypes.Structure):
    """Mirror of ``weft::array_t<T>`` in ``native/array.h``: how an array crosses into C++."""

    _fields_ = [
        ("data", ctypes.c_uint64),
        ("grad", ctypes.c_uint64),
        ("shape", ctypes.c_int32 * MAX_DIMS),
        ("strides", ctypes.c_int64 * MAX_DIMS),
        ("ndim", ctypes.c_int32),
        ("flags", ctypes.c_int32),
    ]


class indexedarray_t(ctypes.Structure):
    """Mirror of ``weft::indexedarray_t<T>`` in ``native/array.h``: an indexed array crossing into
    C++ (its data array, one int32 index buffer per dimension or null, the indexed shape)."""

    _fields_ = [
        ("data", array_t),
        ("indices", ctypes.c_uint64 * MAX_DIMS),
        ("shape", ctypes.c_int32 * MAX_DIMS),
    ]


class fabricbucket_t(ctypes.Structure):
    """Mirror of ``weft::fabricbucket_t`` in ``native/fabric.h``: one bucket of a Fabric array
    (the global indices it covers, its data, and for arrays of arrays the inner lengths)."""

    _fields_ = [
        ("index_start", ctypes.c_uint64),
        ("index_end", ctypes.c_uint64),
        ("ptr", ctypes.c_uint64),
        ("lengths", ctypes.c_uint64),
    ]


class fabricarray_t(ctypes.Structure):
    """Mirror of ``weft::fabricarray_t<T>``: the bucket table (on the array's device), its length
    and the number of elements."""

    _fields_ = [("buckets", ctypes.c_uint64), ("nbuckets", ctypes.c_uint64), ("size", ctypes.c_uint64)]


class indexedfabricarray_t(ctypes.Structure):
    """Mirror of ``weft::indexedfabricarray_t<T>``: a Fabric array, an int32 index buffer and the
    number of indices."""

    _fields_ = [("fa", fabricarray_t), ("indices", ctypes.c_uint64), ("size", ctypes.c_uint64)]


# The ctypes mirror each array kind's descriptor takes in an argument struct or a struct field.
# ArrayType subclasses (local arrays) are passed as array_t too; look them up with descriptor_ctype.
DESCRIPTOR_CTYPES = {
    ArrayType: array_t,
    IndexedArrayType: indexedarray_t,
    FabricArrayType: fabricarray_t,
    IndexedFabricArrayType: indexedfabricarray_t,
}


def descriptor_ctype(t):
    """The ctypes mirror of an array kind's descriptor (``array_t`` for arrays), or None."""
    return array_t if isinstance(t, ArrayType) else DESCRIPTOR_CTYPES.get(type(t))


# array_t.flags bits
ARRAY_RETAIN_GRAD = 1


# The public face of these classes is ``weft.types`` (``wp.types.float32``, as ``warp.types``):
# their reprs, pickles and error messages name that module, which re-exports them.
for _cls in [v for k, v in list(globals().items()) if isinstance(v, type) and v.__module__ == __name__]:
    _cls.__module__ = "weft.types"
del _cls
