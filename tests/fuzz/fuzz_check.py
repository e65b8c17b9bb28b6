"""Check generated programs: the tape's gradient against central finite differences, in float64.

For a program ``k(x, y, n)`` (``fuzz_gen``) and random inputs ``x``, weights ``w`` and loop count
``n``, the loss is ``sum(w * y)``. The tape's ``x.grad`` is compared with central differences of
the loss at two steps, 1e-6 and 1e-4:

- ``ok``: the tape matches the differences;
- ``kink``: the two steps disagree with each other, so the loss is not smooth near ``x`` (a branch,
  ``abs``, ``floor``... switches within 1e-4): no verdict, the program counts as tried;
- ``mismatch``: the steps agree and the tape does not. A silent wrong gradient: a bug;
- ``nonfinite``: a NaN or infinity in the outputs or the gradient;
- ``rejected``: weft refused the program at build time (the message says why); a construct the
  compiler rejects clearly is allowed, a crash or a wrong answer is not;
- ``error``: anything else raised (a bug too).

Programs are compiled many to a module (one C++ build for a batch); a program that fails inside a
batch is retried alone, so one bad program never hides the others.
"""

from __future__ import annotations

import dataclasses
import importlib
import os
import sys
import traceback

import fuzz_gen as gen
import numpy as np

import weft as wp
from weft.codegen.errors import WarpCodegenError, WeftBuildError

F64 = wp.float64
STEPS = (1e-6, 1e-4)
RTOL, ATOL = 1e-5, 1e-6


@dataclasses.dataclass
class Outcome:
    index: int
    status: str
    detail: str = ""


def _loss(kernel, x_np, w, n):
    x = wp.array(x_np, dtype=F64)
    y = wp.zeros(gen.Y_SIZE, dtype=F64)
    wp.launch(kernel, dim=gen.THREADS, inputs=[x, y, n])
    return float(np.sum(w * y.numpy()))


def _central(kernel, x_np, w, n, eps):
    out = np.zeros_like(x_np)
    for k in range(x_np.size):
        xp, xm = x_np.copy(), x_np.copy()
        xp[k] += eps
        xm[k] -= eps
        out[k] = (_loss(kernel, xp, w, n) - _loss(kernel, xm, w, n)) / (2 * eps)
    return out


def inputs(seed: int, index: int) -> tuple:
    """``(x, w, n)`` of program ``index`` of campaign ``seed``: its inputs, loss weights and loop count."""
    rng = np.random.default_rng([seed, index])
    x_np = rng.uniform(-1.0, 1.0, gen.X_SIZE)
    w = rng.uniform(0.5, 1.5, gen.Y_SIZE)
    n = int(rng.integers(0, 4))
    return x_np, w, n


def check_kernel(kernel, index: int, seed: int) -> Outcome:
    """Compare the tape gradient of one program with finite differences at a random point."""
    x_np, w, n = inputs(seed, index)
    x = wp.array(x_np, dtype=F64, requires_grad=True)
    y = wp.zeros(gen.Y_SIZE, dtype=F64, requires_grad=True)
    tape = wp.Tape()
    with tape:
        wp.launch(kernel, dim=gen.THREADS, inputs=[x, y, n])
    tape.backward(grads={y: w})
    tape_grad = x.grad.numpy().copy()
    if not (np.all(np.isfinite(y.numpy())) and np.all(np.isfinite(tape_grad))):
        return Outcome(index, "nonfinite", f"n={n} y={y.numpy()} grad={tape_grad}")
    fine, coarse = (_central(kernel, x_np, w, n, eps) for eps in STEPS)
    if not np.allclose(fine, coarse, rtol=RTOL, atol=ATOL):
        return Outcome(index, "kink")
    if not np.allclose(tape_grad, fine, rtol=RTOL, atol=ATOL):
        return Outcome(index, "mismatch", f"n={n}\nx={x_np.tolist()}\ntape={tape_grad.tolist()}\nfd={fine.tolist()}")
    return Outcome(index, "ok")


def _import(directory: str, name: str, programs):
    path = os.path.join(directory, name + ".py")
    with open(path, "w") as f:
        f.write(gen.module_source(programs))
    if directory not in sys.path:
        sys.path.insert(0, directory)
    return importlib.import_module(name)


def _check_in(module, program) -> Outcome:
    try:
        return check_kernel(getattr(module, program.name), program.index, program.seed)
    except (WarpCodegenError, WeftBuildError) as e:
        return Outcome(program.index, "rejected", f"{type(e).__name__}: {str(e).strip()[:2000]}")
    except Exception as e:  # noqa: BLE001 (anything else is reported, with its traceback)
        return Outcome(program.index, "error", f"{type(e).__name__}: {e}\n{traceback.format_exc()[-3000:]}")


def run_batch(seed: int, indices, directory: str) -> list:
    """Check the programs ``indices`` of campaign ``seed``, compiled together in one module; a
    program whose check does not pass is checked again alone, in a module of its own."""
    return run_batch_programs([gen.program(seed, i) for i in indices], directory, f"fuzz_s{seed}_b{indices[0]}")


def run_batch_programs(programs, directory: str, name: str) -> list:
    """``run_batch`` for given programs, compiled together as module ``name``."""
    try:
        module = _import(directory, name, programs)
    except Exception as e:  # noqa: BLE001 (the whole batch failed to import: check one by one)
        module, batch_error = None, e
    outcomes = []
    for p in programs:
        outcome = _check_in(module, p) if module is not None else Outcome(p.index, "error", str(batch_error))
        if outcome.status not in ("ok", "kink"):
            alone = _import(directory, f"{name}_p{p.index}", [p])
            outcome = _check_in(alone, p)
        outcomes.append(outcome)
    return outcomes
