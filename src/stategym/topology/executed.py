"""The graph an agent actually executed in an episode, read from its trajectory alone.

Nodes are what the agent did, labelled like a topology's nodes: a call that ran (``read`` /
``write`` / ``commit`` by the tool's effect; malformed calls never ran and are left out), a
question (``ask``), a proposal (``confirm``), or any other message (``say``). Edges:

- ``pipe``: an argument's value first appeared in that earlier call's result (provenance);
- ``gate``: an argument's value first came from the user's answer in that earlier round;
- ``next``: every node of one round to every node of the next round that has nodes, so the
  schedule (what ran in parallel, what waited) is part of the shape.

Comparing executed graphs across tasks shows whether an agent adapts its plan to the tool
graph in front of it or replays one template everywhere.
"""

from __future__ import annotations

from stategym.kernel.protocol import FINISH
from stategym.kernel.provenance import Source
from stategym.kernel.trajectory import RoundKind, Trajectory
from stategym.topology.graph import ASK, CONFIRM, Builder, Topology

SAY = "say"
NEXT = "next"


def executed_topology(trajectory: Trajectory) -> Topology:
    """The executed graph of one trajectory (see the module docstring)."""
    builder = Builder()
    by_call: dict[str, str] = {}
    by_round: dict[int, list[str]] = {}
    said: dict[int, str] = {}
    for record in trajectory.rounds:
        nodes: list[str] = []
        if record.kind is RoundKind.SAY and record.user is not None:
            turn = record.user
            label = CONFIRM if turn.proposed else ASK if turn.asked or turn.priority_asked else SAY
            name = f"r{record.index}:{label}"
            builder.node(name, label)
            nodes.append(name)
            said[record.index] = name
        for call in record.calls:
            if call.name == FINISH or call.effect is None or call.error_kind not in (None, "tool"):
                continue
            name = f"r{record.index}:{call.id}:{call.name}"
            builder.node(name, str(call.effect))
            by_call[call.id] = name
            nodes.append(name)
            for origin in call.sources.values():
                if origin is None:
                    continue
                if origin.source is Source.TOOL and origin.ref in by_call:
                    builder.edge(by_call[origin.ref], name, "pipe")
                elif origin.source is Source.USER and origin.round in said:
                    builder.edge(said[origin.round], name, "gate")
        if nodes:
            previous = max(by_round, default=None)
            for src in by_round.get(previous, []) if previous is not None else []:
                for dst in nodes:
                    builder.edge(src, dst, NEXT)
            by_round[record.index] = nodes
    return builder.build(f"executed:{trajectory.domain}/{trajectory.seed}/{trajectory.agent}")
