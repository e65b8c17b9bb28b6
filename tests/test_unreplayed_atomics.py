"""The backward pass does not run atomics again, so a kernel whose gradient depends on the value
an atomic returned (a counter handing out slots) cannot be differentiated: its backward launch
raises, naming the atomic's line, instead of sending gradients to the wrong elements (Warp's
generated replay runs the atomic a second time and does). Uses of that value that no gradient
depends on (integer bookkeeping) keep the backward pass."""

import numpy as np
import pytest

import weft as wp


@wp.kernel
def compact_doubled(values: wp.array(dtype=float), count: wp.array(dtype=int), out: wp.array(dtype=float)):
    t = wp.tid()
    v = values[t]
    if v > 0.0:
        slot = wp.atomic_add(count, 0, 1)
        out[slot] = 2.0 * v


@wp.kernel
def first_writer_scales(values: wp.array(dtype=float), flag: wp.array(dtype=int), out: wp.array(dtype=float)):
    t = wp.tid()
    old = wp.atomic_max(flag, 0, 1)
    if old == 0:  # a branch on the returned value: which thread takes it is decided by arrival
        out[t] = 10.0 * values[t]
    else:
        out[t] = values[t]


@wp.kernel
def numbered_copies(values: wp.array(dtype=float), count: wp.array(dtype=int), ids: wp.array(dtype=int), out: wp.array(dtype=float)):
    t = wp.tid()
    slot = wp.atomic_add(count, 0, 1)
    ids[slot] = t  # integer bookkeeping: no gradient depends on the slot
    out[t] = 3.0 * values[t]


def _values():
    return wp.array(np.array([1.0, -1.0, 3.0, 4.0, -2.0, 5.0], dtype=np.float32), requires_grad=True)


@pytest.mark.parametrize("kernel, line_of", [(compact_doubled, "slot = wp.atomic_add"), (first_writer_scales, "old = wp.atomic_max")])
def test_gradients_that_depend_on_an_atomics_value_raise(kernel, line_of):
    values = _values()
    counter = wp.zeros(1, dtype=int)
    out = wp.zeros(6, dtype=float, requires_grad=True)
    tape = wp.Tape()
    with tape:
        wp.launch(kernel, 6, [values, counter, out])
    assert out.numpy().any()  # the forward pass runs as usual
    line = next(k for k, text in enumerate(open(__file__).read().splitlines(), 1) if line_of in text)
    with pytest.raises(RuntimeError, match=rf"kernel '{kernel.key}' cannot be differentiated.*{__file__}:{line}"):
        tape.backward(grads={out: wp.ones(6, dtype=float)})
    assert not values.grad.numpy().any()  # nothing half-applied


def test_integer_bookkeeping_with_an_atomics_value_keeps_the_gradient():
    values = _values()
    count = wp.zeros(1, dtype=int)
    ids = wp.zeros(6, dtype=int)
    out = wp.zeros(6, dtype=float, requires_grad=True)
    tape = wp.Tape()
    with tape:
        wp.launch(numbered_copies, 6, [values, count, ids, out])
    tape.backward(grads={out: wp.array(np.arange(1, 7, dtype=np.float32))})
    np.testing.assert_array_equal(values.grad.numpy(), 3.0 * np.arange(1, 7))
    assert sorted(ids.numpy()) == list(range(6))


def test_a_counter_kernel_without_a_backward_pass_is_fine_on_a_tape():
    @wp.kernel(enable_backward=False, module="unique")
    def compact_only(values: wp.array(dtype=float), count: wp.array(dtype=int), out: wp.array(dtype=float)):
        t = wp.tid()
        if values[t] > 0.0:
            out[wp.atomic_add(count, 0, 1)] = values[t]

    values = _values()
    count = wp.zeros(1, dtype=int)
    out = wp.zeros(6, dtype=float)
    with wp.Tape():
        wp.launch(compact_only, 6, [values, count, out])
    assert count.numpy()[0] == 4 and sorted(out.numpy()[:4]) == [1.0, 3.0, 4.0, 5.0]
