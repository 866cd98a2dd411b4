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
from stategym.trajectory import Outcome, Trajectory

from .declaration import DimensionSpec, EventCounts
from .events import Dimension, Event, Kind
from .gold import CONFIRM, Gold
from .trace import CallView, SayView, Trace

DIM = Dimension.PARALLELISM


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
    from .score import score

    return score(trajectory, task).parallelism.quality


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


class ParallelismScorer:
    """Parallelism over the rounds of one episode (see :class:`DimensionScorer`)."""

    def __init__(self, task: Task, gold: Gold, scale: float) -> None:
        self.gold = gold
        self.rewards = {
            Kind.CALL_MATCHED: scale / max(1, len(gold.required)),
            Kind.CALL_EXTRA: -scale / max(1, len(gold.required)),
            Kind.CALL_EARLY: -scale / max(1, gold.value_edges),
            Kind.CALL_SERIALISED: -0.5 * scale / max(1, gold.pairs),
        }
        self.counts = {kind: 0 for kind in self.rewards}
        self.excused = 0
        self.events: list[Event] = []

    def _event(self, at: int, kind: Kind, subject: str, call: int | None) -> Event:
        self.counts[kind] += 1
        value = 1.0 if kind is Kind.CALL_MATCHED else -1.0
        return Event(at, DIM, kind, value, self.rewards[kind], subject, call=call)

    def add(self, tr: Trace, calls: Sequence[CallView], say: SayView | None) -> list[Event]:
        gold, new = self.gold, []
        for call in calls:
            at, pos = call.round, call.position
            missing = _missing(tr, gold, call.candidates, at, call.option)
            new += [self._event(at, Kind.CALL_EARLY, f"{n}->{call.name}", pos) for n in missing]
            if call.first is not None and call.first in gold.independent:
                new.append(self._event(at, Kind.CALL_MATCHED, call.first, pos))
                new += [
                    self._event(at, Kind.CALL_SERIALISED, f"{other}|{call.first}", pos)
                    for other in _serialised(tr, gold, call)
                ]
            elif call.first is None:
                informed = bool(call.candidates) and not missing and not call.malformed
                if informed and self.excused < tr.changes_before[at]:
                    self.excused += 1  # a change in the world excuses one informed re-call
                else:
                    new.append(self._event(at, Kind.CALL_EXTRA, call.name, pos))
        if say is not None and say.proposed is not None:
            confirm = gold.by_tool.get(CONFIRM, ())
            missing = _missing(tr, gold, confirm, say.round, say.proposed)
            new += [
                self._event(say.round, Kind.CALL_EARLY, f"{n}->{CONFIRM}", None) for n in missing
            ]
        self.events += new
        return new

    def close(self, tr: Trace, outcome: Outcome | None) -> tuple[Parallelism, list[Event]]:
        gold, counts = self.gold, self.counts
        required = len(gold.required)
        matched, early = counts[Kind.CALL_MATCHED], counts[Kind.CALL_EARLY]
        extra, serialised = counts[Kind.CALL_EXTRA], counts[Kind.CALL_SERIALISED]
        parts = _parts(gold, matched, early, extra, serialised, len(tr.calls))
        scored = Parallelism(
            parallelism_quality(*parts), *parts, matched, early, extra, serialised, bool(required)
        )
        return scored, list(self.events)


def _parts(
    gold: Gold, matched: int, early: int, extra: int, serialised: int, calls: int
) -> tuple[float, float, float, float]:
    """``(kappa, nu, epsilon, eta)`` from the counts."""
    required = len(gold.required)
    coverage = matched / required if required else 1.0
    violations = min(1.0, early / gold.value_edges) if gold.value_edges else 0.0
    economy = 1.0 - extra / calls if calls else 1.0
    efficiency = 1.0 - serialised / gold.pairs if gold.pairs else 1.0
    return coverage, violations, economy, efficiency


def running_parallelism(counts: EventCounts, gold: Gold) -> tuple[float, bool]:
    """Q_par from the events so far: coverage grows with each required call matched."""
    parts = _parts(
        gold,
        counts.n(Kind.CALL_MATCHED),
        counts.n(Kind.CALL_EARLY),
        counts.n(Kind.CALL_EXTRA),
        counts.n(Kind.CALL_SERIALISED),
        counts.calls,
    )
    return parallelism_quality(*parts), bool(gold.required)


def _applies(task: Task, gold: Gold) -> bool:
    return bool(gold.required)


DECLARATION = DimensionSpec(DIM, "par", _applies, ParallelismScorer, running_parallelism)
"""Parallelism, declared once (see :mod:`stategym.metrics.declaration`)."""

__all__: Sequence[str] = (
    "DECLARATION",
    "Parallelism",
    "ParallelismScorer",
    "parallelism",
    "parallelism_quality",
    "running_parallelism",
)
