"""The graph an agent actually executed in an episode, read from its trajectory alone.

Nodes are what the agent did, labelled like a topology's nodes: a call that ran (``read`` /
``write`` / ``commit`` by the tool's effect; malformed calls never ran and are left out), a
question (``ask``), a proposal (``confirm``), or any other message (``say``). Edges:

- ``pipe``: an argument's value first appeared in that earlier call's result (provenance);
- ``gate``: an argument's value first came from the user's answer in that earlier round;
- ``next``: every node of one round to every node of the next round that has nodes, so the
  schedule (what ran in parallel, what waited) is part of the shape.

A call is identified by its round and its place in the round's batch, never by its id alone:
the id is the agent's, and an OpenAI-compatible endpoint may restart ids at ``call_0`` every
round, or repeat one inside a batch (the environment accepts both). A call node is named
``r<round>:<id>:<tool>``; a call whose id repeats an earlier call's of the same round is
named ``r<round>.<position>:<id>:<tool>`` (position from 0 in the batch), so no two calls
share a node. An episode whose ids are unique keeps the names, graph and hash it always had.

A ``pipe`` edge follows the kernel's origin of the value, :class:`Origin`
``(round, ref = call id)``: it comes from the call of that round with that id. When several
calls of that round share the id, the origin alone does not say which; the edge comes from
the first of them, in batch order, whose result holds the value, which for a single value is
exactly the call the kernel's first-appearance index took it from (it reads a round's results
in batch order and keeps the first). For a list argument the kernel dates the list by its
most recently first-seen item and keeps only that item's ``(round, id)``; the edge comes from
the first of those calls whose result holds any item, which may name another of them than the
kernel's when the list's items came from several calls that share the id in that round (the
log does not say which item dated the list). If none holds the value (a hand-edited log), the
first with the id.

Comparing executed graphs across tasks shows whether an agent adapts its plan to the tool
graph in front of it or replays one template everywhere.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from stategym.kernel.protocol import FINISH, JSON
from stategym.kernel.provenance import Origin, Provenance, Source
from stategym.kernel.trajectory import CallRecord, RoundKind, RoundRecord, Trajectory
from stategym.topology.graph import ASK, CONFIRM, Builder, Topology

SAY = "say"
NEXT = "next"

_HELD = Origin(Source.TOOL, 0, "")
"""Any origin: :func:`_holds` only asks whether a result shows a value."""


@dataclass(frozen=True, slots=True)
class Node:
    """One node of the executed graph and what it stands for.

    Attributes:
        name: unique within the episode (module docstring).
        label: ``read`` / ``write`` / ``commit``, or ``ask`` / ``confirm`` / ``say``.
        round: the round it belongs to.
        position: the call's place in the round's batch (from 0); ``-1`` for a message.
        call: the call, ``None`` for a message.
        repeats: the call's id repeats an earlier call's of the same round.
    """

    name: str
    label: str
    round: int
    position: int
    call: CallRecord | None
    repeats: bool = False


def _is_node(call: CallRecord) -> bool:
    """A call that ran: ``finish``, unknown tools and malformed calls are no nodes."""
    return call.name != FINISH and call.effect is not None and call.error_kind in (None, "tool")


def round_nodes(record: RoundRecord) -> list[Node]:
    """The nodes one round adds: its message, or the calls that ran, in batch order."""
    if record.kind is RoundKind.SAY and record.user is not None:
        turn = record.user
        label = CONFIRM if turn.proposed else ASK if turn.asked or turn.priority_asked else SAY
        return [Node(f"r{record.index}:{label}", label, record.index, -1, None)]
    nodes: list[Node] = []
    ids: set[str] = set()
    for position, call in enumerate(record.calls):
        if not _is_node(call):
            continue
        repeats = call.id in ids
        ids.add(call.id)
        head = f"r{record.index}.{position}" if repeats else f"r{record.index}"
        name = f"{head}:{call.id}:{call.name}"
        nodes.append(Node(name, str(call.effect), record.index, position, call, repeats))
    return nodes


def _holds(content: JSON, value: Any) -> bool:
    """Whether a result shows ``value`` (a list: any of its items), read as the kernel's
    first-appearance index reads results, so the two agree on what counts as shown."""
    index = Provenance()
    index.observe(content, _HELD)
    items = value if type(value) is list else [value]
    return any(index.resolve({"value": item}).get("value") is not None for item in items)


def _pipe_source(candidates: Sequence[Node], value: Any) -> str:
    """The node a ``pipe`` edge comes from, among the calls that share the origin's round and
    id: the only one, else the first whose result holds the value (module docstring)."""
    if len(candidates) > 1:
        for node in candidates:
            if node.call is not None and _holds(node.call.content, value):
                return node.name
    return candidates[0].name


def executed_topology(trajectory: Trajectory) -> Topology:
    """The executed graph of one trajectory (see the module docstring)."""
    builder = Builder()
    shown: dict[tuple[int, str], list[Node]] = {}  # calls whose results the kernel observed
    by_round: dict[int, list[str]] = {}
    said: dict[int, str] = {}
    for record in trajectory.rounds:
        nodes = round_nodes(record)
        for node in nodes:
            builder.node(node.name, node.label)
            call = node.call
            if call is None:
                said[record.index] = node.name
                continue
            arguments = call.arguments if isinstance(call.arguments, dict) else {}
            for argument, origin in call.sources.items():
                if origin is None:
                    continue
                if origin.source is Source.TOOL and (origin.round, origin.ref) in shown:
                    source = _pipe_source(shown[origin.round, origin.ref], arguments.get(argument))
                    builder.edge(source, node.name, "pipe")
                elif origin.source is Source.USER and origin.round in said:
                    builder.edge(said[origin.round], node.name, "gate")
        for node in nodes:
            if node.call is not None and node.call.error is None:
                shown.setdefault((record.index, node.call.id), []).append(node)
        if nodes:
            previous = max(by_round, default=None)
            for src in by_round.get(previous, []) if previous is not None else []:
                for dst in (n.name for n in nodes):
                    builder.edge(src, dst, NEXT)
            by_round[record.index] = [n.name for n in nodes]
    return builder.build(f"executed:{trajectory.domain}/{trajectory.seed}/{trajectory.agent}")
