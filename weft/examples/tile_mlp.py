"""Fitting an image with a small MLP written with tiles, trained by ``wp.Tape`` and Adam.

Each block of ``wp.launch_tiled`` takes 64 pixels: their Fourier features (sines and cosines of
the coordinates at 8 frequencies, 32 numbers) go through two tanh layers of 32 and a linear
output with ``wp.tile_matmul``, ``wp.tile_broadcast`` (biases) and ``wp.tile_map``; the squared
error against the target image is summed with ``wp.tile_sum`` and added into the loss with
``wp.tile_atomic_add``. The tape differentiates all of it; ``weft.optim.Adam`` updates the
weights. The target is a procedural grey-level picture (rings inside a soft star).

Run::

    python -m weft.examples.tile_mlp [--res N] [--steps S] [--lr LR] [--out DIR] [--device cpu|cuda:0]

It prints the loss every 50 steps and the final loss, and writes ``target.png``, ``fitted.png``
(the network's image) and ``loss.png`` (log loss per step) into DIR (default
``./examples_output/tile_mlp/``).
"""

import argparse
import os
import time

import numpy as np

import weft as wp
from weft.examples.raycast import write_png

ROWS = 64  # pixels per block
FREQS = 8
FEATURES = wp.constant(4 * FREQS)
HIDDEN = wp.constant(32)
BLOCK = wp.constant(ROWS)


@wp.kernel
def mlp_loss(
    features: wp.array2d(dtype=float),
    target: wp.array2d(dtype=float),
    w1: wp.array2d(dtype=float),
    b1: wp.array2d(dtype=float),
    w2: wp.array2d(dtype=float),
    b2: wp.array2d(dtype=float),
    w3: wp.array2d(dtype=float),
    b3: wp.array2d(dtype=float),
    scale: float,
    prediction: wp.array2d(dtype=float),
    loss: wp.array(dtype=float),
):
    i = wp.tid()
    x = wp.tile_load(features, shape=(BLOCK, FEATURES), offset=(i * BLOCK, 0))
    z1 = wp.tile_matmul(x, wp.tile_load(w1, shape=(FEATURES, HIDDEN)))
    h1 = wp.tile_map(wp.tanh, z1 + wp.tile_broadcast(wp.tile_load(b1, shape=(1, HIDDEN)), shape=(BLOCK, HIDDEN)))
    z2 = wp.tile_matmul(h1, wp.tile_load(w2, shape=(HIDDEN, HIDDEN)))
    h2 = wp.tile_map(wp.tanh, z2 + wp.tile_broadcast(wp.tile_load(b2, shape=(1, HIDDEN)), shape=(BLOCK, HIDDEN)))
    y = wp.tile_matmul(h2, wp.tile_load(w3, shape=(HIDDEN, 1)))
    y = y + wp.tile_broadcast(wp.tile_load(b3, shape=(1, 1)), shape=(BLOCK, 1))
    wp.tile_store(prediction, y, offset=(i * BLOCK, 0))
    d = y - wp.tile_load(target, shape=(BLOCK, 1), offset=(i * BLOCK, 0))
    wp.tile_atomic_add(loss, wp.tile_sum(d * d) * scale)


def target_image(res: int) -> np.ndarray:
    """A grey-level picture in [0, 1]: concentric rings inside a soft five-pointed star."""
    y, x = np.mgrid[0:res, 0:res] / (res - 1) * 2.0 - 1.0
    r, a = np.hypot(x, y), np.arctan2(y, x)
    star = 0.55 + 0.2 * np.cos(5.0 * a)
    inside = 1.0 / (1.0 + np.exp((r - star) * 25.0))
    rings = 0.5 + 0.5 * np.cos(14.0 * r)
    return (0.15 + 0.8 * inside * (0.35 + 0.65 * rings)).astype(np.float32)


def fourier_features(res: int) -> np.ndarray:
    """(res*res, 4*FREQS): sin and cos of pi 2^k x and of pi 2^k y for k < FREQS."""
    y, x = np.mgrid[0:res, 0:res] / (res - 1) * 2.0 - 1.0
    cols = []
    for k in range(FREQS):
        f = np.pi * 2.0**k * 0.5
        cols += [np.sin(f * x), np.cos(f * x), np.sin(f * y), np.cos(f * y)]
    return np.stack([c.reshape(-1) for c in cols], axis=1).astype(np.float32)


def plot(values, width=480, height=240) -> np.ndarray:
    """An RGB line plot of log10(values) against the step (white background, blue line)."""
    img = np.ones((height, width, 3), dtype=np.float32)
    v = np.log10(np.maximum(np.asarray(values, dtype=np.float64), 1e-12))
    lo, hi = v.min(), v.max()
    span = hi - lo if hi > lo else 1.0
    xs = np.linspace(8, width - 9, len(v))
    ys = (height - 9) - (v - lo) / span * (height - 18)
    img[[8, height - 9], 8 : width - 8] = 0.6  # frame
    img[8 : height - 8, [8, width - 9]] = 0.6
    for k in range(len(v) - 1):
        n = int(max(abs(xs[k + 1] - xs[k]), abs(ys[k + 1] - ys[k]))) + 2
        for t in np.linspace(0.0, 1.0, n):
            px = int(round(xs[k] + t * (xs[k + 1] - xs[k])))
            py = int(round(ys[k] + t * (ys[k + 1] - ys[k])))
            img[max(py - 1, 0) : py + 1, max(px - 1, 0) : px + 1] = (0.1, 0.3, 0.8)
    return img


def train(res: int, steps: int, lr: float, device, report=print):
    """Fit the target image; returns (losses per step, fitted image, target image)."""
    if (res * res) % ROWS:
        raise ValueError(f"res*res must be a multiple of {ROWS}")
    rng = np.random.default_rng(1)
    target_np = target_image(res)
    features = wp.array(fourier_features(res), dtype=float, device=device)
    target = wp.array(target_np.reshape(-1, 1), dtype=float, device=device)

    def layer(n_in, n_out):
        w = rng.standard_normal((n_in, n_out)) * np.sqrt(1.0 / n_in)
        return wp.array(w.astype(np.float32), device=device, requires_grad=True), wp.zeros(
            (1, n_out), dtype=float, device=device, requires_grad=True
        )

    params = [*layer(int(FEATURES), int(HIDDEN)), *layer(int(HIDDEN), int(HIDDEN)), *layer(int(HIDDEN), 1)]
    optimizer = wp.optim.Adam(params, lr=lr)
    prediction = wp.zeros((res * res, 1), dtype=float, device=device, requires_grad=True)
    loss = wp.zeros(1, dtype=float, device=device, requires_grad=True)
    losses = []
    for step in range(steps):
        loss.zero_()
        tape = wp.Tape()
        with tape:
            wp.launch_tiled(
                mlp_loss,
                dim=res * res // ROWS,
                inputs=[features, target, *params, 1.0 / (res * res)],
                outputs=[prediction, loss],
                block_dim=64,
                device=device,
            )
        tape.backward(loss)
        optimizer.step([p.grad for p in params])
        tape.zero()
        losses.append(float(loss.numpy()[0]))
        if step % 50 == 0 or step == steps - 1:
            report(f"step {step:4d}  loss {losses[-1]:.6f}")
    return losses, prediction.numpy().reshape(res, res), target_np


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--res", type=int, default=64, help="image side in pixels (res*res a multiple of 64)")
    parser.add_argument("--steps", type=int, default=400)
    parser.add_argument("--lr", type=float, default=0.01)
    parser.add_argument("--out", default=os.path.join("examples_output", "tile_mlp"))
    parser.add_argument("--device", default=None)
    args = parser.parse_args(argv)
    device = wp.get_device(args.device)
    print(f"device {device}; a {args.res}x{args.res} image, MLP {int(FEATURES)}-{int(HIDDEN)}-{int(HIDDEN)}-1 in tiles of {ROWS} pixels")
    t0 = time.perf_counter()
    losses, fitted, target = train(args.res, args.steps, args.lr, device)
    print(f"final loss {losses[-1]:.6f} after {args.steps} steps ({time.perf_counter() - t0:.1f} s)")
    os.makedirs(args.out, exist_ok=True)
    for name, img in (("target.png", target), ("fitted.png", fitted)):
        write_png(os.path.join(args.out, name), np.repeat(np.clip(img, 0.0, 1.0)[:, :, None], 3, axis=2))
    write_png(os.path.join(args.out, "loss.png"), plot(losses))
    print(f"wrote target.png, fitted.png and loss.png to {args.out}")


if __name__ == "__main__":
    main()
