"""DLPack interop: __dlpack__ / __dlpack_device__ on arrays, wp.from_dlpack / wp.to_dlpack, zero-copy
round trips with NumPy and torch, and the NumPy protocols."""

import numpy as np
import pytest

import weft as wp

pytestmark = pytest.mark.fixed_device("DLPack with NumPy and CPU tensors; GPU capsules are tested in test_cuda_runtime.py")


@wp.kernel
def inc_kernel(x: wp.array(dtype=float)):
    i = wp.tid()
    x[i] = x[i] + 1.0


def test_dlpack_device_and_numpy_export_share_memory():
    a = wp.array([1.0, 2.0, 3.0], dtype=float)
    assert a.__dlpack_device__() == (1, 0)
    n = np.from_dlpack(a)
    assert n.ctypes.data == a.ptr and n.flags.writeable
    n[0] = 9.0
    assert a.numpy()[0] == 9.0
    wp.launch(inc_kernel, dim=3, inputs=[a])
    np.testing.assert_array_equal(n, [10.0, 3.0, 4.0])


def test_numpy_round_trip_is_zero_copy():
    src = np.arange(12, dtype=np.float64).reshape(3, 4)
    a = wp.from_dlpack(src)
    assert a.dtype is wp.float64 and a.shape == (3, 4) and a.ptr == src.ctypes.data
    back = np.from_dlpack(a)
    assert back.ctypes.data == src.ctypes.data
    src[1, 1] = -5.0
    assert back[1, 1] == -5.0 and a.numpy()[1, 1] == -5.0


def test_vector_dtypes_take_trailing_dimensions():
    a = wp.zeros(4, dtype=wp.vec3)
    assert np.from_dlpack(a).shape == (4, 3)
    m = wp.zeros(2, dtype=wp.mat22d)
    assert np.from_dlpack(m).shape == (2, 2, 2)
    src = np.arange(12, dtype=np.float32).reshape(4, 3)
    v = wp.from_dlpack(src, dtype=wp.vec3)
    assert v.shape == (4,) and v.dtype is wp.vec3 and v.ptr == src.ctypes.data
    with pytest.raises(RuntimeError):
        wp.from_dlpack(np.zeros((4, 2), dtype=np.float32), dtype=wp.vec3)


def test_strided_and_typed_exports():
    base = wp.array(np.arange(12, dtype=np.float32).reshape(3, 4))
    col = base[:, 1]
    n = np.from_dlpack(col)
    assert n.strides == (16,) and n.ctypes.data == col.ptr
    np.testing.assert_array_equal(n, [1.0, 5.0, 9.0])
    for dtype in (wp.float16, wp.int8, wp.uint8, wp.int32, wp.int64, wp.bool):
        x = wp.zeros(3, dtype=dtype)
        assert np.from_dlpack(x).dtype == dtype.np_dtype
        assert wp.from_dlpack(np.from_dlpack(x)).dtype is dtype
    strided = np.arange(10, dtype=np.float32)[::2]
    w = wp.from_dlpack(strided)
    assert w.strides == (8,) and w.ptr == strided.ctypes.data


def test_capsules_and_read_only_producers():
    a = wp.array([1.0, 2.0], dtype=float)
    cap = wp.to_dlpack(a)
    assert type(cap).__name__ == "PyCapsule"
    b = wp.from_dlpack(cap)
    assert b.ptr == a.ptr
    ro = np.arange(3, dtype=np.float32)
    ro.flags.writeable = False
    shared = wp.from_dlpack(ro)  # weft never copies behind the caller's back
    assert shared.ptr == ro.ctypes.data
    assert wp.from_dlpack(a) is a
    with pytest.raises(TypeError):
        wp.from_dlpack([1.0, 2.0])


def test_array_protocols_still_work():
    a = wp.array([[1, 2], [3, 4]], dtype=wp.int32)
    assert np.asarray(a).ctypes.data == a.ptr
    assert a.__array_interface__["shape"] == (2, 2)
    np.testing.assert_array_equal(np.array(a), [[1, 2], [3, 4]])


def test_allocations_are_64_byte_aligned():
    for n in (1, 3, 17, 1000):
        assert wp.zeros(n, dtype=wp.float16).ptr % 64 == 0


def test_torch_round_trip_through_dlpack():
    torch = pytest.importorskip("torch")
    a = wp.array(np.arange(6, dtype=np.float32).reshape(2, 3))
    t = torch.from_dlpack(a)
    assert t.data_ptr() == a.ptr and t.shape == (2, 3)
    t[0, 0] = 42.0
    assert a.numpy()[0, 0] == 42.0
    v = torch.from_dlpack(wp.zeros(5, dtype=wp.vec3))
    assert v.shape == (5, 3)
    src = torch.arange(8, dtype=torch.int64)
    w = wp.from_dlpack(src)
    assert w.dtype is wp.int64 and w.ptr == src.data_ptr()
    w.numpy()[7] = -1
    assert src[7].item() == -1
    assert torch.from_dlpack(w).data_ptr() == src.data_ptr()
    b = wp.from_dlpack(torch.ones(2, 3).t())  # strided torch tensors stay views
    assert b.shape == (3, 2) and b.strides == (4, 12)


def test_bool_and_bfloat16_arrays_round_trip_through_capsules():
    flags = wp.array(np.array([True, False, True]), dtype=wp.bool)
    back = wp.from_dlpack(wp.to_dlpack(flags))
    assert back.dtype is wp.bool and back.ptr == flags.ptr
    np.testing.assert_array_equal(back.numpy(), [True, False, True])
    np.testing.assert_array_equal(np.from_dlpack(flags), [True, False, True])  # NumPy reads kDLBool
    as_bytes = wp.from_dlpack(wp.to_dlpack(flags), dtype=wp.uint8)  # bool and 1-byte ints alias
    assert as_bytes.ptr == flags.ptr and list(as_bytes.numpy()) == [1, 0, 1]
    with pytest.raises(RuntimeError, match="^Incompatible data types: DLPack bool8 and Warp float32"):  # Warp's words
        wp.from_dlpack(wp.to_dlpack(flags), dtype=wp.float32)
    halves = wp.array([1.5, -2.0, 0.25], dtype=wp.bfloat16)
    back = wp.from_dlpack(wp.to_dlpack(halves))
    assert back.dtype is wp.bfloat16 and back.ptr == halves.ptr
    np.testing.assert_array_equal([float(v) for v in back.list()], [1.5, -2.0, 0.25])  # with or without ml_dtypes


def test_bool_tensors_from_torch():
    torch = pytest.importorskip("torch")
    t = torch.tensor([True, False, True])
    assert wp.from_torch(t).dtype is wp.bool
    np.testing.assert_array_equal(wp.from_torch(t, dtype=wp.uint8).numpy(), [1, 0, 1])
    tb = torch.from_dlpack(wp.array([1.5, -2.0], dtype=wp.bfloat16))
    assert tb.dtype == torch.bfloat16 and tb.tolist() == [1.5, -2.0]


def test_producers_on_other_devices_are_refused_before_exporting():
    class OnAnotherDevice:
        def __dlpack_device__(self):
            return (123, 7)

        def __dlpack__(self, stream=None):
            raise AssertionError("not called for a device weft cannot read")

    with pytest.raises(TypeError, match="Unsupported source device for DLPack: device_type=123, device_id=7"):
        wp.from_dlpack(OnAnotherDevice())
