"""The CPU peers (Taichi, Numba) on the rows of ``workloads.py`` they can express: a run.py worker.

    /tmp/peersvenv/bin/python benchmarks/peers.py --backend taichi --serve [--only saxpy nbody]
    /tmp/peersvenv/bin/python benchmarks/peers.py --backend numba --json out.json

Each peer gets the same inputs as weft and Warp (``peer_inputs``: the same NumPy generators, seeds
and sizes as the sections of ``workloads.py`` and ``scatter_workloads.py``), runs the same
algorithm written the way that library's users write it (``peers_taichi.py``, ``peers_numba.py``),
on the CPU with all cores, and reports the same checksum, which run.py compares with weft's. A row
a peer cannot express is absent from its worker (run.py shows ``-``); timing is
``workloads.measure``, the same medians, warm-up and budget as the other columns. Neither library
is a dependency of weft: they only need to be installed in the interpreter that runs this file.
"""

import argparse
import json
import os
import sys
import types

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import scatter_workloads as S
import workloads as W

BACKENDS = ("taichi", "numba")


# -- the inputs of each section, drawn exactly as workloads.py / scatter_workloads.py draw them ----


def saxpy_inputs():
    rng = np.random.default_rng(0)
    return rng.random(W.N_BIG, dtype=np.float32), rng.random(W.N_BIG, dtype=np.float32)


def particle_inputs():
    rng = np.random.default_rng(1)
    n = W.N_PARTICLES
    px = rng.random(n, dtype=np.float32)
    py = 1.0 + rng.random(n, dtype=np.float32)
    vx = rng.standard_normal(n).astype(np.float32)
    vy = rng.standard_normal(n).astype(np.float32)
    return [px, py, vx, vy]


def atomic_inputs():
    return np.full(W.N_BIG, 0.25, dtype=np.float32)


def loop_inputs():
    rng = np.random.default_rng(2)
    x = rng.uniform(0.9, 1.0, W.LOOP_THREADS).astype(np.float32)
    c = rng.uniform(0.0, 0.01, W.LOOP_ITERS).astype(np.float32)
    return x, c


def nbody_inputs():
    rng = np.random.default_rng(4)
    pos = rng.standard_normal((W.N_BODIES, 3)).astype(np.float32)
    mass = rng.uniform(0.5, 1.5, W.N_BODIES).astype(np.float32)
    return pos, mass


def mat_inputs():
    rng = np.random.default_rng(5)
    eye = np.eye(3, dtype=np.float32)
    a = eye + 0.2 * rng.random((W.N_MAT, 3, 3), dtype=np.float32)
    b = eye + 0.2 * rng.random((W.N_MAT, 3, 3), dtype=np.float32)
    return a, b


def cloth_inputs():
    """Rest positions, spring ends (S, 2), rest lengths, inverse masses of the 128x128 cloth."""
    cd = W.CLOTH_DIM
    nc = cd * cd
    h = 1.0 / (cd - 1)
    gx, gz = np.meshgrid(np.arange(cd), np.arange(cd), indexing="ij")
    x0 = np.stack([gx * h, np.zeros_like(gx, dtype=np.float64), gz * h], -1).reshape(nc, 3).astype(np.float32)
    idx = np.arange(nc).reshape(cd, cd)
    pairs = [
        (idx[:-1, :], idx[1:, :]),
        (idx[:, :-1], idx[:, 1:]),
        (idx[:-1, :-1], idx[1:, 1:]),
        (idx[1:, :-1], idx[:-1, 1:]),
    ]
    ends = np.concatenate([np.stack([a.ravel(), b.ravel()], -1) for a, b in pairs]).astype(np.int32)
    rest = np.linalg.norm(x0[ends[:, 0]] - x0[ends[:, 1]], axis=1).astype(np.float32)
    inv_mass = np.ones(nc, dtype=np.float32)
    inv_mass[idx[0, 0]] = inv_mass[idx[0, -1]] = 0.0
    return types.SimpleNamespace(x0=x0, ends=ends, rest=rest, inv_mass=inv_mass, ke=1000.0, kd=1.0, dt=1.0 / 600.0)


def scatter_inputs():
    """The p2g, FEM and stencil inputs, from one generator in scatter_section's order."""
    rng = np.random.default_rng(11)
    n = S.P2G_PARTICLES
    p2g = types.SimpleNamespace(
        x=rng.uniform(0.05, 0.95, (n, 3)).astype(np.float32),
        v=rng.standard_normal((n, 3)).astype(np.float32),
        m=rng.uniform(0.5, 1.5, n).astype(np.float32),
    )
    pts, tets = S.tet_block(S.FEM_CELLS)
    rest = pts[tets]
    dm = np.stack([rest[:, 1] - rest[:, 0], rest[:, 2] - rest[:, 0], rest[:, 3] - rest[:, 0]], -1)
    deformed = pts * np.array([1.1, 0.95, 1.02], np.float32) + 0.001 * rng.standard_normal(pts.shape).astype(np.float32)
    fem = types.SimpleNamespace(
        x=deformed.astype(np.float32),
        tets=tets,
        dm_inv=np.linalg.inv(dm).astype(np.float32),
        volume=(np.abs(np.linalg.det(dm)) / 6.0).astype(np.float32),
        w=rng.standard_normal(pts.shape).astype(np.float32),
        mu=1.0,
        lam=4.0,
    )
    s = S.STENCIL
    field0 = rng.random((s, s, s), dtype=np.float32)
    return p2g, fem, field0


# -- the worker -------------------------------------------------------------------------------------


def load_backend(name):
    """The module that makes ``name``'s workloads, with the library imported and initialised."""
    if name == "taichi":
        import peers_taichi as mod
    elif name == "numba":
        import peers_numba as mod
    else:
        raise ValueError(f"unknown peer {name!r}: one of {BACKENDS}")
    mod.init()
    return mod


def make_workloads(mod, only=None):
    """The peer's workloads, in report order, for the rows selected by ``only`` (as ``--only``)."""
    made = {}
    for names, build in mod.SECTIONS:
        if not any(W._matches(n, only) for n in names):
            continue
        for w in build():
            made[w.name] = w
    return [made[n] for n in W.ROW_ORDER if n in made and W._matches(n, only)]


def serve(mod, only=None):
    """run.py's worker loop, as ``workloads.serve``: answer ``{"name", "reps", "budget"}`` lines."""
    out = sys.stdout
    sys.stdout = sys.stderr  # whatever the library prints
    workloads = {w.name: w for w in make_workloads(mod, only)}
    print(W.PROTOCOL + json.dumps({**mod.info(), "workloads": list(workloads)}), file=out, flush=True)
    for line in sys.stdin:
        if not line.strip():
            continue
        req = json.loads(line)
        name = req.get("name")
        if name not in workloads:
            r = {"name": name, "skipped": f"{mod.NAME} has no implementation of this row"}
        else:
            try:
                r = W.measure(workloads[name], reps=req.get("reps"), budget=req.get("budget", 2.0))
            except Exception as e:  # noqa: BLE001 (report and keep serving)
                r = {"name": name, "error": f"{type(e).__name__}: {e}"}
        print(W.PROTOCOL + json.dumps(r), file=out, flush=True)


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--backend", required=True, choices=BACKENDS)
    p.add_argument("--json", help="run every row this peer has and write the results here")
    p.add_argument("--serve", action="store_true", help="answer measurement requests on stdin (run.py)")
    p.add_argument("--only", nargs="*", help="substrings of workload names to run")
    p.add_argument("--reps", type=int)
    p.add_argument("--budget", type=float, default=2.0)
    a = p.parse_args(argv)
    if not (a.json or a.serve):
        p.error("give --json PATH or --serve")
    mod = load_backend(a.backend)
    if a.serve:
        serve(mod, a.only)
        return
    log = lambda s: print(s, file=sys.stderr, flush=True)
    results = W.run_all(make_workloads(mod, a.only), a.backend, reps=a.reps, budget=a.budget, log=log)
    with open(a.json, "w") as f:
        json.dump({**mod.info(), "results": results}, f, indent=1)


if __name__ == "__main__":
    main()
