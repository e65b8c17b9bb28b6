"""benchmarks/run.py's CPU-peer columns (Taichi, Numba): left out cleanly when their Python is not
given, and the best-peer arithmetic. Needs neither library."""

import argparse
import importlib.util
import os
import subprocess
import sys

import pytest

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
RUN = os.path.join(REPO, "benchmarks", "run.py")


@pytest.fixture(scope="module")
def run_py():
    spec = importlib.util.spec_from_file_location("bench_run", RUN)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def _args(**kw):
    return argparse.Namespace(**{"peers_python": None, "taichi_python": None, "numba_python": None, **kw})


def test_peer_pythons_only_when_given(run_py, monkeypatch):
    monkeypatch.delenv("WEFT_BENCH_PEERS_PYTHON", raising=False)
    assert run_py.find_peer_pythons(_args()) == {}
    assert run_py.find_peer_pythons(_args(numba_python="/p/nb")) == {"numba": "/p/nb"}
    both = run_py.find_peer_pythons(_args(peers_python="/p/both", taichi_python="/p/ti"))
    assert both == {"taichi": "/p/ti", "numba": "/p/both"}
    monkeypatch.setenv("WEFT_BENCH_PEERS_PYTHON", "/p/env")
    assert run_py.find_peer_pythons(_args()) == {"taichi": "/p/env", "numba": "/p/env"}


def test_best_peer_ignores_differing_and_missing(run_py):
    row = "saxpy 10M f32"
    weft = {"name": row, "seconds": 2.0, "check": 10.0}
    results = {
        "weft": {row: weft},
        "warp": {row: {"name": row, "seconds": 4.0, "check": 10.0}},
        "taichi": {row: run_py.verify_peer({"name": row, "seconds": 1.0, "check": 99.0}, weft, "taichi")},
        "numba": {},  # no version of this row
    }
    assert "seconds" not in results["taichi"][row] and "differs" in results["taichi"][row]
    assert run_py.fmt_time(results["taichi"][row]) == "differs"
    assert run_py.fmt_time(results["numba"].get(row)) == "-"
    assert run_py.best_peer(results, row, ["warp", "taichi", "numba"]) == ("warp", 0.5)
    results["numba"][row] = run_py.verify_peer({"name": row, "seconds": 1.0, "check": 10.000001}, weft, "numba")
    assert run_py.best_peer(results, row, ["warp", "taichi", "numba"]) == ("numba", 2.0)
    assert run_py.geomean([0.5, 2.0]) == pytest.approx(1.0)
    copy = "numpy copy, same bytes"  # the same NumPy code in every column: no peer to beat
    results["weft"][copy] = {"name": copy, "seconds": 1.0}
    results["warp"][copy] = {"name": copy, "seconds": 2.0}
    assert run_py.best_peer(results, copy, ["warp"]) is None


def _run(*extra):
    env = {k: v for k, v in os.environ.items() if k != "WEFT_BENCH_PEERS_PYTHON"}
    cmd = [sys.executable, RUN, "--no-warp", "--quick", "--only", "launch, 1 float", "--reps", "5", "--budget", "0.05"]
    return subprocess.run([*cmd, *extra], check=False, capture_output=True, text=True, env=env, timeout=300)


def test_run_without_peer_pythons_has_no_peer_columns():
    p = _run()
    assert p.returncode == 0, p.stderr[-2000:]
    header = next(line for line in p.stdout.splitlines() if line.startswith("| workload"))
    assert "taichi" not in header and "numba" not in header and "best peer" not in header
    assert "geomean" not in p.stdout


def test_run_with_a_missing_peer_python_goes_on():
    p = _run("--taichi-python", os.path.join(REPO, "no-such-python"))
    assert p.returncode == 0, p.stderr[-2000:]
    assert "could not start taichi" in p.stderr
    header = next(line for line in p.stdout.splitlines() if line.startswith("| workload"))
    assert "taichi" not in header
