"""A first look at weft on a GPU: the devices found, one launch, one gradient, one copy each way.

    python tools/gpu_smoke.py [--device cuda:0]

Prints what it checks and exits non-zero on the first wrong number, so that a GPU session learns in
seconds whether the CUDA path runs at all before the longer checks (tools/gpu_check.sh) start.
"""

from __future__ import annotations

import argparse
import sys
import time

import numpy as np

import weft as wp


@wp.kernel
def saxpy(a: float, x: wp.array(dtype=float), y: wp.array(dtype=float), out: wp.array(dtype=float)):
    i = wp.tid()
    out[i] = a * x[i] + y[i]


@wp.kernel
def loss_of(x: wp.array(dtype=float), loss: wp.array(dtype=float)):
    i = wp.tid()
    wp.atomic_add(loss, 0, wp.sin(x[i]) * x[i])


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--device", default="cuda:0", help="the device to check (default cuda:0)")
    args = parser.parse_args(argv)

    print(f"weft {wp.__version__}; cuda available: {wp.is_cuda_available()}; devices: {wp.get_devices()}")
    dev = wp.get_device(args.device)
    if dev.is_cuda:
        print(
            f"{dev.alias}: {dev.name}, sm_{dev.arch}, {dev.sm_count} SMs, {dev.total_memory / 2**30:.1f} GiB; "
            f"kernels built as {dev.get_cuda_output_format()} for sm_{dev.get_cuda_compile_arch()}"
        )

    n = 1 << 20
    rng = np.random.default_rng(0)
    xs, ys = rng.standard_normal(n).astype(np.float32), rng.standard_normal(n).astype(np.float32)
    t0 = time.perf_counter()
    x = wp.array(xs, dtype=float, device=dev, requires_grad=True)
    y = wp.array(ys, dtype=float, device=dev)
    out = wp.zeros(n, dtype=float, device=dev)
    wp.launch(saxpy, dim=n, inputs=[2.0, x, y, out], device=dev)
    got = out.numpy()
    print(f"first launch (build + load + run + copy back): {time.perf_counter() - t0:.2f} s")
    np.testing.assert_allclose(got, 2.0 * xs + ys, rtol=1e-6, atol=1e-6)
    print("saxpy on 1M floats matches NumPy")

    loss = wp.zeros(1, dtype=float, device=dev, requires_grad=True)
    tape = wp.Tape()
    with tape:
        wp.launch(loss_of, dim=n, inputs=[x, loss], device=dev)
    tape.backward(loss)
    np.testing.assert_allclose(x.grad.numpy(), np.cos(xs) * xs + np.sin(xs), rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(loss.numpy()[0], np.sum(np.sin(xs.astype(np.float64)) * xs), rtol=1e-3)
    print("atomic reduction and its gradient (tape.backward) match NumPy")

    back = wp.clone(out).to("cpu")
    np.testing.assert_array_equal(back.numpy(), got)
    print("device -> device -> host copies agree")
    wp.synchronize()
    print("SMOKE OK")
    return 0


if __name__ == "__main__":
    sys.exit(main())
