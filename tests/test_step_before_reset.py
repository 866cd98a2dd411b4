"""Audit 13C, F4: an environment used before its first ``reset`` says so.

``Env.step``, ``Env.step_message`` and ``Env.trajectory`` (and the Gymnasium wrapper's
``step``) raised ``AttributeError: 'Env' object has no attribute '_terminated'`` before any
reset, where ``Env.outcome()`` raised the intended ``RuntimeError: call reset() first``.
Every public entry that reads the episode now gives that same error; after a reset each
works as before.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import gymnasium
import pytest

import stategym  # noqa: F401  (registers the Gymnasium ids)
from stategym import Env, Say
from stategym.gym import StateGymEnv
from stategym.kernel.protocol import CallBatch, call

ENTRIES: dict[str, Callable[[Env], Any]] = {
    "step(Say)": lambda env: env.step(Say("hi")),
    "step(CallBatch)": lambda env: env.step(CallBatch((call("search_flights"),))),
    "step(malformed)": lambda env: env.step(None),  # type: ignore[arg-type]
    "step_message(dict)": lambda env: env.step_message({"role": "assistant", "content": "hi"}),
    "step_message(bad JSON)": lambda env: env.step_message("{not json"),
    "trajectory": lambda env: env.trajectory,
    "stopped_trajectory": lambda env: env.stopped_trajectory(),
    "done": lambda env: env.done,
    "commitments": lambda env: env.commitments(),
    "state_key": lambda env: env.state_key(),
    "snapshot": lambda env: env.snapshot(),
    "outcome": lambda env: env.outcome(),  # the behaviour the others now share (a guard)
    "task": lambda env: env.task,  # likewise
}


@pytest.mark.parametrize("entry", list(ENTRIES))
def test_every_entry_before_reset_says_call_reset_first(entry: str) -> None:
    with pytest.raises(RuntimeError, match=r"^call reset\(\) first$"):
        ENTRIES[entry](Env("travel"))


@pytest.mark.parametrize("entry", list(ENTRIES))
def test_every_entry_works_after_reset(entry: str) -> None:
    env = Env("travel")
    env.reset(seed=0)
    ENTRIES[entry](env)


def test_restore_before_reset_says_call_reset_first() -> None:
    started = Env("travel")
    started.reset(seed=0)
    with pytest.raises(RuntimeError, match=r"^call reset\(\) first$"):
        Env("travel").restore(started.snapshot())


def test_the_gym_wrapper_stepped_before_reset_says_call_reset_first() -> None:
    """The auditor's case: ``StateGymEnv("travel").step(...)`` and the made environment's
    unwrapped one (``gymnasium.make``'s own wrapper raises ``ResetNeeded`` before it)."""
    with pytest.raises(RuntimeError, match=r"^call reset\(\) first$"):
        StateGymEnv("travel").step({"content": "hi"})
    made = gymnasium.make("stategym/Travel-v0")
    with pytest.raises(RuntimeError, match=r"^call reset\(\) first$"):
        made.unwrapped.step('{"content": "hi"}')
    made.reset(seed=0)
    _, _, terminated, truncated, _ = made.step('{"content": "hi"}')
    assert not terminated and not truncated
    made.close()
