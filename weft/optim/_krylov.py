"""The Krylov solvers of ``weft.optim.linear``: a solver state holds its work vectors (allocated
once) and runs a solve when called; the ``cg`` / ``cr`` / ``bicgstab`` / ``gmres`` functions make
one and call it (or return it, ``run=False``).

Vectors are arrays shaped like ``b``; their scalars are updated and reduced per subproblem by
``_batches.Batches`` (one subproblem unless the operator has ``batch_offsets``). The recurrences'
scalars live on the host as NumPy arrays with one entry per subproblem: every subproblem takes
its own steps, a subproblem that converged exactly or broke down takes zero steps while the
others go on, and the solve stops when every subproblem meets its tolerance (the worst case is
what the callback and the results report)."""

from __future__ import annotations

import math
from typing import Callable

import numpy as np

from .. import types as wt
from ..array import array, copy, zeros_like
from ._batches import Batches, divide, host_offsets
from ._linear_operators import LinearOperator, _flat, aslinearoperator

_EPS = {wt.float64: 1.0e-16, wt.float16: 1.0e-4}


def _tolerances(scalar, tol, atol) -> tuple:
    eps = _EPS.get(scalar, 1.0e-8)
    if tol is None and atol is None:
        tol = atol = eps ** 0.75
    elif tol is None:
        tol = atol
    elif atol is None:
        atol = tol
    return float(tol), max(float(atol), eps ** 2.25)


def _worst(rr: np.ndarray, atol: np.ndarray) -> tuple:
    """``(residual_norm, tolerance)`` of the subproblem furthest from its tolerance."""
    err = np.sqrt(np.maximum(rr, 0.0))
    k = int(np.argmax(err / atol)) if err.size else 0
    return float(err[k]), float(atol[k])


class LinearSolverState:
    """A solver with its work vectors allocated for one problem shape; call it to solve,
    optionally with another ``A``, ``b``, ``x`` or ``M`` of the same shapes and types (no new
    allocations). Made by the solver functions with ``run=False``, or directly (``CG(A, b,
    x, ...)``).

    A ``LinearOperator`` with ``batch_offsets`` makes a batched solve: independent subproblems
    iterate together, each with its own step lengths and its own tolerance
    (``max(atol, tol * norm(b_k))``), until every one meets it; unknowns outside the
    subproblems keep their values.

    Returns (of a call): ``(iterations, residual_norm, absolute_tolerance)``, for a batched
    solve those of the subproblem furthest from its tolerance; with ``check_every=0``, the same
    as one-element arrays holding the iteration count, the squared residual norm and the
    squared tolerance.
    """

    _work_vectors = 0
    _preconditioner_fixed = False  # whether a solve must keep having (or not having) M, as Warp's

    def __init__(self, A, b: array, x: array, tol=None, atol=None, maxiter=0, M=None, callback: Callable | None = None,
                 check_every: int = 10, use_cuda_graph: bool = True):
        self._A = aslinearoperator(A)
        self._M = aslinearoperator(M)
        if b.shape != x.shape or b.dtype != x.dtype:
            raise ValueError(f"b and x must have the same shape and type, got {b.shape} {b.dtype} and {x.shape} {x.dtype}")
        self._b, self._x = b, x
        self._tol, self._atol = tol, atol
        self._callback = callback
        self._check_every = int(check_every)
        self._use_cuda_graph = use_cuda_graph
        self._scalar = self._A.scalar_type
        self._dofs = _flat(b).shape[0]
        self._maxiter = maxiter if maxiter else self._dofs  # compared as given: 0.5 allows one iteration
        self._batches = self._layout(self._A)
        # zeroed, not empty: updates leave the unknowns of no subproblem as they are, and a dense
        # operator multiplies its zero couplings with them (0 * NaN garbage would be NaN)
        self._work = [zeros_like(b) for _ in range(self._work_vectors)]

    def _layout(self, A: LinearOperator) -> Batches:
        length = max(1, self._dofs // max(1, self._b.size))
        return Batches(A.batch_offsets, self._dofs, A.device, A.max_batch_length, length)

    # ------------------------------------------------------------------ entry point
    def __call__(self, A=None, b=None, x=None, M=None):
        A = aslinearoperator(A) if A is not None else self._A
        M = aslinearoperator(M) if M is not None else self._M
        b = self._b if b is None else b
        x = self._x if x is None else x
        self._check_compatible(A, b, x, M)
        tol, atol = _tolerances(self._scalar, self._tol, self._atol)
        atol = np.maximum(atol, tol * np.sqrt(self._dot(b, b)))
        iterations, rr = self._solve(A, b, x, M, atol)
        err, worst_atol = _worst(rr, atol)
        if self._check_every > 0:
            return iterations, err, worst_atol
        device = self._A.device
        return (
            array([iterations], dtype=wt.int32, device=device),
            array([err * err], dtype=self._scalar, device=device),
            array([worst_atol * worst_atol], dtype=self._scalar, device=device),
        )

    def _check_compatible(self, A, b, x, M):
        if A is not self._A and (A.shape != self._A.shape or A.dtype != self._A.dtype or A.device != self._A.device):
            raise ValueError(f"Incompatible A: expected shape {self._A.shape} and type {self._A.dtype} on {self._A.device}")
        if A is not self._A and (A.batch_offsets is None) != (self._A.batch_offsets is None):
            raise ValueError("Incompatible A: the solver was built with batch_offsets and this operator has none, or the reverse")
        if A is not self._A and A.batch_offsets is not None:
            if A.max_batch_length != self._A.max_batch_length:
                raise ValueError(f"Incompatible A: max_batch_length {A.max_batch_length}, the solver was built for {self._A.max_batch_length}")
            if not np.array_equal(host_offsets(A.batch_offsets), self._batches.offsets):
                raise ValueError("Incompatible A: its batch_offsets differ from those the solver was built for")
        for name, new, old in (("b", b, self._b), ("x", x, self._x)):
            if new is not old and (new.shape != old.shape or new.dtype != old.dtype):
                raise ValueError(f"Incompatible {name}: expected shape {old.shape} and type {old.dtype}, got {new.shape} {new.dtype}")
        if (M is None) != (self._M is None) and self._preconditioner_fixed:
            raise ValueError("the solver was built with and without a preconditioner M; pass M in both or neither")
        if M is not None and self._M is not None and M is not self._M and (M.shape != self._M.shape or M.dtype != self._M.dtype):
            raise ValueError(f"Incompatible M: expected shape {self._M.shape} and type {self._M.dtype}")

    # ------------------------------------------------------------------ vector operations
    def _dot(self, u: array, v: array) -> np.ndarray:
        """Per subproblem, the dot product of ``u`` and ``v``."""
        return self._batches.dot(_flat(u), _flat(v))

    def _axpby(self, a, u: array, c, v: array, out: array):
        """``out = a u + c v`` (coefficients per subproblem or shared)."""
        self._batches.axpby(a, _flat(u), c, _flat(v), _flat(out), self._scalar)

    def _residual(self, A: LinearOperator, b: array, x: array, r: array):
        A.matvec(x, b, r, -1.0, 1.0)

    def _precondition(self, M, r: array, z: array):
        if M is None:
            copy(z, r)
        else:
            M.matvec(r, z, z, 1.0, 0.0)

    def _stop(self, iteration: int, rr: np.ndarray, atol: np.ndarray) -> bool:
        """A residual check: reports the worst subproblem to the callback and tells whether
        every subproblem is within its tolerance."""
        if self._callback is not None and self._check_every > 0:
            self._callback(iteration, *_worst(rr, atol))
        return bool(np.all(np.sqrt(np.maximum(rr, 0.0)) <= atol))

    def _check_due(self, iteration: int) -> bool:
        return self._check_every <= 0 or iteration % self._check_every == 0

    def _cycle_check_due(self, iteration: int, cycle: int) -> bool:
        """With restarts every ``cycle`` iterations, residual checks (and the iteration limit)
        apply at cycle starts only, every ``check_every`` iterations rounded to whole cycles."""
        if iteration % cycle:
            return False
        every = max(1, round(self._check_every / cycle)) if self._check_every > 0 else 1
        return (iteration // cycle) % every == 0

    def _solve(self, A, b, x, M, atol) -> tuple:
        """Run the iterations; return ``(iterations, squared residual norms per subproblem)``."""
        raise NotImplementedError(f"{type(self).__name__} does not define a solve")


def _restart_value(restart):
    if restart is None:
        return None
    if isinstance(restart, bool) or not isinstance(restart, (int, np.integer)):
        raise TypeError(f"restart must be an integer or None, got {type(restart).__name__}")
    if restart <= 0:
        raise ValueError(f"restart must be positive, got {restart}")
    return int(restart)


def _finite(values: np.ndarray) -> bool:
    return bool(np.all(np.isfinite(values)))


class CG(LinearSolverState):
    """Preconditioned conjugate gradient for symmetric positive-definite ``A`` (and ``M``).
    ``restart=k`` recomputes ``r = b - A x`` and resets the search direction every ``k``
    iterations."""

    _work_vectors = 4

    def __init__(self, *args, restart: int | None = None, **kwargs):
        super().__init__(*args, **kwargs)
        self._restart = _restart_value(restart)

    def _solve(self, A, b, x, M, atol):
        r, z, p, Ap = self._work
        it, cycle = 0, self._restart or math.inf
        self._residual(A, b, x, r)
        rr = self._dot(r, r)
        while True:
            self._precondition(M, r, z)
            rz = self._dot(r, z)
            copy(p, z)
            k = 0
            while True:
                if self._restart is None:
                    if (self._check_due(it) and self._stop(it, rr, atol)) or it >= self._maxiter:
                        return it, rr
                elif k == 0 and ((self._cycle_check_due(it, cycle) and self._stop(it, rr, atol)) or it >= self._maxiter):
                    return it, rr  # whole cycles: the limit may be passed by up to restart - 1
                A.matvec(p, p, Ap, 1.0, 0.0)
                pAp = self._dot(p, Ap)
                if not _finite(pAp) or not pAp.any():
                    return it, rr
                alpha = divide(rz, pAp)
                self._axpby(alpha, p, 1.0, x, x)
                self._axpby(-alpha, Ap, 1.0, r, r)
                it, k = it + 1, k + 1
                if k >= cycle:
                    self._residual(A, b, x, r)
                    rr = self._dot(r, r)
                    break
                rr = self._dot(r, r)
                self._precondition(M, r, z)
                rz_new = self._dot(r, z)
                beta = divide(rz_new, rz)
                rz = rz_new
                self._axpby(1.0, z, beta, p, p)


class CR(LinearSolverState):
    """Preconditioned conjugate residual for symmetric ``A`` (symmetric positive-definite ``M``);
    the residual norm decreases monotonically. ``restart`` as for ``CG``."""

    _work_vectors = 6

    def __init__(self, *args, restart: int | None = None, **kwargs):
        super().__init__(*args, **kwargs)
        self._restart = _restart_value(restart)

    def _solve(self, A, b, x, M, atol):
        r, z, p, Az, Ap, y = self._work
        it, cycle = 0, self._restart or math.inf
        self._residual(A, b, x, r)
        rr = self._dot(r, r)
        while True:
            self._precondition(M, r, z)
            A.matvec(z, z, Az, 1.0, 0.0)
            zAz = self._dot(z, Az)
            copy(p, z)
            copy(Ap, Az)
            k = 0
            while True:
                if self._restart is None:
                    if (self._check_due(it) and self._stop(it, rr, atol)) or it >= self._maxiter:
                        return it, rr
                elif k == 0 and ((self._cycle_check_due(it, cycle) and self._stop(it, rr, atol)) or it >= self._maxiter):
                    return it, rr  # whole cycles: the limit may be passed by up to restart - 1
                self._precondition(M, Ap, y)
                denom = self._dot(Ap, y)
                if not _finite(denom) or not denom.any():
                    return it, rr
                alpha = divide(zAz, denom)
                self._axpby(alpha, p, 1.0, x, x)
                self._axpby(-alpha, Ap, 1.0, r, r)
                self._axpby(-alpha, y, 1.0, z, z)
                it, k = it + 1, k + 1
                if k >= cycle:
                    self._residual(A, b, x, r)
                    rr = self._dot(r, r)
                    break
                rr = self._dot(r, r)
                A.matvec(z, z, Az, 1.0, 0.0)
                zAz_new = self._dot(z, Az)
                beta = divide(zAz_new, zAz)
                zAz = zAz_new
                self._axpby(1.0, z, beta, p, p)
                self._axpby(1.0, Az, beta, Ap, Ap)


class BiCGSTAB(LinearSolverState):
    """Preconditioned BiCGSTAB for general ``A``: ``M`` is applied to the search directions
    (``A M u = b``); with ``is_left_preconditioner`` the stabilising step also minimises the
    preconditioned residual ``|M (s - omega t)|`` instead of ``|s - omega t|``. Checks use the
    running residual ``r`` (in float32 it may drift from ``b - A x``). A subproblem that breaks
    down (``omega`` or ``rho`` zero) restarts from its current residual."""

    _work_vectors = 8
    _preconditioner_fixed = True

    def __init__(self, *args, is_left_preconditioner: bool = False, **kwargs):
        super().__init__(*args, **kwargs)
        self._left = bool(is_left_preconditioner)

    def _solve(self, A, b, x, M, atol):
        r, r0, p, v, y, z, t, Mt = self._work
        left = self._left and M is not None
        self._residual(A, b, x, r)
        copy(r0, r)
        copy(p, r)
        v.zero_()
        rr = self._dot(r, r)
        rho = rr
        it = 0
        while True:
            if (self._check_due(it) and self._stop(it, rr, atol)) or it >= self._maxiter:
                return it, rr
            self._precondition(M, p, y)
            A.matvec(y, y, v, 1.0, 0.0)
            r0v = self._dot(r0, v)
            if not _finite(r0v) or not r0v.any():
                return it, rr
            alpha = divide(rho, r0v)
            self._axpby(alpha, y, 1.0, x, x)
            self._axpby(-alpha, v, 1.0, r, r)  # s = r - alpha v
            self._precondition(M, r, z)
            A.matvec(z, z, t, 1.0, 0.0)
            if left:
                M.matvec(t, Mt, Mt, 1.0, 0.0)
                st, tt = self._dot(z, Mt), self._dot(Mt, Mt)
            else:
                st, tt = self._dot(r, t), self._dot(t, t)
            omega = divide(st, tt)
            self._axpby(omega, z, 1.0, x, x)
            self._axpby(-omega, t, 1.0, r, r)
            it += 1
            rr = self._dot(r, r)
            rho_new = self._dot(r0, r)
            broken = (omega == 0.0) | (rho_new == 0.0)  # restart these from the current residual
            beta = divide(rho_new, rho) * divide(alpha, omega)
            rho = np.where(broken, rr, rho_new)
            self._axpby(1.0, p, -omega, v, p)
            self._axpby(1.0, r, beta, p, p)
            if broken.any():
                keep = (~broken).astype(np.float64)
                self._axpby(keep, r0, 1.0 - keep, r, r0)
                self._axpby(keep, p, 1.0 - keep, r, p)


class GMRES(LinearSolverState):
    """Restarted GMRES(``restart``) for general ``A``; ``M`` right-preconditions unless
    ``is_left_preconditioner``. The residual is checked at every restart (cycles end early once
    every subproblem's least-squares residual is small enough)."""

    _preconditioner_fixed = True

    def __init__(self, A, b, x, tol=None, atol=None, restart: int = 31, maxiter=0, M=None, callback=None,
                 check_every: int = 31, use_cuda_graph: bool = True, is_left_preconditioner: bool = False):
        self._restart = max(1, int(restart))
        self._work_vectors = self._restart + 5  # the basis, then w, r, u and a scratch vector
        super().__init__(A, b, x, tol, atol, maxiter, M, callback, check_every, use_cuda_graph)
        self._left = bool(is_left_preconditioner)

    def _solve(self, A, b, x, M, atol):
        m, nb = self._restart, self._batches.count
        basis = self._work[: m + 1]
        w, r, u, scratch = self._work[m + 1 :]
        left = self._left and M is not None
        it = 0
        while True:
            self._residual(A, b, x, r)
            rr = self._dot(r, r)
            err = np.sqrt(rr)
            if self._stop(it, rr, atol) or it >= self._maxiter:
                return it, rr
            if left:
                self._precondition(M, r, u)
                beta = np.sqrt(self._dot(u, u))
                start = u
                target = np.where(err > 0.0, atol * beta / np.where(err > 0.0, err, 1.0), np.inf)
            else:
                beta, start, target = err, r, atol
            if not beta.any():
                return it, rr
            self._axpby(divide(1.0, beta), start, 0.0, start, basis[0])
            H = np.zeros((nb, m + 1, m))
            g = np.zeros((nb, m + 1))
            g[:, 0] = beta
            rotations = []
            steps = 0
            for j in range(m):
                if left:
                    A.matvec(basis[j], basis[j], scratch, 1.0, 0.0)
                    M.matvec(scratch, w, w, 1.0, 0.0)
                else:
                    self._precondition(M, basis[j], scratch)
                    A.matvec(scratch, scratch, w, 1.0, 0.0)
                for i in range(j + 1):  # modified Gram-Schmidt
                    H[:, i, j] = self._dot(w, basis[i])
                    self._axpby(-H[:, i, j], basis[i], 1.0, w, w)
                H[:, j + 1, j] = np.sqrt(np.maximum(self._dot(w, w), 0.0))
                self._axpby(divide(1.0, H[:, j + 1, j]), w, 0.0, w, basis[j + 1])
                for i, (c, s) in enumerate(rotations):
                    H[:, i, j], H[:, i + 1, j] = c * H[:, i, j] + s * H[:, i + 1, j], -s * H[:, i, j] + c * H[:, i + 1, j]
                denom = np.hypot(H[:, j, j], H[:, j + 1, j])
                c = np.where(denom == 0.0, 1.0, divide(H[:, j, j], denom))
                s = divide(H[:, j + 1, j], denom)
                rotations.append((c, s))
                H[:, j, j], H[:, j + 1, j] = c * H[:, j, j] + s * H[:, j + 1, j], 0.0
                g[:, j], g[:, j + 1] = c * g[:, j], -s * g[:, j]
                steps, it = j + 1, it + 1
                if np.all(np.abs(g[:, j + 1]) <= target) or it >= self._maxiter or not H[:, j, j].any():
                    break
            y = _back_substitute(H[:, :steps, :steps], g[:, :steps])
            u.zero_()
            for i in range(steps):
                self._axpby(y[:, i], basis[i], 1.0, u, u)
            if left or M is None:
                self._axpby(1.0, u, 1.0, x, x)
            else:
                self._precondition(M, u, scratch)
                self._axpby(1.0, scratch, 1.0, x, x)


def _back_substitute(R: np.ndarray, g: np.ndarray) -> np.ndarray:
    """Solve the upper-triangular systems ``R[k] y[k] = g[k]`` of every subproblem ``k`` (0 where
    a diagonal entry is 0)."""
    nb, n = g.shape
    y = np.zeros((nb, n))
    for i in range(n - 1, -1, -1):
        rest = np.einsum("kj,kj->k", R[:, i, i + 1 :], y[:, i + 1 :])
        y[:, i] = divide(g[:, i] - rest, R[:, i, i])
    return y


# ---------------------------------------------------------------------------------------------
# the functions


def _run(state: LinearSolverState, run: bool):
    return state() if run else state


def cg(A, b, x, tol=None, atol=None, maxiter=0, M=None, callback=None, check_every=10, use_cuda_graph=True, run=True,
       *, restart=None):
    """Solve ``A x = b`` for symmetric positive-definite ``A`` by preconditioned conjugate
    gradients, from the initial guess in ``x`` (updated in place).

    Args:
        A: a 2-d array, a ``weft.sparse.BsrMatrix`` or a ``LinearOperator``.
        b, x: arrays of scalars or vectors of the same shape.
        tol, atol: relative (to ``norm(b)``) and absolute tolerances on the residual norm (see
            the module docstring for defaults).
        maxiter: iteration limit (0: the number of scalar unknowns).
        M: a preconditioner (``preconditioner(A)``), approximating ``A``'s inverse.
        callback: ``callback(iteration, residual_norm, tolerance)`` at every check.
        check_every: iterations between residual checks (0: every iteration, results as arrays).
        run: ``False`` returns the ``CG`` solver state instead of solving.
        restart: recompute the residual and reset the search direction every ``restart``
            iterations.

    Returns:
        ``(iterations, residual_norm, absolute_tolerance)`` (see ``LinearSolverState``).
    """
    return _run(CG(A, b, x, tol, atol, maxiter, M, callback, check_every, use_cuda_graph, restart=restart), run)


def cr(A, b, x, tol=None, atol=None, maxiter=0, M=None, callback=None, check_every=10, use_cuda_graph=True, run=True,
       *, restart=None):
    """Solve ``A x = b`` for symmetric ``A`` by the preconditioned conjugate residual method
    (arguments and results as ``cg``)."""
    return _run(CR(A, b, x, tol, atol, maxiter, M, callback, check_every, use_cuda_graph, restart=restart), run)


def bicgstab(A, b, x, tol=None, atol=None, maxiter=0, M=None, callback=None, check_every=10, use_cuda_graph=True,
             is_left_preconditioner=False, run=True):
    """Solve ``A x = b`` for general ``A`` by BiCGSTAB (arguments and results as ``cg``; ``M``
    right-preconditions unless ``is_left_preconditioner``)."""
    state = BiCGSTAB(A, b, x, tol, atol, maxiter, M, callback, check_every, use_cuda_graph,
                     is_left_preconditioner=is_left_preconditioner)
    return _run(state, run)


def gmres(A, b, x, tol=None, atol=None, restart=31, maxiter=0, M=None, callback=None, check_every=31,
          use_cuda_graph=True, is_left_preconditioner=False, run=True):
    """Solve ``A x = b`` for general ``A`` by GMRES restarted every ``restart`` iterations
    (arguments and results as ``cg``; ``M`` right-preconditions unless
    ``is_left_preconditioner``)."""
    state = GMRES(A, b, x, tol, atol, restart, maxiter, M, callback, check_every, use_cuda_graph,
                  is_left_preconditioner)
    return _run(state, run)
