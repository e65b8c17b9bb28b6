"""Sphinx extension: generate weft's reference pages before Sphinx reads the sources.

On ``builder-inited`` it writes ``docs/api/*.rst`` (``apigen``: every public name, and the kernel
builtin reference from the registry) and ``docs/_generated/compat_table.md`` (``docs/compat_table.py``:
the Warp test-suite table from ``docs/conformance/*.json``). Both folders are build outputs
(ignored by git).
"""

import os
import sys

import apigen

DOCS = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def _generate(app):
    apigen.write_api(os.path.join(app.srcdir, "api"))
    sys.path.insert(0, DOCS)
    try:
        import compat_table
    finally:
        sys.path.remove(DOCS)
    compat_table.write(os.path.join(app.srcdir, "_generated", "compat_table.md"))


def setup(app):
    app.connect("builder-inited", _generate)
    return {"version": "1", "parallel_read_safe": True, "parallel_write_safe": True}
