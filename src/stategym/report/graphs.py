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
from stategym.kernel.trajectory import Trajectory
from stategym.metrics.gold import gold_of
from stategym.topology.executed import NEXT, executed_topology
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


def _where(name: str) -> tuple[int, str | None, str]:
    """``(round, call id or None, tool or label)`` of an executed node's name: the executed
    graph names a call ``r<round>:<call id>:<tool>`` and a message ``r<round>:<label>``."""
    head, _, rest = name.partition(":")
    if ":" in rest:
        call_id, _, tool = rest.rpartition(":")
        return int(head[1:]), call_id, tool
    return int(head[1:]), None, rest


def _text(tool: str, gold_id: str | None) -> str:
    """A node's drawn text: the tool, and what a gold id says beyond it (``lookup_person
    P6468`` for ``tz:P6468``, ``ask budget`` for ``ask:budget``)."""
    if gold_id is None or ":" not in gold_id:
        return tool
    return f"{tool} {gold_id.partition(':')[2]}"


def executed_view(trajectory: Trajectory, task: Task) -> dict[str, Any]:
    """The executed call graph of ``trajectory`` as columns of rounds (module docstring)."""
    graph = executed_topology(trajectory)
    gold = gold_of(task)
    calls = {(r.index, c.id): c for r in trajectory.rounds for c in r.calls}
    asked = {r.index: r.user.asked for r in trajectory.rounds if r.user is not None}
    gold_ids = {c.id for c in task.truth.calls}
    confirms = any(c.tool == CONFIRM for c in task.truth.calls)
    names = [graph.names[n] for n in graph.graph.nodes]
    labels = dict(zip(names, (label for _, label in graph.graph.nodes(data="label")), strict=True))
    rounds = sorted({_where(n)[0] for n in names})
    columns = {n: rounds.index(_where(n)[0]) for n in names}
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
        index, call_id, what = _where(name)
        call = calls.get((index, call_id)) if call_id is not None else None
        if call is not None:
            arguments = call.arguments if isinstance(call.arguments, dict) else {}
            matched = gold.exact(call.name, arguments)
            state = "gold" if matched else "extra"
            text = _text(what, matched[0] if matched else None)
            title = f"round {index}, {call_id}: {what}" + (
                f" = gold {', '.join(matched)}" if matched else " (no gold node)"
            )
        else:
            # a question is in gold if it asked a slot gold asks; a proposal, if gold has one
            slots = ",".join(asked.get(index, ())) if what == ASK else ""
            wanted = any(f"{ASK}:{s}" in gold_ids for s in asked.get(index, ()))
            known = (what == ASK and wanted) or (what == CONFIRM and confirms)
            state = "gold" if known else "extra"
            text = f"{what} {slots}" if slots else what
            title = f"round {index}: {text}"
        nodes.append([text, labels[name], columns[name], rows[name], state, title[:MAX_LABEL]])
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
