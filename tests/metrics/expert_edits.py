"""The expert's episode on a task, and the same actions edited and played again: how the
audit tests build an adversary from the expert (one action inserted, dropped or changed)."""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Callable

from stategym.agents import scripted
from stategym.kernel.env import Env
from stategym.kernel.knobs import Knobs
from stategym.kernel.protocol import Action
from stategym.kernel.task import Task
from stategym.kernel.trajectory import Trajectory
from stategym.metrics import Scorecard, score
from stategym.metrics.taskset import MIXED
from stategym.rollout import run_episode


@dataclasses.dataclass(frozen=True, slots=True)
class Played:
    """The expert on one task: its actions, its trajectory, its scorecard, the task."""

    actions: tuple[Action, ...]
    trajectory: Trajectory
    card: Scorecard
    task: Task


def knobs_of(seed: int, mixed: bool) -> Knobs:
    """The seed's knobs of the mixed schedule, or the defaults (every knob on)."""
    return MIXED[seed % len(MIXED)] if mixed else Knobs()


@functools.cache
def expert(domain: str, seed: int, mixed: bool) -> Played:
    env = Env(domain, knobs=knobs_of(seed, mixed))
    played = run_episode(env, scripted(env.domain, "expert"), seed)
    actions = tuple(r.action() for r in played.rounds)
    return Played(actions, played, score(played, env.task), env.task)


def replay(
    domain: str, seed: int, edit: Callable[[list[Action]], list[Action]], mixed: bool
) -> tuple[Trajectory, Scorecard]:
    """The expert's actions after ``edit``, played on the same task (the world is
    deterministic); actions left when the episode ends are not played."""
    env = Env(domain, knobs=knobs_of(seed, mixed))
    env.reset(seed=seed)
    for action in edit(list(expert(domain, seed, mixed).actions)):
        step = env.step(action)
        if step.terminated or step.truncated:
            break
    return env.trajectory, score(env.trajectory, env.task)


def inserted(i: int, action: Action) -> Callable[[list[Action]], list[Action]]:
    """An edit: ``action`` played before the expert's action ``i``."""
    return lambda actions: [*actions[:i], action, *actions[i:]]


def replaced(i: int, action: Action) -> Callable[[list[Action]], list[Action]]:
    """An edit: ``action`` played in place of the expert's action ``i``."""
    return lambda actions: [*actions[:i], action, *actions[i + 1 :]]
