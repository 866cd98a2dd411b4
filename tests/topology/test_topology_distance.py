"""Graph edit distance, WL hash and WL proxy: exactness, symmetry, determinism, bounds."""

from __future__ import annotations

import itertools
import random

import networkx as nx
import pytest

from stategym.topology.distance import (
    EditDistance,
    distance_matrix,
    edit_distance,
    wl_distance,
    wl_hash,
)
from stategym.topology.graph import Topology


def _random(rng: random.Random, nodes: int, density: float, loops: bool = False) -> Topology:
    graph = nx.DiGraph()
    for n in range(nodes):
        graph.add_node(n, label=rng.choice("ab"))
    for i, j in itertools.product(range(nodes), repeat=2):
        if (i != j or loops) and rng.random() < density:
            graph.add_edge(i, j, label=rng.choice("xy"))
    return Topology(graph, {n: str(n) for n in graph}, "random")


def _brute_force(a: nx.DiGraph, b: nx.DiGraph) -> int:
    """GED by trying every injective partial map (tiny graphs only)."""
    best = a.number_of_nodes() + a.number_of_edges() + b.number_of_nodes() + b.number_of_edges()
    for targets in itertools.product([None, *b.nodes], repeat=a.number_of_nodes()):
        used = [t for t in targets if t is not None]
        if len(used) != len(set(used)):
            continue
        image = dict(zip(a.nodes, targets, strict=True))
        cost = sum(
            t is None or b.nodes[t]["label"] != a.nodes[n]["label"] for n, t in image.items()
        )
        cost += b.number_of_nodes() - len(used)
        matched = set()
        for u, v, label in a.edges(data="label"):
            x, y = image[u], image[v]
            if x is not None and y is not None and b.has_edge(x, y):
                matched.add((x, y))
                cost += b.edges[x, y]["label"] != label
            else:
                cost += 1
        best = min(best, cost + b.number_of_edges() - len(matched))
    return best


def _same_label(x: dict[str, str], y: dict[str, str]) -> bool:
    return x["label"] == y["label"]


def test_exact_distance_equals_networkx() -> None:
    pytest.importorskip("scipy")  # networkx's GED needs it
    rng = random.Random(7)
    for _ in range(60):
        a = _random(rng, rng.randint(0, 5), 0.3)
        b = _random(rng, rng.randint(0, 5), 0.3)
        found = edit_distance(a, b)
        reference = nx.graph_edit_distance(
            a.graph, b.graph, node_match=_same_label, edge_match=_same_label
        )
        assert found.exact
        assert found.cost == reference


def test_exact_distance_equals_brute_force_with_self_loops() -> None:
    rng = random.Random(11)
    for _ in range(40):
        a = _random(rng, rng.randint(0, 4), 0.35, loops=True)
        b = _random(rng, rng.randint(0, 4), 0.35, loops=True)
        assert edit_distance(a, b).cost == _brute_force(a.graph, b.graph)


def test_isomorphic_graphs_are_at_zero_with_equal_hashes() -> None:
    rng = random.Random(3)
    for _ in range(20):
        a = _random(rng, 7, 0.25)
        order = list(a.graph.nodes)
        rng.shuffle(order)
        relabelled = nx.relabel_nodes(a.graph, dict(zip(a.graph.nodes, order, strict=True)))
        b = Topology(relabelled, {n: "renamed" for n in relabelled}, "b")
        assert edit_distance(a, b) == EditDistance(0, 0.0, True, edit_distance(a, b).expansions)
        assert wl_hash(a) == wl_hash(b)
        assert wl_distance(a, b) == pytest.approx(0.0, abs=1e-12)


def test_direction_matters() -> None:
    forward, backward = nx.DiGraph(), nx.DiGraph()
    for g in (forward, backward):
        g.add_node(0, label="read")
        g.add_node(1, label="write")
    forward.add_edge(0, 1, label="pipe")
    backward.add_edge(1, 0, label="pipe")
    a = Topology(forward, {0: "a", 1: "b"}, "f")
    b = Topology(backward, {0: "a", 1: "b"}, "b")
    assert wl_hash(a) != wl_hash(b)
    assert edit_distance(a, b).cost == 2  # delete one edge, insert the other


def test_symmetric_bounded_and_deterministic() -> None:
    rng = random.Random(5)
    for _ in range(30):
        a = _random(rng, rng.randint(1, 9), 0.25)
        b = _random(rng, rng.randint(1, 9), 0.25)
        ab, ba = edit_distance(a, b), edit_distance(b, a)
        assert ab == ba == edit_distance(a, b)
        assert 0.0 <= ab.normalised <= 1.0
        assert 0.0 <= wl_distance(a, b) <= 1.0
        assert wl_distance(a, b) == pytest.approx(wl_distance(b, a))


def test_a_small_budget_gives_an_upper_bound() -> None:
    rng = random.Random(9)
    a, b = _random(rng, 7, 0.3), _random(rng, 8, 0.3)
    exact = edit_distance(a, b, budget=10**7)
    cut = edit_distance(a, b, budget=3)
    assert exact.exact and not cut.exact
    assert cut.cost >= exact.cost
    assert cut == edit_distance(a, b, budget=3)  # the budget, not the clock, decides


def test_distance_matrix_is_symmetric_with_zero_diagonal() -> None:
    rng = random.Random(1)
    tops = [_random(rng, n, 0.3) for n in (3, 4, 5)]
    rows = distance_matrix(tops)
    for i, j in itertools.product(range(3), repeat=2):
        assert rows[i][j] == rows[j][i]
        assert (rows[i][j].cost == 0) == (i == j)
