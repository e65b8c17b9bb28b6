"""Source access for the frontend: parse a Python function, map AST lines to file lines, and
resolve free names (globals, closure cells, Python builtins) by value."""

from __future__ import annotations

import ast
import builtins
import inspect
import textwrap


class Source:
    """The parsed source of one Python function, with enough context to report errors."""

    def __init__(self, pyfunc):
        self.pyfunc = pyfunc
        self.name = pyfunc.__name__
        try:
            lines, first = inspect.getsourcelines(pyfunc)
            self.file = inspect.getsourcefile(pyfunc) or "<unknown>"
        except (OSError, TypeError) as e:
            raise RuntimeError(
                f"weft needs the source code of '{pyfunc.__qualname__}' to compile it, but Python cannot find it "
                f"({e}); define kernels in a .py file rather than an interactive prompt"
            ) from None
        self.first_line = first
        self.lines = lines
        self.text = textwrap.dedent("".join(lines))
        self.indent = len(lines[0]) - len(lines[0].lstrip()) if lines else 0
        tree = ast.parse(self.text)
        self.tree = tree.body[0]
        self.globals = pyfunc.__globals__
        self.closure = {}
        if pyfunc.__closure__:
            for name, cell in zip(pyfunc.__code__.co_freevars, pyfunc.__closure__):
                try:
                    self.closure[name] = cell.cell_contents
                except ValueError:  # empty cell
                    pass

    def file_line(self, node) -> int:
        return self.first_line + getattr(node, "lineno", 1) - 1

    def line_text(self, node) -> str:
        k = getattr(node, "lineno", 1) - 1
        return self.lines[k] if 0 <= k < len(self.lines) else ""

    def col(self, node) -> int:
        return getattr(node, "col_offset", 0) + self.indent

    _missing = object()

    def lookup(self, name: str):
        """Value of a free name: closure, then module globals, then Python builtins; or ``missing``."""
        if name in self.closure:
            return self.closure[name]
        if name in self.globals:
            return self.globals[name]
        return getattr(builtins, name, Source._missing)

    @staticmethod
    def is_missing(v) -> bool:
        return v is Source._missing
