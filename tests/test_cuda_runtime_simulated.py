"""The GPU tests of ``test_cuda_runtime.py`` run against a simulated driver (``cuda_fake_driver``).

On a machine without a GPU this drives weft's whole CUDA runtime path (discovery, allocators,
copies, streams, events, graph capture, packed launches with device pointers, kernel-error slots,
``__cuda_array_interface__``) with "device" memory in host RAM and kernels run by their CPU entry
points. It checks the runtime's own logic, not a GPU: the real-GPU tests are the ones in
``test_cuda_runtime.py``. Skipped where a real GPU exists (the real tests run there instead) or
where cuda-python / NVRTC (needed to build the CUDA images the runtime loads) are missing.
"""

from __future__ import annotations

import gc

import numpy as np
import pytest

import weft as wp

pytest.importorskip("cuda.bindings.driver")
pytest.importorskip("cuda.bindings.nvrtc")
from weft.runtime import nvrtc as _nvrtc  # noqa: E402

if not _nvrtc.available():
    pytest.skip("no NVRTC library loads (pip install nvidia-cuda-nvrtc)", allow_module_level=True)
if wp.is_cuda_available():
    pytest.skip("a real GPU is present: test_cuda_runtime.py runs against it", allow_module_level=True)

import test_cuda_runtime as real  # noqa: E402
from cuda_fake_driver import FakeDriver  # noqa: E402

from weft.runtime import cuda_driver  # noqa: E402
from weft.runtime import device as device_mod  # noqa: E402
from weft.runtime import module as module_mod  # noqa: E402
pytestmark = pytest.mark.fixed_device("runs against its own simulated driver")



@pytest.fixture
def sim():
    """Install the simulated driver with one GPU; restore the real (GPU-less) state afterwards."""
    saved_state = list(cuda_driver._state)
    saved_probe = list(device_mod._cuda_probe)
    saved_devices = dict(device_mod._devices)
    fake = FakeDriver()
    cuda_driver._state[:] = [(fake, 1, "")]
    device_mod._cuda_probe[:] = []
    try:
        dev = device_mod.get_device("cuda:0")
        yield fake, dev
        wp.synchronize()
    finally:
        device_mod._devices.clear()
        device_mod._devices.update(saved_devices)
        device_mod._cuda_probe[:] = saved_probe
        device_mod._current = device_mod._cpu
        device_mod._cuda_current_ordinal = 0
        cuda_driver._state[:] = saved_state
        for m in module_mod._modules.values():
            for k in m.kernels:
                for inst in k._instances.values():
                    inst.binding.cuda_functions.clear()
        # Arrays of this test that die later free through whichever driver is installed then.
        # Keeping every simulated driver (and so its host "device" memory) alive means no later
        # simulated allocation can reuse one of their addresses, so such a late free can never
        # release another test's buffer: it names an unknown pointer, which the driver refuses.
        gc.collect()
        _RETIRED_DRIVERS.append(fake)


_RETIRED_DRIVERS: list = []


GPU_TESTS = [
    "test_device_properties",
    "test_set_device_and_scoped_device",
    "test_constructors_and_host_round_trips",
    "test_fill_zero_and_assign",
    "test_copies_between_devices_with_offsets",
    "test_pinned_arrays",
    "test_launch_forward_matches_numpy",
    "test_arrays_must_be_on_the_launch_device",
    "test_geometry_ids_must_be_on_the_launch_device",
    "test_tape_backward_matches_cpu",
    "test_explicit_adjoint_launch_and_copy_gradients",
    "test_launch_object_replay",
    "test_streams_and_events",
    "test_graph_capture_and_replay",
    "test_captured_fills_and_uploads_replay_their_values",
    "test_kernel_errors_are_reported_at_synchronisation",
    "test_cuda_array_interface_round_trip",
    "test_mempool_toggle",
]


@pytest.mark.parametrize("name", GPU_TESTS)
def test_gpu_test_on_simulated_driver(sim, name):
    _, dev = sim
    getattr(real, name)(dev)


def test_simulated_launches_reach_the_driver_with_device_pointers(sim):
    fake, dev = sim
    x = wp.array(np.arange(4, dtype=np.float32), dtype=float, device=dev)
    assert x.ptr in fake._buffers  # allocated by the driver, not by NumPy
    before = fake.launches
    wp.launch(real.k_add_one, dim=4, inputs=[x], device=dev)
    assert fake.launches == before + 1 and fake.loaded_images  # one cuLaunchKernel, one loaded image
    np.testing.assert_array_equal(x.numpy(), [1, 2, 3, 4])
    wp.launch(real.k_add_one, dim=0, inputs=[x], device=dev)
    assert fake.launches == before + 1  # an empty grid launches nothing


def test_graph_replay_does_not_run_during_capture_and_reports_errors(sim):
    _, dev = sim
    x = wp.zeros(4, dtype=float, device=dev)
    with wp.ScopedCapture(dev) as capture:
        wp.launch(real.k_out_of_bounds, dim=4, inputs=[x], device=dev)
    wp.synchronize()  # nothing ran yet, so nothing to report
    wp.capture_launch(capture.graph)
    with pytest.raises(IndexError, match="k_out_of_bounds"):
        wp.synchronize()


def test_frees_during_capture_are_deferred_or_graph_free_nodes(sim):
    fake, dev = sim
    before = wp.zeros(16, dtype=float, device=dev)  # allocated before the capture
    old_ptr = before.ptr
    wp.capture_begin(dev)
    a = wp.zeros(16, dtype=float, device=dev)  # stream-ordered allocation inside the capture: a graph allocation
    ptr = a.ptr
    assert ptr not in fake._buffers  # reserved by the graph, allocated when it runs
    del a  # freed inside the capture: a free node of the graph, nothing postponed
    assert not dev._deferred_frees
    del before  # memory from before the capture: freed once the capture has ended
    assert old_ptr in fake._buffers and dev._deferred_frees == [(old_ptr, True)]
    graph = wp.capture_end(dev)
    assert old_ptr not in fake._buffers and not dev._deferred_frees
    wp.capture_launch(graph)
    assert ptr not in fake._buffers  # the graph allocated and freed it


def test_graph_with_allocations_launches_repeatedly(sim):
    fake, dev = sim
    x = wp.zeros(4, dtype=float, device=dev)
    with wp.ScopedCapture(dev) as capture:
        tmp = wp.zeros(4, dtype=float, device=dev)  # allocated and freed in the graph
        wp.launch(real.k_add_one, dim=4, inputs=[tmp], device=dev)
        wp.launch(real.k_axpy, dim=4, inputs=[1.0, tmp, x, x], device=dev)
        del tmp
        kept = wp.zeros(4, dtype=float, device=dev)  # allocated in the graph, outlives the capture
        wp.copy(kept, x)
    for _ in range(3):  # AUTO_FREE_ON_LAUNCH: a launch frees what the previous one left allocated
        wp.capture_launch(capture.graph)
    np.testing.assert_array_equal(x.numpy(), 3.0)
    np.testing.assert_array_equal(kept.numpy(), 3.0)
    ptr = kept.ptr
    del kept  # a graph allocation freed outside the graph, after a launch
    assert ptr not in fake._buffers and not dev._deferred_frees
    wp.capture_launch(capture.graph)
    np.testing.assert_array_equal(x.numpy(), 4.0)


def test_simulated_graph_launch_fails_while_its_allocations_are_unfreed(sim):
    """The simulator follows cuGraphLaunch's documented rule (what AUTO_FREE_ON_LAUNCH avoids)."""
    fake, dev = sim
    handle = dev.stream.cuda_stream
    fake.cuStreamBeginCapture(handle, 0)
    _, ptr = fake.cuMemAllocAsync(64, handle)
    _, graph = fake.cuStreamEndCapture(handle)
    _, plain = fake.cuGraphInstantiate(graph, 0)
    assert fake.cuGraphLaunch(plain, handle) == (fake.CUresult.CUDA_SUCCESS,) and ptr in fake._buffers
    assert fake.cuGraphLaunch(plain, handle) == (fake.CUresult.CUDA_ERROR_INVALID_VALUE,)
    fake.cuMemFreeAsync(ptr, handle)  # freed outside the graph: it can run again
    assert fake.cuGraphLaunch(plain, handle) == (fake.CUresult.CUDA_SUCCESS,)


def test_external_capture_postpones_frees_until_its_stream_stops_capturing(sim):
    fake, dev = sim
    stream = dev.stream
    early = wp.zeros(4, dtype=float, device=dev)
    late = wp.zeros(4, dtype=float, device=dev)
    early_ptr, late_ptr = early.ptr, late.ptr
    fake.cuStreamBeginCapture(stream.cuda_stream, 0)  # begun by "other code"
    wp.capture_begin(dev, external=True)
    inside = wp.zeros(4, dtype=float, device=dev)  # a graph allocation of the external capture
    del early
    wp.capture_end(dev)  # unregistered, but the stream is still being captured
    del late, inside  # inside: a free node of the external graph; late: postponed
    assert {early_ptr, late_ptr} <= set(fake._buffers)
    assert sorted(dev._deferred_frees) == sorted([(early_ptr, True), (late_ptr, True)])
    wp.synchronize_device(dev)  # nothing may be freed yet
    assert {early_ptr, late_ptr} <= set(fake._buffers)
    _, graph = fake.cuStreamEndCapture(stream.cuda_stream)
    wp.synchronize_device(dev)  # the capture is over: the postponed frees run
    assert not dev._deferred_frees and not {early_ptr, late_ptr} & set(fake._buffers)
    _, exe = fake.cuGraphInstantiate(graph, 0)
    for _ in range(2):  # the graph frees its own allocation, so it runs again
        assert fake.cuGraphLaunch(exe, stream.cuda_stream) == (fake.CUresult.CUDA_SUCCESS,)


def test_captures_are_found_through_any_stream_object_of_the_handle(sim):
    _, dev = sim
    x = wp.zeros(4, dtype=float, device=dev)
    wp.launch(real.k_add_one, dim=4, inputs=[x], device=dev)  # loaded before the capture
    wp.synchronize_device(dev)
    stream = wp.Stream(dev)
    alias = wp.Stream(dev, cuda_stream=stream.cuda_stream)
    wp.capture_begin(stream=stream)
    with pytest.raises(RuntimeError, match="already active"):
        wp.capture_begin(stream=alias)
    wp.launch(real.k_out_of_bounds, dim=4, inputs=[x], device=dev, stream=alias)
    assert not dev._errors.insts  # the record came from the capture, not from the ring
    graph = wp.capture_end(stream=alias)
    inst = next(iter(real.k_out_of_bounds._instances.values()))
    assert inst.binding.cuda_functions[dev.ordinal][0] in graph.modules
    wp.capture_launch(graph, stream=stream)
    with pytest.raises(IndexError, match="k_out_of_bounds"):
        wp.synchronize_device(dev)


def test_functions_are_looked_up_in_the_device_context(sim):
    fake, dev = sim
    x = wp.zeros(4, dtype=float, device=dev)
    fake.cuCtxSetCurrent(0)  # no context current (as after other code restored its own)
    wp.launch(real.k_axpy, dim=4, inputs=[2.0, x, x, x], device=dev)  # loads the module, looks up its functions
    inst = next(iter(real.k_axpy._instances.values()))
    assert inst.binding.cuda_functions[dev.ordinal][1].name.endswith("_cuda_forward")


def test_error_records_are_zeroed_on_the_launch_stream(sim):
    fake, dev = sim
    x = wp.zeros(4, dtype=float, device=dev)
    other = wp.Stream(dev)
    assert dev._errors is None
    wp.launch(real.k_add_one, dim=4, inputs=[x], device=dev, stream=other)
    assert (dev._errors.ptr, other.cuda_stream) in fake.memsets


def test_interchange_stream_handles_for_the_legacy_default_stream(sim):
    fake, dev = sim
    legacy = wp.Stream(dev, cuda_stream=0)
    a = wp.zeros(4, dtype=float, device=dev)
    with wp.ScopedStream(legacy):
        assert a.__cuda_array_interface__["stream"] == 1  # never 0 (version 3)
    waits = []
    real_wait = fake.cuStreamWaitEvent
    fake.cuStreamWaitEvent = lambda s, e, f: waits.append(int(s)) or real_wait(s, e, f)
    a.__dlpack__()  # no stream: the consumer is on the legacy default stream
    a.__dlpack__(stream=-1)  # -1: no synchronisation
    assert waits == [1]


def test_error_ring_wraps_by_synchronising(sim):
    _, dev = sim
    x = wp.zeros(8, dtype=float, device=dev)
    for _ in range(1100):  # more launches than the ring holds
        wp.launch(real.k_add_one, dim=8, inputs=[x], device=dev)
    np.testing.assert_array_equal(x.numpy(), 1100.0)
    assert len(dev._errors.insts) < 1024


def test_dlpack_cuda_export_import_round_trip(sim):
    """A kDLCUDA capsule made by weft is consumed by weft's own importer (zero-copy both ways)."""
    from weft.interop import cuda_interface as ci

    _, dev = sim
    a = wp.array(np.arange(6, dtype=np.float32).reshape(2, 3), dtype=float, device=dev)

    class Producer:
        def __dlpack__(self, stream=None):
            return a.__dlpack__(stream=stream)

        def __dlpack_device__(self):
            return a.__dlpack_device__()

    before = len(ci._exported)
    b = wp.from_dlpack(Producer())
    assert b.device is dev and b.ptr == a.ptr and b.shape == (2, 3) and b.dtype is wp.float32
    assert len(ci._exported) == before + 1  # the consumer holds the tensor
    np.testing.assert_array_equal(b.numpy(), np.arange(6).reshape(2, 3))
    v = wp.from_dlpack(Producer(), dtype=wp.vec3)
    assert v.shape == (2,) and v.dtype is wp.vec3
    del b, v
    import gc

    gc.collect()
    assert len(ci._exported) == before  # the deleter ran when the weft arrays went away


def test_array_utilities_write_gpu_outputs(sim):
    _, dev = sim
    x = np.array([3, 1, 2, 5, 4], dtype=np.int32)
    a = wp.array(x, dtype=wp.int32, device=dev)
    out = wp.zeros(1, dtype=float, device=dev)
    wp.utils.array_sum(wp.array(x.astype(np.float32), dtype=float, device=dev), out=out)  # float32 / float64, as Warp
    assert out.numpy()[0] == x.sum()
    scan = wp.zeros(5, dtype=wp.int32, device=dev)
    wp.utils.array_scan(a, scan, inclusive=False)
    np.testing.assert_array_equal(scan.numpy(), np.concatenate(([0], np.cumsum(x)[:-1])))
    keys = wp.array(np.concatenate((x, x)), dtype=wp.int32, device=dev)  # Warp's 2 * count storage
    values = wp.array(np.arange(10, dtype=np.int32), dtype=wp.int32, device=dev)
    wp.utils.radix_sort_pairs(keys, values, 5)
    np.testing.assert_array_equal(keys.numpy()[:5], np.sort(x))
    np.testing.assert_array_equal(values.numpy()[:5], np.argsort(x, kind="stable"))
    f = wp.zeros(5, dtype=float, device=dev)
    wp.utils.array_cast(a, f)
    np.testing.assert_array_equal(f.numpy(), x.astype(np.float32))


def test_jacobians_of_gpu_arrays(sim):
    _, dev = sim
    x = wp.array(np.array([0.3, -0.7, 1.1], dtype=np.float32), dtype=float, device=dev, requires_grad=True)
    loss = wp.zeros(1, dtype=float, device=dev, requires_grad=True)
    kwargs = {"dim": 3, "inputs": [x], "outputs": [loss], "device": dev}
    jac = wp.autograd.jacobian(real.k_square_sum, **kwargs)
    jac_fd = wp.autograd.jacobian_fd(real.k_square_sum, **kwargs)
    xs = x.numpy().astype(np.float64)
    expected = 2 * xs * np.sin(xs) + xs * xs * np.cos(xs)
    np.testing.assert_allclose(jac[(0, 0)].numpy().reshape(-1), expected, rtol=1e-4)
    np.testing.assert_allclose(jac_fd[(0, 0)].numpy().reshape(-1), expected, rtol=2e-2, atol=2e-3)
    np.testing.assert_array_equal(x.numpy(), np.array([0.3, -0.7, 1.1], dtype=np.float32))  # restored


def test_external_capture_is_only_registered(sim):
    fake, dev = sim
    x = wp.zeros(4, dtype=float, device=dev)
    stream = dev.stream
    fake.cuStreamBeginCapture(stream.cuda_stream, 0)  # begun by "other code"
    wp.capture_begin(dev, external=True)
    wp.launch(real.k_add_one, dim=4, inputs=[x], device=dev)  # no error record: a null context
    assert wp.capture_end(dev) is None  # the code that began the capture ends it
    _, ops = fake.cuStreamEndCapture(stream.cuda_stream)
    assert len(ops) == 1
    for op in ops:
        op()
    np.testing.assert_array_equal(x.numpy(), 1.0)


def test_repeated_gpu_launches_reuse_the_argument_struct(sim):
    _, dev = sim
    x = wp.zeros(4, dtype=float, device=dev)
    y = wp.zeros(4, dtype=float, device=dev)
    inst = wp.launch(real.k_axpy, dim=4, inputs=[1.0, x, x, y], device=dev, record_cmd=True)._inst
    launcher = inst.binding.launcher
    wp.launch(real.k_axpy, dim=4, inputs=[1.0, x, x, y], device=dev)
    first = launcher._cached[dev.ordinal][1]
    wp.launch(real.k_axpy, dim=4, inputs=[1.0, x, x, y], device=dev)
    assert launcher._cached[dev.ordinal][1] is first  # same arguments: the struct is reused
    x.fill_(2.0)
    wp.launch(real.k_axpy, dim=4, inputs=[3.0, x, x, y], device=dev)  # a new scalar: a new struct
    assert launcher._cached[dev.ordinal][1] is not first
    np.testing.assert_array_equal(y.numpy(), 8.0)
    x.requires_grad = True  # a new descriptor (now with a gradient): not the cached one
    wp.launch(real.k_axpy, dim=4, inputs=[1.0, x, x, y], device=dev)
    np.testing.assert_array_equal(y.numpy(), 4.0)


def test_row_strided_copies_use_one_2d_copy(sim):
    fake, dev = sim
    ref = np.arange(48, dtype=np.float32).reshape(6, 8)
    a = wp.array(ref, dtype=float, device=dev)
    before = fake.copies_2d
    np.testing.assert_array_equal(a[1:5, 2:6].numpy(), ref[1:5, 2:6])  # rows of 4 floats, pitch 32
    np.testing.assert_array_equal(a[:, ::2].numpy(), ref[:, ::2])  # single elements, pitch 8
    np.testing.assert_array_equal(a[::2, ::2].numpy(), ref[::2, ::2])  # no single pitch: through the host
    v = wp.array(np.arange(30, dtype=np.float32).reshape(10, 3), dtype=wp.vec3, device=dev)
    np.testing.assert_array_equal(v[1::3].numpy(), np.arange(30).reshape(10, 3)[1::3])
    a[2:4, 1:7].assign(np.full((2, 6), -1.0, dtype=np.float32))  # upload without touching the gaps
    expected = ref.copy()
    expected[2:4, 1:7] = -1.0
    np.testing.assert_array_equal(a.numpy(), expected)
    b = wp.zeros((4, 4), dtype=float, device=dev)
    wp.copy(b, a[1:5, 2:6])  # device -> device
    np.testing.assert_array_equal(b.numpy(), expected[1:5, 2:6])
    h = wp.zeros(3, dtype=float)
    wp.copy(h, a[0], dest_offset=0, src_offset=0, count=3)  # contiguous: a plain copy
    c = wp.zeros(8, dtype=float, device=dev)
    wp.copy(c, wp.array(np.arange(16, dtype=np.float32), dtype=float)[::2], dest_offset=2, src_offset=1, count=5)
    np.testing.assert_array_equal(c.numpy(), [0, 0, 2, 4, 6, 8, 10, 0])  # strided host -> device range
    assert fake.copies_2d - before == 6
    t = a.transpose()  # not rows: through the host
    np.testing.assert_array_equal(t.numpy(), expected.T)
    assert fake.copies_2d - before == 6


def test_graph_keeps_its_kernel_modules(sim):
    _, dev = sim
    x = wp.zeros(4, dtype=float, device=dev)
    wp.launch(real.k_add_one, dim=4, inputs=[x], device=dev)
    with wp.ScopedCapture(dev) as capture:
        wp.launch(real.k_add_one, dim=4, inputs=[x], device=dev)
    inst = next(iter(real.k_add_one._instances.values()))
    assert inst.binding.cuda_functions[dev.ordinal][0] in capture.graph.modules


def test_download_reports_errors_only_when_its_stream_ran_every_launch(sim):
    _, dev = sim
    x = wp.zeros(4, dtype=float, device=dev)
    other = wp.Stream(dev)
    wp.launch(real.k_out_of_bounds, dim=4, inputs=[x], device=dev)
    wp.launch(real.k_add_one, dim=4, inputs=[x], device=dev, stream=other)
    x.numpy()  # another stream also ran a launch: left for the device synchronisation
    with pytest.raises(IndexError, match="k_out_of_bounds"):
        wp.synchronize_device(dev)
    x.numpy()  # nothing pending


def test_exit_leaves_driver_resources_to_the_process_end(sim):
    """Once the interpreter exits (cuda_driver.mark_exiting, run by the atexit hook after the
    devices were synchronised), dropping arrays, streams and modules makes no driver call: the
    interpreter's teardown order must not decide what the driver sees."""
    fake, dev = sim
    a = wp.zeros(64, dtype=float, device=dev)
    stream = wp.Stream(dev)
    ptr = a.ptr
    try:
        cuda_driver.mark_exiting()
        del a, stream
        gc.collect()
        assert ptr in fake._buffers  # not freed: the process's end reclaims it
    finally:
        cuda_driver._exiting[0] = False


def test_exit_hook_synchronises_then_marks_exiting(sim):
    from weft.runtime import cuda

    fake, dev = sim
    x = wp.zeros(4, dtype=float, device=dev)
    wp.launch(real.k_add_one, dim=4, inputs=[x], device=dev)
    try:
        cuda._at_exit([dev])
        assert cuda_driver.exiting()
    finally:
        cuda_driver._exiting[0] = False
    np.testing.assert_array_equal(x.numpy(), [1.0] * 4)


def test_loaded_libraries_are_pinned():
    _nvrtc.version()  # loads NVRTC (and pins it)
    path = cuda_driver.pin_loaded_library("libnvrtc.so")
    assert "libnvrtc.so" in path
    assert cuda_driver.pin_loaded_library("libno_such_library_here.so") is None


@wp.kernel(launch_bounds=64)
def k_bounded_add_one(x: wp.array(dtype=float)):
    i = wp.tid()
    x[i] = x[i] + 1.0


def test_launch_bounds_reach_the_cuda_entry_and_cap_block_dim(sim):
    _, dev = sim
    from weft.codegen.emit_cuda import CUDARenderer

    inst = k_bounded_add_one.default_instance()
    assert "__global__ __launch_bounds__(64) void" in CUDARenderer().render_kernel(inst)
    x = wp.zeros(100, dtype=float, device=dev)
    wp.launch(k_bounded_add_one, dim=100, inputs=[x], device=dev, block_dim=64)
    np.testing.assert_array_equal(x.numpy(), 1.0)
    with pytest.raises(ValueError, match="launch_bounds=64"):
        wp.launch(k_bounded_add_one, dim=100, inputs=[x], device=dev, block_dim=128)


@wp.kernel(cluster_dim=4)
def k_clustered_add_one(x: wp.array(dtype=float)):
    i = wp.tid()
    x[i] = x[i] + 1.0


def test_clustered_launches_use_whole_clusters(sim):
    fake, dev = sim
    grids = []
    launch = fake.cuLaunchKernel

    def recording(f, gx, *rest):
        grids.append(gx)
        return launch(f, gx, *rest)

    fake.cuLaunchKernel = recording
    x = wp.zeros(1000, dtype=float, device=dev)
    wp.launch(k_clustered_add_one, dim=1000, inputs=[x], device=dev, block_dim=64)  # 16 blocks: 4 clusters
    wp.launch(k_clustered_add_one, dim=1000, inputs=[x], device=dev, block_dim=128)  # 8 blocks: 2 clusters
    wp.launch(k_clustered_add_one, dim=1000, inputs=[x], device=dev, block_dim=256)  # 4 blocks: 1 cluster
    wp.launch(k_clustered_add_one, dim=100, inputs=[x], device=dev, block_dim=64)  # 2 blocks, rounded up
    wp.launch(k_bounded_add_one, dim=100, inputs=[x], device=dev, block_dim=64)  # unclustered: 2 blocks
    assert grids == [16, 8, 4, 4, 2]
    expected = np.full(1000, 3.0)
    expected[:100] += 2.0
    np.testing.assert_array_equal(x.numpy(), expected)  # the extra blocks did nothing


@wp.kernel(module="unique", module_options={"deterministic": wp.DeterministicMode.RUN_TO_RUN})
def k_deterministic_sum(x: wp.array(dtype=float), total: wp.array(dtype=float)):
    wp.atomic_add(total, 0, x[wp.tid()])


def test_deterministic_launches_run_their_tasks_on_one_thread(sim):
    fake, dev = sim
    shapes = []
    launch = fake.cuLaunchKernel

    def recording(f, gx, gy, gz, bx, *rest):
        shapes.append((gx, bx))
        return launch(f, gx, gy, gz, bx, *rest)

    fake.cuLaunchKernel = recording
    x = wp.array(np.arange(1000, dtype=np.float32), device=dev)
    total = wp.zeros(1, dtype=float, device=dev)
    wp.launch(k_deterministic_sum, dim=1000, inputs=[x, total], device=dev)  # float atomics: in task order
    wp.launch(k_clustered_add_one, dim=1000, inputs=[x], device=dev, block_dim=256)  # no atomics: the whole grid
    assert shapes == [(1, 1), (4, 256)]
    assert total.numpy()[0] == float(np.arange(1000).sum())


def test_driver_and_toolkit_versions(sim):
    assert wp.get_cuda_driver_version() == (12, 8)  # the simulated driver reports 12080
    major, minor = wp.get_cuda_toolkit_version()  # NVRTC, which this module requires
    assert major >= 11 and minor >= 0


def test_map_cuda_device_renames_the_device_of_a_primary_context(sim):
    fake, dev = sim
    x = wp.array(np.arange(4, dtype=np.float32), device=dev)
    wp.set_device(dev)  # its primary context is now current
    try:
        mapped = wp.map_cuda_device("sim_gpu")
        assert mapped is dev and dev.alias == "sim_gpu" and str(x.device) == "sim_gpu"
        assert wp.get_device("sim_gpu") is dev and wp.map_cuda_device("sim_gpu") is dev  # twice: no-op
        with pytest.raises(RuntimeError, match="does not exist"):
            wp.get_device("cuda:0")
        assert wp.map_cuda_device("by_handle", context=dev.context) is dev
        wp.launch(real.k_axpy, dim=4, inputs=[2.0, x, x, x], device="by_handle")  # y = 2x + x
        np.testing.assert_array_equal(x.numpy(), 3 * np.arange(4, dtype=np.float32))

        with pytest.raises(RuntimeError, match="not the primary context"):
            wp.map_cuda_device("other", context=0xD000)
        fake.cuCtxSetCurrent(0)
        with pytest.raises(RuntimeError, match="no CUDA context is current"):
            wp.map_cuda_device("none")

        wp.unmap_cuda_device("by_handle")
        assert wp.get_device() == "cpu" and dev not in wp.get_cuda_devices()
        with pytest.raises(ValueError, match="Unknown device"):
            wp.get_device("by_handle")
        with pytest.raises(RuntimeError, match="no CUDA device has this alias"):
            wp.unmap_cuda_device("by_handle")
    finally:
        wp.set_device("cpu")
