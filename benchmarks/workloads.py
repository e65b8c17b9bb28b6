"""The benchmark workloads, written once against the Warp API.

Every workload is built by ``make_workloads(wp)`` where ``wp`` is the framework module under
test (``weft`` or ``warp``), so the same kernel source runs on both. Nothing here imports weft
or warp itself: ``run.py`` passes ``weft`` in-process, and runs this file as a script with
``--backend warp`` under a Warp interpreter (see ``main``).

A workload is a ``step`` callable (the timed unit of work), an optional ``prepare`` callable run
before every timed step but outside the timer (zeroing gradients, re-seeding), and ``inner``:
how many operations one step performs (the reported time is per operation). Compilation
happens during warm-up and is never timed. Every step ends with ``wp.synchronize_device``.
``make_workloads(wp, device)`` makes them for one device (``"cpu"``, ``"cuda:0"``...).
"""

# No `from __future__ import annotations`: kernel annotations must be evaluated where `wp` is bound.
import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import types

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import geometry_workloads  # noqa: E402 (the mesh rows, in their own file)
import tile_workloads  # noqa: E402 (the tile rows, in their own file)
import scatter_workloads  # noqa: E402 (p2g, FEM assembly, stencil rows, in their own file)

N_BIG = 10_000_000  # elements in the bandwidth and atomic workloads
N_PARTICLES = 10_000
SIM_STEPS = 100
LAUNCHES_PER_STEP = 1000  # launches timed together in the launch-overhead workloads
LOOP_THREADS = 100_000  # threads of the dynamic-loop workloads
LOOP_ITERS = 64  # iterations of their loop (a kernel argument: a dynamic loop)
N_BODIES = 4096
N_MAT = 1_000_000
CLOTH_DIM = 128  # particles per side of the cloth
CLOTH_STEPS = 20
HERE = os.path.dirname(os.path.abspath(__file__))


class Workload:
    def __init__(
        self,
        name,
        what,
        step,
        inner=1,
        unit="ms",
        nbytes=None,
        prepare=None,
        check=None,
        reps=15,
        differs=None,
        warmup=2,
        min_reps=5,
        skip=None,
        error=None,
    ):
        self.name = name
        self.what = what
        self.step = step
        self.inner = inner
        self.unit = unit  # how run.py prints it: "us" or "ms"
        self.nbytes = nbytes  # bytes moved per operation (for GB/s)
        self.prepare = prepare
        self.check = check  # returns a float checksum compared between backends
        self.reps = reps
        self.differs = differs  # why the backends' checksums are expected to differ (or None)
        self.warmup = warmup  # untimed repetitions first
        self.min_reps = min_reps  # timed repetitions even when over the time budget
        self.skip = skip  # why it cannot run on this device (reported as skipped), or None
        self.error = error  # why its setup failed (reported as an error), or None
        self.sync = None  # wp.synchronize_device(its device): run after ``prepare``, outside the timer
        # A step may return its own time in seconds (a float): then that is recorded instead of
        # the wall time of the call (the build rows time the inside of a subprocess).


class Skip(Exception):
    """Raised by a step (or its setup) when the workload cannot run on this device: reported as skipped."""


_KERNELS = {}  # (framework name, definer name) -> the kernels it defined


def kernels(wp, define):
    """The kernels of ``define(wp)``, defined once per framework module and shared by every device's
    workloads (so that a GPU column compiles each kernel once, and no kernel is defined twice)."""
    key = (wp.__name__, define.__name__)
    if key not in _KERNELS:
        _KERNELS[key] = types.SimpleNamespace(**define(wp))
    return _KERNELS[key]


# -- 1. launch overhead ----------------------------------------------------------------------------


def _launch_kernels(wp):
    @wp.kernel
    def trivial_4arrays(
        a: wp.array(dtype=float), b: wp.array(dtype=float), c: wp.array(dtype=float), d: wp.array(dtype=float)
    ):
        i = wp.tid()  # noqa: F841 (the trivial kernel)

    @wp.kernel
    def trivial_float(s: float):
        i = wp.tid()  # noqa: F841 (the trivial kernel)

    return {"trivial_4arrays": trivial_4arrays, "trivial_float": trivial_float}


def _launch_section(wp, device, sync):
    K = kernels(wp, _launch_kernels)
    f32 = wp.float32
    small = [wp.zeros(16, dtype=f32, device=device) for _ in range(4)]

    def launch_4arrays():
        for _ in range(LAUNCHES_PER_STEP):
            wp.launch(K.trivial_4arrays, dim=1, inputs=small, device=device)
        sync()

    def launch_float():
        for _ in range(LAUNCHES_PER_STEP):
            wp.launch(K.trivial_float, dim=1, inputs=[1.5], device=device)
        sync()

    # The Launch keeps the packed arguments and the launch context: cmd.launch() is one native call.
    cmd = wp.launch(K.trivial_4arrays, dim=1, inputs=small, device=device, record_cmd=True)
    replay = cmd.launch

    def replay_4arrays():
        for _ in range(LAUNCHES_PER_STEP):
            replay()
        sync()

    return [
        Workload(
            "launch, 4 array args",
            "wp.launch of an empty kernel, dim=1, 4 arrays",
            launch_4arrays,
            inner=LAUNCHES_PER_STEP,
            unit="us",
            reps=11,
        ),
        Workload(
            "launch, 1 float arg",
            "wp.launch of an empty kernel, dim=1, 1 float",
            launch_float,
            inner=LAUNCHES_PER_STEP,
            unit="us",
            reps=11,
        ),
        Workload(
            "wp.Launch replay, 4 arrays",
            "cmd.launch() of wp.launch(..., record_cmd=True), same kernel",
            replay_4arrays,
            inner=LAUNCHES_PER_STEP,
            unit="us",
            reps=11,
        ),
    ]


# -- 2. bandwidth: saxpy on 10M float32, and NumPy moving the same bytes; 3. its backward ----------

SAXPY_BYTES = 3 * 4 * N_BIG  # read x, read y, write z


def _saxpy_kernels(wp):
    @wp.kernel
    def saxpy(a: float, x: wp.array(dtype=float), y: wp.array(dtype=float), z: wp.array(dtype=float)):
        i = wp.tid()
        z[i] = a * x[i] + y[i]

    @wp.kernel
    def affine(x: wp.array(dtype=float), w: wp.array(dtype=float), z: wp.array(dtype=float)):
        i = wp.tid()
        z[i] = w[0] * x[i] + w[1]  # w: parameters every thread reads

    return {"saxpy": saxpy, "affine": affine}


def _saxpy_section(wp, device, sync):
    K = kernels(wp, _saxpy_kernels)
    f32 = wp.float32
    rng = np.random.default_rng(0)
    xs = rng.random(N_BIG, dtype=np.float32)
    ys = rng.random(N_BIG, dtype=np.float32)
    x = wp.array(xs, dtype=f32, device=device, requires_grad=True)
    y = wp.array(ys, dtype=f32, device=device, requires_grad=True)
    z = wp.zeros(N_BIG, dtype=f32, device=device, requires_grad=True)

    def run_saxpy():
        wp.launch(K.saxpy, dim=N_BIG, inputs=[2.0, x, y, z], device=device)
        sync()

    saxpy_tape = wp.Tape()
    with saxpy_tape:
        wp.launch(K.saxpy, dim=N_BIG, inputs=[2.0, x, y, z], device=device)

    def saxpy_seed():
        x.grad.zero_()
        y.grad.zero_()
        z.grad.fill_(1.0)

    def saxpy_backward():
        saxpy_tape.backward()
        sync()

    w = wp.array([2.0, 0.5], dtype=f32, device=device, requires_grad=True)
    affine_tape = wp.Tape()
    with affine_tape:
        wp.launch(K.affine, dim=N_BIG, inputs=[x, w], outputs=[z], device=device)

    def affine_seed():
        x.grad.zero_()
        w.grad.zero_()
        z.grad.fill_(1.0)

    def affine_backward():
        affine_tape.backward()
        sync()

    return [
        Workload(
            "saxpy 10M f32",
            "z[i] = a*x[i] + y[i], 10M float32 (120 MB moved)",
            run_saxpy,
            nbytes=SAXPY_BYTES,
            check=lambda: float(z.numpy()[:1000].sum()),
        ),
        Workload(
            "saxpy 10M backward",
            "tape.backward() of one saxpy launch (grads of x, y)",
            saxpy_backward,
            prepare=saxpy_seed,
            nbytes=None,
            check=lambda: float(x.grad.numpy()[:1000].sum() + y.grad.numpy()[:1000].sum()),
        ),
        Workload(
            "shared params 10M backward",
            "tape.backward() of z[i] = w[0]*x[i] + w[1] (grads of x and of the 2 parameters)",
            affine_backward,
            prepare=affine_seed,
            nbytes=None,
            check=lambda: float(w.grad.numpy()[1]),
        ),
    ]


def _numpy_section(wp, device, sync):
    # NumPy copy of an array of 15M float32: 60 MB read + 60 MB written = saxpy's 120 MB.
    np_src = np.ones(SAXPY_BYTES // 2 // 4, dtype=np.float32)
    np_dst = np.empty_like(np_src)
    w = Workload(
        "numpy copy, same bytes",
        "np.copyto of 60 MB (60 MB read + 60 MB written)",
        lambda: np.copyto(np_dst, np_src),
        nbytes=SAXPY_BYTES,
    )
    if not _is_cpu(device):
        w.skip = "host NumPy copy, the same in every column: see the CPU column"
    return [w]


# -- 3. backward passes: a taped particle simulation -------------------------------------------


def _particle_kernels(wp):
    @wp.kernel
    def sim_step(
        px0: wp.array(dtype=float),
        py0: wp.array(dtype=float),
        vx0: wp.array(dtype=float),
        vy0: wp.array(dtype=float),
        px1: wp.array(dtype=float),
        py1: wp.array(dtype=float),
        vx1: wp.array(dtype=float),
        vy1: wp.array(dtype=float),
        drag: wp.array(dtype=float),
        dt: float,
    ):
        i = wp.tid()
        u = vx0[i]
        v = vy0[i]
        y = py0[i]
        speed = wp.sqrt(u * u + v * v + 1.0e-6)
        k = drag[0] * speed
        fx = -k * u
        fy = -9.8 - k * v
        if y < 0.0:
            fy = fy - 1000.0 * y - 10.0 * v  # penalty ground contact
        u = u + dt * fx
        v = v + dt * fy
        vx1[i] = u
        vy1[i] = v
        px1[i] = px0[i] + dt * u
        py1[i] = y + dt * v

    @wp.kernel
    def sim_loss(px: wp.array(dtype=float), py: wp.array(dtype=float), loss: wp.array(dtype=float)):
        i = wp.tid()
        dx = px[i] - 1.0
        wp.atomic_add(loss, 0, dx * dx + py[i] * py[i])

    return {"sim_step": sim_step, "sim_loss": sim_loss}


def _particle_section(wp, device, sync):
    K = kernels(wp, _particle_kernels)
    f32 = wp.float32
    n = N_PARTICLES
    prng = np.random.default_rng(1)
    p0 = [
        prng.random(n, dtype=np.float32),
        1.0 + prng.random(n, dtype=np.float32),
        prng.standard_normal(n).astype(np.float32),
        prng.standard_normal(n).astype(np.float32),
    ]
    states = [
        [wp.zeros(n, dtype=f32, device=device, requires_grad=True) for _ in range(4)] for _ in range(SIM_STEPS + 1)
    ]
    for arr, init in zip(states[0], p0):
        arr.assign(init)
    drag = wp.array(np.array([0.1], dtype=np.float32), dtype=f32, device=device, requires_grad=True)
    loss = wp.zeros(1, dtype=f32, device=device, requires_grad=True)
    sim = {"tape": None}

    def sim_forward():
        loss.zero_()
        tape = wp.Tape()
        with tape:
            for s in range(SIM_STEPS):
                wp.launch(K.sim_step, dim=n, inputs=[*states[s], *states[s + 1], drag, 1.0 / 60.0], device=device)
            wp.launch(K.sim_loss, dim=n, inputs=[states[-1][0], states[-1][1], loss], device=device)
        sync()
        sim["tape"] = tape

    def sim_prepare_backward():
        if sim["tape"] is None:
            sim_forward()
        sim["tape"].zero()

    def sim_backward():
        sim["tape"].backward(loss)
        sync()

    return [
        Workload(
            "particles fwd, taped",
            f"{SIM_STEPS}-step sim of {n} particles + loss, recorded on a Tape",
            sim_forward,
            check=lambda: float(loss.numpy()[0]),
        ),
        Workload(
            "particles backward",
            f"tape.backward(loss) of that sim ({SIM_STEPS + 1} adjoint launches)",
            sim_backward,
            prepare=sim_prepare_backward,
            check=lambda: float(drag.grad.numpy()[0]),
        ),
    ]


# -- 4. atomics -----------------------------------------------------------------------------------


def _atomic_kernels(wp):
    @wp.kernel
    def atomic_bins(x: wp.array(dtype=float), bins: wp.array(dtype=float), nbins: int):
        i = wp.tid()
        wp.atomic_add(bins, i % nbins, x[i])

    @wp.kernel
    def atomic_total(x: wp.array(dtype=float), out: wp.array(dtype=float)):
        i = wp.tid()
        wp.atomic_add(out, 0, x[i])

    return {"atomic_bins": atomic_bins, "atomic_total": atomic_total}


def _atomic_section(wp, device, sync):
    K = kernels(wp, _atomic_kernels)
    f32 = wp.float32
    acc1 = wp.zeros(1, dtype=f32, device=device)
    acc0 = wp.zeros(1, dtype=f32, device=device)
    acc1024 = wp.zeros(1024, dtype=f32, device=device)
    xa = wp.array(np.full(N_BIG, 0.25, dtype=np.float32), dtype=f32, device=device)  # exact sums

    def atomic_1():
        wp.launch(K.atomic_bins, dim=N_BIG, inputs=[xa, acc1, 1], device=device)
        sync()

    def atomic_total():
        wp.launch(K.atomic_total, dim=N_BIG, inputs=[xa, acc0], device=device)
        sync()

    def atomic_1024():
        wp.launch(K.atomic_bins, dim=N_BIG, inputs=[xa, acc1024, 1024], device=device)
        sync()

    return [
        Workload(
            "atomic_add 10M -> 1",
            "10M float atomic adds into one value",
            atomic_1,
            prepare=acc1.zero_,
            check=lambda: float(acc1.numpy()[0]),
        ),
        Workload(
            "atomic_add 10M -> out[0]",
            "10M float atomic adds into out[0] (a constant index: a loss)",
            atomic_total,
            prepare=acc0.zero_,
            check=lambda: float(acc0.numpy()[0]),
        ),
        Workload(
            "atomic_add 10M -> 1024",
            "10M float atomic adds into 1024 bins",
            atomic_1024,
            prepare=acc1024.zero_,
            check=lambda: float(acc1024.numpy().sum()),
        ),
    ]


# -- 5. a dynamic loop with loop-carried state, forward and backward ------------------------------


def _loop_kernels(wp):
    @wp.kernel
    def loop_carried(x: wp.array(dtype=float), c: wp.array(dtype=float), n: int, y: wp.array(dtype=float)):
        i = wp.tid()
        s = float(1.0)  # noqa: UP018 (Warp needs float() to let a dynamic loop update s)
        for j in range(n):
            s = s * x[i] + c[j]
        y[i] = s

    return {"loop_carried": loop_carried}


def _loop_section(wp, device, sync):
    K = kernels(wp, _loop_kernels)
    f32 = wp.float32
    lrng = np.random.default_rng(2)
    lx = wp.array(lrng.uniform(0.9, 1.0, LOOP_THREADS).astype(np.float32), dtype=f32, device=device, requires_grad=True)
    lc = wp.array(lrng.uniform(0.0, 0.01, LOOP_ITERS).astype(np.float32), dtype=f32, device=device)
    ly = wp.zeros(LOOP_THREADS, dtype=f32, device=device, requires_grad=True)
    loop_tape = wp.Tape()
    with loop_tape:
        wp.launch(K.loop_carried, dim=LOOP_THREADS, inputs=[lx, lc, LOOP_ITERS, ly], device=device)

    def loop_forward():
        wp.launch(K.loop_carried, dim=LOOP_THREADS, inputs=[lx, lc, LOOP_ITERS, ly], device=device)
        sync()

    def loop_seed():
        lx.grad.zero_()
        ly.grad.fill_(1.0)

    def loop_backward():
        loop_tape.backward()
        sync()

    return [
        Workload(
            "dyn loop 64, fwd",
            f"{LOOP_THREADS // 1000}k threads, each s = s * x[i] + c[j] over a dynamic range({LOOP_ITERS})",
            loop_forward,
            check=lambda: float(ly.numpy()[:1000].sum()),
        ),
        Workload(
            "dyn loop 64, backward",
            "tape.backward() of that launch (d y / d x through the loop-carried s)",
            loop_backward,
            prepare=loop_seed,
            check=lambda: float(lx.grad.numpy()[:1000].sum()),
            differs="Warp's gradient through a loop-carried product in a dynamic loop is wrong (its issue 1694)",
        ),
    ]


# -- 6. array utilities (wp.utils) ----------------------------------------------------------------


def _utils_section(wp, device, sync):
    f32 = wp.float32
    urng = np.random.default_rng(3)
    usum_np = urng.random(N_BIG).astype(np.float32)
    usum = wp.array(usum_np, dtype=f32, device=device)
    usum_res = [0.0]

    def util_sum():
        usum_res[0] = float(wp.utils.array_sum(usum))  # a host float: a copy to the host on a GPU
        sync()

    N_SORT = 1_000_000
    skeys_np = urng.integers(0, 1 << 30, N_SORT).astype(np.int32)
    skeys = wp.zeros(2 * N_SORT, dtype=wp.int32, device=device)  # Warp needs 2 * count
    svals = wp.zeros(2 * N_SORT, dtype=wp.int32, device=device)
    # the unsorted input, on the device: each repetition copies it in (outside the timer)
    skeys_src = wp.array(skeys_np, dtype=wp.int32, device=device)
    svals_src = wp.array(np.arange(N_SORT, dtype=np.int32), dtype=wp.int32, device=device)

    def sort_prepare():
        wp.copy(skeys, skeys_src, count=N_SORT)
        wp.copy(svals, svals_src, count=N_SORT)

    def util_sort():
        wp.utils.radix_sort_pairs(skeys, svals, N_SORT)
        sync()

    return [
        Workload(
            "array_sum 10M",
            "wp.utils.array_sum of 10M floats (NumPy's sum of the same: see benchmarks/README.md)",
            util_sum,
            nbytes=4 * N_BIG,
            check=lambda: usum_res[0],
        ),
        Workload(
            "radix_sort_pairs 1M",
            "wp.utils.radix_sort_pairs of 1M int32 keys with int32 values",
            util_sort,
            prepare=sort_prepare,
            check=lambda: float(svals.numpy()[:1000].astype(np.float64).sum()),
        ),
    ]


# -- 6b. sparse matrices and a Krylov solver (warp.sparse, warp.optim.linear) -----------------------

SPARSE_SIDE = 316  # a SPARSE_SIDE^2 grid of 3x3 blocks, 5-point stencil: ~100k block rows, ~500k blocks


def _sparse_section(wp, device, sync):
    import importlib

    sparse = importlib.import_module(wp.__name__ + ".sparse")
    linear = importlib.import_module(wp.__name__ + ".optim.linear")
    n = SPARSE_SIDE * SPARSE_SIDE
    ii, jj = np.meshgrid(np.arange(SPARSE_SIDE), np.arange(SPARSE_SIDE), indexing="ij")
    rows, cols = [], []
    for di, dj in ((0, 0), (1, 0), (-1, 0), (0, 1), (0, -1)):
        ok = (ii + di >= 0) & (ii + di < SPARSE_SIDE) & (jj + dj >= 0) & (jj + dj < SPARSE_SIDE)
        rows.append((ii * SPARSE_SIDE + jj)[ok])
        cols.append(((ii + di) * SPARSE_SIDE + jj + dj)[ok])
    rows, cols = np.concatenate(rows).astype(np.int32), np.concatenate(cols).astype(np.int32)
    srng = np.random.default_rng(6)
    blocks = np.where((rows == cols)[:, None, None], 8.0 * np.eye(3), -0.3 * srng.random((len(rows), 3, 3)))
    t_rows = wp.array(rows, dtype=wp.int32, device=device)
    t_cols = wp.array(cols, dtype=wp.int32, device=device)
    t_vals = wp.array(blocks.astype(np.float32), dtype=wp.mat33, device=device)
    A = sparse.bsr_from_triplets(n, n, t_rows, t_cols, t_vals)
    x = wp.array(srng.random((n, 3)).astype(np.float32), dtype=wp.vec3, device=device)
    y = wp.zeros(n, dtype=wp.vec3, device=device)
    cg_x = wp.zeros(n, dtype=wp.vec3, device=device)
    cg_iters = 20

    def run_mv():
        sparse.bsr_mv(A, x, y)
        sync()

    def run_triplets():
        sparse.bsr_set_from_triplets(A, t_rows, t_cols, t_vals)
        sync()

    def run_cg():
        linear.cg(A, x, cg_x, tol=1e-30, atol=1e-30, maxiter=cg_iters, check_every=cg_iters, use_cuda_graph=False)
        sync()

    try:  # the same matrix and vectors in SciPy (single-threaded), when it is installed
        import scipy.sparse as ssp
        import scipy.sparse.linalg as sspl

        nnz = A.nnz
        S = ssp.bsr_array(
            (A.values.numpy()[:nnz].reshape(nnz, 3, 3), A.columns.numpy()[:nnz], A.offsets.numpy()), shape=(3 * n, 3 * n)
        )
        s_x = x.numpy().reshape(-1)
        s_out = [None]

        def scipy_mv():
            s_out[0] = S @ s_x

        def scipy_cg():
            s_out[0] = sspl.cg(S, s_x, rtol=1e-30, atol=1e-30, maxiter=cg_iters)[0]

        scipy_skip = None if _is_cpu(device) else "SciPy runs on the host: see the CPU column"
    except ImportError:
        scipy_mv = scipy_cg = None
        scipy_skip = "SciPy is not installed (pip install scipy)"

    def scipy_check():
        return float(np.abs(s_out[0]).astype(np.float64).sum())

    return [
        Workload(
            "scipy bsr mv, same matrix",
            "the same product with scipy.sparse.bsr_array (one thread; the same in every column)",
            scipy_mv,
            skip=scipy_skip,
            check=scipy_check,
        ),
        Workload(
            "scipy cg 20 iterations, same",
            "scipy.sparse.linalg.cg, 20 iterations on the same matrix and right-hand side (no preconditioner)",
            scipy_cg,
            reps=7,
            skip=scipy_skip,
            check=scipy_check,
        ),
        Workload(
            "bsr_mv 100k rows 3x3",
            f"y = A x, A a {n}-row BSR matrix of {len(rows)} 3x3 float32 blocks (5-point stencil)",
            run_mv,
            check=lambda: float(np.abs(y.numpy()).astype(np.float64).sum()),
        ),
        Workload(
            "bsr_from_triplets 500k 3x3",
            f"bsr_set_from_triplets of {len(rows)} 3x3 blocks into {n} rows (sort, merge, sum)",
            run_triplets,
            reps=7,
            check=lambda: float(np.abs(A.values.numpy()[: A.nnz]).astype(np.float64).sum()),
        ),
        Workload(
            "cg 20 iterations, bsr 3x3",
            f"{cg_iters} conjugate-gradient iterations on that matrix (from x = 0 each time)",
            run_cg,
            prepare=lambda: cg_x.zero_(),
            reps=7,
            check=lambda: float(np.abs(cg_x.numpy()).astype(np.float64).sum()),
        ),
    ]


# -- 7. compute-bound: all-pairs n-body, mat33 algebra --------------------------------------------


def _nbody_kernels(wp):
    @wp.kernel
    def nbody(pos: wp.array(dtype=wp.vec3), mass: wp.array(dtype=float), n: int, acc: wp.array(dtype=wp.vec3)):
        i = wp.tid()
        p = pos[i]
        a = wp.vec3(0.0, 0.0, 0.0)
        for j in range(n):
            d = pos[j] - p
            r2 = wp.dot(d, d) + 0.01  # softening (also makes j == i contribute 0)
            inv = 1.0 / wp.sqrt(r2)
            a = a + d * (mass[j] * inv * inv * inv)
        acc[i] = a

    return {"nbody": nbody}


def _nbody_section(wp, device, sync):
    K = kernels(wp, _nbody_kernels)
    brng = np.random.default_rng(4)
    bpos = wp.array(brng.standard_normal((N_BODIES, 3)).astype(np.float32), dtype=wp.vec3, device=device)
    bmass = wp.array(brng.uniform(0.5, 1.5, N_BODIES).astype(np.float32), dtype=wp.float32, device=device)
    bacc = wp.zeros(N_BODIES, dtype=wp.vec3, device=device)

    def run_nbody():
        wp.launch(K.nbody, dim=N_BODIES, inputs=[bpos, bmass, N_BODIES, bacc], device=device)
        sync()

    return [
        Workload(
            "n-body 4096, all pairs",
            f"{N_BODIES} threads, each summing the softened gravity of all {N_BODIES} bodies (vec3 math)",
            run_nbody,
            check=lambda: float(np.abs(bacc.numpy()).astype(np.float64).sum()),
        )
    ]


def _mat_kernels(wp):
    @wp.kernel
    def mat_ops(
        a: wp.array(dtype=wp.mat33),
        b: wp.array(dtype=wp.mat33),
        out: wp.array(dtype=wp.mat33),
        dets: wp.array(dtype=float),
    ):
        i = wp.tid()
        A = a[i]
        B = b[i]
        C = wp.mul(A, B)
        d = wp.determinant(C)
        out[i] = wp.mul(wp.inverse(C), wp.transpose(A)) + B * d
        dets[i] = d

    return {"mat_ops": mat_ops}


def _mat_section(wp, device, sync):
    K = kernels(wp, _mat_kernels)
    mrng = np.random.default_rng(5)
    eye = np.eye(3, dtype=np.float32)
    ma = wp.array(eye + 0.2 * mrng.random((N_MAT, 3, 3), dtype=np.float32), dtype=wp.mat33, device=device)
    mb = wp.array(eye + 0.2 * mrng.random((N_MAT, 3, 3), dtype=np.float32), dtype=wp.mat33, device=device)
    mout = wp.zeros(N_MAT, dtype=wp.mat33, device=device)
    mdet = wp.zeros(N_MAT, dtype=wp.float32, device=device)

    def run_mat():
        wp.launch(K.mat_ops, dim=N_MAT, inputs=[ma, mb, mout, mdet], device=device)
        sync()

    return [
        Workload(
            "mat33 1M: mul, inverse, det",
            "1M threads: C = A B, det(C), inverse(C) A^T + B det(C)",
            run_mat,
            check=lambda: float(
                np.abs(mout.numpy()[:10000]).astype(np.float64).sum() + mdet.numpy()[:10000].astype(np.float64).sum()
            ),
        )
    ]


# -- 8. mass-spring cloth, 20 steps, forward on a tape and backward -------------------------------


def _cloth_kernels(wp):
    @wp.kernel
    def cloth_springs(
        x: wp.array(dtype=wp.vec3),
        v: wp.array(dtype=wp.vec3),
        ends: wp.array(dtype=int),
        rest: wp.array(dtype=float),
        ke: float,
        kd: float,
        f: wp.array(dtype=wp.vec3),
    ):
        t = wp.tid()
        i = ends[2 * t]
        j = ends[2 * t + 1]
        d = x[i] - x[j]
        l = wp.length(d)
        dirn = d / l
        fs = dirn * (ke * (l - rest[t]) + kd * wp.dot(dirn, v[i] - v[j]))
        wp.atomic_sub(f, i, fs)
        wp.atomic_add(f, j, fs)

    @wp.kernel
    def cloth_integrate(
        x0: wp.array(dtype=wp.vec3),
        v0: wp.array(dtype=wp.vec3),
        f: wp.array(dtype=wp.vec3),
        inv_mass: wp.array(dtype=float),
        gravity: wp.vec3,
        dt: float,
        x1: wp.array(dtype=wp.vec3),
        v1: wp.array(dtype=wp.vec3),
    ):
        i = wp.tid()
        v = v0[i] + (f[i] + gravity) * (inv_mass[i] * dt)  # unit masses; pinned: inv_mass 0
        v1[i] = v
        x1[i] = x0[i] + v * dt

    @wp.kernel
    def cloth_loss(x: wp.array(dtype=wp.vec3), loss: wp.array(dtype=float)):
        i = wp.tid()
        wp.atomic_add(loss, 0, wp.dot(x[i], x[i]))

    return {"cloth_springs": cloth_springs, "cloth_integrate": cloth_integrate, "cloth_loss": cloth_loss}


def _cloth_section(wp, device, sync):
    K = kernels(wp, _cloth_kernels)
    f32 = wp.float32
    cd = CLOTH_DIM
    nc = cd * cd
    h = 1.0 / (cd - 1)
    gx, gz = np.meshgrid(np.arange(cd), np.arange(cd), indexing="ij")
    cx0 = np.stack([gx * h, np.zeros_like(gx, dtype=np.float64), gz * h], -1).reshape(nc, 3).astype(np.float32)
    idx = np.arange(nc).reshape(cd, cd)
    pairs = [
        (idx[:-1, :], idx[1:, :]),  # structural
        (idx[:, :-1], idx[:, 1:]),
        (idx[:-1, :-1], idx[1:, 1:]),  # shear
        (idx[1:, :-1], idx[:-1, 1:]),
    ]
    ends_np = np.concatenate([np.stack([a.ravel(), b.ravel()], -1) for a, b in pairs]).astype(np.int32)
    n_springs = len(ends_np)
    rest_np = np.linalg.norm(cx0[ends_np[:, 0]] - cx0[ends_np[:, 1]], axis=1).astype(np.float32)
    inv_mass_np = np.ones(nc, dtype=np.float32)
    inv_mass_np[idx[0, 0]] = inv_mass_np[idx[0, -1]] = 0.0  # two pinned corners
    c_ends = wp.array(ends_np.ravel(), dtype=wp.int32, device=device)
    c_rest = wp.array(rest_np, dtype=f32, device=device)
    c_inv_mass = wp.array(inv_mass_np, dtype=f32, device=device)
    cx = [wp.zeros(nc, dtype=wp.vec3, device=device, requires_grad=True) for _ in range(CLOTH_STEPS + 1)]
    cv = [wp.zeros(nc, dtype=wp.vec3, device=device, requires_grad=True) for _ in range(CLOTH_STEPS + 1)]
    cf = [wp.zeros(nc, dtype=wp.vec3, device=device, requires_grad=True) for _ in range(CLOTH_STEPS)]
    cx[0].assign(cx0)
    c_loss = wp.zeros(1, dtype=f32, device=device, requires_grad=True)
    cloth = {"tape": None}
    c_dt = 1.0 / 600.0
    c_gravity = wp.vec3(0.0, -9.8, 0.0)

    def cloth_forward():
        c_loss.zero_()
        for fa in cf:
            fa.zero_()
        tape = wp.Tape()
        with tape:
            for s in range(CLOTH_STEPS):
                wp.launch(
                    K.cloth_springs,
                    dim=n_springs,
                    inputs=[cx[s], cv[s], c_ends, c_rest, 1000.0, 1.0, cf[s]],
                    device=device,
                )
                wp.launch(
                    K.cloth_integrate,
                    dim=nc,
                    inputs=[cx[s], cv[s], cf[s], c_inv_mass, c_gravity, c_dt, cx[s + 1], cv[s + 1]],
                    device=device,
                )
            wp.launch(K.cloth_loss, dim=nc, inputs=[cx[-1], c_loss], device=device)
        sync()
        cloth["tape"] = tape

    def cloth_prepare_backward():
        if cloth["tape"] is None:
            cloth_forward()
        cloth["tape"].zero()

    def cloth_backward():
        cloth["tape"].backward(c_loss)
        sync()

    return [
        Workload(
            "cloth 128x128 fwd, taped",
            f"{CLOTH_STEPS} steps of a {cd}x{cd} mass-spring cloth ({n_springs} springs, vec3 atomics) + loss, on a Tape",
            cloth_forward,
            check=lambda: float(c_loss.numpy()[0]),
        ),
        Workload(
            "cloth 128x128 backward",
            f"tape.backward(loss) of that cloth ({2 * CLOTH_STEPS + 1} adjoint launches)",
            cloth_backward,
            prepare=cloth_prepare_backward,
            check=lambda: float(
                np.abs(cx[0].grad.numpy()).astype(np.float64).sum()
                + np.abs(cv[0].grad.numpy()).astype(np.float64).sum()
            ),
        ),
    ]


# -- 9. building the 9-kernel module (build_module.py) in a fresh process -------------------------


def _build_section(wp, device, sync):
    backend = wp.__name__.split(".")[0]
    build = {"warm": None, "check": None}

    def build_probe(cache_dir):
        """Run ``workloads.py --build-probe`` in a new process; return the seconds it measured."""
        env = dict(os.environ)
        env["PYTHONPATH"] = os.pathsep.join([os.path.dirname(HERE), HERE, env.get("PYTHONPATH", "")])
        env["WEFT_BENCH_BACKEND"] = backend
        env["WEFT_CACHE_DIR"] = cache_dir
        args = [sys.executable, os.path.join(HERE, "workloads.py"), "--build-probe", cache_dir, "--backend", backend]
        if backend != "warp":
            args += ["--mode", wp.config.mode]
            env["WEFT_CPU_THREADS"] = str(wp.config.cpu_threads)
        if not _is_cpu(device):
            args += ["--device", str(device)]
        p = subprocess.run(args, capture_output=True, text=True, env=env, cwd=HERE, check=False)
        for line in p.stdout.splitlines():
            if line.startswith(PROTOCOL):
                r = json.loads(line[len(PROTOCOL) :])
                if "skip" in r:
                    raise Skip(r["skip"])
                build["check"] = r["check"]
                return float(r["seconds"])
        raise RuntimeError(f"build probe failed ({p.returncode}): {p.stderr[-2000:]}")

    def cold_build():
        d = tempfile.mkdtemp(prefix="weft-bench-cache-")
        try:
            return build_probe(d)
        finally:
            shutil.rmtree(d, ignore_errors=True)

    def warm_prepare():
        if build["warm"] is None:
            build["warm"] = tempfile.mkdtemp(prefix="weft-bench-cache-")
            import atexit

            atexit.register(shutil.rmtree, build["warm"], True)
            build_probe(build["warm"])  # fills the cache

    return [
        Workload(
            "cold build, 9 kernels",
            "new process, empty cache dir: import build_module + first launch of its 9 kernels",
            cold_build,
            check=lambda: build["check"],
            reps=3,
            warmup=0,
            min_reps=3,
        ),
        Workload(
            "warm load, 9 kernels",
            "new process, cache filled: import build_module + first launch of its 9 kernels",
            lambda: build_probe(build["warm"]),
            prepare=warm_prepare,
            check=lambda: build["check"],
            reps=7,
            warmup=1,
            min_reps=5,
        ),
    ]


# (row names, builder): a builder makes its arrays on the device and returns its workloads with
# exactly these names. The names are listed here so that a builder that fails (an exception while
# setting up, e.g. on a GPU) still gives its rows, as errors, and the other sections still run.
SECTIONS = [
    (("launch, 4 array args", "launch, 1 float arg", "wp.Launch replay, 4 arrays"), _launch_section),
    (("saxpy 10M f32", "saxpy 10M backward", "shared params 10M backward"), _saxpy_section),
    (("numpy copy, same bytes",), _numpy_section),
    (("particles fwd, taped", "particles backward"), _particle_section),
    (("atomic_add 10M -> 1", "atomic_add 10M -> out[0]", "atomic_add 10M -> 1024"), _atomic_section),
    (("dyn loop 64, fwd", "dyn loop 64, backward"), _loop_section),
    (("array_sum 10M", "radix_sort_pairs 1M"), _utils_section),
    (
        (
            "scipy bsr mv, same matrix",
            "scipy cg 20 iterations, same",
            "bsr_mv 100k rows 3x3",
            "bsr_from_triplets 500k 3x3",
            "cg 20 iterations, bsr 3x3",
        ),
        _sparse_section,
    ),
    (("n-body 4096, all pairs",), _nbody_section),
    (("mat33 1M: mul, inverse, det",), _mat_section),
    (("cloth 128x128 fwd, taped", "cloth 128x128 backward"), _cloth_section),
    (("cold build, 9 kernels", "warm load, 9 kernels"), _build_section),
    (geometry_workloads.ROWS, lambda wp, device, sync: geometry_workloads.geometry_section(wp, device, sync, Workload, kernels)),
    (geometry_workloads.GRID_ROWS, lambda wp, device, sync: geometry_workloads.hash_grid_section(wp, device, sync, Workload, kernels)),
    (tile_workloads.ROWS, lambda wp, device, sync: tile_workloads.tile_section(wp, device, sync, Workload, kernels)),
    (tile_workloads.NUMPY_ROWS, lambda wp, device, sync: tile_workloads.numpy_gemm_section(wp, device, sync, Workload, kernels)),
    (scatter_workloads.ROWS, lambda wp, device, sync: scatter_workloads.scatter_section(wp, device, sync, Workload, kernels)),
]
# the report order (the NumPy copy sits next to saxpy, whose bytes it moves)
ROW_ORDER = [
    "launch, 4 array args",
    "launch, 1 float arg",
    "wp.Launch replay, 4 arrays",
    "saxpy 10M f32",
    "numpy copy, same bytes",
    "saxpy 10M backward",
    "shared params 10M backward",
    "particles fwd, taped",
    "particles backward",
    "atomic_add 10M -> 1",
    "atomic_add 10M -> out[0]",
    "atomic_add 10M -> 1024",
    "dyn loop 64, fwd",
    "dyn loop 64, backward",
    "array_sum 10M",
    "radix_sort_pairs 1M",
    "bsr_mv 100k rows 3x3",
    "scipy bsr mv, same matrix",
    "cg 20 iterations, bsr 3x3",
    "scipy cg 20 iterations, same",
    "bsr_from_triplets 500k 3x3",
    "n-body 4096, all pairs",
    "mat33 1M: mul, inverse, det",
    "cloth 128x128 fwd, taped",
    "cloth 128x128 backward",
    *scatter_workloads.ROWS,
    "cold build, 9 kernels",
    "warm load, 9 kernels",
    *geometry_workloads.ROWS,
    *geometry_workloads.GRID_ROWS,
    *tile_workloads.ROWS,
    *tile_workloads.NUMPY_ROWS,
]


def _is_cpu(device) -> bool:
    return str(device) == "cpu" or getattr(device, "is_cpu", False) is True


def _squash(text) -> str:
    return text.lower().replace("-", "").replace("_", "")


def _matches(name, only) -> bool:
    """Whether ``name`` is selected by ``only``: a substring, case, ``-`` and ``_`` ignored
    (``nbody`` selects "n-body 4096, all pairs")."""
    return not only or any(_squash(s) in _squash(name) for s in only)


def unmatched(only) -> list:
    """The terms of ``only`` that select no workload (run.py warns about them)."""
    return [s for s in only or () if not any(_matches(n, [s]) for n in ROW_ORDER)]


def settle(sync):
    """After a failure on a GPU: wait for what was queued, so that its error (if any) is raised
    here and not in the next workload's timed step."""
    try:
        sync()
    except Exception:  # noqa: BLE001 (already reported)
        pass


def make_workloads(wp, device="cpu", only=None):
    """All workloads for framework module ``wp`` on ``device``, in report order.

    Every array is made on ``device``, every launch goes to it, and every timed step (and every
    ``prepare``, outside the timer) ends with ``wp.synchronize_device(device)``, so that times on
    a GPU are completed work, not queued launches. ``only`` (substrings of row names, as
    ``--only``) leaves out the sections with no selected row: their kernels are not defined and
    their arrays not made. A section whose setup raises gives its rows as errors (``error``), one
    that cannot run on ``device`` as skipped (``skip``), and the other sections are still built.
    """
    sync = lambda: wp.synchronize_device(device)
    by_name = {}
    for names, build in SECTIONS:
        if not any(_matches(n, only) for n in names):
            continue
        try:
            ws = build(wp, device, sync)
            if [w.name for w in ws] != list(names):
                raise RuntimeError(f"section {build.__name__} made {[w.name for w in ws]}, expected {list(names)}")
        except Skip as e:
            ws = [Workload(n, "", None, skip=str(e)) for n in names]
        except Exception as e:  # noqa: BLE001 (reported in the rows, the other sections go on)
            settle(sync)
            ws = [Workload(n, "", None, error=f"setup failed: {type(e).__name__}: {e}") for n in names]
        for w in ws:
            w.sync = sync
            by_name[w.name] = w
    return [by_name[n] for n in ROW_ORDER if n in by_name]


def measure(w: Workload, reps=None, warmup=None, budget=2.0, min_reps=None) -> dict:
    """Median seconds per operation over ``reps`` timed steps after ``warmup`` untimed ones.

    Stops early (after at least ``min_reps`` reps) once ``budget`` seconds of timed work have run.
    """
    head = {"name": w.name, "what": w.what, "unit": w.unit}
    if w.skip:
        return {**head, "skipped": w.skip}
    if w.error:
        return {**head, "error": w.error}
    reps = reps or w.reps
    warmup = w.warmup if warmup is None else warmup
    min_reps = min(w.min_reps if min_reps is None else min_reps, reps)

    def prepare():
        if w.prepare:
            w.prepare()
            if w.sync:
                w.sync()  # on a GPU: the preparation's queued work is done before the timer starts

    times = []
    spent = 0.0
    try:
        for _ in range(warmup):
            prepare()
            w.step()
        for _ in range(reps):
            prepare()
            t0 = time.perf_counter()
            own = w.step()
            t = time.perf_counter() - t0
            if isinstance(own, float):
                t = own
            times.append(t / w.inner)
            spent += t
            if spent > budget and len(times) >= min_reps:
                break
    except Skip as e:  # the step found it cannot run here (a build probe without the device)
        return {**head, "skipped": str(e)}
    med = statistics.median(times)
    r = {**head, "seconds": med, "min": min(times), "reps": len(times)}
    if w.nbytes:
        r["gbps"] = w.nbytes / med / 1e9
    if w.check:
        r["check"] = w.check()
    if w.differs:
        r["differs"] = w.differs
    return r


def selected(workloads, only):
    return [w for w in workloads if _matches(w.name, only)]


def run_all(workloads, label, reps=None, budget=2.0, log=None):
    """Measure ``workloads`` (from ``make_workloads``) in order; ``label`` only tags the log lines."""
    results = []
    for w in workloads:
        try:
            r = measure(w, reps=reps, budget=budget)
        except Exception as e:  # noqa: BLE001 (reported in the results, the others go on)
            r = {"name": w.name, "what": w.what, "unit": w.unit, "error": f"{type(e).__name__}: {e}"}
            if w.sync:
                settle(w.sync)
        results.append(r)
        if log:
            if "seconds" in r:
                shown = f"{r['seconds'] * (1e6 if r['unit'] == 'us' else 1e3):10.3f} {r['unit']}"
            else:
                shown = f"error: {r['error']}" if "error" in r else f"skipped: {r['skipped']}"
            log(f"  [{label}] {r['name']:<26} {shown}")
    return results


def backend_info(wp, backend, device="cpu"):
    info = {"backend": backend, "version": getattr(wp, "__version__", "?"), "mode": getattr(wp.config, "mode", "?")}
    if getattr(wp.config, "deterministic", 0):
        info["deterministic"] = wp.config.deterministic.name
    info["threads"] = getattr(wp.config, "cpu_threads", 1) if backend == "weft" else 1
    if not _is_cpu(device):
        info["device"] = str(device)
        info["device_name"] = wp.get_device(device).name
    return info


PROTOCOL = "@@weft-bench "  # prefix of the lines a --serve worker answers with


def serve(wp, backend, device="cpu", only=None):
    """Worker loop used by run.py: build the workloads, then measure the ones asked for on stdin.

    Each request is a JSON line ``{"name": ..., "reps": ..., "budget": ...}``; each answer is one
    line ``PROTOCOL + json``. Anything else the framework prints goes to stderr.
    """
    out = sys.stdout
    sys.stdout = sys.stderr
    workloads = {w.name: w for w in make_workloads(wp, device, only)}
    info = {**backend_info(wp, backend, device), "workloads": list(workloads)}
    print(PROTOCOL + json.dumps(info), file=out, flush=True)
    for line in sys.stdin:
        if not line.strip():
            continue
        req = json.loads(line)
        try:
            r = measure(workloads[req["name"]], reps=req.get("reps"), budget=req.get("budget", 2.0))
        except Exception as e:  # noqa: BLE001 (report and keep serving)
            r = {"name": req.get("name"), "error": f"{type(e).__name__}: {e}"}
            w = workloads.get(req.get("name"))
            if w is not None and w.sync:
                settle(w.sync)
        print(PROTOCOL + json.dumps(r), file=out, flush=True)


def build_probe_main(backend, cache_dir, mode, device="cpu"):
    """One cold or warm build, in this (fresh) process: ``--build-probe CACHE_DIR``.

    The framework is imported and initialised (and pointed at ``cache_dir``) first, untimed;
    the time printed runs from just before ``import build_module`` to the return of its
    ``run()``: the module's kernels defined, built or loaded from the cache, and each launched
    once, with a final synchronize. Interpreter start-up, ``import weft``/``import warp``
    + ``wp.init()`` and the import of ``numpy.random`` (which ``run()`` uses) are outside it.
    With ``device`` a GPU, the kernels are built for it and launched on it; when this new process cannot use it (a simulated GPU lives only in the process that
    installed it), it answers ``{"skip": reason}``.
    """
    import importlib

    os.environ["WEFT_BENCH_BACKEND"] = backend
    os.environ["WEFT_CACHE_DIR"] = cache_dir
    out = sys.stdout
    sys.stdout = sys.stderr  # anything the framework prints
    wp = importlib.import_module(backend)
    wp.config.kernel_cache_dir = cache_dir
    if mode:
        wp.config.mode = mode
    if backend == "warp":
        wp.config.quiet = True
        wp.init()
    if not _is_cpu(device):
        try:
            if not wp.get_device(device).is_cuda:
                raise RuntimeError(f"{device} is not a GPU")
        except Exception as e:  # noqa: BLE001 (reported as the reason)
            first = str(e).split(" (")[0].splitlines()[0][:120] if str(e) else ""
            reason = f"{device} is not available in the probe's new process ({type(e).__name__}: {first})"
            print(PROTOCOL + json.dumps({"skip": reason}), file=out, flush=True)
            return
    import numpy.random  # noqa: F401 -- build_module.run's generator: 5 ms of import that is neither framework's work

    t0 = time.perf_counter()
    import build_module

    arrays = build_module.run(wp, device)
    t = time.perf_counter() - t0
    print(PROTOCOL + json.dumps({"seconds": t, "check": build_module.checksum(arrays)}), file=out, flush=True)


def main(argv=None):
    """Run the workloads under one framework: all at once (``--json``) or as run.py's worker (``--serve``)."""
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--backend", default="warp", help="module to import as wp (warp or weft)")
    p.add_argument("--json", help="run every workload and write the results here")
    p.add_argument("--serve", action="store_true", help="answer measurement requests on stdin (run.py)")
    p.add_argument("--only", nargs="*", help="substrings of workload names to run")
    p.add_argument("--reps", type=int, default=None)
    p.add_argument("--budget", type=float, default=2.0, help="seconds of timed work per workload (min 5 reps)")
    p.add_argument("--mode", choices=["debug", "release"], help="set wp.config.mode before any kernel is built")
    p.add_argument("--threads", type=int, help="set wp.config.cpu_threads (weft)")
    p.add_argument(
        "--deterministic",
        choices=["RUN_TO_RUN", "GPU_TO_GPU"],
        help="set wp.config.deterministic before any module is made (weft)",
    )
    p.add_argument("--device", default="cpu", help="device the workloads run on (default cpu; e.g. cuda:0)")
    p.add_argument("--build-probe", metavar="CACHE_DIR", help="time one build of build_module.py (internal)")
    a = p.parse_args(argv)
    if a.build_probe:
        build_probe_main(a.backend, a.build_probe, a.mode, a.device)
        return
    if not (a.json or a.serve):
        p.error("give --json PATH or --serve")
    import importlib

    wp = importlib.import_module(a.backend)
    if a.backend == "warp":
        wp.config.quiet = True
        wp.init()
    if a.mode:
        wp.config.mode = a.mode
    if a.threads:
        wp.config.cpu_threads = a.threads
    if a.deterministic:
        wp.config.deterministic = wp.DeterministicMode[a.deterministic]
    if a.serve:
        serve(wp, a.backend, a.device, a.only)
        return
    log = lambda s: print(s, file=sys.stderr, flush=True)
    info = backend_info(wp, a.backend, a.device)
    label = f"{a.backend} {info['mode']} " + (f"{info['threads']}T" if _is_cpu(a.device) else a.device)
    workloads = selected(make_workloads(wp, a.device, a.only), a.only)
    results = run_all(workloads, label, reps=a.reps, budget=a.budget, log=log)
    with open(a.json, "w") as f:
        json.dump({**info, "results": results}, f, indent=1)


if __name__ == "__main__":
    main()
