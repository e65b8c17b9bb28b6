"""``wp.array[float]``, ``wp.array2d[wp.vec3]``, ``wp.indexedarray[float, Literal[2]]``:
subscript array annotations.

As in Warp, a subscript gives a small immutable annotation object, not an array: it names the
array kind, the element type and the number of dimensions, compares and hashes by them, writes
itself back as source (``repr``), unions with other annotations (``wp.array[float] | None``), and
calls through to the array constructor. Kernels and funcs read it through ``kernel_type()``, as
they read the older ``wp.array(dtype=float)`` annotation (an array without storage).

The element type is checked when a kernel or func using the annotation is compiled, so an
annotation of a type weft does not know (a plain class) can still be written and compared.
"""

from __future__ import annotations

import typing
from typing import Any

import sys

from . import scalar_types as types
from .vector_types import is_generic_dtype

MAX_DIMS = types.MAX_DIMS
_resolve_dtype = types.resolve_array_dtype


def _ndim_param(ndim):
    """``Literal[n]``, ``n`` or ``Any`` -> the number of dimensions (``Any``: any)."""
    if typing.get_origin(ndim) is typing.Literal:
        args = typing.get_args(ndim)
        if len(args) != 1:
            raise TypeError(f"Expected a single Literal value for the number of dimensions, got {ndim!r}")
        (ndim,) = args
    if ndim is Any:
        return Any
    if not isinstance(ndim, int) or isinstance(ndim, bool):
        raise TypeError(f"the number of dimensions of an array annotation must be an int or Any, got {ndim!r}")
    if not 1 <= ndim <= MAX_DIMS:
        raise ValueError(f"Array annotation ndim must be between 1 and {MAX_DIMS}, got {ndim}")
    return ndim


def parse_subscript(params, fixed_ndim=None):
    """``(dtype, ndim)`` of ``[dtype]`` or ``[dtype, ndim]`` (``ndim`` as ``Literal[n]``, ``n``
    or ``Any``); ``fixed_ndim`` is the ``N`` of ``wp.arrayNd``, which takes only ``[dtype]``."""
    if fixed_ndim is not None:
        if isinstance(params, tuple):
            raise TypeError(
                f"wp.array{fixed_ndim}d takes a single type parameter (the dtype), got {len(params)} parameters"
            )
        return params, fixed_ndim
    if not isinstance(params, tuple):
        return params, 1
    if len(params) != 2:
        raise TypeError(f"array annotations take [dtype] or [dtype, Literal[ndim]], got {len(params)} parameters")
    dtype, ndim = params
    return dtype, _ndim_param(ndim)


def _normalize_dtype(dtype):
    """``float`` -> ``wp.float32`` and the like; ``Any``, generic and unknown types as given."""
    if is_generic_dtype(dtype):
        return dtype
    try:
        return _resolve_dtype(dtype)
    except TypeError:
        return dtype  # checked when a kernel using the annotation is compiled


class _ArrayAnnotationBase:
    """An array annotation: kind (``concrete``), ``dtype`` and ``ndim`` (an int or ``Any``)."""

    __slots__ = ("dtype", "ndim")
    _name = ""  # the public constructor's name, as repr writes it

    def __init__(self, dtype=Any, ndim=1):
        self.dtype = _normalize_dtype(dtype)
        self.ndim = _ndim_param(ndim)

    # -- the concrete kind -----------------------------------------------------------------------

    concrete = None  # the array class of this kind; set by its module (array.py, indexed_array.py)

    kernel_kind = None  # the kernel-side type of this kind (types.ArrayType ...), set per subclass

    def kernel_type(self):
        """The kernel-side type: ``ArrayType(dtype, ndim)`` or its indexed-array counterpart.

        Raises:
            TypeError: the element type is not one arrays can hold.
        """
        dtype = self.dtype if is_generic_dtype(self.dtype) else _resolve_dtype(self.dtype)
        return self.kernel_kind(dtype, self.ndim)

    @property
    def is_annotation(self) -> bool:
        """Always true: an annotation holds no data."""
        return True

    def __call__(self, *args, **kwargs):
        """Build an array of this annotation's kind, dtype and dimensions (``wp.array[float](data)``)."""
        kwargs.setdefault("dtype", self.dtype)
        if self.ndim is not Any:
            kwargs.setdefault("ndim", self.ndim)
        return self.concrete(*args, **kwargs)

    # -- identity --------------------------------------------------------------------------------

    def _key(self):
        return (self.kernel_kind, self.dtype, self.ndim)

    def __eq__(self, other):
        if isinstance(other, _ArrayAnnotationBase):
            return self._key() == other._key()
        if getattr(other, "is_annotation", False) and callable(getattr(other, "kernel_type", None)):
            try:
                return self.kernel_type() == other.kernel_type()
            except TypeError:
                return False
        return NotImplemented

    def __hash__(self):
        try:
            return hash(self.kernel_type())  # as the wp.array(dtype=...) annotation it equals
        except TypeError:
            return hash(self._key())

    def __setattr__(self, name, value):
        if hasattr(self, name):
            raise AttributeError(f"{self!r} is immutable")
        object.__setattr__(self, name, value)

    # -- unions ----------------------------------------------------------------------------------

    def __or__(self, other):
        return typing.Union[self, other]

    def __ror__(self, other):
        return typing.Union[other, self]

    # -- source form -----------------------------------------------------------------------------

    def __repr__(self):
        dtype = dtype_source(self.dtype)
        if self.ndim is Any:
            return f"wp.{self._name}[{dtype}, Any]"
        if self.ndim == 1:
            return f"wp.{self._name}[{dtype}]"
        return self._repr_ndim(dtype)

    def _repr_ndim(self, dtype):
        return f"wp.{self._name}[{dtype}, Literal[{self.ndim}]]"


class _ArrayAnnotation(_ArrayAnnotationBase):
    """``wp.array[dtype]``, ``wp.array[dtype, ndim]``, ``wp.array2d[dtype]`` ..."""

    __slots__ = ()
    _name = "array"
    kernel_kind = types.ArrayType

    def _repr_ndim(self, dtype):
        return f"wp.array{self.ndim}d[{dtype}]"


class _IndexedArrayAnnotation(_ArrayAnnotationBase):
    """``wp.indexedarray[dtype]`` and ``wp.indexedarray[dtype, ndim]``."""

    __slots__ = ()
    _name = "indexedarray"
    kernel_kind = types.IndexedArrayType


class _FabricArrayAnnotation(_ArrayAnnotationBase):
    """``wp.fabricarray[dtype]`` and ``wp.fabricarray[dtype, Literal[2]]`` (an array of arrays)."""

    __slots__ = ()
    _name = "fabricarray"
    kernel_kind = types.FabricArrayType


class _IndexedFabricArrayAnnotation(_ArrayAnnotationBase):
    """``wp.indexedfabricarray[dtype]`` and ``wp.indexedfabricarray[dtype, Literal[2]]``."""

    __slots__ = ()
    _name = "indexedfabricarray"
    kernel_kind = types.IndexedFabricArrayType


def dtype_source(dtype) -> str:
    """How an element type is written in source: ``wp.float32``, ``wp.vec3f``, ``Any``, a
    struct's name, or ``wp.types.vector(length=5, dtype=wp.float32)`` for a composite type
    without a short name."""
    weft = sys.modules["weft"]  # loaded: annotations are made through it
    if dtype is Any:
        return "Any"
    if types.is_scalar(dtype):
        return f"wp.{dtype.__name__}"
    kind = getattr(dtype, "_kind", None)
    scalar = getattr(dtype, "_scalar", None)
    if kind in ("vector", "matrix", "quaternion", "transform") and types.is_scalar(scalar):
        if getattr(weft, dtype.__name__, None) is dtype:  # composite classes carry their short name
            return f"wp.{dtype.__name__}"
        shape, scalar_src = tuple(dtype._shape), dtype_source(scalar)
        return {
            "vector": f"wp.types.vector(length={shape[0]}, dtype={scalar_src})",
            "matrix": f"wp.types.matrix(shape={shape}, dtype={scalar_src})",
            "quaternion": f"wp.types.quaternion(dtype={scalar_src})",
            "transform": f"wp.types.transformation(dtype={scalar_src})",
        }[kind]
    name = getattr(dtype, "key", None) if kind == "struct" else None
    return name or getattr(dtype, "__name__", None) or repr(dtype)


def concrete_array_type(x):
    """The array class an annotation (or array) stands for: ``wp.array``, ``wp.indexedarray``."""
    if isinstance(x, _ArrayAnnotationBase):
        return x.concrete
    return type(x) if not isinstance(x, type) else x


def matches_array_class(x, cls) -> bool:
    """Whether the annotation or array ``x`` is of the array kind ``cls``."""
    concrete = concrete_array_type(x)
    return isinstance(concrete, type) and issubclass(concrete, cls)


# Warp's array kind codes (``array_type_id``).
ARRAY_TYPE_REGULAR = 0
ARRAY_TYPE_INDEXED = 1
ARRAY_TYPE_FABRIC = 2
ARRAY_TYPE_FABRIC_INDEXED = 3


def array_type_id(x) -> int:
    """The kind code of an array, array annotation or kernel-side array type:
    ``ARRAY_TYPE_REGULAR``, ``ARRAY_TYPE_INDEXED``, ``ARRAY_TYPE_FABRIC`` or
    ``ARRAY_TYPE_FABRIC_INDEXED``.

    Args:
        x: An array, array annotation or array type.

    Returns:
        One of the ``ARRAY_TYPE_*`` ints.

    Raises:
        TypeError: ``x`` is not an array kind.
    """
    kt = x.kernel_type() if callable(getattr(x, "kernel_type", None)) else x
    if isinstance(kt, types.IndexedArrayType):
        return ARRAY_TYPE_INDEXED
    if isinstance(kt, types.FabricArrayType):
        return ARRAY_TYPE_FABRIC
    if isinstance(kt, types.IndexedFabricArrayType):
        return ARRAY_TYPE_FABRIC_INDEXED
    if isinstance(kt, types.ArrayType):
        return ARRAY_TYPE_REGULAR
    raise TypeError(f"{x!r} is not an array type")


def is_array(a) -> bool:
    """Whether ``a`` is an array of any kind (``wp.array``, ``wp.indexedarray``, the Fabric arrays
    and their n-d forms, with data or as an annotation), a subscript array annotation, or a
    kernel-side array type.

    Args:
        a: Any object.

    Returns:
        True or False.
    """
    if isinstance(a, _ArrayAnnotationBase) or types.is_array_like(a):
        return True
    return not isinstance(a, type) and bool(getattr(type(a), "_weft_array_class", False))


class fixedarray:  # noqa: N801 (Warp's spelling)
    """``wp.fixedarray(shape=(2, 3), dtype=int)``: the type of a fixed-size array made in a kernel
    or func (``wp.zeros(shape, dtype)`` there), for a func's return annotation. Such arrays live
    in the thread's own memory; Python code never holds one.

    Raises:
        ValueError: ``shape`` is not 1 to 4 positive ints.
    """

    __slots__ = ("dtype", "shape")

    def __init__(self, dtype=Any, shape=None):
        self.dtype = _normalize_dtype(dtype)
        self.shape = types.fixed_array_shape(shape)

    @property
    def ndim(self) -> int:
        return len(self.shape)

    def kernel_type(self):
        """The kernel-side type: ``FixedArrayType(dtype, shape)``."""
        return types.FixedArrayType(_resolve_dtype(self.dtype), self.shape)

    def __eq__(self, other):
        return isinstance(other, fixedarray) and (other.dtype, other.shape) == (self.dtype, self.shape)

    def __hash__(self):
        return hash((fixedarray, self.dtype, self.shape))

    def __repr__(self):
        return f"wp.fixedarray(shape={self.shape}, dtype={dtype_source(self.dtype)})"
