"""The element-wise kernels ``array_map`` runs a func or builtin in (1-D: inputs are flattened
first; kernels are compiled from their Python source, so they live in a file)."""

from ..array import array
from ..kernel import kernel

MODULE = "weft_array_map"


def make(fn, dtypes, out_dtype):
    """A kernel computing ``out[i] = fn(a[i], ...)`` over 1-D arrays of ``dtypes`` (1 to 3)."""
    return _factories[len(dtypes)](fn, *dtypes, out_dtype)


def _map1(fn, A, R):
    @kernel(module=MODULE)
    def map1(a: array(dtype=A), out: array(dtype=R)):
        i = wp_tid()
        out[i] = fn(a[i])

    return map1


def _map2(fn, A, B, R):
    @kernel(module=MODULE)
    def map2(a: array(dtype=A), b: array(dtype=B), out: array(dtype=R)):
        i = wp_tid()
        out[i] = fn(a[i], b[i])

    return map2


def _map3(fn, A, B, C, R):
    @kernel(module=MODULE)
    def map3(a: array(dtype=A), b: array(dtype=B), c: array(dtype=C), out: array(dtype=R)):
        i = wp_tid()
        out[i] = fn(a[i], b[i], c[i])

    return map3


_factories = {1: _map1, 2: _map2, 3: _map3}

from ..codegen.intrinsics import tid as wp_tid  # noqa: E402 (kernels resolve it by value)
