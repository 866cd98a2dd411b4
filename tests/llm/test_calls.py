"""Protocol statistics from trajectories (stategym.llm.calls)."""

from __future__ import annotations

from stategym import CallBatch, Env, ToolCall, call, calls
from stategym.llm.calls import call_stats


def test_a_rejected_round_counts_its_well_formed_calls_as_accepted() -> None:
    """The docstring's example: get_profile() beside a call whose arguments were cut off.
    The round is rejected whole, yet get_profile's format was right."""
    env = Env("travel")
    env.reset(seed=0)
    env.step(CallBatch((call("get_profile"), ToolCall("get_travel_policy", '{"x": '))))
    env.step(calls(call("get_profile")))
    env.step(CallBatch(()))
    stats = call_stats([env.trajectory])
    assert (stats.rounds, stats.tool_rounds, stats.invalid_rounds) == (3, 2, 1)
    assert (stats.calls, stats.parsed, stats.accepted) == (3, 2, 2)
    assert stats.accepted_share == 2 / 3
