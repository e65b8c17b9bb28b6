"""Tiles spread over a block's threads on CUDA (native/tile/tile_cuda.h, codegen/tile_cuda.py):
which kernels spread, what the CUDA renderer emits for them, the shared memory they need, that
they compile with NVRTC, and -- on a GPU -- that spread kernels give the CPU's numbers."""

import numpy as np
import pytest

import weft as wp
from weft.codegen.emit_cuda import CUDARenderer
from weft.codegen.tile_cuda import SharedMemory
from weft.runtime import cuda, nvrtc
from weft.runtime.launch import make_bounds
from weft.tile.types import TileType

T = 16
pytestmark = pytest.mark.fixed_device("builds for CUDA, and compares cuda:0 with the CPU where there is a GPU")


@wp.func
def soft(x: float):
    return x / (1.0 + wp.abs(x))


@wp.kernel
def k_spread(a: wp.array2d(dtype=float), b: wp.array2d(dtype=float), s: float, c: wp.array2d(dtype=float)):
    i, j = wp.tid()
    x = wp.tile_load(a, shape=(T, T), offset=(i * T, j * T))
    y = wp.tile_load(b, shape=(T, T), offset=(i * T, j * T))
    z = wp.tile_map(soft, wp.tile_matmul(x, y) * s) + wp.tile_transpose(y) * z_scale(x)
    wp.tile_store(c, z + wp.tile_ones(shape=(T, T), dtype=float) * wp.tile_max(z)[0], offset=(i * T, j * T))


@wp.func
def z_scale(x: wp.tile[float, T, T]):
    return wp.tile_sum(x)[0] * 0.01


@wp.kernel
def k_untile(a: wp.array(dtype=float), out: wp.array(dtype=float)):
    i = wp.tid()
    t = wp.tile(a[i])
    out[i] = wp.untile(t * 2.0)


@wp.kernel
def k_scalar_load(a: wp.array2d(dtype=float), s: wp.array(dtype=float), c: wp.array2d(dtype=float)):
    i = wp.tid()
    x = wp.tile_load(a, shape=(T, T), offset=(i * T, 0))
    wp.tile_store(c, x * s[0], offset=(i * T, 0))


@wp.kernel
def k_lane_index(a: wp.array2d(dtype=float), c: wp.array2d(dtype=float)):
    i, lane = wp.tid()
    x = wp.tile_load(a, shape=(T, T), offset=(i * T, 0))
    wp.tile_store(c, x, offset=(i * T, 0))


def _instance(kernel, n=2):
    a = wp.zeros((n * T, n * T), dtype=float)
    if kernel is k_spread:
        return wp.launch_tiled(kernel, dim=(n, n), inputs=[a, a, 1.0, a], block_dim=64, record_cmd=True)._inst
    return kernel.default_instance()


def test_which_kernels_spread_their_tiles():
    assert _instance(k_spread).spreads_tiles
    assert not k_untile.default_instance().spreads_tiles  # values differ between the threads
    assert not k_scalar_load.default_instance().spreads_tiles  # s[0] would be read by every thread
    inst = k_lane_index.default_instance()
    assert inst.spreads_tiles  # but the launch decides: the kernel reads the thread's index
    assert cuda.tile_lanes(inst, make_bounds([4, 64]), 64, False) == 1
    spread = _instance(k_spread)
    assert cuda.tile_lanes(spread, make_bounds([2, 2, 64]), 64, False) == 64
    assert cuda.tile_lanes(spread, make_bounds([2, 2, 1]), 1, False) == 1  # one thread per block
    assert cuda.tile_lanes(spread, make_bounds([2, 2, 32]), 64, False) == 1  # the last dimension is not the block


def test_the_cuda_renderer_spreads_or_serialises_each_operation():
    inst = _instance(k_spread)
    r = CUDARenderer()
    src = r.render_module([inst], inst.funcs)
    # spread implementations: loads, stores, products, element maps, sums
    for op in ("weft::tile_load<", "weft::tile_store(", "weft::tile_matmul(", "weft::tile_map(", "weft::tile_sum("):
        assert op in src
    # the others run on the block's first thread over whole tiles; written adjoints are marked
    assert "weft::tile_serial([&](auto&&... x) { return weft::full::tile_transpose(x...); }" in src
    assert "weft::full::adj_tile_max(x...); }" in src and "weft::tile_out(adj_" in src
    # the adjoint of s (captured by an element map) is summed over the block's threads
    assert "weft::tile_lane_sum(adj_" in src
    # shared memory: the product's operands (two 16x16 float tiles), then its adjoint's three
    assert r.tile_memory.fixed >= 3 * T * T * 4 and r.tile_memory.bytes_for(1) == 0
    assert r.tile_memory.bytes_for(64) >= 65 * 4


def test_shared_memory_of_products_sums_and_serial_operations():
    m = SharedMemory()
    f = TileType(wp.float32, (64, 64))
    m.local("tile_matmul", [f, f, f, wp.float32, wp.float32], adjoint=False)
    assert m.fixed == 2 * 64 * 64 * 4
    m.local("tile_matmul", [f, f, f, wp.float32, wp.float32], adjoint=True)
    assert m.fixed == 3 * 64 * 64 * 4
    m.local("tile_sum", [TileType(wp.vec3, (8,))], adjoint=False)
    assert m.per_lane == 12 and m.bytes_for(128) == max(m.fixed, 129 * 12)
    m = SharedMemory()
    m.serial([TileType(wp.float32, (3, 5)), wp.int32], [wp.float32], TileType(wp.float64, (5, 3)))
    assert m.fixed == 64 + 16 + 128  # a 3x5 float tile, a float adjoint slot, a 5x3 double result


needs_nvrtc = pytest.mark.skipif(not nvrtc.available(), reason="needs NVRTC (pip install nvidia-cuda-nvrtc)")


@needs_nvrtc
@pytest.mark.parametrize("lanes", [1, 64])
def test_spread_kernels_compile_for_cuda(lanes):
    inst = _instance(k_spread)
    build = inst.kernel.module.cuda_build([inst], 90, use_ptx=True, tile_lanes=lanes)
    assert f"{inst.symbol}_cuda_backward" in build.image.decode()
    assert (build.shared_bytes > 0) == (lanes > 1)


def _reference(device, block_dim, n=3):
    rng = np.random.default_rng(4)
    a_np = rng.standard_normal((n * T, n * T)).astype(np.float32)
    b_np = rng.standard_normal((n * T, n * T)).astype(np.float32)
    a = wp.array(a_np, device=device, requires_grad=True)
    b = wp.array(b_np, device=device, requires_grad=True)
    c = wp.zeros_like(a, requires_grad=True)
    tape = wp.Tape()
    with tape:
        wp.launch_tiled(k_spread, dim=(n, n), inputs=[a, b, 0.7, c], block_dim=block_dim, device=device)
    tape.backward(grads={c: wp.array(np.cos(a_np), device=device)})
    return c.numpy(), a.grad.numpy(), b.grad.numpy()


@pytest.mark.skipif(not wp.is_cuda_available(), reason="needs a GPU")
@pytest.mark.parametrize("block_dim", [32, 64, 128])
def test_spread_tiles_give_the_cpu_numbers_and_gradients(block_dim):
    want = _reference("cpu", block_dim)
    got = _reference("cuda:0", block_dim)
    for w, g in zip(want, got):
        np.testing.assert_allclose(g, w, rtol=2e-4, atol=2e-4)
