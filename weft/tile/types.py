"""Tile types: ``wp.tile[dtype, M, N]`` annotations and the ``TileType`` of tile values in kernels.

A tile is a small dense array with a shape known when the kernel is built, held by the block of
threads that made it. weft runs each block on one thread (Warp's CPU model: ``launch_tiled``
forces ``block_dim`` to 1), so a tile is a value: the C++ ``weft::tile_t<T, D...>`` of
``native/tile/tile.h``, copied like a vector. ``TileType(dtype, shape)`` is the weft type of such
a value (interned: equal types are the same object); ``TileAnnotation`` what ``wp.tile[...]``
writes in a func's signature, matching the tiles of its dtype (and shape, when given).
"""

from __future__ import annotations

import math
import typing

MAX_TILE_DIMS = 4


class TileType:
    """The type of a tile value: element type ``dtype`` (a scalar, vector, matrix, quaternion,
    transform or struct type) and ``shape`` (a tuple of 1 to 4 non-negative ints)."""

    __slots__ = ("__weakref__", "dtype", "shape")
    _interned: dict = {}
    is_tile_value = True  # passed to funcs by reference (kernel._tile_references)

    def __new__(cls, dtype, shape):
        shape = tuple(int(d) for d in shape)
        key = (dtype, shape)
        t = cls._interned.get(key)
        if t is None:
            if not 1 <= len(shape) <= MAX_TILE_DIMS or any(d < 0 for d in shape):
                raise ValueError(f"a tile has 1 to {MAX_TILE_DIMS} non-negative dimensions, got {shape}")
            t = object.__new__(cls)
            t.dtype = dtype
            t.shape = shape
            cls._interned[key] = t
        return t

    @property
    def ndim(self) -> int:
        return len(self.shape)

    @property
    def size(self) -> int:
        return math.prod(self.shape)

    @property
    def _differentiable(self) -> bool:
        from ..scalar_types import is_differentiable

        return is_differentiable(self.dtype)

    def __repr__(self):
        from ..scalar_types import type_repr

        return f"tile<{type_repr(self.dtype)}, {self.shape}>"


def is_tile_type(t) -> bool:
    """Whether ``t`` is the type of a tile value."""
    return isinstance(t, TileType)


class TileAnnotation:
    """``wp.tile[dtype]`` or ``wp.tile[dtype, M, N]`` (sizes as ints, ``Literal[...]`` or one
    tuple): ``dtype`` as a weft type (``Any`` for any), ``shape`` a tuple of ints or ``Any`` when
    not given, and ``storage`` (accepted for Warp's signatures; weft keeps every tile the same
    way). It matches the tile types of that dtype and shape."""

    __slots__ = ("dtype", "shape", "storage")

    def __init__(self, dtype, shape=typing.Any, storage="register"):
        self.dtype = _scalar_or_given(dtype)
        self.shape = shape
        self.storage = storage

    def accepts(self, t) -> bool:
        """Whether the tile type ``t`` instantiates this annotation."""
        if not isinstance(t, TileType):
            return False
        if self.dtype is not typing.Any and self.dtype != t.dtype:
            return False
        return self.shape is typing.Any or tuple(self.shape) == t.shape

    def __eq__(self, other):
        return isinstance(other, TileAnnotation) and (other.dtype, other.shape, other.storage) == (
            self.dtype,
            self.shape,
            self.storage,
        )

    def __hash__(self):
        return hash((TileAnnotation, self.dtype, self.shape, self.storage))

    def __repr__(self):
        dims = "" if self.shape is typing.Any else ", " + ", ".join(str(d) for d in self.shape)
        return f"tile[{getattr(self.dtype, '__name__', self.dtype)}{dims}]"


def _scalar_or_given(dtype):
    from ..scalar_types import type_from_annotation

    if dtype is typing.Any:
        return dtype
    try:
        return type_from_annotation(dtype) or dtype
    except TypeError:
        return dtype


def _size(d):
    if typing.get_origin(d) is typing.Literal:
        (d,) = typing.get_args(d)
    if not isinstance(d, int) or isinstance(d, bool) or d <= 0:
        raise TypeError(f"tile dimensions must be positive integers, got {d!r}")
    return d


class tile:
    """``wp.tile[dtype, M, N]`` annotates a tile parameter of a ``@wp.func`` (any shape when the
    sizes are left out). In a kernel, ``wp.tile(x)`` makes a tile from per-thread values."""

    def __new__(cls, *args, **kwargs):
        raise RuntimeError("wp.tile(x) can only be called inside kernels and funcs")

    def __class_getitem__(cls, params):
        params = params if isinstance(params, tuple) else (params,)
        if not params:
            raise TypeError("wp.tile[...] requires at least a dtype")
        dims = params[1:]
        if len(dims) == 1 and isinstance(dims[0], tuple):
            dims = dims[0]  # wp.tile[float, (M, N)]
        return TileAnnotation(params[0], tuple(_size(d) for d in dims) if dims else typing.Any)


def is_tile(x) -> bool:
    """Whether ``x`` is a tile annotation or a tile type."""
    return isinstance(x, (TileAnnotation, TileType))
