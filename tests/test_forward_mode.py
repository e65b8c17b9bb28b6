"""Forward mode: wp.autograd.jvp against reverse-mode Jacobians and finite differences,
wp.autograd.hvp against analytic Hessians and finite differences of gradients."""

import numpy as np
import pytest

import weft as wp

RNG = np.random.default_rng(7)


def _jvp_by_jacobian(kernel, dim, inputs, outputs, tangents):
    """sum_i J[i, o] @ t_i for each output, from the reverse-mode Jacobian."""
    jac = wp.autograd.jacobian(kernel, dim, inputs=inputs, outputs=outputs)
    out = []
    for o, y in enumerate(outputs):
        total = 0.0
        for i, t in enumerate(tangents):
            j = jac[(i, o)].numpy().reshape(jac[(i, o)].shape[0], -1).astype(np.float64)
            total = total + j @ t.numpy().astype(np.float64).reshape(-1)
        out.append(total.reshape(y.numpy().shape))
    return out


def _jvp_by_fd(kernel, dim, inputs, outputs, tangents, eps=1e-4):
    """(f(x + eps t) - f(x - eps t)) / (2 eps), inputs and outputs in float64 copies."""
    base = [x.numpy().astype(np.float64) for x in inputs]

    def run(sign):
        xs = [wp.array(b + sign * eps * t.numpy(), dtype=x.dtype) for b, t, x in zip(base, tangents, inputs)]
        ys = [wp.zeros_like(y) for y in outputs]
        wp.launch(kernel, dim, inputs=xs, outputs=ys)
        return [y.numpy().astype(np.float64) for y in ys]

    hi, lo = run(1.0), run(-1.0)
    return [(a - b) / (2 * eps) for a, b in zip(hi, lo)]


def _check(kernel, dim, inputs, outputs, rtol=2e-4, fd_rtol=2e-2):
    tangents = [wp.array(RNG.standard_normal(x.numpy().shape), dtype=x.dtype) for x in inputs]
    for y in outputs:
        y.zero_()
    got = wp.autograd.jvp(lambda: wp.launch(kernel, dim, inputs=inputs, outputs=outputs), inputs, tangents, outputs)
    want = _jvp_by_jacobian(kernel, dim, inputs, outputs, tangents)
    fd = _jvp_by_fd(kernel, dim, inputs, outputs, tangents)
    for g, w, f in zip(got, want, fd):
        g = g.numpy().astype(np.float64)
        scale = max(1.0, np.abs(w).max())
        np.testing.assert_allclose(g, w, rtol=rtol, atol=rtol * scale)
        np.testing.assert_allclose(g, f, rtol=fd_rtol, atol=fd_rtol * scale)
    return got


def _arr(shape, dtype=float, lo=-1.0, hi=1.0):
    n = int(np.prod(shape))
    comps = getattr(dtype, "_length", 1)
    data = RNG.uniform(lo, hi, size=(n, comps) if comps > 1 else n)
    return wp.array(data, dtype=dtype, requires_grad=True)


# --------------------------------------------------------------------------- builtin families


@wp.kernel
def scalar_family(x: wp.array(dtype=float), y: wp.array(dtype=float)):
    i = wp.tid()
    a = x[i]
    b = wp.sin(a) * wp.cos(2.0 * a) + wp.tan(0.3 * a) + wp.exp(a) - wp.log(a + 2.0) + wp.sqrt(a + 1.5)
    b += wp.pow(a + 2.0, 1.7) + wp.atan2(a, 1.3) + wp.abs(a) * wp.min(a, 0.2) + wp.max(a * a, 0.1)
    b += wp.clamp(a, -0.5, 0.5) + wp.tanh(a) + wp.sinh(a) + wp.cosh(a) + wp.atan(a) + wp.erf(a) + wp.cbrt(a + 2.0)
    b += wp.log2(a + 3.0) + wp.log10(a + 3.0) + wp.asin(0.5 * a) + wp.acos(0.4 * a) + a / (a * a + 1.0)
    b += wp.lerp(a, a * a, 0.3) + wp.smoothstep(-1.0, 1.0, a) + wp.floor(a) + wp.float32(wp.float64(a) * wp.float64(2.0))
    y[i] = b


@wp.kernel
def vector_family(x: wp.array(dtype=wp.vec3), y: wp.array(dtype=wp.vec3), s: wp.array(dtype=float)):
    i = wp.tid()
    a = x[i]
    b = wp.vec3(a[1], a[2] * a[0], 0.5)
    c = wp.cross(a, b) + wp.normalize(a) * wp.length(b) + wp.cw_mul(a, b) + wp.cw_div(a, b + wp.vec3(3.0))
    c = c + a / (wp.length_sq(a) + 1.0) + 2.0 * a - b
    y[i] = c
    s[i] = wp.dot(a, b) + wp.norm_l1(a) + wp.norm_huber(a, 0.5) + wp.max(a) + wp.min(b)


@wp.kernel
def matrix_family(x: wp.array(dtype=wp.mat33), v: wp.array(dtype=wp.vec3), y: wp.array(dtype=wp.mat33), z: wp.array(dtype=wp.vec3)):
    i = wp.tid()
    m = x[i] + wp.identity(n=3, dtype=float) * 3.0
    inv = wp.inverse(m)
    y[i] = inv * wp.determinant(m) + wp.transpose(m) * m + wp.outer(v[i], v[i]) + wp.diag(wp.get_diag(m))
    z[i] = m * v[i] + wp.skew(v[i]) * v[i] + wp.vec3(wp.trace(m), wp.ddot(m, inv), m[0, 1])


@wp.kernel
def rotation_family(
    axis: wp.array(dtype=wp.vec3), p: wp.array(dtype=wp.vec3), out: wp.array(dtype=wp.vec3), t_out: wp.array(dtype=wp.transform)
):
    i = wp.tid()
    q = wp.quat_from_axis_angle(wp.normalize(axis[i] + wp.vec3(0.1, 0.2, 2.0)), wp.length(axis[i]))
    r = q * wp.quat_rpy(p[i][0], 0.3, p[i][1])
    t = wp.transform(p[i], r)
    u = wp.transform_multiply(t, wp.transform_inverse(wp.transform(axis[i], q)))
    out[i] = wp.quat_rotate(r, p[i]) + wp.quat_rotate_inv(q, axis[i]) + wp.transform_point(u, p[i])
    out[i] += wp.transform_vector(t, axis[i]) + wp.quat_to_matrix(q) * p[i]
    t_out[i] = u


def test_scalar_builtins():
    x = _arr(16)
    _check(scalar_family, 16, [x], [wp.zeros(16, dtype=float, requires_grad=True)])


def test_vector_builtins():
    x = _arr(8, wp.vec3)
    _check(vector_family, 8, [x], [wp.zeros(8, dtype=wp.vec3, requires_grad=True), wp.zeros(8, dtype=float, requires_grad=True)])


def test_matrix_builtins():
    x, v = _arr(6, wp.mat33, -0.5, 0.5), _arr(6, wp.vec3)
    ys = [wp.zeros(6, dtype=wp.mat33, requires_grad=True), wp.zeros(6, dtype=wp.vec3, requires_grad=True)]
    _check(matrix_family, 6, [x, v], ys)


def test_quaternion_and_transform_builtins():
    a, p = _arr(6, wp.vec3), _arr(6, wp.vec3)
    ys = [wp.zeros(6, dtype=wp.vec3, requires_grad=True), wp.zeros(6, dtype=wp.transform, requires_grad=True)]
    _check(rotation_family, 6, [a, p], ys, rtol=5e-4)


@wp.kernel
def query_family(m: wp.uint64, p: wp.array(dtype=wp.vec3), a: wp.array(dtype=wp.mat33), out: wp.array(dtype=wp.vec3), d: wp.array(dtype=float)):
    i = wp.tid()
    q = wp.mesh_query_point_no_sign(m, p[i], 10.0)  # a struct result
    x = wp.mesh_eval_position(m, q.face, q.u, q.v)
    U = wp.mat33()
    sig = wp.vec3()
    V = wp.mat33()
    wp.svd3(a[i], U, sig, V)  # results through output arguments (a tuple)
    axis = wp.vec3()
    angle = float(0.0)
    wp.quat_to_axis_angle(wp.quat_from_matrix(a[i] * wp.transpose(a[i]) + wp.identity(3, dtype=float)), axis, angle)
    out[i] = x + sig
    d[i] = wp.length(x - p[i]) + angle * axis[2]


def test_geometry_queries_and_decompositions():
    pts = np.array([[0, 0, 0], [1, 0, 0], [0, 1, 0], [0, 0, 1]], dtype=np.float32)
    idx = np.array([0, 2, 1, 0, 1, 3, 0, 3, 2, 1, 2, 3], dtype=np.int32)
    mesh = wp.Mesh(points=wp.array(pts, dtype=wp.vec3), indices=wp.array(idx, dtype=int))
    p, a = _arr(5, wp.vec3, 0.3, 0.8), _arr(5, wp.mat33)
    ys = [wp.zeros(5, dtype=wp.vec3, requires_grad=True), wp.zeros(5, dtype=float, requires_grad=True)]
    tangents = [wp.array(RNG.standard_normal((5, 3)), dtype=wp.vec3), wp.array(RNG.standard_normal((5, 3, 3)), dtype=wp.mat33)]
    got = wp.autograd.jvp(lambda: wp.launch(query_family, 5, inputs=[mesh.id, p, a], outputs=ys), [p, a], tangents, ys)
    jac = wp.autograd.jacobian(query_family, 5, inputs=[mesh.id, p, a], outputs=ys)
    for o, g in enumerate(got):
        want = sum(jac[(i + 1, o)].numpy().reshape(jac[(i + 1, o)].shape[0], -1) @ t.numpy().reshape(-1) for i, t in enumerate(tangents))
        np.testing.assert_allclose(g.numpy().reshape(-1), want, rtol=1e-4, atol=1e-4 * max(1.0, np.abs(want).max()))


# --------------------------------------------------------------------------- control flow, funcs, atomics


@wp.func
def smooth_step_force(a: float, k: int):
    f = float(0.0)
    for j in range(k):
        if f > 1.0:
            f = f * 0.5 + a
        else:
            f = f + wp.sin(a * float(j + 1))
    return f


@wp.kernel
def loops_and_funcs(x: wp.array(dtype=float), n: wp.array(dtype=int), y: wp.array(dtype=float)):
    i = wp.tid()
    a = x[i]
    s = smooth_step_force(a, n[i])
    k = int(0)
    while s < 4.0 and k < 20:  # a while loop carrying float state
        s = s * 1.3 + a * a
        k += 1
    y[i] = s


def test_dynamic_loops_and_funcs():
    x = _arr(12, float, 0.1, 0.9)
    n = wp.array(RNG.integers(0, 7, size=12), dtype=int)
    y = wp.zeros(12, dtype=float, requires_grad=True)
    tangent = wp.array(RNG.standard_normal(12), dtype=float)
    got, = wp.autograd.jvp(lambda: wp.launch(loops_and_funcs, 12, inputs=[x, n], outputs=[y]), [x], [tangent], [y])
    tape = wp.Tape()
    with tape:
        wp.launch(loops_and_funcs, 12, inputs=[x, n], outputs=[y])
    tape.backward(grads={y: wp.ones(12, dtype=float)})  # elementwise: the diagonal Jacobian
    np.testing.assert_allclose(got.numpy(), x.grad.numpy() * tangent.numpy(), rtol=1e-4, atol=1e-5)


@wp.kernel
def scatter(x: wp.array(dtype=wp.vec2), w: wp.array(dtype=float), grid: wp.array(dtype=float), lo: wp.array(dtype=float), hi: wp.array(dtype=float)):
    i = wp.tid()
    c = i % 4
    wp.atomic_add(grid, c, w[i] * x[i][0])
    wp.atomic_sub(grid, c, 0.5 * x[i][1] * x[i][1])
    wp.atomic_min(lo, c, x[i][0] * w[i])
    wp.atomic_max(hi, c, x[i][1] + w[i])


def test_atomics():
    x, w = _arr(32, wp.vec2), _arr(32, float)
    grid = wp.zeros(4, dtype=float, requires_grad=True)
    lo = wp.full(4, 10.0, dtype=float, requires_grad=True)
    hi = wp.full(4, -10.0, dtype=float, requires_grad=True)
    tx, tw = wp.array(RNG.standard_normal((32, 2)), dtype=wp.vec2), wp.array(RNG.standard_normal(32), dtype=float)

    def run():
        grid.zero_()
        lo.fill_(10.0)
        hi.fill_(-10.0)
        wp.launch(scatter, 32, inputs=[x, w], outputs=[grid, lo, hi])

    dg, dlo, dhi = wp.autograd.jvp(run, [x, w], [tx, tw], [grid, lo, hi])
    xs, ws, txs, tws = x.numpy(), w.numpy(), tx.numpy(), tw.numpy()
    c = np.arange(32) % 4
    want = np.zeros(4)
    np.add.at(want, c, tws * xs[:, 0] + ws * txs[:, 0] - xs[:, 1] * txs[:, 1])
    np.testing.assert_allclose(dg.numpy(), want, rtol=1e-5, atol=1e-6)
    for k in range(4):  # min/max: the tangent of the winning element
        m = np.flatnonzero(c == k)
        j = m[np.argmin(xs[m, 0] * ws[m])]
        np.testing.assert_allclose(dlo.numpy()[k], txs[j, 0] * ws[j] + xs[j, 0] * tws[j], rtol=1e-5)
        j = m[np.argmax(xs[m, 1] + ws[m])]
        np.testing.assert_allclose(dhi.numpy()[k], txs[j, 1] + tws[j], rtol=1e-5)


@wp.func
def clipped_sqrt(x: float):
    return wp.sqrt(wp.max(x, 0.0))


@wp.func_grad(clipped_sqrt)
def adj_clipped_sqrt(x: float, adj_ret: float):
    wp.adjoint[x] += 0.25 * adj_ret  # deliberately not the true derivative: the user's rule wins


@wp.struct
class Params:
    scale: float
    offsets: wp.array(dtype=float)


@wp.kernel
def struct_and_custom_grad(p: Params, x: wp.array(dtype=float), y: wp.array(dtype=float)):
    i = wp.tid()
    y[i] = p.scale * x[i] * p.offsets[i] + clipped_sqrt(x[i])


def test_structs_and_custom_func_grad():
    n = 6
    x = wp.array(RNG.uniform(0.5, 1.5, n), dtype=float, requires_grad=True)
    off = wp.array(RNG.uniform(-1, 1, n), dtype=float, requires_grad=True)
    p = Params()
    p.scale, p.offsets = 1.5, off
    y = wp.zeros(n, dtype=float, requires_grad=True)
    tx, to = wp.array(RNG.standard_normal(n), dtype=float), wp.array(RNG.standard_normal(n), dtype=float)
    dy, = wp.autograd.jvp(lambda: wp.launch(struct_and_custom_grad, n, inputs=[p, x], outputs=[y]), [x, off], [tx, to], [y])
    xs, os_ = x.numpy(), off.numpy()
    want = 1.5 * (tx.numpy() * os_ + xs * to.numpy()) + 0.25 * tx.numpy()
    np.testing.assert_allclose(dy.numpy(), want, rtol=1e-5, atol=1e-6)


# --------------------------------------------------------------------------- a multi-kernel simulation


@wp.kernel
def spring_forces(x: wp.array(dtype=wp.vec2), rest: float, k: float, f: wp.array(dtype=wp.vec2)):
    i = wp.tid()
    d = x[i + 1] - x[i]
    length = wp.length(d)
    force = k * (length - rest) * d / length
    wp.atomic_add(f, i, force)
    wp.atomic_sub(f, i + 1, force)


@wp.kernel
def integrate(x: wp.array(dtype=wp.vec2), v: wp.array(dtype=wp.vec2), f: wp.array(dtype=wp.vec2), dt: float, x_new: wp.array(dtype=wp.vec2), v_new: wp.array(dtype=wp.vec2)):
    i = wp.tid()
    vn = v[i] + dt * (f[i] + wp.vec2(0.0, -9.8))
    v_new[i] = vn
    x_new[i] = x[i] + dt * vn


@wp.kernel
def kinetic(v: wp.array(dtype=wp.vec2), e: wp.array(dtype=float)):
    i = wp.tid()
    wp.atomic_add(e, 0, 0.5 * wp.dot(v[i], v[i]))


def _rollout(x0, v0, steps, n):
    x, v = x0, v0
    for _ in range(steps):
        f = wp.zeros(n, dtype=wp.vec2, requires_grad=True)
        wp.launch(spring_forces, n - 1, inputs=[x, 0.1, 40.0], outputs=[f])
        x_new = wp.zeros(n, dtype=wp.vec2, requires_grad=True)
        v_new = wp.zeros(n, dtype=wp.vec2, requires_grad=True)
        wp.launch(integrate, n, inputs=[x, v, f, 0.01], outputs=[x_new, v_new])
        x, v = x_new, v_new
    return x, v


def test_multi_kernel_simulation():
    n, steps = 8, 10
    x0 = wp.array(np.stack([np.arange(n) * 0.12, np.zeros(n)], 1), dtype=wp.vec2, requires_grad=True)
    v0 = wp.zeros(n, dtype=wp.vec2, requires_grad=True)
    e = wp.zeros(1, dtype=float, requires_grad=True)
    tx = wp.array(RNG.standard_normal((n, 2)), dtype=wp.vec2)

    def sim():
        x, v = _rollout(x0, v0, steps, n)
        wp.launch(kinetic, n, inputs=[v], outputs=[e])

    de, = wp.autograd.jvp(sim, [x0], [tx], [e])
    e.zero_()
    tape = wp.Tape()
    with tape:
        sim()
    tape.backward(e)
    want = float((x0.grad.numpy() * tx.numpy()).sum())
    np.testing.assert_allclose(de.numpy()[0], want, rtol=1e-4)
    eps, base = 1e-3, x0.numpy().astype(np.float64)

    def energy(xv):
        e.zero_()
        x, v = _rollout(wp.array(xv, dtype=wp.vec2), wp.zeros(n, dtype=wp.vec2), steps, n)
        wp.launch(kinetic, n, inputs=[v], outputs=[e])
        return float(e.numpy()[0])

    fd = (energy(base + eps * tx.numpy()) - energy(base - eps * tx.numpy())) / (2 * eps)
    np.testing.assert_allclose(de.numpy()[0], fd, rtol=2e-2)


def test_jvp_leaves_results_and_tangents_alone():
    x = _arr(16)
    y = wp.zeros(16, dtype=float, requires_grad=True)
    t = wp.array(np.ones(16), dtype=float)
    wp.autograd.jvp(lambda: wp.launch(scalar_family, 16, inputs=[x], outputs=[y]), [x], [t], [y])
    ref = wp.zeros(16, dtype=float)
    wp.launch(scalar_family, 16, inputs=[x], outputs=[ref])
    np.testing.assert_array_equal(y.numpy(), ref.numpy())
    np.testing.assert_array_equal(t.numpy(), np.ones(16))


def test_jvp_rejects_mismatched_tangents():
    x = _arr(4)
    with pytest.raises(ValueError, match="tangent 0 has shape"):
        wp.autograd.jvp(lambda: None, [x], [wp.zeros(5, dtype=float)], [x])


# --------------------------------------------------------------------------- Hessian-vector products


@wp.kernel
def rosenbrock(x: wp.array(dtype=wp.float64), loss: wp.array(dtype=wp.float64)):
    i = wp.tid()
    a = 1.0 - x[i]
    b = x[i + 1] - x[i] * x[i]
    wp.atomic_add(loss, 0, a * a + 100.0 * b * b)


def _rosenbrock_hessian_times(x, v):
    """The analytic H @ v of sum_i (1 - x_i)^2 + 100 (x_{i+1} - x_i^2)^2."""
    hv = np.zeros_like(x)
    xi, xj = x[:-1], x[1:]
    d_ii = 2.0 - 400.0 * (xj - xi * xi) + 800.0 * xi * xi
    d_ij = -400.0 * xi
    hv[:-1] += d_ii * v[:-1] + d_ij * v[1:]
    hv[1:] += d_ij * v[:-1] + 200.0 * v[1:]
    return hv


def test_hvp_rosenbrock():
    n = 1000
    x = wp.array(RNG.uniform(-1.5, 1.5, n), dtype=wp.float64, requires_grad=True)
    v = wp.array(RNG.standard_normal(n), dtype=wp.float64)
    loss = wp.zeros(1, dtype=wp.float64, requires_grad=True)

    def f():
        loss.zero_()
        wp.launch(rosenbrock, n - 1, inputs=[x], outputs=[loss])

    hv, = wp.autograd.hvp(f, [x], [v], loss)
    np.testing.assert_allclose(hv.numpy(), _rosenbrock_hessian_times(x.numpy(), v.numpy()), rtol=1e-10, atol=1e-8)
    assert x.grad is not None and not x.grad.numpy().any()  # its gradient buffer is as it was


def test_hvp_spring_mass_against_gradient_differences():
    n = 7
    x0 = wp.array(np.stack([np.arange(n) * 0.12, RNG.uniform(-0.02, 0.02, n)], 1), dtype=wp.vec2, requires_grad=True)
    v0 = wp.zeros(n, dtype=wp.vec2, requires_grad=True)
    e = wp.zeros(1, dtype=float, requires_grad=True)
    direction = wp.array(RNG.standard_normal((n, 2)), dtype=wp.vec2)

    def sim():
        e.zero_()
        x, v = _rollout(x0, v0, 3, n)
        wp.launch(kinetic, n, inputs=[v], outputs=[e])

    hv, = wp.autograd.hvp(sim, [x0], [direction], e)

    def grad_at(xv):
        xs = wp.array(xv, dtype=wp.vec2, requires_grad=True)
        tape = wp.Tape()
        with tape:
            e.zero_()
            x, v = _rollout(xs, wp.zeros(n, dtype=wp.vec2, requires_grad=True), 3, n)
            wp.launch(kinetic, n, inputs=[v], outputs=[e])
        tape.backward(e)
        return xs.grad.numpy().astype(np.float64)

    eps, base = 1e-3, x0.numpy().astype(np.float64)
    fd = (grad_at(base + eps * direction.numpy()) - grad_at(base - eps * direction.numpy())) / (2 * eps)
    np.testing.assert_allclose(hv.numpy(), fd, rtol=2e-2, atol=2e-2 * np.abs(fd).max())


@wp.kernel
def angle_loss(x: wp.array(dtype=float), loss: wp.array(dtype=float)):
    i = wp.tid()
    wp.atomic_add(loss, 0, wp.atan2(x[i], 2.0))


def test_hvp_without_second_derivative_is_loud():
    x = _arr(4)
    loss = wp.zeros(1, dtype=float, requires_grad=True)
    with pytest.raises(Exception, match="second derivatives through 'atan2'"):
        wp.autograd.hvp(lambda: wp.launch(angle_loss, 4, inputs=[x], outputs=[loss]), [x], [_arr(4)], loss)


@wp.kernel
def square(x: wp.array(dtype=float), y: wp.array(dtype=float)):
    i = wp.tid()
    y[i] = x[i] * x[i]


def test_tangents_follow_copies_views_and_fills():
    x = wp.array(np.arange(1.0, 9.0), dtype=float, requires_grad=True)
    t = wp.array(np.full(8, 0.5), dtype=float)
    buf = wp.zeros(8, dtype=float, requires_grad=True)
    y = wp.zeros(4, dtype=float, requires_grad=True)

    def fn():
        buf.fill_(3.0)  # a constant: its tangent is zero
        wp.copy(buf, x, dest_offset=0, src_offset=2, count=4)  # buf[0:4] = x[2:6]
        wp.launch(square, 4, inputs=[buf[1:5]], outputs=[y])  # a view of buf

    dy, = wp.autograd.jvp(fn, [x], [t], [y])
    xs = np.arange(1.0, 9.0)
    want = np.array([2 * xs[3] * 0.5, 2 * xs[4] * 0.5, 2 * xs[5] * 0.5, 0.0])  # buf[4] is the fill
    np.testing.assert_allclose(dy.numpy(), want, rtol=1e-6)


def test_hvp_through_checkpoint():
    n = 50
    x = wp.array(RNG.uniform(-1, 1, n), dtype=wp.float64, requires_grad=True)
    v = wp.array(RNG.standard_normal(n), dtype=wp.float64)
    loss = wp.zeros(1, dtype=wp.float64, requires_grad=True)

    def segment(a):
        wp.launch(rosenbrock, n - 1, inputs=[a], outputs=[loss])

    def f():
        loss.zero_()
        wp.checkpoint(segment, x)

    hv, = wp.autograd.hvp(f, [x], [v], loss)
    np.testing.assert_allclose(hv.numpy(), _rosenbrock_hessian_times(x.numpy(), v.numpy()), rtol=1e-10, atol=1e-8)


def test_forward_mode_refuses_python_steps():
    x = _arr(4)
    loss = wp.zeros(1, dtype=float, requires_grad=True)

    def f():
        wp.launch(angle_loss, 4, inputs=[x], outputs=[loss])
        tape = wp.Tape()
        with tape:
            tape.record_func(lambda: None, [x])

    with pytest.raises(NotImplementedError, match="record_func"):
        wp.autograd.jvp(f, [x], [_arr(4)], [loss])


@wp.kernel
def tiled_sum(x: wp.array(dtype=float), y: wp.array(dtype=float)):
    t = wp.tile_load(x, shape=8)
    wp.tile_store(y, wp.tile_map(wp.sin, t))


def test_forward_mode_names_what_it_cannot_do():
    x = _arr(8)
    y = wp.zeros(8, dtype=float, requires_grad=True)
    with pytest.raises(NotImplementedError, match="tile"):
        wp.autograd.jvp(lambda: wp.launch_tiled(tiled_sum, [1], inputs=[x], outputs=[y], block_dim=8), [x], [_arr(8)], [y])


def test_launch_objects_run_their_tangent_kernel():
    x = _arr(8)
    y = wp.zeros(8, dtype=float, requires_grad=True)
    cmd = wp.launch(square, 8, inputs=[x], outputs=[y], record_cmd=True)
    t = wp.array(RNG.standard_normal(8), dtype=float)
    dy, = wp.autograd.jvp(cmd.launch, [x], [t], [y])
    np.testing.assert_allclose(dy.numpy(), 2 * x.numpy() * t.numpy(), rtol=1e-6)
    np.testing.assert_allclose(y.numpy(), x.numpy() ** 2, rtol=1e-6)
