"""What the trajectory viewer is given: plain JSON per episode, from its log and its task.

Each episode has a short **index entry** (what the filters and the list read) and a
**detail** object (every round, read only when the episode is opened), which names its
task's **task view** (request, slots, constraints, gold graph), one per task however many
agents played it. All three
are plain data built from the trajectory, its scorecard and the regenerated task; nothing
here is HTML, and every string from an agent or a model stays a JSON string for the page's
script to put in the document as text (``textContent``), never as markup.

Long strings (tool results, model text) are cut to :data:`MAX_TEXT` characters so that a
report of thousands of episodes stays a file a browser opens.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import fields
from typing import Any

import orjson

from stategym.kernel.knobs import Knobs
from stategym.kernel.provenance import Origin
from stategym.kernel.task import Event as TaskEvent
from stategym.kernel.task import Task
from stategym.kernel.trajectory import CallRecord, RoundRecord, Trajectory
from stategym.metrics.credit import Credit
from stategym.metrics.events import Event, Kind
from stategym.metrics.score import Scorecard

from .graphs import executed_view, gold_done, gold_view

MAX_TEXT = 2000
"""Characters kept of one tool result, model text or message."""
RISK_CLASSES: tuple[tuple[Kind, str], ...] = (
    (Kind.COMMIT_HARMFUL, "harmful"),
    (Kind.ANSWER_WRONG, "wrong"),
    (Kind.COMMIT_UNVERIFIED, "unverified"),
    (Kind.COMMIT_MISSED, "missed"),
    (Kind.COMMIT_SAFE, "safe"),
    (Kind.ABSTAIN_CORRECT, "abstained"),
)
"""A commit event's class, worst first: an episode's risk class is its worst commit's (a task
judged on its answer classifies the answer the same way, "wrong" when it names no best option)."""
CLASS_OF: Mapping[Kind, str] = dict(RISK_CLASSES)


def cut(text: str, limit: int = MAX_TEXT) -> str:
    """``text``, cut to ``limit`` characters with a note of how many were dropped."""
    return text if len(text) <= limit else f"{text[:limit]}… [{len(text) - limit} more]"


def as_text(value: Any) -> str:
    """A JSON value as compact JSON text (strings as themselves)."""
    if isinstance(value, str):
        return value
    return orjson.dumps(value, option=orjson.OPT_NON_STR_KEYS, default=str).decode()


def knobs_label(knobs: Knobs) -> str:
    """``all on``, or the knobs switched off (``off: dynamics,hidden_info``)."""
    off = [f.name for f in fields(knobs) if not getattr(knobs, f.name)]
    return f"off: {','.join(off)}" if off else "all on"


def risk_class(card: Scorecard) -> str:
    """The worst commit class of the episode, or ``none`` with no commit and no decision."""
    kinds = {e.kind for e in card.events}
    return next((name for kind, name in RISK_CLASSES if kind in kinds), "none")


def index_entry(number: int, trajectory: Trajectory, card: Scorecard) -> dict[str, Any]:
    """The episode's line in the viewer's list (what every filter reads)."""
    return {
        "n": number,
        "domain": trajectory.domain,
        "agent": trajectory.agent,
        "seed": trajectory.seed,
        "sample": trajectory.run.sample,
        "knobs": knobs_label(trajectory.knobs),
        "goal": card.outcome.goal_reached,
        "R": round(card.composite, 4),
        "risk": risk_class(card),
        "rounds": len(trajectory.rounds),
        "lost": card.outcome.lost,
        "dims": {str(d): round(q, 4) for d, q in card.qualities().items()},
    }


def _origin(origin: Origin | None) -> str:
    if origin is None:
        return "ungrounded"
    if origin.round < 0:
        return str(origin.source)
    return f"{origin.source} (round {origin.round}{', ' + origin.ref if origin.ref else ''})"


def _call(call: CallRecord) -> dict[str, Any]:
    if isinstance(call.arguments, dict):
        arguments = [
            [name, cut(as_text(value), 200), _origin(call.sources.get(name))]
            for name, value in call.arguments.items()
        ]
    else:  # the raw text of arguments that were not a JSON object
        arguments = [["(raw)", cut(call.arguments, 200), "ungrounded"]]
    return {
        "id": call.id,
        "name": call.name,
        "effect": str(call.effect) if call.effect is not None else None,
        "args": arguments,
        "result": None if call.content is None else cut(as_text(call.content)),
        "error": call.error,
    }


def _event(event: Event) -> list[Any]:
    return [str(event.dimension), str(event.kind), event.subject, round(event.reward, 4)]


def _fired(event: TaskEvent) -> str:
    """A scheduled event as ``price_change flights.TK204.price = 620``."""
    where = ".".join(part for part in (event.table, event.key, event.field) if part)
    target = where or event.slot
    return f"{event.kind} {target} = {as_text(event.value)}" if target else str(event.kind)


def _round(
    record: RoundRecord, task: Task, events: Sequence[Event], credit: Credit
) -> dict[str, Any]:
    fired = [task.events[i] for i in record.events if 0 <= i < len(task.events)]
    paid = next((r for r in credit.rounds if r.round == record.index), None)
    return {
        "i": record.index,
        "clock": record.clock,
        "latency": record.latency,
        "kind": str(record.kind),
        "calls": [_call(c) for c in record.calls],
        "say": None if record.say is None else cut(record.say),
        "reply": None if record.user is None else cut(record.user.reply),
        "asked": [] if record.user is None else list(record.user.asked),
        "notice": record.notice,
        "fired": [_fired(e) for e in fired],
        "charges": [[c.amount, c.memo, c.source, c.target] for c in record.charges],
        "format_errors": list(record.format_errors),
        "error": record.error,
        "raw": None if record.raw is None else cut(as_text(record.raw), 500),
        "model": None
        if record.model is None or record.model.text is None
        else cut(record.model.text),
        "events": [_event(e) for e in events],
        "commits": [[CLASS_OF[e.kind], e.subject] for e in events if e.kind in CLASS_OF],
        "reward": None if paid is None else round(paid.reward, 4),
        "running": None if paid is None else round(paid.running, 4),
    }


def task_view(task: Task) -> dict[str, Any]:
    """What the viewer shows of a task (one block however many episodes played it)."""
    truth = task.truth
    return {
        "request": task.request.text,
        "slots": [[s.name, str(s.kind), as_text(s.value)] for s in task.slots],
        "constraints": [[c.id, str(c.kind), c.text] for c in task.constraints],
        "priority": [list(pair) for pair in task.priority],
        "priorities_hidden": task.priorities_hidden,
        "best": list(truth.best),
        "decisions": [
            {
                "id": d.id,
                "tool": d.tool,
                "should_commit": d.should_commit,
                "option": d.option,
                "preconditions": [[p.fact, p.revealed_by] for p in d.preconditions],
            }
            for d in truth.decisions
        ],
        "gold": gold_view(task),
    }


def detail(
    trajectory: Trajectory, task: Task, card: Scorecard, credit: Credit, task_block: str
) -> dict[str, Any]:
    """Everything the viewer shows of one opened episode; its task is the block
    ``task_block`` (:func:`task_view`), shared by every episode of that task."""
    by_round: dict[int, list[Event]] = {}
    for event in card.events:
        by_round.setdefault(event.round, []).append(event)
    last = trajectory.rounds[-1].index if trajectory.rounds else -1
    terminal = [e for e in card.events if e.round > last or e.round < 0]
    outcome = trajectory.outcome
    return {
        "task": task_block,
        "rounds": [_round(r, task, by_round.get(r.index, []), credit) for r in trajectory.rounds],
        "terminal": [_event(e) for e in terminal],
        "outcome": None
        if outcome is None
        else {
            "goal": outcome.goal_reached,
            "committed": list(outcome.committed),
            "answer": outcome.answer,
            "spent": outcome.spent,
            "refunded": outcome.refunded,
            "lost": outcome.lost,
        },
        "ended": "truncated"
        if trajectory.truncated
        else "terminated"
        if trajectory.terminated
        else "unfinished",
        "executed": executed_view(trajectory, task),
        "gold_done": gold_done(task, trajectory),
    }
