"""The fast cache key: find a module's built CPU library in the kernel cache without lowering it.

The full build key (``module.cache_entry``) hashes the rendered C++, so it needs every kernel
lowered and rendered, which is most of a warm process's load time. This module keys the same
build by what the lowering reads instead, and keeps, beside the library, what a launch needs that
would otherwise come from the IR.

Contract:

- ``lookup_text(module, candidates)`` holds what is known without parsing anything: weft's
  version, the native headers, weft's own Python sources (``compiler_digest``: the compiler
  that would render the code), the compiler and its flags, the module's name, options and the
  codegen settings of ``wp.config``, and per kernel to build its name, options, argument types,
  the text of its definition and its code object. It names an entry file in the cache.
- An entry (written by ``record`` after a build, atomically, with a checksum) also holds the
  *full description*: the values of everything the kernels reference, as the frontend resolves
  them by value (globals and closure cells, attribute chains such as ``cfg.N``, ``wp.constant``
  values, the funcs called, transitively, with their own text and references, struct fields,
  types), and the table of which names each function's text references, so that a later process
  resolves the same names without parsing the source.
- ``load`` recomputes the full description from the live objects and uses the entry only when it
  is byte-identical to the stored one; any value it cannot describe exactly (an arbitrary object,
  a plain Python function a ``wp.static`` could call) makes the key unknown, and the caller takes
  the lowering path, which stays the reference.

Nothing here lowers or renders; ``references`` parses a function's source on the recording side
only.
"""

from __future__ import annotations

import ast
import builtins
import ctypes
import enum
import hashlib
import json
import os
import sys
import types
import typing
import weakref

import numpy as np

from .. import config, log
from .. import types as wt
from .. import vector_types as vt
from ..builtins.registry import Builtin
from ..codegen.source import _blank_or_comment, _Cells, _snapshots
from ..scalar_types import _ArrayKindType

FORMAT = 3
enabled = True  # False: always lower (tests compare both paths)
# wp.config settings that never change generated code (the others key the entry: a setting added
# later keys it too until it is listed here)
_RUNTIME_SETTINGS = frozenset(
    {
        "kernel_cache_dir", "cache_kernels", "verbose", "quiet", "log_level", "verify_autograd_array_access",
        "verify_fp", "cpu_threads", "cpu_min_tasks_per_thread", "cpu_adaptive", "verify_cuda", "cuda_output",
        "load_module_max_workers", "deterministic", "deterministic_max_records", "deterministic_debug",
        "verify_ir", "legacy_scalar_return_types", "enable_backward",
    }
)  # fmt: skip
# (config.enable_backward is read when a module is made: its option keys the entry instead;
# config.deterministic likewise, and it is a launch option.)


class Doubt(Exception):
    """A value the fast key cannot describe exactly: the caller lowers instead."""


def _digest(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


# -- the text and code of a function, without parsing ----------------------------------------------


def function_text(pyfunc) -> tuple:
    """``(file, first line, text)`` of a function as the frontend will read it: the lines of its
    snapshot (``codegen.source.snapshot``, taken when it was decorated) from the ``def`` to the
    first later line indented no deeper, found without parsing.

    Raises:
        Doubt: the function has no snapshot (a lambda, code typed at a prompt).
    """
    snap = _snapshots.get(pyfunc)
    code = getattr(pyfunc, "__code__", None)
    if snap is None or code is None or pyfunc.__name__ == "<lambda>":
        raise Doubt(f"no source snapshot of {getattr(pyfunc, '__qualname__', pyfunc)!r}")
    file, lines = snap
    first = code.co_firstlineno
    if not 0 < first <= len(lines):
        raise Doubt("the snapshot does not hold the function")
    head = lines[first - 1]
    indent = len(head) - len(head.lstrip())
    end = first
    while end < len(lines):
        line = lines[end]
        if not _blank_or_comment(line) and len(line) - len(line.lstrip()) <= indent:
            break
        end += 1
    return file, first, "".join(lines[first - 1 : end])


def _code_parts(code) -> str:
    """A code object by what it computes: bytecode, constants (recursively), names, signature."""
    consts = []
    for c in code.co_consts:
        if isinstance(c, types.CodeType):
            consts.append(_code_parts(c))
        elif isinstance(c, frozenset):  # `x in {"a", "b"}`: its order follows string hashing
            consts.append("frozenset(" + ",".join(sorted(repr(v) for v in c)) + ")")
        else:
            consts.append(f"{type(c).__name__}:{c!r}")
    return repr((code.co_code, consts, code.co_names, code.co_varnames, code.co_freevars, code.co_argcount, code.co_flags))


_digests = weakref.WeakKeyDictionary()  # pyfunc -> (its code object, digest)


def function_digest(pyfunc) -> str:
    """The digest of a function's definition: where it is, its text and its code object."""
    known = _digests.get(pyfunc)
    if known is not None and known[0] is pyfunc.__code__:
        return known[1]
    file, first, text = function_text(pyfunc)
    digest = _digest("\n".join([file, str(first), pyfunc.__qualname__, text, _code_parts(pyfunc.__code__)]))
    _digests[pyfunc] = (pyfunc.__code__, digest)
    return digest


# -- the names a function's text references (parsed when an entry is recorded) ------------------


_OPERATORS = "+operators"  # in a function's references: it has operators (not a name: no clash)
_operator_names: list = []


def operator_names() -> list:
    """The names of the funcs an operator may call (frontend ``user_operator``: ``add`` for ``+``),
    looked up in a function's closure and globals."""
    if not _operator_names:
        from ..codegen import frontend

        _operator_names.extend(sorted({op.name for op in [*frontend._binops.values(), *frontend._unops.values()]}))
    return _operator_names


def _chain(node):
    """``"a.b.c"`` for an attribute chain rooted at a name, else None."""
    parts = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if not isinstance(node, ast.Name):
        return None
    parts.append(node.id)
    return ".".join(reversed(parts))


class _References(ast.NodeVisitor):
    """Collects the free-name chains of a function's syntax tree (see ``references``)."""

    def __init__(self):
        self.chains: set = set()
        self.bound: set = set()  # parameters and assigned names
        self.operators = False

    def visit_Attribute(self, node):
        chain = _chain(node)
        if chain is None:
            self.generic_visit(node)
        else:
            self.chains.add(chain)

    def visit_Name(self, node):
        if isinstance(node.ctx, ast.Load):
            self.chains.add(node.id)
        else:
            self.bound.add(node.id)

    def visit_arg(self, node):
        self.bound.add(node.arg)
        self.generic_visit(node)  # its annotation

    def visit_Constant(self, node):
        if isinstance(node.value, str):  # a string annotation, evaluated by name
            try:
                self.visit(ast.parse(node.value, mode="eval"))
            except SyntaxError:
                pass

    def visit_FunctionDef(self, node):
        # not its decorators: Python ran them, the frontend does not read them
        for part in [node.args, *node.body] + ([node.returns] if node.returns else []):
            self.visit(part)

    def visit_BinOp(self, node):
        self.operators = True
        self.generic_visit(node)

    visit_UnaryOp = visit_AugAssign = visit_BinOp


def references(pyfunc) -> list:
    """The names (and attribute chains, ``wp.vec3``, ``cfg.N``) a function's source references
    from outside: every name loaded that is not a parameter or assigned in it, the names in its
    annotations, and the operator func names its operators may call. A superset of what the
    frontend looks up, derived from the text alone (so it may be stored with the text's digest)."""
    from ..codegen.source import Source

    tree = Source(pyfunc).tree
    found = _References()
    found.visit(tree)
    chains = sorted(c for c in found.chains if c.split(".", 1)[0] not in found.bound)
    return chains + [_OPERATORS] if found.operators else chains


# -- values as text ----------------------------------------------------------------------------------


_MISSING = object()
_PLAIN = (bool, int, float, complex, str, bytes, type(None))


_split: dict = {}  # "a.b.c" -> ["a", "b", "c"]


def _lookup(pyfunc, name):
    """A free name's value as the frontend resolves it (``Source.lookup``): closure, globals, builtins;
    with the dict to watch for changes (None for builtins)."""
    code = pyfunc.__code__
    if name in code.co_freevars and pyfunc.__closure__:
        cell = pyfunc.__closure__[code.co_freevars.index(name)]
        try:
            return cell.cell_contents, "closure"
        except ValueError:
            pass
    if name in pyfunc.__globals__:
        return pyfunc.__globals__[name], "globals"
    return getattr(builtins, name, _MISSING), None


class Describer:
    """Describes the values a module's kernels reference as text (see the module doc).

    Args:
        refs: ``{function digest: [names]}``; a function missing from it is parsed when
            ``record`` is true, else it is a ``Doubt``.
        record: whether to fill ``refs`` by parsing.
    """

    def __init__(self, refs: dict, record: bool):
        self.refs = refs
        self.record = record
        self.funcs: dict = {}  # func identity -> its description
        self._func_ids: dict = {}  # id(Function) -> identity
        self.captures: dict = {}  # id(pyfunc) -> [(globals or cells, name, value)] (kernel.py _captures_changed)
        self.calls: dict = {}  # id(pyfunc) -> [Function] it references

    # one function's definition and everything it references
    def function(self, pyfunc) -> str:
        """The description of a Python function compiled by weft (a kernel's, a func overload's)."""
        digest = function_digest(pyfunc)
        names = self.refs.get(digest)
        if names is None:
            if not self.record:
                raise Doubt(f"no references recorded for {pyfunc.__qualname__}")
            names = self.refs[digest] = references(pyfunc)
        captures, calls, parts = [], [], [digest]
        parts.append("defaults=" + self.value(pyfunc.__defaults__) + self.value(pyfunc.__kwdefaults__))
        for name in names:
            if name == _OPERATORS:  # the operator funcs defined where the function is (most are not)
                scopes = (pyfunc.__code__.co_freevars, pyfunc.__globals__)
                parts += [f"{op}={self.chain(pyfunc, op, captures, calls)}" for op in operator_names() if op in scopes[0] or op in scopes[1]]
            else:
                parts.append(f"{name}={self.chain(pyfunc, name, captures, calls)}")
        self.captures[id(pyfunc)] = captures
        self.calls[id(pyfunc)] = calls
        return "\n".join(parts)

    def chain(self, pyfunc, chain: str, captures: list, calls: list) -> str:
        parts = _split.get(chain)
        if parts is None:
            parts = _split[chain] = chain.split(".")
        root, attrs = parts[0], parts[1:]
        value, where = _lookup(pyfunc, root)
        if value is _MISSING:
            return "<undefined>"
        if where is not None and not attrs and (_is_constant(value) or _is_alias(value, root)):
            # what the frontend records in ``global_captures``: a launch compares it (kernel.py)
            d = _Cells(pyfunc) if where == "closure" else pyfunc.__globals__
            captures.append((d, root, value))
        for k, attr in enumerate(attrs):
            try:
                value = getattr(value, attr)
            except Exception:  # noqa: BLE001 -- the frontend's fallbacks depend on the base alone
                return self.value(value) + "!no " + ".".join(attrs[k:])
        if _is_func(value):
            calls.append(value)
        return self.value(value)

    def value(self, v) -> str:
        """A value as text that changes exactly when what the frontend makes of it may change.

        Raises:
            Doubt: an object it cannot describe exactly.
        """
        if type(v) in _PLAIN:
            return f"{type(v).__name__}:{v!r}"
        known = _fixed.get(id(v))
        if known is not None and known[0] is v:
            return known[1]
        text = self._value(v)
        if _is_fixed(v):
            _fixed[id(v)] = (v, text)
        return text

    def _value(self, v) -> str:
        if isinstance(v, Builtin):  # the most common: wp.sin, wp.vec3 ...
            return f"builtin {v.name}"
        if isinstance(v, _PLAIN):
            return f"{type(v).__name__}:{v!r}"
        if isinstance(v, (tuple, list)):
            return f"{type(v).__name__}(" + ",".join(self.value(x) for x in v) + ")"
        if isinstance(v, dict):
            return "dict(" + ",".join(f"{self.value(k)}:{self.value(x)}" for k, x in v.items()) + ")"
        if isinstance(v, enum.Enum):
            return f"enum {type(v).__module__}.{type(v).__qualname__}.{v.name}={self.value(v.value)}"
        if isinstance(v, types.ModuleType):
            return f"module {v.__name__}"
        kind = getattr(v, "_weft_kind", None)
        if kind == "func":
            return self.func(v)
        if getattr(type(v), "_weft_struct_instance", False):
            fields = ",".join(f"{n}={self.value(getattr(v, n))}" for n in v._struct.vars)
            return f"struct value {self.type_(v._struct)}({fields})"
        if getattr(v, "_kind", None) == "struct" and not isinstance(v, type):
            return self.type_(v)
        return self._weft_or_library(v)

    def _weft_or_library(self, v) -> str:
        if isinstance(v, Builtin):
            return f"builtin {v.name}"
        if isinstance(v, wt.scalar_base):
            return f"{wt.type_repr(type(v))}:{v.value!r}"
        if vt.is_composite(type(v)):
            return f"{self.type_(type(v))}{tuple(v._flat())!r}"
        if isinstance(v, np.generic):
            return f"numpy.{type(v).__name__}:{v!r}"
        if isinstance(v, type) or getattr(v, "is_annotation", False) is True or isinstance(v, _ArrayKindType):
            return self.type_(v)
        module = getattr(v, "__module__", None) or ""
        if isinstance(v, (types.FunctionType, types.BuiltinFunctionType)) and _trusted_module(module):
            return f"function {module}.{v.__qualname__}"
        if isinstance(v, typing.TypeVar):
            return f"typevar {v.__name__}"
        if v is typing.Any:
            return "Any"
        raise Doubt(f"cannot describe {type(v).__qualname__} value")

    def type_(self, t) -> str:
        """A type (weft scalar, vector, array, struct ... or an annotation object) as text."""
        known = _fixed.get(id(t))
        if known is not None and known[0] is t:
            return known[1]
        text = self._type(t)
        if _is_fixed(t):
            _fixed[id(t)] = (t, text)
        return text

    def _type(self, t) -> str:
        if getattr(t, "_kind", None) == "struct" and not isinstance(t, type):
            fields = ",".join(f"{n}:{self.type_(ft)}" for n, ft in t.vars.items())
            defaults = ",".join(f"{n}={self.value(t.cls.__dict__[n])}" for n in t.vars if n in t.cls.__dict__)
            return f"struct {t.__module__}.{t.key} {t.cname}({fields}|{defaults})"
        if isinstance(t, _ArrayKindType):
            return f"{type(t).__name__}[{self.type_(t.dtype)},{t.ndim}]"
        if isinstance(t, type):
            module = t.__module__
            if issubclass(t, enum.Enum):
                members = ",".join(f"{m.name}={self.value(m.value)}" for m in t)
                return f"enum class {module}.{t.__qualname__}({members})"
            if not _trusted_module(module):
                raise Doubt(f"cannot describe class {module}.{t.__qualname__}")
            shape = getattr(t, "_shape", None)
            scalar = getattr(t, "_scalar", None)
            extra = f"{shape}:{wt.type_repr(scalar)}" if shape is not None and scalar is not None and scalar is not t else ""
            return f"class {module}.{t.__qualname__}:{wt.type_repr(t)}{extra}"
        if getattr(t, "is_annotation", False) is True and callable(getattr(t, "kernel_type", None)):
            return f"annotation {self.type_(t.kernel_type())}"
        module = type(t).__module__
        if _trusted_module(module):
            return f"{module}.{type(t).__qualname__}:{t!s}"
        raise Doubt(f"cannot describe type {t!r}")

    def func(self, function) -> str:
        """A weft func by identity (``func module|key|index``), its definition described once in ``funcs``."""
        ident = self._func_ids.get(id(function))
        if ident is not None:
            return ident
        ident = f"func {function.module.name}|{function.key}|{function.index}"
        self._func_ids[id(function)] = ident
        parts = [f"native={function.native!r}"]
        for k, pyfunc in enumerate(function.overloads):
            parts.append(f"overload {k}:\n{self.function(pyfunc)}")
        grads = [("grad", function.custom_grad)] + [(f"grad {self.value(list(a))}", g) for a, g in function.custom_grads.items()]
        for what, extra in grads + [("replay", function.custom_replay)]:
            if extra is not None:
                parts.append(f"{what}:\n{self.function(extra)}")
        self.funcs[ident] = "\n".join(parts)
        return ident

    def reached(self, pyfunc) -> list:
        """The Python functions whose code a kernel's build uses: ``pyfunc`` and those of every func
        it references, transitively (overloads, custom gradients and replays)."""
        out, seen, todo = [], set(), [pyfunc]
        while todo:
            f = todo.pop()
            if id(f) in seen or id(f) not in self.calls:
                continue
            seen.add(id(f))
            out.append(f)
            for function in self.calls[id(f)]:
                extras = [function.custom_grad, function.custom_replay, *function.custom_grads.values()]
                todo.extend(g for g in [*function.overloads, *extras] if g is not None)
        return out


# descriptions of objects that never change (weft's builtins and types, modules, library functions),
# by identity (the object is kept, so its id is not reused)
_fixed: dict = {}


def _is_fixed(v) -> bool:
    if isinstance(v, (Builtin, types.ModuleType, _ArrayKindType, types.BuiltinFunctionType)):
        return True
    if isinstance(v, (type, types.FunctionType)):
        return v.__module__.startswith("weft.") and not (isinstance(v, type) and issubclass(v, enum.Enum))
    return False


def _is_constant(value) -> bool:
    """A value the frontend bakes into the code (``frontend.from_python``): numbers, weft scalars,
    vectors and matrices, struct instances."""
    if isinstance(value, (bool, int, float)) or isinstance(value, wt.scalar_base):
        return True
    return vt.is_composite(type(value)) or getattr(type(value), "_weft_struct_instance", False)


def _is_func(value) -> bool:
    return getattr(value, "_weft_kind", None) == "func"


def _trusted_module(module: str) -> bool:
    """Modules whose functions and classes weft resolves by what they are, fixed by their version."""
    root = module.split(".", 1)[0]
    return root in ("weft", "builtins", "math", "numpy", "typing", "ctypes")


def _is_alias(value, name) -> bool:
    """A func or builtin bound under another name (``TARGET = my_func``): the frontend watches it
    (``frontend._is_function_alias``)."""
    is_function = _is_func(value) or isinstance(value, Builtin)
    return is_function and getattr(value, "__name__", name) != name


# -- the key, the entry ------------------------------------------------------------------------------


def codegen_settings() -> str:
    """The ``wp.config`` settings that may change generated code, as text."""
    names = sorted(n for n in config.__all__ if n not in _RUNTIME_SETTINGS)
    return ",".join(f"{n}={getattr(config, n)!r}" for n in names)


def lookup_text(module, candidates, describer) -> str:
    """The cheap part of the key (see the module doc) as text: ``candidates`` are the
    ``(kernel, arg_types)`` the module would build now."""
    from . import cpu
    from . import module as mod
    from .disk_cache import VERSION, cache_dir, compiler_digest, headers_digest

    options = sorted((k, repr(v)) for k, v in module.options.items() if k not in mod.LAUNCH_OPTIONS)
    parts = [
        f"format {FORMAT}",
        VERSION,
        sys.version,
        headers_digest(),
        compiler_digest(),
        cpu.compiler_identity(cache_dir()),
        " ".join(cpu.BASE_FLAGS + cpu.GCC_FLAGS),
        repr(mod.build_options(module.options)),
        repr(mod.cpu_tuning(module.options)),
        module.name,
        repr(options),
        codegen_settings(),
    ]
    for kernel, arg_types in candidates:
        parts.append(
            f"kernel {kernel.key}|{kernel.index}|{sorted((k, repr(v)) for k, v in kernel.options.items())}|"
            f"backward={kernel.enable_backward}|{function_digest(kernel.pyfunc)}|"
            + ",".join(describer.type_(t) for t in arg_types)
        )
    return "\n".join(parts)


def full_text(candidates, describer) -> str:
    """The values everything the candidates' code references as text (see the module doc)."""
    parts = [f"kernel {k.key}|{k.index}:\n{describer.function(k.pyfunc)}" for k, _ in candidates]
    parts += [f"{ident}:\n{describer.funcs[ident]}" for ident in sorted(describer.funcs)]
    return "\n".join(parts)


def sorted_candidates(candidates) -> list:
    """Candidates in a fixed order, each once (a generic kernel's overloads share its instances)."""
    seen, out = set(), []
    for kernel, arg_types in candidates:
        ident = (kernel.key, kernel.index, tuple(arg_types))
        if ident not in seen:
            seen.add(ident)
            out.append((kernel, tuple(arg_types)))
    return sorted(out, key=lambda c: (c[0].key, c[0].index, repr(c[1])))


MAX_ENTRIES = 8  # builds kept per lookup text (other constant values), the latest ones


def _path(module, lookup: str) -> str:
    """The file of a lookup text."""
    from .disk_cache import cache_dir

    return os.path.join(cache_dir(), f"{module.stem()}_fast_{_digest(lookup)[:16]}.json")


def _write_sealed(path: str, body: dict):
    """Write ``body`` as JSON after a line holding its checksum, atomically."""
    from .disk_cache import _write_atomic

    text = json.dumps(body)
    _write_atomic(path, f"{_digest(text)}\n{text}".encode())


def _read_sealed(path: str):
    """The body written by ``_write_sealed``, or None (missing or damaged)."""
    try:
        with open(path, "rb") as f:
            data = f.read().decode()
        checksum, _, text = data.partition("\n")
        return json.loads(text) if _digest(text) == checksum else None
    except (OSError, ValueError, UnicodeDecodeError):
        return None


def record(module, candidates, instances, library_base: str, locs, both: bool):
    """Write the entry for a build just made: ``candidates`` (see ``lookup_text``), the built
    ``instances`` (kernel.KernelInstance), the library's path without extension, the renderer's
    source locations, and whether the library holds the backward passes too. Writes nothing when
    a referenced value cannot be described.

    One file per lookup text holds the names each function's text references (merged over every
    build with that text: they depend on the text alone) and one entry per full description (the
    latest ``MAX_ENTRIES``), so that builds with other constant values keep their own."""
    candidates = sorted_candidates(candidates)
    try:
        describer = Describer({}, record=True)
        lookup = lookup_text(module, candidates, describer)
        full = full_text(candidates, describer)
    except Doubt as e:
        log.debug(f"no fast cache entry for module {module.name}: {e}")
        return
    records = [
        {
            "kernel": [inst.kernel.key, inst.kernel.index],
            "types": ",".join(describer.type_(t) for t in inst.arg_types),
            "symbol": inst.symbol,
            "tid_ndim": inst.ir.tid_ndim,
            "holds_tiles": inst.holds_tiles,
            "spreads_tiles": inst.spreads_tiles,
            "backward_enabled": inst.backward_enabled,
            "backward_error": None if inst.backward_error is None else str(inst.backward_error),
            "has_backward": both and inst.backward_enabled,
        }
        for inst in instances
    ]
    path = _path(module, lookup)
    known = _read_sealed(path)
    if known is None or known.get("lookup") != lookup:
        known = {"lookup": lookup, "refs": {}, "entries": {}}
    known["refs"].update(describer.refs)
    entries = known["entries"]
    entries.pop(_digest(full), None)  # (re)inserted last: the latest
    entries[_digest(full)] = {
        "full": full,
        "library": os.path.basename(library_base),
        "locs": [list(loc) for loc in locs],
        "instances": records,
    }
    while len(entries) > MAX_ENTRIES:
        entries.pop(next(iter(entries)))
    _write_sealed(path, known)


class Loaded:
    """A verified entry: ``library`` (the path without extension), ``locs``, and per instance
    built, in build order, ``(kernel, arg_types, record, captures)``: its ``record`` (a dict, see
    ``record``) and the ``captures`` a launch compares (kernel.py ``_captures_changed``)."""

    def __init__(self, library, locs, found):
        self.library = library
        self.locs = locs
        self.found = found


def load(module, candidates):
    """The verified entry for building ``candidates`` now, or None (no entry, a damaged one, or a
    value that cannot be described: the caller lowers)."""
    from .disk_cache import cache_dir

    candidates = sorted_candidates(candidates)
    try:
        describer = Describer({}, record=False)
        lookup = lookup_text(module, candidates, describer)
        known = _read_sealed(_path(module, lookup))
        if known is None or known.get("lookup") != lookup:
            return None
        describer.refs = known["refs"]
        full = full_text(candidates, describer)
        body = known["entries"].get(_digest(full))
        if body is None or body.get("full") != full:
            log.debug(f"no fast cache entry of module {module.name} for these values: lowering it")
            return None
        by_ident = {(k.key, k.index, ",".join(describer.type_(t) for t in types_)): (k, types_) for k, types_ in candidates}
        found = []  # in the order they were built: the library's code and error locations follow it
        for r in body["instances"]:
            kernel, arg_types = by_ident[(r["kernel"][0], r["kernel"][1], r["types"])]
            captures = [c for f in describer.reached(kernel.pyfunc) for c in describer.captures[id(f)]]
            found.append((kernel, arg_types, r, captures))
        locs = [tuple(loc) for loc in body["locs"]]
        library = os.path.join(cache_dir(), body["library"])
    except Doubt as e:
        log.debug(f"no fast cache key for module {module.name}: {e}")
        return None
    except (ValueError, KeyError, TypeError) as e:  # an entry that does not fit: lower
        log.debug(f"unusable fast cache entry for module {module.name}: {type(e).__name__}: {e}")
        return None
    return Loaded(library, locs, found)


# -- binding a loaded library -------------------------------------------------------------------------


def candidates(module, extra) -> list:
    """``(kernel, arg_types)`` of what a build of ``module`` now would hold (``Module.ensure_built``):
    every non-generic kernel and declared overload without built CPU code, then ``extra``."""
    out = []
    for k in module.kernels:
        for kernel in list(k.overloads.values()) if k.is_generic else [k]:
            inst = kernel._instances.get(kernel._arg_types_key)
            if inst is None or inst.binding.forward_ptr is None:
                out.append((kernel, kernel._arg_types_key))
    return out + list(extra)


def _address(lib, record, mode: str) -> int:
    """The address of the entry point an entry's ``record`` names (AttributeError: none)."""
    return ctypes.cast(getattr(lib, f"{record['symbol']}_cpu_{mode}"), ctypes.c_void_p).value


def bind(module, kernel, arg_types):
    """Find what ``module`` would build now in the cache by the fast key and bind it: every
    instance the library holds is adopted (``Kernel.adopt``, not lowered) with its entry points;
    returns the instance of ``kernel`` for ``arg_types``, or None (the caller lowers). Called
    under the module lock."""
    from . import module as mod

    try:
        loaded = load(module, candidates(module, [(kernel, arg_types)]))
    except Exception as e:  # noqa: BLE001 -- any doubt about the fast key: lower, as without it
        log.debug(f"fast cache key of module {module.name} failed: {type(e).__name__}: {e}")
        loaded = None
    lib = loaded and mod._load_verified(loaded.library + ".so", loaded.library + ".sha256")
    source = loaded and loaded.library + ".cpp"  # read when asked for (Binding.source)
    if not lib or not os.path.exists(source):
        return None
    try:
        entries = [
            (_address(lib, r, "forward"), _address(lib, r, "backward") if r["has_backward"] else None)
            for _, _, r, _ in loaded.found
        ]
    except AttributeError:  # a symbol the library lacks: not the library the entry names
        return None
    instances = [k.adopt(types_, r, captures) for k, types_, r, captures in loaded.found]
    locs = list(loaded.locs)
    for inst, (_, _, r, _), (forward, backward) in zip(instances, loaded.found, entries):
        if inst.symbol != r["symbol"]:
            raise RuntimeError(f"kernel cache entry {loaded.library}: symbol {r['symbol']} is not {inst.symbol}")
        inst.binding.library, inst.binding.loc_base, inst.binding.module_locs = lib, 0, locs
        inst.binding.source_path = source
        inst.binding.forward_ptr, inst.binding.backward_ptr = forward, backward
    if any(inst.backward_enabled and inst.binding.backward_ptr is None for inst in instances):
        module.lazy_backward.append(mod._Batch(instances, None, source))
    return kernel._instances.get(tuple(arg_types))
