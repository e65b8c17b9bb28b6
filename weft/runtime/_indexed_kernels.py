"""Copy kernels behind ``indexedarray.contiguous / assign / fill_ / zero_``: ``dst[i, ...] =
src[i, ...]`` where either side may be an indexed array (kernels are compiled from their Python
source, so they live in a file)."""

from typing import Any

from ..codegen.intrinsics import tid as wp_tid
from ..kernel import kernel
from . import launch as _launch

MODULE = "weft_indexed_array"


@kernel(module=MODULE)
def copy1(dst: Any, src: Any):
    i = wp_tid()
    dst[i] = src[i]


@kernel(module=MODULE)
def copy2(dst: Any, src: Any):
    i, j = wp_tid()
    dst[i, j] = src[i, j]


@kernel(module=MODULE)
def copy3(dst: Any, src: Any):
    i, j, k = wp_tid()
    dst[i, j, k] = src[i, j, k]


@kernel(module=MODULE)
def copy4(dst: Any, src: Any):
    i, j, k, l = wp_tid()
    dst[i, j, k, l] = src[i, j, k, l]


_COPY = {1: copy1, 2: copy2, 3: copy3, 4: copy4}


def launch_copy(dst, src, record=False):
    """Copy ``src`` into ``dst`` element by element (same shape and device); ``record``: on the
    active tape, if any (the copy is differentiable)."""
    kernel = _COPY[len(dst.shape)]
    _launch.launch(kernel, dim=tuple(dst.shape), inputs=[dst, src], device=dst.device, record_tape=record)
