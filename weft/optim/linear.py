"""Iterative linear solvers, as ``warp.optim.linear``: conjugate gradient (``cg``), conjugate
residual (``cr``), BiCGSTAB (``bicgstab``) and restarted GMRES (``gmres``) over dense matrices
(2-d arrays), diagonal matrices (1-d arrays), BSR matrices (``weft.sparse``) and
``LinearOperator``s, with Jacobi preconditioners (``preconditioner(A, "diag")``).

Vectors are arrays of scalars or of vectors (one per block row of a BSR matrix). Every vector
operation is a weft kernel over the arrays' scalars; the scalars of the recurrences (step
lengths, residual norms, GMRES's small least-squares problem) live on the host, so a solve
stops as soon as a check (every ``check_every`` iterations) finds the residual small enough.
``use_cuda_graph`` is accepted and has no effect.

Batched solves: a ``LinearOperator`` (or ``aslinearoperator(A, batch_offsets=...)``) whose
``batch_offsets`` split the scalar unknowns into independent subproblems (a block-diagonal
system) is solved with every subproblem taking its own steps and meeting its own tolerance;
unknowns outside the subproblems keep their values, and the results describe the subproblem
furthest from its tolerance.

Tolerances follow Warp: without ``tol`` and ``atol`` both default to ``eps ** 0.75`` of the
scalar type (``eps`` = 1e-8 for float32, 1e-16 for float64); one given stands for the other;
the absolute tolerance is at least ``eps ** 2.25``; a solve stops when the residual norm is at
most ``max(atol, tol * norm(b))``.
"""

from ._krylov import CG, CR, GMRES, BiCGSTAB, LinearSolverState, bicgstab, cg, cr, gmres
from ._linear_operators import LinearOperator, aslinearoperator, preconditioner

__all__ = [
    "BiCGSTAB",
    "CG",
    "CR",
    "GMRES",
    "LinearOperator",
    "LinearSolverState",
    "aslinearoperator",
    "bicgstab",
    "cg",
    "cr",
    "gmres",
    "preconditioner",
]
