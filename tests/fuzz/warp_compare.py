"""Compare weft with warp-lang on generated programs of Warp's correct subset.

    python tests/fuzz/warp_compare.py --warp-python /path/to/venv/bin/python --seed 1 --count 400

For each program of the Warp-subset campaign (``fuzz_gen.program(seed, i, warp_subset=True)``:
no construct where Warp's gradients are known to be wrong, see ``fuzz_gen.WARP_SUBSET_EXCLUDES``)
it checks weft against finite differences (``fuzz_check``), then runs the same source under
``import warp as wp`` with the same inputs in warp-lang's interpreter and compares the outputs and
the tape gradients. Outcomes per program: ``agree``; ``differ`` (outputs or gradients differ beyond
float64 round-off, with the numbers); ``warp-error`` (warp-lang did not build or run it, with its
message); and the finite-difference outcomes of weft itself when those are not ``ok``.
"""

from __future__ import annotations

import argparse
import collections
import json
import os
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import fuzz_check  # noqa: E402
import fuzz_gen  # noqa: E402
import numpy as np  # noqa: E402

import weft as wp  # noqa: E402

RTOL, ATOL = 1e-7, 1e-9

# Runs under warp-lang's interpreter: loads the module, runs each program's launch and tape.
DRIVER = r"""
import importlib.util, json, sys, traceback
import numpy as np
import warp as wp
wp.config.quiet = True
job = json.load(open(sys.argv[1]))
spec = importlib.util.spec_from_file_location(job["module"], job["path"])
out = {}
try:
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
except Exception as e:
    print(json.dumps({"module_error": f"{type(e).__name__}: {e}"}))
    sys.exit(0)
for p in job["programs"]:
    try:
        kernel = getattr(module, p["name"])
        x = wp.array(np.array(p["x"]), dtype=wp.float64, requires_grad=True)
        y = wp.zeros(job["y_size"], dtype=wp.float64, requires_grad=True)
        tape = wp.Tape()
        with tape:
            wp.launch(kernel, dim=job["threads"], inputs=[x, y, p["n"]], device="cpu")
        forward = y.numpy().tolist()  # before backward: Warp's replay re-runs the forward's atomics
        tape.backward(grads={y: wp.array(np.array(p["w"]), dtype=wp.float64)})
        out[p["index"]] = {"y": forward, "grad": x.grad.numpy().tolist()}
    except Exception as e:
        out[p["index"]] = {"error": f"{type(e).__name__}: {str(e)[:500]}"}
print(json.dumps(out))
"""


def weft_run(kernel, x_np, w, n):
    """weft's outputs and tape gradient for one program and its inputs."""
    x = wp.array(x_np, dtype=wp.float64, requires_grad=True)
    y = wp.zeros(fuzz_gen.Y_SIZE, dtype=wp.float64, requires_grad=True)
    tape = wp.Tape()
    with tape:
        wp.launch(kernel, dim=fuzz_gen.THREADS, inputs=[x, y, n])
    forward = y.numpy().copy()
    tape.backward(grads={y: w})
    return forward, x.grad.numpy().copy()


def compare_batch(seed: int, indices, warp_python: str, directory: str) -> list:
    """``(index, outcome, detail)`` for the Warp-subset programs ``indices`` of campaign ``seed``."""
    programs = [fuzz_gen.program(seed, i, warp_subset=True) for i in indices]
    results, jobs, weft_values = [], [], {}
    checked = {o.index: o for o in fuzz_check.run_batch_programs(programs, directory, f"warp_s{seed}_b{indices[0]}")}
    module = __import__(f"warp_s{seed}_b{indices[0]}")
    for p in programs:
        outcome = checked[p.index]
        if outcome.status not in ("ok", "kink"):
            results.append((p.index, f"weft-{outcome.status}", outcome.detail))
            continue
        x_np, w, n = fuzz_check.inputs(seed, p.index)
        weft_values[p.index] = weft_run(getattr(module, p.name), x_np, w, n)
        jobs.append({"index": p.index, "name": p.name, "x": x_np.tolist(), "w": w.tolist(), "n": n})
    if not jobs:
        return results
    name = f"warpside_s{seed}_b{indices[0]}"
    path = os.path.join(directory, name + ".py")
    with open(path, "w") as f:
        f.write(fuzz_gen.module_source(programs).replace("import weft as wp", "import warp as wp", 1))
    job_path = os.path.join(directory, name + ".json")
    with open(job_path, "w") as f:
        json.dump(
            {"module": name, "path": path, "programs": jobs, "y_size": fuzz_gen.Y_SIZE, "threads": fuzz_gen.THREADS}, f
        )
    run = subprocess.run(
        [warp_python, "-c", DRIVER, job_path], capture_output=True, text=True, timeout=3600, check=False
    )
    lines = [line for line in run.stdout.splitlines() if line.startswith("{")]
    if not lines:
        raise RuntimeError(f"warp-lang driver failed (exit {run.returncode}): {run.stderr[-2000:]}")
    warp_out = json.loads(lines[-1])
    if "module_error" in warp_out:
        return results + [(j["index"], "warp-error", warp_out["module_error"]) for j in jobs]
    for j in jobs:
        got = warp_out.get(str(j["index"]), {"error": "no result"})
        if "error" in got:
            results.append((j["index"], "warp-error", got["error"]))
            continue
        y_weft, g_weft = weft_values[j["index"]]
        y_warp, g_warp = np.array(got["y"]), np.array(got["grad"])
        if np.allclose(y_weft, y_warp, rtol=RTOL, atol=ATOL) and np.allclose(g_weft, g_warp, rtol=RTOL, atol=ATOL):
            results.append((j["index"], "agree", ""))
        else:
            detail = (
                f"y weft {y_weft.tolist()} warp {y_warp.tolist()}\ngrad weft {g_weft.tolist()} warp {g_warp.tolist()}"
            )
            results.append((j["index"], "differ", detail))
    return results


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--warp-python", required=True, help="an interpreter with warp-lang installed")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--count", type=int, default=200)
    ap.add_argument("--batch", type=int, default=40)
    ap.add_argument("--out", help="keep the generated modules here")
    args = ap.parse_args(argv)
    directory = args.out or tempfile.mkdtemp(prefix="weft_warp_compare_")
    os.makedirs(directory, exist_ok=True)
    sys.path.insert(0, directory)
    counts: collections.Counter = collections.Counter()
    notable = []
    for first in range(0, args.count, args.batch):
        for index, outcome, detail in compare_batch(
            args.seed, list(range(first, min(args.count, first + args.batch))), args.warp_python, directory
        ):
            counts[outcome] += 1
            if outcome != "agree":
                notable.append((index, outcome, detail))
        print(f"{min(args.count, first + args.batch)} programs: {dict(counts)}", flush=True)
    print(f"warp comparison, seed {args.seed}: " + ", ".join(f"{k} {v}" for k, v in sorted(counts.items())))
    for index, outcome, detail in notable:
        print(
            f"\n== program {index}: {outcome}\n{detail}\n-- source:\n{fuzz_gen.program(args.seed, index, warp_subset=True).source}"
        )
    return 0 if counts.get("differ", 0) == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
