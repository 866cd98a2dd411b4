"""Per-round rewards: the contract a reward function meets, and the default sparse reward.

:class:`~stategym.kernel.env.Env` starts a reward at every reset (:data:`RewardFn`) and calls
the :data:`RoundReward` it returns once per round, in order; the dense decision-quality reward
(:mod:`stategym.metrics.dense`) meets the same contract.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from stategym.kernel.task import Task
from stategym.kernel.trajectory import Outcome, RoundRecord


@dataclass(frozen=True, slots=True)
class Paid:
    """What a round's reward function returns: the reward, and what the step's ``info``
    carries beside it (the reward's own account of the round, e.g. the events it paid)."""

    reward: float
    info: Mapping[str, Any] = field(default_factory=dict)


RoundReward = Callable[[RoundRecord, "Outcome | None"], Paid]
"""``(record, outcome) -> Paid`` for the round just played; ``outcome`` is given at the
episode's last round. It sees the log, never the world, and keeps whatever it needs between
rounds itself, so a reward can be incremental without a side channel."""

RewardFn = Callable[[Task], RoundReward]
"""Starts an episode's reward: called with the task at every reset; the round reward it
returns is called once per round, in order (it must pickle: the environment does)."""


class OutcomeReward:
    """Sparse reward: 1.0 at the end of an episode that reached its goal, else 0."""

    def __call__(self, record: RoundRecord, outcome: Outcome | None) -> Paid:
        return Paid(1.0 if outcome is not None and outcome.goal_reached else 0.0)


def outcome_reward(task: Task) -> OutcomeReward:
    """The default :data:`RewardFn`: the sparse outcome reward."""
    return OutcomeReward()
