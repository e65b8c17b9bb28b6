"""Tiles on a GPU: the tiled GEMM and MLP of benchmarks/tile_workloads.py on cuda:0 with their tiles
spread over 64 threads per block (native/tile/tile_cuda.h), next to one thread per block
(block_dim=1, the model before) and the CPU; results checked against NumPy, times in one run.

    python tools/gpu_tiles.py            (on a GPU machine; prints a table)
"""

import sys
import time

import numpy as np

sys.path.insert(0, "benchmarks")
import tile_workloads as tw  # noqa: E402

import weft as wp  # noqa: E402


class _Kernels:
    def __init__(self, d):
        self.__dict__.update(d)


def _best(fn, reps=5):
    fn()
    times = []
    for _ in range(reps):
        t = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t)
    return min(times)


def main():
    k = _Kernels(tw._tile_kernels(wp))
    rng = np.random.default_rng(1)
    n = tw.GEMM
    a_np = rng.random((n, n), dtype=np.float32)
    b_np = rng.random((n, n), dtype=np.float32)
    ref = a_np.astype(np.float64) @ b_np
    print(f"{'workload':14} {'device':7} {'block':>5} {'ms':>9} {'GFLOP/s':>8} {'rel err':>9}", flush=True)
    for device, block_dim in (("cuda:0", 64), ("cpu", 64), ("cuda:0", 1)):
        if True:
            a, b = wp.array(a_np, device=device), wp.array(b_np, device=device)
            c = wp.zeros((n, n), dtype=float, device=device)

            def gemm():
                wp.launch_tiled(k.tile_gemm, dim=(n // 64, n // 64), inputs=[a, b, c], block_dim=block_dim, device=device)
                wp.synchronize_device(device)

            t = _best(gemm)
            err = float(np.abs(c.numpy() - ref).max() / np.abs(ref).max())
            _row(f"gemm {n}^3", device, block_dim, t, 2 * n**3 / t / 1e9, err)

            x_np = rng.standard_normal((tw.MLP_BATCH, tw.MLP_WIDTH)).astype(np.float32)
            w_np = [(rng.standard_normal(s) / 8).astype(np.float32) for s in ((64, 64), (64, 64), (64, 1))]
            x = wp.array(x_np, device=device, requires_grad=True)
            ws = [wp.array(w, device=device, requires_grad=True) for w in w_np]
            out = wp.zeros((tw.MLP_BATCH, 1), dtype=float, device=device, requires_grad=True)
            tape = wp.Tape()

            def forward():
                wp.launch_tiled(k.tile_mlp, dim=tw.MLP_BATCH // 64, inputs=[x, *ws, out], block_dim=block_dim, device=device)
                wp.synchronize_device(device)

            tf = _best(forward)
            h = np.tanh(np.tanh(x_np @ w_np[0]) @ w_np[1])
            y = h @ w_np[2]
            ferr = float(np.abs(out.numpy() - y).max())
            with tape:
                wp.launch_tiled(k.tile_mlp, dim=tw.MLP_BATCH // 64, inputs=[x, *ws, out], block_dim=block_dim, device=device)

            def backward():
                for arr in (x, *ws):
                    arr.grad.zero_()
                tape.backward(grads={out: wp.ones_like(out)})
                wp.synchronize_device(device)

            _row("mlp forward", device, block_dim, tf, 0.0, ferr)
            if device != "cpu" and block_dim == 1:
                continue  # one thread per block: its backward frame (~340 KB a thread) exhausts the GPU's memory
            tb = _best(backward)
            g3 = h.sum(axis=0)[:, None]  # d sum(y) / d w3
            berr = float(np.abs(ws[2].grad.numpy() - g3).max() / np.abs(g3).max())
            _row("mlp backward", device, block_dim, tb, 0.0, berr)


def _row(name, device, bd, t, gf, err):
    print(f"{name:14} {device:7} {bd:5d} {t * 1e3:9.3f} {gf:8.1f} {err:9.2e}", flush=True)


if __name__ == "__main__":
    main()
