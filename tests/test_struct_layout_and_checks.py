"""Struct details Warp programs rely on: empty structs (one byte, as in C++) nested in others,
structs used only as the element type of an array field or parameter, Warp's field-assignment
checks, no inheritance, and a missing field in a kernel as an AttributeError."""

from typing import Any, Literal

import numpy as np
import pytest

import weft as wp


@wp.struct
class Nothing:
    pass


@wp.struct
class Padded:
    a: Nothing
    b: Nothing
    c: Nothing
    z: int
    w: wp.float64


@wp.kernel
def k_read_padded(s: Any, out: wp.array(dtype=wp.float64)):
    out[0] = wp.float64(s.z) + s.w


def test_empty_struct_fields_take_a_byte_each_as_in_cpp():
    s = Padded()
    s.z = 42
    s.w = 0.25
    out = wp.zeros(1, dtype=wp.float64)
    wp.launch(k_read_padded, 1, [s, out])
    assert out.numpy()[0] == 42.25
    arr = wp.array([s, s], dtype=Padded)
    np.testing.assert_array_equal(arr.numpy()["z"], [42, 42])
    assert Padded.np_dtype.itemsize == 16  # three one-byte fields, int32 at 4, float64 at 8


@wp.struct
class Leaf:
    i: int


@wp.struct
class HoldsLeaves:
    leaves: wp.array(dtype=Leaf)


@wp.kernel
def k_sum_leaves(h: HoldsLeaves, out: wp.array(dtype=int)):
    k = wp.tid()
    wp.atomic_add(out, 0, h.leaves[k].i)


@wp.struct
class OnlyAsElement:
    v: wp.vec2


@wp.kernel
def k_count_elements(a: wp.array(dtype=OnlyAsElement), out: wp.array(dtype=int)):
    wp.atomic_add(out, 0, 1)  # the element type is never read: its definition is still needed


def test_structs_used_only_as_array_element_types_are_defined():
    leaves = []
    for i in (3, 4):
        leaf = Leaf()
        leaf.i = i
        leaves.append(leaf)
    h = HoldsLeaves()
    h.leaves = wp.array(leaves, dtype=Leaf)
    out = wp.zeros(1, dtype=int)
    wp.launch(k_sum_leaves, 2, [h, out])
    assert out.numpy()[0] == 7
    wp.launch(k_count_elements, 3, [wp.zeros(3, dtype=OnlyAsElement), out])
    assert out.numpy()[0] == 10


@wp.struct
class Fields:
    values: wp.array2d(dtype=wp.int32)
    picked: wp.indexedarray(dtype=wp.int32)
    v: wp.vec3


def test_field_assignments_are_checked_with_warps_messages():
    s = Fields()
    with pytest.raises(TypeError, match="expects a Warp array, got list"):
        s.values = [1, 2]
    with pytest.raises(TypeError, match=r"expects an array with 2 dimension\(s\), got 1 dimension\(s\)"):
        s.values = wp.zeros(3, dtype=wp.int32)
    with pytest.raises(TypeError, match="expects dtype int32, got float32"):
        s.values = wp.zeros((2, 2), dtype=wp.float32)
    with pytest.raises(TypeError, match="expects a Warp indexed array, got array"):
        s.picked = wp.zeros(3, dtype=wp.int32)
    with pytest.raises(TypeError, match="expects vec3f but got a single value"):
        s.v = 1.5
    s.v = (1.0, 2.0, 3.0)  # a sequence still converts
    assert s.v == wp.vec3(1.0, 2.0, 3.0)
    s.v = None  # zeros
    assert s.v == wp.vec3(0.0, 0.0, 0.0)
    s.values = wp.zeros((2, 2), dtype=wp.int32)
    s.picked = wp.indexedarray(wp.zeros(4, dtype=wp.int32), [wp.array([1], dtype=wp.int32)])


def test_structs_cannot_inherit():
    with pytest.raises(RuntimeError, match="must be defined as base classes"):

        @wp.struct
        class Child(Leaf):
            j: int


@wp.kernel
def k_missing_field(h: HoldsLeaves):
    _ = h.nothing_here


def test_a_missing_field_in_a_kernel_is_an_attribute_error():
    with pytest.raises(AttributeError, match=r"`nothing_here` is not an attribute of 'h'"):
        wp.launch(k_missing_field, 1, [HoldsLeaves()])


def test_annotations_by_subscript_with_literal_dimensions():
    assert wp.indexedarray[wp.int32, Literal[2]] == wp.indexedarray2d(dtype=wp.int32)


@wp.struct
class WithMethod:
    x: int
    scale: float

    def scaled(self):
        return self.x * self.scale


def test_instances_are_instances_of_the_decorated_class():
    s = WithMethod()
    s.x = 3
    s.scale = 0.5
    assert isinstance(s, WithMethod.cls)
    assert s.scaled() == 1.5
    assert isinstance(wp.zeros(2, dtype=WithMethod).list()[0], WithMethod.cls)
