"""Warp's padded layout of BSR matrices: row ``r`` owns the slots ``offsets[r]:offsets[r+1]`` (its
capacity) and uses the first ``row_counts[r]`` of them, so that a row's blocks can change without
moving the other rows; ``nnz`` counts every slot.

weft computes on compact matrices. An operation that reads a padded matrix reads a compact copy
of its active blocks (``compact``); one asked for ``topology="padded"`` builds its result compactly
and writes it into the destination's row slots (``pad_into``). A row whose result does not fit
keeps the blocks that do and sets the destination's status to
``BSR_STATUS_ROW_CAPACITY_EXCEEDED`` (it stays set until ``clear_status()``). Values move through
a kernel in both directions, so gradients flow through the layout changes.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .. import types as wt
from ..array import array, full, zeros
from ..codegen.intrinsics import tid
from ..kernel import kernel
from ..runtime.launch import launch
from . import topology as topo
from .matrix import BSR_STATUS_ROW_CAPACITY_EXCEEDED, BsrMatrix, store


@kernel
def copy_blocks(src: array(dtype=Any), src_index: array(dtype=wt.int32), dst: array(dtype=Any), dst_index: array(dtype=wt.int32)):
    """``dst[dst_index[i]] = src[src_index[i]]``: whole blocks (or scalars)."""
    i = tid()
    dst[dst_index[i]] = src[src_index[i]]


def _index(a: np.ndarray, device) -> array:
    return array(np.asarray(a, dtype=np.int32), dtype=wt.int32, device=device)


def is_padded(m: BsrMatrix) -> bool:
    return m.row_counts is not None


def capacity_offsets(row_capacity, nrow: int) -> np.ndarray:
    """Row offsets for ``row_capacity`` slots per row (an int, or an int array of ``nrow``: a weft
    or NumPy array)."""
    caps = np.asarray(row_capacity.numpy() if hasattr(row_capacity, "numpy") else row_capacity, dtype=np.int64)
    if caps.ndim == 0:
        caps = np.full(nrow, int(caps), dtype=np.int64)
    elif caps.reshape(-1).shape[0] != nrow:
        raise ValueError(f"row_capacity has {caps.size} entries for {nrow} rows of blocks")
    caps = caps.reshape(-1)
    if np.any(caps < 0):
        raise ValueError("row_capacity must be non-negative")
    out = np.zeros(nrow + 1, dtype=np.int32)
    np.cumsum(caps, out=out[1:])
    return out


def active_counts(m: BsrMatrix) -> np.ndarray:
    """Blocks in use per row (all of them for a compact matrix), within each row's capacity."""
    offsets = m.offsets.numpy().astype(np.int64)
    capacity = np.diff(offsets)
    if not is_padded(m):
        return capacity
    return np.clip(m.row_counts.numpy().astype(np.int64)[: m.nrow], 0, capacity)


def active_slots(m: BsrMatrix, counts: np.ndarray | None = None) -> np.ndarray:
    """The storage slots of the blocks in use, row by row (``counts``: ``active_counts(m)``)."""
    counts = active_counts(m) if counts is None else counts
    return topo.ranges(m.offsets.numpy()[:-1], counts)


def uncompress_rows(m: BsrMatrix) -> np.ndarray:
    """The row of each slot of a padded matrix, -1 for unused slots."""
    counts = active_counts(m)
    rows = np.full(int(m.offsets.numpy()[-1]) if m.nrow else 0, -1, dtype=np.int32)
    rows[active_slots(m, counts)] = np.repeat(np.arange(m.nrow, dtype=np.int32), counts)
    return rows


def compact(m: BsrMatrix) -> BsrMatrix:
    """A compact matrix of ``m``'s active blocks: ``m`` itself when it is compact, else a new
    matrix whose values are gathered from ``m``'s (gradients flow back to them)."""
    if not is_padded(m):
        return m
    return working_copy(m)


def working_copy(m: BsrMatrix) -> BsrMatrix:
    """A new compact matrix equal to ``m`` (its own offsets and columns; values gathered from
    ``m``'s active slots, or ``m``'s values array itself when ``m`` is compact), to compute into
    in ``m``'s stead."""
    out = BsrMatrix(m.dtype, m.device)
    counts = active_counts(m)
    offsets = np.zeros(m.nrow + 1, dtype=np.int32)
    np.cumsum(counts, out=offsets[1:])
    if not is_padded(m):  # store gives the new matrix its own offsets and columns arrays
        store(out, m.nrow, m.ncol, offsets, m.columns.numpy()[: int(offsets[-1])], m.values)
        return out
    slots = active_slots(m, counts)
    values = zeros(len(slots), dtype=m.dtype, device=m.device, requires_grad=m.requires_grad)
    if len(slots):
        launch(copy_blocks, dim=len(slots), inputs=[m.values, _index(slots, m.device), values,
                                                   _index(np.arange(len(slots)), m.device)], device=m.device)
    store(out, m.nrow, m.ncol, offsets, m.columns.numpy()[slots], values)
    return out


def set_padded_zero(bsr: BsrMatrix, nrow: int, ncol: int, offsets: np.ndarray, nnz_capacity=None):
    """Give ``bsr`` the padded layout ``offsets`` with every row empty (unused columns -1)."""
    total = int(offsets[-1])
    room = max(total, int(nnz_capacity or 0))
    bsr.nrow, bsr.ncol = int(nrow), int(ncol)
    bsr.offsets = _index(offsets, bsr.device)
    bsr.row_counts = zeros(int(nrow), dtype=wt.int32, device=bsr.device)
    if bsr.columns.shape[0] < room:
        bsr.columns = full(room, -1, dtype=wt.int32, device=bsr.device)
    elif total:
        bsr.columns[:total].fill_(-1)
    if bsr.values.shape[0] < room:
        bsr.values = zeros(room, dtype=bsr.dtype, device=bsr.device, requires_grad=bsr.values.requires_grad)
    bsr.nnz = room  # as Warp: the storage bound (nnz_sync() gives the slots the rows span)


def pad_into(dest: BsrMatrix, result: BsrMatrix):
    """Write the compact ``result`` into ``dest``'s row slots (``dest``'s capacity: its padded
    layout, or its current rows if it is compact) and make ``dest`` padded."""
    offsets = dest.offsets.numpy().astype(np.int64)
    if len(offsets) != result.nrow + 1:  # a destination of another size: capacity for nothing
        offsets = np.zeros(result.nrow + 1, dtype=np.int64)
    capacity = np.diff(offsets)
    r_offsets = result.offsets.numpy().astype(np.int64)
    wanted = np.diff(r_offsets)
    kept = np.minimum(wanted, capacity)
    if np.any(wanted > capacity):
        dest._status = BSR_STATUS_ROW_CAPACITY_EXCEEDED
    src, dst = topo.ranges(r_offsets[:-1], kept), topo.ranges(offsets[:-1], kept)
    total = int(offsets[-1])
    room = max(total, dest.nnz if is_padded(dest) else 0)  # a padded matrix keeps its storage bound
    columns = np.full(room, -1, dtype=np.int32)
    columns[dst] = result.columns.numpy()[src]
    values = zeros(room, dtype=dest.dtype, device=dest.device, requires_grad=dest.requires_grad or result.requires_grad)
    if len(src):
        launch(copy_blocks, dim=len(src), inputs=[result.values, _index(src, dest.device), values, _index(dst, dest.device)],
               device=dest.device)
    dest.nrow, dest.ncol = result.nrow, result.ncol
    dest.offsets = _index(offsets, dest.device)
    dest.columns = _index(columns, dest.device)
    dest.values = values
    dest.row_counts = _index(kept, dest.device)
    dest.nnz = room


def adopt(dest: BsrMatrix, result: BsrMatrix):
    """Make ``dest`` the compact matrix ``result`` (its arrays)."""
    dest.nrow, dest.ncol = result.nrow, result.ncol
    dest.offsets, dest.columns, dest.values = result.offsets, result.columns, result.values
    dest.nnz = result.nnz
    dest.row_counts = None


def into(dest: BsrMatrix, mode: str, op):
    """Run ``op(target, mode)`` for an operation writing ``dest`` in ``mode`` ("compact", "masked"
    or "padded"): straight into ``dest`` when it and the mode are compact; else into a compact
    working copy of ``dest``, whose result ``dest`` then takes in the requested layout (a
    masked result keeps ``dest``'s layout)."""
    if mode != "padded" and not is_padded(dest):
        return op(dest, mode)
    target = working_copy(dest)
    op(target, "masked" if mode == "masked" else "compact")
    if mode == "padded" or (mode == "masked" and is_padded(dest)):
        pad_into(dest, target)
    else:
        adopt(dest, target)
    return dest
