"""One episode played again with other call ids: those an OpenAI-compatible endpoint may
send (restarting at ``call_0`` every round), or one id for every call (repeated inside a
batch too). The environment accepts both; behaviour, world and scores are unchanged."""

from __future__ import annotations

from collections.abc import Callable

from stategym import Env
from stategym.agents import resolve
from stategym.kernel.protocol import FINISH, CallBatch, ToolCall
from stategym.kernel.trajectory import CallRecord, RoundKind, RoundRecord, Trajectory
from stategym.rollout import run_episode

Rename = Callable[[int], str]
"""The id of the call at a position of its batch."""


def restarting(position: int) -> str:
    """Ids that restart every round: ``call_0``, ``call_1``..."""
    return f"call_{position}"


def one_id(position: int) -> str:
    """The same id for every call, in every round and inside one batch."""
    return "call_0"


def play(domain: str, agent: str, seed: int) -> Trajectory:
    """A scripted agent's episode, with the ids the environment assigns (``c<round>_<i>``)."""
    env = Env(domain)
    return run_episode(env, resolve(env.domain, agent), seed)


def renamed(trajectory: Trajectory, rename: Rename) -> Trajectory:
    """``trajectory``'s actions played again on its task with the calls' ids renamed."""
    env = Env(trajectory.domain)
    env.reset(seed=trajectory.seed)
    for record in trajectory.rounds:
        action = record.action()
        if isinstance(action, CallBatch):
            calls = (ToolCall(c.name, c.arguments, rename(i)) for i, c in enumerate(action.calls))
            action = CallBatch(tuple(calls))
        env.step(action)
    played = env.trajectory
    # the ids change nothing the agent did: same outcome, no format error added
    assert played.outcome == trajectory.outcome
    assert [r.format_errors for r in played.rounds] == [r.format_errors for r in trajectory.rounds]
    return played


def ran(record: RoundRecord) -> list[tuple[int, CallRecord]]:
    """The calls of a round that ran (the executed graph's call nodes), with their places in
    the batch: ``finish``, unknown tools and malformed calls did not."""
    return [
        (position, call)
        for position, call in enumerate(record.calls)
        if call.name != FINISH and call.effect is not None and call.error_kind in (None, "tool")
    ]


def nodes_of(trajectory: Trajectory) -> int:
    """How many nodes the executed graph of ``trajectory`` has: a call that ran, a message."""
    said = sum(r.kind is RoundKind.SAY and r.user is not None for r in trajectory.rounds)
    return said + sum(len(ran(r)) for r in trajectory.rounds)
