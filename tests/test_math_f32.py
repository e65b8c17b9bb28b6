"""float32 math that the CPU build computes itself (native/math_f32.h): ``wp.tanh`` is correctly
rounded (float64 tanh rounded to float32), keeps the IEEE special values, and gives the same bits
in a per-thread kernel, in a tile map and in the adjoint that reads it."""

import numpy as np
import pytest

import weft as wp

pytestmark = pytest.mark.fixed_device("the CPU's own float32 tanh (CUDA keeps its tanhf)")

T = wp.constant(64)


@wp.kernel
def tanh_each(x: wp.array(dtype=float), y: wp.array(dtype=float)):
    i = wp.tid()
    y[i] = wp.tanh(x[i])


@wp.kernel
def tanh_tiles(x: wp.array(dtype=float), y: wp.array(dtype=float)):
    i = wp.tid()
    t = wp.tile_load(x, shape=(T,), offset=(i * T,))
    wp.tile_store(y, wp.tile_map(wp.tanh, t), offset=(i * T,))


def _sample():
    """Every 61st float32 from 2^-40 to 12 (past where tanh rounds to 1), both signs, and the
    special values."""
    lo, hi = np.float32(2.0**-40).view(np.uint32), np.float32(12.0).view(np.uint32)
    x = np.arange(lo, hi, 61, dtype=np.uint32).view(np.float32)
    special = np.array([0.0, -0.0, np.inf, -np.inf, np.nan, 1e-45, -1e-45, 3e38, 0.25, 9.0, 9.02, 20.0], np.float32)
    x = np.concatenate([x, -x, special])
    pad = (-len(x)) % 64
    return np.concatenate([x, np.zeros(pad, np.float32)])


def _run(kernel, x, tiled):
    xa, ya = wp.array(x), wp.zeros(len(x), dtype=float)
    if tiled:
        wp.launch_tiled(kernel, dim=len(x) // 64, inputs=[xa, ya], block_dim=64)
    else:
        wp.launch(kernel, dim=len(x), inputs=[xa, ya])
    return ya.numpy()


def test_tanh_is_correctly_rounded_and_keeps_special_values():
    x = _sample()
    y = _run(tanh_each, x, tiled=False)
    ref = np.tanh(x.astype(np.float64)).astype(np.float32)
    finite = ~np.isnan(x)
    np.testing.assert_array_equal(y[finite], ref[finite])  # bit for bit
    assert np.isnan(y[np.isnan(x)]).all()
    zeros = x == 0.0
    np.testing.assert_array_equal(np.signbit(y[zeros]), np.signbit(x[zeros]))  # tanh(-0) = -0
    assert y[x == np.inf][0] == 1.0 and y[x == -np.inf][0] == -1.0


def test_tile_map_and_per_thread_tanh_give_the_same_bits():
    x = _sample()
    np.testing.assert_array_equal(_run(tanh_tiles, x, tiled=True).view(np.uint32), _run(tanh_each, x, tiled=False).view(np.uint32))


def test_tanh_gradient_is_one_minus_the_square_of_the_value():
    x = np.linspace(-4.0, 4.0, 257, dtype=np.float32)
    for kernel, tiled in ((tanh_each, False), (tanh_tiles, True)):
        xs = np.concatenate([x, np.zeros((-len(x)) % 64, np.float32)])
        xa = wp.array(xs, requires_grad=True)
        ya = wp.zeros(len(xs), dtype=float, requires_grad=True)
        with wp.Tape() as tape:
            if tiled:
                wp.launch_tiled(kernel, dim=len(xs) // 64, inputs=[xa, ya], block_dim=64)
            else:
                wp.launch(kernel, dim=len(xs), inputs=[xa, ya])
        tape.backward(grads={ya: wp.ones_like(ya)})
        y = np.tanh(xs.astype(np.float64))
        np.testing.assert_allclose(xa.grad.numpy(), 1.0 - y * y, rtol=1e-6, atol=1e-7)
