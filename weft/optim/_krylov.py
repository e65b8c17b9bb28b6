"""The Krylov solvers of ``weft.optim.linear``: a solver state holds its work vectors (allocated
once) and runs a solve when called; the ``cg`` / ``cr`` / ``bicgstab`` / ``gmres`` functions make
one and call it (or return it, ``run=False``).

Vectors are arrays shaped like ``b``; their scalars are updated by the ``_axpby`` kernel and
reduced in float64 by ``_linear_operators.dot``. The recurrences' scalars are Python floats."""

from __future__ import annotations

import math
from typing import Callable

import numpy as np

from .. import types as wt
from ..array import array, copy, empty_like
from ..runtime.launch import launch
from ._linear_operators import LinearOperator, _axpby, _flat, aslinearoperator, dot

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


class LinearSolverState:
    """A solver with its work vectors allocated for one problem shape; call it to solve,
    optionally with another ``A``, ``b``, ``x`` or ``M`` of the same shapes and types (no new
    allocations). Made by the solver functions with ``run=False``, or directly (``CG(A, b,
    x, ...)``).

    Returns (of a call): ``(iterations, residual_norm, absolute_tolerance)``; with
    ``check_every=0``, the same as one-element arrays holding the iteration count, the squared
    residual norm and the squared tolerance.
    """

    _work_vectors = 0
    _preconditioner_fixed = False  # whether a solve must keep having (or not having) M, as Warp's

    def __init__(self, A, b: array, x: array, tol=None, atol=None, maxiter=0, M=None, callback: Callable | None = None,
                 check_every: int = 10, use_cuda_graph: bool = True):
        self._A = aslinearoperator(A)
        self._M = aslinearoperator(M)
        for op in (self._A, self._M):
            if op is not None and op.batch_offsets is not None:
                raise NotImplementedError("weft's linear solvers do not support batched operators (batch_offsets) yet")
        if b.shape != x.shape or b.dtype != x.dtype:
            raise ValueError(f"b and x must have the same shape and type, got {b.shape} {b.dtype} and {x.shape} {x.dtype}")
        self._b, self._x = b, x
        self._tol, self._atol = tol, atol
        self._callback = callback
        self._check_every = int(check_every)
        self._use_cuda_graph = use_cuda_graph
        self._scalar = self._A.scalar_type
        self._dofs = _flat(b).shape[0]
        self._maxiter = int(maxiter) if maxiter else self._dofs
        self._work = [empty_like(b) for _ in range(self._work_vectors)]

    # ------------------------------------------------------------------ entry point
    def __call__(self, A=None, b=None, x=None, M=None):
        A = aslinearoperator(A) if A is not None else self._A
        M = aslinearoperator(M) if M is not None else self._M
        b = self._b if b is None else b
        x = self._x if x is None else x
        self._check_compatible(A, b, x, M)
        tol, atol = _tolerances(self._scalar, self._tol, self._atol)
        atol = max(atol, tol * math.sqrt(self._dot(b, b)))
        iterations, err = self._solve(A, b, x, M, atol)
        if self._check_every > 0:
            return iterations, err, atol
        device = self._A.device
        return (
            array([iterations], dtype=wt.int32, device=device),
            array([err * err], dtype=self._scalar, device=device),
            array([atol * atol], dtype=self._scalar, device=device),
        )

    def _check_compatible(self, A, b, x, M):
        if A is not self._A and (A.shape != self._A.shape or A.dtype != self._A.dtype or A.device != self._A.device):
            raise ValueError(f"Incompatible A: expected shape {self._A.shape} and type {self._A.dtype} on {self._A.device}")
        for name, new, old in (("b", b, self._b), ("x", x, self._x)):
            if new is not old and (new.shape != old.shape or new.dtype != old.dtype):
                raise ValueError(f"Incompatible {name}: expected shape {old.shape} and type {old.dtype}, got {new.shape} {new.dtype}")
        if (M is None) != (self._M is None) and self._preconditioner_fixed:
            raise ValueError("the solver was built with and without a preconditioner M; pass M in both or neither")
        if M is not None and self._M is not None and M is not self._M and (M.shape != self._M.shape or M.dtype != self._M.dtype):
            raise ValueError(f"Incompatible M: expected shape {self._M.shape} and type {self._M.dtype}")

    # ------------------------------------------------------------------ vector operations
    def _dot(self, u: array, v: array) -> float:
        return dot(_flat(u), _flat(v))

    def _axpby(self, a: float, u: array, c: float, v: array, out: array):
        """``out = a u + c v``."""
        s = self._scalar
        launch(_axpby, dim=self._dofs, inputs=[_flat(u), _flat(v), s(a), s(c), _flat(out)], device=self._A.device)

    def _residual(self, A: LinearOperator, b: array, x: array, r: array):
        A.matvec(x, b, r, -1.0, 1.0)

    def _precondition(self, M, r: array, z: array):
        if M is None:
            copy(z, r)
        else:
            M.matvec(r, z, z, 1.0, 0.0)

    def _stop(self, iteration: int, err: float, atol: float) -> bool:
        """A residual check: reports to the callback and tells whether the solve is done."""
        if self._callback is not None and self._check_every > 0:
            self._callback(iteration, err, atol)
        return err <= atol

    def _check_due(self, iteration: int) -> bool:
        return self._check_every <= 0 or iteration % self._check_every == 0

    def _solve(self, A, b, x, M, atol) -> tuple:
        raise NotImplementedError(f"{type(self).__name__} does not define a solve")


def _restart_value(restart):
    if restart is None:
        return None
    if isinstance(restart, bool) or not isinstance(restart, (int, np.integer)):
        raise TypeError(f"restart must be an integer or None, got {type(restart).__name__}")
    if restart <= 0:
        raise ValueError(f"restart must be positive, got {restart}")
    return int(restart)


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
                if self._check_due(it) and self._stop(it, math.sqrt(rr), atol):
                    return it, math.sqrt(rr)
                if it >= self._maxiter:
                    return it, math.sqrt(rr)
                A.matvec(p, p, Ap, 1.0, 0.0)
                pAp = self._dot(p, Ap)
                if pAp == 0.0 or not math.isfinite(pAp):
                    return it, math.sqrt(rr)
                alpha = rz / pAp
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
                beta = rz_new / rz if rz != 0.0 else 0.0
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
                if self._check_due(it) and self._stop(it, math.sqrt(rr), atol):
                    return it, math.sqrt(rr)
                if it >= self._maxiter:
                    return it, math.sqrt(rr)
                self._precondition(M, Ap, y)
                denom = self._dot(Ap, y)
                if denom == 0.0 or not math.isfinite(denom):
                    return it, math.sqrt(rr)
                alpha = zAz / denom
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
                beta = zAz_new / zAz if zAz != 0.0 else 0.0
                zAz = zAz_new
                self._axpby(1.0, z, beta, p, p)
                self._axpby(1.0, Az, beta, Ap, Ap)


class BiCGSTAB(LinearSolverState):
    """Preconditioned BiCGSTAB for general ``A``: ``M`` is applied to the search directions
    (``A M u = b``); with ``is_left_preconditioner`` the stabilising step also minimises the
    preconditioned residual ``|M (s - omega t)|`` instead of ``|s - omega t|``. Checks use the
    running residual ``r`` (in float32 it may drift from ``b - A x``)."""

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
            if (self._check_due(it) and self._stop(it, math.sqrt(rr), atol)) or it >= self._maxiter:
                return it, math.sqrt(rr)
            self._precondition(M, p, y)
            A.matvec(y, y, v, 1.0, 0.0)
            r0v = self._dot(r0, v)
            if r0v == 0.0 or not math.isfinite(r0v):
                return it, math.sqrt(rr)
            alpha = rho / r0v
            self._axpby(alpha, y, 1.0, x, x)
            self._axpby(-alpha, v, 1.0, r, r)  # s = r - alpha v
            self._precondition(M, r, z)
            A.matvec(z, z, t, 1.0, 0.0)
            if left:
                M.matvec(t, Mt, Mt, 1.0, 0.0)
                st, tt = self._dot(z, Mt), self._dot(Mt, Mt)
            else:
                st, tt = self._dot(r, t), self._dot(t, t)
            omega = st / tt if tt != 0.0 else 0.0
            self._axpby(omega, z, 1.0, x, x)
            self._axpby(-omega, t, 1.0, r, r)
            it += 1
            rr = self._dot(r, r)
            rho_new = self._dot(r0, r)
            if omega == 0.0 or rho_new == 0.0:  # breakdown: restart from the current residual
                copy(r0, r)
                copy(p, r)
                rho = rr
                continue
            beta = (rho_new / rho) * (alpha / omega)
            rho = rho_new
            self._axpby(1.0, p, -omega, v, p)
            self._axpby(1.0, r, beta, p, p)


class GMRES(LinearSolverState):
    """Restarted GMRES(``restart``) for general ``A``; ``M`` right-preconditions unless
    ``is_left_preconditioner``. The residual is checked at every restart (cycles end early once
    the least-squares residual is small enough)."""

    _preconditioner_fixed = True

    def __init__(self, A, b, x, tol=None, atol=None, restart: int = 31, maxiter=0, M=None, callback=None,
                 check_every: int = 31, use_cuda_graph: bool = True, is_left_preconditioner: bool = False):
        self._restart = max(1, int(restart))
        self._work_vectors = self._restart + 5  # the basis, then w, r, u and a scratch vector
        super().__init__(A, b, x, tol, atol, maxiter, M, callback, check_every, use_cuda_graph)
        self._left = bool(is_left_preconditioner)

    def _solve(self, A, b, x, M, atol):
        m = self._restart
        basis = self._work[: m + 1]
        w, r, u, scratch = self._work[m + 1 :]
        left = self._left and M is not None
        it = 0
        while True:
            self._residual(A, b, x, r)
            err = math.sqrt(self._dot(r, r))
            if self._stop(it, err, atol) or it >= self._maxiter:
                return it, err
            if left:
                self._precondition(M, r, u)
                beta = math.sqrt(self._dot(u, u))
                start, target = u, atol * beta / err  # the preconditioned residual's share of atol
            else:
                beta, start, target = err, r, atol
            if beta == 0.0:
                return it, err
            self._axpby(1.0 / beta, start, 0.0, start, basis[0])
            H = np.zeros((m + 1, m))
            g = np.zeros(m + 1)
            g[0] = beta
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
                    H[i, j] = self._dot(w, basis[i])
                    self._axpby(-H[i, j], basis[i], 1.0, w, w)
                H[j + 1, j] = math.sqrt(self._dot(w, w))
                if H[j + 1, j] != 0.0:
                    self._axpby(1.0 / H[j + 1, j], w, 0.0, w, basis[j + 1])
                for i, (c, s) in enumerate(rotations):
                    H[i, j], H[i + 1, j] = c * H[i, j] + s * H[i + 1, j], -s * H[i, j] + c * H[i + 1, j]
                denom = math.hypot(H[j, j], H[j + 1, j])
                c, s = (1.0, 0.0) if denom == 0.0 else (H[j, j] / denom, H[j + 1, j] / denom)
                rotations.append((c, s))
                H[j, j], H[j + 1, j] = c * H[j, j] + s * H[j + 1, j], 0.0
                g[j], g[j + 1] = c * g[j], -s * g[j]
                steps, it = j + 1, it + 1
                if abs(g[j + 1]) <= target or it >= self._maxiter or H[j, j] == 0.0:
                    break
            y = _back_substitute(H[:steps, :steps], g[:steps])
            u.zero_()
            for i in range(steps):
                self._axpby(float(y[i]), basis[i], 1.0, u, u)
            if left or M is None:
                self._axpby(1.0, u, 1.0, x, x)
            else:
                self._precondition(M, u, scratch)
                self._axpby(1.0, scratch, 1.0, x, x)


def _back_substitute(R: np.ndarray, g: np.ndarray) -> np.ndarray:
    n = len(g)
    y = np.zeros(n)
    for i in range(n - 1, -1, -1):
        y[i] = (g[i] - R[i, i + 1 :] @ y[i + 1 :]) / R[i, i] if R[i, i] != 0.0 else 0.0
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
