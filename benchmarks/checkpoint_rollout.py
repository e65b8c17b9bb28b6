"""The gradient-checkpointing row: a long differentiable rollout, plain tape against wp.checkpoint.

A rollout of N particles (vec3 positions and velocities, gravity, quadratic drag, a soft floor)
for S steps, each step allocating its new state arrays (as programs that keep every state do),
then a loss (the mean squared distance of the final positions from a target). The gradient of
the loss with respect to the initial velocities is computed twice, each in a fresh process:

- ``plain``: every step recorded on one ``wp.Tape``;
- ``checkpoint``: the steps run in segments of ``--segment`` steps, each ``wp.checkpoint``-ed.

Each process reports its forward + backward time and its peak resident memory; the script prints
one row with the time ratio, the memory ratio and the largest gradient difference.

    python benchmarks/checkpoint_rollout.py [--particles 50000] [--steps 1000] [--segment 50]
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import time

import numpy as np


def rollout(wp, n, steps, segment, mode):
    @wp.kernel
    def step_kernel(x: wp.array(dtype=wp.vec3), v: wp.array(dtype=wp.vec3), dt: float,
                    x_out: wp.array(dtype=wp.vec3), v_out: wp.array(dtype=wp.vec3)):
        i = wp.tid()
        vel = v[i]
        a = wp.vec3(0.0, -9.8, 0.0) - 0.05 * wp.length(vel) * vel
        p = x[i]
        if p[1] < 0.0:
            a = a + wp.vec3(0.0, -1000.0 * p[1], 0.0)  # a soft floor
        vel = vel + dt * a
        v_out[i] = vel
        x_out[i] = p + dt * vel

    @wp.kernel
    def loss_kernel(x: wp.array(dtype=wp.vec3), target: wp.vec3, scale: float, loss: wp.array(dtype=float)):
        i = wp.tid()
        d = x[i] - target
        wp.atomic_add(loss, 0, scale * wp.dot(d, d))

    def step(x, v):
        x_out = wp.empty_like(x, requires_grad=True)
        v_out = wp.empty_like(v, requires_grad=True)
        wp.launch(step_kernel, dim=n, inputs=[x, v, 1.0 / 600.0], outputs=[x_out, v_out])
        return x_out, v_out

    def run(x, v, k):
        for _ in range(k):
            x, v = step(x, v)
        return x, v

    def warm_up():  # build (or load) both passes of both kernels before the timer starts
        x, v = (wp.zeros(n, dtype=wp.vec3, requires_grad=True) for _ in range(2))
        out = wp.zeros(1, dtype=float, requires_grad=True)
        with wp.Tape() as t:
            x1, v1 = step(x, v)
            wp.launch(loss_kernel, dim=n, inputs=[x1, wp.vec3(0.0, 0.0, 0.0), 1.0, out])
        t.backward(out)

    warm_up()
    rng = np.random.default_rng(1)
    x0 = wp.array(rng.uniform(0.0, 1.0, (n, 3)).astype(np.float32), dtype=wp.vec3, requires_grad=True)
    v0 = wp.array(rng.uniform(-1.0, 1.0, (n, 3)).astype(np.float32), dtype=wp.vec3, requires_grad=True)
    loss = wp.zeros(1, dtype=float, requires_grad=True)
    wp.synchronize()
    t0 = time.perf_counter()
    tape = wp.Tape()
    with tape:
        x, v = x0, v0
        if mode == "plain":
            x, v = run(x, v, steps)
        else:
            for _ in range(steps // segment):
                x, v = wp.checkpoint(run, x, v, segment)
        wp.launch(loss_kernel, dim=n, inputs=[x, wp.vec3(0.5, 0.2, 0.5), 1.0 / n, loss])
    tape.backward(loss)
    wp.synchronize()
    seconds = time.perf_counter() - t0
    return seconds, float(loss.numpy()[0]), v0.grad.numpy()


def child(args):
    import weft as wp

    seconds, loss, grad = rollout(wp, args.particles, args.steps, args.segment, args.child)
    np.save(args.grad_file, grad)
    peak_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0
    print(json.dumps({"seconds": seconds, "loss": loss, "peak_mb": peak_mb}))


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--particles", type=int, default=50_000)
    p.add_argument("--steps", type=int, default=1000)
    p.add_argument("--segment", type=int, default=50)
    p.add_argument("--child", choices=["plain", "checkpoint"], help=argparse.SUPPRESS)
    p.add_argument("--grad-file", help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    if args.child:
        child(args)
        return
    results = {}
    for mode in ("plain", "checkpoint"):
        grad_file = os.path.join(os.environ.get("TMPDIR", "/tmp"), f"weft_checkpoint_{mode}_{os.getpid()}.npy")
        cmd = [sys.executable, os.path.abspath(__file__), "--child", mode, "--grad-file", grad_file]
        cmd += ["--particles", str(args.particles), "--steps", str(args.steps), "--segment", str(args.segment)]
        out = subprocess.run(cmd, capture_output=True, text=True, check=True).stdout.strip().splitlines()[-1]
        results[mode] = json.loads(out)
        results[mode]["grad"] = np.load(grad_file)
        os.remove(grad_file)
    plain, ck = results["plain"], results["checkpoint"]
    diff = np.abs(ck["grad"] - plain["grad"]).max() / max(np.abs(plain["grad"]).max(), 1e-30)
    print(f"rollout {args.particles} particles x {args.steps} steps, checkpoint segments of {args.segment}")
    print("| variant    | fwd + bwd | peak RSS  | loss        |")
    print("|------------|-----------|-----------|-------------|")
    for name, r in results.items():
        print(f"| {name:<10} | {r['seconds']:7.2f} s | {r['peak_mb']:6.0f} MB | {r['loss']:.6e} |")
    print(
        f"time {ck['seconds'] / plain['seconds']:.2f}x the plain tape, peak memory "
        f"{ck['peak_mb'] / plain['peak_mb']:.2f} of it, largest gradient difference {diff:.1e} (relative to the largest gradient)"
    )


if __name__ == "__main__":
    main()
