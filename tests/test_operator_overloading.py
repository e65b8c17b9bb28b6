"""Operators on user types, as in Warp: a @wp.func named like an operator's builtin (``add`` for
``+``, ``mul`` for ``*``, ``neg`` for unary ``-``) visible to the kernel is called by the
operator when it takes the operands; other operand types keep the builtin operator."""

import numpy as np

import weft as wp


@wp.struct
class Dual:
    re: float
    im: float


@wp.func
def add(a: Dual, b: Dual) -> Dual:
    return Dual(a.re + b.re, a.im + b.im)


@wp.func
def mul(a: Dual, b: Dual) -> Dual:
    return Dual(a.re * b.re - a.im * b.im, a.re * b.im + a.im * b.re)


@wp.func
def neg(a: Dual) -> Dual:
    return Dual(-a.re, -a.im)


@wp.kernel
def k_complex(x: wp.array(dtype=float), out: wp.array(dtype=float)):
    a = Dual(x[0], x[1])
    b = Dual(3.0, 4.0)
    c = a + b
    d = a * b
    e = -d
    e += c
    out[0] = c.re
    out[1] = c.im
    out[2] = d.re
    out[3] = d.im
    out[4] = e.re
    out[5] = e.im
    out[6] = x[0] * x[1] + x[0]  # floats: the builtin operators


def test_struct_operators_call_the_user_funcs_and_floats_keep_the_builtins():
    x = wp.array(np.array([1.0, 2.0], np.float32), requires_grad=True)
    out = wp.zeros(7, dtype=float, requires_grad=True)
    tape = wp.Tape()
    with tape:
        wp.launch(k_complex, 1, [x, out])
    a, b = complex(1.0, 2.0), complex(3.0, 4.0)
    c, d = a + b, a * b
    e = -d + c
    np.testing.assert_allclose(out.numpy(), [c.real, c.imag, d.real, d.imag, e.real, e.imag, 1.0 * 2.0 + 1.0])
    # d.re = x0 * 3 - x1 * 4: its gradient goes through the user mul
    tape.backward(grads={out: wp.array(np.eye(7, dtype=np.float32)[2])})
    np.testing.assert_allclose(x.grad.numpy(), [3.0, -4.0])
