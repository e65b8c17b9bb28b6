"""C++ spellings of weft types and constants, shared by the renderers and the staging planner.

Contract: ``ctype_name(t)`` is the C++ type of a weft type (scalars, arrays, tuples, vectors,
matrices, quaternions, transforms, structs); ``literal(value, t)`` a C++ expression of that type
holding ``value``. Pure formatting: no analysis, no state.
"""

from __future__ import annotations

import math

from .. import types as wt
from ..tile.ops_data import TileStackType


def ctype_name(t) -> str:
    if wt.is_scalar(t):
        return "bool" if t is wt.bool else f"weft::{t.cname}"
    if isinstance(t, wt.ArrayType):
        return f"weft::array_t<{ctype_name(t.dtype)}>"
    if isinstance(t, wt.FixedArrayType):
        return f"weft::fixed_storage_t<{ctype_name(t.dtype)}, {t.size}>"
    if isinstance(t, wt.IndexedArrayType):
        return f"weft::indexedarray_t<{ctype_name(t.dtype)}>"
    if isinstance(t, wt.FabricArrayType):
        return f"weft::fabricarray_t<{ctype_name(t.dtype)}>"
    if isinstance(t, wt.IndexedFabricArrayType):
        return f"weft::indexedfabricarray_t<{ctype_name(t.dtype)}>"
    if isinstance(t, wt.TupleType):
        return f"weft::tuple_t<{', '.join(ctype_name(x) for x in t.types)}>"
    if isinstance(t, wt.TileType):
        return f"weft::tile_t<{', '.join([ctype_name(t.dtype)] + [str(d) for d in t.shape])}>"
    if isinstance(t, TileStackType):
        return f"weft::tile_stack_t<{ctype_name(t.dtype)}, {t.capacity}>"
    name = getattr(t, "_cname", None)
    if name:
        return name
    raise TypeError(f"no C++ type for {t!r}")


def literal(value, t) -> str:
    if t is wt.bool:
        return "true" if value else "false"
    if wt.is_float(t):
        v = float(value)
        if math.isnan(v):
            body = "NAN"
        elif math.isinf(v):
            body = "INFINITY" if v > 0 else "-INFINITY"
        else:
            body = repr(v) + ("f" if t is not wt.float64 else "")
        return f"{ctype_name(t)}({body})"
    if wt.is_int(t):
        suffix = "ULL" if t.kind == "uint" else "LL"
        return f"{ctype_name(t)}({int(value)}{suffix})"
    scalar = getattr(t, "_scalar", None)
    if scalar is not None and isinstance(value, tuple):
        prefix = {"vector": "vec", "matrix": "mat", "quaternion": "quat", "transform": "transform"}[t._kind]
        parts = ", ".join(literal(v, scalar) for v in value)
        if t._kind == "transform":
            parts = (
                f"weft::vec_make<weft::vec_t<3, {ctype_name(scalar)}>>({', '.join(literal(v, scalar) for v in value[:3])}), "
                + (
                    f"weft::quat_make<weft::quat_t<{ctype_name(scalar)}>>({', '.join(literal(v, scalar) for v in value[3:])})"
                )
            )
        return f"weft::{prefix}_make<{ctype_name(t)}>({parts})"
    raise TypeError(f"no literal for {t!r}")
