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

# The documented public names of ``wp.types`` (tests/test_docs.py checks each has a docstring and a
# reference entry); the other names here are weft's own plumbing, reachable but not promised.
__all__ = [
    # scalar types and the type variables of generic parameters
    "bool", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64",
    "float16", "half", "bfloat16", "float32", "float64", "Float", "Int", "Scalar",
    "float_types", "int_types", "scalar_types",
    # composite types: factories and subscript annotations
    "vector", "matrix", "quaternion", "transformation", "Vector", "Matrix", "Quaternion", "Transformation",
    "Reference", "ref", "TileType", "tile", "TupleType",
    # array kinds
    "ArrayType", "IndexedArrayType", "FabricArrayType", "IndexedFabricArrayType", "FixedArrayType",
    "ARRAY_TYPE_REGULAR", "ARRAY_TYPE_INDEXED", "ARRAY_TYPE_FABRIC", "ARRAY_TYPE_FABRIC_INDEXED",
    "array_type_id", "is_array",
    # NumPy conversions
    "dtype_from_numpy", "dtype_to_numpy", "np_dtype_to_warp_type", "warp_type_to_np_dtype",
    # type queries
    "get_type_code", "is_composite", "is_matrix", "is_quaternion", "is_struct", "is_tile", "is_transformation",
    "is_value", "is_vector", "type_is_composite", "type_is_float", "type_is_int", "type_is_matrix",
    "type_is_quaternion", "type_is_scalar", "type_is_struct", "type_is_transformation", "type_is_value",
    "type_is_vector", "type_length", "type_repr", "type_scalar_type", "type_size", "type_size_in_bytes",
    "type_to_warp", "types_equal",
]  # fmt: skip
