"""Run the benchmark suite on weft and, when available, on warp-lang, and print one table.

    python benchmarks/run.py [--warp-python PATH] [--json out.json] [--only saxpy launch] [--quick]

weft runs in this process (the checkout this file belongs to). The same workload file
(``workloads.py``) runs under Warp in a worker subprocess with ``device="cpu"``, using the first
of: ``--warp-python``, ``$WEFT_BENCH_WARP_PYTHON``, or this interpreter if ``import warp`` works.

Columns: weft with its default thread pool (``wp.config.cpu_threads``), weft on one thread,
weft built with ``wp.config.mode = "release"`` (no bounds checks; Warp's default mode) in a
second worker, and Warp (single-threaded on the CPU). The configurations are measured one
after the other for each workload (never concurrently), so a burst of load from elsewhere on
the machine hits all columns of a row alike. Times are medians after warm-up; compilation
happens in the warm-up and is never timed.
"""

import argparse
import importlib.util
import json
import os
import platform
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)
sys.path.insert(0, REPO)  # benchmark this checkout's weft
sys.path.insert(0, HERE)

import workloads as W


def log(msg):
    print(msg, file=sys.stderr, flush=True)


def find_warp_python(arg):
    if arg:
        return arg
    env = os.environ.get("WEFT_BENCH_WARP_PYTHON")
    if env:
        return env
    if importlib.util.find_spec("warp") is not None:
        return sys.executable
    return None


class Worker:
    """``workloads.py --serve`` in a subprocess: one framework configuration, asked workload by workload."""

    def __init__(self, python, backend, extra=()):
        env = dict(os.environ)
        if backend == "weft":
            env["PYTHONPATH"] = REPO + os.pathsep + env.get("PYTHONPATH", "")
        self.errfile = tempfile.TemporaryFile(mode="w+")  # noqa: SIM115 (lives as long as the worker)
        self.proc = subprocess.Popen(
            [python, os.path.join(HERE, "workloads.py"), "--backend", backend, "--serve", *extra],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=self.errfile,
            text=True,
            env=env,
            cwd=HERE,
        )
        self.info = self._answer()

    def _answer(self):
        for line in self.proc.stdout:
            if line.startswith(W.PROTOCOL):
                return json.loads(line[len(W.PROTOCOL) :])
        self.errfile.seek(0)
        raise RuntimeError(f"benchmark worker exited (code {self.proc.wait()}):\n{self.errfile.read()[-3000:]}")

    def measure(self, name, reps, budget):
        self.proc.stdin.write(json.dumps({"name": name, "reps": reps, "budget": budget}) + "\n")
        self.proc.stdin.flush()
        return self._answer()

    def close(self):
        if self.proc.poll() is None:
            self.proc.stdin.close()
            self.proc.wait(timeout=30)


class InProcess:
    """weft in this process, optionally with a different thread count."""

    def __init__(self, wp, workloads, threads=None):
        self.wp, self.threads = wp, threads
        self.workloads = {w.name: w for w in workloads}
        self.info = {**W.backend_info(wp, "weft"), **({"threads": threads} if threads else {})}

    def measure(self, name, reps, budget):
        saved = self.wp.config.cpu_threads
        if self.threads:
            self.wp.config.cpu_threads = self.threads
        try:
            return W.measure(self.workloads[name], reps=reps, budget=budget)
        finally:
            self.wp.config.cpu_threads = saved

    def close(self):
        pass


STAT = "seconds"  # the key of a result shown in the table: "seconds" (median) or "min"


def fmt_time(r):
    if r is None or "seconds" not in r:
        return "error" if r else "-"
    scale = 1e6 if r["unit"] == "us" else 1e3
    return f"{r[STAT] * scale:.3g}".rjust(6) + (" us" if r["unit"] == "us" else " ms")


def fmt_ratio(a, b):
    if not a or not b or "seconds" not in a or "seconds" not in b:
        return "-"
    return f"{a[STAT] / b[STAT]:.2f}"


def table(titles, results, names, ratio_keys):
    """Markdown table: a row per workload, a time column per configuration, then ratios to warp."""
    keys = list(titles)
    heads = ["workload"] + [titles[k] for k in keys]
    if "warp" in keys:
        heads += [f"{titles[k]} / warp" for k in ratio_keys if k in keys]
    rows = []
    for name in names:
        row = [name] + [fmt_time(results[k].get(name)) for k in keys]
        if "warp" in keys:
            row += [fmt_ratio(results[k].get(name), results["warp"].get(name)) for k in ratio_keys if k in keys]
        rows.append(row)
    widths = [max(len(r[i]) for r in [heads] + rows) for i in range(len(heads))]
    line = lambda cells: "| " + " | ".join(c.ljust(w) for c, w in zip(cells, widths)) + " |"
    return "\n".join([line(heads), "|" + "|".join("-" * (w + 2) for w in widths) + "|"] + [line(r) for r in rows])


def main():
    p = argparse.ArgumentParser(description="weft benchmark suite (compares with warp-lang when available)")
    p.add_argument("--warp-python", help="python interpreter with warp-lang installed")
    p.add_argument("--no-warp", action="store_true", help="run weft only")
    p.add_argument("--json", help="write all results to this file")
    p.add_argument("--only", nargs="*", help="substrings of workload names to run")
    p.add_argument("--reps", type=int, help="timed repetitions per workload (default: per workload, time-capped)")
    p.add_argument("--budget", type=float, default=2.0, help="seconds of timed work per workload (min 5 reps)")
    p.add_argument(
        "--stat",
        choices=["median", "min"],
        default="median",
        help="statistic shown (min is steadier on a machine other programs are loading)",
    )
    p.add_argument("--quick", action="store_true", help="skip the weft 1-thread and release-mode columns")
    args = p.parse_args()

    t_start = time.perf_counter()
    load_start = os.getloadavg()[0] if hasattr(os, "getloadavg") else None
    import weft as wp

    nthreads = wp.config.cpu_threads
    log(f"weft {wp.__version__} from {os.path.dirname(wp.__file__)}, mode {wp.config.mode}, {nthreads} CPU threads")
    workloads = W.selected(W.make_workloads(wp), args.only)
    names = [w.name for w in workloads]

    configs, titles = {}, {}
    configs["weft"] = InProcess(wp, workloads)
    titles["weft"] = f"weft {nthreads}T"
    if not args.quick and nthreads != 1:
        configs["weft_1t"] = InProcess(wp, workloads, threads=1)
        titles["weft_1t"] = "weft 1T"
    if not args.quick and wp.config.mode != "release":
        # Built kernels keep the mode they were built with, so release mode needs its own process.
        configs["weft_release"] = Worker(sys.executable, "weft", ["--mode", "release"])
        titles["weft_release"] = f"weft release {nthreads}T"
    warp_python = None if args.no_warp else find_warp_python(args.warp_python)
    if warp_python:
        try:
            configs["warp"] = Worker(warp_python, "warp")
            titles["warp"] = f"warp {configs['warp'].info['version']}"
        except Exception as e:  # noqa: BLE001
            log(f"could not start warp under {warp_python}: {e}")
    elif not args.no_warp:
        log("warp-lang not found: pass --warp-python or set WEFT_BENCH_WARP_PYTHON to compare with Warp")

    results = {k: {} for k in configs}
    global STAT
    STAT = "seconds" if args.stat == "median" else "min"
    try:
        for name in names:
            for key, cfg in configs.items():
                r = cfg.measure(name, args.reps, args.budget)
                results[key][name] = r
                shown = fmt_time(r) if "error" not in r else r["error"]
                log(f"  {name:<28} {titles[key]:<18} {shown}")
    finally:
        for cfg in configs.values():
            cfg.close()

    warp = configs.get("warp")
    load_end = os.getloadavg()[0] if load_start is not None else None
    print()
    print(
        f"CPU: {platform.machine()}, {os.cpu_count()} cores; python {platform.python_version()}; "
        f"weft {wp.__version__} ({wp.config.mode} mode, {nthreads} threads)"
        + (f"; warp {warp.info['version']} ({warp.info['mode']} mode, device cpu, 1 thread)" if warp else "")
    )
    if load_start is not None:
        print(f"load average (1 min): {load_start:.2f} at start, {load_end:.2f} at end")
    print(
        f"{'median' if STAT == 'seconds' else 'minimum'} time per operation after warm-up (launch rows: per launch); ratio < 1: weft is faster"
    )
    print()
    print(table(titles, results, names, ratio_keys=("weft", "weft_1t", "weft_release")))
    print()
    for key, title in titles.items():
        bw = [
            f"{r['name']} {r['gbps'] * r['seconds'] / r[STAT]:.1f} GB/s" for r in results[key].values() if "gbps" in r
        ]
        if bw:
            print(f"{title:<18} " + "; ".join(bw))
    if warp:
        bad, expected = [], []
        for name, r in results["weft"].items():
            c, o = r.get("check"), results["warp"].get(name, {}).get("check")
            if c is not None and o is not None and abs(c - o) > 1e-3 * max(1.0, abs(o)):
                (expected if r.get("differs") else bad).append(f"{name}: weft {c:.6g} vs warp {o:.6g}")
                if r.get("differs"):
                    expected[-1] += f" ({r['differs']})"
        print("results agree with warp" if not bad else "RESULTS DIFFER: " + "; ".join(bad))
        if expected:
            print("expected differences: " + "; ".join(expected))
    print(f"total {time.perf_counter() - t_start:.0f} s")

    if args.json:
        with open(args.json, "w") as f:
            json.dump(
                {
                    "machine": {
                        "cpu_count": os.cpu_count(),
                        "platform": platform.platform(),
                        "python": platform.python_version(),
                        "loadavg": [load_start, load_end],
                    },
                    "workloads": {w.name: w.what for w in workloads},
                    "configs": {k: {"title": titles[k], **cfg.info} for k, cfg in configs.items()},
                    "results": {k: list(v.values()) for k, v in results.items()},
                },
                f,
                indent=1,
            )
        log(f"wrote {args.json}")


if __name__ == "__main__":
    main()
