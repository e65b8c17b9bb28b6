"""Frontend: Python AST of a @kernel / @func -> typed IR (``ir.Function``).

Contract:
  - Input: a ``Source`` (parsed function + its globals), the parameter types, and whether it is
    a kernel. Output: an ``ir.Function`` that passes ``ir.verify``.
  - Names resolve to a local, else to the *value* of a global / closure / Python builtin, which
    is then looked up by identity (weft builtins, funcs, types, constants). Captured constants
    are recorded in ``captures``.
  - break / continue / return become flag variables plus guarded blocks, so the IR is jump-free.
    Values reassigned in a branch merge through ``where`` (phi); values reassigned in a dynamic
    loop become mutable loop-carried vars.
  - Every error is a ``WarpCodegenError`` carrying file:line and the line's text.
"""

from __future__ import annotations

import ast
import contextlib
import enum
import typing

from .. import types as wt
from .. import vector_types as vt
from ..builtins import registry as reg
from ..builtins import scalar as sb
from . import composite, ir, special_calls, starred, tile_calls, tile_linalg_calls, tile_views  # noqa: F401 (tile ops register)
from . import intrinsics as intr
from . import typing_rules as tr
from .ast_scans import literal_type as _literal_type
from .ast_scans import subscript_indices
from .control_flow import ControlFlow, ShapeTuple, StaticTuple
from .errors import (
    UnsupportedConstruct,
    WarpCodegenAttributeError,
    WarpCodegenError,
    WarpCodegenKeyError,
    WarpCodegenTypeError,
    WarpCodegenValueError,
    location_note,
)
from .source import Source
from .statics import Static

_binops = {
    ast.Add: sb.add,
    ast.Sub: sb.sub,
    ast.Mult: sb.mul,
    ast.Div: sb.div,
    ast.FloorDiv: sb.floordiv,
    ast.Mod: sb.mod,
    ast.Pow: sb.pow,
    ast.BitAnd: sb.bit_and,
    ast.BitOr: sb.bit_or,
    ast.BitXor: sb.bit_xor,
    ast.LShift: sb.lshift,
    ast.RShift: sb.rshift,
    ast.MatMult: sb.mul,
}
_cmpops = {
    ast.Eq: sb._cmp["eq"],
    ast.NotEq: sb._cmp["ne"],
    ast.Lt: sb._cmp["lt"],
    ast.LtE: sb._cmp["le"],
    ast.Gt: sb._cmp["gt"],
    ast.GtE: sb._cmp["ge"],
}
_unops = {ast.USub: sb.neg, ast.UAdd: sb.pos, ast.Invert: sb.invert}
_augops_atomic = {ast.Add: "atomic_add", ast.Sub: "atomic_sub"}


_MISSING = object()


def _is_function_alias(value, name) -> bool:
    """Whether ``name`` binds a weft func or builtin whose own name is another."""
    is_function = getattr(value, "_weft_kind", None) == "func" or isinstance(value, reg.Builtin)
    return is_function and getattr(value, "__name__", name) != name


def _type_attribute(t, attr):
    """What ``x.dtype`` / ``x.length`` mean for a value type ``t`` in kernels, as in Warp: the
    scalar type of its components and their number (1 for a scalar); ``_MISSING`` otherwise."""
    if not (wt.is_scalar(t) or vt.is_composite(t)):
        return _MISSING
    if attr == "dtype":
        return t if wt.is_scalar(t) else t._scalar
    if attr == "length":
        return 1 if wt.is_scalar(t) else t._length_
    return _MISSING


def _require_adjoints(inst):
    """Mark a func instance and the funcs it calls as needing their adjoint functions rendered."""
    stack = [inst]
    while stack:
        f = stack.pop()
        if getattr(f, "adjoint_required", False):
            continue
        f.adjoint_required = True
        stack.extend(c for ir_ in (f.ir, getattr(f, "grad_ir", None)) if ir_ is not None for c in ir_.callees)


class _BuildTimeShape:
    """A runtime composite as build-time code sees it (``wp.static(len(v))``): its type's length,
    shape and component type, not its values."""

    def __init__(self, t):
        self._t = t
        self.dtype = t._scalar
        self.length = t._length_
        self.shape = t._shape

    def __len__(self):
        return self._t._shape[0]


class _BuildTimeTile:
    """A tile as build-time code sees it (``wp.static(len(t))``): its shape and dtype."""

    def __init__(self, t):
        self.dtype = t.dtype
        self.shape = t.shape

    def __len__(self):
        return self.shape[0]


class Lowerer(ControlFlow, ast.NodeVisitor):
    """Lowers one function. Use ``lower(...)``; the instance is single-use."""

    def __init__(
        self,
        src: Source,
        param_types: dict,
        is_kernel: bool,
        symbol: str,
        ret_annotation=None,
        adjoint_targets=None,
        ref_params=(),
    ):
        self.src = src
        self.is_kernel = is_kernel
        self.fn = ir.Function(symbol, is_kernel)
        self.param_types = param_types
        self.env: dict = {}
        self.blocks = [self.fn.body]
        self.loops: list = []  # (brk_name, cont_name) of enclosing loops
        self.captures: dict = {}
        self.tid_ndim = 0
        self.ret_type = ret_annotation
        self.loop_counter = 0
        self.undefined_after: dict = {}  # name -> why it is no longer visible
        self.loop_locals: dict = {}  # name -> _LoopLocal: assigned only in a loop, readable after it
        self.adjoint_targets = adjoint_targets  # in a @wp.func_grad body: forward param name -> index
        self.ref_params = tuple(ref_params)  # wp.ref[T] parameters: their final values are returned too
        self.literal_locals: set = set()  # ids of vars a name got from a bare literal (x = 0)
        self.local_storage: dict = {}  # id of a local array var (wp.zeros in here) -> its storage var
        self.node = src.tree

    # ----------------------------------------------------------------- infrastructure
    def error(self, msg, node=None, cls=WarpCodegenError):
        node = node if node is not None else self.node
        return cls(
            msg, self.src.name, self.src.file, self.src.file_line(node), self.src.col(node), self.src.line_text(node)
        )

    def through_call(self, e: WarpCodegenError, node) -> WarpCodegenError:
        """A callee's compile error passing through this call site: the site is added as a note."""
        e.add_note(
            location_note(
                self.src.name, self.src.file, self.src.file_line(node), self.src.col(node), self.src.line_text(node)
            )
        )
        return e

    def visit(self, node):
        prev = self.node
        if isinstance(node, (ast.stmt, ast.expr)):
            self.node = node
        try:
            return super().visit(node)
        except WarpCodegenError:
            raise
        except (TypeError, ValueError, KeyError, AttributeError) as e:
            raise self.error(str(e), node, WarpCodegenTypeError) from None
        finally:
            self.node = prev

    def generic_visit(self, node):
        raise self.error(
            f"'{type(node).__name__}' syntax is not supported in weft kernels and funcs", node, UnsupportedConstruct
        )

    @property
    def block(self) -> ir.Block:
        return self.blocks[-1]

    def emit(self, stmt):
        self.block.append(stmt)
        return stmt

    def loc(self, node=None) -> ir.Loc:
        node = node if node is not None else self.node
        line = self.src.file_line(node)
        self.fn.locs.append((self.src.file, line, self.src.line_text(node).strip()))
        return ir.Loc(len(self.fn.locs) - 1, line)

    def const(self, value, type=None, literal=False) -> ir.Var:
        """A constant. Untyped Python literals keep their exact Python value (so ``wp.float64(0.1)``
        is exactly 0.1); typed constants hold the value converted to their type."""
        if type is None:
            type, literal = _literal_type(value), True
        try:
            stored = value if literal else tr.convert_literal(value, type)
        except OverflowError:
            raise self.error(
                f"the constant {value!r} does not fit in {wt.type_repr(type)}", cls=WarpCodegenValueError
            ) from None
        return self.fn.new_var(type, const=stored, literal=literal)

    def call(self, callee, args, result_type, attr=None, node=None) -> ir.Var | None:
        res = self.fn.new_var(result_type) if result_type is not None else None
        side = intr.has_side_effect(callee)
        if side:
            self.fn.has_side_effects = True
        self.emit(ir.Call(res, callee, list(args), self.loc(node), attr))
        return res

    def call_builtin(self, builtin, args, node=None) -> ir.Var:
        try:
            ov, args, rtype = tr.choose_overload(builtin, args, lambda v, t: self.const(v, t))
        except TypeError as e:
            raise self.error(str(e), node, WarpCodegenTypeError) from None
        return self.call(ov, args, rtype, node=node)

    # ----------------------------------------------------------------- entry
    def lower(self) -> ir.Function:
        tree = self.src.tree
        if not isinstance(tree, ast.FunctionDef):
            raise self.error("expected a function definition", tree)
        for a in tree.args.args:
            t = self.param_types[a.arg]
            if self.is_kernel and isinstance(t, (tr.TileAnnotation, wt.TileType)):
                raise self.error(
                    f"kernel parameter '{a.arg}' is a {t!r}: tiles live inside kernels; pass an array and "
                    "wp.tile_load() it",
                    a,
                    WarpCodegenTypeError,
                )
            if isinstance(t, tr.FunctionValue):  # g: wp.Function names the function it was given
                self.env[a.arg] = Static(t.value)
                continue
            v = self.fn.new_var(t, label=a.arg)
            self.fn.params.append(ir.Param(a.arg, v))
            self.env[a.arg] = v
        if self.is_kernel and tree.returns is not None and self.kernel_return_annotation(tree) not in (None, type(None)):
            raise self.error(
                "Warp kernels cannot return values. Write results to output arguments, and omit the return "
                "annotation or use `-> None`.",
                tree.returns,
                WarpCodegenTypeError,
            )
        self.env["$ret"] = self.const(False, wt.bool)
        self.visit_body(tree.body)
        if not self.is_kernel:
            self.finish_return()
        self.fn.tid_ndim = self.tid_ndim
        self.fn.captures = self.captures
        return self.fn

    def kernel_return_annotation(self, tree):
        """A kernel's return annotation as evaluated when it was defined (a string one, under
        ``from __future__ import annotations``, evaluated now)."""
        ann = getattr(self.src.pyfunc, "__annotations__", {}).get("return", _MISSING)
        return self.static_eval(tree.returns) if ann is _MISSING or isinstance(ann, str) else ann

    def finish_return(self):
        rv = self.env.get("$retval")
        if rv is None and self.ret_type not in (None, type(None)):
            raise self.error(f"func '{self.src.name}' is annotated to return a value but does not return one")
        if rv is not None and self.ret_type is not None:
            annotated = tr.annotation_type(self.ret_type)
            if isinstance(rv.type, wt.FixedArrayType) and not isinstance(annotated, wt.FixedArrayType):
                shown = (
                    f"Array[{wt.type_repr(annotated.dtype)}]"  # Warp's words for an array type
                    if wt.is_array_like(annotated)
                    else _annotation_text(self.ret_type)
                )
                err = self.error(
                    f"The function `{self.src.name}` returns a fixed-size array whereas it has its return type "
                    f"annotated as `{shown}`.",
                    cls=WarpCodegenTypeError,
                )
                err.add_note(
                    f"  annotate it `wp.fixedarray(shape={rv.type.shape}, dtype=...)`, or leave the annotation out"
                )
                raise err
            if annotated is not None and not tr.is_generic(annotated) and annotated != rv.type:
                raise self.error(self.return_mismatch(annotated, rv.type), cls=WarpCodegenTypeError)
        if self.ref_params:  # copy-out: (result, final value of each wp.ref parameter)
            items = ([rv] if rv is not None else []) + [self.env[n] for n in self.ref_params]
            rv = self.call(intr.TUPLE_MAKE, items, wt.TupleType([x.type for x in items]))
        if rv is None:
            return
        self.fn.ret_type = rv.type
        self.fn.ret = rv

    def return_mismatch(self, annotated, returned) -> str:
        """Warp's words for a returned value that does not match the return annotation (shown as
        written: ``int``, ``tuple[int, int]``)."""
        head = f"The function `{self.src.name}` has its return type annotated as"
        shown = _annotation_text(self.ret_type)
        if isinstance(returned, wt.TupleType):
            n = len(returned.types)
            if not isinstance(annotated, wt.TupleType):
                return f"{head} `{shown}` but the code returns {n} values."
            if len(annotated.types) != n:
                return f"{head} a tuple of {len(annotated.types)} elements but the code returns {n} values."
            types = ", ".join(wt.type_repr(t) for t in returned.types)
            return f"{head} `{shown}` but the code returns a tuple with types `({types})`."
        return f"{head} `{shown}` but the code returns a value of type `{wt.type_repr(returned)}`."

    # ----------------------------------------------------------------- assignments
    def visit_Assign(self, node):
        if len(node.targets) != 1:
            raise self.error("chained assignment (a = b = c) is not supported", node, UnsupportedConstruct)
        target = node.targets[0]
        if isinstance(target, ast.Tuple):
            value = self.tuple_value(node.value, len(target.elts))
            for t, v in zip(target.elts, value.items):
                self.assign_to(t, v)
            return
        self.assign_to(target, self.argument(node.value))
        if isinstance(target, ast.Name):
            tile_views.note_assignment(self, target.id, node.value)

    def visit_AnnAssign(self, node):
        if node.value is None:
            raise self.error("a declaration without a value is not supported", node, UnsupportedConstruct)
        v = self.expr(node.value)
        t = tr.annotation_type(self.static_eval(node.annotation))
        if wt.is_scalar(t) and v.type != t:
            v = self.cast(v, t)
        self.assign_to(node.target, v)

    def tuple_value(self, value_node, n) -> StaticTuple:
        if isinstance(value_node, ast.Call) and self.static_value(value_node.func) is intr.tid:
            return StaticTuple(self.tid(n, value_node))
        if isinstance(value_node, ast.Tuple) and len(value_node.elts) == n:
            # element by element, so funcs bind to names too: ``f, g = mod.f, mod.g``
            return StaticTuple([self.argument(e) for e in value_node.elts])
        v = self.expr_or_tuple(value_node)
        if isinstance(v, ir.Var) and isinstance(v.type, wt.TupleType):
            v = StaticTuple([self.call(intr.TUPLE_GET, [v], t, attr=k) for k, t in enumerate(v.type.types)])
        if not isinstance(v, StaticTuple) or len(v.items) != n:
            got = len(v.items) if isinstance(v, StaticTuple) else 1
            raise self.error(f"cannot unpack {got} value(s) into {n} names", value_node)
        return v

    def assign_to(self, target, v):
        if isinstance(target, ast.Name):
            if isinstance(v, StaticTuple):
                v = self.tuple_var(v)
            if isinstance(v, ir.Var) and target.id in self.ref_params:
                v = self.ref_value(target.id, v, target, "assignment")
            if isinstance(v, ir.Var) and v.literal:
                v = self.const(v.const, v.type)  # a named literal takes its type (x = 0.1 is float32)
                self.literal_locals.add(v.id)
            self.env[target.id] = v
            self.undefined_after.pop(target.id, None)
        elif isinstance(target, (ast.Subscript, ast.Attribute)):
            self.assign_component(target, v)
        else:
            raise self.error(f"cannot assign to '{type(target).__name__}'", target, UnsupportedConstruct)

    def adjoint_slot(self, node):
        """For ``wp.adjoint[x]``: the forward parameter index of x, else None."""
        if not isinstance(node, ast.Subscript):
            return None
        base = node.value
        if not (isinstance(base, (ast.Name, ast.Attribute)) and self.static_value(base) is intr.adjoint):
            return None
        if self.adjoint_targets is None:
            raise self.error("wp.adjoint[...] can only be used inside a @wp.func_grad function", node)
        fields = []  # wp.adjoint[x.a.b]: the adjoint of a (nested) struct field of parameter x
        name = node.slice
        while isinstance(name, ast.Attribute):
            fields.insert(0, name.attr)
            name = name.value
        if not isinstance(name, ast.Name) or name.id not in self.adjoint_targets:
            raise self.error(
                f"wp.adjoint[...] takes a parameter of the forward func ({', '.join(self.adjoint_targets)}), "
                "or a field of a struct parameter",
                node,
            )
        t, path = self.param_types[name.id], ""
        for f in fields:
            if not composite.is_struct(t) or f not in t.vars:
                raise self.error(f"wp.adjoint[{ast.unparse(node.slice)}]: '{f}' is not a field of {wt.type_repr(t)}", node)
            t, path = t.vars[f], f"{path}.f_{f}"
        return (self.adjoint_targets[name.id], path), t

    def adjoint_value(self, v, t, node):
        if v.type != t:
            if v.literal and tr.literal_fits(v.const, t):
                return self.const(tr.convert_literal(v.const, t), t)
            raise self.error(
                f"the adjoint is {wt.type_repr(t)}, got {wt.type_repr(v.type)}", node, WarpCodegenTypeError
            )
        return v

    def assign_component(self, target, v):
        """``a[i] = v`` for arrays (a store); for composites, rebuild the value and assign it back
        to its own target (``m[i][j] = s`` becomes ``m = assign_copy(m, i, assign_copy(m[i], j, s))``)."""
        slot = self.adjoint_slot(target)
        if slot is not None:
            self.call(intr.ADJ_SET, [self.adjoint_value(v, slot[1], target)], None, attr=slot[0], node=target)
            return
        base = self.visit(target.value)
        if isinstance(target, ast.Subscript) and isinstance(base, ir.Var) and wt.is_array_like(base.type):
            arr, idx = self.array_and_index(target, base)
            self.emit_store(arr, idx, v, target)
            return
        if isinstance(target, ast.Attribute) and isinstance(base, ir.Var) and composite.is_struct(base.type):
            self.assign_to(target.value, composite.struct_set(self, base, target.attr, v, target))
            return
        if isinstance(target, ast.Subscript) and isinstance(base, ir.Var) and isinstance(base.type, wt.TileType):
            self.assign_to(target.value, tile_views.assign(self, base, target, v))
            if isinstance(target.value, ast.Name):
                tile_views.write_back(self, target.value.id, target)
            return
        if not (isinstance(base, ir.Var) and composite.is_composite(base.type)):
            raise self.error(f"cannot assign to '{ast.unparse(target)}'", target, UnsupportedConstruct)
        nodes = subscript_indices(target) if isinstance(target, ast.Subscript) else []
        if composite.has_slice(nodes):
            new = composite.write_slice(self, base, nodes, v, target)
        elif isinstance(target, ast.Subscript):
            new = composite.write(self, base, self.index_list(target), v, target)
        else:
            new = composite.write_attribute(self, base, target.attr, v, target)
            if new is None:
                raise self.error(
                    f"{base.type.__name__} has no attribute '{target.attr}'", target, WarpCodegenAttributeError
                )
        self.assign_to(target.value, new)

    def visit_Assert(self, node):
        """``assert cond[, "message"]``: checked in debug builds (a failure raises AssertionError
        naming the line, the process goes on), compiled out in release builds."""
        if node.msg is not None and not (isinstance(node.msg, ast.Constant) and isinstance(node.msg.value, str)):
            raise self.error("an assert message in a kernel must be a string literal", node.msg, UnsupportedConstruct)
        cond = self.to_bool(self.expr(node.test))
        self.call(intr.ASSERT, [cond], None, node=node)

    def visit_AugAssign(self, node):
        op = type(node.op)
        target = node.target
        slot = self.adjoint_slot(target)
        if slot is not None and op in (ast.Add, ast.Sub):
            v = self.adjoint_value(self.expr(node.value), slot[1], node)
            if op is ast.Sub:
                v = self.call_builtin(sb.neg, [v], node)
            self.call(intr.ADJ_ACCUM, [v], None, attr=slot[0], node=node)
            return
        base = self.visit(target.value) if isinstance(target, ast.Subscript) else None
        if isinstance(base, ir.Var) and wt.is_array_like(base.type):
            arr, idx = self.array_and_index(target, base)
            v = self.coerce_store_value(arr, self.expr(node.value), target)
            if op in _augops_atomic:
                self.call(intr.ATOMICS[_augops_atomic[op]], [arr] + idx + [v], arr.type.dtype, node=node)
                return
            old = self.call(intr.LOAD, [arr] + idx, arr.type.dtype, node=target)
            self.emit_store(arr, idx, self.binop(op, old, v, node), target)
            return
        if not isinstance(target, (ast.Name, ast.Subscript, ast.Attribute)):
            raise self.error("augmented assignment target must be a name or an element", target, UnsupportedConstruct)
        if isinstance(base, ir.Var) and isinstance(base.type, wt.TileType) and tile_views.is_view(base, target):
            raise self.error(
                "Compound assignment to a tile view (a slice or a row) is not supported; write t[...] = t[...] + v",
                node,
                WarpCodegenValueError,
            )
        with self.pinned(target) as target:  # `a[f(i)].x += v` calls f once
            cur = self.expr(target)
            if isinstance(base, ir.Var) and isinstance(base.type, wt.TileType) and composite.is_struct(cur.type):
                new = tile_calls.struct_element_binop(self, _binops[op], cur, self.expr(node.value), node)
            else:
                new = self.binop(op, cur, self.expr(node.value), node)
            if isinstance(target, ast.Name) and target.id in self.ref_params:
                new = self.ref_value(target.id, new, node, "augmented assignment")
            self.assign_to(target, new)
            if isinstance(target, ast.Name) and isinstance(new, ir.Var) and isinstance(new.type, wt.TileType):
                tile_views.write_back(self, target.id, node)  # `row += u` of a view updates its tile

    @contextlib.contextmanager
    def pinned(self, target):
        """``target`` with the index expressions of its subscripts evaluated once, now: an
        element read and then written back (``+=``, a ``wp.ref`` argument) is addressed by the
        same values, and an index with side effects runs once."""
        names = []

        def pin(e):
            if isinstance(e, (ast.Name, ast.Constant, ast.Slice)):
                return e
            name = f"$pin{len(self.env)}_{len(names)}"
            self.env[name] = self.expr(e)
            names.append(name)
            return ast.copy_location(ast.Name(id=name, ctx=ast.Load()), e)

        def walk(t):
            if isinstance(t, ast.Subscript) and self.static_value(t.value) is intr.adjoint:
                return t  # wp.adjoint[x.field] names a slot: nothing to evaluate
            if isinstance(t, ast.Subscript):
                sl = t.slice
                elts = [pin(e) for e in subscript_indices(t)]
                new_slice = ast.Tuple(elts=elts, ctx=ast.Load()) if isinstance(sl, ast.Tuple) else elts[0]
                return ast.copy_location(ast.Subscript(value=walk(t.value), slice=new_slice, ctx=t.ctx), t)
            if isinstance(t, ast.Attribute):
                return ast.copy_location(ast.Attribute(value=walk(t.value), attr=t.attr, ctx=t.ctx), t)
            return t

        try:
            yield walk(target)
        finally:
            for name in names:
                self.env.pop(name, None)

    def ref_value(self, name, v, node, what):
        """``v`` as the value of the ``wp.ref[T]`` parameter ``name``: of type T, a literal converted."""
        t = self.param_types[name]
        if v.type == t:
            return v
        if v.literal and tr.literal_fits(v.const, t):
            return self.const(tr.convert_literal(v.const, t), t)
        raise self.error(
            f"{what} to ref parameter '{name}' gives {wt.type_repr(v.type)}, but '{name}' is a "
            f"wp.ref[{wt.type_repr(t)}]; cast the value, e.g. {wt.type_repr(t)}(...)",
            node,
            WarpCodegenTypeError,
        )

    def emit_store(self, arr, idx, v, node):
        v = self.coerce_store_value(arr, v, node)
        self.call(intr.STORE, [arr] + idx + [v], None, node=node)

    def coerce_store_value(self, arr, v, node):
        dt = arr.type.dtype
        if v.type == dt:
            return v
        if v.literal and tr.literal_fits(v.const, dt):
            return self.const(tr.convert_literal(v.const, dt), dt)
        raise self.error(
            f"cannot store a {wt.type_repr(v.type)} value into an array of {wt.type_repr(dt)}; cast it, e.g. {wt.type_repr(dt)}(x)",
            node,
            WarpCodegenTypeError,
        )

    def visit_Expr(self, node):
        if isinstance(node.value, ast.Constant) and isinstance(node.value.value, str):
            return  # docstring
        self.expr_or_tuple(node.value)

    # ----------------------------------------------------------------- expressions
    def expr(self, node) -> ir.Var:
        v = self.expr_or_tuple(node)
        if isinstance(v, StaticTuple):
            raise self.error("a tuple cannot be used as a single value here", node, UnsupportedConstruct)
        if not isinstance(v, ir.Var):
            raise self.error(f"'{ast.unparse(node)}' is not a value that can be used in a kernel ({v!r})", node)
        return v

    def expr_or_tuple(self, node):
        return self.visit(node)

    def visit_Constant(self, node):
        if isinstance(node.value, (bool, int, float)):
            return self.const(node.value)
        if isinstance(node.value, str):
            return node.value
        raise self.error(f"constant {node.value!r} is not supported in kernels", node, UnsupportedConstruct)

    def visit_Tuple(self, node):
        return StaticTuple([self.expr(e) for e in node.elts])

    def visit_Name(self, node):
        if node.id in self.env:
            return self.env[node.id]
        if node.id in self.undefined_after:
            value = self.read_loop_local(node.id)
            if value is not None:
                return value
            raise self.error(self.undefined_after[node.id], node, WarpCodegenKeyError)
        value = self.src.lookup(node.id)
        if Source.is_missing(value):
            raise self.error(
                f"Referencing undefined symbol: {node.id} (no local, global or builtin has this name)",
                node,
                WarpCodegenKeyError,
            )
        result = self.from_python(value, node.id, node)
        alias = isinstance(result, Static) and _is_function_alias(value, node.id)
        if isinstance(result, ir.Var) or alias:
            # A closure or module global value baked in as a constant, or a name bound to a func or
            # builtin under another name (``TARGET = my_func``): launches check it has not changed
            # since (and rebuild if it has). A func's own name changes only by a redefinition,
            # which every kernel sees (module.definitions_changed).
            if node.id in self.src.closure:
                self.fn.global_captures.append((self.src.cells, node.id, value))
            elif node.id in self.src.globals:
                self.fn.global_captures.append((self.src.globals, node.id, value))
        return result

    def from_python(self, value, name, node):
        """A global/closure value used in a kernel: numbers become constants, the rest stays static."""
        if isinstance(value, (bool, int, float)) and not isinstance(value, type):
            self.captures[name] = value  # an untyped literal: wp.vec3d(wp.pi) keeps double precision
            return self.const(value)
        if isinstance(value, wt.scalar_base):
            self.captures[name] = value.value
            return self.const(value.value, type(value))
        if composite.is_composite(type(value)):
            self.captures[name] = tuple(value._flat())
            return self.fn.new_var(type(value), const=tuple(value._flat()))
        if getattr(type(value), "_weft_struct_instance", False):
            return self.struct_constant(value, node)
        return Static(value)

    def struct_constant(self, value, node):
        """A struct instance known at build time (a global, ``wp.static(...)``): built in the
        kernel from its field values. Arrays cannot be baked in: they are kernel arguments."""
        t = value._struct
        fields = {}
        for field, ft in t.vars.items():
            v = getattr(value, field)
            if wt.is_array_like(ft):
                if v is not None:
                    raise self.error(
                        f"struct {t.key} holds an array in field '{field}', so it cannot be a build-time constant; "
                        "pass the struct to the kernel as an argument",
                        node,
                    )
                continue
            fields[field] = self.from_python(v, field, node) if not wt.is_scalar(ft) else self.const(v, ft)
        return composite.struct_construct(self, t, [], fields, node)

    def visit_Attribute(self, node):
        if node.attr in ("value", "name") and isinstance(node.value, ast.Attribute):
            member = self.enum_member(node.value)  # MyEnum.B.value: the member's value, built in
            if member is not None:
                return self.from_python(getattr(member, node.attr), node.attr, node)
        base = self.visit(node.value)
        if isinstance(base, Static):
            try:
                return self.from_python(getattr(base.value, node.attr), node.attr, node)
            except AttributeError:
                found = _type_attribute(base.value, node.attr)
                if found is not _MISSING:
                    return self.from_python(found, node.attr, node)
                raise self.error(
                    f"`{node.attr}` is not an attribute of '{ast.unparse(node.value)}'", node, WarpCodegenAttributeError
                ) from None
        if isinstance(base, ir.Var) and composite.is_struct(base.type):
            return composite.struct_get(self, base, node.attr, node)
        if isinstance(base, ir.Var) and composite.is_composite(base.type):
            v = composite.read_attribute(self, base, node.attr, node)
            if v is not None:
                return v
            found = _type_attribute(base.type, node.attr)
            if found is not _MISSING:
                return self.from_python(found, node.attr, node)
            raise self.error(f"{base.type.__name__} has no attribute '{node.attr}'", node, WarpCodegenAttributeError)
        if isinstance(base, ir.Var) and wt.is_array_like(base.type):
            if wt.is_fabric(base.type):  # one dimension of elements (an array of arrays too), as in Warp
                if node.attr == "size":
                    return self.call(intr.FABRIC_SIZE, [base], wt.uint64, node=node)
                if node.attr == "shape":
                    return ShapeTuple([self.call(intr.SHAPE, [base], wt.int32, attr=0)])
            if node.attr == "shape":
                return ShapeTuple([self.call(intr.SHAPE, [base], wt.int32, attr=d) for d in range(base.type.ndim)])
            if node.attr == "ndim":
                return self.const(base.type.ndim, wt.int32)
            if node.attr == "ptr" and isinstance(base.type, wt.ArrayType):
                return self.call(intr.ARRAY_PTR, [base], wt.uint64, node=node)
            if node.attr == "dtype":
                return Static(base.type.dtype)
        if isinstance(base, ir.Var) and wt.is_scalar(base.type) and node.attr in ("dtype", "length"):
            return self.from_python(_type_attribute(base.type, node.attr), node.attr, node)
        raise self.error(f"unknown attribute '{node.attr}'", node, WarpCodegenAttributeError)

    def enum_member(self, node):
        """The ``enum.Enum`` member a global attribute chain names (``MyEnum.B``), else None."""
        try:
            value = self.static_eval(node)
        except WarpCodegenError:
            return None
        return value if isinstance(value, enum.Enum) else None

    def static_value(self, node):
        """The Python object a name / attribute chain refers to, or None if it is a local value."""
        if isinstance(node, ast.Name) and node.id in self.env:
            v = self.env[node.id]  # a local naming a function (g: wp.Function, f = some_func)
            return v.value if isinstance(v, Static) else None
        if isinstance(node, (ast.Name, ast.Attribute)):
            v = self.visit(node)
            return v.value if isinstance(v, Static) else None
        return None

    def static_eval(self, node):
        """Evaluate an expression in Python at build time (wp.static, annotations)."""
        code = compile(ast.Expression(body=node), self.src.file, "eval")
        scope = dict(self.src.globals)
        scope.update(self.src.closure)
        for k, v in self.env.items():
            if isinstance(v, ir.Var) and v.is_const and not k.startswith("$"):
                scope[k] = v.const
            elif isinstance(v, ir.Var) and isinstance(v.type, wt.TupleType):
                scope[k] = tuple(v.type.types)  # what build-time code may ask of it: len(t)
            elif isinstance(v, ir.Var) and composite.is_composite(v.type):
                scope[k] = _BuildTimeShape(v.type)  # len(v), v.dtype... of a runtime vector
            elif isinstance(v, ir.Var) and isinstance(v.type, wt.TileType):
                scope[k] = _BuildTimeTile(v.type)  # len(t), t.shape, t.dtype of a tile
        try:
            return eval(code, scope)
        except Exception as e:
            raise self.error(
                f"Error evaluating static expression: {e}. Make sure all variables used in the static expression "
                f"are constant. (weft evaluates '{ast.unparse(node)}' when it builds the kernel)",
                node,
                WarpCodegenValueError,
            ) from None

    def visit_BinOp(self, node):
        return self.binop(type(node.op), self.expr(node.left), self.expr(node.right), node)

    def binop(self, op, a, b, node):
        if op not in _binops:
            raise self.error(f"operator {op.__name__} is not supported", node, UnsupportedConstruct)
        if op is ast.Pow and wt.is_int(a.type) and not a.literal and b.literal and isinstance(b.const, float):
            raise self.error("integer ** float: cast the base to float first", node, WarpCodegenTypeError)
        user = self.user_operator(_binops[op].name, [a, b], node)
        if user is None and (isinstance(a.type, wt.TileType) or isinstance(b.type, wt.TileType)):
            return tile_calls.binop(self, _binops[op], a, b, node)
        return user if user is not None else self.call_builtin(_binops[op], [a, b], node)

    def user_operator(self, name, args, node):
        """Warp's operator overloading: a user func named like the operator's builtin (``add`` for
        ``+``, ``neg`` for unary ``-``) in the kernel's globals or closure, called when one of its
        overloads takes these arguments (``a + b`` of two structs); else None (the builtin)."""
        target = self.src.closure.get(name, self.src.globals.get(name))
        if getattr(target, "_weft_kind", None) != "func" or not any(isinstance(a, ir.Var) for a in args):
            return None
        try:
            inst, call_args = target.specialize(list(args), lambda v, t: self.const(v, t))
        except TypeError:
            return None  # no overload for these types: the builtin operator
        if inst.ref_params or inst.ret_type is None:
            return None
        if inst not in self.fn.callees:
            self.fn.callees.append(inst)
        if inst.has_side_effects:
            self.fn.has_side_effects = True
        return self.call(inst, [x for x in call_args if not isinstance(x, Static)], inst.ret_type, node=node)

    def visit_UnaryOp(self, node):
        v = self.expr(node.operand)
        if isinstance(node.op, ast.Not):
            if wt.is_array_like(v.type) or v.is_const:
                v = self.to_bool(v)  # an array is true when it holds elements
            return self.call_builtin(sb.logical_not, [v], node)
        if v.literal and isinstance(node.op, ast.USub):
            return self.const(-v.const)
        user = self.user_operator(_unops[type(node.op)].name, [v], node)
        if user is None and isinstance(v.type, wt.TileType):
            return tile_calls.tile_map(self, _unops[type(node.op)], [v], node)
        return user if user is not None else self.call_builtin(_unops[type(node.op)], [v], node)

    def visit_BoolOp(self, node):
        """``a and b`` / ``a or b`` short-circuit like Python: b is evaluated only when needed
        (``i < n and x[i] > 0`` never reads x[n])."""
        is_and = isinstance(node.op, ast.And)

        def chain(values):
            first = self.to_bool(self.expr(values[0]))
            if len(values) == 1:
                return first
            if first.is_const:
                return chain(values[1:]) if bool(first.const) == is_and else first
            rest = lambda: chain(values[1:])
            short = lambda: self.const(not is_and, wt.bool)
            a, b = self.emit_if(first, rest if is_and else short, short if is_and else rest)
            return self.merge_values(first, a, b)

        return chain(node.values)

    def visit_Compare(self, node):
        left = self.expr(node.left)
        result = None
        for op, right_node in zip(node.ops, node.comparators):
            if type(op) not in _cmpops:
                raise self.error(f"comparison '{type(op).__name__}' is not supported", node, UnsupportedConstruct)
            right = self.expr(right_node)
            c = self.call_builtin(_cmpops[type(op)], [left, right], node)
            result = c if result is None else self.call(intr.LOGICAL_AND, [result, c], wt.bool)
            left = right
        return result

    def visit_Subscript(self, node):
        slot = self.adjoint_slot(node)
        if slot is not None:
            return self.call(intr.ADJ_READ, [], slot[1], attr=slot[0], node=node)
        base = self.visit(node.value)
        if isinstance(base, StaticTuple):
            k = self.expr(node.slice)
            if not k.is_const:
                raise self.error("a tuple can only be indexed with a constant", node)
            if isinstance(base, ShapeTuple) and len(base.items) <= int(k.const) < wt.MAX_DIMS:
                return self.const(0, wt.int32)
            return base.items[int(k.const)]
        if isinstance(base, ir.Var) and isinstance(base.type, wt.TupleType):
            n = len(base.type.types)
            j = self.constant_index(node.slice)
            if j is None or not -n <= j < n:
                raise self.error(
                    f"a tuple of {n} values is indexed with a constant in [-{n}, {n})", node, WarpCodegenKeyError
                )
            j %= n
            return self.call(intr.TUPLE_GET, [base], base.type.types[j], attr=j, node=node)
        if isinstance(base, ir.Var) and isinstance(base.type, wt.TileType):
            return tile_views.subscript(self, base, node)
        if isinstance(base, ir.Var) and composite.is_composite(base.type):
            nodes = subscript_indices(node)
            if composite.has_slice(nodes):
                return composite.read_slice(self, base, nodes, node)
            return composite.read(self, base, self.index_list(node), node)
        nodes = subscript_indices(node)
        if isinstance(base, ir.Var) and isinstance(base.type, wt.ArrayType) and composite.has_slice(nodes):
            return self.array_slice(base, nodes, node)
        arr, idx = self.array_and_index(node, base, partial=True)
        if len(idx) < arr.type.ndim and wt.is_fabric(arr.type):
            return self.fabric_row(arr, idx[0], node)
        if len(idx) < arr.type.ndim:
            kind, op = (
                (wt.IndexedArrayType, intr.INDEXED_VIEW)
                if isinstance(arr.type, wt.IndexedArrayType)
                else (type(arr.type), intr.ARRAY_VIEW)  # a view of a local array is local too
            )
            return self.call(op, [arr] + idx, kind(arr.type.dtype, arr.type.ndim - len(idx)), node=node)
        return self.call(intr.LOAD, [arr] + idx, arr.type.dtype, node=node)

    def constant_index(self, node):
        """The value of an integer index known at build time (``t[i]`` in an unrolled loop,
        ``t[-1 - i]``), else None."""
        k = self.expr(node)
        if k.is_const and wt.is_int(k.type):
            return int(k.const)
        try:
            value = self.static_eval(node)
        except WarpCodegenError:
            return None
        return int(value) if isinstance(value, int) and not isinstance(value, bool) else None

    def tile_view_parent(self, value_node):
        """The name of the tile ``value_node`` takes a view of, or None (``tile_views``)."""
        return tile_views.view_parent(self, value_node)

    def index_list(self, node) -> list:
        nodes = subscript_indices(node)
        if any(isinstance(i, ast.Slice) for i in nodes):
            raise self.error("slices are not supported in kernels; index each element", node, UnsupportedConstruct)
        return [self.expr(i) for i in nodes]

    def array_and_index(self, node, base=None, partial=False):
        """The array and index values of ``a[i, j]``; ``partial`` allows fewer indices than
        dimensions (the subarray ``a[i]`` of a 2-D array)."""
        base = base if base is not None else self.expr(node.value)
        if not isinstance(base, ir.Var) or not wt.is_array_like(base.type):
            raise self.error(f"'{ast.unparse(node.value)}' cannot be indexed", node, WarpCodegenTypeError)
        idx_nodes = subscript_indices(node)
        if any(isinstance(i, ast.Slice) for i in idx_nodes):
            raise self.error(
                "slicing arrays inside kernels is not supported; index each element", node, UnsupportedConstruct
            )
        idx = [self.expr(i) for i in idx_nodes]
        if len(idx) > base.type.ndim or (len(idx) < base.type.ndim and not partial):
            raise self.error(
                f"Incorrect number of indices specified for array indexing: array '{ast.unparse(node.value)}' has "
                f"{base.type.ndim} dimension(s) but is indexed with {len(idx)}",
                node,
                WarpCodegenTypeError,
            )
        for i in idx:
            if not wt.is_int(i.type):
                raise self.error(
                    f"array indices must be integers, got {wt.type_repr(i.type)}", node, WarpCodegenTypeError
                )
        if isinstance(base.type, wt.IndexedArrayType) and len(idx) == base.type.ndim:
            return self.indexed_element(base, idx, node)
        if wt.is_fabric(base.type) and len(idx) == base.type.ndim:
            return self.fabric_element(base, idx, node)
        return base, idx

    def array_slice(self, arr, nodes, node):
        """``a[i, 1:n:2]`` of an array: a subarray sharing its memory and gradient, integer
        entries dropping their dimension, slices with Python's rules (``native/array.h``)."""
        if len(nodes) > arr.type.ndim:
            raise self.error(
                f"array '{ast.unparse(node.value)}' has {arr.type.ndim} dimension(s) but is indexed with {len(nodes)}",
                node,
                WarpCodegenTypeError,
            )
        zero = self.const(0, wt.int64)
        attr, args = [], [arr]
        for n in nodes:
            if not isinstance(n, ast.Slice):
                i = self.expr(n)
                if not wt.is_int(i.type):
                    raise self.error(f"array indices must be integers, got {wt.type_repr(i.type)}", n, WarpCodegenTypeError)
                attr.append((0, 0))
                args += [i, zero, zero]
                continue
            bounds = []
            for part in (n.lower, n.upper, n.step):
                v = self.expr(part) if part is not None else None
                if v is not None and not wt.is_int(v.type):
                    raise self.error(f"slice bounds must be integers, got {wt.type_repr(v.type)}", part, WarpCodegenTypeError)
                bounds.append(v)
            start, stop, step = bounds
            if step is not None and step.is_const and int(step.const) == 0:
                raise self.error("Slice step cannot be zero", n, WarpCodegenValueError)
            attr.append((1, (start is not None) | (stop is not None) << 1))
            args += [start or zero, stop or zero, step or self.const(1, wt.int64)]
        ndim = arr.type.ndim - sum(1 for kind, _ in attr if kind == 0)
        return self.call(intr.ARRAY_SLICE, args, type(arr.type)(arr.type.dtype, ndim), attr=tuple(attr), node=node)

    def fabric_element(self, arr, idx, node):
        """An element of a Fabric array as ``(array, indices)`` of an ordinary array: a one-element
        view of ``a[i]`` and index 0, or for an array of arrays ``a[i, j]``, inner array ``i`` and
        ``j`` (``native/fabric.h``)."""
        if arr.type.ndim == 2:
            return self.fabric_row(arr, idx[0], node), [idx[1]]
        view = self.call(intr.FABRIC_ELEMENT, [arr, idx[0]], wt.ArrayType(arr.type.dtype, 1), node=node)
        return view, [self.const(0, wt.int32)]

    def fabric_row(self, arr, i, node):
        """``a[i]`` of a Fabric array of arrays: inner array ``i``, an ordinary 1-D array."""
        return self.call(intr.FABRIC_ROW, [arr, i], wt.ArrayType(arr.type.dtype, 1), node=node)

    def indexed_element(self, arr, idx, node):
        """An element of an indexed array as ``(data array, data indices)``: each index checked
        against the indexed shape and mapped through its dimension's index buffer."""
        data = self.call(intr.INDEXED_DATA, [arr], wt.ArrayType(arr.type.dtype, arr.type.ndim), node=node)
        mapped = [self.call(intr.INDEXED_INDEX, [arr, i], wt.int32, attr=d, node=node) for d, i in enumerate(idx)]
        return data, mapped

    # ----------------------------------------------------------------- calls
    def visit_Call(self, node):
        if any(isinstance(a, ast.Starred) for a in node.args):  # f(*v): spread, then an ordinary call
            call, names = starred.spread(self, node)
            try:
                return self.visit_Call(call)
            finally:
                for name in names:
                    self.env.pop(name, None)
        fn = self.builtin_by_bare_name(node.func)
        if fn is None:
            try:
                fn = self.visit(node.func)
            except WarpCodegenAttributeError as e:
                missing = isinstance(node.func, ast.Attribute) and e.bare_msg.startswith(f"`{node.func.attr}`")
                if not missing:
                    raise
                raise self.error(
                    f"Could not find function {ast.unparse(node.func)} as a builtin or a user func "
                    f"({e.bare_msg}; a user function needs the @wp.func decorator)",
                    node,
                    WarpCodegenAttributeError,
                ) from None
        if not isinstance(fn, Static):
            raise self.error(f"'{ast.unparse(node.func)}' is not callable in a kernel", node, WarpCodegenTypeError)
        target = fn.value
        handler = intr.python_builtin_map.get(id(target))
        if handler is not None and handler[0] is target:
            target = handler[1]
        special = special_calls.handler_for(target)
        if special is not None:
            return special(self, node)
        if wt.is_scalar(target):
            return self.cast_call(target, node)
        if composite.is_composite(target):
            return composite.construct(self, target, [self.expr(a) for a in node.args], node)
        if composite.is_struct(target):
            kwargs = {k.arg: self.expr(k.value) for k in node.keywords}
            return composite.struct_construct(self, target, [self.expr(a) for a in node.args], kwargs, node)
        if isinstance(target, reg.Builtin):
            return self.call_builtin(target, self.builtin_args(target, node), node)
        if getattr(target, "_weft_kind", None) == "func":
            return self.call_func(target, node)
        if isinstance(target, intr.GradOf):
            return self.call_grad(target.target, node)
        if getattr(target, "_weft_kind", None) == "kernel":
            raise self.error("kernels cannot be called from kernels; make it a @wp.func", node)
        raise self.error(
            f"'{ast.unparse(node.func)}' ({target!r}) cannot be called in a kernel", node, WarpCodegenTypeError
        )

    def builtin_by_bare_name(self, func_node):
        """As in Warp, a call may name a builtin or a value type without the ``wp.`` prefix
        (``dot(a, b)``, ``vec3(...)``) when no local or global has that name."""
        if not isinstance(func_node, ast.Name) or func_node.id in self.env:
            return None
        if not Source.is_missing(self.src.lookup(func_node.id)):
            return None
        name = func_node.id
        builtin = reg.registry.get(name)
        if builtin is not None and builtin.group != "internal":
            return Static(builtin)
        value = getattr(wt, name, None) or getattr(vt, name, None)
        if wt.is_scalar(value) or composite.is_composite(value):
            return Static(value)
        return None

    def builtin_args(self, builtin, node):
        """A builtin call's arguments: positional, keywords by parameter name, then the defaults of
        the trailing parameters left out."""
        names = [n for n, _ in builtin.overloads[0].params]
        return self.with_defaults(builtin, self.call_args(node, names, builtin.defaults))

    def with_defaults(self, builtin, args):
        """``args`` followed by the defaults of the builtin's trailing parameters they leave out."""
        names = [n for n, _ in builtin.overloads[0].params]
        return args + [self.const(builtin.defaults[n]) for n in names[len(args) :] if n in builtin.defaults]

    def call_args(self, node, names, defaults=None):
        """Positional arguments, then keywords placed by parameter name; a parameter skipped
        by keywords takes its default (``defaults``) or is an error."""
        args = [self.argument(a) for a in node.args]
        if node.keywords:
            by_name = {k.arg: self.argument(k.value) for k in node.keywords}
            for n in names[len(args) :]:
                if not by_name:
                    break
                if n in by_name:
                    args.append(by_name.pop(n))
                elif defaults is not None and n in defaults:
                    d = defaults[n]
                    args.append(Static(d) if tr.is_function_target(d) else self.const(d))
                else:
                    raise self.error(f"missing argument '{n}' before keyword argument(s) {', '.join(by_name)}", node)
            if by_name:
                raise self.error(f"unexpected keyword argument(s): {', '.join(by_name)}", node)
        return args

    def argument(self, node):
        """A call argument: a value, or a func or builtin passed to a ``wp.Function`` parameter."""
        v = self.expr_or_tuple(node)
        if isinstance(v, Static) and (tr.is_function_target(v.value) or isinstance(v.value, intr.GradOf)):
            return v  # a function, or wp.grad(f), bound to a local or passed on
        if isinstance(v, Static) and special_calls.handler_for(v.value) is not None:
            name = getattr(v.value, "__name__", ast.unparse(node))
            raise self.error(
                f"unsupported built-in function '{name}' as a value: it is lowered specially where it is called, "
                "so it can be called but not passed or bound to a name",
                node,
                WarpCodegenTypeError,
            )
        if isinstance(v, StaticTuple):
            return self.tuple_var(v)
        return self.expr(node) if not isinstance(v, ir.Var) else v

    def tuple_var(self, st: StaticTuple) -> ir.Var:
        """A tuple as one value (``t = (1, 2.0, v)``, a tuple argument): untyped literals take
        their own type, as a named literal does."""
        items = [self.const(x.const, x.type) if x.literal else x for x in st.items]
        return self.call(intr.TUPLE_MAKE, items, wt.TupleType([x.type for x in items]))

    def cast(self, v, t):
        if v.type == t:
            return v
        if v.is_const and wt.is_scalar(v.type):
            return self.const(tr.convert_literal(v.const, t), t)
        return self.call(intr.CAST, [v], t, attr=t)

    def cast_call(self, t, node):
        args = [self.expr(a) for a in node.args]
        if len(args) != 1:
            raise self.error(f"{t.cname}() takes exactly one argument", node)
        if not wt.is_scalar(args[0].type):
            raise self.error(f"cannot convert {wt.type_repr(args[0].type)} to {t.cname}", node, WarpCodegenTypeError)
        v = self.cast(args[0], t)
        return self.fn.new_var(t, const=v.const) if v.is_const else v

    def call_func(self, func, node):
        args = self.call_args(node, func.param_names(), func.param_defaults())
        try:
            inst, args = func.specialize(args, lambda v, t: self.const(v, t))
        except WarpCodegenError as e:
            raise self.through_call(e, node) from None
        except TypeError as e:
            raise self.error(str(e), node, WarpCodegenTypeError) from None
        if inst not in self.fn.callees:
            self.fn.callees.append(inst)
        if inst.has_side_effects:
            self.fn.has_side_effects = True
        if inst.ref_params:
            return self.call_with_references(func, inst, args, node)
        args = [a for a in args if not isinstance(a, Static)]  # wp.Function arguments are built in
        if inst.ret_type is None:
            return self.call(inst, args, None, node=node)
        result = self.call(inst, args, inst.ret_type, node=node)
        if isinstance(inst.ret_type, wt.FixedArrayType):  # a local array the func made: now ours
            return self.local_array_over(result, node)
        return result

    def local_array_over(self, storage, node):
        """The array over a local storage var (``wp.zeros`` in a kernel, or a func's result)."""
        t = storage.type
        view = self.call(intr.LOCAL_VIEW, [storage], wt.LocalArrayType(t.dtype, t.ndim), node=node)
        self.local_storage[view.id] = storage
        return view

    def call_grad(self, target, node):
        """``wp.grad(f)(args)``: ``f``'s adjoint with a unit seed, giving the gradient of its scalar
        result with respect to each argument (a tuple for several)."""
        if isinstance(target, reg.Builtin):
            args = self.call_args(node, [n for n, _ in target.overloads[0].params])
            try:
                callee, args, rtype = tr.choose_overload(target, args, lambda v, t: self.const(v, t))
            except TypeError as e:
                raise self.error(str(e), node, WarpCodegenTypeError) from None
            differentiable = callee.differentiable
        else:
            args = self.call_args(node, target.param_names(), target.param_defaults())
            try:
                callee, args = target.specialize(args, lambda v, t: self.const(v, t))
            except WarpCodegenError as e:
                raise self.through_call(e, node) from None
            except TypeError as e:
                raise self.error(str(e), node, WarpCodegenTypeError) from None
            if callee.ref_params:
                raise self.error("wp.grad() of a func with wp.ref parameters is not supported", node)
            args = [a for a in args if not isinstance(a, Static)]  # wp.Function arguments are built in
            rtype, differentiable = callee.ret_type, callee.differentiable
            _require_adjoints(callee)  # rendered even in a build without backward passes
            if callee not in self.fn.callees:
                self.fn.callees.append(callee)
        if not (differentiable and wt.is_float(rtype)):
            raise self.error(
                f"wp.grad() needs a differentiable function with a float result, got {wt.type_repr(rtype)}",
                node,
                WarpCodegenTypeError,
            )
        args = [self.const(a.const, a.type) if a.literal else a for a in args]
        types_ = [a.type for a in args]
        result = types_[0] if len(types_) == 1 else wt.TupleType(types_)
        return self.call(intr.GRAD_CALL, args, result, attr=(callee, rtype), node=node)

    def call_with_references(self, func, inst, args, node):
        """A call of a func with ``wp.ref[T]`` parameters: it returns its result followed by the
        final value of each reference parameter, which is stored back where the argument lives
        (a local, an array element, a struct field or a vector component)."""
        names = func.param_names()
        by_name = dict(zip(names, node.args))
        by_name.update({k.arg: k.value for k in node.keywords})
        targets = []
        for k in inst.ref_params:
            arg = by_name.get(names[k])
            if getattr(inst.arg_types[k], "is_tile_value", False) and (arg is None or not self.is_addressable(arg)):
                targets.append(None)  # a tile the func updates in place, passed as a temporary
                continue
            if arg is None or not self.is_addressable(arg):
                shown = ast.unparse(arg) if arg is not None else "its default value"
                raise self.error(
                    f"Cannot pass {shown} to the wp.ref[{wt.type_repr(inst.arg_types[k])}] parameter "
                    f"'{names[k]}' of '{func.key}': a reference needs a variable, an array element, a struct "
                    "field or a vector component to write to; assign the value to a variable first",
                    node,
                )
            if args[k].type != inst.arg_types[k]:
                raise self.error(
                    f"the wp.ref[{wt.type_repr(inst.arg_types[k])}] parameter '{names[k]}' of '{func.key}' "
                    f"needs a {wt.type_repr(inst.arg_types[k])} to write to, got {wt.type_repr(args[k].type)}",
                    node,
                    WarpCodegenTypeError,
                )
            targets.append(arg)
        args = [a for a in args if not isinstance(a, Static)]
        with contextlib.ExitStack() as stack:
            targets = [stack.enter_context(self.pinned(t)) if t is not None else None for t in targets]  # indices evaluated once
            result = self.call(inst, args, inst.ret_type, node=node)
            items = [self.call(intr.TUPLE_GET, [result], t, attr=j, node=node) for j, t in enumerate(result.type.types)]
            value = items[0] if inst.value_ret_type is not None else None
            for target, v in zip(targets, items[len(items) - len(targets) :]):
                if target is not None:
                    self.assign_to(target, v)
        return value

    def is_addressable(self, node) -> bool:
        """Whether an argument names storage a reference can write back to: a local variable, or
        an element, field or component reached from a local or an array."""
        if isinstance(node, ast.Name):
            return isinstance(self.env.get(node.id), ir.Var)
        if isinstance(node, ast.Attribute):
            return self.is_addressable(node.value)
        if isinstance(node, ast.Subscript):
            base = node.value
            if isinstance(base, ast.Name) and isinstance(self.env.get(base.id), ir.Var):
                return True
            return self.is_addressable(base)
        return False

    def tid(self, n, node):
        if self.tid_ndim and self.tid_ndim != n:
            raise self.error(f"wp.tid() is unpacked into {n} values here but {self.tid_ndim} elsewhere", node)
        if not self.is_kernel:
            raise self.error("wp.tid() can only be called in a kernel; pass the index to the func", node)
        self.tid_ndim = n
        return [self.call(intr.TID, [], wt.int32, attr=(d, n)) for d in range(n)]


def lower_function(
    src: Source, param_types: dict, is_kernel: bool, symbol: str, ret_annotation=None, adjoint_targets=None, ref_params=()
):
    """Lower ``src`` with the given parameter types. Returns ``(ir.Function, Lowerer)``."""
    lw = Lowerer(src, param_types, is_kernel, symbol, ret_annotation, adjoint_targets, ref_params)
    fn = lw.lower()
    ir.verify(fn)
    return fn, lw


def _annotation_text(ann) -> str:
    """An annotation as its author wrote it: ``int``, ``wp.int16`` as ``int16``, ``tuple[int, float]``."""
    if ann in (int, float, bool):
        return ann.__name__
    if typing.get_origin(ann) is tuple:
        return "tuple[" + ", ".join("..." if a is Ellipsis else _annotation_text(a) for a in typing.get_args(ann)) + "]"
    t = tr.annotation_type(ann)
    return wt.type_repr(t) if t is not None else str(ann)
