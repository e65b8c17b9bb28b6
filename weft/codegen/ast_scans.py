"""Syntactic scans of Python AST used by the frontend (which names a loop assigns, whether a
block may break or return). Pure functions of the AST; no IR, no types."""

from __future__ import annotations

import ast

from .. import types as wt


def literal_type(value):
    if isinstance(value, bool):
        return wt.bool
    if isinstance(value, int):
        return wt.int32 if -(2**31) <= value < 2**31 else wt.int64
    return wt.float32


def subscript_indices(node) -> list:
    """The index expressions of a subscript ``x[i, j]`` (``[i]`` for ``x[i]``)."""
    sl = node.slice
    return sl.elts if isinstance(sl, ast.Tuple) else [sl]


def walk_no_nested_loops(stmt):
    """Nodes of ``stmt``, not descending into loops (their break/continue are theirs)."""
    if isinstance(stmt, (ast.For, ast.While)):
        return
    stack = [stmt]
    while stack:
        n = stack.pop()
        yield n
        for child in ast.iter_child_nodes(n):
            if isinstance(child, (ast.For, ast.While, ast.FunctionDef, ast.Lambda)):
                continue
            stack.append(child)


def has_jump(body, kind) -> bool:
    return any(isinstance(n, kind) for s in body for n in walk_no_nested_loops(s))


def has_return(body) -> bool:
    return any(isinstance(n, ast.Return) for s in body for n in ast.walk(s))


def component_store_roots(body) -> set:
    """Names whose components a store changes: ``v`` in ``v[0] = x``, ``v.y += x``,
    ``s.inner.m[1, 1] = x``. For a value-type local (vector, matrix, struct) such a store rebinds
    the name to a new value, so loops must carry it like a plain assignment."""
    roots = set()
    for s in body:
        for n in ast.walk(s):
            if isinstance(n, (ast.Subscript, ast.Attribute)) and isinstance(n.ctx, ast.Store):
                root = n.value
                while isinstance(root, (ast.Subscript, ast.Attribute)):
                    root = root.value
                if isinstance(root, ast.Name):
                    roots.add(root.id)
    return roots


def assigned_names(body) -> set:
    names = set()
    for s in body:
        for n in ast.walk(s):
            if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store):
                names.add(n.id)
            elif isinstance(n, ast.AugAssign) and isinstance(n.target, ast.Name):
                names.add(n.target.id)
    return names


def rebound_names(body, resolve) -> set:
    """Names the statements rebind: assigned, augmented, with a component stored, or passed where
    a call updates its argument in place (``resolve(func_node)`` gives the called object, whose
    ``inout`` / ``inout_names`` list those arguments, e.g. ``wp.tile_matmul(a, b, out)``)."""
    names = assigned_names(body) | component_store_roots(body)
    for s in body:
        for n in ast.walk(s):
            if not isinstance(n, ast.Call):
                continue
            f = resolve(n.func)
            for pos in getattr(f, "inout", ()):
                if pos < len(n.args) and isinstance(n.args[pos], ast.Name):
                    names.add(n.args[pos].id)
            kw = getattr(f, "inout_names", ())
            names.update(k.value.id for k in n.keywords if k.arg in kw and isinstance(k.value, ast.Name))
    return names
