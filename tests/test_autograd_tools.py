"""Gradient tools (weft.autograd: gradcheck, gradcheck_tape, jacobian, jacobian_fd, jacobian_plot)
and tape tools (scopes, visualize, gradients, get_adjoint, enable_backward=False) — issue 4,
items 5 and 6."""

from typing import Any

import re
import shutil
import subprocess
import sys

import numpy as np
import pytest

import weft as wp
import weft.autograd as ag

f64 = wp.float64


# -- kernels (module level: one build for the whole file) ------------------------------------


@wp.kernel
def poly_sin(a: wp.array(dtype=f64), s: f64, b: wp.array(dtype=f64)):
    i = wp.tid()
    b[i] = s * a[i] * a[i] + wp.sin(a[i])


@wp.kernel
def neighbour_product(a: wp.array(dtype=f64), out: wp.array(dtype=f64)):
    i = wp.tid()
    out[i] = a[i] * a[(i + 1) % a.shape[0]]


@wp.kernel
def scale_and_dot(
    x: wp.array(dtype=wp.vec3d), w: wp.array(dtype=f64), y: wp.array(dtype=wp.vec3d), d: wp.array(dtype=f64)
):
    i = wp.tid()
    y[i] = x[i] * w[i]
    d[i] = wp.dot(x[i], x[i])


@wp.kernel
def cross_next(x: wp.array(dtype=wp.vec3), y: wp.array(dtype=wp.vec3)):
    i = wp.tid()
    y[i] = wp.cross(x[i], x[(i + 1) % x.shape[0]])


@wp.kernel
def accumulate(a: wp.array(dtype=f64), total: wp.array(dtype=f64)):
    i = wp.tid()
    wp.atomic_add(total, 0, a[i] * a[i])


@wp.kernel
def read_then_overwrite(a: wp.array(dtype=f64), b: wp.array(dtype=f64)):
    # reads a, then overwrites it: the backward pass replays with the overwritten values
    i = wp.tid()
    b[i] = a[i] * a[i]
    a[i] = f64(0.0)


@wp.func
def cube(x: f64):
    return x * x * x


@wp.func_grad(cube)
def adj_cube(x: f64, adj_ret: f64):
    wp.adjoint[x] += f64(2.0) * x * adj_ret  # deliberately wrong: d/dx x^3 is 3 x^2


@wp.kernel
def wrong_custom_grad(a: wp.array(dtype=f64), b: wp.array(dtype=f64)):
    i = wp.tid()
    b[i] = cube(a[i])


@wp.kernel
def square32(a: wp.array(dtype=float), b: wp.array(dtype=float)):
    i = wp.tid()
    b[i] = a[i] * a[i]


@wp.kernel
def halve(x: wp.array(dtype=float)):
    i = wp.tid()
    x[i] = x[i] * 0.5


@wp.kernel
def total32(b: wp.array(dtype=float), loss: wp.array(dtype=float)):
    i = wp.tid()
    wp.atomic_add(loss, 0, b[i])


@wp.kernel(enable_backward=False)
def no_backward(a: wp.array(dtype=float), b: wp.array(dtype=float)):
    i = wp.tid()
    b[i] = 2.0 * a[i]


def arr(values, dtype=f64, grad=True):
    return wp.array(np.asarray(values, dtype=np.float64), dtype=dtype, requires_grad=grad)


def scalar_matrix(j):
    a = j.numpy()
    return a.reshape(a.shape[0], -1).astype(np.float64)


# -- jacobian / jacobian_fd ------------------------------------------------------------------


def test_jacobians_of_a_scalar_kernel_match_the_analytic_one():
    a0 = np.array([0.3, -1.2, 2.0, 0.7])
    a, b = arr(a0), arr(np.zeros(4))
    exact = np.diag(2 * 1.5 * a0 + np.cos(a0))
    jac = ag.jacobian(poly_sin, 4, inputs=[a, 1.5], outputs=[b])
    jfd = ag.jacobian_fd(poly_sin, 4, inputs=[a, 1.5], outputs=[b], eps=1e-6)
    assert list(jac) == [(0, 0)] and list(jfd) == [(0, 0)]
    assert jac[(0, 0)].shape == (4, 4) and jac[(0, 0)].dtype is f64
    np.testing.assert_allclose(jac[(0, 0)].numpy(), exact, atol=1e-12)
    np.testing.assert_allclose(jfd[(0, 0)].numpy(), exact, atol=1e-7)


def test_jacobian_couples_neighbours():
    a0 = np.array([1.0, 2.0, 3.0])
    a, out = arr(a0), arr(np.zeros(3))
    exact = np.zeros((3, 3))
    for i in range(3):
        exact[i, i] += a0[(i + 1) % 3]
        exact[i, (i + 1) % 3] += a0[i]
    np.testing.assert_allclose(ag.jacobian(neighbour_product, 3, [a], [out])[(0, 0)].numpy(), exact, atol=1e-12)
    np.testing.assert_allclose(ag.jacobian_fd(neighbour_product, 3, [a], [out])[(0, 0)].numpy(), exact, atol=1e-6)


def test_jacobians_inside_a_recording_tape_use_their_own_and_leave_it_alone():
    a0 = np.array([1.0, 2.0, 3.0])
    a, out = arr(a0), arr(np.zeros(3))
    user = wp.Tape()
    with user:
        jac = ag.jacobian(neighbour_product, 3, [a], [out])[(0, 0)].numpy()
        jfd = ag.jacobian_fd(neighbour_product, 3, [a], [out])[(0, 0)].numpy()
    np.testing.assert_allclose(jac, jfd, atol=1e-6)
    assert not user.launches  # the user's tape recorded none of their launches


def test_vec3_jacobians_keep_the_input_layout_and_match_the_analytic_ones():
    rng = np.random.default_rng(0)
    x0, w0 = rng.normal(size=(3, 3)), rng.normal(size=3)
    x, w = wp.array(x0, dtype=wp.vec3d, requires_grad=True), arr(w0)
    y, d = wp.zeros(3, dtype=wp.vec3d, requires_grad=True), arr(np.zeros(3))
    args = {"dim": 3, "inputs": [x, w], "outputs": [y, d]}
    jac, jfd = ag.jacobian(scale_and_dot, **args), ag.jacobian_fd(scale_and_dot, eps=1e-6, **args)
    assert sorted(jac) == [(0, 0), (0, 1), (1, 0), (1, 1)]
    # rows: output scalars; columns: input elements, with the input's dtype (vec3 for x)
    assert jac[(0, 0)].shape == (9, 3) and jac[(0, 0)].dtype is wp.vec3d and jac[(0, 0)].numpy().shape == (9, 3, 3)
    assert jac[(1, 1)].shape == (3, 3) and jac[(1, 1)].dtype is f64
    exact = {
        (0, 0): np.kron(np.diag(w0), np.eye(3)),  # dy/dx
        (1, 0): np.stack([np.eye(3)[i // 3] * x0[i // 3, i % 3] for i in range(9)]).reshape(9, 3),  # dy/dw
        (0, 1): np.stack([np.kron(np.eye(3)[i], 2 * x0[i]) for i in range(3)]),  # dd/dx
        (1, 1): np.zeros((3, 3)),  # dd/dw
    }
    for key, expected in exact.items():
        np.testing.assert_allclose(scalar_matrix(jac[key]), expected, atol=1e-12, err_msg=str(key))
        np.testing.assert_allclose(scalar_matrix(jfd[key]), expected, atol=1e-7, err_msg=str(key))


def test_float32_vec3_cross_jacobian_agrees_with_finite_differences():
    x0 = np.random.default_rng(1).normal(size=(4, 3)).astype(np.float32)
    x = wp.array(x0, dtype=wp.vec3, requires_grad=True)
    y = wp.zeros(4, dtype=wp.vec3, requires_grad=True)
    jac = scalar_matrix(ag.jacobian(cross_next, 4, [x], [y])[(0, 0)])
    jfd = scalar_matrix(ag.jacobian_fd(cross_next, 4, [x], [y], eps=1e-3)[(0, 0)])
    np.testing.assert_allclose(jac, jfd, atol=5e-3)
    # d (x_i x x_j) / d x_j = [x_i]_cross
    xi = x0[0].astype(np.float64)
    skew = np.array([[0, -xi[2], xi[1]], [xi[2], 0, -xi[0]], [-xi[1], xi[0], 0]])
    np.testing.assert_allclose(jac[0:3, 3:6], skew, atol=1e-6)
    assert ag.gradcheck(cross_next, 4, [x], [y], show_summary=False)


def test_arguments_are_restored_and_gradients_zeroed():
    a, b = arr([1.0, 2.0]), arr([7.0, 7.0])
    a.grad.fill_(3.0)
    ag.jacobian(poly_sin, 2, [a, 1.0], [b])
    np.testing.assert_array_equal(a.numpy(), [1.0, 2.0])
    np.testing.assert_array_equal(b.numpy(), [7.0, 7.0])
    np.testing.assert_array_equal(a.grad.numpy(), [0.0, 0.0])
    ag.jacobian_fd(read_then_overwrite, 2, [a], [b])
    np.testing.assert_array_equal(a.numpy(), [1.0, 2.0])
    np.testing.assert_array_equal(b.numpy(), [7.0, 7.0])


def test_finite_differences_restart_accumulating_outputs():
    a, total = arr([1.0, 2.0, 3.0]), arr([5.0])
    np.testing.assert_allclose(ag.jacobian_fd(accumulate, 3, [a], [total])[(0, 0)].numpy(), [[2, 4, 6]], atol=1e-7)
    np.testing.assert_allclose(ag.jacobian(accumulate, 3, [a], [total])[(0, 0)].numpy(), [[2, 4, 6]])
    assert total.numpy()[0] == 5.0


def test_limits_leave_unevaluated_rows_and_columns_nan():
    x = wp.array(np.ones((2, 3)), dtype=wp.vec3d, requires_grad=True)
    w, y, d = arr([2.0, 3.0]), wp.zeros(2, dtype=wp.vec3d, requires_grad=True), arr([0.0, 0.0])
    jac = ag.jacobian(scale_and_dot, 2, [x, w], [y, d], max_outputs_per_var=2)
    m = scalar_matrix(jac[(0, 0)])
    assert np.isfinite(m[:2]).all() and np.isnan(m[2:]).all()
    jfd = ag.jacobian_fd(scale_and_dot, 2, [x, w], [y, d], max_inputs_per_var=4)
    m = scalar_matrix(jfd[(0, 0)])  # columns are input scalars: x has 6
    assert np.isfinite(m[:, :4]).all() and np.isnan(m[:, 4:]).all()
    assert ag.gradcheck(
        scale_and_dot, 2, [x, w], [y, d], max_inputs_per_var=1, max_outputs_per_var=1, show_summary=False
    )


def test_masks_by_index_and_name():
    x = wp.array(np.ones((2, 3)), dtype=wp.vec3d, requires_grad=True)
    w, y, d = arr([2.0, 3.0]), wp.zeros(2, dtype=wp.vec3d, requires_grad=True), arr([0.0, 0.0])
    jac = ag.jacobian(scale_and_dot, 2, [x, w], [y, d], input_output_mask=[("x", "d"), (1, 0)])
    assert sorted(jac) == [(0, 1), (1, 0)]
    with pytest.raises(ValueError, match="no output named 'e'"):
        ag.jacobian(scale_and_dot, 2, [x, w], [y, d], input_output_mask=[("x", "e")])
    with pytest.raises(ValueError, match="not a differentiable array"):
        ag.jacobian(poly_sin, 2, [arr([1.0, 2.0]), 1.0], [arr([0.0, 0.0])], input_output_mask=[("s", "b")])
    with pytest.raises(ValueError, match="dim is required"):
        ag.jacobian(poly_sin, None, [arr([1.0]), 1.0], [arr([0.0])])


def pipeline(x, y):
    """A Python function of arrays: two launches, two returned outputs."""
    u, v = arr(np.zeros(x.shape[0])), arr(np.zeros(x.shape[0]))
    wp.launch(poly_sin, x.shape[0], inputs=[x, 2.0], outputs=[u])
    wp.launch(neighbour_product, y.shape[0], inputs=[y], outputs=[v])
    return u, v


def test_python_function_jacobians_and_gradcheck():
    x, y = arr([0.5, 1.5]), arr([2.0, 3.0])
    jac = ag.jacobian(pipeline, inputs=[x, y])
    assert sorted(jac) == [(0, 0), (0, 1), (1, 0), (1, 1)]
    np.testing.assert_allclose(jac[(0, 0)].numpy(), np.diag(4 * np.array([0.5, 1.5]) + np.cos([0.5, 1.5])))
    np.testing.assert_allclose(jac[(1, 1)].numpy(), [[3.0, 2.0], [3.0, 2.0]])
    assert not jac[(0, 1)].numpy().any()
    assert list(ag.jacobian_fd(pipeline, inputs=[x, y], input_output_mask=[("y", "output_1")])) == [(1, 1)]
    assert ag.gradcheck(pipeline, inputs=[x, y], show_summary=False)
    np.testing.assert_array_equal(x.numpy(), [0.5, 1.5])


# -- gradcheck catches wrong gradients ---------------------------------------------------------


def test_gradcheck_passes_on_correct_kernels_and_prints_a_summary(capsys):
    a, b = arr([0.3, -1.2, 2.0]), arr(np.zeros(3))
    assert ag.gradcheck(poly_sin, 3, [a, 0.5], [b]) is True
    out = capsys.readouterr().out
    assert "Max Abs Error" in out and "PASS" in out and "Gradient check for kernel poly_sin passed" in out
    assert ag.gradcheck(accumulate, 3, [a], [arr([0.0])], show_summary=False)
    assert capsys.readouterr().out == ""


def test_gradcheck_fails_on_a_kernel_that_overwrites_what_it_read():
    a, b = arr([1.0, 2.0]), arr([0.0, 0.0])
    assert ag.gradcheck(read_then_overwrite, 2, [a], [b], raise_exception=False, show_summary=False) is False
    with pytest.raises(ValueError, match="Gradient check failed for kernel read_then_overwrite, input 'a', output 'b'"):
        ag.gradcheck(read_then_overwrite, 2, [a], [b], show_summary=False)
    np.testing.assert_array_equal(a.numpy(), [1.0, 2.0])  # restored


def test_gradcheck_fails_on_a_wrong_custom_gradient():
    a, b = arr([1.0, 2.0, -1.5]), arr(np.zeros(3))
    assert not ag.gradcheck(wrong_custom_grad, 3, [a], [b], raise_exception=False, show_summary=False)
    np.testing.assert_allclose(ag.jacobian(wrong_custom_grad, 3, [a], [b])[(0, 0)].numpy(), np.diag([2.0, 4.0, -3.0]))
    np.testing.assert_allclose(
        ag.jacobian_fd(wrong_custom_grad, 3, [a], [b])[(0, 0)].numpy(), np.diag([3.0, 12.0, 6.75]), rtol=1e-6
    )


def test_gradcheck_tape_checks_every_recorded_kernel():
    a, b, c, total = arr([0.5, 1.0]), arr([0.0, 0.0]), arr([0.0, 0.0]), arr([0.0])
    tape = wp.Tape()
    with tape:
        wp.launch(poly_sin, 2, inputs=[a, 1.0], outputs=[b])
        wp.launch(wrong_custom_grad, 2, inputs=[b], outputs=[c])
        wp.launch(accumulate, 2, inputs=[c], outputs=[total])
    kw = {"raise_exception": False, "show_summary": False}
    assert not ag.gradcheck_tape(tape, **kw)
    assert ag.gradcheck_tape(tape, blacklist_kernels=["wrong_custom_grad"], **kw)
    assert ag.gradcheck_tape(tape, whitelist_kernels=["poly_sin", "accumulate"], **kw)
    assert ag.gradcheck_tape(tape, skip_to_launch_index=2, **kw)
    assert not ag.gradcheck_tape(tape, reverse_launches=True, skip_to_launch_index=1, **kw)
    assert ag.gradcheck_tape(tape, input_output_masks={"wrong_custom_grad": []}, **kw)
    with pytest.raises(ValueError, match="wrong_custom_grad"):
        ag.gradcheck_tape(tape, show_summary=False)


# -- jacobian_plot -----------------------------------------------------------------------------


def test_jacobian_plot_returns_a_figure_and_writes_a_file(tmp_path):
    pytest.importorskip("matplotlib")
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    x = wp.array(np.ones((2, 3)), dtype=wp.vec3d, requires_grad=True)
    w, y, d = arr([2.0, 3.0]), wp.zeros(2, dtype=wp.vec3d, requires_grad=True), arr([0.0, 0.0])
    jac = ag.jacobian(scale_and_dot, 2, [x, w], [y, d], max_outputs_per_var=3)
    path = tmp_path / "jac.png"
    fig = ag.jacobian_plot(jac, scale_and_dot, [x, w], show_plot=False, filename=str(path), log_scale=True)
    assert path.stat().st_size > 1000
    assert fig.get_suptitle() == "scale_and_dot kernel Jacobian"
    blocks = [ax for ax in fig.axes if ax.axison and ax.get_xlabel()]
    assert sorted((ax.get_xlabel(), ax.get_ylabel()) for ax in blocks) == [("w", "d"), ("w", "y"), ("x", "d"), ("x", "y")]
    grid = blocks[0].get_gridspec()
    assert grid.get_width_ratios() == [6, 2] and grid.get_height_ratios() == [6, 2]  # scalars per input / output
    plt.close(fig)
    fig = ag.jacobian_plot(jac, scale_and_dot, [x, w], show_plot=False, scale_colors_per_submatrix=True)
    plt.close(fig)


def test_jacobian_plot_checks_what_labels_the_blocks():
    pytest.importorskip("matplotlib")
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    block = {(0, 0): np.eye(2)}
    with pytest.raises(ValueError, match="inputs must be provided"):
        ag.jacobian_plot(block, scale_and_dot)  # a kernel's labels need the inputs
    assert ag.jacobian_plot({}, ag.FunctionMetadata(key="empty"), show_plot=False) is None
    meta = dict(input_labels=["a"], output_labels=["out"], input_dtypes=[wp.float32], output_dtypes=[wp.float32])
    fig = ag.jacobian_plot(block, ag.FunctionMetadata(**meta), show_plot=False)
    assert fig.get_suptitle() == "unknown kernel Jacobian"
    plt.close(fig)
    for change, error in (
        ({"input_labels": []}, "input index 0: missing label"),
        ({"input_labels": [None]}, "input index 0: missing label"),
        ({"input_dtypes": [None]}, "missing array dtype"),
        ({"input_dtypes": [Any]}, "component count"),
        ({"output_labels": [None]}, "output index 0: missing label"),
    ):
        with pytest.raises(ValueError, match=error):
            ag.jacobian_plot(block, ag.FunctionMetadata(**{**meta, **change}), show_plot=False)


def test_gradcheck_plots_relative_then_absolute_error(monkeypatch):
    pytest.importorskip("matplotlib")
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    plt.close("all")
    shown = []
    monkeypatch.setattr(plt, "show", lambda: shown.append(True))
    w, y, d = arr([2.0, 3.0]), wp.zeros(2, dtype=wp.vec3d, requires_grad=True), arr([0.0, 0.0])
    x = wp.array(np.ones((2, 3)), dtype=wp.vec3d, requires_grad=True)
    assert ag.gradcheck(
        scale_and_dot, 2, [x, w], [y, d], plot_relative_error=True, plot_absolute_error=True, show_summary=False
    )
    titles = [plt.figure(n).get_suptitle() for n in plt.get_fignums()]
    assert titles == ["scale_and_dot kernel Jacobian relative error", "scale_and_dot kernel Jacobian absolute error"]
    assert len(shown) == 2
    plt.close("all")


@wp.kernel
def add_one_in_place(a: wp.array(dtype=float)):
    a[wp.tid()] += 1.0


def test_jacobians_need_backward_passes_and_gradcheck_tape_skips_kernels_without():
    a = wp.array([1.0, 2.0], dtype=float, requires_grad=True)
    out = wp.zeros(2, dtype=float, requires_grad=True)

    def pipeline(a):
        b = wp.zeros_like(a, requires_grad=True)
        wp.launch(no_backward, 2, [a, b])
        return b

    for target, args in ((no_backward, dict(dim=2, inputs=[a], outputs=[out])), (pipeline, dict(inputs=[a]))):
        with pytest.raises(ValueError, match="must have backward pass enabled.*'no_backward'"):
            ag.jacobian(target, **args)
        fd = ag.jacobian_fd(target, **args)[(0, 0)].numpy()  # forward launches only: fine
        np.testing.assert_allclose(fd, 2.0 * np.eye(2), rtol=1e-3)
    tape = wp.Tape()
    with tape:
        wp.launch(no_backward, 2, [a, out])
    # checked, it would fail (no adjoint: autodiff 0, finite differences 2); it is skipped
    assert ag.gradcheck_tape(tape, raise_exception=False, show_summary=False)


def test_inputs_are_restored_when_the_target_or_the_check_raises():
    x = wp.array([1.0, 2.0, 3.0], dtype=float, requires_grad=True)

    def raises(x):
        wp.launch(add_one_in_place, 3, [x])
        raise RuntimeError("boom")

    def mutates(x):
        wp.launch(add_one_in_place, 3, [x])
        return wp.clone(x)

    for tool in (ag.jacobian, ag.jacobian_fd):
        with pytest.raises(RuntimeError, match="boom"):
            tool(raises, inputs=[x])
        np.testing.assert_array_equal(x.numpy(), [1.0, 2.0, 3.0])
        with pytest.raises(ValueError, match="bogus"):
            tool(mutates, inputs=[x], input_output_mask=[("bogus", 0)])
        np.testing.assert_array_equal(x.numpy(), [1.0, 2.0, 3.0])


def test_jacobian_plot_without_matplotlib_warns_and_returns_none(monkeypatch):
    for name in [m for m in sys.modules if m == "matplotlib" or m.startswith("matplotlib.")]:
        monkeypatch.delitem(sys.modules, name)
    monkeypatch.setitem(sys.modules, "matplotlib", None)
    with pytest.warns(UserWarning, match="needs matplotlib"):
        assert ag.jacobian_plot({(0, 0): np.eye(2)}, poly_sin, [arr([1.0, 2.0]), 1.0], show_plot=False) is None


# -- tape: scopes ----------------------------------------------------------------------------


def test_record_scope_nesting_and_warp_bookkeeping():
    a, b = wp.zeros(2, dtype=float), wp.zeros(2, dtype=float)
    tape = wp.Tape()
    with tape:
        with tape.record_scope("outer", color="#ff0000"):
            wp.launch(square32, 2, inputs=[a], outputs=[b])
            with tape.record_scope("inner"):
                wp.launch(halve, 2, inputs=[b])
            with tape.record_scope("empty"):
                pass
            with tape.record_scope("kept", remove_scope_if_empty=False):
                pass
        tape.record_scope_begin("manual", metadata={"k": 1})
        wp.launch(halve, 2, inputs=[b])
        tape.record_scope_end()
    assert tape.scopes == [
        (0, "outer", {"color": "#ff0000"}),
        (1, "inner", {}),
        (2, None, None),
        (2, "kept", {}),
        (2, None, None),
        (2, None, None),
        (2, "manual", {"k": 1}),
        (3, None, None),
    ]
    with pytest.raises(RuntimeError, match="ended tape scope, but scope not present"):
        tape.record_scope_end()
    with pytest.raises(KeyError), tape.record_scope("raises"):
        raise KeyError("x")
    assert tape.scopes[-1] == (3, None, None) and all(s[1] != "raises" for s in tape.scopes)
    tape.reset()
    assert tape.scopes == [] and tape.launches == []


# -- tape: visualize -----------------------------------------------------------------------------


def _record_graph_tape():
    a = wp.array([1.0, 2.0], dtype=float, requires_grad=True)
    b = wp.zeros(2, dtype=float, requires_grad=True)
    loss = wp.zeros(1, dtype=float, requires_grad=True)
    tape = wp.Tape()
    with tape:
        with tape.record_scope("forward"):
            wp.launch(square32, 2, inputs=[a], outputs=[b])
            for _ in range(5):
                wp.launch(halve, 2, inputs=[b])
        wp.launch(total32, 2, inputs=[b], outputs=[loss])
    return tape, a, b, loss


def test_visualize_draws_launches_arrays_and_access_edges(tmp_path):
    # visualize names arrays after the local variables holding them: a and b are used that way
    tape, a, b, loss = _record_graph_tape()  # noqa: RUF059
    path = tmp_path / "tape.dot"
    dot = tape.visualize(str(path), array_labels={loss: "the loss"})
    assert path.read_text() == dot
    assert dot.startswith("digraph tape {") and "rankdir=LR" in dot
    # arrays are named after the variables holding them (labels override)
    assert re.search(r'array_0 \[label="a"', dot) and re.search(r'array_1 \[label="b"', dot)
    assert re.search(r'array_2 \[label="the loss"', dot)
    assert 'tooltip="array: dtype=float32, shape=(2,), requires_grad=True"' in dot  # Warp's tooltip
    # reads: array -> launch; writes: launch -> array, labelled with the kernel parameter
    assert 'array_0 -> launch_0 [label="a"]' in dot
    assert 'launch_0 -> array_1 [label="b"' in dot
    assert 'array_1 -> launch_1 [label="x"]' in dot and 'launch_1 -> array_1 [label="x"' in dot
    assert 'array_1 -> launch_6 [label="b"]' in dot and 'launch_6 -> array_2 [label="loss"' in dot
    # the five identical halve launches are one node; the scope is a cluster
    assert 'launch_1 [label="halve (repeated 5x)' in dot and "launch_2 " not in dot
    assert 'subgraph cluster_1 {\n        label="forward"' in dot
    if shutil.which("dot"):
        subprocess.run(["dot", "-Tsvg", str(path), "-o", str(tmp_path / "tape.svg")], check=True)


def test_visualize_options():
    tape, a, _b, _loss = _record_graph_tape()
    full = tape.visualize(simplify_graph=False, ignore_graph_scopes=True, graph_direction="TB")
    assert "rankdir=TB" in full and "subgraph" not in full
    assert all(f"launch_{k} [" in full for k in range(7))
    hidden = tape.visualize(hide_readonly_arrays=True)
    assert 'label="a"' not in hidden and "array_0 ->" not in hidden  # a is only read
    tracked = tape.visualize(hide_readonly_arrays=True, track_inputs=[a], track_input_names=["initial a"])
    assert 'label="initial a"' in tracked and 'array_0 -> launch_0 [label="a"]' in tracked
    out = wp.zeros(1, dtype=float)
    shown = tape.visualize(track_outputs=[out], track_output_names=["unused"])
    assert 'label="unused"' in shown
    shortest = tape.visualize(choose_longest_node_name=False)
    assert re.search(r'array_0 \[label="a"', shortest)


class _Holder:
    pass


def test_visualize_collapses_repeated_sequences_and_names_attributes():
    state = _Holder()
    state.q = wp.zeros(2, dtype=float, requires_grad=True)
    state.r = wp.zeros(2, dtype=float, requires_grad=True)
    tape = wp.Tape()
    with tape:
        for _ in range(3):  # ping-pong: period-2 repetition
            wp.launch(square32, 2, inputs=[state.q], outputs=[state.r])
            wp.launch(square32, 2, inputs=[state.r], outputs=[state.q])
        tape.record_func(lambda: None, [state.q])
    dot = tape.visualize()
    assert 'label="repeated 3x"' in dot and "launch_2 " not in dot
    assert 'label="state.q"' in dot and 'label="state.r"' in dot
    assert "func_6 [" in dot and 'func_6 -> array_0 [style="dashed"' in dot


# -- tape: gradients, get_adjoint, enable_backward=False ---------------------------------------


def test_tape_gradients_track_every_adjoint_used():
    tape, a, b, loss = _record_graph_tape()
    tape.backward(loss)
    assert tape.gradients[a] is a.grad and tape.gradients[b] is b.grad and tape.gradients[loss] is loss.grad
    np.testing.assert_allclose(a.grad.numpy(), 2 * np.array([1.0, 2.0]) / 32)
    assert tape.get_adjoint(a) is a.grad
    assert tape.get_adjoint(3.0) is None and tape.get_adjoint(wp.zeros(2, dtype=float)) is None
    tape.zero()
    assert not a.grad.numpy().any() and not loss.grad.numpy().any()


def test_backward_seed_array_becomes_the_gradient_of_an_array_without_one():
    a = wp.array([1.0, 2.0], dtype=float, requires_grad=True)
    b = wp.zeros(2, dtype=float)  # no gradient buffer
    seed = wp.array([1.0, 10.0], dtype=float)
    tape = wp.Tape()
    with tape:
        wp.launch(square32, 2, inputs=[a], outputs=[b])
    tape.backward(grads={b: seed})
    assert b.grad is seed and tape.gradients[b] is seed
    np.testing.assert_allclose(a.grad.numpy(), [2.0, 40.0])


def test_backward_of_a_kernel_without_backward_raises_before_touching_gradients():
    a = wp.array([1.0, 2.0], dtype=float, requires_grad=True)
    b = wp.zeros(2, dtype=float, requires_grad=True)
    c = wp.zeros(2, dtype=float, requires_grad=True)
    loss = wp.zeros(1, dtype=float, requires_grad=True)
    tape = wp.Tape()
    with tape:
        wp.launch(no_backward, 2, inputs=[a], outputs=[b])
        wp.launch(square32, 2, inputs=[b], outputs=[c])
        wp.launch(total32, 2, inputs=[c], outputs=[loss])
    with pytest.raises(RuntimeError, match=r"kernel '\S*no_backward' \(launch 0 on this tape\).*enable_backward=False"):
        tape.backward(loss)
    assert not b.grad.numpy().any() and not loss.grad.numpy().any()  # nothing ran
    with pytest.raises(RuntimeError, match="enable_backward=False"):
        wp.launch(no_backward, 2, inputs=[a], outputs=[b], adj_inputs=[a.grad], adj_outputs=[b.grad], adjoint=True)


def test_config_enable_backward_is_the_default_of_modules_made_afterwards(monkeypatch):
    monkeypatch.setattr(wp.config, "enable_backward", False)

    @wp.kernel(module="unique")
    def doubled(x: wp.array(dtype=float), y: wp.array(dtype=float)):
        i = wp.tid()
        y[i] = x[i] * 2.0

    assert doubled.enable_backward is False and doubled.module.options["enable_backward"] is False
    x = wp.ones(2, dtype=float, requires_grad=True)
    y = wp.zeros(2, dtype=float, requires_grad=True)
    tape = wp.Tape()
    with tape:
        wp.launch(doubled, 2, inputs=[x, y])
    with pytest.raises(RuntimeError, match="enable_backward=False"):
        tape.backward(grads={y: wp.ones(2, dtype=float)})
    monkeypatch.setattr(wp.config, "enable_backward", True)

    @wp.kernel(module="unique", enable_backward=False)
    def explicit(x: wp.array(dtype=float)):
        pass

    assert explicit.enable_backward is False  # the kernel's own option wins
