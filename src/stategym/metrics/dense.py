"""Step-level rewards from the per-round events: ``Env(domain, reward=dense_reward)``.

Each round is paid its credit (:mod:`stategym.metrics.credit`): the change it made to the
running composite, so an episode's rewards sum to its R, a harmful episode's return is below
every harmless one's, and every return is in [-1, 1]. The step's ``info`` carries what the
reward function returned with it: the events the round was paid for (``info["events"]``:
its own, and at the last step every terminal event), its :class:`RoundCredit`
(``info["credit"]``, with the per-call split) and, at the last step, the full
:class:`~stategym.metrics.Scorecard` (``info["scorecard"]``).

Incremental: the reward keeps one :class:`~stategym.metrics.score.EpisodeScorer` per episode
and feeds it the round just played, so a step costs the round's own scoring, whatever the
episode's length; the rewards and events it pays are exactly :func:`credit` of the finished
trajectory (tested on every domain).
"""

from __future__ import annotations

import copy
from collections.abc import Sequence
from typing import Any

from stategym.kernel.reward import Paid
from stategym.kernel.task import Task
from stategym.kernel.trajectory import Outcome, RoundRecord

from .credit import pay_round
from .declaration import EventCounts
from .events import Event
from .score import EpisodeScorer


class DenseReward:
    """The dense reward of one episode: started by :func:`dense_reward` at every reset."""

    def __init__(self, task: Task) -> None:
        self.scorer = EpisodeScorer(task)
        self.counts = EventCounts()
        self.rounds: list[RoundRecord] = []
        self.running = 0.0

    def __call__(self, record: RoundRecord, outcome: Outcome | None) -> Paid:
        """Pay the round just played (``outcome``: given at the episode's last round)."""
        self.rounds.append(record)
        done = outcome is not None
        events = self.scorer.add(record, last=done)
        if not done:
            paid = pay_round(self.counts, self.scorer.gold, record, events, self.running)
            self.running = paid.running
            return Paid(paid.reward, {"events": tuple(events), "credit": paid})
        card = self.scorer.close(self.rounds, outcome)
        paid = pay_round(
            self.counts, self.scorer.gold, record, events, self.running, card.composite
        )
        self.running = paid.running
        settled: Sequence[Event] = [e for e in card.events if e.terminal]
        info = {"events": (*events, *settled), "credit": paid, "scorecard": card}
        return Paid(paid.reward, info)

    def __deepcopy__(self, memo: dict[int, Any]) -> DenseReward:
        """The copy an environment snapshot keeps: the running state is copied, what never
        changes is shared (the task, its gold tables and the rounds already paid, which are
        frozen records), so a snapshot costs the episode's running counts, not its tables."""
        for fixed in (self.scorer.task, self.scorer.gold, *self.rounds):
            memo[id(fixed)] = fixed
        copied = object.__new__(DenseReward)
        copied.__dict__.update(copy.deepcopy(self.__dict__, memo))
        return copied


def dense_reward(task: Task) -> DenseReward:
    """Start the dense reward of an episode of ``task`` (a :data:`stategym.kernel.reward.RewardFn`).

    Example:
        >>> from stategym import Env, Say
        >>> env = Env("travel", reward=dense_reward)
        >>> _ = env.reset(seed=3)
        >>> result = env.step(Say("What is your budget for this flight?"))
        >>> [e.kind.value for e in result.info["events"]], round(result.reward, 3)
        (['ask_needed'], 0.082)
    """
    return DenseReward(task)
