"""The expert's proposals on real tasks, and a fresh user answering a message on them: what
the proposal-reading tests rewrite and send."""

from __future__ import annotations

import functools

from stategym import Env, Knobs, run_episode
from stategym.agents import resolve
from stategym.kernel.task import Task
from stategym.kernel.user import SimulatedUser, UserTurn
from stategym.registry import all_domains, get_domain

JUDGING = sorted(n for n in all_domains() if not get_domain(n).read_only)
"""The domains whose user judges proposals."""


@functools.cache
def expert_proposals(name: str, count: int) -> tuple[tuple[Task, str, str], ...]:
    """On the first ``count`` tasks the expert proposes on: the task, the first message it
    proposes in, and the option it names."""
    found = []
    for seed in range(40):
        env = Env(name, knobs=Knobs())
        trajectory = run_episode(env, resolve(env.domain, "expert"), seed)
        turn = next((r for r in trajectory.rounds if r.user and r.user.proposed), None)
        if turn is not None and turn.say is not None and turn.user is not None:
            found.append((env.task, turn.say, str(turn.user.proposed)))
        if len(found) == count:
            return tuple(found)
    raise AssertionError(f"the expert proposed on fewer than {count} {name} tasks")


def respond(name: str, task: Task, text: str) -> UserTurn:
    """A fresh user of ``task`` (of domain ``name``) answering ``text``."""
    return SimulatedUser(task, get_domain(name).slot_phrases).respond(text)
