"""The CUDA runtime: devices, memory, copies, streams, events, graphs, launches, interop.

Tests marked ``gpu`` need a CUDA device and skip without one; the others run everywhere and check
that a machine without a GPU behaves well (clear errors, no cuda-python import on the CPU path)
and the parts of the runtime that need no device (driver result checking, DLPack capsules,
strided host staging).
"""

from __future__ import annotations

import ctypes
import subprocess
import sys
import textwrap
import types as pytypes

import numpy as np
import pytest

import weft as wp
from weft.runtime import cuda_driver

HAS_GPU = wp.is_cuda_available()
gpu = pytest.mark.skipif(not HAS_GPU, reason="needs a CUDA device")
no_gpu = pytest.mark.skipif(HAS_GPU, reason="checks the behaviour of a machine without a GPU")
pytestmark = pytest.mark.fixed_device("its tests choose their devices: the CPU without a GPU, cuda:0 on one")



@wp.kernel
def k_axpy(a: float, x: wp.array(dtype=float), y: wp.array(dtype=float), out: wp.array(dtype=float)):
    i = wp.tid()
    out[i] = a * x[i] + y[i]


@wp.kernel
def k_square_sum(x: wp.array(dtype=float), loss: wp.array(dtype=float)):
    i = wp.tid()
    wp.atomic_add(loss, 0, x[i] * x[i] * wp.sin(x[i]))


@wp.kernel
def k_grid(out: wp.array2d(dtype=float)):
    i, j = wp.tid()
    out[i, j] = float(i * 10 + j)


@wp.kernel
def k_vec(v: wp.array(dtype=wp.vec3), s: wp.array(dtype=float)):
    i = wp.tid()
    s[i] = wp.length(v[i])


@wp.kernel
def k_add_one(x: wp.array(dtype=float)):
    i = wp.tid()
    x[i] = x[i] + 1.0


@wp.kernel
def k_out_of_bounds(x: wp.array(dtype=float)):
    i = wp.tid()
    x[i + 1] = 1.0


# ---------------------------------------------------------------------------------------------
# without a GPU (run everywhere)
# ---------------------------------------------------------------------------------------------


@no_gpu
def test_no_gpu_reports_no_cuda():
    assert wp.is_cuda_available() is False
    assert wp.get_cuda_device_count() == 0
    assert wp.get_cuda_devices() == []
    assert wp.get_preferred_device() == "cpu"
    count, reason = cuda_driver.probe()
    assert count == 0 and reason  # the reason names what is missing


@no_gpu
@pytest.mark.parametrize("ident", ["cuda", "cuda:0", "cuda:1"])
def test_cuda_device_names_raise_clearly(ident):
    with pytest.raises(RuntimeError, match="no CUDA device is available") as info:
        wp.zeros(3, device=ident)
    assert "device='cpu'" in str(info.value) and "is_cuda_available" in str(info.value)
    with pytest.raises(RuntimeError, match="no CUDA device"):
        wp.get_cuda_device()
    with pytest.raises(RuntimeError, match="no CUDA device"):
        wp.set_device(ident)
    assert wp.get_device() == "cpu"


@no_gpu
def test_cuda_only_api_raises_without_gpu():
    with pytest.raises(RuntimeError, match="CUDA device"):
        wp.Stream()
    with pytest.raises(RuntimeError, match="CUDA device"):
        wp.Event()
    with pytest.raises(RuntimeError, match="CUDA device"):
        wp.get_stream()
    with pytest.raises(RuntimeError, match="CUDA"):
        wp.capture_begin(device="cuda:0")  # (a capture on the CPU records CPU work: test_cpu_capture.py)
    with pytest.raises(RuntimeError, match="CUDA"):
        cuda_driver.api()
    with pytest.raises(RuntimeError, match="no CUDA device"):
        wp.launch(k_add_one, dim=1, inputs=[wp.zeros(1)], device="cuda:0")
    assert wp.is_mempool_supported("cpu") is False and wp.is_mempool_enabled("cpu") is False
    with pytest.raises(ValueError, match="CUDA"):
        wp.set_mempool_enabled("cpu", True)


@no_gpu
def test_pinned_cpu_array_without_gpu_is_ordinary_memory():
    a = wp.full(5, 2.5, dtype=float, pinned=True)
    np.testing.assert_array_equal(a.numpy(), [2.5] * 5)
    b = wp.zeros_like(a)
    wp.copy(b, a)
    np.testing.assert_array_equal(b.numpy(), a.numpy())


def test_cpu_program_never_imports_cuda_python(tmp_path):
    script = tmp_path / "cpu_only.py"
    script.write_text(
        textwrap.dedent(
            """
            import sys
            import numpy as np
            import weft as wp

            @wp.kernel
            def double(a: wp.array(dtype=float)):
                i = wp.tid()
                a[i] = 2.0 * a[i]

            a = wp.array(np.arange(8, dtype=np.float32), dtype=float)
            wp.launch(double, dim=8, inputs=[a])
            b = wp.clone(a)
            wp.copy(b, a)
            wp.synchronize()
            wp.synchronize_device()
            assert np.allclose(b.numpy(), 2 * np.arange(8)), b.numpy()
            loaded = [m for m in sys.modules if m == "cuda" or m.startswith("cuda.")]
            print("CUDA-MODULES", loaded)
            """
        )
    )
    out = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=300, check=False)
    assert out.returncode == 0, out.stderr
    assert "CUDA-MODULES []" in out.stdout, out.stdout


def test_driver_results_are_checked():
    assert cuda_driver.check((0,), "nothing") is None
    assert cuda_driver.check((0, 7), "one value") == 7
    assert cuda_driver.check((0, 1, 2), "two values") == (1, 2)
    with pytest.raises(cuda_driver.CudaError, match="cuFake on cuda:0"):
        cuda_driver.check((100, None), "cuFake on cuda:0")


def test_driver_module_imports_and_reports_no_device_gracefully():
    pytest.importorskip("cuda.bindings.driver")
    from weft.runtime import cuda

    count, reason = cuda_driver.probe()
    assert count == wp.get_cuda_device_count()
    assert (count == 0) == bool(reason)
    assert cuda.discover() == reason  # discovery is idempotent and never raises


def test_dlpack_cuda_capsule_layout_and_release():
    """The kDLCUDA capsule weft builds for GPU arrays: fields, strides in elements, and release of
    an unconsumed capsule (checked on host memory through a stand-in device)."""
    from weft.interop import cuda_interface as ci

    host = wp.array(np.arange(12, dtype=np.float32).reshape(3, 4), dtype=float)
    view = host[:, 1::2]
    fake = pytypes.SimpleNamespace(
        dtype=view.dtype,
        shape=view.shape,
        strides=view.strides,
        ptr=view.ptr,
        device=pytypes.SimpleNamespace(ordinal=3),
    )
    before = len(ci._exported)
    capsule = ci.export_dlpack(fake, stream=-1)  # -1: no synchronisation (the stand-in has no stream)
    assert len(ci._exported) == before + 1
    ptr = ci._api.PyCapsule_GetPointer(capsule, b"dltensor")
    t = ctypes.cast(ptr, ctypes.POINTER(ci.DLManagedTensor)).contents.dl_tensor
    assert (t.device.device_type, t.device.device_id) == (ci.KDL_CUDA, 3)
    assert t.ndim == 2 and (t.dtype.code, t.dtype.bits, t.dtype.lanes) == (2, 32, 1)
    assert [t.shape[k] for k in range(2)] == [3, 2]
    assert [t.strides[k] for k in range(2)] == [4, 2]  # elements, not bytes
    assert t.data == view.ptr
    del capsule, t
    assert len(ci._exported) == before  # the unconsumed capsule released its tensor


def test_dlpack_cuda_capsule_of_vectors_has_trailing_dims():
    from weft.interop import cuda_interface as ci

    a = wp.zeros(5, dtype=wp.vec3)
    fake = pytypes.SimpleNamespace(
        dtype=a.dtype, shape=a.shape, strides=a.strides, ptr=a.ptr, device=pytypes.SimpleNamespace(ordinal=0)
    )
    capsule = ci.export_dlpack(fake, stream=-1)  # -1: no synchronisation (the stand-in has no stream)
    t = ctypes.cast(ci._api.PyCapsule_GetPointer(capsule, b"dltensor"), ctypes.POINTER(ci.DLManagedTensor))
    tensor = t.contents.dl_tensor
    assert tensor.ndim == 2
    assert [tensor.shape[k] for k in range(2)] == [5, 3] and [tensor.strides[k] for k in range(2)] == [3, 1]


def test_strided_host_staging_gathers_and_scatters():
    """The host staging used for strided GPU copies, exercised on host bytes."""
    from weft.array_layout import _byte_span
    from weft.runtime.cuda_memory import _strided_view

    ref = np.arange(40, dtype=np.float32).reshape(5, 8)
    a = wp.array(ref, dtype=float)
    v = a[1:4, ::3]
    lo, hi = _byte_span(v.shape, v.strides, 4)
    span = np.frombuffer(ctypes.string_at(v.ptr + lo, hi - lo), dtype=np.uint8).copy()
    np.testing.assert_array_equal(_strided_view(span, v, -lo, False), ref[1:4, ::3])
    _strided_view(span, v, -lo, False)[...] = -1.0  # scatter leaves the gaps alone
    expected = ref.copy()
    expected[1:4, ::3] = -1.0
    first = (v.ptr + lo - a.ptr) // 4
    np.testing.assert_array_equal(span.view(np.float32), expected.ravel()[first : first + (hi - lo) // 4])
    raw = _strided_view(span, v, -lo, True)
    assert raw.dtype == np.dtype("V4") and raw.shape == v.shape


def test_row_layouts_for_2d_copies():
    """Which layouts one cuMemcpy2D can copy: rows of one width at one pitch."""
    from weft.runtime.cuda_memory import _rows

    assert _rows((3, 4), (16, 4), 4) == (48, 1, 48)  # contiguous
    assert _rows((4, 4), (32, 4), 4) == (16, 4, 32)  # a block of a (.., 8) matrix
    assert _rows((6, 4), (32, 8), 4) == (4, 24, 8)  # every other column: one element per row
    assert _rows((5,), (24,), 12) == (12, 5, 24)  # strided vec3s
    assert _rows((2, 1, 3), (48, 7, 4), 4) == (12, 2, 48)  # size-1 dimensions do not matter
    assert _rows((3, 4), (64, 8), 4) is None  # two different pitches
    assert _rows((4, 3), (4, 16), 4) is None  # a transpose
    assert _rows((3,), (-4,), 4) is None  # negative strides


# ---------------------------------------------------------------------------------------------
# on a GPU
# ---------------------------------------------------------------------------------------------


@pytest.fixture
def dev():
    d = wp.get_device("cuda:0")
    yield d
    wp.synchronize()


@gpu
def test_device_properties(dev):
    assert dev.is_cuda and not dev.is_cpu and dev.alias == "cuda:0" and dev.ordinal == 0
    assert dev.arch >= 50 and dev.sm_count > 0 and dev.name
    assert dev.total_memory > 0 and 0 < dev.free_memory <= dev.total_memory
    assert dev.is_uva and dev.is_primary and dev.uuid.startswith("GPU-") and dev.pci_bus_id
    assert wp.get_cuda_device(0) is dev and wp.get_device("cuda") is dev
    assert wp.get_cuda_device_count() == len(wp.get_cuda_devices()) >= 1
    assert dev in wp.get_devices() and wp.get_preferred_device() is dev
    assert dev.context is not None and dev.has_context
    assert dev == "cuda:0" and dev == "cuda"
    assert dev.get_cuda_output_format() in ("ptx", "cubin")


@gpu
def test_set_device_and_scoped_device(dev):
    try:
        wp.set_device("cuda:0")
        assert wp.get_device() is dev
        assert wp.zeros(2).device is dev
    finally:
        wp.set_device("cpu")
    with wp.ScopedDevice("cuda:0") as d:
        assert d is dev and wp.empty(3).device is dev
    assert wp.get_device() == "cpu"


@gpu
def test_constructors_and_host_round_trips(dev):
    data = np.random.default_rng(0).standard_normal((6, 5)).astype(np.float32)
    a = wp.array(data, dtype=float, device=dev)
    assert a.device is dev and a.shape == (6, 5)
    np.testing.assert_array_equal(a.numpy(), data)
    np.testing.assert_array_equal(wp.zeros((3, 2), dtype=wp.int32, device=dev).numpy(), np.zeros((3, 2)))
    np.testing.assert_array_equal(wp.ones(4, dtype=wp.float64, device=dev).numpy(), np.ones(4))
    np.testing.assert_array_equal(wp.full(5, 7, dtype=wp.int16, device=dev).numpy(), [7] * 5)
    np.testing.assert_array_equal(
        wp.full(3, wp.vec3(1.0, 2.0, 3.0), dtype=wp.vec3, device=dev).numpy(), [[1, 2, 3]] * 3
    )
    assert wp.empty(4, device=dev).shape == (4,)
    z = wp.zeros_like(a)
    assert z.device is dev and not z.numpy().any()
    c = wp.clone(a)
    assert c.ptr != a.ptr and c.device is dev
    np.testing.assert_array_equal(c.numpy(), data)
    h = a.to("cpu")
    assert h.device == "cpu"
    np.testing.assert_array_equal(h.numpy(), data)
    assert h.to(dev).device is dev and a.to(dev) is a
    t = a.transpose()
    np.testing.assert_array_equal(t.numpy(), data.T)  # strided download
    np.testing.assert_array_equal(t.contiguous().numpy(), data.T)
    np.testing.assert_array_equal(a[2:5, 1::2].numpy(), data[2:5, 1::2])
    assert "device='cuda:0'" in repr(a)


@gpu
def test_fill_zero_and_assign(dev):
    a = wp.empty(10, dtype=float, device=dev)
    a.fill_(3.5)
    np.testing.assert_array_equal(a.numpy(), [3.5] * 10)
    a.zero_()
    assert not a.numpy().any()
    v = wp.empty(4, dtype=wp.vec3, device=dev)
    v.fill_(wp.vec3(1.0, -2.0, 0.5))
    np.testing.assert_array_equal(v.numpy(), [[1.0, -2.0, 0.5]] * 4)
    h = wp.zeros(6, dtype=wp.float16, device=dev)
    h.fill_(1.5)
    np.testing.assert_array_equal(h.numpy(), [1.5] * 6)
    m = wp.zeros((4, 6), dtype=float, device=dev)
    m[1:3, ::2].fill_(2.0)  # strided fill through the host
    ref = np.zeros((4, 6), dtype=np.float32)
    ref[1:3, ::2] = 2.0
    np.testing.assert_array_equal(m.numpy(), ref)
    a.assign(np.arange(10, dtype=np.float32))
    np.testing.assert_array_equal(a.numpy(), np.arange(10))
    b = wp.zeros(10, dtype=float, device=dev)
    b.assign(a)
    np.testing.assert_array_equal(b.numpy(), np.arange(10))
    d = wp.zeros(5, dtype=wp.float64, device=dev)
    d.fill_(10.0)  # 8-byte elements whose two words differ: one 2-D memset per word
    np.testing.assert_array_equal(d.numpy(), [10.0] * 5)
    h3 = wp.zeros(3, dtype=wp.vec3h, device=dev)
    h3.fill_(wp.vec3h(1.0, 2.0, -4.0))  # 6-byte elements: 2-byte words
    np.testing.assert_array_equal(h3.numpy(), [[1.0, 2.0, -4.0]] * 3)
    with pytest.raises(RuntimeError, match="host pointer"):
        d.cptr()  # a GPU address read on the host would crash the process


@gpu
def test_copies_between_devices_with_offsets(dev):
    src_host = wp.array(np.arange(20, dtype=np.float32), dtype=float)
    d = wp.zeros(20, dtype=float, device=dev)
    wp.copy(d, src_host)  # host -> device
    np.testing.assert_array_equal(d.numpy(), np.arange(20))
    e = wp.zeros(20, dtype=float, device=dev)
    wp.copy(e, d, dest_offset=5, src_offset=2, count=10)  # device -> device
    ref = np.zeros(20, dtype=np.float32)
    ref[5:15] = np.arange(2, 12)
    np.testing.assert_array_equal(e.numpy(), ref)
    back = wp.zeros(20, dtype=float)
    wp.copy(back, e, dest_offset=1, src_offset=5, count=10)  # device -> host
    np.testing.assert_array_equal(back.numpy()[1:11], np.arange(2, 12))
    m = wp.array(np.arange(12, dtype=np.float32).reshape(3, 4), dtype=float, device=dev)
    t = wp.zeros((4, 3), dtype=float, device=dev)
    wp.copy(t, m.transpose())  # strided device -> device
    np.testing.assert_array_equal(t.numpy(), np.arange(12).reshape(3, 4).T)
    s = wp.zeros(6, dtype=float, device=dev)
    wp.copy(s, wp.array(np.arange(12, dtype=np.float32), dtype=float)[::2])  # strided host -> device
    np.testing.assert_array_equal(s.numpy(), np.arange(0, 12, 2))
    if wp.get_cuda_device_count() > 1:
        other = wp.zeros(20, dtype=float, device="cuda:1")
        wp.copy(other, d)  # peer copy
        np.testing.assert_array_equal(other.numpy(), np.arange(20))


@gpu
def test_pinned_arrays(dev):
    p = wp.zeros(1000, dtype=float, device="cpu", pinned=True)
    assert p.pinned and p.device == "cpu"
    d = wp.array(np.linspace(0, 1, 1000, dtype=np.float32), dtype=float, device=dev)
    wp.copy(p, d)  # asynchronous into pinned memory
    wp.synchronize_device(dev)
    np.testing.assert_allclose(p.numpy(), np.linspace(0, 1, 1000, dtype=np.float32))
    assert wp.clone(p, device=dev).device is dev


@gpu
def test_launch_forward_matches_numpy(dev):
    rng = np.random.default_rng(1)
    x, y = rng.standard_normal(1000).astype(np.float32), rng.standard_normal(1000).astype(np.float32)
    xd, yd = wp.array(x, dtype=float, device=dev), wp.array(y, dtype=float, device=dev)
    out = wp.zeros(1000, dtype=float, device=dev)
    wp.launch(k_axpy, dim=1000, inputs=[2.0, xd, yd, out], device=dev)
    np.testing.assert_allclose(out.numpy(), 2.0 * x + y, rtol=1e-6)
    wp.launch(k_axpy, dim=1000, inputs=[-1.0, xd, yd], outputs=[out], device=dev, block_dim=64, max_blocks=3)
    np.testing.assert_allclose(out.numpy(), -x + y, rtol=1e-6)  # grid-stride with few blocks
    g = wp.zeros((7, 9), dtype=float, device=dev)
    wp.launch(k_grid, dim=(7, 9), inputs=[g], device=dev)
    np.testing.assert_array_equal(g.numpy(), np.add.outer(np.arange(7) * 10, np.arange(9)))
    v = wp.array(rng.standard_normal((50, 3)).astype(np.float32), dtype=wp.vec3, device=dev)
    s = wp.zeros(50, dtype=float, device=dev)
    wp.launch(k_vec, dim=50, inputs=[v, s], device=dev)
    np.testing.assert_allclose(s.numpy(), np.linalg.norm(v.numpy(), axis=1), rtol=1e-5)
    with wp.ScopedDevice(dev):
        wp.launch(k_add_one, dim=50, inputs=[s])  # the current device
    np.testing.assert_allclose(s.numpy(), np.linalg.norm(v.numpy(), axis=1) + 1, rtol=1e-5)


@gpu
def test_arrays_must_be_on_the_launch_device(dev):
    with pytest.raises(RuntimeError, match="is an array on device 'cpu' but the kernel is launched on 'cuda:0'"):
        wp.launch(k_add_one, dim=3, inputs=[wp.zeros(3)], device=dev)
    with pytest.raises(RuntimeError, match="launched on 'cpu'"):
        wp.launch(k_add_one, dim=3, inputs=[wp.zeros(3, device=dev)], device="cpu")
    with pytest.raises(RuntimeError, match="cuda:0"):
        wp.launch(k_add_one, dim=3, inputs=[np.zeros(3, dtype=np.float32)], device=dev)


@wp.kernel
def k_mesh_point(mesh: wp.uint64, p: wp.array(dtype=wp.vec3), d: wp.array(dtype=float)):
    i = wp.tid()
    q = wp.mesh_query_point_no_sign(mesh, p[i], 1.0e6)
    d[i] = wp.length(wp.mesh_eval_position(mesh, q.face, q.u, q.v) - p[i])


@wp.kernel
def k_take_id(handle: wp.uint64, out: wp.array(dtype=wp.uint64)):
    out[0] = handle


def _unit_triangle(device):
    pts = wp.array(np.array([[0, 0, 0], [1, 0, 0], [0, 1, 0]], dtype=np.float32), dtype=wp.vec3, device=device)
    return wp.Mesh(points=pts, indices=wp.array(np.array([0, 1, 2], dtype=np.int32), device=device))


@gpu
def test_geometry_ids_must_be_on_the_launch_device(dev):
    """A geometry id of another device raises before the launch (a GPU would fault on the address
    and poison its context; the CPU would crash), in plain, adjoint and recorded launches; the
    id of a released object is forgotten and passes as a plain integer."""
    for device in ("cpu", dev):
        mesh = _unit_triangle(device)
        p = wp.array(np.array([[0.2, 0.2, 1.0]], dtype=np.float32), dtype=wp.vec3, device=device)
        d = wp.zeros(1, dtype=float, device=device)
        wp.launch(k_mesh_point, dim=1, inputs=[mesh.id, p, d], device=device)  # its own device
        np.testing.assert_allclose(d.numpy(), [1.0], rtol=1e-6)
    cpu_mesh, gpu_mesh = _unit_triangle("cpu"), _unit_triangle(dev)
    out_gpu, out_cpu = wp.zeros(1, dtype=wp.uint64, device=dev), wp.zeros(1, dtype=wp.uint64)
    with pytest.raises(RuntimeError, match=r"k_take_id' argument 'handle' \(position 0\) is the id of a wp.Mesh on device 'cpu'"):
        wp.launch(k_take_id, dim=1, inputs=[cpu_mesh.id, out_gpu], device=dev)
    with pytest.raises(RuntimeError, match="wp.Mesh on device 'cuda:0' but the kernel is launched on 'cpu'"):
        wp.launch(k_take_id, dim=1, inputs=[gpu_mesh.id, out_cpu], device="cpu")
    with pytest.raises(RuntimeError, match="wp.Mesh on device 'cpu'"):
        wp.launch(k_take_id, dim=1, inputs=[cpu_mesh.id, out_gpu], adj_inputs=[0, None], adjoint=True, device=dev)
    cmd = wp.launch(k_take_id, dim=1, inputs=[gpu_mesh.id, out_gpu], device=dev, record_cmd=True)
    with pytest.raises(RuntimeError, match="wp.Mesh on device 'cpu'"):
        cmd.set_param_at_index(0, cpu_mesh.id)
    lo = wp.array(np.zeros((2, 3), np.float32), dtype=wp.vec3)
    others = [
        (wp.Bvh(lo, lo), "wp.Bvh"),
        (wp.HashGrid(4, 4, 4), "wp.HashGrid"),
        (wp.Volume.allocate((0, 0, 0), (7, 7, 7), voxel_size=1.0), "wp.Volume"),
    ]
    for obj, kind in others:
        with pytest.raises(RuntimeError, match=f"{kind} on device 'cpu'"):
            wp.launch(k_take_id, dim=1, inputs=[obj.id, out_gpu], device=dev)
    stale = cpu_mesh.id
    del cpu_mesh, others, obj
    wp.launch(k_take_id, dim=1, inputs=[stale, out_gpu], device=dev)  # released: just a number now
    assert int(out_gpu.numpy()[0]) == stale


def _gradient(device, x):
    xa = wp.array(x, dtype=float, device=device, requires_grad=True)
    loss = wp.zeros(1, dtype=float, device=device, requires_grad=True)
    tape = wp.Tape()
    with tape:
        wp.launch(k_square_sum, dim=len(x), inputs=[xa, loss], device=device)
    tape.backward(loss)
    return loss.numpy()[0], xa.grad.numpy()


@gpu
def test_tape_backward_matches_cpu(dev):
    x = np.random.default_rng(2).uniform(-2, 2, 300).astype(np.float32)
    loss_cpu, grad_cpu = _gradient("cpu", x)
    loss_gpu, grad_gpu = _gradient(dev, x)
    np.testing.assert_allclose(loss_gpu, loss_cpu, rtol=1e-4)
    np.testing.assert_allclose(grad_gpu, grad_cpu, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(grad_gpu, 2 * x * np.sin(x) + x * x * np.cos(x), rtol=1e-4, atol=1e-5)


@gpu
def test_explicit_adjoint_launch_and_copy_gradients(dev):
    x = wp.array(np.array([0.5, 1.0, 1.5], dtype=np.float32), dtype=float, device=dev, requires_grad=True)
    loss = wp.zeros(1, dtype=float, device=dev, requires_grad=True)
    loss.grad.fill_(1.0)
    wp.launch(k_square_sum, dim=3, inputs=[x, loss], adj_inputs=[None, None], adjoint=True, device=dev)
    xs = x.numpy()
    np.testing.assert_allclose(x.grad.numpy(), 2 * xs * np.sin(xs) + xs * xs * np.cos(xs), rtol=1e-5)
    # a recorded wp.copy sends the gradient back from the copy to its source
    a = wp.array(np.ones(3, dtype=np.float32), dtype=float, device=dev, requires_grad=True)
    b = wp.zeros(3, dtype=float, device=dev, requires_grad=True)
    tape = wp.Tape()
    with tape:
        wp.copy(b, a)
    tape.backward(grads={b: np.array([1.0, 2.0, 3.0], dtype=np.float32)})
    np.testing.assert_array_equal(a.grad.numpy(), [1.0, 2.0, 3.0])


@gpu
def test_launch_object_replay(dev):
    x = wp.zeros(16, dtype=float, device=dev)
    cmd = wp.launch(k_add_one, dim=16, inputs=[x], device=dev, record_cmd=True)
    assert isinstance(cmd, wp.Launch) and not x.numpy().any()
    for _ in range(5):
        cmd.launch()
    np.testing.assert_array_equal(x.numpy(), [5.0] * 16)
    y = wp.zeros(16, dtype=float, device=dev)
    cmd.set_param_at_index(0, y)
    cmd.set_dim(8)
    cmd.launch()
    np.testing.assert_array_equal(y.numpy(), [1.0] * 8 + [0.0] * 8)


@gpu
def test_streams_and_events(dev):
    s = wp.Stream(dev)
    assert s.device is dev and s.cuda_stream and wp.get_stream(dev) is not s
    x = wp.zeros(1 << 16, dtype=float, device=dev)
    with wp.ScopedStream(s):
        assert wp.get_stream(dev) is s
        for _ in range(3):
            wp.launch(k_add_one, dim=x.size, inputs=[x], device=dev)
        e = wp.record_event()
    wp.get_stream(dev).wait_event(e)
    wp.launch(k_add_one, dim=x.size, inputs=[x], device=dev)
    np.testing.assert_array_equal(x.numpy(), 4.0)
    start, end = wp.Event(dev, enable_timing=True), wp.Event(dev, enable_timing=True)
    s.record_event(start)
    wp.launch(k_add_one, dim=x.size, inputs=[x], device=dev, stream=s)
    s.record_event(end)
    wp.synchronize_event(end)
    assert end.is_complete and wp.get_event_elapsed_time(start, end) >= 0.0
    other = wp.Stream(dev, priority=-1)
    other.wait_stream(s)
    wp.launch(k_add_one, dim=x.size, inputs=[x], device=dev, stream=other)
    wp.synchronize_stream(other)
    assert other.is_complete
    np.testing.assert_array_equal(x.numpy(), 6.0)
    saved = wp.get_stream(dev)
    wp.set_stream(other)
    assert wp.get_stream(dev) is other
    wp.set_stream(saved)
    with pytest.raises(RuntimeError, match="enable_timing"):
        wp.get_event_elapsed_time(wp.Event(dev), wp.Event(dev))


@gpu
def test_graph_capture_and_replay(dev):
    x = wp.zeros(256, dtype=float, device=dev)
    wp.launch(k_add_one, dim=256, inputs=[x], device=dev)  # loads the module before capturing
    with wp.ScopedCapture(dev) as capture:
        wp.launch(k_add_one, dim=256, inputs=[x], device=dev)
        wp.launch(k_add_one, dim=256, inputs=[x], device=dev)
    assert isinstance(capture.graph, wp.Graph) and not capture.active
    wp.synchronize_device(dev)
    np.testing.assert_array_equal(x.numpy(), 1.0)  # capturing does not run the work
    for _ in range(3):
        wp.capture_launch(capture.graph)
    np.testing.assert_array_equal(x.numpy(), 7.0)
    wp.capture_begin(dev)
    x.zero_()
    wp.launch(k_add_one, dim=256, inputs=[x], device=dev)
    graph = wp.capture_end(dev)
    wp.capture_launch(graph)
    np.testing.assert_array_equal(x.numpy(), 1.0)
    with pytest.raises(RuntimeError, match="No graph capture"):
        wp.capture_end(dev)


@gpu
def test_captured_fills_and_uploads_replay_their_values(dev):
    import gc

    d = wp.zeros(4, dtype=wp.float64, device=dev)
    v = wp.zeros(3, dtype=wp.vec3, device=dev)
    s = wp.zeros((3, 4), dtype=float, device=dev)
    with wp.ScopedCapture(dev) as capture:
        d.fill_(10.0)
        v.fill_(wp.vec3(1.0, -2.0, 0.5))
        s[:, 1:3].assign(np.full((3, 2), 7.0, dtype=np.float32))  # rows at a pitch: a 2-D copy from the host
        d[1:3].assign(np.array([5.0, 6.0]))  # an upload from a temporary host copy
    gc.collect()  # the temporaries are gone, unless the graph keeps them
    junk = [np.full(1024, 123.0) for _ in range(64)]  # reuse freed host memory
    wp.capture_launch(capture.graph)
    np.testing.assert_array_equal(d.numpy(), [10.0, 5.0, 6.0, 10.0])
    np.testing.assert_array_equal(v.numpy(), [[1.0, -2.0, 0.5]] * 3)
    ref = np.zeros((3, 4), dtype=np.float32)
    ref[:, 1:3] = 7.0
    np.testing.assert_array_equal(s.numpy(), ref)
    del junk


@gpu
def test_kernel_errors_are_reported_at_synchronisation(dev):
    x = wp.zeros(4, dtype=float, device=dev)
    wp.launch(k_out_of_bounds, dim=4, inputs=[x], device=dev)
    with pytest.raises(IndexError, match="k_out_of_bounds"):
        wp.synchronize_device(dev)
    wp.synchronize_device(dev)  # reported once
    wp.launch(k_out_of_bounds, dim=4, inputs=[x], device=dev)
    with pytest.raises(IndexError, match="k_out_of_bounds"):
        x.numpy()  # the download waited for the only stream the launch used
    wp.synchronize_device(dev)
    old = wp.config.verify_cuda
    wp.config.verify_cuda = True
    try:
        with pytest.raises(IndexError, match="out of bounds"):
            wp.launch(k_out_of_bounds, dim=4, inputs=[x], device=dev)
    finally:
        wp.config.verify_cuda = old


@gpu
def test_cuda_array_interface_round_trip(dev):
    a = wp.array(np.arange(6, dtype=np.float32).reshape(2, 3), dtype=float, device=dev)
    desc = a.__cuda_array_interface__
    assert desc["version"] == 3 and desc["shape"] == (2, 3) and desc["typestr"] == "<f4"
    assert desc["data"] == (a.ptr, False) and desc["stream"] == (dev.stream.cuda_stream or 1)

    class Exporter:
        __cuda_array_interface__ = desc

    b = wp.array(Exporter(), device=dev)  # shares the memory
    assert b.ptr == a.ptr and b.device is dev and b.dtype is wp.float32
    wp.launch(k_add_one, dim=3, inputs=[b.flatten()[:3]], device=dev)
    np.testing.assert_array_equal(a.numpy(), [[1, 2, 3], [3, 4, 5]])
    c = wp.array(Exporter(), device="cpu")  # another device: a copy
    assert c.device == "cpu"
    np.testing.assert_array_equal(c.numpy(), a.numpy())
    with pytest.raises(AttributeError):
        _ = wp.zeros(2).__cuda_array_interface__


@gpu
def test_mempool_toggle(dev):
    saved = wp.is_mempool_enabled(dev)
    try:
        for enabled in (False, True) if wp.is_mempool_supported(dev) else (False,):
            wp.set_mempool_enabled(dev, enabled)
            a = wp.full(100, 3.0, dtype=float, device=dev)
            np.testing.assert_array_equal(a.numpy(), 3.0)
    finally:
        wp.set_mempool_enabled(dev, saved)
    if wp.is_mempool_supported(dev):
        before = wp.get_mempool_release_threshold(dev)
        wp.set_mempool_release_threshold(dev, 1 << 20)
        assert wp.get_mempool_release_threshold(dev) == 1 << 20
        wp.set_mempool_release_threshold(dev, 0.5)
        assert wp.get_mempool_release_threshold(dev) == dev.total_memory // 2
        wp.set_mempool_release_threshold(dev, before)
    with pytest.raises(ValueError, match="CUDA"):
        wp.set_mempool_release_threshold("cpu", 0)


def _torch_cuda():
    torch = pytest.importorskip("torch")
    if not torch.cuda.is_available():
        pytest.skip("torch has no CUDA")
    return torch


@gpu
def test_torch_cuda_tensors_and_streams(dev):
    torch = _torch_cuda()
    t = torch.arange(8, dtype=torch.float32, device="cuda:0")
    a = wp.from_torch(t)
    assert a.device is dev and a.ptr == t.data_ptr()
    wp.launch(k_add_one, dim=8, inputs=[a], device=dev)
    wp.synchronize_device(dev)
    assert torch.equal(t.cpu(), torch.arange(1, 9, dtype=torch.float32))
    back = wp.to_torch(a)
    assert back.device.type == "cuda" and back.data_ptr() == a.ptr
    x = torch.tensor([0.5, 1.0], device="cuda:0", requires_grad=True)
    xa = wp.from_torch(x)
    assert xa.grad is not None and xa.grad.device is dev
    ws = wp.stream_from_torch(torch.cuda.current_stream())
    assert ws.cuda_stream == torch.cuda.current_stream().cuda_stream and ws.device is dev
    ts = wp.stream_to_torch(dev)
    assert ts.cuda_stream == dev.stream.cuda_stream
    with wp.ScopedStream(ws):
        wp.launch(k_add_one, dim=8, inputs=[t], device=dev)  # a tensor passed straight in
    torch.cuda.synchronize()
    assert torch.equal(t.cpu(), torch.arange(2, 10, dtype=torch.float32))


@gpu
def test_dlpack_cuda_round_trip(dev):
    torch = _torch_cuda()
    a = wp.array(np.arange(12, dtype=np.float32).reshape(3, 4), dtype=float, device=dev)
    assert a.__dlpack_device__() == (2, 0)
    t = torch.from_dlpack(a)
    assert t.device.type == "cuda" and t.data_ptr() == a.ptr and t.shape == (3, 4)
    b = wp.from_dlpack(t)
    assert b.ptr == a.ptr and b.device is dev
    v = wp.from_dlpack(torch.zeros((4, 3), device="cuda:0"), dtype=wp.vec3)
    assert v.shape == (4,) and v.dtype is wp.vec3 and v.device is dev


@gpu
def test_jax_gpu_round_trip(dev):
    jax = pytest.importorskip("jax")
    try:
        jax.devices("gpu")
    except RuntimeError:
        pytest.skip("jax has no GPU backend")
    a = wp.array(np.arange(5, dtype=np.float32), dtype=float, device=dev)
    j = wp.to_jax(a)
    np.testing.assert_array_equal(np.asarray(j), np.arange(5))
    b = wp.from_jax(j)
    assert b.device is dev
    np.testing.assert_array_equal(b.numpy(), np.arange(5))


@gpu
@pytest.mark.parametrize("use_ptx", [True, False])
def test_aot_images_built_for_this_gpu_serve_its_launches(dev, tmp_path, monkeypatch, use_ptx):
    """compile_aot_module for the device's own arch, then load_aot_module: launches and their
    gradients run from the loaded images, with no compilation at launch."""
    import importlib

    from weft.runtime import module as wmod

    name = f"aot_kernels_{'ptx' if use_ptx else 'cubin'}"
    (tmp_path / f"{name}.py").write_text(
        textwrap.dedent(
            """
            import weft as wp

            @wp.kernel
            def cube(x: wp.array(dtype=float), y: wp.array(dtype=float)):
                i = wp.tid()
                y[i] = x[i] * x[i] * x[i]
            """
        )
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    mod = importlib.import_module(name)
    arch = dev.get_cuda_compile_arch() if use_ptx else dev.arch
    wp.compile_aot_module(mod, arch=arch, module_dir=tmp_path / "aot", use_ptx=use_ptx)
    monkeypatch.setattr(wmod.Module, "cuda_build", None)  # any compilation from here on would fail
    wp.load_aot_module(mod, device=dev, module_dir=tmp_path / "aot", use_ptx=use_ptx)
    xs = np.linspace(-1.0, 2.0, 64, dtype=np.float32)
    x = wp.array(xs, dtype=float, device=dev, requires_grad=True)
    y = wp.zeros(64, dtype=float, device=dev, requires_grad=True)
    tape = wp.Tape()
    with tape:
        wp.launch(mod.cube, dim=64, inputs=[x, y], device=dev)
    tape.backward(grads={y: wp.ones(64, dtype=float, device=dev)})
    np.testing.assert_allclose(y.numpy(), xs**3, rtol=1e-6)
    np.testing.assert_allclose(x.grad.numpy(), 3 * xs**2, rtol=1e-6)
