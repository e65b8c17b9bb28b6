"""Write the API reference pages of the documentation from ``weft`` itself.

Input: ``weft.__all__`` and the ``__all__`` of the public submodules (``PUBLIC_MODULES``).
Output: reStructuredText pages under ``docs/api/`` (one per topic of the top-level namespace, one
per submodule, and ``index.rst``), each name documented once per page with an autodoc directive
(``autofunction`` / ``autoclass``) or, for objects autodoc cannot read (kernel builtins, tile
operations, constants), with a ``py:function`` / ``py:data`` directive built from the object.
Kernel builtins are documented by ``builtins_ref`` from the builtin registry.

``documented_names()`` returns every dotted name the pages document; ``tests/test_docs.py`` checks
it against the public names, so it imports this module without Sphinx.
"""

from __future__ import annotations

import importlib
import inspect
import os
import types as pytypes
from dataclasses import dataclass, field

import builtins_ref

# Submodules whose public names (their ``__all__``) get a reference page of their own.
PUBLIC_MODULES = {
    "weft.types": "Type objects, type factories and type queries (``wp.types``).",
    "weft.autograd": "Gradient checks and Jacobians (``wp.autograd``).",
    "weft.utils": "Array utilities: reductions, scans, sorts, casts, timers (``wp.utils``).",
    "weft.optim": "Gradient-based optimizers (``wp.optim``).",
    "weft.optim.linear": "Iterative linear solvers over sparse matrices and operators (``weft.optim.linear``).",
    "weft.interop": "Zero-copy exchange with PyTorch, JAX and DLPack (``wp.interop``; every name is also in ``wp``).",
    "weft.sparse": "Block-sparse (BSR) matrices and their operations (``import weft.sparse``).",
    "weft.distributed": "MPI collectives and halo exchange with gradients (``wp.distributed``).",
    "weft.config": "Global settings, read when kernels are built or launched (``wp.config``).",
}

# Topics of the top-level namespace: (page, title, intro, modules whose objects belong to it).
TOPICS = [
    ("kernels", "Kernels, funcs and structs", "Decorators that compile Python functions and classes, and the "
     "objects they return.", ("weft.kernel", "weft.native_func", "weft.struct", "weft.reference")),
    ("language", "Kernel language intrinsics", "Names that only mean something inside a ``@wp.kernel`` or "
     "``@wp.func`` (thread index, atomics, printing, build-time evaluation).", ("weft.codegen.intrinsics",)),
    ("arrays", "Arrays", "Array classes, constructors, copies and element-wise maps.",
     ("weft.array", "weft.indexed_array", "weft.fabric_array", "weft.array_annotation", "weft.runtime.array_map",
      "weft.array_constructors")),
    ("types", "Scalar, vector and matrix types", "Scalar types, composite value types and their factories.",
     ("weft.types", "weft.scalar_types", "weft.vector_types", "weft.type_queries")),
    ("autodiff", "Tape and gradients", "Recording launches and running them backward.",
     ("weft.tape", "weft.checkpoint")),
    ("runtime", "Launching, modules and the kernel cache", "Launches, modules, build options and ahead-of-time "
     "images.", ("weft.runtime.launch", "weft.runtime.launch_object", "weft.runtime.module", "weft.runtime.aot",
                 "weft.tile.launch", "weft", "weft.determinism", "weft.utils")),
    ("devices", "Devices, streams, events and graphs", "Choosing where arrays live and kernels run, and "
     "ordering work on GPUs.", ("weft.runtime.device", "weft.runtime.stream", "weft.runtime.graph")),
    ("geometry", "Geometry objects", "Host-side meshes, BVHs, hash grids, sparse volumes and marching cubes; "
     "their kernel-side queries are in :doc:`builtins`.", ("weft.geometry",)),
    ("tiles", "Tiles", "Block-cooperative tile values and operations (kernels launched with "
     "``wp.launch_tiled`` or a ``block_dim``).", ("weft.tile",)),
    ("interop", "Interop", "Exchanging arrays, devices, dtypes and streams with PyTorch, JAX and DLPack.",
     ("weft.interop",)),
    ("errors", "Errors and logging", "Exceptions weft raises and log levels.", ("weft.codegen.errors", "weft.log")),
    ("constants", "Constants", "Mathematical constants, usable in Python and captured by kernels.",
     ("weft.constants",)),
]

# Values without a docstring of their own (numbers, type variables): what the reference says.
DATA_DOCS = {
    "pi": "pi, the ratio of a circle's circumference to its diameter (float).",
    "PI": "Same as ``wp.pi``.",
    "tau": "tau = 2 pi (float).",
    "TAU": "Same as ``wp.tau``.",
    "half_pi": "pi / 2 (float).",
    "HALF_PI": "Same as ``wp.half_pi``.",
    "e": "Euler's number, the base of natural logarithms (float).",
    "E": "Same as ``wp.e``.",
    "ln2": "The natural logarithm of 2 (float).",
    "LN2": "Same as ``wp.ln2``.",
    "ln10": "The natural logarithm of 10 (float).",
    "LN10": "Same as ``wp.ln10``.",
    "log2e": "The base-2 logarithm of e (float).",
    "LOG2E": "Same as ``wp.log2e``.",
    "log10e": "The base-10 logarithm of e (float).",
    "LOG10E": "Same as ``wp.log10e``.",
    "phi": "The golden ratio (1 + sqrt(5)) / 2 (float).",
    "PHI": "Same as ``wp.phi``.",
    "inf": "Positive infinity (float); ``-wp.inf`` is negative infinity.",
    "INF": "Same as ``wp.inf``.",
    "nan": "A quiet NaN (float); test with ``wp.isnan``.",
    "NAN": "Same as ``wp.nan``.",
    "LOG_DEBUG": "Log level: everything, including cache hits and build details (``wp.config.log_level``).",
    "LOG_INFO": "Log level: module builds and loads.",
    "LOG_WARNING": "Log level: warnings only (the default).",
    "LOG_ERROR": "Log level: errors only.",
    "Float": "Type variable for kernel and func parameters: any floating-point scalar type (float16, bfloat16, "
             "float32, float64). Each type a call passes gets its own instance of the func.",
    "Int": "Type variable for kernel and func parameters: any integer scalar type (signed or unsigned, 8 to 64 "
           "bits).",
    "Scalar": "Type variable for kernel and func parameters: any numeric scalar type (integer or floating point).",
    "BSR_STATUS_SUCCESS": "Status code of a BSR product or assignment that fit in the capacity it was given.",
    "BSR_STATUS_ROW_CAPACITY_EXCEEDED": "Status code of a BSR operation whose result needed more blocks than the "
                                        "preallocated capacity.",
    "ARRAY_TYPE_REGULAR": "Kind code of a plain ``wp.array`` (``array_type_id``).",
    "ARRAY_TYPE_INDEXED": "Kind code of a ``wp.indexedarray``.",
    "ARRAY_TYPE_FABRIC": "Kind code of a ``wp.fabricarray``.",
    "ARRAY_TYPE_FABRIC_INDEXED": "Kind code of a ``wp.indexedfabricarray``.",
    "float_types": "The floating-point scalar types, as a tuple.",
    "int_types": "The integer scalar types, as a tuple.",
    "scalar_types": "Every numeric scalar type, as a tuple.",
    "np_dtype_to_warp_type": "Mapping from NumPy dtypes to weft scalar types.",
    "warp_type_to_np_dtype": "Mapping from weft scalar types to NumPy dtypes.",
}


@dataclass
class Page:
    """One generated page: its file name, title, intro and the entries (names, dotted) it documents."""

    slug: str
    title: str
    intro: str
    entries: list = field(default_factory=list)  # (qualified name, object)


def _is_builtin_like(obj) -> bool:
    """Kernel builtins in the registry and the library funcs defined with them: documented by builtins_ref."""
    return builtins_ref.is_kernel_builtin(obj)


def _home_module(obj) -> str:
    mod = getattr(obj, "__module__", None)
    if not isinstance(mod, str) or type(obj).__module__.startswith("weft.tile"):
        mod = type(obj).__module__
    return mod


def topic_of(name: str, obj) -> str:
    """The topic page of a top-level name."""
    if isinstance(obj, pytypes.ModuleType):
        return "modules"
    if _is_builtin_like(obj):
        return "builtins"
    if any(obj is b for b in PY_BUILTIN_ALIASES):
        return "types"
    if name in DATA_DOCS and not callable(obj):
        return "errors" if name.startswith("LOG_") else ("types" if name in ("Float", "Int", "Scalar") else "constants")
    mod = _home_module(obj)
    best, best_len = None, -1
    for slug, _title, _intro, modules in TOPICS:
        for m in modules:
            if (mod == m or mod.startswith(m + ".")) and len(m) > best_len:
                best, best_len = slug, len(m)
    if best is None:
        raise LookupError(f"weft.{name} (defined in {mod}) belongs to no API reference topic: add its module to TOPICS")
    return best


def _signature_of(obj) -> str | None:
    """A signature to print for objects autodoc cannot introspect (tile operations, kernel-only stubs)."""
    sig = getattr(obj, "signature", None)
    if isinstance(sig, str):
        return f"({sig})"
    return None


def _doc_lines(text: str) -> list[str]:
    return inspect.cleandoc(text or "").splitlines()


def _google_lines(text: str) -> list[str]:
    """A Google-style docstring as reStructuredText (napoleon's conversion, which autodoc applies to the
    objects it reads; tile operations are written with ``py:function`` directives, so it is applied here)."""
    from sphinx.ext.napoleon import Config
    from sphinx.ext.napoleon.docstring import GoogleDocstring

    return GoogleDocstring(_doc_lines(text), Config(napoleon_use_rtype=False)).lines()


def config_docs() -> dict:
    """setting name -> description, from the ``Attributes:`` section of ``weft.config``'s docstring."""
    import weft.config

    text = inspect.cleandoc(weft.config.__doc__).split("Attributes:", 1)[1]
    docs, name = {}, None
    for line in text.splitlines():
        if line.startswith("    ") and not line.startswith("        ") and ":" in line:
            name, rest = line.strip().split(":", 1)
            docs[name] = rest.strip()
        elif name and line.strip():
            docs[name] += " " + line.strip()
    return docs


PY_BUILTIN_ALIASES = {
    float: "``wp.float(x)``: Python's ``float``; in kernels it converts ``x`` to float32, as ``float(x)`` does.",
    int: "``wp.int(x)``: Python's ``int``; in kernels it converts ``x`` to int32, as ``int(x)`` does.",
}


def _entry_rst(qualname: str, obj, name: str | None = None) -> list[str]:
    """The directive(s) documenting one object, written as ``name`` (relative to the page's module)."""
    short = qualname.rsplit(".", 1)[-1]
    in_config = qualname.startswith("weft.config.")
    qualname = name or qualname
    if in_config:
        value = f"   :value: {obj!r}" if isinstance(obj, (bool, int, float, str, type(None))) else ""
        return [f".. py:data:: {qualname}", value, "", f"   {config_docs()[short]}", ""]
    if any(obj is b for b in PY_BUILTIN_ALIASES):
        return [f".. py:function:: {qualname}(x)", "", f"   {PY_BUILTIN_ALIASES[obj]}", ""]
    if isinstance(obj, type):
        if issubclass(obj, BaseException):
            return [f".. autoexception:: {qualname}", ""]
        options = ["   :members:"] if not short.startswith(("vec", "mat", "quat", "transform", "spatial")) else []
        return [f".. autoclass:: {qualname}", *options, ""]
    if inspect.isfunction(obj) or inspect.ismethod(obj):
        return [f".. autofunction:: {qualname}", ""]
    if callable(obj) and _signature_of(obj) is not None:
        lines = [f".. py:function:: {qualname}{_signature_of(obj)}", ""]
        return lines + ["   " + ln if ln else "" for ln in _google_lines(obj.__doc__)] + [""]
    if short in DATA_DOCS:
        return [f".. py:data:: {qualname}", f"   :value: {obj!r}" if isinstance(obj, (int, float)) else "", "",
                f"   {DATA_DOCS[short]}", ""]
    doc = obj.__doc__ if type(obj).__doc__ != obj.__doc__ or type(obj).__module__.startswith("weft") else None
    if not doc:
        raise LookupError(f"{qualname} has no docstring and no entry in DATA_DOCS")
    kind = "py:class" if isinstance(obj, type) else "py:data"
    return [f".. {kind}:: {qualname}", ""] + ["   " + ln if ln else "" for ln in _doc_lines(doc)] + [""]


def top_level_pages() -> list[Page]:
    """The topic pages of ``weft.__all__`` (builtins and modules excluded: they have their own pages)."""
    import weft

    pages = {slug: Page(slug, title, intro) for slug, title, intro, _m in TOPICS}
    for name in weft.__all__:
        obj = getattr(weft, name)
        slug = topic_of(name, obj)
        if slug in pages:
            pages[slug].entries.append((f"weft.{name}", obj))
    return [p for p in pages.values() if p.entries]


def module_pages() -> list[Page]:
    pages = []
    for modname, intro in PUBLIC_MODULES.items():
        mod = importlib.import_module(modname)
        page = Page(modname.replace(".", "_"), f"``{modname}``", intro)
        page.entries = [(f"{modname}.{n}", getattr(mod, n)) for n in mod.__all__]
        pages.append(page)
    return pages


def _is_data(obj) -> bool:
    return not callable(obj) and not isinstance(obj, type)


def _first_line(obj) -> str:
    doc = inspect.getdoc(obj) or ""
    return doc.split("\n\n", 1)[0].replace("\n", " ")


def _alias_rst(short: str, obj, target: str) -> list[str]:
    """A submodule name that is the same object as a top-level name: a short entry pointing there."""
    if isinstance(obj, type):
        head = f".. py:class:: {short}"
    elif callable(obj):
        try:
            sig = str(inspect.signature(obj))
        except (TypeError, ValueError):
            sig = "(*args, **kwargs)"
        head = f".. py:function:: {short}{sig}"
    else:
        head = f".. py:data:: {short}"
    return [head, "", f"   The same object as :obj:`{target}`: {_first_line(obj) or 'see there.'}", ""]


def _top_level_objects() -> dict:
    import weft

    return {id(getattr(weft, n)): f"weft.{n}" for n in weft.__all__ if not _is_data(getattr(weft, n))}


def _page_rst(page: Page, module: str | None) -> str:
    """A page: title, (module), intro, a summary table, then one entry per name. On a submodule
    page names are written relative to the module (``.. py:module::`` sets it)."""
    lines = [page.title, "=" * max(len(page.title), 3), ""]
    if module:
        lines += [f".. py:module:: {module}", ""]

    def local(q):
        return q[len(module) + 1:] if module else q

    lines += [page.intro, ""]
    callables = [q for q, o in page.entries if not _is_data(o)]
    data = [(q, o) for q, o in page.entries if _is_data(o)]
    if callables:
        lines += [".. autosummary::", ""] + [f"   {local(q)}" for q in callables] + [""]
    if data and callables:
        lines += ["Values: " + ", ".join(f":obj:`{local(q)}`" for q, _o in data) + ".", ""]
    top = _top_level_objects() if module else {}
    for q, o in page.entries:
        target = top.get(id(o))
        if module and target is not None:
            lines += _alias_rst(local(q), o, target)
        else:
            lines += _entry_rst(q, o, local(q))
    return "\n".join(lines) + "\n"


def write_api(outdir: str) -> list[str]:
    """Write every API page into ``outdir``; return the documented dotted names."""
    os.makedirs(outdir, exist_ok=True)
    top, mods = top_level_pages(), module_pages()
    documented = []
    written = {}
    for page in top:
        written[page.slug] = _page_rst(page, None)
        documented += [q for q, _o in page.entries]
    for page in mods:
        written[page.slug] = _page_rst(page, page.title.strip("`"))
        documented += [q for q, _o in page.entries]
    written["builtins"] = builtins_ref.page_rst()
    documented += builtins_ref.documented_names()
    index = [
        "API reference",
        "=============",
        "",
        ".. py:module:: weft",
        "",
        "Every public name of ``weft`` (``weft.__all__``, reached as ``wp.NAME`` after ``import weft as wp``)"
        " and of its public submodules. These pages are generated from the docstrings and the builtin"
        " registry when the site is built.",
        "",
        ".. toctree::",
        "   :caption: The weft namespace",
        "   :maxdepth: 1",
        "",
        *[f"   {p.slug}" for p in top],
        "   builtins",
        "",
        ".. toctree::",
        "   :caption: Submodules",
        "   :maxdepth: 1",
        "",
        *[f"   {p.slug}" for p in mods],
        "",
    ]
    written["index"] = "\n".join(index)
    for slug, text in written.items():
        path = os.path.join(outdir, slug + ".rst")
        old = open(path).read() if os.path.exists(path) else None
        if old != text:  # unchanged pages keep their mtime: Sphinx rebuilds only what changed
            with open(path, "w") as f:
                f.write(text)
    for stale in set(os.listdir(outdir)) - {s + ".rst" for s in written}:
        if stale.endswith(".rst"):
            os.remove(os.path.join(outdir, stale))
    return documented + [f"weft.{n}" for n in _module_names()]


def _module_names() -> list[str]:
    """The public submodules in ``weft.__all__`` that have a reference page (its ``py:module``)."""
    import weft

    return [
        n for n in weft.__all__ if isinstance(getattr(weft, n), pytypes.ModuleType) and f"weft.{n}" in PUBLIC_MODULES
    ]


def documented_names() -> set[str]:
    """The dotted names the generated reference documents (without writing anything)."""
    names = [q for p in top_level_pages() + module_pages() for q, _o in p.entries]
    return set(names) | set(builtins_ref.documented_names()) | {f"weft.{n}" for n in _module_names()}
