"""D2 priority: the final choice respects the priority order of the constraints.

Formula (``docs/metrics.md``), with priority weights ``w_i = 1 + sum of w_j below i`` (each
constraint outweighs everything below it combined) and ``S(x) = sum of w_i over the
constraints option x satisfies``::

    Q_prio = clip((S(x) - S0) / (S* - S0), 0, 1)      if S* > S0
    Q_prio = 1 if S(x) >= S* else 0                   if S* = S0 (committing nothing is best)

S* is the best feasible score, S0 the score of committing nothing, and x the choice: the
option the world ends committed to (the worst of them when there are several; nothing when
there are none), or the answer of a task judged on its answer (stateless or read-only). An
avoidable *inversion* is a pair i > j in the priority order with j satisfied and i violated,
where some option satisfies i and every constraint above i that the choice satisfies.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from stategym.kernel.task import Task
from stategym.kernel.tools import Effect
from stategym.kernel.trajectory import Outcome, Trajectory
from stategym.kernel.understanding.answers import match_answer, normalise_answer

from .declaration import DimensionSpec, EventCounts
from .events import Dimension, Event, Kind
from .gold import Gold
from .trace import CallView, SayView, Trace

DIM = Dimension.PRIORITY
_CHOICE = Kind.CHOICE  # read once per round by running_priority (see risk._COMMIT)


@dataclass(frozen=True, slots=True)
class Priority:
    """Priority scores of one trajectory.

    Attributes:
        quality: Q_prio in [0, 1].
        choice: the option scored (``None``: nothing).
        score: S(x).
        best: S*.
        nothing: S0.
        inversions: avoidable inversions of the choice.
        applicable: the task has constraints.
    """

    quality: float
    choice: str | None
    score: int
    best: int
    nothing: int
    inversions: int
    applicable: bool


def priority_quality(score: int, nothing: int, best: int) -> float:
    """Normalised weighted satisfaction of a choice.

    Example: a chain of three constraints weighs 4, 2, 1; committing nothing satisfies the
    bottom one (S0 = 1), the best option the top two (S* = 6), the agent's choice only the
    top one (S = 4):

    >>> priority_quality(score=4, nothing=1, best=6)
    0.6
    >>> priority_quality(score=1, nothing=1, best=1)
    1.0
    """
    if best <= nothing:
        return 1.0 if score >= best else 0.0
    return min(1.0, max(0.0, (score - nothing) / (best - nothing)))


def priority(trajectory: Trajectory, task: Task) -> float:
    """Q_prio of a finished trajectory, in [0, 1] (see the module docstring)."""
    from .score import score

    return score(trajectory, task).priority.quality


def choice_of(task: Task, outcome: Outcome | None, by_answer: bool) -> str | None:
    """The option a finished episode chose (``None``: nothing)."""
    truth = task.truth
    if outcome is None:
        return None
    if by_answer:
        return match_answer(outcome.answer, truth.satisfaction)
    committed = [o for o in outcome.committed if o in truth.satisfaction]
    if not committed:
        # an option outside the table (sold out at the end) still counts as a commitment
        return outcome.committed[0] if outcome.committed else None
    return min(committed, key=lambda o: (truth.score(o), o))


def answers_best(task: Task, answer: str | None) -> bool:
    """Whether a ``finish`` answer is right, as the environment judges a task judged on its
    answer (:func:`stategym.kernel.outcome.judge`, the outcome's ``goal_reached``): it names
    a best option or, when nothing is best, says "none" (or nothing); no answer is never
    right.

    >>> from stategym.registry import cached_task
    >>> from stategym.kernel.knobs import Knobs
    >>> task = cached_task("travel", 0, Knobs(stateful=False))
    >>> answers_best(task, f"The answer is {task.truth.best[0]}."), answers_best(task, None)
    (True, False)
    """
    if answer is None:
        return False
    best = task.truth.best
    if best:
        return match_answer(answer, best) is not None
    return normalise_answer(answer) in ("none", "")


def inversions(task: Task, gold: Gold, choice: str | None) -> list[tuple[str, str]]:
    """Avoidable inversions ``(i, j)`` of a choice: i above j, the choice meets j and misses
    i, and some option meets i and everything above i that the choice meets (so fixing i
    would not cost anything more important). The best choice never has one."""
    truth = task.truth
    met = truth.nothing_satisfies if choice is None else truth.satisfaction.get(choice, frozenset())
    found = []
    for low in sorted(met):
        for high in sorted(gold.above.get(low, ())):
            if high in met:
                continue
            keep = (met & gold.above.get(high, frozenset())) | {high}
            if any(keep <= other for other in truth.satisfaction.values()):
                found.append((high, low))
    return found


class PriorityScorer:
    """Priority over the rounds of one episode: all of it is known at the end."""

    def __init__(self, task: Task, gold: Gold, scale: float) -> None:
        self.task, self.gold, self.scale = task, gold, scale

    def add(self, tr: Trace, calls: Sequence[CallView], say: SayView | None) -> list[Event]:
        return []

    def close(self, tr: Trace, outcome: Outcome | None) -> tuple[Priority, list[Event]]:
        task, gold = self.task, self.gold
        truth = task.truth
        choice = choice_of(task, outcome, gold.by_answer)
        score = truth.score(choice)
        nothing, best = truth.score(None), truth.best_score
        quality = priority_quality(score, nothing, best)
        pairs = inversions(task, gold, choice)
        applicable = bool(task.constraints)
        scored = Priority(quality, choice, score, best, nothing, len(pairs), applicable)
        if not tr.done or not applicable:
            return scored, []
        at = _choice_round(tr, choice)
        events = [
            Event(at, DIM, Kind.CHOICE, quality, quality * self.scale, choice or "nothing", True)
        ]
        events += [Event(at, DIM, Kind.INVERSION, 0.0, 0.0, f"{i}>{j}", True) for i, j in pairs]
        return scored, events


def running_priority(counts: EventCounts, gold: Gold) -> tuple[float, bool]:
    """Q_prio from the events so far: 0 until the final choice is scored at the end."""
    return counts.total.get(_CHOICE, 0.0), gold.constrained


def _choice_round(tr: Trace, choice: str | None) -> int:
    """The round that made the choice: its last successful commit, else the final round."""
    commits = [
        c.round
        for c in tr.calls
        if c.ok and c.effect is Effect.COMMIT and choice is not None and c.option == choice
    ]
    end = tr.end if tr.end is not None else 0
    return commits[-1] if commits else end


def _applies(task: Task, gold: Gold) -> bool:
    return bool(task.constraints)


DECLARATION = DimensionSpec(DIM, "prio", _applies, PriorityScorer, running_priority)
"""Priority, declared once (see :mod:`stategym.metrics.declaration`)."""

__all__: Sequence[str] = (
    "DECLARATION",
    "Priority",
    "PriorityScorer",
    "answers_best",
    "choice_of",
    "inversions",
    "priority",
    "priority_quality",
    "running_priority",
)
