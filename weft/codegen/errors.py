"""Compile errors that point at the user's source: file:line:col, the line's text and a caret.

Warp's exception names are kept (``WarpCodegenError`` and its family) so that code catching
them keeps working; ``WeftCompileError`` is the same class under our name.
"""

from __future__ import annotations


class WarpCodegenError(RuntimeError):
    """A kernel or func could not be compiled. The message names the function and file:line."""

    def __init__(self, msg: str, fn_name: str = "", file: str = "", line: int = 0, col: int = 0, source: str = ""):
        self.bare_msg = msg
        self.fn_name = fn_name
        self.file = file
        self.line = line
        self.col = col
        self.source_line = source
        super().__init__(self._format())

    def _format(self) -> str:
        if not self.file:
            return self.bare_msg
        where = f"{self.file}:{self.line}:{self.col + 1}"
        text = f"{self.bare_msg}\n  in {self.fn_name} at {where}"
        if self.source_line:
            stripped = self.source_line.rstrip()
            indent = len(stripped) - len(stripped.lstrip())
            text += f"\n    {stripped.lstrip()}\n    {' ' * max(self.col - indent, 0)}^"
        return text


class WarpCodegenTypeError(WarpCodegenError, TypeError):
    """Type mismatch or no matching overload."""


class WarpCodegenAttributeError(WarpCodegenError, AttributeError):
    """Unknown attribute."""


class WarpCodegenIndexError(WarpCodegenError, IndexError):
    """An index the compiler can see is out of range (a constant component index, as Warp)."""


class WarpCodegenKeyError(WarpCodegenError, KeyError):
    """Unknown name."""

    def __str__(self):  # KeyError would quote the message
        return self.args[0] if self.args else ""


class WarpCodegenValueError(WarpCodegenError, ValueError):
    """Bad value (e.g. non-constant where a constant is required)."""


class UnsupportedConstruct(WarpCodegenError):
    """Python syntax that kernels do not support."""


WeftCompileError = WarpCodegenError


class WeftBuildError(RuntimeError):
    """The host C++ compiler failed on generated code."""
