"""``wp.tile[dtype, M, N]``: the annotation of a tile, Warp's block-level arrays.

weft does not run tile code yet (tiles are a later issue). The annotation exists so that
programs declaring tile funcs still import and their other kernels run; compiling anything that
takes or makes a tile is refused with an error that says so.
"""

from __future__ import annotations

import typing


class TileAnnotation:
    """``wp.tile[dtype]`` or ``wp.tile[dtype, M, N]`` (sizes as ints, ``Literal[...]`` or one
    tuple): ``dtype`` as a weft type, ``shape`` a tuple of ints or ``Any`` when not given, and
    ``storage`` (``"register"``, as Warp's annotations default to)."""

    __slots__ = ("dtype", "shape", "storage")

    def __init__(self, dtype, shape=typing.Any, storage="register"):
        self.dtype = _scalar_or_given(dtype)
        self.shape = shape
        self.storage = storage

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
    from .scalar_types import type_from_annotation

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


class tile:  # noqa: N801 (Warp's spelling)
    """``wp.tile[dtype, M, N]`` annotates a tile parameter or result (not supported by weft yet)."""

    def __new__(cls, *args, **kwargs):
        raise NotImplementedError("weft does not support tiles yet (wp.tile); see the tiles issue")

    def __class_getitem__(cls, params):
        params = params if isinstance(params, tuple) else (params,)
        if not params:
            raise TypeError("wp.tile[...] requires at least a dtype")
        dims = params[1:]
        if len(dims) == 1 and isinstance(dims[0], tuple):
            dims = dims[0]  # wp.tile[float, (M, N)]
        return TileAnnotation(params[0], tuple(_size(d) for d in dims) if dims else typing.Any)


def is_tile(x) -> bool:
    """Whether ``x`` is a tile annotation (weft has no tile values yet)."""
    return isinstance(x, TileAnnotation)
