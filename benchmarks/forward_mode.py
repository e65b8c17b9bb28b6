"""The forward-mode rows: what wp.autograd.jvp and wp.autograd.hvp cost next to the passes they
replace.

A spring chain of N particles (vec2 positions and velocities, springs between neighbours,
gravity, symplectic Euler), S steps, each allocating its new state, then the kinetic energy of
the final state. Timed in one process after a warm-up call that builds every kernel (best of
``--repeat``):

- ``forward``: the rollout and the energy;
- ``jvp``: the same with ``wp.autograd.jvp`` (the derivative of the final positions and the
  energy in one direction of the initial positions: one forward-mode pass);
- ``forward + backward``: the rollout on a ``wp.Tape`` and ``tape.backward`` of the energy;
- ``hvp``: ``wp.autograd.hvp`` of the energy (one forward-mode pass recorded on a tape, then its
  backward pass).

Also the Rosenbrock function of ``--n`` float64 variables: gradient (tape) against ``hvp``.

    python benchmarks/forward_mode.py [--particles 100000] [--steps 20] [--n 1000000] [--repeat 5] [--device cuda:0]
"""

from __future__ import annotations

import argparse
import time

import numpy as np

import weft as wp


@wp.kernel
def springs(x: wp.array(dtype=wp.vec2), rest: float, k: float, f: wp.array(dtype=wp.vec2)):
    i = wp.tid()
    d = x[i + 1] - x[i]
    length = wp.length(d)
    force = k * (length - rest) * d / length
    wp.atomic_add(f, i, force)
    wp.atomic_sub(f, i + 1, force)


@wp.kernel
def integrate(x: wp.array(dtype=wp.vec2), v: wp.array(dtype=wp.vec2), f: wp.array(dtype=wp.vec2), dt: float,
              x_new: wp.array(dtype=wp.vec2), v_new: wp.array(dtype=wp.vec2)):
    i = wp.tid()
    vn = v[i] + dt * (f[i] + wp.vec2(0.0, -9.8))
    v_new[i] = vn
    x_new[i] = x[i] + dt * vn


@wp.kernel
def kinetic(v: wp.array(dtype=wp.vec2), e: wp.array(dtype=float)):
    i = wp.tid()
    wp.atomic_add(e, 0, 0.5 * wp.dot(v[i], v[i]))


@wp.kernel
def rosenbrock(x: wp.array(dtype=wp.float64), loss: wp.array(dtype=wp.float64)):
    i = wp.tid()
    a = 1.0 - x[i]
    b = x[i + 1] - x[i] * x[i]
    wp.atomic_add(loss, 0, a * a + 100.0 * b * b)


def best(fn, repeat):
    fn()  # builds the kernels
    times = []
    for _ in range(repeat):
        wp.synchronize()
        t0 = time.perf_counter()
        fn()
        wp.synchronize()
        times.append(time.perf_counter() - t0)
    return min(times)


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--particles", type=int, default=100_000)
    p.add_argument("--steps", type=int, default=20)
    p.add_argument("--n", type=int, default=1_000_000)
    p.add_argument("--repeat", type=int, default=5)
    p.add_argument("--device", default=None, help="e.g. cuda:0 (default: weft's default device)")
    args = p.parse_args()
    if args.device:
        wp.set_device(args.device)
    n, steps = args.particles, args.steps
    rng = np.random.default_rng(0)
    x0 = wp.array(np.stack([np.arange(n) * 0.01, rng.uniform(-1e-3, 1e-3, n)], 1), dtype=wp.vec2, requires_grad=True)
    v0 = wp.zeros(n, dtype=wp.vec2, requires_grad=True)
    e = wp.zeros(1, dtype=float, requires_grad=True)
    direction = wp.array(rng.standard_normal((n, 2)), dtype=wp.vec2)
    final = {}

    def sim():
        x, v = x0, v0
        for _ in range(steps):
            f = wp.zeros(n, dtype=wp.vec2, requires_grad=True)
            wp.launch(springs, n - 1, inputs=[x, 0.01, 100.0], outputs=[f])
            x_new = wp.zeros(n, dtype=wp.vec2, requires_grad=True)
            v_new = wp.zeros(n, dtype=wp.vec2, requires_grad=True)
            wp.launch(integrate, n, inputs=[x, v, f, 1e-3], outputs=[x_new, v_new])
            x, v = x_new, v_new
        e.zero_()
        wp.launch(kinetic, n, inputs=[v], outputs=[e])
        final["x"] = x

    def taped():
        tape = wp.Tape()
        with tape:
            sim()
        tape.backward(e)
        tape.zero()

    def jvp():
        wp.autograd.jvp(sim, [x0], [direction], [e])

    def hvp():
        wp.autograd.hvp(sim, [x0], [direction], e)

    rows = [(name, best(fn, args.repeat)) for name, fn in
            (("forward", sim), ("jvp", jvp), ("forward + backward", taped), ("hvp", hvp))]
    base = dict(rows)
    print(f"spring chain: {n} particles, {steps} steps ({wp.get_device()})")
    print(f"| {'pass':<20} | {'time':>9} | {'/ forward':>9} | {'/ fwd + bwd':>11} |")
    print(f"|{'-' * 22}|{'-' * 11}|{'-' * 11}|{'-' * 13}|")
    for name, t in rows:
        print(f"| {name:<20} | {t * 1e3:7.2f} ms | {t / base['forward']:9.2f} | {t / base['forward + backward']:11.2f} |")

    x = wp.array(rng.uniform(-1.5, 1.5, args.n), dtype=wp.float64, requires_grad=True)
    vr = wp.array(rng.standard_normal(args.n), dtype=wp.float64)
    loss = wp.zeros(1, dtype=wp.float64, requires_grad=True)

    def rb():
        loss.zero_()
        wp.launch(rosenbrock, args.n - 1, inputs=[x], outputs=[loss])

    def rb_grad():
        tape = wp.Tape()
        with tape:
            rb()
        tape.backward(loss)
        tape.zero()

    g, h = best(rb_grad, args.repeat), best(lambda: wp.autograd.hvp(rb, [x], [vr], loss), args.repeat)
    print(f"\nRosenbrock, n = {args.n}: gradient {g * 1e3:.2f} ms, hvp {h * 1e3:.2f} ms ({h / g:.2f}x the gradient)")


if __name__ == "__main__":
    main()
