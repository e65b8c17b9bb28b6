"""Tile workloads (wp.launch_tiled): a tiled GEMM and a tiled MLP, forward and backward; written
against the Warp API like workloads.py, which lists them in its SECTIONS. A NumPy row gives the
machine's BLAS speed on the same GEMM."""

# No `from __future__ import annotations`: kernel annotations must be evaluated where `wp` is bound.
import numpy as np

GEMM = 512  # M = N = K
MLP_BATCH = 4096
MLP_WIDTH = 64
MLP_ROWS = 64  # batch rows per block


def _tile_kernels(wp):
    TM = wp.constant(64)
    TN = wp.constant(64)
    TK = wp.constant(64)
    F = wp.constant(MLP_WIDTH)
    BT = wp.constant(MLP_ROWS)

    @wp.kernel
    def tile_gemm(a: wp.array2d(dtype=float), b: wp.array2d(dtype=float), c: wp.array2d(dtype=float)):
        i, j = wp.tid()
        acc = wp.tile_zeros(shape=(TM, TN), dtype=float)
        for k in range(a.shape[1] // TK):
            ta = wp.tile_load(a, shape=(TM, TK), offset=(i * TM, k * TK))
            tb = wp.tile_load(b, shape=(TK, TN), offset=(k * TK, j * TN))
            wp.tile_matmul(ta, tb, acc)
        wp.tile_store(c, acc, offset=(i * TM, j * TN))

    @wp.kernel
    def tile_mlp(
        x: wp.array2d(dtype=float),
        w1: wp.array2d(dtype=float),
        w2: wp.array2d(dtype=float),
        w3: wp.array2d(dtype=float),
        out: wp.array2d(dtype=float),
    ):
        i = wp.tid()
        h = wp.tile_load(x, shape=(BT, F), offset=(i * BT, 0))
        h = wp.tile_map(wp.tanh, wp.tile_matmul(h, wp.tile_load(w1, shape=(F, F))))
        h = wp.tile_map(wp.tanh, wp.tile_matmul(h, wp.tile_load(w2, shape=(F, F))))
        wp.tile_store(out, wp.tile_matmul(h, wp.tile_load(w3, shape=(F, 1))), offset=(i * BT, 0))

    return {"tile_gemm": tile_gemm, "tile_mlp": tile_mlp}


def tile_section(wp, device, sync, Workload, kernels):
    """GEMM 512^3 float32 in 64x64 output tiles, and the MLP forward / backward."""
    k = kernels(wp, _tile_kernels)
    rng = np.random.default_rng(5)
    a_np = rng.random((GEMM, GEMM), dtype=np.float32)
    b_np = rng.random((GEMM, GEMM), dtype=np.float32)
    a, b = wp.array(a_np, device=device), wp.array(b_np, device=device)
    c = wp.zeros((GEMM, GEMM), dtype=float, device=device)

    def gemm():
        wp.launch_tiled(k.tile_gemm, dim=(GEMM // 64, GEMM // 64), inputs=[a, b, c], block_dim=64, device=device)
        sync()

    scale = 1.0 / np.sqrt(MLP_WIDTH)
    x = wp.array(rng.standard_normal((MLP_BATCH, MLP_WIDTH)).astype(np.float32), device=device, requires_grad=True)
    ws = [
        wp.array((rng.standard_normal(s) * scale).astype(np.float32), device=device, requires_grad=True)
        for s in ((MLP_WIDTH, MLP_WIDTH), (MLP_WIDTH, MLP_WIDTH), (MLP_WIDTH, 1))
    ]
    out = wp.zeros((MLP_BATCH, 1), dtype=float, device=device, requires_grad=True)
    tape = [None]

    def mlp_forward():
        wp.launch_tiled(k.tile_mlp, dim=MLP_BATCH // MLP_ROWS, inputs=[x, *ws, out], block_dim=64, device=device)
        sync()

    def backward_prepare():
        t = wp.Tape()
        with t:
            wp.launch_tiled(k.tile_mlp, dim=MLP_BATCH // MLP_ROWS, inputs=[x, *ws, out], block_dim=64, device=device)
        for arr in (x, *ws):
            arr.grad.zero_()
        out.grad = wp.ones_like(out)
        tape[0] = t
        sync()

    def mlp_backward():
        tape[0].backward()
        sync()

    flops = 2 * GEMM**3
    return [
        Workload(
            "tile GEMM 512^3 f32",
            f"wp.tile_matmul over 64x64x64 tiles of two 512x512 matrices ({flops / 1e9:.2f} GFLOP)",
            gemm,
            check=lambda: float(c.numpy().astype(np.float64).sum()),
        ),
        Workload(
            "tile MLP 4096, 64-64-64-1 fwd",
            "tanh MLP in 64-row tiles: three tile_matmul + tile_map per block",
            mlp_forward,
            check=lambda: float(out.numpy().astype(np.float64).sum()),
        ),
        Workload(
            "tile MLP backward",
            "the taped MLP's backward pass (weight gradients accumulated from every block)",
            mlp_backward,
            prepare=backward_prepare,
            check=lambda: float(ws[0].grad.numpy().astype(np.float64).sum()),
        ),
    ]


def numpy_gemm_section(wp, device, sync, Workload, kernels):
    """NumPy's BLAS on the same GEMM: the machine's reference speed."""
    rng = np.random.default_rng(5)
    a = rng.random((GEMM, GEMM), dtype=np.float32)
    b = rng.random((GEMM, GEMM), dtype=np.float32)
    return [Workload("numpy GEMM 512^3 f32", "a @ b with NumPy's BLAS, same matrices", lambda: a @ b)]


ROWS = ("tile GEMM 512^3 f32", "tile MLP 4096, 64-64-64-1 fwd", "tile MLP backward")
NUMPY_ROWS = ("numpy GEMM 512^3 f32",)
