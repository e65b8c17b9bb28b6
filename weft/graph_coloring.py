"""Graph coloring for parallel solvers: Warp's ``wp.utils.graph_coloring_assign``,
``graph_coloring_balance``, ``graph_coloring_get_groups`` and ``GraphColoringAlgorithm``.

Nodes of one color share no edge, so a solver may process each color's nodes in parallel
(Gauss-Seidel / VBD style sweeps over a mesh). The graph is an undirected edge list on the CPU;
NumPy turns it into compressed adjacency (CSR) and the sequential parts (the visiting order of
maximum cardinality search, greedy coloring in that order, group balancing) run as single-thread
weft kernels, compiled once like any kernel, so 100k-edge graphs color in milliseconds.

Semantics follow warp-lang 1.19 (arguments, errors, results); the colorings themselves are weft's
own and may use different colors for the same graph. Self-loops (``[i, i]``) are ignored, and
repeated edges count once.

Contract: not part of the compiler pipeline; this module only uses the public runtime (arrays,
launches).
"""

from __future__ import annotations

import enum

import numpy as np

from . import types as wt
from .array import array as _array
from .kernel import func as _func
from .kernel import kernel as _kernel
from .runtime.launch import launch as _launch

_int_array = _array(dtype=wt.int32)
_float_array = _array(dtype=wt.float32)


class GraphColoringAlgorithm(enum.IntEnum):
    """How ``graph_coloring_assign`` orders the nodes it colors greedily."""

    MCS = 0
    """Maximum cardinality search order (optimal on chordal graphs; usually fewest colors)."""

    GREEDY = 1
    """Nodes by decreasing degree."""


# -- kernels (single thread: each step depends on the previous ones) ----------------------------


@_kernel(enable_backward=False)
def _mcs_order(
    offsets: _int_array,
    adjacency: _int_array,
    weight: _int_array,
    bucket_head: _int_array,
    bucket_tail: _int_array,
    link_next: _int_array,
    link_prev: _int_array,
    order: _int_array,
):
    """Maximum cardinality search: repeatedly visit the unvisited node with the most visited
    neighbors (``weight``; -1 once visited). Nodes of weight >= 1 wait in FIFO buckets (doubly
    linked lists per weight), so ties go to the longest-waiting node, a breadth-first sweep; a new
    connected component starts at its lowest-numbered node."""
    n = order.shape[0]
    queued = int(0)
    top = int(0)  # no bucket above top holds a node
    seed = int(0)
    for i in range(n):
        v = int(-1)
        if queued == 0:
            while weight[seed] != 0:
                seed += 1
            v = seed
        else:
            while bucket_head[top] == -1:
                top -= 1
            v = bucket_head[top]
            nxt = link_next[v]
            bucket_head[top] = nxt
            if nxt == -1:
                bucket_tail[top] = -1
            else:
                link_prev[nxt] = -1
            queued -= 1
        weight[v] = -1
        order[i] = v
        for j in range(offsets[v], offsets[v + 1]):
            u = adjacency[j]
            w = weight[u]
            if w >= 0:
                if w > 0:  # unlink u from bucket w
                    pu = link_prev[u]
                    nu = link_next[u]
                    if pu == -1:
                        bucket_head[w] = nu
                    else:
                        link_next[pu] = nu
                    if nu == -1:
                        bucket_tail[w] = pu
                    else:
                        link_prev[nu] = pu
                else:
                    queued += 1
                w += 1
                weight[u] = w
                last = bucket_tail[w]  # append u to bucket w
                link_prev[u] = last
                link_next[u] = -1
                if last == -1:
                    bucket_head[w] = u
                else:
                    link_next[last] = u
                bucket_tail[w] = u
                if w > top:
                    top = w


@_kernel(enable_backward=False)
def _greedy_colors(
    order: _int_array,
    offsets: _int_array,
    adjacency: _int_array,
    seen: _int_array,
    colors: _int_array,
    color_count: _int_array,
):
    """Color the nodes in ``order``, each with the smallest color none of its colored neighbors
    has. ``seen[c] == i`` marks color c as taken by a neighbor of the i-th node (no clearing);
    ``colors`` starts at -1."""
    count = int(0)
    for i in range(order.shape[0]):
        v = order[i]
        for j in range(offsets[v], offsets[v + 1]):
            c = colors[adjacency[j]]
            if c >= 0:
                seen[c] = i
        c = int(0)
        while seen[c] == i:
            c += 1
        colors[v] = c
        if c + 1 > count:
            count = c + 1
    color_count[0] = count


@_func
def _find_mover(
    g: int,
    target: int,
    offsets: _int_array,
    adjacency: _int_array,
    colors: _int_array,
    size: _int_array,
    cursor: _int_array,
    link_next: _int_array,
):
    """A node of group ``g`` with no neighbor of color ``target`` (-1: none), searched around
    g's ring from its cursor; only when the move evens the groups out (g at least 2 larger)."""
    mover = int(-1)
    if g != target and size[g] >= size[target] + 2:
        v = cursor[g]
        for _step in range(size[g]):
            if mover == -1:
                free = bool(True)
                for j in range(offsets[v], offsets[v + 1]):
                    if colors[adjacency[j]] == target:
                        free = False
                if free:
                    mover = v
                else:
                    v = link_next[v]
    return mover


@_kernel(enable_backward=False)
def _balance(
    offsets: _int_array,
    adjacency: _int_array,
    colors: _int_array,
    size: _int_array,
    by_size: _int_array,
    head: _int_array,
    cursor: _int_array,
    link_next: _int_array,
    link_prev: _int_array,
    target_ratio: float,
    ratio: _float_array,
):
    """Move one node at a time between color groups, keeping the coloring valid, until the
    largest / smallest group size ratio is at most ``target_ratio`` or no node can move.

    Every move goes from a group of size X to one of size Y <= X - 2: the largest size never grows,
    the smallest never shrinks, and the sum of squared sizes drops, so the loop ends. Moves are
    sought first into the smallest group (from the largest source down), then out of the largest
    group (into the smallest target up), then between any other two groups (a reshuffle that may
    unblock the first two). Groups are circular doubly linked lists (``head``)
    searched from a ``cursor`` that moves on past the mover, so nodes found unable to move are
    not examined first again."""
    k = size.shape[0]
    result = float(1.0)
    searching = bool(True)
    while searching:
        for a in range(k):  # by_size: the colors by increasing group size (insertion sort)
            by_size[a] = a
            b = a
            while b > 0 and size[by_size[b - 1]] > size[a]:
                by_size[b] = by_size[b - 1]
                b -= 1
            by_size[b] = a
        small = by_size[0]
        big = by_size[k - 1]
        result = float(size[big]) / float(size[small])  # inf when a group is empty
        searching = False
        if result > target_ratio:
            mover = int(-1)
            source = int(-1)
            target = int(-1)
            for a in range(k - 1):
                if mover == -1:
                    g = by_size[k - 1 - a]
                    mover = _find_mover(g, small, offsets, adjacency, colors, size, cursor, link_next)
                    source = g
                    target = small
            for b in range(1, k - 1):
                if mover == -1:
                    t = by_size[b]
                    mover = _find_mover(big, t, offsets, adjacency, colors, size, cursor, link_next)
                    source = big
                    target = t
            for a in range(1, k - 1):
                for b in range(1, k - 1):
                    if mover == -1:
                        g = by_size[k - 1 - a]
                        t = by_size[b]
                        mover = _find_mover(g, t, offsets, adjacency, colors, size, cursor, link_next)
                        source = g
                        target = t
            if mover != -1:
                # unlink from the source ring
                nv = link_next[mover]
                pv = link_prev[mover]
                size[source] = size[source] - 1
                if size[source] == 0:
                    head[source] = -1
                    cursor[source] = -1
                else:
                    link_next[pv] = nv
                    link_prev[nv] = pv
                    if head[source] == mover:
                        head[source] = nv
                    cursor[source] = nv
                # insert into the target ring before its head (at its end)
                h = head[target]
                if h == -1:
                    head[target] = mover
                    cursor[target] = mover
                    link_next[mover] = mover
                    link_prev[mover] = mover
                else:
                    last = link_prev[h]
                    link_next[last] = mover
                    link_prev[mover] = last
                    link_next[mover] = h
                    link_prev[h] = mover
                size[target] = size[target] + 1
                colors[mover] = target
                searching = True
    ratio[0] = result


# -- host side ------------------------------------------------------------------------------------


def _check_graph(edges, node_colors):
    """Warp's argument checks, in Warp's order: devices, dtypes, then shapes."""
    for arr, name in ((edges, "edges"), (node_colors, "node_colors")):
        if not arr.device.is_cpu:
            raise RuntimeError(f"{name} array must be on the CPU")
    for arr, name in ((edges, "edges"), (node_colors, "node_colors")):
        if arr.dtype != wt.int32:
            raise RuntimeError(f"{name} array must have dtype int32, got {wt.type_repr(arr.dtype)}")
    if edges.ndim != 2:
        raise RuntimeError(f"edges array must be 2-dimensional, got {edges.ndim} dimensions")
    if edges.shape[1] != 2:
        raise RuntimeError(f"edges array must have shape (edge_count, 2), got shape {edges.shape}")
    if node_colors.ndim != 1:
        raise RuntimeError(f"node_colors array must be 1-dimensional, got {node_colors.ndim} dimensions")


def _adjacency(edges, node_count: int):
    """CSR adjacency (offsets, neighbors) of the undirected graph, without self-loops and with
    each repeated edge once, as int32 arrays on the CPU."""
    e = np.asarray(edges.numpy(), dtype=np.int64).reshape(-1, 2)
    if e.size and (e.min() < 0 or e.max() >= node_count):
        bad = int(e.min()) if e.min() < 0 else int(e.max())
        raise RuntimeError(f"edges array refers to node {bad}, outside the {node_count} nodes of node_colors")
    e = e[e[:, 0] != e[:, 1]]
    src = np.concatenate((e[:, 0], e[:, 1]))
    dst = np.concatenate((e[:, 1], e[:, 0]))
    keys = np.sort(src * node_count + dst)  # by source, then neighbor
    if keys.size:
        keys = keys[np.concatenate(([True], keys[1:] != keys[:-1]))]  # repeated edges once
    src, dst = keys // node_count, keys % node_count
    offsets = np.zeros(node_count + 1, dtype=np.int32)
    np.cumsum(np.bincount(src, minlength=node_count), out=offsets[1:])
    return offsets, dst.astype(np.int32)


def _cpu(a):
    return _array(np.ascontiguousarray(a, dtype=np.int32), dtype=wt.int32, device="cpu")


def _visit_order(algorithm, offsets, adjacency, node_count):
    degree = np.diff(offsets)
    if algorithm == GraphColoringAlgorithm.GREEDY:
        return _cpu(np.argsort(-degree, kind="stable"))
    top = int(degree.max(initial=0)) + 2
    order = _cpu(np.zeros(node_count))
    _launch(
        _mcs_order,
        dim=1,
        inputs=[
            _cpu(offsets),
            _cpu(adjacency),
            _cpu(np.zeros(node_count)),
            _cpu(np.full(top, -1)),
            _cpu(np.full(top, -1)),
            _cpu(np.full(node_count, -1)),
            _cpu(np.full(node_count, -1)),
            order,
        ],
        device="cpu",
    )
    return order


def graph_coloring_assign(edges, node_colors, algorithm: GraphColoringAlgorithm = GraphColoringAlgorithm.MCS) -> int:
    """Color the nodes of an undirected graph so that no edge joins two nodes of one color.

    Args:
        edges: ``(edge_count, 2)`` int32 CPU array; row ``[i, j]`` is an edge between nodes i and j.
        node_colors: ``(node_count,)`` int32 CPU array, filled with each node's color in
            ``[0, color_count)``. Its length is the number of nodes.
        algorithm: the node order of the greedy coloring (``GraphColoringAlgorithm``).

    Returns:
        The number of colors used.

    Raises:
        RuntimeError: an array on another device, of another dtype or shape; no nodes; an edge
            naming a node outside ``node_colors``; an unknown algorithm.
    """
    _check_graph(edges, node_colors)
    node_count = node_colors.shape[0]
    if node_count == 0:
        raise RuntimeError("Cannot color an empty graph")
    if int(algorithm) not in (GraphColoringAlgorithm.MCS, GraphColoringAlgorithm.GREEDY):
        raise RuntimeError(f"Graph coloring failed: unknown algorithm {int(algorithm)}")
    offsets, adjacency = _adjacency(edges, node_count)
    order = _visit_order(GraphColoringAlgorithm(int(algorithm)), offsets, adjacency, node_count)
    colors = _cpu(np.full(node_count, -1))
    count = _cpu(np.zeros(1))
    seen_size = int(np.diff(offsets).max(initial=0)) + 1  # a node's color is at most its degree
    _launch(
        _greedy_colors,
        dim=1,
        inputs=[order, _cpu(offsets), _cpu(adjacency), _cpu(np.full(seen_size, -1)), colors, count],
        device="cpu",
    )
    node_colors.assign(colors.numpy())
    return int(count.numpy()[0])


def _color_rings(colors: np.ndarray, color_count: int):
    """Per color, its nodes as a circular doubly linked list in ascending order: (size, head,
    next, prev) as NumPy int32 arrays."""
    n = colors.shape[0]
    by_color = np.argsort(colors, kind="stable")
    size = np.bincount(colors, minlength=color_count).astype(np.int32)
    start = np.zeros(color_count + 1, dtype=np.int64)
    np.cumsum(size, out=start[1:])
    head = np.where(size > 0, by_color[np.minimum(start[:-1], max(n - 1, 0))], -1).astype(np.int32)
    pos = np.arange(n)
    group = colors[by_color]
    first, last = start[group], start[group + 1] - 1
    nxt = np.where(pos == last, first, pos + 1)
    prv = np.where(pos == first, last, pos - 1)
    link_next = np.empty(n, dtype=np.int32)
    link_prev = np.empty(n, dtype=np.int32)
    link_next[by_color] = by_color[nxt]
    link_prev[by_color] = by_color[prv]
    return size, head, link_next, link_prev


def graph_coloring_balance(edges, node_colors, color_count: int, target_max_min_ratio: float) -> float:
    """Even out the sizes of the color groups of a valid coloring, in place, keeping it valid.

    Nodes move to the smallest group while one can (no neighbor of that color) and the ratio of
    the largest to the smallest group is above ``target_max_min_ratio``.

    Args:
        edges: ``(edge_count, 2)`` int32 CPU array, the graph's edges.
        node_colors: ``(node_count,)`` int32 CPU array of colors in ``[0, color_count)``, updated
            in place.
        color_count: the number of colors (as ``graph_coloring_assign`` returned it).
        target_max_min_ratio: stop once max group size / min group size is at most this.

    Returns:
        The max/min group size ratio reached (``inf`` if a group stays empty; 1.0 for a single
        color, which is left alone).

    Raises:
        RuntimeError: an array on another device, of another dtype or shape; a color outside
            ``[0, color_count)``.
    """
    _check_graph(edges, node_colors)
    color_count = int(color_count)
    node_count = node_colors.shape[0]
    if color_count <= 1 or node_count == 0:
        return 1.0
    colors_np = node_colors.numpy()
    if colors_np.min() < 0 or colors_np.max() >= color_count:
        raise RuntimeError(f"node_colors holds colors outside [0, {color_count})")
    offsets, adjacency = _adjacency(edges, node_count)
    size, head, link_next, link_prev = _color_rings(colors_np.astype(np.int64), color_count)
    colors = _cpu(colors_np)
    ratio = _array(np.zeros(1, dtype=np.float32), dtype=wt.float32, device="cpu")
    _launch(
        _balance,
        dim=1,
        inputs=[
            _cpu(offsets),
            _cpu(adjacency),
            colors,
            _cpu(size),
            _cpu(np.zeros(color_count)),
            _cpu(head),
            _cpu(head),
            _cpu(link_next),
            _cpu(link_prev),
            float(target_max_min_ratio),
            ratio,
        ],
        device="cpu",
    )
    node_colors.assign(colors.numpy())
    return float(ratio.numpy()[0])


def graph_coloring_get_groups(node_colors, color_count: int, return_wp_array: bool = True, device="cpu"):
    """The nodes of each color: a tuple of ``color_count`` int32 arrays of node indices, in
    ascending order.

    Args:
        node_colors: ``(node_count,)`` int32 CPU array of colors.
        color_count: the number of colors.
        return_wp_array: weft arrays (on ``device``) when True, else NumPy arrays.
        device: where the weft arrays are made.

    Returns:
        A tuple with one array per color (empty for ``color_count == 0``).

    Raises:
        RuntimeError: a negative ``color_count``; ``node_colors`` on another device, of another
            dtype or shape; a color outside ``[0, color_count)``.
    """
    if color_count < 0:
        raise RuntimeError("color_count must be non-negative")
    if color_count == 0:
        return ()
    if not node_colors.device.is_cpu:
        raise RuntimeError("node_colors array must be on the CPU")
    if node_colors.dtype != wt.int32:
        raise RuntimeError(f"node_colors array must have dtype int32, got {wt.type_repr(node_colors.dtype)}")
    if node_colors.ndim != 1:
        raise RuntimeError(f"node_colors array must be 1-dimensional, got {node_colors.ndim} dimensions")
    colors = node_colors.numpy()
    if colors.size and (colors.min() < 0 or colors.max() >= color_count):
        raise RuntimeError(f"node_colors holds colors outside [0, {color_count})")
    by_color = np.argsort(colors, kind="stable").astype(np.int32)
    bounds = np.zeros(color_count + 1, dtype=np.int64)
    np.cumsum(np.bincount(colors, minlength=color_count), out=bounds[1:])
    groups = tuple(by_color[bounds[c] : bounds[c + 1]] for c in range(color_count))
    if return_wp_array:
        return tuple(_array(g, dtype=wt.int32, device=device) for g in groups)
    return groups
