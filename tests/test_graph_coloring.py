"""wp.utils.graph_coloring_assign / graph_coloring_balance / graph_coloring_get_groups and
GraphColoringAlgorithm (weft/graph_coloring.py).

- colorings are valid (no edge inside a color) on random graphs, meshes with bending edges,
  cycles, complete graphs and trees, with the number of colors returned being the number used;
- GREEDY equals a NumPy/Python reference (greedy in decreasing-degree order, stable ties) color for
  color; MCS visits, at every step, a node with the most visited neighbors (checked against a
  brute-force count) and colors chordal graphs (trees, complete graphs, fans) optimally;
- balancing keeps validity, never worsens max/min, returns the ratio it reached and reaches the
  target when nothing stops it;
- get_groups matches a NumPy reference, as weft or NumPy arrays;
- Warp's argument errors; self-loops and repeated edges; 100k-edge graphs in well under a second.
"""

import time

import numpy as np
import pytest

import weft as wp
from weft import graph_coloring as gc

ALGORITHMS = [wp.utils.GraphColoringAlgorithm.MCS, wp.utils.GraphColoringAlgorithm.GREEDY]


def cpu_int32(a):
    return wp.array(np.asarray(a, dtype=np.int32), dtype=wp.int32, device="cpu")


def color(edges_np, n, algorithm):
    colors = wp.empty(n, dtype=wp.int32, device="cpu")
    count = wp.utils.graph_coloring_assign(cpu_int32(edges_np), colors, algorithm)
    return count, colors.numpy().copy()


def conflicts(edges_np, colors) -> int:
    e = np.asarray(edges_np).reshape(-1, 2)
    e = e[e[:, 0] != e[:, 1]]
    return int(np.sum(colors[e[:, 0]] == colors[e[:, 1]]))


def neighbor_sets(edges_np, n):
    nbrs = [set() for _ in range(n)]
    for a, b in np.asarray(edges_np).reshape(-1, 2):
        if a != b:
            nbrs[a].add(int(b))
            nbrs[b].add(int(a))
    return nbrs


def greedy_reference(edges_np, n):
    """Smallest free color per node, nodes by decreasing degree (ties by index)."""
    nbrs = neighbor_sets(edges_np, n)
    degree = np.array([len(s) for s in nbrs])
    colors = np.full(n, -1)
    for v in np.argsort(-degree, kind="stable"):
        used = {colors[u] for u in nbrs[v]}
        c = 0
        while c in used:
            c += 1
        colors[v] = c
    return colors


def triangle_mesh_graph(rows, cols, bending=True):
    """The vertex graph of a triangulated grid (alternating diagonals), plus each interior edge's
    two opposite vertices (the bending edges of a cloth model) when ``bending``."""
    idx = np.arange(rows * cols).reshape(rows, cols)
    faces = []
    for i in range(rows - 1):
        for j in range(cols - 1):
            a, b, c, d = idx[i, j], idx[i, j + 1], idx[i + 1, j], idx[i + 1, j + 1]
            faces += [(a, d, b), (a, c, d)] if (i + j) % 2 else [(a, c, b), (c, d, b)]
    opposite = {}
    for f in faces:
        for k in range(3):
            key = tuple(sorted((f[k], f[(k + 1) % 3])))
            opposite.setdefault(key, []).append(f[(k + 2) % 3])
    edges = [list(k) for k in opposite]
    if bending:
        edges += [o for o in opposite.values() if len(o) == 2]
    return np.array(edges, dtype=np.int32), rows * cols


# ---------------------------------------------------------------------------------------------
# graph_coloring_assign


@pytest.mark.parametrize("algorithm", ALGORITHMS, ids=lambda a: a.name)
@pytest.mark.parametrize("n, m", [(2, 1), (50, 200), (2000, 12000)])
def test_random_graphs_are_colored_validly(algorithm, n, m):
    rng = np.random.default_rng(n + m)
    edges = rng.integers(0, n, size=(m, 2))
    count, colors = color(edges, n, algorithm)
    assert conflicts(edges, colors) == 0
    assert colors.min() == 0 and colors.max() == count - 1
    assert set(np.unique(colors)) == set(range(count))  # every color in [0, count) is used
    max_degree = max(len(s) for s in neighbor_sets(edges, n))
    assert count <= max_degree + 1


def test_greedy_matches_the_reference_color_for_color():
    rng = np.random.default_rng(7)
    for n, m in [(10, 15), (300, 1500), (1000, 3000)]:
        edges = rng.integers(0, n, size=(m, 2))
        count, colors = color(edges, n, wp.utils.GraphColoringAlgorithm.GREEDY)
        expected = greedy_reference(edges, n)
        np.testing.assert_array_equal(colors, expected)
        assert count == expected.max() + 1


def test_mcs_visits_a_node_with_the_most_visited_neighbors_each_time():
    rng = np.random.default_rng(11)
    n, m = 400, 1200
    edges = rng.integers(0, n, size=(m, 2))
    edges = np.concatenate((edges, [[n - 1, n - 1]]))  # a self-loop changes nothing
    offsets, adjacency = gc._adjacency(cpu_int32(edges), n)
    order = gc._visit_order(wp.utils.GraphColoringAlgorithm.MCS, offsets, adjacency, n).numpy()
    assert sorted(order) == list(range(n))
    nbrs = neighbor_sets(edges, n)
    visited = np.zeros(n, dtype=bool)
    weight = np.zeros(n, dtype=np.int64)  # visited neighbors of each node
    for v in order:
        assert not visited[v]
        assert weight[v] == weight[~visited].max()
        visited[v] = True
        for u in nbrs[v]:
            weight[u] += 1


@pytest.mark.parametrize(
    "name, edges, n, optimum",
    [
        ("triangle", [[0, 1], [1, 2], [2, 0]], 3, 3),
        ("square", [[0, 1], [1, 2], [2, 3], [3, 0]], 4, 2),
        ("hexagon", [[k, (k + 1) % 6] for k in range(6)], 6, 2),
        ("K6", [[a, b] for a in range(6) for b in range(a + 1, 6)], 6, 6),
        ("path", [[k, k + 1] for k in range(30)], 31, 2),
        ("star", [[0, k] for k in range(1, 20)], 20, 2),
        ("fan", [[0, k] for k in range(1, 12)] + [[k, k + 1] for k in range(1, 11)], 12, 3),
        ("isolated nodes", [[3, 4]], 8, 2),
    ],
)
def test_mcs_is_optimal_on_chordal_graphs_and_even_cycles(name, edges, n, optimum):
    count, colors = color(edges, n, wp.utils.GraphColoringAlgorithm.MCS)
    assert count == optimum, name
    assert conflicts(edges, colors) == 0


def test_random_tree_forest_takes_two_colors_with_mcs():
    rng = np.random.default_rng(3)
    n = 5000
    parents = np.array([rng.integers(0, k) for k in range(1, n)])
    keep = rng.random(n - 1) < 0.9  # a forest: several components
    edges = np.stack((np.arange(1, n), parents), axis=1)[keep]
    count, colors = color(edges, n, wp.utils.GraphColoringAlgorithm.MCS)
    assert count == 2 and conflicts(edges, colors) == 0


def test_cloth_mesh_with_bending_edges():
    edges, n = triangle_mesh_graph(40, 50)
    count_mcs, colors_mcs = color(edges, n, wp.utils.GraphColoringAlgorithm.MCS)
    count_greedy, colors_greedy = color(edges, n, wp.utils.GraphColoringAlgorithm.GREEDY)
    assert conflicts(edges, colors_mcs) == 0 and conflicts(edges, colors_greedy) == 0
    assert count_mcs <= count_greedy <= 10
    assert count_mcs >= 4  # a triangle plus a bending edge across it: 4 mutually adjacent nodes


def test_self_loops_and_repeated_edges():
    edges = [[0, 0], [0, 1], [1, 0], [0, 1], [1, 2], [2, 2]]
    for algorithm in ALGORITHMS:
        count, colors = color(edges, 3, algorithm)
        assert count == 2
        assert conflicts(edges, colors) == 0


def test_node_colors_view_and_no_edges():
    storage = wp.zeros(10, dtype=wp.int32, device="cpu")
    colors = storage[::2]  # a strided view is written in place
    assert wp.utils.graph_coloring_assign(cpu_int32(np.zeros((0, 2))), colors) == 1
    np.testing.assert_array_equal(storage.numpy(), np.zeros(10))
    count = wp.utils.graph_coloring_assign(cpu_int32([[0, 4]]), colors)
    assert count == 2
    assert storage.numpy()[0] != storage.numpy()[8]


def test_large_graph_is_fast():
    rng = np.random.default_rng(5)
    n, m = 50_000, 100_000
    edges = cpu_int32(rng.integers(0, n, size=(m, 2)))
    colors = wp.empty(n, dtype=wp.int32, device="cpu")
    wp.utils.graph_coloring_assign(edges, colors)  # builds the kernels once
    for algorithm in ALGORITHMS:
        t = time.perf_counter()
        count = wp.utils.graph_coloring_assign(edges, colors, algorithm)
        ratio = wp.utils.graph_coloring_balance(edges, colors, count, 1.05)
        elapsed = time.perf_counter() - t
        assert conflicts(edges.numpy(), colors.numpy()) == 0
        assert ratio <= 1.05
        assert elapsed < 2.0, f"{algorithm.name}: {elapsed:.2f} s"


# ---------------------------------------------------------------------------------------------
# graph_coloring_balance


def group_ratio(colors, count):
    sizes = np.bincount(colors, minlength=count).astype(np.float32)
    return sizes.max() / sizes.min()


@pytest.mark.parametrize("algorithm", ALGORITHMS, ids=lambda a: a.name)
def test_balance_keeps_validity_and_reports_the_ratio(algorithm):
    edges, n = triangle_mesh_graph(30, 30)
    count, before = color(edges, n, algorithm)
    colors = cpu_int32(before)
    ratio = wp.utils.graph_coloring_balance(cpu_int32(edges), colors, count, 1.1)
    after = colors.numpy()
    assert conflicts(edges, after) == 0
    assert ratio == pytest.approx(float(group_ratio(after, count)), rel=1e-6)
    assert ratio <= group_ratio(before, count) + 1e-6
    if ratio > np.float32(1.1):  # stopped early: no node of a group 2+ larger than the smallest may join it
        sizes = np.bincount(after, minlength=count)
        small = int(np.argmin(sizes))
        nbrs = neighbor_sets(edges, n)
        movable = [v for v in range(n) if sizes[after[v]] >= sizes[small] + 2 and small not in after[list(nbrs[v])]]
        assert not movable


def test_balance_reaches_the_target_without_edges():
    colors = cpu_int32(np.zeros(100))  # one group of 100 and three empty ones
    ratio = wp.utils.graph_coloring_balance(cpu_int32(np.zeros((0, 2))), colors, 4, 1.0)
    np.testing.assert_array_equal(np.bincount(colors.numpy(), minlength=4), [25, 25, 25, 25])
    assert ratio == 1.0


def test_balance_stops_when_no_node_can_move():
    edges = [[0, 1], [1, 2], [2, 0], [3, 4]]  # a triangle needs its three colors
    colors = cpu_int32([0, 1, 2, 0, 1])
    ratio = wp.utils.graph_coloring_balance(cpu_int32(edges), colors, 3, 1.0)
    assert conflicts(edges, colors.numpy()) == 0
    assert ratio == pytest.approx(float(group_ratio(colors.numpy(), 3)))
    colors = cpu_int32([0, 1, 2])  # already even
    assert wp.utils.graph_coloring_balance(cpu_int32(edges[:3]), colors, 3, 1.5) == 1.0
    np.testing.assert_array_equal(colors.numpy(), [0, 1, 2])


def test_balance_of_one_color_is_one():
    colors = cpu_int32(np.zeros(5))
    assert wp.utils.graph_coloring_balance(cpu_int32(np.zeros((0, 2))), colors, 1, 1.1) == 1.0
    np.testing.assert_array_equal(colors.numpy(), np.zeros(5))


def test_balance_moves_into_a_smaller_group_from_any_larger_group():
    # 0 is joined to every node of color 2, so nodes move from group 1, never from 0 -> 2 directly
    edges = [[0, k] for k in range(6, 9)]
    colors = cpu_int32([0, 0, 0, 1, 1, 1, 2, 2, 2] + [0] * 6)  # sizes 9, 3, 3
    ratio = wp.utils.graph_coloring_balance(cpu_int32(edges), colors, 3, 1.0)
    after = colors.numpy()
    assert conflicts(edges, after) == 0
    np.testing.assert_array_equal(np.bincount(after, minlength=3), [5, 5, 5])
    assert ratio == 1.0


# ---------------------------------------------------------------------------------------------
# graph_coloring_get_groups


def test_get_groups_matches_numpy():
    rng = np.random.default_rng(9)
    colors_np = rng.integers(0, 5, size=300)
    colors = cpu_int32(colors_np)
    groups = wp.utils.graph_coloring_get_groups(colors, 6)
    assert len(groups) == 6 and all(isinstance(g, wp.array) and g.dtype == wp.int32 for g in groups)
    for c, g in enumerate(groups):
        np.testing.assert_array_equal(g.numpy(), np.nonzero(colors_np == c)[0])
    assert groups[5].shape == (0,)
    as_numpy = wp.utils.graph_coloring_get_groups(colors, 5, return_wp_array=False)
    assert all(isinstance(g, np.ndarray) for g in as_numpy)
    assert sum(len(g) for g in as_numpy) == 300
    assert wp.utils.graph_coloring_get_groups(colors, 0) == ()


# ---------------------------------------------------------------------------------------------
# Errors (Warp's types and texts)


def test_argument_errors():
    edges = cpu_int32([[0, 1]])
    colors = wp.empty(2, dtype=wp.int32, device="cpu")
    assign, balance = wp.utils.graph_coloring_assign, wp.utils.graph_coloring_balance
    with pytest.raises(RuntimeError, match="edges array must have dtype int32, got int64"):
        assign(wp.array([[0, 1]], dtype=wp.int64, device="cpu"), colors)
    with pytest.raises(RuntimeError, match="node_colors array must have dtype int32, got float32"):
        assign(edges, wp.empty(2, dtype=wp.float32, device="cpu"))
    with pytest.raises(RuntimeError, match=r"edges array must have shape \(edge_count, 2\)"):
        assign(cpu_int32([[0, 1, 1]]), colors)
    with pytest.raises(RuntimeError, match="edges array must be 2-dimensional, got 1 dimensions"):
        assign(cpu_int32([0, 1]), colors)
    with pytest.raises(RuntimeError, match="node_colors array must be 1-dimensional, got 2 dimensions"):
        balance(edges, wp.empty((2, 1), dtype=wp.int32, device="cpu"), 2, 1.1)
    with pytest.raises(RuntimeError, match="Cannot color an empty graph"):
        assign(cpu_int32(np.zeros((0, 2))), wp.empty(0, dtype=wp.int32, device="cpu"))
    with pytest.raises(RuntimeError, match="refers to node 5"):
        assign(cpu_int32([[0, 5]]), colors)
    with pytest.raises(RuntimeError, match="unknown algorithm 7"):
        assign(edges, colors, 7)
    with pytest.raises(RuntimeError, match="color_count must be non-negative"):
        wp.utils.graph_coloring_get_groups(colors, -1)
    with pytest.raises(RuntimeError, match="outside"):
        wp.utils.graph_coloring_get_groups(cpu_int32([0, 3]), 2)
    assert int(wp.utils.GraphColoringAlgorithm.MCS) == 0 and int(wp.utils.GraphColoringAlgorithm.GREEDY) == 1
    assert assign(edges, colors, 1) == 2  # plain ints name algorithms too
