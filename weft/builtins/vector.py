"""Vector, matrix, quaternion, transform and spatial builtins: overloads and type rules.

The C++ lives in native/vec.h, mat.h, quat.h, transform.h, spatial.h and linalg.h. Operators
(add, mul, ...) gain composite overloads on the builtins declared in scalar.py.
"""

from __future__ import annotations

import numpy as np

from .. import types as wt
from .. import vector_types as vt
from . import scalar as sb
from .registry import AnyOf, AnyScalar, DTypeOf, builtin, composite_var, p, registry, result_rule

V = composite_var("V", "vector")
V2 = composite_var("V2", "vector")
FV = composite_var("V", "vector", float_only=True)
FV2 = composite_var("V2", "vector", float_only=True)
FV3 = composite_var("V", "vector", float_only=True, length=3)
FV6 = composite_var("V", "vector", float_only=True, length=6)
M = composite_var("M", "matrix")
M2 = composite_var("M2", "matrix")
FM = composite_var("M", "matrix", float_only=True)
FM33 = composite_var("M", "matrix", float_only=True, shape=(3, 3))
FM44 = composite_var("M", "matrix", float_only=True, shape=(4, 4))
Q = composite_var("Q", "quaternion", float_only=True)
X = composite_var("X", "transform", float_only=True)
C = composite_var("C", "vector", "matrix", "quaternion", "transform")
FC = composite_var("C", "vector", "matrix", "quaternion", "transform", float_only=True)
Any = AnyOf("any value", lambda t: True)


def _np(x):
    return np.asarray(x, dtype=np.float64).reshape(getattr(type(x), "_shape", np.shape(x)))


def _vec(a, like):
    a = np.asarray(a, dtype=np.float64)
    cls = vt.vector(a.size, like._scalar) if a.ndim == 1 else vt.matrix(a.shape, like._scalar)
    return cls(*a.ravel().tolist())


def _quat_mul(a, b):
    x1, y1, z1, w1 = a
    x2, y2, z2, w2 = b
    return np.array(
        [
            w1 * x2 + x1 * w2 + y1 * z2 - z1 * y2,
            w1 * y2 - x1 * z2 + y1 * w2 + z1 * x2,
            w1 * z2 + x1 * y2 - y1 * x2 + z1 * w2,
            w1 * w2 - x1 * x2 - y1 * y2 - z1 * z2,
        ]
    )


def _rotate(q, v):
    u, w = q[:3], q[3]
    return v * (2.0 * w * w - 1.0) + np.cross(u, v) * 2.0 * w + u * (2.0 * np.dot(u, v))


def _conj(q):
    return np.array([-q[0], -q[1], -q[2], q[3]])


def _quat_to_matrix(q):
    return np.stack([_rotate(q, e) for e in np.eye(3)], axis=1)


def _normalize(a):
    n = np.linalg.norm(a)
    return a / n if n > 0 else a * 0.0


def _square(t) -> bool:
    return t._shape[0] == t._shape[1]


FMsq = composite_var("M", "matrix", float_only=True)
FMsq.accepts = lambda t, _base=FMsq.accepts: _base(t) and _square(t)  # square float matrices
Msq = composite_var("M", "matrix")
Msq.accepts = lambda t, _base=Msq.accepts: _base(t) and _square(t)  # square matrices of any scalar
FMsq.doc = "a square matrix type of floating-point components"
Msq.doc = "a square matrix type of any scalar components"


def scalar_of(k=0):
    return result_rule(f"the scalar type of {{{k}}}", lambda ts: ts[k]._scalar)


def same(k=0):
    return result_rule(f"the type of {{{k}}}", lambda ts: ts[k])


def vec3_of(k=0):
    return result_rule(f"a 3-vector of {{{k}}}'s scalar type", lambda ts: vt.vector(3, ts[k]._scalar))


def quat_of(k=0):
    return result_rule(f"a quaternion of {{{k}}}'s scalar type", lambda ts: vt.quaternion(ts[k]._scalar))


def mat33_of(k=0):
    return result_rule(f"a 3x3 matrix of {{{k}}}'s scalar type", lambda ts: vt.matrix((3, 3), ts[k]._scalar))


def _matvec(ts):
    m, v = ts
    return vt.vector(m._shape[0], m._scalar) if m._shape[1] == v._length and m._scalar is v._scalar else None

result_rule("a vector of {0}'s row count", _matvec)


def _vecmat(ts):
    v, m = ts
    return vt.vector(m._shape[1], m._scalar) if m._shape[0] == v._length and m._scalar is v._scalar else None

result_rule("a vector of {1}'s column count", _vecmat)


def _matmat(ts):
    a, b = ts
    return (
        vt.matrix((a._shape[0], b._shape[1]), a._scalar)
        if a._shape[1] == b._shape[0] and a._scalar is b._scalar
        else None
    )

result_rule("a matrix of {0}'s rows and {1}'s columns", _matmat)


def _outer(ts):
    a, b = ts
    return vt.matrix((a._length, b._length), a._scalar) if a._scalar is b._scalar else None

result_rule('a matrix of len({0}) rows and len({1}) columns', _outer)


def _transpose(ts):
    return vt.matrix((ts[0]._shape[1], ts[0]._shape[0]), ts[0]._scalar)

result_rule("{0}'s type with rows and columns swapped", _transpose)


def _diag(ts):
    return vt.matrix((ts[0]._length, ts[0]._length), ts[0]._scalar)

result_rule('a square matrix of len({0}) rows', _diag)


def _get_diag(ts):
    return vt.vector(min(ts[0]._shape), ts[0]._scalar)

result_rule("a vector of min({0}'s rows, columns) components", _get_diag)


# --- operators -------------------------------------------------------------------------------
for _T in (V, M, Q, X):
    sb.add.add(p("a", _T, "b", _T), _T)
    sb.sub.add(p("a", _T, "b", _T), _T)
for _T in (V, M, Q):
    sb.neg.add(p("x", _T), _T)
    sb.pos.add(p("x", _T), _T)
    sb.mul.add(p("a", _T, "b", DTypeOf(_T.name)), _T)
    sb.mul.add(p("a", DTypeOf(_T.name), "b", _T), _T)
    sb.div.add(p("a", _T, "b", DTypeOf(_T.name)), _T)
sb.div.add(p("a", DTypeOf("V"), "b", V), V)
sb.div_approx.add(p("a", FV, "b", DTypeOf("V")), FV, symbol="div")
sb.div_approx.add(p("a", DTypeOf("V"), "b", FV), FV, symbol="div")
sb.div_approx.add(p("a", FM, "b", DTypeOf("M")), FM, symbol="div")
sb.div.add(p("a", DTypeOf("M"), "b", M), M)
sb.mod.add(p("a", V, "b", V), V)
sb.sign.add(p("x", V), V)
sb.mul.add(p("a", M, "b", V), _matvec)
sb.mul.add(p("a", V, "b", M), _vecmat)
sb.mul.add(p("a", M, "b", M2), _matmat)
sb.mul.add(p("a", Q, "b", Q), Q)
sb.mul.add(p("a", X, "b", X), X, symbol="transform_multiply")
sb.mul.add(p("a", X, "b", DTypeOf("X")), X)
sb.mul.add(p("a", DTypeOf("X"), "b", X), X)
sb.div.add(p("a", DTypeOf("Q"), "b", Q), Q)
sb.lerp.add(p("a", Q, "b", Q, "t", DTypeOf("Q")), Q)
sb.lerp.add(p("a", FV, "b", FV, "t", DTypeOf("V")), FV)
sb.lerp.add(p("a", FM, "b", FM, "t", DTypeOf("M")), FM)
sb.lerp.add(p("a", X, "b", X, "t", DTypeOf("X")), X)
for _name in ("eq", "ne"):
    sb._cmp[_name].add(p("a", C, "b", C), wt.bool, symbol="cmp_" + _name, differentiable=False)
sb.where.add(p("cond", AnyScalar, "a", C, "b", C), C)
sb.select.add(p("cond", AnyScalar, "a", C, "b", C), C)
# structs too (the generated struct code has their adjoints: struct.py, _SELECT_ADJOINTS)
_S = composite_var("S", "struct")
sb.where.add(p("cond", AnyScalar, "a", _S, "b", _S), _S)
sb.select.add(p("cond", AnyScalar, "a", _S, "b", _S), _S)

# bitwise operators on integer vectors and matrices, component by component
IV = composite_var("V", "vector", int_only=True)
IM = composite_var("M", "matrix", int_only=True)
for _T in (IV, IM):
    for _op in (sb.bit_and, sb.bit_or, sb.bit_xor, sb.lshift, sb.rshift):
        _op.add(p("a", _T, "b", _T), _T, differentiable=False)
    sb.invert.add(p("a", _T), _T, differentiable=False)

# --- elementwise and reductions --------------------------------------------------------------
sb.min.add(p("a", V, "b", V), V)
sb.max.add(p("a", V, "b", V), V)
sb.min.add(p("a", V), scalar_of())
sb.max.add(p("a", V), scalar_of())
sb.abs.add(p("x", V), V)
for _classify in (sb.isnan, sb.isinf, sb.isfinite):  # any NaN / any infinite / all finite
    _classify.add(p("x", FC), wt.bool, differentiable=False)
sb.clamp.add(p("x", V, "a", V, "b", V), V)

argmin = builtin("argmin", "Index of the smallest component", "vector math").add(
    p("a", V), wt.uint32, differentiable=False
)
argmax = builtin("argmax", "Index of the largest component", "vector math").add(
    p("a", V), wt.uint32, differentiable=False
)

dot = (
    builtin("dot", "Dot product", "vector math", lambda a, b: float(np.dot(_np(a).ravel(), _np(b).ravel())))
    .add(p("a", V, "b", V), scalar_of())
    .add(p("a", Q, "b", Q), scalar_of())
)
cross = builtin(
    "cross", "Cross product of two 3-vectors", "vector math", lambda a, b: _vec(np.cross(_np(a), _np(b)), a)
).add(p("a", FV3, "b", FV3), FV3)
length = (
    builtin("length", "Euclidean length", "vector math", lambda a: float(np.linalg.norm(_np(a))))
    .add(p("a", FV), scalar_of())
    .add(p("a", Q), scalar_of())
)
length_sq = (
    builtin(
        "length_sq", "Squared Euclidean length", "vector math", lambda a: float(np.dot(_np(a).ravel(), _np(a).ravel()))
    )
    .add(p("a", V), scalar_of())
    .add(p("a", Q), scalar_of())
)
normalize = (
    builtin(
        "normalize", "a / length(a) (zero stays zero)", "vector math", lambda a: type(a)(*_normalize(_np(a)).tolist())
    )
    .add(p("a", FV), FV)
    .add(p("a", Q), Q)
)
norm_l1 = builtin("norm_l1", "Sum of absolute components", "vector math").add(p("a", FV), scalar_of())
norm_l2 = builtin("norm_l2", "Euclidean norm", "vector math").add(p("a", FV), scalar_of())
norm_huber = builtin("norm_huber", "Huber norm with threshold delta", "vector math").add(
    p("v", FV, "delta", DTypeOf("V")), scalar_of()
)
norm_pseudo_huber = builtin("norm_pseudo_huber", "Pseudo-Huber norm with threshold delta", "vector math").add(
    p("v", FV, "delta", DTypeOf("V")), scalar_of()
)
smooth_normalize = builtin("smooth_normalize", "Normalization smoothed near zero by delta", "vector math").add(
    p("v", FV, "delta", DTypeOf("V")), FV
)
for _b in (norm_huber, norm_pseudo_huber, smooth_normalize):
    _b.defaults = {"delta": 1.0}  # as in Warp
outer = builtin("outer", "Outer product a b^T", "vector math", lambda a, b: _vec(np.outer(_np(a), _np(b)), a)).add(
    p("a", V, "b", V2), _outer
)
cw_mul = (
    builtin("cw_mul", "Component-wise product", "vector math", lambda a, b: _vec(_np(a) * _np(b), a))
    .add(p("a", V, "b", V), V)
    .add(p("a", M, "b", M), M)
)
cw_div = (
    builtin("cw_div", "Component-wise quotient", "vector math", lambda a, b: _vec(_np(a) / _np(b), a))
    .add(p("a", V, "b", V), V)
    .add(p("a", M, "b", M), M)
)

# --- matrices --------------------------------------------------------------------------------
transpose = builtin("transpose", "Matrix transpose", "matrix math", lambda m: _vec(_np(m).T, m)).add(
    p("a", M), _transpose
)
inverse = builtin(
    "inverse", "Inverse of a 2x2, 3x3 or 4x4 matrix", "matrix math", lambda m: _vec(np.linalg.inv(_np(m)), m)
).add(p("a", FMsq), FMsq)
inverse_approx = builtin(
    "inverse_approx",
    "Inverse of a 2x2, 3x3 or 4x4 matrix, allowing faster approximate arithmetic on GPUs (exact on the CPU)",
    "matrix math",
    lambda m: _vec(np.linalg.inv(_np(m)), m),
).add(p("a", FMsq), FMsq, symbol="inverse")
determinant = builtin("determinant", "Determinant", "matrix math", lambda m: float(np.linalg.det(_np(m)))).add(
    p("a", FMsq), scalar_of()
)
trace = builtin("trace", "Sum of the diagonal", "matrix math", lambda m: float(np.trace(_np(m)))).add(
    p("a", Msq), scalar_of()
)
diag = builtin(
    "diag", "Square matrix with the vector on its diagonal", "matrix math", lambda d: _vec(np.diag(_np(d)), d)
).add(p("d", FV), _diag)
get_diag = builtin(
    "get_diag", "The diagonal of a matrix as a vector", "matrix math", lambda m: _vec(np.diag(_np(m)), m)
).add(p("a", FM), _get_diag)
skew = builtin(
    "skew", "The cross-product matrix of a 3-vector", "matrix math", lambda a: _vec(np.cross(np.eye(3), _np(a)), a)
).add(p("a", FV3), mat33_of())
ddot = builtin("ddot", "Double contraction sum(a * b)", "matrix math", lambda a, b: float(np.sum(_np(a) * _np(b)))).add(
    p("a", M, "b", M), scalar_of()
)

# --- quaternions ----------------------------------------------------------------------------
quat_from_axis_angle = builtin(
    "quat_from_axis_angle",
    "Rotation of angle about axis",
    "quaternion",
    lambda axis, angle: vt.quaternion(axis._scalar)(*(list(_np(axis) * np.sin(angle * 0.5)) + [np.cos(angle * 0.5)])),
).add(p("axis", FV3, "angle", DTypeOf("V")), quat_of())
quat_rotate = builtin(
    "quat_rotate", "Rotate a vector by a quaternion", "quaternion", lambda q, v: _vec(_rotate(_np(q), _np(v)), v)
).add(p("q", Q, "p", FV3), vec3_of())
quat_rotate_inv = builtin(
    "quat_rotate_inv",
    "Rotate a vector by the inverse quaternion",
    "quaternion",
    lambda q, v: _vec(_rotate(_conj(_np(q)), _np(v)), v),
).add(p("q", Q, "p", FV3), vec3_of())
quat_inverse = builtin(
    "quat_inverse", "Conjugate of a unit quaternion", "quaternion", lambda q: type(q)(*_conj(_np(q)).tolist())
).add(p("q", Q), Q)
quat_to_matrix = builtin(
    "quat_to_matrix", "3x3 rotation matrix of a quaternion", "quaternion", lambda q: _vec(_quat_to_matrix(_np(q)), q)
).add(p("q", Q), mat33_of())
quat_from_matrix = (
    builtin("quat_from_matrix", "Quaternion of a rotation matrix", "quaternion")
    .add(p("m", FM33), quat_of())
    .add(p("m", FM44), quat_of())
)
quat_rpy = builtin("quat_rpy", "Quaternion from roll, pitch, yaw", "quaternion").add(
    p("roll", sb.Float, "pitch", sb.Float, "yaw", sb.Float), result_rule("a quaternion of {0}'s type", lambda ts: vt.quaternion(ts[0]))
)
quat_slerp = builtin("quat_slerp", "Spherical interpolation", "quaternion").add(
    p("q0", Q, "q1", Q, "t", DTypeOf("Q")), Q
)

# --- transforms -----------------------------------------------------------------------------
transform_point = (
    builtin(
        "transform_point",
        "Apply a transform to a point",
        "transform",
        lambda t, p: _vec(_rotate(_np(t)[3:], _np(p)) + _np(t)[:3], p),
    )
    .add(p("xform", X, "point", FV3), vec3_of())
    .add(p("mat", FM44, "point", FV3), vec3_of())
)
transform_vector = (
    builtin(
        "transform_vector",
        "Apply a transform's rotation to a vector",
        "transform",
        lambda t, v: _vec(_rotate(_np(t)[3:], _np(v)), v),
    )
    .add(p("xform", X, "vec", FV3), vec3_of())
    .add(p("mat", FM44, "vec", FV3), vec3_of())
)
transform_multiply = builtin(
    "transform_multiply",
    "Compose two transforms",
    "transform",
    lambda a, b: type(a)(
        *(list(_np(a)[:3] + _rotate(_np(a)[3:], _np(b)[:3])) + list(_quat_mul(_np(a)[3:], _np(b)[3:])))
    ),
).add(p("a", X, "b", X), X)
transform_inverse = builtin(
    "transform_inverse",
    "Inverse transform",
    "transform",
    lambda t: type(t)(*(list(-_rotate(_conj(_np(t)[3:]), _np(t)[:3])) + list(_conj(_np(t)[3:])))),
).add(p("xform", X), X)
transform_get_translation = builtin(
    "transform_get_translation",
    "Translation part",
    "transform",
    lambda t: vt.vector(3, t._scalar)(*_np(t)[:3].tolist()),
).add(p("xform", X), vec3_of())
transform_get_rotation = builtin(
    "transform_get_rotation", "Rotation part", "transform", lambda t: vt.quaternion(t._scalar)(*_np(t)[3:].tolist())
).add(p("xform", X), quat_of())

# --- spatial vectors (6-vectors: angular part on top, linear part below) -------------------
spatial_cross = builtin("spatial_cross", "Spatial motion cross product", "spatial").add(p("a", FV6, "b", FV6), FV6)
spatial_cross_dual = builtin("spatial_cross_dual", "Spatial force cross product", "spatial").add(
    p("a", FV6, "b", FV6), FV6
)
spatial_dot = builtin("spatial_dot", "Dot product of spatial vectors", "spatial").add(
    p("a", FV6, "b", FV6), scalar_of()
)
spatial_adjoint = builtin("spatial_adjoint", "The 6x6 matrix [[R, 0], [S, R]]", "spatial").add(
    p("r", FM33, "s", FM33), result_rule("a 6x6 matrix of {0}'s scalar type", lambda ts: vt.matrix((6, 6), ts[0]._scalar))
)
spatial_top = builtin(
    "spatial_top", "The first three components", "spatial", lambda a: vt.vector(3, a._scalar)(*_np(a)[:3].tolist())
).add(p("a", FV6), vec3_of())
spatial_bottom = builtin(
    "spatial_bottom", "The last three components", "spatial", lambda a: vt.vector(3, a._scalar)(*_np(a)[3:].tolist())
).add(p("a", FV6), vec3_of())

sb.expect_eq.add(p("a", C, "b", C), None, differentiable=False, side_effect=True)
sb.expect_neq.add(p("a", C, "b", C), None, differentiable=False, side_effect=True)
sb.expect_near.add(p("a", FV, "b", FV, "tolerance", DTypeOf("V")), None, differentiable=False, side_effect=True)
sb.expect_near.add(p("a", FV, "b", FV), None, differentiable=False, side_effect=True)
sb.expect_near.add(p("a", FM, "b", FM, "tolerance", DTypeOf("M")), None, differentiable=False, side_effect=True)
sb.expect_near.add(p("a", FM, "b", FM), None, differentiable=False, side_effect=True)
sb.expect_near.add(p("a", Q, "b", Q, "tolerance", DTypeOf("Q")), None, differentiable=False, side_effect=True)
sb.expect_near.add(p("a", Q, "b", Q), None, differentiable=False, side_effect=True)

_ = registry

__all__ = sorted(
    name for name, obj in list(globals().items()) if type(obj).__name__ == "Builtin" and not name.startswith("_")
)
