"""weft.optim: SGD and Adam against a NumPy reference, step by step, and on small problems."""

import numpy as np
import pytest

import weft as wp
import weft.optim


def sgd_ref(p, grads, lr, momentum, dampening, weight_decay, nesterov):
    p = p.astype(np.float64).copy()
    b = np.zeros_like(p)
    out = []
    for t, g in enumerate(grads):
        g = g.astype(np.float64) + weight_decay * p
        if momentum != 0.0:
            b = g.copy() if t == 0 else momentum * b + (1.0 - dampening) * g
            g = g + momentum * b if nesterov else b
        p = p - lr * g
        out.append(p.copy())
    return out


def adam_ref(p, grads, lr, b1, b2, eps):
    p = p.astype(np.float64).copy()
    m = np.zeros_like(p)
    v = np.zeros_like(p)
    out = []
    for t, g in enumerate(grads, 1):
        g = g.astype(np.float64)
        m = b1 * m + (1 - b1) * g
        v = b2 * v + (1 - b2) * g * g
        p = p - lr * (m / (1 - b1**t)) / (np.sqrt(v / (1 - b2**t)) + eps)
        out.append(p.copy())
    return out


DTYPES = [
    (wp.float32, np.float32, (), 1e-5),
    (wp.float64, np.float64, (), 1e-12),
    (wp.vec3, np.float32, (3,), 1e-5),
    (wp.vec3d, np.float64, (3,), 1e-12),
]


def _data(np_dtype, trailing, n=7, steps=5, seed=0):
    rng = np.random.default_rng(seed)
    p0 = rng.standard_normal((n,) + trailing).astype(np_dtype)
    grads = [rng.standard_normal((n,) + trailing).astype(np_dtype) for _ in range(steps)]
    return p0, grads


@pytest.mark.parametrize("dtype,np_dtype,trailing,tol", DTYPES, ids=lambda x: getattr(x, "__name__", None))
@pytest.mark.parametrize(
    "cfg",
    [
        dict(lr=0.1),
        dict(lr=0.05, momentum=0.9),
        dict(lr=0.05, momentum=0.9, dampening=0.3),
        dict(lr=0.05, momentum=0.8, nesterov=True),
        dict(lr=0.05, momentum=0.9, dampening=0.1, weight_decay=0.01, nesterov=True),
        dict(lr=0.1, weight_decay=0.5),
    ],
)
def test_sgd_matches_numpy(dtype, np_dtype, trailing, tol, cfg):
    p0, grads = _data(np_dtype, trailing)
    full = dict(lr=0.001, momentum=0.0, dampening=0.0, weight_decay=0.0, nesterov=False)
    full.update(cfg)
    ref = sgd_ref(p0, grads, **full)
    p = wp.array(p0, dtype=dtype)
    opt = wp.optim.SGD([p], **cfg)
    for t, g in enumerate(grads):
        opt.step([wp.array(g, dtype=dtype)])
        np.testing.assert_allclose(p.numpy(), ref[t], rtol=tol, atol=tol)
    assert opt.t == len(grads)


@pytest.mark.parametrize("dtype,np_dtype,trailing,tol", DTYPES, ids=lambda x: getattr(x, "__name__", None))
@pytest.mark.parametrize("cfg", [dict(), dict(lr=0.1), dict(lr=0.02, betas=(0.5, 0.9), eps=0.3)])
def test_adam_matches_numpy(dtype, np_dtype, trailing, tol, cfg):
    p0, grads = _data(np_dtype, trailing, seed=1)
    lr = cfg.get("lr", 0.001)
    b1, b2 = cfg.get("betas", (0.9, 0.999))
    ref = adam_ref(p0, grads, lr, b1, b2, cfg.get("eps", 1e-8))
    p = wp.array(p0, dtype=dtype)
    opt = wp.optim.Adam([p], **cfg)
    for t, g in enumerate(grads):
        opt.step([wp.array(g, dtype=dtype)])
        # bias correction makes the first step exactly lr * sign(g) (up to eps)
        np.testing.assert_allclose(p.numpy(), ref[t], rtol=tol, atol=tol)


def test_several_params_reset_and_set_params():
    a0, ga = _data(np.float32, (), n=4, steps=3, seed=2)
    b0, gb = _data(np.float32, (3,), n=5, steps=3, seed=3)
    a = wp.array(a0, dtype=float)
    b = wp.array(b0, dtype=wp.vec3)
    opt = weft.optim.Adam(lr=0.1)
    assert opt.params == []
    opt.set_params([a, b])
    for t in range(3):
        opt.step([wp.array(ga[t], dtype=float), wp.array(gb[t], dtype=wp.vec3)])
    np.testing.assert_allclose(a.numpy(), adam_ref(a0, ga, 0.1, 0.9, 0.999, 1e-8)[-1], rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(b.numpy(), adam_ref(b0, gb, 0.1, 0.9, 0.999, 1e-8)[-1], rtol=1e-5, atol=1e-5)
    # after a reset the optimizer restarts from zero moments and t = 0
    opt.reset_internal_state()
    assert opt.t == 0
    a1 = a.numpy().copy()
    opt.step([wp.array(ga[0], dtype=float), wp.array(gb[0], dtype=wp.vec3)])
    np.testing.assert_allclose(a.numpy(), adam_ref(a1, ga[:1], 0.1, 0.9, 0.999, 1e-8)[-1], rtol=1e-5, atol=1e-5)

    s = wp.optim.SGD([a], lr=0.1, momentum=0.9)
    s.step([wp.array(ga[0], dtype=float)])
    s.reset_internal_state()
    assert s.t == 0 and not s.b[0].numpy().any()
    with pytest.raises(ValueError):
        s.step([])
    with pytest.raises(ValueError):
        s.step([wp.zeros(3, dtype=float)])


def test_set_params_with_the_same_params_keeps_the_state():
    a = wp.array(np.ones(4, dtype=np.float32), dtype=float)
    h = wp.array(np.ones(4, dtype=np.float16), dtype=wp.float16)
    opt = weft.optim.Adam([a, h], lr=0.1)
    opt.step([wp.ones(4, dtype=float), wp.ones(4, dtype=wp.float16)])
    m, v, t = list(opt.m), list(opt.v), opt.t
    opt.set_params([a, h])  # the same parameters: moments and step count kept
    assert all(x is y for x, y in zip(opt.m + opt.v, m + v)) and opt.t == t == 1
    opt.set_params([wp.zeros(5, dtype=float)])  # another size: fresh zeroed state
    assert not opt.m[0].numpy().any() and opt.t == 0
    s = wp.optim.SGD([a], lr=0.1, momentum=0.9)
    s.step([wp.ones(4, dtype=float)])
    b = s.b[0]
    s.set_params([a])
    assert s.b[0] is b and b.numpy().any()


def test_2d_params():
    p0, grads = _data(np.float32, (4,), n=3, steps=3, seed=4)
    p = wp.array(p0, dtype=float)  # 2-d float array
    assert p.ndim == 2
    opt = wp.optim.SGD([p], lr=0.1, momentum=0.5)
    for g in grads:
        opt.step([wp.array(g, dtype=float)])
    np.testing.assert_allclose(p.numpy(), sgd_ref(p0, grads, 0.1, 0.5, 0.0, 0.0, False)[-1], rtol=1e-5, atol=1e-5)


# -- optimising small problems with gradients from a tape ------------------------------------


@wp.kernel
def rosenbrock(xy: wp.array(dtype=wp.vec2), loss: wp.array(dtype=float)):
    i = wp.tid()
    x = xy[i][0]
    y = xy[i][1]
    f = (1.0 - x) * (1.0 - x) + 100.0 * (y - x * x) * (y - x * x)
    wp.atomic_add(loss, 0, f)


@wp.kernel
def quadratic(x: wp.array(dtype=wp.vec3), target: wp.array(dtype=wp.vec3), loss: wp.array(dtype=float)):
    i = wp.tid()
    d = x[i] - target[i]
    wp.atomic_add(loss, 0, wp.dot(d, d) * float(i + 1))


def test_adam_rosenbrock_minimum():
    xy = wp.array(np.array([[-1.5, 2.0], [0.0, 0.0], [-1.2, 1.0], [1.5, 1.5]], np.float32), dtype=wp.vec2, requires_grad=True)
    loss = wp.zeros(1, dtype=float, requires_grad=True)
    opt = wp.optim.Adam([xy], lr=0.05)
    tape = wp.Tape()
    first = None
    for it in range(4000):
        if it == 2500:
            opt.lr = 0.002  # the lr attribute is read at every step, as in Warp
        loss.zero_()
        with tape:
            wp.launch(rosenbrock, dim=4, inputs=[xy, loss])
        tape.backward(loss)
        if first is None:
            first = float(loss.numpy()[0])
        opt.step([xy.grad])
        tape.zero()
        tape.reset()
    np.testing.assert_allclose(xy.numpy(), np.ones((4, 2)), atol=2e-3)
    assert float(loss.numpy()[0]) < 1e-3 * first


@pytest.mark.parametrize("nesterov", [False, True])
def test_sgd_quadratic_minimum(nesterov):
    rng = np.random.default_rng(5)
    target_np = rng.standard_normal((4, 3)).astype(np.float32)
    x = wp.zeros(4, dtype=wp.vec3, requires_grad=True)
    target = wp.array(target_np, dtype=wp.vec3)
    loss = wp.zeros(1, dtype=float, requires_grad=True)
    opt = wp.optim.SGD([x], lr=0.05, momentum=0.8, nesterov=nesterov)
    tape = wp.Tape()
    for _ in range(200):
        loss.zero_()
        with tape:
            wp.launch(quadratic, dim=4, inputs=[x, target, loss])
        tape.backward(loss)
        opt.step([x.grad])
        tape.zero()
        tape.reset()
    np.testing.assert_allclose(x.numpy(), target_np, atol=1e-4)


# --- the optimizers drive a differentiable simulation (issue 6, "Done when") -----------------
def _drive_bounce(make_optimizer, iters):
    from weft.examples.bounce import BounceSim

    sim = BounceSim(steps=40, substeps=16)
    v0 = wp.array(np.array([2.0, 1.0]), dtype=wp.float32, requires_grad=True)
    opt = make_optimizer([v0])
    losses = []
    for _ in range(iters):
        sim.forward(v0)
        losses.append(float(sim.loss.numpy()[0]))
        sim.tape.backward(sim.loss)
        opt.step([v0.grad])
        sim.tape.zero()
        sim.tape.reset()
    sim.forward(v0)
    sim.tape.reset()
    losses.append(float(sim.loss.numpy()[0]))
    return losses


def test_adam_drives_the_bounce_simulation_to_a_lower_loss():
    from weft.optim import Adam

    losses = _drive_bounce(lambda params: Adam(params, lr=0.05), 25)
    assert losses[-1] < 0.1 * losses[0], losses


def test_sgd_drives_the_bounce_simulation_to_a_lower_loss():
    from weft.optim import SGD

    losses = _drive_bounce(lambda params: SGD(params, lr=0.05, momentum=0.5), 20)
    assert losses[-1] < 0.5 * losses[0], losses
