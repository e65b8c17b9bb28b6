"""weft/examples/poisson.py: a 2-D Poisson problem assembled with weft.sparse and solved with
weft.optim.linear.cg. The stencil is exact for its quadratic solution, so the solve's error is
checked against the exact values."""

import os

import numpy as np

from weft.examples import poisson


def test_the_solution_matches_the_exact_one_to_the_solver_tolerance():
    result = poisson.solve(24, tol=1e-7)
    assert result["unknowns"] == 576 and result["nnz"] == 5 * 576 - 4 * 24  # the boundary rows lose a neighbour
    assert result["residual"] <= result["tolerance"]
    x = np.arange(1, 25) / 25.0
    exact = np.outer(x * (1 - x), x * (1 - x))
    np.testing.assert_allclose(result["exact"], exact, rtol=1e-5)  # float32 grid coordinates
    assert result["max_error"] < 1e-4 * result["max_u"]


def test_main_prints_the_figures_and_writes_its_files(tmp_path, capsys):
    assert poisson.main(["--n", "16", "--out", str(tmp_path)]) == 0
    text = capsys.readouterr().out
    assert "256 unknowns" in text and "iterations" in text and str(tmp_path) in text
    assert (tmp_path / "solve.txt").read_text().startswith("n 16\n")
    assert os.path.exists(tmp_path / "poisson.png") or "skipped the picture" in text
