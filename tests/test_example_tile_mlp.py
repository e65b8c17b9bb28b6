"""The tile_mlp example: its tiled forward pass against NumPy, its gradients against finite
differences, and the training run lowering the loss and writing its pictures."""

import numpy as np

import weft as wp
from weft.examples import tile_mlp


def _params(rng):
    shapes = [(32, 32), (1, 32), (32, 32), (1, 32), (32, 1), (1, 1)]
    return [rng.standard_normal(s).astype(np.float32) * 0.3 for s in shapes]


def _numpy_loss(feat, target, p):
    h1 = np.tanh(feat @ p[0] + p[1])
    h2 = np.tanh(h1 @ p[2] + p[3])
    y = h2 @ p[4] + p[5]
    return float(((y - target) ** 2).mean()), y


def _weft_loss(feat, target, p, backward=False):
    params = [wp.array(x, requires_grad=True) for x in p]
    pred = wp.zeros(target.shape, dtype=float, requires_grad=True)
    loss = wp.zeros(1, dtype=float, requires_grad=True)
    tape = wp.Tape()
    with tape:
        wp.launch_tiled(
            tile_mlp.mlp_loss, dim=len(feat) // 64, inputs=[wp.array(feat), wp.array(target), *params, 1.0 / len(feat)],
            outputs=[pred, loss], block_dim=64,
        )
    if backward:
        tape.backward(loss)
    return float(loss.numpy()[0]), pred.numpy(), params


def test_forward_matches_numpy_and_gradients_match_finite_differences():
    rng = np.random.default_rng(4)
    feat = tile_mlp.fourier_features(16)  # 256 pixels: 4 blocks
    target = tile_mlp.target_image(16).reshape(-1, 1)
    p = _params(rng)
    expect, y = _numpy_loss(feat, target, p)
    got, pred, params = _weft_loss(feat, target, p, backward=True)
    assert abs(got - expect) < 1e-5 * max(1.0, expect)
    np.testing.assert_allclose(pred, y, rtol=1e-4, atol=1e-5)
    for k, idx in ((0, (3, 5)), (2, (7, 1)), (4, (10, 0)), (1, (0, 4)), (5, (0, 0))):
        q = [x.astype(np.float64) for x in p]
        eps = 1e-4
        q[k][idx] += eps
        hi = _numpy_loss(feat, target, q)[0]
        q[k][idx] -= 2 * eps
        lo = _numpy_loss(feat, target, q)[0]
        fd = (hi - lo) / (2 * eps)
        assert abs(params[k].grad.numpy()[idx] - fd) < 1e-4 + 1e-3 * abs(fd)


def test_training_lowers_the_loss_and_writes_the_pictures(tmp_path):
    losses, fitted, target = tile_mlp.train(32, 120, 0.01, wp.get_device("cpu"), report=lambda s: None)
    assert losses[-1] < 0.1 * losses[0]
    assert abs(float(((fitted - target) ** 2).mean()) - losses[-1]) < 0.5 * losses[-1]  # the last step's loss
    tile_mlp.main(["--res", "32", "--steps", "20", "--out", str(tmp_path)])
    for name in ("target.png", "fitted.png", "loss.png"):
        assert (tmp_path / name).read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
