"""The final-answer view of a trajectory, reported beside decision quality.

These are facts, not judgements: whether the goal was reached (the world ends committed to
exactly one best option, or to nothing when nothing is best; a stateless task's answer names
a best option), the money spent and lost, the rounds played and the time the episode took on
the environment's clock (each round costs its slowest call's latency).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from stategym.kernel.trajectory import Outcome, RoundRecord, Trajectory
from stategym.kernel.world import USER_ACCOUNT


@dataclass(frozen=True, slots=True)
class OutcomeScore:
    """Outcome of one trajectory.

    Attributes:
        goal_reached: the episode reached its goal (``False`` if unfinished).
        spent: money paid out of the user's account.
        refunded: money paid back into it.
        lost: money spent on anything but the one right commitment.
        rounds: rounds played.
        clock: the environment's clock at the end (ticks).
        finished: the episode ended (by ``finish``, the user, or the round limit).
    """

    goal_reached: bool
    spent: int
    refunded: int
    lost: int
    rounds: int
    clock: int
    finished: bool


def outcome_of(trajectory: Trajectory) -> OutcomeScore:
    """The outcome view of a trajectory.

    Example: an expert episode that booked the right fare for $640 in 6 rounds reads
    ``OutcomeScore(goal_reached=True, spent=640, refunded=0, lost=0, rounds=6, clock=8,
    finished=True)``.
    """
    return outcome_from(trajectory.rounds, trajectory.outcome)


def outcome_from(rounds: Sequence[RoundRecord], final: Outcome | None) -> OutcomeScore:
    """The outcome view from the rounds and, once finished, the logged outcome."""
    clock = rounds[-1].clock + rounds[-1].latency if rounds else 0
    if final is not None:
        return OutcomeScore(
            final.goal_reached, final.spent, final.refunded, final.lost, len(rounds), clock, True
        )
    spent = sum(c.amount for r in rounds for c in r.charges if c.source == USER_ACCOUNT)
    refunded = sum(c.amount for r in rounds for c in r.charges if c.target == USER_ACCOUNT)
    return OutcomeScore(False, spent, refunded, spent - refunded, len(rounds), clock, False)
