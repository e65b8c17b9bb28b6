"""A 2-D Poisson problem solved with a sparse matrix and conjugate gradients.

``-laplace(u) = f`` on the unit square with ``u = 0`` on its boundary, discretised on an
``n`` x ``n`` grid of interior points (spacing ``h = 1 / (n + 1)``) with the 5-point stencil:
``(4 u[i, j] - u[i-1, j] - u[i+1, j] - u[i, j-1] - u[i, j+1]) / h^2 = f[i, j]``. The right-hand
side comes from the solution ``u = x (1 - x) y (1 - y)`` (``f = 2 (x (1 - x) + y (1 - y))``),
quadratic in each variable, for which the stencil is exact: the discrete solution equals ``u``
at the grid points, and the error printed is that of the solve alone.

The steps, all on ``--device``:

* a kernel writes the matrix as triplets, five per grid point (neighbours outside the grid get
  row -1, and ``bsr_from_triplets`` ignores them), and the right-hand side;
* ``weft.sparse.bsr_from_triplets`` assembles the ``n^2`` x ``n^2`` CSR matrix (1x1 blocks);
* ``weft.optim.linear.cg`` with a Jacobi preconditioner solves it to ``--tol`` (relative).

Run::

    python -m weft.examples.poisson [--n 512] [--tol 1e-6] [--out DIR] [--device cpu]

With the default ``n = 512`` the system has 262,144 unknowns. It prints the iterations, the
residual and the error against the exact solution, and writes ``poisson.png`` (the solution
and the error; needs matplotlib, skipped without it) and ``solve.txt`` into DIR (default
``./examples_output/poisson/``).
"""

import argparse
import os
import sys
import time

import numpy as np

import weft as wp
from weft.optim.linear import cg, preconditioner
from weft.sparse import bsr_from_triplets


@wp.kernel
def stencil_triplets(
    n: int,
    inv_h2: float,
    rows: wp.array(dtype=int),
    cols: wp.array(dtype=int),
    values: wp.array(dtype=float),
):
    """Row ``i * n + j`` of the 5-point Laplacian: triplets ``5 k`` .. ``5 k + 4``."""
    i, j = wp.tid()
    row = i * n + j
    k = 5 * row
    rows[k] = row
    cols[k] = row
    values[k] = 4.0 * inv_h2
    for d in range(4):
        di = 0
        dj = 0
        if d == 0:
            di = -1
        elif d == 1:
            di = 1
        elif d == 2:
            dj = -1
        else:
            dj = 1
        ni = i + di
        nj = j + dj
        inside = ni >= 0 and ni < n and nj >= 0 and nj < n
        rows[k + 1 + d] = wp.where(inside, row, -1)  # outside the grid: ignored by bsr_from_triplets
        cols[k + 1 + d] = wp.where(inside, ni * n + nj, 0)
        values[k + 1 + d] = -inv_h2


@wp.kernel
def right_hand_side(n: int, h: float, f: wp.array(dtype=float), exact: wp.array(dtype=float)):
    i, j = wp.tid()
    x = float(i + 1) * h
    y = float(j + 1) * h
    exact[i * n + j] = x * (1.0 - x) * y * (1.0 - y)
    f[i * n + j] = 2.0 * (x * (1.0 - x) + y * (1.0 - y))


def solve(n: int, tol: float = 1e-6, device=None) -> dict:
    """Assemble and solve the ``n`` x ``n`` problem; returns the solution, the exact solution
    (flat, row ``i * n + j``) and the solver's figures."""
    h = 1.0 / (n + 1)
    unknowns = n * n
    rows = wp.empty(5 * unknowns, dtype=int, device=device)
    cols = wp.empty(5 * unknowns, dtype=int, device=device)
    values = wp.empty(5 * unknowns, dtype=float, device=device)
    wp.launch(stencil_triplets, dim=(n, n), inputs=[n, 1.0 / (h * h), rows, cols, values], device=device)
    t0 = time.perf_counter()
    A = bsr_from_triplets(unknowns, unknowns, rows, cols, values)
    assembly = time.perf_counter() - t0
    f = wp.empty(unknowns, dtype=float, device=device)
    exact = wp.empty(unknowns, dtype=float, device=device)
    wp.launch(right_hand_side, dim=(n, n), inputs=[n, h, f, exact], device=device)
    u = wp.zeros(unknowns, dtype=float, device=device)
    t0 = time.perf_counter()
    iterations, residual, atol = cg(A, f, u, tol=tol, maxiter=20 * n, M=preconditioner(A, "diag"), check_every=25)
    seconds = time.perf_counter() - t0
    u_np, exact_np = u.numpy(), exact.numpy()
    return {
        "n": n,
        "unknowns": unknowns,
        "nnz": A.nnz,
        "iterations": iterations,
        "residual": residual,
        "tolerance": atol,
        "assembly_s": assembly,
        "solve_s": seconds,
        "max_error": float(np.max(np.abs(u_np - exact_np))),
        "max_u": float(np.max(np.abs(exact_np))),
        "u": u_np.reshape(n, n),
        "exact": exact_np.reshape(n, n),
    }


def _plot(result: dict, path: str) -> bool:
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return False
    fig, axes = plt.subplots(1, 2, figsize=(10, 4.4))
    im = axes[0].imshow(result["u"].T, origin="lower", extent=(0, 1, 0, 1), cmap="viridis")
    axes[0].set_title(f"u, {result['n']} x {result['n']} grid")
    fig.colorbar(im, ax=axes[0])
    im = axes[1].imshow((result["u"] - result["exact"]).T, origin="lower", extent=(0, 1, 0, 1), cmap="coolwarm")
    axes[1].set_title("u - exact")
    fig.colorbar(im, ax=axes[1])
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return True


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--n", type=int, default=512, help="interior grid points per side (default 512)")
    parser.add_argument("--tol", type=float, default=1e-6, help="relative residual tolerance (default 1e-6)")
    parser.add_argument("--out", default=os.path.join("examples_output", "poisson"))
    parser.add_argument("--device", default="cpu")
    args = parser.parse_args(argv)
    wp.init()
    result = solve(args.n, args.tol, args.device)
    print(
        f"{result['unknowns']:,} unknowns, {result['nnz']:,} nonzeros; assembled in {result['assembly_s']:.2f} s "
        f"on {args.device}"
    )
    print(
        f"cg (Jacobi): {result['iterations']} iterations in {result['solve_s']:.2f} s, residual "
        f"{result['residual']:.3e} (tolerance {result['tolerance']:.3e})"
    )
    print(f"max error against x (1 - x) y (1 - y): {result['max_error']:.3e} (max |u| {result['max_u']:.4f})")
    os.makedirs(args.out, exist_ok=True)
    with open(os.path.join(args.out, "solve.txt"), "w") as f:
        for key in ("n", "unknowns", "nnz", "iterations", "residual", "tolerance", "max_error", "max_u"):
            f.write(f"{key} {result[key]}\n")
    png = os.path.join(args.out, "poisson.png")
    print(f"wrote {png}" if _plot(result, png) else "matplotlib is not installed: skipped the picture")
    print(f"output folder: {os.path.abspath(args.out)}")
    return 0 if result["residual"] <= result["tolerance"] else 1


if __name__ == "__main__":
    sys.exit(main())
