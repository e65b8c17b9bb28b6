"""Sparse volume builtins, with Warp's names and signatures: ``wp.volume_sample`` / ``_f`` / ``_v``
/ ``_i``, ``wp.volume_sample_grad`` / ``_f``, ``wp.volume_sample_index`` / ``_grad_index``,
``wp.volume_lookup`` / ``_f`` / ``_v`` / ``_i``, ``wp.volume_store`` / ``_f`` / ``_v`` / ``_i``,
``wp.volume_lookup_index``, ``wp.volume_voxel_count`` and the index <-> world transforms. C++ in
native/geometry/volume.h.

A volume is passed to kernels as its ``id`` (``wp.uint64``). The forms taking ``dtype`` receive it,
here, as a zero value of that type (the frontend converts ``dtype=wp.vec3``; codegen/
special_calls.py), so each value type is an overload. The ``grad`` output of the ``_grad`` forms
is ``inout``: the builtin returns (value, gradient) and the frontend rebinds the variable passed
as ``grad``, as Warp writes it in place.
"""

from __future__ import annotations

from .. import types as wt
from .. import vector_types as vt
from .registry import builtin, p

u64, i32, f32, f64 = wt.uint64, wt.int32, wt.float32, wt.float64
v3, v3d = vt.vector(3, f32), vt.vector(3, f64)

# Warp's volume value types, each with the type of its spatial gradient (rows: components).
VALUE_TYPES = {
    wt.int32: vt.vector(3, wt.int32),
    wt.int64: vt.vector(3, wt.int64),
    wt.uint32: vt.vector(3, wt.uint32),
    f32: v3,
    f64: v3d,
    v3: vt.matrix((3, 3), f32),
    v3d: vt.matrix((3, 3), f64),
    vt.vector(4, f32): vt.matrix((4, 3), f32),
    vt.vector(4, f64): vt.matrix((4, 3), f64),
}


def _floating(t) -> bool:
    return wt.is_float(getattr(t, "_scalar", t))


def _volume(name, doc):
    return builtin(name, doc, "volumes")


_ID_UVW = ("id", u64, "uvw", v3, "sampling_mode", i32)
_IJK = ("id", u64, "i", i32, "j", i32, "k", i32)

volume_sample = _volume(
    "volume_sample", "Sample a volume of type dtype at the index-space point uvw (CLOSEST or LINEAR)"
)
volume_sample_grad = _volume(
    "volume_sample_grad", "Sample a volume of type dtype and its spatial gradient (written to grad) at uvw"
)
volume_sample_index = _volume(
    "volume_sample_index", "Sample an index volume's values held in voxel_data (background elsewhere) at uvw"
)
volume_sample_grad_index = _volume(
    "volume_sample_grad_index", "Sample an index volume's values in voxel_data and their gradient (written to grad)"
)
volume_lookup = _volume("volume_lookup", "The value of type dtype a volume holds at the voxel (i, j, k)")
volume_store = _volume("volume_store", "Write a value to the voxel (i, j, k) where its leaf is allocated")
for _t, _g in VALUE_TYPES.items():
    _d = _floating(_t)
    volume_sample.add(p(*_ID_UVW, "dtype", _t), _t, differentiable=_d)
    volume_sample_grad.add(p(*_ID_UVW, "grad", _g, "dtype", _t), wt.TupleType([_t, _g]), differentiable=_d)
    _array = wt.ArrayType(_t, 1)
    volume_sample_index.add(p(*_ID_UVW, "voxel_data", _array, "background", _t), _t, differentiable=_d)
    volume_sample_grad_index.add(
        p(*_ID_UVW, "voxel_data", _array, "background", _t, "grad", _g), wt.TupleType([_t, _g]), differentiable=_d
    )
    volume_lookup.add(p(*_IJK, "dtype", _t), _t, differentiable=False)
    volume_store.add(p(*_IJK, "value", _t), None, differentiable=False, side_effect=True)
volume_sample_grad.inout = (3,)
volume_sample_grad_index.inout = (5,)


def _one(name, doc, params, returns, differentiable=False, side_effect=False):
    fn = _volume(name, doc)
    fn.add(p(*params), returns, differentiable=differentiable, side_effect=side_effect)
    return fn


volume_sample_f = _one("volume_sample_f", "Sample a float32 volume at uvw", _ID_UVW, f32, True)
volume_sample_v = _one("volume_sample_v", "Sample a vec3f volume at uvw", _ID_UVW, v3, True)
volume_sample_i = _one("volume_sample_i", "The int32 value of the voxel nearest to uvw", ("id", u64, "uvw", v3), i32)
volume_sample_grad_f = _one(
    "volume_sample_grad_f",
    "Sample a float32 volume and its gradient (written to grad) at uvw",
    (*_ID_UVW, "grad", v3),
    wt.TupleType([f32, v3]),
    True,
)
volume_sample_grad_f.inout = (3,)
volume_lookup_f = _one("volume_lookup_f", "The float32 value at the voxel (i, j, k)", _IJK, f32)
volume_lookup_v = _one("volume_lookup_v", "The vec3f value at the voxel (i, j, k)", _IJK, v3)
volume_lookup_i = _one("volume_lookup_i", "The int32 value at the voxel (i, j, k)", _IJK, i32)
volume_store_f = _one("volume_store_f", "Write a float32 voxel value", (*_IJK, "value", f32), None, side_effect=True)
volume_store_v = _one("volume_store_v", "Write a vec3f voxel value", (*_IJK, "value", v3), None, side_effect=True)
volume_store_i = _one("volume_store_i", "Write an int32 voxel value", (*_IJK, "value", i32), None, side_effect=True)
volume_lookup_index = _one(
    "volume_lookup_index", "The index of the voxel (i, j, k) in get_voxels() order, -1 when it has none", _IJK, i32
)
volume_voxel_count = _one("volume_voxel_count", "How many voxels a volume indexes", ("id", u64), i32)

volume_index_to_world = _volume("volume_index_to_world", "The world-space position of the index-space point uvw")
volume_world_to_index = _volume("volume_world_to_index", "The index-space position of the world-space point xyz")
volume_index_to_world_dir = _volume("volume_index_to_world_dir", "The world-space direction of an index-space one")
volume_world_to_index_dir = _volume("volume_world_to_index_dir", "The index-space direction of a world-space one")
for _fn, _arg in (
    (volume_index_to_world, "uvw"),
    (volume_world_to_index, "xyz"),
    (volume_index_to_world_dir, "uvw"),
    (volume_world_to_index_dir, "xyz"),
):
    _fn.add(p("id", u64, _arg, v3), v3)
    _fn.add(p("id", u64, _arg, v3d), v3d)

# The builtins whose call takes `dtype` (a type, known when the kernel is built), for the frontend.
DTYPE_BUILTINS = (volume_sample, volume_sample_grad, volume_lookup)
# The builtins with a `grad` output argument, rebound by the frontend.
INOUT_BUILTINS = (volume_sample_grad, volume_sample_grad_f, volume_sample_grad_index)
