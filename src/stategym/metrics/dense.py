"""Step-level rewards from the per-round events: ``Env(domain, reward=dense_reward)``.

After each round the episode so far is scored and the round is paid the rewards of the
events it caused (a needless question, an early call, a safe commit...); events known only
at the end (a question never asked, a missed commit, the final choice) are paid at the last
step. The step's ``info`` carries the events (``info["events"]``) and, at the last step, the
full :class:`~stategym.metrics.Scorecard` (``info["scorecard"]``).

The return of an episode sums every event's reward: each dimension's positive rewards add up
to at most ``1 / #dimensions``, so the expert's return is 1.0 (its composite); a harmful
commit pays ``-(1 + severity)``, which keeps a harmful episode's return at or below -Harm.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from stategym.trajectory import RoundRecord

from .events import Event
from .score import score_rounds

if TYPE_CHECKING:
    from stategym.env import Env


def step_events(events: tuple[Event, ...], index: int, done: bool) -> tuple[Event, ...]:
    """The events paid at step ``index``: its own, plus every terminal event at the end."""
    return tuple(
        e for e in events if (e.round == index and not e.terminal) or (done and e.terminal)
    )


def dense_reward(env: Env, record: RoundRecord, done: bool) -> float:
    """Reward of the round just played: the sum of its events' rewards.

    Example:
        >>> from stategym import Env, Say
        >>> env = Env("travel", reward=dense_reward)
        >>> _ = env.reset(seed=3)
        >>> result = env.step(Say("What is your budget for this flight?"))
        >>> [e.kind.value for e in result.info["events"]], round(result.reward, 3)
        (['ask_needed'], 0.083)
    """
    card = score_rounds(env.rounds, env.task, env.outcome() if done else None, agent=env.agent)
    paid = step_events(card.events, record.index, done)
    env.reward_info["events"] = paid
    if done:
        env.reward_info["scorecard"] = card
    return sum(e.reward for e in paid)
