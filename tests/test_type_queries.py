"""Warp's type-introspection helpers in ``wp.types`` (types_equal, type_size, type_is_*,
is_*), answered from weft's types."""

import weft as wp

t = wp.types


def test_types_equal_treats_python_scalars_and_annotations_like_warp():
    assert t.types_equal(wp.vec3, t.vector(3, float))
    assert t.types_equal(float, wp.float32) and t.types_equal(int, wp.int32)
    assert t.types_equal(wp.array[float], wp.array(dtype=wp.float32))
    assert not t.types_equal(wp.vec3, wp.vec3d)
    assert not t.types_equal(wp.array[float], wp.indexedarray[float])


def test_sizes_lengths_and_scalar_types():
    mat23 = t.matrix((2, 3), wp.float64)
    assert t.type_size(wp.mat33) == 9 and t.type_size(float) == 1 and t.type_size(wp.quat) == 4
    assert t.type_size_in_bytes(mat23) == 48 and t.type_size_in_bytes(float) == 4
    assert t.type_size_in_bytes(wp.float16) == 2
    assert t.type_length(mat23) == 2 and t.type_length(wp.vec4()) == 4
    assert t.type_scalar_type(wp.vec3h) is wp.float16 and t.type_scalar_type(wp.int8) is wp.int8
    assert t.type_to_warp(float) is wp.float32 and t.type_to_warp(wp.vec2) is wp.vec2


@wp.struct
class Probe:
    x: float


def test_kind_predicates_for_types_and_values():
    assert t.type_is_vector(wp.vec3) and not t.type_is_vector(wp.mat22) and not t.type_is_vector(wp.vec3())
    assert t.type_is_matrix(wp.mat22) and t.type_is_quaternion(wp.quat) and t.type_is_transformation(wp.transform)
    assert t.type_is_composite(wp.spatial_vector) and not t.type_is_composite(float)
    assert t.type_is_int(int) and t.type_is_int(wp.uint8) and not t.type_is_int(wp.float16)
    assert t.type_is_float(float) and t.type_is_scalar(wp.bool) and t.type_is_value(wp.mat44)
    assert t.type_is_struct(Probe) and not t.type_is_struct(wp.vec3)
    assert t.type_is_array(wp.array) and t.type_is_array(wp.indexedarray) and not t.type_is_array(list)
    assert t.is_vector(wp.vec3()) and t.is_matrix(wp.mat22()) and not t.is_vector(wp.vec3)
    assert t.is_quaternion(wp.quat()) and t.is_transformation(wp.transform()) and t.is_composite(wp.vec2())
    assert t.is_struct(Probe()) and not t.is_struct(Probe)
    assert t.is_value(1.5) and t.is_value(wp.float64(2.0)) and t.is_value(wp.vec2()) and not t.is_value("x")


def test_type_codes_are_warps_and_agree_between_annotations_and_arrays():
    from typing import Any, Literal

    g = wp.types.get_type_code
    assert [g(t) for t in (wp.bool, wp.uint8, wp.int16, wp.float16, wp.bfloat16, float, int)] == [
        "b", "u1", "i2", "f2", "bf2", "f4", "i4",
    ]
    assert (g(wp.vec3), g(wp.mat22d), g(wp.quath), g(wp.transform), g(wp.spatial_vector)) == (
        "v3f4", "m22f8", "qf2", "tf4", "v6f4",
    )
    assert g(Any) == "?" and g(wp.Float) == "f?" and g(wp.types.vector(Any, wp.float32)) == "v?f4"
    assert g(wp.array[wp.vec3, Literal[2]]) == g(wp.array(dtype=wp.vec3, ndim=2)) == g(wp.zeros((2, 2), dtype=wp.vec3))
    assert g(wp.array(dtype=wp.vec3, ndim=2)) == "a2v3f4" and g(wp.indexedarray[float]) == "ia1f4"
    assert g(wp.array4d[Any]) == "a4?" and g(wp.array[float, Any]) == "a?f4"
    assert g(wp.tile[float]) == "tr?f4" and g(wp.tile[float, 8, 4]) == "tr84f4"
