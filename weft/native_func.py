"""``@wp.func_native``: a func whose body is a C++ snippet.

The decorated Python function is a typed stub: its parameters name the snippet's variables (by
value, or as C++ references for ``wp.ref[T]`` parameters; an array is a ``weft::array_t<T>``,
whose ``a[i]`` is element i along the first dimension) and its return annotation the type of
what the snippet returns. ``adj_snippet`` is the adjoint body: it sees the forward parameters,
``adj_<name>`` for each parameter's adjoint (to accumulate into) and ``adj_ret`` for the
adjoint of the result; for a reference parameter ``adj_<name>`` holds the adjoint of its final
value on entry and must leave the adjoint of its initial value. Without ``adj_snippet`` no
gradient passes through the call (as in Warp). ``replay_snippet`` is what the backward pass
runs in place of the forward, for snippets whose side effects must not repeat.

The renderer (codegen/emit.py) writes the snippet into a C++ function; this module only builds
the instance that calls of the func name, with an IR holding its parameters and result type.
"""

from __future__ import annotations

import inspect

from . import types as wt
from .codegen import ir
from .codegen import typing_rules as tr
from .reference import is_reference


def native_instance(inst, function, pyfunc, arg_types) -> None:
    """Fill the ``FuncInstance`` ``inst`` of a ``@wp.func_native`` (called by its constructor)."""
    snippets = function.native
    sig = inspect.signature(pyfunc)
    names = list(sig.parameters)
    for name, t in zip(names, arg_types):
        if isinstance(t, wt.IndexedArrayType) or (getattr(t, "_kind", None) == "struct" and _has_array(t)):
            raise TypeError(
                f"func_native '{function.key}': parameter '{name}' is an indexed array or a struct holding "
                "arrays; weft's native snippets take values, arrays (weft::array_t<T>: a[i], a.data, a.shape[d], "
                "a.strides[d] in bytes) and wp.ref[T] parameters"
            )
    ret_ann = sig.return_annotation
    ret_t = None if ret_ann in (inspect.Signature.empty, None, type(None)) else tr.annotation_type(ret_ann)
    if ret_ann not in (inspect.Signature.empty, None, type(None)) and ret_t is None:
        raise TypeError(f"func_native '{function.key}': unsupported return annotation {ret_ann!r}")
    refs = [k for k, p in enumerate(sig.parameters.values()) if is_reference(p.annotation)]
    fn = ir.Function(inst.symbol, False)
    for name, t in zip(names, arg_types):
        fn.params.append(ir.Param(name, fn.new_var(t, label=name)))
    if refs:  # copy-out, as for Python funcs with references: (result, final reference values)
        items = ([ret_t] if ret_t is not None else []) + [arg_types[k] for k in refs]
        fn.ret_type = wt.TupleType(items)
    else:
        fn.ret_type = ret_t
    inst.ref_params = tuple(refs)
    inst.native = snippets
    inst.native_ret_type = ret_t
    inst.compiled = None
    inst.ir = fn
    inst.ret_type = fn.ret_type
    inst.value_ret_type = ret_t
    inst.has_side_effects = True  # a snippet may write anything; the backward pass replays its replay body
    inst.differentiable = snippets.adjoint is not None
    inst.source = snippets.forward
    inst.grad_ir = None
    inst.replay_ir = None
    inst.has_replay_variant = True


def _has_array(struct_t) -> bool:
    return any(
        wt.is_array_like(t) or (getattr(t, "_kind", None) == "struct" and _has_array(t))
        for t in struct_t.vars.values()
    )


def func_native(snippet: str, adj_snippet: str | None = None, replay_snippet: str | None = None):
    """Decorator: a func implemented by the C++ ``snippet`` (the body of a C++ function whose
    parameters are the stub's, by value, ``wp.ref[T]`` ones by reference).

    Args:
        snippet: the forward body; ``return <expr>;`` when the stub declares a return type.
        adj_snippet: the adjoint body (``adj_<param>`` and ``adj_ret``); None: no gradient.
        replay_snippet: what the backward pass runs instead of ``snippet`` (default: ``snippet``).

    Example::

        @wp.func_native("return a * a + b;")
        def square_plus(a: float, b: float) -> float: ...
    """
    if not isinstance(snippet, str):
        raise TypeError("wp.func_native takes the C++ snippet as a string: @wp.func_native(\"return x;\")")

    def deco(pyfunc):
        from .kernel import native_function

        return native_function(pyfunc, ir.NativeSnippets(snippet, adj_snippet, replay_snippet))

    return deco
