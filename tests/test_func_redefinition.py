"""Redefining a module-level @wp.func, as in Warp: other annotations add an overload; the same
annotations make a new func for the name (with the other overloads), and references taken to the
earlier definition keep its code."""

import numpy as np

import weft as wp


@wp.func
def answer(x: int):
    return 17 + x


@wp.func
def answer(x: float):  # noqa: F811 (an overload)
    return 0.5 * x


first_answer = answer


@wp.func
def answer(x: int):  # noqa: F811 (a redefinition)
    return 42 + x


@wp.kernel
def k_answers(out: wp.array(dtype=float)):
    out[0] = float(answer(1))  # the latest definition
    out[1] = float(first_answer(1))  # the one bound before the redefinition
    out[2] = answer(3.0)  # the float overload, kept by the redefinition
    out[3] = first_answer(3.0)


def test_a_redefinition_replaces_the_name_and_keeps_earlier_references():
    out = wp.zeros(4, dtype=float)
    wp.launch(k_answers, 1, [out])
    np.testing.assert_array_equal(out.numpy(), [43.0, 18.0, 1.5, 1.5])
    assert first_answer is not answer


def test_signature_introspection_shows_the_latest_definition():
    import inspect

    assert list(inspect.signature(answer).parameters) == ["x"]
    assert inspect.signature(answer).parameters["x"].annotation is int
    assert inspect.signature(wp.lower_bound).parameters.keys() == {"arr", "arr_begin", "arr_end", "value"}


def test_func_exposes_its_python_function_as_warp_does():
    @wp.func
    def scaled(x: float) -> float:
        return 2.0 * x

    first = scaled.func
    assert first.__name__ == "scaled" and first(3.0) == 6.0 and first.__globals__ is globals()

    @wp.func
    def scaled(x: float) -> float:  # noqa: F811 (a redefinition, as a user writes it)
        return 3.0 * x

    assert scaled.func is not first and scaled.func(3.0) == 9.0


def test_func_decorator_declares_typed_overloads_for_static_checkers():
    import typing

    overloads = typing.get_overloads(wp.func)
    assert len(overloads) == 2  # @wp.func and @wp.func(...)
    assert all("Callable" in str(o.__annotations__["return"]) for o in overloads)
