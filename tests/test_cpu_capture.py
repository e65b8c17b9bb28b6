"""Graph capture on the CPU (weft/runtime/cpu_capture.py): work issued inside ``wp.ScopedCapture()``
on the CPU is recorded, not run, and ``wp.capture_launch`` replays it in order — kernel launches
(forward and adjoint, ``wp.Launch`` replays), copies and fills; a graph survives its module being
unloaded; captures do not overlap on one device."""

import numpy as np
import pytest

import weft as wp

F64 = wp.float64


@wp.kernel
def k_add(a: wp.array(dtype=F64), s: F64):
    i = wp.tid()
    a[i] = a[i] + s


@wp.kernel
def k_square(x: wp.array(dtype=F64), y: wp.array(dtype=F64)):
    i = wp.tid()
    y[i] = x[i] * x[i]


def test_captured_work_runs_only_when_the_graph_is_launched():
    a, b = wp.zeros(4, dtype=F64), wp.zeros(4, dtype=F64)
    with wp.ScopedCapture() as capture:
        wp.launch(k_add, 4, inputs=[a, 1.0])
        wp.launch(k_add, 4, inputs=[a, 2.0])
        wp.copy(b, a)
        a.fill_(10.0)
    assert not a.numpy().any() and not b.numpy().any()  # recorded, not run
    wp.capture_launch(capture.graph)
    np.testing.assert_array_equal(b.numpy(), np.full(4, 3.0))  # the copy saw both adds, in order
    np.testing.assert_array_equal(a.numpy(), np.full(4, 10.0))
    wp.capture_launch(capture.graph)
    np.testing.assert_array_equal(b.numpy(), np.full(4, 13.0))


@pytest.mark.fixed_device("captures on the CPU by name")
def test_begin_and_end_calls_and_nested_replays():
    a = wp.zeros(2, dtype=F64)
    wp.capture_begin(device="cpu")
    with pytest.raises(RuntimeError, match="already active"):
        wp.capture_begin(device="cpu")
    wp.launch(k_add, 2, inputs=[a, 1.0])
    graph = wp.capture_end(device="cpu")
    with pytest.raises(RuntimeError, match="No graph capture is active"):
        wp.capture_end(device="cpu")
    with wp.ScopedCapture() as outer:
        wp.capture_launch(graph)  # a replay inside a capture is recorded too
        wp.capture_launch(graph)
    assert not a.numpy().any()
    wp.capture_launch(outer.graph)
    np.testing.assert_array_equal(a.numpy(), [2.0, 2.0])


def test_a_captured_backward_pass_accumulates_at_every_replay():
    x = wp.array([1.0, 2.0, 3.0], dtype=F64, requires_grad=True)
    y = wp.zeros(3, dtype=F64, requires_grad=True)
    tape = wp.Tape()
    with tape:
        wp.launch(k_square, 3, inputs=[x, y])
    with wp.ScopedCapture() as capture:
        tape.backward(grads={y: wp.ones(3, dtype=F64)})
    assert not x.grad.numpy().any()
    wp.capture_launch(capture.graph)
    np.testing.assert_allclose(x.grad.numpy(), [2.0, 4.0, 6.0])
    y.grad.fill_(1.0)
    wp.capture_launch(capture.graph)
    np.testing.assert_allclose(x.grad.numpy(), [4.0, 8.0, 12.0])


def test_a_graph_keeps_its_code_when_the_module_is_unloaded():
    a = wp.zeros(1, dtype=F64)
    with wp.ScopedCapture() as capture:
        wp.launch(k_add, 1, inputs=[a, 42.0])
    k_add.module.unload()
    wp.capture_launch(capture.graph)
    assert a.numpy()[0] == 42.0
    wp.launch(k_add, 1, inputs=[a, 1.0])  # the module loads again at its next launch
    assert a.numpy()[0] == 43.0


@pytest.mark.fixed_device("captures on the CPU by name")
def test_allocations_inside_a_cpu_capture_and_the_capability_queries():
    import weft.context as context
    from weft.runtime.graph import is_capture_allocation_supported

    assert context.Device is wp.Device and context.get_device is wp.get_device
    assert is_capture_allocation_supported("cpu") and context._is_graph_capture_allocation_supported("cpu")
    assert wp.is_conditional_graph_supported() is False  # weft's graphs hold straight-line work
    out = wp.zeros(3, dtype=F64)
    with wp.ScopedCapture(device="cpu") as capture:
        scratch = wp.zeros(3, dtype=F64)  # allocated while recording, used by the replays
        wp.launch(k_add, 3, inputs=[scratch, 2.0])
        wp.launch(k_square, 3, inputs=[scratch, out])
    assert not out.numpy().any()
    wp.capture_launch(capture.graph)
    np.testing.assert_array_equal(out.numpy(), [4.0, 4.0, 4.0])
    wp.capture_launch(capture.graph)
    np.testing.assert_array_equal(out.numpy(), [4.0, 4.0, 4.0])  # the zeroing is part of the graph, as on a GPU
