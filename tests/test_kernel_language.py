"""Kernel-language features Warp programs lean on: generic composite annotations
(``wp.types.vector(length=Any, dtype=...)`` and kin) on kernel and func parameters, and the
``expect_eq`` / ``expect_neq`` / ``expect_near`` checks that print instead of stopping.

Formats and behaviours are warp-lang 1.19's unless a comment says otherwise.
"""

from typing import Any

import numpy as np
import pytest

import weft as wp

AnyVec = wp.types.vector(length=Any, dtype=wp.float32)
AnyMat = wp.types.matrix(shape=(Any, Any), dtype=wp.float32)


def test_generic_annotations_are_described_and_compared_by_their_parts():
    assert repr(AnyVec) == "vector(length=Any, dtype=float32)"
    assert repr(wp.types.matrix((Any, 3), Any)) == "matrix(shape=(Any, 3), dtype=Any)"
    assert repr(wp.types.quaternion(Any)) == "quaternion(dtype=Any)"
    assert repr(wp.types.transformation(Any)) == "transformation(dtype=Any)"
    assert wp.types.vector(Any, float) == AnyVec and hash(wp.types.vector(Any, float)) == hash(AnyVec)
    assert AnyVec.accepts(wp.vec2) and AnyVec.accepts(wp.types.vector(7, wp.float32))
    assert not AnyVec.accepts(wp.vec3d) and not AnyVec.accepts(wp.mat22) and not AnyVec.accepts(wp.float32)
    rows3 = wp.types.matrix((3, Any), Any)
    assert rows3.accepts(wp.mat33d) and rows3.accepts(wp.types.matrix((3, 4), wp.float16))
    assert not rows3.accepts(wp.mat22)
    assert wp.types.quaternion(Any).accepts(wp.quath) and not wp.types.quaternion(Any).accepts(wp.vec4)


@wp.func
def any_length(v: AnyVec):
    return wp.length(v)


@wp.func
def trace_any(m: AnyMat):
    t = float(0.0)
    for i in range(len(m)):
        t += m[i, i]
    return t


@wp.kernel
def k_generic_composites(v: AnyVec, m: AnyMat, sizes: wp.array(dtype=int), out: wp.array(dtype=float)):
    sizes[0] = len(v)
    sizes[1] = len(m)
    out[0] = any_length(v)
    out[1] = trace_any(m)
    out[2] = any_length(wp.vec2(3.0, 4.0))  # a func instance per concrete type


@pytest.mark.parametrize("n, rows", [(2, 2), (3, 4), (5, 3)])
def test_generic_kernel_parameters_take_each_concrete_type(n, rows):
    rng = np.random.default_rng(n * 10 + rows)
    vals = rng.uniform(-2, 2, n)
    mvals = rng.uniform(-2, 2, (rows, rows))
    v = wp.types.vector(n, wp.float32)(*vals.tolist())
    m = wp.types.matrix((rows, rows), wp.float32)(*mvals.ravel().tolist())
    sizes, out = wp.zeros(2, dtype=int), wp.zeros(3, dtype=float)
    wp.launch(k_generic_composites, dim=1, inputs=[v, m], outputs=[sizes, out])
    assert sizes.numpy().tolist() == [n, rows]
    np.testing.assert_allclose(out.numpy(), [np.linalg.norm(vals), np.trace(mvals), 5.0], rtol=1e-5)


def test_generic_kernel_parameter_refuses_a_mismatched_type():
    sizes, out = wp.zeros(2, dtype=int), wp.zeros(3, dtype=float)
    with pytest.raises(TypeError, match=r"argument 'v' expects vector\(length=Any, dtype=float32\), got vec3d"):
        wp.launch(k_generic_composites, dim=1, inputs=[wp.vec3d(), wp.mat22()], outputs=[sizes, out])


@wp.func
def scaled(q: wp.types.quaternion(Any), s: float):
    return wp.length(q) * s


@wp.kernel
def k_generic_grad(x: wp.array(dtype=wp.vec3), y: wp.array(dtype=float)):
    i = wp.tid()
    y[i] = any_length(x[i]) * any_length(x[i]) + scaled(wp.quat(x[i][0], x[i][1], x[i][2], 1.0), 2.0)


def test_gradients_flow_through_generic_funcs():
    rng = np.random.default_rng(3)
    xs = rng.uniform(-1, 1, (4, 3)).astype(np.float32)
    x = wp.array(xs, dtype=wp.vec3, requires_grad=True)
    y = wp.zeros(4, dtype=float, requires_grad=True)
    tape = wp.Tape()
    with tape:
        wp.launch(k_generic_grad, dim=4, inputs=[x], outputs=[y])
    tape.backward(grads={y: wp.ones(4, dtype=float)})
    q = np.sqrt((xs**2).sum(axis=1) + 1.0)
    np.testing.assert_allclose(y.numpy(), (xs**2).sum(axis=1) + 2.0 * q, rtol=1e-5)
    expected = 2.0 * xs + 2.0 * xs / q[:, None]  # d/dx |x|^2 + 2 |(x, 1)|
    np.testing.assert_allclose(x.grad.numpy(), expected, rtol=1e-4)


@wp.kernel
def k_expectations(x: wp.array(dtype=float), out: wp.array(dtype=float)):
    wp.expect_eq(x[0], 1.0)
    wp.expect_eq(x[0], 2.0)
    wp.expect_neq(x[0], 2.0)
    wp.expect_neq(int(x[0]), 1)
    wp.expect_near(x[0], 1.0000001)
    wp.expect_near(x[0], 1.5, 0.25)
    wp.expect_eq(wp.vec3(1.0, 2.0, 3.0), wp.vec3(1.0, 2.0, 3.0))
    wp.expect_neq(wp.vec2(1.0, 2.0), wp.vec2(1.0, 2.0))
    wp.expect_near(wp.vec2(1.0, 2.0), wp.vec2(1.0, 2.05), 0.1)
    wp.expect_near(wp.vec2(1.0, 2.0), wp.vec2(1.0, 2.5), 0.1)
    out[0] = x[0] * 3.0  # the kernel goes on after a failed expectation


def test_expectations_print_each_failure_and_the_kernel_goes_on(capfd):
    capfd.readouterr()
    x = wp.array([1.0], dtype=float, requires_grad=True)
    out = wp.zeros(1, dtype=float, requires_grad=True)
    tape = wp.Tape()
    with tape:
        wp.launch(k_expectations, dim=1, inputs=[x], outputs=[out])
    wp.synchronize()
    lines = capfd.readouterr().out.splitlines()
    assert lines == [
        "Error: expect_eq(1, 2) failed",
        "Error: expect_neq(1, 1) failed",
        "Error: expect_near(1, 1.5) failed",
        "Error: expect_neq(1 2 , 1 2 ) failed",  # composites print as wp.print shows them
        "Error: expect_near(1 2 , 1 2.5 ) failed",
    ], lines
    assert out.numpy()[0] == 3.0
    tape.backward(grads={out: wp.ones(1, dtype=float)})
    assert x.grad.numpy()[0] == 3.0  # no adjoint of their own; the backward pass does not print again
    assert capfd.readouterr().out == ""


def test_expectations_on_the_host_print_like_the_kernel(capfd):
    capfd.readouterr()
    wp.expect_eq(1, 2)
    wp.expect_eq(3, 3)
    wp.expect_neq(2.0, 2.0)
    wp.expect_near(1.0, 1.0000001)
    wp.expect_near(1.0, 1.1, 0.05)
    assert capfd.readouterr().out.splitlines() == [
        "Error: expect_eq(1, 2) failed",
        "Error: expect_neq(2.0, 2.0) failed",
        "Error: expect_near(1.0, 1.1) failed",
    ]
