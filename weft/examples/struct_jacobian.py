"""Jacobian of a kernel whose inputs and outputs live in a ``@wp.struct``, computed four ways.

A ring of ``n`` particles (positions ``x``, vec3, float64) joined by springs of rest length 1 and
stiffness ``k``: spring ``i`` joins particle ``i`` to particle ``i + 1 (mod n)``. One kernel
evaluates, per spring, its energy and the force it applies to particle ``i``::

    d = x[i+1] - x[i],  L = |d|
    energy[i] = k (L - 1)^2 / 2
    force[i]  = k (1 - 1/L) d

All four arrays (``x``, ``energy``, ``force``) and ``k`` are fields of one ``Springs`` struct
passed to ``eval_struct``. ``weft.autograd.jacobian`` does not differentiate struct arguments
(neither does Warp's), so the example builds the struct's Jacobian by hand, row by row, the way
any tape user can:

    record one launch on a tape;
    for each output scalar r:  tape.zero(); seed a one-hot gradient on the output field
    (``tape.backward(grads={springs.energy: one_hot})``); row r = springs.x.grad.

and compares it with

* ``weft.autograd.jacobian`` (autodiff) of ``eval_arrays``, the same computation taking plain
  array arguments (both kernels call the same ``@wp.func``),
* ``weft.autograd.jacobian_fd`` (central finite differences) of ``eval_arrays``,
* the analytic Jacobian (NumPy).

Run::

    python -m weft.examples.struct_jacobian [--n N] [--out DIR]

It prints the largest differences between the four and writes ``jacobian.png`` (the Jacobian
blocks, from ``weft.autograd.jacobian_plot``; needs matplotlib, otherwise skipped) into DIR
(default ``./examples_output/struct_jacobian/``).
"""

import argparse
import os
import sys

import numpy as np

import weft as wp
import weft.autograd


@wp.struct
class Springs:
    x: wp.array(dtype=wp.vec3d)  # input: particle positions
    k: wp.float64  # input (not differentiated): stiffness
    energy: wp.array(dtype=wp.float64)  # output: energy of spring i
    force: wp.array(dtype=wp.vec3d)  # output: force of spring i on particle i


@wp.func
def spring(xi: wp.vec3d, xj: wp.vec3d, k: wp.float64):
    d = xj - xi
    length = wp.length(d)
    stretch = length - wp.float64(1.0)
    energy = wp.float64(0.5) * k * stretch * stretch
    force = k * (wp.float64(1.0) - wp.float64(1.0) / length) * d
    return energy, force


@wp.kernel
def eval_struct(s: Springs):
    i = wp.tid()
    j = (i + 1) % s.x.shape[0]
    e, f = spring(s.x[i], s.x[j], s.k)
    s.energy[i] = e
    s.force[i] = f


@wp.kernel
def eval_arrays(
    x: wp.array(dtype=wp.vec3d),
    k: wp.float64,
    energy: wp.array(dtype=wp.float64),
    force: wp.array(dtype=wp.vec3d),
):
    i = wp.tid()
    j = (i + 1) % x.shape[0]
    e, f = spring(x[i], x[j], k)
    energy[i] = e
    force[i] = f


def make_springs(x0: np.ndarray, k: float) -> Springs:
    """A ``Springs`` struct over positions ``x0`` (n x 3) with zeroed outputs; every array tracks gradients."""
    s = Springs()
    s.x = wp.array(x0, dtype=wp.vec3d, requires_grad=True)
    s.k = k
    s.energy = wp.zeros(len(x0), dtype=wp.float64, requires_grad=True)
    s.force = wp.zeros(len(x0), dtype=wp.vec3d, requires_grad=True)
    return s


def struct_jacobian(s: Springs) -> dict:
    """d(energy, force) / d x for the struct kernel, one backward pass per output scalar.

    Returns ``{"energy": (n, 3n), "force": (3n, 3n)}`` NumPy matrices (rows: output scalars,
    columns: the 3n coordinates of x)."""
    n = s.x.shape[0]
    tape = wp.Tape()
    with tape:
        wp.launch(eval_struct, n, inputs=[s])
    result = {}
    for field in ("energy", "force"):
        out = getattr(s, field)
        seed = np.zeros(out.numpy().shape)
        rows = []
        for r in range(seed.size):
            tape.zero()  # clears x.grad and the outputs' gradients left by the previous row
            seed.reshape(-1)[:] = 0.0
            seed.reshape(-1)[r] = 1.0
            tape.backward(grads={out: seed})
            rows.append(s.x.grad.numpy().reshape(-1).copy())
        result[field] = np.array(rows)
    tape.zero()
    return result


def analytic_jacobian(x0: np.ndarray, k: float) -> dict:
    """The exact Jacobians, same layout as ``struct_jacobian``."""
    n = len(x0)
    j_energy = np.zeros((n, 3 * n))
    j_force = np.zeros((3 * n, 3 * n))
    for i in range(n):
        j = (i + 1) % n
        d = x0[j] - x0[i]
        length = np.linalg.norm(d)
        de_dd = k * (length - 1.0) * d / length  # d energy_i / d d
        df_dd = k * ((1.0 - 1.0 / length) * np.eye(3) + np.outer(d, d) / length**3)  # d force_i / d d
        j_energy[i, 3 * j : 3 * j + 3] += de_dd
        j_energy[i, 3 * i : 3 * i + 3] -= de_dd
        j_force[3 * i : 3 * i + 3, 3 * j : 3 * j + 3] += df_dd
        j_force[3 * i : 3 * i + 3, 3 * i : 3 * i + 3] -= df_dd
    return {"energy": j_energy, "force": j_force}


def _scalar_matrix(jac_array) -> np.ndarray:
    """A weft.autograd Jacobian (rows x n vec3d) as a rows x 3n NumPy matrix."""
    a = jac_array.numpy()
    return a.reshape(a.shape[0], -1).astype(np.float64)


def run(n: int = 5, k: float = 3.0, seed: int = 1, out_dir=None, verbose: bool = True) -> dict:
    """Compute the four Jacobians; return them (``{method: {"energy", "force"}}``) and the largest
    differences from the analytic one. Writes the plot to ``out_dir`` if given."""
    say = print if verbose else (lambda *a, **kw: None)
    rng = np.random.default_rng(seed)
    angles = 2.0 * np.pi * np.arange(n) / n
    radius = 1.2 / (2.0 * np.sin(np.pi / n)) if n > 2 else 0.6  # springs stretched to about 1.2
    x0 = np.stack([radius * np.cos(angles), radius * np.sin(angles), np.zeros(n)], axis=1)
    x0 += 0.1 * rng.normal(size=x0.shape)

    s = make_springs(x0, k)
    by_struct = struct_jacobian(s)

    x = wp.array(x0, dtype=wp.vec3d, requires_grad=True)
    energy = wp.zeros(n, dtype=wp.float64, requires_grad=True)
    force = wp.zeros(n, dtype=wp.vec3d, requires_grad=True)
    args = {"dim": n, "inputs": [x, k], "outputs": [energy, force]}
    jac_ad = weft.autograd.jacobian(eval_arrays, **args)
    jac_fd = weft.autograd.jacobian_fd(eval_arrays, eps=1e-6, **args)
    methods = {
        "struct, row by row": by_struct,
        "weft.autograd.jacobian": {"energy": _scalar_matrix(jac_ad[(0, 0)]), "force": _scalar_matrix(jac_ad[(0, 1)])},
        "weft.autograd.jacobian_fd": {
            "energy": _scalar_matrix(jac_fd[(0, 0)]),
            "force": _scalar_matrix(jac_fd[(0, 1)]),
        },
        "analytic": analytic_jacobian(x0, k),
    }
    exact = methods["analytic"]
    errors = {m: max(float(np.abs(j[f] - exact[f]).max()) for f in ("energy", "force")) for m, j in methods.items()}
    say(
        f"ring of {n} springs (k = {k}): Jacobians d energy / d x ({n} x {3 * n}) and d force / d x ({3 * n} x {3 * n})"
    )
    for m, err in errors.items():
        say(f"  {m:28s} max |J - J_analytic| = {err:.3e}")
    say(
        "  row of d energy[0] / d x (struct):", np.array2string(by_struct["energy"][0], precision=4, max_line_width=120)
    )

    if out_dir:
        os.makedirs(out_dir, exist_ok=True)
        png = os.path.join(out_dir, "jacobian.png")
        fig = _plot(jac_ad, x, k, png)
        say(f"wrote {png}" if fig else "matplotlib is not installed: skipped the plot (pip install matplotlib)")
    return {"methods": methods, "errors": errors}


def _plot(jac_ad, x, k, png):
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return None
    fig = weft.autograd.jacobian_plot(
        jac_ad,
        eval_arrays,
        inputs=[x, k],
        show_plot=False,
        title="ring of springs: d(energy, force) / d x",
        filename=png,
    )
    plt.close(fig)
    return fig


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--n", type=int, default=5, help="number of particles / springs (default 5)")
    parser.add_argument("--k", type=float, default=3.0, help="spring stiffness (default 3)")
    parser.add_argument("--out", default=os.path.join(".", "examples_output", "struct_jacobian"), help="output folder")
    args = parser.parse_args(argv)
    r = run(args.n, args.k, out_dir=args.out)
    ok = all(err < 1e-6 for err in r["errors"].values())
    print(f"all four Jacobians agree to 1e-6: {'yes' if ok else 'NO'}")
    print(f"output folder: {os.path.abspath(args.out)}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
