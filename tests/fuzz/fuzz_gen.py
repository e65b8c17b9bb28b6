"""Random, well-typed weft programs for the gradient fuzzer.

``program(seed, index)`` returns a ``Program``: the Python source of one ``@wp.kernel`` (and the
``@wp.func``s it calls), with the names and sizes the checker needs. The same ``(seed, index)``
always gives the same program, so a mismatch is reproduced from two numbers.

Every kernel has the signature ``k(x: array(float64), y: array(float64), n: int)``. Thread ``i`` of
``THREADS`` reads its own inputs ``x[i * PER_THREAD + c]`` and the shared ones
``x[THREADS * PER_THREAD + c]`` (read by every thread, so their gradients are accumulated across
threads), computes with random statements, stores into its own outputs ``y[i * OUT_PER_THREAD + c]``
and adds into the shared outputs ``y[THREADS * OUT_PER_THREAD + c]`` with atomics. ``n`` bounds the
dynamic loops.

What the programs use (``Program.constructs`` names the ones a program contains):
- float64 arithmetic and the differentiable scalar builtins, written so that their arguments stay
  in their smooth domain (``log(1 + e*e)``, ``asin(0.9 * tanh(e))``...), and a few that are not
  smooth everywhere (``abs``, ``min``, ``max``, ``clamp``, ``floor``...): the checker tells a
  genuine mismatch from a kink by comparing two finite-difference steps;
- ``vec3d`` and ``mat33d`` values: construction, arithmetic, ``dot``, ``cross``, ``length``,
  ``normalize``, matrix-vector products, ``transpose``, ``determinant``, component reads and
  component writes;
- new variables, reassignment, augmented assignment, aliasing (``b = a`` then ``a`` changes);
- ``if``/``else`` on values and on thread or loop indices, conditional expressions;
- static loops (``range(3)``), dynamic loops (``range(n)``) and ``while`` loops with loop-carried
  state, ``break`` and ``continue``;
- ``@wp.func``s returning values (with early returns, nested calls) and ``@wp.func``s whose effect
  is on arrays (stores and atomics into ``y``);
- array stores that overwrite earlier stores, atomics, and early ``return`` from the kernel.
"""

from __future__ import annotations

import dataclasses
import random

THREADS = 2
PER_THREAD = 3
SHARED_IN = 2
OUT_PER_THREAD = 2
SHARED_OUT = 2
X_SIZE = THREADS * PER_THREAD + SHARED_IN
Y_SIZE = THREADS * OUT_PER_THREAD + SHARED_OUT

F = "wp.float64"


@dataclasses.dataclass(frozen=True)
class Program:
    """One generated kernel with its funcs."""

    seed: int
    index: int
    name: str  # the kernel's name in its module
    source: str  # the funcs and the kernel, no imports
    constructs: frozenset


def c(value: float) -> str:
    """A float64 constant."""
    return f"{F}({value!r})"


# smooth unary forms: {0} is the argument (repeated where the form needs it twice)
SMOOTH_UNARY = {
    "sin": "wp.sin({0})",
    "cos": "wp.cos({0})",
    "tanh": "wp.tanh({0})",
    "tan": "wp.tan(wp.tanh({0}))",
    "exp": "wp.exp(wp.tanh({0}))",
    "log": f"wp.log({c(1.0)} + {{0}} * {{0}})",
    "log2": f"wp.log2({c(1.5)} + {{0}} * {{0}})",
    "log10": f"wp.log10({c(2.0)} + {{0}} * {{0}})",
    "sqrt": f"wp.sqrt({c(1.0)} + {{0}} * {{0}})",
    "cbrt": f"wp.cbrt({c(2.0)} + wp.tanh({{0}}))",
    "asin": f"wp.asin({c(0.9)} * wp.tanh({{0}}))",
    "acos": f"wp.acos({c(0.9)} * wp.tanh({{0}}))",
    "atan": "wp.atan({0})",
    "sinh": "wp.sinh(wp.tanh({0}))",
    "cosh": "wp.cosh(wp.tanh({0}))",
    "neg": "-({0})",
    "square": "({0}) * ({0})",
    "degrees": f"{c(0.01)} * wp.degrees({{0}})",
    "radians": "wp.radians({0})",
    "erf": "wp.erf({0})",
    "erfc": "wp.erfc({0})",
}
SMOOTH_BINARY = {
    "add": "({0} + {1})",
    "sub": "({0} - {1})",
    "mul": "({0} * {1})",
    "div": f"({{0}} / ({c(1.5)} + {{1}} * {{1}}))",
    "atan2": f"wp.atan2({{0}}, {c(1.5)} + {{1}} * {{1}})",
    "pow": f"wp.pow({c(1.0)} + {{0}} * {{0}}, wp.tanh({{1}}))",
    "lerp": f"wp.lerp({{0}}, {{1}}, {c(0.3)})",
}
KINKED = {
    "abs": "wp.abs({0})",
    "min": "wp.min({0}, {1})",
    "max": "wp.max({0}, {1})",
    "clamp": f"wp.clamp({{0}}, {c(-0.5)}, {c(0.7)})",
    "floor": "wp.floor({0})",
    "frac": "wp.frac({0})",
    "step": "wp.step({0})",
    "sign": "wp.sign({0}) * {1}",
    "smoothstep": f"wp.smoothstep({c(-1.0)}, {c(1.0)}, {{0}})",
}


# Constructs outside Warp's correct subset: Warp's gradients are wrong through dynamic loops that
# carry state (its issue 1694), break/continue and early returns in them, through a variable
# aliased and then changed, and through array elements stored twice (the first store keeps its
# gradient); in-place vector component writes are left out too. weft gets all of these right (the
# finite-difference campaign checks them); the Warp comparison runs where both should agree.
WARP_SUBSET_EXCLUDES = frozenset(
    {
        "dynamic_loop",
        "while_loop",
        "break",
        "continue",
        "early_return",
        "alias",
        "vec_component_write",
        "store",
        "struct_field_write",
    }
)
# Builtins left out of the Warp comparison: frac's gradient is 1 in weft, 0 in Warp 1.19 (a choice
# weft documents), and the jumps of floor, step and sign turn round-off differences (a value that is
# zero up to the last bit, computed in another order) into different results.
WARP_DIFFERENT_BUILTINS = frozenset({"frac", "floor", "step", "sign"})


class Scope:
    """The variables visible at a point of the generated code, by type."""

    def __init__(self, floats, ints, vecs=(), mats=(), quats=(), structs=()):
        self.floats = list(floats)
        self.ints = list(ints)
        self.vecs = list(vecs)
        self.mats = list(mats)
        self.quats = list(quats)
        self.structs = list(structs)

    def child(self):
        """A nested block: it sees the outer names; names it defines stay inside it (Python would
        let them leak, but a name defined on one branch only is not usable after the block)."""
        return Scope(self.floats, self.ints, self.vecs, self.mats, self.quats, self.structs)


class Writer:
    """Indented lines of source."""

    def __init__(self):
        self.lines: list = []
        self.depth = 0

    def line(self, text: str):
        self.lines.append("    " * self.depth + text)

    def block(self):
        return _Indent(self)


class _Indent:
    def __init__(self, writer):
        self.writer = writer

    def __enter__(self):
        self.writer.depth += 1

    def __exit__(self, *exc):
        self.writer.depth -= 1


class Generator:
    """Writes one program from a seeded ``random.Random``."""

    def __init__(self, rng: random.Random, prefix: str, warp_subset: bool = False):
        self.rng = rng
        self.prefix = prefix
        # Warp's correct subset (WARP_SUBSET_EXCLUDES): compared with warp-lang by warp_compare.py
        self.warp_subset = warp_subset
        self.constructs: set = set()
        self.names = 0
        self.value_funcs: list = []  # (name, arity)
        self.array_funcs: list = []  # (name, takes a float64) of funcs (x, y, i[, s]) with effects on y
        self.struct = None  # the program's @wp.struct (fields a: float64, v: vec3d), if any
        self.struct_func = None  # a func (st, p) -> float64 over it
        self.out = Writer()

    def fresh(self, kind: str = "v") -> str:
        self.names += 1
        return f"{kind}{self.names}"

    def use(self, construct: str):
        self.constructs.add(construct)

    # -- expressions -----------------------------------------------------------------------------

    def leaf(self, scope: Scope) -> str:
        r = self.rng.random()
        if r < 0.7 and scope.floats:
            return self.rng.choice(scope.floats)
        if r < 0.8 and scope.ints:
            self.use("int_to_float")
            return f"{F}({self.rng.choice(scope.ints)})"
        if r < 0.9 and scope.vecs:
            self.use("vec_component_read")
            return f"{self.rng.choice(scope.vecs)}[{self.rng.randrange(3)}]"
        if scope.mats and r < 0.93:
            self.use("mat_component_read")
            return f"{self.rng.choice(scope.mats)}[{self.rng.randrange(3)}, {self.rng.randrange(3)}]"
        if scope.quats and r < 0.96:
            self.use("quat_component_read")
            return f"{self.rng.choice(scope.quats)}[{self.rng.randrange(4)}]"
        if scope.structs and r < 0.99:
            self.use("struct_field_read")
            return f"{self.rng.choice(scope.structs)}.a"
        return c(round(self.rng.uniform(-1.5, 1.5), 3))

    def fexpr(self, scope: Scope, depth: int) -> str:
        """A float64 expression."""
        if depth <= 0:
            return self.leaf(scope)
        r = self.rng.random()
        if r < 0.3:
            name = self.rng.choice(list(SMOOTH_UNARY))
            self.use(f"builtin:{name}")
            return SMOOTH_UNARY[name].format(self.fexpr(scope, depth - 1))
        if r < 0.6:
            name = self.rng.choice(list(SMOOTH_BINARY))
            self.use(f"builtin:{name}")
            return SMOOTH_BINARY[name].format(self.fexpr(scope, depth - 1), self.fexpr(scope, depth - 1))
        if r < 0.67:
            name = self.rng.choice([k for k in KINKED if not (self.warp_subset and k in WARP_DIFFERENT_BUILTINS)])
            self.use(f"builtin:{name}")
            return KINKED[name].format(self.fexpr(scope, depth - 1), self.fexpr(scope, depth - 1))
        if r < 0.8 and self.value_funcs:
            name, arity = self.rng.choice(self.value_funcs)
            self.use("func_call_value")
            return f"{name}({', '.join(self.fexpr(scope, depth - 1) for _ in range(arity))})"
        if r < 0.84:
            self.use("conditional_expression")
            a, b = self.fexpr(scope, depth - 1), self.fexpr(scope, depth - 1)
            return f"({a} if {self.cond(scope)} else {b})"
        if r < 0.9 and (scope.vecs or depth >= 2):
            return self.vec_to_float(scope, depth - 1)
        if r < 0.93 and scope.mats:
            self.use("mat_determinant")
            return f"wp.determinant({self.rng.choice(scope.mats)})"
        return self.leaf(scope)

    def vexpr(self, scope: Scope, depth: int) -> str:
        """A vec3d expression."""
        r = self.rng.random()
        if depth <= 0 or r < 0.25:
            if scope.vecs and r < 0.15:
                return self.rng.choice(scope.vecs)
            self.use("vec_construct")
            return f"wp.vec3d({', '.join(self.fexpr(scope, max(0, depth - 1)) for _ in range(3))})"
        if r < 0.4:
            self.use("vec_add")
            return f"({self.vexpr(scope, depth - 1)} + {self.vexpr(scope, depth - 1)})"
        if r < 0.5:
            self.use("vec_scale")
            return f"({self.fexpr(scope, depth - 1)} * {self.vexpr(scope, depth - 1)})"
        if r < 0.6:
            self.use("builtin:cross")
            return f"wp.cross({self.vexpr(scope, depth - 1)}, {self.vexpr(scope, depth - 1)})"
        if r < 0.7:
            self.use("builtin:normalize")
            return f"wp.normalize({self.vexpr(scope, depth - 1)} + wp.vec3d({c(2.0)}, {c(2.5)}, {c(3.0)}))"
        if r < 0.8 and scope.mats:
            self.use("mat_vec_mul")
            return f"({self.rng.choice(scope.mats)} * {self.vexpr(scope, depth - 1)})"
        if r < 0.85:
            self.use("vec_sub")
            return f"({self.vexpr(scope, depth - 1)} - {self.vexpr(scope, depth - 1)})"
        if r < 0.9:
            self.use("vec_div_scalar")
            return f"({self.vexpr(scope, depth - 1)} / ({c(2.0)} + wp.tanh({self.fexpr(scope, depth - 1)})))"
        return self.vexpr_more(scope, depth - 1)

    def vexpr_more(self, scope: Scope, depth: int) -> str:
        """vec3d from the component-wise, matrix, quaternion, transform and struct builtins."""
        v = lambda: self.vexpr(scope, depth)  # a fresh sub-expression per use
        forms = {
            "cw_mul": lambda: f"wp.cw_mul({v()}, {v()})",
            "cw_div": lambda: f"wp.cw_div({v()}, wp.vec3d({c(2.0)}, {c(2.5)}, {c(3.0)}) + wp.cw_mul({v()}, {v()}))",
            "skew": lambda: f"(wp.skew({v()}) * {v()})",
            "outer": lambda: f"(wp.outer({v()}, {v()}) * {v()})",
            "diag": lambda: f"(wp.diag({v()}) * {v()})",
            "inverse": lambda: (
                f"(wp.inverse(wp.diag(wp.vec3d({c(2.0)}, {c(2.5)}, {c(3.0)})) + {c(0.1)} * {self.mexpr(scope, depth)}) * {v()})"
            ),
            "get_diag": lambda: f"wp.get_diag({self.mexpr(scope, depth)})",
            "quat_rotate": lambda: f"wp.quat_rotate({self.qexpr(scope, depth)}, {v()})",
            "quat_rotate_inv": lambda: f"wp.quat_rotate_inv({self.qexpr(scope, depth)}, {v()})",
            "transform_point": lambda: f"wp.transform_point(wp.transformd({v()}, {self.qexpr(scope, depth)}), {v()})",
            "transform_vector": lambda: f"wp.transform_vector(wp.transformd({v()}, {self.qexpr(scope, depth)}), {v()})",
        }
        if scope.structs:
            forms["struct_field"] = lambda: f"{self.rng.choice(scope.structs)}.v"
        name = self.rng.choice(list(forms))
        self.use(f"builtin:{name}" if name != "struct_field" else "struct_field_read")
        return forms[name]()

    def qexpr(self, scope: Scope, depth: int) -> str:
        """A unit quatd expression (every form keeps unit length)."""
        r = self.rng.random()
        if scope.quats and (depth <= 0 or r < 0.3):
            return self.rng.choice(scope.quats)
        if depth <= 0 or r < 0.55:
            self.use("builtin:quat_from_axis_angle")
            axis = f"wp.normalize({self.vexpr(scope, 0)} + wp.vec3d({c(2.0)}, {c(2.5)}, {c(3.0)}))"
            return f"wp.quat_from_axis_angle({axis}, {self.fexpr(scope, max(0, depth - 1))})"
        if r < 0.7:
            self.use("builtin:quat_rpy")
            return f"wp.quat_rpy({self.fexpr(scope, depth - 1)}, {self.fexpr(scope, depth - 1)}, {self.fexpr(scope, depth - 1)})"
        if r < 0.85:
            self.use("quat_mul")
            return f"({self.qexpr(scope, depth - 1)} * {self.qexpr(scope, depth - 1)})"
        self.use("builtin:quat_inverse")
        return f"wp.quat_inverse({self.qexpr(scope, depth - 1)})"

    def vec_to_float(self, scope: Scope, depth: int) -> str:
        r = self.rng.random()
        if r < 0.4:
            self.use("builtin:dot")
            return f"wp.dot({self.vexpr(scope, depth)}, {self.vexpr(scope, depth)})"
        if r < 0.7:
            self.use("builtin:length")
            return f"wp.length({self.vexpr(scope, depth)} + wp.vec3d({c(1.5)}, {c(-2.0)}, {c(2.5)}))"
        if r < 0.8:
            self.use("builtin:length_sq")
            return f"wp.length_sq({self.vexpr(scope, depth)})"
        if r < 0.85:
            self.use("builtin:trace")
            return f"wp.trace({self.mexpr(scope, depth)})"
        if r < 0.9:
            self.use("builtin:ddot")
            return f"wp.ddot({self.mexpr(scope, depth)}, {self.mexpr(scope, depth)})"
        self.use("vec_component_read")
        return f"{self.vexpr(scope, depth)}[{self.rng.randrange(3)}]"

    def mexpr(self, scope: Scope, depth: int) -> str:
        r = self.rng.random()
        if scope.mats and r < 0.3:
            self.use("builtin:transpose")
            return f"wp.transpose({self.rng.choice(scope.mats)})"
        if scope.mats and r < 0.5:
            self.use("mat_mat_mul")
            return f"({self.rng.choice(scope.mats)} * {self.rng.choice(scope.mats)})"
        self.use("mat_construct")
        return f"wp.mat33d({', '.join(self.fexpr(scope, max(0, depth - 1)) for _ in range(9))})"

    def cond(self, scope: Scope) -> str:
        r = self.rng.random()
        if r < 0.35 and scope.ints:
            self.use("branch_on_index")
            return f"{self.rng.choice(scope.ints)} {self.rng.choice(['<', '>', '==', '!='])} {self.rng.randrange(3)}"
        self.use("branch_on_value")
        op = self.rng.choice(["<", ">", "<=", ">="])
        return f"{self.fexpr(scope, 1)} {op} {c(round(self.rng.uniform(-0.5, 0.5), 2))}"

    # -- statements ------------------------------------------------------------------------------

    def statements(self, scope: Scope, count: int, depth: int, in_loop: bool, in_kernel: bool):
        for _ in range(count):
            self.statement(scope, depth, in_loop, in_kernel)

    def statement(self, scope: Scope, depth: int, in_loop: bool, in_kernel: bool):
        """One statement; kernels (``in_kernel``) also store, add atomically, call array funcs,
        return early and loop up to their argument ``n``."""
        rng, w = self.rng, self.out
        choices = ["new", "new", "assign", "augassign", "alias"]
        if depth > 0:
            choices += ["if", "if", "static_loop"] + (["dynamic_loop", "while_loop"] if in_kernel else [])
        choices += ["vec", "vec_component_write", "mat", "quat"] if depth > 0 else ["vec"]
        if self.struct is not None:
            choices += ["struct", "struct_field_write"] if scope.structs else ["struct"]
        if in_kernel:
            choices += ["store", "store", "atomic"] + (["array_func"] if self.array_funcs else [])
            if depth > 0 and not in_loop:
                choices.append("early_return")
        if in_loop:
            choices += ["break", "continue"]
        if self.warp_subset:
            choices = [k for k in choices if k not in WARP_SUBSET_EXCLUDES]
        kind = rng.choice(choices)
        self.use(kind)
        # values carried around a loop are squashed, or products compound over the iterations until
        # they overflow, and 0 * inf in the reverse pass gives NaN gradients that say nothing
        bound = "wp.tanh({})" if in_loop else "{}"
        if kind == "new" or (kind in ("assign", "augassign", "alias") and not scope.floats):
            name = self.fresh()
            w.line(f"{name} = {self.fexpr(scope, rng.randint(1, 3))}")
            scope.floats.append(name)
        elif kind == "assign":
            w.line(f"{rng.choice(scope.floats)} = {bound.format(self.fexpr(scope, rng.randint(1, 3)))}")
        elif kind == "augassign":
            op = rng.choice(["+=", "-=", "*="])
            value = self.fexpr(scope, 2)
            if op == "*=":
                value = f"wp.tanh({value})"
            w.line(f"{rng.choice(scope.floats)} {op} {value}")
        elif kind == "alias":
            name, target = self.fresh(), rng.choice(scope.floats)
            w.line(f"{name} = {target}")
            w.line(f"{target} = {bound.format(self.fexpr(scope, 2))}")  # the alias keeps the old value
            scope.floats.append(name)
        elif kind == "if":
            w.line(f"if {self.cond(scope)}:")
            with w.block():
                self.statements(scope.child(), rng.randint(1, 3), depth - 1, in_loop, in_kernel)
            if rng.random() < 0.6:
                w.line("else:")
                with w.block():
                    self.statements(scope.child(), rng.randint(1, 3), depth - 1, in_loop, in_kernel)
        elif kind in ("static_loop", "dynamic_loop"):
            j = self.fresh("j")
            limit = str(rng.randint(1, 3)) if kind == "static_loop" else "n"
            w.line(f"for {j} in range({limit}):")
            inner = scope.child()
            inner.ints.append(j)
            with w.block():
                self.statements(inner, rng.randint(1, 3), depth - 1, True, in_kernel)
        elif kind == "while_loop":
            j = self.fresh("j")
            w.line(f"{j} = int(0)")
            w.line(f"while {j} < n:")
            inner = scope.child()
            inner.ints.append(j)
            with w.block():
                w.line(f"{j} += 1")  # first, so a continue cannot skip it
                self.statements(inner, rng.randint(1, 3), depth - 1, True, in_kernel)
        elif kind in ("break", "continue"):
            w.line(f"if {self.cond(scope)}:")
            with w.block():
                w.line(kind)
        elif kind == "vec":
            name = self.fresh("u")
            w.line(f"{name} = {self.vexpr(scope, 2)}")
            scope.vecs.append(name)
        elif kind == "vec_component_write":
            if not scope.vecs:
                name = self.fresh("u")
                w.line(f"{name} = {self.vexpr(scope, 1)}")
                scope.vecs.append(name)
            w.line(f"{rng.choice(scope.vecs)}[{rng.randrange(3)}] = {bound.format(self.fexpr(scope, 2))}")
        elif kind == "quat":
            name = self.fresh("q")
            w.line(f"{name} = {self.qexpr(scope, 2)}")
            scope.quats.append(name)
        elif kind == "struct":
            name = self.fresh("st")
            w.line(f"{name} = {self.struct}()")
            w.line(f"{name}.a = {self.fexpr(scope, 2)}")
            w.line(f"{name}.v = {self.vexpr(scope, 1)}")
            scope.structs.append(name)
            value = self.fresh()
            self.use("func_call_struct")
            w.line(f"{value} = {self.struct_func}({name}, {self.fexpr(scope, 1)})")
            scope.floats.append(value)
        elif kind == "struct_field_write":
            target = rng.choice(scope.structs)
            if rng.random() < 0.5:
                w.line(f"{target}.a = {bound.format(self.fexpr(scope, 2))}")
            else:
                w.line(
                    f"{target}.v = {self.vexpr(scope, 1)}"
                    if not in_loop
                    else f"{target}.v = wp.normalize({self.vexpr(scope, 1)} + wp.vec3d({c(2.0)}, {c(2.5)}, {c(3.0)}))"
                )
        elif kind == "mat":
            name = self.fresh("m")
            w.line(f"{name} = {self.mexpr(scope, 1)}")
            scope.mats.append(name)
        elif kind == "store":
            w.line(f"y[i * {OUT_PER_THREAD} + {rng.randrange(OUT_PER_THREAD)}] = {self.fexpr(scope, 2)}")
        elif kind == "atomic":
            op = rng.choice(["atomic_add", "atomic_add", "atomic_sub"])
            w.line(f"wp.{op}(y, {THREADS * OUT_PER_THREAD + rng.randrange(SHARED_OUT)}, {self.fexpr(scope, 2)})")
        elif kind == "array_func":
            name, takes_value = rng.choice(self.array_funcs)
            if not takes_value:
                self.use("array_func_arrays_only")
            w.line(f"{name}(x, y, i, {self.fexpr(scope, 2)})" if takes_value else f"{name}(x, y, i)")
        elif kind == "early_return":
            w.line(f"if {self.cond(scope)}:")
            with w.block():
                w.line("return")

    # -- definitions -----------------------------------------------------------------------------

    def value_func(self):
        """A func of float64 arguments returning a float64, possibly with an early return and a
        call of an earlier func."""
        name = f"{self.prefix}_f{len(self.value_funcs)}"
        arity = self.rng.randint(1, 3)
        params = [f"p{k}" for k in range(arity)]
        w = self.out
        w.line("@wp.func")
        w.line(f"def {name}({', '.join(f'{p}: {F}' for p in params)}):")
        scope = Scope(params, [])
        with w.block():
            self.statements(scope, self.rng.randint(1, 4), 1, False, False)
            if self.rng.random() < 0.4 and not self.warp_subset:
                self.use("func_early_return")
                w.line(f"if {self.cond(scope)}:")
                with w.block():
                    w.line(f"return {self.fexpr(scope, 2)}")
            w.line(f"return {self.fexpr(scope, 2)}")
        w.line("")
        self.value_funcs.append((name, arity))

    def array_func(self):
        """A func whose only effect is on ``y``: stores and atomics, no return value. Half of them
        take a float64 besides the arrays; the others take nothing differentiable at all (their
        gradient flows through the arrays alone)."""
        name = f"{self.prefix}_g{len(self.array_funcs)}"
        takes_value = self.rng.random() < 0.5
        w = self.out
        w.line("@wp.func")
        extra = f", s: {F}" if takes_value else ""
        w.line(f"def {name}(x: wp.array(dtype={F}), y: wp.array(dtype={F}), i: int{extra}):")
        scope = Scope(["s", "b0", "b1"] if takes_value else ["b0", "b1"], ["i"])
        with w.block():
            w.line(f"b0 = x[i * {PER_THREAD}]")
            w.line(f"b1 = x[{THREADS * PER_THREAD}]")
            self.statements(scope, self.rng.randint(0, 2), 1, False, False)
            if self.rng.random() < 0.5 and not self.warp_subset:  # Warp: a second store would not overwrite
                w.line(f"y[i * {OUT_PER_THREAD} + {self.rng.randrange(OUT_PER_THREAD)}] = {self.fexpr(scope, 2)}")
            else:
                target = THREADS * OUT_PER_THREAD + self.rng.randrange(SHARED_OUT)
                w.line(f"wp.atomic_add(y, {target}, {self.fexpr(scope, 2)})")
        w.line("")
        self.array_funcs.append((name, takes_value))

    def struct_def(self):
        """A ``@wp.struct`` and a func taking it (its fields read into locals, then random code)."""
        struct, func = f"{self.prefix}_S", f"{self.prefix}_h"
        w = self.out
        w.line("@wp.struct")
        w.line(f"class {struct}:")
        with w.block():
            w.line(f"a: {F}")
            w.line("v: wp.vec3d")
        w.line("")
        w.line("")
        w.line("@wp.func")
        w.line(f"def {func}(st: {struct}, p: {F}):")
        with w.block():
            w.line("fa = st.a")
            w.line("fv = st.v")
            scope = Scope(["fa", "p"], [], ["fv"])
            self.statements(scope, self.rng.randint(0, 3), 1, False, False)
            w.line(f"return {self.fexpr(scope, 2)}")
        w.line("")
        self.struct, self.struct_func = struct, func  # usable from here on (no recursion)

    def kernel(self) -> str:
        name = f"{self.prefix}_k"
        w = self.out
        w.line("@wp.kernel")
        w.line(f"def {name}(x: wp.array(dtype={F}), y: wp.array(dtype={F}), n: int):")
        with w.block():
            w.line("i = wp.tid()")
            scope = Scope([], ["i"])
            for k in range(PER_THREAD):
                w.line(f"a{k} = x[i * {PER_THREAD} + {k}]")
                scope.floats.append(f"a{k}")
            for k in range(SHARED_IN):
                w.line(f"s{k} = x[{THREADS * PER_THREAD + k}]")
                scope.floats.append(f"s{k}")
            self.statements(scope, self.rng.randint(3, 8), 2, False, True)
            # every output depends on the computation, whatever the statements above did
            w.line(f"y[i * {OUT_PER_THREAD}] = {self.fexpr(scope, 2)}")
            w.line(f"wp.atomic_add(y, {THREADS * OUT_PER_THREAD}, {self.fexpr(scope, 2)})")
        w.line("")
        return name


def program(seed: int, index: int, warp_subset: bool = False) -> Program:
    """The program number ``index`` of the campaign ``seed`` (of its Warp-subset campaign with
    ``warp_subset``: no construct of ``WARP_SUBSET_EXCLUDES``)."""
    rng = random.Random(f"weft-fuzz-{'warp-' if warp_subset else ''}{seed}-{index}")
    gen = Generator(rng, f"p{index}", warp_subset)
    if rng.random() < 0.4:
        gen.struct_def()
    for _ in range(rng.randint(0, 3)):
        gen.value_func()
    for _ in range(rng.randint(0, 2)):
        gen.array_func()
    name = gen.kernel()
    return Program(seed, index, name, "\n".join(gen.out.lines) + "\n", frozenset(gen.constructs))


def module_source(programs) -> str:
    """One importable module holding several programs."""
    return "import weft as wp\n\n\n" + "\n\n".join(p.source for p in programs)
