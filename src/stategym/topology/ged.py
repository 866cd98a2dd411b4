"""Exact graph edit distance by depth-first branch and bound, with a deterministic budget.

Unit costs: inserting, deleting or relabelling one node or one edge costs 1. The search maps
the nodes of the smaller graph, one at a time, onto unused nodes of the other graph or onto
deletion; what is left of the other graph at a leaf is inserted. A branch is cut when its cost
so far plus a lower bound on the rest cannot beat the best complete mapping found. Work is
capped by a count of expanded states, so the result never depends on the machine.

Lower bound at a state (both admissible):

- *weak*: label-multiset mismatch of the unmapped nodes, plus that of the edges not yet
  settled on both sides;
- *strong*: the node term, plus for every mapped node the mismatch between its edges to
  unmapped nodes and its image's edges to unused nodes (by direction and label), plus the
  mismatch of the edges among unmapped nodes. Unsettled edges split into these disjoint
  classes and an edge can only be matched within its class, so the sum is a bound.

Every state keeps the counts both bounds need up to date incrementally.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

import networkx as nx

NONE = -1


class _Side:
    """One graph with integer nodes, node labels and labelled adjacency both ways."""

    def __init__(self, graph: nx.DiGraph, nodes: dict[str, int], edges: dict[str, int]):
        index = {n: i for i, n in enumerate(sorted(graph.nodes))}
        self.n = len(index)
        self.label = [0] * self.n
        for node, label in graph.nodes(data="label"):
            self.label[index[node]] = nodes[label]
        self.out: list[dict[int, int]] = [{} for _ in range(self.n)]
        self.into: list[dict[int, int]] = [{} for _ in range(self.n)]
        self.edges: list[tuple[int, int, int]] = []
        for a, b, label in graph.edges(data="label"):
            i, j, k = index[a], index[b], edges[label]
            self.out[i][j] = k
            self.into[j][i] = k
            self.edges.append((i, j, k))
        self.colour = _colours(self)


def _colours(side: _Side) -> list[int]:
    """Two-round Weisfeiler-Lehman colour of each node, used to try likely matches first."""
    colours = list(side.label)
    for _ in range(2):
        signatures = [
            (
                colours[n],
                tuple(sorted((k, colours[m]) for m, k in side.out[n].items())),
                tuple(sorted((k, colours[m]) for m, k in side.into[n].items())),
            )
            for n in range(side.n)
        ]
        palette = {s: i for i, s in enumerate(sorted(set(signatures)))}
        colours = [palette[s] for s in signatures]
    return colours


def _mismatch(a: list[int], b: list[int]) -> int:
    """Least edits turning one label multiset (as counts) into the other."""
    return max(sum(a), sum(b)) - sum(min(x, y) for x, y in zip(a, b, strict=True))


@dataclass(frozen=True, slots=True)
class SearchResult:
    cost: int
    exact: bool
    expansions: int
    timed_out: bool


class Search:
    """The branch-and-bound search from ``g1`` (mapped node by node) into ``g2``."""

    def __init__(self, g1: nx.DiGraph, g2: nx.DiGraph, budget: int, deadline: float | None):
        node_labels = sorted({lab for g in (g1, g2) for _, lab in g.nodes(data="label")})
        edge_labels = sorted({lab for g in (g1, g2) for *_, lab in g.edges(data="label")})
        nodes = {lab: i for i, lab in enumerate(node_labels)}
        edges = {lab: i for i, lab in enumerate(edge_labels)}
        self.one, self.two = _Side(g1, nodes, edges), _Side(g2, nodes, edges)
        self.kinds = len(edges)
        self.order = _order(self.one)
        self.position = [0] * self.one.n
        for i, n in enumerate(self.order):
            self.position[n] = i
        self.budget, self.deadline = budget, deadline
        self.expansions = 0
        self.stopped = self.timed_out = False
        self.best = self.one.n + len(self.one.edges) + self.two.n + len(self.two.edges)
        self.mapping: list[int] = []
        self.best_mapping: list[int] = []
        self.stop_at_leaf = self.halted = False
        self.used = [False] * self.two.n
        self.free2 = [0] * len(nodes)
        for lab in self.two.label:
            self.free2[lab] += 1
        self.all2 = [0] * self.kinds
        for *_, k in self.two.edges:
            self.all2[k] += 1
        self.touched2 = [0] * self.kinds
        self.closed2 = [0] * self.kinds
        self._precompute(len(nodes))

    def _precompute(self, node_kinds: int) -> None:
        one, n = self.one, self.one.n
        self.rest1 = [[0] * node_kinds for _ in range(n + 1)]
        self.open1 = [[0] * self.kinds for _ in range(n + 1)]
        self.inner1 = [[0] * self.kinds for _ in range(n + 1)]
        for depth in range(n + 1):
            for node in self.order[depth:]:
                self.rest1[depth][one.label[node]] += 1
            for a, b, k in one.edges:
                late_a, late_b = self.position[a] >= depth, self.position[b] >= depth
                self.open1[depth][k] += late_a or late_b
                self.inner1[depth][k] += late_a and late_b
        self.cross1: list[list[tuple[dict[int, int], int]]] = []
        for w in range(n):
            rows = []
            for depth in range(n + 1):
                row: dict[int, int] = {}
                for forward, adjacency in ((1, one.out[w]), (0, one.into[w])):
                    for m, k in adjacency.items():
                        if m != w and self.position[m] >= depth:
                            row[2 * k + forward] = row.get(2 * k + forward, 0) + 1
                rows.append((row, sum(row.values())))
            self.cross1.append(rows)
        self.open_sum1 = [sum(row) for row in self.open1]

    def step_cost(self, u: int, target: int) -> int:
        """Node cost of mapping ``u`` to ``target`` (or deleting it) plus the edges it settles."""
        one, two = self.one, self.two
        cost = 1 if target == NONE or two.label[target] != one.label[u] else 0
        depth = self.position[u]
        matched = 0
        for adjacency, other_side in ((one.out[u], two.out), (one.into[u], two.into)):
            for w, k in adjacency.items():
                if w == u or self.position[w] >= depth:
                    continue
                y = self.mapping[self.position[w]]
                image = other_side[target].get(y, NONE) if target != NONE and y != NONE else NONE
                cost += k != image
                matched += image != NONE
        if target != NONE:
            for adjacency in (two.out[target], two.into[target]):
                for y in adjacency:
                    if y != target and self.used[y]:
                        cost += 1  # every g2 edge to a used node not matched above
            cost -= matched
        loop1 = one.out[u].get(u, NONE)
        loop2 = two.out[target].get(target, NONE) if target != NONE else NONE
        return cost + (loop1 != loop2)

    def weak_bounds(self, depth: int) -> tuple[int, int, list[int], int]:
        """Parts of the weak bound at ``depth`` shared by every candidate of one expansion:
        common node labels, free node count, unsettled g2 edges by label and their total."""
        rest = self.rest1[depth]
        common = sum(min(x, y) for x, y in zip(rest, self.free2, strict=True))
        unsettled = [a - c for a, c in zip(self.all2, self.closed2, strict=True)]
        return common, sum(self.free2), unsettled, sum(unsettled)

    def weak_bound(self, depth: int, shared: tuple[int, int, list[int], int], target: int) -> int:
        """The weak bound once ``target`` (not yet assigned) takes the next node: only the
        target's label and the edges it closes differ from ``shared``."""
        common, free, unsettled, total2 = shared
        rest, opened = self.rest1[depth], self.open1[depth]
        edges_common = sum(min(x, y) for x, y in zip(opened, unsettled, strict=True))
        if target != NONE:
            free -= 1
            lab = self.two.label[target]
            common -= self.free2[lab] <= rest[lab]
            closing: dict[int, int] = {}
            for adjacency in (self.two.out[target], self.two.into[target]):
                for y, k in adjacency.items():
                    if y != target and self.used[y]:
                        closing[k] = closing.get(k, 0) + 1
            loop = self.two.out[target].get(target, NONE)
            if loop != NONE:
                closing[loop] = closing.get(loop, 0) + 1
            for k, c in closing.items():
                edges_common -= min(opened[k], unsettled[k]) - min(opened[k], unsettled[k] - c)
                total2 -= c
        nodes = max(self.one.n - depth, free) - common
        return nodes + max(self.open_sum1[depth], total2) - edges_common

    def strong_bound(self, depth: int) -> int:
        two = self.two
        bound = max(self.one.n - depth, sum(self.free2)) - sum(
            min(x, y) for x, y in zip(self.rest1[depth], self.free2, strict=True)
        )
        for i in range(depth):
            crossing, size = self.cross1[self.order[i]][depth]
            x = self.mapping[i]
            if x == NONE:
                bound += size
                continue
            image: dict[int, int] = {}
            for forward, adjacency in ((1, two.out[x]), (0, two.into[x])):
                for y, k in adjacency.items():
                    if not self.used[y]:
                        image[2 * k + forward] = image.get(2 * k + forward, 0) + 1
            common = sum(min(c, image.get(key, 0)) for key, c in crossing.items())
            bound += max(size, sum(image.values())) - common
        inner2 = [a - t for a, t in zip(self.all2, self.touched2, strict=True)]
        return bound + _mismatch(self.inner1[depth], inner2)

    def assign(self, target: int, sign: int) -> None:
        """Mark ``target`` used (+1) or free again (-1), keeping the edge counts."""
        two = self.two
        self.free2[two.label[target]] -= sign
        for adjacency in (two.out[target], two.into[target]):
            for y, k in adjacency.items():
                if y == target:
                    continue
                if self.used[y]:
                    self.closed2[k] += sign
                else:
                    self.touched2[k] += sign
        loop = two.out[target].get(target, NONE)
        if loop != NONE:
            self.closed2[loop] += sign
            self.touched2[loop] += sign
        self.used[target] = sign > 0

    def tick(self) -> None:
        self.expansions += 1
        if self.expansions >= self.budget:
            self.stopped = True
        elif (
            self.deadline is not None
            and self.expansions % 256 == 0
            and time.monotonic() > self.deadline
        ):
            self.stopped = self.timed_out = True

    def candidates(self, depth: int) -> list[tuple[int, int, int, int]]:
        """Children of this state as (cost of the step, weak bound, affinity, target), the
        likeliest first; the bound is computed before the child is built."""
        u = self.order[depth]
        colour = self.one.colour[u]
        shared = self.weak_bounds(depth + 1)
        options = [
            (
                self.step_cost(u, t),
                self.weak_bound(depth + 1, shared, t),
                0 if self.two.colour[t] == colour else 1,
                t,
            )
            for t in range(self.two.n)
            if not self.used[t]
        ]
        options.append((self.step_cost(u, NONE), self.weak_bound(depth + 1, shared, NONE), 2, NONE))
        options.sort(key=lambda o: (o[0], o[2], o[3]))
        return options

    def run(self, depth: int = 0, cost: int = 0) -> None:
        self.tick()
        if depth == self.one.n:
            unsettled = sum(self.all2) - sum(self.closed2)
            if cost + sum(self.free2) + unsettled < self.best:
                self.best = cost + sum(self.free2) + unsettled
                self.best_mapping = list(self.mapping)
            self.halted = self.stop_at_leaf
            return
        for step, weak, _, target in self.candidates(depth):
            total = cost + step
            if self.stopped or self.halted or self.best == 0:
                return
            if total + weak >= self.best:
                continue
            if target != NONE:
                self.assign(target, 1)
            self.mapping.append(target)
            if total + self.strong_bound(depth + 1) < self.best:
                self.run(depth + 1, total)
            self.mapping.pop()
            if target != NONE:
                self.assign(target, -1)

    def cost_of(self, mapping: list[int]) -> int:
        """Edit cost of a complete map (by position in ``order``; ``NONE`` deletes)."""
        one, two = self.one, self.two
        image = {self.order[i]: t for i, t in enumerate(mapping)}
        used = {t for t in mapping if t != NONE}
        cost = sum(1 for n, t in image.items() if t == NONE or two.label[t] != one.label[n])
        cost += two.n - len(used)
        matched = 0
        for a, b, k in one.edges:
            x, y = image[a], image[b]
            other = two.out[x].get(y, NONE) if x != NONE and y != NONE else NONE
            cost += k != other
            matched += other != NONE
        return cost + len(two.edges) - matched

    def improve(self) -> None:
        """Hill-climb from the best map found: move one node to a free target or to
        deletion, or swap two nodes' targets, while that lowers the cost."""
        mapping = list(self.best_mapping)
        cost = self.cost_of(mapping)
        improved = True
        while improved and cost > 0:
            improved = False
            free = [t for t in range(self.two.n) if t not in set(mapping)] + [NONE]
            moves = [(i, t) for i in range(len(mapping)) for t in free if t != mapping[i]]
            moves += [(i, -2 - j) for i in range(len(mapping)) for j in range(i + 1, len(mapping))]
            for i, move in moves:
                trial = list(mapping)
                if move <= -2:
                    j = -2 - move
                    trial[i], trial[j] = trial[j], trial[i]
                else:
                    trial[i] = move
                trial_cost = self.cost_of(trial)
                if trial_cost < cost:
                    mapping, cost, improved = trial, trial_cost, True
                    break
        if cost < self.best:
            self.best, self.best_mapping = cost, mapping

    def result(self) -> SearchResult:
        return SearchResult(self.best, not self.stopped, self.expansions, self.timed_out)


def _order(side: _Side) -> list[int]:
    """Most-connected node first, then always the node most connected to those placed, so
    edge costs enter the bound early and pruning starts high in the tree."""
    remaining = set(range(side.n))
    links = [0] * side.n
    degree = [len(side.out[n]) + len(side.into[n]) for n in range(side.n)]
    order: list[int] = []
    while remaining:
        chosen = min(remaining, key=lambda n: (-links[n], -degree[n], n))
        order.append(chosen)
        remaining.discard(chosen)
        for m in (*side.out[chosen], *side.into[chosen]):
            links[m] += 1
    return order


def graph_edit_distance(
    g1: nx.DiGraph, g2: nx.DiGraph, budget: int, timeout: float | None = None
) -> SearchResult:
    """Unit-cost GED between two graphs with ``label`` attributes on nodes and edges."""
    deadline = None if timeout is None else time.monotonic() + timeout
    search = Search(g1, g2, budget, deadline)
    # A first greedy dive, improved by local search, gives the bound that the full search
    # then prunes against; the search itself is restarted from the root.
    search.stop_at_leaf = True
    search.run()
    search.stop_at_leaf = search.halted = False
    if search.best_mapping:
        search.improve()
    if not search.stopped and search.best > 0:
        search.run()
        if search.stopped:
            search.improve()  # the budget ran out: polish the best map the search reached
    return search.result()
