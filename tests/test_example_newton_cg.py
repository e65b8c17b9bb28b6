"""weft/examples/newton_cg.py: Newton-CG on hvp reaches the chain's rest shape, Adam gets close."""

import numpy as np

from weft.examples import newton_cg


def test_newton_cg_reaches_the_minimum(tmp_path, capsys):
    h_newton, h_adam = newton_cg.main(["--n", "12", "--adam-iterations", "400", "--out", str(tmp_path)])
    assert h_newton[-1][2] < 1e-8  # the gradient norm: converged
    assert h_newton[-1][1] <= min(e for _, e, _ in h_adam) + 1e-12  # no lower energy found by Adam
    out = capsys.readouterr().out
    assert "Newton-CG:" in out and "Adam:" in out and str(tmp_path) in out


def test_chain_hessian_times_matches_gradient_differences():
    chain = newton_cg.Chain(9, 2.0)
    rng = np.random.default_rng(3)
    x = np.stack([np.linspace(0, 2, 9), rng.uniform(-0.4, 0.0, 9)], 1)
    v = rng.standard_normal((9, 2))
    h = 1e-6
    fd = (chain.gradient(x + h * v * chain.free) - chain.gradient(x - h * v * chain.free)) / (2 * h)
    np.testing.assert_allclose(chain.hessian_times(x, v), fd, rtol=1e-6, atol=1e-6 * np.abs(fd).max())
