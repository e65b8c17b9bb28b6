"""wp.fabricarray / wp.indexedfabricarray / wp.fabricarrayarray: arrays over Fabric attribute
buckets built here from plain weft arrays (interface dicts with uneven and empty buckets), read
and written on the host and in kernels, as struct fields and through wp.copy / *_like, checked
against NumPy."""

from typing import Any, Literal

import numpy as np
import pytest

import weft as wp

# ---------------------------------------------------------------------------------------------
# building Fabric interfaces over weft arrays

_BASE_CODES = {
    wp.bool: "b",
    wp.int8: "i1",
    wp.int16: "i2",
    wp.int32: "i4",
    wp.int64: "i8",
    wp.uint8: "u1",
    wp.uint16: "u2",
    wp.uint32: "u4",
    wp.uint64: "u8",
    wp.float16: "f2",
    wp.float32: "f4",
    wp.float64: "f8",
}


def _base_and_count(dtype):
    scalar = wp.types.type_scalar_type(dtype)
    return _BASE_CODES[scalar], wp.types.type_size(dtype)


def fabric_iface(arr, buckets, role="", name="attr", base=None, count=None):
    """An interface dict viewing the 1-D weft array ``arr`` split into buckets of the given sizes
    (their sum must be ``arr.size``); ``arr`` is kept alive in the dict under ``_ref``."""
    assert sum(buckets) == arr.shape[0]
    own_base, own_count = _base_and_count(arr.dtype)
    itemsize = wp.types.type_size_in_bytes(arr.dtype)
    pointers, start = [], 0
    for n in buckets:
        pointers.append((arr.ptr or 0) + start * itemsize if n else 0)
        start += n
    return {
        "version": 1,
        "device": str(arr.device),
        "attribs": {
            name: {
                "type": (True, base or own_base, own_count if count is None else count, 0, role),
                "access": 2,
                "pointers": pointers,
                "counts": list(buckets),
            }
        },
        "_ref": arr,
    }


def fabric_of(values, buckets, dtype=wp.float32, role=""):
    """(fabricarray, backing wp.array, interface dict) holding ``values`` split into ``buckets``."""
    backing = wp.array(values, dtype=dtype)
    iface = fabric_iface(backing, buckets, role=role)
    return wp.fabricarray(data=iface, attrib="attr"), backing, iface


def fabric_rows_iface(rows, buckets, dtype=wp.float32, name="attr"):
    """An interface dict for an array of arrays (array depth 1): one inner weft array per row of
    ``rows``, split into buckets of the given sizes. Each bucket's pointer is a uint64 array of
    inner data pointers, its ``array_lengths`` entry a uint64 array of inner lengths."""
    assert sum(buckets) == len(rows)
    inner = [wp.array(np.asarray(r, dtype=np.float32), dtype=dtype) for r in rows]
    data_ptrs = [a.ptr or 0 for a in inner]
    lengths = [len(r) for r in rows]
    refs, pointers, length_ptrs, start = [inner], [], [], 0
    for n in buckets:
        p = wp.array(np.array(data_ptrs[start : start + n], dtype=np.uint64), dtype=wp.uint64)
        ln = wp.array(np.array(lengths[start : start + n], dtype=np.uint64), dtype=wp.uint64)
        refs += [p, ln]
        pointers.append(p.ptr or 0)
        length_ptrs.append(ln.ptr or 0)
        start += n
    base, count = _base_and_count(dtype)
    return {
        "version": 1,
        "device": str(wp.get_device()),
        "attribs": {
            name: {
                "type": (True, base, count, 1, ""),
                "access": 2,
                "pointers": pointers,
                "counts": list(buckets),
                "array_lengths": length_ptrs,
            }
        },
        "_ref": refs,
    }


def ids(values):
    return wp.array(np.asarray(values, np.int32), dtype=wp.int32)


LAYOUTS = [[10], [3, 0, 1, 6], [0, 0, 5, 0, 5], [1] * 10, [9, 1, 0]]

# ---------------------------------------------------------------------------------------------
# kernels


@wp.kernel
def k_rw(a: wp.fabricarray[float], out: wp.array(dtype=float)):
    i = wp.tid()
    out[i] = a[i]
    a[i] = a[i] * 2.0
    wp.atomic_add(a, i, float(i))
    a[i] += 0.5


@wp.kernel
def k_int_atomics(a: wp.fabricarray[wp.int64]):
    i = wp.tid()
    a[i] -= wp.int64(1)
    wp.atomic_sub(a, i, wp.int64(2))
    wp.atomic_max(a, i, wp.int64(5))
    wp.atomic_min(a, i, wp.int64(100))


@wp.kernel
def k_read(a: wp.fabricarray[float], i: int, out: wp.array(dtype=float)):
    out[0] = a[i]


@wp.kernel
def k_read_indexed(a: wp.indexedfabricarray[float], i: int, out: wp.array(dtype=float)):
    out[0] = a[i]


@wp.kernel
def k_vec_indexed(a: wp.indexedfabricarray[wp.vec3], out: wp.array(dtype=wp.vec3), sizes: wp.array(dtype=int)):
    i = wp.tid()
    out[i] = a[i]
    a[i] = a[i] + wp.vec3(100.0, 200.0, 300.0)
    if i == 0:
        sizes[0] = a.shape[0]
        sizes[1] = len(a)
        sizes[2] = int(a.size)


@wp.kernel
def k_sizes(a: wp.fabricarray[wp.vec3], sizes: wp.array(dtype=int)):
    sizes[0] = a.shape[0]
    sizes[1] = len(a)
    sizes[2] = int(a.size)


@wp.kernel
def k_double_any(a: wp.fabricarray[Any]):
    i = wp.tid()
    a[i] = a[i] + a[i]


@wp.kernel
def k_copy_any(src: Any, dst: Any):
    i = wp.tid()
    dst[i] = src[i]


@wp.kernel
def k_fill_generic(a: wp.fabricarray[Any], value: Any):
    a[wp.tid()] = value


fill_f64 = wp.overload(k_fill_generic, [wp.fabricarray[wp.float64], wp.float64])
fill_vec2 = wp.overload(k_fill_generic, {"a": wp.fabricarray[wp.vec2], "value": wp.vec2})


@wp.kernel
def k_row_sums(a: Any, sums: wp.array(dtype=float), lens: wp.array(dtype=int)):
    """Row sums and lengths of an array of arrays (plain or indexed); lens[len(a)] = len(a)."""
    i = wp.tid()
    row = a[i]
    s = float(0.0)  # noqa: UP018 (a variable the loop may change)
    for j in range(row.shape[0]):
        s += row[j]
    sums[i] = s
    lens[i] = row.shape[0]
    if i == 0:
        lens[len(a)] = len(a)


@wp.kernel
def k_first_of_rows(a: wp.fabricarray[float, Literal[2]], out: wp.array(dtype=float)):
    i = wp.tid()
    if a[i].shape[0] > 0:
        out[i] = a[i, 0]
        a[i, 0] = a[i, 0] + 1000.0


@wp.func
def fabric_sum(a: wp.fabricarray(dtype=float), n: int):
    s = float(0.0)  # noqa: UP018 (a variable the loop may change)
    for i in range(n):
        s += a[i]
    return s


@wp.func
def row_length(a: wp.indexedfabricarrayarray(dtype=float), i: int):
    return a[i].shape[0]


@wp.kernel
def k_funcs(a: wp.fabricarray[float], rows: wp.indexedfabricarrayarray(dtype=float), out: wp.array(dtype=float)):
    out[0] = fabric_sum(a, a.shape[0])
    out[1] = float(row_length(rows, 0))
    out[2] = rows[1, 1]
    rows[1, 0] = 42.0
    out[3] = float(len(rows[0]))


@wp.struct
class FabricPair:
    values: wp.fabricarray[float]
    iv: wp.indexedfabricarray[float]


@wp.struct
class FabricOuter:
    pair: FabricPair
    scale: float


@wp.kernel
def k_struct(s: FabricPair):
    i = wp.tid()
    if i < s.values.shape[0]:
        s.values[i] = s.values[i] + 1.0
    if i < s.iv.shape[0]:
        s.iv[i] = s.iv[i] * 10.0


@wp.kernel
def k_nested(o: FabricOuter):
    i = wp.tid()
    if i < o.pair.values.shape[0]:
        o.pair.values[i] = o.pair.values[i] * o.scale
    if i < len(o.pair.iv):
        wp.atomic_add(o.pair.iv, i, o.scale)


@wp.kernel
def k_struct_array(arr: wp.array(dtype=FabricPair), out: wp.array(dtype=float)):
    i = wp.tid()
    s = arr[0]
    out[i] = s.values[i] + s.iv[i % s.iv.shape[0]]


@wp.kernel
def k_store_then_read(a: wp.fabricarray[float], x: wp.array(dtype=float), y: wp.array(dtype=float)):
    i = wp.tid()
    a[i] = x[i] * 2.0
    y[i] = a[i] * x[i]


@wp.kernel
def k_weighted_square(w: wp.fabricarray[float], x: wp.array(dtype=float), y: wp.array(dtype=float)):
    i = wp.tid()
    y[i] = w[i] * x[i] * x[i]


# ---------------------------------------------------------------------------------------------
# 1. construction


def test_scalar_construction():
    x = np.arange(10, dtype=np.float32)
    fa, backing, _ = fabric_of(x, [3, 0, 1, 6])
    assert fa.dtype is wp.float32 and fa.ndim == 1
    assert fa.shape == (10,) and fa.size == 10 and len(fa) == 10
    assert fa.device == backing.device and not fa.is_annotation
    np.testing.assert_array_equal(fa.numpy(), x)

    i64 = np.array([5, -3, 1 << 40, 0, 7], dtype=np.int64)
    fi, _, _ = fabric_of(i64, [2, 0, 3], dtype=wp.int64)
    assert fi.dtype is wp.int64 and fi.shape == (5,) and len(fi) == 5
    np.testing.assert_array_equal(fi.numpy(), i64)


@pytest.mark.parametrize(
    "dtype, role, expected, shape",
    [
        (wp.vec3, "vector", wp.vec3f, (3,)),
        (wp.quatf, "quat", wp.quatf, (4,)),
        (wp.mat22, "matrix", wp.mat22f, (2, 2)),
    ],
)
def test_composite_construction(dtype, role, expected, shape):
    n = 7
    count = int(np.prod(shape))
    values = np.arange(n * count, dtype=np.float32).reshape((n,) + shape)
    backing = wp.array(values, dtype=dtype)
    fa = wp.fabricarray(data=fabric_iface(backing, [2, 0, 4, 1], role=role), attrib="attr")
    assert fa.dtype is expected and fa.ndim == 1
    assert fa.shape == (n,) and fa.size == n and len(fa) == n
    out = fa.numpy()
    assert out.shape == (n,) + shape
    np.testing.assert_array_equal(out, values)


def test_transform_and_frame_roles_are_square_matrices():
    t, _, _ = fabric_of(
        np.zeros((2, 16), dtype=np.float32), [2], dtype=wp.types.vector(16, wp.float32), role="transform"
    )
    assert t.dtype is wp.mat44f
    f, _, _ = fabric_of(np.arange(8, dtype=np.float64).reshape(2, 4), [1, 1], dtype=wp.vec4d, role="frame")
    assert f.dtype is wp.mat22d
    np.testing.assert_array_equal(f.numpy(), np.arange(8).reshape(2, 2, 2))


def test_explicit_dtype_with_the_same_layout():
    values = np.arange(12, dtype=np.float32).reshape(3, 4)
    backing = wp.array(values, dtype=wp.vec4)
    iface = fabric_iface(backing, [1, 2], role="vector")
    assert wp.fabricarray(iface, "attr").dtype is wp.vec4f
    q = wp.fabricarray(data=iface, attrib="attr", dtype=wp.quatf)
    assert q.dtype is wp.quatf
    np.testing.assert_array_equal(q.numpy(), values)
    with pytest.raises(ValueError, match="does not match"):
        wp.fabricarray(data=iface, attrib="attr", dtype=wp.vec3)
    with pytest.raises(ValueError, match="does not match"):
        wp.fabricarray(data=iface, attrib="attr", dtype=wp.vec4d)  # same count, other scalar
    with pytest.raises(ValueError, match="ndim"):
        wp.fabricarray(data=iface, attrib="attr", ndim=2)


def test_explicit_scalar_dtype():
    fa, _, iface = fabric_of(np.arange(4, dtype=np.float32), [4])
    a = wp.fabricarray(data=iface, attrib="attr", dtype=float)
    assert a.dtype is wp.float32
    b = wp.fabricarray(data=iface, attrib="attr", dtype=wp.float32)
    np.testing.assert_array_equal(b.numpy(), fa.numpy())
    with pytest.raises(ValueError, match="does not match"):
        wp.fabricarray(data=iface, attrib="attr", dtype=wp.int32)


def test_explicit_matrix_dtype_compares_component_counts():
    values = np.arange(8, dtype=np.float32).reshape(2, 4)
    backing = wp.array(values, dtype=wp.vec4)
    m = wp.fabricarray(data=fabric_iface(backing, [2], role="vector"), attrib="attr", dtype=wp.mat22)
    assert m.dtype is wp.mat22f
    np.testing.assert_array_equal(m.numpy(), values.reshape(2, 2, 2))
    mats = wp.array(values.reshape(2, 2, 2), dtype=wp.mat22)
    with pytest.raises(ValueError, match="does not match"):
        wp.fabricarray(data=fabric_iface(mats, [2], role="matrix"), attrib="attr", dtype=wp.vec2)


def test_interface_errors():
    backing = wp.array(np.arange(4, dtype=np.float32))

    def iface(**changes):
        d = fabric_iface(backing, [1, 3])
        info = d["attribs"]["attr"]
        for k, v in changes.items():
            if k in ("version", "device"):
                d[k] = v
            else:
                info[k] = v
        return d

    with pytest.raises(ValueError, match="version"):
        wp.fabricarray(data=iface(version=2), attrib="attr")
    with pytest.raises(ValueError, match="no attribute 'missing'"):
        wp.fabricarray(data=iface(), attrib="missing")
    with pytest.raises(ValueError, match="attribute name"):
        wp.fabricarray(data=iface(), attrib=None)
    with pytest.raises(ValueError, match="interface"):
        wp.fabricarray(data=object(), attrib="attr")
    with pytest.raises(RuntimeError, match="same size"):
        wp.fabricarray(data=iface(counts=[1, 2, 1]), attrib="attr")
    with pytest.raises(RuntimeError, match="same size"):
        wp.fabricarray(data=iface(pointers=None), attrib="attr")
    with pytest.raises(ValueError, match="-1 elements"):
        wp.fabricarray(data=iface(counts=[5, -1]), attrib="attr")
    with pytest.raises(ValueError, match="malformed"):
        wp.fabricarray(data=iface(type=(True, "f4", 1, 0)), attrib="attr")
    with pytest.raises(RuntimeError, match="cannot be used"):
        wp.fabricarray(data=iface(type=(False, "f4", 1, 0, "")), attrib="attr")
    with pytest.raises(RuntimeError, match="base type"):
        wp.fabricarray(data=iface(type=(True, "c8", 1, 0, "")), attrib="attr")
    with pytest.raises(RuntimeError, match="role 'text'"):
        wp.fabricarray(data=iface(type=(True, "u1", 4, 0, "text")), attrib="attr")
    with pytest.raises(RuntimeError, match="square"):
        wp.fabricarray(data=iface(type=(True, "f4", 2, 0, "matrix")), attrib="attr")
    with pytest.raises(ValueError, match="array depth 2"):
        wp.fabricarray(data=iface(type=(True, "f4", 1, 2, "")), attrib="attr")
    with pytest.raises(RuntimeError, match="array_lengths"):  # depth 1 without lengths
        wp.fabricarray(data=iface(type=(True, "f4", 1, 1, "")), attrib="attr")


def test_object_with_interface_attribute():
    x = np.arange(5, dtype=np.float64)
    backing = wp.array(x, dtype=wp.float64)

    class Holder:
        __fabric_arrays_interface__ = fabric_iface(backing, [2, 3], name="pos")

    fa = wp.fabricarray(Holder(), "pos")
    assert fa.dtype is wp.float64
    np.testing.assert_array_equal(fa.numpy(), x)


# ---------------------------------------------------------------------------------------------
# 2. kernels: read, write, atomics, augmented assignment


@pytest.mark.parametrize("buckets", LAYOUTS, ids=lambda b: "-".join(map(str, b)))
def test_kernel_read_write_atomic(buckets):
    x = np.linspace(-3.0, 5.0, 10).astype(np.float32)
    fa, backing, _ = fabric_of(x, buckets)
    out = wp.zeros(10, dtype=float)
    wp.launch(k_rw, dim=10, inputs=[fa, out])
    np.testing.assert_array_equal(out.numpy(), x)
    expected = x * 2.0 + np.arange(10, dtype=np.float32) + 0.5
    np.testing.assert_allclose(backing.numpy(), expected, rtol=1e-6)
    np.testing.assert_allclose(fa.numpy(), expected, rtol=1e-6)


def test_kernel_int64_atomics():
    x = np.array([0, 10, 200, 50, 7, -40], dtype=np.int64)
    fa, backing, _ = fabric_of(x, [2, 0, 3, 1], dtype=wp.int64)
    wp.launch(k_int_atomics, dim=6, inputs=[fa])
    np.testing.assert_array_equal(backing.numpy(), np.clip(x - 3, 5, 100))


def test_kernel_on_an_empty_fabric_array():
    fa, _, _ = fabric_of(np.zeros(0, dtype=np.float32), [0, 0, 0])
    assert fa.size == 0 and fa.shape == (0,)
    wp.launch(k_rw, dim=0, inputs=[fa, wp.zeros(0, dtype=float)])
    sizes = wp.zeros(3, dtype=int)
    fv, _, _ = fabric_of(np.zeros((0, 3), dtype=np.float32), [0, 0], dtype=wp.vec3, role="vector")
    wp.launch(k_sizes, dim=1, inputs=[fv, sizes])
    np.testing.assert_array_equal(sizes.numpy(), [0, 0, 0])


def test_out_of_range_index_raises():
    fa, _, _ = fabric_of(np.arange(5, dtype=np.float32), [2, 0, 3])
    out = wp.zeros(1, dtype=float)
    with pytest.raises(IndexError, match=r"index 5 is out of bounds for an array of shape \(5,\)"):
        wp.launch(k_read, 1, [fa, 5, out])
    wp.launch(k_read, 1, [fa, -1, out])  # negative indices count from the end
    assert out.numpy()[0] == 4.0
    wp.launch(k_read, 1, [fa, 2, out])
    assert out.numpy()[0] == 2.0
    with pytest.raises(IndexError, match=r"index 2 is out of bounds for an array of shape \(2,\)"):
        wp.launch(k_read_indexed, 1, [fa[ids([4, 1])], 2, out])
    with pytest.raises(IndexError, match=r"index 9 is out of bounds for an array of shape \(5,\)"):
        wp.launch(k_read_indexed, 1, [fa[ids([1, 9])], 1, out])  # a bad index buffer
    wp.launch(k_read_indexed, 1, [fa[ids([4, 1])], 0, out])
    assert out.numpy()[0] == 4.0


# ---------------------------------------------------------------------------------------------
# 3. indexed Fabric arrays


def test_indexed_construction_and_host_values():
    x = np.arange(8, dtype=np.float32) * 1.5
    fa, _, _ = fabric_of(x, [3, 0, 5])
    picks = [7, 0, 3, 3]
    ia = fa[ids(picks)]
    assert isinstance(ia, wp.indexedfabricarray)
    assert ia.dtype is wp.float32 and ia.ndim == 1
    assert ia.shape == (4,) and ia.size == 4 and len(ia) == 4
    np.testing.assert_array_equal(ia.numpy(), x[picks])
    assert ia.list() == x[picks].tolist()
    with pytest.raises(ValueError, match="index array"):
        fa[1]
    with pytest.raises(ValueError):
        fa[wp.array([0, 1], dtype=wp.int64)]


def test_indexed_vec3_kernel():
    values = np.arange(18, dtype=np.float32).reshape(6, 3)
    backing = wp.array(values, dtype=wp.vec3)
    fa = wp.fabricarray(fabric_iface(backing, [1, 0, 2, 3], role="vector"), "attr")
    picks = [5, 2, 0]
    ia = fa[ids(picks)]
    out = wp.zeros(3, dtype=wp.vec3)
    sizes = wp.zeros(3, dtype=int)
    wp.launch(k_vec_indexed, dim=3, inputs=[ia, out, sizes])
    np.testing.assert_array_equal(out.numpy(), values[picks])
    np.testing.assert_array_equal(sizes.numpy(), [3, 3, 3])
    expected = values.copy()
    expected[picks] += [100.0, 200.0, 300.0]
    np.testing.assert_array_equal(backing.numpy(), expected)

    wp.launch(k_sizes, dim=1, inputs=[fa, sizes])  # the plain array: all 6 elements
    np.testing.assert_array_equal(sizes.numpy(), [6, 6, 6])


# ---------------------------------------------------------------------------------------------
# 4. generic kernels


def test_generic_kernels_take_float_and_vec2d():
    x = np.array([1.0, -2.0, 3.5, 0.25, 8.0], dtype=np.float32)
    fa, backing, _ = fabric_of(x, [0, 2, 3])
    wp.launch(k_double_any, dim=5, inputs=[fa])
    np.testing.assert_array_equal(backing.numpy(), 2 * x)

    v = np.arange(8, dtype=np.float64).reshape(4, 2) - 3.0
    fv, vbacking, _ = fabric_of(v, [3, 0, 1], dtype=wp.vec2d, role="vector")
    assert fv.dtype is wp.vec2d
    wp.launch(k_double_any, dim=4, inputs=[fv])
    np.testing.assert_array_equal(vbacking.numpy(), 2 * v)

    out = wp.zeros(5, dtype=float)
    wp.launch(k_copy_any, dim=5, inputs=[fa, out])  # a parameter annotated Any
    np.testing.assert_array_equal(out.numpy(), 2 * x)
    vout = wp.zeros(4, dtype=wp.vec2d)
    wp.launch(k_copy_any, dim=4, inputs=[fv, vout])
    np.testing.assert_array_equal(vout.numpy(), 2 * v)
    # and the other way round: into the Fabric array, through an indexed one
    wp.launch(k_copy_any, dim=2, inputs=[wp.array([7.0, 9.0], dtype=float), fa[ids([4, 0])]])
    np.testing.assert_array_equal(backing.numpy(), [9.0, -4.0, 7.0, 0.5, 7.0])


def test_overloads_with_fabric_annotations():
    d, dbacking, _ = fabric_of(np.zeros(3), [1, 2], dtype=wp.float64)
    wp.launch(fill_f64, dim=3, inputs=[d, wp.float64(2.5)])
    np.testing.assert_array_equal(dbacking.numpy(), [2.5, 2.5, 2.5])
    v, vbacking, _ = fabric_of(np.zeros((2, 2), dtype=np.float32), [0, 2], dtype=wp.vec2, role="vector")
    wp.launch(fill_vec2, dim=2, inputs=[v, wp.vec2(1.0, -1.0)])
    np.testing.assert_array_equal(vbacking.numpy(), [[1.0, -1.0]] * 2)
    with pytest.raises(TypeError):
        wp.launch(fill_f64, dim=2, inputs=[v, wp.float64(1.0)])


# ---------------------------------------------------------------------------------------------
# 5. arrays of arrays

ROWS = [[1.0, 2.0, 3.0], [], [4.0], [5.0, 6.0], [7.0, 8.0, 9.0, 10.0], [11.0]]


@pytest.mark.parametrize("buckets", [[6], [2, 0, 3, 1], [0, 1, 1, 1, 1, 1, 1, 0]])
def test_array_of_arrays_kernel(buckets):
    iface = fabric_rows_iface(ROWS, buckets)
    aa = wp.fabricarrayarray(data=iface, attrib="attr")
    assert isinstance(aa, wp.fabricarray)
    assert aa.ndim == 2 and aa.shape == (6,) and aa.size == 6 and len(aa) == 6 and aa.dtype is wp.float32
    sums = wp.zeros(6, dtype=float)
    lens = wp.zeros(7, dtype=int)
    wp.launch(k_row_sums, dim=6, inputs=[aa, sums, lens])
    np.testing.assert_array_equal(sums.numpy(), [sum(r) for r in ROWS])
    np.testing.assert_array_equal(lens.numpy(), [len(r) for r in ROWS] + [6])

    first = wp.full(6, -1.0, dtype=float)
    wp.launch(k_first_of_rows, dim=6, inputs=[aa, first])
    np.testing.assert_array_equal(first.numpy(), [r[0] if r else -1.0 for r in ROWS])
    rows = aa.numpy()
    assert rows.dtype == object and rows.shape == (6,)
    for got, want in zip(rows, ROWS):
        np.testing.assert_array_equal(got, [want[0] + 1000.0] + want[1:] if want else [])


def test_array_of_arrays_construction_and_host_access():
    iface = fabric_rows_iface(ROWS, [2, 0, 4])
    aa = wp.fabricarray(data=iface, attrib="attr")  # ndim comes from the array depth
    assert aa.ndim == 2
    assert wp.fabricarray(data=iface, attrib="attr", ndim=2).ndim == 2
    with pytest.raises(ValueError, match="ndim"):
        wp.fabricarray(data=iface, attrib="attr", ndim=1)
    listed = aa.list()
    assert len(listed) == 6
    for got, want in zip(listed, ROWS):
        assert isinstance(got, np.ndarray) and got.dtype == np.float32
        np.testing.assert_array_equal(got, want)
    with pytest.raises(RuntimeError, match="arrays of arrays|array of arrays"):
        aa.fill_(1.0)
    with pytest.raises(RuntimeError, match="array of arrays"):
        aa.zero_()
    with pytest.raises(RuntimeError, match="array of arrays"):
        aa.assign([1.0] * 6)
    with pytest.raises(RuntimeError, match="array of arrays"):
        aa.contiguous()

    ia = aa[ids([4, 1, 0])]
    assert ia.ndim == 2 and ia.shape == (3,)
    got = ia.numpy()
    assert got.dtype == object and len(got) == 3
    for g, k in zip(got, [4, 1, 0]):
        np.testing.assert_array_equal(g, ROWS[k])
    with pytest.raises(RuntimeError, match="array of arrays"):
        ia.fill_(0.0)


def test_indexed_array_of_arrays_kernel():
    iface = fabric_rows_iface(ROWS, [1, 3, 0, 2])
    aa = wp.fabricarrayarray(data=iface, attrib="attr")
    picks = [4, 1, 5, 0, 4]
    ia = aa[ids(picks)]
    assert isinstance(ia, wp.indexedfabricarray) and ia.ndim == 2
    sums = wp.zeros(5, dtype=float)
    n = wp.zeros(6, dtype=int)
    wp.launch(k_row_sums, dim=5, inputs=[ia, sums, n])
    np.testing.assert_array_equal(sums.numpy(), [sum(ROWS[k]) for k in picks])
    np.testing.assert_array_equal(n.numpy(), [len(ROWS[k]) for k in picks] + [5])


def test_fabric_arrays_passed_to_funcs():
    fa, _, _ = fabric_of(np.arange(4, dtype=np.float32), [1, 0, 3])
    iface = fabric_rows_iface(ROWS, [2, 0, 4])
    aa = wp.fabricarrayarray(data=iface, attrib="attr")
    out = wp.zeros(4, dtype=float)
    wp.launch(k_funcs, dim=1, inputs=[fa, aa[ids([4, 3])], out])
    np.testing.assert_array_equal(out.numpy(), [6.0, 4.0, ROWS[3][1], 4.0])
    np.testing.assert_array_equal(aa.list()[3], [42.0] + ROWS[3][1:])


def test_array_of_arrays_annotations():
    assert wp.fabricarrayarray(dtype=float) == wp.fabricarray[float, Literal[2]]
    assert wp.fabricarrayarray(dtype=float) == wp.fabricarray(dtype=float, ndim=2)
    assert wp.fabricarrayarray(dtype=float) != wp.fabricarray[float]
    assert wp.indexedfabricarrayarray(dtype=float) == wp.indexedfabricarray[float, Literal[2]]
    assert wp.fabricarrayarray(dtype=float).ndim == 2


# ---------------------------------------------------------------------------------------------
# 6. host operations


def test_numpy_list_fill_zero_assign():
    x = np.arange(7, dtype=np.float32)
    fa, backing, _ = fabric_of(x, [2, 0, 1, 4, 0])
    assert fa.list() == x.tolist()
    fa.fill_(3.5)
    np.testing.assert_array_equal(backing.numpy(), [3.5] * 7)
    fa.zero_()
    np.testing.assert_array_equal(backing.numpy(), [0.0] * 7)
    fa.assign([1, 2, 3, 4, 5, 6, 7])
    np.testing.assert_array_equal(backing.numpy(), [1, 2, 3, 4, 5, 6, 7])
    fa.assign(np.arange(7, 0, -1, dtype=np.float32))
    np.testing.assert_array_equal(backing.numpy(), np.arange(7, 0, -1))
    fa.assign(wp.array(x * 10, dtype=float))
    np.testing.assert_array_equal(backing.numpy(), x * 10)
    with pytest.raises(ValueError, match="3 elements"):
        fa.assign([1.0, 2.0, 3.0])
    np.testing.assert_array_equal(fa.numpy(), x * 10)
    assert str(fa) == str(x * 10)


def test_vector_fill_and_list():
    values = np.arange(15, dtype=np.float32).reshape(5, 3)
    fa, backing, _ = fabric_of(values, [1, 0, 4], dtype=wp.vec3, role="vector")
    got = fa.list()
    assert len(got) == 5 and all(isinstance(v, wp.vec3f) for v in got)
    np.testing.assert_array_equal(np.array([list(v) for v in got]), values)
    fa.fill_(wp.vec3(1.0, 2.0, 3.0))
    np.testing.assert_array_equal(backing.numpy(), [[1.0, 2.0, 3.0]] * 5)
    fa.fill_([4.0, 5.0, 6.0])
    np.testing.assert_array_equal(backing.numpy(), [[4.0, 5.0, 6.0]] * 5)
    fa.fill_(7.0)  # a scalar fills every component, as wp.array.fill_ does
    np.testing.assert_array_equal(backing.numpy(), np.full((5, 3), 7.0))
    fa.assign(values[::-1].copy())
    np.testing.assert_array_equal(backing.numpy(), values[::-1])
    fa.zero_()
    np.testing.assert_array_equal(backing.numpy(), np.zeros((5, 3)))


def test_contiguous_copy_and_like():
    x = np.array([4.0, -1.0, 2.5, 9.0, 0.5, 3.0], dtype=np.float32)
    fa, backing, _ = fabric_of(x, [0, 4, 0, 2])
    c = fa.contiguous()
    assert isinstance(c, wp.array) and c.dtype is wp.float32 and c.shape == (6,) and c.is_contiguous
    np.testing.assert_array_equal(c.numpy(), x)
    c.fill_(0.0)  # a copy
    np.testing.assert_array_equal(backing.numpy(), x)
    np.testing.assert_array_equal(fa.to("cpu").numpy(), x)

    dst = wp.zeros(6, dtype=float)
    wp.copy(dst, fa)
    np.testing.assert_array_equal(dst.numpy(), x)
    wp.copy(fa, wp.array(x * 2, dtype=float))
    np.testing.assert_array_equal(backing.numpy(), x * 2)
    with pytest.raises(Exception, match="same size"):
        wp.copy(fa, wp.zeros(5, dtype=float))
    with pytest.raises(Exception, match="same size"):
        wp.copy(fa, wp.zeros(6, dtype=wp.float64))

    other, other_backing, _ = fabric_of(np.zeros(6, dtype=np.float32), [3, 0, 3])
    wp.copy(other, fa)  # Fabric to Fabric
    np.testing.assert_array_equal(other_backing.numpy(), x * 2)
    other.assign(fa[ids([5, 4, 3, 2, 1, 0])])
    np.testing.assert_array_equal(other_backing.numpy(), (x * 2)[::-1])

    ia = fa[ids([5, 1])]
    dst2 = wp.zeros(2, dtype=float)
    wp.copy(dst2, ia)
    np.testing.assert_array_equal(dst2.numpy(), [x[5] * 2, x[1] * 2])
    wp.copy(ia, wp.array([-1.0, -2.0], dtype=float))
    np.testing.assert_array_equal(backing.numpy()[[5, 1]], [-1.0, -2.0])

    for src, shape in ((fa, (6,)), (ia, (2,))):
        for like in (wp.zeros_like(src), wp.empty_like(src), wp.full_like(src, 1.25), wp.clone(src)):
            assert isinstance(like, wp.array) and like.shape == shape and like.dtype is wp.float32
        np.testing.assert_array_equal(wp.zeros_like(src).numpy(), np.zeros(shape))
        np.testing.assert_array_equal(wp.full_like(src, 1.25).numpy(), np.full(shape, 1.25))
        np.testing.assert_array_equal(wp.clone(src).numpy(), src.numpy())

    fv, _, _ = fabric_of(np.ones((3, 4), dtype=np.float32), [3], dtype=wp.quatf, role="quat")
    z = wp.zeros_like(fv)
    assert z.dtype is wp.quatf and z.shape == (3,)
    np.testing.assert_array_equal(wp.clone(fv).numpy(), np.ones((3, 4)))


def test_indexed_host_writes_touch_only_the_indexed_elements():
    x = np.arange(8, dtype=np.float32)
    fa, backing, _ = fabric_of(x, [2, 0, 3, 3])
    picks = [6, 1, 3]
    ia = fa[ids(picks)]
    ia.fill_(-5.0)
    expected = x.copy()
    expected[picks] = -5.0
    np.testing.assert_array_equal(backing.numpy(), expected)
    ia.zero_()
    expected[picks] = 0.0
    np.testing.assert_array_equal(backing.numpy(), expected)
    ia.assign([10.0, 20.0, 30.0])
    expected[picks] = [10.0, 20.0, 30.0]
    np.testing.assert_array_equal(backing.numpy(), expected)
    ia.assign(wp.array([1.0, 2.0, 3.0], dtype=float))
    expected[picks] = [1.0, 2.0, 3.0]
    np.testing.assert_array_equal(backing.numpy(), expected)
    np.testing.assert_array_equal(ia.numpy(), [1.0, 2.0, 3.0])
    assert ia.list() == [1.0, 2.0, 3.0]
    np.testing.assert_array_equal(ia.contiguous().numpy(), [1.0, 2.0, 3.0])


def test_zero_size_arrays():
    fa, _, _ = fabric_of(np.zeros(0, dtype=np.float32), [0, 0])
    empty_fa, _, _ = fabric_of(np.zeros(0, dtype=np.float32), [])
    nonempty, _, _ = fabric_of(np.arange(3, dtype=np.float32), [3])
    for a in (fa, empty_fa, fa[ids([])], nonempty[ids([])]):
        assert a.size == 0 and a.shape == (0,) and len(a) == 0
        n = a.numpy()
        assert n.shape == (0,) and n.dtype == np.float32
        assert a.list() == []
        a.fill_(1.0)
        a.zero_()
        a.assign([])
        a.assign(np.zeros(0, dtype=np.float32))
        a.assign(wp.zeros(0, dtype=float))
        c = a.contiguous()
        assert isinstance(c, wp.array) and c.shape == (0,) and c.dtype is wp.float32
        dst = wp.zeros(0, dtype=float)
        wp.copy(dst, a)
        wp.copy(a, dst)
        for like in (wp.zeros_like(a), wp.empty_like(a), wp.full_like(a, 2.0), wp.clone(a)):
            assert isinstance(like, wp.array) and like.shape == (0,) and like.dtype is wp.float32
    np.testing.assert_array_equal(nonempty.numpy(), [0.0, 1.0, 2.0])
    fv, _, _ = fabric_of(np.zeros((0, 3), dtype=np.float32), [0], dtype=wp.vec3, role="vector")
    assert fv.numpy().shape == (0, 3)
    fv.fill_(wp.vec3(1.0, 2.0, 3.0))
    assert wp.clone(fv).shape == (0,)


# ---------------------------------------------------------------------------------------------
# 7. structs


def _pair():
    """A FabricPair over two separate backing arrays, with what each holds."""
    v = np.array([1.0, 2.0, 3.0, 4.0, 5.0], dtype=np.float32)
    w = np.array([10.0, 20.0, 30.0, 40.0], dtype=np.float32)
    fv, vb, vi = fabric_of(v, [2, 0, 3])
    fw, wb, wi = fabric_of(w, [1, 3])
    s = FabricPair()
    s.values = fv
    s.iv = fw[ids([3, 0])]
    return s, (v, vb, vi), (w, wb, wi)


def test_struct_fields_in_a_kernel():
    s, (v, vb, _), (w, wb, _) = _pair()
    wp.launch(k_struct, dim=5, inputs=[s])
    np.testing.assert_array_equal(vb.numpy(), v + 1.0)
    expected = w.copy()
    expected[[3, 0]] *= 10.0
    np.testing.assert_array_equal(wb.numpy(), expected)


def test_nested_struct():
    s, (v, vb, _), (w, wb, _) = _pair()
    o = FabricOuter()
    o.pair = s
    o.scale = 3.0
    wp.launch(k_nested, dim=5, inputs=[o])
    np.testing.assert_array_equal(vb.numpy(), v * 3.0)
    expected = w.copy()
    expected[[3, 0]] += 3.0
    np.testing.assert_array_equal(wb.numpy(), expected)


def test_array_of_structs_and_reading_it_back():
    s, (v, _, vi), (w, _, wi) = _pair()
    arr = wp.array([s], dtype=FabricPair)
    out = wp.zeros(5, dtype=float)
    wp.launch(k_struct_array, dim=5, inputs=[arr, out])
    iv = w[[3, 0]]
    np.testing.assert_array_equal(out.numpy(), v + iv[np.arange(5) % 2])

    (back,) = arr.list()
    assert isinstance(back.values, wp.fabricarray)
    assert back.values.dtype is wp.float32 and back.values.ndim == 1 and back.values.shape == (5,)
    np.testing.assert_array_equal(back.values.numpy(), v)
    assert isinstance(back.iv, wp.indexedfabricarray)
    assert back.iv.dtype is wp.float32 and back.iv.ndim == 1 and back.iv.shape == (2,)
    np.testing.assert_array_equal(back.iv.numpy(), iv)
    back.values.fill_(0.5)  # the same buckets
    np.testing.assert_array_equal(s.values.numpy(), [0.5] * 5)
    assert vi["_ref"] is not None and wi["_ref"] is not None  # the backing arrays lived until here


def test_struct_to_keeps_the_fabric_fields():
    s, _, _ = _pair()
    device = s.values.device
    t = s.to(device)
    assert t.values is s.values and t.iv is s.iv
    o = FabricOuter(pair=s, scale=2.0)
    to = o.to(device)
    assert to.pair.values is s.values and to.pair.iv is s.iv and to.scale == 2.0
    if not device.is_cpu:  # Fabric views cannot move to another device
        with pytest.raises(ValueError, match="Cannot move struct field 'values'"):
            s.to("cpu")


def test_struct_field_assignment_errors():
    s = FabricPair()
    assert s.values is None and s.iv is None
    with pytest.raises(TypeError, match="Fabric array"):
        s.values = [1.0, 2.0]
    with pytest.raises(TypeError, match="Fabric array"):
        s.values = wp.zeros(3, dtype=float)
    fd, _, _ = fabric_of(np.zeros(3), [3], dtype=wp.float64)
    with pytest.raises(TypeError, match="expects dtype"):
        s.values = fd
    with pytest.raises(TypeError, match="indexed Fabric array"):
        s.iv = fd
    rows_iface = fabric_rows_iface([[1.0], [2.0, 3.0]], [2])
    aa = wp.fabricarrayarray(data=rows_iface, attrib="attr")
    with pytest.raises(TypeError, match=r"dimension\(s\)"):
        s.values = aa
    with pytest.raises(TypeError, match=r"dimension\(s\)"):
        s.iv = aa[ids([0])]
    s.values = None  # allowed: a null field


@wp.struct
class FabricRows:
    rows: wp.fabricarrayarray(dtype=float)
    count: int


def test_struct_with_an_array_of_arrays_field_reads_back():
    iface = fabric_rows_iface(ROWS, [4, 0, 2])  # keeps the inner arrays alive
    aa = wp.fabricarrayarray(data=iface, attrib="attr")
    s = FabricRows(rows=aa, count=6)
    (back,) = wp.array([s], dtype=FabricRows).list()
    assert back.count == 6 and isinstance(back.rows, wp.fabricarray)
    assert back.rows.ndim == 2 and back.rows.shape == (6,) and back.rows.dtype is wp.float32
    for got, want in zip(back.rows.list(), ROWS):
        np.testing.assert_array_equal(got, want)


# ---------------------------------------------------------------------------------------------
# 8. type queries and annotations


def test_type_ids_and_annotations():
    fa, _, _ = fabric_of(np.zeros(3, dtype=np.float32), [1, 2])
    ia = fa[ids([0])]
    assert wp.types.array_type_id(fa) == wp.types.ARRAY_TYPE_FABRIC
    assert wp.types.array_type_id(ia) == wp.types.ARRAY_TYPE_FABRIC_INDEXED
    assert wp.types.array_type_id(wp.fabricarray[float]) == wp.types.ARRAY_TYPE_FABRIC
    assert wp.types.array_type_id(wp.indexedfabricarray[float]) == wp.types.ARRAY_TYPE_FABRIC_INDEXED
    assert wp.types.array_type_id(wp.zeros(1)) == wp.types.ARRAY_TYPE_REGULAR
    assert wp.types.is_array(fa) and wp.types.is_array(ia)
    assert wp.types.is_array(wp.fabricarray(dtype=float))
    assert wp.fabricarray[float] == wp.fabricarray(dtype=float)
    assert wp.fabricarray[wp.vec3] == wp.fabricarray(dtype=wp.vec3)
    assert hash(wp.fabricarray[float]) == hash(wp.fabricarray(dtype=wp.float32))
    assert wp.indexedfabricarray[float] == wp.indexedfabricarray(dtype=float)
    assert wp.fabricarray[float] != wp.fabricarray[wp.float64]
    assert wp.fabricarray[float] != wp.indexedfabricarray[float]
    assert wp.fabricarray[float] != wp.array[float]
    same = fa
    assert fa != wp.fabricarray(dtype=float) and fa == same
    assert wp.fabricarray(dtype=float).is_annotation and not fa.is_annotation
    with pytest.raises(TypeError, match="annotation"):
        wp.fabricarray(dtype=float).numpy()


def test_launch_refuses_other_array_kinds_and_dtypes():
    out = wp.zeros(1, dtype=float)
    with pytest.raises(TypeError, match="expects an array of type fabricarray"):
        wp.launch(k_read, 1, [wp.zeros(3, dtype=float), 0, out])
    fa, _, _ = fabric_of(np.zeros(3, dtype=np.float32), [3])
    with pytest.raises(TypeError, match="expects an array of type indexedfabricarray"):
        wp.launch(k_read_indexed, 1, [fa, 0, out])
    with pytest.raises(TypeError, match="expects an array of type fabricarray"):
        wp.launch(k_read, 1, [fa[ids([0])], 0, out])
    fd, _, _ = fabric_of(np.zeros(3), [3], dtype=wp.float64)
    with pytest.raises(TypeError, match="float64"):
        wp.launch(k_read, 1, [fd, 0, out])


# ---------------------------------------------------------------------------------------------
# 9. tapes


def test_backward_through_a_kernel_reading_a_fabric_array():
    w = np.array([0.5, -2.0, 3.0, 1.0], dtype=np.float32)
    fw, _, _ = fabric_of(w, [1, 0, 3])
    xv = np.array([1.0, 2.0, -1.5, 4.0], dtype=np.float32)
    x = wp.array(xv, dtype=float, requires_grad=True)
    y = wp.zeros(4, dtype=float, requires_grad=True)
    tape = wp.Tape()
    with tape:
        wp.launch(k_weighted_square, dim=4, inputs=[fw, x], outputs=[y])
    np.testing.assert_allclose(y.numpy(), w * xv * xv, rtol=1e-6)
    tape.backward(grads={y: wp.ones(4, dtype=float)})
    np.testing.assert_allclose(x.grad.numpy(), 2.0 * w * xv, rtol=1e-6)
    assert fw.grad is None and not fw.requires_grad and fw.arrays() == []
    tape.zero()
    np.testing.assert_array_equal(x.grad.numpy(), np.zeros(4))


def test_gradients_stop_at_fabric_data():
    fa, backing, _ = fabric_of(np.zeros(3, dtype=np.float32), [1, 0, 2])
    xv = np.array([1.0, 2.0, -3.0], dtype=np.float32)
    x = wp.array(xv, dtype=float, requires_grad=True)
    y = wp.zeros(3, dtype=float, requires_grad=True)
    tape = wp.Tape()
    with tape:
        wp.launch(k_store_then_read, dim=3, inputs=[fa, x], outputs=[y])
    np.testing.assert_array_equal(backing.numpy(), 2 * xv)
    np.testing.assert_array_equal(y.numpy(), 2 * xv * xv)
    tape.backward(grads={y: wp.ones(3, dtype=float)})
    # a[i] is read as a constant: dy/dx = a[i]; the store into Fabric data carries no gradient
    np.testing.assert_allclose(x.grad.numpy(), 2 * xv, rtol=1e-6)
