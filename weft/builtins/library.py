"""Warp builtins that weft writes in its own kernel language (``@wp.func``): rigid-body helpers
built from the native quaternion, transform and spatial builtins. Their gradients come from the
compiler like any user func's. Each is generic over float precision (``typing.Any``)."""

from typing import Any

from ..kernel import func
from . import scalar as sb
from . import vector as vb
from .. import vector_types as vt


@func
def velocity_at_point(qd: Any, r: Any):
    """Velocity at offset ``r`` of a body moving with spatial velocity ``qd`` (angular on top)."""
    return vb.cross(vb.spatial_top(qd), r) + vb.spatial_bottom(qd)


@func
def transform_twist(t: Any, x: Any):
    """Transform a spatial twist (angular, linear) by the rigid transform ``t``."""
    w = vb.quat_rotate(t.q, vb.spatial_top(x))
    v = vb.quat_rotate(t.q, vb.spatial_bottom(x)) + vb.cross(t.p, w)
    return type(x)(w, v)


@func
def transform_wrench(t: Any, x: Any):
    """Transform a spatial wrench (torque, force) by the rigid transform ``t``."""
    f = vb.quat_rotate(t.q, vb.spatial_bottom(x))
    tau = vb.quat_rotate(t.q, vb.spatial_top(x)) + vb.cross(t.p, f)
    return type(x)(tau, f)


@func
def quat_to_rpy(q: Any):
    """Roll, pitch, yaw (rotations about x, then y, then z) of a unit quaternion."""
    roll = sb.atan2(2.0 * (q.w * q.x + q.y * q.z), 1.0 - 2.0 * (q.x * q.x + q.y * q.y))
    pitch = sb.asin(sb.clamp(2.0 * (q.w * q.y - q.z * q.x), -1.0, 1.0))
    yaw = sb.atan2(2.0 * (q.w * q.z + q.x * q.y), 1.0 - 2.0 * (q.y * q.y + q.z * q.z))
    return vt.vector(roll, pitch, yaw)


@func
def transform_to_matrix(xform: Any):
    """The 4x4 homogeneous matrix of a rigid transform."""
    r = vb.quat_to_matrix(xform.q)
    p = xform.p
    return vt.matrix(
        r[0, 0], r[0, 1], r[0, 2], p[0],
        r[1, 0], r[1, 1], r[1, 2], p[1],
        r[2, 0], r[2, 1], r[2, 2], p[2],
        0.0, 0.0, 0.0, 1.0,
        shape=(4, 4),
    )  # fmt: skip


@func
def transform_from_matrix(mat: Any):
    """The rigid transform of a 4x4 homogeneous matrix (its rotation part must be orthonormal)."""
    p = vt.vector(mat[0, 3], mat[1, 3], mat[2, 3])
    return vt.transformation(p, vb.quat_from_matrix(mat))


@func
def quat_twist(axis: Any, q: Any):
    """The twist of rotation ``q`` about unit ``axis`` (swing-twist decomposition)."""
    v = vt.vector(q.x, q.y, q.z)
    p = axis * vb.dot(v, axis)
    return vb.normalize(type(q)(p[0], p[1], p[2], q.w))


@func
def quat_twist_angle_signed(axis: Any, q: Any):
    """The signed angle of the twist of ``q`` about the unit ``axis``: 2 atan2(axis . q.xyz, q.w),
    in [-2 pi, 2 pi] (q and -q, the same rotation, may differ by 2 pi)."""
    return 2.0 * sb.atan2(vb.dot(axis, vt.vector(q.x, q.y, q.z)), q.w)


@func
def quat_twist_angle(axis: Any, q: Any):
    """The unsigned angle of the twist of ``q`` about the unit ``axis``: 2 atan2(|axis . q.xyz|, q.w)."""
    return 2.0 * sb.atan2(sb.abs(vb.dot(axis, vt.vector(q.x, q.y, q.z))), q.w)


@func
def transform_compose(position: Any, rotation: Any, scale: Any):
    """The 4x4 matrix of a translation, a rotation and a per-axis scale (columns scaled)."""
    r = vb.quat_to_matrix(rotation)
    p, s = position, scale
    return vt.matrix(
        r[0, 0] * s[0], r[0, 1] * s[1], r[0, 2] * s[2], p[0],
        r[1, 0] * s[0], r[1, 1] * s[1], r[1, 2] * s[2], p[1],
        r[2, 0] * s[0], r[2, 1] * s[1], r[2, 2] * s[2], p[2],
        0.0, 0.0, 0.0, 1.0,
        shape=(4, 4),
    )  # fmt: skip


@func
def transform_decompose(m: Any):
    """Translation, rotation and per-axis scale of a 4x4 matrix built by ``transform_compose``."""
    p = vt.vector(m[0, 3], m[1, 3], m[2, 3])
    c0 = vt.vector(m[0, 0], m[1, 0], m[2, 0])
    c1 = vt.vector(m[0, 1], m[1, 1], m[2, 1])
    c2 = vt.vector(m[0, 2], m[1, 2], m[2, 2])
    s = vt.vector(vb.length(c0), vb.length(c1), vb.length(c2))
    r = vt.matrix(
        c0[0] / s[0], c1[0] / s[1], c2[0] / s[2],
        c0[1] / s[0], c1[1] / s[1], c2[1] / s[2],
        c0[2] / s[0], c1[2] / s[1], c2[2] / s[2],
        shape=(3, 3),
    )  # fmt: skip
    return p, vb.quat_from_matrix(r), s


@func
def _axis_quat(q: Any, axis: int, angle: Any):
    r = type(q)(0.0, 0.0, 0.0, sb.cos(angle * 0.5))
    r[axis] = sb.sin(angle * 0.5)
    return r


@func
def quat_from_euler(e: Any, i: int, j: int, k: int):
    """Rotation of Euler angles ``e`` (``e[a]`` about axis a) applied about axes i, then j, then k."""
    q = vb.quat_from_axis_angle(e, e[0] * 0.0)  # the identity, in e's precision
    return _axis_quat(q, k, e[k]) * _axis_quat(q, j, e[j]) * _axis_quat(q, i, e[i])


@func
def quat_to_euler(q: Any, i: int, j: int, k: int):
    """Euler angles of ``q`` for the axis order (i, j, k), inverse of ``quat_from_euler``
    (i, j, k distinct; i == k gives proper Euler angles)."""
    proper = i == k
    kk = k
    if proper:
        kk = 3 - i - j
    sign = type(q.w)((i - j) * (j - kk) * (kk - i) / 2)
    a = q.w
    b = q[i]
    c = q[j]
    d = q[kk] * sign
    if not proper:
        a = q.w - q[j]
        b = q[i] + q[kk] * sign
        c = q[j] + q.w
        d = q[kk] * sign - q[i]
    t2 = 2.0 * sb.atan2(sb.sqrt(c * c + d * d), sb.sqrt(a * a + b * b))
    tp = sb.atan2(b, a)
    tm = sb.atan2(d, c)
    t1 = tp - tm
    t3 = tp + tm
    if not proper:
        t3 = t3 * sign
        t2 = t2 - 1.5707963267948966
    out = vt.vector(t1 * 0.0, t1 * 0.0, t1 * 0.0)
    out[i] = t1
    out[j] = t2
    out[kk] = t3
    return out

