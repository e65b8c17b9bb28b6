"""Sphinx configuration of weft's documentation site.

Build: ``pip install -e ".[docs]" && python -m sphinx -W -b html docs docs/_build/html``.

The API reference (``docs/api/``), the kernel builtin reference and the Warp compatibility table
(``docs/_generated/``) are generated at build time by ``_ext/weft_docs.py`` from ``weft`` itself,
its builtin registry and ``docs/conformance/weft.json``; nothing in them is typed by hand.
"""

import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "_ext"))
sys.path.insert(0, os.path.dirname(HERE))  # the checkout's weft, when it is not installed

import weft  # noqa: E402

project = "weft"
author = "the weft developers"
copyright = "2026, the weft developers"  # noqa: A001
version = release = weft.__version__

extensions = [
    "myst_parser",
    "sphinx.ext.autodoc",
    "sphinx.ext.autosummary",
    "sphinx.ext.napoleon",
    "sphinx.ext.doctest",
    "sphinx.ext.intersphinx",
    "weft_docs",
]

source_suffix = {".rst": "restructuredtext", ".md": "markdown"}
root_doc = "index"
exclude_patterns = ["_build", "conformance", "README.md", "Thumbs.db", ".DS_Store"]
templates_path = []

# MyST: Markdown pages with Sphinx directives in ```{directive} fences; `#` anchors on headings
myst_enable_extensions = ["colon_fence", "deflist"]
myst_heading_anchors = 3

# autodoc + napoleon (Google-style docstrings, STYLE.md rule 32)
autodoc_member_order = "bysource"
autoclass_content = "both"  # a class's docstring, then its __init__'s (where the constructor arguments are)
autodoc_typehints = "signature"
autodoc_default_options = {"exclude-members": "__init__, __new__"}
autosummary_generate = False  # the API pages are written by weft_docs, with autodoc directives
napoleon_google_docstring = True
napoleon_numpy_docstring = False
napoleon_use_rtype = False
add_module_names = True
python_display_short_literal_types = True

# `>>>` examples in docstrings and pages run under `python -m sphinx -b doctest` (CI runs it)
doctest_global_setup = "import numpy as np\nimport weft as wp"

intersphinx_mapping = {}  # offline builds: no inventories fetched

# Links between pages (Markdown links, :doc:, toctrees) must resolve: -W turns a broken one into an
# error. Type names in signatures are linked when they name a documented object; a name that
# weft.types re-exports (wp.float32 is wp.types.float32) has two entries, and Sphinx's "more than
# one target" note about them (ref.python) is no error: both entries are the same object.
nitpicky = False
suppress_warnings = ["ref.python"]

html_theme = "furo"
html_title = f"weft {release}"
html_static_path = ["_static"]
html_show_sourcelink = False
