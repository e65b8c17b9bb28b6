"""Custom gradients: @wp.func_grad replaces a func's adjoint, @wp.func_replay its replay,
wp.adjoint[x] inside them (issue 4, item 4)."""

import numpy as np
import pytest

import weft as wp

f64 = wp.float64


@wp.func
def safe_sqrt(x: f64):
    return wp.sqrt(x)


@wp.func_grad(safe_sqrt)
def adj_safe_sqrt(x: f64, adj_ret: f64):
    if x > f64(0.0):
        wp.adjoint[x] += adj_ret / (f64(2.0) * wp.sqrt(x))


@wp.func
def clipped_identity(x: f64, lim: f64):
    return x


@wp.func_grad(clipped_identity)
def adj_clipped_identity(x: f64, lim: f64, adj_ret: f64):
    # straight-through gradient clipped to [-lim, lim]; lim's adjoint gets the overflow
    g = wp.clamp(adj_ret, -lim, lim)
    wp.adjoint[x] += g
    wp.adjoint[lim] = adj_ret - g


@wp.func
def counted_square(counter: wp.array(dtype=f64), x: f64):
    wp.atomic_add(counter, 0, f64(1.0))
    return x * x


@wp.func_replay(counted_square)
def replay_counted_square(counter: wp.array(dtype=f64), x: f64):
    wp.atomic_add(counter, 1, f64(1.0))  # the replay counts in slot 1
    return x * x


@wp.kernel
def k_sqrt(x: wp.array(dtype=f64), y: wp.array(dtype=f64)):
    i = wp.tid()
    y[i] = safe_sqrt(x[i]) * f64(3.0)


@wp.kernel
def k_clip(x: wp.array(dtype=f64), scale: wp.array(dtype=f64), y: wp.array(dtype=f64)):
    i = wp.tid()
    y[i] = clipped_identity(x[i], f64(0.5)) * scale[i]


@wp.kernel
def k_count(x: wp.array(dtype=f64), counter: wp.array(dtype=f64), y: wp.array(dtype=f64)):
    i = wp.tid()
    y[i] = counted_square(counter, x[i])


def _backward(kernel, inputs, y):
    tape = wp.Tape()
    with tape:
        wp.launch(kernel, dim=len(y), inputs=inputs + [y])
    tape.backward(grads={y: np.ones(len(y))})
    return tape


def test_func_grad_replaces_the_adjoint():
    x = wp.array([0.0, 4.0, 9.0], dtype=f64, requires_grad=True)
    y = wp.zeros(3, dtype=f64, requires_grad=True)
    _backward(k_sqrt, [x], y)
    np.testing.assert_allclose(y.numpy(), [0.0, 6.0, 9.0])
    # the built-in sqrt adjoint would give inf at 0; the custom one gives 0 there
    np.testing.assert_allclose(x.grad.numpy(), [0.0, 3.0 / 4.0, 3.0 / 6.0])


def test_func_grad_uses_adj_ret_and_writes_several_adjoints():
    x = wp.array([1.0, 2.0, 3.0], dtype=f64, requires_grad=True)
    scale = wp.array([0.1, 2.0, -4.0], dtype=f64, requires_grad=True)
    y = wp.zeros(3, dtype=f64, requires_grad=True)
    _backward(k_clip, [x, scale], y)
    np.testing.assert_allclose(x.grad.numpy(), np.clip([0.1, 2.0, -4.0], -0.5, 0.5))
    np.testing.assert_allclose(scale.grad.numpy(), [1.0, 2.0, 3.0])  # the scale's gradient is unaffected


def test_func_replay_replaces_the_replay_in_the_backward_pass():
    x = wp.array([1.5, -2.0], dtype=f64, requires_grad=True)
    counter = wp.zeros(2, dtype=f64)
    y = wp.zeros(2, dtype=f64, requires_grad=True)
    _backward(k_count, [x, counter], y)
    # forward counted once per thread in slot 0; the backward replayed with the custom replay (slot 1)
    np.testing.assert_allclose(counter.numpy(), [2.0, 2.0])
    np.testing.assert_allclose(x.grad.numpy(), [3.0, -4.0])


def test_adjoint_outside_func_grad_is_an_error():
    @wp.kernel(module="custom_grad_errors")
    def k_bad(x: wp.array(dtype=float)):
        wp.tid()
        wp.adjoint[x] += 1.0

    with pytest.raises(wp.WarpCodegenError, match="func_grad"):
        wp.launch(k_bad, dim=1, inputs=[wp.zeros(1)])


def test_func_grad_signature_is_checked():
    @wp.func
    def g(x: float):
        return x

    @wp.func_grad(g)
    def adj_g(y: float, adj_ret: float):  # wrong parameter name
        wp.adjoint[y] += adj_ret

    @wp.kernel(module="custom_grad_errors2")
    def k_g(x: wp.array(dtype=float)):
        x[0] = g(x[0])

    with pytest.raises(wp.WarpCodegenError, match="forward parameters"):
        wp.launch(k_g, dim=1, inputs=[wp.zeros(1)])


@wp.func
def logistic(x: f64):
    return f64(1.0) / (f64(1.0) + wp.exp(-x))


@wp.func_grad(logistic)
def adj_logistic(x: f64, adj: f64):
    wp.adjoint[x] += adj * logistic(x) * (f64(1.0) - logistic(x))  # the gradient calls the forward


@wp.kernel
def k_logistic(x: wp.array(dtype=f64), y: wp.array(dtype=f64)):
    i = wp.tid()
    y[i] = logistic(x[i]) * f64(2.0)


def test_a_func_grad_may_call_the_func_it_differentiates():
    xs = np.array([-1.0, 0.0, 2.5])
    x = wp.array(xs, dtype=f64, requires_grad=True)
    y = wp.zeros(3, dtype=f64, requires_grad=True)
    _backward(k_logistic, [x], y)
    s = 1.0 / (1.0 + np.exp(-xs))
    np.testing.assert_allclose(x.grad.numpy(), 2.0 * s * (1.0 - s), rtol=1e-12)


@wp.func
def sum_and_square(x: f64, y: f64):
    return x * f64(3.0) + y, y * y


@wp.func_grad(sum_and_square)
def sum_and_square_grad(x: f64, y: f64, adj_sum: f64, adj_square: f64):
    wp.adjoint[x] += f64(42.0) * adj_sum  # deliberately not the true gradient: the custom one is used
    wp.adjoint[y] += adj_sum + f64(10.0) * adj_square


@wp.kernel
def k_two_results(x: wp.array(dtype=f64), y: wp.array(dtype=f64), s: wp.array(dtype=f64), q: wp.array(dtype=f64)):
    i = wp.tid()
    a, b = sum_and_square(x[i], y[i])
    s[i] = a
    q[i] = b


def test_func_grad_of_a_func_returning_several_values_takes_one_adjoint_each():
    x = wp.array([1.0, 2.0], dtype=f64, requires_grad=True)
    y = wp.array([3.0, 4.0], dtype=f64, requires_grad=True)
    s, q = wp.zeros(2, dtype=f64, requires_grad=True), wp.zeros(2, dtype=f64, requires_grad=True)
    tape = wp.Tape()
    with tape:
        wp.launch(k_two_results, 2, inputs=[x, y, s, q])
    tape.backward(grads={s: np.array([1.0, 2.0]), q: np.array([0.5, 1.0])})
    np.testing.assert_allclose(q.numpy(), [9.0, 16.0])
    np.testing.assert_allclose(x.grad.numpy(), [42.0, 84.0])
    np.testing.assert_allclose(y.grad.numpy(), [1.0 + 5.0, 2.0 + 10.0])


@wp.struct
class Particle:
    mass: f64
    pos: wp.vec3d


@wp.func
def weighted_height(p: Particle):
    return p.mass * p.pos[2]


@wp.func_grad(weighted_height)
def weighted_height_grad(p: Particle, adj: f64):
    wp.adjoint[p.mass] += p.pos[2] * adj  # a struct field's adjoint
    wp.adjoint[p.pos][2] += p.mass * adj  # a component of it
    wp.adjoint[p.pos].x = f64(7.0) * adj  # set, not accumulated


@wp.kernel
def k_heights(ps: wp.array(dtype=Particle), h: wp.array(dtype=f64)):
    i = wp.tid()
    h[i] = weighted_height(ps[i])


def test_func_grad_writes_struct_field_adjoints_and_their_components():
    p = Particle()
    p.mass, p.pos = 2.0, wp.vec3d(1.0, 2.0, 5.0)
    ps = wp.array([p], dtype=Particle, requires_grad=True)
    h = wp.zeros(1, dtype=f64, requires_grad=True)
    tape = wp.Tape()
    with tape:
        wp.launch(k_heights, 1, inputs=[ps, h])
    tape.backward(grads={h: np.array([3.0])})
    g = ps.grad.numpy()[0]
    assert g["mass"] == 15.0 and list(g["pos"]) == [21.0, 0.0, 6.0]


@wp.func
def scatter_logistic(i: int, xs: wp.array(dtype=f64), ys: wp.array(dtype=f64)):
    ys[i] = logistic(xs[i])  # returns nothing: writes an array


@wp.func_grad(scatter_logistic)
def adj_scatter_logistic(i: int, xs: wp.array(dtype=f64), ys: wp.array(dtype=f64)):
    # wp.adjoint[xs] of an array parameter is its gradient array; ys holds the forward's results
    wp.adjoint[xs][i] += wp.adjoint[ys][i] * ys[i] * (f64(1.0) - ys[i])


@wp.kernel
def k_scatter_logistic(xs: wp.array(dtype=f64), ys: wp.array(dtype=f64)):
    scatter_logistic(wp.tid(), xs, ys)


def test_func_grad_of_a_func_that_returns_nothing_writes_array_gradients():
    x0 = np.array([-2.0, 0.5, 3.0])
    xs = wp.array(x0, dtype=f64, requires_grad=True)
    ys = wp.zeros(3, dtype=f64, requires_grad=True)
    tape = wp.Tape()
    with tape:
        wp.launch(k_scatter_logistic, dim=3, inputs=[xs, ys])
    seed = np.array([1.0, 2.0, -1.0])
    tape.backward(grads={ys: wp.array(seed, dtype=f64)})
    s = 1.0 / (1.0 + np.exp(-x0))
    np.testing.assert_allclose(ys.numpy(), s)
    np.testing.assert_allclose(xs.grad.numpy(), seed * s * (1.0 - s), rtol=1e-12)

    def loss(x):  # the same gradient by central differences
        return float(np.dot(seed, 1.0 / (1.0 + np.exp(-x))))

    eps = 1e-6
    fd = [(loss(x0 + eps * e) - loss(x0 - eps * e)) / (2 * eps) for e in np.eye(3)]
    np.testing.assert_allclose(xs.grad.numpy(), fd, rtol=1e-6)


@wp.func
def weighted(x: float, y: float):
    return x * y, x + y


@wp.func_grad(weighted)
def adj_weighted_pair(x: float, y: float, adj_product: float, adj_sum: float):
    wp.adjoint[x] += 10.0 * (adj_product * y + adj_sum)
    wp.adjoint[y] += 10.0 * (adj_product * x + adj_sum)


@wp.func
def weighted(v: wp.vec3):
    return wp.dot(v, v), v[0]


@wp.func_grad(weighted)
def adj_weighted_vec(v: wp.vec3, adj_square: float, adj_first: float):
    wp.adjoint[v] += 100.0 * (2.0 * adj_square * v + wp.vec3(adj_first, 0.0, 0.0))


@wp.kernel
def k_weighted(xs: wp.array(dtype=float), vs: wp.array(dtype=wp.vec3), out: wp.array(dtype=float)):
    i = wp.tid()
    p, s = weighted(xs[i], 2.0 * xs[i])
    q, f = weighted(vs[i])
    out[i] = p + s + q + f


def test_each_overload_of_a_func_gets_its_own_func_grad():
    xs = wp.array([1.0, -2.0], dtype=float, requires_grad=True)
    v0 = np.array([[1.0, 2.0, 3.0], [0.5, -1.0, 2.0]], dtype=np.float32)
    vs = wp.array(v0, dtype=wp.vec3, requires_grad=True)
    out = wp.zeros(2, dtype=float, requires_grad=True)
    tape = wp.Tape()
    with tape:
        wp.launch(k_weighted, dim=2, inputs=[xs, vs, out])
    tape.backward(grads={out: wp.ones(2, dtype=float)})
    x = xs.numpy()
    # d/dx of (x * 2x + 3x) through the pair's gradient (scaled by 10): 10 * ((2x + 1) + 2 * (x + 1))
    np.testing.assert_allclose(xs.grad.numpy(), 10.0 * ((2.0 * x + 1.0) + 2.0 * (x + 1.0)), rtol=1e-6)
    expect_v = 100.0 * (2.0 * v0 + np.array([1.0, 0.0, 0.0]))  # the vec3 overload's gradient (scaled by 100)
    np.testing.assert_allclose(vs.grad.numpy(), expect_v, rtol=1e-6)
