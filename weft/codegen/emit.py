"""Renderer: IR (+ reverse records) -> C++ source for one module.

Contract: the renderer only formats. Types, overloads and which statements have adjoints were
decided earlier (frontend, access analysis, adjoint, staging plan) and are handed in: the adjoint
program and access facts with each instance, a ``Body`` to every format rule. Output is
deterministic for the same IR. ``CStyleRenderer`` is the neutral base; the targets are siblings
over it: ``CPURenderer`` here (task-range entry points, staged loops, accumulation scopes) and
``emit_cuda.CUDARenderer`` (``__global__`` grid-stride entry points).
"""

from __future__ import annotations

import dataclasses
import os

from .. import types as wt
from . import access, ir, staging, templates
from . import adjoint as ad
from . import tangent_emit
from . import intrinsics as intr
from .cnames import ctype_name, literal


@dataclasses.dataclass(frozen=True)
class Body:
    """What one rendered function body is, handed to every format rule: the function, its access
    facts, and its variant (``unchecked``: thread-indexed accesses skip their checks, the fast
    body of a kernel; ``plan``: the staged backward body, staging.py). Nothing about the body
    being rendered is kept in the renderer itself."""

    fn: ir.Function
    facts: access.AccessFacts = access.NO_FACTS
    unchecked: bool = False
    plan: staging.StagePlan | None = None
    hoist: str = ""  # the pass ("forward" / "backward") whose one-element sums a CPU body keeps locally
    plain: bool = False  # its accumulations are plain adds (a CPU share that adds into memory of its own)
    interior: bool = False  # its tasks are inside the interior: clamps of the last coordinate are dropped
    coord: bool = False  # its last thread coordinate is the int32 parameter ``coord`` (CPU task loops)


def c_string(s: str) -> str:
    out = s.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n").replace("\t", "\\t")
    return '"' + out.replace("%", "%%") + '"'


def c_format(s: str) -> str:
    return '"' + s.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n").replace("\t", "\\t") + '"'


# ---------------------------------------------------------------------------------------------
# Intrinsic formats: intrinsic -> C++ text. Forward rules take (renderer, fn, stmt, args);
# reverse rules also take the adjoint names of the arguments and of the result.


def _member(s) -> str:
    struct, field = s.attr
    return f"&{struct.cname}::f_{field}"


def _with_loc(name):
    return lambda r, b, s, a: f"weft::{name}({a[0]}, {r.loc(b, s)}, {', '.join(a[1:])})"


def _array_slice(r, b, s, a) -> str:
    """``weft::array_slice(arr, loc, slice_spec<N>{{kind, start, stop, step, given, ...}})``."""
    parts = []
    for e, (kind, given) in enumerate(s.attr):
        start, stop, step = a[1 + 3 * e : 4 + 3 * e]
        parts.append(f"{kind}, weft::int64({start}), weft::int64({stop}), weft::int64({step}), {given}")
    return f"weft::array_slice({a[0]}, {r.loc(b, s)}, weft::slice_spec<{len(s.attr)}>{{{{{', '.join(parts)}}}}})"


def form_text(form, args: str, bounds: str) -> str:
    """C++ int64 text of an ``index_ranges.Form`` (``args`` prefixes the argument fields,
    ``bounds`` names the launch_bounds)."""

    def symbol(sym) -> str:
        if sym[0] == "launch":
            return f"weft::int64({bounds}.shape[{sym[1]}])"
        if sym[0] == "size":  # clamped to the range index_ranges assumes for it
            return f"weft::clamp(weft::int64({bounds}.size), weft::int64(0), weft::int64(2147483649))"
        if sym[0] == "shape":
            return f"weft::int64({args}arg_{sym[1]}.shape[{sym[2]}])"
        return f"weft::int64({args}arg_{sym[1]})"

    parts = [(c, symbol(sym) if abs(c) == 1 else f"{abs(c)} * {symbol(sym)}") for sym, c in form.terms]
    parts += [(form.const, str(abs(form.const)))] if form.const else []
    if not parts:
        return "weft::int64(0)"
    text = "".join(f" {'-' if c < 0 else '+'} {x}" for c, x in parts)
    return text[3:] if text.startswith(" +") else "-" + text[3:]


def _range_test(cond, args: str, bounds: str) -> list:
    """C++ tests for an ``index_ranges`` condition (alternatives of atoms ``form >= 0``), in int64."""

    def atom(form) -> str:
        return f"{form_text(form, args, bounds)} >= 0"

    if len(cond) == 1:  # a conjunction: its atoms join the others (and are tested once)
        return [atom(f) for f in cond[0]]
    return ["(" + " || ".join("(" + " && ".join(atom(f) for f in alt) + ")" for alt in cond) + ")"]


def _nc(b, s) -> str:
    """``_nc`` for the unchecked variant of a thread-indexed access in the fast body."""
    return "_nc" if b.unchecked and id(s) in b.facts.tid_indexed else ""


def _stage_offset(b, s, where) -> str:
    """In a staged body, the byte offset of the element at ``where`` (array, indices...): flagged
    (staging.h stage_offset), or unchecked for a thread-indexed access the launch proved in range."""
    joined = ", ".join(where)
    return f"weft::stage_offset_nc({joined})" if _nc(b, s) else f"weft::stage_offset(bad, {joined})"


def _access(name):
    """load/store: in the unchecked body, thread-indexed accesses skip the bounds check; in the
    staged body (staging.py) the other loads flag their indices instead of checking them."""

    def render(r, b, s, a):
        nc = _nc(b, s)
        if b.plan is not None and not nc:
            return f"weft::stage_load({a[0]}, weft::stage_offset(bad, {', '.join(a)}))"
        return f"weft::{name}{nc}({a[0]}, {r.loc(b, s)}, {', '.join(a[1:])})"

    return render


def _tid(r, b, s, a) -> str:
    d, n = s.attr
    if b.coord and d == n - 1:  # the last coordinate: the task loop's int32 counter (CPURenderer)
        return "coord"
    if b.plan is not None and n == 1:  # a staged body: the chunk loop's int32 count (templates.py)
        return "task32"
    return "weft::int32(task)" if n == 1 else f"tid_coords[{d}]"


def _atomic(name):
    """An atomic; an atomic add/sub the access analysis proved unobserved becomes an accumulation."""
    plain = _with_loc(name)
    kind = {intr.ATOMICS["atomic_add"]: "add", intr.ATOMICS["atomic_sub"]: "sub"}.get(name)
    if kind is None:
        return plain
    def render(r, b, s, a):
        if id(s) not in b.facts.accum_calls:
            return plain(r, b, s, a)
        site = b.plan.sites.get(id(s)) if b.plan is not None and b.plan.mode == "forward" else None
        if site is not None:  # the staged forward body records it (staging.py)
            return staging.record_atomic(site, _stage_offset(b, s, a[:-1]), a[-1], kind)
        slot = b.facts.hoisted.get(id(s)) if b.hoist == "forward" else None
        if slot is not None:  # into the thread's local sum (CPURenderer.hoist_loops)
            return f"weft::hoist_{kind}(hoist.a{slot}[lane], hoist.used{slot}, {a[-1]})"
        if b.plain:
            return f"weft::plain_{kind}({a[0]}, {r.loc(b, s)}, {', '.join(a[1:])})"
        return f"weft::accumulate_{kind}(tc, {a[0]}, {r.loc(b, s)}, {', '.join(a[1:])})"

    return render


def _address_of(element: bool):
    """``weft::address_of(lvalue)``: the lvalue is a local or an array element
    (``weft::element_ref``), then struct fields (``.f_name``) and components
    (``weft::component_ref``), as ``s.attr`` lists them (codegen/address.py)."""

    def render(r, b, s, a) -> str:
        loc = r.loc(b, s)
        k = 1 + s.args[0].type.ndim if element else 1
        expr = f"weft::element_ref({', '.join([a[0], loc] + a[1:k])})" if element else a[0]
        for kind, x in s.attr:
            if kind == "field":
                expr = f"{expr}.f_{x}"
            else:
                expr = f"weft::component_ref({', '.join([expr, loc] + a[k : k + x])})"
                k += x
        return f"weft::address_of({expr})"

    return render


def _tile_map(r, b, s, a) -> str:
    """weft::tile_map(lambda, tiles...): the element operation over the tiles, the other
    arguments captured."""
    op = s.attr
    xs = [f"x{k}" if k in op.tiles else a[k] for k in range(len(a))]
    params = ", ".join(f"auto x{k}" for k in op.tiles)
    tiles = ", ".join(a[k] for k in op.tiles)
    return f"weft::tile_map([&]({params}) {{ return {op.symbol}({', '.join(xs)}); }}, {tiles})"


def _tile_reduce(r, b, s, a) -> str:
    f = f"[&](auto x, auto y) {{ return {s.attr.symbol}(x, y); }}"
    if s.attr.axis >= 0:
        return f"weft::tile_reduce_axis<{ctype_name(s.result.type)}, {s.attr.axis}>({f}, {a[0]})"
    return f"weft::tile_reduce({f}, {a[0]})"


forward_formats = {
    intr.LOAD: _access("load"),
    intr.STORE: _access("store"),
    **{name: _atomic(name) for name in intr.ATOMICS.values()},
    intr.ATOMIC_CAS: _with_loc("atomic_cas"),
    intr.CAST: lambda r, b, s, a: f"weft::cast<{ctype_name(s.attr)}>({a[0]})",
    intr.PHI: lambda r, b, s, a: f"weft::where({', '.join(a)})",
    intr.CONSTRUCT: lambda r, b, s, a: f"weft::{s.attr}<{ctype_name(s.result.type)}>({', '.join(a)})",
    intr.EXTRACT: _with_loc("extract"),
    intr.ASSIGN_COPY: _with_loc("assign_copy"),
    intr.GET_FIELD: lambda r, b, s, a: f"weft::get_field({', '.join([a[0], _member(s)] + a[1:])})",
    intr.SET_FIELD: lambda r, b, s, a: f"weft::set_field({', '.join([a[0], _member(s)] + a[1:])})",
    intr.ADJ_READ: lambda r, b, s, a: f"adjp_{s.attr[0]}{s.attr[1]}",  # attr: (parameter, field path)
    intr.ADJ_ACCUM: lambda r, b, s, a: f"adjp_{s.attr[0]}{s.attr[1]} += {a[0]}",
    intr.ADJ_SET: lambda r, b, s, a: f"adjp_{s.attr[0]}{s.attr[1]} = {a[0]}",
    intr.TID: _tid,
    intr.SHAPE: lambda r, b, s, a: (
        f"weft::int32({a[0]}.size)" if wt.is_fabric(s.args[0].type) else f"{a[0]}.shape[{s.attr}]"
    ),
    intr.ZERO: lambda r, b, s, a: "{}",
    intr.LOGICAL_AND: lambda r, b, s, a: f"({a[0]} && {a[1]})",
    intr.LOGICAL_OR: lambda r, b, s, a: f"({a[0]} || {a[1]})",
    intr.TUPLE_MAKE: lambda r, b, s, a: f"weft::make_tuple({', '.join(a)})",
    intr.TUPLE_GET: lambda r, b, s, a: f"weft::tuple_get<{s.attr}>({a[0]})",
    intr.PRINT_VALUE: lambda r, b, s, a: f"weft::print_value({a[0]})",
    intr.PRINT_STR: lambda r, b, s, a: f"weft::print_str({c_format(s.attr)})",
    intr.PRINT_NEWLINE: lambda r, b, s, a: "weft::print_newline()",
    intr.PRINTF: lambda r, b, s, a: f"weft::printf_flush({', '.join([c_format(s.attr)] + a)})",
    intr.ASSERT: lambda r, b, s, a: f"weft::kernel_assert({a[0]}, {r.loc(b, s)})",
    intr.BIT_CAST: lambda r, b, s, a: f"weft::bit_cast<{ctype_name(s.result.type)}>({a[0]})",
    intr.GRAD_CALL: lambda r, b, s, a: _grad_call(s, a),
    intr.ARRAY_VIEW: _with_loc("array_view"),
    intr.ARRAY_SLICE: lambda r, b, s, a: _array_slice(r, b, s, a),
    intr.ARRAY_PTR: lambda r, b, s, a: f"weft::array_ptr({a[0]})",
    intr.LOCAL_STORAGE: lambda r, b, s, a: f"{ctype_name(s.result.type)}{{}}",
    intr.LOCAL_VIEW: lambda r, b, s, a: (
        f"weft::fixed_view({a[0]}, {', '.join(str(d) for d in s.args[0].type.shape)})"
    ),
    intr.ARRAY_FROM_PTR: lambda r, b, s, a: (
        f"weft::array_from_ptr<{ctype_name(s.result.type.dtype)}>"
        f"({', '.join([f'weft::uint64({a[0]})'] + [f'weft::int32({x})' for x in a[1:]])})"
    ),
    intr.INDEXED_VIEW: _with_loc("indexed_view"),
    intr.FABRIC_ELEMENT: _with_loc("fabric_element"),
    intr.FABRIC_ROW: _with_loc("fabric_row"),
    intr.FABRIC_SIZE: lambda r, b, s, a: f"{a[0]}.size",
    intr.INDEXED_DATA: lambda r, b, s, a: f"{a[0]}.data",
    intr.COPY: lambda r, b, s, a: a[0],
    intr.ADDRESS_OF_LOCAL: _address_of(element=False),
    intr.ADDRESS_OF_ELEMENT: _address_of(element=True),
    intr.TILE_MAP: _tile_map,
    intr.TILE_REDUCE: _tile_reduce,
    intr.JVP_ADJOINT: tangent_emit.render,
    intr.INDEXED_INDEX: lambda r, b, s, a: f"weft::indexed_index({a[0]}, {r.loc(b, s)}, {s.attr}, {a[1]})",
}


def _grad_call(s, a) -> str:
    """``wp.grad(f)(args)``: f's adjoint with a unit seed, in an immediately called lambda."""
    callee, rtype = s.attr
    grads = [f"g{k}" for k in range(len(a))]
    decls = " ".join(f"{ctype_name(x.type)} g{k}{{}};" for k, x in enumerate(s.args))
    name = f"weft::adj_{callee.symbol}" if ir.is_builtin(callee) else f"adj_{callee.symbol}"
    call = f"{name}({', '.join(a + grads + [f'{ctype_name(rtype)}(1)'])});"
    ret = grads[0] if len(grads) == 1 else f"weft::make_tuple({', '.join(grads)})"
    return f"[&]() {{ {decls} {call} return {ret}; }}()"


def _adj_load(r, b, s, a, adjs, ret) -> str:
    """The gradient of a read: a plain add for thread-exclusive elements; in a kernel body an add
    through its thread_ctx (combined per thread for read-only arrays); in a func an atomic."""
    site = b.plan.sites.get(id(s)) if b.plan is not None else None
    if site is not None:
        return staging.record_site(b.plan, site, a[0], _stage_offset(b, s, a), ret[0])
    slot = b.facts.hoisted.get(id(s)) if b.hoist == "backward" else None
    if slot is not None:  # into the thread's local sum (CPURenderer.hoist_loops)
        return f"weft::hoist_add(hoist.a{slot}[lane], hoist.used{slot}, {ret[0]});"
    args = [a[0], r.loc(b, s)] + a[1:] + ret
    if id(s) in b.facts.exclusive_loads:
        name = "adj_load_exclusive"
    elif b.fn.is_kernel:
        if id(s) in b.facts.accum_calls:
            name = "adj_load_plain" if b.plain else "adj_load_accum"
        else:
            name = "adj_load_shared"
        args = ["tc"] + args
    else:
        name = "adj_load"
    return f"weft::{name}{_nc(b, s)}({', '.join(args)});"


def _adj_with_loc(name):
    """adj_<name>(container, loc, rest..., adj_container, adj_loc, adj_rest..., adj_ret)."""
    return lambda r, b, s, a, adjs, ret: (
        f"weft::adj_{name}({', '.join([a[0], r.loc(b, s)] + a[1:] + [adjs[0], 'adj_loc'] + adjs[1:] + ret)});"
    )


def _adj_field(name):
    return lambda r, b, s, a, adjs, ret: f"weft::adj_{name}({', '.join([a[0], _member(s)] + a[1:] + adjs + ret)});"


def _adj_atomic(name):
    """adj_atomic_OP(array, loc, indices..., value, adj_value, adj_ret); in the staged body the
    gradient read of atomic_add/sub flags its indices (staging.h)."""
    kind = {intr.ATOMICS["atomic_add"]: "add", intr.ATOMICS["atomic_sub"]: "sub"}.get(name)

    def render(r, b, s, a, adjs, ret):
        if b.plan is not None and kind is not None:
            return f"weft::stage_adj_atomic_{kind}({a[0]}, weft::stage_offset(bad, {', '.join(a[:-1])}), {adjs[-1]});"
        return f"weft::adj_{name}({a[0]}, {r.loc(b, s)}, {', '.join(a[1:] + adjs[-1:] + ret)});"

    return render


def _adj_tile_map(r, b, s, a, adjs, ret) -> str:
    """weft::adj_tile_map(adjoint lambda, tiles..., their adjoints..., adj_ret): per element, the
    operation's adjoint; the captured arguments' adjoints accumulate over the elements."""
    op = s.attr
    if op.adj_from_result:  # a unary map differentiated from its result (tile_args._ADJOINT_FROM_RESULT)
        f = f"[&](auto y, auto& d0, auto dr) {{ {op.adj_from_result}(y, d0, dr); }}"
        return f"weft::adj_tile_map_from_result({f}, {r.v(s.result)}, {adjs[0]}, {ret[0]});"
    xs = [f"x{k}" if k in op.tiles else a[k] for k in range(len(a))]
    ds = [f"d{k}" if k in op.tiles else adjs[k] for k in range(len(a))]
    params = [f"auto x{k}" for k in op.tiles] + [f"auto& d{k}" for k in op.tiles] + ["auto dr"]
    call = f"{op.adj_symbol}({', '.join(xs + ds + ['dr'])});"
    tiles = [a[k] for k in op.tiles] + [adjs[k] for k in op.tiles]
    return f"weft::adj_tile_map([&]({', '.join(params)}) {{ {call} }}, {', '.join(tiles + ret)});"


reverse_formats = {
    intr.LOAD: _adj_load,
    intr.STORE: lambda r, b, s, a, adjs, ret: (
        f"weft::adj_store{_nc(b, s)}({a[0]}, {r.loc(b, s)}, {', '.join(a[1:-1] + adjs[-1:])});"
    ),
    **{name: _adj_atomic(name) for name in intr.ATOMICS.values()},
    intr.CAST: lambda r, b, s, a, adjs, ret: f"weft::adj_cast<{ctype_name(s.attr)}>({a[0]}, {adjs[0]}, {ret[0]});",
    intr.CONSTRUCT: lambda r, b, s, a, adjs, ret: (
        f"weft::adj_{s.attr}<{ctype_name(s.result.type)}>({', '.join(a + adjs + ret)});"
    ),
    intr.GET_FIELD: _adj_field("get_field"),
    intr.SET_FIELD: _adj_field("set_field"),
    intr.EXTRACT: _adj_with_loc("extract"),
    intr.ASSIGN_COPY: _adj_with_loc("assign_copy"),
    intr.PHI: lambda r, b, s, a, adjs, ret: f"weft::adj_where({', '.join(a + adjs + ret)});",
    intr.TILE_MAP: _adj_tile_map,
    intr.TUPLE_MAKE: lambda r, b, s, a, adjs, ret: " ".join(
        f"{x} += weft::tuple_get<{k}>({ret[0]});" for k, x in enumerate(adjs)
    ),
    intr.TUPLE_GET: lambda r, b, s, a, adjs, ret: f"weft::adj_tuple_get<{s.attr}>({', '.join(a + adjs + ret)});",
    intr.COPY: lambda r, b, s, a, adjs, ret: f"{adjs[0]} += {ret[0]};",
    intr.PRINT_VALUE: lambda r, b, s, a, adjs, ret: (
        f'weft::print_str("adj: "); weft::print_value({adjs[0]}); weft::print_newline();'
    ),
}


class CStyleRenderer:
    """Renders a module's IR as C-style source, for any target: declarations, forward and reverse
    statements, funcs, per-thread kernel bodies (checked, and unchecked under ``fast_condition``)
    and the module's layout. A target (``CPURenderer``, ``emit_cuda.CUDARenderer``) is a sibling
    subclass giving the qualifiers, its entry points and whatever only it does."""

    target = ""
    fn_qualifier = ""
    body_qualifier = ""
    entry_qualifier = ""
    stack_type = "weft::loop_stack<{}>"  # loop checkpoints in backward bodies (native/loop_stack.h)

    def __init__(self, passes=("forward", "backward")):
        # Which passes to render: the CPU build compiles the backward pass into a second library
        # on first use, so a module's first build only compiles (and waits for) the forward pass.
        self.passes = passes
        self.locs: list = []  # module-wide source locations (file, line, text)
        self._loc_ids: dict = {}

    # ------------------------------------------------------------------ helpers
    def v(self, var) -> str:
        return f"var_{var.id}"

    def a(self, var) -> str:
        return f"adj_{var.id}"

    def loc(self, b, call) -> str:
        key = (id(b.fn), call.loc.id)
        if key not in self._loc_ids:
            self._loc_ids[key] = len(self.locs)
            self.locs.append(b.fn.locs[call.loc.id])
        return str(self._loc_ids[key])

    def origin(self, b, call) -> str:
        """A trailing comment naming the Python line, used to map C++ diagnostics back."""
        if call.loc is None:
            return ""
        file, line, _ = b.fn.locs[call.loc.id]
        return f"  // @py {os.path.basename(file)}:{line}"

    def declarations(self, fn, with_adjoints: bool, skip=()) -> list:
        # adj_loc receives the (ignored) adjoint of source-location arguments.
        out = ["weft::int32 adj_loc = 0; (void)adj_loc;"] if with_adjoints else []
        for var in fn.vars:
            if var.id in skip:
                continue
            ct = ctype_name(var.type)
            init = literal(var.const, var.type) if var.is_const else "{}"
            out.append(f"{ct} {self.v(var)} = {init};")
            if with_adjoints:
                out.append(f"{ct} {self.a(var)} = {{}};")
        return out

    # ------------------------------------------------------------------ forward statements
    def call_expr(self, b, s: ir.Call, replay: bool) -> str:
        c = s.callee
        args = [self.v(x) for x in s.args]
        if ir.is_intrinsic(c):
            return self.intrinsic_expr(b, s, args)
        if ir.is_builtin(c):
            return f"{self.builtin_name(b, s)}({', '.join(args)})"
        name = c.symbol + ("_replay" if replay and c.has_replay_variant else "")
        return f"{name}({', '.join(args)})"

    def builtin_name(self, b, s: ir.Call) -> str:
        """The C++ function a body calls for builtin call ``s`` (the CPU renderer picks another
        for some in staged bodies, see there)."""
        return f"weft::{s.callee.symbol}"

    def intrinsic_expr(self, b, s, args) -> str:
        rule = forward_formats.get(s.callee)
        if rule is None:
            raise NotImplementedError(f"renderer has no format for intrinsic '{s.callee}'")
        return rule(self, b, s, args)

    def forward_block(self, b, block, out, ind, replay):
        for s in block:
            if isinstance(s, ir.Call):
                if (
                    replay
                    and intr.has_side_effect(s.callee)
                    and not ir.is_func(s.callee)
                    and not intr.replayed(s)
                ):
                    continue
                e = self.call_expr(b, s, replay)
                if b.interior and (pos := dict(b.facts.interior_identity).get(id(s))) is not None:
                    e = self.v(s.args[pos])  # a clamp of the last coordinate, the identity here
                elif b.interior and id(s) in b.facts.interior_steps:  # the coordinate plus a constant: no wrap
                    op = "+" if s.callee.symbol == "add" else "-"
                    e = f"{self.v(s.args[0])} {op} {self.v(s.args[1])}"
                line = f"{ind}{self.v(s.result)} = {e};" if s.result is not None else f"{ind}{e};"
                out.append(line + self.origin(b, s))
            elif isinstance(s, ir.Assign):
                out.append(f"{ind}{self.v(s.dst)} = {self.v(s.src)};")
            elif isinstance(s, ir.Read):
                out.append(f"{ind}{self.v(s.result)} = {self.v(s.src)};")
            elif isinstance(s, ir.If):
                out.append(f"{ind}if ({self.v(s.cond)}) {{")
                self.forward_block(b, s.then, out, ind + "    ", replay)
                if len(s.orelse):
                    out.append(f"{ind}}} else {{")
                    self.forward_block(b, s.orelse, out, ind + "    ", replay)
                out.append(f"{ind}}}")
            elif isinstance(s, ir.Loop):
                self.forward_loop(b, s, out, ind, replay)

    def exit_test(self, loop) -> str:
        return "".join(f" || {self.v(f)}" for f in loop.exit_flags)

    def forward_loop(self, b, loop, out, ind, replay):
        i2 = ind + "    "
        n = f"loop_{loop.id}_n"
        if replay:
            out.append(f"{ind}{n} = 0;")
            for k, m in enumerate(loop.carried):
                out.append(f"{ind}loop_{loop.id}_stack{k}.clear();")
                if loop.kind == "range":  # the trip count is known: one allocation for the checkpoints
                    lo, hi, step = (self.v(x) for x in (loop.start, loop.stop, loop.step))
                    out.append(f"{ind}loop_{loop.id}_stack{k}.reserve(weft::range_count({lo}, {hi}, {step}));")
        entered = not replay and b.unchecked and id(loop) in b.facts.entered_loops
        if loop.kind == "range":
            idx = self.v(loop.index)
            start, stop, step = (self.v(x) for x in (loop.start, loop.stop, loop.step))
            test = f"({step} > 0 ? {idx} < {stop} : {idx} > {stop})"
            if entered:  # runs at least once (the launch tested it): no test before the first trip
                out.append(f"{ind}{idx} = {start};")
                out.append(f"{ind}do {{")
            else:
                out.append(f"{ind}for ({idx} = {start}; {test}; {idx} += {step}) {{")
            if loop.exit_flags:
                out.append(f"{i2}if (false{self.exit_test(loop)}) break;")
        else:
            out.append(f"{ind}for (;;) {{")
            self.forward_block(b, loop.cond_block, out, i2, replay)
            out.append(f"{i2}if (!{self.v(loop.cond)}{self.exit_test(loop)}) break;")
        if replay:
            for k, m in enumerate(loop.carried):
                out.append(f"{i2}loop_{loop.id}_stack{k}.push_back({self.v(m)});")
            out.append(f"{i2}{n}++;")
        self.forward_block(b, loop.body, out, i2, replay)
        if entered and loop.kind == "range":
            out.append(f"{i2}{idx} += {step};")
            out.append(f"{ind}}} while {test};")
        else:
            out.append(f"{ind}}}")

    # ------------------------------------------------------------------ reverse statements
    def adj_args(self, s) -> list:
        return [self.a(x) for x in s.args]

    def reverse_call(self, b, s: ir.Call) -> str:
        c = s.callee
        args = [self.v(x) for x in s.args]
        adjs = self.adj_args(s)
        ret = [self.a(s.result)] if s.result is not None else []
        if ir.is_intrinsic(c):
            rule = reverse_formats.get(c)
            if rule is None:
                raise NotImplementedError(f"renderer has no adjoint format for intrinsic '{c}'")
            return rule(self, b, s, args, adjs, ret)
        if ir.is_builtin(c):
            return f"weft::adj_{c.symbol}({', '.join(args + adjs + ret)});"
        return f"adj_{c.symbol}({', '.join(args + adjs + ret)});"

    def reverse_list(self, b, records, out, ind):
        for r in records:
            if isinstance(r, ad.AdjCall):
                out.append(ind + self.reverse_call(b, r.stmt))
            elif isinstance(r, ad.AdjAssign):
                d, src = r.stmt.dst, r.stmt.src
                out.append(f"{ind}{self.a(src)} += {self.a(d)}; {self.a(d)} = {{}};")
            elif isinstance(r, ad.AdjRead):
                out.append(f"{ind}{self.a(r.stmt.src)} += {self.a(r.stmt.result)};")
            elif isinstance(r, ad.AdjIf):
                out.append(f"{ind}if ({self.v(r.cond)}) {{")
                self.reverse_list(b, r.then, out, ind + "    ")
                if r.orelse:
                    out.append(f"{ind}}} else {{")
                    self.reverse_list(b, r.orelse, out, ind + "    ")
                out.append(f"{ind}}}")
            elif isinstance(r, ad.AdjLoop):
                self.reverse_loop(b, r, out, ind)

    def reverse_loop(self, b, r, out, ind):
        loop = r.loop
        i2 = ind + "    "
        out.append(f"{ind}for (weft::int64 k_{loop.id} = loop_{loop.id}_n - 1; k_{loop.id} >= 0; --k_{loop.id}) {{")
        for k, m in enumerate(loop.carried):
            out.append(f"{i2}{self.v(m)} = loop_{loop.id}_stack{k}[k_{loop.id}];")
        if loop.kind == "range":
            idx = self.v(loop.index)
            out.append(f"{i2}{idx} = weft::int32({self.v(loop.start)} + k_{loop.id} * {self.v(loop.step)});")
        for v in r.zero:
            out.append(f"{i2}{self.a(v)} = {{}};")
        self.forward_block(b, loop.body, out, i2, replay=True)
        self.reverse_list(b, r.body, out, i2)
        out.append(f"{ind}}}")

    def loop_state_decls(self, fn) -> list:
        out = []
        for s in ir.walk(fn.body):
            if isinstance(s, ir.Loop):
                out.append(f"weft::int64 loop_{s.id}_n = 0;")
                for k, m in enumerate(s.carried):
                    out.append(f"{self.stack_type.format(ctype_name(m.type))} loop_{s.id}_stack{k};")
        return out

    # ------------------------------------------------------------------ funcs
    def func_params(self, fn) -> str:
        return ", ".join(f"{ctype_name(p.var.type)} {self.v(p.var)}" for p in fn.params)

    def render_func(self, inst) -> str:
        if inst.native is not None:
            return self.render_native_func(inst)
        fn = inst.ir
        ret_t = ctype_name(fn.ret_type) if fn.ret_type is not None else "void"
        params = self.func_params(fn)
        skip = {p.var.id for p in fn.params}
        out = []
        variants = [("", fn, False)]
        if inst.replay_ir is not None:
            variants.append(("_replay", inst.replay_ir, False))
        elif fn.has_side_effects:
            variants.append(("_replay", fn, True))
        for suffix, body_fn, replay in variants:
            out.append(f"{self.fn_qualifier} {ret_t} {inst.symbol}{suffix}({self.func_params(body_fn)}) {{")
            out += ["    " + d for d in self.declarations(body_fn, False, {p.var.id for p in body_fn.params})]
            if replay:  # a replayed loop counts its trips and keeps its checkpoints (forward_loop)
                out += ["    " + d for d in self.loop_state_decls(body_fn)]
            self.forward_block(Body(body_fn), body_fn.body, out, "    ", replay)
            if body_fn.ret is not None:
                out.append(f"    return {self.v(body_fn.ret)};")
            out.append("}")
        adjoint = "backward" in self.passes or getattr(inst, "adjoint_required", False)
        if adjoint and inst.grad_ir is not None:
            out.append(self.render_custom_adjoint(inst))
        elif adjoint and inst.differentiable and inst.compiled.reverse is not None:
            adj_params = [f"{ctype_name(p.var.type)}& {self.a(p.var)}" for p in fn.params]
            if fn.ret is not None:
                adj_params.append(f"{ret_t} adj_ret")
            sig = ", ".join(x for x in [params] + adj_params if x)
            out.append(f"{self.fn_qualifier} void adj_{inst.symbol}({sig}) {{")
            out += ["    " + d for d in self.declarations(fn, True, skip)]
            out += ["    " + d for d in self.loop_state_decls(fn)]
            body = Body(fn)
            self.forward_block(body, fn.body, out, "    ", True)
            if fn.ret is not None and wt.is_differentiable(fn.ret.type):
                out.append(f"    {self.a(fn.ret)} += adj_ret;")
            self.reverse_list(body, inst.compiled.adjoint(), out, "    ")
            out.append("}")
        return "\n".join(out)

    def render_native_func(self, inst) -> str:
        """A ``@wp.func_native``: its snippets as C++ function bodies, parameters named as in
        Python. With ``wp.ref[T]`` parameters the snippet function takes them by reference and a
        wrapper returns ``(result, their final values)``, the calling convention of funcs with
        references; the adjoint wrapper hands the snippet the adjoint of each final value in
        ``adj_<name>`` and accumulates what the snippet leaves there."""
        fn, nat, q, sym = inst.ir, inst.native, self.fn_qualifier, inst.symbol
        refs = set(inst.ref_params)
        has_ret = inst.native_ret_type is not None
        r_t = ctype_name(inst.native_ret_type) if has_ret else "void"
        ps = [(p.name, ctype_name(p.var.type)) for p in fn.params]
        raw = ", ".join(f"{t}{'&' if k in refs else ''} {n}" for k, (n, t) in enumerate(ps))
        by_value = ", ".join(f"{t} {n}" for n, t in ps)
        names = ", ".join(n for n, _ in ps)
        ref_names = [ps[k][0] for k in inst.ref_params]
        out = []
        for suffix, body in (("", nat.forward), ("_replay", nat.replay or nat.forward)):
            if not refs:
                out.append(f"{q} {r_t} {sym}{suffix}({raw}) {{\n{body}\n}}")
                continue
            out.append(f"{q} {r_t} {sym}{suffix}_native({raw}) {{\n{body}\n}}")
            items = (["weft_native_result"] if has_ret else []) + ref_names
            keep = f"{r_t} weft_native_result = " if has_ret else ""
            out.append(
                f"{q} {ctype_name(fn.ret_type)} {sym}{suffix}({by_value}) {{ {keep}{sym}{suffix}_native({names}); "
                f"return weft::make_tuple({', '.join(items)}); }}"
            )
        if "backward" not in self.passes or nat.adjoint is None:
            return "\n".join(out)
        adjs = [f"{t}& adj_{n}" for n, t in ps]
        adj_ret = [f"{r_t} adj_ret"] if has_ret else []
        if not refs:
            out.append(f"{q} void adj_{sym}({', '.join([by_value] + adjs + adj_ret)}) {{\n{nat.adjoint}\n}}")
            return "\n".join(out)
        out.append(f"{q} void adj_{sym}_native({', '.join([raw] + adjs + adj_ret)}) {{\n{nat.adjoint}\n}}")
        body = []
        if has_ret:
            body.append(f"{r_t} weft_adj_result = weft::tuple_get<0>(adj_ret);")
        for j, k in enumerate(inst.ref_params):
            n, t = ps[k]
            body.append(f"{t} weft_adj_{n} = weft::tuple_get<{j + int(has_ret)}>(adj_ret);")
        call_adjs = [f"weft_adj_{n}" if k in refs else f"adj_{n}" for k, (n, _) in enumerate(ps)]
        call_adjs += ["weft_adj_result"] if has_ret else []
        body.append(f"adj_{sym}_native({', '.join([names] + call_adjs)});")
        body += [f"adj_{n} += weft_adj_{n};" for n in ref_names]
        sig = ", ".join([by_value] + adjs + [f"{ctype_name(fn.ret_type)} adj_ret"])
        out.append(f"{q} void adj_{sym}({sig}) {{\n    " + "\n    ".join(body) + "\n}")
        return "\n".join(out)

    def render_custom_adjoint(self, inst) -> str:
        """``adj_<func>`` from a @wp.func_grad body: forward params, adjoint refs ``adjp_k``, adj_ret."""
        g = inst.grad_ir
        n = len(inst.arg_types)
        fwd, rets = g.params[:n], g.params[n:]
        sig = [f"{ctype_name(p.var.type)} {self.v(p.var)}" for p in fwd]
        grads = {k for k, p in enumerate(fwd) if wt.is_array(p.var.type)}  # wp.adjoint[a]: a's gradient array
        sig += [f"{ctype_name(p.var.type)}& adjp_{k}{'_unused' if k in grads else ''}" for k, p in enumerate(fwd)]
        unpack = [f"    {ctype_name(fwd[k].var.type)} adjp_{k} = weft::grad_array({self.v(fwd[k].var)});" for k in sorted(grads)]
        if len(rets) == 1:
            sig.append(f"{ctype_name(rets[0].var.type)} {self.v(rets[0].var)}")
        elif rets:  # a func returning several values: its callers pass their adjoints as one tuple
            sig.append(f"{ctype_name(inst.ret_type)} adj_ret")
            unpack += [
                f"    {ctype_name(p.var.type)} {self.v(p.var)} = weft::tuple_get<{k}>(adj_ret);"
                for k, p in enumerate(rets)
            ]
        out = [f"{self.fn_qualifier} void adj_{inst.symbol}({', '.join(sig)}) {{"] + unpack
        out += ["    " + d for d in self.declarations(g, False, {p.var.id for p in g.params})]
        self.forward_block(Body(g), g.body, out, "    ", False)
        out.append("}")
        return "\n".join(out)

    # ------------------------------------------------------------------ kernels
    def render_kernel(self, inst) -> str:
        fn = inst.ir
        sym = inst.symbol
        out = [f"struct wp_args_{sym} {{"]
        out += [f"    {ctype_name(p.var.type)} arg_{p.name};" for p in fn.params]
        if not fn.params:
            out.append("    int32_t _unused;")
        out.append("};")
        # Array parameters the body never reassigns are bound by reference: a copy of the
        # descriptor would be rebuilt per task whenever a checked access's error path makes its
        # address escape (a `rep movs` per thread that cost 2x on an element-wise kernel).
        reassigned = ir.assigned_var_ids(fn)

        def unpack_param(p):
            ref = "&" if wt.is_array_like(p.var.type) and p.var.id not in reassigned else ""
            const = "const " if ref else ""
            return f"    {const}{ctype_name(p.var.type)}{ref} {self.v(p.var)} = args->arg_{p.name};"

        unpack = [unpack_param(p) for p in fn.params]
        skip = {p.var.id for p in fn.params}
        tid = self.tid_lines(fn, True)

        def head(mode, variant, coord):
            extra = f", {sym}_{mode}_hoist& hoist, int lane" if self.hoists(inst, mode) else ""
            extra += ", weft::int32 coord" if coord else ""
            return templates.BODY_HEAD.format(
                qualifier=self.body_qualifier_of(inst, mode, variant), sym=sym, mode=mode, variant=variant, extra=extra
            )

        for mode in ("forward", "backward"):
            if self.hoists(inst, mode):
                out += self.hoist_struct(inst, mode)

        variants = [("", False)] + ([("_fast", True)] if inst.facts.tid_indexed else [])
        modes = [m for m in self.passes if m == "forward" or inst.backward_enabled]
        plan = self.stage_plan_of(inst) if "backward" in modes else None
        fplan = self.forward_stage_plan_of(inst)
        plain_modes = [m for m in modes if m == "forward" and self.plain_forward(inst)]
        plain_modes += [m for m in modes if m == "backward" and self.plain_backward(inst)]
        if len(variants) > 1 and plain_modes:
            variants.append(("_fast_plain", True))
        if len(variants) > 1 and self.interior_forward(inst):
            variants.append(("_fast_interior", True))

        def staged(mode):  # the pass's plan: its staged body replaces the unchecked one
            return plan if mode == "backward" else fplan

        def in_run(mode, unchecked):  # a fast body runs inside the task loop's current run
            return unchecked and not staged(mode)

        def start(mode, body, suffix):  # the body with its signature, parameters and coordinates
            run = in_run(mode, body.unchecked)
            body = dataclasses.replace(body, coord=body.interior or self.counts_coordinate(fn, run))
            lines = [head(mode, suffix, body.coord), *unpack, *(self.tid_lines(fn, True, run) if run else tid)]
            return body, lines

        for suffix, unchecked in variants:
            body = Body(fn, inst.facts, unchecked, plain=suffix == "_fast_plain", interior=suffix == "_fast_interior")
            if body.plain and "backward" in plain_modes:  # CPURenderer
                back, lines = start("backward", body, suffix)
                out += [lines[0]] + self.backward_body(back, inst.compiled.adjoint(), lines[1:], skip)
            if body.plain and "forward" not in plain_modes:
                continue
            if body.plain or body.interior:  # forward only (CPURenderer)
                # the fast body with plain accumulations, or for the tasks inside the interior
                body, lines = start("forward", body, suffix)
                out += lines + ["    " + d for d in self.declarations(fn, False, skip)]
                self.forward_block(body, fn.body, out, "    ", False)
                out.append("}")
                continue
            if "forward" in modes and not (unchecked and fplan):
                hoist = "forward" if self.hoists(inst, "forward") else ""
                fwd, lines = start("forward", dataclasses.replace(body, hoist=hoist), suffix)
                out += lines + ["    " + d for d in self.declarations(fn, False, skip)]
                self.forward_block(fwd, fn.body, out, "    ", False)
                out.append("}")
            if "backward" in modes and not (unchecked and plan):
                hoist = "backward" if self.hoists(inst, "backward") else ""
                back, lines = start("backward", dataclasses.replace(body, hoist=hoist), suffix)
                out += [lines[0]] + self.backward_body(back, inst.compiled.adjoint(), lines[1:], skip)
        for p in (fplan, plan):  # the staged body replaces the unchecked one (it has no thread context)
            if p:
                out += self.staged_body(inst, p, unpack + self.tid_lines(fn, False), skip)
        for mode in modes:
            out += self.kernel_entry(inst, mode, len(variants) > 1, staged(mode))
        return "\n".join(out)

    def body_qualifier_of(self, inst, mode: str, variant: str) -> str:
        """The qualifier of body ``variant`` of pass ``mode`` (the CPU renderer keeps one out of
        line, see there)."""
        return self.body_qualifier

    def hoists(self, inst, mode: str) -> bool:
        """Whether pass ``mode`` sums one-element accumulations in thread-local variables (the
        CPU renderer, for kernels access.py found such accumulations in)."""
        return False

    def plain_forward(self, inst) -> bool:
        """Whether the forward pass gets a ``_fast_plain`` body (the CPU renderer, see there)."""
        return False

    def plain_backward(self, inst) -> bool:
        """Whether the backward pass gets a ``_fast_plain`` body (the CPU renderer, see there)."""
        return False

    def counts_coordinate(self, fn, in_run: bool) -> bool:
        """Whether a body gets its last thread coordinate as an int32 parameter from its task
        loop (the CPU renderer, see there)."""
        return False

    def interior_forward(self, inst) -> bool:
        """Whether the forward pass gets a ``_fast_interior`` body (the CPU renderer, see there)."""
        return False

    def tid_lines(self, fn, has_ctx: bool, in_run: bool = False) -> list:
        """A body's first lines for a multi-dimensional ``wp.tid()``: the task's grid coordinates
        (``has_ctx``: the body has the thread context, where a target's task loop may keep them;
        ``in_run``: the body only runs for tasks of the run the task loop keeps there)."""
        if fn.tid_ndim <= 1:
            return []
        return ["    weft::int32 tid_coords[4];", "    weft::tid_coords(*bounds, task, tid_coords);"]

    def backward_body(self, body, reverse, head_lines, skip) -> list:
        """The lines of a backward body after its signature: replay of the forward, then the
        reverse statements ``reverse`` (the adjoint program); ends with the closing brace."""
        fn = body.fn
        out = list(head_lines)
        out += [f"    {ctype_name(p.var.type)} {self.a(p.var)} = {{}};" for p in fn.params]
        out += ["    " + d for d in self.declarations(fn, True, skip)]
        out += ["    " + d for d in self.loop_state_decls(fn)]
        self.forward_block(body, fn.body, out, "    ", True)
        self.reverse_list(body, reverse, out, "    ")
        out.append("}")
        return out

    def forward_stage_plan_of(self, inst):
        """The staging plan of a kernel's forward pass: none (only the CPU stages; CPURenderer)."""
        return None

    def stage_plan_of(self, inst):
        """The staging plan of a kernel's backward pass: none (only the CPU stages; CPURenderer)."""
        return None  # noqa: RET501 (the neutral renderer plans nothing)

    def staged_body(self, inst, plan, head_lines, skip) -> list:
        """The staged backward body of a kernel with a staging ``plan`` (CPURenderer)."""
        raise NotImplementedError(f"the {self.target} renderer does not stage backward loops")

    def kernel_entry(self, inst, mode, has_fast, plan=None) -> list:
        """The target's entry point of one pass of a kernel, around its per-thread bodies."""
        raise NotImplementedError(f"{type(self).__name__} renders no kernel entry points")

    @staticmethod
    def task_loops(cond, loop: str, call: str, ind: str, pragmas=(), fast=None) -> list:
        """The task loop over the checked body, or (``cond`` given) over the unchecked ``_fast``
        body when ``cond`` holds and the checked one otherwise. ``call`` has ``{}`` for the suffix;
        ``pragmas`` go before the fast loop; ``fast`` (lines, unindented) replaces the fast loop."""
        if cond is None:
            return [ind + loop + call.format("")]
        if fast is None:
            fast = [*pragmas, loop + call.format("_fast")]
        # Expected true: GCC otherwise predicts the stride equalities false and compiles the fast
        # loop as cold code (no inlining of the vector operations it calls).
        return [
            f"{ind}if (__builtin_expect({cond}, 1)) {{",
            *[f"{ind}    {line}" for line in fast],
            f"{ind}}} else {{",
            f"{ind}    {loop}{call.format('')}",
            f"{ind}}}",
        ]

    def fast_condition(self, inst, args: str, bounds: str) -> str:
        """C++ test selecting the unchecked body (``args`` prefixes the argument fields, ``bounds``
        names the launch_bounds): every thread-indexed array covers the launch grid, every
        loop-indexed array covers its loop's range, every constant index is inside its array,
        every affine index ``k * i + c`` of the last thread is inside its array
        (access.py ``AccessFacts``), and all of them have the last-dimension stride that
        ``elem_ptr_nc`` assumes (array.h ``fast_stride``)."""
        fn, facts = inst.ir, inst.facts
        conds = []
        for name in facts.tid_arrays:
            a = f"{args}arg_{name}"
            conds.append(f"weft::fast_stride({a}, {fn.tid_ndim - 1})")
            if fn.tid_ndim == 1:
                conds.append(f"{a}.shape[0] >= {bounds}.size")
            else:
                conds += [f"{a}.shape[{d}] >= {bounds}.shape[{d}]" for d in range(fn.tid_ndim)]

        def value(v):
            kind, x = v
            return f"weft::int64({args}arg_{x})" if kind == "param" else f"weft::int64({x})"

        for name, consts in facts.const_bounds:
            a = f"{args}arg_{name}"
            conds.append(f"weft::fast_stride({a}, {len(consts) - 1})")
            conds += [f"{a}.shape[{d}] > {c}" for d, c in enumerate(consts)]
        largest = {}  # (array, k) -> the largest c: it alone decides
        for name, k, c in facts.affine_bounds:
            largest[name, k] = max(c, largest.get((name, k), c))
        for (name, k), c in largest.items():
            a = f"{args}arg_{name}"
            last = f"weft::int64({k}) * ({bounds}.size - 1) + {c}"
            conds.append(f"weft::fast_stride({a}, 0)")
            conds.append(f"{last} < weft::int64({a}.shape[0]) && {last} <= 2147483647")
        for name, start, stop in facts.loop_bounds:
            conds.append(f"weft::fast_stride({args}arg_{name}, 0)")
            conds.append(f"{value(start)} >= 0 && {value(stop)} <= weft::int64({args}arg_{name}.shape[0])")
        for name, ndim, cond in facts.range_checks:
            conds.append(f"weft::fast_stride({args}arg_{name}, {ndim - 1})")
            conds += _range_test(cond, args, bounds)
        for cond in facts.entry_checks:
            conds += _range_test(cond, args, bounds)
        return " && ".join(dict.fromkeys(conds))  # an array indexed several ways is tested once

    def struct_definitions(self, kernels, funcs) -> list:
        """C++ definitions of every struct type used, nested structs first."""
        order, seen = [], set()
        for inst in list(funcs) + list(kernels):
            for var in inst.ir.vars:
                t = var.type
                if wt.is_array_like(t):
                    t = t.dtype  # an array of structs needs the struct (even if no element is read)
                if getattr(t, "_kind", None) != "struct":
                    continue
                for dep in t.dependencies() + [t]:
                    if dep.cname not in seen:
                        seen.add(dep.cname)
                        order.append(dep.cpp_definition())
        return order

    def render_module(self, kernels, funcs) -> str:
        """Full translation unit: header include, structs, funcs in dependency order, kernels."""
        return join_unit(*self.render_parts(kernels, funcs))

    def render_parts(self, kernels, funcs) -> tuple:
        """The module's prelude (header include, structs, funcs) and the text of each kernel:
        ``join_unit(prelude, kernel_texts)`` is the whole module, and any subset of the kernels
        joined to the prelude is a translation unit of its own (``split_units``)."""
        prelude = ['#include "weft.h"', ""]
        prelude += self.struct_definitions(kernels, funcs)
        prelude += [self.render_func(f) for f in funcs]
        return "\n\n".join(prelude), [self.render_kernel(k) for k in kernels]


def join_unit(prelude: str, kernel_texts) -> str:
    """A translation unit: the prelude followed by these kernels."""
    return "\n\n".join([prelude, *kernel_texts]) + "\n"


def split_units(prelude: str, kernel_texts: list, n: int) -> list:
    """The module as ``n`` translation units of about equal size (each kernel in one of them,
    kept in order within a unit), for compiling in parallel."""
    groups = [[] for _ in range(n)]
    sizes = [0] * n
    for k in sorted(range(len(kernel_texts)), key=lambda k: -len(kernel_texts[k])):
        g = sizes.index(min(sizes))
        groups[g].append(k)
        sizes[g] += len(kernel_texts[k])
    return [join_unit(prelude, [kernel_texts[k] for k in sorted(g)]) for g in groups if g]
