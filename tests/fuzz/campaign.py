"""Run a gradient-fuzzing campaign and report it.

    python tests/fuzz/campaign.py --seed 1 --count 20000 [--batch 40] [--budget SECONDS] [--out DIR]

Checks programs ``0 .. count-1`` of campaign ``seed`` (``fuzz_gen.program``) in batches, prints a
line per batch, and at the end the outcome counts, the constructs covered (how many programs use
each) and every program that did not pass, with the source needed to reproduce it: the same seed
and index give the same program. ``--out`` keeps the generated modules and writes ``report.txt``.
"""

from __future__ import annotations

import argparse
import collections
import os
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import fuzz_check
import fuzz_gen


def campaign(seed: int, count: int, batch: int, directory: str, budget: float | None, log=print) -> dict:
    """Check ``count`` programs (or as many as ``budget`` seconds allow); return the report's data."""
    start = time.perf_counter()
    statuses: collections.Counter = collections.Counter()
    constructs: collections.Counter = collections.Counter()
    failures = []
    done = 0
    for first in range(0, count, batch):
        if budget is not None and time.perf_counter() - start > budget:
            break
        indices = list(range(first, min(count, first + batch)))
        for outcome in fuzz_check.run_batch(seed, indices, directory):
            statuses[outcome.status] += 1
            constructs.update(fuzz_gen.program(seed, outcome.index).constructs)
            if outcome.status not in ("ok", "kink"):
                failures.append(outcome)
        done += len(indices)
        log(f"{done} programs, {time.perf_counter() - start:.0f} s: {dict(statuses)}")
    return {
        "seed": seed,
        "programs": done,
        "seconds": time.perf_counter() - start,
        "statuses": statuses,
        "constructs": constructs,
        "failures": failures,
    }


def format_report(data: dict) -> str:
    lines = [
        f"campaign seed {data['seed']}: {data['programs']} programs in {data['seconds']:.0f} s",
        "outcomes: " + ", ".join(f"{k} {v}" for k, v in sorted(data["statuses"].items())),
        "constructs (programs using each):",
    ]
    lines += [f"  {name:<28} {n}" for name, n in sorted(data["constructs"].items())]
    for f in data["failures"]:
        program = fuzz_gen.program(data["seed"], f.index)
        lines += ["", f"== program {f.index}: {f.status}", f.detail, "-- source:", program.source]
    return "\n".join(lines) + "\n"


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--count", type=int, default=1000)
    p.add_argument("--batch", type=int, default=40, help="programs compiled per module")
    p.add_argument("--budget", type=float, help="stop starting batches after this many seconds")
    p.add_argument("--out", help="keep the generated modules here and write report.txt")
    args = p.parse_args(argv)
    directory = args.out or tempfile.mkdtemp(prefix="weft_fuzz_")
    os.makedirs(directory, exist_ok=True)
    data = campaign(args.seed, args.count, args.batch, directory, args.budget)
    text = format_report(data)
    print(text)
    if args.out:
        with open(os.path.join(args.out, "report.txt"), "w") as f:
            f.write(text)
    return 0 if not data["failures"] else 1


if __name__ == "__main__":
    sys.exit(main())
