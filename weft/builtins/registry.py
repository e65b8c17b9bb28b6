"""The builtin registry: every kernel-callable builtin declared once, as data.

Contract: a ``Builtin`` is a public name (``wp.sin``) plus a list of ``Overload``s. An overload
says which argument types it accepts (type patterns with type variables), how its result type
follows from them, which C++ function implements it (``weft::<symbol>`` in ``native/``) and
whether it is differentiable. The C++ side provides, for each differentiable symbol,
``adj_<symbol>(inputs..., adj_inputs&..., adj_ret)``, accumulating (``+=``) into ``adj_inputs``.

The frontend resolves calls against this registry; the renderer only prints ``symbol``.
Builtin objects are the very objects exported as ``weft.<name>``, so a name resolves by value.
"""

from __future__ import annotations

import dataclasses
from typing import Callable, Optional, Sequence

from .. import types as wt


class TypeVar:
    """A type pattern: matches one weft type accepted by ``accepts``; all uses bind the same type.
    ``doc`` says in words what it accepts (the builtin reference prints it)."""

    def __init__(self, name: str, accepts: Callable[[object], bool], doc: str = ""):
        self.name = name
        self.accepts = accepts
        self.doc = doc

    def __repr__(self):
        return self.name


def _any_numeric(t):
    return wt.is_float(t) or wt.is_int(t)


def _any_value(t):
    return wt.is_scalar(t)


# Type variables used by the scalar library. Each overload gets fresh bindings per call.
Float = TypeVar("Float", wt.is_float, "a floating-point scalar type (float16, bfloat16, float32, float64)")
Int = TypeVar("Int", wt.is_int, "an integer scalar type (8 to 64 bits, signed or unsigned)")
Scalar = TypeVar("Scalar", _any_numeric, "a numeric scalar type (integer or floating point)")
Value = TypeVar("Value", _any_value, "a scalar type, bool included")


class AnyOf:
    """A pattern matching any type accepted by ``accepts`` without binding a type variable."""

    def __init__(self, name: str, accepts: Callable[[object], bool]):
        self.name = name
        self.accepts = accepts

    def __repr__(self):
        return self.name


AnyScalar = AnyOf("scalar", _any_value)
AnyInt = AnyOf("int", wt.is_int)


class DTypeOf:
    """A pattern matching exactly the scalar type of the type bound to another type variable
    (``mul(s: DTypeOf("V"), v: V)``: the scalar must be the vector's component type)."""

    def __init__(self, var: str):
        self.var = var

    def __repr__(self):
        return f"scalar of {self.var}"


def _kind_is(*kinds, float_only=False, int_only=False, length=None, shape=None):
    def accepts(t):
        if getattr(t, "_kind", None) not in kinds:
            return False
        if float_only and not wt.is_float(t._scalar):
            return False
        if int_only and not wt.is_int(t._scalar):
            return False
        if length is not None and t._length != length:
            return False
        if shape is not None and t._shape != shape:
            return False
        return True

    return accepts


def composite_var(name, *kinds, float_only=False, int_only=False, length=None, shape=None) -> TypeVar:
    """A type variable over composite types of the given kinds ("vector", "matrix", ...)."""
    accepts = _kind_is(*kinds, float_only=float_only, int_only=int_only, length=length, shape=shape)
    return TypeVar(name, accepts, _composite_doc(kinds, float_only, int_only, length, shape))


def _composite_doc(kinds, float_only, int_only, length, shape) -> str:
    """``composite_var``'s constraints in words: "a vector of 3 floating-point components"."""
    if "struct" in kinds:
        return "a struct type"
    what = " or ".join("transform" if k == "transform" else k for k in kinds)
    comp = "floating-point" if float_only else "integer" if int_only else "any scalar"
    size = f"{length}-component " if length else f"{shape[0]}x{shape[1]} " if shape else ""
    return f"a {size}{what} type of {comp} components"


def result_rule(doc: str, rule: Callable) -> Callable:
    """Name a result-type rule ``(arg_types) -> type`` for the builtin reference: ``doc`` may use
    ``{0}``, ``{1}``... for the overload's parameter names ("the scalar type of {0}")."""
    rule.doc = doc
    return rule


@dataclasses.dataclass(frozen=True)
class Overload:
    """One signature of a builtin.

    Attributes:
        params: parameter names and patterns (a concrete type, a ``TypeVar`` or an ``AnyOf``).
        returns: the result type: a concrete type, a ``TypeVar`` (its binding), a callable
            ``(arg_types) -> type`` or None for no result.
        symbol: C++ function name inside ``namespace weft``.
        differentiable: whether ``adj_<symbol>`` exists and gradients flow through it.
        side_effect: writes memory or prints; skipped when the backward pass replays the forward.
    """

    params: tuple
    returns: object
    symbol: str
    differentiable: bool = True
    side_effect: bool = False

    def bind(self, arg_types: Sequence[object]) -> Optional[dict]:
        """Return type-variable bindings if ``arg_types`` fit this overload, else None."""
        if len(arg_types) != len(self.params):
            return None
        binding: dict = {}
        deferred = []
        for (_, pattern), t in zip(self.params, arg_types):
            if isinstance(pattern, DTypeOf):
                deferred.append((pattern, t))
            elif isinstance(pattern, TypeVar):
                if pattern.name in binding:
                    if binding[pattern.name] != t:
                        return None
                elif pattern.accepts(t):
                    binding[pattern.name] = t
                else:
                    return None
            elif isinstance(pattern, AnyOf):
                if not pattern.accepts(t):
                    return None
            elif pattern != t:
                return None
        for pattern, t in deferred:
            bound = binding.get(pattern.var)
            if bound is None or getattr(bound, "_scalar", bound) != t:
                return None
        return binding

    def result_type(self, binding: dict, arg_types: Sequence[object]):
        r = self.returns
        if isinstance(r, TypeVar):
            return binding[r.name]
        if callable(r) and not isinstance(r, type) and getattr(r, "_kind", None) != "struct":
            return r(arg_types)  # a result rule (struct types are callable too: they build instances)
        return r

    def signature(self) -> str:
        return "(" + ", ".join(f"{n}: {p!r}" if not wt.is_scalar(p) else f"{n}: {p.cname}" for n, p in self.params) + ")"


class Builtin:
    """A kernel builtin. Called from Python outside a kernel, it runs its native code for the
    argument types (``runtime/host_calls.py``, installed as ``host_dispatch``); builtins with
    side effects (``expect_eq``...) run ``python_impl`` instead."""

    host_dispatch = None  # set by weft/__init__.py: (builtin, args, kwargs) -> result

    def __init__(self, name: str, doc: str, group: str, python_impl=None):
        self.name = name
        self.__name__ = name
        self.__doc__ = doc
        self.group = group
        self.overloads: list[Overload] = []
        self.python_impl = python_impl
        self.defaults: dict = {}  # trailing parameters a call may leave out: name -> Python value
        self.mismatch_reason = None  # what a call no overload accepts is told, when one reason covers it

    def add(self, params, returns, symbol=None, **flags) -> "Builtin":
        self.overloads.append(Overload(tuple(params), returns, symbol or self.name, **flags))
        return self

    def __call__(self, *args, **kwargs):
        # side effects (printing, advancing a random state in place) are Python's business
        effects = any(ov.side_effect for ov in self.overloads) or getattr(self, "advances_state", False)
        if self.python_impl is not None and (effects or Builtin.host_dispatch is None):
            return self.python_impl(*args, **kwargs)
        if effects or Builtin.host_dispatch is None:
            raise RuntimeError(f"weft.{self.name}() can only be called inside a @wp.kernel or @wp.func")
        return Builtin.host_dispatch(self, args, dict(kwargs))

    def __repr__(self):
        return f"<weft builtin {self.name}>"


registry: dict[str, Builtin] = {}


def builtin(name: str, doc: str, group: str, python_impl=None) -> Builtin:
    """Create and register a builtin; add overloads with ``.add(...)``."""
    b = Builtin(name, doc, group, python_impl)
    registry[name] = b
    return b


def p(*names_and_patterns):
    """Parameter list helper: ``p("x", Float, "y", Float)`` -> ``(("x", Float), ("y", Float))``."""
    it = iter(names_and_patterns)
    return tuple(zip(it, it))
