"""Staged task loops on the CPU (native/staging.h): which kernels get one, and its C++ text.

A kernel's backward pass is staged when its body is straight-line code whose only side effects in
the backward pass are gradient adds into arrays it reads (``adj_load_accum`` /
``adj_load_exclusive``), and whose other gradient reads are those of ``atomic_add`` /
``atomic_sub``. Then the task loop can run the body as a pure, vectorizable loop over a chunk of
tasks that records the adds, followed by a scalar loop that applies them in task order (same
float addition order as the plain loop) or, for a task whose flagged index was out of range,
runs the checked body so that the error is raised where it happened.

Staging pays only where it defers or flags something: a one-dimensional kernel with a gradient
add that may land on another thread's element (the scatter of a gather, ``x[idx[i]]``), or a
gradient read at a data-dependent index (``atomic_add(grid, cell, ...)``: the staged body reads
it branch-free; a particle-to-grid backward ran 8 % faster staged). Otherwise the adds go into the
thread's own element or a thread-local sum, which the fast body makes in place; and a
multi-dimensional launch's fast body counts its coordinates along each run where the staged body
would divide for them: those kernels keep the fast body.

The forward pass of such a kernel is staged the same way when its only side effects are
``atomic_add`` / ``atomic_sub`` whose old value is unused, into arrays nothing else in the kernel
touches (access.py ``accum_calls``), at least one of them at a data-dependent index: an FEM
assembly's element forces, a spring's, a particle's transfer to a grid. The pure loop computes
the elements' contributions vectorised; the adds are applied in task order, as the plain loop
makes them. Its launch takes the staged loop only when those arrays overlap no other array
argument (a read of an overlapping array would see the adds a chunk has deferred).

Contract: ``plan(fn)`` / ``plan_forward(fn)`` are None or a ``StagePlan``; the renderer consults
``plan.sites`` while it renders the ``_staged`` body, and ``staged_loops`` renders the entry
point's loops.
"""

from __future__ import annotations

import dataclasses

from .. import types as wt
from ..array_layout import _dtype_size
from . import adjoint as ad
from . import intrinsics as intr
from . import ir
from .cnames import ctype_name

MAX_STAGE_BYTES = 32 * 1024  # the chunk's stage buffers live on the stack of every pool thread
CHUNK = 64  # tasks per chunk: native/staging.h STAGE_CHUNK


@dataclasses.dataclass
class Site:
    """One add of the body (a gradient add, or a forward atomic): slot ``index`` of the stage
    buffers."""

    index: int
    param: str  # the kernel parameter whose gradient (forward: data) receives it
    ctype: str
    exclusive: bool


@dataclasses.dataclass
class StagePlan:
    sites: dict  # id(load stmt) -> Site, numbered in the order the backward body makes the adds
    # Record an add only when its array has a gradient (a branch): for bodies whose loop stays
    # scalar anyway (``_calls_the_c_library``), where the compiler then skips computing the
    # gradients of arrays without one (an FEM assembly's rest shapes: 18 % of its backward).
    # A vectorised loop computes every lane regardless, and the branch would stop it vectorising
    # (cloth springs with rest lengths without a gradient: 1.4x slower guarded).
    guarded: bool = False
    mode: str = "backward"  # the pass it stages ("forward": sites are atomic adds into data)


# Builtins the CPU build computes by calling the C library (a call per element, which no loop
# around it can vectorise); sqrt, floor and friends are instructions and tanh is weft's own.
C_LIBRARY_CALLS = frozenset(
    "exp log log2 log10 sin cos tan asin acos atan atan2 sinh cosh erf erfc erfinv erfcinv pow cbrt".split()
)
# ...except these of float32 and narrower floats, which native/math_f32.h computes inline.
OWN_FLOAT32_MATH = frozenset({"log"})


# Builtins whose float32 form a staged body calls from native/math_f32.h: the same bits as the
# C library's, with no instruction GCC refuses to vectorise (it vectorises floorf & co. only
# without -ftrapping-math); scalar code keeps the C library's (one instruction each).
LANE_BUILTINS = frozenset({"floor", "ceil", "trunc"})


def lane_builtin(call) -> str | None:
    """The C++ function a staged body calls for builtin call ``call``, when not its own."""
    if call.callee.symbol in LANE_BUILTINS and all(a.type is wt.float32 for a in call.args):
        return f"weft::f32math::{call.callee.symbol}"
    return None


def _is_c_library_call(call) -> bool:
    """Whether builtin call ``call`` calls the C library on the CPU."""
    symbol = call.callee.symbol
    if symbol not in C_LIBRARY_CALLS:
        return False
    narrow = (wt.float16, wt.bfloat16, wt.float32)
    return not (symbol in OWN_FLOAT32_MATH and all(a.type in narrow for a in call.args))


def _calls_the_c_library(fn, seen=None) -> bool:
    """Whether ``fn`` or a func it calls calls a builtin in ``C_LIBRARY_CALLS``."""
    seen = set() if seen is None else seen
    for s in ir.walk(fn.body):
        if not isinstance(s, ir.Call) or isinstance(s.callee, str):
            continue
        if ir.is_builtin(s.callee) and _is_c_library_call(s):
            return True
        if ir.is_func(s.callee) and id(s.callee) not in seen:
            seen.add(id(s.callee))
            if _calls_the_c_library(s.callee.ir, seen):
                return True
    return False


def _is_param_array(var, params) -> bool:
    """An array parameter the body never reassigns (the entry point's argument copy is its value)."""
    return isinstance(var.type, wt.ArrayType) and var.id in params


def _element_size(dtype):
    """Bytes of a scalar, vector or matrix element; None for other elements (structs)."""
    if not (wt.is_scalar(dtype) or hasattr(dtype, "_scalar")):
        return None
    return _dtype_size(dtype)


def _pure_callee(c) -> bool:
    """A builtin or user function whose forward and adjoint touch no array and have no effect."""
    if ir.is_intrinsic(c) or intr.has_side_effect(c):
        return False
    if ir.is_builtin(c):
        return not any(wt.is_array_like(t) for _, t in c.params)  # tile loads' adjoints add into arrays
    return all(
        not isinstance(p.var.type, wt.ArrayType) and getattr(p.var.type, "_kind", None) != "struct"
        for p in c.ir.params
    )


PURE_INTRINSICS = {intr.CAST, intr.TID, intr.SHAPE, intr.ZERO, intr.CONSTRUCT, intr.LOGICAL_AND, intr.LOGICAL_OR}
PURE_INTRINSICS |= {intr.TUPLE_MAKE, intr.TUPLE_GET}


def _stageable_params(fn, reassigned: set) -> dict | None:
    """{var id: name} of the array parameters the body never reassigns, when the body is
    straight-line code that reads only those arrays (element loads), adds into them with
    ``atomic_add`` / ``atomic_sub`` and otherwise calls pure builtins and funcs; else None."""
    params = {p.var.id: p.name for p in fn.params if p.var.id not in reassigned}
    if any(getattr(p.var.type, "_kind", None) == "struct" for p in fn.params):
        return None
    for s in ir.walk(fn.body):
        if isinstance(s, (ir.If, ir.Loop)):
            return None
        if not isinstance(s, ir.Call):
            continue
        c = s.callee
        if isinstance(c, str):
            if c == intr.LOAD:
                if not _is_param_array(s.args[0], params) or isinstance(s.result.type, wt.ArrayType):
                    return None
            elif c in (intr.ATOMICS["atomic_add"], intr.ATOMICS["atomic_sub"]):
                if not _is_param_array(s.args[0], params):
                    return None
            elif c in (intr.EXTRACT, intr.ASSIGN_COPY):
                indices = s.args[1:] if c == intr.EXTRACT else s.args[1:-1]
                if not all(x.is_const for x in indices):  # a variable component index may throw
                    return None
            elif c not in PURE_INTRINSICS:
                return None
        elif not _pure_callee(c):
            return None
    return params


def plan(fn, facts, reverse, reassigned: set) -> StagePlan | None:
    """The staging plan of kernel ``fn``'s backward pass, or None when it keeps the plain loop.
    ``facts``: its ``access.AccessFacts``; ``reverse``: its adjoint program
    (``pipeline.Compiled.reverse``); ``reassigned``: ids of the vars the body assigns
    (ir.assigned_var_ids)."""
    if not facts.tid_indexed:  # no fast body: the launch cannot skip checks
        return None
    if fn.tid_ndim > 1:
        # the staged body would find its grid coordinates by division for every task, where the
        # fast body counts them along each run (a 64^3 loss's backward: 4.6 ms staged, 0.15 not)
        return None
    params = _stageable_params(fn, reassigned)
    if params is None:
        return None
    sites, grads_read, total, gathers = {}, set(), 0, False
    for r in reverse:
        if not isinstance(r, ad.AdjCall) or not ir.is_intrinsic(r.stmt.callee):
            continue
        s = r.stmt
        name = params.get(s.args[0].id)
        if s.callee == intr.LOAD:
            exclusive = id(s) in facts.exclusive_loads
            if not exclusive and id(s) not in facts.accum_calls:
                return None  # an add another access of the array may observe
            dtype = s.args[0].type.dtype
            size = _element_size(dtype)
            if size is None:
                return None
            sites[id(s)] = Site(len(sites), name, _ctype(dtype), exclusive)
            total += CHUNK * (8 + size)
        elif s.callee in (intr.ATOMICS["atomic_add"], intr.ATOMICS["atomic_sub"]):
            grads_read.add(name)
            indices = s.args[1:-1]
            gathers |= not (id(s) in facts.tid_indexed or all(x.is_const for x in indices))
        elif s.callee == intr.STORE or s.callee in intr.ATOMICS.values():
            return None
    if not sites or total > MAX_STAGE_BYTES:
        return None
    if not gathers and all(site.exclusive or sid in facts.hoisted for sid, site in sites.items()):
        # every add goes to the thread's own element or to a thread-local sum, and no gradient
        # is read at a data-dependent index (which the staged body reads branch-free, flagged):
        # the fast body makes the adds in place, vectorised, with nothing to defer (0.43 -> 0.04
        # ms for the gradient of a 262k-element sum of squares)
        return None
    if grads_read & {site.param for site in sites.values()}:
        return None  # a deferred add would change what a later gradient read sees
    return StagePlan(sites, guarded=_calls_the_c_library(fn))


def plan_forward(fn, facts, reassigned: set) -> StagePlan | None:
    """The staging plan of kernel ``fn``'s forward pass, or None when it keeps its fast loop:
    a one-dimensional, straight-line body whose side effects are adds into arrays only it adds
    to (``facts.accum_calls``), one of them at an index that is not the thread's, with no call
    to the C library (whose loop stays scalar: nothing would pay for the records) and no
    one-element sums (the fast loop keeps those in registers)."""
    if not facts.tid_indexed or fn.tid_ndim > 1 or facts.hoist_slots_of("forward"):
        return None
    params = _stageable_params(fn, reassigned)
    if params is None or _calls_the_c_library(fn):
        return None
    sites, total, scatters, moved = {}, 0, False, 0
    adds = (intr.ATOMICS["atomic_add"], intr.ATOMICS["atomic_sub"])
    for s in ir.walk(fn.body):
        if not isinstance(s, ir.Call) or not ir.is_intrinsic(s.callee):
            continue
        if s.callee in adds:
            dtype = s.args[0].type.dtype
            size = _element_size(dtype)
            if id(s) not in facts.accum_calls or size is None:
                return None  # its old value is used, or the array is read too; or a struct
            sites[id(s)] = Site(len(sites), params[s.args[0].id], _ctype(dtype), False)
            total += CHUNK * (8 + size)
            scatters |= not (id(s) in facts.tid_indexed or all(x.is_const for x in s.args[1:-1]))
            moved += _components(dtype)
        elif s.callee == intr.LOAD and id(s) not in facts.tid_indexed:
            moved += _components(s.result.type)  # a vector gather per component when staged
        elif s.callee == intr.STORE or s.callee in intr.ATOMICS.values():
            return None
    if not scatters or total > MAX_STAGE_BYTES:
        return None
    if _arithmetic(fn) < FORWARD_ARITHMETIC_PER_COMPONENT * moved:
        return None
    return StagePlan(sites, mode="forward")


# The staged forward pass pays for its gathers (a vector gather per component of an element read
# at an index the thread does not own) and its records (a store and a load per component of an
# add) with vectorised arithmetic. Staged only when the body's arithmetic (``_arithmetic``) is at
# least this many operations per component moved. Measured on this machine (AVX-512, 2 cores),
# one thread, staged against the plain loop: cloth springs (ratio 1.2) 0.45 ms either way,
# particle-to-grid (4.7) 7.7 against 7.5 ms, FEM element forces (13) 1.7 against 4.2 ms.
FORWARD_ARITHMETIC_PER_COMPONENT = 6
# Operations per component of the result of the math builtins (a rough count: their polynomials).
TRANSCENDENTAL = frozenset("exp log log2 log10 sin cos tan asin acos atan atan2 sinh cosh tanh erf erfc pow cbrt".split())


def _components(t) -> int:
    """Scalar components of a value of type ``t`` (1 for a scalar)."""
    return getattr(t, "_length", None) or 1


def _arithmetic(fn) -> int:
    """A rough count of the float operations of one run of ``fn``'s body, the funcs it calls
    included: one per component of each builtin's result, except matrix products (2 R C K),
    inverses and determinants (2 N^3) and the math functions (``TRANSCENDENTAL``: 20)."""
    total = 0
    for s in ir.walk(fn.body):
        if not isinstance(s, ir.Call) or ir.is_intrinsic(s.callee):
            continue
        if ir.is_func(s.callee):
            total += _arithmetic(s.callee.ir)
            continue
        shapes = [getattr(a.type, "_shape", ()) for a in s.args]
        out = _components(s.result.type) if s.result is not None else 0
        if s.callee.symbol in TRANSCENDENTAL:
            total += 20 * out
        elif s.callee.symbol in ("inverse", "determinant") and len(shapes[0]) == 2:
            total += 2 * shapes[0][0] ** 3
        elif s.callee.symbol == "mul" and len(shapes) == 2 and len(shapes[0]) == 2 and shapes[1]:
            total += 2 * shapes[0][0] * shapes[0][1] * (shapes[1][1] if len(shapes[1]) == 2 else 1)
        else:
            total += out
    return total


def _ctype(t) -> str:
    return ctype_name(t)


def stage_struct_name(sym: str, plan: StagePlan) -> str:
    """The C++ struct of a staged pass's buffers (a kernel may stage both passes)."""
    return f"wp_stage_{sym}" if plan.mode == "backward" else f"wp_stage_{sym}_{plan.mode}"


def stage_struct(sym: str, plan: StagePlan) -> list:
    """The stage buffers of one chunk (values in ``weft::stage_values``: whole elements, or one
    column per component for elements the compiler cannot store interleaved, such as mat33)."""
    out = [f"struct {stage_struct_name(sym, plan)} {{", "    bool bad[weft::STAGE_CHUNK];"]
    for site in plan.sites.values():
        out.append(f"    weft::int64 off_{site.index}[weft::STAGE_CHUNK];")
        out.append(f"    weft::stage_values<{site.ctype}> val_{site.index};")
    out.append("};")
    return out


def record_site(plan: StagePlan, site: Site, array: str, offset: str, adj: str) -> str:
    """Step 1: record a gradient add instead of making it (in a ``guarded`` plan, only if
    ``array`` has a gradient)."""
    record = f"st.off_{site.index}[k] = {offset}; st.val_{site.index}.put(k, {adj});"
    return f"if ({array}.grad) {{ {record} }}" if plan.guarded else record


def record_atomic(site: Site, offset: str, value: str, kind: str) -> str:
    """Step 1 of a staged forward pass: the expression that records ``atomic_add`` (``kind``
    "add") or ``atomic_sub`` ("sub") instead of making it; a zero element, as the accumulating
    atomic returns (its value is unused)."""
    if kind == "sub":
        value = f"weft::negated({value})"
    return f"weft::stage_record(st.off_{site.index}[k], st.val_{site.index}, k, {offset}, {value})"


def staged_loops(sym: str, plan: StagePlan, hoisted=None, lanes: int = 8) -> list:
    """The fast branch of a staged entry point (unindented lines): chunks of tasks, each run as
    the pure staged loop and then the in-order application of its recorded adds (or the checked
    body for a task whose flagged index was out of range: it raises the error there). ``hoisted``
    maps the loads whose gradient adds go to one element for the whole launch to their
    thread-local sum (access.py ``hoisted``, emit.py ``hoist_flush``): those adds go into the
    sum's lanes instead."""
    hoisted = hoisted or {}
    apply = []
    for sid, site in sorted(plan.sites.items(), key=lambda x: x[1].index):
        arr = f"local_args.arg_{site.param}"
        val = f"st.off_{site.index}[k], st.val_{site.index}.get(k)"
        if plan.mode == "forward":
            apply.append(f"weft::stage_accumulate_data(tc, {arr}, {val});")
        elif sid in hoisted:
            slot = hoisted[sid]
            apply.append(f"weft::hoist_add(hoist.a{slot}[k % {lanes}], hoist.used{slot}, st.val_{site.index}.get(k));")
        elif site.exclusive:
            apply.append(f"weft::stage_add_exclusive({arr}, {val});")
        else:
            apply.append(f"weft::stage_accumulate(tc, {arr}, {val});")
    mode = plan.mode
    checked = f"{sym}_{mode}_body(&local_args, &local_bounds, t0 + k, tc{', hoist, 0' if hoisted else ''});"
    i2, i3, i4 = "    ", "        ", "            "
    return [
        f"{stage_struct_name(sym, plan)} st;",
        "for (weft::int64 t0 = begin; t0 < end; t0 += weft::STAGE_CHUNK) {",
        f"{i2}const int m = end - t0 < weft::STAGE_CHUNK ? int(end - t0) : weft::STAGE_CHUNK;",
        f"{i2}const weft::int32 first = weft::int32(t0);  // the fast branch's launches have int32 tasks",
        f"{i2}#pragma GCC ivdep",
        f"{i2}for (int k = 0; k < m; ++k) {sym}_{mode}_staged_body(&local_args, &local_bounds, t0 + k, first + k, st, k);",
        f"{i2}for (int k = 0; k < m; ++k) {{",
        f"{i3}if (st.bad[k]) {{",
        f"{i4}{checked}",
        f"{i4}continue;",
        f"{i3}}}",
        *[i3 + line for line in apply],
        f"{i2}}}",
        "}",
    ]
