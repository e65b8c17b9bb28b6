"""Subscript array annotations (weft/array_annotation.py): ``wp.array[float]`` and kin are small
immutable objects that compare, hash, print as source, union, construct arrays, and compile in
kernels (``ndim`` ``Any`` included); the subscript errors of ``Vector``/``Matrix``/``wp.tile``.
"""

import typing
from typing import Any, Literal

import numpy as np
import pytest

import weft as wp
from weft.types import (
    ARRAY_TYPE_INDEXED,
    ARRAY_TYPE_REGULAR,
    Matrix,
    Vector,
    _ArrayAnnotation,
    array_type_id,
    concrete_array_type,
    is_array,
    matches_array_class,
)


def test_repr_is_source_and_round_trips():
    cases = {
        wp.array[wp.float32]: "wp.array[wp.float32]",
        wp.array[int]: "wp.array[wp.int32]",
        wp.array2d[wp.float64]: "wp.array2d[wp.float64]",
        wp.array[wp.vec3, Literal[3]]: "wp.array3d[wp.vec3f]",
        wp.array[wp.mat44d]: "wp.array[wp.mat44d]",
        wp.array[wp.quath]: "wp.array[wp.quath]",
        wp.array[wp.transform]: "wp.array[wp.transformf]",
        wp.array[wp.float32, Any]: "wp.array[wp.float32, Any]",
        wp.array4d[Any]: "wp.array4d[Any]",
        wp.indexedarray[wp.uint8]: "wp.indexedarray[wp.uint8]",
        wp.indexedarray[wp.float32, Literal[2]]: "wp.indexedarray[wp.float32, Literal[2]]",
        wp.array[wp.types.vector(length=5, dtype=wp.int16)]: "wp.array[wp.types.vector(length=5, dtype=wp.int16)]",
        wp.array[wp.types.matrix(shape=(2, 5), dtype=float)]: "wp.array[wp.types.matrix(shape=(2, 5), dtype=wp.float32)]",
    }
    for annotation, text in cases.items():
        assert repr(annotation) == text
        assert eval(text, {"wp": wp, "Any": Any, "Literal": Literal}) == annotation


def test_struct_dtype_prints_its_name():
    @wp.struct
    class Particle:
        x: wp.vec3

    assert repr(wp.array[Particle]) == f"wp.array[{Particle.key}]" and Particle.key.endswith("Particle")


def test_equality_and_hashing():
    assert wp.array[float] == wp.array[wp.float32] == wp.array(dtype=wp.float32)
    assert wp.array(dtype=float) == wp.array[float]
    assert hash(wp.array[float]) == hash(wp.array(dtype=float))
    assert wp.array[float] != wp.array[float, 2]
    assert wp.array[float] != wp.indexedarray[float]
    assert wp.indexedarray[float, 2] == wp.indexedarray(dtype=float, ndim=2)
    assert len({wp.array[float], wp.array1d[wp.float32], wp.array[float, Literal[1]]}) == 1


def test_annotations_are_not_arrays_and_are_immutable():
    ann = wp.array[float]
    assert not isinstance(ann, wp.array) and isinstance(ann, _ArrayAnnotation)
    assert not hasattr(ann, "__dict__")
    with pytest.raises(AttributeError, match="immutable"):
        ann.ndim = 2


def test_union_with_other_annotations():
    ann, ind = wp.array[float], wp.indexedarray[wp.float64]
    assert typing.get_origin(ann | float) is typing.Union and (ann | float).__args__ == (ann, float)
    assert (float | ann).__args__ == (float, ann)
    assert set((None | ind).__args__) == {ind, type(None)}
    assert set((ann | float | ind).__args__) == {ann, float, ind}


def test_union_annotations_are_refused_in_funcs_with_their_location():
    with pytest.raises(wp.codegen.WarpCodegenTypeError, match=r"only supported at Python scope") as e:

        @wp.func
        def takes_union(a: wp.array[float] | float) -> float:
            return 0.0

    assert "test_array_annotations.py" in str(e.value) and "takes_union" in str(e.value)


def test_calling_an_annotation_builds_an_array():
    a = wp.array[wp.float64]([1.0, 2.0, 3.0])
    assert isinstance(a, wp.array) and a.dtype is wp.float64
    np.testing.assert_array_equal(a.numpy(), [1.0, 2.0, 3.0])
    b = wp.array2d[int](shape=(2, 3))
    assert b.shape == (2, 3) and b.dtype is wp.int32
    with pytest.raises(ValueError):
        wp.array2d[float]([1.0, 2.0])  # 1-d data for a 2-d annotation


@wp.kernel
def k_count_rows(a: wp.array[float, Any], out: wp.array[int]):
    out[0] = a.shape[0] * 10 + a.ndim


@wp.kernel
def k_sum_any_dtype(a: wp.array[Any], out: wp.array[float]):
    for i in range(a.shape[0]):
        out[0] += float(a[i])


def test_any_ndim_and_any_dtype_compile_per_argument_type():
    out = wp.zeros(1, dtype=int)
    wp.launch(k_count_rows, 1, inputs=[wp.zeros((4, 2)), out])
    assert out.numpy()[0] == 42
    wp.launch(k_count_rows, 1, inputs=[wp.zeros(7), out])
    assert out.numpy()[0] == 71
    with pytest.raises(TypeError, match="k_count_rows"):
        wp.launch(k_count_rows, 1, inputs=[wp.zeros(3, dtype=wp.float64), out])
    total = wp.zeros(1)
    wp.launch(k_sum_any_dtype, 1, inputs=[wp.array([1, 2, 3], dtype=wp.int64), total])
    wp.launch(k_sum_any_dtype, 1, inputs=[wp.array([0.5], dtype=wp.float16), total])
    assert total.numpy()[0] == 6.5
    assert wp.array[float, Any].ndim is Any and wp.array[Any].dtype is Any


def test_unknown_dtype_is_checked_when_compiled():
    class NotAType:
        pass

    ann = wp.array[NotAType]
    assert ann.dtype is NotAType
    with pytest.raises(TypeError, match=r"kernel '.*takes_unknown' .*Unsupported array dtype"):

        @wp.kernel(module="unique")
        def takes_unknown(a: wp.array[NotAType]):
            pass


def test_subscript_errors():
    with pytest.raises(TypeError, match="Expected a single Literal value"):
        wp.array[float, Literal[1, 2]]
    with pytest.raises(ValueError, match="ndim must be between 1 and 4"):
        wp.array[float, 5]
    with pytest.raises(TypeError, match="single type parameter"):
        wp.array2d[float, Literal[2]]
    with pytest.raises(TypeError, match="Expected a single Literal value"):
        Vector[float, Literal[2, 3]]
    with pytest.raises(TypeError, match="requires 3 parameters"):
        Matrix[float, 3]
    with pytest.raises(TypeError, match="requires at least a dtype"):
        wp.tile[()]
    with pytest.raises(TypeError, match="positive integers"):
        wp.tile[float, -1, 4]


def test_type_variables_give_a_typing_alias():
    T, N = typing.TypeVar("T"), typing.TypeVar("N", bound=int)
    alias = Vector[T, N]
    assert typing.get_origin(alias) is Vector and typing.get_args(alias) == (T, N)
    assert Vector[wp.float32, Literal[3]] is wp.vec3  # concrete parameters still give the type


def test_tile_annotation_fields():
    t = wp.tile[float]
    assert t.dtype is wp.float32 and t.shape is Any and t.storage == "register"
    assert wp.tile[wp.float64, Literal[8], 4].shape == (8, 4) == wp.tile[float, (8, 4)].shape


def test_array_kind_helpers():
    data = wp.zeros(4)
    indexed = wp.indexedarray(data, [wp.array([0, 2], dtype=int)])
    for x in (wp.array[float], wp.array(dtype=float), data, wp.indexedarray[float], indexed):
        assert is_array(x)
    assert not is_array(np.zeros(2)) and not is_array(wp.array) and not is_array(3.0)
    assert array_type_id(wp.array[float]) == array_type_id(data) == ARRAY_TYPE_REGULAR
    assert array_type_id(wp.indexedarray[float, 2]) == array_type_id(indexed) == ARRAY_TYPE_INDEXED
    assert concrete_array_type(wp.array[float]) is wp.array and concrete_array_type(indexed) is wp.indexedarray
    assert matches_array_class(wp.indexedarray[float], wp.indexedarray)
    assert not matches_array_class(wp.array[float], wp.indexedarray)
