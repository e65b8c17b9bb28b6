"""Compile-time Python values met while lowering (a module, a builtin, a func, a type...).

Contract: ``Static(value)`` wraps the Python object a name or attribute resolved to; the frontend and
its special-call handlers produce and consume it. A value, nothing more: no lowering here.
"""

from __future__ import annotations


class Static:
    """A compile-time Python object met while lowering (a module, builtin, func, type ...)."""

    __slots__ = ("value",)

    def __init__(self, value):
        self.value = value

    def __repr__(self):
        return f"Static({self.value!r})"
