"""One pass over a trajectory's rounds, read against the gold call graph.

:func:`trace` works out, once, what every dimension asks of the log: which gold node each
call stands for, when each gold value was first observed, when each slot was revealed, which
proposals the user accepted, when the world and the user changed, and where the episode's
final decision was taken. It reads only the round records and the task's gold tables.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from stategym.protocol import FINISH
from stategym.tools import Effect
from stategym.trajectory import RoundKind, RoundRecord

from .gold import ASK, CONFIRM, Gold


@dataclass(frozen=True, slots=True)
class CallView:
    """One tool call as the metrics see it.

    Attributes:
        round: the round it was issued in.
        name: the tool name as written.
        ok: it ran without a tool or format error.
        malformed: it never ran (a format error: bad JSON, unknown tool, wrong arguments).
        effect: the tool's declared effect (``None`` for unknown tools and ``finish``).
        candidates: the gold nodes it may stand for: those it matches exactly, else every
            node of the same tool (a call with a guessed argument still stands for them).
        first: the gold node it covers for the first time (a successful exact match).
        option: the option its result names (commit and write tools name one).
        arguments: its decoded arguments (``{}`` if they were not a JSON object).
        damage: what the call destroyed, as its result reported it under ``"damage"`` (the
            convention for commits with collateral consequences, such as data lost).
    """

    round: int
    name: str
    ok: bool
    malformed: bool
    effect: Effect | None
    candidates: tuple[str, ...]
    first: str | None
    option: str | None
    arguments: Mapping[str, Any]
    damage: str | None = None


@dataclass(frozen=True, slots=True)
class SayView:
    """One message to the user, as the user read it."""

    round: int
    asked: tuple[str, ...]
    priority_asked: bool
    proposed: str | None
    accepted: bool | None
    understood: bool


@dataclass(frozen=True, slots=True)
class Trace:
    """What the rounds show, indexed for the metrics.

    Attributes:
        calls: every tool call except ``finish``, in order.
        says: every message to the user, in order.
        seen: for each gold tool node, ``(round, option)`` of every successful exact match.
        stood: for each gold tool node, ``(round, option)`` of every successful call that
            may stand for it (a hold of another option stands for the gold hold).
        revealed: for each slot, the first round whose observation showed its value.
        accepted: ``(round, option)`` of every proposal the user accepted.
        updates: rounds whose observation told the agent the user changed a slot (a
            change of mind counts once the agent could know it, never earlier).
        changes_before: ``changes_before[t]``: scheduled events fired before round ``t``.
        end: the round of the final decision (``finish``, or the last round), once done.
        done: the episode is over.
        first: for each gold node, the round at whose end its value was first observed: a
            tool node's first exact match, a must-ask node's slot revealed, a confirmation
            node's first accepted proposal.
    """

    calls: tuple[CallView, ...]
    says: tuple[SayView, ...]
    seen: Mapping[str, tuple[tuple[int, str | None], ...]]
    stood: Mapping[str, tuple[tuple[int, str | None], ...]]
    revealed: Mapping[str, int]
    accepted: tuple[tuple[int, str], ...]
    updates: tuple[int, ...]
    changes_before: tuple[int, ...]
    end: int | None
    done: bool
    first: Mapping[str, int]

    def observed(self, node: str) -> int | None:
        """The round at whose end a gold node's value was first observed (``None``: never)."""
        return self.first.get(node)

    def observed_before(self, node: str, at: int, option: str | None = None) -> bool:
        """A gold node's value was observed before round ``at``; with ``option``, also a
        value the agent observed for that very option (its own hold of the option it then
        proposes or pays) counts."""
        first = self.observed(node)
        if first is not None and first < at:
            return True
        return option is not None and any(
            r < at and o == option for r, o in self.stood.get(node, ())
        )


def trace(rounds: Sequence[RoundRecord], gold: Gold, done: bool) -> Trace:
    """Read ``rounds`` (all of an episode, or the ones played so far) against ``gold``."""
    calls: list[CallView] = []
    says: list[SayView] = []
    seen: dict[str, list[tuple[int, str | None]]] = {}
    stood: dict[str, list[tuple[int, str | None]]] = {}
    revealed: dict[str, int] = {}
    accepted: list[tuple[int, str]] = []
    updates: list[int] = []
    changes_before = [0]
    end: int | None = None
    for record in rounds:
        index = record.index
        if record.kind is RoundKind.SAY and record.user is not None:
            turn = record.user
            says.append(
                SayView(
                    index,
                    turn.asked,
                    turn.priority_asked,
                    turn.proposed,
                    turn.accepted,
                    turn.understood,
                )
            )
            for name, _ in turn.values:
                revealed.setdefault(name, index)
            if turn.accepted and turn.proposed is not None:
                accepted.append((index, turn.proposed))
            if len(turn.values) > len(turn.asked):  # the reply announced a change of mind
                updates.append(index)
        for name, _ in record.notice_values:
            revealed.setdefault(name, index)
        if record.notice_values:
            updates.append(index)
        for call in record.calls:
            if call.name == FINISH:
                if call.error is None:
                    end = index if end is None else end
                continue
            view = _view(index, call, gold, seen)
            calls.append(view)
            if view.ok:
                for node in view.candidates:
                    stood.setdefault(node, []).append((index, view.option))
        changes_before.append(changes_before[-1] + len(record.events))
    if done and end is None and rounds:
        end = rounds[-1].index
    return Trace(
        tuple(calls),
        tuple(says),
        {k: tuple(v) for k, v in seen.items()},
        {k: tuple(v) for k, v in stood.items()},
        revealed,
        tuple(accepted),
        tuple(updates),
        tuple(changes_before),
        end if done else None,
        done,
        _first_observed(gold, seen, revealed, accepted),
    )


def _first_observed(
    gold: Gold,
    seen: dict[str, list[tuple[int, str | None]]],
    revealed: dict[str, int],
    accepted: list[tuple[int, str]],
) -> dict[str, int]:
    """For each gold node, the round at whose end its value was first observed."""
    first: dict[str, int] = {}
    for node_id, gold_node in gold.nodes.items():
        if gold_node.tool == ASK:
            at = revealed.get(node_id.removeprefix(f"{ASK}:"))
        elif gold_node.tool == CONFIRM:
            at = accepted[0][0] if accepted else None
        else:
            at = seen[node_id][0][0] if node_id in seen else None
        if at is not None:
            first[node_id] = at
    return first


def _view(
    index: int, call: Any, gold: Gold, seen: dict[str, list[tuple[int, str | None]]]
) -> CallView:
    arguments = call.arguments if isinstance(call.arguments, dict) else {}
    same_tool = gold.by_tool.get(call.name, ())
    exact = gold.exact(call.name, arguments) if isinstance(call.arguments, dict) else ()
    ok = call.error is None
    content = call.content
    option = content.get("option") if ok and isinstance(content, dict) else None
    option = option if isinstance(option, str) else None
    damage = content.get("damage") if ok and isinstance(content, dict) else None
    first: str | None = None
    if ok:
        first = next((node for node in exact if node not in seen), None)
        for node in exact:
            # a call covers one new node; it re-observes the nodes it covered before
            if node == first or node in seen:
                seen.setdefault(node, []).append((index, option))
    malformed = call.error is not None and call.error_kind != "tool"
    return CallView(
        index,
        call.name,
        ok,
        malformed,
        call.effect,
        exact or same_tool,
        first,
        option,
        arguments,
        damage if isinstance(damage, str) else None,
    )
