"""Identity and distance between topologies.

- **Identity**: the Weisfeiler-Lehman hash of the labelled graph (:func:`wl_hash`). Edge
  direction is made part of the labels by subdividing every edge into a node of its own, so
  ``a -pipe-> b`` and ``b -pipe-> a`` hash differently.
- **Distance**: graph edit distance with unit costs (insert, delete or relabel one node or
  one edge), normalised by the total size of both graphs,
  ``d = GED / (|V1| + |E1| + |V2| + |E2|)``, in ``[0, 1]``: 0 for isomorphic graphs, 1 for
  graphs with nothing in common (:func:`ged_distance`).
- **Proxy**: one minus the cosine similarity of WL-subtree feature counts
  (:func:`wl_distance`), fast enough for thousands of pairs.

Exact GED is NP-hard. :func:`edit_distance` runs the branch-and-bound search of
:mod:`stategym.topology.ged`, whose work is capped by a number of expanded states rather than
by wall time, so the same pair of graphs gives the same answer on every machine; it reports
whether the search finished (the value is then exact) or stopped at the budget (the value is
an upper bound). An optional wall-clock ``timeout`` is a safety net only, and a result cut by
it says so. (``networkx.graph_edit_distance`` computes the same quantity, and the tests check
the two agree, but its only limit is a timeout, and it needs SciPy.)
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass

import networkx as nx

from stategym.topology.ged import graph_edit_distance
from stategym.topology.graph import Topology

WL_ITERATIONS = 3
EXPANSION_BUDGET = 10_000
"""Default cap on branch-and-bound states for :func:`edit_distance`."""


def _subdivided(graph: nx.DiGraph) -> nx.Graph:
    """Undirected copy with one extra node per edge; the two halves say which end is which."""
    out = nx.Graph()
    for node, label in graph.nodes(data="label"):
        out.add_node(("n", node), label=f"N:{label}")
    for u, v, label in graph.edges(data="label"):
        mid = ("e", u, v)
        out.add_node(mid, label=f"E:{label}")
        out.add_edge(("n", u), mid, end="tail")
        out.add_edge(mid, ("n", v), end="head")
    return out


def wl_hash(topology: Topology, iterations: int = WL_ITERATIONS) -> str:
    """Weisfeiler-Lehman hash of the labelled, directed topology (hex, 32 characters)."""
    return nx.weisfeiler_lehman_graph_hash(
        _subdivided(topology.graph), edge_attr="end", node_attr="label", iterations=iterations
    )


def wl_features(topology: Topology, iterations: int = WL_ITERATIONS) -> Counter[str]:
    """Counts of WL subtree labels, initial labels included, over the original nodes."""
    graph = _subdivided(topology.graph)
    per_node = nx.weisfeiler_lehman_subgraph_hashes(
        graph,
        edge_attr="end",
        node_attr="label",
        iterations=iterations,
        include_initial_labels=True,
    )
    features: Counter[str] = Counter()
    for node, hashes in per_node.items():
        # Edge nodes would double-count edges at every iteration; their labels are already
        # folded into the neighbouring nodes' subtrees.
        if node[0] == "n":
            features.update(f"{depth}:{h}" for depth, h in enumerate(hashes))
    return features


def wl_distance(a: Topology, b: Topology, iterations: int = WL_ITERATIONS) -> float:
    """``1 - cosine`` of WL-subtree feature counts, in ``[0, 1]``; 0 when the hashes agree.

        >>> from stategym.topology.ged import graph_edit_distance
    from stategym.topology.graph import Topology
        >>> g = nx.DiGraph(); g.add_node(0, label="read")
        >>> t = Topology(g, {0: "x"}, "x")
        >>> wl_distance(t, t)
        0.0
    """
    fa, fb = wl_features(a, iterations), wl_features(b, iterations)
    dot = sum(count * fb[key] for key, count in fa.items())
    norm = math.sqrt(sum(c * c for c in fa.values())) * math.sqrt(sum(c * c for c in fb.values()))
    if norm == 0:
        return 0.0 if not fa and not fb else 1.0
    return max(0.0, 1.0 - dot / norm) if dot < norm else 0.0


@dataclass(frozen=True, slots=True)
class EditDistance:
    """A graph edit distance and how far its search got.

    Attributes:
        cost: unit-cost edit operations of the best mapping found.
        normalised: ``cost / (size(a) + size(b))`` in ``[0, 1]``.
        exact: the search finished, so ``cost`` is the true GED; else an upper bound.
        expansions: search states expanded.
        timed_out: the optional wall-clock safety net stopped the search.
    """

    cost: int
    normalised: float
    exact: bool
    expansions: int
    timed_out: bool = False


def _size(graph: nx.DiGraph) -> int:
    return graph.number_of_nodes() + graph.number_of_edges()


def edit_distance(
    a: Topology,
    b: Topology,
    budget: int = EXPANSION_BUDGET,
    timeout: float | None = None,
) -> EditDistance:
    """Unit-cost graph edit distance between two topologies, normalised by their sizes.

    Args:
        a: one topology.
        b: the other (the result does not depend on the order).
        budget: most search states to expand before returning the best mapping so far.
        timeout: optional wall-clock limit in seconds (a safety net; it makes the result
            depend on the machine, and ``timed_out`` says when it fired).

    Example:
        Two graphs that differ by one extra node and one extra edge, out of 2 + 1 + 3 + 2
        elements in all: ``d = 2 / 8``.
    """
    g1, g2 = a.graph, b.graph
    if (_size(g1), _key(g1)) > (_size(g2), _key(g2)):
        g1, g2 = g2, g1  # a canonical order keeps the result symmetric even when inexact
    total = _size(g1) + _size(g2)
    if total == 0:
        return EditDistance(0, 0.0, True, 0)
    found = graph_edit_distance(g1, g2, budget, timeout)
    return EditDistance(
        found.cost, found.cost / total, found.exact, found.expansions, found.timed_out
    )


def _key(graph: nx.DiGraph) -> str:
    return nx.weisfeiler_lehman_graph_hash(_subdivided(graph), edge_attr="end", node_attr="label")


def ged_distance(a: Topology, b: Topology, budget: int = EXPANSION_BUDGET) -> float:
    """Normalised graph edit distance in ``[0, 1]`` (see :func:`edit_distance`)."""
    return edit_distance(a, b, budget).normalised


def distance_matrix(
    topologies: Sequence[Topology], budget: int = EXPANSION_BUDGET
) -> list[list[EditDistance]]:
    """Pairwise edit distances (symmetric; the diagonal is exact zero)."""
    n = len(topologies)
    zero = EditDistance(0, 0.0, True, 0)
    rows: list[list[EditDistance]] = [[zero] * n for _ in range(n)]
    for i in range(n):
        for j in range(i + 1, n):
            rows[i][j] = rows[j][i] = edit_distance(topologies[i], topologies[j], budget)
    return rows
