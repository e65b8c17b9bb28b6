"""Fixed-size local arrays: ``wp.zeros(shape, dtype)`` / ``wp.empty(...)`` inside kernels and funcs
(codegen/special_calls.py, codegen/local_arrays.py, native/array.h).

Covered: indexing, row views, slices, ``.shape``, ``.ptr`` reinterpretation; passing one to funcs
(concrete and generic array parameters, writes visible); returning one from a func (with and
without a ``wp.fixedarray`` annotation) and the errors for a wrong annotation or a returned view;
arrays of structs; a constant shape is required; gradients through kernels that use local arrays
match finite differences; the patterns the backward pass cannot handle are refused when it is
built, forward launches unaffected.
"""

from typing import Any

import numpy as np
import pytest

import weft as wp

I32 = wp.int32


@wp.func
def fill_ramp(arr: wp.array2d[int]):
    for i in range(arr.shape[0]):
        for j in range(arr.shape[1]):
            arr[i][j] = i * arr.shape[1] + j


@wp.func
def make_ramp() -> wp.fixedarray(shape=(2, 3), dtype=int):
    arr = wp.zeros(shape=(2, 3), dtype=int)
    fill_ramp(arr)
    return arr


@wp.func
def make_squares(n_used: int):
    arr = wp.zeros(shape=4, dtype=float)
    for i in range(n_used):
        arr[i] = float(i * i)
    return arr


@wp.func
def first_of(arr: wp.array[Any]):
    return arr[0]


@wp.func
def first_vec2(arr: wp.array[wp.vec2f]):
    return arr[0]


@wp.kernel
def k_local_array_ops(out: wp.array[int]):
    a = wp.zeros(shape=(2, 3), dtype=int)
    fill_ramp(a)
    out[0] = a[1][2]  # written through a func: 5
    out[1] = a[1, 0]  # 3
    row = a[1]
    out[2] = row.shape[0] * 10 + first_of(row)  # 33
    s = a[:2, 1:]
    out[3] = s.shape[0] * 100 + s.shape[1] * 10 + s[1, 0]  # 224
    out[4] = a.shape[0] * 10 + a.shape[1] + a.shape[2] * 100  # shape past ndim is 0: 23
    b = make_ramp()
    out[5] = b[0, 2] + b[1, 1] * 10  # 42
    c = make_squares(3)
    out[6] = int(c[2]) + int(c[3]) * 100  # 4
    v = wp.zeros(3, dtype=wp.vec2f)
    v[0] = wp.vec2f(1.0, 2.0)
    out[7] = int(first_vec2(v)[1]) + int(first_of(v)[0]) * 10  # 12
    e = wp.empty(shape=(5,), dtype=wp.int64)
    out[8] = int(e[4])  # weft zeroes wp.empty too: 0


def test_local_arrays_index_view_slice_and_pass_to_funcs():
    out = wp.full(9, -1, dtype=I32)
    wp.launch(k_local_array_ops, dim=1, inputs=[out])
    np.testing.assert_array_equal(out.numpy(), [5, 3, 33, 224, 23, 42, 4, 12, 0])


@wp.kernel
def k_reinterpret_through_ptr(out: wp.array[wp.vec2]):
    buf = wp.zeros(shape=(8,), dtype=wp.float32)
    for i in range(8):
        buf[i] = float(i)
    pairs = wp.array(ptr=buf.ptr, shape=(4,), dtype=wp.vec2)
    for i in range(4):
        out[i] = pairs[i]


def test_local_array_memory_reinterpreted_through_its_address():
    out = wp.zeros(4, dtype=wp.vec2)
    wp.launch(k_reinterpret_through_ptr, dim=1, inputs=[out])
    np.testing.assert_array_equal(out.numpy(), np.arange(8, dtype=np.float32).reshape(4, 2))


@wp.struct
class Sample:
    offset: int
    dist: float


@wp.func
def make_samples():
    arr = wp.zeros(shape=(2, 3), dtype=Sample)
    for i in range(2):
        for j in range(3):
            arr[i][j].offset = i * 3 + j
            arr[i][j].dist = float(arr[i][j].offset) / 5.0
    return arr


@wp.kernel
def k_struct_samples(offsets: wp.array[int], dists: wp.array[float]):
    arr = make_samples()
    for i in range(2):
        for j in range(3):
            offsets[i * 3 + j] = arr[i, j].offset
            dists[i * 3 + j] = arr[i, j].dist


def test_local_arrays_of_structs_returned_from_a_func():
    offsets, dists = wp.zeros(6, dtype=int), wp.zeros(6, dtype=float)
    wp.launch(k_struct_samples, dim=1, inputs=[offsets, dists])
    np.testing.assert_array_equal(offsets.numpy(), np.arange(6))
    np.testing.assert_allclose(dists.numpy(), np.arange(6) / 5.0, rtol=1e-6)


@wp.kernel
def k_each_thread_has_its_own(out: wp.array[int]):
    i = wp.tid()
    scratch = wp.zeros(4, dtype=int)
    for j in range(4):
        scratch[j] += i + j
    out[i] = scratch[0] + scratch[3]


def test_each_thread_has_its_own_zeroed_array():
    n = 1000
    out = wp.zeros(n, dtype=int)
    wp.launch(k_each_thread_has_its_own, dim=n, inputs=[out])
    np.testing.assert_array_equal(out.numpy(), 2 * np.arange(n) + 3)


def test_errors_name_the_problem():
    @wp.func
    def returns_it_as_an_array() -> wp.array2d[int]:
        arr = wp.zeros(shape=(2, 3), dtype=int)
        return arr

    @wp.kernel(module="unique")
    def k_annotation():
        returns_it_as_an_array()

    with pytest.raises(wp.codegen.WarpCodegenTypeError, match="returns a fixed-size array") as info:
        wp.launch(k_annotation, dim=1)
    assert str(info.value).endswith("whereas it has its return type annotated as `Array[int32]`.")
    assert "wp.fixedarray(shape=(2, 3)" in info.value.full_text()  # the fix, as a note

    @wp.kernel(module="unique")
    def k_runtime_shape(n: int):
        wp.zeros(shape=(n,), dtype=int)

    with pytest.raises(RuntimeError, match="`shape` argument must be specified as a constant"):
        wp.launch(k_runtime_shape, dim=1, inputs=[3])

    @wp.kernel(module="unique")
    def k_bad_shape():
        wp.zeros(shape=(2, 0), dtype=int)

    with pytest.raises(wp.codegen.WarpCodegenValueError, match=r"1 to 4 positive dimensions, got shape \(2, 0\)") as e:
        wp.launch(k_bad_shape, dim=1)
    assert "k_bad_shape" in e.value.full_text()
    with pytest.raises(ValueError, match=r"1 to 4 positive dimensions, got shape \(1, 1, 1, 1, 1\)"):
        wp.fixedarray(shape=(1, 1, 1, 1, 1), dtype=int)

    @wp.func
    def returns_a_row():
        arr = wp.zeros(shape=(2, 3), dtype=int)
        return arr[0]

    @wp.kernel(module="unique")
    def k_row():
        returns_a_row()

    with pytest.raises(wp.codegen.WarpCodegenTypeError, match="not a view of one"):
        wp.launch(k_row, dim=1)


F64 = wp.float64


@wp.kernel
def k_weighted(x: wp.array[F64], y: wp.array[F64]):
    i = wp.tid()
    w = wp.zeros(3, dtype=F64)
    w[0] = F64(2.0)
    w[1] = F64(3.0)
    w[2] = F64(i) + F64(5.0)
    y[i] = x[i] * w[i % 3] + x[i] * x[i]


@wp.kernel
def k_scratch_per_iteration(x: wp.array[F64], y: wp.array[F64], n: int):
    s = F64(0.0)
    for j in range(n):
        w = wp.zeros(2, dtype=F64)
        w[0] = F64(j)
        w[1] = w[0] * F64(0.5)
        s += w[1] * x[0] * x[1]
    y[0] = s


def test_gradients_through_local_arrays_match_finite_differences():
    from fd_check import tape_vs_fd

    rng = np.random.default_rng(3)
    x = np.array([1.0, 2.0, 3.0, 4.0])
    _, g = tape_vs_fd(k_weighted, x, (4,), rng, w=np.ones(4))
    np.testing.assert_allclose(g, [2.0, 3.0, 7.0, 2.0] + 2 * x)  # the weights read back in the replay
    _, g = tape_vs_fd(k_scratch_per_iteration, x, (1,), rng, extra=(5,), dim=1, w=np.ones(1))
    np.testing.assert_allclose(g, [5.0 * x[1], 5.0 * x[0], 0.0, 0.0])


@wp.kernel
def k_stores_an_active_value(x: wp.array[float], y: wp.array[float]):
    i = wp.tid()
    w = wp.zeros(1, dtype=float)
    w[0] = x[i] * 2.0
    y[i] = w[0] * x[i]


@wp.kernel
def k_reads_across_iterations(x: wp.array[float], n: int, y: wp.array[float]):
    w = wp.zeros(4, dtype=float)
    s = float(0.0)
    for j in range(n):
        w[j % 4] = float(j)
        s += w[(j + 1) % 4] * x[0]
    y[0] = s


def test_backward_passes_that_would_be_wrong_are_refused_forward_still_runs():
    for kernel, dim, extra, why in (
        (k_stores_an_active_value, 4, [], "computed from the inputs is stored in a local array"),
        (k_reads_across_iterations, 1, [6], "reads a local array .* written again later"),
    ):
        x = wp.array([1.0, 2.0, 3.0, 4.0], dtype=float, requires_grad=True)
        y = wp.zeros(4, dtype=float, requires_grad=True)
        tape = wp.Tape()
        with tape:
            wp.launch(kernel, dim=dim, inputs=[x, *extra, y])  # the forward pass is fine
        with pytest.raises(RuntimeError, match=why) as e:
            tape.backward(grads={y: wp.ones(4, dtype=float)})
        assert "test_local_arrays.py" in str(e.value)
