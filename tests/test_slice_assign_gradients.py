"""Gradients through matrix slice assignments that overwrite earlier ones: an overwritten component
passes no gradient to the value it held (Warp's tests expect it to), checked against central
differences."""

import numpy as np

from fd_check import tape_vs_fd

import weft as wp

mat44d = wp.types.matrix((4, 4), wp.float64)
vec4d = wp.types.vector(4, wp.float64)


@wp.kernel
def k_overwritten_slices(x: wp.array(dtype=wp.float64), out: wp.array(dtype=wp.float64)):
    a = wp.vector(x[0], x[1], length=2, dtype=wp.float64)
    b = wp.matrix(x[2], x[3], x[4], x[5], x[6], x[7], shape=(2, 3), dtype=wp.float64)
    z = mat44d()
    z[0, :2] = a  # z[0, 1] is overwritten below: a[1] reaches z only through the later updates
    z[:2, 1:] = b
    z[:2, 3] += a[:2]
    z[1:-1, :2] += b[::-1, :-1]
    z[2:, 3] -= a[0:]
    z[3:, -1:] -= b[:1, :1]
    for r in range(4):
        for c in range(4):
            out[r * 4 + c] = z[r, c] * wp.float64(r + 2 * c + 1)


def test_overwritten_slice_components_pass_no_gradient():
    rng = np.random.default_rng(11)
    x = rng.uniform(-1.0, 1.0, 8)
    w = np.ones(16)
    _, grad = tape_vs_fd(k_overwritten_slices, x, (16,), rng, dim=1, w=w)
    weights = np.array([r + 2 * c + 1 for r in range(4) for c in range(4)], dtype=np.float64).reshape(4, 4)
    # a[1] reaches z[1, 3] (+) and z[3, 3] (-) only: its z[0, 1] was overwritten by b[0, 0]
    assert np.isclose(grad[1], weights[1, 3] - weights[3, 3])
