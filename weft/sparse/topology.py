"""Host-side structure of block-sparse matrices: which blocks exist, in which order, and which
input terms each output block sums. NumPy on index arrays only (values never leave the device);
every result is in the compact layout: blocks sorted by row, then by column, no duplicates.

A block is identified by its key ``row * ncol + col`` (int64). Functions return NumPy arrays;
``starts`` arrays are segment offsets (``len = blocks + 1``) into an ``order`` or product list.
"""

from __future__ import annotations

import numpy as np


def keys_of(rows: np.ndarray, cols: np.ndarray, ncol: int) -> np.ndarray:
    return rows.astype(np.int64) * np.int64(max(ncol, 1)) + cols.astype(np.int64)


def rows_of(offsets: np.ndarray) -> np.ndarray:
    """The row of each block of a compact matrix (``uncompress_rows``)."""
    counts = np.diff(offsets.astype(np.int64))
    return np.repeat(np.arange(len(counts), dtype=np.int32), counts)


def ranges(starts: np.ndarray, counts: np.ndarray) -> np.ndarray:
    """``starts[k], starts[k] + 1, ..., starts[k] + counts[k] - 1`` for every ``k``, concatenated
    (int64): the storage positions of segments given by where they start and how long they are."""
    counts = np.asarray(counts, dtype=np.int64)
    within = np.arange(int(counts.sum()), dtype=np.int64) - np.repeat(np.cumsum(counts) - counts, counts)
    return np.repeat(np.asarray(starts, dtype=np.int64), counts) + within


def offsets_of(block_rows: np.ndarray, nrow: int) -> np.ndarray:
    counts = np.bincount(block_rows, minlength=nrow)[:nrow] if len(block_rows) else np.zeros(nrow, np.int64)
    out = np.zeros(nrow + 1, dtype=np.int32)
    np.cumsum(counts, out=out[1:])
    return out


def group(keys: np.ndarray) -> tuple:
    """``(order, starts, unique_keys)``: ``keys[order]`` sorted (stable: equal keys keep their
    input order), ``starts`` the first position of each distinct key in that order."""
    order = np.argsort(keys, kind="stable")
    sorted_keys = keys[order]
    if len(sorted_keys) == 0:
        return order.astype(np.int32), np.zeros(1, np.int32), sorted_keys
    first = np.flatnonzero(np.concatenate(([True], sorted_keys[1:] != sorted_keys[:-1])))
    starts = np.append(first, len(sorted_keys)).astype(np.int32)
    return order.astype(np.int32), starts, sorted_keys[first]


def triplets(rows: np.ndarray, cols: np.ndarray, nrow: int, ncol: int) -> tuple:
    """Blocks of a matrix given as triplets: ``(order, starts, block_rows, block_cols)``.
    Triplets outside the matrix are ignored (as in Warp)."""
    valid = (rows >= 0) & (rows < nrow) & (cols >= 0) & (cols < ncol)
    index = np.flatnonzero(valid)
    order, starts, keys = group(keys_of(rows[index], cols[index], ncol))
    order = index[order].astype(np.int32)
    return order, starts, (keys // max(ncol, 1)).astype(np.int32), (keys % max(ncol, 1)).astype(np.int32)


def locate(keys: np.ndarray, wanted: np.ndarray) -> np.ndarray:
    """For each of ``wanted``, its position in the sorted ``keys``, or -1."""
    if len(keys) == 0:
        return np.full(len(wanted), -1, np.int32)
    pos = np.searchsorted(keys, wanted)
    pos_c = np.minimum(pos, len(keys) - 1)
    return np.where(keys[pos_c] == wanted, pos_c, -1).astype(np.int32)


def retarget(starts: np.ndarray, where: np.ndarray, blocks: int) -> tuple:
    """Groups of items (``starts``, sorted by key) sent to ``blocks`` output blocks, group ``g``
    to ``where[g]`` (increasing where kept) or dropped (-1): ``(kept_items, new_starts)``, the
    mask of items kept (their order is already the output order) and the segments per block."""
    sizes = np.diff(starts.astype(np.int64))
    kept = where >= 0
    counts = np.zeros(blocks, np.int64)
    counts[where[kept]] = sizes[kept]
    new_starts = np.zeros(blocks + 1, np.int64)
    np.cumsum(counts, out=new_starts[1:])
    item_group = np.repeat(np.arange(len(sizes)), sizes)
    return kept[item_group] if len(item_group) else np.zeros(0, bool), new_starts.astype(np.int32)


def union(keys_a: np.ndarray, keys_b: np.ndarray) -> tuple:
    """``(keys, in_a, in_b)``: the sorted union and each key's position in a and b (or -1)."""
    keys = np.union1d(keys_a, keys_b)
    return keys, locate(keys_a, keys), locate(keys_b, keys)


def transposed(offsets: np.ndarray, columns: np.ndarray, ncol: int) -> tuple:
    """The column structure: ``(t_offsets, t_blocks, t_rows)``: the blocks of column ``j`` are
    ``t_blocks[t_offsets[j]:t_offsets[j+1]]`` in row order, ``t_rows`` their rows."""
    rows = rows_of(offsets)
    cols = columns[: len(rows)]
    t_blocks = np.lexsort((rows, cols)).astype(np.int32)
    return offsets_of(cols[t_blocks], ncol), t_blocks, rows[t_blocks]


def products(x_offsets, x_columns, y_offsets, y_columns, ncol_z: int) -> tuple:
    """The block products of ``x @ y``: ``(x_block, y_block, starts, keys)`` with the products
    grouped by output block (keys sorted, products of one block in x's block order)."""
    x_rows = rows_of(x_offsets)
    x_cols = x_columns[: len(x_rows)].astype(np.int64)
    y_start = y_offsets[x_cols].astype(np.int64)
    counts = y_offsets[x_cols + 1].astype(np.int64) - y_start
    x_block = np.repeat(np.arange(len(x_rows), dtype=np.int64), counts)
    y_block = ranges(y_start, counts)
    keys = keys_of(x_rows[x_block], y_columns[y_block], ncol_z)
    order, starts, unique = group(keys)
    return x_block[order].astype(np.int32), y_block[order].astype(np.int32), starts, unique
