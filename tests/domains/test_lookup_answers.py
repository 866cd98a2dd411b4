"""Lookup's exact match reads answers as QA benchmarks do
(``stategym.kernel.understanding.answers``):
the issue's reproduction scored a lower-case id, a trailing full stop or "The answer is X." as
garbage (R = 0.22)."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from stategym import Env, run_episode
from stategym.agents import resolve
from stategym.agents.base import Agent
from stategym.kernel.protocol import Action, CallBatch, Observation, ToolCall
from stategym.kernel.task import Task
from stategym.metrics.score import score


class _Rewording:
    """The expert, with its ``finish`` answer reworded."""

    def __init__(self, expert: Agent, reword: Callable[[str], str]) -> None:
        self.name = "expert"
        self._expert = expert
        self._reword = reword

    def act(self, observation: Observation) -> Action:
        action = self._expert.act(observation)
        if isinstance(action, CallBatch):
            calls = tuple(
                ToolCall(c.name, {"answer": self._reword(str(c.arguments.get("answer")))}, c.id)
                if c.name == "finish" and isinstance(c.arguments, dict)
                else c
                for c in action.calls
            )
            return CallBatch(calls)
        return action


REWORDINGS: dict[str, Callable[[str], str]] = {
    "lower case": str.lower,
    "full stop": lambda a: f"{a}.",
    "sentence": lambda a: f"The answer is {a}.",
    "spaces": lambda a: f"  {a} ",
}


@pytest.mark.parametrize("how", sorted(REWORDINGS))
def test_a_reworded_right_answer_scores_as_the_answer(how: str) -> None:
    env = Env("lookup")
    expert = resolve(env.domain, "expert")
    for seed in range(10):
        plain = run_episode(env, expert, seed)
        task: Task = env.task

        def make(t: Task) -> Agent:
            return _Rewording(expert(t), REWORDINGS[how])

        reworded = run_episode(env, make, seed)
        assert reworded.outcome is not None and reworded.outcome.goal_reached
        assert score(reworded, task).composite == score(plain, task).composite == 1.0


def test_a_wrong_or_hedged_answer_still_fails() -> None:
    env = Env("lookup")
    expert = resolve(env.domain, "expert")
    run_episode(env, expert, 0)
    task = env.task
    best = task.truth.best[0]
    other = next(o for o in task.truth.satisfaction if o != best)
    for answer in (f"{best} or {other}", other, f"{best}{best}"):
        trajectory = run_episode(env, lambda t, a=answer: _Rewording(expert(t), lambda _: a), 0)
        assert trajectory.outcome is not None and not trajectory.outcome.goal_reached
