"""Compile errors that point at the user's source: file:line:col, the line's text and a caret.

Warp's exception names are kept (``WarpCodegenError`` and its family) so that code catching
them keeps working; ``WeftCompileError`` is the same class under our name.
"""

from __future__ import annotations


def location_note(fn_name: str, file: str, line: int, col: int, source: str = "") -> str:
    """``  in <fn> at file:line:col``, then the source line and a caret under the column."""
    text = f"  in {fn_name} at {file}:{line}:{col + 1}"
    if source:
        stripped = source.rstrip()
        indent = len(stripped) - len(stripped.lstrip())
        text += f"\n    {stripped.lstrip()}\n    {' ' * max(col - indent, 0)}^"
    return text


class WarpCodegenError(RuntimeError):
    """A kernel or func could not be compiled.

    ``str(error)`` is the message alone (as Warp's, so that code matching Warp's messages keeps
    working); where it happened is attached as exception notes (PEP 678), which tracebacks and
    ``pytest.raises(match=...)`` show: the function, file:line:col, the line and a caret, then one
    note per call site the error passed through (a func's error, then the kernel calling it)."""

    def __init__(self, msg: str, fn_name: str = "", file: str = "", line: int = 0, col: int = 0, source: str = ""):
        self.bare_msg = msg
        self.fn_name = fn_name
        self.file = file
        self.line = line
        self.col = col
        self.source_line = source
        super().__init__(msg)
        if file:
            self.add_note(location_note(fn_name, file, line, col, source))

    def full_text(self) -> str:
        """The message followed by every location note."""
        return "\n".join([str(self)] + list(getattr(self, "__notes__", ())))


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
