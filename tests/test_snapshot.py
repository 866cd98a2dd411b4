"""A snapshot's ending is typed, and restore rewinds it (a finished episode plays on)."""

from __future__ import annotations

from stategym.kernel.env import Env
from stategym.kernel.knobs import Knobs
from stategym.kernel.protocol import CallBatch, Say, ToolCall
from stategym.kernel.snapshot import Ending


def test_restore_rewinds_a_finished_episode_to_the_snapshot() -> None:
    env = Env("travel", knobs=Knobs.parse("all_off"))  # judged by the answer finish gives
    env.reset(seed=3)
    env.step(Say("What is your budget?"))
    before = env.snapshot()
    assert before.done == Ending(terminated=False, truncated=False, answer=None)
    key = env.state_key()
    result = env.step(CallBatch((ToolCall("finish", {"answer": "none"}),)))
    assert result.terminated and env.done
    assert env.snapshot().done == Ending(True, False, "none")
    env.restore(before)
    assert not env.done and env.state_key() == key and len(env.rounds) == 1
    assert not env.step(Say("Anything else?")).terminated
