"""Tests for weft/array.py, weft/runtime/device.py and weft.utils.ScopedTimer (CPU only).

Every test works on real data and checks values against NumPy.
"""

import ctypes
import gc

import numpy as np
import pytest

import weft as wp
from weft import types
from weft.array import (
    array,
    array1d,
    array2d,
    array3d,
    array4d,
    clone,
    copy,
    empty,
    empty_like,
    from_numpy,
    full,
    full_like,
    is_array,
    ones,
    ones_like,
    zeros,
    zeros_like,
)
from weft.runtime.device import (
    Device,
    ScopedDevice,
    get_cuda_device_count,
    get_cuda_devices,
    get_device,
    get_devices,
    get_preferred_device,
    is_cpu_available,
    is_cuda_available,
    set_device,
    synchronize,
    synchronize_device,
)
from weft.utils import ScopedTimer


class FakeVec3:
    """Stands in for a vec3 dtype (3 float32s) until vector types exist."""

    _shape = (3,)
    _scalar = types.float32


# ---------------------------------------------------------------------------------------------
# devices
# ---------------------------------------------------------------------------------------------


@pytest.mark.fixed_device("checks the CPU device as the default device")
def test_cpu_device_properties():
    cpu = get_device("cpu")
    assert isinstance(cpu, Device)
    assert cpu.alias == "cpu" and str(cpu) == "cpu" and repr(cpu) == "'cpu'"
    assert cpu.is_cpu and not cpu.is_cuda
    assert cpu.ordinal == -1
    assert cpu.name
    assert cpu == "cpu" and cpu != "cuda:0" and cpu != "cuda"
    assert get_device(cpu) is cpu
    assert get_device() is cpu
    assert hash(cpu) == hash(get_device("cpu"))


_no_gpu = pytest.mark.skipif(is_cuda_available(), reason="checks a machine without a GPU (test_cuda_runtime covers GPUs)")


@_no_gpu
def test_device_queries():
    assert get_devices() == [get_device("cpu")]
    assert get_cuda_devices() == []
    assert get_cuda_device_count() == 0
    assert is_cuda_available() is False
    assert is_cpu_available() is True
    assert get_preferred_device() == "cpu"
    synchronize()
    synchronize_device()
    synchronize_device("cpu")


@_no_gpu
@pytest.mark.parametrize("ident", ["cuda", "cuda:0", "cuda:3"])
def test_cuda_request_fails_clearly(ident):
    with pytest.raises(RuntimeError, match="no CUDA device is available"):
        get_device(ident)
    with pytest.raises(RuntimeError, match="no CUDA device"):
        zeros(3, device=ident)


def test_bad_device_identifiers():
    with pytest.raises(ValueError, match="Unknown device 'gpu'"):
        get_device("gpu")
    with pytest.raises(TypeError, match="device alias"):
        get_device(3)


def test_set_device_and_scoped_device():
    set_device("cpu")
    assert get_device() == "cpu"
    with ScopedDevice("cpu") as d:
        assert d is get_device("cpu")
        assert zeros(2).device is d
    assert get_device() == "cpu"
    if not is_cuda_available():
        with pytest.raises(RuntimeError):
            ScopedDevice("cuda:0")


# ---------------------------------------------------------------------------------------------
# construction from data and dtype inference
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "data, dtype, expected",
    [
        ([1.0, 2.0], None, types.float64),  # Warp: a list of Python floats is float64
        ([1, 2, 3], None, types.int64),
        ([True, False], None, types.bool),
        (np.arange(3, dtype=np.float32), None, types.float32),
        (np.arange(3, dtype=np.uint8), None, types.uint8),
        ([1.0, 2.0], float, types.float32),  # float means float32
        ([1, 2], int, types.int32),  # int means int32
        ([1, 2], types.float64, types.float64),
        ([1, 2], np.int16, types.int16),
    ],
)
def test_dtype_inference(data, dtype, expected):
    a = array(data) if dtype is None else array(data, dtype=dtype)
    assert a.dtype is expected
    assert a.numpy().dtype == expected.np_dtype
    np.testing.assert_array_equal(a.numpy(), np.asarray(data, dtype=expected.np_dtype))


def test_construct_nested_list_2d():
    data = [[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]]
    a = array(data, dtype=float)
    assert a.shape == (2, 3) and a.ndim == 2 and a.size == 6
    assert a.strides == (12, 4)
    assert a.is_contiguous and a.capacity == 24
    np.testing.assert_array_equal(a.numpy(), np.array(data, dtype=np.float32))


def test_construct_with_shape_reshapes_data():
    a = array(np.arange(12), dtype=float, shape=(3, 4))
    np.testing.assert_array_equal(a.numpy(), np.arange(12, dtype=np.float32).reshape(3, 4))
    with pytest.raises(ValueError, match="12 values cannot fill"):
        array(np.arange(12), dtype=float, shape=(5,))


def test_scalar_data_gives_shape_1():
    a = array(2.5, dtype=float)
    assert a.shape == (1,)
    assert a.numpy()[0] == 2.5


@pytest.mark.fixed_device("NumPy memory shared without a copy: CPU arrays only")
def test_copy_false_shares_numpy_memory():
    src = np.arange(6, dtype=np.float32)
    a = array(src, dtype=float, copy=False)
    assert a.ptr == src.ctypes.data
    src[2] = 100.0
    assert a.numpy()[2] == 100.0
    a.numpy()[0] = -1.0
    assert src[0] == -1.0


@pytest.mark.fixed_device("NumPy memory shared without a copy: CPU arrays only")
def test_copy_false_shares_strided_numpy_memory():
    base = np.arange(20, dtype=np.float32).reshape(4, 5)
    src = base[:, 1]
    a = array(src, copy=False)
    assert a.strides == (20,) and not a.is_contiguous
    base[3, 1] = 42.0
    np.testing.assert_array_equal(a.numpy(), base[:, 1])


def test_copy_true_or_dtype_change_copies():
    src = np.arange(4, dtype=np.float32)
    a = array(src)  # copy=True by default
    b = array(src, dtype=types.float64, copy=False)  # conversion forces a copy
    src[:] = 7.0
    np.testing.assert_array_equal(a.numpy(), [0, 1, 2, 3])
    np.testing.assert_array_equal(b.numpy(), [0, 1, 2, 3])
    assert a.ptr != src.ctypes.data


@pytest.mark.fixed_device("NumPy memory shared without a copy: CPU arrays only")
def test_copy_false_shares_read_only_numpy_memory_as_warp_does():
    src = np.arange(4, dtype=np.float32)
    src.flags.writeable = False  # as a JAX array seen through np.asarray is
    a = array(src, copy=False)
    assert a.ptr == src.ctypes.data  # zero-copy as asked: kernels must not write it
    np.testing.assert_array_equal(a.numpy(), src)
    assert array(src).ptr != src.ctypes.data  # the default copies


@pytest.mark.fixed_device("NumPy memory shared without a copy: CPU arrays only")
def test_construct_from_array_and_array_interface():
    a = array([1.0, 2.0, 3.0], dtype=float)
    b = array(a)
    assert b.dtype is types.float32 and b.ptr != a.ptr
    np.testing.assert_array_equal(b.numpy(), a.numpy())
    shared = array(a, copy=False)
    a.numpy()[1] = 9.0
    assert shared.numpy()[1] == 9.0

    class Foreign:
        def __init__(self, arr):
            self._arr = arr
            self.__array_interface__ = arr.__array_interface__

    f = array(Foreign(np.array([[1, 2], [3, 4]], dtype=np.int32)))
    assert f.dtype is types.int32 and f.shape == (2, 2)
    np.testing.assert_array_equal(f.numpy(), [[1, 2], [3, 4]])


def test_construct_errors():
    with pytest.raises(TypeError, match="Unsupported array dtype"):
        array([1, 2], dtype=str)
    with pytest.raises(TypeError, match="Unsupported array dtype"):
        zeros(3, dtype="not a type")
    with pytest.raises(TypeError, match="inhomogeneous"):
        array([[1, 2], [3]])  # ragged
    with pytest.raises(TypeError, match="pass dtype="):
        array([object(), object()])
    with pytest.raises(TypeError, match="Cannot convert"):
        array(["a", "b"], dtype=float)
    with pytest.raises(ValueError, match="at most 4 dimensions"):
        zeros((1, 2, 3, 4, 5))
    with pytest.raises(ValueError, match="at most 4 dimensions"):
        array(np.zeros((1, 1, 1, 1, 2)))
    with pytest.raises(ValueError, match="must be non-negative"):
        zeros((3, -1))
    with pytest.raises(TypeError, match="shape must be an int"):
        zeros("abc")
    with pytest.raises(ValueError, match="either data= or ptr="):
        array([1.0], ptr=1234)
    with pytest.raises(ValueError, match="2-d"):
        array([1.0, 2.0], ndim=2)


@pytest.mark.fixed_device("wraps a host pointer")
def test_construct_from_ptr():
    src = np.arange(8, dtype=np.float64)
    a = array(ptr=src.ctypes.data, dtype=types.float64, shape=(2, 4))
    assert a.shape == (2, 4) and a.capacity == 64
    np.testing.assert_array_equal(a.numpy(), src.reshape(2, 4))
    col = array(ptr=src.ctypes.data, dtype=types.float64, shape=(2,), strides=(32,))
    np.testing.assert_array_equal(col.numpy(), [0.0, 4.0])
    with pytest.raises(TypeError, match="explicit dtype"):
        array(ptr=src.ctypes.data, shape=(2,))


def test_deleter_called_on_collection():
    calls = []
    src = np.arange(4, dtype=np.float32)
    a = array(ptr=src.ctypes.data, dtype=float, shape=4, deleter=lambda p, n: calls.append((p, n)))
    expected = (src.ctypes.data, 16)
    del a
    gc.collect()
    assert calls == [expected]


# ---------------------------------------------------------------------------------------------
# annotations
# ---------------------------------------------------------------------------------------------


def test_annotations():
    a = array(dtype=float)
    assert a.is_annotation and a.ndim == 1 and a.dtype is types.float32
    assert a.kernel_type() == types.ArrayType(types.float32, 1)
    b = array(dtype=types.float64, ndim=2)
    assert b.kernel_type() == types.ArrayType(types.float64, 2)
    c = array[float]
    assert c.is_annotation and c.kernel_type() == types.ArrayType(types.float32, 1)
    assert array[int].dtype is types.int32
    for helper, nd in ((array1d, 1), (array2d, 2), (array3d, 3), (array4d, 4)):
        ann = helper(dtype=float)
        assert ann.is_annotation and ann.kernel_type() == types.ArrayType(types.float32, nd)
    assert repr(array2d(dtype=float)) == "array2d(dtype=float32)"
    assert is_array(a) and not is_array(np.zeros(2))
    with pytest.raises(ValueError, match="ndim between 1 and 4"):
        array(dtype=float, ndim=5)


def test_annotation_has_no_data():
    a = array(dtype=float)
    for op in (a.numpy, lambda: a[0:1], a.__ctype__, lambda: len(a), lambda: a.fill_(1)):
        with pytest.raises(TypeError, match="type annotation"):
            op()
    assert not hasattr(a, "__array_interface__")


def test_array2d_with_data_and_kernel_type_of_real_array():
    a = array2d([[1, 2], [3, 4]], dtype=float)
    assert not a.is_annotation
    assert a.kernel_type() == types.ArrayType(types.float32, 2)
    with pytest.raises(ValueError):
        array2d([1.0, 2.0], dtype=float)


# ---------------------------------------------------------------------------------------------
# host access
# ---------------------------------------------------------------------------------------------


@pytest.mark.fixed_device("writes through .numpy(), a zero-copy view only on the CPU")
def test_numpy_is_zero_copy_and_keeps_array_alive():
    a = array([1.0, 2.0, 3.0], dtype=float)
    view = a.numpy()
    view[0] = 10.0
    assert a.list()[0] == 10.0
    del a
    gc.collect()
    np.testing.assert_array_equal(view, [10.0, 2.0, 3.0])


@pytest.mark.fixed_device("__array_interface__ exists for CPU arrays only")
def test_array_protocols():
    a = array([[1, 2], [3, 4]], dtype=types.int16)
    iface = a.__array_interface__
    assert iface["shape"] == (2, 2) and iface["strides"] == (4, 2) and iface["typestr"] == "<i2"
    assert iface["data"] == (a.ptr, False)
    np.testing.assert_array_equal(np.asarray(a), [[1, 2], [3, 4]])
    c = np.array(a)  # np.array copies
    c[0, 0] = 99
    assert a.numpy()[0, 0] == 1
    np.testing.assert_allclose(np.asarray(a, dtype=np.float64) * 0.5, [[0.5, 1.0], [1.5, 2.0]])
    assert len(a) == 2


@pytest.mark.fixed_device("the repr of a CPU array (a GPU array's names its device)")
def test_list_len_str_repr():
    a = array([1.5, 2.5], dtype=float)
    assert a.list() == [1.5, 2.5]
    b = array([[1, 2], [3, 4]], dtype=int)
    assert b.list() == [1, 2, 3, 4]
    assert len(b) == 2
    v = array([[1, 2, 3], [4, 5, 6]], dtype=wp.vec3).list()  # composite values, as in Warp
    assert type(v[1]) is wp.vec3 and v[1] == wp.vec3(4.0, 5.0, 6.0)
    assert str(a) == str(np.array([1.5, 2.5], dtype=np.float32))
    assert repr(a) == "array([1.5, 2.5], dtype=float32)"
    assert repr(b) == "array([[1, 2],\n       [3, 4]], dtype=int32)"


def test_zero_size_array():
    a = zeros(0)
    assert a.size == 0 and a.shape == (0,) and a.capacity == 0
    assert a.numpy().shape == (0,)
    assert a.list() == []
    assert a.__ctype__().data == 0
    a.fill_(3.0)
    b = zeros((2, 0), dtype=int)
    assert b.numpy().shape == (2, 0)


# ---------------------------------------------------------------------------------------------
# views: slicing, reshape, transpose, view
# ---------------------------------------------------------------------------------------------


@pytest.mark.fixed_device("writes through .numpy(), a zero-copy view only on the CPU")
def test_slicing_1d():
    ref = np.arange(10, dtype=np.float32)
    a = array(ref)
    for key in (slice(1, 5), slice(None, None, 2), slice(-3, None), slice(2, 100), slice(5, 2), slice(1, 8, 3)):
        v = a[key]
        np.testing.assert_array_equal(v.numpy(), ref[key])
        assert v.strides == ref[key].strides
    v = a[1:5]
    assert v.ptr == a.ptr + 4 and not v.is_annotation
    v.numpy()[:] = -1.0
    np.testing.assert_array_equal(a.numpy()[1:5], -1.0)


def test_slicing_2d_and_integer_indexing():
    ref = np.arange(20, dtype=np.float64).reshape(4, 5)
    a = array(ref)
    np.testing.assert_array_equal(a[:, 2].numpy(), ref[:, 2])
    assert a[:, 2].strides == (40,) and not a[:, 2].is_contiguous
    row = a[2]
    assert row.ndim == 1 and row.is_contiguous
    np.testing.assert_array_equal(row.numpy(), ref[2])
    np.testing.assert_array_equal(a[-1].numpy(), ref[-1])
    np.testing.assert_array_equal(a[1:3, ::2].numpy(), ref[1:3, ::2])
    np.testing.assert_array_equal(a[1:3][:, 1:].numpy(), ref[1:3][:, 1:])
    np.testing.assert_array_equal(a[np.int64(3)].numpy(), ref[3])


def test_indexing_single_elements_is_unsupported_like_warp():
    a = array([1.0, 2.0, 3.0])
    with pytest.raises(RuntimeError, match="Item indexing is not supported"):
        a[1]
    b = zeros((2, 3))
    with pytest.raises(RuntimeError, match="Item indexing"):
        b[1, 2]


def test_indexing_errors():
    a = zeros((3, 4))
    with pytest.raises(IndexError, match="out of bounds"):
        a[3]
    with pytest.raises(IndexError, match="out of bounds"):
        a[:, -5]
    with pytest.raises(IndexError, match="Too many indices"):
        a[0, 0, 0]
    with pytest.raises(ValueError, match="positive step"):
        a[::-1]
    with pytest.raises(TypeError, match="ints or slices"):
        a[1.5]
    with pytest.raises(TypeError, match="ints or slices"):
        a[True]


@pytest.mark.fixed_device("writes through .numpy(), a zero-copy view only on the CPU")
def test_view_grad_is_matching_view_of_parent_grad():
    a = zeros((4, 5), requires_grad=True)
    v = a[1:, 2]
    assert v.requires_grad
    assert v.grad.shape == v.shape and v.grad.strides == v.strides
    assert v.grad.ptr - a.grad.ptr == v.ptr - a.ptr == 5 * 4 + 2 * 4
    v.grad.numpy()[:] = [1.0, 2.0, 3.0]
    expected = np.zeros((4, 5), dtype=np.float32)
    expected[1:, 2] = [1.0, 2.0, 3.0]
    np.testing.assert_array_equal(a.grad.numpy(), expected)
    row = a[3]
    np.testing.assert_array_equal(row.grad.numpy(), expected[3])
    c = v.__ctype__()
    assert c.grad == a.grad.ptr + 28 and c.strides[0] == 20


@pytest.mark.fixed_device("writes through .numpy(), a zero-copy view only on the CPU")
def test_view_outlives_parent():
    a = array(np.arange(6, dtype=np.float32).reshape(2, 3), requires_grad=True)
    v = a[1]
    a.grad.numpy()[1] = 5.0
    del a
    gc.collect()
    np.testing.assert_array_equal(v.numpy(), [3.0, 4.0, 5.0])
    np.testing.assert_array_equal(v.grad.numpy(), [5.0, 5.0, 5.0])


def test_reshape_and_flatten():
    ref = np.arange(24, dtype=np.float32)
    a = array(ref, requires_grad=True)
    b = a.reshape((2, 3, 4))
    np.testing.assert_array_equal(b.numpy(), ref.reshape(2, 3, 4))
    assert b.ptr == a.ptr and b.grad.ptr == a.grad.ptr and b.grad.shape == (2, 3, 4)
    np.testing.assert_array_equal(a.reshape((4, -1)).numpy(), ref.reshape(4, -1))
    np.testing.assert_array_equal(a.reshape(24).numpy(), ref)
    assert b.flatten().shape == (24,) and b.flatten().ptr == a.ptr
    assert a.flatten() is a
    with pytest.raises(ValueError, match=r"size 24\) into shape \(5, 5\)"):
        a.reshape((5, 5))
    with pytest.raises(ValueError, match=r"size 24\) into shape \(5, -1\)"):
        a.reshape((5, -1))
    with pytest.raises(ValueError, match="at most one"):
        a.reshape((-1, -1))
    with pytest.raises(ValueError, match="at most 4"):
        a.reshape((1, 1, 2, 3, 4))
    with pytest.raises(RuntimeError, match="non-contiguous"):
        b.transpose().reshape(-1)
    with pytest.raises(RuntimeError, match="non-contiguous"):
        b.transpose().flatten()


def test_transpose():
    ref = np.arange(24, dtype=np.float32).reshape(2, 3, 4)
    a = array(ref, requires_grad=True)
    t = a.transpose()
    np.testing.assert_array_equal(t.numpy(), ref.transpose())
    assert t.strides == ref.transpose().strides and not t.is_contiguous
    assert t.grad.strides == t.strides
    p = a.transpose((1, 0, 2))
    np.testing.assert_array_equal(p.numpy(), ref.transpose((1, 0, 2)))
    one_d = array([1.0, 2.0])
    assert one_d.transpose() is one_d
    with pytest.raises(ValueError, match="permutation"):
        a.transpose((0, 0, 1))


def test_view_dtype():
    a = array([1.0, -2.0, 0.5], dtype=float)
    b = a.view(types.int32)
    np.testing.assert_array_equal(b.numpy(), np.array([1.0, -2.0, 0.5], dtype=np.float32).view(np.int32))
    assert b.ptr == a.ptr
    with pytest.raises(TypeError, match="source dtype has size 4 bytes, but target dtype has size 8 bytes"):
        a.view(types.float64)
    # vectors as their scalars (trailing dimensions added) and back, as in Warp
    v = array(np.arange(12, dtype=np.float32).reshape(3, 4), dtype=wp.vec4)
    s = v.view(float)
    assert s.shape == (3, 4) and s.ptr == v.ptr
    np.testing.assert_array_equal(s.numpy(), np.arange(12).reshape(3, 4))
    m = s.reshape((3, 2, 2)).view(wp.mat22)
    assert m.shape == (3,) and m.numpy()[2].tolist() == [[8, 9], [10, 11]]
    assert array([1.0, 2.0, 3.0, 4.0], dtype=float).view(wp.vec4).shape == (1,)
    with pytest.raises(TypeError, match="source scalar dtype float32 has size 4 bytes"):
        v.view(types.float64)
    with pytest.raises(TypeError, match="trailing dimensions"):
        array(np.zeros((3, 4), np.float32))[:, ::2].view(wp.vec2)  # not contiguous inside


@pytest.mark.fixed_device("a.to('cpu') of a CPU array is the array itself")
def test_contiguous_and_to():
    ref = np.arange(12, dtype=np.float32).reshape(3, 4)
    a = array(ref)
    assert a.contiguous() is a
    t = a.transpose()
    c = t.contiguous()
    assert c.is_contiguous and c.ptr != a.ptr
    np.testing.assert_array_equal(c.numpy(), ref.T)
    assert a.to("cpu") is a
    if not is_cuda_available():
        with pytest.raises(RuntimeError, match="no CUDA device"):
            a.to("cuda:0")


# ---------------------------------------------------------------------------------------------
# gradients and the C descriptor
# ---------------------------------------------------------------------------------------------


def test_requires_grad_allocates_and_drops_grad():
    a = array([1.0, 2.0], dtype=float)
    assert a.grad is None and not a.requires_grad
    a.requires_grad = True
    assert a.grad.shape == (2,) and a.grad.dtype is types.float32
    np.testing.assert_array_equal(a.grad.numpy(), [0.0, 0.0])
    assert a.grad.ptr != a.ptr
    a.requires_grad = False
    assert a.grad is None


@pytest.mark.fixed_device("writes through .numpy(), a zero-copy view only on the CPU")
def test_grad_on_strided_view_keeps_layout():
    base = zeros((4, 5))
    v = base[:, 1]
    v.requires_grad = True
    assert v.grad.strides == v.strides == (20,)
    v.grad.numpy()[:] = [1, 2, 3, 4]
    np.testing.assert_array_equal(v.grad.numpy(), [1, 2, 3, 4])


def test_grad_setter_validates():
    a = zeros(3)
    g = array([1.0, 2.0, 3.0], dtype=float)
    a.grad = g
    assert a.grad is g and a.requires_grad
    with pytest.raises(ValueError, match="expected shape"):
        a.grad = zeros(4)
    with pytest.raises(ValueError, match="expected dtype"):
        a.grad = zeros(3, dtype=types.float64)
    a.grad = None
    assert a.grad is None and not a.requires_grad
    b = array([1.0, 2.0], dtype=float, grad=array([0.5, 0.5], dtype=float))
    np.testing.assert_array_equal(b.grad.numpy(), [0.5, 0.5])


@pytest.mark.fixed_device("reads the descriptor's memory through host pointers")
def test_ctype_descriptor():
    a = zeros((3, 4), dtype=types.float64)
    c = a.__ctype__()
    assert isinstance(c, types.array_t)
    assert c.data == a.ptr and c.grad == 0
    assert list(c.shape) == [3, 4, 0, 0]
    assert list(c.strides) == [32, 8, 0, 0]
    assert c.ndim == 2 and c.flags == 0
    assert a.__ctype__() is c  # cached
    a.requires_grad = True
    c2 = a.__ctype__()
    assert c2 is not c and c2.grad == a.grad.ptr
    a.retain_grad = True
    assert a.__ctype__().flags == types.ARRAY_RETAIN_GRAD
    a.grad = None
    assert a.__ctype__().grad == 0
    r = zeros(2, requires_grad=True, retain_grad=True)
    assert r.retain_grad and r.__ctype__().flags & types.ARRAY_RETAIN_GRAD

    # the descriptor addresses the right memory from C's point of view
    a.numpy()[2, 3] = 7.5
    d = a.__ctype__()
    addr = d.data + 2 * d.strides[0] + 3 * d.strides[1]
    assert ctypes.c_double.from_address(addr).value == 7.5


def test_retain_grad_needs_a_gradient():
    with pytest.raises(ValueError, match="requires_grad=True"):
        zeros(2, retain_grad=True)
    with pytest.raises(ValueError, match="requires_grad=True"):
        array([1.0, 2.0], dtype=float, retain_grad=True)
    a = zeros(2)
    with pytest.raises(ValueError, match="requires_grad"):
        a.retain_grad = True
    assert not a.retain_grad
    a.requires_grad = True
    a.retain_grad = True
    assert a.retain_grad
    a.requires_grad = False  # no gradient left: nothing to retain
    assert not a.retain_grad and a.grad is None


# ---------------------------------------------------------------------------------------------
# writing: zero_, fill_, assign
# ---------------------------------------------------------------------------------------------


def test_zero_and_fill():
    a = array(np.arange(6, dtype=np.int32))
    a.fill_(7)
    np.testing.assert_array_equal(a.numpy(), [7] * 6)
    a.fill_(types.int32(3))
    np.testing.assert_array_equal(a.numpy(), [3] * 6)
    a.zero_()
    np.testing.assert_array_equal(a.numpy(), [0] * 6)
    with pytest.raises(ValueError, match="Cannot fill"):
        a.fill_("x")
    with pytest.raises(ValueError, match="Cannot fill"):
        a.fill_([1, 2])


def test_fill_non_contiguous_view_only_touches_view():
    a = zeros((3, 4))
    a[:, 1].fill_(2.0)
    expected = np.zeros((3, 4), dtype=np.float32)
    expected[:, 1] = 2.0
    np.testing.assert_array_equal(a.numpy(), expected)


def test_assign():
    a = zeros((2, 3))
    a.assign([[1, 2, 3], [4, 5, 6]])
    np.testing.assert_array_equal(a.numpy(), [[1, 2, 3], [4, 5, 6]])
    a.assign(np.full((2, 3), 0.5))
    np.testing.assert_array_equal(a.numpy(), np.full((2, 3), 0.5, dtype=np.float32))
    a.assign(array(np.arange(6, dtype=np.float32).reshape(2, 3)))
    np.testing.assert_array_equal(a.numpy(), np.arange(6).reshape(2, 3))
    a.assign(np.arange(6, 12))  # same size, both contiguous: flat copy as in Warp
    np.testing.assert_array_equal(a.numpy(), np.arange(6, 12).reshape(2, 3))
    col = a[:, 1]
    col.assign([10, 20])
    np.testing.assert_array_equal(a.numpy()[:, 1], [10, 20])
    with pytest.raises(ValueError, match=r"shape \(3,\) to an array of shape \(2,\)"):
        col.assign([1, 2, 3])
    with pytest.raises(ValueError, match="Cannot assign"):
        a.assign([1, 2])


# ---------------------------------------------------------------------------------------------
# module-level constructors
# ---------------------------------------------------------------------------------------------


def test_zeros_ones_full_empty():
    z = zeros((2, 3))
    assert z.dtype is types.float32 and z.shape == (2, 3)
    np.testing.assert_array_equal(z.numpy(), np.zeros((2, 3)))
    o = ones(4, dtype=types.int64)
    assert o.dtype is types.int64 and o.numpy().dtype == np.int64
    np.testing.assert_array_equal(o.numpy(), np.ones(4))
    f = full((2, 2), 3.5, dtype=types.float64)
    np.testing.assert_array_equal(f.numpy(), np.full((2, 2), 3.5))
    e = empty(5, dtype=int)
    assert e.shape == (5,) and e.dtype is types.int32
    assert zeros(3, requires_grad=True).grad.shape == (3,)


@pytest.mark.parametrize(
    "value, expected",
    [(2.0, types.float32), (3, types.int32), (True, types.bool), (types.float64(1.5), types.float64)],
)
def test_full_infers_dtype_from_value(value, expected):
    a = full(3, value)
    assert a.dtype is expected
    np.testing.assert_array_equal(a.numpy(), np.full(3, float(value)).astype(expected.np_dtype))


def test_like_constructors_inherit_from_source():
    src = array(np.arange(6, dtype=np.float64).reshape(2, 3), requires_grad=True)
    for fn in (zeros_like, empty_like, ones_like):
        b = fn(src)
        assert b.shape == src.shape and b.dtype is src.dtype and b.requires_grad
        assert b.ptr != src.ptr
    np.testing.assert_array_equal(zeros_like(src).numpy(), np.zeros((2, 3)))
    np.testing.assert_array_equal(ones_like(src).numpy(), np.ones((2, 3)))
    f = full_like(src, 4.0, requires_grad=False)
    assert not f.requires_grad
    np.testing.assert_array_equal(f.numpy(), np.full((2, 3), 4.0))
    assert not zeros_like(zeros(2)).requires_grad
    with pytest.raises(TypeError, match="wp.array"):
        zeros_like(np.zeros(3))


def test_clone_copies_data():
    src = array(np.arange(12, dtype=np.float32).reshape(3, 4), requires_grad=True)
    src.grad.fill_(1.0)
    c = clone(src)
    assert c.ptr != src.ptr and c.requires_grad
    np.testing.assert_array_equal(c.numpy(), src.numpy())
    np.testing.assert_array_equal(c.grad.numpy(), np.zeros((3, 4)))  # fresh gradient
    src.numpy()[0, 0] = 99.0
    assert c.numpy()[0, 0] == 0.0
    t = clone(src.transpose(), requires_grad=False)
    assert t.is_contiguous and t.grad is None
    np.testing.assert_array_equal(t.numpy(), src.numpy().T)


def test_from_numpy():
    ref = np.linspace(0, 1, 6).reshape(2, 3)
    a = from_numpy(ref)
    assert a.dtype is types.float64 and a.shape == (2, 3) and a.ptr != ref.ctypes.data
    np.testing.assert_array_equal(a.numpy(), ref)
    b = from_numpy(ref, dtype=float, shape=(6,), requires_grad=True)
    assert b.dtype is types.float32 and b.shape == (6,) and b.requires_grad
    np.testing.assert_allclose(b.numpy(), ref.reshape(-1).astype(np.float32))


# ---------------------------------------------------------------------------------------------
# copy
# ---------------------------------------------------------------------------------------------


def test_copy_whole_and_ranges():
    src = array(np.arange(10, dtype=np.float32))
    dst = zeros(10)
    copy(dst, src)
    np.testing.assert_array_equal(dst.numpy(), np.arange(10))
    dst.zero_()
    copy(dst, src, dest_offset=2, src_offset=5, count=3)
    np.testing.assert_array_equal(dst.numpy(), [0, 0, 5, 6, 7, 0, 0, 0, 0, 0])
    big = zeros((2, 10))
    copy(big, src, dest_offset=10)  # contiguous arrays copy as flat ranges
    np.testing.assert_array_equal(big.numpy()[1], np.arange(10))


def test_copy_non_contiguous_and_raw_bytes():
    ref = np.arange(12, dtype=np.float32).reshape(3, 4)
    a = array(ref)
    dst = zeros((4, 3))
    copy(dst, a.transpose())
    np.testing.assert_array_equal(dst.numpy(), ref.T)
    col = zeros(3)
    copy(col, a[:, 2])
    np.testing.assert_array_equal(col.numpy(), ref[:, 2])
    bits = zeros(3, dtype=types.int32)
    copy(bits, array([1.0, 2.0, -1.0], dtype=float))  # equal element size: raw bytes
    np.testing.assert_array_equal(bits.numpy(), np.array([1.0, 2.0, -1.0], dtype=np.float32).view(np.int32))


def test_copy_overlapping_views():
    a = array(np.arange(8, dtype=np.float32))
    copy(a[2:], a[:6])
    np.testing.assert_array_equal(a.numpy(), [0, 1, 0, 1, 2, 3, 4, 5])


def test_copy_errors():
    with pytest.raises(ValueError, match="element sizes differ"):
        copy(zeros(3), zeros(3, dtype=types.float64))
    with pytest.raises(ValueError, match="cannot copy 5 elements"):
        copy(zeros(4), zeros(5))
    with pytest.raises(ValueError, match="cannot copy"):
        copy(zeros(10), zeros(5), src_offset=2, count=4)
    with pytest.raises(ValueError, match="incompatible shapes"):
        copy(zeros((3, 4)).transpose(), zeros((3, 4)).transpose()[:2])
    with pytest.raises(ValueError, match="count must be non-negative"):
        copy(zeros(3), zeros(3), count=-1)
    with pytest.raises(RuntimeError, match="Source offset must be non-negative"):  # Warp's exception type too
        copy(zeros(3), zeros(3), src_offset=-1)
    with pytest.raises(RuntimeError, match="must be integers"):
        copy(zeros(3), zeros(3), count=2.0)
    with pytest.raises(RuntimeError, match="exceeds the source size"):
        copy(zeros(2), zeros(4)[::2], count=5)
    with pytest.raises(TypeError, match="src must be a wp.array"):
        copy(zeros(3), np.zeros(3, dtype=np.float32))


# ---------------------------------------------------------------------------------------------
# dtypes with a trailing element shape (stand-in for vec3 until vector types exist)
# ---------------------------------------------------------------------------------------------


def test_trailing_element_shape_layout():
    a = zeros(4, dtype=FakeVec3)
    assert a.shape == (4,) and a.strides == (12,) and a.capacity == 48
    assert a.numpy().shape == (4, 3) and a.numpy().dtype == np.float32
    a.fill_([1.0, 2.0, 3.0])
    np.testing.assert_array_equal(a.numpy(), np.tile([1.0, 2.0, 3.0], (4, 1)))
    ref = np.arange(12, dtype=np.float32).reshape(4, 3)
    b = array(ref, dtype=FakeVec3)
    assert b.shape == (4,)
    np.testing.assert_array_equal(b.numpy(), ref)
    c = array(np.arange(12, dtype=np.float32).reshape(2, 6), dtype=FakeVec3)
    assert c.shape == (2, 2)
    np.testing.assert_array_equal(c.numpy(), np.arange(12).reshape(2, 2, 3))
    d = array(np.arange(9), dtype=FakeVec3)
    assert d.shape == (3,)
    np.testing.assert_array_equal(b[1:3].numpy(), ref[1:3])
    with pytest.raises(ValueError, match="does not fit dtype FakeVec3"):
        array(np.zeros((2, 4)), dtype=FakeVec3)
    assert b.__ctype__().strides[0] == 12


# ---------------------------------------------------------------------------------------------
# tape bookkeeping
# ---------------------------------------------------------------------------------------------


def test_mark_read_write(capsys):
    a = zeros(4)
    v = a[1:]
    v.mark_write(arg_name="x", kernel_name="k", filename="f.py", lineno=3)
    assert capsys.readouterr().err == ""
    v.mark_read()
    assert a._is_read  # reading a view marks its parent
    a.mark_write(arg_name="x", kernel_name="k", filename="f.py", lineno=3)
    out = capsys.readouterr().err  # warnings go to stderr
    assert "passed to argument x in kernel k at f.py:3 is being written to but has already been read" in out
    a.mark_init()
    a.mark_write()
    assert capsys.readouterr().err == ""


# ---------------------------------------------------------------------------------------------
# ScopedTimer
# ---------------------------------------------------------------------------------------------


def test_scoped_timer_prints_and_records(capsys):
    timings = {}
    with ScopedTimer("work", dict=timings) as t:
        np.linalg.inv(np.eye(50) * 2.0)
    out = capsys.readouterr().out
    assert out.startswith("work took ") and out.rstrip().endswith(" ms")
    assert t.elapsed > 0.0
    assert timings["work"] == [t.elapsed]
    assert f"{t.elapsed:.2f}" in out


def test_scoped_timer_nested_quiet_and_inactive(capsys):
    with ScopedTimer("outer"), ScopedTimer("inner"):
        pass
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].startswith("    inner took") and lines[1].startswith("outer took")
    with ScopedTimer("quiet", print=False) as q:
        pass
    assert capsys.readouterr().out == "" and q.elapsed >= 0.0
    with ScopedTimer("off", active=False) as off:
        pass
    assert capsys.readouterr().out == "" and off.elapsed == 0.0
    reports = []
    with ScopedTimer("rep", print=False, report_func=lambda r, e: reports.append(e), synchronize=True):
        pass
    assert len(reports) == 1


@wp.kernel
def k_fixed_ndim_annotations(a: wp.array2d[float], b: wp.array[wp.vec3], c: wp.array3d(dtype=wp.float64)):
    i, j = wp.tid()
    a[i, j] = float(i * 10 + j) + b[0][1] + float(c[0, 0, 0])


def test_fixed_ndim_array_types_are_constructors_and_subscriptable_annotations():
    assert wp.array2d[float].ndim == 2 and wp.array2d[float].dtype is wp.float32
    assert wp.array4d[wp.vec3].ndim == 4 and wp.array1d[int].dtype is wp.int32
    made = wp.array2d(np.arange(6, dtype=np.float32).reshape(2, 3), dtype=float)
    assert made.shape == (2, 3) and made.ndim == 2
    with pytest.raises(TypeError, match="ndim=3"):
        wp.array2d(dtype=float, ndim=3)
    a = wp.zeros((2, 3), dtype=float)
    b = wp.array(np.full((1, 3), 2.0, dtype=np.float32), dtype=wp.vec3)
    c = wp.full((1, 1, 1), 0.5, dtype=wp.float64)
    wp.launch(k_fixed_ndim_annotations, dim=(2, 3), inputs=[a, b, c])
    np.testing.assert_array_equal(a.numpy(), np.add.outer([0, 10], [0, 1, 2]) + 2.5)


@pytest.mark.fixed_device("a host pointer to the elements: CPU arrays (GPU arrays raise, test_cuda_runtime.py)")
def test_cptr_reads_elements_in_place():
    import weft as wp

    a = wp.array([1.5, 2.5, 3.5], dtype=wp.float64)
    p = a.cptr()
    assert p[2] == 3.5
    p[0] = -1.0  # the pointer aliases the array's memory
    assert a.numpy()[0] == -1.0
    v = wp.array([[1, 2, 3], [4, 5, 6]], dtype=wp.vec3)
    assert v.cptr()[1] == wp.vec3(4.0, 5.0, 6.0)
    assert wp.empty(0, dtype=float).cptr() is None
    with pytest.raises(TypeError, match="annotation"):
        wp.array(dtype=float).cptr()
