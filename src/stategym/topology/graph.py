"""Topology extraction: a task's or a domain's tool graph as a labelled graph, names erased.

A topology is a :class:`networkx.DiGraph` whose nodes carry only a role label and whose edges
carry only a link label; the names (tools, slots, constraints) are kept apart, in
:attr:`Topology.names`, for printing and drawing, and never enter identity or distance.

Node labels:

- ``read`` / ``write`` / ``commit``: a tool call, by the tool's declared effect; ``read*``
  (``write*``...) in a domain topology marks a tool the plan calls several times (fan-out);
- ``ask``: a must-ask slot; ``confirm``: the user's agreement before a commit;
- ``abstain``: a decision point where the right plan does not commit (task topologies only);
- ``policy`` / ``need`` / ``preference``: a constraint, by kind.

Edge labels are the gold call graph's kinds (``pipe``, ``decide``, ``gate``, ``order``), plus
``pre`` (a commit's precondition is revealed by that node) and ``prio`` (higher to lower
constraint, covering relations of the priority order). When several kinds link the same two
nodes the label lists them sorted and joined by ``+``.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from enum import StrEnum

import networkx as nx

from stategym.kernel.domain import Domain
from stategym.kernel.knobs import Knobs
from stategym.kernel.task import GoldCall, Task


class Link(StrEnum):
    """Edge kinds of a topology."""

    PIPE = "pipe"
    DECIDE = "decide"
    GATE = "gate"
    ORDER = "order"
    PRE = "pre"
    PRIO = "prio"


ABSTAIN = "abstain"
ASK = "ask"
CONFIRM = "confirm"
FAN = "*"
DOMAIN_SAMPLES = 32
"""Tasks a domain topology aggregates over (seeds ``0..DOMAIN_SAMPLES-1``)."""


@dataclass(frozen=True)
class Topology:
    """A labelled graph with its names kept apart.

    Attributes:
        graph: nodes ``0..n-1`` with a ``label`` attribute; edges with a ``label`` attribute.
        names: display name of every node (tool, ``ask:<slot>``, constraint id).
        source: what it was extracted from (``travel``, ``travel/3/...``).
    """

    graph: nx.DiGraph
    names: Mapping[int, str]
    source: str

    @property
    def size(self) -> int:
        """Nodes plus edges."""
        return self.graph.number_of_nodes() + self.graph.number_of_edges()

    def labels(self) -> dict[str, int]:
        """How many nodes carry each label."""
        counts: dict[str, int] = {}
        for _, label in self.graph.nodes(data="label"):
            counts[label] = counts.get(label, 0) + 1
        return dict(sorted(counts.items()))


class Builder:
    """Accumulates named nodes and multi-kind edges, then numbers them in insertion order.

    An edge whose ends are not both nodes yet, or that loops, is dropped.
    """

    def __init__(self) -> None:
        self.nodes: dict[str, str] = {}
        self.edges: dict[tuple[str, str], set[str]] = {}

    def node(self, name: str, label: str) -> None:
        self.nodes.setdefault(name, label)

    def edge(self, src: str, dst: str, kind: str) -> None:
        if src in self.nodes and dst in self.nodes and src != dst:
            self.edges.setdefault((src, dst), set()).add(kind)

    def build(self, source: str) -> Topology:
        index = {name: i for i, name in enumerate(self.nodes)}
        graph = nx.DiGraph()
        for name, label in self.nodes.items():
            graph.add_node(index[name], label=label)
        for (src, dst), kinds in self.edges.items():
            graph.add_edge(index[src], index[dst], label="+".join(sorted(kinds)))
        return Topology(graph, {i: name for name, i in index.items()}, source)


def _call_label(call: GoldCall) -> str:
    if call.effect is not None:
        return str(call.effect)
    return CONFIRM if call.tool == CONFIRM else ASK


def _add_poset(builder: Builder, task: Task) -> None:
    for constraint in task.constraints:
        builder.node(f"constraint:{constraint.id}", str(constraint.kind))
    for high, low in task.priority:
        builder.edge(f"constraint:{high}", f"constraint:{low}", Link.PRIO)


def task_topology(task: Task) -> Topology:
    """The topology of one task: its gold plan, commit preconditions and constraint poset.

    Every gold call is a node; a decision point whose right plan commits links its
    preconditions to the commit call with ``pre`` edges, one whose right plan abstains gets an
    ``abstain`` node instead, so the hazard stays visible.
    """
    builder = Builder()
    for call in task.truth.calls:
        builder.node(call.id, _call_label(call))
    for edge in task.truth.edges:
        builder.edge(edge.src, edge.dst, str(edge.kind))
    for decision in task.truth.decisions:
        target = next((c.id for c in task.truth.calls if c.tool == decision.tool), None)
        if target is None or not decision.should_commit:
            target = f"decision:{decision.id}"
            builder.node(target, ABSTAIN)
        for pre in decision.preconditions:
            builder.edge(pre.revealed_by, target, Link.PRE)
    _add_poset(builder, task)
    return builder.build(task.id)


def _tool_of(call: GoldCall) -> str:
    """The domain-level node a gold call collapses to: its tool, or its user node."""
    return call.id if call.effect is None else call.tool


def _collapse(builder: Builder, task: Task, fanned: set[str]) -> None:
    tool_of = {call.id: _tool_of(call) for call in task.truth.calls}
    counts: dict[str, int] = {}
    for call in task.truth.calls:
        node = tool_of[call.id]
        counts[node] = counts.get(node, 0) + 1
        if call.effect is None:
            builder.node(node, _call_label(call))
    fanned.update(node for node, n in counts.items() if n > 1)
    for edge in task.truth.edges:
        builder.edge(tool_of[edge.src], tool_of[edge.dst], str(edge.kind))
    for decision in task.truth.decisions:
        for pre in decision.preconditions:
            if pre.revealed_by in tool_of:
                builder.edge(tool_of[pre.revealed_by], decision.tool, Link.PRE)


def _richest_poset(tasks: Iterable[Task]) -> Task | None:
    """The sample task with the largest constraint poset (first one on ties)."""
    best: Task | None = None
    for task in tasks:
        if best is None or (len(task.constraints), len(task.priority)) > (
            len(best.constraints),
            len(best.priority),
        ):
            best = task
    return best


def domain_topology(
    domain: Domain, knobs: Knobs | None = None, samples: int = DOMAIN_SAMPLES
) -> Topology:
    """The tool-level topology of a domain under ``knobs``.

    Nodes are the tools offered under the knobs (labelled by effect, ``*`` if some task's
    plan calls the tool more than once) and the user nodes (``ask:<slot>``, ``confirm``) that
    occur in the gold plans of tasks ``0..samples-1``; edges are the union of those plans'
    edges (and ``pre`` edges) collapsed onto tools. The constraint poset is that of the
    sample task with the most constraints, since preference orders vary from task to task.
    """
    knobs = knobs or Knobs()
    key = (domain.name, knobs, samples)
    if key not in _DOMAIN_CACHE:
        _DOMAIN_CACHE[key] = _build_domain_topology(domain, knobs, samples)
    return _DOMAIN_CACHE[key]


_DOMAIN_CACHE: dict[tuple[str, Knobs, int], Topology] = {}
"""Domain topologies by (name, knobs, samples): names are unique and tasks are pure."""


def _build_domain_topology(domain: Domain, knobs: Knobs, samples: int) -> Topology:
    builder = Builder()
    tools = domain.available_tools(knobs)
    for tool in tools:
        builder.node(tool.name, str(tool.effect))
    tasks = [domain.generate(seed, knobs) for seed in range(samples)]
    fanned: set[str] = set()
    for task in tasks:
        _collapse(builder, task, fanned)
    for name in fanned:
        if builder.nodes[name] not in (ASK, CONFIRM):
            builder.nodes[name] += FAN
    richest = _richest_poset(tasks)
    if richest is not None:
        _add_poset(builder, richest)
    return builder.build(domain.name)


def describe(topology: Topology) -> list[str]:
    """Human-readable lines: every node with its label, then every edge."""
    graph, names = topology.graph, topology.names
    lines = [f"{names[n]} [{label}]" for n, label in graph.nodes(data="label")]
    lines += [f"{names[u]} -{label}-> {names[v]}" for u, v, label in graph.edges(data="label")]
    return lines
