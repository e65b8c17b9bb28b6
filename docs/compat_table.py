"""Turn a conformance run's JSON into the "Coming from Warp" table.

Input: ``docs/conformance/weft.json``, written by ``../shared/conformance/run.py --provider weft
--baseline ... --json``, which runs NVIDIA Warp's own unit tests against weft on the CPU, and
``docs/conformance/baseline_warp-1.19.0.json``, the same tests on real warp-lang 1.19.0 (per-test
outcomes dropped: only the per-area and per-file counts are kept). Output: a Markdown table, per
area of Warp's suite, of the tests that pass on weft, that pass on Warp, and their ratio.

Run by the documentation build (``_ext/weft_docs.py``); by hand::

    python docs/compat_table.py            # print the table
    python docs/compat_table.py --refresh /tmp/weft.json   # copy a new run in, then print
"""

from __future__ import annotations

import argparse
import json
import os
import shutil

HERE = os.path.dirname(os.path.abspath(__file__))
RUN_JSON = os.path.join(HERE, "conformance", "weft.json")
BASELINE_JSON = os.path.join(HERE, "conformance", "baseline_warp-1.19.0.json")


def _load(path):
    with open(path) as f:
        return json.load(f)


def rows(run: dict, baseline: dict) -> list[tuple[str, int, int, int]]:
    """(area, weft passed, warp passed, files) per area of the baseline, in the baseline's order."""
    out = []
    for area, base in baseline["areas"].items():
        got = run["areas"].get(area, {})
        out.append((area, int(got.get("passed", 0)), int(base.get("passed", 0)), int(base.get("files", 0))))
    return out


def _pct(a: int, b: int) -> str:
    return f"{100.0 * a / b:.1f} %" if b else "-"


def table(run: dict, baseline: dict) -> str:
    """The Markdown table, with a total row and a line saying which run produced it."""
    lines = [
        "| Area of Warp's test suite | Test files | Pass on weft | Pass on Warp 1.19.0 | weft / Warp |",
        "|---|---:|---:|---:|---:|",
    ]
    tw = tb = tf = 0
    for area, w, b, files in rows(run, baseline):
        lines.append(f"| {area} | {files} | {w} | {b} | {_pct(w, b)} |")
        tw, tb, tf = tw + w, tb + b, tf + files
    lines.append(f"| **all** | **{tf}** | **{tw}** | **{tb}** | **{_pct(tw, tb)}** |")
    started = run.get("started", "?")
    commit = run.get("commit") or run.get("ref") or "?"
    weft_rev = run.get("weft_commit")
    lines += [
        "",
        f"Generated from `docs/conformance/weft.json`: a run of {sum(1 for _ in run.get('files', {}))} test"
        f" files of Warp's suite (Warp commit `{str(commit)[:12]}`) against weft on the CPU, started {started}"
        + (f", weft commit `{weft_rev[:12]}`" if weft_rev else "")
        + f", {run.get('jobs', '?')} files at a time, in {float(run.get('wall_s', 0)) / 60:.0f} minutes."
        " Tests that need CUDA skip on both sides and are not counted.",
    ]
    rerun = sorted(f for f, info in run.get("files", {}).items() if "rerun alone" in (info.get("note") or ""))
    if rerun:
        lines[-1] += (
            " Rerun alone after timing out in the full run (on a loaded machine): "
            + ", ".join(f"`{f}`" for f in rerun) + "."
        )
    return "\n".join(lines) + "\n"


def write(path: str, run_json: str = RUN_JSON, baseline_json: str = BASELINE_JSON) -> str:
    """Write the table to ``path`` (only when it changed) and return it."""
    text = table(_load(run_json), _load(baseline_json))
    os.makedirs(os.path.dirname(path), exist_ok=True)
    if not os.path.exists(path) or open(path).read() != text:
        with open(path, "w") as f:
            f.write(text)
    return text


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--refresh", metavar="RUN.json", help="copy this run's JSON to docs/conformance/weft.json first")
    args = ap.parse_args(argv)
    if args.refresh:
        shutil.copyfile(args.refresh, RUN_JSON)
    print(table(_load(RUN_JSON), _load(BASELINE_JSON)), end="")


if __name__ == "__main__":
    main()
