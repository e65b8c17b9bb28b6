"""The issue-4 examples: weft/examples/overwrite.py (an overwritten array corrupts a gradient; the
tape warns; two fixes) and weft/examples/struct_jacobian.py (a struct kernel's Jacobian, row by
row, against weft.autograd.jacobian, jacobian_fd and the analytic one)."""

import numpy as np
import pytest

from weft.examples import overwrite, struct_jacobian

WARNING = "is being written to but has already been read from in a previous launch"


@pytest.fixture(scope="module")
def overwrite_result(tmp_path_factory):
    return overwrite.run(n=3, out_dir=str(tmp_path_factory.mktemp("overwrite")), verbose=False)


def test_overwrite_warns_naming_the_array_argument_and_kernel(overwrite_result):
    text = overwrite_result["warning"]
    assert WARNING in text and "This may corrupt gradient computation in the backward pass." in text
    assert "argument a in kernel overwrite" in text
    assert overwrite_result["separate_warning"] == "" and overwrite_result["copy_warning"] == ""


def test_overwrite_gradient_flows_through_square_at_the_overwritten_values(overwrite_result):
    r = overwrite_result
    # square's adjoint ran (a.grad is not zero) but with a = c, so the gradient is 2 c, not 2 a0
    np.testing.assert_allclose(r["naive"], 2.0 * r["c"])
    assert not np.allclose(r["naive"], r["expected"])
    assert r["gradcheck_naive"] is False and "FAIL" in r["gradcheck_report"]


def test_overwrite_fixes_give_the_analytic_gradient(overwrite_result):
    np.testing.assert_allclose(overwrite_result["separate"], overwrite_result["expected"], rtol=1e-6)
    np.testing.assert_allclose(overwrite_result["copy"], overwrite_result["expected"], rtol=1e-6)


def test_overwrite_main_writes_the_tape_graph(tmp_path, capsys):
    assert overwrite.main(["--n", "2", "--out", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert WARNING in out and "both fixes match" in out
    dot = (tmp_path / "overwrite_tape.dot").read_text()
    assert "digraph tape" in dot and 'label="square' in dot and 'label="overwrite' in dot


def test_struct_jacobian_agrees_four_ways():
    r = struct_jacobian.run(n=4, verbose=False)
    assert r["errors"]["struct, row by row"] < 1e-12
    assert r["errors"]["weft.autograd.jacobian"] < 1e-12
    assert r["errors"]["weft.autograd.jacobian_fd"] < 1e-6
    j = r["methods"]["struct, row by row"]
    assert j["energy"].shape == (4, 12) and j["force"].shape == (12, 12)
    assert np.abs(j["force"]).max() > 0.1  # not trivially zero


def test_struct_jacobian_main_writes_the_plot(tmp_path, capsys):
    assert struct_jacobian.main(["--n", "3", "--out", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert "all four Jacobians agree to 1e-6: yes" in out
    try:
        import matplotlib  # noqa: F401
    except ImportError:
        assert "skipped the plot" in out
    else:
        assert (tmp_path / "jacobian.png").stat().st_size > 1000
