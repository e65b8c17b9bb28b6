"""The public type vocabulary, ``wp.types``: the scalar types and array annotations
(``scalar_types.py``) together with the composite type factories (``vector_types.py``:
``wp.types.vector(length=3, dtype=float)``, ``matrix``, ``quaternion``, ``transformation``).

Contract: re-exports only; the definitions live in those two modules, and ``vector_types`` builds
on ``scalar_types`` alone, so neither imports this module back.
"""

from .scalar_types import *  # noqa: F403 (the scalar vocabulary, re-exported whole)
from .vector_types import Matrix, Quaternion, Transformation, Vector, matrix, quaternion, transformation, vector  # noqa: F401
from .reference import Reference, ref  # noqa: F401 (wp.ref[T], Warp's warp.types.Reference)
# Warp's spellings of the bfloat16 NumPy conversions (programs import them from warp.types)
from .scalar_types import np_bfloat16_bits_to_float32 as _np_bfloat16_bits_to_float32  # noqa: F401, E402
from .scalar_types import np_float32_to_bfloat16_bits as _np_float32_to_bfloat16_bits  # noqa: F401, E402
from .type_queries import *  # noqa: F401, F403, E402 (Warp's introspection helpers)
from .tile.types import TileType, is_tile, tile  # noqa: F401, E402
from .array_annotation import (  # noqa: F401, E402 (subscript array annotations, Warp's names)
    ARRAY_TYPE_FABRIC,
    ARRAY_TYPE_FABRIC_INDEXED,
    ARRAY_TYPE_INDEXED,
    ARRAY_TYPE_REGULAR,
    _ArrayAnnotation,
    _ArrayAnnotationBase,
    _FabricArrayAnnotation,
    _IndexedArrayAnnotation,
    _IndexedFabricArrayAnnotation,
    array_type_id,
    concrete_array_type,
    is_array,
    matches_array_class,
)
