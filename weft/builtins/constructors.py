"""Public constructor-like functions for composite values (``wp.identity``, ``wp.quat_identity``,
``wp.transform_identity``, ``wp.matrix_from_rows/cols``) and output-parameter builtins
(``wp.svd3``, ``wp.qr3``, ``wp.eig3``, ``wp.quat_to_axis_angle``).

In Python they compute values; inside kernels the frontend lowers calls to them specially
(codegen/special_calls.py), matching them by identity.
"""

from __future__ import annotations

import numpy as np

from .. import types as wt
from .. import vector_types as vt
from .registry import builtin, composite_var, p, result_rule

_Q = composite_var("Q", "quaternion", float_only=True)
_FM33 = composite_var("M", "matrix", float_only=True, shape=(3, 3))
_FM22 = composite_var("M", "matrix", float_only=True, shape=(2, 2))


def _dtype(dtype):
    return wt.type_from_annotation(dtype) or dtype


def identity(n: int = 3, dtype=float):
    """The n x n identity matrix."""
    return vt.matrix((n, n), _dtype(dtype))(*np.eye(n).ravel().tolist())


def quat_identity(dtype=float):
    """The identity rotation (0, 0, 0, 1)."""
    return vt.quaternion(_dtype(dtype))(0.0, 0.0, 0.0, 1.0)


def transform_identity(dtype=float):
    """The identity transform (zero translation, identity rotation)."""
    return vt.transformation(_dtype(dtype))(0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 1.0)


def matrix_from_rows(*rows):
    """A matrix whose i-th row is the i-th vector."""
    a = np.array([list(r) for r in rows], dtype=np.float64)
    return vt.matrix(a.shape, rows[0]._scalar)(*a.ravel().tolist())


def matrix_from_cols(*cols):
    """A matrix whose i-th column is the i-th vector."""
    a = np.array([list(c) for c in cols], dtype=np.float64).T
    return vt.matrix(a.shape, cols[0]._scalar)(*a.ravel().tolist())


def transform_set_translation(t, p):
    """Set the translation of transform ``t`` in place."""
    t.p = p


def transform_set_rotation(t, q):
    """Set the rotation of transform ``t`` in place."""
    t.q = q


def _tuple_of(*makers):
    def rule(ts):
        return wt.TupleType([m(ts) for m in makers])

    return result_rule("a tuple (" + ", ".join(getattr(m, "doc", "?") for m in makers) + ")", rule)


def _m33(ts):
    return vt.matrix((3, 3), ts[0]._scalar)



def _m22(ts):
    return vt.matrix((2, 2), ts[0]._scalar)


def _v2(ts):
    return vt.vector(2, ts[0]._scalar)


def _v3(ts):
    return vt.vector(3, ts[0]._scalar)


def _scalar(ts):
    return ts[0]._scalar


result_rule("a 3x3 matrix", _m33)
result_rule("a 2x2 matrix", _m22)
result_rule("a 2-vector", _v2)
result_rule("a 3-vector", _v3)
result_rule("a scalar", _scalar)


# Output-parameter builtins: in kernels ``wp.svd3(A, U, sigma, V)`` assigns U, sigma and V.
# Their registry entries return a tuple of the outputs (C++ returns weft::tuple_t).
svd3 = builtin("svd3", "Singular value decomposition A = U diag(sigma) V^T (outputs U, sigma, V)", "linalg")
svd3.add(p("A", _FM33), _tuple_of(_m33, _v3, _m33))
svd3.outputs = 3
svd2 = builtin("svd2", "Singular value decomposition of a 2x2 A = U diag(sigma) V^T (outputs U, sigma, V)", "linalg")
svd2.add(p("A", _FM22), _tuple_of(_m22, _v2, _m22))
svd2.outputs = 3
qr3 = builtin("qr3", "QR decomposition A = Q R (outputs Q, R)", "linalg")
qr3.add(p("A", _FM33), _tuple_of(_m33, _m33))
qr3.outputs = 2
eig3 = builtin("eig3", "Eigen-decomposition of a symmetric matrix (outputs Q, d)", "linalg")
eig3.add(p("A", _FM33), _tuple_of(_m33, _v3))
eig3.outputs = 2
quat_to_axis_angle = builtin("quat_to_axis_angle", "Axis and angle of a rotation (outputs axis, angle)", "quaternion")
quat_to_axis_angle.add(p("q", _Q), _tuple_of(_v3, _scalar))
quat_to_axis_angle.outputs = 2
