"""``score(trajectory, task) -> Scorecard``: every dimension, R, harm, outcome and the events.

The scorecard is computed from the trajectory log and the task alone (the task is
regenerated from the trajectory's ``(domain, seed, knobs)`` when not given), so any run can
be re-scored offline. :func:`score_rounds` scores the rounds of an episode still being
played, which is what the dense reward does after every step.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from stategym.task import Task
from stategym.trajectory import Outcome, RoundRecord, Trajectory

from .clarification import Clarification, clarification_events
from .composite import composite_reward
from .events import DIMENSIONS, Dimension, Event
from .gold import gold_of
from .outcome import OutcomeScore, outcome_from
from .parallelism import Parallelism, parallelism_events
from .priority import Priority, priority_events
from .risk import Risk, risk_events
from .trace import trace


@dataclass(frozen=True, slots=True)
class Scorecard:
    """Everything the scorer says about one trajectory.

    Attributes:
        task_id: ``domain/seed/knobs``.
        domain: domain name.
        seed: task seed.
        knobs: the knobs, as ``Knobs.describe()`` writes them.
        agent: the agent's name from the trajectory.
        clarification: D1 counts and Q_clar.
        priority: D2 scores and Q_prio.
        parallelism: D3 counts and Q_par.
        risk: D4 counts, Q_risk and Harm.
        applicable: the dimensions R averages over.
        composite: R in [-1, 1].
        outcome: goal, money, rounds and clock.
        events: every per-round event, in round order.
    """

    task_id: str
    domain: str
    seed: int
    knobs: str
    agent: str
    clarification: Clarification
    priority: Priority
    parallelism: Parallelism
    risk: Risk
    applicable: tuple[Dimension, ...]
    composite: float
    outcome: OutcomeScore
    events: tuple[Event, ...]

    @property
    def harm(self) -> float:
        return self.risk.harm

    def quality(self, dimension: Dimension) -> float:
        """Q_d of one dimension (1.0 for a dimension with nothing to get wrong)."""
        return self.qualities()[dimension]

    def qualities(self) -> dict[Dimension, float]:
        return {
            Dimension.CLARIFICATION: self.clarification.quality,
            Dimension.PRIORITY: self.priority.quality,
            Dimension.PARALLELISM: self.parallelism.quality,
            Dimension.RISK: self.risk.quality,
        }

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
        task: its task; regenerated from ``(domain, seed, knobs)`` when omitted.

    Example:
        >>> from stategym import Env, run_episode
        >>> from stategym.agents import resolve
        >>> env = Env("travel")
        >>> card = score(run_episode(env, resolve(env.domain, "expert"), seed=3), env.task)
        >>> card.composite, card.outcome.goal_reached
        (1.0, True)
    """
    if task is None:  # the metrics import no domain: the kernel's installed registry has them
        from stategym.domain import installed_registry

        registry = installed_registry()
        task = registry.cached_task(trajectory.domain, trajectory.seed, trajectory.knobs)
    return score_rounds(trajectory.rounds, task, trajectory.outcome, agent=trajectory.agent)


def score_rounds(
    rounds: Sequence[RoundRecord],
    task: Task,
    outcome: Outcome | None,
    *,
    agent: str = "",
) -> Scorecard:
    """Score the rounds played so far; the episode counts as over when ``outcome`` is given."""
    gold = gold_of(task)
    done = outcome is not None
    tr = trace(rounds, gold, done)
    scale = 1.0 / max(1, len(gold.dims))
    clar, clar_events = clarification_events(tr, gold, scale)
    prio, prio_events = priority_events(tr, task, gold, outcome, scale)
    par, par_events = parallelism_events(tr, gold, scale)
    risk, risk_list = risk_events(tr, task, gold, scale)
    applicable = tuple(
        d
        for d, used in zip(
            DIMENSIONS,
            (clar.applicable, prio.applicable, par.applicable, risk.applicable),
            strict=True,
        )
        if used
    )
    qualities: Mapping[Dimension, float] = {
        Dimension.CLARIFICATION: clar.quality,
        Dimension.PRIORITY: prio.quality,
        Dimension.PARALLELISM: par.quality,
        Dimension.RISK: risk.quality,
    }
    events = sorted(clar_events + prio_events + par_events + risk_list, key=lambda e: e.round)
    return Scorecard(
        task.id,
        task.domain,
        task.seed,
        task.knobs.describe(),
        agent,
        clar,
        prio,
        par,
        risk,
        applicable,
        composite_reward(qualities, applicable, risk.harm),
        outcome_from(rounds, outcome),
        tuple(events),
    )
