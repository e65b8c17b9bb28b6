"""Overwrite tracking: ``wp.config.verify_autograd_array_access`` warns when something recorded
on a tape writes an array that an earlier recorded launch (or copy) read, or that the writing
kernel itself may read before writing (weft/tape.py ``_check_overwrites``, weft/codegen/access.py
``ordered_access`` / ``access_events``, the array hooks in weft/array.py).

Covered: kernel read -> kernel write; write -> read -> write; a kernel that writes then reads back
the same array (fine) and one that reads then writes it (in place: warned); reads and writes
inside funcs; atomics (a write, not a read: loss accumulation is clean); struct fields; one array
passed as two arguments; views; ``wp.copy`` / ``array.assign`` / ``fill_`` / ``zero_`` recorded on
the tape, with their backward (the gradient of ``dest`` flows to ``src`` and is then cleared);
``tape.reset``; the flag off; a clean tape printing nothing; the issue's example.
"""

import numpy as np
import pytest

import weft as wp
from weft.codegen.access import ordered_access
from weft.runtime import launch as launch_module

F64 = wp.float64
A = wp.array(dtype=wp.float64)

MESSAGE = (
    "is being written to but has already been read from in a previous launch. "
    "This may corrupt gradient computation in the backward pass."
)
COPY_MESSAGE = "but has already been read from in a previous launch. This may corrupt gradient computation in the backward pass."
SAME_KERNEL = "is being written to after it has been read from within the same kernel"


@wp.kernel
def square(a: A, b: A):
    i = wp.tid()
    b[i] = a[i] * a[i]


@wp.kernel
def overwrite(c: A, a: A):
    i = wp.tid()
    a[i] = c[i]


@wp.kernel
def total(b: A, loss: A):
    i = wp.tid()
    wp.atomic_add(loss, 0, b[i])


@wp.kernel
def write_then_read(x: A, y: A, z: A):
    i = wp.tid()
    y[i] = x[i] * F64(2.0)
    z[i] = y[i] * F64(3.0)  # reads back its own result: fine


@wp.kernel
def in_place(x: A, y: A):
    i = wp.tid()
    y[i] = y[i] * x[i]


@wp.kernel
def loop_write_read(x: A, y: A, n: int):
    i = wp.tid()
    s = F64(0.0)
    for j in range(n):
        y[i] = x[i] + s  # the next iteration overwrites what this one reads back
        s = s + y[i]


@wp.func
def f_read(a: A, i: int):
    return a[i]


@wp.func
def f_write(a: A, i: int, v: F64):
    a[i] = v


@wp.kernel
def via_funcs(src: A, dst: A):
    i = wp.tid()
    f_write(dst, i, f_read(src, i) * F64(2.0))


@wp.func
def f_in_place(a: A, i: int):
    a[i] = a[i] + F64(1.0)


@wp.kernel
def via_func_in_place(a: A):
    i = wp.tid()
    f_in_place(a, i)


@wp.struct
class Io:
    inp: A
    out: A


@wp.kernel
def struct_io(p: Io):
    i = wp.tid()
    p.out[i] = p.inp[i] + F64(1.0)


def arr(values, requires_grad=True):
    return wp.array(np.asarray(values, dtype=np.float64), dtype=F64, requires_grad=requires_grad)


@pytest.fixture
def verify():
    saved = wp.config.verify_autograd_array_access
    wp.config.verify_autograd_array_access = True
    yield
    wp.config.verify_autograd_array_access = saved


def warnings_of(capsys):
    captured = capsys.readouterr()
    assert MESSAGE not in captured.out and SAME_KERNEL not in captured.out, "warnings go to stderr"
    return [line for line in captured.err.splitlines() if "This may corrupt gradient" in line]


def def_line(kernel):
    import inspect

    lines, start = inspect.getsourcelines(kernel.pyfunc)
    return start + next(k for k, line in enumerate(lines) if line.lstrip().startswith("def "))


# ---------------------------------------------------------------------------------------------
# between launches
# ---------------------------------------------------------------------------------------------


def test_kernel_read_then_kernel_write(verify, capsys):
    a, b, c = arr([1.0, 2.0]), arr([0.0, 0.0]), arr([5.0, 6.0])
    with wp.Tape():
        wp.launch(square, dim=2, inputs=[a, b])
        assert warnings_of(capsys) == []
        wp.launch(overwrite, dim=2, inputs=[c, a])
    (w,) = warnings_of(capsys)
    assert MESSAGE in w
    assert f"Array [1. 2.] passed to argument a in kernel overwrite at {__file__}:{def_line(overwrite)} " in w


def test_write_read_write(verify, capsys):
    a, b, c = arr([1.0, 2.0]), arr([0.0, 0.0]), arr([0.0, 0.0])
    with wp.Tape():
        wp.launch(square, dim=2, inputs=[a, b])  # writes b
        wp.launch(square, dim=2, inputs=[a, b])  # writes b again: b was never read
        assert warnings_of(capsys) == []
        wp.launch(square, dim=2, inputs=[b, c])  # reads b
        wp.launch(overwrite, dim=2, inputs=[a, b])  # writes b after the read
    (w,) = warnings_of(capsys)
    assert "argument a in kernel overwrite" in w and MESSAGE in w


def test_kernel_that_writes_then_reads_back_is_clean_but_counts_as_read(verify, capsys):
    x, y, z, w = arr([1.0, 2.0]), arr([0.0, 0.0]), arr([0.0, 0.0]), arr([3.0, 4.0])
    with wp.Tape():
        wp.launch(write_then_read, dim=2, inputs=[x, y, z])
        assert warnings_of(capsys) == []
        wp.launch(overwrite, dim=2, inputs=[w, y])  # y was read (by write_then_read itself)
    (msg,) = warnings_of(capsys)
    assert "argument a in kernel overwrite" in msg and MESSAGE in msg


def test_kernel_that_reads_then_writes_in_place_warns(verify, capsys):
    x, y = arr([2.0, 3.0]), arr([5.0, 7.0])
    with wp.Tape():
        wp.launch(in_place, dim=2, inputs=[x, y])
    (w,) = warnings_of(capsys)
    assert f"argument y in kernel in_place at {__file__}:{def_line(in_place)} {SAME_KERNEL}" in w
    with wp.Tape():
        wp.launch(via_func_in_place, dim=2, inputs=[arr([1.0, 2.0])])  # the same through a func
    (w,) = warnings_of(capsys)
    assert "argument a in kernel via_func_in_place" in w and SAME_KERNEL in w


def test_write_and_read_in_a_loop_body_warns(verify, capsys):
    x, y = arr([1.0, 2.0]), arr([0.0, 0.0])
    with wp.Tape():
        wp.launch(loop_write_read, dim=2, inputs=[x, y, 3])
    (w,) = warnings_of(capsys)
    assert "argument y in kernel loop_write_read" in w and SAME_KERNEL in w


def test_one_array_passed_as_two_arguments(verify, capsys):
    a = arr([1.0, 2.0])
    with wp.Tape():
        wp.launch(square, dim=2, inputs=[a, a])  # b[i] = a[i] * a[i], with b the same array
    (w,) = warnings_of(capsys)
    assert "argument b in kernel square" in w and SAME_KERNEL in w


def test_reads_and_writes_inside_funcs(verify, capsys):
    a, b, c = arr([1.0, 2.0]), arr([0.0, 0.0]), arr([0.0, 0.0])
    with wp.Tape():
        wp.launch(via_funcs, dim=2, inputs=[a, b])  # reads a (in f_read), writes b (in f_write)
        wp.launch(via_funcs, dim=2, inputs=[c, a])  # writes a
    (w,) = warnings_of(capsys)
    assert "argument dst in kernel via_funcs" in w and MESSAGE in w
    # (read marks outlive a tape until tape.reset(), as in Warp: fresh arrays from here)
    d, e = arr([1.0, 2.0]), arr([0.0, 0.0])
    with wp.Tape() as tape:
        wp.launch(via_funcs, dim=2, inputs=[d, e])
        wp.launch(square, dim=2, inputs=[e, arr([0.0, 0.0])])  # e written by a func, then read: fine
    assert warnings_of(capsys) == []
    assert len(tape.launches) == 2


def test_atomics(verify, capsys):
    a, b, loss = arr([1.0, 2.0]), arr([0.0, 0.0]), arr([0.0])
    with wp.Tape():
        wp.launch(total, dim=2, inputs=[a, loss])  # accumulating is not reading
        wp.launch(total, dim=2, inputs=[b, loss])
    assert warnings_of(capsys) == []
    loss2 = arr([0.0])
    with wp.Tape():
        wp.launch(square, dim=1, inputs=[loss2, arr([0.0])])  # reads loss2
        wp.launch(total, dim=2, inputs=[arr([1.0, 2.0]), loss2])  # then adds into it
    (w,) = warnings_of(capsys)
    assert "argument loss in kernel total" in w and MESSAGE in w
    with wp.Tape():
        wp.launch(total, dim=2, inputs=[arr([1.0, 2.0]), arr([0.0])])  # atomics only: clean
    assert warnings_of(capsys) == []


def test_struct_fields(verify, capsys):
    p = Io()
    p.inp = arr([1.0, 2.0])
    p.out = arr([0.0, 0.0])
    with wp.Tape():
        wp.launch(struct_io, dim=2, inputs=[p])
        wp.launch(overwrite, dim=2, inputs=[p.out, p.inp])  # writes what struct_io read
    (w,) = warnings_of(capsys)
    assert "argument a in kernel overwrite" in w
    q = Io()
    q.inp = arr([1.0, 2.0])
    q.out = arr([0.0, 0.0])
    with wp.Tape():
        wp.launch(square, dim=2, inputs=[q.out, q.inp])  # reads q.out
        wp.launch(struct_io, dim=2, inputs=[q])  # writes q.out
    (w,) = warnings_of(capsys)
    assert "argument p.out in kernel struct_io" in w and MESSAGE in w


def test_views_share_the_read_mark(verify, capsys):
    a = arr([1.0, 2.0, 3.0, 4.0])
    with wp.Tape():
        wp.launch(square, dim=2, inputs=[a[1:3], arr([0.0, 0.0])])  # reads a view of a
        wp.launch(overwrite, dim=4, inputs=[arr([0.0] * 4), a])  # writes a
    (w,) = warnings_of(capsys)
    assert MESSAGE in w


# ---------------------------------------------------------------------------------------------
# copies and fills on the tape
# ---------------------------------------------------------------------------------------------


def test_copy_into_an_array_that_was_read(verify, capsys):
    a, b, c = arr([1.0, 2.0]), arr([0.0, 0.0]), arr([7.0, 8.0])
    with wp.Tape() as tape:
        wp.launch(square, dim=2, inputs=[a, b])
        wp.copy(a, c)
    (w,) = warnings_of(capsys)
    assert f"is being written to by an array copy at {__file__}:" in w and COPY_MESSAGE in w
    assert len(tape.launches) == 2  # the copy is on the tape


def test_copy_reads_its_source(verify, capsys):
    a, b, c = arr([1.0, 2.0]), arr([0.0, 0.0]), arr([7.0, 8.0])
    with wp.Tape():
        wp.copy(b, a)  # reads a
        wp.launch(overwrite, dim=2, inputs=[c, a])  # writes a
    (w,) = warnings_of(capsys)
    assert "argument a in kernel overwrite" in w and MESSAGE in w


def test_assign_fill_and_zero_are_writes(verify, capsys):
    for op in ("assign", "fill_", "zero_"):
        a, b = arr([1.0, 2.0]), arr([0.0, 0.0])
        with wp.Tape() as tape:
            wp.launch(square, dim=2, inputs=[a, b])
            if op == "assign":
                a.assign(np.array([3.0, 4.0]))
            elif op == "fill_":
                a.fill_(2.0)
            else:
                a.zero_()
        (w,) = warnings_of(capsys)
        by = "an array copy" if op == "assign" else f"array.{op}"
        assert f"is being written to by {by} at {__file__}:" in w and COPY_MESSAGE in w, op
        assert len(tape.launches) == 2, op


def test_fill_outside_a_tape_reinitialises(verify, capsys):
    a, b, c = arr([1.0, 2.0]), arr([0.0, 0.0]), arr([0.0, 0.0])
    with wp.Tape():
        wp.launch(square, dim=2, inputs=[a, b])
    a.fill_(1.0)  # not recorded: a fresh start for a
    with wp.Tape():
        wp.launch(overwrite, dim=2, inputs=[c, a])
    assert warnings_of(capsys) == []


def test_copy_backward_sends_the_gradient_of_dest_to_src():
    a, d, out = arr([1.0, 2.0, 3.0]), arr([0.0, 0.0, 0.0]), arr([0.0, 0.0, 0.0])
    tape = wp.Tape()
    with tape:
        wp.copy(d, a)
        wp.launch(square, dim=3, inputs=[d, out])
    tape.backward(grads={out: np.ones(3)})
    np.testing.assert_array_equal(a.grad.numpy(), [2.0, 4.0, 6.0])
    np.testing.assert_array_equal(d.grad.numpy(), [0.0, 0.0, 0.0])  # consumed, like a store's


def test_copy_backward_with_offsets_and_assign():
    a, d, out = arr([1.0, 2.0, 3.0, 4.0]), arr([9.0, 9.0, 9.0]), arr([0.0, 0.0, 0.0])
    tape = wp.Tape()
    with tape:
        wp.copy(d, a, dest_offset=1, src_offset=2, count=2)  # d = [9, 3, 4]
        wp.launch(square, dim=3, inputs=[d, out])
    np.testing.assert_array_equal(d.numpy(), [9.0, 3.0, 4.0])
    tape.backward(grads={out: np.ones(3)})
    np.testing.assert_array_equal(a.grad.numpy(), [0.0, 0.0, 6.0, 8.0])
    np.testing.assert_array_equal(d.grad.numpy(), [18.0, 0.0, 0.0])  # the part not copied keeps its gradient

    x, y, out2 = arr([1.0, 2.0]), arr([0.0, 0.0]), arr([0.0, 0.0])
    tape = wp.Tape()
    with tape:
        y.assign(x)
        wp.launch(square, dim=2, inputs=[y, out2])
    tape.backward(grads={out2: np.ones(2)})
    np.testing.assert_array_equal(x.grad.numpy(), [2.0, 4.0])


def test_fill_backward_clears_the_overwritten_gradient():
    # y = x^2 is computed, then y is refilled and read: the filled values do not depend on x
    x, y, out = arr([1.0, 2.0]), arr([0.0, 0.0]), arr([0.0, 0.0])
    tape = wp.Tape()
    with tape:
        wp.launch(square, dim=2, inputs=[x, y])
        y.fill_(3.0)
        wp.launch(square, dim=2, inputs=[y, out])
    tape.backward(grads={out: np.ones(2)})
    np.testing.assert_array_equal(x.grad.numpy(), [0.0, 0.0])
    np.testing.assert_array_equal(out.numpy(), [9.0, 9.0])


def test_reset_forgets_reads(verify, capsys):
    a, b, c = arr([1.0, 2.0]), arr([0.0, 0.0]), arr([0.0, 0.0])
    tape = wp.Tape()
    with tape:
        wp.launch(square, dim=2, inputs=[a, b])
    tape.reset()
    with tape:
        wp.launch(overwrite, dim=2, inputs=[c, a])
    assert warnings_of(capsys) == []


def test_backward_forgets_reads_as_warp_does(verify, capsys):
    """After backward() the gradients are computed: overwriting an array the launches read no
    longer warns (a further backward() over the old launches would be wrong, as in Warp)."""
    a, b, c = arr([1.0, 2.0]), arr([0.0, 0.0]), arr([0.0, 0.0])
    tape = wp.Tape()
    with tape:
        wp.launch(square, dim=2, inputs=[a, b])
    tape.backward(grads={b: wp.ones(2, dtype=F64)})
    np.testing.assert_allclose(a.grad.numpy(), [2.0, 4.0])
    assert not a._is_read
    with wp.Tape():
        wp.launch(overwrite, dim=2, inputs=[c, a])
    assert warnings_of(capsys) == []
    d = arr([1.0, 2.0, 3.0])  # a read through a view is released on the viewed array too
    tape = wp.Tape()
    with tape:
        wp.launch(square, dim=2, inputs=[d[:2], b])
    assert d._is_read
    tape.backward(grads={b: wp.ones(2, dtype=F64)})
    with wp.Tape():
        wp.launch(overwrite, dim=3, inputs=[arr([0.0] * 3), d])
    assert warnings_of(capsys) == []


def test_no_warning_without_the_flag(capsys):
    assert wp.config.verify_autograd_array_access is False
    a, b, c = arr([1.0, 2.0]), arr([0.0, 0.0]), arr([5.0, 6.0])
    with wp.Tape():
        wp.launch(square, dim=2, inputs=[a, b])
        wp.launch(overwrite, dim=2, inputs=[c, a])
        wp.launch(in_place, dim=2, inputs=[c, b])
        wp.copy(a, c)
    assert warnings_of(capsys) == []


def test_a_clean_tape_prints_nothing(verify, capsys):
    x = arr([0.5, 1.5, 2.5])
    h, y, z, loss = arr([0.0] * 3), arr([0.0] * 3), arr([0.0] * 3), arr([0.0])
    tape = wp.Tape()
    with tape:
        wp.launch(square, dim=3, inputs=[x, h])
        wp.launch(via_funcs, dim=3, inputs=[h, y])
        wp.launch(write_then_read, dim=3, inputs=[y, z, arr([0.0] * 3)])
        wp.launch(total, dim=3, inputs=[z, loss])
        wp.launch(total, dim=3, inputs=[y, loss])
    tape.backward(loss)
    captured = capsys.readouterr()
    assert captured.out == "" and captured.err == ""
    # loss = sum(z + y) with y = 2 x^2 and z = 2 y: d/dx = 12 x
    np.testing.assert_allclose(x.grad.numpy(), 12.0 * x.numpy())


# ---------------------------------------------------------------------------------------------
# the issue's example
# ---------------------------------------------------------------------------------------------


def test_issue_example_square_then_overwrite(verify, capsys):
    a0, c0 = np.array([1.0, 2.0, 3.0]), np.array([-4.0, 5.0, 0.5])
    a, b, c, loss = arr(a0), arr([0.0] * 3), arr(c0), arr([0.0])
    tape = wp.Tape()
    with tape:
        wp.launch(square, dim=3, inputs=[a, b])
        wp.launch(overwrite, dim=3, inputs=[c, a])
        wp.launch(total, dim=3, inputs=[b, loss])
    (w,) = warnings_of(capsys)
    assert "Array [1. 2. 3.] passed to argument a in kernel overwrite" in w and MESSAGE in w
    assert loss.numpy()[0] == np.sum(a0 * a0)
    tape.backward(loss)
    # The loss gradient flows back through square, whose adjoint replays a's current values:
    # those of c, which is exactly the corruption the warning is about.
    np.testing.assert_allclose(a.grad.numpy(), 2.0 * c0)
    np.testing.assert_allclose(c.grad.numpy(), 0.0)  # a's gradient was consumed by overwrite's store


# ---------------------------------------------------------------------------------------------
# the order analysis itself
# ---------------------------------------------------------------------------------------------


def order_of(kernel, n_args):
    return ordered_access(launch_module._instance_for(kernel, [None] * n_args).ir)


def test_ordered_access():
    assert order_of(write_then_read, 3) == {("x",): {"read"}, ("y",): {"write", "read"}, ("z",): {"write"}}
    assert order_of(in_place, 2)[("y",)] == {"read", "write", "read_before_write"}
    assert "read_before_write" in order_of(loop_write_read, 3)[("y",)]
    assert order_of(total, 2) == {("b",): {"read"}, ("loss",): {"write"}}
    assert order_of(via_funcs, 2) == {("src",): {"read"}, ("dst",): {"write"}}
    assert order_of(via_func_in_place, 1)[("a",)] == {"read", "write", "read_before_write"}
    assert order_of(struct_io, 1) == {("p", "inp"): {"read"}, ("p", "out"): {"write"}}


@wp.kernel
def k_touches(a: A, b: A, c: A, n: int):
    i = wp.tid()
    wp.atomic_add(a, i, b[i])  # an atomic reads and writes a
    if n > 0:
        c[i] = F64(1.0)


def test_kernel_adj_reports_what_each_parameter_is_used_for():
    args = {p.label: p for p in k_touches.adj.args}
    assert list(args) == ["a", "b", "c", "n"]
    assert (args["a"].is_read, args["a"].is_write) == (True, True)
    assert (args["b"].is_read, args["b"].is_write) == (True, False)
    assert (args["c"].is_read, args["c"].is_write) == (False, True)
    assert not args["n"].is_read and not args["n"].is_write  # not an array


def test_gradient_checks_leave_a_pending_tapes_reads_alone(verify, capsys):
    """jacobian / jacobian_fd run their own launches on private tapes: the read a pending user
    tape recorded stays recorded (a later overwrite still warns), and the checks' reads do not
    linger (checking a function that overwrites its input warns nothing)."""

    def squared(x):
        y = wp.zeros_like(x)
        wp.launch(square, dim=x.size, inputs=[x, y])
        return y

    for jacobian in (wp.autograd.jacobian, wp.autograd.jacobian_fd):
        a, b, c = arr([1.0, 2.0]), arr([0.0, 0.0]), arr([5.0, 6.0])
        tape = wp.Tape()
        with tape:
            wp.launch(square, dim=2, inputs=[a, b])
        jac = jacobian(squared, inputs=[a])
        np.testing.assert_allclose(jac[(0, 0)].numpy(), np.diag([2.0, 4.0]), rtol=1e-6)
        assert warnings_of(capsys) == []
        with tape:
            wp.launch(overwrite, dim=2, inputs=[c, a])
        (w,) = warnings_of(capsys)
        assert MESSAGE in w

    def overwrite_then_square(x):
        wp.launch(overwrite, dim=x.size, inputs=[c, x])
        return squared(x)

    a = arr([1.0, 2.0])
    assert wp.autograd.gradcheck(overwrite_then_square, inputs=[a], raise_exception=False, show_summary=False)
    assert warnings_of(capsys) == []
