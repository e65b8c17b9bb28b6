"""Utilities around kernels: timing (``ScopedTimer``) and array utilities (Warp's ``warp.utils``).

Array utilities: ``array_sum`` and ``array_inner`` run a weft reduction kernel (per-thread partial
sums over contiguous chunks, the few partials then added in NumPy); ``array_scan``,
``radix_sort_pairs``, ``runlength_encode`` and ``array_cast`` work on the CPU with NumPy, writing
their results into the given weft arrays in place (zero-copy views).

Contract: nothing here is part of the compiler pipeline; these helpers only use the public
runtime (devices, arrays, launches).
"""

from __future__ import annotations

import builtins
import math
import time
import typing

import numpy as np

from .runtime import device as _device


class ScopedTimer:
    """Context manager that measures the wall-clock time of a block of code.

    On exit it prints ``"<name> took <ms> ms"`` (indented when timers are nested) and stores the
    time in ``elapsed`` (milliseconds).

    Args:
        name: Label printed with the time and used as the key in ``dict``.
        active: When False the timer does nothing.
        print: Print the elapsed time on exit.
        detailed: Profile the block with ``cProfile`` and print the statistics on exit.
        dict: A ``dict[str, list[float]]``; the elapsed time is appended to ``dict[name]``.
        use_nvtx: Accepted for compatibility; weft has no NVTX ranges, so the block is timed normally.
        color: NVTX range color (accepted for compatibility, unused).
        synchronize: Wait for outstanding device work before starting and stopping the clock.
        cuda_filter: CUDA activity filter (accepted for compatibility; no CUDA activity on CPU).
        report_func: Called as ``report_func(results, elapsed)`` on exit, ``results`` being a list
            of per-activity timings (empty on the CPU).
        skip_tape: Accepted for compatibility.

    Example:
        Timing a function ``run_step``::

            with wp.ScopedTimer("step") as t:
                run_step()
            # prints: step took 1.23 ms
    """

    enabled = True  # global switch: ScopedTimer.enabled = False silences every timer
    indent = -1  # nesting depth of active timers

    def __init__(
        self,
        name,
        active=True,
        print=True,
        detailed=False,
        dict=None,
        use_nvtx=False,
        color="rapids",
        synchronize=False,
        cuda_filter=0,
        report_func=None,
        skip_tape=False,
    ):
        self.name = name
        self.active = active and self.enabled
        self.print = print
        self.detailed = detailed
        self.dict = dict
        self.use_nvtx = use_nvtx
        self.color = color
        self.synchronize = synchronize
        self.cuda_filter = cuda_filter
        self.report_func = report_func
        self.skip_tape = skip_tape
        self.elapsed = 0.0
        self.extra_msg = ""  # appended to the printed line; may be set inside the block
        self.timing_results = []
        self._start = 0.0
        self._profile = None
        if self.dict is not None and name not in self.dict:
            self.dict[name] = []

    def __enter__(self):
        if not self.active:
            return self
        if self.synchronize:
            _device.synchronize()
        if self.detailed:
            import cProfile

            self._profile = cProfile.Profile()
            self._profile.enable()
        ScopedTimer.indent += 1
        self._start = time.perf_counter()
        return self

    def __exit__(self, exc_type, exc_value, traceback):
        if not self.active:
            return
        if self.synchronize:
            _device.synchronize()
        self.elapsed = (time.perf_counter() - self._start) * 1000.0
        ScopedTimer.indent -= 1
        if self._profile is not None:
            self._profile.disable()
            self._profile.print_stats(sort="tottime")
        if self.dict is not None:
            self.dict[self.name].append(self.elapsed)
        if self.report_func is not None:
            self.report_func(self.timing_results, self.elapsed)
        if self.print:
            pad = "    " * (ScopedTimer.indent + 1)
            builtins.print(f"{pad}{self.name} took {self.elapsed:.2f} ms{self.extra_msg}")


# -- array utilities ----------------------------------------------------------------------------

from . import config as _config  # noqa: E402
from . import types as _types  # noqa: E402
from .array import array as _array, zeros as _zeros  # noqa: E402
from .codegen.intrinsics import tid as _tid  # noqa: E402
from .kernel import kernel as _kernel  # noqa: E402
from .runtime.launch import launch as _launch  # noqa: E402
from .runtime.array_map import _kernels as map_cache  # noqa: E402,F401 (wp.map's kernels by function and types)


@_kernel(enable_backward=False)
def _sum_partials(
    a: _array(dtype=typing.Any, ndim=3), out: _array(dtype=typing.Any, ndim=3), chunk: int, length: int
):
    o, c, i = _tid()
    s = out[o, c, i]
    end = builtins.min((c + 1) * chunk, length)
    for j in range(c * chunk, end):
        s += a[o, j, i]
    out[o, c, i] = s


@_kernel(enable_backward=False)
def _inner_partials(
    a: _array(dtype=typing.Any, ndim=3),
    b: _array(dtype=typing.Any, ndim=3),
    out: _array(dtype=typing.Any, ndim=3),
    chunk: int,
    length: int,
):
    o, c, i = _tid()
    s = out[o, c, i]
    end = builtins.min((c + 1) * chunk, length)
    for j in range(c * chunk, end):
        s += a[o, j, i] * b[o, j, i]
    out[o, c, i] = s


def _scalar_info(dtype):
    scalar = getattr(dtype, "_scalar", None)
    if scalar is not None:
        return scalar, tuple(dtype._shape), int(dtype._length_)
    return dtype, (), 1


def _scalar_view3(a, outer, length, inner):
    """A 3-d scalar view (outer, length, inner) of the contiguous array ``a``."""
    scalar, _, _ = _scalar_info(a.dtype)
    v = _array(ptr=a.ptr, dtype=scalar, shape=(outer, length, inner), device=a.device)
    v._weft_src = a  # keep the memory alive with the view
    return v


def _reduce(arrays, count, axis, inner_product):
    """Partial sums over ``axis`` with a weft kernel; returns a NumPy array (outer, inner)."""
    a = arrays[0]
    scalar, _, comps = _scalar_info(a.dtype)
    flat = [x.contiguous() for x in arrays]
    if axis is None:
        n = a.size if count is None else builtins.min(int(count), a.size)
        if inner_product:
            outer, length, inner = 1, n * comps, 1
        else:
            outer, length, inner = 1, n, comps
    else:
        axis = int(axis)
        if not -a.ndim <= axis < a.ndim:
            raise ValueError(f"axis {axis} is out of range for a {a.ndim}-d array")
        axis %= a.ndim
        outer = math.prod(a.shape[:axis])
        length = a.shape[axis]
        inner = math.prod(a.shape[axis + 1 :]) * comps  # array_inner adds the components afterwards
    views = [_scalar_view3(x, outer, length, inner) for x in flat]
    # enough chunks to keep every thread busy, chunks long enough to amortise the launch
    threads = builtins.max(int(_config.cpu_threads), 1)
    want = builtins.max(1, (4 * threads) // builtins.max(outer * inner, 1))
    # chunks of at most 16384 values: short sequential sums keep float32 rounding small (the
    # partials are then added pairwise by NumPy)
    nchunks = builtins.max(1, builtins.min(want, length // 4096), -(-length // 16384))
    chunk = -(-length // nchunks) if length else 1
    partial = _zeros((outer, nchunks, inner), dtype=scalar, device=a.device)
    if outer * inner * length > 0:
        if inner_product:
            _launch(_inner_partials, dim=(outer, nchunks, inner), inputs=[views[0], views[1], partial, chunk, length], device=a.device)
        else:
            _launch(_sum_partials, dim=(outer, nchunks, inner), inputs=[views[0], partial, chunk, length], device=a.device)
    p = partial.numpy()
    return p.sum(axis=1, dtype=p.dtype)


class _HostWrite:
    """``with _HostWrite(a) as h:`` gives ``h``, a writable NumPy view of ``a``'s elements; for an
    array on a GPU ``h`` is a host copy, written back to the array when the block ends."""

    def __init__(self, a):
        self.a = a
        self.host = None

    def __enter__(self):
        self.host = self.a.numpy()
        return self.host

    def __exit__(self, exc_type, exc, tb):
        if exc_type is None and not self.a.device.is_cpu:
            self.a.assign(self.host)


class ArrayUtilsError(TypeError, ValueError, RuntimeError):
    """Bad arguments to an array utility: a ``RuntimeError`` as Warp raises, and the
    ``TypeError`` / ``ValueError`` Python code expects for a wrong type or size."""


def _name(dtype) -> str:
    return _types.type_repr(dtype)


def _check_out(out, dtype, shape):
    if out.dtype != dtype:
        raise ArrayUtilsError(f"out array should have type {_name(dtype)}")
    if tuple(out.shape) != tuple(shape):
        raise ArrayUtilsError(f"out array should have shape {tuple(shape)}")


def _check_scalar_types(a, allowed, vectors=True, matrices=True):
    """Refuse (as Warp does) element types whose scalar is not in ``allowed``, and vector or
    matrix elements where those are not taken."""
    scalar, shape, _ = _scalar_info(a.dtype)
    if scalar not in allowed or (len(shape) == 1 and not vectors) or (len(shape) == 2 and not matrices):
        raise ArrayUtilsError(f"Unsupported data type: {_name(a.dtype)}")


_FLOATS = (_types.float32, _types.float64)
_SCAN_TYPES = (_types.int32, _types.int64, _types.float32, _types.float64)
_SORT_KEYS = (_types.int32, _types.uint32, _types.float32, _types.int64, _types.uint64, _types.float64)


def array_sum(values, out=None, value_count=None, axis=None):
    """Sum of the elements of an array (as ``warp.utils.array_sum``).

    Args:
        values: Array of float32 or float64 scalars, vectors or matrices (other types raise
            ``RuntimeError``, as in Warp).
        out: Optional output array: shape ``(1,)`` when ``axis`` is None, else the input shape
            with ``axis`` reduced to 1; same dtype as ``values``.
        value_count: Sum only the first ``value_count`` elements (``axis`` None only).
        axis: Axis to sum along; None sums everything.

    Returns:
        ``out`` when given; otherwise a scalar (NumPy scalar of the array's type, or a NumPy array
        for vector/matrix dtypes) when ``axis`` is None, or a new array with ``axis`` reduced to 1.
    """
    _check_scalar_types(values, _FLOATS)
    if axis is not None and value_count is not None:
        raise ValueError("array_sum: value_count cannot be used with axis")
    _, shape, comps = _scalar_info(values.dtype)
    r = _reduce([values], value_count, axis, False)  # (outer, inner)
    if axis is None:
        res = r.reshape(shape) if shape else r.reshape(())[()]
        if out is None:
            return res
        _check_out(out, values.dtype, (1,))
        with _HostWrite(out) as h:
            h.reshape(-1)[:comps] = np.asarray(res).reshape(-1)
        return out
    axis %= values.ndim
    out_shape = values.shape[:axis] + (1,) + values.shape[axis + 1 :]
    if out is None:
        out = _zeros(out_shape, dtype=values.dtype, device=values.device)
    _check_out(out, values.dtype, out_shape)
    with _HostWrite(out) as h:
        h[...] = r.reshape(h.shape)
    return out


def array_inner(a, b, out=None, count=None, axis=None):
    """Inner product of two arrays of the same shape and dtype (as ``warp.utils.array_inner``).

    Vectors and matrices contribute the sum of their component-wise products. float32 and float64
    elements only (others raise ``RuntimeError``, as in Warp).

    Args:
        a, b: Arrays of the same shape and dtype.
        out: Optional output array of scalars: shape ``(1,)`` when ``axis`` is None, else the
            input shape with ``axis`` reduced to 1.
        count: Use only the first ``count`` elements (``axis`` None only).
        axis: Axis to reduce along; None reduces everything.

    Returns:
        ``out`` when given; otherwise a NumPy scalar (``axis`` None) or a new array of scalars.
    """
    if a.size != b.size:
        raise ArrayUtilsError(f"A and b array storage sizes do not match ({a.size} vs {b.size})")
    if a.dtype != b.dtype:
        raise ArrayUtilsError(f"A and b array data types do not match ({_name(a.dtype)} vs {_name(b.dtype)})")
    if tuple(a.shape) != tuple(b.shape):
        raise ArrayUtilsError(f"array_inner: arrays have different shapes {a.shape} and {b.shape}")
    _check_scalar_types(a, _FLOATS)
    if axis is not None and count is not None:
        raise ValueError("array_inner: count cannot be used with axis")
    scalar, _, comps = _scalar_info(a.dtype)
    r = _reduce([a, b], count, axis, True)  # (outer, inner * comps) for an axis
    if axis is None:
        res = r.reshape(())[()]
        if out is None:
            return res
        _check_out(out, scalar, (1,))
        with _HostWrite(out) as h:
            h.reshape(-1)[0] = res
        return out
    axis %= a.ndim
    r = r.reshape(r.shape[0], -1, comps).sum(axis=2, dtype=r.dtype)
    out_shape = a.shape[:axis] + (1,) + a.shape[axis + 1 :]
    if out is None:
        out = _zeros(out_shape, dtype=scalar, device=a.device)
    _check_out(out, scalar, out_shape)
    with _HostWrite(out) as h:
        h[...] = r.reshape(out_shape)
    return out


def array_scan(in_array, out_array, inclusive=True):
    """Prefix sum over the elements of an array into ``out_array`` (as ``warp.utils.array_scan``);
    vectors and matrices are summed component-wise. Strided views are read and written in place.

    ``inclusive=True``: ``out[i] = in[0] + ... + in[i]``; otherwise ``out[0] = 0`` and
    ``out[i] = in[0] + ... + in[i-1]``. Computed with NumPy on the CPU.

    Raises:
        ArrayUtilsError: different sizes or data types, or elements other than int32, int64,
            float32 and float64 scalars and vectors (as Warp).
    """
    if in_array.size != out_array.size:
        raise ArrayUtilsError(f"In and out array storage sizes do not match ({in_array.size} vs {out_array.size})")
    if in_array.dtype != out_array.dtype:
        raise ArrayUtilsError(
            f"In and out array data types do not match ({_name(in_array.dtype)} vs {_name(out_array.dtype)})"
        )
    _check_scalar_types(in_array, _SCAN_TYPES, matrices=False)
    if in_array.size == 0:
        return
    _, _, comps = _scalar_info(in_array.dtype)
    src = in_array.numpy().reshape(in_array.size, comps)
    with _HostWrite(out_array) as out_host:
        s = np.cumsum(src, axis=0, dtype=out_host.dtype)  # a separate buffer: in and out may alias
        if not inclusive:
            s[1:] = s[:-1].copy()
            s[0] = 0
        out_host[...] = s.reshape(out_host.shape)


def _stable_order(keys):
    """Stable sorting permutation. Keys of up to 32 bits become order-preserving uint32 values
    packed with their index into uint64 (a plain sort of unique values is then stable, and much
    faster than NumPy's stable argsort); other keys use ``argsort(kind="stable")``."""
    n = len(keys)
    if keys.dtype.itemsize > 4 or n >= (1 << 32):
        return np.argsort(keys, kind="stable")
    if keys.dtype.kind == "f":
        u = keys.astype(np.float32).view(np.uint32)
        s = np.where(u & np.uint32(0x80000000), ~u, u | np.uint32(0x80000000))
    elif keys.dtype.kind == "i":
        s = keys.astype(np.int32).view(np.uint32) ^ np.uint32(0x80000000)
    else:
        s = keys.astype(np.uint32)
    packed = (s.astype(np.uint64) << np.uint64(32)) | np.arange(n, dtype=np.uint64)
    packed.sort()
    return (packed & np.uint64(0xFFFFFFFF)).astype(np.int64)


def radix_sort_pairs(keys, values, count, begin_bit=0, end_bit=None):
    """Sort the first ``count`` keys in ascending order, moving ``values`` along (stable).

    As ``warp.utils.radix_sort_pairs``, written in place: 32-bit keys with 32-bit values sort with
    the runtime's native radix sort, other types with NumPy's stable sort. ``begin_bit``/
    ``end_bit`` restrict integer keys to those bits (float keys sort by value).

    Warp's contract holds: keys of int32, uint32, float32, int64, uint64 or float64, values of 4
    or 8 bytes, both contiguous and of at least ``2 * count`` elements (the second half is Warp's
    scratch space; weft leaves it alone), so that a program that runs here runs on Warp.

    Raises:
        RuntimeError (``ArrayUtilsError``): arrays on different devices, too short, not
            contiguous, or of other types; an invalid bit range.
    """
    count = int(count)
    if keys.device != values.device:
        raise ArrayUtilsError(f"Keys and values array storage devices do not match ({keys.device} vs {values.device})")
    if count == 0:
        return
    if keys.size < 2 * count or values.size < 2 * count:
        raise ArrayUtilsError("Keys and values array storage must be large enough to contain 2*count elements")
    from .array_layout import _dtype_size

    if _dtype_size(values.dtype) not in (4, 8) or keys.dtype not in _SORT_KEYS:
        raise ArrayUtilsError(f"Unsupported keys and values data types: {_name(keys.dtype)}, {_name(values.dtype)}")
    for what, a in (("keys", keys), ("values", values)):
        if not a.is_contiguous:
            raise ArrayUtilsError(
                f"radix_sort_pairs() requires a contiguous {what} array, got non-contiguous {what} with data types: "
                f"{_name(keys.dtype)}, {_name(values.dtype)}"
            )
    if keys.ndim != 1 or values.ndim != 1:
        raise ValueError("radix_sort_pairs: keys and values must be 1-d")
    bits = 8 * _dtype_size(keys.dtype)
    end = bits if end_bit is None else int(end_bit)
    if not 0 <= int(begin_bit) <= end <= bits:
        raise ArrayUtilsError(f"Invalid radix sort bit range [{int(begin_bit)}, {end}) for {bits}-bit keys")
    if count <= 0:
        return
    if _spans_overlap(keys[:count], values[:count]):
        raise ValueError("radix_sort_pairs: keys and values overlap; pass two separate arrays")
    with _HostWrite(keys) as keys_host, _HostWrite(values) as values_host:
        _sort_pairs(keys_host[:count], values_host[:count], begin_bit, end_bit)


def segmented_sort_pairs(keys, values, count, segment_start_indices, segment_end_indices=None):
    """Sort key-value pairs within segments (as ``warp.utils.segmented_sort_pairs``), in place:
    the pairs at ``start[s]:end[s]`` of the first ``count`` are sorted by key, stably, each
    segment on its own; pairs in no segment stay where they are.

    ``segment_end_indices`` defaults to ``segment_start_indices[1:]`` (then the starts hold one
    more entry than there are segments). Segments must not overlap. As in Warp: int32 or float32
    keys (floats by value) with int32 values, arrays of at least ``2 * count`` elements.

    Raises:
        ArrayUtilsError: arrays on different devices, too short or of other types; overlapping
            segments.
    """
    count = int(count)
    if keys.device != values.device:
        raise ArrayUtilsError(f"Array storage devices do not match ({keys.device} vs {values.device})")
    if count <= 0:
        return
    if keys.size < 2 * count or values.size < 2 * count:
        raise ArrayUtilsError("Array storage must be large enough to contain 2*count elements")
    if keys.dtype not in (_types.int32, _types.float32) or values.dtype != _types.int32:
        raise ArrayUtilsError(f"Unsupported data type: {_name(keys.dtype)}")
    starts = segment_start_indices.numpy().astype(np.int64)
    ends = starts[1:] if segment_end_indices is None else segment_end_indices.numpy().astype(np.int64)
    starts = np.clip(starts[: len(ends)], 0, count)
    ends = np.clip(ends, 0, count)
    keep = ends > starts
    starts, ends = starts[keep], ends[keep]
    if not len(starts):
        return
    order = np.argsort(starts, kind="stable")
    starts, ends = starts[order], ends[order]
    if np.any(starts[1:] < ends[:-1]):
        raise ArrayUtilsError("segmented_sort_pairs: segments overlap")
    lengths = ends - starts
    positions = np.repeat(starts - np.concatenate(([0], np.cumsum(lengths)[:-1])), lengths) + np.arange(lengths.sum())
    segment = np.repeat(np.arange(len(starts)), lengths)
    with _HostWrite(keys) as keys_host, _HostWrite(values) as values_host:
        k, v = keys_host[:count], values_host[:count]
        sub = k[positions]
        by_key = _stable_order(sub)
        perm = by_key[np.argsort(segment[by_key], kind="stable")]  # by segment, then by key
        k[positions] = sub[perm]
        v[positions] = v[positions][perm]


def _spans_overlap(a, b) -> bool:
    """Whether two arrays' memory ranges intersect (judged on the arrays themselves, wherever they
    live: a GPU array's host copies never overlap). Bounds only, like ``np.may_share_memory``."""
    from .array_layout import _byte_span, _dtype_size

    if a.device != b.device or a.size == 0 or b.size == 0:
        return False
    a_lo, a_hi = _byte_span(a.shape, a.strides, _dtype_size(a.dtype))
    b_lo, b_hi = _byte_span(b.shape, b.strides, _dtype_size(b.dtype))
    return a.ptr + a_lo < b.ptr + b_hi and b.ptr + b_lo < a.ptr + a_hi


def _sort_pairs(k, v, begin_bit, end_bit):
    kind = {"u": 0, "i": 1, "f": 2}.get(k.dtype.kind)
    bits = k.dtype.itemsize * 8
    end = bits if end_bit is None else int(end_bit)
    if (
        kind is not None
        and k.dtype.itemsize == 4
        and v.dtype.itemsize == 4
        and k.flags.c_contiguous
        and v.flags.c_contiguous
        and 0 <= int(begin_bit) <= end <= 32
    ):
        from .runtime.module import runtime_sort_pairs32

        if kind == 1 and (begin_bit != 0 or end != 32):
            kind = 0  # a bit range of a signed key sorts those bits as an unsigned number
        runtime_sort_pairs32(k.ctypes.data, v.ctypes.data, len(k), kind, int(begin_bit), end)
        return
    sort_key = k
    if np.issubdtype(k.dtype, np.integer):
        if begin_bit != 0 or end != bits:
            u = k.view(np.dtype(f"u{k.dtype.itemsize}"))
            mask = (1 << (end - int(begin_bit))) - 1
            sort_key = (u >> np.uint64(begin_bit).astype(u.dtype)) & np.array(mask).astype(u.dtype)
    order = _stable_order(sort_key)
    k[...] = k[order]
    v[...] = v[order]


def runlength_encode(values, run_values, run_lengths, run_count=None, value_count=None):
    """Run-length encoding of a 1-d array (as ``warp.utils.runlength_encode``).

    Writes the value and length of each run of equal consecutive values into ``run_values`` and
    ``run_lengths`` (their first ``n`` entries; the rest is left as is). Computed with NumPy.

    Returns:
        ``run_count`` (with the number of runs written into ``run_count[0]``) when given,
        else the number of runs as an int.

    Raises:
        ArrayUtilsError: a negative ``value_count``, outputs shorter than it, ``run_values`` of
            another dtype than ``values``, or ``run_lengths`` / ``run_count`` not int32.
    """
    n = values.shape[0] if value_count is None else int(value_count)
    if n < 0:
        raise ArrayUtilsError(f"value_count must be non-negative, got {n}")
    if n > values.shape[0]:
        raise ArrayUtilsError(f"runlength_encode: value_count {n} exceeds the array length {values.shape[0]}")
    if run_values.shape[0] < n or run_lengths.shape[0] < n:
        raise ArrayUtilsError(f"Output array storage sizes must be at least equal to value_count ({n})")
    if run_values.dtype is not values.dtype:
        raise ArrayUtilsError(
            f"values and run_values data types do not match ({_name(values.dtype)} vs {_name(run_values.dtype)})"
        )
    if run_lengths.dtype is not _types.int32:
        raise ArrayUtilsError("run_lengths array must be of type int32")
    if run_count is not None and run_count.dtype is not _types.int32:
        raise ArrayUtilsError("run_count array must be of type int32")
    v = values.numpy()[:n]
    if n:
        starts = np.flatnonzero(np.concatenate(([True], v[1:] != v[:-1])))
        runs = len(starts)
        with _HostWrite(run_values) as rv, _HostWrite(run_lengths) as rl:
            rv[:runs] = v[starts]
            rl[:runs] = np.diff(np.append(starts, n))
    else:
        runs = 0
    if run_count is not None:
        with _HostWrite(run_count) as rc:
            rc[0] = runs
        return run_count
    return runs


def array_cast(in_array, out_array, count=None):
    """Convert the values of ``in_array`` to ``out_array``'s dtype (as ``warp.utils.array_cast``).

    The arrays' scalars are taken in order (a vector or matrix contributes its components), so
    the shapes may differ when the numbers of scalars agree; scalars convert as in C (float to
    int truncates toward zero). ``count`` converts only the scalars of the first ``count``
    elements (1-d arrays). Computed with NumPy, written in place.

    Raises:
        ArrayUtilsError: different numbers of scalars, or ``count`` with a multi-dimensional array.
    """
    _, _, ci = _scalar_info(in_array.dtype)
    src = in_array.numpy().reshape(-1)
    if count is not None:
        if in_array.ndim > 1 or out_array.ndim > 1:
            raise ArrayUtilsError("Partial cast is not supported for arrays with more than one dimension")
        src = src[: int(count) * ci]
    with _HostWrite(out_array) as out_host:
        dst = out_host.reshape(-1) if out_host.flags.c_contiguous else None
        total = out_host.size
        if (count is None and src.size != total) or src.size > total:
            raise ArrayUtilsError(
                f"array_cast: {_name(in_array.dtype)} array of {in_array.size} elements ({src.size} values) does not fit "
                f"{_name(out_array.dtype)} array of {out_array.size} elements ({total} values)"
            )
        if dst is None:  # a strided view: write through it
            flat = out_host.reshape(-1).copy()
            flat[: src.size] = src.astype(flat.dtype)
            out_host[...] = flat.reshape(out_host.shape)
        else:
            dst[: src.size] = src.astype(dst.dtype)


_created: dict = {}  # id(python function) -> (the function, its weft Function, its module)


def create_warp_function(func):
    """A weft func made from the Python function or lambda ``func`` (kernels call it; Python
    calls run it for concrete argument types), with the weft module it belongs to: ``(func,
    module)``, as ``warp.utils.create_warp_function``. The func's key is Warp's ``func_<16 hex
    digits>``, a digest of the function's qualified name and code, the same in every process; the
    same function object gives the same func.
    """
    import hashlib
    import marshal

    from .kernel import Function
    from .runtime.module import get_module

    found = _created.get(id(func))
    if found is None or found[0] is not func:
        digest = hashlib.sha256(func.__qualname__.encode() + marshal.dumps(func.__code__)).hexdigest()[:16]
        module = get_module(func.__module__)
        found = _created[id(func)] = (func, Function(func, module, key=f"func_{digest}"), module)
    return found[1], found[2]


class MeshEdge:
    """An edge of a triangle mesh (``MeshAdjacency``): its vertices ``v0``, ``v1`` in the order the
    first face lists them, the vertices opposite it in its first and second face (``o0``, ``o1``)
    and those faces (``f0``, ``f1``); -1 where the edge has only one face (a boundary edge)."""

    __slots__ = ("f0", "f1", "o0", "o1", "v0", "v1")

    def __init__(self, v0: int, v1: int, o0: int, o1: int, f0: int, f1: int):
        self.v0, self.v1, self.o0, self.o1, self.f0, self.f1 = v0, v1, o0, o1, f0, f1

    def __repr__(self):
        return f"MeshEdge(v0={self.v0}, v1={self.v1}, o0={self.o0}, o1={self.o1}, f0={self.f0}, f1={self.f1})"


class MeshAdjacency:
    """The edges of a triangle mesh and the faces on each side (as ``warp.utils.MeshAdjacency``):
    what bending springs and dihedral-angle constraints of cloth are built from.

    Args:
        indices: triangles as vertex-index triples (a sequence, a NumPy array or an ``(n, 3)`` /
            flat int array).
        num_tris: how many of them to read.

    ``edges`` maps each edge's sorted vertex pair ``(min, max)`` to its ``MeshEdge``. An edge met
    by a third face is non-manifold: it is reported (printed, as Warp does) and keeps its first
    two faces.
    """

    def __init__(self, indices, num_tris: int):
        tris = np.asarray(indices.numpy() if hasattr(indices, "numpy") else indices, dtype=np.int64).reshape(-1, 3)
        self.edges: dict = {}
        for face in range(int(num_tris)):
            i, j, k = (int(v) for v in tris[face])
            self.add_edge(i, j, k, face)
            self.add_edge(j, k, i, face)
            self.add_edge(k, i, j, face)

    def add_edge(self, i0: int, i1: int, opposite: int, face: int):
        """Record that ``face`` has the edge ``i0``-``i1``, with ``opposite`` its third vertex."""
        key = (min(i0, i1), max(i0, i1))
        edge = self.edges.get(key)
        if edge is None:
            self.edges[key] = MeshEdge(i0, i1, opposite, -1, face, -1)
        elif edge.f1 == -1:
            edge.o1, edge.f1 = opposite, face
        else:
            print("Detected non-manifold edge")


def transform_expand(t):
    """The transform of a 7-number sequence ``(px, py, pz, qx, qy, qz, qw)``: position, then
    rotation quaternion (as ``wp.transform_expand``)."""
    from .vector_types import transformation

    values = [float(x) for x in t]
    if len(values) != 7:
        raise ValueError(f"transform_expand takes 7 numbers (position, then quaternion), got {len(values)}")
    return transformation()(*values)


from .graph_coloring import (  # noqa: E402, F401 (Warp's graph coloring lives in wp.utils)
    GraphColoringAlgorithm,
    graph_coloring_assign,
    graph_coloring_balance,
    graph_coloring_get_groups,
)

__all__ = [
    "ArrayUtilsError", "GraphColoringAlgorithm", "MeshAdjacency", "MeshEdge", "ScopedTimer", "array_cast",
    "array_inner", "array_scan", "array_sum", "create_warp_function", "graph_coloring_assign",
    "graph_coloring_balance", "graph_coloring_get_groups", "radix_sort_pairs", "runlength_encode",
    "segmented_sort_pairs", "transform_expand",
]  # fmt: skip
