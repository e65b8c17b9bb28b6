"""The element-wise kernels ``array_map`` runs a func or builtin in (1-D: inputs are flattened
first; kernels are compiled from their Python source, so they live in a file)."""

from typing import Any

from ..array import array
from ..kernel import kernel
from ..types import int32

MODULE = "weft_array_map"


def make(fn, dtypes, out_dtype):
    """A kernel computing ``out[i] = fn(a[i], ...)`` over 1-D arrays of ``dtypes`` (1 to 6)."""
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


def _map4(fn, A, B, C, D, R):
    @kernel(module=MODULE)
    def map4(a: array(dtype=A), b: array(dtype=B), c: array(dtype=C), d: array(dtype=D), out: array(dtype=R)):
        i = wp_tid()
        out[i] = fn(a[i], b[i], c[i], d[i])

    return map4


def _map5(fn, A, B, C, D, E, R):
    @kernel(module=MODULE)
    def map5(
        a: array(dtype=A), b: array(dtype=B), c: array(dtype=C), d: array(dtype=D), e: array(dtype=E), out: array(dtype=R)
    ):
        i = wp_tid()
        out[i] = fn(a[i], b[i], c[i], d[i], e[i])

    return map5


def _map6(fn, A, B, C, D, E, F, R):
    @kernel(module=MODULE)
    def map6(
        a: array(dtype=A),
        b: array(dtype=B),
        c: array(dtype=C),
        d: array(dtype=D),
        e: array(dtype=E),
        f: array(dtype=F),
        out: array(dtype=R),
    ):
        i = wp_tid()
        out[i] = fn(a[i], b[i], c[i], d[i], e[i], f[i])

    return map6


@kernel(module=MODULE)
def gather(src: array(dtype=Any), index: array(dtype=int32), dst: array(dtype=Any)):
    """``dst[i] = src[index[i]]``: a broadcast input, materialised (gradients flow back)."""
    i = wp_tid()
    dst[i] = src[index[i]]


_factories = {1: _map1, 2: _map2, 3: _map3, 4: _map4, 5: _map5, 6: _map6}
MAX_INPUTS = len(_factories)

from ..codegen.intrinsics import tid as wp_tid  # noqa: E402 (kernels resolve it by value)
