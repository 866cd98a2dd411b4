"""``score(trajectory, task) -> Scorecard``: every dimension, R, harm, outcome and the events.

The scorecard is computed from the trajectory log and the task alone (the task is
regenerated from the trajectory's ``(domain, seed, knobs)`` when not given), so any run can
be re-scored offline. :func:`score_rounds` scores the rounds of an episode still being
played; :class:`EpisodeScorer` scores one round at a time (what the dense reward does after
every step, at a cost that does not grow with the episode's length).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import cast

from stategym.kernel.task import Task
from stategym.kernel.trajectory import Outcome, RoundRecord, Trajectory, task_of

from .clarification import Clarification
from .composite import composite_reward
from .declaration import DimensionScore
from .dimensions import DECLARED, task_dimensions
from .events import Dimension, Event
from .gold import gold_of
from .outcome import OutcomeScore, outcome_from
from .parallelism import Parallelism
from .priority import Priority
from .risk import Risk
from .trace import Trace


@dataclass(frozen=True, slots=True)
class Scorecard:
    """Everything the scorer says about one trajectory.

    Attributes:
        task_id: ``domain/seed/knobs``.
        domain: domain name.
        seed: task seed.
        knobs: the knobs, as ``Knobs.describe()`` writes them.
        agent: the agent's name from the trajectory.
        dimensions: each declared dimension's counts and Q_d
            (:data:`~stategym.metrics.dimensions.DECLARED` order); the typed properties
            below read the four built-in ones.
        applicable: the dimensions R averages over.
        composite: R in [-1, 1].
        outcome: goal, money, rounds and clock.
        events: every per-round event, in round order.
        sample: which sample of its task the trajectory is (``run.sample``: 0 unless the
            run played several per task, ``--samples``), so that the lines of a
            ``scores.jsonl`` of one seed are told apart.
    """

    task_id: str
    domain: str
    seed: int
    knobs: str
    agent: str
    dimensions: Mapping[Dimension, DimensionScore]
    applicable: tuple[Dimension, ...]
    composite: float
    outcome: OutcomeScore
    events: tuple[Event, ...]
    sample: int = 0

    @property
    def clarification(self) -> Clarification:
        """D1 counts and Q_clar."""
        return cast(Clarification, self.dimensions[Dimension.CLARIFICATION])

    @property
    def priority(self) -> Priority:
        """D2 scores and Q_prio."""
        return cast(Priority, self.dimensions[Dimension.PRIORITY])

    @property
    def parallelism(self) -> Parallelism:
        """D3 counts and Q_par."""
        return cast(Parallelism, self.dimensions[Dimension.PARALLELISM])

    @property
    def risk(self) -> Risk:
        """D4 counts, Q_risk and Harm."""
        return cast(Risk, self.dimensions[Dimension.RISK])

    @property
    def harm(self) -> float:
        return self.risk.harm

    def quality(self, dimension: Dimension) -> float:
        """Q_d of one dimension (1.0 for a dimension with nothing to get wrong)."""
        return self.dimensions[dimension].quality

    def qualities(self) -> dict[Dimension, float]:
        return {d: scored.quality for d, scored in self.dimensions.items()}

    @property
    def process_violation(self) -> bool:
        """A guessed slot, a guessed dependency, an unverified commit or an avoidable
        inversion: what makes a success lucky."""
        return bool(
            self.clarification.fn
            or self.parallelism.early
            or self.risk.unverified
            or self.priority.inversions
        )

    def row(self) -> dict[str, float]:
        """The numbers aggregate tables average (``harmful`` is 0/1 per trajectory)."""
        row = {"success": float(self.outcome.goal_reached), "composite": self.composite}
        row.update({str(d): q for d, q in self.qualities().items()})
        row.update(
            {
                "harmful": float(self.risk.harm > 0),
                "harm": self.risk.harm,
                "lost": float(self.outcome.lost),
                "spent": float(self.outcome.spent),
                "rounds": float(self.outcome.rounds),
                "clock": float(self.outcome.clock),
            }
        )
        return row


def score(trajectory: Trajectory, task: Task | None = None) -> Scorecard:
    """Score one finished trajectory.

    Args:
        trajectory: the episode's log.
        task: its task; when omitted, the one it was played on: regenerated from ``(domain,
            seed, knobs)``, and flipped for a protocol probe that says so (``run.probe``,
            :func:`~stategym.kernel.trajectory.task_of`), as replay does.

    Example:
        >>> from stategym import Env, run_episode
        >>> from stategym.agents import resolve
        >>> env = Env("travel")
        >>> card = score(run_episode(env, resolve(env.domain, "expert"), seed=3), env.task)
        >>> card.composite, card.outcome.goal_reached
        (1.0, True)
    """
    if task is None:
        task = task_of(trajectory)
    return score_rounds(
        trajectory.rounds,
        task,
        trajectory.outcome,
        agent=trajectory.agent,
        sample=trajectory.run.sample,
    )


def score_rounds(
    rounds: Sequence[RoundRecord],
    task: Task,
    outcome: Outcome | None,
    *,
    agent: str = "",
    sample: int = 0,
) -> Scorecard:
    """Score the rounds played so far; the episode counts as over when ``outcome`` is given."""
    scorer = EpisodeScorer(task)
    for i, record in enumerate(rounds):
        scorer.add(record, last=outcome is not None and i == len(rounds) - 1)
    return scorer.close(rounds, outcome, agent=agent, sample=sample)


class EpisodeScorer:
    """Scores an episode one round at a time: offline scoring feeds it a whole log, the
    dense reward each round as it is played, so both are the same computation.

    Each :meth:`add` costs the round's own work (its calls against the gold tables), never
    a pass over the rounds before it; :meth:`close` builds the scorecard once.
    """

    def __init__(self, task: Task) -> None:
        self.task = task
        gold = gold_of(task)
        self.gold = gold
        self.dims = task_dimensions(task, gold)
        scale = 1.0 / max(1, len(self.dims))
        self.trace = Trace(gold)
        self.scorers = {d: spec.start(task, gold, scale) for d, spec in DECLARED.items()}

    def add(self, record: RoundRecord, last: bool = False) -> list[Event]:
        """Read one round (``last``: the episode ends with it); returns the events it caused
        (terminal ones come with :meth:`close`), dimensions in declaration order."""
        calls, say = self.trace.add(record, last)
        events: list[Event] = []
        for scorer in self.scorers.values():
            events += scorer.add(self.trace, calls, say)
        return events

    def close(
        self,
        rounds: Sequence[RoundRecord],
        outcome: Outcome | None,
        *,
        agent: str = "",
        sample: int = 0,
    ) -> Scorecard:
        """The scorecard of the rounds added so far (``rounds``: those same rounds)."""
        task = self.task
        scored: dict[Dimension, DimensionScore] = {}
        found: list[Event] = []
        for dimension, scorer in self.scorers.items():
            scored[dimension], events = scorer.close(self.trace, outcome)
            found += events
        applicable = tuple(d for d, s in scored.items() if s.applicable)
        qualities = {d: s.quality for d, s in scored.items()}
        harm = cast(Risk, scored[Dimension.RISK]).harm
        return Scorecard(
            task.id,
            task.domain,
            task.seed,
            task.knobs.describe(),
            agent,
            scored,
            applicable,
            composite_reward(qualities, applicable, harm),
            outcome_from(rounds, outcome),
            tuple(sorted(found, key=lambda e: e.round)),
            sample,
        )
