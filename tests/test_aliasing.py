"""Variable aliasing (``b = a``) is a plain rebinding: gradients flow through every alias.

Each kernel maps ``x`` to ``y`` through aliases in a different place: inside funcs followed by
a branch on the alias, array loads, dynamic and unrolled loops, while loops, struct fields
(arguments and locals), vector components, chains of aliases, an alias reassigned in one branch
only, an alias taken before the original is rebound, an alias of a loop-carried accumulator used
after the loop, array parameters aliased. ``grad_check`` compares the tape gradient of
``sum(w * y)`` with central finite differences in float64, and each test also checks the
forward values against NumPy, so that an alias that wrongly follows (or fails to follow) a
rebinding is caught in the forward pass too.

All kernels are at module level so one C++ build covers them.
"""

import numpy as np

import weft as wp
from fd_check import tape_vs_fd

F64 = wp.float64
A = wp.array(dtype=wp.float64)

RNG = np.random.default_rng(7)


def grad_check(kernel, x_np, y_shape, expected, extra=(), dim=None, eps=1e-6, rtol=1e-6, atol=1e-8):
    """Forward values equal ``expected``; the tape gradient of sum(w * y) equals central FD."""
    _, analytic = tape_vs_fd(kernel, x_np, y_shape, RNG, extra, dim, eps, rtol, atol, expected=expected)
    assert np.all(analytic != 0.0), "every input should get a gradient in these kernels"
    return analytic


X = np.array([0.3, 0.9, -0.7, 1.6])


# 1. ``y = x`` inside a func, then branching on (and rebinding) the alias --------------------


@wp.func
def f_alias_branch(x: F64):
    y = x
    if y > F64(0.5):
        y = y * y
    else:
        y = wp.sin(y)
    return y * x


@wp.kernel
def k_func_alias_branch(x: A, y: A):
    i = wp.tid()
    y[i] = f_alias_branch(x[i])


def test_alias_in_func_then_branch():
    expected = np.where(X > 0.5, X * X, np.sin(X)) * X
    grad_check(k_func_alias_branch, X, 4, expected)


# 2. ``v = a[i]; b = v; out[i] = b`` ---------------------------------------------------------


@wp.kernel
def k_load_alias(x: A, y: A):
    i = wp.tid()
    v = x[i]
    b = v
    y[i] = b * v + b


def test_alias_of_a_load():
    grad_check(k_load_alias, X, 4, X * X + X)


# 3. an alias taken before the original is rebound keeps the old value -------------------------


@wp.kernel
def k_alias_then_rebind(x: A, y: A):
    i = wp.tid()
    v = x[i]
    w = v
    v = v * v * v
    y[i] = v + F64(2.0) * w


def test_alias_keeps_the_value_from_before_a_rebinding():
    grad_check(k_alias_then_rebind, X, 4, X**3 + 2.0 * X)


# 4. aliases inside a dynamic loop -------------------------------------------------------------


@wp.kernel
def k_dynamic_loop_alias(x: A, y: A, n: int):
    i = wp.tid()
    s = x[i]
    for j in range(n):
        t = s
        s = t * x[i] + F64(0.1) * wp.sin(t)
    y[i] = s


def test_alias_in_dynamic_loop():
    expected = X.copy()
    for _ in range(4):
        expected = expected * X + 0.1 * np.sin(expected)
    grad_check(k_dynamic_loop_alias, X, 4, expected, extra=(4,))


# 5. aliases inside an unrolled loop -----------------------------------------------------------


@wp.kernel
def k_unrolled_loop_alias(x: A, y: A):
    i = wp.tid()
    s = x[i]
    acc = F64(0.0)
    for j in range(3):
        prev = s
        s = prev * prev * F64(0.5) + x[i]
        acc = acc + prev
    y[i] = s + acc


def test_alias_in_unrolled_loop():
    s, acc = X.copy(), np.zeros(4)
    for _ in range(3):
        prev = s
        s = prev * prev * 0.5 + X
        acc = acc + prev
    grad_check(k_unrolled_loop_alias, X, 4, s + acc)


# 6. aliases in a while loop -------------------------------------------------------------------


@wp.kernel
def k_while_alias(x: A, y: A, n: int):
    i = wp.tid()
    z = x[i]
    k = 0
    while k < n:
        old = z
        z = old * F64(1.1) + wp.cos(old) * x[i]
        k = k + 1
    y[i] = z


def test_alias_in_while_loop():
    z = X.copy()
    for _ in range(3):
        z = z * 1.1 + np.cos(z) * X
    grad_check(k_while_alias, X, 4, z, extra=(3,))


# 7. aliases of struct fields (an argument's and a local struct's) -----------------------------


@wp.struct
class Coeffs:
    scale: F64
    shift: F64


@wp.kernel
def k_struct_field_alias(x: A, y: A, c: Coeffs):
    i = wp.tid()
    p = Coeffs()
    p.scale = x[i]
    p.shift = c.shift
    s = p.scale  # alias of a field
    q = p  # a struct copy: changing q leaves p alone
    q.scale = s * s
    k = c.scale
    y[i] = k * p.scale + q.scale * s + p.shift


def test_alias_of_struct_fields():
    c = Coeffs()
    c.scale = 2.0
    c.shift = 0.25
    grad_check(k_struct_field_alias, X, 4, 2.0 * X + X**3 + 0.25, extra=(c,))


# 8. aliases of vector components --------------------------------------------------------------


@wp.kernel
def k_vector_alias(x: A, y: A):
    v = wp.vec3d(x[0], x[1], x[2])
    c = v[1]
    d = c
    w = v  # a copy: component writes to w leave v alone
    w[0] = d * v[2]
    e = w.x
    y[0] = e * v[0] + wp.length(v) * d
    y[1] = v[0] + w[1] * w[0]


def test_alias_of_vector_components():
    x = np.array([0.4, -1.2, 0.8])
    e = x[1] * x[2]
    expected = [e * x[0] + np.linalg.norm(x) * x[1], x[0] + x[1] * e]
    grad_check(k_vector_alias, x, 2, expected, dim=1)


# 9. a chain of aliases ------------------------------------------------------------------------


@wp.kernel
def k_alias_chain(x: A, y: A):
    i = wp.tid()
    a = x[i]
    b = a
    c = b
    d = c
    e = d
    y[i] = e * a + wp.sin(c) * b + d


def test_chain_of_aliases():
    grad_check(k_alias_chain, X, 4, X * X + np.sin(X) * X + X)


# 10. an alias reassigned in one branch only ---------------------------------------------------


@wp.kernel
def k_alias_one_branch(x: A, y: A):
    i = wp.tid()
    v = x[i]
    y_ = v
    if v > F64(0.0):
        y_ = v * v * F64(3.0)
    y[i] = y_ + v


def test_alias_reassigned_in_one_branch_only():
    grad_check(k_alias_one_branch, X, 4, np.where(X > 0.0, 3.0 * X * X, X) + X)


# 11. an alias of a loop-carried accumulator, used after the loop -----------------------------


@wp.kernel
def k_accumulator_alias(x: A, y: A, n: int):
    i = wp.tid()
    s = F64(0.0)
    for j in range(n):
        s = s + x[j] * x[j]
    t = s
    y[i] = t * s * x[i]


def test_alias_of_loop_carried_accumulator_after_the_loop():
    s = np.sum(X * X)
    grad_check(k_accumulator_alias, X, 4, s * s * X, extra=(4,))


# 12. an alias of the accumulator taken inside the loop, used after it -------------------------


@wp.kernel
def k_accumulator_alias_inside(x: A, y: A, n: int):
    i = wp.tid()
    s = x[i]
    last = s
    for j in range(n):
        last = s
        s = s * x[j]
    y[i] = wp.sin(last) + s


def test_alias_of_accumulator_taken_inside_the_loop():
    s, last = X.copy(), X.copy()
    for j in range(4):
        last = s
        s = s * X[j]
    grad_check(k_accumulator_alias_inside, X, 4, np.sin(last) + s, extra=(4,))


# 13. a func that returns an alias of its parameter -------------------------------------------


@wp.func
def f_identity_alias(v: F64):
    w = v
    u = w
    return u


@wp.kernel
def k_func_returns_alias(x: A, y: A):
    i = wp.tid()
    a = f_identity_alias(x[i])
    y[i] = a * f_identity_alias(wp.exp(a))


def test_func_returning_an_alias():
    grad_check(k_func_returns_alias, X, 4, X * np.exp(X))


@wp.func
def f_alias_of_result(v: F64):
    w = v * v
    u = w
    return u


@wp.kernel
def k_func_returns_alias_of_result(x: A, y: A):
    i = wp.tid()
    a = f_alias_of_result(x[i])
    y[i] = a * x[i]


def test_func_returning_an_alias_of_a_computed_value():
    grad_check(k_func_returns_alias_of_result, X, 4, X**3)


# 14. an array parameter aliased --------------------------------------------------------------


@wp.kernel
def k_array_alias(x: A, y: A):
    i = wp.tid()
    b = x
    c = b
    y[i] = b[i] * x[i] + c[i]


def test_alias_of_an_array():
    grad_check(k_array_alias, X, 4, X * X + X)


# 15. an alias inside a dynamic loop with break ------------------------------------------------


@wp.kernel
def k_loop_alias_break(x: A, y: A, n: int):
    i = wp.tid()
    s = x[i]
    for j in range(n):
        t = s
        if t > F64(2.0):
            break
        s = t * F64(1.5) + x[j]
    y[i] = s


def test_alias_in_loop_with_break():
    expected = []
    for i in range(4):
        s = X[i]
        for j in range(4):
            t = s
            if t > 2.0:
                break
            s = t * 1.5 + X[j]
        expected.append(s)
    grad_check(k_loop_alias_break, X, 4, expected, extra=(4,))
