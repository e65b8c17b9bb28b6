"""``wp.Launch``: launches recorded with ``record_cmd=True`` or built by hand, replayed and
re-parameterised (weft/runtime/launch_object.py).

Covered: no work until ``launch()``; ``set_dim``, ``set_param_at_index`` / ``_by_name`` /
``set_params`` and their ``_from_ctype(s)`` variants (Warp's signatures); bad parameters raise
and leave the launch usable; adjoint launches keep their flag and accumulate on every replay;
hand-built forward and adjoint launches; replays are not recorded on a tape; the kept launch
context is reset between replays (errors, the one-thread flag); arrays stay alive; a replay
re-packs nothing, and ``set_param_*`` re-packs only its own argument; stale globals rebuild.

All kernels are at module level so one C++ build covers them.
"""

import ctypes
import gc
import typing

import numpy as np
import pytest

import weft as wp
from weft.runtime import launch as launch_module

F64 = wp.float64
A = wp.array(dtype=wp.float64)


@wp.kernel
def k_scaled_square(x: A, s: F64, y: A):
    i = wp.tid()
    y[i] = x[i] * x[i] * s


@wp.kernel
def k_count(acc: A):
    i = wp.tid()  # noqa: F841
    wp.atomic_add(acc, 0, F64(1.0))


@wp.kernel
def k_index(x: A, k: int, out: A):
    out[0] = x[k]


@wp.kernel
def k_generic(x: wp.array(dtype=typing.Any), y: wp.array(dtype=typing.Any)):
    i = wp.tid()
    y[i] = x[i] + x[i]


@wp.kernel
def k_2d(x: wp.array2d(dtype=F64)):
    i, j = wp.tid()
    x[i, j] = F64(i * 10 + j)


@wp.struct
class Params:
    scale: F64
    out: A


@wp.kernel
def k_struct(p: Params, x: A):
    i = wp.tid()
    p.out[i] = p.scale * x[i]


@wp.kernel
def k_vec(v: wp.vec3d, out: A):
    out[0] = v[0] + F64(2.0) * v[1] + F64(3.0) * v[2]


@wp.kernel(enable_backward=False)
def k_no_backward(x: A, y: A):
    i = wp.tid()
    y[i] = x[i]


G_FACTOR = 2.0


@wp.kernel
def k_global(y: A):
    i = wp.tid()
    y[i] = F64(G_FACTOR)


def arr(values):
    return wp.array(np.asarray(values, dtype=np.float64), dtype=F64, requires_grad=True)


# ---------------------------------------------------------------------------------------------
# recording and replaying forward launches
# ---------------------------------------------------------------------------------------------


def test_record_cmd_does_no_work_until_launch():
    x, y = arr([1.0, 2.0, 3.0]), arr([0.0, 0.0, 0.0])
    cmd = wp.launch(k_scaled_square, dim=3, inputs=[x, 2.0], outputs=[y], record_cmd=True)
    assert isinstance(cmd, wp.Launch) and cmd.adjoint is False
    np.testing.assert_array_equal(y.numpy(), [0.0, 0.0, 0.0])
    cmd.launch()
    np.testing.assert_array_equal(y.numpy(), [2.0, 8.0, 18.0])
    x.assign([2.0, 2.0, 2.0])  # a replay reads the arrays' current contents
    cmd.launch()
    np.testing.assert_array_equal(y.numpy(), [8.0, 8.0, 8.0])


def test_set_dim_and_params():
    x, y = arr([1.0, 2.0, 3.0]), arr([0.0, 0.0, 0.0])
    cmd = wp.launch(k_scaled_square, dim=3, inputs=[x, 2.0, y], record_cmd=True)
    cmd.set_param_at_index(1, 3.0)
    cmd.launch()
    np.testing.assert_array_equal(y.numpy(), [3.0, 12.0, 27.0])
    cmd.set_param_by_name("s", 1.0)
    cmd.set_dim(2)
    y.zero_()
    cmd.launch()
    np.testing.assert_array_equal(y.numpy(), [1.0, 4.0, 0.0])
    x2, y2 = arr([4.0, 5.0, 6.0]), arr([0.0, 0.0, 0.0])
    cmd.set_params([x2, 0.5, y2])
    cmd.set_dim((3,))
    cmd.launch()
    np.testing.assert_array_equal(y2.numpy(), [8.0, 12.5, 18.0])
    np.testing.assert_array_equal(y.numpy(), [1.0, 4.0, 0.0])  # the old output is left alone
    cmd.set_param_at_index(-1, y)  # Python-style negative index: the last parameter
    cmd.launch()
    np.testing.assert_array_equal(y.numpy(), [8.0, 12.5, 18.0])


def test_set_params_from_ctypes():
    x, y = arr([1.0, 2.0, 3.0]), arr([0.0, 0.0, 0.0])
    cmd = wp.launch(k_scaled_square, dim=3, inputs=[x, 1.0, y], record_cmd=True)
    cmd.set_param_at_index_from_ctype(1, 10.0)
    cmd.launch()
    np.testing.assert_array_equal(y.numpy(), [10.0, 40.0, 90.0])
    cmd.set_param_at_index_from_ctype(1, ctypes.c_double(0.5))
    cmd.launch()
    np.testing.assert_array_equal(y.numpy(), [0.5, 2.0, 4.5])
    z = arr([0.0, 0.0, 0.0])
    cmd.set_param_by_name_from_ctype("y", z.__ctype__())
    cmd.launch()
    np.testing.assert_array_equal(z.numpy(), [0.5, 2.0, 4.5])
    cmd.set_params_from_ctypes([y.__ctype__(), 1.0, z.__ctype__()])  # reads the old y
    cmd.launch()
    np.testing.assert_array_equal(z.numpy(), [0.25, 4.0, 20.25])


def test_vector_and_struct_params():
    out = wp.zeros(1, dtype=F64)
    cmd = wp.launch(k_vec, dim=1, inputs=[wp.vec3d(1.0, 1.0, 1.0), out], record_cmd=True)
    cmd.launch()
    assert out.numpy()[0] == 6.0
    cmd.set_param_by_name("v", (1.0, 0.0, 2.0))  # converted like wp.launch converts it
    cmd.launch()
    assert out.numpy()[0] == 7.0
    cmd.set_param_at_index_from_ctype(0, wp.vec3d(0.0, 1.0, 0.0))
    cmd.launch()
    assert out.numpy()[0] == 2.0

    p = Params()
    p.scale = 3.0
    p.out = wp.zeros(2, dtype=F64)
    x = arr([1.0, 2.0])
    cmd = wp.launch(k_struct, dim=2, inputs=[p, x], record_cmd=True)
    cmd.launch()
    np.testing.assert_array_equal(p.out.numpy(), [3.0, 6.0])
    q = Params()
    q.scale = -1.0
    q.out = wp.zeros(2, dtype=F64)
    cmd.set_param_by_name("p", q)
    cmd.launch()
    np.testing.assert_array_equal(q.out.numpy(), [-1.0, -2.0])
    q.scale = 5.0  # a struct argument is live, as in Warp: its fields are read at each launch
    cmd.launch()
    np.testing.assert_array_equal(q.out.numpy(), [5.0, 10.0])
    cmd.set_param_at_index_from_ctype(0, p.__ctype__())  # a ctypes snapshot is not live
    p.scale = 100.0
    cmd.launch()
    np.testing.assert_array_equal(p.out.numpy(), [3.0, 6.0])


def test_bad_params_raise_and_keep_the_old_value():
    x, y = arr([1.0, 2.0]), arr([0.0, 0.0])
    cmd = wp.launch(k_scaled_square, dim=2, inputs=[x, 1.0, y], record_cmd=True)
    with pytest.raises(ValueError, match="Argument 'nope' not found in kernel"):
        cmd.set_param_by_name("nope", 1.0)
    with pytest.raises(TypeError, match="argument 's'"):
        cmd.set_param_at_index(1, "not a number")
    with pytest.raises(TypeError, match="argument 'x'"):
        cmd.set_param_at_index(0, wp.zeros(2, dtype=wp.float32))
    with pytest.raises(IndexError):
        cmd.set_param_at_index(3, 1.0)
    with pytest.raises(RuntimeError, match="no adjoint parameters"):
        cmd.set_param_at_index(0, x, adjoint=True)
    with pytest.raises(ValueError):
        cmd.set_dim(-1)
    cmd.launch()  # still the launch it was
    np.testing.assert_array_equal(y.numpy(), [1.0, 4.0])


def test_set_dim_checks_the_kernel_dimensionality():
    x = wp.zeros((2, 3), dtype=F64)
    cmd = wp.launch(k_2d, dim=(2, 3), inputs=[x], record_cmd=True)
    cmd.launch()
    np.testing.assert_array_equal(x.numpy(), [[0, 1, 2], [10, 11, 12]])
    with pytest.raises(ValueError, match="2 indices"):
        cmd.set_dim(6)
    x.zero_()
    cmd.set_dim((1, 2))
    cmd.launch()
    np.testing.assert_array_equal(x.numpy(), [[0, 1, 0], [0, 0, 0]])


def test_generic_kernel():
    x, y = wp.array([1.0, 2.0], dtype=wp.float32), wp.zeros(2, dtype=wp.float32)
    cmd = wp.launch(k_generic, dim=2, inputs=[x, y], record_cmd=True)
    cmd.launch()
    np.testing.assert_array_equal(y.numpy(), [2.0, 4.0])
    with pytest.raises(TypeError, match="generic"):
        wp.Launch(k_generic, wp.get_device())
    h = wp.Launch(k_generic, wp.get_device(), params=[x, y])  # types inferred from the params
    h.set_dim(1)
    y.zero_()
    h.launch()
    np.testing.assert_array_equal(y.numpy(), [2.0, 0.0])


def test_replay_is_not_recorded_on_a_tape():
    x, y = arr([1.0, 2.0]), arr([0.0, 0.0])
    tape = wp.Tape()
    with tape:
        cmd = wp.launch(k_scaled_square, dim=2, inputs=[x, 1.0, y], record_cmd=True)
        cmd.launch()
    assert len(tape.launches) == 0
    np.testing.assert_array_equal(y.numpy(), [1.0, 4.0])


# ---------------------------------------------------------------------------------------------
# adjoint launches
# ---------------------------------------------------------------------------------------------


def test_recorded_adjoint_launch_keeps_its_flag_and_accumulates_on_every_replay():
    x, y = arr([1.0, 2.0]), arr([0.0, 0.0])
    xa = wp.zeros(2, dtype=F64)
    ya = wp.array([1.0, 10.0], dtype=F64)
    cmd = wp.launch(
        k_scaled_square,
        dim=2,
        inputs=[x, 3.0],
        outputs=[y],
        adj_inputs=[xa, 0.0],
        adj_outputs=[ya],
        adjoint=True,
        record_cmd=True,
    )
    assert cmd.adjoint is True
    np.testing.assert_array_equal(xa.numpy(), [0.0, 0.0])  # nothing ran yet
    cmd.launch()
    np.testing.assert_array_equal(xa.numpy(), [6.0, 120.0])  # d(3 x^2)/dx * ya
    cmd.launch()
    np.testing.assert_array_equal(xa.numpy(), [12.0, 240.0])  # the adjoint ran again
    np.testing.assert_array_equal(ya.numpy(), [1.0, 10.0])  # a separate adjoint is an input: kept
    np.testing.assert_array_equal(y.numpy(), [0.0, 0.0])  # the forward never ran
    np.testing.assert_array_equal(x.grad.numpy(), [0.0, 0.0])  # the given adjoints were used

    xb = wp.zeros(2, dtype=F64)
    cmd.set_param_at_index(0, xb, adjoint=True)
    cmd.set_param_by_name("s", 1.0)
    cmd.launch()
    np.testing.assert_array_equal(xb.numpy(), [2.0, 40.0])
    np.testing.assert_array_equal(xa.numpy(), [12.0, 240.0])


def test_adjoint_launch_with_none_uses_the_arrays_own_gradients():
    x, y = arr([1.0, 2.0]), arr([0.0, 0.0])
    cmd = wp.launch(
        k_scaled_square,
        dim=2,
        inputs=[x, 1.0, y],
        adj_inputs=[None, None, None],
        adjoint=True,
        record_cmd=True,
    )
    y.grad.fill_(1.0)
    cmd.launch()
    np.testing.assert_array_equal(x.grad.numpy(), [2.0, 4.0])
    np.testing.assert_array_equal(y.grad.numpy(), [0.0, 0.0])  # y's own gradient is consumed


def test_hand_built_adjoint_launch():
    x, y = arr([1.0, 2.0, 3.0]), arr([0.0, 0.0, 0.0])
    cmd = wp.Launch(k_scaled_square, wp.get_device(), adjoint=True)
    assert cmd.adjoint is True
    cmd.launch()  # a zero-size grid until set_dim: a no-op
    cmd.set_dim(3)
    cmd.set_param_at_index(0, x)
    cmd.set_param_at_index(1, 2.0)
    cmd.set_param_by_name("y", y)
    xa, ya = wp.zeros(3, dtype=F64), wp.array([1.0, 1.0, 1.0], dtype=F64)
    cmd.set_param_at_index(0, xa, adjoint=True)
    cmd.set_param_by_name("y", ya, adjoint=True)
    cmd.launch()
    np.testing.assert_array_equal(xa.numpy(), [4.0, 8.0, 12.0])
    cmd.launch()
    np.testing.assert_array_equal(xa.numpy(), [8.0, 16.0, 24.0])
    np.testing.assert_array_equal(y.numpy(), [0.0, 0.0, 0.0])


@wp.kernel
def k_composite_params(v: wp.vec3, q: wp.quat, t: wp.transform, out: A):
    for j in range(3):
        out[j] = F64(v[j])
    for j in range(4):
        out[3 + j] = F64(q[j])
    for j in range(7):
        out[7 + j] = F64(t[j])


def test_hand_built_launch_zero_initialises_composite_params():
    out = wp.full(14, -1.0, dtype=F64)
    cmd = wp.Launch(k_composite_params, wp.get_device())
    cmd.set_param_by_name("out", out)
    cmd.set_dim(1)
    cmd.launch()
    np.testing.assert_array_equal(out.numpy(), np.zeros(14))  # the transform too, not identity
    cmd.set_param_by_name("t", wp.transform(wp.vec3(1.0, 2.0, 3.0), wp.quat_identity()))
    cmd.launch()
    np.testing.assert_array_equal(out.numpy()[7:], [1.0, 2.0, 3.0, 0.0, 0.0, 0.0, 1.0])


def test_hand_built_launch_with_params_and_bounds():
    x, y = arr([1.0, 2.0]), arr([0.0, 0.0])
    device = wp.get_device()
    cmd = wp.Launch(k_scaled_square, device, params=[x, 5.0, y], bounds=launch_module.make_bounds(2))
    assert cmd.adjoint is False
    cmd.launch()
    np.testing.assert_array_equal(y.numpy(), [5.0, 20.0])
    xa, ya = wp.zeros(2, dtype=F64), wp.array([1.0, 1.0], dtype=F64)
    adj = wp.Launch(k_scaled_square, device, params=[x, 5.0, y, xa, 0.0, ya], adjoint=True)
    adj.set_dim(2)
    adj.launch()
    np.testing.assert_array_equal(xa.numpy(), [10.0, 20.0])
    with pytest.raises(TypeError, match="params"):
        wp.Launch(k_scaled_square, device, params=[x, 5.0])


def test_adjoint_of_a_kernel_without_backward_raises():
    x, y = arr([1.0]), arr([0.0])
    with pytest.raises(RuntimeError, match="enable_backward=False"):
        wp.launch(k_no_backward, dim=1, inputs=[x, y], adj_inputs=[None, None], adjoint=True, record_cmd=True)
    with pytest.raises(RuntimeError, match="enable_backward=False"):
        wp.Launch(k_no_backward, "cpu", adjoint=True)


# ---------------------------------------------------------------------------------------------
# the kept launch state
# ---------------------------------------------------------------------------------------------


def test_one_thread_flag_is_reset_between_replays():
    # The runtime marks a launch that runs on one thread (float atomics then skip the CAS loop)
    # and never clears the mark: a kept context must not carry it into a multi-threaded replay.
    saved = wp.config.cpu_threads
    wp.config.cpu_threads = 2
    try:
        acc = wp.zeros(1, dtype=F64)
        cmd = wp.launch(k_count, dim=1, inputs=[acc], record_cmd=True)
        cmd.launch()
        n = 4_000_000  # enough for two threads' unsynchronised adds to collide
        cmd.set_dim(n)
        for _ in range(10):  # collisions need the two threads to overlap: try a few times
            acc.zero_()
            cmd.launch()
            assert acc.numpy()[0] == n
    finally:
        wp.config.cpu_threads = saved


def test_kernel_errors_on_replay_and_recovery():
    x, out = arr([1.0, 2.0, 3.0]), wp.zeros(1, dtype=F64)
    cmd = wp.launch(k_index, dim=1, inputs=[x, 5, out], record_cmd=True)
    with pytest.raises(IndexError, match="index 5 is out of bounds"):
        cmd.launch()
    cmd.set_param_by_name("k", 2)
    cmd.launch()  # the error of the previous replay is not reported again
    assert out.numpy()[0] == 3.0


def test_launch_keeps_its_arrays_alive():
    cmd = wp.launch(k_scaled_square, dim=3, inputs=[arr([1.0, 2.0, 3.0]), 1.0, arr([0, 0, 0])], record_cmd=True)
    gc.collect()
    wp.zeros(1000, dtype=F64)  # reuse freed memory, if any was freed
    cmd.launch()
    np.testing.assert_array_equal(cmd.fwd_args[2].numpy(), [1.0, 4.0, 9.0])


def test_replay_repacks_nothing_and_set_param_repacks_one_argument(monkeypatch):
    x, y = arr([1.0, 2.0]), arr([0.0, 0.0])
    cmd = wp.launch(k_scaled_square, dim=2, inputs=[x, 1.0, y], record_cmd=True)
    calls = []
    real = launch_module.Launcher.set_arg
    monkeypatch.setattr(
        launch_module.Launcher, "set_arg", lambda self, *a, **k: calls.append(a[1]) or real(self, *a, **k)
    )
    monkeypatch.setattr(launch_module.Launcher, "pack", lambda *a, **k: pytest.fail("a replay re-packed everything"))
    for _ in range(5):
        cmd.launch()
    assert calls == []
    cmd.set_param_by_name("s", 2.0)
    assert calls == [1]
    cmd.launch()
    np.testing.assert_array_equal(y.numpy(), [2.0, 8.0])


def test_replay_sees_a_changed_global():
    global G_FACTOR
    y = wp.zeros(2, dtype=F64)
    cmd = wp.launch(k_global, dim=2, inputs=[y], record_cmd=True)
    try:
        cmd.launch()
        np.testing.assert_array_equal(y.numpy(), [2.0, 2.0])
        G_FACTOR = 5.0
        cmd.launch()  # rebuilt, never the stale constant
        np.testing.assert_array_equal(y.numpy(), [5.0, 5.0])
    finally:
        G_FACTOR = 2.0


# ---------------------------------------------------------------------------------------------
# plain wp.launch: a launch with the same arguments as the previous one reuses its packed struct
# ---------------------------------------------------------------------------------------------


@wp.kernel
def k_reciprocal(s: F64, y: A):
    y[0] = F64(1.0) / s


@wp.kernel
def k_copy_first(x: A, y: A):
    y[0] = x[0]


def test_repeated_launch_sees_changed_scalars_and_new_arrays():
    y = wp.zeros(1, dtype=F64)
    for s, expected in [(2.0, 0.5), (2.0, 0.5), (4.0, 0.25), (0.0, np.inf), (-0.0, -np.inf), (0.0, np.inf)]:
        wp.launch(k_reciprocal, dim=1, inputs=[s, y])
        assert y.numpy()[0] == expected, s
    xs = [wp.array([float(k)], dtype=F64) for k in range(3)]  # alive: distinct addresses
    for k, x in enumerate(xs + xs[::-1]):
        wp.launch(k_copy_first, dim=1, inputs=[x, y])
        assert y.numpy()[0] == x.numpy()[0]
    for k in range(20):  # new arrays, possibly at a freed array's address and id
        x = wp.array([float(k)], dtype=F64)
        wp.launch(k_copy_first, dim=1, inputs=[x, y])
        assert y.numpy()[0] == k
        del x
        gc.collect()
    x = wp.array([7.0], dtype=F64)
    wp.launch(k_copy_first, dim=1, inputs=[x, y])
    wp.launch(k_copy_first, dim=1, inputs=[x[0:1], y])  # a view: another descriptor, same data
    assert y.numpy()[0] == 7.0
