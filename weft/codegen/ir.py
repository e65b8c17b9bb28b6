"""The weft IR: typed SSA values in structured blocks.

Contract:
  - A ``Var`` is a typed value. Ordinary vars are assigned exactly once (SSA). ``mutable`` vars
    are the only exception: loop-carried state, written by ``Assign`` and read by ``Read``.
  - A ``Block`` is a list of statements: ``Call`` (a builtin overload or a user func),
    ``Assign``/``Read`` (mutable vars), ``If``, ``Loop``.
  - Control flow is structured and jump-free: the frontend turns break/continue/return into
    flag variables and guarded blocks, so every pass can walk blocks recursively.
  - Merges after an ``If`` are explicit ``where`` calls (phis), so autodiff needs no special case.
Nothing here knows C++; ``str(fn)`` prints a stable text form used by golden tests.
"""

from __future__ import annotations

import dataclasses
from typing import Optional, Union

from .. import types as wt
from ..builtins.registry import Overload


class Var:
    """A typed value. ``const`` holds the Python value of a compile-time constant."""

    __slots__ = ("id", "type", "const", "label", "mutable", "literal")

    def __init__(self, id: int, type, const=None, label: str = "", mutable: bool = False, literal: bool = False):
        self.id = id
        self.type = type
        self.const = const
        self.label = label
        self.mutable = mutable
        self.literal = literal  # an untyped Python literal: may adapt to the other operand's type

    @property
    def is_const(self) -> bool:
        return self.const is not None

    def __repr__(self):
        return f"%{self.id}"


@dataclasses.dataclass
class Loc:
    """A source location: index into the function's location table (for runtime errors) and line."""

    id: int
    line: int


class FuncCallee:
    """What a call of a user ``@wp.func`` names: the func specialised for its argument types
    (``kernel.FuncInstance`` derives from this). Attributes: ``ir`` (its ``Function``), ``symbol``
    (its C++ name), ``differentiable``, ``has_side_effects`` and ``has_replay_variant``.
    ``ref_params``: indices of its ``wp.ref[T]`` parameters; when there are any, it returns a
    tuple of its result (``value_ret_type``, None for none) and their final values.
    ``native``: a ``NativeSnippets`` for ``@wp.func_native``, whose body is C++ text."""

    ir: Function
    symbol: str
    differentiable: bool
    has_side_effects: bool
    has_replay_variant: bool
    ref_params: tuple = ()
    value_ret_type = None
    native = None


@dataclasses.dataclass(frozen=True)
class NativeSnippets:
    """The C++ of a ``@wp.func_native``: its forward body, its adjoint body (None: no gradient
    passes through it) and the body the backward pass replays in place of the forward."""

    forward: str
    adjoint: Optional[str] = None
    replay: Optional[str] = None


def is_intrinsic(callee) -> bool:
    """An intrinsic: a name the renderer formats itself ("load", "store", "atomic_add"...)."""
    return isinstance(callee, str)


def is_builtin(callee) -> bool:
    """A builtin's overload (``builtins.registry.Overload``): C++ ``weft::<symbol>``."""
    return isinstance(callee, Overload)


def is_func(callee) -> bool:
    """A user func (``FuncCallee``): generated C++ of its own, with its own IR."""
    return isinstance(callee, FuncCallee)


def check_callee(callee) -> None:
    """Raise TypeError unless ``callee`` is one of the three kinds a ``Call`` may name."""
    if not (is_intrinsic(callee) or is_builtin(callee) or is_func(callee)):
        raise TypeError(f"a call names an intrinsic, a builtin Overload or a FuncCallee, not {type(callee).__name__}")


@dataclasses.dataclass
class Call:
    """``result = callee(args)``. ``callee`` is an intrinsic name string (``is_intrinsic``: the
    renderer formats it), a builtin ``Overload`` (``is_builtin``) or a user func (``is_func``);
    code dispatches on these three kinds by type, never on which attributes a callee has."""

    result: Optional[Var]
    callee: object
    args: list
    loc: Optional[Loc] = None
    attr: object = None  # intrinsic-specific data (e.g. cast target type, print format)


@dataclasses.dataclass
class Assign:
    """``dst = src`` for a mutable var."""

    dst: Var
    src: Var


@dataclasses.dataclass
class Read:
    """``result = src`` snapshot of a mutable var."""

    result: Var
    src: Var


@dataclasses.dataclass
class If:
    cond: Var
    then: "Block"
    orelse: "Block"


@dataclasses.dataclass
class Loop:
    """A dynamic loop.

    kind "range": ``for index in range(start, stop, step)``; kind "while": repeat ``cond_block``
    then test ``cond``. The loop also stops when any of ``exit_flags`` (mutable bools) is true.
    ``carried`` are the mutable vars the body updates; the backward pass checkpoints them per
    iteration so each iteration's reverse sees the values its forward saw.
    """

    kind: str
    body: "Block"
    index: Optional[Var] = None
    start: Optional[Var] = None
    stop: Optional[Var] = None
    step: Optional[Var] = None
    cond_block: Optional["Block"] = None
    cond: Optional[Var] = None
    carried: list = dataclasses.field(default_factory=list)
    exit_flags: list = dataclasses.field(default_factory=list)
    id: int = 0
    line: int = 0


Stmt = Union[Call, Assign, Read, If, Loop]


class Block:
    def __init__(self):
        self.stmts: list = []

    def append(self, s):
        self.stmts.append(s)

    def __iter__(self):
        return iter(self.stmts)

    def __len__(self):
        return len(self.stmts)


@dataclasses.dataclass
class Param:
    name: str
    var: Var


class Function:
    """A lowered kernel or func: parameters, body, return value, and every var it defines."""

    def __init__(self, name: str, is_kernel: bool):
        self.name = name
        self.is_kernel = is_kernel
        self.params: list[Param] = []
        self.body = Block()
        self.ret: Optional[Var] = None  # the mutable var holding the return value (funcs)
        self.ret_type = None
        self.vars: list[Var] = []
        self.locs: list[tuple] = []  # (file, line, source text) per Loc id
        self.callees: list = []  # FuncInstances called (for emission order)
        self.has_side_effects = False
        # reads values that differ between a block's threads (wp.tile(x), wp.untile, wp.block_dim):
        # its tiles cannot be spread over the threads on CUDA (native/tile/tile_cuda.h)
        self.thread_values = False
        self.adjoint_error: Optional[str] = None  # set when no correct gradient can be generated
        self.global_captures: list = []  # (module globals or closure cells, name, value) of constants baked in

    def new_var(self, type, const=None, label="", mutable=False, literal=False) -> Var:
        v = Var(len(self.vars), type, const, label, mutable, literal)
        self.vars.append(v)
        return v

    def __str__(self):
        return format_function(self)


# ---------------------------------------------------------------------------------------------
# Stable text form


def _callee_name(c) -> str:
    if is_intrinsic(c):
        return c
    check_callee(c)
    return c.symbol


def _fmt_block(block: Block, indent: str, out: list):
    for s in block:
        if isinstance(s, Call):
            lhs = f"{s.result!r}: {wt.type_repr(s.result.type)} = " if s.result is not None else ""
            attr = f" [{s.attr}]" if s.attr is not None else ""
            out.append(f"{indent}{lhs}{_callee_name(s.callee)}({', '.join(map(repr, s.args))}){attr}")
        elif isinstance(s, Assign):
            out.append(f"{indent}{s.dst!r} <- {s.src!r}")
        elif isinstance(s, Read):
            out.append(f"{indent}{s.result!r} = read {s.src!r}")
        elif isinstance(s, If):
            out.append(f"{indent}if {s.cond!r}:")
            _fmt_block(s.then, indent + "  ", out)
            if len(s.orelse):
                out.append(f"{indent}else:")
                _fmt_block(s.orelse, indent + "  ", out)
        elif isinstance(s, Loop):
            if s.kind == "range":
                out.append(f"{indent}for {s.index!r} in range({s.start!r}, {s.stop!r}, {s.step!r}):")
            else:
                out.append(f"{indent}while:")
                _fmt_block(s.cond_block, indent + "  ? ", out)
                out.append(f"{indent}  ? {s.cond!r}")
            _fmt_block(s.body, indent + "  ", out)


def format_function(fn: Function) -> str:
    head = ", ".join(f"{p.name}={p.var!r}: {wt.type_repr(p.var.type)}" for p in fn.params)
    out = [f"{'kernel' if fn.is_kernel else 'func'} {fn.name}({head}):"]
    consts = [f"{v!r}={v.const!r}:{wt.type_repr(v.type)}" for v in fn.vars if v.is_const]
    if consts:
        out.append("  const " + ", ".join(consts))
    _fmt_block(fn.body, "  ", out)
    if fn.ret is not None:
        out.append(f"  return {fn.ret!r}")
    return "\n".join(out)


def walk(block: Block):
    """Yield every statement in ``block`` and nested blocks, in program order."""
    for s in block:
        yield s
        if isinstance(s, If):
            yield from walk(s.then)
            yield from walk(s.orelse)
        elif isinstance(s, Loop):
            if s.cond_block is not None:
                yield from walk(s.cond_block)
            yield from walk(s.body)


def defined_vars(block: Block) -> list:
    """Vars defined (as results) anywhere inside ``block``."""
    out = []
    for s in walk(block):
        if isinstance(s, (Call,)) and s.result is not None:
            out.append(s.result)
        elif isinstance(s, Read):
            out.append(s.result)
    return out


def verify(fn: Function):
    """Check SSA invariants: non-mutable vars are defined once; mutable vars only via Assign."""
    seen = set(p.var.id for p in fn.params)
    for s in walk(fn.body):
        res = s.result if isinstance(s, (Call, Read)) else None
        if res is not None:
            if res.mutable:
                raise AssertionError(f"{fn.name}: mutable {res!r} defined by {type(s).__name__}")
            if res.id in seen:
                raise AssertionError(f"{fn.name}: {res!r} defined twice")
            seen.add(res.id)
        if isinstance(s, Assign) and not s.dst.mutable:
            raise AssertionError(f"{fn.name}: assign to immutable {s.dst!r}")


def assigned_var_ids(fn) -> set:
    """Ids of the vars a statement of ``fn`` writes (assignment targets and call/read results)."""
    out = set()
    for s in walk(fn.body):
        if isinstance(s, Assign):
            out.add(s.dst.id)
        elif isinstance(s, (Call, Read)) and s.result is not None:
            out.add(s.result.id)
        elif isinstance(s, Loop) and s.index is not None:
            out.add(s.index.id)
    return out
