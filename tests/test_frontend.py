"""Frontend stage: Python AST -> typed IR, checked end to end by running the kernels on the CPU.

Covers name resolution by value (aliases, re-exports, closures, captured globals, wp.constant,
wp.static), the typing rules (float is float32, int is int32, literals adapt, mixed float widths
are an error), casts, conditional expressions, augmented assignment, multi-dimensional indexing
and wp.tid(), array shapes, @wp.func overloads / generic parameters / default arguments /
multiple returns / early returns, generic kernels, print and printf, and compile errors (each
must be a WarpCodegenError naming the kernel and the file:line of the offending code).

Kernels that compile are defined at module level so that one C++ build covers them; kernels
that must fail to compile are defined inside their test, each in a module of its own, so they
can never break the build of the others (they fail before any C++ is generated).
"""

import os
import types as pytypes
import typing

import numpy as np
import pytest
from markers import location_of

import weft as wp
from weft import sin as imported_sin
from weft import tid as imported_tid

THIS_FILE = os.path.abspath(__file__)

# A module that re-exports weft names under other names: names resolve by value, not by spelling.
walias = pytypes.ModuleType("walias")
walias.thread_index = wp.tid
walias.sine = wp.sin
walias.f64 = wp.float64
walias.np = np  # an unrelated attribute must not confuse the lookup

# Globals captured by value as compile-time constants.
G_INT = 3
G_FLOAT = 1.5
G_BOOL = True
G_CONST = wp.constant(2.5)
G_TABLE = (10, 20, 30)


def f32(x):
    return np.asarray(x, dtype=np.float32)


def f64(x):
    return np.asarray(x, dtype=np.float64)


# ---------------------------------------------------------------------------------------------
# name resolution
# ---------------------------------------------------------------------------------------------


@wp.kernel
def k_names(x: wp.array(dtype=float), out: wp.array2d(dtype=float)):
    i = imported_tid()
    out[0, i] = imported_sin(x[i])
    out[1, i] = walias.sine(x[i])
    j = walias.thread_index()
    out[2, j] = float(walias.f64(x[i]) * walias.f64(2.0))
    out[3, i] = wp.sin(x[i])


@wp.kernel
def k_globals(out: wp.array(dtype=float), iout: wp.array(dtype=int)):
    out[0] = G_FLOAT * 2.0
    out[1] = G_CONST
    out[2] = wp.static(G_FLOAT * 4.0 + 1.0)
    s = float(0.0)  # noqa: UP018 -- Warp's idiom for a typed local
    # wp.static(...) gives a constant loop bound (unrolled)
    for j in range(wp.static(G_INT + 1)):
        s += float(j)
    out[3] = s
    if G_BOOL:
        out[4] = 1.0
    else:
        out[4] = -1.0
    iout[0] = G_INT * 7
    iout[1] = wp.static(G_TABLE[1] + G_INT)
    iout[2] = wp.static(len(G_TABLE))


def make_scaler(k: float, offset: int):
    """A factory: each kernel captures its own closure values."""

    @wp.kernel
    def scaler(x: wp.array(dtype=float), y: wp.array(dtype=float)):
        i = wp.tid()
        y[i] = x[i] * k + float(offset)

    return scaler


scale2 = make_scaler(2.0, 1)
scale3 = make_scaler(3.0, -1)


def test_name_resolution_by_value():
    xs = np.array([0.1, 0.5, 1.0, 2.0], dtype=np.float32)
    x = wp.array(xs, dtype=float)
    out = wp.zeros((4, 4), dtype=float)
    wp.launch(k_names, dim=4, inputs=[x, out])
    o = out.numpy()
    np.testing.assert_allclose(o[0], np.sin(xs), rtol=1e-6)
    np.testing.assert_array_equal(o[0], o[1])
    np.testing.assert_array_equal(o[0], o[3])
    np.testing.assert_allclose(o[2], 2 * xs, rtol=1e-7)


def test_globals_constants_and_static():
    out = wp.zeros(5, dtype=float)
    iout = wp.zeros(3, dtype=int)
    wp.launch(k_globals, dim=1, inputs=[out, iout])
    np.testing.assert_array_equal(out.numpy(), f32([3.0, 2.5, 7.0, 6.0, 1.0]))
    np.testing.assert_array_equal(iout.numpy(), [21, 23, 3])


def test_closures_capture_per_factory_call():
    x = wp.array([1.0, 2.0, 3.0], dtype=float)
    y2 = wp.zeros(3, dtype=float)
    y3 = wp.zeros(3, dtype=float)
    wp.launch(scale2, dim=3, inputs=[x, y2])
    wp.launch(scale3, dim=3, inputs=[x, y3])
    np.testing.assert_array_equal(y2.numpy(), f32([3.0, 5.0, 7.0]))
    np.testing.assert_array_equal(y3.numpy(), f32([2.0, 5.0, 8.0]))


# ---------------------------------------------------------------------------------------------
# typing rules, literals, casts
# ---------------------------------------------------------------------------------------------


@wp.kernel
def k_float_is_f32(s: float, x: wp.array(dtype=float), y: wp.array2d(dtype=float)):
    i = wp.tid()
    # float32 arithmetic: each result must equal NumPy's float32 computation bit for bit
    # (one operation per output, so FMA contraction cannot change the rounding)
    y[0, i] = x[i] * s
    y[1, i] = x[i] + 0.1
    y[2, i] = x[i] / 3.0


@wp.kernel
def k_int_is_i32(n: int, out: wp.array(dtype=int)):
    i = wp.tid()
    a = n * 2 + i
    out[i] = a


@wp.kernel
def k_casts(
    x: wp.array(dtype=float),
    x64: wp.array(dtype=wp.float64),
    fo: wp.array2d(dtype=float),
    io: wp.array2d(dtype=int),
    dout: wp.array2d(dtype=wp.float64),
    lo: wp.array(dtype=wp.int64),
):
    i = wp.tid()
    fo[0, i] = float(i)  # int -> float32
    fo[1, i] = float(x64[i])  # float64 -> float32
    fo[2, i] = wp.float32(x64[i])
    io[0, i] = int(x[i])  # truncation toward zero
    io[1, i] = wp.int32(x[i])
    io[2, i] = int(x[i] > 0.0)  # bool -> int
    dout[0, i] = wp.float64(x[i])
    dout[1, i] = x64[i] * wp.float64(x[i])
    lo[i] = wp.int64(int(x[i])) * wp.int64(1000000) * wp.int64(3000)
    b = bool(x[i])
    if b:
        io[3, i] = 1
    else:
        io[3, i] = 0


@wp.kernel
def k_annotated_local(x: wp.array(dtype=float), y: wp.array(dtype=wp.float64)):
    i = wp.tid()
    v: wp.float64 = x[i]  # an annotated local converts its value
    y[i] = v * wp.float64(1.0e-10) + wp.float64(1.0)


def test_float_param_and_literals_are_float32():
    xs = np.array([0.3, 1.7, -2.2], dtype=np.float32)
    y = wp.zeros((3, 3), dtype=float)
    wp.launch(k_float_is_f32, dim=3, inputs=[0.7, wp.array(xs, dtype=float), y])
    assert y.numpy().dtype == np.float32
    np.testing.assert_array_equal(y.numpy()[0], xs * np.float32(0.7))
    np.testing.assert_array_equal(y.numpy()[1], xs + np.float32(0.1))
    np.testing.assert_array_equal(y.numpy()[2], xs / np.float32(3.0))


def test_float_literals_keep_full_precision_with_float64():
    @wp.kernel(module="tfe_literal_f64")
    def k_literal_f64(x: wp.array(dtype=wp.float64), y: wp.array2d(dtype=wp.float64)):
        i = wp.tid()
        y[0, i] = x[i] * 0.1  # the literal takes the type of x: float64
        y[1, i] = x[i] * wp.float64(0.1)

    xs = np.array([0.3, 1.7, -2.2, 1e8])
    y = wp.zeros((2, 4), dtype=wp.float64)
    wp.launch(k_literal_f64, dim=4, inputs=[wp.array(xs, dtype=wp.float64), y])
    np.testing.assert_array_equal(y.numpy()[1], xs * 0.1)
    np.testing.assert_array_equal(y.numpy()[0], xs * 0.1)


def test_large_int_literal_with_int64_cast():
    @wp.kernel(module="tfe_big_int")
    def k_big_int(lo: wp.array(dtype=wp.int64)):
        lo[0] = wp.int64(3000000000) + wp.int64(lo.shape[0])

    lo = wp.zeros(1, dtype=wp.int64)
    wp.launch(k_big_int, dim=1, inputs=[lo])
    assert lo.numpy()[0] == 3000000001


def test_int_is_int32_wraps():
    out = wp.zeros(2, dtype=int)
    wp.launch(k_int_is_i32, dim=2, inputs=[2**30, out])
    # 2**31 wraps in int32 arithmetic
    np.testing.assert_array_equal(out.numpy(), np.array([-(2**31), -(2**31) + 1], dtype=np.int32))


def test_casts():
    xs = np.array([-2.7, 0.0, 2.7, 1.5], dtype=np.float32)
    x64s = np.array([1.0 / 3.0, -2.5, 1e-9, 123456789.123])
    fo = wp.zeros((3, 4), dtype=float)
    io = wp.zeros((4, 4), dtype=int)
    dout = wp.zeros((2, 4), dtype=wp.float64)
    lo = wp.zeros(4, dtype=wp.int64)
    wp.launch(k_casts, dim=4, inputs=[wp.array(xs, dtype=float), wp.array(x64s, dtype=wp.float64), fo, io, dout, lo])
    np.testing.assert_array_equal(fo.numpy()[0], f32([0, 1, 2, 3]))
    np.testing.assert_array_equal(fo.numpy()[1], x64s.astype(np.float32))
    np.testing.assert_array_equal(fo.numpy()[2], x64s.astype(np.float32))
    np.testing.assert_array_equal(io.numpy()[0], [-2, 0, 2, 1])
    np.testing.assert_array_equal(io.numpy()[1], [-2, 0, 2, 1])
    np.testing.assert_array_equal(io.numpy()[2], [0, 0, 1, 1])
    np.testing.assert_array_equal(io.numpy()[3], [1, 0, 1, 1])
    np.testing.assert_array_equal(dout.numpy()[0], xs.astype(np.float64))
    np.testing.assert_array_equal(dout.numpy()[1], x64s * xs.astype(np.float64))
    np.testing.assert_array_equal(lo.numpy(), np.array([-2, 0, 2, 1], dtype=np.int64) * 3000000000)


def test_annotated_local_converts():
    xs = np.array([0.5, 3.0], dtype=np.float32)
    y = wp.zeros(2, dtype=wp.float64)
    wp.launch(k_annotated_local, dim=2, inputs=[wp.array(xs, dtype=float), y])
    np.testing.assert_array_equal(y.numpy(), xs.astype(np.float64) * 1e-10 + 1.0)


# ---------------------------------------------------------------------------------------------
# expressions and statements
# ---------------------------------------------------------------------------------------------


@wp.kernel
def k_ifexp(x: wp.array(dtype=float), y: wp.array2d(dtype=float)):
    i = wp.tid()
    v = x[i]
    y[0, i] = v if v > 0.0 else -v
    y[1, i] = 1.0 if v > 1.0 else (0.5 if v > 0.0 else 0.0)
    y[2, i] = float(i) if i % 2 == 0 else v * 10.0
    y[3, i] = 2.0 if (v > -1.0 and v < 1.0) or i == 3 else 3.0
    y[4, i] = 1.0 if not v > 0.0 else 0.0
    y[5, i] = 7.0 if -1.0 < v <= 1.5 else 8.0  # chained comparison


def test_conditional_expressions():
    xs = np.array([-2.0, 0.5, 1.5, 3.0], dtype=np.float32)
    y = wp.zeros((6, 4), dtype=float)
    wp.launch(k_ifexp, dim=4, inputs=[wp.array(xs, dtype=float), y])
    o = y.numpy()
    np.testing.assert_array_equal(o[0], np.abs(xs))
    np.testing.assert_array_equal(o[1], [0.0, 0.5, 1.0, 1.0])
    np.testing.assert_array_equal(o[2], [0.0, 5.0, 2.0, 30.0])
    np.testing.assert_array_equal(o[3], [3.0, 2.0, 3.0, 2.0])
    np.testing.assert_array_equal(o[4], [1.0, 0.0, 0.0, 0.0])
    np.testing.assert_array_equal(o[5], [8.0, 7.0, 7.0, 8.0])


@wp.kernel
def k_augassign(
    x: wp.array(dtype=float),
    a: wp.array(dtype=float),
    b: wp.array2d(dtype=float),
    y: wp.array(dtype=float),
    n: wp.array(dtype=int),
):
    i = wp.tid()
    s = x[i]
    s += 1.0
    s *= 3.0
    s -= 0.5
    s /= 2.0
    y[i] = s
    k = i + 17
    k //= 2
    k %= 5
    k *= 3
    k -= 1
    k <<= 2
    k |= 1
    n[i] = k
    a[i] *= 2.0
    a[i] -= 1.0
    a[i] /= 4.0
    b[i, 1] += x[i]
    b[i, 0] -= x[i]


def test_augmented_assignment():
    xs = np.array([1.0, 2.0, -3.0], dtype=np.float32)
    x = wp.array(xs, dtype=float)
    a = wp.array([4.0, 5.0, 6.0], dtype=float)
    b = wp.ones((3, 2), dtype=float)
    y = wp.zeros(3, dtype=float)
    n = wp.zeros(3, dtype=int)
    wp.launch(k_augassign, dim=3, inputs=[x, a, b, y, n])
    np.testing.assert_allclose(y.numpy(), ((xs + 1) * 3 - 0.5) / 2, rtol=1e-7)
    ks = ((((np.arange(3) + 17) // 2) % 5) * 3 - 1) << 2 | 1
    np.testing.assert_array_equal(n.numpy(), ks)
    np.testing.assert_array_equal(a.numpy(), (f32([4, 5, 6]) * 2 - 1) / 4)
    np.testing.assert_array_equal(b.numpy(), np.stack([1 - xs, 1 + xs], axis=1))


@wp.kernel
def k_index2d(a: wp.array2d(dtype=float), b: wp.array2d(dtype=float)):
    i, j = wp.tid()
    b[i, j] = a[i, j] * 10.0 + a[a.shape[0] - 1 - i, j]


@wp.kernel
def k_tid3(out: wp.array3d(dtype=int)):
    i, j, k = wp.tid()
    out[i, j, k] = i * 100 + j * 10 + k


@wp.kernel
def k_tid4(out: wp.array4d(dtype=int)):
    i, j, k, l = wp.tid()
    out[i, j, k, l] = i * 1000 + j * 100 + k * 10 + l


@wp.kernel
def k_shapes(a: wp.array2d(dtype=float), b: wp.array(dtype=float), out: wp.array(dtype=int)):
    out[0] = a.shape[0]
    out[1] = a.shape[1]
    out[2] = len(a)
    out[3] = len(b)
    out[4] = b.shape[0]
    out[5] = a.ndim


@wp.kernel
def k_shape_loop(a: wp.array2d(dtype=float), rowsum: wp.array(dtype=float)):
    i = wp.tid()
    s = 0.0
    for j in range(a.shape[1]):
        s += a[i, j]
    rowsum[i] = s


def test_multidim_index_read_write():
    an = np.arange(12, dtype=np.float32).reshape(3, 4)
    b = wp.zeros((3, 4), dtype=float)
    wp.launch(k_index2d, dim=(3, 4), inputs=[wp.array(an, dtype=float), b])
    np.testing.assert_array_equal(b.numpy(), an * 10 + an[::-1])


def test_tid_3d_and_4d():
    o3 = wp.zeros((2, 3, 4), dtype=int)
    wp.launch(k_tid3, dim=(2, 3, 4), inputs=[o3])
    i, j, k = np.meshgrid(range(2), range(3), range(4), indexing="ij")
    np.testing.assert_array_equal(o3.numpy(), i * 100 + j * 10 + k)
    o4 = wp.zeros((2, 3, 2, 3), dtype=int)
    wp.launch(k_tid4, dim=(2, 3, 2, 3), inputs=[o4])
    i, j, k, l = np.meshgrid(range(2), range(3), range(2), range(3), indexing="ij")
    np.testing.assert_array_equal(o4.numpy(), i * 1000 + j * 100 + k * 10 + l)


def test_shape_and_len():
    out = wp.zeros(6, dtype=int)
    wp.launch(k_shapes, dim=1, inputs=[wp.zeros((5, 7), dtype=float), wp.zeros(9, dtype=float), out])
    np.testing.assert_array_equal(out.numpy(), [5, 7, 5, 9, 9, 2])
    an = np.arange(15, dtype=np.float32).reshape(3, 5)
    rs = wp.zeros(3, dtype=float)
    wp.launch(k_shape_loop, dim=3, inputs=[wp.array(an, dtype=float), rs])
    np.testing.assert_array_equal(rs.numpy(), an.sum(axis=1))


@wp.kernel
def k_guarded(a: wp.array(dtype=float), out: wp.array2d(dtype=float), n: int):
    i = wp.tid()
    # a conditional expression evaluates only the chosen side: a[i] is never read out of bounds
    out[0, i] = a[i] * 2.0 if i < a.shape[0] else -1.0
    v = 0.0
    if i < n:
        v = a[i]
    out[1, i] = v


@wp.kernel
def k_ranges(out: wp.array(dtype=int), n: int, m: int):
    c = 0
    for j in range(n, 0, -3):  # dynamic, negative step
        out[c] = j
        c += 1
    for j in range(10, 0, -3):  # unrolled, negative step
        out[c] = j
        c += 1
    for j in range(m):  # m <= 0: no iteration
        out[c] = 99
        c += 1
    for j in range(100):  # longer than the unroll limit, constant bounds
        if j == 50:
            out[c] = j
            c += 1
    for j in range(3):
        j = j + 10  # rebinding the loop variable does not change the iteration
        out[c] = j
        c += 1
    out[15] = c


def test_conditional_expression_evaluates_one_side():
    a = wp.array([1.0, 2.0], dtype=float)
    out = wp.zeros((2, 4), dtype=float)
    wp.launch(k_guarded, dim=4, inputs=[a, out, 2])
    np.testing.assert_array_equal(out.numpy(), [[2.0, 4.0, -1.0, -1.0], [1.0, 2.0, 0.0, 0.0]])


def test_range_forms():
    out = wp.zeros(16, dtype=int)
    wp.launch(k_ranges, dim=1, inputs=[out, 10, -2])
    o = out.numpy()
    assert o[15] == 12
    np.testing.assert_array_equal(o[:12], [10, 7, 4, 1, 10, 7, 4, 1, 50, 10, 11, 12])


def test_boolean_operators_short_circuit():
    @wp.kernel(module="tfe_short_circuit")
    def k_short_circuit(a: wp.array(dtype=float), out: wp.array(dtype=float)):
        i = wp.tid()
        if i < a.shape[0] and a[i] > 0.0:  # the guard must keep a[i] in bounds
            out[i] = 1.0
        if i >= a.shape[0] or a[i] < 0.0:
            out[i] = out[i] + 10.0

    a = wp.array([1.0, -1.0], dtype=float)
    out = wp.zeros(4, dtype=float)
    wp.launch(k_short_circuit, dim=4, inputs=[a, out])
    np.testing.assert_array_equal(out.numpy(), [1.0, 10.0, 10.0, 10.0])


@pytest.mark.xfail(
    reason="BUG (Python/Warp compat): the loop variable of a dynamic loop is unknown after the loop", strict=True
)
def test_loop_variable_visible_after_loop():
    @wp.kernel(module="tfe_loop_var_after")
    def k_loop_var_after(out: wp.array(dtype=int), n: int):
        for j in range(n):
            out[1] = out[1] + 1
        out[0] = j

    out = wp.zeros(2, dtype=int)
    wp.launch(k_loop_var_after, dim=1, inputs=[out, 5])
    np.testing.assert_array_equal(out.numpy(), [4, 5])


@wp.struct
class LoopState:
    a: wp.vec2
    c: float
    valid: wp.bool


@wp.kernel
def k_component_stores_in_loops(n: int, x: wp.array(dtype=float), out: wp.array(dtype=float)):
    v = wp.vec3()
    m = wp.mat22()
    s = LoopState()
    for _ in range(n):
        v[0] = v[0] * x[0] + 1.0
        v.y += x[0] * x[0]
        m[1, 1] = m[1, 1] + v[0] * 2.0
        s.a[1] = s.a[1] + x[0]
        s.c += s.a[1]
    out[0] = v[0] + v[1] + m[1, 1] + s.c


def test_component_stores_in_a_dynamic_loop_carry_the_value():
    """`v[0] = ...`, `v.y += ...`, `m[i, j] = ...` and `s.f.g[k] = ...` inside a dynamic loop
    rebind the local: the next iteration and the code after the loop see the new value, and the
    gradient follows (they were silently lost before)."""

    def reference(x, n):
        v0 = vy = m = sa = sc = 0.0
        for _ in range(n):
            v0 = v0 * x + 1.0
            vy += x * x
            m += v0 * 2.0
            sa += x
            sc += sa
        return v0 + vy + m + sc

    x = wp.array([0.7], dtype=float, requires_grad=True)
    out = wp.zeros(1, dtype=float, requires_grad=True)
    tape = wp.Tape()
    with tape:
        wp.launch(k_component_stores_in_loops, dim=1, inputs=[4, x, out])
    tape.backward(grads={out: wp.ones(1, dtype=float)})
    assert out.numpy()[0] == pytest.approx(reference(0.7, 4), rel=1e-5)
    h = 1e-4
    fd = (reference(0.7 + h, 4) - reference(0.7 - h, 4)) / (2 * h)
    assert x.grad.numpy()[0] == pytest.approx(fd, rel=1e-4)


@wp.kernel(enable_backward=False)
def k_while_struct_field(out: wp.array(dtype=int)):
    s = LoopState()
    s.valid = True
    n = int(0)
    while s.valid:
        n += 1
        if n == 3:
            s.valid = False
    out[0] = n


def test_while_condition_reads_a_field_the_body_sets():
    out = wp.zeros(1, dtype=int)
    wp.launch(k_while_struct_field, dim=1, inputs=[out])
    assert out.numpy()[0] == 3


G_MUTABLE = 1


def test_changed_global_is_not_silently_stale():
    global G_MUTABLE

    @wp.kernel(module="tfe_stale_global")
    def k_stale(out: wp.array(dtype=int)):
        out[0] = G_MUTABLE

    out = wp.zeros(1, dtype=int)
    G_MUTABLE = 1
    try:
        wp.launch(k_stale, dim=1, inputs=[out])
        assert out.numpy()[0] == 1
        G_MUTABLE = 2
        try:
            wp.launch(k_stale, dim=1, inputs=[out])
        except Exception:  # noqa: BLE001
            return  # refusing to run stale code is an accepted policy
        assert out.numpy()[0] == 2
    finally:
        G_MUTABLE = 1


# ---------------------------------------------------------------------------------------------
# funcs
# ---------------------------------------------------------------------------------------------


@wp.func
def describe(x: float):
    return x * 2.0


@wp.func
def describe(x: int):  # noqa: F811 -- a second annotation set adds an overload
    return x * 3


@wp.func
def describe(x: wp.float64):  # noqa: F811
    return x * wp.float64(4.0)


@wp.func
def twice(x: typing.Any):
    return x + x


@wp.func
def axpy(a: float, x: float, y: float = 1.0, scale: float = 1.0):
    return (a * x + y) * scale


@wp.func
def divmod_(a: int, b: int):
    return a // b, a % b


@wp.func
def sum_and_diff(a: float, b: float):
    return a + b, a - b, a * b


@wp.func
def piecewise(x: float):
    if x < 0.0:
        return -1.0
    if x < 1.0:
        return x
    return 1.0 + x * 0.0


@wp.func
def first_above(x: wp.array(dtype=float), thresh: float) -> float:
    for j in range(x.shape[0]):
        if x[j] > thresh:
            return float(j)
    return -1.0


@wp.func
def inner_f(x: float):
    return x + 1.0


@wp.func
def middle_f(x: float):
    return inner_f(x) * 2.0


@wp.func
def outer_f(x: float):
    return middle_f(inner_f(x)) + inner_f(0.0)


@wp.kernel
def k_funcs(
    x: wp.array(dtype=float),
    x64: wp.array(dtype=wp.float64),
    fo: wp.array2d(dtype=float),
    io: wp.array2d(dtype=int),
    dout: wp.array2d(dtype=wp.float64),
):
    i = wp.tid()
    v = x[i]
    fo[0, i] = describe(v)
    io[0, i] = describe(i + 1)
    dout[0, i] = describe(x64[i])
    fo[1, i] = twice(v)
    io[1, i] = twice(i)
    dout[1, i] = twice(x64[i])
    fo[2, i] = axpy(2.0, v)
    fo[3, i] = axpy(2.0, v, 0.5)
    fo[4, i] = axpy(2.0, v, 0.5, 10.0)
    q, r = divmod_(i + 7, 3)
    io[2, i] = q
    io[3, i] = r
    s, d, p = sum_and_diff(v, 2.0)
    fo[5, i] = s
    fo[6, i] = d
    fo[7, i] = p
    fo[8, i] = piecewise(v)
    fo[9, i] = first_above(x, v)
    fo[10, i] = outer_f(v)
    store_to_row(fo, i, v)


@wp.func
def store_to_row(a: wp.array2d(dtype=float), i: int, v: float):
    a[11, i] = v * 5.0


def test_funcs_overloads_any_defaults_tuples_returns():
    xs = np.array([-0.5, 0.25, 2.0, 0.75], dtype=np.float32)
    x64s = np.array([0.1, -3.0, 7.5, 1e-3])
    fo = wp.zeros((12, 4), dtype=float)
    io = wp.zeros((4, 4), dtype=int)
    dout = wp.zeros((2, 4), dtype=wp.float64)
    wp.launch(k_funcs, dim=4, inputs=[wp.array(xs, dtype=float), wp.array(x64s, dtype=wp.float64), fo, io, dout])
    f, n, d = fo.numpy(), io.numpy(), dout.numpy()
    ar = np.arange(4)
    np.testing.assert_array_equal(f[0], xs * 2)
    np.testing.assert_array_equal(n[0], (ar + 1) * 3)
    np.testing.assert_array_equal(d[0], x64s * 4)
    np.testing.assert_array_equal(f[1], xs + xs)
    np.testing.assert_array_equal(n[1], ar + ar)
    np.testing.assert_array_equal(d[1], x64s + x64s)
    np.testing.assert_array_equal(f[2], 2 * xs + 1)
    np.testing.assert_array_equal(f[3], 2 * xs + np.float32(0.5))
    np.testing.assert_array_equal(f[4], (2 * xs + np.float32(0.5)) * 10)
    np.testing.assert_array_equal(n[2], (ar + 7) // 3)
    np.testing.assert_array_equal(n[3], (ar + 7) % 3)
    np.testing.assert_array_equal(f[5], xs + 2)
    np.testing.assert_array_equal(f[6], xs - 2)
    np.testing.assert_array_equal(f[7], xs * 2)
    np.testing.assert_array_equal(f[8], np.where(xs < 0, -1, np.where(xs < 1, xs, 1)))
    first = [float(np.argmax(xs > v)) if (xs > v).any() else -1.0 for v in xs]
    np.testing.assert_array_equal(f[9], first)
    np.testing.assert_array_equal(f[10], (xs + 2) * 2 + 1)
    np.testing.assert_array_equal(f[11], xs * 5)


def test_func_keyword_arguments():
    @wp.kernel(module="tfe_func_kwargs")
    def k_func_kwargs(out: wp.array(dtype=float)):
        out[0] = axpy(2.0, 3.0, scale=10.0)  # y keeps its default 1.0
        out[1] = axpy(2.0, 3.0, y=0.0)
        out[2] = axpy(x=3.0, a=2.0)

    out = wp.zeros(3, dtype=float)
    wp.launch(k_func_kwargs, dim=1, inputs=[out])
    np.testing.assert_array_equal(out.numpy(), [70.0, 6.0, 7.0])


FUNC_TABLE = (inner_f, middle_f)


@wp.kernel
def k_static_func(x: wp.array(dtype=float), y: wp.array(dtype=float)):
    i = wp.tid()
    y[i] = wp.static(FUNC_TABLE[1])(x[i]) + wp.static(FUNC_TABLE[0])(x[i])


def test_static_selects_a_func():
    y = wp.zeros(2, dtype=float)
    wp.launch(k_static_func, dim=2, inputs=[wp.array([1.0, 2.0], dtype=float), y])
    np.testing.assert_array_equal(y.numpy(), [(1 + 1) * 2 + 2, (2 + 1) * 2 + 3])


def test_static_errors_say_what_went_wrong():
    @wp.kernel(module="unique")
    def divides_by_zero(y: wp.array(dtype=float)):
        y[0] = wp.static(1.0 / 0.0)

    with pytest.raises(wp.codegen.WarpCodegenValueError, match="Error evaluating static expression: float division by zero"):
        wp.launch(divides_by_zero, 1, [wp.zeros(1, dtype=float)])

    arr = wp.zeros(2, dtype=float)

    @wp.kernel(module="unique")
    def makes_an_array(y: wp.array(dtype=float)):
        z = wp.static(arr)

    with pytest.raises(wp.WarpCodegenError, match="unsupported value: a Warp array cannot be created inside Warp kernels"):
        wp.launch(makes_an_array, 1, [arr])


def test_func_called_from_python_runs_python_body():
    assert piecewise(-3.0) == -1.0
    assert axpy(2.0, 3.0) == 7.0
    assert divmod_(7, 3) == (2, 1)


# ---------------------------------------------------------------------------------------------
# return anywhere in a kernel
# ---------------------------------------------------------------------------------------------


@wp.kernel
def k_early_return(x: wp.array(dtype=float), y: wp.array(dtype=float)):
    i = wp.tid()
    y[i] = -1.0
    if x[i] < 0.0:
        return
    y[i] = x[i]
    for j in range(10):
        if j >= i:
            return
        y[i] = y[i] + 1.0
    y[i] = 100.0  # reached only when i > 9


def test_kernel_early_return():
    xs = np.array([5.0, -1.0, 5.0, 5.0, -2.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0], dtype=np.float32)
    y = wp.zeros(12, dtype=float)
    wp.launch(k_early_return, dim=12, inputs=[wp.array(xs, dtype=float), y])
    expected = [5.0, -1.0, 7.0, 8.0, -1.0, 6.0, 7.0, 8.0, 9.0, 10.0, 100.0, 100.0]
    np.testing.assert_array_equal(y.numpy(), expected)


# ---------------------------------------------------------------------------------------------
# generic kernels
# ---------------------------------------------------------------------------------------------


@wp.kernel
def k_generic(a: wp.array(dtype=typing.Any), b: wp.array(dtype=typing.Any), s: typing.Any):
    i = wp.tid()
    b[i] = twice(a[i]) + s


def test_generic_kernel_specialises_per_dtype():
    for dtype, npd, s in ((float, np.float32, 0.5), (wp.float64, np.float64, wp.float64(0.25)), (int, np.int32, 3)):
        src = np.array([1, -2, 7], dtype=npd)
        b = wp.zeros(3, dtype=dtype)
        wp.launch(k_generic, dim=3, inputs=[wp.array(src, dtype=dtype), b, s])
        assert b.numpy().dtype == npd
        np.testing.assert_array_equal(b.numpy(), src * 2 + npd(float(s)))


# ---------------------------------------------------------------------------------------------
# print / printf
# ---------------------------------------------------------------------------------------------


@wp.kernel
def k_print(x: wp.array(dtype=float), n: int, d: wp.float64):
    print(x[0])
    print(n)
    print(d)
    print("hello")
    print(n > 2)
    wp.printf("%d|%f|%.3f\n", n, x[1], d)


def test_print_and_printf(capfd):
    capfd.readouterr()
    wp.launch(k_print, dim=1, inputs=[wp.array([1.5, 0.25], dtype=float), 3, wp.float64(2.25)])
    out = capfd.readouterr().out
    assert out == "1.5\n3\n2.25\nhello\nTrue\n3|0.250000|2.250\n"


@wp.kernel
def k_wp_print(n: int, b: wp.bool):
    wp.print(wp.uint8(n))  # Warp's builtin spelling of print(x)
    wp.print(wp.float16(n))
    wp.print(not b)
    wp.print("done")


def test_wp_print_prints_one_value_per_line(capfd):
    capfd.readouterr()
    wp.launch(k_wp_print, dim=1, inputs=[-1, True])
    assert capfd.readouterr().out == "255\n-1\nFalse\ndone\n"
    assert str(wp.bool(-1)) == "True" and str(wp.float32(2.5)) == "2.5"  # print(x) on the host
    with pytest.raises(RuntimeError, match="inside a @wp.kernel"):
        wp.print(1.0)


@wp.kernel
def k_print_in_backward(x: wp.array(dtype=float), y: wp.array(dtype=float)):
    i = wp.tid()
    v = x[i] * 2.0
    print(v)
    wp.printf("i=%d\n", i)
    y[i] = v


def test_the_backward_pass_prints_again_and_prints_adjoints(capfd):
    """As in Warp: the backward pass's replay prints what the forward printed, and each printed
    value's adjoint follows as "adj: <value>"."""
    x = wp.array([1.5], dtype=float, requires_grad=True)
    y = wp.zeros(1, dtype=float, requires_grad=True)
    tape = wp.Tape()
    with tape:
        wp.launch(k_print_in_backward, dim=1, inputs=[x, y])
    capfd.readouterr()
    tape.backward(grads={y: wp.array([4.0], dtype=float)})
    assert capfd.readouterr().out == "3\ni=0\nadj: 4\n"
    assert x.grad.numpy()[0] == 8.0


# ---------------------------------------------------------------------------------------------
# compile errors: WarpCodegenError subclasses naming the kernel and file:line
# ---------------------------------------------------------------------------------------------


def check_compile_error(kernel, inputs, marker, *words, cls=wp.WarpCodegenError):
    with pytest.raises(wp.WarpCodegenError) as info:
        wp.launch(kernel, dim=1, inputs=inputs)
    err = info.value
    assert isinstance(err, cls), type(err)
    assert "\n" not in str(err).strip(), str(err)  # the message alone, as Warp's
    msg = err.full_text()  # with the location notes
    assert kernel.__name__ in msg, msg
    assert location_of(THIS_FILE, marker) in msg, msg
    for w in words:
        assert w in msg, msg
    return msg


def fa():
    return wp.zeros(1, dtype=float)


def test_error_unknown_name():
    @wp.kernel(module="tfe_err_unknown_name")
    def k_err_unknown_name(a: wp.array(dtype=float)):
        a[0] = no_such_global_name + 1.0  # noqa: F821  # E:unknown-name

    msg = check_compile_error(k_err_unknown_name, [fa()], "E:unknown-name", "no_such_global_name")
    assert "a[0] = no_such_global_name + 1.0" in msg  # the offending source line is shown


def test_error_unknown_function():
    @wp.kernel(module="tfe_err_unknown_fn")
    def k_err_unknown_fn(a: wp.array(dtype=float)):
        a[0] = wp.no_such_function(1.0)  # E:unknown-fn

    check_compile_error(k_err_unknown_fn, [fa()], "E:unknown-fn", "no_such_function")


def test_error_unknown_plain_function():
    @wp.kernel(module="tfe_err_unknown_plain")
    def k_err_unknown_plain(a: wp.array(dtype=float)):
        a[0] = undefined_helper(1.0)  # noqa: F821  # E:unknown-plain

    check_compile_error(k_err_unknown_plain, [fa()], "E:unknown-plain", "undefined_helper")


def python_helper(x):
    return x


def test_error_calling_plain_python_function():
    @wp.kernel(module="tfe_err_plain_py")
    def k_err_plain_py(a: wp.array(dtype=float)):
        a[0] = python_helper(1.0)  # E:plain-py

    check_compile_error(k_err_plain_py, [fa()], "E:plain-py", "python_helper")


def test_error_try():
    @wp.kernel(module="tfe_err_try")
    def k_err_try(a: wp.array(dtype=float)):
        try:  # E:try
            a[0] = 1.0
        except Exception:  # noqa: BLE001, S110 -- kernel code, never run
            pass

    check_compile_error(k_err_try, [fa()], "E:try", "Try")


def test_error_lambda():
    @wp.kernel(module="tfe_err_lambda")
    def k_err_lambda(a: wp.array(dtype=float)):
        f = lambda v: v  # noqa: F841  # E:lambda
        a[0] = 1.0

    check_compile_error(k_err_lambda, [fa()], "E:lambda", "Lambda")


def test_error_list_comprehension():
    @wp.kernel(module="tfe_err_listcomp")
    def k_err_listcomp(a: wp.array(dtype=float)):
        v = [float(j) for j in range(3)]  # noqa: F841  # E:listcomp
        a[0] = 1.0

    check_compile_error(k_err_listcomp, [fa()], "E:listcomp", "ListComp")


def test_error_with():
    @wp.kernel(module="tfe_err_with")
    def k_err_with(a: wp.array(dtype=float)):
        with open("x"):  # E:with
            a[0] = 1.0

    check_compile_error(k_err_with, [fa()], "E:with", "With")


def test_error_wrong_index_count():
    @wp.kernel(module="tfe_err_index_count")
    def k_err_index_count(a: wp.array2d(dtype=float)):
        a[0] = 1.0  # E:index-count

    check_compile_error(k_err_index_count, [wp.zeros((2, 2), dtype=float)], "E:index-count", "2 dimension")


def test_error_wrong_index_count_read():
    @wp.kernel(module="tfe_err_index_count_read")
    def k_err_index_count_read(a: wp.array(dtype=float), b: wp.array(dtype=float)):
        b[0] = a[0, 1]  # E:index-count-read

    check_compile_error(k_err_index_count_read, [fa(), fa()], "E:index-count-read", "1 dimension")


def test_error_store_float64_into_float32_array():
    @wp.kernel(module="tfe_err_store64")
    def k_err_store64(a: wp.array(dtype=float), b: wp.array(dtype=wp.float64)):
        a[0] = b[0] * 2.0  # E:store64

    check_compile_error(
        k_err_store64, [fa(), wp.zeros(1, dtype=wp.float64)], "E:store64", "float64", "float32", cls=TypeError
    )


def test_error_named_float_literal_is_float32():
    @wp.kernel(module="tfe_err_named_literal")
    def k_err_named_literal(b: wp.array(dtype=wp.float64)):
        v = 1.5
        b[0] = v  # E:named-literal

    check_compile_error(k_err_named_literal, [wp.zeros(1, dtype=wp.float64)], "E:named-literal", "float32", "float64")


def test_error_mixed_float32_float64():
    @wp.kernel(module="tfe_err_mixed")
    def k_err_mixed(a: wp.array(dtype=float), b: wp.array(dtype=wp.float64)):
        v = a[0]
        w = b[0]
        a[0] = float(v + w)  # E:mixed

    check_compile_error(
        k_err_mixed, [fa(), wp.zeros(1, dtype=wp.float64)], "E:mixed", "float32", "float64", cls=TypeError
    )


def test_error_mixed_scalar_and_vector_types_in_warps_words():
    @wp.kernel(module="tfe_err_mixed_words")
    def k_err_mixed_words(a: wp.array(dtype=float), n: int):
        a[0] = n * a[0]  # E:mixed-words

    check_compile_error(
        k_err_mixed_words, [fa(), 1], "E:mixed-words", "Input types must be the same, got ['int32', 'float32']"
    )

    @wp.kernel(module="tfe_err_mixed_vectors")
    def k_err_mixed_vectors(a: wp.array(dtype=float)):
        a[0] = wp.dot(wp.vec2(1.0, 2.0), wp.vec2h(1.0, 2.0))  # E:mixed-vectors

    check_compile_error(
        k_err_mixed_vectors, [fa()], "E:mixed-vectors", "Input types must be exactly the same, got ['vec2f', 'vec2h']"
    )


@wp.func
def _one_pair(x: int) -> int:
    return (x + x, x * x)


@wp.func
def _typed_pair(x: int) -> tuple[int, int]:
    return (x, 1.23)


@wp.func
def _short_triple(x: int) -> tuple[int, int, int]:
    return (x + x, x * x)


def test_return_annotation_mismatches_name_the_annotation_as_written():
    @wp.kernel(module="unique")
    def one_pair(a: wp.array(dtype=int)):
        a[0] = _one_pair(1)

    @wp.kernel(module="unique")
    def typed_pair(a: wp.array(dtype=int)):
        x, y = _typed_pair(1)

    @wp.kernel(module="unique")
    def short_triple(a: wp.array(dtype=int)):
        x, y, z = _short_triple(1)

    cases = [
        (one_pair, "`_one_pair` has its return type annotated as `int` but the code returns 2 values."),
        (typed_pair, "annotated as `tuple[int, int]` but the code returns a tuple with types `(int32, float32)`."),
        (short_triple, "annotated as a tuple of 3 elements but the code returns 2 values."),
    ]
    for kernel, words in cases:
        with pytest.raises(wp.codegen.WarpCodegenTypeError) as info:
            wp.launch(kernel, dim=1, inputs=[wp.zeros(1, dtype=int)])
        assert words in str(info.value)


def test_error_int_into_float_array():
    @wp.kernel(module="tfe_err_int_store")
    def k_err_int_store(a: wp.array(dtype=float), n: int):
        a[0] = n  # E:int-store

    check_compile_error(k_err_int_store, [fa(), 1], "E:int-store", "int32", "float32")


def test_error_kernel_return_value():
    @wp.kernel(module="tfe_err_return")
    def k_err_return(a: wp.array(dtype=float)):
        return a[0]  # E:kernel-return

    check_compile_error(k_err_return, [fa()], "E:kernel-return")


def test_error_in_func_names_the_func_line():
    @wp.func
    def bad_helper_func(x: float):
        return x + undefined_in_func  # noqa: F821  # E:in-func

    @wp.kernel(module="tfe_err_in_func")
    def k_err_in_func(a: wp.array(dtype=float)):
        a[0] = bad_helper_func(a[0])  # E:call-bad-func

    with pytest.raises(wp.WarpCodegenError) as info:
        wp.launch(k_err_in_func, dim=1, inputs=[fa()])
    assert "undefined_in_func" in str(info.value)
    msg = info.value.full_text()
    assert location_of(THIS_FILE, "E:in-func") in msg, msg
    assert location_of(THIS_FILE, "E:call-bad-func") in msg, msg  # then the kernel's call site
    assert msg.index("bad_helper_func at") < msg.index("k_err_in_func at"), msg


def test_error_func_overload_mismatch():
    @wp.kernel(module="tfe_err_overload")
    def k_err_overload(a: wp.array(dtype=float)):
        a[0] = axpy(a[0])  # E:overload

    check_compile_error(k_err_overload, [fa()], "E:overload", "axpy")


def test_error_branch_only_variable():
    @wp.kernel(module="tfe_err_branch_var")
    def k_err_branch_var(a: wp.array(dtype=float)):
        if a[0] > 0.0:
            t = a[0] * 2.0
        a[0] = t  # E:branch-var

    check_compile_error(k_err_branch_var, [fa()], "E:branch-var", "'t'")


def test_error_unannotated_kernel_parameter():
    with pytest.raises((TypeError, wp.WarpCodegenError)) as info:

        @wp.kernel(module="tfe_err_noann")
        def k_err_noann(a, b: int):
            pass

    assert "k_err_noann" in str(info.value) and "'a'" in str(info.value)


def test_error_recursion():
    @wp.func
    def recurse_forever(x: int) -> int:
        return recurse_forever(x - 1)  # E:recursion

    @wp.kernel(module="tfe_err_recursion")
    def k_err_recursion(a: wp.array(dtype=int)):
        a[0] = recurse_forever(3)

    with pytest.raises(wp.WarpCodegenError) as info:
        wp.launch(k_err_recursion, dim=1, inputs=[wp.zeros(1, dtype=int)])
    assert "recurs" in str(info.value) and "recurse_forever" in str(info.value)


def test_error_tid_in_func():
    @wp.func
    def uses_tid(x: float):
        return x + float(wp.tid())  # E:tid-in-func

    @wp.kernel(module="tfe_err_tid_func")
    def k_err_tid_func(a: wp.array(dtype=float)):
        a[0] = uses_tid(a[0])

    with pytest.raises(wp.WarpCodegenError) as info:
        wp.launch(k_err_tid_func, dim=1, inputs=[fa()])
    assert location_of(THIS_FILE, "E:tid-in-func") in info.value.full_text()


def test_parameter_names_that_are_cpp_keywords():
    @wp.kernel(module="tfe_cxx_names")
    def k_plain_neighbour(a: wp.array(dtype=float)):
        a[wp.tid()] = 7.0

    @wp.kernel(module="tfe_cxx_names")
    def k_cxx_names(do: wp.array(dtype=float), new: wp.array(dtype=float), M_PI: float, default: int):
        t = wp.tid()
        new[t] = do[t] * 2.0 + M_PI + float(default)

    a = wp.zeros(2, dtype=float)
    wp.launch(k_plain_neighbour, dim=2, inputs=[a])
    np.testing.assert_array_equal(a.numpy(), [7.0, 7.0])
    b = wp.zeros(2, dtype=float)
    wp.launch(k_cxx_names, dim=2, inputs=[wp.array([1.0, 2.0], dtype=float), b, 0.5, 1])
    np.testing.assert_array_equal(b.numpy(), [3.5, 5.5])


def test_error_does_not_poison_module_or_later_launches():
    """A kernel that fails to compile leaves the good kernels of the file usable."""
    y = wp.zeros(3, dtype=float)
    wp.launch(scale2, dim=3, inputs=[wp.array([1.0, 2.0, 3.0], dtype=float), y])
    np.testing.assert_array_equal(y.numpy(), f32([3.0, 5.0, 7.0]))


@wp.kernel
def k_array_truth(arr: wp.array(dtype=int), result: wp.array(dtype=int)):
    tid = wp.tid()
    if arr and arr[tid] == 0:  # a null array is false; arr[tid] is never read then
        result[tid] = -1
    elif not arr:
        result[tid] = 2
    else:
        result[tid] = 1


@wp.kernel
def k_constant_conditions(result: wp.array(dtype=int)):
    if 123:  # a constant condition keeps only the branch it takes
        x = 123
    if 0:
        x = 7
    result[0] = x


def test_arrays_and_constants_as_conditions():
    r = wp.zeros(2, dtype=int)
    wp.launch(k_array_truth, 2, [None, r])
    assert r.numpy().tolist() == [2, 2]
    wp.launch(k_array_truth, 2, [wp.array([0, 5], dtype=int), r])
    assert r.numpy().tolist() == [-1, 1]
    wp.launch(k_constant_conditions, 1, [r])
    assert r.numpy()[0] == 123


@wp.func
def f_check_one(value: int):
    assert value == 1, "element must be 1"


@wp.kernel(module="tf_assert")
def k_assert(a: wp.array(dtype=int), check_func: int):
    i = wp.tid()
    if check_func:
        f_check_one(a[i])
    else:
        assert a[i] > 0 and a[i] < 2


def test_assert_raises_in_debug_builds_and_is_compiled_out_in_release():
    wp.launch(k_assert, 2, [wp.ones(2, dtype=int), 0])
    wp.launch(k_assert, 2, [wp.ones(2, dtype=int), 1])
    with pytest.raises(AssertionError, match=r"kernel 'k_assert' at .*test_frontend.py:\d+: assert a\[i\] > 0"):
        wp.launch(k_assert, 2, [wp.full(2, value=3, dtype=int), 0])
    with pytest.raises(AssertionError, match=r"assert value == 1, \"element must be 1\""):
        wp.launch(k_assert, 2, [wp.zeros(2, dtype=int), 1])
    assert wp.get_module_options("tf_assert")["mode"] is None
    wp.set_module_options({"mode": "release"}, module="tf_assert")
    try:
        wp.launch(k_assert, 2, [wp.zeros(2, dtype=int), 1])  # the module's mode: no check
    finally:
        wp.set_module_options({"mode": None}, module="tf_assert")


@wp.struct
class PinnedRecord:
    value: float


@wp.func
def f_counted_index(counter: wp.array(dtype=int), i: int) -> int:
    wp.atomic_add(counter, 0, 1)
    return i


@wp.kernel
def k_augassign_index_once(counter: wp.array(dtype=int), data: wp.array(dtype=PinnedRecord), vs: wp.array(dtype=wp.vec3)):
    i = wp.tid()
    data[f_counted_index(counter, i)].value += 5.0
    v = vs[i]
    v[f_counted_index(counter, 1)] *= 2.0
    vs[i] = v


def test_augmented_assignment_evaluates_its_target_indices_once():
    counter = wp.zeros(1, dtype=int)
    data = wp.zeros(2, dtype=PinnedRecord)
    vs = wp.array([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]], dtype=wp.vec3)
    wp.launch(k_augassign_index_once, 2, [counter, data, vs])
    assert counter.numpy()[0] == 4  # two augmented assignments per thread
    np.testing.assert_allclose(data.numpy()["value"], [5.0, 5.0])
    np.testing.assert_allclose(vs.numpy(), [[1.0, 4.0, 3.0], [4.0, 10.0, 6.0]])


@wp.kernel
def k_loop_variable_after_loop(out: wp.array(dtype=wp.int32)):
    s = int(0)
    for i in range(3):  # unrolled; as in Python, i keeps its last value after the loop
        s = s + i
    k = int(0)
    while k < 2:
        i = i + 1
        k = k + 1
    out[0] = i * 10 + s


@wp.kernel
def k_transform_by_keyword(vs: wp.array(dtype=wp.vec3), qs: wp.array(dtype=wp.quat), out: wp.array(dtype=wp.transform)):
    out[0] = wp.transformation(p=vs[0], q=qs[0])


def test_loop_variable_survives_its_loop_and_transformation_keywords():
    out = wp.zeros(1, dtype=wp.int32)
    wp.launch(k_loop_variable_after_loop, 1, [out])
    assert out.numpy()[0] == 43
    t = wp.zeros(1, dtype=wp.transform)
    wp.launch(k_transform_by_keyword, 1, [wp.array([[2.0, 3.0, 4.0]], dtype=wp.vec3), wp.array([[0.0, 0.0, 0.0, 1.0]], dtype=wp.quat), t])
    assert t.numpy().tolist() == [[2.0, 3.0, 4.0, 0.0, 0.0, 0.0, 1.0]]


def test_a_kernel_returning_a_value_is_a_type_error():
    @wp.kernel(module="unique")
    def returns_none(x: float):
        return None

    with pytest.raises(wp.codegen.WarpCodegenTypeError, match="Warp kernels cannot return values"):
        wp.launch(returns_none, 1, [1.0])

    @wp.kernel(module="unique")
    def annotated_float(x: float) -> float:  # a value-type annotation, even with a bare return
        return

    with pytest.raises(wp.codegen.WarpCodegenTypeError, match="Warp kernels cannot return values"):
        wp.launch(annotated_float, 1, [1.0])

    @wp.kernel(module="unique")
    def annotated_none(x: float) -> None:
        return

    wp.launch(annotated_none, 1, [1.0])


def test_missing_functions_and_attributes_are_named():
    @wp.kernel(module="unique")
    def missing_function():
        x = wp.nonexistent_func()  # noqa: F841

    @wp.kernel(module="unique")
    def missing_namespace():
        t = wp.foo.bar.tid()  # noqa: F841

    with pytest.raises(AttributeError, match="Could not find function wp.nonexistent_func"):
        wp.launch(missing_function, 1, [])
    with pytest.raises(AttributeError, match="`foo` is not an attribute of 'wp'"):
        wp.launch(missing_namespace, 1, [])


@wp.kernel
def k_reversed_range(start: wp.int32, end: wp.int32, step: wp.int32, count: wp.array(dtype=wp.int32), values: wp.array(dtype=wp.int32)):
    n = wp.int32(0)
    for i in reversed(range(start, end, step)):  # runtime bounds: a dynamic loop
        values[n] = i
        n += 1
    for j in reversed(range(3)):  # constant bounds: unrolled
        values[20 + j] = 2 - j + 100
    count[0] = n


@pytest.mark.parametrize("bounds", [(-2, 8, 3), (9, -3, -2), (5, 5, 1), (0, 10, -1)])
def test_reversed_range_visits_the_range_backwards(bounds):
    count = wp.zeros(1, dtype=wp.int32)
    values = wp.zeros(32, dtype=wp.int32)
    wp.launch(k_reversed_range, 1, [*bounds, count, values])
    expected = list(reversed(range(*bounds)))
    assert count.numpy()[0] == len(expected) and values.numpy()[: len(expected)].tolist() == expected
    assert values.numpy()[20:23].tolist() == [102, 101, 100]
