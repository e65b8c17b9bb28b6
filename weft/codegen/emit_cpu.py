"""Renderer, CPU flavour: a sibling of ``emit_cuda.CUDARenderer`` over the same ``CStyleRenderer``
(emit.py: the same IR and body rendering). It adds what only the host build does: entry points
over a range of tasks run by the thread pool, staged backward loops (staging.py), per-thread
accumulation (accumulate.h) with its plain-add body, thread-local sums of one-element
accumulations, and multi-dimensional launches walked in runs along the last grid dimension.
"""

from __future__ import annotations

from .. import types as wt
from . import ir, staging, templates
from . import intrinsics as intr
from .cnames import ctype_name
from . import emit
from .emit import Body, CStyleRenderer


def _statements(inst) -> int:
    """How many IR statements a kernel has (its loops of constant range unrolled)."""
    return sum(1 for _ in ir.walk(inst.ir.body))


class CPURenderer(CStyleRenderer):
    """Renders a module for the host compiler: entry points over a range of tasks (run by the
    thread pool), staged backward loops (staging.py) and per-thread accumulation (accumulate.h)."""

    target = "cpu"
    fn_qualifier = "static inline"
    body_qualifier = "static inline __attribute__((always_inline))"  # per-thread bodies, inlined into the task loops
    entry_qualifier = "WEFT_EXPORT"

    # A kernel past this many IR statements (its loops of constant range unrolled) is compiled at
    # -O1: at -O3 GCC took 135 s and 18 GB for one such backward body (Warp's test_arithmetic runs
    # 150 transcendental functions and their adjoints in one thread), two of which side by side
    # did not fit in 24 GB; at -O1, 4 s and 0.2 GB. Kernels of this size are rare and run few
    # threads (tests, setup code); a physics kernel is a fraction of it (FEM assembly: 49,
    # particle-to-grid: 164).
    HUGE_KERNEL_STATEMENTS = 400
    O1 = ' __attribute__((optimize("O1")))'

    def render_kernel(self, inst) -> str:
        """The kernel's bodies and entry points; those of a huge kernel compiled at -O1."""
        if _statements(inst) <= self.HUGE_KERNEL_STATEMENTS:
            return super().render_kernel(inst)
        saved = self.body_qualifier, self.entry_qualifier
        self.body_qualifier, self.entry_qualifier = saved[0] + self.O1, saved[1] + self.O1
        try:
            return super().render_kernel(inst)
        finally:
            self.body_qualifier, self.entry_qualifier = saved

    # A staged entry point is flattened: everything its staged loop calls is inlined
    # into it, whatever the size. GCC's budget for growing one large function ran out in an FEM
    # element's backward (adj_inverse, adj_matmul and the float32 log left out of line), so its
    # loop stayed scalar; flattened, it vectorises. The checked body, which runs only for a task
    # with an index out of range or a launch off the fast path, stays out of line, so that the
    # flattening does not inline it twice with all it calls (g++ time: 5.9 -> 4.8 s for that
    # module).
    FLATTEN = " __attribute__((flatten))"
    OUT_OF_LINE = "static __attribute__((noinline))"

    def body_qualifier_of(self, inst, mode: str, variant: str) -> str:
        plan = self.stage_plan_of(inst) if mode == "backward" else self.forward_stage_plan_of(inst)
        if variant == "" and plan is not None:
            return self.body_qualifier.replace(CPURenderer.body_qualifier, self.OUT_OF_LINE)
        return self.body_qualifier

    def builtin_name(self, b, s) -> str:
        """A staged body's vectorisable variants of some builtins (staging.py LANE_BUILTINS)."""
        lane = staging.lane_builtin(s) if b.plan is not None else None
        return lane or super().builtin_name(b, s)

    def stage_plan_of(self, inst):
        """The kernel's staging plan, made by the pipeline (``Compiled.stage_plan``)."""
        return inst.compiled.stage_plan

    def forward_stage_plan_of(self, inst):
        """The forward pass's staging plan (``Compiled.forward_stage_plan``)."""
        return inst.compiled.forward_stage_plan

    def staged_body(self, inst, plan, head_lines, skip) -> list:
        """The staged body of ``plan``'s pass (staging.py): the unchecked body's statements, with
        the adds (backward: gradient adds; forward: accumulating atomics) recorded into the
        chunk's stage buffers and bad indices flagged."""
        fn, sym = inst.ir, inst.symbol
        out = staging.stage_struct(sym, plan)
        stage = staging.stage_struct_name(sym, plan)
        out.append(templates.STAGED_BODY_HEAD.format(qualifier=self.body_qualifier, sym=sym, mode=plan.mode, stage=stage))
        staged = Body(fn, inst.facts, True, plan)
        head = head_lines + ["    bool bad = false;"]
        if plan.mode == "forward":
            lines = head + ["    " + d for d in self.declarations(fn, False, skip)]
            self.forward_block(staged, fn.body, lines, "    ", False)
            return out + lines + ["    st.bad[k] = bad;", "}"]
        lines = self.backward_body(staged, inst.compiled.adjoint(), head, skip)
        return out + lines[:-1] + ["    st.bad[k] = bad;", "}"]

    def kernel_entry(self, inst, mode, has_fast, plan=None) -> list:
        """The exported range function: runs tasks [begin, end), catching kernel errors. With a
        fast variant, it is used when ``fast_condition`` holds for the launch; with a staging
        ``plan``, the fast variant is the staged loop; with thread-local sums (``hoists``), the
        fast loop runs groups of ``HOIST_LANES`` tasks and the sums are added at the end."""
        sym, ind = inst.symbol, "        "
        hoist = self.hoists(inst, mode)
        call = templates.CPU_BODY_CALL.format(sym=sym, mode=mode, extra=", hoist, 0" if hoist else "")
        body = self.accumulate_scope(inst, mode, ind) if inst.facts.accum_params else []
        loop = templates.CPU_TASK_LOOP
        if inst.ir.tid_ndim > 1:  # runs along the last grid dimension keep the coordinates (core.h)
            body.append(f"{ind}weft::tid_start(tc, local_bounds, begin, end);")
            loop = templates.CPU_RUN_LOOP
        if hoist:
            body.append(f"{ind}{sym}_{mode}_hoist hoist;")
        cond, fast = None, None
        if has_fast:
            # The range test lets the compiler see the int32 thread index equals the task number.
            cond = "begin >= 0 && end <= 2147483647 && " + self.fast_condition(inst, "local_args.", "local_bounds")
            if plan and plan.mode == "forward":  # deferred adds must not be visible to other arrays' reads
                cond += " && " + self.accumulate_condition(inst)
        if plan:
            fast = staging.staged_loops(sym, plan, inst.facts.hoisted if hoist else {}, self.HOIST_LANES)
        elif hoist:
            fast = self.hoist_fast_loop(inst, mode)
        # ivdep: the fast loop's tasks do not depend on each other (threads of a launch run in any
        # order), which lets the compiler vectorize element-wise kernels
        def fast_loop(variant, ivdep=True) -> list:
            pragma = ["#pragma GCC ivdep"] if ivdep else []
            if inst.ir.tid_ndim <= 1:
                return [*pragma, loop + call.format(variant)]
            # the loop over a run counts the last coordinate in int32 and hands it to the body
            # (counts_coordinate); the pragma on it (one before the loop over runs reaches only that)
            return [
                *self.RUN_LOOP_HEAD,
                *["    " + p for p in pragma],
                "    for (weft::int32 l = weft::int32(t - t0); l < weft::int32(stop - t0); ++l) "
                + self.coord_call(call, variant, "t0 + l", "l"),
                "    t = stop;",
                "}",
            ]

        if cond is not None and fast is None:
            fast = fast_loop("_fast")
            if mode == "forward" and self.interior_forward(inst):
                fast = self.interior_loops(inst, call)
            # A share adding into memory of its own (one thread, or private copies) runs the body
            # whose accumulations are plain adds: no test of the thread context per add. The
            # backward one without ivdep: two tasks' reads may add into one element (a stencil's
            # neighbours), which vectorised adds would lose.
            plain = None
            if mode == "forward" and self.plain_forward(inst):
                plain = fast_loop("_fast_plain")
            if mode == "backward" and self.plain_backward(inst):
                plain = fast_loop("_fast_plain", ivdep=False)
            if plain is not None:
                fast = ["if (tc.plain_accumulate && !tc.acc) {"] + ["    " + x for x in plain]
                fast += ["} else {"] + ["    " + x for x in fast_loop("_fast")] + ["}"]
        loops = self.task_loops(cond, loop, call, ind, pragmas=("#pragma GCC ivdep",), fast=fast)
        if hoist:
            loops += self.hoist_flush(inst, mode, ind)
        entry = templates.CPU_ENTRY.format(
            qualifier=self.entry_qualifier + (self.FLATTEN if plan else ""), sym=sym, target=self.target, mode=mode, body="\n".join(body + loops)
        )
        return entry.split("\n")

    # Lanes of a thread-local sum: the fast loop runs its tasks in groups of this many, task k of
    # a group adding into lane k, so the adds of a group are independent (in flight together, and
    # vectorized) instead of one chain each waiting for the previous add.
    HOIST_LANES = 8
    # Bodies of at most this many IR statements have their groups of lanes unrolled.
    HOIST_UNROLL_MAX_STATEMENTS = 120

    def tid_lines(self, fn, has_ctx: bool, in_run: bool = False) -> list:
        """Multi-dimensional grid coordinates from the task loop when it keeps them (one division
        per dimension per share of the launch instead of per task), else by division. A fast body
        (``in_run``) is only called inside the run: the run's coordinates with no test, the last
        one counted by the loop over the run (the ``coord`` parameter), so that it vectorises."""
        if fn.tid_ndim <= 1 or not has_ctx:
            return super().tid_lines(fn, has_ctx)
        if in_run:  # the last coordinate is the body's ``coord`` parameter (counts_coordinate)
            return ["    weft::int32 tid_coords[4] = {tc.coords[0], tc.coords[1], tc.coords[2], tc.coords[3]};"]
        return ["    weft::int32 tid_coords[4];", "    weft::tid_coords_at(tc, *bounds, task, tid_coords);"]

    def hoists(self, inst, mode: str) -> bool:
        if mode == "backward" and not inst.backward_enabled:
            return False
        return bool(inst.facts.hoist_slots_of(mode))

    def plain_forward(self, inst) -> bool:
        """A forward pass that accumulates (and keeps no thread-local sums) gets a third body, the
        fast one with each accumulation a plain add, run by shares that own their memory. (A
        kernel whose accumulations are all its backward pass's would get a copy of its fast body.)"""
        if self.hoists(inst, "forward") or self.forward_stage_plan_of(inst):
            return False
        return bool(inst.facts.accum_forward) and bool(inst.facts.tid_indexed)

    def plain_backward(self, inst) -> bool:
        """A backward pass whose reads' gradients accumulate (the arrays are only read), not
        staged and keeping no thread-local sums, gets a ``_fast_plain`` body too: a stencil's
        gradient adds into its neighbours without a test of the thread context per add."""
        if not inst.backward_enabled or self.hoists(inst, "backward") or self.stage_plan_of(inst):
            return False
        return bool(inst.facts.accum_backward) and bool(inst.facts.tid_indexed)

    # The head of a multi-dimensional launch's loop over runs: each run's tasks [t, stop) are along
    # the last dimension (core.h tid_start), t0 the task at its coordinate 0.
    RUN_LOOP_HEAD = (
        "for (weft::int64 t = begin; t < end; weft::tid_next_run(tc, local_bounds, end)) {",
        "    const weft::int64 stop = t + tc.run, t0 = t - tc.coords[local_bounds.ndim - 1];",
    )

    @staticmethod
    def coord_call(call: str, variant: str, task: str, coord: str) -> str:
        """The body call ``call`` (CPU_BODY_CALL) of ``variant`` for task ``task``, handing it its
        last coordinate ``coord`` (an int32)."""
        return call.format(variant).replace("t, tc", f"{task}, tc").replace(");", f", {coord});")

    def counts_coordinate(self, fn, in_run: bool) -> bool:
        """A fast body of a multi-dimensional launch, which runs inside its task loop's run, gets
        its last coordinate from the loop as an int32 counter, not as the run's first coordinate
        plus the task's offset truncated to int32: GCC cannot tell that truncation does not wrap,
        so the addresses indexed by the coordinate were not affine (gathers, not vector loads);
        a 128^3 element-wise kernel ran 6x slower than the same work in 1-D."""
        return in_run and fn.tid_ndim > 1

    def interior_forward(self, inst) -> bool:
        """A forward pass that clamps its last thread coordinate (a stencil's ``wp.max(l - 1, 0)``)
        gets a body for the tasks inside the interior, without those clamps: its neighbours
        along the last dimension become contiguous vector loads instead of gathers (access.py
        ``interior_identity``)."""
        other = self.plain_forward(inst) or self.hoists(inst, "forward") or self.forward_stage_plan_of(inst)
        return bool(inst.facts.interior_identity) and not other

    def interior_loops(self, inst, call: str) -> list:
        """The fast task loops of a pass with a ``_fast_interior`` body: each run along the last
        dimension (the whole range in a 1-D launch) in three parts, the tasks before the
        interior, those inside it (the interior body, vectorisable) and those after it."""
        facts, nd = inst.facts, inst.ir.tid_ndim

        def fold(fn, forms, default):
            texts = [f"weft::int64({emit.form_text(f, 'local_args.', 'local_bounds')})" for f in forms]
            out = texts[0] if texts else default
            for t in texts[1:]:
                out = f"weft::{fn}({out}, {t})"
            return out

        lo = fold("max", facts.interior_lows, "weft::int64(0)")
        hi = fold("min", facts.interior_highs, "weft::int64(2147483647)")
        # the interior's loop counts the coordinate in int32 and hands it to the body, as the runs
        # of a multi-dimensional launch do (counts_coordinate)
        inner = self.coord_call(call, "_fast_interior", "t0 + l", "l")
        head = [f"const weft::int64 interior_lo = {lo}, interior_hi = {hi};"]
        if nd <= 1:  # the task is the coordinate (the fast test keeps it in [0, 2^31 - 1])
            edge = call.format("_fast")
            return head + [
                "const weft::int64 a = weft::clamp(interior_lo, begin, end), t0 = 0;",
                "const weft::int64 b = weft::clamp(interior_hi + 1, a, end);",
                f"for (weft::int64 t = begin; t < a; ++t) {edge}",
                "#pragma GCC ivdep",
                f"for (weft::int32 l = weft::int32(a); l < weft::int32(b); ++l) {inner}",
                f"for (weft::int64 t = b; t < end; ++t) {edge}",
            ]
        edge = self.coord_call(call, "_fast", "t0 + l", "l")
        return head + [
            *self.RUN_LOOP_HEAD,
            "    const weft::int64 a = weft::clamp(t0 + interior_lo, t, stop);",
            "    const weft::int64 b = weft::clamp(t0 + interior_hi + 1, a, stop);",
            f"    for (weft::int32 l = weft::int32(t - t0); l < weft::int32(a - t0); ++l) {edge}",
            "    #pragma GCC ivdep",
            f"    for (weft::int32 l = weft::int32(a - t0); l < weft::int32(b - t0); ++l) {inner}",
            f"    for (weft::int32 l = weft::int32(b - t0); l < weft::int32(stop - t0); ++l) {edge}",
            "    t = stop;",
            "}",
        ]

    def hoist_struct(self, inst, mode) -> list:
        """The thread-local sums of pass ``mode``'s one-element accumulations (access.py
        ``hoisted``): per target element, ``HOIST_LANES`` partial sums and whether anything was
        added."""
        fields = [
            f"    {ctype_name(dtype)} a{k}[{self.HOIST_LANES}]{{}};\n    bool used{k} = false;"
            for k, (_, dtype, _) in enumerate(inst.facts.hoist_slots_of(mode))
        ]
        return [f"struct {inst.symbol}_{mode}_hoist {{", *fields, "};"]

    def hoist_fast_loop(self, inst, mode) -> list:
        """The fast task loop of a pass with thread-local sums: groups of ``HOIST_LANES`` tasks
        (lane k of each sum taking task k of a group: the group's adds are independent), then the
        rest on lane 0."""
        sym, n = inst.symbol, self.HOIST_LANES

        def call(task, lane, coord=None):
            last = f", {coord}" if coord is not None else ""
            return f"{sym}_{mode}_fast_body(&local_args, &local_bounds, {task}, tc, hoist, {lane}{last});"

        # Unrolled, the group is n inlined copies of the body: worth it for the short bodies of
        # sums, not for long ones (a test module of matrix kernels took 12 GB to compile so)
        small = _statements(inst) <= self.HOIST_UNROLL_MAX_STATEMENTS
        if inst.ir.tid_ndim > 1:  # groups within each run, the coordinate counted (counts_coordinate)
            return [
                *self.RUN_LOOP_HEAD,
                "    weft::int32 l = weft::int32(t - t0);",
                "    const weft::int32 last = weft::int32(stop - t0);",
                f"    for (; l + {n} <= last; l += {n}) {{",
                f"        #pragma GCC unroll {n if small else 1}",
                f"        for (int lane = 0; lane < {n}; ++lane) {call('t0 + l + lane', 'lane', 'l + lane')}",
                "    }",
                f"    for (; l < last; ++l) {call('t0 + l', 0, 'l')}",
                "    t = stop;",
                "}",
            ]
        return [
            "weft::int64 t = begin;",
            f"for (; t + {n} <= end; t += {n}) {{",
            f"    #pragma GCC unroll {n if small else 1}",
            f"    for (int lane = 0; lane < {n}; ++lane) {call('t + lane', 'lane')}",
            "}",
            f"for (; t < end; ++t) {call('t', 0)}",
        ]

    def hoist_flush(self, inst, mode, ind) -> list:
        """After a share's tasks: each local sum added once to its element, as the accumulation
        itself would have added it (forward: ``accumulate_add``, its index checked; backward:
        ``adj_load_accum`` into the gradient, if there is one)."""
        fn = inst.ir
        first = {}  # slot -> its first accumulation (the location an index error names)
        slots = inst.facts.hoist_slots_of(mode)
        for s in ir.walk(fn.body):
            if isinstance(s, ir.Call) and id(s) in inst.facts.hoisted:
                is_load = s.callee == intr.LOAD
                if is_load == (mode == "backward"):
                    first.setdefault(inst.facts.hoisted[id(s)], s)
        lines = []
        for k, (name, _, sources) in enumerate(slots):
            idx = [f"weft::int32({v})" if kind == "const" else f"local_args.arg_{v}" for kind, v in sources]
            loc = self.loc(Body(fn), first[k])
            total = f"weft::sum_lanes<{self.HOIST_LANES}>(hoist.a{k})"
            if mode == "forward":
                add = f"weft::accumulate_add(tc, local_args.arg_{name}, {loc}, {', '.join(idx)}, {total})"
            else:
                add = f"weft::adj_load_accum(tc, local_args.arg_{name}, {loc}, {', '.join(idx)}, {total})"
            lines.append(f"{ind}if (hoist.used{k}) {add};")
        return lines

    def accumulate_scope(self, inst, mode, ind) -> list:
        """The accumulation scope of an entry point (native/accumulate.h): the runtime overlap
        test, and the arrays this pass accumulates into (forward: the atomics' data; backward:
        the read-only arrays' gradients), which may get per-thread private copies."""
        field = "data" if mode == "forward" else "grad"
        targets = [
            f"weft::private_target_of(local_args.arg_{name}.{field}, local_args.arg_{name})"
            for name in inst.facts.accum_targets(mode)
        ]
        cond = self.accumulate_condition(inst)
        if not targets:
            return [f"{ind}weft::accumulate_scope accumulate(tc, {cond});"]
        return [
            f"{ind}const weft::private_target targets[] = {{{', '.join(targets)}}};",
            f"{ind}weft::accumulate_scope accumulate(tc, {cond}, ctx, begin, end, targets);",
            f"{ind}accumulate.check();",
        ]

    def accumulate_condition(self, inst) -> str:
        """C++ test that no accumulated array overlaps another array argument (data or gradient)."""
        fn = inst.ir
        # (parameter name, C++ expression of its array): an indexed array's data counts too
        arrays = [(p.name, "arg_" + p.name) for p in fn.params if isinstance(p.var.type, wt.ArrayType)]
        arrays += [(p.name, f"arg_{p.name}.data") for p in fn.params if isinstance(p.var.type, wt.IndexedArrayType)]
        tests = [  # the entry point's copy, before private copies are swapped in
            f"weft::arrays_apart(local_args.{p_expr}, local_args.{q_expr})"
            for k, (p, p_expr) in enumerate(arrays)
            for q, q_expr in arrays[k + 1 :]
            if p in inst.facts.accum_params or q in inst.facts.accum_params
        ]
        return " && ".join(tests) or "true"
