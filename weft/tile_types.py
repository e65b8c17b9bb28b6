"""``wp.tile[dtype, M, N]``: the annotation of a tile, Warp's block-level arrays.

weft does not run tile code yet (tiles are a later issue). The annotation exists so that
programs declaring tile funcs still import and their other kernels run; compiling anything that
takes or makes a tile is refused with an error that says so.
"""

from __future__ import annotations

import typing


class TileAnnotation:
    """``wp.tile[dtype]`` or ``wp.tile[dtype, M, N]`` (sizes as ints or ``Literal[...]``)."""

    __slots__ = ("dtype", "shape")

    def __init__(self, dtype, shape=None):
        self.dtype = dtype
        self.shape = shape

    def __eq__(self, other):
        return isinstance(other, TileAnnotation) and (other.dtype, other.shape) == (self.dtype, self.shape)

    def __hash__(self):
        return hash((TileAnnotation, self.dtype, self.shape))

    def __repr__(self):
        dims = "" if self.shape is None else ", " + ", ".join(str(d) for d in self.shape)
        return f"tile[{getattr(self.dtype, '__name__', self.dtype)}{dims}]"


def _size(d):
    if typing.get_origin(d) is typing.Literal:
        (d,) = typing.get_args(d)
    return d


class tile:  # noqa: N801 (Warp's spelling)
    """``wp.tile[dtype, M, N]`` annotates a tile parameter or result (not supported by weft yet)."""

    def __new__(cls, *args, **kwargs):
        raise NotImplementedError("weft does not support tiles yet (wp.tile); see the tiles issue")

    def __class_getitem__(cls, params):
        params = params if isinstance(params, tuple) else (params,)
        dtype, dims = params[0], tuple(_size(d) for d in params[1:])
        return TileAnnotation(dtype, dims or None)


def is_tile(x) -> bool:
    """Whether ``x`` is a tile annotation (weft has no tile values yet)."""
    return isinstance(x, TileAnnotation)
