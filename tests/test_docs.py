"""The public API is what ``__all__`` says, every public name has a docstring, and the documentation
site's generated reference documents each one.

The reference pages are written by ``docs/_ext/apigen.py`` (imported here without Sphinx); the
site build itself (``python -m sphinx -W ...``) runs in CI after the test suite (``.ci/run``), and
here only when Sphinx is installed and ``WEFT_TEST_DOCS_BUILD=1``.
"""

import importlib
import inspect
import os
import subprocess
import sys
import types

import pytest

import weft

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DOCS = os.path.join(ROOT, "docs")
sys.path.insert(0, os.path.join(DOCS, "_ext"))

import apigen  # noqa: E402
import builtins_ref  # noqa: E402

# weft submodules that are implementation, reachable as attributes but not part of the API
IMPLEMENTATION_MODULES = {
    "array_annotation", "array_constructors", "array_layout", "builtins", "codegen", "constants", "determinism",
    "fabric_array", "geometry", "graph_coloring", "indexed_array", "native_func", "reference", "runtime",
    "scalar_types", "tape", "type_queries", "vector_types", "tile", "kernel", "kernel_access", "struct", "array",
    "checkpoint", "context", "log", "sparse", "forward_mode",
    "examples",  # the demos (python -m weft.examples.NAME): an attribute once a test has imported one
}  # fmt: skip


def _public_attributes(mod):
    return {n for n in vars(mod) if not n.startswith("_")}


def test_all_names_exist_and_are_public():
    assert len(weft.__all__) == len(set(weft.__all__)), "duplicates in weft.__all__"
    missing = [n for n in weft.__all__ if not hasattr(weft, n)]
    assert not missing, f"weft.__all__ names that weft lacks: {missing}"
    private = [n for n in weft.__all__ if n.startswith("_")]
    assert not private, f"private names in weft.__all__: {private}"


def test_every_public_name_is_in_all():
    """A new public name must be added to ``weft.__all__`` (and so gets documented), or be private."""
    listed = set(weft.__all__)
    extra = sorted(
        n for n in _public_attributes(weft)
        if n not in listed and not (isinstance(getattr(weft, n), types.ModuleType) and n in IMPLEMENTATION_MODULES)
    )
    assert not extra, f"public names of weft missing from weft.__all__ (add them, or make them private): {extra}"


def test_star_import_gives_all():
    ns = {}
    exec("from weft import *", ns)
    assert set(weft.__all__) <= set(ns)


@pytest.mark.parametrize("modname", sorted(apigen.PUBLIC_MODULES))
def test_submodule_all_exists(modname):
    mod = importlib.import_module(modname)
    assert isinstance(getattr(mod, "__all__", None), (list, tuple)), f"{modname} needs an __all__"
    missing = [n for n in mod.__all__ if not hasattr(mod, n)]
    assert not missing, f"{modname}.__all__ names it lacks: {missing}"


def _all_public():
    """(dotted name, object) for weft.__all__ and the public submodules' __all__."""
    out = [(f"weft.{n}", getattr(weft, n)) for n in weft.__all__]
    for modname in apigen.PUBLIC_MODULES:
        mod = importlib.import_module(modname)
        out += [(f"{modname}.{n}", getattr(mod, n)) for n in mod.__all__]
    return out


def _has_docstring(qualname, obj) -> bool:
    short = qualname.rsplit(".", 1)[-1]
    if qualname.startswith("weft.config."):
        return bool(apigen.config_docs().get(short))
    if any(obj is b for b in apigen.PY_BUILTIN_ALIASES):
        return True
    if isinstance(obj, (bool, int, float, str, dict, tuple, list)) or type(obj).__module__ == "typing":
        return bool(apigen.DATA_DOCS.get(short))  # values hold no docstring: the reference's text is checked
    if isinstance(obj, types.ModuleType):
        return bool((obj.__doc__ or "").strip())
    if isinstance(obj, type):
        doc = obj.__dict__.get("__doc__")
    else:
        doc = obj.__doc__
        if doc == type(obj).__doc__ and not type(obj).__module__.startswith("weft"):
            doc = None  # inherited from a Python type, says nothing about this object
    return bool((doc or "").strip())


def test_every_public_name_has_a_docstring():
    missing = sorted(q for q, o in _all_public() if not _has_docstring(q, o))
    assert not missing, f"public names without a docstring ({len(missing)}): {missing}"


def test_every_public_name_is_in_the_reference():
    documented = apigen.documented_names()
    missing = sorted(q for q, _o in _all_public() if q not in documented)
    assert not missing, f"public names the API reference leaves out: {missing}"


def test_builtin_reference_covers_the_registry():
    """Every public kernel builtin gets one signature per overload and a differentiability line."""
    page = builtins_ref.page_rst()
    for name, b in builtins_ref.public_builtins().items():
        assert f".. py:function:: weft.{name}(" in page, name
        for ov in b.overloads:
            assert builtins_ref._signature(name, ov, b.defaults) in page, (name, ov.signature())
    assert page.count("**Differentiable:**") >= len(builtins_ref.public_builtins())
    sin = page[page.index(".. py:function:: weft.sin(") :].split("\n\n.. py:function::")[0]
    assert "weft.sin(x: Float) -> Float" in sin and "**Differentiable:** yes." in sin


def test_compat_table_is_generated_from_the_run():
    sys.path.insert(0, DOCS)
    try:
        import compat_table
    finally:
        sys.path.remove(DOCS)
    run = compat_table._load(compat_table.RUN_JSON)
    baseline = compat_table._load(compat_table.BASELINE_JSON)
    text = compat_table.table(run, baseline)
    assert text.count("\n| ") == len(baseline["areas"]) + 1  # one row per area, then the total
    for area, got, warp, _files in compat_table.rows(run, baseline):
        assert f"| {area} |" in text and got <= sum(run["areas"].get(area, {}).values())
        assert warp == baseline["areas"][area]["passed"]


@pytest.mark.skipif(
    os.environ.get("WEFT_TEST_DOCS_BUILD") != "1", reason="set WEFT_TEST_DOCS_BUILD=1 (CI builds the site)"
)
def test_site_builds_without_warnings(tmp_path):
    pytest.importorskip("sphinx")
    proc = subprocess.run(
        [sys.executable, "-m", "sphinx", "-W", "-q", "-b", "html", DOCS, str(tmp_path / "html")],
        capture_output=True, text=True,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    from sphinx.util.inventory import InventoryFile

    with open(tmp_path / "html" / "objects.inv", "rb") as f:
        inventory = InventoryFile.load(f, "", os.path.join)
    in_site = {name for kind, entries in inventory.items() if kind.startswith("py:") for name in entries}
    missing = sorted(q for q, _o in _all_public() if q not in in_site)
    assert not missing, f"public names missing from the built site's objects.inv: {missing}"


def test_docstring_signature_text_is_readable():
    """Public callables whose signature Python cannot see say how to call them in their docstring."""
    unreadable = []
    for q, o in _all_public():
        if builtins_ref.is_kernel_builtin(o) or not callable(o) or isinstance(o, type):
            continue
        try:
            sig = inspect.signature(o)
        except (TypeError, ValueError):
            continue
        if str(sig) == "(*args, **kwargs)" and "(" not in (o.__doc__ or ""):
            unreadable.append(q)
    assert not unreadable, unreadable


# Shorthands for array types (``wp.array2d(dtype=float)`` is ``wp.array(dtype=float, ndim=2)``): their
# parameters are those of the class they spell, documented there. Value types (``wp.vec3``,
# ``wp.float32``), whose constructors take components, are left out by ``type_is_value``.
_ARRAY_TYPE_SHORTHANDS = {
    *(f"weft.{kind}{n}d" for kind in ("array", "indexedarray") for n in range(1, 5)),
    "weft.fabricarrayarray", "weft.indexedfabricarrayarray",
}  # fmt: skip

# Callables still without an ``Args:`` section (issue 25): shrink this list, never grow it.
_ARGS_PENDING = {
    "weft.address_of", "weft.BvhConstructor", "weft.BvhQuery", "weft.BvhQueryTiled", "weft.capture_end",
    "weft.capture_launch", "weft.constant", "weft.DeterministicMode", "weft.Device", "weft.dtype_from_numpy",
    "weft.dtype_to_numpy", "weft.fixedarray", "weft.Function", "weft.get_module", "weft.Graph",
    "weft.HashGridQuery", "weft.jax_callable", "weft.launch_tiled", "weft.MeshQuery",
    "weft.MeshQueryPoint", "weft.MeshQueryRay", "weft.Module", "weft.overload", "weft.ScopedDevice", "weft.tid",
    "weft.torch_kernel", "weft.transform_expand", "weft.types.Reference", "weft.types.TupleType",
    "weft.types.is_tile", "weft.utils.GraphColoringAlgorithm", "weft.utils.MeshEdge", "weft.utils.array_cast",
    "weft.utils.array_scan", "weft.utils.create_warp_function", "weft.utils.radix_sort_pairs",
    "weft.utils.runlength_encode", "weft.utils.segmented_sort_pairs", "weft.autograd.FunctionMetadata",
    "weft.autograd.jacobian_fd", "weft.sparse.BsrMatrix", "weft.sparse.bsr_axpy", "weft.sparse.bsr_block_index",
    "weft.sparse.bsr_compress", "weft.sparse.bsr_copy", "weft.sparse.bsr_diag", "weft.sparse.bsr_from_triplets",
    "weft.sparse.bsr_get_diag", "weft.sparse.bsr_mv", "weft.sparse.bsr_row_index",
    "weft.sparse.bsr_set_diag", "weft.sparse.bsr_set_identity",
    "weft.sparse.bsr_set_transpose", "weft.sparse.bsr_set_zero",
    "weft.sparse.bsr_matrix_t", "weft.optim.linear.BiCGSTAB", "weft.optim.linear.CG", "weft.optim.linear.CR",
    "weft.optim.linear.GMRES", "weft.optim.linear.LinearSolverState", "weft.optim.linear.aslinearoperator",
    "weft.optim.linear.bicgstab", "weft.optim.linear.cr", "weft.optim.linear.gmres",
    "weft.optim.linear.preconditioner",
}  # fmt: skip


def _parameters(obj) -> list[str] | None:
    """The parameters a caller passes (``self`` / ``cls`` left out); None when Python cannot tell."""
    if isinstance(obj, importlib.import_module("weft.tile.ops").TileOperation):
        return [p for p in obj.signature.split(",") if p.strip()]
    if isinstance(obj, type):
        if obj.__init__ is object.__init__:
            return []
        obj = obj.__init__
    try:
        return [p for p in inspect.signature(obj).parameters if p not in ("self", "cls")]
    except (TypeError, ValueError):
        return None


def _documents_arguments(obj) -> bool:
    doc = (obj.__doc__ or "") + ((obj.__dict__.get("__init__") and obj.__init__.__doc__ or "") if isinstance(obj, type) else "")
    return any(line.strip() in ("Args:", "Arguments:") for line in doc.splitlines())


def test_every_public_callable_with_parameters_documents_them():
    """Every public callable taking parameters has a Google-style ``Args:`` section (STYLE.md rule 32)."""
    missing, seen = [], set()
    for q, o in _all_public():
        if not callable(o) or id(o) in seen or builtins_ref.is_kernel_builtin(o):
            continue  # kernel builtins: the builtin reference lists each overload's parameters
        seen.add(id(o))
        if q in _ARRAY_TYPE_SHORTHANDS or weft.types.type_is_value(o):
            continue
        if isinstance(o, type) and issubclass(o, BaseException):
            continue
        if _parameters(o) and not _documents_arguments(o) and q not in _ARGS_PENDING:
            missing.append(q)
    assert not missing, f"public callables whose docstring has no Args: section ({len(missing)}): {missing}"
    fixed = sorted(q for q, o in _all_public() if q in _ARGS_PENDING and _documents_arguments(o))
    assert not fixed, f"documented now: remove from _ARGS_PENDING: {fixed}"
