"""Source access for the frontend: parse a Python function, map AST lines to file lines, and
resolve free names (globals, closure cells, Python builtins) by value."""

from __future__ import annotations

import ast
import builtins
import copy
import inspect
import linecache
import os
import textwrap
import tokenize
import weakref


_snapshots = weakref.WeakKeyDictionary()  # pyfunc -> (file, its lines when the function was decorated)


_file_texts: dict = {}  # file -> (mtime_ns, size, lines) as last read


def snapshot(pyfunc):
    """Keep the text of the file defining ``pyfunc`` as it is now, so that what compiles later is
    the code Python ran even if the file is edited or deleted meanwhile (one list per file
    version; a file rewritten and re-imported, ``importlib.reload``, is read again)."""
    try:
        file = inspect.getsourcefile(pyfunc)
        st = os.stat(file) if file else None
    except (TypeError, OSError):
        return
    if st is None:
        return
    known = _file_texts.get(file)
    if known is None or known[:2] != (st.st_mtime_ns, st.st_size):
        try:
            with tokenize.open(file) as f:
                lines = f.readlines()
        except (OSError, SyntaxError, UnicodeDecodeError):
            return
        known = _file_texts[file] = (st.st_mtime_ns, st.st_size, lines)
    if known[2]:
        _snapshots[pyfunc] = (file, known[2])


def register_source(pyfunc, file: str, lines: list):
    """Give a function made from generated text (``exec``) its source: ``lines`` (the whole text
    it was compiled from, under the name ``file``), as a snapshot of a real file would."""
    _snapshots[pyfunc] = (file, list(lines))


def function_source(pyfunc, file: str, all_lines=None):
    """``(lines, first line number, ast.Module)`` of a function's source: what
    ``inspect.getsourcelines`` returns, parsed.

    ``inspect`` finds the end of the function by tokenizing the file from its first line, which
    costs about a millisecond per function, most of a warm module load's Python-side work. The
    code object already tells where the body's last statement starts; the function ends at the
    first later line indented no deeper than its first line (trailing blank lines, and comments
    indented less than the body, left out, as ``inspect`` does). Such a line can still belong to
    the function only inside a bracket, a string or after a backslash, where the text cut there
    does not parse: then ``inspect`` decides.
    """
    code = pyfunc.__code__
    if all_lines is None:
        linecache.checkcache(file)
        all_lines = linecache.getlines(file, pyfunc.__globals__)
    first = code.co_firstlineno
    starts = [line for _, _, line in code.co_lines() if line is not None]
    if all_lines and starts and 0 < first <= len(all_lines):
        head = all_lines[first - 1]
        indent = len(head) - len(head.lstrip())
        end = max(max(starts), first)
        while end < len(all_lines) and not _ends_block(all_lines[end], indent):
            end += 1
        try:
            tree = ast.parse(textwrap.dedent("".join(all_lines[first - 1 : end])))
        except SyntaxError:
            tree = None
        if tree is not None and len(tree.body) == 1 and isinstance(tree.body[0], ast.FunctionDef):
            body_col = _body_column(tree.body[0], all_lines, first, indent)
            while end > first and _trailing_filler(all_lines[end - 1], body_col):
                end -= 1
            return all_lines[first - 1 : end], first, tree
    if all_lines and 0 < first <= len(all_lines):
        block = inspect.getblock(all_lines[first - 1 :])  # the tokenizer's view of where it ends
        return block, first, ast.parse(textwrap.dedent("".join(block)))
    lines, first = inspect.getsourcelines(pyfunc)
    return lines, first, ast.parse(textwrap.dedent("".join(lines)))


_parsed_files: dict = {}  # file -> (its lines, ast.Module) as last parsed, for lambdas


def lambda_source(pyfunc):
    """``(lines, first line number, ast.Module)`` for a lambda: the lines that hold it, and a
    module whose one ``def`` returns the lambda's expression (with the lambda's argument names,
    positions relative to those lines). The lambda is found in its file's syntax tree: the one
    with the same arguments whose body holds the code object's first instruction.

    Raises:
        OSError: the source cannot be read.
        SyntaxError: no lambda of this code object is found in it.
    """
    code = pyfunc.__code__
    file = inspect.getsourcefile(pyfunc)
    if file is None:
        raise OSError("no source file")
    linecache.checkcache(file)
    all_lines = linecache.getlines(file, pyfunc.__globals__)
    known = _parsed_files.get(file)
    if known is None or known[0] != all_lines:
        known = _parsed_files[file] = (all_lines, ast.parse("".join(all_lines)))
    tree = known[1]
    names = list(code.co_varnames[: code.co_argcount])
    candidates = [n for n in ast.walk(tree) if isinstance(n, ast.Lambda) and [a.arg for a in n.args.args] == names]
    # the body's first instruction with a real column (the first entry is the RESUME at column 0)
    starts = [(p[0], p[2]) for p in code.co_positions() if p[0] is not None and p[2] is not None and p[2] > 0]
    if starts:
        line, col = min(starts)

        def holds(n):
            b = n.body
            return (b.lineno, b.col_offset) <= (line, col) <= (b.end_lineno, b.end_col_offset)

        candidates = [n for n in candidates if holds(n)]
    else:
        candidates = [n for n in candidates if n.lineno == code.co_firstlineno]
    if not candidates:
        raise SyntaxError(f"cannot find the source of lambda {pyfunc.__qualname__}")
    node = min(candidates, key=lambda n: (n.end_lineno - n.lineno, n.end_col_offset - n.col_offset))  # innermost
    node = copy.deepcopy(node)  # the file's tree is cached: renumber a copy
    first = node.lineno
    fn = ast.FunctionDef(
        name="lambda", args=node.args, body=[ast.Return(value=node.body)], decorator_list=[], returns=None, type_params=[]
    )
    ast.copy_location(fn, node)
    ast.copy_location(fn.body[0], node.body)
    fn = ast.increment_lineno(ast.fix_missing_locations(fn), 1 - first)
    lines = all_lines[first - 1 : node.end_lineno]
    return lines, first, ast.Module(body=[fn], type_ignores=[])


def _body_column(node, all_lines, first: int, indent: int):
    """Column of the body's first statement, None when it shares the line of the ``def``."""
    stmt = node.body[0]
    line = all_lines[first - 1 + stmt.lineno - 1]
    col = indent + stmt.col_offset
    return col if not line[:col].strip() else None


def _trailing_filler(line: str, body_col) -> bool:
    """A blank line, or a comment that ``inspect`` leaves out of a function's end."""
    text = line.strip()
    return not text or (text.startswith("#") and (body_col is None or len(line) - len(line.lstrip()) < body_col))


def _blank_or_comment(line: str) -> bool:
    text = line.strip()
    return not text or text.startswith("#")


def _ends_block(line: str, indent: int) -> bool:
    return not _blank_or_comment(line) and len(line) - len(line.lstrip()) <= indent


class Source:
    """The parsed source of one Python function, with enough context to report errors."""

    def __init__(self, pyfunc):
        self.pyfunc = pyfunc
        self.name = pyfunc.__name__
        try:
            if pyfunc.__name__ == "<lambda>":
                self.file = inspect.getsourcefile(pyfunc) or "<unknown>"
                lines, first, tree = lambda_source(pyfunc)
            elif (snap := _snapshots.get(pyfunc)) is not None:
                self.file = snap[0]
                lines, first, tree = function_source(pyfunc, self.file, snap[1])
            else:
                self.file = inspect.getsourcefile(pyfunc) or "<unknown>"
                lines, first, tree = function_source(pyfunc, self.file)
        except (OSError, TypeError, SyntaxError) as e:
            raise RuntimeError(
                f"weft needs the source code of '{pyfunc.__qualname__}' to compile it, but Python cannot find it "
                f"({e}); define kernels in a .py file rather than an interactive prompt"
            ) from None
        self.first_line = first
        self.lines = lines
        self.text = textwrap.dedent("".join(lines))
        self.indent = len(lines[0]) - len(lines[0].lstrip()) if lines else 0
        if pyfunc.__name__ == "<lambda>":
            self.indent = 0  # a lambda's positions come from its file's tree: columns are absolute
        self.tree = tree.body[0]
        self.globals = pyfunc.__globals__
        self.closure = {}
        self.cells = _Cells(pyfunc)
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


class _Cells:
    """The live values of a function's closure cells by name (``get`` as a dict's): kernels that
    baked a closure value in as a constant compare it at launch, as they do module globals."""

    def __init__(self, pyfunc):
        self._cells = dict(zip(pyfunc.__code__.co_freevars, pyfunc.__closure__ or ()))

    def get(self, name, default=None):
        cell = self._cells.get(name)
        if cell is None:
            return default
        try:
            return cell.cell_contents
        except ValueError:  # an empty cell
            return default
