"""wp.Volume: sparse volumes as NanoVDB grids. Sampling against a NumPy trilinear reference of a
dense field stored into tiles (background outside them), closest sampling, gradients (the value's
spatial gradient, and tape gradients against central differences), store / lookup round trips
for every value type, index <-> world transforms with translation, anisotropic voxels and a
general matrix, tile and voxel counts against NumPy, index grids and their array-backed samples,
rebuilds, dense NumPy loads and .nvdb files (round trips, codecs, several grids)."""

from __future__ import annotations

import io
from typing import Any

import numpy as np
import pytest

import weft as wp
from weft.geometry import nanovdb as nv

V = wp.Volume


# ------------------------------------------------------------------------------------ kernels


@wp.kernel
def store_dense(vol: wp.uint64, field: wp.array3d(dtype=float), lo: wp.vec3i):
    i, j, k = wp.tid()
    wp.volume_store(vol, i + lo[0], j + lo[1], k + lo[2], field[i, j, k])


@wp.kernel
def store_values(vol: wp.uint64, ijk: wp.array2d(dtype=wp.int32), values: wp.array(dtype=Any)):
    t = wp.tid()
    wp.volume_store(vol, ijk[t, 0], ijk[t, 1], ijk[t, 2], values[t])


@wp.kernel
def lookup_values(vol: wp.uint64, ijk: wp.array2d(dtype=wp.int32), out: wp.array(dtype=Any)):
    t = wp.tid()
    out[t] = wp.volume_lookup(vol, ijk[t, 0], ijk[t, 1], ijk[t, 2], dtype=out.dtype)


@wp.kernel
def fixed_type_access(
    vol_f: wp.uint64,
    vol_v: wp.uint64,
    vol_i: wp.uint64,
    ijk: wp.array2d(dtype=wp.int32),
    out_f: wp.array(dtype=float),
    out_v: wp.array(dtype=wp.vec3),
    out_i: wp.array(dtype=int),
):
    t = wp.tid()
    i, j, k = ijk[t, 0], ijk[t, 1], ijk[t, 2]
    wp.volume_store_f(vol_f, i, j, k, float(i - 2 * j + 3 * k))
    wp.volume_store_v(vol_v, i, j, k, wp.vec3(float(i), float(j), float(k)))
    wp.volume_store_i(vol_i, i, j, k, i * j + k)
    out_f[t] = wp.volume_lookup_f(vol_f, i, j, k)
    out_v[t] = wp.volume_lookup_v(vol_v, i, j, k)
    out_i[t] = wp.volume_lookup_i(vol_i, i, j, k) + wp.volume_sample_i(vol_i, wp.vec3(float(i), float(j), float(k)))


@wp.kernel
def sample_f(vol: wp.uint64, uvw: wp.array(dtype=wp.vec3), mode: int, out: wp.array(dtype=float)):
    t = wp.tid()
    out[t] = wp.volume_sample_f(vol, uvw[t], mode)


@wp.kernel
def sample_grad_f(
    vol: wp.uint64, uvw: wp.array(dtype=wp.vec3), out: wp.array(dtype=float), grads: wp.array(dtype=wp.vec3)
):
    t = wp.tid()
    g = wp.vec3()
    out[t] = wp.volume_sample_grad_f(vol, uvw[t], wp.Volume.LINEAR, g)
    grads[t] = g


@wp.kernel
def sample_vec(
    vol: wp.uint64, uvw: wp.array(dtype=wp.vec3), out: wp.array(dtype=wp.vec3), grads: wp.array(dtype=wp.mat33)
):
    t = wp.tid()
    g = wp.mat33()
    v = wp.volume_sample_grad(vol, uvw[t], wp.Volume.LINEAR, g, dtype=wp.vec3)
    out[t] = (
        v
        + wp.volume_sample_v(vol, uvw[t], wp.Volume.LINEAR)
        - wp.volume_sample(vol, uvw[t], wp.Volume.LINEAR, dtype=wp.vec3)
    )
    grads[t] = g


@wp.kernel
def world_sample_loss(
    vol: wp.uint64, xyz: wp.array(dtype=wp.vec3), w: wp.array(dtype=wp.vec3), out: wp.array(dtype=float)
):
    t = wp.tid()
    p = wp.volume_world_to_index(vol, xyz[t])
    g = wp.vec3()
    v = wp.volume_sample_grad_f(vol, p, wp.Volume.LINEAR, g)
    out[t] = v + wp.dot(g, w[t])


@wp.kernel
def transforms(
    vol: wp.uint64,
    p: wp.array(dtype=wp.vec3),
    pd: wp.array(dtype=wp.vec3d),
    out: wp.array(dtype=wp.vec3, ndim=2),
    outd: wp.array(dtype=wp.vec3d, ndim=2),
):
    t = wp.tid()
    out[t, 0] = wp.volume_index_to_world(vol, p[t])
    out[t, 1] = wp.volume_world_to_index(vol, p[t])
    out[t, 2] = wp.volume_index_to_world_dir(vol, p[t])
    out[t, 3] = wp.volume_world_to_index_dir(vol, p[t])
    outd[t, 0] = wp.volume_index_to_world(vol, pd[t])
    outd[t, 1] = wp.volume_world_to_index(vol, pd[t])
    outd[t, 2] = wp.volume_index_to_world_dir(vol, pd[t])
    outd[t, 3] = wp.volume_world_to_index_dir(vol, pd[t])


@wp.kernel
def transform_loss(vol: wp.uint64, p: wp.array(dtype=wp.vec3), w: wp.array(dtype=wp.vec3), out: wp.array(dtype=float)):
    t = wp.tid()
    a = wp.volume_index_to_world(vol, p[t]) + wp.volume_world_to_index_dir(vol, p[t])
    b = wp.volume_world_to_index(vol, p[t]) + wp.volume_index_to_world_dir(vol, p[t])
    out[t] = wp.dot(a, w[t]) + wp.dot(b, b)


@wp.kernel
def lookup_index(vol: wp.uint64, ijk: wp.array2d(dtype=wp.int32), out: wp.array(dtype=int), count: wp.array(dtype=int)):
    t = wp.tid()
    out[t] = wp.volume_lookup_index(vol, ijk[t, 0], ijk[t, 1], ijk[t, 2])
    count[t] = wp.volume_voxel_count(vol)


@wp.kernel
def sample_index(
    vol: wp.uint64,
    uvw: wp.array(dtype=wp.vec3),
    mode: int,
    values: wp.array(dtype=float),
    bg: wp.array(dtype=float),
    out: wp.array(dtype=float),
    grads: wp.array(dtype=wp.vec3),
):
    t = wp.tid()
    g = wp.vec3()
    out[t] = wp.volume_sample_index(vol, uvw[t], mode, values, bg[0]) + wp.volume_sample_grad_index(
        vol, uvw[t], mode, values, bg[0], g
    )
    grads[t] = g


# ------------------------------------------------------------------------------------ references


def trilinear(field, lo, bg, p):
    """NumPy trilinear samples of a dense field whose voxel (i, j, k) is field[(i, j, k) - lo]
    (the background outside), and their gradients."""
    p = np.asarray(p, dtype=np.float64)
    base = np.floor(p).astype(np.int64)
    f = p - base
    val = np.zeros(len(p))
    grad = np.zeros((len(p), 3))
    for o in np.ndindex(2, 2, 2):
        idx = base + np.array(o) - lo
        inside = np.all((idx >= 0) & (idx < field.shape), axis=1)
        v = np.full(len(p), bg, dtype=np.float64)
        v[inside] = field[tuple(idx[inside].T)]
        w = np.where(np.array(o) == 1, f, 1.0 - f)
        s = np.where(np.array(o) == 1, 1.0, -1.0)
        val += w.prod(axis=1) * v
        for d in range(3):
            grad[:, d] += s[d] * np.prod(np.delete(w, d, axis=1), axis=1) * v
    return val, grad


def unique_rows(a):
    return np.unique(np.asarray(a).reshape(-1, 3), axis=0)


@pytest.fixture(scope="module")
def dense_cache():
    """The dense test volume, built once per device for this module (keyed by device alias)."""
    return {}


@pytest.fixture
def dense_volume(dense_cache):
    """A float volume over the voxels [-8, 16)^3 holding a smooth random field, background 3, on
    the test's device."""
    key = wp.get_device().alias
    if key not in dense_cache:
        dense_cache[key] = _make_dense_volume()
    return dense_cache[key]


def _make_dense_volume():
    rng = np.random.default_rng(7)
    lo = np.array([-8, -8, -8])
    x = np.arange(24)
    field = (np.sin(0.3 * x[:, None, None]) * np.cos(0.2 * x[None, :, None]) + 0.1 * x[None, None, :]).astype(
        np.float32
    )
    field += rng.uniform(-0.2, 0.2, size=field.shape).astype(np.float32)
    vol = V.allocate(lo, lo + 23, voxel_size=0.5, bg_value=3.0, translation=(1.0, -2.0, 0.5))
    wp.launch(store_dense, field.shape, [vol.id, wp.array(field, dtype=float), wp.vec3i(*lo)])
    return vol, field, lo


# ------------------------------------------------------------------------------------ sampling


def test_linear_and_closest_samples_match_numpy_with_background_outside(dense_volume):
    vol, field, lo = dense_volume
    rng = np.random.default_rng(1)
    pts = rng.uniform(-11.0, 19.0, size=(600, 3)).astype(np.float32)  # inside, across the border, outside
    out = wp.zeros(len(pts), dtype=float)
    wp.launch(sample_f, len(pts), [vol.id, wp.array(pts, dtype=wp.vec3), V.LINEAR, out])
    ref, _ = trilinear(field, lo, 3.0, pts)
    np.testing.assert_allclose(out.numpy(), ref, rtol=2e-5, atol=2e-5)
    far = np.any(pts < -9.0, axis=1) | np.any(pts > 16.0, axis=1)  # every stencil voxel outside the tiles
    assert far.sum() > 100
    np.testing.assert_allclose(out.numpy()[far], 3.0, rtol=1e-6)

    wp.launch(sample_f, len(pts), [vol.id, wp.array(pts, dtype=wp.vec3), V.CLOSEST, out])
    nearest = np.where(pts >= 0, np.floor(pts + 0.5), np.ceil(pts - 0.5)).astype(np.int64)  # halfway away from 0
    idx = nearest - lo
    inside = np.all((idx >= 0) & (idx < 24), axis=1)
    expect = np.full(len(pts), 3.0, dtype=np.float32)
    expect[inside] = field[tuple(idx[inside].T)]
    np.testing.assert_array_equal(out.numpy(), expect)


def test_sample_gradient_is_the_trilinear_derivative(dense_volume):
    vol, field, lo = dense_volume
    pts = np.random.default_rng(2).uniform(-9.0, 17.0, size=(300, 3)).astype(np.float32)
    out, grads = wp.zeros(len(pts), dtype=float), wp.zeros(len(pts), dtype=wp.vec3)
    wp.launch(sample_grad_f, len(pts), [vol.id, wp.array(pts, dtype=wp.vec3), out, grads])
    ref, ref_grad = trilinear(field, lo, 3.0, pts)
    np.testing.assert_allclose(out.numpy(), ref, rtol=2e-5, atol=2e-5)
    np.testing.assert_allclose(grads.numpy(), ref_grad, rtol=1e-4, atol=1e-4)


def test_vector_volume_samples_and_jacobian():
    a = np.array([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0], [7.0, 8.0, 9.0]], dtype=np.float32)
    vol = V.allocate([-16, -16, -16], [15, 15, 15], voxel_size=1.0, bg_value=(1.0, 2.0, 3.0))
    ijk = np.stack(np.meshgrid(*[np.arange(-16, 16)] * 3, indexing="ij"), -1).reshape(-1, 3).astype(np.int32)
    wp.launch(store_values, len(ijk), [vol.id, wp.array(ijk, dtype=wp.int32), wp.array(ijk @ a.T, dtype=wp.vec3)])
    pts = np.random.default_rng(3).uniform(-14.0, 13.0, size=(100, 3)).astype(np.float32)
    out, grads = wp.zeros(len(pts), dtype=wp.vec3), wp.zeros(len(pts), dtype=wp.mat33)
    wp.launch(sample_vec, len(pts), [vol.id, wp.array(pts, dtype=wp.vec3), out, grads])
    np.testing.assert_allclose(out.numpy(), pts @ a.T, rtol=1e-4, atol=1e-3)
    np.testing.assert_allclose(grads.numpy(), np.broadcast_to(a, (len(pts), 3, 3)), rtol=1e-4, atol=1e-4)
    assert wp.types.types_equal(vol.dtype, wp.vec3)


# ------------------------------------------------------------------------------------ gradients


def _fd_points(rng, n, lo, hi):
    """Points whose fractional parts keep clear of voxel planes (trilinear is smooth inside a cell)."""
    return (rng.integers(lo, hi, size=(n, 3)) + rng.uniform(0.15, 0.85, size=(n, 3))).astype(np.float32)


def _tape_and_fd(kernel, inputs_before, x, inputs_after, n, eps=2e-3):
    """Tape gradient of sum(out) with respect to the vec3 array x, and its central differences."""
    xa = wp.array(x, dtype=wp.vec3, requires_grad=True)
    out = wp.zeros(n, dtype=float, requires_grad=True)
    tape = wp.Tape()
    with tape:
        wp.launch(kernel, n, [*inputs_before, xa, *inputs_after, out])
    tape.backward(grads={out: wp.ones(n, dtype=float)})
    numeric = np.zeros_like(x, dtype=np.float64)
    for d in range(3):
        sums = []
        for sgn in (1.0, -1.0):
            xp = x.copy()
            xp[:, d] += sgn * eps
            o = wp.zeros(n, dtype=float)
            wp.launch(kernel, n, [*inputs_before, wp.array(xp, dtype=wp.vec3), *inputs_after, o])
            sums.append(o.numpy().astype(np.float64))
        numeric[:, d] = (sums[0] - sums[1]) / (2 * eps)
    return xa.grad.numpy(), numeric


def test_sample_gradients_match_finite_differences(dense_volume):
    vol, _, _ = dense_volume
    rng = np.random.default_rng(4)
    x = _fd_points(rng, 40, -9, 16)
    tape_grad, fd = _tape_and_fd(sample_f, [vol.id], x, [V.LINEAR], len(x))
    np.testing.assert_allclose(tape_grad, fd, rtol=1e-2, atol=2e-3)
    # closest sampling is piecewise constant: no gradient
    tape_grad, _ = _tape_and_fd(sample_f, [vol.id], x, [V.CLOSEST], len(x))
    assert np.all(tape_grad == 0.0)


def test_gradient_output_and_world_transform_gradients_match_finite_differences(dense_volume):
    vol, _, _ = dense_volume
    rng = np.random.default_rng(5)
    idx = _fd_points(rng, 30, -9, 16)
    xyz = (idx * 0.5 + np.array([1.0, -2.0, 0.5], np.float32)).astype(np.float32)  # world points of those cells
    w = wp.array(rng.uniform(-1, 1, size=(30, 3)), dtype=wp.vec3)
    tape_grad, fd = _tape_and_fd(world_sample_loss, [vol.id], xyz, [w], 30, eps=1e-3)
    np.testing.assert_allclose(tape_grad, fd, rtol=1e-2, atol=5e-3)


def test_transforms_with_translation_anisotropic_voxels_and_a_matrix():
    m = np.array([[0.0, -0.5, 0.0], [0.25, 0.0, 0.0], [0.1, 0.0, 2.0]])
    t = np.array([1.5, -2.0, 3.0])
    vol = V.allocate_by_voxels(wp.array([[0, 0, 0]], dtype=wp.int32), transform=m.tolist(), translation=tuple(t))
    info = vol.get_grid_info()
    np.testing.assert_allclose(np.array(info.transform_matrix).reshape(3, 3), m, rtol=1e-6)
    np.testing.assert_allclose(np.array(info.translation), t, rtol=1e-6)
    np.testing.assert_allclose(vol.get_voxel_size(), m @ np.ones(3), rtol=1e-6)
    p = np.random.default_rng(6).uniform(-5, 5, size=(20, 3))
    out, outd = wp.zeros((20, 4), dtype=wp.vec3), wp.zeros((20, 4), dtype=wp.vec3d)
    wp.launch(transforms, 20, [vol.id, wp.array(p, dtype=wp.vec3), wp.array(p, dtype=wp.vec3d), out, outd])
    inv = np.linalg.inv(m)
    expect = np.stack([p @ m.T + t, (p - t) @ inv.T, p @ m.T, p @ inv.T], axis=1)
    np.testing.assert_allclose(out.numpy(), expect, rtol=1e-5, atol=1e-5)
    m32, t32 = m.astype(np.float32).astype(np.float64), t.astype(np.float32).astype(np.float64)  # as stored
    inv32 = np.linalg.inv(m32)
    expect = np.stack([p @ m32.T + t32, (p - t32) @ inv32.T, p @ m32.T, p @ inv32.T], axis=1)
    np.testing.assert_allclose(outd.numpy(), expect, rtol=1e-12, atol=1e-12)
    # the adjoints are the transposed maps (a non-symmetric matrix tells them apart)
    w = wp.array(np.random.default_rng(7).uniform(-1, 1, size=(20, 3)), dtype=wp.vec3)
    tape_grad, fd = _tape_and_fd(transform_loss, [vol.id], p.astype(np.float32), [w], 20, eps=1e-2)
    np.testing.assert_allclose(tape_grad, fd, rtol=1e-3, atol=1e-3)


def test_world_space_allocation_rounds_to_the_nearest_voxel():
    vs, t = (0.25, 0.5, 2.0), np.array([-1.0, 2.0, -3.0], np.float32)
    ijk = np.array([[1, 2, 3], [-9, 0, 17], [4, 5, 6], [4, 5, 6]], dtype=np.int32)
    world = (ijk * np.array(vs) + t + 0.1 * np.array(vs)).astype(np.float32)  # off-center, same voxel
    vol = V.allocate_by_voxels(wp.array(world, dtype=wp.vec3), voxel_size=vs, translation=tuple(t))
    np.testing.assert_array_equal(unique_rows(vol.get_voxels().numpy()), unique_rows(ijk))
    tiles = V.allocate_by_tiles(wp.array(world, dtype=float), voxel_size=vs, bg_value=0.0, translation=tuple(t))
    np.testing.assert_array_equal(unique_rows(tiles.get_tiles().numpy()), unique_rows(ijk & ~7))


# ------------------------------------------------------------------------------------ store / lookup


ROUND_TRIP_TYPES = [
    (wp.float32, 1.5),
    (wp.float64, wp.float64(-2.25)),
    (wp.int32, 7),
    (wp.int64, wp.int64(-(2**40))),
    (wp.uint32, wp.uint32(4000000000)),
    (wp.vec3, wp.vec3(1.0, 2.0, 3.0)),
    (wp.vec3d, wp.vec3d(-1.0, 0.5, 4.0)),
    (wp.vec4, wp.vec4(1.0, 2.0, 3.0, 4.0)),
]


@wp.kernel
def store_lookup_every_type(
    ids: wp.array(dtype=wp.uint64),
    ijk: wp.array2d(dtype=wp.int32),
    a0: wp.array(dtype=wp.float32), a1: wp.array(dtype=wp.float64), a2: wp.array(dtype=wp.int32),
    a3: wp.array(dtype=wp.int64), a4: wp.array(dtype=wp.uint32), a5: wp.array(dtype=wp.vec3),
    a6: wp.array(dtype=wp.vec3d), a7: wp.array(dtype=wp.vec4),
    o0: wp.array(dtype=wp.float32), o1: wp.array(dtype=wp.float64), o2: wp.array(dtype=wp.int32),
    o3: wp.array(dtype=wp.int64), o4: wp.array(dtype=wp.uint32), o5: wp.array(dtype=wp.vec3),
    o6: wp.array(dtype=wp.vec3d), o7: wp.array(dtype=wp.vec4),
):  # fmt: skip
    """One kernel for all types (one build): stores, then lookups after the launch's stores
    (each thread reads back its own voxel)."""
    t = wp.tid()
    i, j, k = ijk[t, 0], ijk[t, 1], ijk[t, 2]
    wp.volume_store(ids[0], i, j, k, a0[t])
    wp.volume_store(ids[1], i, j, k, a1[t])
    wp.volume_store(ids[2], i, j, k, a2[t])
    wp.volume_store(ids[3], i, j, k, a3[t])
    wp.volume_store(ids[4], i, j, k, a4[t])
    wp.volume_store(ids[5], i, j, k, a5[t])
    wp.volume_store(ids[6], i, j, k, a6[t])
    wp.volume_store(ids[7], i, j, k, a7[t])
    o0[t] = wp.volume_lookup(ids[0], i, j, k, dtype=wp.float32)
    o1[t] = wp.volume_lookup(ids[1], i, j, k, dtype=wp.float64)
    o2[t] = wp.volume_lookup(ids[2], i, j, k, dtype=int)
    o3[t] = wp.volume_lookup(ids[3], i, j, k, dtype=wp.int64)
    o4[t] = wp.volume_lookup(ids[4], i, j, k, dtype=wp.uint32)
    o5[t] = wp.volume_lookup(ids[5], i, j, k, dtype=wp.vec3)
    o6[t] = wp.volume_lookup(ids[6], i, j, k, dtype=wp.vec3d)
    o7[t] = wp.volume_lookup(ids[7], i, j, k, dtype=wp.vec4)


def test_store_lookup_round_trip_for_every_value_type():
    rng = np.random.default_rng(8)
    tiles = rng.integers(-300, 300, size=(20, 3)).astype(np.int32)
    inside = np.unique((tiles & ~7) + rng.integers(0, 8, size=tiles.shape).astype(np.int32), axis=0)
    outside = np.array([[5000, 5000, 5000], [-4097, 0, 0]], dtype=np.int32)
    ijk = np.concatenate([inside, outside])
    vols, values, outs, backgrounds = [], [], [], []
    for dtype, bg in ROUND_TRIP_TYPES:
        vol = V.allocate_by_tiles(wp.array(tiles, dtype=wp.int32), voxel_size=0.3, bg_value=bg)
        assert wp.types.types_equal(vol.dtype, dtype) and not vol.is_index
        np_dtype = wp.dtype_to_numpy(wp.types.type_scalar_type(dtype))
        n_comp = wp.types.type_size(dtype)
        v = rng.integers(1, 1000, size=(len(ijk), n_comp)) * (1 if np.dtype(np_dtype).kind in "iu" else 0.5)
        v = v.astype(np_dtype).reshape((len(ijk), n_comp) if n_comp > 1 else len(ijk))
        vols.append(vol)
        values.append(v)
        outs.append(wp.zeros(len(ijk), dtype=dtype))
        backgrounds.append(np.array(list(bg) if n_comp > 1 else getattr(bg, "value", bg), dtype=np_dtype))
    ids = wp.array([v.id for v in vols], dtype=wp.uint64)
    arrays = [wp.array(v, dtype=t) for v, (t, _) in zip(values, ROUND_TRIP_TYPES)]
    wp.launch(store_lookup_every_type, len(ijk), [ids, wp.array(ijk, dtype=wp.int32), *arrays, *outs])
    for v, out, bg in zip(values, outs, backgrounds):
        expect = v.copy()
        expect[len(inside) :] = bg  # outside the tiles: stores do nothing, lookups give the background
        np.testing.assert_array_equal(out.numpy(), expect)


def test_fixed_type_builtins_ignore_volumes_of_other_types():
    pts = wp.array(np.array([[1, 2, 3], [9, -4, 0]], dtype=np.int32), dtype=wp.int32)
    vf = V.allocate([-8, -8, -8], [15, 15, 15], 1.0, bg_value=0.0)
    vv = V.allocate([-8, -8, -8], [15, 15, 15], 1.0, bg_value=(0.0, 0.0, 0.0))
    vi = V.allocate([-8, -8, -8], [15, 15, 15], 1.0, bg_value=0)
    of, ov, oi = wp.zeros(2, dtype=float), wp.zeros(2, dtype=wp.vec3), wp.zeros(2, dtype=int)
    wp.launch(fixed_type_access, 2, [vf.id, vv.id, vi.id, pts, of, ov, oi])
    np.testing.assert_array_equal(of.numpy(), [1 - 4 + 9, 9 + 8])
    np.testing.assert_array_equal(ov.numpy(), [[1, 2, 3], [9, -4, 0]])
    np.testing.assert_array_equal(oi.numpy(), [2 * 5, 2 * -36])
    # a float lookup of an int volume reads zero, and a float store leaves it alone
    wp.launch(fixed_type_access, 2, [vi.id, vi.id, vf.id, pts, of, ov, oi])
    np.testing.assert_array_equal(of.numpy(), [0, 0])
    np.testing.assert_array_equal(ov.numpy(), np.zeros((2, 3)))


# ------------------------------------------------------------------------------------ topology


def test_tile_and_voxel_counts_match_numpy():
    rng = np.random.default_rng(9)
    pts = rng.integers(-5000, 5000, size=(300, 3)).astype(np.int32)
    pts = np.concatenate([pts, pts[:50] + 1])  # repeats and neighbours
    vol = V.allocate_by_tiles(wp.array(pts, dtype=wp.int32), voxel_size=1.0, bg_value=0.0)
    tiles = unique_rows(pts & ~7)
    assert vol.get_tile_count() == len(tiles) and vol.get_voxel_count() == 512 * len(tiles)
    np.testing.assert_array_equal(unique_rows(vol.get_tiles().numpy()), tiles)
    stats = vol.get_active_stats()
    assert stats == V.ActiveStats(
        512 * len(tiles), len(tiles), len(unique_rows(pts & ~127)), len(unique_rows(pts & ~4095))
    )
    voxels = vol.get_voxels().numpy()
    assert len(unique_rows(voxels)) == 512 * len(tiles)
    np.testing.assert_array_equal(unique_rows(voxels & ~7), tiles)

    index = V.allocate_by_voxels(wp.array(pts, dtype=wp.vec3i), voxel_size=1.0)
    assert index.is_index and index.dtype is None
    assert index.get_voxel_count() == len(unique_rows(pts))
    np.testing.assert_array_equal(unique_rows(index.get_voxels().numpy()), unique_rows(pts))
    assert index.get_tile_count() == len(tiles)


def test_point_masks_skip_points():
    pts = wp.array(np.array([[0, 0, 0], [1, 2, 3], [40, 0, 0], [7, 8, 9]], dtype=np.int32), dtype=wp.int32)
    mask = wp.array(np.array([1, 0, 1, 0], dtype=np.int32), dtype=wp.int32)
    vox = V.allocate_by_voxels(pts, voxel_size=1.0, point_mask=mask)
    np.testing.assert_array_equal(unique_rows(vox.get_voxels().numpy()), [[0, 0, 0], [40, 0, 0]])
    tiles = V.allocate_by_tiles(pts, voxel_size=1.0, bg_value=None, point_mask=mask)
    np.testing.assert_array_equal(unique_rows(tiles.get_tiles().numpy()), [[0, 0, 0], [40, 0, 0]])
    empty = V.allocate_by_voxels(pts, voxel_size=1.0, point_mask=wp.zeros(4, dtype=wp.int32))
    assert empty.get_active_stats() == V.ActiveStats(0, 0, 0, 0) and empty.get_voxels().shape[0] == 0


def test_index_grids_index_voxels_in_get_voxels_order():
    rng = np.random.default_rng(10)
    pts = rng.integers(-40, 40, size=(200, 3)).astype(np.int32)
    vol = V.allocate_by_voxels(wp.array(pts, dtype=wp.int32), voxel_size=1.0)
    voxels = vol.get_voxels().numpy()
    n = len(voxels)
    probe = np.concatenate([voxels, [[1000, 0, 0]], unique_rows(pts & ~7) + 3])  # active, far, maybe inactive
    out, count = wp.zeros(len(probe), dtype=int), wp.zeros(len(probe), dtype=int)
    wp.launch(lookup_index, len(probe), [vol.id, wp.array(probe, dtype=wp.int32), out, count])
    np.testing.assert_array_equal(out.numpy()[:n], np.arange(n))
    assert out.numpy()[n] == -1
    active = {tuple(v) for v in voxels}
    tail = [(-1 if tuple(p) not in active else out.numpy()[n + 1 + k]) for k, p in enumerate(probe[n + 1 :])]
    np.testing.assert_array_equal(out.numpy()[n + 1 :], tail)
    assert np.all(count.numpy() == n)

    # a value grid indexes its leaves' voxels too
    tiles = V.allocate_by_tiles(wp.array(pts, dtype=wp.int32), voxel_size=1.0, bg_value=1.0)
    tv = tiles.get_voxels().numpy()
    out, count = wp.zeros(len(tv), dtype=int), wp.zeros(len(tv), dtype=int)
    wp.launch(lookup_index, len(tv), [tiles.id, wp.array(tv, dtype=wp.int32), out, count])
    np.testing.assert_array_equal(out.numpy(), np.arange(len(tv)))
    assert count.numpy()[0] == tiles.get_voxel_count()


def test_index_samples_read_the_value_array_and_send_it_gradients():
    rng = np.random.default_rng(11)
    pts = np.stack(np.meshgrid(*[np.arange(0, 6)] * 3, indexing="ij"), -1).reshape(-1, 3).astype(np.int32)
    vol = V.allocate_by_voxels(wp.array(pts, dtype=wp.int32), voxel_size=1.0)
    voxels = vol.get_voxels().numpy()
    field = rng.uniform(-1, 1, size=(6, 6, 6))
    values = wp.array(field[tuple(voxels.T)], dtype=float, requires_grad=True)
    bg = wp.array([0.5], dtype=float, requires_grad=True)
    uvw = rng.uniform(-1.5, 6.5, size=(80, 3)).astype(np.float32)
    out = wp.zeros(80, dtype=float, requires_grad=True)
    grads = wp.zeros(80, dtype=wp.vec3, requires_grad=True)
    tape = wp.Tape()
    with tape:
        wp.launch(sample_index, 80, [vol.id, wp.array(uvw, dtype=wp.vec3), V.LINEAR, values, bg, out, grads])
    ref, ref_grad = trilinear(field, np.zeros(3, int), 0.5, uvw)
    np.testing.assert_allclose(out.numpy(), 2 * ref, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(grads.numpy(), ref_grad, rtol=1e-4, atol=1e-4)
    tape.backward(grads={out: wp.ones(80, dtype=float)})
    # the sample is linear in (values, background): sum(out) = <d out / d values, values> + ...
    total = np.dot(values.grad.numpy(), values.numpy()) + bg.grad.numpy()[0] * 0.5
    np.testing.assert_allclose(total, out.numpy().sum(), rtol=1e-4)


# ------------------------------------------------------------------------------------ rebuilds, dense data


def test_rebuild_keeps_the_id_and_reports_overflow():
    status = wp.zeros(1, dtype=wp.uint32)
    vol = V.allocate_by_tiles(
        wp.array([[0, 0, 0]], dtype=wp.int32), voxel_size=1.0, bg_value=2.5, max_tiles=4, status=status
    )
    vid = vol.id
    assert vol.is_rebuildable and vol.get_rebuild_info() == V.RebuildInfo("tiles", 2048, 4, 4, 4)
    pts = wp.array(np.array([[8, 0, 0], [8, 1, 0], [0, 0, 200]], dtype=np.int32), dtype=wp.int32)
    vol.rebuild(pts, status=status)
    assert vol.id == vid and status.numpy()[0] == V.REBUILD_SUCCESS
    np.testing.assert_array_equal(
        unique_rows(vol.get_tiles(out=wp.zeros((4, 3), dtype=wp.int32)).numpy()[:2]), [[0, 0, 200 & ~7], [8, 0, 0]]
    )
    out = wp.zeros(1, dtype=float)
    wp.launch(lookup_values, 1, [vol.id, wp.array([[9, 1, 1]], dtype=wp.int32), out])
    assert out.numpy()[0] == 2.5
    many = wp.array(np.arange(5 * 3, dtype=np.int32).reshape(5, 3) * 64, dtype=wp.int32)
    vol.rebuild(many, status=status)
    assert status.numpy()[0] & V.REBUILD_LEAF_CAPACITY_EXCEEDED
    with pytest.raises(RuntimeError, match="not rebuildable"):
        V.allocate_by_tiles(pts, voxel_size=1.0).rebuild(pts)


def test_load_from_numpy_holds_the_array():
    data = np.random.default_rng(12).uniform(-1, 1, size=(10, 9, 17)).astype(np.float32)
    vol = V.load_from_numpy(data, min_world=(-1.0, 2.0, 0.0), voxel_size=0.25, bg_value=9.0)
    ijk = (
        np.stack(np.meshgrid(*[np.arange(-1, s + 1) for s in data.shape], indexing="ij"), -1)
        .reshape(-1, 3)
        .astype(np.int32)
    )
    out = wp.zeros(len(ijk), dtype=float)
    wp.launch(lookup_values, len(ijk), [vol.id, wp.array(ijk, dtype=wp.int32), out])
    inside = np.all((ijk >= 0) & (ijk < data.shape), axis=1)
    np.testing.assert_array_equal(out.numpy()[inside], data[tuple(ijk[inside].T)])
    assert np.all(out.numpy()[np.any(ijk < 0, axis=1)] == 9.0)
    np.testing.assert_allclose(np.array(vol.get_grid_info().translation), [-1.0, 2.0, 0.0])


def test_voxel_size_validation():
    with pytest.raises(ValueError):
        V.allocate([0, 0, 0], [1, 1, 1], voxel_size=(0.1, 0.2))
    with pytest.raises(ValueError):
        V.allocate([0, 0, 0], [1, 1, 1], voxel_size=-1.0)
    with pytest.raises(TypeError):
        V.allocate([0, 0, 0], [1, 1, 1], voxel_size="1")
    with pytest.raises(TypeError, match="Unsupported bg_value type"):
        V.allocate([0, 0, 0], [1, 1, 1], voxel_size=1.0, bg_value=wp.vec2(1.0, 2.0))


# ------------------------------------------------------------------------------------ files


def test_layouts_follow_the_format():
    float_leaf = nv.LAYOUTS[1]
    assert (float_leaf.leaf_table, float_leaf.leaf_size, float_leaf.upper_size, float_leaf.lower_size) == (
        96,
        2144,
        270400,
        33856,
    )
    vec3d = nv.LAYOUTS[7]
    assert (vec3d.root_size, vec3d.tile_size, vec3d.table_stride, vec3d.leaf_size) == (128, 64, 24, 12448)
    # 64 tiles straddling the origin (8 upper and 8 lower nodes): NanoVDB's own file has this size
    vol = V.allocate([-16, -16, -16], [15, 15, 15], 0.25, bg_value=0.0)
    assert vol.get_grid_info().size_in_bytes == 2572320


@pytest.mark.parametrize("codec", ["none", "zip"])
def test_nvdb_files_round_trip(tmp_path, codec, dense_volume):
    vol, _, _ = dense_volume
    path = str(tmp_path / f"v_{codec}.nvdb")
    vol.save_to_nvdb(path, codec=codec)
    with open(path, "rb") as f:
        again = V.load_from_nvdb(f)
    np.testing.assert_array_equal(again.array().numpy(), vol.array().numpy())
    with open(path, "rb") as f:
        from_bytes = V.load_from_nvdb(f.read())
    assert from_bytes.get_grid_info() == vol.get_grid_info()
    with pytest.raises(RuntimeError, match="signature"):
        V.load_from_nvdb(io.BytesIO(b"\0" * 64))
    with pytest.raises(RuntimeError, match="codec"):
        vol.save_to_nvdb(path, codec="lz4")


def test_several_grids_in_one_buffer(tmp_path):
    va = V.allocate_by_voxels(wp.array([[1, 2, 3]], dtype=wp.int32), voxel_size=1.0)
    vb = V.allocate_by_voxels(wp.array([[1, 2, 3], [9, 9, 9]], dtype=wp.int32), voxel_size=1.0)
    a, b = va.array().numpy().copy(), vb.array().numpy().copy()
    for k, g in enumerate((a, b)):
        g[24:28] = np.frombuffer(np.uint32(k).tobytes(), np.uint8)  # grid index
        g[28:32] = np.frombuffer(np.uint32(2).tobytes(), np.uint8)  # grid count
    both = V(wp.array(np.concatenate([a, b]), dtype=wp.uint8))
    a_copy = wp.array(np.concatenate([a, b]), dtype=wp.uint8)
    second = both.load_next_grid()
    assert second.get_grid_info().grid_index == 1 and second.get_voxel_count() == 2 and both.get_voxel_count() == 1
    assert second.load_next_grid() is None
    with pytest.raises(RuntimeError, match="already been created"):
        V.load_from_address(second.id)
    alias = V.load_from_address(a_copy.ptr, device=a_copy.device)  # one grid: its size from its header
    assert alias.get_voxel_count() == 1 and alias.array().size == len(a)
    path = str(tmp_path / "two.nvdb")
    both.save_to_nvdb(path, codec="zip")
    with open(path, "rb") as f:
        again = V.load_from_nvdb(f)
    np.testing.assert_array_equal(again.array().numpy(), both.array().numpy())
    with pytest.raises(RuntimeError, match="aliased"):
        second.save_to_nvdb(path)


def test_new_without_init_and_del_are_safe():
    v = V.__new__(V)
    v.__del__()
    vol = V.allocate([0, 0, 0], [7, 7, 7], 1.0)
    vol.__del__()
    assert vol.id is None
