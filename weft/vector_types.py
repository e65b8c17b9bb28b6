"""Composite value types: vectors, matrices, quaternions, transforms (and spatial aliases).

Contract: ``vector(length, dtype)`` / ``matrix(shape, dtype)`` / ``quaternion(dtype)`` /
``transformation(dtype)`` return one cached class per parameter set, so types compare by
identity. Each class is a ``ctypes.Array`` of its scalar components (so it passes to kernels by
value and views NumPy memory), and carries what the compiler and arrays read:
  ``_shape`` (component shape), ``_scalar`` (scalar type), ``_length`` (components),
  ``_kind`` ("vector" | "matrix" | "quaternion" | "transform"), ``cname`` (C++ type),
  ``_differentiable`` (float components).
Python-side instances support indexing, arithmetic, equality and NumPy conversion.
"""

from __future__ import annotations

import ctypes
import math
import typing

import numpy as np

from . import scalar_types as wt

_cache: dict = {}


def _component_ctype(dtype):
    return dtype.ctype


def _to_py(dtype, raw):
    if wt.is_bit_stored(dtype):
        return dtype.from_bits(raw)
    return raw


def _from_py(dtype, value):
    if isinstance(value, wt.scalar_base):
        value = value.value
    if isinstance(value, (str, bytes)) or isinstance(value, _Composite):
        raise TypeError(f"Expected to assign a `{dtype.cname}` value but got `{type(value).__name__}` instead")
    if wt.is_bit_stored(dtype):
        return dtype.to_bits(value)
    if dtype is wt.bool:
        return bool(value)
    return float(value) if wt.is_float(dtype) else int(value)


_OP_NAMES = {np.add: "add", np.subtract: "sub", np.multiply: "mul", np.divide: "div"}


class _Composite:
    """Behaviour shared by all composite classes (mixed in before ctypes.Array)."""

    _shape: tuple = ()
    _scalar = None
    _kind = ""

    def _set_flat(self, values):
        values = list(values)
        if len(values) != self._length_:
            raise ValueError(
                f"{type(self).__name__}: Invalid number of arguments in {self._kind} constructor, "
                f"expected {self._length_} elements, got {len(values)}"
            )
        for k, v in enumerate(values):
            ctypes.Array.__setitem__(self, k, _from_py(self._scalar, v))

    def _flat(self) -> list:
        return [_to_py(self._scalar, ctypes.Array.__getitem__(self, k)) for k in range(self._length_)]

    def __init__(self, *args):
        super().__init__()
        if not args:
            return
        if (
            len(args) == 1
            and isinstance(args[0], (int, float, wt.scalar_base, np.number))
            and not isinstance(args[0], bool)
        ):
            self._set_flat([args[0]] * self._length_)
            return
        if len(args) == 1 and isinstance(args[0], (bool, np.bool_)):  # vec3(True) fills, like Warp
            self._set_flat([args[0]] * self._length_)
            return
        if self._kind == "matrix" and len(args) == self._shape[0] and len(args) > 1:
            for row in args:  # one sequence per row: each must be a whole row
                if isinstance(row, (list, tuple, np.ndarray, _Composite)) and len(row) != self._shape[1]:
                    raise TypeError(
                        f"Invalid argument in matrix constructor, expected row of length {self._shape[1]}, "
                        f"got {tuple(row)}"
                    )
        flat = []
        for a in args:
            if isinstance(a, _Composite):
                flat.extend(a._flat())
            elif isinstance(a, (list, tuple, np.ndarray)) or (hasattr(a, "__array__") and hasattr(a, "__len__")):
                # sequences and array-likes (a torch tensor, a JAX array) give their elements
                flat.extend(np.asarray(a, dtype=np.float64).ravel().tolist())
            else:
                flat.append(a)
        self._set_flat(flat)

    @classmethod
    def from_ptr(cls, ptr):
        """A copy of the value stored at address ``ptr`` (an int, e.g. an array's ``ptr``).

        Raises:
            RuntimeError: ``ptr`` is null.
        """
        if not ptr:
            raise RuntimeError("NULL pointer exception")
        return cls.from_buffer_copy((ctypes.c_char * ctypes.sizeof(cls)).from_address(int(ptr)))

    def __len__(self):
        return self._shape[0]

    def __array__(self, dtype=None, copy=None):
        a = np.array(self._flat(), dtype=self._scalar.np_dtype).reshape(self._shape)
        return a.astype(dtype) if dtype is not None else a

    def numpy(self):
        return self.__array__()

    def list(self):
        return self.__array__().tolist()

    def __eq__(self, other):
        try:
            other = other.__array__() if isinstance(other, _Composite) else np.asarray(other)  # not the raw bits
            return bool(np.array_equal(self.__array__(), other.reshape(self._shape)))
        except (ValueError, TypeError):
            return False

    def __ne__(self, other):
        return not self.__eq__(other)

    __hash__ = None

    def __str__(self):
        if self._kind == "matrix":  # Warp's layout: one row per line
            return "[" + ",\n ".join(str(row) for row in self.__array__().tolist()) + "]"
        return str(self.__array__().tolist())

    def __repr__(self):
        return (
            f"{type(self).__name__}({self.__array__().ravel().tolist()})"
            if self._kind != "matrix"
            else (f"{type(self).__name__}({self.__array__().tolist()})")
        )

    def _new(self, values):
        out = type(self)()
        out._set_flat(np.asarray(values).ravel().tolist())
        return out

    def _same_scalar(self, other, name: str):
        """Refuse mixing scalar types (as kernels do, and as Warp does in Python)."""
        kind = other._scalar if isinstance(other, _Composite) else type(other) if isinstance(other, wt.scalar_base) else None
        if kind is not None and kind is not self._scalar:
            raise RuntimeError(
                f"Couldn't find a function '{name}' compatible with the arguments "
                f"'{wt.type_repr(type(self))}, {wt.type_repr(type(other))}'"
            )

    def _binary(self, other, op, reverse=False):
        self._same_scalar(other, _OP_NAMES.get(op, getattr(op, "__name__", "op")))
        a = self.__array__().astype(np.float64 if wt.is_float(self._scalar) else np.int64)
        if isinstance(other, _Composite):
            if other._shape != self._shape:
                return NotImplemented
            b = other.__array__()
        elif isinstance(other, (int, float, wt.scalar_base, np.number)):
            b = float(other) if wt.is_float(self._scalar) else int(other)
        else:
            return NotImplemented
        return self._new(op(b, a) if reverse else op(a, b))

    def __add__(self, other):
        return self._binary(other, np.add) if isinstance(other, _Composite) else NotImplemented

    def __sub__(self, other):
        return self._binary(other, np.subtract) if isinstance(other, _Composite) else NotImplemented

    def __mul__(self, other):
        if isinstance(other, _Composite):
            return NotImplemented
        return self._binary(other, np.multiply)

    def __rmul__(self, other):
        return self._binary(other, np.multiply, reverse=True)

    def __truediv__(self, other):
        if isinstance(other, _Composite):
            return NotImplemented
        return self._binary(other, np.divide)

    def __rtruediv__(self, other):  # s / v is component-wise
        if isinstance(other, _Composite):
            return NotImplemented
        return self._binary(other, np.divide, reverse=True)

    def __mod__(self, other):  # component-wise, as in kernels: fmod for floats, C's remainder for ints
        return self._binary(other, _remainder)

    def __rmod__(self, other):
        return self._binary(other, _remainder, reverse=True)

    def __neg__(self):
        return self._new(-self.__array__())

    def __pos__(self):
        return self._new(self.__array__())


def _remainder(a, b):
    """fmod for floats, C's remainder for integers (sign of the dividend); x % 0 is 0 for integers."""
    a, b = np.broadcast_arrays(np.asarray(a), np.asarray(b))
    if np.issubdtype(a.dtype, np.floating) or np.issubdtype(b.dtype, np.floating):
        with np.errstate(all="ignore"):
            return np.fmod(a, b)
    safe = np.where(b == 0, 1, b)
    return np.where(b == 0, 0, np.fmod(a, safe))


def _check_vector_key(key):
    if not isinstance(key, (int, np.integer, slice)) or isinstance(key, bool):
        raise KeyError(f"Invalid key {key!r}, expected int or slice")


def _check_matrix_key(key):
    if isinstance(key, tuple):
        if len(key) not in (1, 2):
            raise KeyError(f"Invalid key, expected one or two indices, got {len(key)}")
        return
    if not isinstance(key, (int, np.integer, slice)) or isinstance(key, bool):
        raise KeyError(f"Invalid key {key!r}, expected int or pair of ints")


def _assign_slice(v, positions, values):
    """``v[a:b] = values`` for a vector: the same number of values, each a number."""
    values = list(values)
    for x in values:
        if isinstance(x, _Composite):
            raise TypeError(
                f"Expected to assign a slice from a sequence of `{v._scalar.cname}` values but got "
                f"`{type(x).__name__}` instead"
            )
    if len(values) != len(positions):
        raise ValueError("Can only assign sequence of same size")
    for k, x in zip(positions, values):
        ctypes.Array.__setitem__(v, k, _from_py(v._scalar, x))


class VectorBase(_Composite):
    _kind = "vector"

    def __getitem__(self, i):
        _check_vector_key(i)
        if isinstance(i, slice):  # a shorter vector, like Warp
            values = self._flat()[i]
            return vector(len(values), self._scalar)(*values) if values else values
        return self._flat()[i] if -self._length_ <= i < self._length_ else self._raise_index(i)

    def __setitem__(self, i, value):
        _check_vector_key(i)
        if isinstance(i, slice):
            _assign_slice(self, range(self._length_)[i], value)
            return
        if not -self._length_ <= i < self._length_:
            self._raise_index(i)
        ctypes.Array.__setitem__(self, i % self._length_, _from_py(self._scalar, value))

    def _raise_index(self, i):
        raise IndexError(f"index {i} is out of range for {type(self).__name__} of length {self._length_}")

    def __getattr__(self, name):
        k = "xyzw".find(name) if len(name) == 1 else -1
        if 0 <= k < self._length_:
            return self[k]
        raise AttributeError(f"'{type(self).__name__}' object has no attribute '{name}'")

    def __setattr__(self, name, value):
        k = "xyzw".find(name) if len(name) == 1 else -1
        if 0 <= k < self._length_:
            self[k] = value
        else:
            super().__setattr__(name, value)

    def __matmul__(self, other):
        if isinstance(other, MatrixBase):
            return other.__rmatmul__(self)
        return NotImplemented


class MatrixBase(_Composite):
    _kind = "matrix"

    def _row_type(self):
        return vector(self._shape[1], self._scalar)

    def __getitem__(self, key):
        _check_matrix_key(key)
        a = self.__array__()
        if isinstance(key, tuple):
            return a[key].item() if all(isinstance(k, int) for k in key) else a[key]
        return self._row_type()(*a[key].tolist())

    def __setitem__(self, key, value):
        _check_matrix_key(key)
        if isinstance(key, tuple) and all(isinstance(k, int) for k in key):
            _from_py(self._scalar, value)  # refuses what is not a number, with Warp's message
        elif not isinstance(key, tuple):
            if isinstance(value, _Composite) and not isinstance(value, VectorBase) or (
                isinstance(value, (tuple, list)) and any(isinstance(v, _Composite) for v in value)
            ):
                raise TypeError(
                    f"Expected to assign a slice from a sequence of `{self._scalar.cname}` values but got "
                    f"`{type(value[0] if isinstance(value, (tuple, list)) else value).__name__}` instead"
                )
        a = self.__array__().copy()
        a[key] = np.asarray(value)
        self._set_flat(a.ravel().tolist())

    def get_row(self, r):
        return self[r]

    def get_col(self, c):
        return vector(self._shape[0], self._scalar)(*self.__array__()[:, c].tolist())

    def set_row(self, r, v):
        if not -self._shape[0] <= r < self._shape[0]:
            raise IndexError("Invalid row index")
        self[r] = np.asarray(v)

    def set_col(self, c, v):
        self[:, c] = np.asarray(v)

    def __matmul__(self, other):
        self._same_scalar(other, "mul")
        a = self.__array__()
        if isinstance(other, MatrixBase):
            r = a @ other.__array__()
            return matrix(r.shape, self._scalar)(*r.ravel().tolist())
        if isinstance(other, VectorBase):
            r = a @ other.__array__()
            return vector(len(r), self._scalar)(*r.tolist())
        return NotImplemented

    def __rmatmul__(self, other):
        self._same_scalar(other, "mul")
        if isinstance(other, VectorBase):
            r = other.__array__() @ self.__array__()
            return vector(len(r), self._scalar)(*r.tolist())
        return NotImplemented

    def __mul__(self, other):
        if isinstance(other, _Composite):
            return self.__matmul__(other)
        return super().__mul__(other)

    def __rmul__(self, other):
        if isinstance(other, VectorBase):  # row vector times matrix
            return self.__rmatmul__(other)
        return super().__rmul__(other)


class QuaternionBase(VectorBase):
    _kind = "quaternion"

    def __mul__(self, other):
        if isinstance(other, QuaternionBase):
            self._same_scalar(other, "mul")
            x1, y1, z1, w1 = self._flat()
            x2, y2, z2, w2 = other._flat()
            return self._new(
                [
                    w1 * x2 + x1 * w2 + y1 * z2 - z1 * y2,
                    w1 * y2 - x1 * z2 + y1 * w2 + z1 * x2,
                    w1 * z2 + x1 * y2 - y1 * x2 + z1 * w2,
                    w1 * w2 - x1 * x2 - y1 * y2 - z1 * z2,
                ]
            )
        return super().__mul__(other)


def _is_number(x) -> bool:
    return isinstance(x, (int, float, bool, wt.scalar_base, np.number, np.bool_))


def _is_sequence(x) -> bool:
    return isinstance(x, (_Composite, list, tuple, np.ndarray)) or (hasattr(x, "__len__") and hasattr(x, "__array__"))


def _flat_of(x) -> list:
    return x._flat() if isinstance(x, _Composite) else np.asarray(x, dtype=np.float64).ravel().tolist()


def _part(value, name, duplicate):
    """The components of transform part ``name`` ('p' or 'q'), checked to be a sequence."""
    if duplicate is not None:
        raise TypeError(f"multiple values for argument '{name}'")
    if not _is_sequence(value):
        raise TypeError(
            f"Invalid argument '{name}' in transformation constructor: expected a sequence, got {type(value).__name__}"
        )
    return _flat_of(value)


class TransformBase(_Composite):
    _kind = "transform"

    def __init__(self, *args, p=None, q=None, **unknown):
        """``transform(p, q)``, ``transform(p=..., q=...)``, ``transform(p, q=...)``, seven
        components, one number for all seven, or nothing: the identity (as in Warp; a part not
        given is the identity's).

        Raises:
            TypeError: an unexpected keyword, a part given twice, a part that is not a sequence,
                or a single argument that is neither a number nor a sequence (each named).
        """
        if unknown:
            raise TypeError(f"got an unexpected keyword argument '{next(iter(unknown))}'")
        if len(args) == 1 and _is_number(args[0]):
            if p is not None or q is not None:
                raise TypeError(f"multiple values for argument '{'p' if p is not None else 'q'}'")
            super().__init__(args[0])  # one number fills every component
            return
        if len(args) == 1:
            if not _is_sequence(args[0]):
                raise TypeError(
                    f"Invalid argument in transformation constructor: expected a scalar value, got {type(args[0]).__name__}"
                )
            if len(_flat_of(args[0])) == 3:
                args, p = (), _part(args[0], "p", p)  # transform(p, q=...)
        if len(args) == 2:
            if p is not None or q is not None:
                raise TypeError(f"multiple values for argument '{'p' if p is not None else 'q'}'")
            p, q, args = _part(args[0], "p", None), _part(args[1], "q", None), ()
        if not args:
            p = _part(p, "p", None) if p is not None else [0.0, 0.0, 0.0]
            q = _part(q, "q", None) if q is not None else [0.0, 0.0, 0.0, 1.0]
            args = (p + q,)
        elif p is not None or q is not None:
            raise TypeError(f"multiple values for argument '{'q' if q is not None else 'p'}'")
        super().__init__(*args)

    def __getitem__(self, i):
        return self._flat()[i]

    def __setitem__(self, i, value):
        ctypes.Array.__setitem__(self, i, _from_py(self._scalar, value))

    def __mul__(self, other):
        if isinstance(other, TransformBase):  # transform_multiply: (p + q * other.p, q * other.q)
            q, p = self.q, np.asarray(self.p, dtype=np.float64)
            u, w = np.asarray(q, dtype=np.float64)[:3], float(q[3])
            op = np.asarray(other.p, dtype=np.float64)
            rotated = op * (2 * w * w - 1) + 2 * w * np.cross(u, op) + 2 * u * np.dot(u, op)
            return self._new(list(p + rotated) + list(q * other.q))
        return super().__mul__(other)

    @property
    def p(self):
        return vector(3, self._scalar)(*self._flat()[:3])

    @p.setter
    def p(self, v):
        f = self._flat()
        self._set_flat(list(v) + f[3:])

    @property
    def q(self):
        return quaternion(self._scalar)(*self._flat()[3:])

    @q.setter
    def q(self, v):
        f = self._flat()
        self._set_flat(f[:3] + list(v))


_suffix = {wt.float16: "h", wt.bfloat16: "bf", wt.float32: "f", wt.float64: "d", wt.int8: "b", wt.uint8: "ub", wt.int16: "s",
           wt.uint16: "us", wt.int32: "i", wt.uint32: "ui", wt.int64: "l", wt.uint64: "ul", wt.bool: "bool"}  # fmt: skip


_GENERIC_NAMES = {"vector": "vec_t", "matrix": "mat_t", "quaternion": "quat_t", "transform": "transform_t"}


def _composite_doc(kind, name, shape, dtype):
    """The docstring of a concrete composite type, built from its kind, shape and scalar type."""
    scalar = dtype.__name__
    if kind == "vector":
        what = f"A vector of {shape[0]} ``{scalar}`` components"
        example = f"``wp.{name}()`` (zeros), ``wp.{name}(s)`` (all equal) or ``wp.{name}(" + ", ".join(
            f"c{i}" for i in range(min(shape[0], 4))
        ) + (", ...)``" if shape[0] > 4 else ")``")
    elif kind == "matrix":
        what = f"A {shape[0]}x{shape[1]} matrix of ``{scalar}``"
        example = f"``wp.{name}()`` (zeros), ``wp.{name}(s)`` (all equal), row-major components or rows"
    elif kind == "quaternion":
        what = f"A quaternion (x, y, z, w) of ``{scalar}``"
        example = f"``wp.{name}(x, y, z, w)`` or ``wp.quat_identity(dtype=wp.{scalar})``"
    else:
        what = f"A rigid transform of ``{scalar}``: a translation (vec3) and a rotation (quaternion)"
        example = f"``wp.{name}(p, q)`` or ``wp.transform_identity(dtype=wp.{scalar})``"
    return (
        f"{what}.\n\nA value type for kernels, array elements (``wp.array(dtype=wp.{name})``) and Python; "
        f"build one with {example}. Arithmetic and indexing work in kernels and in Python."
    )


def _make(key, base, name, shape, dtype, cname):
    cls = _cache.get(key)
    if cls is not None:
        return cls
    n = int(np.prod(shape))
    ns = {
        "_length_": n,
        "_type_": _component_ctype(dtype),
        "_shape": tuple(shape),
        "_shape_": tuple(shape),  # Warp's spelling of the shape and the scalar type
        "_wp_scalar_type_": dtype,
        "_wp_generic_type_str_": _GENERIC_NAMES[base._kind],  # Warp's name of the C++ template
        "_wp_type_params_": (*shape, dtype) if base._kind in ("vector", "matrix") else (dtype,),
        "_scalar": dtype,
        "_length": n,
        "cname": cname,
        "_cname": cname,
        "_differentiable": wt.is_float(dtype),
        "__module__": "weft.types",
        "__doc__": _composite_doc(base._kind, name, shape, dtype),
    }
    cls = type(name, (base, ctypes.Array), ns)
    cls.ctype = cls
    cls.size = n * dtype.size
    _cache[key] = cls
    return cls


def _ctype_name(dtype):
    return "bool" if dtype is wt.bool else f"weft::{dtype.cname}"


class GenericComposite:
    """A composite annotation with ``typing.Any`` parts, as Warp's generic types: ``wp.types.vector
    (length=Any, dtype=float)``, ``wp.types.matrix((Any, Any), Any)``, ``wp.types.quaternion(Any)``.
    A kernel or func parameter so annotated takes any composite of its kind whose given parts match
    (``accepts``); each concrete type gets its own instance of the kernel or func."""

    def __init__(self, kind: str, shape: tuple, dtype):
        self.kind, self.shape, self.dtype = kind, tuple(shape), dtype

    def accepts(self, t) -> bool:
        """Whether the concrete type ``t`` fits this annotation."""
        return (
            is_composite(t)
            and t._kind == self.kind
            and len(t._shape) == len(self.shape)
            and all(s is typing.Any or s == ts for s, ts in zip(self.shape, t._shape))
            and dtype_fits(self.dtype, t._scalar)
        )

    def _key(self):
        return (self.kind, self.shape, self.dtype)

    def __eq__(self, other):
        return isinstance(other, GenericComposite) and self._key() == other._key()

    def __hash__(self):
        return hash(self._key())

    def __repr__(self):
        def name(x):
            return "Any" if x is typing.Any else getattr(x, "__name__", str(x))

        dtype = name(self.dtype)
        if self.kind == "vector":
            return f"vector(length={name(self.shape[0])}, dtype={dtype})"
        if self.kind == "matrix":
            return f"matrix(shape=({', '.join(name(s) for s in self.shape)}), dtype={dtype})"
        return f"{'transformation' if self.kind == 'transform' else self.kind}(dtype={dtype})"


def is_generic_dtype(dtype) -> bool:
    """``typing.Any`` or a constrained type variable such as ``wp.Float``."""
    return dtype is typing.Any or isinstance(dtype, typing.TypeVar)


def dtype_fits(template, dtype) -> bool:
    if template is typing.Any:
        return True
    if isinstance(template, typing.TypeVar):
        return not template.__constraints__ or dtype in template.__constraints__
    return dtype is template


def _generic_dtype(dtype):
    return dtype if is_generic_dtype(dtype) else (wt.type_from_annotation(dtype) or dtype)


def vector(length: int, dtype=wt.float32):
    """The vector type of ``length`` components of scalar ``dtype`` (``wp.types.vector``).

    The same arguments always give the same class (``wp.types.vector(3, wp.float32)`` is
    ``wp.vec3f``); other lengths and scalar types make new classes, usable in kernels and arrays
    like the named ones.

    Args:
        length: the number of components, or ``typing.Any`` for a generic annotation.
        dtype: the scalar type of the components (default float32), or ``typing.Any`` / a type
            variable (``wp.Float``) for a generic annotation.

    Returns:
        A vector class; with ``typing.Any`` in either argument, a generic annotation that a
        kernel or func parameter can take (``GenericComposite``).

    Example:
        >>> vec5 = wp.types.vector(length=5, dtype=wp.float64)
        >>> vec5(1.0, 2.0, 3.0, 4.0, 5.0)[4]
        5.0
    """
    if length is typing.Any or is_generic_dtype(dtype):
        return GenericComposite("vector", (length,), _generic_dtype(dtype))
    dtype = wt.type_from_annotation(dtype) or dtype
    name = f"vec{length}{_suffix.get(dtype, dtype.cname)}"
    return _make(
        ("vector", length, dtype), VectorBase, name, (length,), dtype, f"weft::vec_t<{length}, {_ctype_name(dtype)}>"
    )


def matrix(shape, dtype=wt.float32):
    """The matrix type of ``shape = (rows, cols)`` with scalar ``dtype`` (``wp.types.matrix``).

    Args:
        shape: ``(rows, cols)``; ``typing.Any`` in either place for a generic annotation.
        dtype: the scalar type of the components (default float32), or ``typing.Any`` / a type
            variable for a generic annotation.

    Returns:
        A matrix class (``wp.types.matrix((3, 3), wp.float32)`` is ``wp.mat33f``), or a generic
        annotation.

    Example:
        >>> mat23 = wp.types.matrix(shape=(2, 3), dtype=wp.float32)
        >>> mat23(1.0, 2.0, 3.0, 4.0, 5.0, 6.0)[1, 2]
        6.0
    """
    if typing.Any in tuple(shape) or is_generic_dtype(dtype):
        return GenericComposite("matrix", tuple(shape), _generic_dtype(dtype))
    dtype = wt.type_from_annotation(dtype) or dtype
    r, c = shape
    name = f"mat{r}{c}{_suffix.get(dtype, dtype.cname)}"
    return _make(
        ("matrix", r, c, dtype), MatrixBase, name, (r, c), dtype, f"weft::mat_t<{r}, {c}, {_ctype_name(dtype)}>"
    )


def quaternion(dtype=wt.float32):
    """The quaternion type (x, y, z, w) with scalar ``dtype``.

    Args:
        dtype: a floating-point scalar type (default float32), or ``typing.Any`` for a generic
            annotation.

    Returns:
        A quaternion class (``wp.types.quaternion(wp.float64)`` is ``wp.quatd``), or a generic
        annotation.
    """
    if is_generic_dtype(dtype):
        return GenericComposite("quaternion", (4,), dtype)
    dtype = wt.type_from_annotation(dtype) or dtype
    return _make(
        ("quat", dtype), QuaternionBase, f"quat{_suffix[dtype]}", (4,), dtype, f"weft::quat_t<{_ctype_name(dtype)}>"
    )


def transformation(dtype=wt.float32):
    """The rigid transform type (p: vec3, q: quat) with scalar ``dtype``.

    Args:
        dtype: a floating-point scalar type (default float32), or ``typing.Any`` for a generic
            annotation.

    Returns:
        A transform class (``wp.types.transformation(wp.float32)`` is ``wp.transformf``), or a
        generic annotation.
    """
    if is_generic_dtype(dtype):
        return GenericComposite("transform", (7,), dtype)
    dtype = wt.type_from_annotation(dtype) or dtype
    return _make(
        ("transform", dtype),
        TransformBase,
        f"transform{_suffix[dtype]}",
        (7,),
        dtype,
        f"weft::transform_t<{_ctype_name(dtype)}>",
    )


def _literal_int(value, what):
    """``Literal[3]`` or ``3`` -> 3 (the parameters of ``Vector[...]`` and ``Matrix[...]``)."""
    if typing.get_origin(value) is typing.Literal:
        args = typing.get_args(value)
        if len(args) != 1:
            raise TypeError(f"Expected a single Literal value for the {what}, got {value!r}")
        (value,) = args
    if value is typing.Any or isinstance(value, typing.TypeVar):
        return typing.Any
    if not isinstance(value, int) or isinstance(value, bool) or value <= 0:
        raise TypeError(f"{what} must be a positive integer, got {value!r}")
    return value


def _all_type_vars(params) -> bool:
    """``Vector[T, N]`` with type variables only: a static-typing alias, not a weft type."""
    return all(isinstance(p, typing.TypeVar) for p in params)


class Vector:
    """Subscript-style vector annotation: ``Vector[wp.float32, Literal[3]]`` is ``wp.vec3``;
    ``Any`` or a type variable (``wp.Float``) in either place gives the generic annotation."""

    def __class_getitem__(cls, params):
        if not isinstance(params, tuple) or len(params) != 2:
            raise TypeError("Vector requires 2 parameters (dtype, length)")
        if _all_type_vars(params):
            return typing._GenericAlias(cls, params)  # Vector[T, N] in a generic signature
        dtype, length = params
        return vector(_literal_int(length, "Vector length"), dtype)


class Matrix:
    """Subscript-style matrix annotation: ``Matrix[wp.float64, Literal[2], Literal[3]]``."""

    def __class_getitem__(cls, params):
        if not isinstance(params, tuple) or len(params) != 3:
            raise TypeError("Matrix requires 3 parameters (dtype, rows, cols)")
        if _all_type_vars(params):
            return typing._GenericAlias(cls, params)
        dtype, rows, cols = params
        return matrix((_literal_int(rows, "Matrix rows"), _literal_int(cols, "Matrix cols")), dtype)


class Quaternion:
    """Subscript-style quaternion annotation: ``Quaternion[wp.float32]`` is ``wp.quat``."""

    def __class_getitem__(cls, dtype):
        return quaternion(dtype)


class Transformation:
    """Subscript-style transform annotation: ``Transformation[wp.float32]`` is ``wp.transform``."""

    def __class_getitem__(cls, dtype):
        return transformation(dtype)


def is_composite(t) -> bool:
    return isinstance(t, type) and issubclass(t, _Composite) and t in _cache.values()


def is_vector(t) -> bool:
    return is_composite(t) and t._kind == "vector"


def is_matrix(t) -> bool:
    return is_composite(t) and t._kind == "matrix"


def is_quaternion(t) -> bool:
    return is_composite(t) and t._kind == "quaternion"


def is_transform(t) -> bool:
    return is_composite(t) and t._kind == "transform"


def scalar_of(t):
    """The scalar type of a composite type, or ``t`` itself for scalars."""
    return getattr(t, "_scalar", t)


# Public names (Warp's).
_public = {}
for _dt in (wt.float16, wt.float32, wt.float64):
    s = _suffix[_dt]
    for _n in (2, 3, 4):
        _public[f"vec{_n}{s}"] = vector(_n, _dt)
        _public[f"mat{_n}{_n}{s}"] = matrix((_n, _n), _dt)
    _public[f"quat{s}"] = quaternion(_dt)
    _public[f"transform{s}"] = transformation(_dt)
    _public[f"spatial_vector{s}"] = vector(6, _dt)
    _public[f"spatial_matrix{s}"] = matrix((6, 6), _dt)
for _dt in (wt.int8, wt.uint8, wt.int16, wt.uint16, wt.int32, wt.uint32, wt.int64, wt.uint64, wt.bool):
    for _n in (2, 3, 4):
        _public[f"vec{_n}{_suffix[_dt]}"] = vector(_n, _dt)
for _n in (2, 3, 4):
    _public[f"vec{_n}"] = vector(_n, wt.float32)
    _public[f"mat{_n}{_n}"] = matrix((_n, _n), wt.float32)
_public.update(
    quat=quaternion(wt.float32),
    transform=transformation(wt.float32),
    spatial_vector=vector(6, wt.float32),
    spatial_matrix=matrix((6, 6), wt.float32),
)
globals().update(_public)
__all__ = sorted(_public) + ["vector", "matrix", "quaternion", "transformation"]

_ = math  # kept for Python-side helpers
