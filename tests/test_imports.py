"""Imports point down the pipeline: no circle among the compiler's modules (``weft/codegen``).

The test reads every module of the package with ``ast`` and collects what it imports, at the top
and inside functions alike (a deferred import is still a dependency), except under
``if TYPE_CHECKING:`` (annotations only). A circle inside ``codegen/`` fails with the modules on it.
"""

from __future__ import annotations

import ast
import os

import pytest

pytestmark = pytest.mark.fixed_device("reads source files")

PACKAGE = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "weft")


def _modules() -> dict:
    """Dotted module name -> file path, for every module of the package."""
    out = {}
    root = os.path.dirname(PACKAGE)
    for folder, _, files in os.walk(PACKAGE):
        for name in files:
            if name.endswith(".py"):
                path = os.path.join(folder, name)
                dotted = os.path.relpath(path, root)[:-3].replace(os.sep, ".")
                out[dotted.removesuffix(".__init__")] = path
    return out


def _is_type_checking(node) -> bool:
    test = node.test
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def _imports(tree) -> list:
    """The import statements of a module, skipping ``if TYPE_CHECKING:`` blocks."""
    found = []

    def visit(node):
        if isinstance(node, ast.If) and _is_type_checking(node):
            for child in node.orelse:
                visit(child)
            return
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            found.append(node)
        for child in ast.iter_child_nodes(node):
            visit(child)

    visit(tree)
    return found


def import_graph() -> dict:
    """Module -> the package modules it imports."""
    modules = _modules()
    graph = {}
    for name, path in modules.items():
        package = name if path.endswith("__init__.py") else name.rsplit(".", 1)[0]
        deps = set()
        with open(path) as f:
            tree = ast.parse(f.read())
        for node in _imports(tree):
            if isinstance(node, ast.Import):
                deps.update(a.name for a in node.names if a.name in modules)
                continue
            if node.level:
                parts = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join(parts + ([node.module] if node.module else []))
            else:
                base = node.module or ""
            for alias in node.names:
                target = f"{base}.{alias.name}"
                deps.add(target if target in modules else base)
        graph[name] = {d for d in deps if d in modules and d != name}
    return graph


def cycles(graph: dict) -> list:
    """The strongly connected components of more than one module (Tarjan)."""
    index, low, stack, on_stack, out = {}, {}, [], set(), []
    counter = [0]

    def visit(v):
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on_stack.add(v)
        for w in sorted(graph.get(v, ())):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                out.append(sorted(component))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return out


def test_no_import_circle_inside_the_compiler():
    graph = import_graph()
    codegen = {
        m: {d for d in deps if d.startswith("weft.codegen.")}
        for m, deps in graph.items()
        if m.startswith("weft.codegen.")
    }
    assert len(codegen) > 10  # the walk found the package
    assert cycles(codegen) == []


def test_the_build_stages_do_not_import_each_other_back():
    graph = import_graph()
    assert "weft.runtime.module" not in graph["weft.runtime.nvrtc"]  # both use runtime.disk_cache
    assert "weft.codegen.emit" not in graph["weft.codegen.staging"]  # both use codegen.cnames


def test_the_walk_finds_circles():
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}
    assert cycles(graph) == [["a", "b", "c"]]
    tree = ast.parse("import typing\nif typing.TYPE_CHECKING:\n    from x import y\nelse:\n    import z\n")
    assert [type(n).__name__ for n in _imports(tree)] == ["Import", "Import"]


def test_the_type_vocabulary_is_not_on_a_circle():
    """scalar_types <- vector_types <- types (the public re-export): none imports back."""
    on_circles = {m for c in cycles(import_graph()) for m in c}
    assert not on_circles & {"weft.scalar_types", "weft.vector_types", "weft.types"}
