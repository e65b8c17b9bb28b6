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
def transform_to_matrix(t: Any):
    """The 4x4 homogeneous matrix of a rigid transform."""
    r = vb.quat_to_matrix(t.q)
    p = t.p
    return vt.matrix(
        r[0, 0], r[0, 1], r[0, 2], p[0],
        r[1, 0], r[1, 1], r[1, 2], p[1],
        r[2, 0], r[2, 1], r[2, 2], p[2],
        0.0, 0.0, 0.0, 1.0,
        shape=(4, 4),
    )  # fmt: skip


@func
def transform_from_matrix(m: Any):
    """The rigid transform of a 4x4 homogeneous matrix (its rotation part must be orthonormal)."""
    p = vt.vector(m[0, 3], m[1, 3], m[2, 3])
    return vt.transformation(p, vb.quat_from_matrix(m))
