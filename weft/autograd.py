"""Gradient tools: Jacobians by autodiff and by finite differences, gradient checks, Jacobian plots.

Contract (``weft.autograd``, Warp's ``warp.autograd`` API):
  - A *target* is either a ``@wp.kernel`` launched over ``dim`` with ``inputs`` then ``outputs``,
    or a Python function called as ``function(*inputs)`` that returns its output array(s) (or
    writes into ``outputs``).
  - Differentiable inputs and outputs are top-level arrays with ``requires_grad=True`` and a float
    element type (scalars, vectors, matrices...). Struct arguments are passed through but not
    differentiated (as in Warp).
  - A Jacobian is keyed ``(input index, output index)``: the position in ``inputs`` and in the
    outputs. Its value is an array of shape ``(output scalars, input.size)`` with the input's
    dtype, so row ``r`` is the gradient of output scalar ``r`` laid out like the input (a vec3
    input gives rows of vec3s). Rows (autodiff) or scalar columns (finite differences) that were
    not evaluated because of ``max_outputs_per_var`` / ``max_inputs_per_var`` are NaN.
  - Autodiff rows: one forward pass recorded on a private tape, then per output scalar
    ``tape.zero()`` + ``tape.backward(grads={output: one-hot})``. The backward pass sees what the
    forward pass left in memory, exactly as a user's tape would, so kernels that overwrite what
    they read show up as mismatches.
  - Finite differences: central differences; every evaluation starts from the original contents
    of the input and output arrays (kernels that accumulate into outputs give the right answer).
  - Afterwards the argument arrays hold their original contents again and the gradients of the
    arrays involved are zero (as in Warp). ``config.verify_autograd_array_access`` is switched off
    while the tools evaluate, so their repeated evaluations neither warn nor leave read marks.
"""

from __future__ import annotations

import contextlib
import dataclasses
import inspect
import sys
import warnings

import numpy as np

from . import config
from . import types as wt
from .array import array as _array
from .runtime import recording
from .runtime.launch import launch as _launch
from .forward_mode import hvp, jvp
from .tape import LaunchRecord, Tape

__all__ = ["FunctionMetadata", "gradcheck", "gradcheck_tape", "hvp", "jacobian", "jacobian_fd", "jacobian_plot", "jvp"]


# ---------------------------------------------------------------------------------------------
# what is being differentiated
# ---------------------------------------------------------------------------------------------


def _is_kernel(f) -> bool:
    return getattr(f, "_weft_kind", None) == "kernel"


def _is_array(a) -> bool:
    return isinstance(a, _array) and not a.is_annotation


def _scalar_type(dtype):
    return getattr(dtype, "_scalar", dtype)


def _trailing(dtype) -> tuple:
    return tuple(getattr(dtype, "_shape", ()))


def _is_differentiable(a) -> bool:
    return _is_array(a) and a.grad is not None and wt.is_float(_scalar_type(a.dtype))


def _scalar_count(a) -> int:
    return int(a.size * int(np.prod(_trailing(a.dtype), dtype=np.int64)))


@dataclasses.dataclass
class FunctionMetadata:
    """Names, strides and dtypes of a kernel's or function's inputs and outputs (labels for
    masks, summaries and plots)."""

    key: str | None = None
    input_labels: list | None = None
    output_labels: list | None = None
    input_strides: list | None = None
    output_strides: list | None = None
    input_dtypes: list | None = None
    output_dtypes: list | None = None

    def input_is_array(self, i: int) -> bool:
        """Whether input ``i`` is an array (its recorded strides are not None)."""
        return self.input_strides is not None and self.input_strides[i] is not None

    def output_is_array(self, i: int) -> bool:
        """Whether output ``i`` is an array."""
        return self.output_strides is not None and self.output_strides[i] is not None

    def update_from_kernel(self, kernel, inputs):
        """Fill the labels from a kernel's parameter names (inputs first, then outputs)."""
        names = list(kernel.arg_names)
        self.key = self.key or kernel.key
        self.input_labels = self.input_labels or names[: len(inputs)]
        self.output_labels = self.output_labels or names[len(inputs) :]
        self._fill_layout(inputs, None)

    def update_from_function(self, function, inputs, outputs=None):
        """Fill the labels from a Python function's parameter names; outputs are ``output_<k>``."""
        self.key = self.key or getattr(function, "__name__", "function")
        if not self.input_labels:
            try:
                params = [
                    p.name
                    for p in inspect.signature(function).parameters.values()
                    if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)
                ]
            except (TypeError, ValueError):
                params = []
            self.input_labels = [params[k] if k < len(params) else f"input_{k}" for k in range(len(inputs))]
        if outputs is not None and not self.output_labels:
            self.output_labels = [f"output_{k}" for k in range(len(outputs))]
        self._fill_layout(inputs, outputs)

    def _fill_layout(self, inputs, outputs):
        def layout(values):
            return [v.strides if _is_array(v) else None for v in values], [getattr(v, "dtype", type(v)) for v in values]

        if self.input_strides is None:
            self.input_strides, self.input_dtypes = layout(inputs)
        if outputs is not None and self.output_strides is None:
            self.output_strides, self.output_dtypes = layout(outputs)


class _Target:
    """A kernel launch or a Python function together with its arguments: evaluates it and saves
    / restores the contents of its argument arrays."""

    def __init__(self, function, dim, inputs, outputs, device, max_blocks, block_dim, metadata, restore_inputs):
        self.function = function
        self.is_kernel = _is_kernel(function)
        self.inputs = list(inputs or [])
        self.given_outputs = None if outputs is None else list(outputs)
        self.dim, self.device, self.max_blocks, self.block_dim = dim, device, max_blocks, block_dim
        self.restore_inputs = restore_inputs or self.is_kernel
        if self.is_kernel:
            if dim is None:
                raise ValueError(f"kernel '{function.key}': dim is required to compute Jacobians of a kernel")
            if self.given_outputs is None:
                self.given_outputs = []
        elif not callable(function):
            raise TypeError(f"expected a @wp.kernel or a Python function, got {function!r}")
        self.metadata = dataclasses.replace(metadata) if metadata is not None else FunctionMetadata()
        if self.is_kernel:
            self.metadata.update_from_kernel(function, self.inputs)
        else:
            self.metadata.update_from_function(function, self.inputs, self.given_outputs)
        self.outputs = self.given_outputs
        self._saved = self._snapshot()

    @property
    def key(self) -> str:
        return self.metadata.key

    def _snapshot(self):
        arrays = {}
        values = self.inputs + (self.given_outputs or [])
        for v in values:
            for a in v.arrays() if hasattr(v, "arrays") else [v]:
                if _is_array(a):
                    arrays[id(a)] = a
        return [(a, a.numpy().copy(), getattr(a, "_is_read", False)) for a in arrays.values()]

    def restore(self):
        """Put the original contents back into the argument arrays, and their read flags (the
        overwrite check's state, which a pending user tape owns: the check's scratch launches
        must neither clear a read it recorded nor leave reads of their own behind)."""
        for a, saved, was_read in self._saved:
            if self.restore_inputs or any(a is o for o in self.given_outputs or []):
                if a.device.is_cpu:
                    a.numpy()[...] = saved
                else:
                    a.assign(saved)  # numpy() of a GPU array is a copy
            a._is_read = was_read

    def evaluate(self) -> list:
        """Run the kernel / call the function once; return the output arrays."""
        if self.is_kernel:
            _launch(
                self.function,
                self.dim,
                inputs=self.inputs,
                outputs=self.outputs,
                device=self.device,
                max_blocks=self.max_blocks,
                block_dim=self.block_dim,
            )
            return self.outputs
        result = self.function(*self.inputs)
        if self.given_outputs is not None:
            outputs = self.given_outputs
        elif result is None:
            raise ValueError(
                f"function '{self.key}' returned nothing: return the output array(s) or pass outputs=[...]"
            )
        else:
            outputs = list(result) if isinstance(result, (list, tuple)) else [result]
        if self.metadata.output_labels is None or len(self.metadata.output_labels) != len(outputs):
            self.metadata.output_labels = [f"output_{k}" for k in range(len(outputs))]
            self.metadata.output_strides = None
            self.metadata._fill_layout(self.inputs, outputs)
        self.outputs = outputs
        return outputs

    def label(self, which: str, k: int) -> str:
        labels = self.metadata.input_labels if which == "input" else self.metadata.output_labels
        return labels[k] if labels and k < len(labels) else f"{which}_{k}"


@contextlib.contextmanager
def _quiet_access_checks():
    """The tools' own evaluations are not the user's tape: no overwrite warnings, no read marks."""
    saved = config.verify_autograd_array_access
    config.verify_autograd_array_access = False
    try:
        yield
    finally:
        config.verify_autograd_array_access = saved


def _resolve_index(target, which: str, ref, count: int) -> int:
    if isinstance(ref, (int, np.integer)) and not isinstance(ref, bool):
        if not 0 <= ref < count:
            raise ValueError(
                f"input_output_mask: {which} index {ref} is out of range for {target.key} ({count} {which}s)"
            )
        return int(ref)
    labels = [target.label(which, k) for k in range(count)]
    if ref not in labels:
        raise ValueError(f"input_output_mask: {target.key} has no {which} named {ref!r} (its {which}s: {labels})")
    return labels.index(ref)


def _pairs(target, outputs, input_output_mask) -> list:
    """The (input index, output index) pairs to differentiate, in input-major order."""
    diff_in = [k for k, v in enumerate(target.inputs) if _is_differentiable(v)]
    diff_out = [k for k, v in enumerate(outputs) if _is_differentiable(v)]
    if input_output_mask is None:
        return [(i, o) for i in diff_in for o in diff_out]
    pairs = []
    for ref_in, ref_out in input_output_mask:
        i = _resolve_index(target, "input", ref_in, len(target.inputs))
        o = _resolve_index(target, "output", ref_out, len(outputs))
        for k, which, ok in ((i, "input", i in diff_in), (o, "output", o in diff_out)):
            if not ok:
                raise ValueError(
                    f"input_output_mask: {which} {target.label(which, k)!r} of {target.key} is not a differentiable "
                    "array (it needs requires_grad=True and a float dtype)"
                )
        if (i, o) not in pairs:
            pairs.append((i, o))
    return sorted(pairs)


# ---------------------------------------------------------------------------------------------
# Jacobians as float64 NumPy matrices (rows: output scalars, columns: input scalars)
# ---------------------------------------------------------------------------------------------


def _require_backward(tape):
    """Autodiff needs every recorded kernel's backward pass (Warp's error when one has none)."""
    for rec in tape.launches:
        if isinstance(rec, LaunchRecord) and not rec.kernel.enable_backward:
            raise ValueError(
                f"Kernel must have backward pass enabled to compute Jacobians: kernel '{rec.kernel.key}' has "
                "enable_backward=False (its own option or its module's); jacobian_fd() needs only forward launches"
            )


def _unevaluated(target, outputs, pairs) -> dict:
    """NaN Jacobian blocks ``(output scalars, input scalars)`` for the pairs, filled as evaluated."""
    return {(i, o): np.full((_scalar_count(outputs[o]), _scalar_count(target.inputs[i])), np.nan) for i, o in pairs}


def _flat(a) -> np.ndarray:
    """A float64 copy of an array's scalars (never a view: float64 arrays change under it)."""
    return np.array(a.numpy(), dtype=np.float64, copy=True).reshape(-1)


def _jacobian_ad(target, input_output_mask, max_outputs_per_var) -> tuple[dict, list]:
    """Autodiff Jacobians: one recorded forward pass, one backward pass per output scalar."""
    tape = Tape()
    # scratch work: a recording user tape gets none of it (restoring a GPU array is a recorded assign)
    with _quiet_access_checks(), recording.paused():
        try:
            target.restore()
            with tape:  # a private tape, also inside a recording one
                outputs = target.evaluate()
            _require_backward(tape)
            pairs = _pairs(target, outputs, input_output_mask)
            jac = _unevaluated(target, outputs, pairs)
            for o in sorted({o for _, o in pairs}):
                out = outputs[o]
                n_rows = _scalar_count(out)
                if max_outputs_per_var > 0:
                    n_rows = min(n_rows, max_outputs_per_var)
                ins = [i for i, oo in pairs if oo == o]
                seed = np.zeros(out.numpy().shape, dtype=out.numpy().dtype)
                for r in range(n_rows):
                    tape.zero()
                    seed.reshape(-1)[:] = 0
                    seed.reshape(-1)[r] = 1
                    tape.backward(grads={out: seed})
                    for i in ins:
                        jac[(i, o)][r, :] = _flat(target.inputs[i].grad)
        finally:
            tape.zero()
            target.restore()
    return jac, pairs


def _jacobian_fd(target, input_output_mask, max_inputs_per_var, eps) -> tuple[dict, list]:
    """Central-difference Jacobians: two evaluations per input scalar, each from the original state."""
    with _quiet_access_checks(), recording.paused():  # scratch work: no tape records these launches
        try:
            target.restore()
            outputs = target.evaluate()
            pairs = _pairs(target, outputs, input_output_mask)
            jac = _unevaluated(target, outputs, pairs)
            for i in sorted({i for i, _ in pairs}):
                _fd_columns(target, i, [o for ii, o in pairs if ii == i], jac, max_inputs_per_var, eps)
        finally:
            target.restore()
    return jac, pairs


def _fd_columns(target, i, outs, jac, max_inputs_per_var, eps):
    arr = target.inputs[i]
    n_cols = _scalar_count(arr)
    if max_inputs_per_var > 0:
        n_cols = min(n_cols, max_inputs_per_var)
    view = arr.numpy()
    for c in range(n_cols):
        idx = np.unravel_index(c, view.shape)
        values, points = [], []
        for sign in (1.0, -1.0):
            target.restore()
            if not arr.device.is_cpu:
                view = arr.numpy()  # a host copy of the GPU array: the perturbation is written back below
            base = view[idx]
            view[idx] = base + view.dtype.type(sign * eps)
            if not arr.device.is_cpu:
                arr.assign(view)
            points.append(float(view[idx]))
            values.append([_flat(o) for o in target.evaluate()])
        # divide by the perturbation actually applied (in the array's precision), not by 2 eps
        step = points[0] - points[1]
        for o in outs:
            jac[(i, o)][:, c] = (values[0][o] - values[1][o]) / step


def _as_arrays(target, jac) -> dict:
    """NumPy scalar matrices -> arrays of shape (rows, input.size) with the input's dtype."""
    result = {}
    for (i, o), mat in jac.items():
        arr = target.inputs[i]
        data = mat.reshape((mat.shape[0], arr.size) + _trailing(arr.dtype))
        result[(i, o)] = _array(data.astype(_scalar_type(arr.dtype).np_dtype), dtype=arr.dtype)
    return result


def _scalar_matrix(j) -> np.ndarray:
    a = np.asarray(j.numpy() if hasattr(j, "numpy") else j, dtype=np.float64)
    return a.reshape(a.shape[0], -1) if a.ndim else a.reshape(1, 1)


# ---------------------------------------------------------------------------------------------
# public API
# ---------------------------------------------------------------------------------------------


def jacobian(
    function,
    dim=None,
    inputs=None,
    outputs=None,
    input_output_mask=None,
    device=None,
    max_blocks=0,
    block_dim=256,
    max_outputs_per_var=-1,
    plot_jacobians=False,
    metadata=None,
    restore_inputs=True,
    *,
    kernel_name=None,
) -> dict:
    """Jacobians of a kernel or Python function by reverse-mode autodiff, one output scalar per row.

    Args:
        function: a ``@wp.kernel`` (launched with ``dim``, ``inputs`` and ``outputs``) or a Python
            function called as ``function(*inputs)`` returning an array or a list of arrays.
        dim: launch dimensions (kernels only).
        inputs: the arguments; arrays with ``requires_grad=True`` and a float dtype are differentiated.
        outputs: the kernel's output arguments (they follow the inputs in its signature); for a
            function, arrays it writes instead of returning them.
        input_output_mask: ``[(input, output), ...]`` pairs to compute, by index or by name
            (kernel parameter names; a function's parameter names and ``output_<k>``). Default: all.
        device, max_blocks, block_dim: passed to ``wp.launch``.
        max_outputs_per_var: evaluate only the first N rows of each output (the rest are NaN); all if <= 0.
        plot_jacobians: show the Jacobians with :func:`jacobian_plot` (needs matplotlib).
        metadata: a :class:`FunctionMetadata` overriding the inferred labels.
        restore_inputs: for functions, restore the input arrays' contents afterwards (kernels always are).
        kernel_name: a name for the target in plots (default: the kernel key or function name).

    Returns:
        ``{(input index, output index): array}``; each array has shape ``(output scalars, input.size)``
        and the input's dtype.

    Raises:
        ValueError: ``dim`` missing for a kernel, or a mask names an unknown or non-differentiable argument.
    """
    target = _Target(function, dim, inputs, outputs, device, max_blocks, block_dim, metadata, restore_inputs)
    if kernel_name:
        target.metadata.key = kernel_name
    jac, _ = _jacobian_ad(target, input_output_mask, max_outputs_per_var)
    result = _as_arrays(target, jac)
    if plot_jacobians:
        jacobian_plot(result, target.metadata, target.inputs)
    return result


def jacobian_fd(
    function,
    dim=None,
    inputs=None,
    outputs=None,
    input_output_mask=None,
    device=None,
    max_blocks=0,
    block_dim=256,
    max_inputs_per_var=-1,
    eps=1e-4,
    plot_jacobians=False,
    metadata=None,
    restore_inputs=True,
    *,
    kernel_name=None,
) -> dict:
    """Jacobians of a kernel or Python function by central finite differences.

    Each input scalar is perturbed by ``+eps`` and ``-eps`` and the target is evaluated forward
    only, each time starting from the original contents of its arrays. Arguments are those of
    :func:`jacobian`; ``max_inputs_per_var`` limits the perturbed scalars per input (the other
    columns are NaN; all if <= 0) and ``eps`` is the step.

    Returns:
        ``{(input index, output index): array}`` shaped like :func:`jacobian`'s.
    """
    target = _Target(function, dim, inputs, outputs, device, max_blocks, block_dim, metadata, restore_inputs)
    if kernel_name:
        target.metadata.key = kernel_name
    jac, _ = _jacobian_fd(target, input_output_mask, max_inputs_per_var, eps)
    result = _as_arrays(target, jac)
    if plot_jacobians:
        jacobian_plot(result, target.metadata, target.inputs)
    return result


@dataclasses.dataclass
class _PairResult:
    """How one (input, output) Jacobian block compares between autodiff and finite differences."""

    input_label: str
    output_label: str
    max_abs: float
    where: tuple
    ad_at: float
    fd_at: float
    max_rel: float
    ad_has_nan: bool
    passed: bool


def _compare(ad, fd, atol, rtol, labels) -> _PairResult:
    rows = ~np.all(np.isnan(ad), axis=1)  # rows the autodiff pass evaluated
    ad_has_nan = bool(np.isnan(ad[rows]).any())
    both = np.isfinite(ad) & np.isfinite(fd)
    diff = np.where(both, np.abs(ad - fd), 0.0)
    passed = not ad_has_nan and bool(np.all(diff <= atol + rtol * np.abs(np.where(both, fd, 0.0))))
    where = np.unravel_index(int(np.argmax(diff)), diff.shape) if diff.size else (0, 0)
    denom = np.abs(np.where(both, fd, 0.0))
    rel = np.divide(diff, denom, out=np.zeros_like(diff), where=denom > 0)
    return _PairResult(
        labels[0],
        labels[1],
        float(diff[where]) if diff.size else 0.0,
        tuple(int(w) for w in where),
        float(ad[where]) if diff.size else 0.0,
        float(fd[where]) if diff.size else 0.0,
        float(rel.max()) if rel.size else 0.0,
        ad_has_nan,
        passed,
    )


def _color(text: str, ok: bool) -> str:
    if not getattr(sys.stdout, "isatty", lambda: False)():
        return text
    return f"\033[92m{text}\033[0m" if ok else f"\033[91m{text}\033[0m"


def _print_summary(key, results):
    header = ["Input", "Output", "Max Abs Error", "AD at MAE", "FD at MAE", "Max Rel Error", "Pass"]
    rows = [
        [
            r.input_label,
            r.output_label,
            f"{r.max_abs:.3e} at {r.where}",
            f"{r.ad_at:.3e}",
            f"{r.fd_at:.3e}",
            f"{r.max_rel:.3e}",
            "PASS" if r.passed else ("FAIL (NaN)" if r.ad_has_nan else "FAIL"),
        ]
        for r in results
    ]
    widths = [max(len(str(x)) for x in col) for col in zip(header, *rows)]
    print(" | ".join(h.ljust(w) for h, w in zip(header, widths)))
    print("-+-".join("-" * w for w in widths))
    for row, r in zip(rows, results):
        cells = [c.ljust(w) for c, w in zip(row, widths)]
        cells[-1] = _color(cells[-1], r.passed)
        print(" | ".join(cells))
    ok = all(r.passed for r in results)
    print(_color(f"Gradient check for {key} {'passed' if ok else 'failed'}", ok))


def _error_plots(target, ad, fd, plot_relative_error, plot_absolute_error):
    """|AD - FD| / |FD| and |AD - FD| per block, in Warp's order (relative first) and titles."""
    absolute = {k: np.abs(ad[k] - fd[k]) for k in ad}
    title = f"{target.key} kernel Jacobian"
    if plot_relative_error:
        rel = {}
        for k in ad:
            denom = np.abs(fd[k])
            rel[k] = np.divide(absolute[k], denom, out=np.zeros_like(denom), where=denom > 0)
        jacobian_plot(rel, target.metadata, target.inputs, title=f"{title} relative error", colormap="viridis")
    if plot_absolute_error:
        jacobian_plot(absolute, target.metadata, target.inputs, title=f"{title} absolute error", colormap="viridis")


def gradcheck(
    function,
    dim=None,
    inputs=None,
    outputs=None,
    *,
    eps=1e-4,
    atol=1e-3,
    rtol=1e-2,
    raise_exception=True,
    input_output_mask=None,
    device=None,
    max_blocks=0,
    block_dim=256,
    max_inputs_per_var=-1,
    max_outputs_per_var=-1,
    plot_relative_error=False,
    plot_absolute_error=False,
    show_summary=True,
    restore_inputs=True,
) -> bool:
    """Check a kernel's or function's autodiff Jacobians against central finite differences.

    The check passes when the autodiff Jacobians contain no NaN and, wherever both were
    evaluated, ``|AD - FD| <= atol + rtol * |FD|``. Arguments are those of :func:`jacobian` and
    :func:`jacobian_fd`.

    Args:
        raise_exception: raise ``ValueError`` on failure instead of returning False.
        plot_relative_error, plot_absolute_error: plot the error matrices (needs matplotlib).
        show_summary: print a table of the largest errors per (input, output) pair.

    Returns:
        True if every checked pair matches, False otherwise.

    Raises:
        ValueError: the check failed and ``raise_exception`` is True (or bad arguments).
    """
    target = _Target(function, dim, inputs, outputs, device, max_blocks, block_dim, None, restore_inputs)
    ad, pairs = _jacobian_ad(target, input_output_mask, max_outputs_per_var)
    fd, _ = _jacobian_fd(target, input_output_mask, max_inputs_per_var, eps)
    results = [
        _compare(ad[p], fd[p], atol, rtol, (target.label("input", p[0]), target.label("output", p[1]))) for p in pairs
    ]
    kind = "kernel" if target.is_kernel else "function"
    if show_summary:
        _print_summary(f"{kind} {target.key}", results)
    if plot_relative_error or plot_absolute_error:
        _error_plots(target, ad, fd, plot_relative_error, plot_absolute_error)
    failed = [r for r in results if not r.passed]
    if failed and raise_exception:
        r = failed[0]
        why = (
            "the autodiff gradient contains NaN" if r.ad_has_nan else "finite-difference and autodiff gradients differ"
        )
        raise ValueError(
            f"Gradient check failed for {kind} {target.key}, input {r.input_label!r}, output {r.output_label!r}: {why} "
            f"(max abs error {r.max_abs:.3e} at row/column {r.where}: AD {r.ad_at:.6g}, FD {r.fd_at:.6g})"
        )
    return not failed


def gradcheck_tape(
    tape,
    *,
    eps=1e-4,
    atol=1e-3,
    rtol=1e-2,
    raise_exception=True,
    input_output_masks=None,
    blacklist_kernels=None,
    whitelist_kernels=None,
    max_inputs_per_var=-1,
    max_outputs_per_var=-1,
    plot_relative_error=False,
    plot_absolute_error=False,
    show_summary=True,
    reverse_launches=False,
    skip_to_launch_index=0,
) -> bool:
    """Run :func:`gradcheck` on every kernel launch recorded on ``tape``.

    Each launch is checked with its recorded ``dim``, inputs and outputs, at the arrays' current
    contents. Launches with no differentiable input or output array, and launches of kernels
    built without a backward pass (``enable_backward=False``), are skipped; functions recorded
    with ``tape.record_func`` are not checked.

    Args:
        tape: the ``wp.Tape``.
        input_output_masks: ``{kernel key: input_output_mask}``.
        blacklist_kernels: kernel keys not to check.
        whitelist_kernels: if not empty, only these kernel keys are checked.
        reverse_launches: check the launches from last to first.
        skip_to_launch_index: skip this many launches (counted in checking order).
        Other arguments: as in :func:`gradcheck`.

    Returns:
        True if every checked launch passes.
    """
    launches = [rec for rec in tape.launches if isinstance(rec, LaunchRecord)]
    if reverse_launches:
        launches = launches[::-1]
    ok = True
    for rec in launches[skip_to_launch_index:]:
        key = rec.kernel.key
        if (blacklist_kernels and key in blacklist_kernels) or (whitelist_kernels and key not in whitelist_kernels):
            continue
        if not any(_is_differentiable(v) for v in rec.inputs) or not any(_is_differentiable(v) for v in rec.outputs):
            continue
        if not rec.kernel.enable_backward:
            continue  # no backward pass to check (its own option or its module's), as in Warp
        ok &= gradcheck(
            rec.kernel,
            rec.dim,
            list(rec.inputs),
            list(rec.outputs),
            eps=eps,
            atol=atol,
            rtol=rtol,
            raise_exception=raise_exception,
            input_output_mask=(input_output_masks or {}).get(key),
            device=rec.device,
            max_inputs_per_var=max_inputs_per_var,
            max_outputs_per_var=max_outputs_per_var,
            plot_relative_error=plot_relative_error,
            plot_absolute_error=plot_absolute_error,
            show_summary=show_summary,
        )
    return bool(ok)


# ---------------------------------------------------------------------------------------------
# plotting
# ---------------------------------------------------------------------------------------------


def _plot_metadata(kernel, inputs) -> FunctionMetadata:
    if isinstance(kernel, FunctionMetadata):
        return kernel
    meta = FunctionMetadata()
    if _is_kernel(kernel):
        if inputs is None:
            raise ValueError(
                f"jacobian_plot: inputs must be provided to label the Jacobians of kernel '{kernel.key}' "
                "(the inputs its Jacobians were computed for)"
            )
        meta.update_from_kernel(kernel, list(inputs))
    elif callable(kernel):
        meta.update_from_function(kernel, list(inputs or []))
    else:
        meta.key = str(kernel) if kernel is not None else None
    return meta


def _components(dtype) -> int:
    """Scalars per element of an array dtype (1 for scalars, 3 for vec3...)."""
    if dtype is None:
        raise ValueError("missing array dtype")
    scalar = _scalar_type(dtype)
    if not (isinstance(scalar, type) and issubclass(scalar, wt.scalar_base)) and scalar not in (float, int):
        raise ValueError(f"cannot determine the component count of dtype {dtype!r}")
    return int(np.prod(_trailing(dtype), dtype=np.int64))


def _block_labels(meta, keys) -> tuple:
    """``({input index: (label, components per element)}, {output index: label})`` for the
    Jacobians' keys; raises ``ValueError`` naming the first thing the metadata lacks for them."""

    def label(labels, k, which):
        name = labels[k] if labels is not None and k < len(labels) else None
        if name is None:
            raise ValueError(f"jacobian_plot: Jacobian {which} index {k}: missing label in the metadata")
        return name

    ins, outs = {}, {}
    for i, o in keys:
        if i not in ins:
            dtypes = meta.input_dtypes or []
            try:
                components = _components(dtypes[i] if i < len(dtypes) else None)
            except ValueError as e:
                raise ValueError(f"jacobian_plot: Jacobian input index {i}: {e}") from None
            ins[i] = (label(meta.input_labels, i, "input"), components)
        if o not in outs:
            outs[o] = label(meta.output_labels, o, "output")
    return ins, outs


def _norm(colors, mats, log_scale):
    finite = [m[np.isfinite(m)] for m in mats]
    values = np.concatenate(finite) if finite else np.zeros(1)
    lo, hi = (float(values.min()), float(values.max())) if values.size else (0.0, 0.0)
    if lo == hi:
        lo, hi = lo - 1.0, hi + 1.0
    if log_scale:
        nonzero = np.abs(values[values != 0])
        linthresh = float(nonzero.min()) if nonzero.size else 1e-12
        return colors.SymLogNorm(linthresh=linthresh, vmin=lo, vmax=hi)
    if lo < 0.0 < hi:
        return colors.TwoSlopeNorm(vcenter=0.0, vmin=lo, vmax=hi)
    return colors.Normalize(vmin=lo, vmax=hi)


def _draw_blocks(plt, colors, fig, grid, mats, labels, opts):
    """One image per (output, input) Jacobian block on a grid of output rows x input columns,
    each labelled with its input (x) and output (y) name; element boundaries of vector inputs
    are the x ticks when there are few elements."""
    ins, outs, scale_each, show_colorbar, log_scale, cmap = opts
    in_labels, out_labels = labels
    shared = None if scale_each else _norm(colors, list(mats.values()), log_scale)
    image = None
    for r, o in enumerate(outs):
        for c, i in enumerate(ins):
            ax = grid[r][c]
            mat = mats.get((i, o))
            if mat is None:
                ax.axis("off")
                continue
            norm = _norm(colors, [mat], log_scale) if scale_each else shared
            image = ax.imshow(mat, cmap=cmap, norm=norm, interpolation="nearest", aspect="auto")
            name, components = in_labels[i]
            ax.set_xlabel(name, fontsize=9)
            ax.set_ylabel(out_labels[o], fontsize=9)
            if components > 1 and mat.shape[1] // components <= 16:
                ax.set_xticks(np.arange(0, mat.shape[1], components) - 0.5, minor=True)
                ax.grid(which="minor", axis="x", color="0.5", linewidth=0.5)
            if show_colorbar and scale_each:
                fig.colorbar(image, ax=ax, fraction=0.046, pad=0.04)
    if show_colorbar and not scale_each and image is not None:
        fig.colorbar(image, ax=[ax for row in grid for ax in row], fraction=0.03, pad=0.02)


def jacobian_plot(
    jacobians,
    kernel,
    inputs=None,
    show_plot=True,
    show_colorbar=True,
    scale_colors_per_submatrix=False,
    title=None,
    colormap="coolwarm",
    log_scale=False,
    *,
    filename=None,
):
    """Draw the Jacobian blocks from :func:`jacobian` / :func:`jacobian_fd` in one figure.

    Args:
        jacobians: ``{(input index, output index): matrix}`` (arrays or NumPy arrays).
        kernel: the kernel (labels come from its parameter names), a Python function, or a
            :class:`FunctionMetadata`.
        inputs: the inputs the Jacobians were computed for (required with a kernel: they label
            its blocks).
        show_plot: call ``plt.show()`` (matplotlib itself says when its backend cannot show).
        show_colorbar: draw a colorbar (one per block with ``scale_colors_per_submatrix``).
        scale_colors_per_submatrix: scale colors per block instead of over all blocks.
        title: figure title (default: ``"<name> kernel Jacobian"``, as in Warp).
        colormap: a matplotlib colormap name; NaN (not evaluated) entries are drawn white.
        log_scale: symmetric logarithmic color scale.
        filename: weft extension: also save the figure to this path (e.g. a ``.png``).

    Returns:
        The matplotlib ``Figure``; None when there is nothing to plot, or (with a warning) when
        matplotlib is not installed.

    Raises:
        ValueError: a kernel without ``inputs``, or metadata lacking the label or a concrete
            dtype of an input or output the Jacobians refer to.
    """
    try:
        import matplotlib.pyplot as plt
        from matplotlib import colors
    except ImportError:
        warnings.warn("weft.autograd.jacobian_plot needs matplotlib (pip install matplotlib); skipped", stacklevel=2)
        return None
    meta = _plot_metadata(kernel, inputs)
    mats = {tuple(k): _scalar_matrix(v) for k, v in jacobians.items()}
    if not mats:
        return None
    labels = _block_labels(meta, mats)
    ins = sorted({i for i, _ in mats})
    outs = sorted({o for _, o in mats})
    widths = [max(mats[(i, o)].shape[1] for o in outs if (i, o) in mats) for i in ins]
    heights = [max(mats[(i, o)].shape[0] for i in ins if (i, o) in mats) for o in outs]
    fig, grid = plt.subplots(
        len(outs),
        len(ins),
        squeeze=False,
        figsize=(min(3.0 + 2.5 * len(ins), 16), min(2.0 + 2.5 * len(outs), 12)),
        gridspec_kw={"width_ratios": widths, "height_ratios": heights},
        layout="constrained",
    )
    cmap = plt.get_cmap(colormap).with_extremes(bad="white")  # NaN: not evaluated
    opts = (ins, outs, scale_colors_per_submatrix, show_colorbar, log_scale, cmap)
    _draw_blocks(plt, colors, fig, grid, mats, labels, opts)
    fig.suptitle(title if title is not None else f"{meta.key or 'unknown'} kernel Jacobian")
    if filename:
        fig.savefig(filename, dpi=120)
    if show_plot:
        plt.show()
    return fig
