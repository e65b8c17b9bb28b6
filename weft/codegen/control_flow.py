"""Frontend, control flow: statement lists, branches and their merges (phis), loops (unrolled
and dynamic with loop-carried mutable vars), and break / continue / return as flags.

Contract: a mixin of the ``Lowerer`` (frontend.py); it reads and writes the lowerer's
environment and blocks and emits IR only. Jumps never reach the IR: after a statement that may
jump, the rest of its block is guarded by the flags it may set.
"""

from __future__ import annotations

import ast

from .. import config
from .. import types as wt
from ..builtins import scalar as sb
from ..builtins.geometry import LEGACY_OUTPUTS as legacy_outputs
from ..builtins.geometry import QUERY_ITERATORS as _geometry_iterators
from ..builtins.hash_grid import QUERY_ITERATORS as _hash_grid_iterators
from ..builtins.registry import Builtin
from . import intrinsics as intr
from . import ir
from . import typing_rules as tr
from .ast_scans import assigned_names as _assigned_names
from .ast_scans import component_store_roots as _component_store_roots
from .ast_scans import has_jump as _has_jump
from .ast_scans import has_return as _has_return
from .ast_scans import walk_no_nested_loops as _walk_no_nested_loops
from .errors import UnsupportedConstruct, WarpCodegenTypeError
from .statics import Static

# `for index in query`: the type of an iteration query -> the builtin advancing it
QUERY_ITERATORS = {**_geometry_iterators, **_hash_grid_iterators}


class StaticTuple:
    """A compile-time tuple of vars (``a.shape``, multiple return values before unpacking)."""

    def __init__(self, items):
        self.items = list(items)


class ShapeTuple(StaticTuple):
    """``a.shape`` of an array: as in Warp, ``a.shape[d]`` past its dimensions (up to 4) is 0."""


class _LoopLocal:
    """A variable first assigned inside a dynamic loop (see ``ControlFlow.read_loop_local``):
    the loop, the block holding it, the body's final value, the undefined-after message it was
    recorded with, the enclosing loops' flags, and its carried var once promoted."""

    def __init__(self, loop, block, value, message, loops):
        self.loop = loop
        self.block = block
        self.value = value
        self.message = message
        self.loops = loops
        self.var = None


def _promotable(t) -> bool:
    """Value types a loop may carry (not arrays, local arrays or tuples)."""
    return not wt.is_array_like(t) and not isinstance(t, (wt.LocalArrayType, wt.TupleType))


class ControlFlow:
    """Lowering of control flow (mixed into ``Lowerer``)."""

    # ----------------------------------------------------------------- statement lists
    def visit_body(self, stmts):
        """Visit statements; after one that may jump, guard the rest with the flags it may set."""
        for k, stmt in enumerate(stmts):
            self.visit(stmt)
            if isinstance(stmt, (ast.Return, ast.Break, ast.Continue)):
                return  # the rest is unreachable
            flags = self.flags_set_by(stmt)
            rest = stmts[k + 1 :]
            if flags and rest:
                cond = self.not_any(flags)
                self.emit_if(cond, lambda: self.visit_body(rest), None)
                return

    def flags_set_by(self, stmt) -> list:
        """The jump flags a statement may set: $ret for any return inside it; this loop's break
        and continue flags for break/continue not nested in an inner loop."""
        if not (hasattr(stmt, "body") or hasattr(stmt, "cases")):
            return []  # return/break/continue sit only in compound statements' bodies: skip the walk
        names = ["$ret"] if _has_return([stmt]) else []
        if not isinstance(stmt, (ast.For, ast.While)) and self.loops:
            for node in _walk_no_nested_loops(stmt):
                if isinstance(node, ast.Break):
                    names.append(self.loops[-1][0])
                elif isinstance(node, ast.Continue):
                    names.append(self.loops[-1][1])
        return sorted(set(names))

    def not_any(self, flags) -> ir.Var:
        acc = self.env[flags[0]]
        for f in flags[1:]:
            acc = self.call(intr.LOGICAL_OR, [acc, self.env[f]], wt.bool)
        return self.call_builtin(sb.logical_not, [acc])

    # ----------------------------------------------------------------- branches and merges
    def emit_if(self, cond: ir.Var, then_fn, else_fn):
        """Emit an If; visit both sides with copies of the environment, then merge with phis.
        Returns the (then, else) results of the callbacks."""
        before = dict(self.env)
        stmt = ir.If(cond, ir.Block(), ir.Block())
        self.emit(stmt)
        results = []
        envs = []
        for fn_, blk in ((then_fn, stmt.then), (else_fn, stmt.orelse)):
            self.env = dict(before)
            self.blocks.append(blk)
            results.append(fn_() if fn_ is not None else None)
            self.blocks.pop()
            envs.append(self.env)
        self.env = dict(before)
        self.merge(cond, envs[0], envs[1])
        return results

    def merge(self, cond, env_t, env_f):
        for name in sorted(set(env_t) | set(env_f)):
            a, b = env_t.get(name), env_f.get(name)
            if a is b:
                if a is not None:
                    self.env[name] = a
                continue
            if name == "$retval":
                a = a if a is not None else self.zero_like(b)
                b = b if b is not None else self.zero_like(a)
            if a is None or b is None:
                self.env.pop(name, None)
                self.undefined_after[name] = (
                    f"'{name}' is assigned in only one branch of the if at line {self.src.file_line(self.node)}; assign it before the if"
                )
                continue
            if not isinstance(a, ir.Var) or not isinstance(b, ir.Var):
                raise self.error(f"'{name}' refers to different compile-time objects in the two branches")
            if a.type != b.type:
                raise self.error(
                    f"'{name}' is {wt.type_repr(a.type)} in one branch and {wt.type_repr(b.type)} in the other; "
                    "cast so both branches assign the same type",
                    cls=WarpCodegenTypeError,
                )
            self.env[name] = self.call(intr.PHI, [cond, a, b], a.type)

    def zero_like(self, v: ir.Var) -> ir.Var:
        return (
            self.fn.new_var(v.type, const=tr.convert_literal(0, v.type))
            if wt.is_scalar(v.type)
            else self.call(intr.ZERO, [], v.type)
        )

    def to_bool(self, v: ir.Var) -> ir.Var:
        """A condition's truth: a scalar's (a constant folded: ``if 123:``), an array's when it
        holds elements (``if arr and arr[i] > 0`` with a null or empty array)."""
        if v.type is wt.bool:
            return v
        if wt.is_array_like(v.type):
            n = self.call(intr.SHAPE, [v], wt.int32, attr=0)
            return self.call_builtin(sb._cmp["ne"], [n, self.const(0, wt.int32)])
        if v.is_const and wt.is_scalar(v.type):
            return self.const(bool(v.const), wt.bool)
        if not wt.is_scalar(v.type):
            raise self.error(f"a condition must be a scalar, got {wt.type_repr(v.type)}", cls=WarpCodegenTypeError)
        return self.call_builtin(sb.truth, [v])

    def visit_If(self, node):
        cond = self.to_bool(self.expr(node.test))
        if cond.is_const:
            self.visit_body(node.body if cond.const else node.orelse)
            return
        self.emit_if(
            cond, lambda: self.visit_body(node.body), (lambda: self.visit_body(node.orelse)) if node.orelse else None
        )

    def visit_IfExp(self, node):
        cond = self.to_bool(self.expr(node.test))
        if cond.is_const:
            return self.expr(node.body if cond.const else node.orelse)
        a, b = self.emit_if(cond, lambda: self.expr(node.body), lambda: self.expr(node.orelse))
        # The branch values only exist on their side: route them through the env merge.
        return self.merge_values(cond, a, b)

    def merge_values(self, cond, a, b):
        if a.type != b.type:
            if a.literal and tr.literal_fits(a.const, b.type):
                a = self.const(tr.convert_literal(a.const, b.type), b.type)
            elif b.literal and tr.literal_fits(b.const, a.type):
                b = self.const(tr.convert_literal(b.const, a.type), a.type)
            else:
                raise self.error(
                    f"the two sides of a conditional expression have types {wt.type_repr(a.type)} and {wt.type_repr(b.type)}",
                    cls=WarpCodegenTypeError,
                )
        return self.call(intr.PHI, [cond, a, b], a.type)

    # ----------------------------------------------------------------- loops
    def visit_For(self, node):
        if node.orelse:
            raise self.error("'for ... else' is not supported in kernels", node, UnsupportedConstruct)
        if not isinstance(node.target, ast.Name):
            raise self.error("a for loop target must be a single name", node.target, UnsupportedConstruct)
        it = node.iter
        backwards = (
            isinstance(it, ast.Call)
            and self.static_value(it.func) is reversed
            and len(it.args) == 1
            and not it.keywords
            and isinstance(it.args[0], ast.Call)
        )
        if backwards:  # reversed(range(...)): the same values, last first
            it = it.args[0]
        if not (isinstance(it, ast.Call) and self.static_value(it.func) is range):
            query = self.expr(it) if not backwards and isinstance(it, (ast.Call, ast.Name)) else None
            if isinstance(query, ir.Var) and query.type in QUERY_ITERATORS:
                return self.query_loop(node, query)
            msg = "kernels can only loop over range(...), reversed(range(...)) or a geometry query"
            raise self.error(msg, it, UnsupportedConstruct)
        if it.keywords or not 1 <= len(it.args) <= 3:
            raise self.error("range() takes 1 to 3 positional arguments", it)
        bounds = [self.expr(a) for a in it.args]
        for b in bounds:
            if not wt.is_int(b.type):
                raise self.error(
                    f"range() bounds must be integers, got {wt.type_repr(b.type)}", it, WarpCodegenTypeError
                )
        if len(bounds) == 1:
            bounds = [self.const(0)] + bounds
        if len(bounds) == 2:
            bounds.append(self.const(1))
        if backwards:
            bounds = self.reversed_bounds(bounds, it)
        if all(b.is_const for b in bounds):
            values = range(*[int(b.const) for b in bounds])
            if len(values) <= config.max_unroll:
                return self.unroll(node, values)
            if bounds[2].const == 0:
                raise self.error("range() step must not be zero", it)
        bounds = [self.as_int32(b) for b in bounds]
        self.dynamic_loop(node, "range", bounds=bounds)

    def query_loop(self, node, query):
        """``for index in query`` over a geometry query (``wp.hash_grid_query(...)``,
        ``wp.bvh_query_aabb(...)``, ``wp.mesh_query_aabb(...)``, or a variable holding one):
        lowered as ``while next(query, i): index = i; body`` with hidden names for the query, the
        index and the builtin advancing the query."""
        k = self.loop_counter + 1
        q, i, f = f"$query{k}", f"$index{k}", f"$next{k}"
        self.env[q], self.env[i], self.env[f] = query, self.const(0, wt.int32), Static(QUERY_ITERATORS[query.type])
        load = ast.Load()
        args = [ast.Name(id=q, ctx=load), ast.Name(id=i, ctx=load)]
        test = ast.Call(func=ast.Name(id=f, ctx=load), args=args, keywords=[])
        bind = ast.Assign(targets=[ast.Name(id=node.target.id, ctx=ast.Store())], value=ast.Name(id=i, ctx=load))
        loop = ast.While(test=test, body=[bind, *node.body], orelse=[])
        for n in (test, *test.args, test.func, bind, *bind.targets, bind.value, loop):
            ast.copy_location(n, node)
        self.dynamic_loop(loop, "while", carried=(q, i))
        for n in (q, i, f):
            self.env.pop(n, None)

    def reversed_bounds(self, bounds, node):
        """``(start, stop, step)`` of ``reversed(range(start, stop, step))``: with n values,
        ``range(start + (n - 1) * step, start - step, -step)``, n = max(0, ceil((stop - start) / step))."""
        start, stop, step = bounds
        if all(b.is_const for b in bounds):
            r = range(int(start.const), int(stop.const), int(step.const))
            return [self.const(r.start + (len(r) - 1) * r.step), self.const(r.start - r.step), self.const(-r.step)]
        start, stop, step = (self.as_int32(b) for b in bounds)
        zero, one = self.const(0, wt.int32), self.const(1, wt.int32)
        neg = self.binop(ast.Sub, zero, self.binop(ast.FloorDiv, self.binop(ast.Sub, start, stop, node), step, node), node)
        n = self.call_builtin(sb.max, [zero, neg], node)
        first = self.binop(ast.Add, start, self.binop(ast.Mult, self.binop(ast.Sub, n, one, node), step, node), node)
        return [first, self.binop(ast.Sub, start, step, node), self.binop(ast.Sub, zero, step, node)]

    def as_int32(self, v):
        if v.type is wt.int32:
            return v
        return self.call(intr.CAST, [v], wt.int32, attr=wt.int32)

    def visit_While(self, node):
        if node.orelse:
            raise self.error("'while ... else' is not supported in kernels", node, UnsupportedConstruct)
        self.dynamic_loop(node, "while")

    def new_loop_flags(self):
        self.loop_counter += 1
        return f"$brk{self.loop_counter}", f"$cont{self.loop_counter}"

    def unroll(self, node, values):
        brk, cont = self.new_loop_flags()
        name = node.target.id
        saved = self.env.get(name)
        self.env[brk] = self.const(False, wt.bool)
        self.loops.append((brk, cont))

        def run(k):
            if k >= len(values):
                return
            self.env[cont] = self.const(False, wt.bool)
            self.env[name] = self.const(values[k], wt.int32)
            self.visit_body(node.body)
            if k + 1 < len(values):
                flags = ([brk] if _has_jump(node.body, ast.Break) else []) + (
                    ["$ret"] if _has_return(node.body) else []
                )
                if flags:
                    self.emit_if(self.not_any(flags), lambda: run(k + 1), None)
                else:
                    run(k + 1)

        run(0)
        self.loops.pop()
        self.env.pop(cont, None)
        self.env.pop(brk, None)
        if values and not _has_jump(node.body, ast.Break):
            pass  # as in Python, the loop variable keeps what the last iteration left in it
        elif saved is not None:
            self.env[name] = saved
        else:
            self.env.pop(name, None)

    def names_rebound_by_calls(self, body) -> set:
        """Names a call rebinds: the state of ``wp.randf(rng)`` (builtins with ``advances_state``)
        and the outputs of ``wp.svd3(A, U, sigma, V)`` (``outputs``); loops must carry them."""
        names = set()
        for s in body:
            for n in ast.walk(s):
                if isinstance(n, ast.Assign) and len(n.targets) == 1 and isinstance(n.targets[0], ast.Name):
                    parent = self.tile_view_parent(n.value)  # a view updated in place updates its tile
                    if parent is not None:
                        names.add(parent)
                if not (isinstance(n, ast.Call) and (n.args or n.keywords)):
                    continue
                root = n.func
                while isinstance(root, ast.Attribute):
                    root = root.value
                if not isinstance(root, ast.Name) or root.id in self.env:
                    continue
                try:
                    f = self.static_value(n.func)
                except Exception:
                    continue
                if getattr(f, "advances_state", False) and isinstance(n.args[0], ast.Name):
                    names.add(n.args[0].id)
                n_out = getattr(f, "outputs", None)
                if isinstance(n_out, int) and len(n.args) > n_out:
                    names.update(a.id for a in n.args[-n_out:] if isinstance(a, ast.Name))
                for pos in getattr(f, "inout", ()):  # wp.bvh_query_next(query, index)
                    if pos < len(n.args) and isinstance(n.args[pos], ast.Name):
                        names.add(n.args[pos].id)
                inout_names = getattr(f, "inout_names", ())  # wp.tile_matmul(a, b, out=c)
                names.update(k.value.id for k in n.keywords if k.arg in inout_names and isinstance(k.value, ast.Name))
                legacy = legacy_outputs.get(f) if isinstance(f, Builtin) else None
                if legacy and len(n.args) > len(f.overloads[0].params):  # wp.mesh_query_point(id, p, d, sign, face, u, v)
                    n_in, fields = legacy
                    names.update(a.id for a in n.args[n_in : n_in + len(fields)] if isinstance(a, ast.Name))
        return names

    def reference_argument_roots(self, body) -> set:
        """Names a call of a func with ``wp.ref[T]`` parameters writes back to: ``x`` in ``f(x)``,
        ``v`` in ``f(v[0])`` (any overload's reference positions count)."""
        names = set()
        for s in body:
            for n in ast.walk(s):
                if not isinstance(n, ast.Call) or not isinstance(n.func, (ast.Name, ast.Attribute)):
                    continue
                try:
                    f = self.static_value(n.func)
                except Exception:
                    continue
                ref_names = getattr(f, "reference_param_names", None)
                if ref_names is None:
                    continue
                positions = ref_names()
                args = [a for k, a in enumerate(n.args) if k in positions.values()]
                args += [kw.value for kw in n.keywords if kw.arg in positions]
                for a in args:
                    while isinstance(a, (ast.Subscript, ast.Attribute)):
                        a = a.value
                    if isinstance(a, ast.Name):
                        names.add(a.id)
        return names

    def dynamic_loop(self, node, kind, bounds=None, carried=()):
        brk, cont = self.new_loop_flags()
        assigned = _assigned_names(node.body) | self.names_rebound_by_calls(node.body) | set(carried)
        if kind == "while":  # `while wp.bvh_query_next(query, i)`: the test rebinds names each iteration too
            assigned |= self.names_rebound_by_calls([ast.Expr(node.test)])
        assigned |= {  # `v[0] = x`, `s.f = x`, `f(ref_param=x)` rebind value-type locals; arrays are written in place
            n
            for n in _component_store_roots(node.body) | self.reference_argument_roots(node.body)
            if isinstance(self.env.get(n), ir.Var) and not wt.is_array_like(self.env[n].type)
        }
        may_break = _has_jump(node.body, ast.Break)
        may_return = _has_return(node.body)
        if may_break:
            self.env[brk] = self.const(False, wt.bool)
            assigned.add(brk)
        if may_return:
            assigned.update(("$ret", "$retval"))
            if "$retval" not in self.env and not self.is_kernel:
                rt = tr.annotation_type(self.ret_type) if self.ret_type is not None else None
                if not wt.is_scalar(rt):
                    raise self.error(
                        "a func that returns from inside a loop needs its return type annotated, e.g. `-> float`",
                        node,
                    )
                self.env["$retval"] = self.const(0, rt)
        loop_var = node.target.id if kind == "range" else None
        carried_names = sorted(
            n for n in assigned if n in self.env and isinstance(self.env[n], ir.Var) and n != loop_var
        )
        loop = ir.Loop(kind, ir.Block(), id=self.loop_counter, line=self.src.file_line(node))
        mut = {}
        for n in carried_names:
            init = self.env[n]
            m = self.fn.new_var(init.type, label=n, mutable=True)
            self.emit(ir.Assign(m, init))
            mut[n] = m
        loop.carried = [mut[n] for n in carried_names]
        loop.exit_flags = [mut[f] for f in (brk, "$ret") if f in mut]
        outer_env = dict(self.env)
        if kind == "range":
            loop.start, loop.stop, loop.step = bounds
            loop.index = self.fn.new_var(wt.int32, label=loop_var, mutable=True)
        else:
            loop.cond_block = ir.Block()
            self.blocks.append(loop.cond_block)
            reads = {n: self.read(m) for n, m in mut.items()}
            self.env.update(reads)
            loop.cond = self.to_bool(self.expr(node.test))
            for n, m in mut.items():  # names the test rebinds (wp.bvh_query_next(query, i)) keep their new values
                v = self.env.get(n)
                if v is not None and v is not reads[n] and v.type == m.type:
                    self.emit(ir.Assign(m, v))
            self.blocks.pop()
            self.check_while_replay(node, loop)
        self.emit(loop)
        self.blocks.append(loop.body)
        self.env = dict(outer_env)
        for n, m in mut.items():
            self.env[n] = self.read(m)
        if loop_var is not None:
            self.env[loop_var] = loop.index
        self.env[cont] = self.const(False, wt.bool)
        self.loops.append((brk, cont))
        self.visit_body(node.body)
        self.loops.pop()
        for n, m in mut.items():
            v = self.env.get(n)
            if v is None:
                raise self.error(f"'{n}' is not defined on every path through the loop body", node)
            if v.type != m.type:
                raise self.error(
                    f"'{n}' changes type inside the loop from {wt.type_repr(m.type)} to {wt.type_repr(v.type)}; "
                    f"declare it with the type it keeps, e.g. {n} = {wt.type_repr(v.type)}(...)",
                    node,
                    WarpCodegenTypeError,
                )
            if v is not m:
                self.emit(ir.Assign(m, v))
        self.blocks.pop()
        body_env = self.env
        self.env = outer_env
        for n in assigned:
            if n not in mut and n in body_env and n != cont:
                self.env.pop(n, None)
                self.undefined_after[n] = (
                    f"'{n}' is only assigned inside the loop at line {loop.line}; assign it before the loop"
                )
                self.remember_loop_local(n, loop, body_env[n])
        for n, m in mut.items():
            self.env[n] = self.read(m)
        self.env.pop(brk, None)
        if loop_var is not None and loop_var not in mut:
            self.env.pop(loop_var, None)

    # ----------------------------------------------------------------- loop-local names read after the loop
    def remember_loop_local(self, name, loop, value):
        """``name`` was first assigned inside ``loop`` (just lowered; the current block holds it).
        Warp lets code after the loop read such a variable: it holds the last iteration's value.
        Remember what promoting it takes, should a read come (``read_loop_local``)."""
        if name.startswith("$") or not isinstance(value, ir.Var) or not _promotable(value.type):
            return
        self.loop_locals[name] = _LoopLocal(loop, self.blocks[-1], value, self.undefined_after[name], tuple(self.loops))

    def read_loop_local(self, name):
        """The value after its loop of a variable only assigned inside a dynamic loop, or None when
        none applies: the name was not rebound since, and the read is inside the same enclosing
        loops. The first read makes the variable loop-carried after the fact: zero before the loop
        (its value if the loop never runs), the body's final value assigned at the end of each
        iteration, so the backward pass checkpoints it like any carried variable."""
        rec = self.loop_locals.get(name)
        if rec is None or rec.message is not self.undefined_after.get(name):  # rebound, then hidden again
            return None
        if tuple(self.loops[: len(rec.loops)]) != rec.loops:  # after an enclosing loop: not checkpointed there
            return None
        if rec.var is None:
            m = self.fn.new_var(rec.value.type, label=name, mutable=True)
            init = ir.Block()
            self.blocks.append(init)
            zero = self.zero_like(rec.value)
            self.blocks.pop()
            at = next(k for k, s in enumerate(rec.block.stmts) if s is rec.loop)
            rec.block.stmts[at:at] = [*init.stmts, ir.Assign(m, zero)]
            rec.loop.body.append(ir.Assign(m, rec.value))
            rec.loop.carried.append(m)
            rec.var = m
        return self.read(rec.var)

    def check_while_replay(self, node, loop):
        """The backward pass replays loops without their side effects. A while condition that
        reads arrays the body may write could then never become false: refuse to differentiate."""
        reads = any(isinstance(s, ir.Call) and s.callee == intr.LOAD for s in ir.walk(loop.cond_block))
        writes = any(
            isinstance(n, (ast.Subscript,)) and isinstance(n.ctx, ast.Store) for s in node.body for n in ast.walk(s)
        ) or any(
            isinstance(n, ast.Call)
            and isinstance(n.func, (ast.Attribute, ast.Name))
            and "atomic" in ast.unparse(n.func)
            for s in node.body
            for n in ast.walk(s)
        )
        if reads and writes and self.fn.adjoint_error is None:
            line = self.src.file_line(node)
            self.fn.adjoint_error = (
                f"kernel '{self.src.name}' cannot be differentiated: the while loop at {self.src.file}:{line} tests "
                "array values that its body writes, which the backward pass cannot replay. Compute the iteration "
                "count first (for example into a local variable) and loop with range()."
            )

    def read(self, m: ir.Var) -> ir.Var:
        v = self.fn.new_var(m.type, label=m.label)
        self.emit(ir.Read(v, m))
        return v

    def visit_Break(self, node):
        if not self.loops:
            raise self.error("'break' outside a loop", node)
        self.env[self.loops[-1][0]] = self.const(True, wt.bool)

    def visit_Continue(self, node):
        if not self.loops:
            raise self.error("'continue' outside a loop", node)
        self.env[self.loops[-1][1]] = self.const(True, wt.bool)

    def visit_Return(self, node):
        if node.value is not None:
            if self.is_kernel:
                raise self.error(
                    "Warp kernels cannot return values. Write results to output arguments, and omit the return "
                    "annotation or use `-> None`.",
                    node,
                    WarpCodegenTypeError,
                )
            v = self.expr_or_tuple(node.value)
            if isinstance(v, StaticTuple):
                if any(isinstance(x.type, wt.LocalArrayType) for x in v.items):
                    raise self.error(
                        "a func returns a local array (wp.zeros / wp.empty) alone, not inside a tuple", node
                    )
                v = self.call(intr.TUPLE_MAKE, v.items, wt.TupleType([x.type for x in v.items]))
            elif isinstance(v.type, wt.LocalArrayType):
                storage = self.local_storage.get(v.id)
                if storage is None:
                    raise self.error(
                        "a func can return a local array it created (wp.zeros / wp.empty in the func), "
                        "not a view of one or one it was given; return values or write into the array",
                        node,
                        WarpCodegenTypeError,
                    )
                v = storage  # returned by value: the caller takes the storage over
            prev = self.env.get("$retval")
            if prev is not None and prev.type != v.type:
                if v.literal and tr.literal_fits(v.const, prev.type):
                    v = self.const(tr.convert_literal(v.const, prev.type), prev.type)
                else:
                    raise self.error(
                        f"return types differ: {wt.type_repr(prev.type)} and {wt.type_repr(v.type)}",
                        node,
                        WarpCodegenTypeError,
                    )
            elif prev is None and self.ret_type is not None:
                rt = tr.annotation_type(self.ret_type)
                if wt.is_scalar(rt) and v.type != rt and v.literal and tr.literal_fits(v.const, rt):
                    v = self.const(tr.convert_literal(v.const, rt), rt)
            self.env["$retval"] = v
        self.env["$ret"] = self.const(True, wt.bool)

    def visit_Pass(self, node):
        pass
