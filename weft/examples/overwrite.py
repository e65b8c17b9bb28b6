"""Overwriting an array that an earlier launch read: what goes wrong, how weft warns, how to fix it.

The pipeline, recorded on one ``wp.Tape``::

    square:    b[i] = a[i] * a[i]      (reads a, writes b)
    overwrite: a[i] = c[i]             (writes a: the values square read are gone)
    total:     loss += b[i]            (loss = sum of a0^2, with a0 the ORIGINAL a)

so d loss / d a0 = 2 a0. The backward pass runs the launches' adjoints in reverse, and the
adjoint of ``square`` recomputes what it needs from ``a`` as it is in memory *at backward time*:
by then ``a`` holds ``c``. The gradient does flow back through ``square`` into ``a.grad``, but it
comes out as 2 c instead of 2 a0, silently. With ``wp.config.verify_autograd_array_access =
True`` the tape notices, when ``overwrite`` is recorded, that it writes an array an earlier
launch read, and prints Warp's warning naming the array, the kernel argument and its source line.

The example runs the pipeline three ways and checks each against the analytic gradient:

1. as above (the warning fires; the gradient is wrong, and ``weft.autograd.gradcheck`` of the
   pipeline fails: autodiff and finite differences disagree),
2. writing the new values to a separate array instead of ``a`` (no warning, right gradient),
3. keeping a copy: ``square`` reads a clone of ``a`` taken before ``a`` is overwritten (the
   gradient lands in the clone's ``.grad``).

Run::

    python -m weft.examples.overwrite [--n N] [--out DIR]

It prints the gradients and writes ``overwrite_tape.dot`` (the naive tape as a Graphviz graph,
from ``tape.visualize``; render with ``dot -Tsvg``) into DIR (default ``./examples_output/overwrite/``).
"""

import argparse
import contextlib
import io
import os
import sys
import warnings

import numpy as np

import weft as wp
import weft.autograd


@wp.kernel
def square(a: wp.array(dtype=float), b: wp.array(dtype=float)):
    i = wp.tid()
    b[i] = a[i] * a[i]


@wp.kernel
def overwrite(c: wp.array(dtype=float), a: wp.array(dtype=float)):
    i = wp.tid()
    a[i] = c[i]


@wp.kernel
def total(b: wp.array(dtype=float), loss: wp.array(dtype=float)):
    i = wp.tid()
    wp.atomic_add(loss, 0, b[i])


def _arrays(a0, c0):
    a = wp.array(a0, dtype=float, requires_grad=True)
    c = wp.array(c0, dtype=float, requires_grad=True)
    b = wp.zeros(len(a0), dtype=float, requires_grad=True)
    loss = wp.zeros(1, dtype=float, requires_grad=True)
    return a, b, c, loss


def record(tape, square_reads, overwrite_writes, b, c, loss):
    """square(square_reads -> b), overwrite(c -> overwrite_writes), total(b -> loss), recorded on
    ``tape`` (or on whatever tape is active when ``tape`` is None)."""
    n = b.shape[0]
    with tape if tape is not None else contextlib.nullcontext():
        wp.launch(square, n, inputs=[square_reads], outputs=[b])
        wp.launch(overwrite, n, inputs=[c], outputs=[overwrite_writes])
        wp.launch(total, n, inputs=[b], outputs=[loss])


def naive_pipeline(a, c):
    """The naive pipeline as a function of its inputs (for ``weft.autograd.gradcheck``)."""
    b = wp.zeros(a.shape[0], dtype=float, requires_grad=True)
    loss = wp.zeros(1, dtype=float, requires_grad=True)
    record(None, a, a, b, c, loss)
    return loss


def _captured(fn):
    """Run ``fn`` and return (its result, everything it printed or warned) so the example can
    show and test the overwrite warning however it is emitted."""
    out, err = io.StringIO(), io.StringIO()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            result = fn()
    text = out.getvalue() + err.getvalue() + "".join(f"{w.category.__name__}: {w.message}\n" for w in caught)
    return result, text


def _record_checked(tape, square_reads, overwrite_writes, b, c, loss) -> str:
    """``record`` with ``verify_autograd_array_access`` on; returns what the check printed."""
    saved = wp.config.verify_autograd_array_access
    wp.config.verify_autograd_array_access = True
    try:
        _, text = _captured(lambda: record(tape, square_reads, overwrite_writes, b, c, loss))
    finally:
        wp.config.verify_autograd_array_access = saved
    return text


def run_naive(a0, c0):
    """The naive pipeline: ``overwrite`` writes into ``a``, which ``square`` read.

    Returns ``(a.grad, warning text, tape, (a, b, c, loss))``."""
    a, b, c, loss = _arrays(a0, c0)
    tape = wp.Tape()
    text = _record_checked(tape, a, a, b, c, loss)
    tape.backward(loss)
    return a.grad.numpy().copy(), text, tape, (a, b, c, loss)


def run_separate_arrays(a0, c0):
    """Fix 1: the new values go to a separate array; ``a`` keeps what ``square`` read.

    Returns ``(a.grad, warning text)``."""
    a, b, c, loss = _arrays(a0, c0)
    a_next = wp.zeros_like(a)
    tape = wp.Tape()
    text = _record_checked(tape, a, a_next, b, c, loss)
    tape.backward(loss)
    return a.grad.numpy().copy(), text


def run_keep_copy(a0, c0):
    """Fix 2: ``square`` reads a copy of ``a`` taken before ``a`` is overwritten in place.

    Returns ``(a_saved.grad, warning text)``."""
    a, b, c, loss = _arrays(a0, c0)
    a_saved = wp.clone(a)  # inherits requires_grad: the gradient for the original values lands here
    tape = wp.Tape()
    text = _record_checked(tape, a_saved, a, b, c, loss)
    tape.backward(loss)
    return a_saved.grad.numpy().copy(), text


def run(n: int = 4, out_dir=None, verbose: bool = True) -> dict:
    """Run the three variants; return their gradients, the analytic one, the warning text and
    the gradcheck verdicts. Writes the naive tape's DOT graph to ``out_dir`` if given."""
    say = print if verbose else (lambda *a, **k: None)
    a0 = np.linspace(1.0, 2.0, n).astype(np.float32)
    c0 = (10.0 * np.arange(1, n + 1)).astype(np.float32)
    expected = 2.0 * a0
    say(f"a0 = {a0}\nc  = {c0}\nloss = sum(a0^2), so d loss / d a0 = 2 a0 = {expected}\n")

    say("1) square(a -> b), overwrite(c -> a), total(b -> loss) with verify_autograd_array_access = True")
    naive_grad, warning, tape, (a, b, c, loss) = run_naive(a0, c0)
    say("   the tape printed:\n     " + (warning.strip().replace("\n", "\n     ") or "(nothing)"))
    say(f"   a.grad = {naive_grad}   (= 2 c: square's adjoint re-read a after it was overwritten)")
    say(f"   c.grad = {c.grad.numpy()}   (nothing depends on the new a)")
    ok_naive, report = _captured(
        lambda: weft.autograd.gradcheck(naive_pipeline, inputs=_arrays(a0, c0)[::2], raise_exception=False)
    )
    say(
        f"   weft.autograd.gradcheck(naive_pipeline): {'passed' if ok_naive else 'FAILED'} (autodiff vs finite differences)"
    )
    if out_dir:
        os.makedirs(out_dir, exist_ok=True)
        dot_path = os.path.join(out_dir, "overwrite_tape.dot")
        tape.visualize(dot_path, array_labels={a: "a", b: "b", c: "c", loss: "loss"})
        say(f"   wrote {dot_path}")

    say("\n   What to do: never overwrite, on a recorded tape, an array a previous launch read.")
    say("   Write new values to a separate array, or let the earlier launch read a copy.\n")
    separate_grad, separate_warning = run_separate_arrays(a0, c0)
    say(
        f"2) separate array for the new values: a.grad = {separate_grad}; warnings: {separate_warning.strip() or 'none'}"
    )
    copy_grad, copy_warning = run_keep_copy(a0, c0)
    say(f"3) square reads a copy of a:          a_saved.grad = {copy_grad}; warnings: {copy_warning.strip() or 'none'}")
    return {
        "expected": expected,
        "naive": naive_grad,
        "c": c0,
        "warning": warning,
        "gradcheck_naive": bool(ok_naive),
        "gradcheck_report": report,
        "separate": separate_grad,
        "separate_warning": separate_warning,
        "copy": copy_grad,
        "copy_warning": copy_warning,
    }


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--n", type=int, default=4, help="array length (default 4)")
    parser.add_argument("--out", default=os.path.join(".", "examples_output", "overwrite"), help="output folder")
    args = parser.parse_args(argv)
    r = run(args.n, args.out)
    right = np.allclose(r["separate"], r["expected"]) and np.allclose(r["copy"], r["expected"])
    print(
        f"\nnaive gradient {'matches' if np.allclose(r['naive'], r['expected']) else 'differs from'} 2 a0; "
        f"both fixes {'match' if right else 'DO NOT match'} it"
    )
    print(f"output folder: {os.path.abspath(args.out)}")
    return 0 if right else 1


if __name__ == "__main__":
    sys.exit(main())
