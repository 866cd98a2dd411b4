"""Invariants of every domain under any agent output (Hypothesis) and under every scripted agent.

* Money is conserved: the sum of all balances never changes, and every balance equals its
  opening value plus the logged charges into it minus those out of it; every charge is in
  the trajectory (in the record of the round that moved it).
* Agent output never raises and never corrupts state: a round without a successful write or
  commit changes nothing but the clock, the round counter and what scheduled events change;
  a step after the end changes nothing at all.
* Under the dense reward, every step pays a finite float, and a finished episode's rewards
  are the credit of its log, sum to its R and are negative exactly where it did harm.
* Whatever happened, the trajectory serialises, parses back to an equal object with the same
  bytes (also through ``write_jsonl`` and ``read_jsonl``), and replays to the same state key.

The agent output is drawn by :func:`strategies.agent_steps`: well-formed and broken calls,
and a quarter of wild output (values JSON cannot carry, objects of any shape, any text).
``HYPOTHESIS_PROFILE=thorough`` runs :data:`THOROUGH_EXAMPLES` examples per domain.
"""

from __future__ import annotations

import math
import os
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import orjson
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from stategym.agents import Agent, agent_names, scripted
from stategym.kernel.domain import Domain
from stategym.kernel.env import Env
from stategym.kernel.protocol import Observation, Say
from stategym.kernel.task import EventKind
from stategym.kernel.tools import Effect
from stategym.kernel.trajectory import (
    RoundKind,
    RoundRecord,
    dumps,
    loads,
    read_jsonl,
    replay,
    write_jsonl,
)
from stategym.metrics import DIMENSIONS, credit, dense_reward, score
from stategym.registry import all_domains
from strategies import (
    HOSTILE,
    Pool,
    agent_steps,
    json_text,
    knobs,
    nested,
    question_phrases,
    styles,
)

DOMAIN_NAMES = sorted(all_domains())
"""Not imported from ``conftest``: with several ``conftest.py`` files under ``tests/`` that
module name is ambiguous."""
THOROUGH = os.environ.get("HYPOTHESIS_PROFILE") == "thorough"
THOROUGH_EXAMPLES = 10_000
"""Examples per domain of the any-output test under the thorough profile (issue 10); they
take longer than the suite's per-test timeout, which the profile lifts for this test."""


def _thorough(test: Any) -> Any:
    """Under the thorough profile, :data:`THOROUGH_EXAMPLES` examples and no timeout."""
    if not THOROUGH:
        return test
    return pytest.mark.timeout(0)(settings(max_examples=THOROUGH_EXAMPLES)(test))


@dataclass(frozen=True)
class Capture:
    """The parts of an environment's state a round may change."""

    done: bool
    rounds: int
    key: str
    clock: int
    next_id: int
    accounts: dict[str, int]
    charges: int
    tables: dict[str, dict[Any, Any]]
    user_values: dict[str, Any]
    confirmed: str | None


def capture(env: Env) -> Capture:
    world = env.world
    return Capture(
        env.done,
        len(env.rounds),
        env.state_key(),
        world.clock,
        world.next_id,
        dict(world.accounts),
        len(world.charges),
        {name: dict(getattr(world, name).changed) for name in world.TABLES},
        dict(env.user.values),
        env.user.confirmed,
    )


def check_money(env: Env, opening: dict[str, int]) -> None:
    world = env.world
    assert sum(world.accounts.values()) == sum(opening.values())
    expected = dict(opening)
    for charge in world.charges:
        assert type(charge.amount) is int and charge.amount > 0
        expected[charge.source] = expected.get(charge.source, 0) - charge.amount
        expected[charge.target] = expected.get(charge.target, 0) + charge.amount
    balances = {name: value for name, value in world.accounts.items() if value or name in opening}
    assert balances == {name: value for name, value in expected.items() if value or name in opening}
    assert [c for record in env.rounds for c in record.charges] == world.charges


def check_round(env: Env, before: Capture, info: dict[str, Any]) -> None:
    """The round just played changed only what it was allowed to change."""
    if before.done:
        assert info.get("format_errors") == ("episode_over",)
        assert env.state_key() == before.key and len(env.rounds) == before.rounds
        return
    assert len(env.rounds) == before.rounds + 1
    record = env.rounds[-1]
    assert env.world.clock == before.clock + record.latency
    assert tuple(record.format_errors) == tuple(info.get("format_errors", ()))
    fired = [env.task.events[i] for i in record.events]
    assert [i for r in env.rounds for i in r.events] == [
        i for i, event in enumerate(env.task.events) if event.at <= env.world.clock
    ]
    if not _changed_world(record):
        world = env.world
        assert world.next_id == before.next_id
        assert world.accounts == before.accounts and len(world.charges) == before.charges
        for name, old in before.tables.items():
            new = getattr(world, name).changed
            moved = {e.key for e in fired if e.kind is EventKind.SET and e.table == name}
            assert {k: v for k, v in new.items() if k not in moved} == {
                k: v for k, v in old.items() if k not in moved
            }
    updated = {e.slot for e in fired if e.kind is EventKind.USER_UPDATE}
    assert {k: v for k, v in env.user.values.items() if k not in updated} == {
        k: v for k, v in before.user_values.items() if k not in updated
    }
    if record.kind is not RoundKind.SAY and not updated:
        assert env.user.confirmed == before.confirmed


def _changed_world(record: RoundRecord) -> bool:
    return any(c.error is None and c.effect in (Effect.WRITE, Effect.COMMIT) for c in record.calls)


def check_log(env: Env) -> None:
    trajectory = env.trajectory
    line = dumps(trajectory)
    parsed = loads(line)
    assert parsed == trajectory
    assert dumps(parsed) == line
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "log.jsonl"
        assert write_jsonl(path, [trajectory]) == 1
        assert list(read_jsonl(path)) == [trajectory]
    assert replay(parsed).state_key() == env.state_key()


def _play(env: Env, channel: str, action: Any, pool: Pool) -> tuple[float, dict[str, Any]]:
    """Step ``env`` with ``action`` through ``channel``: the reward and the step's info."""
    if channel == "typed":
        result = env.step(action)
        _remember(result.observation, pool)
        return result.reward, result.info
    messages, reward, _, _, info = env.step_message(action)
    for message in messages:
        if message["role"] == "tool":
            pool.see(orjson.loads(message["content"]))
    return reward, info


def _mixed_turn(
    env: Env, data: st.DataObject, expert: Agent, observation: Observation, pool: Pool
) -> tuple[Observation, float, dict[str, Any]]:
    """One round of the any-output mix: the styled expert's move (drawn, while the episode
    runs) or a wild step through a drawn channel. The observation the expert acts on next,
    the step's reward and its info."""
    if not env.done and data.draw(st.booleans(), label="expert's turn"):
        result = env.step(expert.act(observation))
        _remember(result.observation, pool)
        return result.observation, result.reward, result.info
    channel, action = data.draw(agent_steps(env.domain.tools, pool), label="step")
    reward, info = _play(env, channel, action, pool)
    return observation, reward, info


def _remember(observation: Observation, pool: Pool) -> None:
    for item in observation.results:
        pool.see(item.content)


def _opening(domain: Domain, env: Env) -> dict[str, int]:
    return dict(domain.new_world(env.task).accounts)


@pytest.mark.parametrize("name", DOMAIN_NAMES)
@_thorough
@given(data=st.data(), seed=st.integers(0, 2**32), task_knobs=knobs, style=styles)
def test_any_agent_output_is_safe(
    name: str, data: st.DataObject, seed: int, task_knobs: Any, style: Any
) -> None:
    """Random output interleaved with a styled expert's moves (which reach commits and
    charges that random calls alone rarely do), then more random output after the end."""
    domain = all_domains()[name]
    env = Env(domain, knobs=task_knobs)
    observation, _ = env.reset(seed=seed)
    opening = _opening(domain, env)
    expert = domain.expert(env.task, style)
    pool = Pool(phrases=question_phrases(dict(domain.slot_phrases)))
    pool.see(list(env.task.request.given.values()))
    after_end = 0
    for _ in range(data.draw(st.integers(1, 24), label="rounds")):
        after_end += env.done
        if after_end > 2:
            break
        before = capture(env)
        observation, _, info = _mixed_turn(env, data, expert, observation, pool)
        check_round(env, before, info)
        check_money(env, opening)
    check_log(env)


@pytest.mark.parametrize("name", DOMAIN_NAMES)
@pytest.mark.parametrize("agent", agent_names())
def test_scripted_agents_conserve_money(name: str, agent: str) -> None:
    domain = all_domains()[name]
    factory = scripted(domain, agent)
    for seed in range(25):
        env = Env(domain)
        observation, _ = env.reset(seed=seed)
        opening = _opening(domain, env)
        policy = factory(env.task)
        while not env.done:
            before = capture(env)
            result = env.step(policy.act(observation))
            observation = result.observation
            check_round(env, before, result.info)
            check_money(env, opening)
        check_log(env)


@pytest.mark.parametrize("name", DOMAIN_NAMES)
@given(data=st.data(), seed=st.integers(0, 2**32), task_knobs=knobs, style=styles)
def test_the_dense_reward_holds_under_any_agent_output(
    name: str, data: st.DataObject, seed: int, task_knobs: Any, style: Any
) -> None:
    """The same mix of random output and a styled expert's moves, under the dense reward, the
    expert finishing half of the episodes: every step pays a finite float and the running
    return stays in [-1, 1]; a finished episode's rewards are the credit of its log bit for
    bit, sum to its R and are negative in sum exactly where it did harm, its last step's
    scorecard is the log's and in range, and a step after the end pays 0.0."""
    domain = all_domains()[name]
    env = Env(domain, knobs=task_knobs, reward=dense_reward)
    observation, _ = env.reset(seed=seed)
    expert = domain.expert(env.task, style)
    pool = Pool(phrases=question_phrases(dict(domain.slot_phrases)))
    pool.see(list(env.task.request.given.values()))
    finishes = data.draw(st.booleans(), label="the expert finishes")
    rewards: list[float] = []
    info: dict[str, Any] = {}
    for _ in range(data.draw(st.integers(1, 24), label="rounds")):
        if env.done:
            break
        observation, reward, info = _mixed_turn(env, data, expert, observation, pool)
        rewards.append(reward)
        assert type(reward) is float and math.isfinite(reward)
        assert abs(sum(rewards)) <= 1.0 + 1e-9
    while finishes and not env.done:
        result = env.step(expert.act(observation))
        observation = result.observation
        rewards.append(result.reward)
        info = result.info
    if not env.done:
        return
    card = score(env.trajectory, env.task)
    assert info["scorecard"] == card
    assert tuple(rewards) == credit(env.trajectory, env.task).rewards
    assert sum(rewards) == pytest.approx(card.composite, abs=1e-9)
    assert (sum(rewards) < 0) == (card.harm > 0)
    assert -1.0 <= card.composite <= 1.0 and 0.0 <= card.harm <= 1.0
    assert all(0.0 <= card.quality(dimension) <= 1.0 for dimension in DIMENSIONS)
    assert env.step(Say("Thanks!")).reward == 0.0


@pytest.mark.parametrize("message", [*HOSTILE, nested(5000)], ids=lambda v: type(v).__name__)
def test_wild_text_is_written_from_any_message(message: Any) -> None:
    """The text channel's generator writes any wild message, or deep brackets where it cannot;
    it never raises (a value that passes for a ``str``, drawn as the whole message, once did,
    failing the any-output tests in their own data generation)."""
    for wrapped in (message, [message], {"role": "assistant", "content": message}):
        assert isinstance(json_text(wrapped), str)
