"""Write the GPU check's report (Markdown) from the logs of ``tools/gpu_check.sh``.

    python tools/gpu_report.py LOGS_DIR REPORT.md

LOGS_DIR holds ``phases.txt`` (one ``name exit_code seconds`` line per phase), ``NAME.log`` for each
phase, ``env.log``, the pytest JUnit files ``cuda_runtime.xml`` and ``suite.xml``, and
``benchmarks.json``. The report gives the machine (GPU, driver, CUDA, packages), each phase's
outcome and time, the tests passed / failed / skipped with every failure's message, the examples'
closing lines and the benchmark table.
"""

from __future__ import annotations

import os
import sys
import xml.etree.ElementTree as ET

PHASE_TITLES = {
    "install": "install (pip, no network)",
    "smoke": "smoke test (tools/gpu_smoke.py)",
    "cuda_runtime": "tests/test_cuda_runtime.py",
    "example_bounce": "example bounce",
    "example_cloth": "example cloth",
    "example_torch_optimize": "example torch_optimize",
    "benchmarks": "benchmarks (saxpy, n-body, cloth)",
    "suite": "test suite on cuda:0",
}


def read(path: str) -> str:
    try:
        with open(path, errors="replace") as f:
            return f.read()
    except OSError:
        return ""


def phases(logs: str) -> list:
    out = []
    for line in read(os.path.join(logs, "phases.txt")).splitlines():
        parts = line.split()
        if len(parts) == 3:
            out.append((parts[0], parts[1], parts[2]))
    return out


def outcome(rc: str) -> str:
    return {"0": "ok", "124": "TIMED OUT", "137": "KILLED", "skipped": "skipped (budget spent)"}.get(
        rc, f"FAILED (exit {rc})"
    )


def junit(path: str):
    """(counts, failures, per-file counts) of a pytest JUnit file, or None when absent or unreadable."""
    try:
        root = ET.parse(path).getroot()
    except (OSError, ET.ParseError):
        return None
    counts = {"passed": 0, "failed": 0, "skipped": 0}
    failures, per_file = [], {}
    for case in root.iter("testcase"):
        name = f"{case.get('classname', '')}::{case.get('name', '')}"
        module = case.get("classname", "").split(".")[-1] or "?"
        status = "passed"
        for child in case:
            if child.tag in ("failure", "error"):
                status = "failed"
                message = (child.get("message") or child.text or "").strip().splitlines()
                failures.append((name, child.tag, message[0][:300] if message else ""))
                break
            if child.tag == "skipped":
                status = "skipped"
        counts[status] += 1
        per_file.setdefault(module, {"passed": 0, "failed": 0, "skipped": 0})[status] += 1
    return counts, failures, per_file


def from_log(text: str):
    """What a pytest log's short summary says (``-rfE`` lines and the closing counts), for a phase
    whose JUnit file is missing; None when the log has no closing line either."""
    import re

    closing = [line for line in text.splitlines() if re.search(r"\d+ (passed|failed)", line) and " in " in line]
    if not closing:
        return None
    counts = {k: 0 for k in ("passed", "failed", "skipped")}
    for number, word in re.findall(r"(\d+) (passed|failed|skipped|errors?)", closing[-1]):
        counts["failed" if word.startswith("error") else word] += int(number)
    failures = []
    for line in text.splitlines():
        if line.startswith(("FAILED ", "ERROR ")):
            kind, _, rest = line.partition(" ")
            name, _, message = rest.partition(" - ")
            failures.append((name, kind.lower(), message[:300]))
    return counts, failures, {}


def tests_section(title: str, result) -> list:
    if result is None:
        return [f"### {title}", "", "No results (the phase did not finish or did not run).", ""]
    counts, failures, per_file = result
    lines = [
        f"### {title}",
        "",
        f"{counts['passed']} passed, {counts['failed']} failed, {counts['skipped']} skipped",
        "",
    ]
    if failures:
        lines += ["| test | message |", "|---|---|"]
        lines += [f"| `{n}` ({kind}) | {m.replace('|', '/')} |" for n, kind, m in failures[:200]]
        lines.append("")
    failing_files = {k: v for k, v in per_file.items() if v["failed"]}
    if failing_files:
        lines.append(
            "Failures by file: "
            + ", ".join(f"{k} {v['failed']}/{sum(v.values())}" for k, v in sorted(failing_files.items()))
        )
        lines.append("")
    return lines


def tail(text: str, n: int) -> list:
    return [line for line in text.strip().splitlines()[-n:]]


def main(logs: str, report: str) -> None:
    env = read(os.path.join(logs, "env.log"))
    mode = read(os.path.join(logs, "mode.txt")).strip() or "?"
    lines = [
        "# weft GPU check",
        "",
        f"Mode: {mode}.",
        "",
        "## Machine",
        "",
        "```",
        *env.strip().splitlines(),
        "```",
        "",
    ]
    lines += ["## Phases", "", "| phase | outcome | seconds |", "|---|---|---|"]
    done = phases(logs)
    lines += [f"| {PHASE_TITLES.get(n, n)} | {outcome(rc)} | {s} |" for n, rc, s in done]
    lines.append("")
    lines += ["## Tests", ""]
    for phase, title in (
        ("cuda_runtime", "tests/test_cuda_runtime.py (+ the simulated-driver file, which skips on a GPU)"),
        ("suite", "whole suite, device-parametrised tests on cuda:0"),
    ):
        result = junit(os.path.join(logs, f"{phase}.xml"))
        if result is None:
            result = from_log(read(os.path.join(logs, f"{phase}.log")))
        lines += tests_section(title, result)
    for name, _, _ in done:
        text = read(os.path.join(logs, f"{name}.log"))
        if name.startswith(("smoke", "example", "benchmarks", "install")):
            keep = 45 if name == "benchmarks" else 14
            lines += [f"## {PHASE_TITLES.get(name, name)}: last lines", "", "```", *tail(text, keep), "```", ""]
    errors = read(os.path.join(logs, "report_errors.log")).strip()
    if errors:
        lines += ["## Report errors", "", "```", *tail(errors, 20), "```", ""]
    with open(report + ".tmp", "w") as f:
        f.write("\n".join(lines) + "\n")
    os.replace(report + ".tmp", report)


if __name__ == "__main__":
    if len(sys.argv) != 3:
        raise SystemExit(__doc__)
    main(sys.argv[1], sys.argv[2])
