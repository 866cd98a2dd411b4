"""D3 parallelism: wait for a value only when the call needs it, and call nothing needless.

Formula (``docs/metrics.md``)::

    Q_par = kappa * (1 - nu) * epsilon * (1/2 + eta/2)

- coverage ``kappa = matched / |required|``: required nodes are the gold read and write calls;
  a call matches a node when its arguments are acceptable and it succeeds.
- violations ``nu = min(1, V / L)``: V counts the steps of the value path that early calls
  (commits left out: their unobserved preconditions, and an argument guessed from a result of
  their own round, are risk's UNVERIFIED) and proposals skipped. A call
  is early when none of the nodes it may stand for had every value it needs (PIPE or DECIDE
  edges) observed in an earlier round, and it skipped the unobserved nodes on the longest
  path of value edges ending at the nearest of them; L is the depth of the value graph
  (:attr:`Gold.depth`), the rounds a chain of lookups must wait. A guess one step early costs
  1, a proposal before any lookup the whole path. A call whose guessed argument keeps it
  from matching still stands for every node of its tool, so a guess costs the same whether
  it was right or wrong.
- economy ``epsilon = 1 - (extra + wasted) / (calls + wasted)``: a call is extra when it
  covers no new gold node, unless it is an informed re-read (a well-formed call of a gold
  tool that declares a read, no violation) of what a fired event changed, made while the
  agent's last look at it predates the change, and whose result shows the change against
  that look (each event excuses one: the day whose fare jumped is searched again; a copy of
  the first look after the change, a read whose result only names the changed entity as it
  did before, and a write or a commit naming the change, are never excused); a round is
  wasted when it has no usable action, and an episode never finished wastes, at its end,
  every round of the task's budget it did not play (at least one).
- round efficiency ``eta = 1 - serialised / independent pairs``: a pair of required nodes
  with no path between them is serialised when the later one was already callable (every
  predecessor observed) in the round the earlier one was issued.

Correct parallel work scores 1, the same work done one call per round 1/2, and calls issued on
guessed values score less the more they guess.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from stategym.kernel.task import Task
from stategym.kernel.tools import Effect
from stategym.kernel.trajectory import Outcome, Trajectory

from .declaration import DimensionSpec, EventCounts
from .events import Dimension, Event, Kind
from .gold import CONFIRM, Gold
from .rereads import known_by, rereads, stale
from .trace import CallView, SayView, Trace

DIM = Dimension.PARALLELISM

# Read once: on CPython 3.11 an Enum member read as a class attribute goes through the
# metaclass's attribute hook (EnumType defines __getattr__), several times the cost of a
# module global, and these are read for every call of every round.
_MATCHED, _EARLY, _EXTRA = Kind.CALL_MATCHED, Kind.CALL_EARLY, Kind.CALL_EXTRA
_WASTED, _SERIALISED = Kind.ROUND_WASTED, Kind.CALL_SERIALISED
_COMMIT, _READ = Effect.COMMIT, Effect.READ


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
        early: V, the steps of the value path skipped by calls (and proposals) issued before
            a value they need was observed (one per call that guessed one step early).
        extra: calls penalised as extra.
        serialised: independent pairs split across rounds.
        wasted: rounds with no usable action, and the end of an episode never finished.
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
    wasted: int
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
    """The values the call could not have had before round ``at``: empty when some node it
    may stand for had every value it needs observed, else those of its first such node.

    A call with a guessed argument matches no node and stands for every node of its tool;
    it was informed only if one of them was ready, so a guess is early whether or not it
    happens to hit (a spray of guessed calendars before any person was looked up).
    """
    first: list[str] | None = None
    for node in candidates:
        missing = [
            pred for pred in gold.value_order[node] if not tr.observed_before(pred, at, option)
        ]
        if not missing:
            return []
        if first is None:
            first = missing
    return first or []


def _skipped(
    tr: Trace, gold: Gold, candidates: tuple[str, ...], at: int, option: str | None
) -> int:
    """The steps of the value path an early call (or proposal) skipped: for the nearest of
    the nodes it may stand for, the unobserved nodes on the longest path of value edges
    ending at it (a guess one step early skips 1; a proposal before any lookup, the whole
    path). At least 1 for a call :func:`_missing` found early."""
    memo: dict[str, int] = {}
    return max(1, min(_unobserved_depth(tr, gold, node, at, option, memo) for node in candidates))


def _unobserved_depth(
    tr: Trace, gold: Gold, node: str, at: int, option: str | None, memo: dict[str, int]
) -> int:
    """The most nodes unobserved before round ``at`` on one path of value edges ending at
    ``node`` (``node`` itself not counted): 0 when every value it needs was observed."""
    found = memo.get(node)
    if found is None:
        memo[node] = 0  # a cycle (none expected) ends the path
        found = 0
        for pred in gold.value_order[node]:
            if not tr.observed_before(pred, at, option):
                found = max(found, 1 + _unobserved_depth(tr, gold, pred, at, option, memo))
        memo[node] = found
    return found


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
        self.budget = task.max_rounds
        """The task's round budget: an episode never finished has spent all of it."""
        self.rewards = {
            _MATCHED: scale / max(1, len(gold.required)),
            _EXTRA: -scale / max(1, len(gold.required)),
            _WASTED: -scale / max(1, len(gold.required)),
            _EARLY: -scale / max(1, gold.depth),
            _SERIALISED: -0.5 * scale / max(1, gold.pairs),
        }
        self.counts = {kind: 0 for kind in self.rewards}
        self.excused: set[int] = set()
        """Fired events (their order of firing) that already excused a re-read."""
        self.events: list[Event] = []

    def _event(self, at: int, kind: Kind, subject: str, call: int | None, weight: int = 1) -> Event:
        """One event; ``weight`` counts it that many times (the steps an early call skipped)."""
        self.counts[kind] += weight
        value = 1.0 if kind is _MATCHED else -float(weight)
        return Event(at, DIM, kind, value, weight * self.rewards[kind], subject, call=call)

    def add(self, tr: Trace, calls: Sequence[CallView], say: SayView | None) -> list[Event]:
        gold, new = self.gold, []
        if tr.wasted and tr.wasted[-1] == tr.last:
            new.append(self._event(tr.last, _WASTED, "invalid round", None))
        for call in calls:
            at, pos = call.round, call.position
            # a commit's unobserved preconditions and guessed arguments are risk's
            # (UNVERIFIED), counted once there
            commit = call.effect is _COMMIT
            missing = [] if commit else _missing(tr, gold, call.candidates, at, call.option)
            if missing:
                subject = f"{','.join(missing)}->{call.name}"
                steps = _skipped(tr, gold, call.candidates, at, call.option)
                new.append(self._event(at, _EARLY, subject, pos, steps))
            if call.first is not None and call.first in gold.independent:
                new.append(self._event(at, _MATCHED, call.first, pos))
                new += [
                    self._event(at, _SERIALISED, f"{other}|{call.first}", pos)
                    for other in _serialised(tr, gold, call)
                ]
            elif call.first is None and not self._excuse(tr, call, missing):
                new.append(self._event(at, _EXTRA, call.name, pos))
        if say is not None and say.proposed is not None:
            confirm = gold.by_tool.get(CONFIRM, ())
            missing = _missing(tr, gold, confirm, say.round, say.proposed)
            if missing:
                subject = f"{','.join(missing)}->{CONFIRM}"
                steps = _skipped(tr, gold, confirm, say.round, say.proposed)
                new.append(self._event(say.round, _EARLY, subject, None, steps))
        self.events += new
        return new

    def _excuse(self, tr: Trace, call: CallView, missing: list[str]) -> bool:
        """An informed re-read (a well-formed call of a gold tool that declares a read, no
        violation) is excused by one change of the world fired before it that it re-reads,
        each change once, and only while the agent's last look at what changed is out of date
        (:func:`stale`).

        Only a read re-reads: a write or a commit naming the changed entity changes the world
        again (a stray hold of the fare that just jumped, a detach of the volume just found
        in use), which no change of the world asked for.
        """
        if call.effect is not _READ or not call.candidates or missing or call.malformed:
            return False
        for order, (fired_at, event) in enumerate(tr.fired):
            if fired_at >= call.round:
                break
            if order in self.excused or not rereads(tr, self.gold, call, event):
                continue
            known = known_by(tr, self.gold, fired_at, event)
            if known < call.round and stale(tr, self.gold, call, known, event):
                self.excused.add(order)
                return True
        return False

    def close(self, tr: Trace, outcome: Outcome | None) -> tuple[Parallelism, list[Event]]:
        gold, counts = self.gold, self.counts
        events = list(self.events)
        wasted = counts[Kind.ROUND_WASTED]
        if tr.done and tr.end is not None and not tr.finished:
            left = _rounds_left(self.budget, tr)
            reward = left * self.rewards[Kind.ROUND_WASTED]
            events.append(Event(tr.end, DIM, _WASTED, -float(left), reward, "no finish", True))
            wasted += left
        required = len(gold.required)
        matched, early = counts[Kind.CALL_MATCHED], counts[Kind.CALL_EARLY]
        extra, serialised = counts[Kind.CALL_EXTRA], counts[Kind.CALL_SERIALISED]
        parts = _parts(gold, matched, early, extra + wasted, serialised, len(tr.calls) + wasted)
        scored = Parallelism(
            parallelism_quality(*parts),
            *parts,
            matched,
            early,
            extra,
            serialised,
            wasted,
            bool(required),
        )
        return scored, events


def _rounds_left(budget: int, tr: Trace) -> int:
    """The rounds an episode that ended without the agent's ``finish`` counts as wasted at
    its end: every round of the budget it did not play, at least one.

    *Why*: the agent never handed back its decision, so the episode spent its whole round
    budget, as one padded with empty rounds until truncation does; charged as one wasted
    round, an episode stopped from outside right before the expert's ``finish`` scored
    within 0.006-0.047 of the expert (``env.stopped_trajectory()``, audit 7b F4).
    """
    return max(1, budget - (tr.last + 1))


def _parts(
    gold: Gold, matched: int, early: int, extra: int, serialised: int, calls: int
) -> tuple[float, float, float, float]:
    """``(kappa, nu, epsilon, eta)`` from the counts (``extra`` and ``calls`` with the wasted
    rounds in them)."""
    required = len(gold.required)
    coverage = matched / required if required else 1.0
    violations = min(1.0, early / gold.depth) if gold.depth else 0.0
    economy = 1.0 - extra / calls if calls else 1.0
    efficiency = 1.0 - serialised / gold.pairs if gold.pairs else 1.0
    return coverage, violations, economy, efficiency


def running_parallelism(counts: EventCounts, gold: Gold) -> tuple[float, bool]:
    """Q_par from the events so far: coverage grows with each required call matched."""
    count = counts.count
    wasted = round(-counts.total.get(_WASTED, 0.0))  # the terminal one weighs the rounds left
    parts = _parts(
        gold,
        count.get(_MATCHED, 0),
        round(-counts.total.get(_EARLY, 0.0)),  # V: each early event weighs its skipped steps
        count.get(_EXTRA, 0) + wasted,
        count.get(_SERIALISED, 0),
        counts.calls + wasted,
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
