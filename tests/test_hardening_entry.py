"""Entry points other than ``Env.step`` refuse bad input with a clear error and lose nothing:
``Env.reset``'s options and the agent's name (which every trajectory carries)."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import pytest

from stategym import Env
from stategym.kernel.trajectory import dumps, loads

QUESTION = '{"content": "What is your budget?"}'


@pytest.mark.parametrize(
    ("options", "error", "match"),
    [
        ({"task": "travel/3"}, TypeError, r"options\['task'\] must be a Task, got str"),
        ({"task": 5}, TypeError, r"options\['task'\] must be a Task, got int"),
        ([1], TypeError, "options must be a mapping"),
        ("task", TypeError, "options must be a mapping"),
        ({"task": None, "seed": 3}, ValueError, "unknown reset options: 'seed'"),
        ("meetings", ValueError, "is a task of 'meetings'; this env plays 'travel'"),
        # a hand-made task's budget, as the option's (audit 18A N1: these played)
        (("max_rounds", 0), ValueError, r"options\['task'\].max_rounds must be at least 1"),
        (("max_rounds", -5), ValueError, r"options\['task'\].max_rounds must be at least 1"),
        (("max_rounds", True), TypeError, r"options\['task'\].max_rounds must be an integer"),
        (("max_rounds", 2.0), TypeError, r"options\['task'\].max_rounds must be an integer"),
    ],
)
def test_bad_reset_options_are_refused_before_anything_changes(
    options: Any, error: type[Exception], match: str
) -> None:
    if options == "meetings":
        other = Env("meetings")
        other.reset(seed=3)
        options = {"task": other.task}
    elif isinstance(options, tuple):  # a travel task with one field replaced
        other = Env("travel")
        other.reset(seed=3)
        options = {"task": replace(other.task, **dict([options]))}
    env = Env("travel")
    env.reset(seed=3)
    env.step_message(QUESTION)
    before = dumps(env.trajectory)
    with pytest.raises(error, match=match):
        env.reset(seed=4, options=options)
    assert dumps(env.trajectory) == before  # the episode in play is untouched
    env.step_message(QUESTION)
    assert len(env.trajectory.rounds) == 2
    env.reset(options={"task": None})  # None still means: generate the next task
    assert env.task.seed == 4


def test_a_task_of_the_same_domain_still_plays() -> None:
    env = Env("travel")
    env.reset(seed=5)
    other = Env("travel")
    other.reset(options={"task": env.task})
    assert other.task is env.task


@pytest.mark.parametrize("agent", [5, None, {"name": "x"}, b"expert"])
def test_an_agent_name_that_is_no_str_is_refused(agent: Any) -> None:
    with pytest.raises(TypeError, match="an agent's name must be a str"):
        Env("travel", agent=agent)
    env = Env("travel", agent="expert")
    with pytest.raises(TypeError, match="an agent's name must be a str"):
        env.agent = agent
    env.reset(seed=0)
    assert loads(dumps(env.trajectory)).agent == "expert"  # every trajectory reads back
