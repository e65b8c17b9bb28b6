"""The rest shape of a hanging chain, found by Newton-CG with Hessian-vector products.

A chain of ``n`` particles (2-D, float64) joined by springs of rest length ``r`` and stiffness
``k`` hangs under gravity between two pins (its first and last particle). Its rest shape
minimises the energy::

    E(x) = sum_i k/2 (|x[i+1] - x[i]| - r)^2 + sum_i m g y[i]

Newton's method solves ``H p = -grad E`` for a step at every iteration. It never forms ``H``:
conjugate gradients need only products ``H v``, which ``wp.autograd.hvp`` computes with one
forward-mode pass and one backward pass of the energy kernel. A backtracking line search keeps
each step downhill. Adam (``wp.optim.Adam``) minimises the same energy with gradients alone, for
comparison.

Run::

    python -m weft.examples.newton_cg [--n N] [--out DIR]

It prints, per method, the iterations, energy evaluations and the final gradient norm, and
writes ``convergence.png`` (energy above the minimum against gradient evaluations; needs
matplotlib, otherwise skipped) and ``chain.png`` (the shapes) into DIR (default
``./examples_output/newton_cg/``).
"""

import argparse
import os
import sys

import numpy as np

import weft as wp
import weft.autograd


@wp.kernel
def chain_energy(
    x: wp.array(dtype=wp.vec2d), rest: wp.float64, k: wp.float64, weight: wp.float64, energy: wp.array(dtype=wp.float64)
):
    i = wp.tid()
    d = x[i + 1] - x[i]
    stretch = wp.length(d) - rest
    wp.atomic_add(energy, 0, wp.float64(0.5) * k * stretch * stretch + weight * x[i][1])


class Chain:
    """The energy of the chain and its derivatives, on arrays of vec2d positions."""

    def __init__(self, n: int, span: float, k: float = 400.0, weight: float = 0.05):
        self.n, self.k, self.weight = n, k, weight
        self.rest = 1.2 * span / (n - 1)  # slack: the chain sags
        self.free = np.ones((n, 2))
        self.free[[0, -1]] = 0.0  # the pins
        self.x = wp.zeros(n, dtype=wp.vec2d, requires_grad=True)
        self.energy = wp.zeros(1, dtype=wp.float64, requires_grad=True)
        self.evaluations = 0

    def set(self, positions):
        self.x.assign(positions)

    def launch(self):
        self.energy.zero_()
        wp.launch(chain_energy, self.n - 1, inputs=[self.x, self.rest, self.k, self.weight], outputs=[self.energy])

    def value(self, positions) -> float:
        self.set(positions)
        self.launch()
        self.evaluations += 1
        return float(self.energy.numpy()[0])

    def gradient(self, positions) -> np.ndarray:
        self.set(positions)
        tape = wp.Tape()
        with tape:
            self.launch()
        tape.backward(self.energy)
        g = self.x.grad.numpy() * self.free
        tape.zero()
        self.evaluations += 1
        return g

    def hessian_times(self, positions, v) -> np.ndarray:
        self.set(positions)
        direction = wp.array(v * self.free, dtype=wp.vec2d)
        hv, = wp.autograd.hvp(self.launch, [self.x], [direction], self.energy)
        return hv.numpy() * self.free


def conjugate_gradients(apply, b, tol, max_iter):
    """Solve apply(p) = b for a symmetric ``apply``; stops at negative curvature (Steihaug)."""
    p, r = np.zeros_like(b), b.copy()
    d, rr = r.copy(), float((r * r).sum())
    for it in range(max_iter):
        hd = apply(d)
        curvature = float((d * hd).sum())
        if curvature <= 0.0:
            return (p if it else b), it + 1
        alpha = rr / curvature
        p += alpha * d
        r -= alpha * hd
        rr_new = float((r * r).sum())
        if np.sqrt(rr_new) < tol:
            return p, it + 1
        d = r + (rr_new / rr) * d
        rr = rr_new
    return p, max_iter


def newton_cg(chain, x0, iterations=50, tol=1e-9):
    x, history, products = x0.copy(), [], 0
    for it in range(iterations):
        g = chain.gradient(x)
        e = chain.value(x)
        history.append((chain.evaluations + products, e, float(np.linalg.norm(g))))
        if np.linalg.norm(g) < tol:
            break
        forcing = min(0.5, np.sqrt(np.linalg.norm(g))) * np.linalg.norm(g)
        p, n_cg = conjugate_gradients(lambda v: chain.hessian_times(x, v), -g, forcing, 4 * chain.n)
        products += n_cg
        step = 1.0
        while chain.value(x + step * p) > e + 1e-4 * step * float((g * p).sum()) and step > 1e-8:
            step *= 0.5
        x = x + step * p
    return x, history, it + 1, products


def adam(chain, x0, iterations, lr=2e-3):
    x = wp.array(x0, dtype=wp.vec2d, requires_grad=True)
    chain.x = x
    opt = wp.optim.Adam([x], lr=lr)
    history = []
    for it in range(iterations):
        tape = wp.Tape()
        with tape:
            chain.launch()
        tape.backward(chain.energy)
        x.grad.assign(x.grad.numpy() * chain.free)
        chain.evaluations += 1
        if it % 10 == 0 or it == iterations - 1:
            history.append((chain.evaluations, float(chain.energy.numpy()[0]), float(np.linalg.norm(x.grad.numpy()))))
        opt.step([x.grad])
        tape.zero()
    return x.numpy(), history


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=40, help="particles in the chain")
    parser.add_argument("--adam-iterations", type=int, default=3000)
    parser.add_argument("--out", default=os.path.join("examples_output", "newton_cg"))
    args = parser.parse_args(argv)
    os.makedirs(args.out, exist_ok=True)

    span = 2.0
    s = np.linspace(0.0, 1.0, args.n)
    x0 = np.stack([span * s, -0.3 * span * np.sin(np.pi * s)], axis=1)  # a first guess of the sag
    newton = Chain(args.n, span)
    x_newton, h_newton, iters, products = newton_cg(newton, x0)
    print(
        f"Newton-CG: {iters} iterations, {products} Hessian-vector products, {newton.evaluations} energy/gradient "
        f"evaluations; energy {h_newton[-1][1]:.10f}, |grad| {h_newton[-1][2]:.2e}"
    )
    first = Chain(args.n, span)
    x_adam, h_adam = adam(first, x0, args.adam_iterations)
    print(
        f"Adam:      {args.adam_iterations} iterations, {first.evaluations} gradient evaluations; "
        f"energy {h_adam[-1][1]:.10f}, |grad| {h_adam[-1][2]:.2e}"
    )
    print(f"pictures in {os.path.abspath(args.out)}")
    _plot(args.out, h_newton, h_adam, x0, x_newton, x_adam)
    return h_newton, h_adam


def _plot(out, h_newton, h_adam, x0, x_newton, x_adam):
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("matplotlib is not installed: no pictures", file=sys.stderr)
        return
    best = min(h[1] for h in h_newton + h_adam)
    fig, ax = plt.subplots(figsize=(6, 4))
    for name, h in (("Newton-CG (hvp)", h_newton), ("Adam", h_adam)):
        ax.semilogy([e for e, _, _ in h], [max(v - best, 1e-16) for _, v, _ in h], marker="." if len(h) < 50 else None, label=name)
    ax.set_xlabel("energy, gradient and Hessian-vector evaluations")
    ax.set_ylabel("energy above the minimum")
    ax.legend()
    fig.tight_layout()
    fig.savefig(os.path.join(out, "convergence.png"), dpi=120)
    plt.close(fig)
    fig, ax = plt.subplots(figsize=(6, 3))
    ax.plot(x0[:, 0], x0[:, 1], "k:", label="start")
    ax.plot(x_newton[:, 0], x_newton[:, 1], "o-", ms=3, label="Newton-CG")
    ax.plot(x_adam[:, 0], x_adam[:, 1], "--", label="Adam")
    ax.set_aspect("equal")
    ax.legend()
    fig.tight_layout()
    fig.savefig(os.path.join(out, "chain.png"), dpi=120)
    plt.close(fig)


if __name__ == "__main__":
    main()
