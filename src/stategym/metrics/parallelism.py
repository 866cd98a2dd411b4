"""D3 parallelism: wait for a value only when the call needs it, and call nothing needless.

Formula (``docs/metrics.md``)::

    Q_par = kappa * (1 - nu) * epsilon * (1/2 + eta/2)

- coverage ``kappa = matched / |required|``: required nodes are the gold read and write calls;
  a call matches a node when its arguments are acceptable and it succeeds.
- violations ``nu = min(1, V / |value edges|)``: V counts, for every call, each value it
  depends on (PIPE or DECIDE edges into every node the call may stand for) that was not
  observed in an earlier round. A call whose guessed argument keeps it from matching still
  stands for every node of its tool, so a guess costs the same whether it was right or wrong.
- economy ``epsilon = 1 - extra / calls``: a call is extra when it covers no new gold node,
  unless it is an informed call (a well-formed call of a gold tool, no violation) excused by a
  change of the world: each scheduled event fired so far excuses one such call (a fare that
  jumped is held again).
- round efficiency ``eta = 1 - serialised / independent pairs``: a pair of required nodes
  with no path between them is serialised when the later one was already callable (every
  predecessor observed) in the round the earlier one was issued.

Correct parallel work scores 1, the same work done one call per round 1/2, and calls issued on
guessed values score less the more they guess.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from stategym.task import Task
from stategym.trajectory import Trajectory

from .events import Dimension, Event, Kind
from .gold import CONFIRM, Gold, gold_of
from .trace import CallView, Trace, trace


@dataclass(frozen=True, slots=True)
class Parallelism:
    """Parallelism counts of one trajectory.

    Attributes:
        quality: Q_par in [0, 1].
        coverage: kappa.
        violations: nu.
        economy: epsilon.
        efficiency: eta.
        matched: required nodes covered.
        early: values used before they were observed (V).
        extra: calls penalised as extra.
        serialised: independent pairs split across rounds.
        applicable: the task has required calls.
    """

    quality: float
    coverage: float
    violations: float
    economy: float
    efficiency: float
    matched: int
    early: int
    extra: int
    serialised: int
    applicable: bool


def parallelism_quality(
    coverage: float, violations: float, economy: float, efficiency: float
) -> float:
    """``kappa * (1 - nu) * epsilon * (1/2 + eta/2)``.

    Example: every required call made (kappa = 1), no guesses, no extra calls, but one call
    per round where all could have gone together (eta = 0):

    >>> parallelism_quality(coverage=1.0, violations=0.0, economy=1.0, efficiency=0.0)
    0.5
    """
    return coverage * (1.0 - violations) * economy * (0.5 + 0.5 * efficiency)


def parallelism(trajectory: Trajectory, task: Task) -> float:
    """Q_par of a finished trajectory, in [0, 1] (see the module docstring)."""
    gold = gold_of(task)
    scored, _ = parallelism_events(trace(trajectory.rounds, gold, True), gold, 1.0)
    return scored.quality


def _missing(
    tr: Trace, gold: Gold, candidates: tuple[str, ...], at: int, option: str | None
) -> list[str]:
    """Values every candidate node needs that were not observed before round ``at``."""
    if not candidates:
        return []
    needed = gold.needed(candidates)
    if not needed:
        return []
    return [node for node in sorted(needed) if not tr.observed_before(node, at, option)]


def _ready_round(tr: Trace, gold: Gold, node: str) -> int | None:
    """The first round ``node`` could be issued in: after every predecessor was observed."""
    earliest = 0
    for pred in gold.all_preds[node]:
        seen = tr.observed(pred)
        if seen is None:
            return None
        earliest = max(earliest, seen + 1)
    return earliest


def _serialised(tr: Trace, gold: Gold, call: CallView) -> list[str]:
    """Earlier independent nodes this call's node could have been issued beside: issued in a
    round before this call's and no earlier than this node was callable."""
    node = call.first
    if node is None or node not in gold.independent:
        return []
    ready = _ready_round(tr, gold, node)
    if ready is None or ready >= call.round:
        return []
    split = []
    for other in gold.independent[node]:
        matches = tr.seen.get(other)
        if matches and ready <= matches[0][0] < call.round:
            split.append(other)
    return sorted(split)


def _call_events(tr: Trace, gold: Gold) -> list[tuple[int, Kind, str]]:
    """``(round, kind, subject)`` of every parallelism event, in order."""
    out: list[tuple[int, Kind, str]] = []
    excused = 0
    for call in tr.calls:
        at = call.round
        missing = _missing(tr, gold, call.candidates, at, call.option)
        out += [(at, Kind.CALL_EARLY, f"{node}->{call.name}") for node in missing]
        if call.first is not None and call.first in gold.independent:
            out.append((at, Kind.CALL_MATCHED, call.first))
            out += [
                (at, Kind.CALL_SERIALISED, f"{other}|{call.first}")
                for other in _serialised(tr, gold, call)
            ]
        elif call.first is None:
            informed = bool(call.candidates) and not missing and not call.malformed
            if informed and excused < tr.changes_before[at]:
                excused += 1
            else:
                out.append((at, Kind.CALL_EXTRA, call.name))
    confirm = gold.by_tool.get(CONFIRM, ())
    for say in tr.says:
        if say.proposed is not None:
            missing = _missing(tr, gold, confirm, say.round, say.proposed)
            out += [(say.round, Kind.CALL_EARLY, f"{node}->{CONFIRM}") for node in missing]
    return out


def parallelism_events(tr: Trace, gold: Gold, scale: float) -> tuple[Parallelism, list[Event]]:
    """Score parallelism and emit its events (rewards multiplied by ``scale``)."""
    required = len(gold.required)
    rewards = {
        Kind.CALL_MATCHED: scale / max(1, required),
        Kind.CALL_EXTRA: -scale / max(1, required),
        Kind.CALL_EARLY: -scale / max(1, gold.value_edges),
        Kind.CALL_SERIALISED: -0.5 * scale / max(1, gold.pairs),
    }
    found = _call_events(tr, gold)
    events = [
        Event(
            at,
            Dimension.PARALLELISM,
            kind,
            1.0 if kind is Kind.CALL_MATCHED else -1.0,
            rewards[kind],
            subject,
        )
        for at, kind, subject in found
    ]
    counts = {kind: 0 for kind in rewards}
    for _, kind, _ in found:
        counts[kind] += 1
    matched, early = counts[Kind.CALL_MATCHED], counts[Kind.CALL_EARLY]
    extra, serialised = counts[Kind.CALL_EXTRA], counts[Kind.CALL_SERIALISED]
    coverage = matched / required if required else 1.0
    violations = min(1.0, early / gold.value_edges) if gold.value_edges else 0.0
    economy = 1.0 - extra / len(tr.calls) if tr.calls else 1.0
    efficiency = 1.0 - serialised / gold.pairs if gold.pairs else 1.0
    quality = parallelism_quality(coverage, violations, economy, efficiency)
    scored = Parallelism(
        quality,
        coverage,
        violations,
        economy,
        efficiency,
        matched,
        early,
        extra,
        serialised,
        bool(required),
    )
    return scored, events


__all__: Sequence[str] = ("Parallelism", "parallelism", "parallelism_events", "parallelism_quality")
