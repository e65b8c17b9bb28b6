"""Write the kernel builtin reference from the builtin registry.

Input: ``weft.builtins.registry.registry`` (name, doc, group and overloads of every builtin) and
the kernel-side library functions exported by ``weft`` (``@wp.func``s and constructors defined in
``weft.builtins``). Output: one reStructuredText page, ``builtins.rst``: per group, each builtin
with one signature per overload (parameter patterns and result type), what its type variables
stand for and whether gradients flow through it. Nothing here is typed by hand: a builtin added
to the registry appears on the next build.
"""

from __future__ import annotations

import inspect
import re

# Groups in the order the page lists them; a group missing here comes last, in name order.
GROUP_ORDER = [
    "scalar math", "operator", "vector math", "matrix math", "linalg", "quaternion", "transform", "spatial",
    "random", "geometry", "volumes", "utility",
]
HIDDEN_GROUPS = {"internal"}  # comparison helpers the frontend calls for operators; not public names


def _registry():
    import weft  # noqa: F401 (fills the registry)
    from weft.builtins.registry import registry

    return registry


def is_kernel_builtin(obj) -> bool:
    """A registry builtin, or a kernel-side library function defined in ``weft.builtins``."""
    from weft.builtins.registry import Builtin

    if isinstance(obj, Builtin):
        return True
    mod = getattr(obj, "__module__", None)
    return isinstance(mod, str) and mod.startswith("weft.builtins.") and callable(obj)


def public_builtins() -> dict:
    """name -> Builtin for every registry builtin exported as ``weft.<name>`` (the same object)."""
    import weft

    return {
        n: b for n, b in sorted(_registry().items())
        if b.group not in HIDDEN_GROUPS and getattr(weft, n, None) is b and n in weft.__all__
    }


def library_functions() -> dict:
    """name -> object for ``weft.__all__`` names defined in ``weft.builtins`` that are not registry builtins."""
    import weft
    from weft.builtins.registry import Builtin

    out = {}
    for n in weft.__all__:
        o = getattr(weft, n)
        if is_kernel_builtin(o) and not isinstance(o, Builtin):
            out[n] = o
    return dict(sorted(out.items()))


def documented_names() -> list[str]:
    return [f"weft.{n}" for n in list(public_builtins()) + list(library_functions())]


def _type_text(t) -> str:
    """A parameter or result pattern as printed in a signature."""
    from weft.builtins.registry import AnyOf, DTypeOf, TypeVar

    if isinstance(t, (TypeVar, AnyOf)):
        return t.name
    if isinstance(t, DTypeOf):
        return f"Scalar[{t.var}]"
    if t is None:
        return "None"
    name = getattr(t, "__name__", None) or repr(t)
    return re.sub(r"[^\w\[\](), .]", "", name)


def _result_text(ov) -> str:
    from weft.builtins.registry import TypeVar

    r = ov.returns
    if r is None:
        return "None"
    if isinstance(r, TypeVar) or isinstance(r, type) or not callable(r) or getattr(r, "_kind", None) == "struct":
        return _type_text(r)
    return "Result"  # a result rule: said in words under the signatures


def _result_rule_doc(ov) -> str | None:
    from weft.builtins.registry import TypeVar

    r = ov.returns
    if r is None or isinstance(r, (TypeVar, type)) or not callable(r) or getattr(r, "_kind", None) == "struct":
        return None
    doc = getattr(r, "doc", None)
    if doc is None:
        return "depends on the argument types"
    names = [f"``{n}``" for n, _p in ov.params]
    return doc.format(*names)


def _signature(name, ov, defaults) -> str:
    params = []
    for pname, pattern in ov.params:
        text = f"{pname}: {_type_text(pattern)}"
        if pname in defaults:
            text += f" = {defaults[pname]!r}"
        params.append(text)
    return f"weft.{name}({', '.join(params)}) -> {_result_text(ov)}"


def _type_var_lines(b) -> list[str]:
    """What each type variable of the builtin's overloads stands for (one line per distinct meaning)."""
    from weft.builtins.registry import AnyOf, DTypeOf, TypeVar

    seen = {}
    for ov in b.overloads:
        for _n, pattern in ov.params:
            if isinstance(pattern, TypeVar) and pattern.doc:
                seen.setdefault((pattern.name, pattern.doc), None)
            elif isinstance(pattern, AnyOf):
                seen.setdefault((pattern.name, f"any {pattern.name} type, not bound to the other parameters"), None)
            elif isinstance(pattern, DTypeOf):
                seen.setdefault((f"Scalar[{pattern.var}]", f"the scalar type of {pattern.var}'s components"), None)
    return [f"``{n}``: {d}" for n, d in seen]


def _differentiable_text(b) -> str:
    flags = [ov.differentiable for ov in b.overloads]
    if all(flags):
        return "yes"
    if not any(flags):
        return "no"
    which = [i + 1 for i, f in enumerate(flags) if f]
    return "overloads " + ", ".join(map(str, which)) + " (counting the signatures above from 1)"


def escape_plain(text: str) -> str:
    """Registry docs are plain text with ````literals````: escape what reStructuredText would read as
    markup (``|x|``, ``*``, a trailing ``_``) outside the literals."""
    parts = re.split(r"(``.+?``)", text)
    for i in range(0, len(parts), 2):
        s = parts[i].replace("\\", "\\\\").replace("|", r"\|").replace("*", r"\*")
        parts[i] = re.sub(r"(\w)_(?=\W|$)", r"\1\\_", s)
    return "".join(parts)


def _indent(lines, n=3):
    return [(" " * n + ln) if ln else "" for ln in lines]


def builtin_rst(name, b) -> list[str]:
    sigs = [_signature(name, ov, b.defaults) for ov in b.overloads] or [f"weft.{name}()"]
    lines = [f".. py:function:: {sigs[0]}"] + [f"                 {s}" for s in sigs[1:]] + [""]
    body = [escape_plain(ln) for ln in inspect.cleandoc(b.__doc__ or "").splitlines()]
    body += ["", f"**Differentiable:** {_differentiable_text(b)}."]
    side = any(ov.side_effect for ov in b.overloads)
    if side:
        body += ["", "**Side effects:** writes memory or prints; the backward pass does not run it again."]
    tvars = _type_var_lines(b)
    rules = sorted({r for ov in b.overloads if (r := _result_rule_doc(ov)) is not None})  # one line per rule
    if tvars or rules:
        body += ["", "**Types:**", ""] + [f"- {t}" for t in tvars] + [f"- ``Result``: {r}" for r in rules]
    return lines + _indent(body) + [""]


def library_rst(name, obj) -> list[str]:
    from weft.kernel import Function

    if isinstance(obj, Function):
        try:
            sig = str(inspect.signature(obj))
        except (TypeError, ValueError):
            sig = "(...)"
        lines = [f".. py:function:: weft.{name}{sig}", ""]
        body = [escape_plain(ln) for ln in inspect.cleandoc(obj.__doc__ or "").splitlines()]
        body += ["", "**Differentiable:** yes (a ``@wp.func`` built from differentiable builtins)."]
        return lines + _indent(body) + [""]
    return [f".. autofunction:: weft.{name}", ""]


def _title(group: str) -> str:
    return group[:1].upper() + group[1:]


def page_rst() -> str:
    """The whole builtin reference page."""
    builtins = public_builtins()
    groups: dict[str, list] = {}
    for n, b in builtins.items():
        groups.setdefault(b.group, []).append(n)
    order = [g for g in GROUP_ORDER if g in groups] + sorted(set(groups) - set(GROUP_ORDER))
    head = "Kernel builtins"
    lines = [
        head, "=" * len(head), "",
        "Functions that kernels and funcs call (``wp.sin(x)``, ``wp.dot(a, b)``...), generated from weft's builtin"
        " registry. Each signature is one overload: parameter names, the types it accepts and its result"
        " type. Capitalised names are type variables: every parameter with the same variable takes the same"
        " type, and the lines under **Types** say what each accepts. Builtins also work when called from"
        " Python on weft values, with the same results.", "",
        "**Differentiable** says whether gradients flow through a call in the backward pass"
        " (``wp.Tape``); arguments of integer type never carry gradients.", "",
        f"{len(builtins)} builtins in {len(order)} groups, plus {len(library_functions())} library functions"
        " written as funcs.", "",
    ]
    for g in order:
        title = _title(g)
        lines += [title, "-" * len(title), "", ", ".join(f":func:`~weft.{n}`" for n in groups[g]), ""]
        for n in groups[g]:
            lines += builtin_rst(n, builtins[n])
    lib = library_functions()
    title = "Library functions and constructors"
    lines += [title, "-" * len(title), "",
              "Kernel-side functions written in Python on top of the builtins (``@wp.func``), and value"
              " constructors that the compiler lowers itself. They work in Python too.", "",
              ", ".join(f":func:`~weft.{n}`" for n in lib), ""]
    for n, o in lib.items():
        lines += library_rst(n, o)
    return "\n".join(lines) + "\n"
