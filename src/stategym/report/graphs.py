"""The viewer's two call graphs of an episode, laid out as columns: executed and gold.

Both are plain data that the page's script draws as SVG (``createElementNS``, every label
set with ``textContent``): ``{"columns": [title, ...], "nodes": [[text, kind, column, row,
state, title], ...], "edges": [[src, dst, kind], ...]}`` where ``src`` and ``dst`` index
``nodes`` and every edge runs from a lower column to a higher one, so the drawing needs no
arrowheads (direction is left to right).

- **Executed** (:func:`executed_view`): :func:`stategym.topology.executed.executed_topology`
  of the trajectory, one column per round that ran something, a parallel batch stacked in
  its column. Edges are the provenance the trajectory recorded: ``pipe`` from the call whose
  result first held an argument's value, ``gate`` from the round whose user answer did. The
  ``next`` edges (every node of a round to every node of the next) are left out: the
  columns already show the schedule, and they grow with the square of the batch size.
  A node is paired with its call by round and place in the batch
  (:func:`stategym.topology.executed.round_nodes`), never by call id, which an agent may
  reuse across rounds or inside one batch; its title names the call by id, and adds its
  place in the batch (``call_0 (#2 of the batch)``) when the id repeats one of the same
  round.
  ``state`` is ``gold`` for a call that matches a gold node exactly
  (:meth:`stategym.metrics.gold.Gold.exact`), a question that asks a slot the gold plan
  asks, or a proposal where the plan has one; else ``extra``.
- **Gold** (:func:`gold_view`): the task's gold dependency graph (``task.truth``), each node
  in the column of its longest chain of predecessors, i.e. the earliest round an agent that
  waits only for values it needs could run it. It is one block per task; which of its nodes
  an episode executed is that episode's :func:`gold_done`.

Rows are ordered once by the mean row of each node's predecessors (a barycentre pass), which
keeps most edges short and uncrossed for the 30-plus calls of a meetings task.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from stategym.kernel.task import Task
from stategym.kernel.trajectory import CallRecord, RoundRecord, Trajectory
from stategym.metrics.gold import Gold, gold_of
from stategym.topology.executed import NEXT, Node, executed_topology, round_nodes
from stategym.topology.graph import ASK, CONFIRM

MAX_LABEL = 80
"""Characters kept of a node's full name (its tooltip); the drawing shortens it further."""


def _rows(
    columns: Mapping[str, int], order: Sequence[str], preds: Mapping[str, Iterable[str]]
) -> dict[str, int]:
    """Each node's row in its column: by the mean row of its predecessors, then by order."""
    rows: dict[str, int] = {}
    for column in sorted(set(columns.values())):
        members = [n for n in order if columns[n] == column]

        def centre(node: str) -> float:
            seen = [rows[p] for p in preds.get(node, ()) if p in rows]
            return sum(seen) / len(seen) if seen else float("inf")

        ranked = sorted(members, key=lambda n: (centre(n), order.index(n)))
        rows.update({n: i for i, n in enumerate(ranked)})
    return rows


def _text(tool: str, gold_id: str | None) -> str:
    """A node's drawn text: the tool, and what a gold id says beyond it (``lookup_person
    P6468`` for ``tz:P6468``, ``ask budget`` for ``ask:budget``)."""
    if gold_id is None or ":" not in gold_id:
        return tool
    return f"{tool} {gold_id.partition(':')[2]}"


def _call_text(node: Node, call: CallRecord, gold: Gold) -> tuple[str, str, str]:
    """A call node's ``(text, state, title)``: named like the gold node it matches exactly;
    the title names the call by its id, and by its place in the batch when the id repeats
    an earlier call's of the same round (module docstring)."""
    arguments = call.arguments if isinstance(call.arguments, dict) else {}
    matched = gold.exact(call.name, arguments)
    which = f"{call.id} (#{node.position + 1} of the batch)" if node.repeats else call.id
    title = f"round {node.round}, {which}: {call.name}" + (
        f" = gold {', '.join(matched)}" if matched else " (no gold node)"
    )
    state = "gold" if matched else "extra"
    return _text(call.name, matched[0] if matched else None), state, title


def _message_text(node: Node, record: RoundRecord, task: Task) -> tuple[str, str, str]:
    """A message node's ``(text, state, title)``: a question is in gold if it asked a slot
    gold asks; a proposal, if gold has one."""
    asked = record.user.asked if record.user is not None else ()
    gold_ids = {c.id for c in task.truth.calls}
    slots = ",".join(asked) if node.label == ASK else ""
    wanted = any(f"{ASK}:{s}" in gold_ids for s in asked)
    confirms = any(c.tool == CONFIRM for c in task.truth.calls)
    known = (node.label == ASK and wanted) or (node.label == CONFIRM and confirms)
    text = f"{node.label} {slots}" if slots else node.label
    return text, "gold" if known else "extra", f"round {node.round}: {text}"


def executed_view(trajectory: Trajectory, task: Task) -> dict[str, Any]:
    """The executed call graph of ``trajectory`` as columns of rounds (module docstring).

    Each node is paired with what it stands for by the executed graph's own node list
    (:func:`stategym.topology.executed.round_nodes`: round and place in the batch), never by
    the call id, which an agent may reuse across rounds or within one batch."""
    graph = executed_topology(trajectory)
    gold = gold_of(task)
    records = {r.index: r for r in trajectory.rounds}
    meant = {n.name: n for r in trajectory.rounds for n in round_nodes(r)}
    names = [graph.names[n] for n in graph.graph.nodes]
    rounds = sorted({meant[n].round for n in names})
    columns = {n: rounds.index(meant[n].round) for n in names}
    edges: list[tuple[str, str, str]] = []
    for a, b, kind in graph.graph.edges(data="label"):
        kept = "+".join(k for k in str(kind).split("+") if k != NEXT)
        if kept:
            edges.append((graph.names[a], graph.names[b], kept))
    preds: dict[str, list[str]] = {}
    for src, dst, _ in edges:
        preds.setdefault(dst, []).append(src)
    rows = _rows(columns, names, preds)
    nodes = []
    for name in names:
        node = meant[name]
        if node.call is not None:
            text, state, title = _call_text(node, node.call, gold)
        else:
            text, state, title = _message_text(node, records[node.round], task)
        nodes.append([text, node.label, columns[name], rows[name], state, title[:MAX_LABEL]])
    position = {n: i for i, n in enumerate(names)}
    return {
        "columns": [f"round {r}" for r in rounds],
        "nodes": nodes,
        "edges": [[position[s], position[d], k] for s, d, k in edges],
    }


def _levels(ids: Sequence[str], preds: Mapping[str, Sequence[str]]) -> dict[str, int]:
    """Longest chain of predecessors of each node (a cycle, which gold never has, is cut)."""
    levels: dict[str, int] = {}
    visiting: set[str] = set()

    def level(node: str) -> int:
        if node in levels:
            return levels[node]
        visiting.add(node)
        below = [level(p) for p in preds.get(node, ()) if p not in visiting]
        visiting.discard(node)
        levels[node] = 1 + max(below, default=-1)
        return levels[node]

    for node in ids:
        level(node)
    return levels


def gold_done(task: Task, trajectory: Trajectory) -> list[int]:
    """Which gold nodes (indices into :func:`gold_view`'s ``nodes``) the episode executed:
    calls that match them exactly, the slots it asked, a proposal for ``confirm``. Kept
    apart from the gold view, which every episode of the task shares."""
    gold = gold_of(task)
    done: set[str] = set()
    for record in trajectory.rounds:
        for call in record.calls:
            if call.effect is not None and call.error_kind in (None, "tool"):
                arguments = call.arguments if isinstance(call.arguments, dict) else {}
                done.update(gold.exact(call.name, arguments))
        turn = record.user
        if turn is not None:
            done.update(f"{ASK}:{slot}" for slot in turn.asked)
            if turn.proposed is not None:
                done.update(c.id for c in task.truth.calls if c.tool == CONFIRM)
    return [i for i, call in enumerate(task.truth.calls) if call.id in done]


def gold_view(task: Task) -> dict[str, Any]:
    """The task's gold call graph in columns of its longest chains (module docstring)."""
    ids = [c.id for c in task.truth.calls]
    known = set(ids)
    edges = [(e.src, e.dst, str(e.kind)) for e in task.truth.edges if {e.src, e.dst} <= known]
    preds: dict[str, list[str]] = {}
    for src, dst, _ in edges:
        preds.setdefault(dst, []).append(src)
    levels = _levels(ids, preds)
    rows = _rows(levels, ids, preds)
    nodes = [
        [
            _text(call.tool, call.id),
            str(call.effect) if call.effect is not None else call.tool,
            levels[call.id],
            rows[call.id],
            "gold",
            f"{call.id}: {call.tool}"[:MAX_LABEL],
        ]
        for call in task.truth.calls
    ]
    position = {n: i for i, n in enumerate(ids)}
    return {
        "columns": [f"step {i + 1}" for i in range(max(levels.values(), default=-1) + 1)],
        "nodes": nodes,
        "edges": [[position[s], position[d], k] for s, d, k in edges],
    }
