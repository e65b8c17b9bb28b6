"""Table-driven tests of the composite builtins (weft/builtins/vector.py, constructors.py) and of
vectors, matrices, quaternions, transforms and spatial vectors in kernels (CPU only).

One list, ``SPECS``, describes every composite overload under test: the builtin, how a kernel
calls it (the builtin, a Python operator or a wrapper func for the output-parameter builtins),
its argument and result kinds (``"v3,m33->v3"``), a NumPy reference on batches of arguments,
the input domain of every argument, tolerances and whether it has a gradient. From that list:

- forward: kernel results match the NumPy reference in float32 and float64;
- gradients: in float64, the tape's vector-Jacobian product (random cotangent seeded on the
  output array) matches central finite differences for every float input component
  (STYLE rule 34); kinks are kept out of the samples by the domains or by ``away`` masks;
- coverage: every registry overload that takes a float composite has a spec, and every
  differentiable one a gradient spec (fails when a builtin is added without one); so do the
  Warp builtins weft writes as funcs (weft/builtins/library.py).

Then, outside the table: constructors, component reads/writes/augmented writes with gradients,
comparisons, arrays of vectors and matrices, atomics on vector arrays (with gradients),
composite kernel arguments by value, composite globals, print, component bounds errors, and
known gaps against warp-lang 1.19 as strict xfails.

Speed: every kernel is made at import time (factories) and lowered at once, so the first launch
builds them in one C++ compile. float16 kernels live in their own module.
"""

import dataclasses
import math
import zlib
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

import weft as wp
from weft import types as wt
from weft.builtins import library
from weft.builtins.registry import TypeVar, registry

N = 64  # samples per spec
FD_STEP = 1e-6
MARGIN = 1e-3  # finite differences only this far from a kink
FLOATS = (wp.float32, wp.float64)
F16_MODULE = __name__ + "_float16"

# ---------------------------------------------------------------------------------------------
# Kinds: a token per argument/result kind, and the weft type of a token for a scalar dtype.

SHAPES = {
    "s": (),
    "i": (),
    "u32": (),
    "b": (),
    "v2": (2,),
    "v3": (3,),
    "v4": (4,),
    "v6": (6,),
    "m22": (2, 2),
    "m33": (3, 3),
    "m44": (4, 4),
    "m23": (2, 3),
    "m32": (3, 2),
    "m66": (6, 6),
    "q": (4,),
    "x": (7,),
}


def type_of(token: str, dtype):
    """The weft type of ``token`` with scalar ``dtype``."""
    if token == "s":
        return dtype
    if token == "i":
        return wp.int32
    if token == "u32":
        return wp.uint32
    if token == "b":
        return wp.bool
    if token == "q":
        return wp.types.quaternion(dtype)
    if token == "x":
        return wp.types.transformation(dtype)
    if token[0] == "v":
        return wp.types.vector(length=int(token[1:]), dtype=dtype)
    return wp.types.matrix(shape=SHAPES[token], dtype=dtype)


# ---------------------------------------------------------------------------------------------
# Samplers: (rng, n, shape) -> float64 array of shape (n, *shape).


def u(lo, hi):
    return lambda rng, n, shape: rng.uniform(lo, hi, (n,) + shape)


ANY = u(-2.0, 2.0)
POS = u(0.5, 2.0)
ANGLE = u(-3.0, 3.0)
T_SLERP = u(-0.5, 1.5)
DELTA = u(0.5, 3.0)


def NZ(rng, n, shape):
    """Components away from zero (|x| in [0.5, 2])."""
    return rng.choice([-1.0, 1.0], (n,) + shape) * rng.uniform(0.5, 2.0, (n,) + shape)


def COND(rng, n, shape):
    return rng.integers(-1, 3, (n,) + shape).astype(np.float64)


def unit_quats(rng, n):
    q = rng.normal(size=(n, 4))
    return q / np.linalg.norm(q, axis=-1, keepdims=True)


def UNITQ(rng, n, shape):
    return unit_quats(rng, n)


def UNITV(rng, n, shape):
    v = rng.normal(size=(n,) + tuple(shape))
    return v / np.linalg.norm(v, axis=-1, keepdims=True)


def QANY(rng, n, shape):
    """Non-unit quaternions (norm 0.5 .. 1.5): the polynomial formulas must hold for them too."""
    return unit_quats(rng, n) * rng.uniform(0.5, 1.5, (n, 1))


def XFORM(rng, n, shape):
    return np.concatenate([rng.uniform(-2, 2, (n, 3)), unit_quats(rng, n)], axis=1)


def WELLCOND(rng, n, shape):
    """Square matrices with a dominant diagonal of random sign (far from singular)."""
    k = shape[0]
    signs = rng.choice([-1.0, 1.0], (n, k))
    return rng.uniform(-0.5, 0.5, (n, k, k)) + 2.5 * np.einsum("ni,ij->nij", signs, np.eye(k))


def rotations(q):
    """Rotation matrices of unit quaternions (batch)."""
    return np.stack([qrot(q, np.broadcast_to(e, q.shape[:-1] + (3,))) for e in np.eye(3)], axis=-1)


def ROT(rng, n, shape):
    return rotations(unit_quats(rng, n))


def NEAR_ROT(rng, n, shape):
    """Rotation matrices plus a little noise (quat_from_matrix normalises its result)."""
    return rotations(unit_quats(rng, n)) + rng.uniform(-0.05, 0.05, (n, 3, 3))


def embed44(rng, m):
    """4x4 matrices with ``m`` as their upper-left block and random entries elsewhere."""
    out = rng.uniform(-2, 2, (len(m), 4, 4))
    out[:, :3, :3] = m
    return out


def ROT44(rng, n, shape):
    return embed44(rng, ROT(rng, n, shape))


def NEAR_ROT44(rng, n, shape):
    return embed44(rng, NEAR_ROT(rng, n, shape))


def SPECTRUM(rng, n, shape):
    """A = U diag(s) V^T with well separated |s| (3, 2, 1 scaled) and a random sign of det."""
    s = np.array([3.0, 2.0, 1.0]) * rng.uniform(0.8, 1.2, (n, 1))
    s[:, 2] *= rng.choice([-1.0, 1.0], n)
    U, V = rotations(unit_quats(rng, n)), rotations(unit_quats(rng, n))
    return np.einsum("nij,nj,nkj->nik", U, s, V)


def SPECTRUM2(rng, n, shape):
    """2x2 A = R(a) diag(s) R(b) with well separated |s| (2, 1 scaled) and a random sign of det."""
    s = np.array([2.0, 1.0]) * rng.uniform(0.8, 1.2, (n, 1))
    s[:, 1] *= rng.choice([-1.0, 1.0], n)
    a, b = rng.uniform(-np.pi, np.pi, (2, n))
    rot = lambda t: np.stack([np.stack([np.cos(t), -np.sin(t)], -1), np.stack([np.sin(t), np.cos(t)], -1)], -2)
    return np.einsum("nij,nj,njk->nik", rot(a), s, rot(b))


def svd2_sigma_ref(a):
    """sigma of a 2x2 SVD under weft's (Warp's) convention: decreasing, the second signed like det(a)."""
    s = np.linalg.svd(a, compute_uv=False).copy()
    s[:, 1] *= np.sign(np.linalg.det(a))
    return s


def SYMMETRIC(rng, n, shape):
    """Symmetric matrices with eigenvalues at least 0.5 apart."""
    lam = np.sort(rng.uniform(-2, 2, (n, 3)), axis=1) + np.array([-1.0, 0.0, 1.0])
    Q = rotations(unit_quats(rng, n))
    return np.einsum("nij,nj,nkj->nik", Q, lam, Q)


def LOWER(rng, n, shape):
    """Symmetric matrices (as above) with garbage in the upper triangle, which eig3 ignores."""
    a = SYMMETRIC(rng, n, shape)
    return a + np.triu(rng.uniform(-3, 3, (n, 3, 3)), 1)


# ---------------------------------------------------------------------------------------------
# NumPy references (batched: vectors (n, k), matrices (n, r, c), quaternions (n, 4) as x y z w,
# transforms (n, 7) as p then q). Formulas follow the semantics documented in weft/native/*.h,
# which match warp-lang 1.19.


def qmul(a, b):
    ax, ay, az, aw = np.moveaxis(a, -1, 0)
    bx, by, bz, bw = np.moveaxis(b, -1, 0)
    return np.stack(
        [
            aw * bx + ax * bw + ay * bz - az * by,
            aw * by - ax * bz + ay * bw + az * bx,
            aw * bz + ax * by - ay * bx + az * bw,
            aw * bw - ax * bx - ay * by - az * bz,
        ],
        axis=-1,
    )


def qconj(q):
    return q * np.array([-1.0, -1.0, -1.0, 1.0])


def qrot(q, v, sign=1.0):
    """v (2w^2 - 1) + 2 sign w (u x v) + 2 u (u . v): a rotation for unit q, polynomial otherwise."""
    uq, w = q[..., :3], q[..., 3:]
    return v * (2 * w * w - 1) + 2 * sign * w * np.cross(uq, v) + 2 * uq * np.sum(uq * v, -1, keepdims=True)


def qrot_inv(q, v):
    return qrot(q, v, -1.0)


def quat_to_matrix(q):
    return np.stack([qrot(q, np.broadcast_to(e, q.shape[:-1] + (3,))) for e in np.eye(3)], axis=-1)


def quat_from_matrix(m):
    """The unit quaternion of a rotation matrix m, signed like weft's Shepperd branches:
    trace >= 0 -> w > 0, else the component of the largest diagonal entry (ties to the lower
    index) is positive."""
    out = np.zeros(m.shape[:-2] + (4,))
    for k in range(len(m)):
        r = m[k]
        # the quaternion of the polar rotation via the symmetric 4x4 (Bar-Itzhack), then its sign
        K = np.array(
            [
                [r[0, 0] - r[1, 1] - r[2, 2], r[1, 0] + r[0, 1], r[2, 0] + r[0, 2], r[2, 1] - r[1, 2]],
                [r[1, 0] + r[0, 1], r[1, 1] - r[0, 0] - r[2, 2], r[2, 1] + r[1, 2], r[0, 2] - r[2, 0]],
                [r[2, 0] + r[0, 2], r[2, 1] + r[1, 2], r[2, 2] - r[0, 0] - r[1, 1], r[1, 0] - r[0, 1]],
                [r[2, 1] - r[1, 2], r[0, 2] - r[2, 0], r[1, 0] - r[0, 1], r[0, 0] + r[1, 1] + r[2, 2]],
            ]
        )
        q = np.linalg.eigh(K)[1][:, -1]
        d = np.diag(r)
        branch = 3 if d.sum() >= 0 else int(np.argmax(d))
        out[k] = q if q[branch] > 0 else -q
    return out


def quat_branch_margin(m):
    """Distance of m from a branch switch of quat_from_matrix (trace sign, diagonal ties)."""
    d = np.diagonal(m, axis1=-2, axis2=-1)
    ds = np.sort(d, axis=-1)
    return np.minimum(np.abs(d.sum(-1)), ds[:, 2] - ds[:, 1])


def quat_from_axis_angle(axis, angle):
    return np.concatenate([axis * np.sin(angle / 2)[:, None], np.cos(angle / 2)[:, None]], axis=-1)


def axis_angle(q):
    s = np.where(q[:, 3] < 0, -1.0, 1.0)[:, None]
    uq = q[:, :3]
    n = np.linalg.norm(uq, axis=-1, keepdims=True)
    return s * uq / n, 2 * np.arctan2(n[:, 0], s[:, 0] * q[:, 3])


def quat_rpy(r, p, y):
    def about(k, a):
        q = np.zeros(a.shape + (4,))
        q[:, k] = np.sin(a / 2)
        q[:, 3] = np.cos(a / 2)
        return q

    return qmul(qmul(about(2, y), about(1, p)), about(0, r))


def quat_slerp(a, b, t):
    d = qmul(qconj(a), b)
    axis, angle = axis_angle(d)
    return qmul(a, quat_from_axis_angle(axis, t * angle))


def slerp_margin(a, b, t):
    """Distance from the short-path sign flip (w of a^-1 b == 0) and from a^-1 b == identity."""
    d = qmul(qconj(a), b)
    return np.minimum(np.abs(d[:, 3]), np.linalg.norm(d[:, :3], axis=-1))


def xp(x):
    return x[:, :3], x[:, 3:]


def velocity_at_point(qd, r):
    return np.cross(qd[:, :3], r) + qd[:, 3:]


def transform_twist(x, s):
    p, q = xp(x)
    w = qrot(q, s[:, :3])
    return np.concatenate([w, qrot(q, s[:, 3:]) + np.cross(p, w)], axis=1)


def transform_wrench(x, s):
    p, q = xp(x)
    f = qrot(q, s[:, 3:])
    return np.concatenate([qrot(q, s[:, :3]) + np.cross(p, f), f], axis=1)


def rpy_parts(q):
    """(numerator, denominator) of roll and yaw, and the sine of pitch."""
    x, y, z, w = q.T
    roll = (2 * (w * x + y * z), 1 - 2 * (x * x + y * y))
    yaw = (2 * (w * z + x * y), 1 - 2 * (y * y + z * z))
    return roll, yaw, 2 * (w * y - z * x)


def quat_to_rpy(q):
    roll, yaw, sp = rpy_parts(q)
    return np.stack([np.arctan2(*roll), np.arcsin(np.clip(sp, -1, 1)), np.arctan2(*yaw)], axis=1)


def quat_twist_ref(axis, q):
    proj = axis * dot(q[:, :3], axis)[:, None]
    t = np.concatenate([proj, q[:, 3:]], axis=1)
    return t / np.linalg.norm(t, axis=1, keepdims=True)


def twist_angle_ref(axis, q, signed=True):
    """The angle of the twist quaternion about the unit axis (its projection on the axis, with w)."""
    t = quat_twist_ref(axis, q)
    along = dot(t[:, :3], axis)
    return 2.0 * np.arctan2(along if signed else np.abs(along), t[:, 3])


def transform_compose_ref(p, q, s):
    out = np.zeros((len(p), 4, 4))
    out[:, :3, :3] = quat_to_matrix(q) * s[:, None, :]
    out[:, :3, 3] = p
    out[:, 3, 3] = 1.0
    return out


def axis_quat(axis, angle):
    q = np.zeros((len(angle), 4))
    q[:, axis] = np.sin(angle / 2)
    q[:, 3] = np.cos(angle / 2)
    return q


def quat_mul_np(a, b):
    x1, y1, z1, w1 = a.T
    x2, y2, z2, w2 = b.T
    return np.stack(
        [
            w1 * x2 + x1 * w2 + y1 * z2 - z1 * y2,
            w1 * y2 - x1 * z2 + y1 * w2 + z1 * x2,
            w1 * z2 + x1 * y2 - y1 * x2 + z1 * w2,
            w1 * w2 - x1 * x2 - y1 * y2 - z1 * z2,
        ],
        axis=1,
    )


def quat_from_euler_ref(e, i, j, k):
    """Warp's convention (checked against warp-lang 1.19): q_k(e[k]) q_j(e[j]) q_i(e[i])."""
    return quat_mul_np(quat_mul_np(axis_quat(k, e[:, k]), axis_quat(j, e[:, j])), axis_quat(i, e[:, i]))


def quat_to_euler_xyz_ref(q):
    """Warp's quat_to_euler(q, 0, 1, 2): the angles are not wrapped to (-pi, pi] (checked against
    warp-lang 1.19), so this follows the same direct (half-angle) construction."""
    x, y, z, w = q.T
    a, b, c, d = w - y, x + z, y + w, z - x
    t2 = 2 * np.arctan2(np.hypot(c, d), np.hypot(a, b)) - np.pi / 2
    tp, tm = np.arctan2(b, a), np.arctan2(d, c)
    return np.stack([tp - tm, t2, tp + tm], axis=1)


def rpy_away(q):
    """Away from gimbal lock and from the atan2 branch cuts."""
    roll, yaw, sp = rpy_parts(q)
    off_cut = [(np.abs(a) > 0.05) | (b > 0) for a, b in (roll, yaw)]
    return (np.abs(sp) < 0.95) & off_cut[0] & off_cut[1]


def transform_to_matrix(x):
    p, q = xp(x)
    out = np.zeros((len(x), 4, 4))
    out[:, :3, :3] = quat_to_matrix(q)
    out[:, :3, 3] = p
    out[:, 3, 3] = 1.0
    return out


def transform_point(x, v):
    p, q = xp(x)
    return qrot(q, v) + p


def transform_vector(x, v):
    return qrot(xp(x)[1], v)


def transform_multiply(a, b):
    pa, qa = xp(a)
    pb, qb = xp(b)
    return np.concatenate([pa + qrot(qa, pb), qmul(qa, qb)], axis=1)


def transform_inverse(x):
    p, q = xp(x)
    qi = qconj(q)
    return np.concatenate([-qrot(qi, p), qi], axis=1)


def mat44_apply(m, v, h):
    return np.einsum("nij,nj->ni", m[:, :3, :3], v) + h * m[:, :3, 3]


def spatial_cross(a, b):
    wa, va, wb, vb = a[:, :3], a[:, 3:], b[:, :3], b[:, 3:]
    return np.concatenate([np.cross(wa, wb), np.cross(wa, vb) + np.cross(va, wb)], axis=1)


def spatial_cross_dual(a, b):
    wa, va, wb, vb = a[:, :3], a[:, 3:], b[:, :3], b[:, 3:]
    return np.concatenate([np.cross(wa, wb) + np.cross(va, vb), np.cross(wa, vb)], axis=1)


def spatial_adjoint(r, s):
    out = np.zeros((len(r), 6, 6))
    out[:, :3, :3] = r
    out[:, 3:, :3] = s
    out[:, 3:, 3:] = r
    return out


def lerp(a, b, t):
    return a + bcast(t, a) * (b - a)


def norm(a):
    return np.linalg.norm(a, axis=-1)


def normalize(a):
    n = norm(a)[..., None]
    return np.where(n > 0, a / np.where(n > 0, n, 1), 0)


def huber(v, d):
    n = norm(v)
    return np.where(n <= d, 0.5 * n * n, d * (n - 0.5 * d))


def pseudo_huber(v, d):
    return d * np.sqrt(1 + norm(v) ** 2 / d**2)


def skew(a):
    x, y, z = a[:, 0], a[:, 1], a[:, 2]
    o = np.zeros_like(x)
    return np.stack([np.stack([o, -z, y], -1), np.stack([z, o, -x], -1), np.stack([-y, x, o], -1)], 1)


def diag(a):
    return np.einsum("ni,ij->nij", a, np.eye(a.shape[1]))


def get_diag(m):
    return np.diagonal(m, axis1=-2, axis2=-1).copy()


def same(a):
    return a


def svd_ref(a):
    """(U, sigma, V) under weft's conventions, up to the joint sign of matching column pairs:
    sigma by decreasing |.|, the last one signed like det(a)."""
    un, s, vh = np.linalg.svd(a)
    s = s.copy()
    s[:, 2] *= np.sign(np.linalg.det(a))
    return un, s, vh


def svd_polar(a):
    """U V^T: invariant under the column-pair sign choices, so directly comparable."""
    un, s, vh = np.linalg.svd(a)
    d = np.ones_like(s)
    d[:, 2] = np.sign(np.linalg.det(un)) * np.sign(np.linalg.det(vh))
    return np.einsum("nij,nj,njk->nik", un, d, vh)


def qr_ref(a):
    """A = Q R with Q a rotation and R[0,0], R[1,1] >= 0 (R[2,2] carries the sign of det A)."""
    q, r = np.linalg.qr(a)
    d = np.sign(np.diagonal(r, axis1=1, axis2=2)).copy()
    d[:, 2] = d[:, 2] * np.sign(np.linalg.det(q * d[:, None, :]))  # det(Q D) -> +1
    return q * d[:, None, :], r * d[:, :, None]


def lower_sym(a):
    low = np.tril(a)
    return low + np.transpose(np.tril(a, -1), (0, 2, 1))


def sort3(d):
    return np.sort(d, axis=-1)


def ref_where(c, a, b):
    c = c.reshape((-1,) + (1,) * (a.ndim - 1))
    return np.where(c != 0, a, b)


def ref_select(c, a, b):
    c = c.reshape((-1,) + (1,) * (a.ndim - 1))
    return np.where(c != 0, b, a)


def bcast(s, a):
    """A per-sample scalar broadcast against a batch of composites."""
    return s.reshape((-1,) + (1,) * (a.ndim - 1))


def ref_clamp(x, lo, hi):
    return np.minimum(np.maximum(x, lo), hi)


# Kink masks (float64 arguments -> bool per sample) for the finite differences.


def apart(a, b):
    return np.all(np.abs(a - b) > MARGIN, axis=tuple(range(1, a.ndim)))


def clamp_away(x, lo, hi):
    return apart(x, lo) & apart(x, hi)


def extreme_unique(a, which):
    s = np.sort(a, axis=1)
    return (s[:, 1] - s[:, 0] > MARGIN) if which == "min" else (s[:, -1] - s[:, -2] > MARGIN)


def quotient_away_from_int(a, b):
    q = a / b
    return np.all(np.abs(q - np.round(q)) > MARGIN, axis=1)


def huber_away(v, d):
    return np.abs(norm(v) - d) > MARGIN


# ---------------------------------------------------------------------------------------------
# Operators and wrappers a kernel factory can call.


@wp.func
def euler_from_xyz(e: Any):
    return wp.quat_from_euler(e, 0, 1, 2)


@wp.func
def euler_from_zyx(e: Any):
    return wp.quat_from_euler(e, 2, 1, 0)


@wp.func
def euler_to_xyz(q: Any):
    return wp.quat_to_euler(q, 0, 1, 2)


@wp.func
def decompose_scale(m: Any):
    p, q, s = wp.transform_decompose(m)
    return s


@wp.func
def decompose_translation(m: Any):
    p, q, s = wp.transform_decompose(m)
    return p


@wp.func
def op_add(a: Any, b: Any):
    return a + b


@wp.func
def op_sub(a: Any, b: Any):
    return a - b


@wp.func
def op_mul(a: Any, b: Any):
    return a * b


@wp.func
def op_matmul(a: Any, b: Any):
    return a @ b


@wp.func
def op_div(a: Any, b: Any):
    return a / b


@wp.func
def op_mod(a: Any, b: Any):
    return a % b


@wp.func
def op_neg(a: Any):
    return -a


@wp.func
def op_pos(a: Any):
    return +a


@wp.func
def attr_p(t: Any):
    return t.p


@wp.func
def attr_q(t: Any):
    return t.q


@wp.func
def sort3_func(d: Any):
    """Sort three components ascending (min/max network; differentiable away from ties)."""
    lo = wp.min(d[0], d[1])
    hi = wp.max(d[0], d[1])
    a = wp.min(lo, d[2])
    c = wp.max(hi, d[2])
    b = d[0] + d[1] + d[2] - a - c
    d[0] = a
    d[1] = b
    d[2] = c
    return d


def linalg_wrappers(dtype):
    """Funcs returning one output of the output-parameter builtins, for scalar ``dtype``."""
    M33 = wp.types.matrix(shape=(3, 3), dtype=dtype)
    V3 = wp.types.vector(length=3, dtype=dtype)
    M22 = wp.types.matrix(shape=(2, 2), dtype=dtype)
    V2 = wp.types.vector(length=2, dtype=dtype)

    @wp.func
    def svd2_sigma(A: M22):
        U = M22()
        sigma = V2()
        V = M22()
        wp.svd2(A, U, sigma, V)
        return sigma

    @wp.func
    def svd2_rebuild(A: M22):
        U, sigma, V = wp.svd2(A)
        return U * wp.diag(sigma) * wp.transpose(V)

    @wp.func
    def svd3_sigma(A: M33):
        U = M33()
        sigma = V3()
        V = M33()
        wp.svd3(A, U, sigma, V)
        return sigma

    @wp.func
    def svd3_U(A: M33):
        U = M33()
        sigma = V3()
        V = M33()
        wp.svd3(A, U, sigma, V)
        return U

    @wp.func
    def svd3_V(A: M33):
        U = M33()
        sigma = V3()
        V = M33()
        wp.svd3(A, U, sigma, V)
        return V

    @wp.func
    def svd3_polar(A: M33):
        U = M33()
        sigma = V3()
        V = M33()
        wp.svd3(A, U, sigma, V)
        return U * wp.transpose(V)

    @wp.func
    def svd3_rebuild(A: M33):
        U = M33()
        sigma = V3()
        V = M33()
        wp.svd3(A, U, sigma, V)
        return U * wp.diag(sigma) * wp.transpose(V)

    @wp.func
    def qr3_Q(A: M33):
        Q = M33()
        R = M33()
        wp.qr3(A, Q, R)
        return Q

    @wp.func
    def qr3_R(A: M33):
        Q = M33()
        R = M33()
        wp.qr3(A, Q, R)
        return R

    @wp.func
    def eig3_d_sorted(A: M33):
        Q = M33()
        d = V3()
        wp.eig3(A, Q, d)
        return sort3_func(d)

    @wp.func
    def eig3_d(A: M33):
        Q = M33()
        d = V3()
        wp.eig3(A, Q, d)
        return d

    @wp.func
    def eig3_Q(A: M33):
        Q = M33()
        d = V3()
        wp.eig3(A, Q, d)
        return Q

    @wp.func
    def eig3_rebuild(A: M33):
        Q = M33()
        d = V3()
        wp.eig3(A, Q, d)
        return Q * wp.diag(d) * wp.transpose(Q)

    @wp.func
    def axis_of(q: Any):
        axis = V3()
        angle = dtype(0.0)
        wp.quat_to_axis_angle(q, axis, angle)
        return axis

    @wp.func
    def angle_of(q: Any):
        axis = V3()
        angle = dtype(0.0)
        wp.quat_to_axis_angle(q, axis, angle)
        return angle

    return dict(locals())


LINALG = {dt.cname: linalg_wrappers(dt) for dt in FLOATS}


def wrapper(name):
    """A per-dtype wrapper func from ``LINALG``, chosen when the kernel is made."""
    return lambda dtype: LINALG[dtype.cname][name]


# ---------------------------------------------------------------------------------------------
# The spec table.


@dataclasses.dataclass(frozen=True)
class Spec:
    """How to test one overload of a composite builtin.

    Attributes:
        name: the name in ``weft.builtins.registry.registry``.
        label: unique test id (how the kernel calls it, and the argument kinds).
        fn: what the kernel calls: the builtin, an operator func, or ``dtype -> func``.
        args: argument kind tokens (see ``SHAPES``).
        out: result kind token.
        ref: NumPy reference on the float64 argument batches.
        domain: a sampler per argument.
        grad: whether gradients are checked against finite differences (float64).
        away: mask (float64 arguments -> bool per sample) of points valid for finite differences.
        tol32, tol64: forward tolerance (relative and absolute) in float32 / float64.
        gtol: gradient tolerance (relative and absolute).
        exact: compare forward results exactly.
        gdomain: samplers for the gradient test when they differ from ``domain``.
    """

    name: str
    label: str
    fn: Any
    args: tuple
    out: str
    ref: Callable
    domain: tuple
    grad: bool = True
    away: Callable | None = None
    tol32: float = 2e-5
    tol64: float = 1e-11
    gtol: float = 1e-6
    exact: bool = False
    gdomain: tuple | None = None

    def func(self, dtype):
        fn = self.fn
        if not isinstance(fn, wp.Function) and not hasattr(fn, "overloads") and callable(fn):
            return fn(dtype)
        return fn


def S(name, sig, ref, domain=None, fn=None, via=None, **kw):
    """A spec from a signature ``"v3,v3->s"``; ``via`` labels an operator or wrapper."""
    ins, out = sig.split("->")
    args = tuple(ins.split(",")) if ins else ()
    fn = fn if fn is not None else registry[name]
    label = f"{via or 'wp.' + name}({ins})"
    domain = domain or tuple(COND if a == "i" else ANY for a in args)
    return Spec(name, label, fn, args, out, ref, tuple(domain), **kw)


def mm(a, b):
    return np.einsum("nij,njk->nik", a, b)


def mv(a, b):
    return np.einsum("nij,nj->ni", a, b)


def vm(a, b):
    return np.einsum("ni,nij->nj", a, b)


def outer(a, b):
    return np.einsum("ni,nj->nij", a, b)


def dot(a, b):
    return np.sum(a * b, axis=-1)


def tr(a):
    return np.transpose(a, (0, 2, 1))


Q3 = (QANY, ANY)
SPECS = [
    # ------------------------------------------------------------------ operators
    *[S("add", f"{k},{k}->{k}", np.add, fn=op_add, via="a+b") for k in ("v2", "v3", "v4", "m33", "m23", "q", "x")],
    S("add", "v3,v3->v3", np.add),
    *[S("sub", f"{k},{k}->{k}", np.subtract, fn=op_sub, via="a-b") for k in ("v3", "v6", "m22", "q", "x")],
    S("sub", "m33,m33->m33", np.subtract),
    *[S("mul", f"{k},s->{k}", lambda a, s: a * bcast(s, a), fn=op_mul, via="a*b") for k in ("v3", "m33", "q")],
    *[S("mul", f"s,{k}->{k}", lambda s, a: bcast(s, a) * a, fn=op_mul, via="a*b") for k in ("v3", "m22", "q")],
    S("mul", "v4,s->v4", lambda a, s: a * bcast(s, a)),
    S("mul", "m33,v3->v3", mv, fn=op_mul, via="a*b"),
    S("mul", "m33,v3->v3", mv),
    S("mul", "m23,v3->v2", mv, fn=op_matmul, via="a@b"),
    S("mul", "v3,m33->v3", vm, fn=op_mul, via="a*b"),
    S("mul", "v2,m23->v3", vm, fn=op_matmul, via="a@b"),
    S("mul", "m33,m33->m33", mm, fn=op_mul, via="a*b"),
    S("mul", "m33,m33->m33", mm, fn=op_matmul, via="a@b"),
    S("mul", "m23,m32->m22", mm, fn=op_matmul, via="a@b"),
    S("mul", "m44,m44->m44", mm),
    S("mul", "q,q->q", qmul, fn=op_mul, via="a*b"),
    S("mul", "x,s->x", lambda a, s: a * bcast(s, a), (XFORM, ANY), fn=op_mul, via="a*b"),
    S("mul", "s,x->x", lambda s, a: bcast(s, a) * a, (ANY, XFORM)),
    S("mul", "x,x->x", transform_multiply, (XFORM, XFORM), fn=op_mul, via="a*b"),
    *[
        S("div", f"{k},s->{k}", lambda a, s: a / bcast(s, a), (ANY, NZ), fn=op_div, via="a/b")
        for k in ("v3", "m33", "q")
    ],
    S("div", "v2,s->v2", lambda a, s: a / bcast(s, a), (ANY, NZ)),
    S("div_approx", "v3,s->v3", lambda a, s: a / bcast(s, a), (ANY, NZ)),
    S("div_approx", "s,v2->v2", lambda s, a: bcast(s, a) / a, (ANY, NZ)),
    S("div_approx", "m33,s->m33", lambda a, s: a / bcast(s, a), (ANY, NZ)),
    *[
        S("div", f"s,{k}->{k}", lambda s, a: bcast(s, a) / a, (ANY, NZ), fn=op_div, via="a/b")
        for k in ("v3", "m22", "q")
    ],
    S(
        "mod",
        "v3,v3->v3",
        np.fmod,
        (u(-5, 5), NZ),
        fn=op_mod,
        via="a%b",
        away=quotient_away_from_int,
        exact=True,
    ),
    *[S("neg", f"{k}->{k}", np.negative, fn=op_neg, via="-a", exact=True) for k in ("v3", "m33", "q")],
    S("neg", "v4->v4", np.negative, exact=True),
    *[S("pos", f"{k}->{k}", np.positive, fn=op_pos, via="+a", exact=True) for k in ("v3", "m22", "q")],
    # ------------------------------------------------------------------ elementwise and reductions
    S("min", "v3,v3->v3", np.minimum, away=apart, exact=True),
    S("max", "v4,v4->v4", np.maximum, away=apart, exact=True),
    S("min", "v3->s", lambda a: a.min(1), away=lambda a: extreme_unique(a, "min"), exact=True),
    S("max", "v4->s", lambda a: a.max(1), away=lambda a: extreme_unique(a, "max"), exact=True),
    S("abs", "v3->v3", np.abs, (NZ,), exact=True),
    S("sign", "v3->v3", lambda a: np.where(a < 0, -1.0, 1.0), (NZ,), exact=True),
    S("clamp", "v3,v3,v3->v3", ref_clamp, (u(-3, 3), u(-2, 0), u(0, 2)), away=clamp_away, exact=True),
    S("argmin", "v4->u32", lambda a: np.argmin(a, 1), grad=False, exact=True),
    S("argmax", "v3->u32", lambda a: np.argmax(a, 1), grad=False, exact=True),
    *[S("where", f"i,{k},{k}->{k}", ref_where, exact=True) for k in ("v3", "m33", "q")],
    S("where", "i,x,x->x", ref_where, (COND, XFORM, XFORM), exact=True),
    S("select", "i,v3,v3->v3", ref_select, exact=True),
    S("select", "i,m22,m22->m22", ref_select, exact=True),
    # ------------------------------------------------------------------ vector math
    *[S("dot", f"{k},{k}->s", dot) for k in ("v2", "v3", "v4", "v6")],
    S("dot", "q,q->s", dot),
    S("cross", "v3,v3->v3", np.cross),
    *[S("length", f"{k}->s", norm) for k in ("v2", "v3", "q")],
    *[S("length_sq", f"{k}->s", lambda a: dot(a, a)) for k in ("v3", "q")],
    *[S("normalize", f"{k}->{k}", normalize) for k in ("v3", "v4", "q")],
    S("norm_l1", "v3->s", lambda a: np.abs(a).sum(1), (NZ,)),
    S("norm_l2", "v4->s", norm),
    S("norm_huber", "v3,s->s", huber, (ANY, DELTA), away=huber_away),
    S("norm_pseudo_huber", "v3,s->s", pseudo_huber, (ANY, DELTA)),
    S("smooth_normalize", "v3,s->v3", lambda v, d: v / pseudo_huber(v, d)[:, None], (ANY, DELTA)),
    S("outer", "v3,v2->m32", outer),
    S("outer", "v3,v3->m33", outer),
    S("cw_mul", "v3,v3->v3", np.multiply),
    S("cw_mul", "m33,m33->m33", np.multiply),
    S("cw_div", "v4,v4->v4", np.divide, (ANY, NZ)),
    S("cw_div", "m22,m22->m22", np.divide, (ANY, NZ)),
    # ------------------------------------------------------------------ matrices
    S("transpose", "m23->m32", tr, exact=True),
    S("transpose", "m33->m33", tr, exact=True),
    *[S("inverse", f"{k}->{k}", np.linalg.inv, (WELLCOND,), tol32=1e-4, tol64=1e-10) for k in ("m22", "m33", "m44")],
    S("inverse_approx", "m33->m33", np.linalg.inv, (WELLCOND,), tol32=1e-4, tol64=1e-10),
    *[S("determinant", f"{k}->s", np.linalg.det, tol32=1e-4, tol64=1e-10) for k in ("m22", "m33", "m44")],
    S("isnan", "v3->b", lambda a: np.isnan(a).any(axis=1), grad=False, exact=True),
    S("isinf", "m33->b", lambda a: np.isinf(a).any(axis=(1, 2)), grad=False, exact=True),
    S("isfinite", "q->b", lambda a: np.isfinite(a).all(axis=1), grad=False, exact=True),
    S("trace", "m33->s", lambda a: np.trace(a, axis1=1, axis2=2)),
    S("trace", "m22->s", lambda a: np.trace(a, axis1=1, axis2=2)),
    S("diag", "v3->m33", diag, exact=True),
    S("get_diag", "m33->v3", get_diag, exact=True),
    S("get_diag", "m23->v2", get_diag, exact=True),
    S("skew", "v3->m33", skew, exact=True),
    S("ddot", "m33,m33->s", lambda a, b: np.sum(a * b, axis=(1, 2))),
    # ------------------------------------------------------------------ quaternions
    S("quat_from_axis_angle", "v3,s->q", quat_from_axis_angle, (ANY, ANGLE)),
    S("quat_rotate", "q,v3->v3", qrot, Q3),
    S("quat_rotate_inv", "q,v3->v3", qrot_inv, Q3),
    S("quat_inverse", "q->q", qconj, (QANY,), exact=True),
    S("quat_to_matrix", "q->m33", quat_to_matrix, (QANY,)),
    S(
        "quat_from_matrix",
        "m33->q",
        quat_from_matrix,
        (ROT,),
        gdomain=(NEAR_ROT,),
        away=lambda m: quat_branch_margin(m) > 0.05,
        tol32=1e-4,
        tol64=1e-9,
        gtol=1e-5,
    ),
    S(
        "quat_from_matrix",
        "m44->q",
        lambda m: quat_from_matrix(m[:, :3, :3]),
        (ROT44,),
        gdomain=(NEAR_ROT44,),
        away=lambda m: quat_branch_margin(m[:, :3, :3]) > 0.05,
        tol32=1e-4,
        tol64=1e-9,
        gtol=1e-5,
    ),
    S("quat_rpy", "s,s,s->q", quat_rpy, (ANGLE, ANGLE, ANGLE)),
    S(
        "quat_slerp",
        "q,q,s->q",
        quat_slerp,
        (UNITQ, UNITQ, T_SLERP),
        away=lambda a, b, t: slerp_margin(a, b, t) > 0.05,
        tol32=1e-4,
        tol64=1e-9,
        gtol=1e-5,
    ),
    S(
        "quat_to_axis_angle",
        "q->v3",
        lambda q: axis_angle(q)[0],
        (QANY,),
        fn=wrapper("axis_of"),
        via="quat_to_axis_angle:axis",
        away=lambda q: np.abs(q[:, 3]) > 0.05,
        tol32=1e-4,
    ),
    S(
        "quat_to_axis_angle",
        "q->s",
        lambda q: axis_angle(q)[1],
        (QANY,),
        fn=wrapper("angle_of"),
        via="quat_to_axis_angle:angle",
        away=lambda q: np.abs(q[:, 3]) > 0.05,
        tol32=1e-4,
    ),
    # ------------------------------------------------------------------ transforms
    S("lerp", "v3,v3,s->v3", lerp, (ANY, ANY, T_SLERP)),
    S("lerp", "m22,m22,s->m22", lerp, (ANY, ANY, T_SLERP)),
    S("lerp", "q,q,s->q", lerp, (QANY, QANY, T_SLERP)),
    S("lerp", "x,x,s->x", lerp, (XFORM, XFORM, T_SLERP)),
    S("transform_point", "x,v3->v3", transform_point, (XFORM, ANY)),
    S("transform_point", "m44,v3->v3", lambda m, v: mat44_apply(m, v, 1.0)),
    S("transform_vector", "x,v3->v3", transform_vector, (XFORM, ANY)),
    S("transform_vector", "m44,v3->v3", lambda m, v: mat44_apply(m, v, 0.0)),
    S("transform_multiply", "x,x->x", transform_multiply, (XFORM, XFORM)),
    S("transform_inverse", "x->x", transform_inverse, (XFORM,)),
    S("transform_get_translation", "x->v3", lambda x: xp(x)[0], (XFORM,), exact=True),
    S("transform_get_translation", "x->v3", lambda x: xp(x)[0], (XFORM,), fn=attr_p, via="t.p", exact=True),
    S("transform_get_rotation", "x->q", lambda x: xp(x)[1], (XFORM,), exact=True),
    S("transform_get_rotation", "x->q", lambda x: xp(x)[1], (XFORM,), fn=attr_q, via="t.q", exact=True),
    # ------------------------------------------------------------------ spatial vectors
    S("spatial_cross", "v6,v6->v6", spatial_cross),
    S("spatial_cross_dual", "v6,v6->v6", spatial_cross_dual),
    S("spatial_dot", "v6,v6->s", dot),
    S("spatial_top", "v6->v3", lambda a: a[:, :3], exact=True),
    S("spatial_bottom", "v6->v3", lambda a: a[:, 3:], exact=True),
    S("spatial_adjoint", "m33,m33->m66", spatial_adjoint, exact=True),
    S("mul", "m66,v6->v6", mv),
    S("transpose", "m66->m66", tr, exact=True),
    # ------------------------------------------------------------------ funcs of weft/builtins/library.py
    S("quat_twist", "v3,q->q", quat_twist_ref, (ANY, UNITQ), fn=wp.quat_twist),
    S("quat_twist_angle_signed", "v3,q->s", twist_angle_ref, (UNITV, UNITQ), fn=wp.quat_twist_angle_signed),
    S(
        "quat_twist_angle",
        "v3,q->s",
        lambda a, q: twist_angle_ref(a, q, signed=False),
        (UNITV, UNITQ),
        fn=wp.quat_twist_angle,
        away=lambda a, q: np.abs(dot(q[:, :3], a)) > 0.05,
    ),
    S("transform_compose", "v3,q,v3->m44", transform_compose_ref, (ANY, UNITQ, ANY), fn=wp.transform_compose),
    S("transform_decompose", "m44->v3", lambda m: np.linalg.norm(m[:, :3, :3], axis=1), fn=decompose_scale),
    S("transform_decompose", "m44->v3", lambda m: m[:, :3, 3], fn=decompose_translation, via="decompose:p"),
    S("quat_from_euler", "v3->q", lambda e: quat_from_euler_ref(e, 0, 1, 2), fn=euler_from_xyz),
    S("quat_from_euler", "v3->q", lambda e: quat_from_euler_ref(e, 2, 1, 0), fn=euler_from_zyx, via="euler:zyx"),
    S("quat_to_euler", "q->v3", quat_to_euler_xyz_ref, (UNITQ,), fn=euler_to_xyz, away=rpy_away, tol32=1e-4),
    S("velocity_at_point", "v6,v3->v3", velocity_at_point, fn=wp.velocity_at_point),
    S("transform_twist", "x,v6->v6", transform_twist, (XFORM, ANY), fn=wp.transform_twist),
    S("transform_wrench", "x,v6->v6", transform_wrench, (XFORM, ANY), fn=wp.transform_wrench),
    S("quat_to_rpy", "q->v3", quat_to_rpy, (UNITQ,), fn=wp.quat_to_rpy, away=rpy_away, tol32=1e-4),
    S("transform_to_matrix", "x->m44", transform_to_matrix, (XFORM,), fn=wp.transform_to_matrix),
    S(
        "transform_from_matrix",
        "m44->x",
        lambda m: np.concatenate([m[:, :3, 3], quat_from_matrix(m[:, :3, :3])], axis=1),
        (ROT44,),
        fn=wp.transform_from_matrix,
        gdomain=(NEAR_ROT44,),
        away=lambda m: quat_branch_margin(m[:, :3, :3]) > 0.05,
        tol32=1e-4,
        tol64=1e-9,
        gtol=1e-5,
    ),
    # ------------------------------------------------------------------ decompositions (wrappers)
    S(
        "svd3",
        "m33->v3",
        lambda a: svd_ref(a)[1],
        (SPECTRUM,),
        fn=wrapper("svd3_sigma"),
        via="svd3:sigma",
        tol32=1e-4,
        tol64=1e-9,
        gtol=1e-5,
    ),
    S(
        "svd3",
        "m33->m33",
        svd_polar,
        (SPECTRUM,),
        fn=wrapper("svd3_polar"),
        via="svd3:U*V^T",
        tol32=1e-4,
        tol64=1e-9,
        gtol=1e-5,
    ),
    S(
        "svd3",
        "m33->m33",
        same,
        (SPECTRUM,),
        fn=wrapper("svd3_rebuild"),
        via="svd3:U*diag*V^T",
        tol32=1e-4,
        tol64=1e-9,
        gtol=1e-5,
    ),
    S("svd3", "m33->m33", None, (SPECTRUM,), fn=wrapper("svd3_U"), via="svd3:U", tol32=1e-4, gtol=1e-5),
    S("svd2", "m22->v2", svd2_sigma_ref, (SPECTRUM2,), fn=wrapper("svd2_sigma"), via="svd2:sigma", tol32=1e-5, gtol=1e-5),
    S("svd2", "m22->m22", same, (SPECTRUM2,), fn=wrapper("svd2_rebuild"), via="svd2:U*diag*V^T", tol32=1e-5, gtol=1e-5),
    S("svd3", "m33->m33", None, (SPECTRUM,), fn=wrapper("svd3_V"), via="svd3:V", tol32=1e-4, gtol=1e-5),
    S(
        "qr3",
        "m33->m33",
        lambda a: qr_ref(a)[0],
        (WELLCOND,),
        fn=wrapper("qr3_Q"),
        via="qr3:Q",
        tol32=1e-4,
        tol64=1e-9,
        gtol=1e-5,
    ),
    S(
        "qr3",
        "m33->m33",
        lambda a: np.triu(qr_ref(a)[1]),
        (WELLCOND,),
        fn=wrapper("qr3_R"),
        via="qr3:R",
        tol32=1e-4,
        tol64=1e-9,
        gtol=1e-5,
    ),
    S(
        "eig3",
        "m33->v3",
        lambda a: np.linalg.eigvalsh(a),
        (SYMMETRIC,),
        fn=wrapper("eig3_d_sorted"),
        via="eig3:sorted(d)",
        tol32=1e-4,
        tol64=1e-9,
        gtol=1e-5,
    ),
    S(
        "eig3",
        "m33->m33",
        same,
        (SYMMETRIC,),
        fn=wrapper("eig3_rebuild"),
        via="eig3:Q*diag(d)*Q^T",
        tol32=1e-4,
        tol64=1e-9,
        gtol=1e-5,
    ),
    S("eig3", "m33->v3", None, (SYMMETRIC,), fn=wrapper("eig3_d"), via="eig3:d", gtol=1e-5),
    S("eig3", "m33->m33", None, (SYMMETRIC,), fn=wrapper("eig3_Q"), via="eig3:Q", gtol=1e-5),
]
SPEC_BY_LABEL = {s.label: s for s in SPECS}
assert len(SPEC_BY_LABEL) == len(SPECS), "duplicate spec labels"

# ---------------------------------------------------------------------------------------------
# Kernel factories (closure variables resolve by value, so every call makes a distinct kernel).


def kernel1(fn, ta, tout, **options):
    def k1(a: wp.array(dtype=ta), out: wp.array(dtype=tout)):
        i = wp.tid()
        out[i] = fn(a[i])

    return wp.kernel(k1, **options)


def kernel2(fn, ta, tb, tout, **options):
    def k2(a: wp.array(dtype=ta), b: wp.array(dtype=tb), out: wp.array(dtype=tout)):
        i = wp.tid()
        out[i] = fn(a[i], b[i])

    return wp.kernel(k2, **options)


def kernel3(fn, ta, tb, tc, tout, **options):
    def k3(a: wp.array(dtype=ta), b: wp.array(dtype=tb), c: wp.array(dtype=tc), out: wp.array(dtype=tout)):
        i = wp.tid()
        out[i] = fn(a[i], b[i], c[i])

    return wp.kernel(k3, **options)


FACTORIES = {1: kernel1, 2: kernel2, 3: kernel3}


def spec_types(spec, dtype):
    return [type_of(a, dtype) for a in spec.args], type_of(spec.out, dtype)


def make_kernel(spec, dtype, **options):
    ins, out = spec_types(spec, dtype)
    return FACTORIES[len(ins)](spec.func(dtype), *ins, out, **options)


# float32 kernels are forward-only (gradients are checked in float64): half the C++ to build.
KERNELS = {
    (s.label, dt.cname): make_kernel(s, dt, enable_backward=dt is wp.float64) for s in SPECS for dt in FLOATS
}


# ---------------------------------------------------------------------------------------------
# Helpers


def rng_for(*key) -> np.random.Generator:
    return np.random.default_rng(zlib.crc32(repr(key).encode()))


def np_dtype(t):
    return getattr(t, "_scalar", t).np_dtype


def sample_args(spec, dtype, n=N, domain=None) -> list:
    """Arguments of ``spec`` as NumPy batches, rounded to their kernel dtypes (then float64 or
    int32 for conditions)."""
    rng = rng_for(spec.label)
    ins, _ = spec_types(spec, dtype)
    out = []
    for token, sampler, t in zip(spec.args, domain or spec.domain, ins):
        a = sampler(rng, n, SHAPES[token])
        out.append(a.astype(np.int32) if token == "i" else a.astype(np_dtype(t)).astype(np.float64))
    return out


def to_arrays(args, types, requires_grad=False) -> list:
    return [
        wp.array(a.astype(np_dtype(t)), dtype=t, requires_grad=requires_grad and wt.is_float(getattr(t, "_scalar", t)))
        for a, t in zip(args, types)
    ]


def run(kernel, args, types, out_type) -> np.ndarray:
    """Launch ``kernel`` on NumPy batches and return its output batch."""
    out = wp.zeros(len(args[0]), dtype=out_type)
    wp.launch(kernel, dim=len(args[0]), inputs=to_arrays(args, types) + [out])
    return out.numpy().copy()


def vjp(kernel, args, types, out_type, w) -> list:
    """sum(w * out) differentiated by every argument via wp.Tape (None for int arguments)."""
    arrays = to_arrays(args, types, requires_grad=True)
    out = wp.zeros(len(args[0]), dtype=out_type, requires_grad=True)
    tape = wp.Tape()
    with tape:
        wp.launch(kernel, dim=len(args[0]), inputs=arrays + [out])
    tape.backward(grads={out: w.astype(np_dtype(out_type))})
    return [a.grad.numpy().copy() if a.grad is not None else None for a in arrays]


def fd_vjp(kernel, args, types, out_type, w, k) -> np.ndarray:
    """Central differences of sum(w * out) by every component of argument ``k`` (all samples at once)."""
    g = np.zeros_like(args[k])
    flat = args[k].reshape(len(args[k]), -1)
    for c in range(flat.shape[1]):
        sums = []
        for h in (FD_STEP, -FD_STEP):
            moved = flat.copy()
            moved[:, c] += h
            shifted = list(args)
            shifted[k] = moved.reshape(args[k].shape)
            r = run(kernel, shifted, types, out_type)
            sums.append(np.sum((w * r).reshape(len(r), -1), axis=1))
        g.reshape(len(g), -1)[:, c] = (sums[0] - sums[1]) / (2 * FD_STEP)
    return g


def assert_close(got, expected, tol, exact=False, msg=""):
    if exact:
        np.testing.assert_array_equal(got, expected, err_msg=msg)
    else:
        np.testing.assert_allclose(got, expected, rtol=tol, atol=tol, err_msg=msg)


def dtype_of(name):
    return {t.cname: t for t in FLOATS}[name]


# ---------------------------------------------------------------------------------------------
# 1. Forward values against NumPy (float32 and float64)


def _forward_cases():
    for spec in SPECS:
        if spec.ref is None:
            continue
        for dt in FLOATS:
            yield pytest.param(spec.label, dt.cname, id=f"{spec.label}-{dt.cname}")


@pytest.mark.parametrize("label, dtype_name", list(_forward_cases()))
def test_forward_matches_numpy(label, dtype_name):
    spec, dtype = SPEC_BY_LABEL[label], dtype_of(dtype_name)
    ins, out = spec_types(spec, dtype)
    args = sample_args(spec, dtype)
    got = run(KERNELS[label, dtype_name], args, ins, out)
    expected = np.asarray(spec.ref(*args))
    tol = spec.tol32 if dtype is wp.float32 else spec.tol64
    if dtype is wp.float32 and spec.exact and spec.out not in ("u32", "b", "i"):
        expected = expected.astype(np.float32)  # exact ops round once, like the kernel
    assert got.shape == expected.shape, (got.shape, expected.shape)
    assert_close(got, expected, tol, spec.exact, msg=label)


# ---------------------------------------------------------------------------------------------
# 2. Gradients against central finite differences (float64)


def _gradient_cases():
    for spec in SPECS:
        if spec.grad:
            yield pytest.param(spec.label, id=spec.label)


@pytest.mark.parametrize("label", list(_gradient_cases()))
def test_gradient_matches_finite_differences(label):
    spec = SPEC_BY_LABEL[label]
    ins, out = spec_types(spec, wp.float64)
    args = sample_args(spec, wp.float64, domain=spec.gdomain)
    if spec.away is not None:
        keep = spec.away(*args)
        assert keep.sum() >= N // 2, "the kink mask leaves too few points"
        args = [a[keep] for a in args]
    kernel = KERNELS[label, "float64"]
    w = rng_for("cotangent", label).uniform(0.5, 1.5, (len(args[0]),) + SHAPES[spec.out])
    grads = vjp(kernel, args, ins, out, w)
    for k, t in enumerate(ins):
        if spec.args[k] == "i":
            continue
        fd = fd_vjp(kernel, args, ins, out, w, k)
        scale = max(1.0, np.max(np.abs(fd)))
        np.testing.assert_allclose(
            grads[k], fd, rtol=spec.gtol, atol=spec.gtol * scale, err_msg=f"d {label} / d arg {k}"
        )


# ---------------------------------------------------------------------------------------------
# 3. Coverage of the registry: every overload taking a float composite has a spec, every
#    differentiable one a gradient spec.


def composite_overloads() -> list:
    """(builtin name, overload index, overload) for user-visible overloads that accept a float
    composite (vector, matrix, quaternion, transform) parameter. Side-effect overloads (the
    ``expect_*`` checks, which print and return nothing) have their own tests in
    tests/test_kernel_language.py."""
    found = []
    for name, b in registry.items():
        if b.group == "internal":
            continue
        for k, ov in enumerate(b.overloads):
            if ov.side_effect:
                continue
            if any(isinstance(pat, TypeVar) and any(pat.accepts(t) for t in PROBE_TYPES) for _, pat in ov.params):
                found.append((name, k, ov))
    return found


PROBE_TYPES = [type_of(tok, wp.float64) for tok in SHAPES if tok not in ("s", "i", "u32", "b")]
PROBE_TYPES += [wp.types.vector(length=5, dtype=wp.float64), wp.types.matrix(shape=(3, 4), dtype=wp.float64)]


def overload_of(spec) -> int | None:
    """Index of the overload of ``spec.name`` that its float64 argument types bind to."""
    if spec.name not in registry:
        return None
    ins, _ = spec_types(spec, wp.float64)
    for k, ov in enumerate(registry[spec.name].overloads):
        if ov.bind(ins) is not None:
            return k
    return None


def test_every_spec_binds_an_overload():
    unbound = [s.label for s in SPECS if s.name in registry and overload_of(s) is None]
    assert not unbound, f"specs whose argument kinds match no overload of their builtin: {unbound}"


def test_every_composite_overload_has_a_spec():
    covered = {(s.name, overload_of(s)) for s in SPECS}
    missing = [f"{n}{ov.signature()}" for n, k, ov in composite_overloads() if (n, k) not in covered]
    assert not missing, f"composite overloads without an entry in SPECS: {missing}"


def test_every_library_func_has_a_gradient_spec():
    """The Warp builtins weft writes as funcs (weft/builtins/library.py) are in the table too."""
    funcs = sorted(n for n, v in vars(library).items() if isinstance(v, wp.Function) and not n.startswith("_"))
    assert funcs, "no funcs found in weft/builtins/library.py"
    missing = [n for n in funcs if n not in {s.name for s in SPECS if s.grad}]
    assert not missing, f"library funcs without a gradient spec: {missing}"
    for name in funcs:
        assert getattr(wp, name) is getattr(library, name), name


def test_every_differentiable_composite_overload_has_a_gradient_spec():
    covered = {(s.name, overload_of(s)) for s in SPECS if s.grad}
    missing = [
        f"{n}{ov.signature()}" for n, k, ov in composite_overloads() if ov.differentiable and (n, k) not in covered
    ]
    assert not missing, f"differentiable composite overloads without a gradient spec: {missing}"


# ---------------------------------------------------------------------------------------------
# 4. Whole-kernel gradient helper for the hand-written kernels below (float64).


def grad_check(kernel, inputs, outputs, dim, extra=(), tol=1e-7):
    """Tape gradients of sum_k(w_k * outputs_k) against central differences, for every float
    input array. ``inputs``: (NumPy value, weft dtype) pairs; ``outputs``: (shape, weft dtype);
    ``extra``: non-differentiated arguments appended after the outputs. Returns the forward
    outputs and the tape gradients."""
    rng = rng_for("grad_check", kernel.key)
    ws = [rng.uniform(0.5, 1.5, shape + SHAPE_OF[t]) for shape, t in outputs]

    def forward(values, requires_grad=False):
        ins = [wp.array(v, dtype=t, requires_grad=requires_grad) for v, t in zip(values, (t for _, t in inputs))]
        outs = [wp.zeros(shape, dtype=t, requires_grad=requires_grad) for shape, t in outputs]
        return ins, outs

    values = [np.asarray(v, dtype=np.float64) for v, _ in inputs]
    ins, outs = forward(values, True)
    tape = wp.Tape()
    with tape:
        wp.launch(kernel, dim=dim, inputs=ins + outs + list(extra))
    results = [o.numpy().copy() for o in outs]
    tape.backward(grads={o: w for o, w in zip(outs, ws)})
    grads = [a.grad.numpy().copy() for a in ins]

    def loss(vals):
        i2, o2 = forward(vals)
        wp.launch(kernel, dim=dim, inputs=i2 + o2 + list(extra))
        return sum(np.sum(w * o.numpy()) for w, o in zip(ws, o2))

    for k, v in enumerate(values):
        fd = np.zeros_like(v)
        for c in range(v.size):
            hi, lo = [x.copy() for x in values], [x.copy() for x in values]
            hi[k].flat[c] += FD_STEP
            lo[k].flat[c] -= FD_STEP
            fd.flat[c] = (loss(hi) - loss(lo)) / (2 * FD_STEP)
        np.testing.assert_allclose(grads[k], fd, rtol=tol, atol=tol, err_msg=f"d loss / d input {k}")
    return results, grads


F64 = wp.float64
V3D, V2D, V4D, V6D = wp.vec3d, wp.vec2d, wp.vec4d, wp.spatial_vectord
M22D, M33D, QD, XD = wp.mat22d, wp.mat33d, wp.quatd, wp.transformd
SHAPE_OF = {F64: (), V3D: (3,), V2D: (2,), V4D: (4,), V6D: (6,), M22D: (2, 2), M33D: (3, 3), QD: (4,), XD: (7,)}
V5D = wp.types.vector(length=5, dtype=wp.float64)
M23D = wp.types.matrix(shape=(2, 3), dtype=wp.float64)
SHAPE_OF.update({V5D: (5,), M23D: (2, 3)})

# ---------------------------------------------------------------------------------------------
# 5. Constructors


@wp.kernel
def constructors_kernel(
    x: wp.array(dtype=wp.float64),
    v: wp.array(dtype=wp.vec3d),
    m: wp.array(dtype=wp.mat22d),
    m3: wp.array(dtype=wp.mat33d),
    q: wp.array(dtype=wp.quatd),
    t: wp.array(dtype=wp.transformd),
    s6: wp.array(dtype=wp.spatial_vectord),
    v5: wp.array(dtype=V5D),
    m23: wp.array(dtype=M23D),
):
    a = x[0]
    b = x[1]
    c = x[2]
    d = x[3]
    v[0] = wp.vec3d(a, b, c)  # components
    v[1] = wp.vec3d(d)  # fill
    v[2] = wp.vec3d()  # zero
    v[3] = wp.vec3d(wp.vec3d(a, b, c))  # same type: a copy
    v[4] = wp.vector(a, b, c)  # generic, dtype from the arguments
    v[5] = wp.vector(d, length=3)
    v[6] = wp.vec3d(wp.vec3i(1, 2, 3)) * a  # int to float conversion
    m[0] = wp.mat22d(a, b, c, d)
    m[1] = wp.mat22d(a)
    m[2] = wp.mat22d()
    m[3] = wp.matrix_from_rows(wp.vec2d(a, b), wp.vec2d(c, d))
    m[4] = wp.matrix_from_cols(wp.vec2d(a, b), wp.vec2d(c, d))
    m[5] = wp.matrix(a, b, c, d, shape=(2, 2))
    m[6] = wp.mat22d(m[0])
    m3[0] = wp.identity(n=3, dtype=wp.float64) * d
    m3[1] = wp.matrix_from_rows(wp.vec3d(a, b, c), wp.vec3d(b, c, d), wp.vec3d(c, d, a))
    q[0] = wp.quat_identity(dtype=wp.float64)
    q[1] = wp.quatd(a, b, c, d)
    q[2] = wp.quatd(wp.vec3d(a, b, c), d)  # (ijk, real)
    t[0] = wp.transform_identity(dtype=wp.float64)
    t[1] = wp.transformd(wp.vec3d(a, b, c), wp.quatd(d, c, b, a))
    t[2] = wp.transformd(a, b, c, d, c, b, a)
    s6[0] = wp.spatial_vectord(wp.vec3d(a, b, c), wp.vec3d(d, c, b))  # (w, v)
    s6[1] = wp.spatial_vectord(a, b, c, d, c, b)
    v5[0] = V5D(a, b, c, d, a)  # wp.types.vector(length=5) captured by the kernel
    m23[0] = M23D(a, b, c, d, a, b)


CTOR_OUTPUTS = [((7,), V3D), ((7,), M22D), ((2,), M33D), ((3,), QD), ((3,), XD), ((2,), V6D), ((1,), V5D), ((1,), M23D)]


def test_constructors_values_and_gradients():
    x = np.array([0.5, -1.25, 2.0, 3.5])
    a, b, c, d = x
    (v, m, m3, q, t, s6, v5, m23), grads = grad_check(constructors_kernel, [(x, F64)], CTOR_OUTPUTS, dim=1)
    np.testing.assert_array_equal(
        v, [[a, b, c], [d, d, d], [0, 0, 0], [a, b, c], [a, b, c], [d, d, d], [a, 2 * a, 3 * a]]
    )
    np.testing.assert_array_equal(
        m,
        [
            [[a, b], [c, d]],
            [[a, a], [a, a]],
            [[0, 0], [0, 0]],
            [[a, b], [c, d]],
            [[a, c], [b, d]],
            [[a, b], [c, d]],
            [[a, b], [c, d]],
        ],
    )
    np.testing.assert_array_equal(m3, [np.eye(3) * d, [[a, b, c], [b, c, d], [c, d, a]]])
    np.testing.assert_array_equal(q, [[0, 0, 0, 1], [a, b, c, d], [a, b, c, d]])
    np.testing.assert_array_equal(t, [[0, 0, 0, 0, 0, 0, 1], [a, b, c, d, c, b, a], [a, b, c, d, c, b, a]])
    np.testing.assert_array_equal(s6, [[a, b, c, d, c, b], [a, b, c, d, c, b]])
    np.testing.assert_array_equal(v5, [[a, b, c, d, a]])
    np.testing.assert_array_equal(m23, [[[a, b, c], [d, a, b]]])
    assert np.all(grads[0] != 0)


@wp.kernel
def conversions_kernel(
    v: wp.array(dtype=wp.vec3),
    m: wp.array(dtype=wp.mat22),
    q: wp.array(dtype=wp.quat),
    t: wp.array(dtype=wp.transform),
    vd: wp.array(dtype=wp.vec3d),
    md: wp.array(dtype=wp.mat22d),
    qd: wp.array(dtype=wp.quatd),
    td: wp.array(dtype=wp.transformd),
    vf: wp.array(dtype=wp.vec3),
):
    i = wp.tid()
    vd[i] = wp.vec3d(v[i])
    md[i] = wp.mat22d(m[i])
    qd[i] = wp.quatd(q[i])
    td[i] = wp.transformd(t[i])
    vf[i] = wp.vec3f(vd[i])  # narrowing (reads the value just written: same thread)


def test_conversions_between_float_types():
    """vec3d(vec3f) etc. convert component-wise; gradients pass through unchanged (they are 1)."""
    rng = rng_for("conversions")
    srcs = [rng.uniform(-2, 2, (4,) + shape).astype(np.float32) for shape in ((3,), (2, 2), (4,), (7,))]
    ins = [wp.array(a, dtype=t, requires_grad=True) for a, t in zip(srcs, (wp.vec3, wp.mat22, wp.quat, wp.transform))]
    outs = [wp.zeros(4, dtype=t, requires_grad=True) for t in (V3D, M22D, QD, XD, wp.vec3)]
    tape = wp.Tape()
    with tape:
        wp.launch(conversions_kernel, 4, inputs=ins + outs)
    for a, o in zip(srcs, outs):
        np.testing.assert_array_equal(o.numpy(), a.astype(np.float64))
    np.testing.assert_array_equal(outs[4].numpy(), srcs[0])
    tape.backward(grads={o: np.ones(o.shape + SHAPE_OF.get(o.dtype, (3,))) for o in outs[:4]})
    for a in ins:
        np.testing.assert_array_equal(a.grad.numpy(), np.ones_like(a.numpy()))


@wp.kernel
def tuple_outputs_kernel(a: wp.array(dtype=wp.mat33d), q: wp.array(dtype=wp.quatd), out: wp.array(dtype=wp.float64)):
    U, sigma, V = wp.svd3(a[0])  # the tuple forms give the same values as the output-parameter forms
    U2 = wp.mat33d()
    sigma2 = wp.vec3d()
    V2 = wp.mat33d()
    wp.svd3(a[0], U2, sigma2, V2)
    Q, R = wp.qr3(a[0])
    E, _d = wp.eig3(a[0] + wp.transpose(a[0]))
    _axis, angle = wp.quat_to_axis_angle(q[0])
    out[0] = wp.length(sigma - sigma2) + wp.ddot(U - U2, U - U2) + wp.ddot(V - V2, V - V2)
    e = Q * R - a[0]
    out[1] = wp.ddot(e, e)
    out[2] = angle
    out[3] = wp.determinant(U) * wp.determinant(V) * wp.determinant(Q) * wp.determinant(E)


def test_tuple_forms_of_output_parameter_builtins():
    a = SPECTRUM(rng_for("tuple forms"), 1, (3, 3))
    q = np.array([[0.0, 0.0, math.sin(0.4), math.cos(0.4)]])
    out = wp.zeros(4, dtype=wp.float64)
    wp.launch(tuple_outputs_kernel, 1, inputs=[wp.array(a, dtype=M33D), wp.array(q, dtype=QD), out])
    o = out.numpy()
    assert o[0] == 0.0
    assert o[1] < 1e-24
    np.testing.assert_allclose(o[2], 0.8, rtol=1e-12)
    np.testing.assert_allclose(o[3], 1.0, rtol=1e-9)  # U, V, Q and the eigenvectors are rotations


@wp.kernel
def decomposition_properties_kernel(
    a: wp.array(dtype=wp.mat33d),
    u: wp.array(dtype=wp.mat33d),
    s: wp.array(dtype=wp.vec3d),
    v: wp.array(dtype=wp.mat33d),
):
    i = wp.tid()
    U = wp.mat33d()
    sigma = wp.vec3d()
    V = wp.mat33d()
    wp.svd3(a[i], U, sigma, V)
    u[i] = U
    s[i] = sigma
    v[i] = V


def test_svd3_conventions():
    """U and V are rotations, |sigma| decreases, sigma[0], sigma[1] >= 0, sign(sigma[2]) = sign(det A)."""
    a = SPECTRUM(rng_for("svd conventions"), N, (3, 3))
    outs = [wp.zeros(N, dtype=t) for t in (M33D, V3D, M33D)]
    wp.launch(decomposition_properties_kernel, N, inputs=[wp.array(a, dtype=M33D)] + outs)
    U, s, V = (o.numpy() for o in outs)
    eye = np.broadcast_to(np.eye(3), U.shape)
    np.testing.assert_allclose(mm(U, tr(U)), eye, atol=1e-12)
    np.testing.assert_allclose(mm(V, tr(V)), eye, atol=1e-12)
    np.testing.assert_allclose(np.linalg.det(U), 1.0, atol=1e-12)
    np.testing.assert_allclose(np.linalg.det(V), 1.0, atol=1e-12)
    assert np.all(s[:, 0] >= s[:, 1]) and np.all(s[:, 1] >= np.abs(s[:, 2])) and np.all(s[:, 1] >= 0)
    np.testing.assert_array_equal(np.sign(s[:, 2]), np.sign(np.linalg.det(a)))


# ---------------------------------------------------------------------------------------------
# 6. Component reads, writes and augmented writes (with gradients)


@wp.kernel
def components_kernel(
    v: wp.array(dtype=wp.vec3d),
    m: wp.array(dtype=wp.mat33d),
    q: wp.array(dtype=wp.quatd),
    t: wp.array(dtype=wp.transformd),
    out_v: wp.array(dtype=wp.vec3d),
    out_m: wp.array(dtype=wp.mat33d),
    out_q: wp.array(dtype=wp.quatd),
    out_t: wp.array(dtype=wp.transformd),
    out_s: wp.array(dtype=wp.float64),
    idx: wp.array(dtype=wp.int32),
):
    k = wp.tid()
    j = idx[k]  # a dynamic index
    a = v[k]
    b = m[k]
    c = q[k]
    x = t[k]
    s = a.x * a[1] + a[j] + b[1, 2] * b[j][0] + b[2][j] + c.w * c[0] + a[-1] + x.p[1] * x.q.w
    a.x += b[0, 0] * a.y  # augmented attribute write
    a[2] = a[2] * a[2]  # overwrite that reads the old value (the old component gets no extra gradient)
    a[j] -= s  # dynamic index, augmented
    b[1, 2] = a.z
    b[0] = a  # row write
    b[2, j] += a.x
    b[1] += a  # augmented row write
    b[-1, 0] *= c.z
    c.w = c.x * c.y
    c[1] += c.z
    c.z -= s
    x.p = a
    x.q = c
    out_v[k] = a
    out_m[k] = b
    out_q[k] = c
    out_t[k] = x
    out_s[k] = s


def components_reference(v, m, q, t, idx):
    """NumPy replica of components_kernel."""
    outs = [np.zeros_like(v), np.zeros_like(m), np.zeros_like(q), np.zeros_like(t), np.zeros(len(v))]
    for k in range(len(v)):
        j = idx[k]
        a, b, c, x = v[k].copy(), m[k].copy(), q[k].copy(), t[k].copy()
        s = a[0] * a[1] + a[j] + b[1, 2] * b[j][0] + b[2][j] + c[3] * c[0] + a[-1] + x[1] * x[6]
        a[0] += b[0, 0] * a[1]
        a[2] = a[2] * a[2]
        a[j] -= s
        b[1, 2] = a[2]
        b[0] = a
        b[2, j] += a[0]
        b[1] += a
        b[-1, 0] *= c[2]
        c[3] = c[0] * c[1]
        c[1] += c[2]
        c[2] -= s
        x[:3] = a
        x[3:] = c
        for o, val in zip(outs, (a, b, c, x, s)):
            o[k] = val
    return outs


def test_component_reads_and_writes_with_gradients():
    rng = rng_for("components")
    n = 6
    v, m, q, t = (rng.uniform(-2, 2, (n,) + shape) for shape in ((3,), (3, 3), (4,), (7,)))
    idx = np.array([0, 1, 2, -1, -2, -3], dtype=np.int32)
    outputs = [((n,), V3D), ((n,), M33D), ((n,), QD), ((n,), XD), ((n,), F64)]
    results, _ = grad_check(
        components_kernel,
        [(v, V3D), (m, M33D), (q, QD), (t, XD)],
        outputs,
        dim=n,
        extra=[wp.array(idx, dtype=wp.int32)],
    )
    for got, expected, what in zip(results, components_reference(v, m, q, t, idx), ("v", "m", "q", "t", "s")):
        np.testing.assert_allclose(got, expected, rtol=1e-13, atol=1e-13, err_msg=what)


@wp.kernel
def overwrite_gradient_kernel(x: wp.array(dtype=wp.vec3d), y: wp.array(dtype=wp.float64)):
    w = x[0]
    w[1] = w[1] * wp.float64(2.0)
    y[0] = w[0] + w[1] + w[2]


def test_component_overwrite_gradient_is_exact():
    """d(w0 + 2 w1 + w2)/dw = (1, 2, 1). (Warp 1.19 gives (1, 3, 1); weft's assign_copy adjoint is exact.)"""
    x = wp.array([[1.0, 2.0, 3.0]], dtype=wp.vec3d, requires_grad=True)
    y = wp.zeros(1, dtype=wp.float64, requires_grad=True)
    tape = wp.Tape()
    with tape:
        wp.launch(overwrite_gradient_kernel, 1, inputs=[x, y])
    tape.backward(y)
    np.testing.assert_array_equal(x.grad.numpy(), [[1.0, 2.0, 1.0]])


@wp.kernel
def array_element_component_kernel(a: wp.array(dtype=wp.vec3), m: wp.array(dtype=wp.mat22)):
    i = wp.tid()
    a[i].x = 5.0  # writes through an array element (Warp allows these)
    a[i].y += 1.0
    m[i][0, 1] = 7.0


def test_component_writes_through_array_elements():
    a = wp.array([[1.0, 2.0, 3.0]] * 2, dtype=wp.vec3)
    m = wp.zeros(2, dtype=wp.mat22)
    wp.launch(array_element_component_kernel, 2, inputs=[a, m])
    np.testing.assert_array_equal(a.numpy(), [[5.0, 3.0, 3.0]] * 2)
    np.testing.assert_array_equal(m.numpy(), [[[0.0, 7.0], [0.0, 0.0]]] * 2)


@wp.kernel
def transform_parts_kernel(
    t: wp.array(dtype=wp.transformd),
    p: wp.array(dtype=wp.vec3d),
    q: wp.array(dtype=wp.quatd),
    out: wp.array(dtype=wp.transformd),
):
    i = wp.tid()
    x = t[i]
    y = t[i]
    wp.transform_set_translation(x, p[i])  # Warp updates the variable in place
    wp.transform_set_rotation(y, q[i])
    out[i] = x + y * wp.float64(2.0)


def test_transform_set_translation_and_rotation():
    rng = rng_for("set parts")
    t, p, q = XFORM(rng, 3, ()), rng.uniform(-2, 2, (3, 3)), QANY(rng, 3, ())
    (got,), _ = grad_check(transform_parts_kernel, [(t, XD), (p, V3D), (q, QD)], [((3,), XD)], dim=3)
    x = np.concatenate([p, t[:, 3:]], axis=1)
    y = np.concatenate([t[:, :3], q], axis=1)
    np.testing.assert_allclose(got, x + 2 * y, rtol=1e-15)


@wp.kernel
def length_kernel(out: wp.array(dtype=wp.int32)):
    v = wp.vec3()
    m = M23D()
    q = wp.quat()
    t = wp.transform()
    out[0] = len(v)
    out[1] = len(m)
    out[2] = len(q)
    out[3] = len(t)
    out[4] = len(wp.spatial_vector())


def test_len_in_kernels():
    out = wp.zeros(5, dtype=wp.int32)
    wp.launch(length_kernel, 1, inputs=[out])
    np.testing.assert_array_equal(out.numpy(), [3, 2, 4, 7, 6])


@wp.kernel
def component_index_kernel(v: wp.array(dtype=wp.vec3), idx: int, out: wp.array(dtype=float)):
    a = v[0]
    out[0] = a[idx]


@wp.kernel
def matrix_row_index_kernel(idx: int, out: wp.array(dtype=wp.vec2)):
    m = wp.mat22(1.0, 2.0, 3.0, 4.0)
    out[0] = m[idx]


@wp.kernel
def component_write_index_kernel(idx: int, out: wp.array(dtype=wp.quat)):
    q = wp.quat(1.0, 2.0, 3.0, 4.0)
    q[idx] = 0.0
    out[0] = q


def test_component_negative_indices_wrap():
    out = wp.zeros(1, dtype=float)
    wp.launch(component_index_kernel, 1, inputs=[wp.array([[1.0, 2.0, 3.0]], dtype=wp.vec3), -1, out])
    assert out.numpy()[0] == 3.0
    rows = wp.zeros(1, dtype=wp.vec2)
    wp.launch(matrix_row_index_kernel, 1, inputs=[-2, rows])
    np.testing.assert_array_equal(rows.numpy(), [[1.0, 2.0]])


@pytest.mark.parametrize(
    "case",
    [
        pytest.param((component_index_kernel, 3), id="vec3[3]"),
        pytest.param((component_index_kernel, -4), id="vec3[-4]"),
        pytest.param((matrix_row_index_kernel, 2), id="mat22[2]"),
        pytest.param((component_write_index_kernel, 4), id="quat[4]=x"),
    ],
)
def test_component_index_out_of_range_raises(case):
    """Warp does not check component indices (it reads garbage); weft raises an IndexError that
    names the kernel, the file and line, and the index."""
    kernel, idx = case
    if kernel is component_index_kernel:
        args = [wp.array([[1.0, 2.0, 3.0]], dtype=wp.vec3), idx, wp.zeros(1, dtype=float)]
    elif kernel is matrix_row_index_kernel:
        args = [idx, wp.zeros(1, dtype=wp.vec2)]
    else:
        args = [idx, wp.zeros(1, dtype=wp.quat)]
    with pytest.raises(IndexError) as e:
        wp.launch(kernel, 1, inputs=args)
    msg = str(e.value)
    assert kernel.key in msg and f"index {idx}" in msg and __file__.split("/")[-1] in msg, msg


# ---------------------------------------------------------------------------------------------
# 7. Comparisons, where on composites with a comparison condition, integer vectors


@wp.kernel
def compare_kernel(
    a: wp.array(dtype=wp.vec3),
    b: wp.array(dtype=wp.vec3),
    m: wp.array(dtype=wp.mat22),
    n: wp.array(dtype=wp.mat22),
    q: wp.array(dtype=wp.quat),
    r: wp.array(dtype=wp.quat),
    x: wp.array(dtype=wp.transform),
    y: wp.array(dtype=wp.transform),
    out: wp.array2d(dtype=wp.bool),
):
    i = wp.tid()
    out[0, i] = a[i] == b[i]
    out[1, i] = a[i] != b[i]  # weft extension: Warp 1.19's `!=` on vectors fails to compile
    out[2, i] = m[i] == n[i]
    out[3, i] = q[i] == r[i]
    out[4, i] = x[i] == y[i]
    out[5, i] = wp.vec3i(1, 2, 3) == wp.vec3i(1, 2, 3)


def test_equality_of_composites():
    rng = rng_for("equality")
    n = 32
    pairs = []
    for shape in ((3,), (2, 2), (4,), (7,)):
        a = rng.integers(0, 2, (n,) + shape).astype(np.float32)
        b = a.copy()
        flip = rng.random(n) < 0.5
        b.reshape(n, -1)[flip, 0] += 1.0
        pairs.append((a, b, ~flip))
    types = (wp.vec3, wp.mat22, wp.quat, wp.transform)
    arrays = [wp.array(v, dtype=t) for (a, b, _), t in zip(pairs, types) for v in (a, b)]
    out = wp.zeros((6, n), dtype=wp.bool)
    wp.launch(compare_kernel, n, inputs=arrays + [out])
    got = out.numpy()
    np.testing.assert_array_equal(got[0], pairs[0][2])
    np.testing.assert_array_equal(got[1], ~pairs[0][2])
    for row, (_, _, equal) in zip((2, 3, 4), pairs[1:]):
        np.testing.assert_array_equal(got[row], equal)
    assert got[5].all()


@wp.kernel
def where_compare_kernel(a: wp.array(dtype=wp.vec3d), b: wp.array(dtype=wp.vec3d), out: wp.array(dtype=wp.vec3d)):
    i = wp.tid()
    out[i] = wp.where(a[i].x < b[i].x, a[i] * b[i].y, b[i] - a[i]) + (a[i] if wp.length(a[i]) > 1.0 else b[i])


def test_where_and_ternary_on_vectors_with_gradients():
    rng = rng_for("where vec")
    a, b = rng.uniform(-2, 2, (2, 16, 3))
    (got,), _ = grad_check(where_compare_kernel, [(a, V3D), (b, V3D)], [((16,), V3D)], dim=16)
    expected = np.where(a[:, :1] < b[:, :1], a * b[:, 1:2], b - a) + np.where(norm(a)[:, None] > 1, a, b)
    np.testing.assert_allclose(got, expected, rtol=1e-14)


@wp.kernel
def int_vector_kernel(
    a: wp.array(dtype=wp.vec3i), b: wp.array(dtype=wp.vec3i), out: wp.array(dtype=wp.vec3i), s: wp.array(dtype=wp.int32)
):
    i = wp.tid()
    out[0] = a[i] + b[i]
    out[1] = a[i] - b[i]
    out[2] = a[i] * 3
    out[3] = 2 * a[i]
    out[4] = -a[i]
    out[5] = wp.min(a[i], b[i])
    out[6] = wp.max(a[i], b[i])
    out[7] = wp.abs(a[i])
    out[8] = wp.cw_mul(a[i], b[i])
    out[9] = a[i] % b[i]
    out[10] = a[i] / 2
    s[0] = wp.dot(a[i], b[i])
    s[1] = wp.min(a[i])
    s[2] = wp.max(b[i])
    s[3] = int(wp.argmax(a[i]))


def test_integer_vectors():
    a, b = np.array([[-7, 7, 5]], dtype=np.int32), np.array([[2, -2, 3]], dtype=np.int32)
    out = wp.zeros(11, dtype=wp.vec3i)
    s = wp.zeros(4, dtype=wp.int32)
    wp.launch(int_vector_kernel, 1, inputs=[wp.array(a, dtype=wp.vec3i), wp.array(b, dtype=wp.vec3i), out, s])
    a, b = a[0], b[0]
    np.testing.assert_array_equal(
        out.numpy(),
        [
            a + b,
            a - b,
            a * 3,
            2 * a,
            -a,
            np.minimum(a, b),
            np.maximum(a, b),
            np.abs(a),
            a * b,
            np.fmod(a, b),
            [-3, 3, 2],
        ],
    )
    np.testing.assert_array_equal(s.numpy(), [np.dot(a, b), -7, 3, 1])


# ---------------------------------------------------------------------------------------------
# 8. Arrays of vectors and matrices


@wp.kernel
def vec_array_kernel(
    p: wp.array(dtype=wp.vec3),
    r: wp.array(dtype=wp.mat33),
    grid: wp.array2d(dtype=wp.vec3),
    out: wp.array(dtype=wp.vec3),
):
    i = wp.tid()
    out[i] = r[i] * p[i] + grid[i, 1]


def test_arrays_of_vectors_and_matrices():
    rng = rng_for("arrays")
    p_np = rng.uniform(-1, 1, (5, 3)).astype(np.float32)
    r_np = rng.uniform(-1, 1, (5, 3, 3)).astype(np.float32)
    g_np = rng.uniform(-1, 1, (5, 2, 3)).astype(np.float32)
    p = wp.array(p_np, dtype=wp.vec3, requires_grad=True)
    r = wp.array(r_np, dtype=wp.mat33, requires_grad=True)
    grid = wp.array(g_np, dtype=wp.vec3)
    assert p.shape == (5,) and r.shape == (5,) and grid.shape == (5, 2)
    assert p.dtype is wp.vec3 and r.dtype is wp.mat33
    assert p.numpy().shape == (5, 3) and r.numpy().shape == (5, 3, 3) and grid.numpy().shape == (5, 2, 3)
    assert p.grad.numpy().shape == (5, 3) and r.grad.numpy().shape == (5, 3, 3)
    assert p.grad.dtype is wp.vec3
    assert p.strides == (12,) and grid.strides == (24, 12)
    out = wp.zeros(5, dtype=wp.vec3, requires_grad=True)
    tape = wp.Tape()
    with tape:
        wp.launch(vec_array_kernel, 5, inputs=[p, r, grid, out])
    np.testing.assert_allclose(out.numpy(), mv(r_np, p_np) + g_np[:, 1], rtol=1e-6)
    w = rng.uniform(0.5, 1.5, (5, 3))
    tape.backward(grads={out: w})
    np.testing.assert_allclose(p.grad.numpy(), vm(w, r_np), rtol=1e-6)
    np.testing.assert_allclose(r.grad.numpy(), outer(w, p_np), rtol=1e-6)


def test_vector_array_construction():
    v = wp.array([wp.vec3(1.0, 2.0, 3.0), wp.vec3(4.0, 5.0, 6.0)], dtype=wp.vec3)
    np.testing.assert_array_equal(v.numpy(), [[1, 2, 3], [4, 5, 6]])
    assert wp.zeros(4, dtype=wp.mat33).numpy().shape == (4, 3, 3)
    assert wp.zeros((2, 3), dtype=wp.quat).numpy().shape == (2, 3, 4)
    full = wp.full(3, wp.vec3(1.0, 2.0, 3.0), dtype=wp.vec3)
    np.testing.assert_array_equal(full.numpy(), [[1, 2, 3]] * 3)
    f = wp.zeros(2, dtype=wp.vec3)
    f.fill_((7.0, 8.0, 9.0))
    np.testing.assert_array_equal(f.numpy(), [[7, 8, 9]] * 2)
    d = wp.array(np.ones((3, 3)), dtype=wp.vec3d)
    assert d.dtype is wp.vec3d and d.numpy().dtype == np.float64
    with pytest.raises((ValueError, TypeError, RuntimeError)):
        wp.array(np.ones((3, 4), dtype=np.float32), dtype=wp.vec3)


# ---------------------------------------------------------------------------------------------
# 9. Atomics on vector and matrix arrays (with gradients). Expected values are Warp 1.19's.


@wp.kernel
def vector_atomics_kernel(
    x: wp.array(dtype=wp.vec3),
    mn: wp.array(dtype=wp.vec3),
    mx: wp.array(dtype=wp.vec3),
    s: wp.array(dtype=wp.vec3),
    old: wp.array(dtype=wp.vec3),
):
    i = wp.tid()
    wp.atomic_min(mn, 0, x[i])
    wp.atomic_max(mx, 0, x[i])
    old[i] = wp.atomic_add(s, 0, x[i])  # returns the previous value
    s[1] += x[i]
    wp.atomic_sub(s, 2, x[i])
    s[3] -= x[i] * 2.0


@wp.kernel
def matrix_atomics_kernel(x: wp.array(dtype=wp.mat22), s: wp.array(dtype=wp.mat22)):
    i = wp.tid()
    wp.atomic_add(s, 0, x[i])
    s[1] += x[i] * 2.0


def test_atomics_on_vector_arrays():
    xs = np.array([[1.0, 5.0, 3.0], [2.0, 2.0, 3.0], [0.5, 6.0, 3.0]], dtype=np.float32)
    x = wp.array(xs, dtype=wp.vec3, requires_grad=True)
    mn = wp.array([[4.0, 4.0, 4.0]], dtype=wp.vec3, requires_grad=True)
    mx = wp.zeros(1, dtype=wp.vec3, requires_grad=True)
    s = wp.zeros(4, dtype=wp.vec3, requires_grad=True)
    old = wp.zeros(3, dtype=wp.vec3, requires_grad=True)
    tape = wp.Tape()
    with tape:
        wp.launch(vector_atomics_kernel, 3, inputs=[x, mn, mx, s, old])
    np.testing.assert_array_equal(mn.numpy(), [[0.5, 2.0, 3.0]])
    np.testing.assert_array_equal(mx.numpy(), [[2.0, 6.0, 3.0]])
    total = xs.sum(0)
    np.testing.assert_array_equal(s.numpy(), [total, total, -total, -2 * total])
    np.testing.assert_array_equal(np.sort(old.numpy(), axis=0), np.sort([[0, 0, 0], xs[0], xs[0] + xs[1]], axis=0))
    # min/max: per component, every x equal to the final value gets the gradient (ties included)
    tape.backward(grads={mn: np.array([[1.0, 10.0, 100.0]])})
    np.testing.assert_array_equal(x.grad.numpy(), [[0, 0, 100], [0, 10, 100], [1, 0, 100]])
    tape.zero()
    tape.backward(grads={mx: np.array([[1.0, 10.0, 100.0]])})
    np.testing.assert_array_equal(x.grad.numpy(), [[0, 0, 100], [1, 0, 100], [0, 10, 100]])
    tape.zero()
    seed = np.array([[1.0, 2.0, 3.0], [10.0, 20.0, 30.0], [100.0, 200.0, 300.0], [1000.0, 2000.0, 3000.0]])
    tape.backward(grads={s: seed})
    np.testing.assert_array_equal(x.grad.numpy(), np.tile(seed[0] + seed[1] - seed[2] - 2 * seed[3], (3, 1)))
    np.testing.assert_array_equal(s.grad.numpy(), seed)  # atomics keep the output gradient


def test_atomics_on_matrix_arrays():
    xs = rng_for("mat atomics").uniform(-1, 1, (8, 2, 2)).astype(np.float32)
    x = wp.array(xs, dtype=wp.mat22, requires_grad=True)
    s = wp.zeros(2, dtype=wp.mat22, requires_grad=True)
    tape = wp.Tape()
    with tape:
        wp.launch(matrix_atomics_kernel, 8, inputs=[x, s])
    np.testing.assert_allclose(s.numpy(), [xs.sum(0), 2 * xs.sum(0)], rtol=1e-5, atol=1e-6)
    tape.backward(grads={s: np.array([[[1.0, 2.0], [3.0, 4.0]], [[1.0, 1.0], [1.0, 1.0]]])})
    np.testing.assert_array_equal(x.grad.numpy(), np.tile([[3.0, 4.0], [5.0, 6.0]], (8, 1, 1)))


# ---------------------------------------------------------------------------------------------
# 10. Composite kernel arguments by value, composite globals


@wp.kernel
def by_value_kernel(v: wp.vec3, m: wp.mat33, q: wp.quat, t: wp.transform, vd: wp.vec3d, out: wp.array(dtype=wp.vec3)):
    out[0] = m * v
    out[1] = wp.quat_rotate(q, v)
    out[2] = wp.transform_point(t, v)
    out[3] = wp.vec3(vd)


def test_composite_arguments_by_value():
    q = np.array([0.0, 0.0, math.sin(0.3), math.cos(0.3)])
    m = np.arange(9.0).reshape(3, 3)
    out = wp.zeros(4, dtype=wp.vec3)
    for v in (wp.vec3(1.0, 2.0, 3.0), (1.0, 2.0, 3.0), [1, 2, 3], np.array([1.0, 2.0, 3.0])):
        out.zero_()
        wp.launch(
            by_value_kernel,
            1,
            inputs=[
                v,
                wp.mat33(*m.ravel()),
                wp.quat(*q),
                wp.transform((4.0, 5.0, 6.0), wp.quat(*q)),
                wp.vec3d(7, 8, 9),
            ],
            outputs=[out],
        )
        got = out.numpy()
        np.testing.assert_allclose(got[0], m @ [1, 2, 3], rtol=1e-6)
        np.testing.assert_allclose(got[1], qrot(q, np.array([1.0, 2.0, 3.0])), rtol=1e-6)
        np.testing.assert_allclose(got[2], qrot(q, np.array([1.0, 2.0, 3.0])) + [4, 5, 6], rtol=1e-6)
        np.testing.assert_array_equal(got[3], [7, 8, 9])


GRAVITY = wp.vec3(0.0, -9.8, 0.0)
ROTATE_Z = wp.mat33(0.0, -1.0, 0.0, 1.0, 0.0, 0.0, 0.0, 0.0, 1.0)
HALF_TURN = wp.quat(0.0, 0.0, 1.0, 0.0)
OFFSET = wp.constant(wp.vec3d(1.0, 2.0, 3.0))
POSE = wp.transform(wp.vec3(1.0, 0.0, 0.0), wp.quat(0.0, 0.0, 0.0, 1.0))


@wp.kernel
def globals_kernel(x: wp.array(dtype=wp.vec3), out: wp.array(dtype=wp.vec3), outd: wp.array(dtype=wp.vec3d)):
    i = wp.tid()
    out[i] = ROTATE_Z * x[i] + GRAVITY
    out[i + 2] = wp.quat_rotate(HALF_TURN, x[i]) + POSE.p
    outd[i] = OFFSET * wp.float64(i)


def test_composite_globals_are_captured_as_constants():
    x = wp.array([[1.0, 0.0, 0.0], [0.0, 2.0, 0.0]], dtype=wp.vec3, requires_grad=True)
    out = wp.zeros(4, dtype=wp.vec3, requires_grad=True)
    outd = wp.zeros(2, dtype=wp.vec3d, requires_grad=True)
    tape = wp.Tape()
    with tape:
        wp.launch(globals_kernel, 2, inputs=[x, out, outd])
    np.testing.assert_allclose(out.numpy(), [[0, -8.8, 0], [-2, -9.8, 0], [0, 0, 0], [1, -2, 0]], rtol=1e-6, atol=1e-6)
    np.testing.assert_array_equal(outd.numpy(), [[0, 0, 0], [1, 2, 3]])
    tape.backward(grads={out: np.ones((4, 3))})
    np.testing.assert_allclose(x.grad.numpy(), [[0, -2, 2], [0, -2, 2]], atol=1e-6)  # R^T 1 + (-1, -1, 1)


# ---------------------------------------------------------------------------------------------
# 11. print


@wp.kernel
def print_kernel(v: wp.vec3):
    print(v)
    print(wp.mat22(1.0, 2.0, 3.0, 4.0))
    print(wp.quat(0.0, 0.0, 0.0, 1.0))
    print(wp.transform(wp.vec3(1.0, 2.0, 3.0), wp.quat(0.0, 0.0, 0.0, 1.0)))
    print(wp.vec3i(1, -2, 3))


def test_print_composites(capfd):
    """Warp 1.19's formats: vectors and matrix rows put a space after every component; quats
    and transforms do not."""
    capfd.readouterr()
    wp.launch(print_kernel, 1, inputs=[wp.vec3(1.0, 2.0, 3.5)])
    out = capfd.readouterr().out
    assert out == "1 2 3.5 \n1 2 \n3 4 \n0 0 0 1\n(1 2 3) (0 0 0 1)\n1 -2 3 \n", repr(out)


# ---------------------------------------------------------------------------------------------
# 12. float16 composites (forward smoke test, own module)


def _f16_kernel():
    def f16_ops(
        a: wp.array(dtype=wp.vec3h),
        b: wp.array(dtype=wp.vec3h),
        m: wp.array(dtype=wp.mat22h),
        out: wp.array(dtype=wp.vec3h),
        s: wp.array(dtype=wp.float16),
        mo: wp.array(dtype=wp.mat22h),
    ):
        i = wp.tid()
        out[i] = a[i] + b[i] * wp.float16(2.0)
        s[i] = wp.dot(a[i], b[i]) + wp.length(a[i])
        mo[i] = m[i] * wp.transpose(m[i])

    return wp.kernel(f16_ops, module=F16_MODULE)


F16_KERNEL = _f16_kernel()


def test_float16_composites_forward():
    rng = rng_for("float16")
    a, b = (rng.uniform(-2, 2, (8, 3)).astype(np.float16) for _ in range(2))
    m = rng.uniform(-2, 2, (8, 2, 2)).astype(np.float16)
    out, s, mo = wp.zeros(8, dtype=wp.vec3h), wp.zeros(8, dtype=wp.float16), wp.zeros(8, dtype=wp.mat22h)
    ins = [wp.array(a, dtype=wp.vec3h), wp.array(b, dtype=wp.vec3h), wp.array(m, dtype=wp.mat22h)]
    wp.launch(F16_KERNEL, 8, inputs=ins + [out, s, mo])
    a32, b32, m32 = (x.astype(np.float32) for x in (a, b, m))
    np.testing.assert_allclose(out.numpy().astype(np.float32), a32 + 2 * b32, rtol=2e-3, atol=2e-3)
    np.testing.assert_allclose(s.numpy().astype(np.float32), dot(a32, b32) + norm(a32), rtol=5e-3, atol=1e-2)
    np.testing.assert_allclose(mo.numpy().astype(np.float32), mm(m32, tr(m32)), rtol=5e-3, atol=1e-2)


# ---------------------------------------------------------------------------------------------
# 13. Warp-lang 1.19's composite builtins (groups Vector Math, Quaternion Math, Transformations,
# Spatial Math): the last ones weft added, checked by name (their behaviour is in the tables).


def test_late_warp_composite_builtins_exist():
    for name in ("svd2", "inverse_approx", "div_approx"):
        assert isinstance(getattr(wp, name), registry_builtin_type()), name


def registry_builtin_type():
    from weft.builtins.registry import Builtin

    return Builtin


def test_constant_component_index_out_of_range_is_a_compile_error():
    @wp.kernel
    def k_const_out_of_range(out: wp.array(dtype=float)):
        v = wp.vec3(1.0, 2.0, 3.0)
        out[0] = v[3]

    @wp.kernel
    def k_const_negative(out: wp.array(dtype=float), m: wp.array(dtype=wp.mat22)):
        v = wp.vec3(1.0, 2.0, 3.0)
        out[0] = v[-1] + m[0][1, -2]

    with pytest.raises(wp.WarpCodegenIndexError, match="component index 3 is out of range") as info:
        wp.launch(k_const_out_of_range, dim=1, inputs=[wp.zeros(1)])
    assert isinstance(info.value, IndexError) and isinstance(info.value, wp.WarpCodegenError)
    out = wp.zeros(1)
    m = wp.array(np.array([[[1.0, 2.0], [3.0, 4.0]]], dtype=np.float32), dtype=wp.mat22)
    wp.launch(k_const_negative, dim=1, inputs=[out, m])
    assert out.numpy()[0] == 3.0 + 3.0  # v[-1] and row 1, column -2 (= 0)


_vec5h = wp.types.vector(5, wp.float16)


@wp.kernel
def _classify_composites(out: wp.array(dtype=wp.bool)):
    v = _vec5h()
    out[0] = wp.isfinite(v)
    v[3] = wp.float16(wp.NAN)
    out[1] = wp.isnan(v)
    out[2] = wp.isfinite(v)
    m = wp.mat33d()
    m[1, 2] = wp.float64(wp.inf)
    out[3] = wp.isinf(m)
    out[4] = wp.isnan(m)
    out[5] = wp.isfinite(wp.quat_identity())
    out[6] = wp.isinf(wp.transform_identity())


def test_isnan_isinf_isfinite_of_composites():
    out = wp.zeros(7, dtype=wp.bool)
    wp.launch(_classify_composites, 1, [out])
    assert out.numpy().tolist() == [True, True, False, True, False, True, False]
    assert wp.isnan(wp.vec3(1.0, float("nan"), 0.0)) and wp.isfinite(wp.vec2(1.0, 2.0))


@wp.kernel
def _nan_reductions(v: wp.array(dtype=wp.vec3), mn: wp.array(dtype=float), mx: wp.array(dtype=float)):
    i = wp.tid()
    mn[i] = wp.min(v[i])
    mx[i] = wp.max(v[i])


@wp.kernel
def _nan_atomic_min(slot: wp.array(dtype=float), value: wp.array(dtype=float), out: wp.array(dtype=float)):
    i = wp.tid()
    out[i] = wp.atomic_min(slot, i, value[i])


def test_nan_loses_to_numbers_in_reductions_and_atomics():
    nan = float("nan")
    v = wp.array([[nan, 2.0, -1.0], [3.0, nan, nan]], dtype=wp.vec3, requires_grad=True)
    mn = wp.zeros(2, dtype=float, requires_grad=True)
    mx = wp.zeros(2, dtype=float, requires_grad=True)
    tape = wp.Tape()
    with tape:
        wp.launch(_nan_reductions, 2, [v, mn, mx])
    assert mn.numpy().tolist() == [-1.0, 3.0] and mx.numpy().tolist() == [2.0, 3.0]
    tape.backward(grads={mn: wp.ones(2, dtype=float)})
    np.testing.assert_array_equal(v.grad.numpy(), [[0.0, 0.0, 1.0], [1.0, 0.0, 0.0]])  # where the value came from

    slot = wp.array([nan, nan, 2.0, 5.0, 2.0], dtype=float, requires_grad=True)
    value = wp.array([nan, 2.0, nan, 2.0, 5.0], dtype=float, requires_grad=True)
    out = wp.zeros(5, dtype=float, requires_grad=True)
    tape = wp.Tape()
    with tape:
        wp.launch(_nan_atomic_min, 5, [slot, value, out])
    np.testing.assert_array_equal(slot.numpy()[1:], [2.0, 2.0, 2.0, 2.0])  # a NaN slot takes the number
    assert np.isnan(slot.numpy()[0])
    slot.grad.fill_(1.0)
    tape.backward()
    np.testing.assert_array_equal(value.grad.numpy(), [1.0, 1.0, 0.0, 1.0, 0.0])  # the value written gets it


@pytest.mark.parametrize("dtype", [wp.int8, wp.uint16, wp.int32, wp.uint64])
def test_outer_ddot_trace_of_integer_composites(dtype):
    V = wp.types.vector(2, dtype)
    M = wp.types.matrix((2, 2), dtype)

    @wp.kernel(module="unique")
    def k(a: wp.array(dtype=V), m: wp.array(dtype=M), o: wp.array(dtype=M), s: wp.array(dtype=dtype)):
        o[0] = wp.outer(a[0], a[1])
        s[0] = wp.ddot(m[0], m[0])
        s[1] = wp.trace(m[0])

    a = wp.array([[1, 2], [3, 4]], dtype=V)
    m = wp.array([[[1, 2], [3, 4]]], dtype=M)
    o = wp.zeros(1, dtype=M)
    s = wp.zeros(2, dtype=dtype)
    wp.launch(k, 1, [a, m, o, s])
    assert o.numpy().tolist() == [[[3, 4], [6, 8]]] and s.numpy().tolist() == [30, 5]


@wp.kernel
def _default_delta(out: wp.array(dtype=float)):
    v = wp.vec3(3.0, 4.0, 0.0)
    out[0] = wp.norm_huber(v)  # delta defaults to 1, as in Warp
    out[1] = wp.norm_pseudo_huber(v)
    out[2] = wp.smooth_normalize(v)[0]
    out[3] = wp.norm_huber(v, delta=2.0)


def test_builtin_parameters_with_defaults_may_be_left_out():
    out = wp.zeros(4, dtype=float)
    wp.launch(_default_delta, 1, [out])
    np.testing.assert_allclose(out.numpy(), [4.5, np.sqrt(26.0), 3.0 / np.sqrt(26.0), 8.0], rtol=1e-6)
    assert abs(wp.norm_huber(wp.vec3(3.0, 4.0, 0.0)) - 4.5) < 1e-6  # and from Python


@wp.kernel
def _inverse_residual(m: wp.array(dtype=wp.mat44), out: wp.array(dtype=wp.mat44), det: wp.array(dtype=float)):
    i = wp.tid()
    out[i] = m[i] * wp.inverse(m[i])
    det[i] = wp.determinant(m[i])


def test_float32_4x4_inverses_stay_accurate_on_ill_conditioned_matrices():
    rng = rng_for("inverse accuracy")
    a, b, c = (rng.random((4096, 4, 4)).astype(np.float32) for _ in range(3))
    m = (a @ b + 2.0 * c).astype(np.float32)  # products of positive matrices: condition numbers up to ~1e4
    m[0] = np.array([[1, 2, 3, 4], [2, 4, 6, 8], [0, 1, 0, 1], [1, 0, 1, 0]], np.float32)  # singular
    out, det = wp.zeros(len(m), dtype=wp.mat44), wp.zeros(len(m), dtype=float)
    wp.launch(_inverse_residual, len(m), inputs=[wp.array(m, dtype=wp.mat44), out, det])
    residual = np.abs(out.numpy()[1:] - np.eye(4)).max(axis=(1, 2))
    cond = np.linalg.cond(m[1:].astype(np.float64))
    assert cond.max() > 1e4  # the set holds ill-conditioned matrices
    bound = 2.0 * cond * np.finfo(np.float32).eps  # what a backward-stable inverse gives
    assert np.all(residual <= bound), (residual / bound).max()
    assert residual[cond < 1e3].max() < 1e-4
    assert det.numpy()[0] == 0.0 and not out.numpy()[0].any()  # singular: the zero matrix


@wp.kernel
def _det44(m: wp.array(dtype=wp.mat44), det: wp.array(dtype=float)):
    i = wp.tid()
    det[i] = wp.determinant(m[i])


def test_float32_4x4_determinants_are_correctly_rounded():
    # computed in float64 and rounded once: the float64 determinant of the same float32 inputs,
    # rounded to float32 (cofactors in float32 were several ulps off, and central differences of
    # a determinant near 1 with a small step were off by 0.3 %)
    rng = rng_for("det44")
    m = (np.eye(4) + 0.4 * rng.standard_normal((4096, 4, 4))).astype(np.float32)
    det = wp.zeros(len(m), dtype=float)
    wp.launch(_det44, len(m), inputs=[wp.array(m, dtype=wp.mat44), det])
    np.testing.assert_array_equal(det.numpy(), np.linalg.det(m.astype(np.float64)).astype(np.float32))
    step = np.float32(1e-3)
    plus, minus = m.copy(), m.copy()
    plus[:, 1, 2] += step
    minus[:, 1, 2] -= step
    dp, dm = wp.zeros(len(m), dtype=float), wp.zeros(len(m), dtype=float)
    wp.launch(_det44, len(m), inputs=[wp.array(plus, dtype=wp.mat44), dp])
    wp.launch(_det44, len(m), inputs=[wp.array(minus, dtype=wp.mat44), dm])
    fd = (dp.numpy().astype(np.float64) - dm.numpy()) / (plus[:, 1, 2].astype(np.float64) - minus[:, 1, 2])
    exact = np.linalg.det(m.astype(np.float64)) * np.linalg.inv(m.astype(np.float64))[:, 2, 1]  # d det / d m[1, 2]
    np.testing.assert_allclose(fd, exact, rtol=0, atol=1e-3 * np.abs(exact).max())


@wp.kernel
def _eig3_loss(m: wp.array(dtype=wp.mat33), wq: wp.array(dtype=wp.mat33), wd: wp.array(dtype=wp.vec3), out: wp.array(dtype=float)):
    i = wp.tid()
    Q = wp.mat33()
    d = wp.vec3()
    wp.eig3(m[i] + wp.transpose(m[i]), Q, d)
    out[i] = wp.ddot(Q, wq[i]) + wp.dot(d, wd[i])


def test_float32_eig3_gradient_matches_small_step_central_differences():
    # eig3 runs its Jacobi sweeps in float64: with float32 sweeps, central differences with a
    # step of 1e-4 (Warp's own check) were off by up to 0.04 from the analytic gradient
    rng = rng_for("eig3 fd")
    n = 64
    m = (rng.random((n, 3, 3)) + np.eye(3)).astype(np.float32)
    wq = rng.standard_normal((n, 3, 3)).astype(np.float32)
    wd = rng.standard_normal((n, 3)).astype(np.float32)
    args = [wp.array(wq, dtype=wp.mat33), wp.array(wd, dtype=wp.vec3)]

    def loss(mats):
        out = wp.zeros(n, dtype=float)
        wp.launch(_eig3_loss, n, inputs=[wp.array(mats, dtype=wp.mat33), *args, out])
        return out.numpy().astype(np.float64)

    mw = wp.array(m, dtype=wp.mat33, requires_grad=True)
    out = wp.zeros(n, dtype=float, requires_grad=True)
    tape = wp.Tape()
    with tape:
        wp.launch(_eig3_loss, n, inputs=[mw, *args, out])
    tape.backward(grads={out: wp.ones(n, dtype=float)})
    grad = mw.grad.numpy()
    dx = np.float32(1e-4)
    for a, b in ((0, 0), (1, 0), (2, 1), (0, 2)):
        plus, minus = m.copy(), m.copy()
        plus[:, a, b] += dx
        minus[:, a, b] -= dx
        fd = (loss(plus) - loss(minus)) / (plus[:, a, b].astype(np.float64) - minus[:, a, b])
        np.testing.assert_allclose(fd, grad[:, a, b], rtol=0, atol=1.5e-2)  # the float32 loss: ~6e-3
