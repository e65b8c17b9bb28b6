"""Run the benchmark suite on weft and, when available, on warp-lang, and print one table.

    python benchmarks/run.py [--warp-python PATH] [--json out.json] [--only saxpy launch] [--quick]
    python benchmarks/run.py --device cuda:0 --no-warp --quick     # weft on the CPU next to weft on a GPU
    python benchmarks/run.py --warp-python W --peers-python P      # + Taichi and Numba columns (P has both)

weft runs in this process (the checkout this file belongs to). The same workload file
(``workloads.py``) runs under Warp in a worker subprocess with ``device="cpu"``, using the first
of: ``--warp-python``, ``$WEFT_BENCH_WARP_PYTHON``, or this interpreter if ``import warp`` works.

Columns: weft with its default thread pool (``wp.config.cpu_threads``), weft on one thread,
weft built with ``wp.config.mode = "release"`` (no bounds checks; Warp's default mode) in a
second worker, and Warp (single-threaded on the CPU). The configurations are measured one
after the other for each workload (never concurrently), so a burst of load from elsewhere on
the machine hits all columns of a row alike. Times are medians after warm-up; compilation
happens in the warm-up and is never timed.

``--taichi-python`` / ``--numba-python`` (or ``--peers-python`` for both; ``$WEFT_BENCH_PEERS_PYTHON``)
add a column per CPU peer: ``peers.py`` in a worker under that interpreter, Taichi (``ti.cpu``) or
Numba (``parallel=True``) on all cores, on the rows that library can express (the others show
``-``). A peer's checksum is compared with weft's; a row whose result differs shows ``differs``
and is not used. The column *weft / best peer* divides weft's time by the fastest of Warp and the
peers whose results agree, and the last lines give its geometric mean. Without a peer's Python
its column is left out.

``--device cuda:0`` (repeatable, or comma-separated) adds a column per GPU: the same workloads made
on that device by this process (``make_workloads(wp, device=...)``), and a column of its time over
the CPU column's. A workload that cannot run on the GPU is shown as skipped, one that raises as
``error: ...``; the run goes on with the other rows.
"""

import argparse
import importlib.util
import json
import math
import os
import platform
import signal
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

    SCRIPT = "workloads.py"

    def __init__(self, python, backend, extra=()):
        env = dict(os.environ)
        if backend == "weft":
            env["PYTHONPATH"] = REPO + os.pathsep + env.get("PYTHONPATH", "")
        self.errfile = tempfile.TemporaryFile(mode="w+")  # noqa: SIM115 (lives as long as the worker)
        self.proc = subprocess.Popen(
            [python, os.path.join(HERE, self.SCRIPT), "--backend", backend, "--serve", *extra],
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


PEERS = ("taichi", "numba")  # the CPU peers besides Warp, each a column when its Python is given


def find_peer_pythons(args):
    """``{peer: interpreter}`` for the peers given by ``--<peer>-python``, ``--peers-python`` or
    ``$WEFT_BENCH_PEERS_PYTHON`` (a peer with none is simply not run)."""
    both = args.peers_python or os.environ.get("WEFT_BENCH_PEERS_PYTHON")
    found = {peer: getattr(args, f"{peer}_python") or both for peer in PEERS}
    return {peer: python for peer, python in found.items() if python}


class PeerWorker(Worker):
    """``peers.py --backend PEER --serve``: a row the peer has no version of is ``None`` (shown ``-``)."""

    SCRIPT = "peers.py"

    def measure(self, name, reps, budget):
        if name not in self.info.get("workloads", ()):
            return None
        return super().measure(name, reps, budget)


CHECK_RTOL = 1e-3  # relative agreement of two checksums (float atomics add in different orders)


def agrees(r, ref):
    """Whether result ``r``'s checksum matches ``ref``'s (True when either has none to compare)."""
    c, o = (r or {}).get("check"), (ref or {}).get("check")
    if c is None or o is None or (math.isnan(c) and math.isnan(o)):  # NaN both: as the Warp check does
        return True
    return abs(c - o) <= CHECK_RTOL * max(1.0, abs(o))


def verify_peer(r, ref, title):
    """``r`` unchanged if its checksum agrees with weft's ``ref``; else marked ``differs``, its time
    kept aside (``unverified_seconds``) so that it is never shown or compared as a time."""
    if r is None or "seconds" not in r or agrees(r, ref):
        return r
    r = {**{k: v for k, v in r.items() if k not in ("seconds", "min")}, "unverified_seconds": r["seconds"]}
    r["differs"] = f"result differs: {title} {r['check']:.6g} vs weft {ref['check']:.6g}"
    return r


def is_reference_row(name):
    """A row that runs the same NumPy / SciPy code in every column (a yardstick, not a peer's time)."""
    return name.startswith(("numpy ", "scipy "))


def best_peer(results, name, peers, weft="weft"):
    """``(peer key, ratio of weft's time to its)`` for the fastest peer on row ``name`` whose
    checksum agrees with weft's, or None (also for the NumPy / SciPy reference rows).
    ``peers``: the keys of the peer columns (warp included)."""
    w = results.get(weft, {}).get(name)
    if not w or "seconds" not in w or is_reference_row(name):
        return None
    timed = [
        (results[k][name][STAT], k)
        for k in peers
        if "seconds" in (results.get(k, {}).get(name) or {}) and agrees(results[k][name], w)
    ]
    if not timed:
        return None
    t, k = min(timed)
    return k, w[STAT] / t


def geomean(xs):
    xs = list(xs)
    return math.exp(sum(math.log(x) for x in xs) / len(xs)) if xs else None


class InProcess:
    """weft in this process, optionally with a different thread count, on the CPU or a GPU."""

    def __init__(self, wp, workloads, threads=None, device="cpu"):
        self.wp, self.threads = wp, threads
        self.workloads = {w.name: w for w in workloads}
        self.info = {**W.backend_info(wp, "weft", device), **({"threads": threads} if threads else {})}

    def measure(self, name, reps, budget):
        saved = self.wp.config.cpu_threads
        if self.threads:
            self.wp.config.cpu_threads = self.threads
        w = self.workloads[name]
        try:
            return W.measure(w, reps=reps, budget=budget)
        except Exception as e:  # noqa: BLE001 (one failing workload must not end the run)
            if w.sync:
                W.settle(w.sync)  # a GPU error raised late belongs to this row, not the next
            return {"name": name, "what": w.what, "unit": w.unit, "error": f"{type(e).__name__}: {e}"}
        finally:
            self.wp.config.cpu_threads = saved

    def close(self):
        pass


class Unavailable:
    """A column that could not be set up (e.g. its GPU is missing): every row is that error."""

    def __init__(self, info, error):
        self.info, self.error = info, error

    def measure(self, name, reps, budget):
        return {"name": name, "error": self.error}

    def close(self):
        pass


STAT = "seconds"  # the key of a result shown in the table: "seconds" (median) or "min"


CELL_ERROR = 60  # characters of an error message shown in a table cell (all of it below the table)


def fmt_time(r):
    if r is None:
        return "-"
    if "seconds" not in r:
        if "unverified_seconds" in r:
            return "differs"
        if "skipped" in r:
            return "skipped"
        msg = " ".join(str(r.get("error", "?")).split())
        return "error: " + (msg if len(msg) <= CELL_ERROR else msg[: CELL_ERROR - 3] + "...")
    scale = 1e6 if r["unit"] == "us" else 1e3
    return f"{r[STAT] * scale:.3g}".rjust(6) + (" us" if r["unit"] == "us" else " ms")


def fmt_ratio(a, b):
    if not a or not b or "seconds" not in a or "seconds" not in b:
        return "-"
    return f"{a[STAT] / b[STAT]:.2f}"


def table(titles, results, names, ratios, extra=()):
    """Markdown table: a row per workload, a time column per configuration, then the ``ratios``,
    ``(numerator key, denominator key)`` pairs of configurations (to warp, GPU to CPU), then the
    ``extra`` columns, ``(title, cell(name) -> str)``."""
    keys = list(titles)
    heads = ["workload"] + [titles[k] for k in keys] + [f"{titles[a]} / {titles[b]}" for a, b in ratios]
    heads += [title for title, _ in extra]
    rows = []
    for name in names:
        row = [name] + [fmt_time(results[k].get(name)) for k in keys]
        row += [fmt_ratio(results[a].get(name), results[b].get(name)) for a, b in ratios]
        row += [cell(name) for _, cell in extra]
        rows.append(row)
    widths = [max(len(r[i]) for r in [heads] + rows) for i in range(len(heads))]
    line = lambda cells: "| " + " | ".join(c.ljust(w) for c, w in zip(cells, widths)) + " |"
    return "\n".join([line(heads), "|" + "|".join("-" * (w + 2) for w in widths) + "|"] + [line(r) for r in rows])


def main():
    p = argparse.ArgumentParser(description="weft benchmark suite (compares with warp-lang when available)")
    p.add_argument("--warp-python", help="python interpreter with warp-lang installed")
    p.add_argument("--no-warp", action="store_true", help="run weft only")
    p.add_argument("--peers-python", help="python interpreter with taichi and numba installed (both peer columns)")
    p.add_argument("--taichi-python", help="python interpreter with taichi installed (a Taichi column)")
    p.add_argument("--numba-python", help="python interpreter with numba installed (a Numba column)")
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
    p.add_argument(
        "--deterministic",
        action="store_true",
        help="add weft columns with wp.config.deterministic = RUN_TO_RUN and GPU_TO_GPU (the cost of reproducible atomics)",
    )
    p.add_argument(
        "--device",
        action="append",
        default=[],
        metavar="DEV",
        help="also run weft on this GPU, in this process (cuda:0; repeatable or comma-separated; cpu is always run)",
    )
    p.add_argument(
        "--deadline",
        type=float,
        help="wall-clock seconds after which no further workload is started (the rest show '-')",
    )
    args = p.parse_args()
    gpus = []
    for d in (d.strip() for arg in args.device for d in arg.split(",")):
        if d and d != "cpu" and d not in gpus:
            gpus.append(d)

    # a timeout's SIGTERM ends the run like Ctrl-C: the rows measured so far are still printed
    def terminated(signum, frame):
        raise KeyboardInterrupt(f"signal {signum}")

    signal.signal(signal.SIGTERM, terminated)

    t_start = time.perf_counter()
    load_start = os.getloadavg()[0] if hasattr(os, "getloadavg") else None
    import weft as wp

    nthreads = wp.config.cpu_threads
    log(f"weft {wp.__version__} from {os.path.dirname(wp.__file__)}, mode {wp.config.mode}, {nthreads} CPU threads")
    for term in W.unmatched(args.only):
        log(f"--only {term!r} selects no workload")
    workloads = W.selected(W.make_workloads(wp, "cpu", args.only), args.only)
    names = [w.name for w in workloads]

    only = ["--only", *args.only] if args.only else []  # workers set up the selected workloads only
    configs, titles = {}, {}
    configs["weft"] = InProcess(wp, workloads)
    titles["weft"] = f"weft {nthreads}T"
    if not args.quick and nthreads != 1:
        configs["weft_1t"] = InProcess(wp, workloads, threads=1)
        titles["weft_1t"] = "weft 1T"
    if not args.quick and wp.config.mode != "release":
        # Built kernels keep the mode they were built with, so release mode needs its own process.
        configs["weft_release"] = Worker(sys.executable, "weft", ["--mode", "release", *only])
        titles["weft_release"] = f"weft release {nthreads}T"
    if args.deterministic:
        for key, mode, short in (("weft_r2r", "RUN_TO_RUN", "run-to-run"), ("weft_g2g", "GPU_TO_GPU", "gpu-to-gpu")):
            configs[key] = Worker(sys.executable, "weft", ["--deterministic", mode, *only])
            titles[key] = f"weft {short} {nthreads}T"
    warp_python = None if args.no_warp else find_warp_python(args.warp_python)
    if warp_python:
        try:
            configs["warp"] = Worker(warp_python, "warp", only)
            titles["warp"] = f"warp {configs['warp'].info['version']}"
        except Exception as e:  # noqa: BLE001
            log(f"could not start warp under {warp_python}: {e}")
    elif not args.no_warp:
        log("warp-lang not found: pass --warp-python or set WEFT_BENCH_WARP_PYTHON to compare with Warp")
    for peer, python in find_peer_pythons(args).items():
        try:
            configs[peer] = PeerWorker(python, peer, only)
            titles[peer] = f"{peer} {configs[peer].info['version']}"
        except Exception as e:  # noqa: BLE001 (the other columns still run)
            log(f"could not start {peer} under {python}: {e}")
    peer_keys = [k for k in ("warp", *PEERS) if k in configs]
    gpu_names = {}
    for dev in gpus:
        key = f"weft_{dev}"
        titles[key] = f"weft {dev}"
        try:
            gpu_names[dev] = wp.get_device(dev).name
            if not wp.get_device(dev).is_cuda:
                raise ValueError(f"{dev} is not a GPU")
            log(f"{dev}: {gpu_names[dev]}; setting up its workloads")
            configs[key] = InProcess(wp, W.selected(W.make_workloads(wp, dev, args.only), args.only), device=dev)
        except Exception as e:  # noqa: BLE001 (the CPU columns still run)
            msg = f"{type(e).__name__}: {e}"
            log(f"{dev} unavailable: {msg}")
            configs[key] = Unavailable({"backend": "weft", "device": dev, "device_name": gpu_names.get(dev)}, msg)

    titles = {k: titles[k] for k in configs}  # configuration order
    results = {k: {} for k in configs}
    global STAT
    STAT = "seconds" if args.stat == "median" else "min"
    ratios = [(k, "warp") for k in ("weft", "weft_1t", "weft_release") if k in configs and "warp" in configs]
    ratios += [(k, "weft") for k in ("weft_r2r", "weft_g2g") if k in configs]
    ratios += [(f"weft_{dev}", "weft") for dev in gpus]
    machine = {
        "cpu_count": os.cpu_count(),
        "cpu_usable": len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count(),
        "platform": platform.platform(),
        "python": platform.python_version(),
        "loadavg": [load_start, None],
    }
    if gpus:
        machine["gpus"] = gpu_names

    def write_json(complete):
        if not args.json:
            return
        with open(args.json, "w") as f:
            json.dump(
                {
                    "machine": machine,
                    "complete": complete,
                    "workloads": {w.name: w.what for w in workloads},
                    "configs": {k: {"title": titles[k], **cfg.info} for k, cfg in configs.items()},
                    "results": {k: list(v.values()) for k, v in results.items()},
                    "best_peer": {
                        n: {"peer": b[0], "ratio": b[1]}
                        for n in names
                        if (b := best_peer(results, n, peer_keys)) and any(k in configs for k in PEERS)
                    },
                },
                f,
                indent=1,
            )

    stopped = None
    try:
        for name in names:
            if args.deadline is not None and time.perf_counter() - t_start > args.deadline:
                stopped = f"--deadline {args.deadline:g} s reached before '{name}'"
                break
            for key, cfg in configs.items():
                try:
                    r = cfg.measure(name, args.reps, args.budget)
                except Exception as e:  # noqa: BLE001 (e.g. a worker that died: its column only)
                    r = {"name": name, "error": f"{type(e).__name__}: {e}"}
                if r is None:  # a peer without this row
                    continue
                if key in PEERS:
                    r = verify_peer(r, results["weft"].get(name), titles[key])
                results[key][name] = r
                shown = fmt_time(r)
                if "unverified_seconds" in r:
                    shown = r["differs"]
                elif "seconds" not in r:
                    shown = f"skipped: {r['skipped']}" if "skipped" in r else f"error: {r.get('error')}"
                log(f"  {name:<28} {titles[key]:<18} {shown}")
            write_json(False)  # a run cut short still leaves the rows measured so far
    except KeyboardInterrupt as e:
        stopped = f"interrupted ({e or 'Ctrl-C'})"
    finally:
        for cfg in configs.values():
            try:
                cfg.close()
            except Exception as e:  # noqa: BLE001
                log(f"closing a worker: {e}")
    if stopped:
        log(f"stopped: {stopped}; printing the rows measured so far")

    warp = configs.get("warp")
    load_end = os.getloadavg()[0] if load_start is not None else None
    print()
    print(
        f"CPU: {platform.machine()}, {os.cpu_count()} cores; python {platform.python_version()}; "
        f"weft {wp.__version__} ({wp.config.mode} mode, {nthreads} threads)"
        + (f"; warp {warp.info['version']} ({warp.info['mode']} mode, device cpu, 1 thread)" if warp else "")
    )
    for peer in PEERS:
        if peer in configs:
            i = configs[peer].info
            layer = f", {i['threading_layer']} threading layer" if i.get("threading_layer") else ""
            print(f"{peer} {i['version']} (device cpu, {i['threads']} threads{layer}), on the rows it can express")
    for dev in gpus:
        print(f"GPU {dev}: {gpu_names.get(dev) or 'unavailable'} (weft {wp.config.mode} mode, in this process)")
    if load_start is not None:
        print(f"load average (1 min): {load_start:.2f} at start, {load_end:.2f} at end")
    print(
        f"{'median' if STAT == 'seconds' else 'minimum'} time per operation after warm-up (launch rows: per launch); ratio < 1: weft is faster"
        + ("; GPU / CPU ratio < 1: the GPU is faster" if gpus else "")
    )
    if stopped:
        print(f"stopped early: {stopped}")
    print()
    best = {name: best_peer(results, name, peer_keys) for name in names}
    extra = []
    if any(k in configs for k in PEERS):
        cell = lambda name: f"{best[name][1]:.2f} {best[name][0]}" if best[name] else "-"
        extra.append((f"{titles['weft']} / best peer", cell))
    print(table(titles, results, names, ratios, extra))
    print()
    notes = []
    for key, title in titles.items():
        for r in results[key].values():
            if "unverified_seconds" in r:
                notes.append(f"{title:<18} {r['name']}: {r['differs']} (not timed)")
            elif "seconds" not in r:
                kind = "skipped" if "skipped" in r else "error"
                why = " ".join(str(r.get("skipped") or r.get("error")).split())
                notes.append(f"{title:<18} {r['name']}: {kind}: {why}")
    if notes:
        print("\n".join(notes))
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
    if extra:
        for label, keys in (
            ("best CPU peer", peer_keys),
            ("best of Taichi and Numba", [k for k in PEERS if k in configs]),
        ):
            ratios_best = [b[1] for b in (best_peer(results, n, keys) for n in names) if b]
            if ratios_best:
                print(
                    f"geomean {titles['weft']} / {label}: {geomean(ratios_best):.2f} over {len(ratios_best)} rows"
                    f" ({', '.join(titles[k] for k in keys)}); < 1: weft is faster"
                )
    for dev in gpus:
        # GPU float atomics add in another order than the CPU's threads: close, not bit-equal
        bad, same = [], 0
        for name, r in results.get(f"weft_{dev}", {}).items():
            c, o = r.get("check"), results["weft"].get(name, {}).get("check")
            if c is None or o is None:
                continue
            if abs(c - o) > 1e-3 * max(1.0, abs(o)):
                bad.append(f"{name}: {dev} {c:.6g} vs cpu {o:.6g}")
            else:
                same += 1
        if bad:
            print(f"{dev} RESULTS DIFFER from the CPU's (relative 1e-3): " + "; ".join(bad))
        elif same:
            print(f"{dev} results agree with the CPU's ({same} checksums, relative 1e-3)")
    print(f"total {time.perf_counter() - t_start:.0f} s")

    if args.json:
        machine["loadavg"][1] = load_end
        write_json(stopped is None)
        log(f"wrote {args.json}")


if __name__ == "__main__":
    main()
