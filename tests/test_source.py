"""Frontend source access: ``function_source`` finds the same lines as ``inspect.getsourcelines``
(without tokenizing the file) for functions of every shape, including those where it must defer
to ``inspect``."""

import inspect

import pytest

import weft as wp
from weft.codegen.source import function_source


def plain(x):
    return x + 1


# fmt: off
# (these keep the shapes under test: a body on the def line, lines continued below the indent)
def one_liner(x): return x * 2  # noqa: E704
# fmt: on


def decorator(f):
    return f


@decorator
def multi_line_signature(
    a,
    b,
):
    c = a + b
    # a comment inside the body

    return c
    # a trailing comment, not part of the function


# a comment at column 0 between functions


def string_at_column_zero():
    s = """
text at column 0
"""
    return s


# fmt: off
def continued_lines(a):
    b = (a +
1)  # noqa: E128
    c = a + \
        b
    return c
# fmt: on


def nested_definitions(a):
    def inner(x):
        return x + a

    class Local:
        value = a

    return inner(Local.value)


def if_else_ending(a):
    if a > 0:
        return a
    else:
        pass


def make_closure(k):
    def closure(x):
        return x * k  # a comment after the last statement
        # and one more, deeper

    return closure


@wp.kernel
def a_kernel(
    x: wp.array(dtype=float),
    y: wp.array(dtype=float),
):
    i = wp.tid()
    y[i] = x[i] * 2.0


FUNCTIONS = [
    plain,
    one_liner,
    multi_line_signature,
    string_at_column_zero,
    continued_lines,
    nested_definitions,
    if_else_ending,
    make_closure(3),
    a_kernel.func if hasattr(a_kernel, "func") else a_kernel.pyfunc,
]


@pytest.mark.parametrize("fn", FUNCTIONS, ids=lambda f: f.__name__)
def test_function_source_matches_inspect(fn):
    lines, first, tree = function_source(fn, inspect.getsourcefile(fn))
    assert (lines, first) == inspect.getsourcelines(fn)
    assert tree.body[0].name == fn.__name__


def test_kernels_in_this_file_still_compile_and_run():
    x = wp.array([1.0, 2.0], dtype=float)
    y = wp.zeros(2, dtype=float)
    wp.launch(a_kernel, dim=2, inputs=[x, y])
    assert y.numpy().tolist() == [2.0, 4.0]
