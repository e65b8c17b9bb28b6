"""``wp.ref[T]``: the annotation of a func parameter passed by reference.

A call of a func with ``x: wp.ref[T]`` hands it the caller's storage: a local, an array element,
a struct field or a vector component. Whatever the func assigns to ``x`` is seen by the caller
after the call. weft compiles this as copy-in / copy-out: the func returns the final values of
its reference parameters alongside its result, and the call site stores them back into the
places the arguments named (codegen/frontend.py). Gradients flow through that like any store.
"""

from __future__ import annotations


class Reference:
    """The type ``wp.ref[T]``: ``dtype`` (also ``value_type``) is ``T``. Equal and hashed by ``T``."""

    __slots__ = ("dtype",)

    def __init__(self, dtype):
        if isinstance(dtype, Reference):
            raise TypeError("wp.ref[wp.ref[T]] is not a type; use wp.ref[T]")
        self.dtype = dtype

    @property
    def value_type(self):
        return self.dtype

    def __eq__(self, other):
        return isinstance(other, Reference) and other.dtype == self.dtype

    def __hash__(self):
        return hash((Reference, self.dtype))

    def __repr__(self):
        from .scalar_types import type_repr

        return f"wp.ref[{type_repr(self.dtype)}]"


class ref:
    """``wp.ref[T]`` annotates a ``@wp.func`` parameter passed by reference (see ``Reference``)."""

    def __new__(cls, *args, **kwargs):
        raise TypeError("wp.ref is used as an annotation, wp.ref[T]; it cannot be called")

    def __class_getitem__(cls, dtype):
        return Reference(dtype)


def is_reference(annotation) -> bool:
    return isinstance(annotation, Reference)
