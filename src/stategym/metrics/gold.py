"""The parts of a task's ground truth every metric reads, derived once per task.

A task's gold call graph is a handful of nodes and edges; turning it into lookup tables
(predecessors, independent pairs, which nodes a must-ask slot gates, the priority poset's
transitive order) costs more than scoring a trajectory, so :func:`gold_of` caches the result
per task object.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

from stategym.kernel.task import EdgeKind, Event, GoldCall, SlotKind, Task
from stategym.kernel.tools import Effect

ASK = "ask"
"""Tool name of a gold must-ask node (its id is ``ask:<slot>``)."""
CONFIRM = "confirm"
"""Tool name of the gold node for the user's confirmation of a proposal."""
USER_NODES = (ASK, CONFIRM)
VALUE_EDGES = (EdgeKind.PIPE, EdgeKind.DECIDE)
"""Edges along which a returned value flows into a later decision."""
PRIORITIES = "priorities"
"""The slot a question about priorities reaches (see :mod:`stategym.kernel.user`)."""


@dataclass(frozen=True, slots=True)
class Gold:
    """Lookup tables over one task's ground truth.

    Attributes:
        nodes: gold nodes by id.
        by_tool: gold node ids by tool name (user nodes under ``ask`` / ``confirm``).
        required: ids of the read and write tool nodes: the calls a good trajectory makes.
        value_preds: for each node, the nodes whose returned values it needs (PIPE, DECIDE).
        value_order: the same, sorted (the order an early call's missing values are named in).
        all_preds: for each node, its predecessors over every edge kind.
        gates: for each must-ask slot, the nodes its answer gates (GATE edges).
        independent: for each required node, the required nodes with no path to or from it.
        pairs: number of unordered independent pairs among required nodes.
        value_edges: number of PIPE and DECIDE edges.
        depth: the most dependent steps on one path of value edges (PIPE, DECIDE) ending at
            a required or confirmation node: the rounds a chain of lookups must wait, of
            which a guessed value skips one.
        must_ask: M*, the slots only the user knows.
        kinds: slot kinds by name.
        above: for each constraint, the constraints strictly above it in the priority order.
        decisions: |D|, the decisions the agent takes: the task's decision points, and in a
            task judged on its answer the answer itself (risk classifies it).
        constrained: the task has constraints (priority applies).
        by_answer: the episode is judged on its ``finish`` answer, not on commitments
            (statefulness off, or a read-only domain).
        events: the task's schedule of changes (what each fired event changed).
        lookup: for each tool, groups of nodes with single-valued arguments, as
            ``(argument names, {argument values: node ids})``, so matching a call is a
            dictionary lookup rather than a scan (a call has many same-tool nodes).
        scan: for each tool, the nodes with a set of acceptable values somewhere, matched
            one by one.
    """

    nodes: Mapping[str, GoldCall]
    by_tool: Mapping[str, tuple[str, ...]]
    required: tuple[str, ...]
    value_preds: Mapping[str, frozenset[str]]
    value_order: Mapping[str, tuple[str, ...]]
    all_preds: Mapping[str, frozenset[str]]
    gates: Mapping[str, frozenset[str]]
    independent: Mapping[str, frozenset[str]]
    pairs: int
    value_edges: int
    depth: int
    must_ask: tuple[str, ...]
    kinds: Mapping[str, SlotKind]
    above: Mapping[str, frozenset[str]]
    decisions: int
    constrained: bool
    by_answer: bool
    events: tuple[Event, ...]
    lookup: Mapping[str, tuple[tuple[tuple[str, ...], dict[tuple[Any, ...], tuple[str, ...]]], ...]]
    scan: Mapping[str, tuple[str, ...]]
    _needed: dict[tuple[str, ...], frozenset[str]] = field(default_factory=dict)
    _gated: dict[tuple[str, ...], tuple[str, ...]] = field(default_factory=dict)

    def exact(self, name: str, arguments: Mapping[str, Any]) -> tuple[str, ...]:
        """The nodes a call matches exactly (acceptable arguments), in gold order."""
        hits: list[str] = []
        for keys, table in self.lookup.get(name, ()):
            get = arguments.get
            try:
                found = table.get(tuple([get(k, _ABSENT) for k in keys]))
            except TypeError:  # an unhashable argument (a list) matches no scalar
                continue
            if found:
                hits += found
        scan = self.scan.get(name)
        if scan:
            node_map = self.nodes
            hits += [n for n in scan if node_map[n].matches(name, arguments)]
        if len(hits) > 1:
            order = self.by_tool[name]
            hits.sort(key=order.index)
        return tuple(hits)

    def needed(self, candidates: tuple[str, ...]) -> frozenset[str]:
        """The values every candidate node needs (the PIPE/DECIDE predecessors they share)."""
        found = self._needed.get(candidates)
        if found is None:
            found = frozenset.intersection(*(self.value_preds[n] for n in candidates))
            self._needed[candidates] = found
        return found

    def gated_by(self, candidates: tuple[str, ...]) -> tuple[str, ...]:
        """The must-ask slots (in ``must_ask`` order) whose answer gates one of the nodes."""
        found = self._gated.get(candidates)
        if found is None:
            empty: frozenset[str] = frozenset()
            found = tuple(
                s for s in self.must_ask if not self.gates.get(s, empty).isdisjoint(candidates)
            )
            self._gated[candidates] = found
        return found


_ABSENT = object()
"""Stands for an argument a call did not pass (matches nothing)."""


_CACHE: dict[int, tuple[Task, Gold]] = {}
_CACHE_LIMIT = 4096


def gold_of(task: Task) -> Gold:
    """The lookup tables of ``task`` (cached per task object)."""
    hit = _CACHE.get(id(task))
    if hit is not None and hit[0] is task:
        return hit[1]
    gold = _build(task)
    if len(_CACHE) >= _CACHE_LIMIT:
        _CACHE.clear()  # tasks are cheap to re-derive; a bounded cache is all that matters
    _CACHE[id(task)] = (task, gold)
    return gold


def _build(task: Task) -> Gold:
    truth = task.truth
    nodes = {c.id: c for c in truth.calls}
    by_tool: dict[str, list[str]] = {}
    for node in truth.calls:
        by_tool.setdefault(node.tool, []).append(node.id)
    value_preds: dict[str, set[str]] = {n: set() for n in nodes}
    all_preds: dict[str, set[str]] = {n: set() for n in nodes}
    children: dict[str, set[str]] = {n: set() for n in nodes}
    gates: dict[str, set[str]] = {}
    value_edges = 0
    gate, ask, required_effects = EdgeKind.GATE, f"{ASK}:", (Effect.READ, Effect.WRITE)
    for edge in truth.edges:
        src, dst, kind = edge.src, edge.dst, edge.kind
        if src not in nodes or dst not in nodes:
            continue  # an edge to a node the task does not list carries no checkable fact
        all_preds[dst].add(src)
        children[src].add(dst)
        if kind in VALUE_EDGES:
            value_preds[dst].add(src)
            value_edges += 1
        elif kind is gate and src.startswith(ask):
            gates.setdefault(src.removeprefix(ask), set()).add(dst)
    required = tuple([c.id for c in truth.calls if c.effect in required_effects])
    independent, pairs = _independent(tuple(nodes), children, required)
    must_ask = task.must_ask
    return Gold(
        nodes=nodes,
        by_tool={t: tuple(ids) for t, ids in by_tool.items()},
        required=required,
        value_preds={n: frozenset(p) for n, p in value_preds.items()},
        value_order={n: tuple(sorted(p)) for n, p in value_preds.items()},
        all_preds={n: frozenset(p) for n, p in all_preds.items()},
        gates={s: frozenset(d) for s, d in gates.items()},
        independent=independent,
        pairs=pairs,
        value_edges=value_edges,
        depth=_depth((*required, *by_tool.get(CONFIRM, ())), value_preds),
        must_ask=must_ask,
        kinds={s.name: s.kind for s in task.slots},
        above=_above(task),
        decisions=len(truth.decisions) + task.judged_by_answer,
        constrained=bool(task.constraints),
        by_answer=task.judged_by_answer,
        events=task.events,
        **_match_tables(truth.calls),
    )


def _match_tables(calls: tuple[GoldCall, ...]) -> dict[str, Any]:
    lookup: dict[str, dict[tuple[str, ...], dict[tuple[Any, ...], list[str]]]] = {}
    scan: dict[str, list[str]] = {}
    for node in calls:
        args = node.args
        if tuple in [type(v) for v in args.values()]:
            scan.setdefault(node.tool, []).append(node.id)
            continue
        keys = tuple(sorted(args))
        values = tuple([args[k] for k in keys])
        lookup.setdefault(node.tool, {}).setdefault(keys, {}).setdefault(values, []).append(node.id)
    return {
        "lookup": {
            tool: tuple(
                (keys, {v: tuple(ids) for v, ids in table.items()})
                for keys, table in groups.items()
            )
            for tool, groups in lookup.items()
        },
        "scan": {tool: tuple(ids) for tool, ids in scan.items()},
    }


def _depth(ends: tuple[str, ...], preds: Mapping[str, set[str]]) -> int:
    """The most nodes with predecessors on one path (over ``preds``) ending at one of ``ends``."""
    memo: dict[str, int] = {}

    def depth(node: str) -> int:
        if node not in memo:
            memo[node] = 0  # a cycle (none expected) ends the path
            memo[node] = 1 + max(map(depth, preds[node])) if preds[node] else 0
        return memo[node]

    return max(map(depth, ends), default=0)


def _independent(
    ids: tuple[str, ...], children: Mapping[str, set[str]], required: tuple[str, ...]
) -> tuple[dict[str, frozenset[str]], int]:
    """For each required node, the required nodes with no path to or from it; and the number
    of unordered such pairs.

    Reachability is kept as one bit mask per node, so "no path either way" is three ``&``
    operations per node instead of a set lookup per pair (the pair loop was most of
    :func:`gold_of` on tasks with a few dozen nodes).
    """
    bit = {n: 1 << i for i, n in enumerate(ids)}
    child = []
    for n in ids:
        mask = 0
        for c in children[n]:
            mask |= bit[c]
        child.append(mask)
    closed = _closures(child)
    if closed is not None:
        reach, above = closed
    else:  # a cycle (none expected): a search from every node
        reach = [_reach(mask, child) for mask in child]
        # ``above[i]``: the nodes with a path to node ``i``
        above = [0] * len(ids)
        for i, mask in enumerate(reach):
            for j in _indices(mask):
                above[j] |= 1 << i
    wanted = 0
    for n in required:
        wanted |= bit[n]
    # nodes that are independent of each other share one mask once each adds itself back,
    # so each distinct group is turned into a set once and each node's set is that minus it
    groups: dict[int, frozenset[str]] = {}
    independent: dict[str, frozenset[str]] = {}
    pairs = 0
    for n in required:
        i = bit[n].bit_length() - 1
        mask = wanted & ~reach[i] & ~above[i] & ~bit[n]
        pairs += mask.bit_count()
        group = groups.get(mask | bit[n])
        if group is None:
            group = groups[mask | bit[n]] = frozenset(_members(mask | bit[n], ids))
        independent[n] = group - {n}
    return independent, pairs // 2


def _closures(child: list[int]) -> tuple[list[int], list[int]] | None:
    """For an acyclic graph given as each node's children (bit masks): for each node, the
    nodes reachable from it, and the nodes it is reachable from (``None`` on a cycle).

    One pass in topological order, each node's set the union of its neighbours' sets, in
    place of a search from every node.
    """
    size = len(child)
    parents: list[list[int]] = [[] for _ in range(size)]
    for i, mask in enumerate(child):
        for j in _indices(mask):
            parents[j].append(i)
    waiting = [mask.bit_count() for mask in child]
    order = [i for i in range(size) if not waiting[i]]  # leaves first
    for i in order:  # grows while it is read: a node joins once its children are done
        for p in parents[i]:
            waiting[p] -= 1
            if not waiting[p]:
                order.append(p)
    if len(order) < size:
        return None
    reach = [0] * size
    for i in order:
        mask, seen = child[i], 0
        while mask:
            low = mask & -mask
            seen |= low | reach[low.bit_length() - 1]
            mask ^= low
        reach[i] = seen
    above = [0] * size
    for i in reversed(order):  # roots first
        seen = 0
        for p in parents[i]:
            seen |= (1 << p) | above[p]
        above[i] = seen
    return reach, above


def _indices(mask: int) -> Iterator[int]:
    """The index of every set bit of ``mask``, lowest first."""
    while mask:
        low = mask & -mask
        yield low.bit_length() - 1
        mask ^= low


def _members(mask: int, ids: tuple[str, ...]) -> list[str]:
    return [ids[i] for i in _indices(mask)]


def _reach(start: int, child: list[int]) -> int:
    """Every node reachable from the nodes in ``start`` (a mask), themselves included."""
    seen = 0
    frontier = start
    while frontier:
        seen |= frontier
        step = 0
        while frontier:  # _indices inlined: this loop is most of the build
            low = frontier & -frontier
            step |= child[low.bit_length() - 1]
            frontier ^= low
        frontier = step & ~seen
    return seen


def _descendants(node: str, children: Mapping[str, set[str]]) -> frozenset[str]:
    seen: set[str] = set()
    stack = list(children[node])
    while stack:
        current = stack.pop()
        if current not in seen:
            seen.add(current)
            stack.extend(children[current])
    return frozenset(seen)


def _above(task: Task) -> dict[str, frozenset[str]]:
    """Transitive closure of the priority order, read upward."""
    parents: dict[str, set[str]] = {c.id: set() for c in task.constraints}
    for high, low in task.priority:
        parents.setdefault(low, set()).add(high)
        parents.setdefault(high, set())
    return {c: _descendants(c, parents) for c in parents}
