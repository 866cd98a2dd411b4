"""The dense reward in an environment: incremental, pure, and harm keeps dominating.

- each step reads its round once (the reward never re-scores the episode so far: counted,
  not timed);
- the step's info carries what the reward returned, nothing written on the side;
- an environment mid-episode pickles with its dense reward and goes on paying the same;
- issue 10 §2: a harmless expert padded with 1,000 duplicate calls returns more than every
  harmful episode, and every return is in [-1, 1].
"""

from __future__ import annotations

import pickle
from dataclasses import replace

import pytest

from stategym.agents import scripted
from stategym.kernel.env import Env
from stategym.kernel.protocol import FINISH, MAX_CALLS, CallBatch, ToolCall
from stategym.kernel.trajectory import RoundKind
from stategym.metrics import dense_reward, score
from stategym.metrics.trace import Trace
from stategym.registry import all_domains, get_domain
from stategym.rollout import run_episode

STATEFUL = [n for n in sorted(all_domains()) if not get_domain(n).read_only]


def _returns(env: Env, actions) -> list[float]:
    rewards = []
    for action in actions:
        rewards.append(env.step(action).reward)
        if env.done:
            break
    return rewards


def test_each_step_reads_only_its_own_round(monkeypatch):
    reads = []
    original = Trace.add

    def counted(self, record, last=False):
        reads.append(record.index)
        return original(self, record, last)

    monkeypatch.setattr(Trace, "add", counted)
    env = Env("travel", reward=dense_reward)
    env.reset(seed=0)
    read = next(c for c in env.task.truth.calls if c.tool == "get_profile")
    env.reset(options={"task": replace(env.task, max_rounds=200)})
    _returns(env, [CallBatch((ToolCall(read.tool, dict(read.args)),))] * 200)
    assert reads == list(range(200))  # 200 rounds read once each, not 200 * 201 / 2


def test_an_environment_mid_episode_pickles_with_its_dense_reward():
    env = Env("travel", reward=dense_reward)
    observation, _ = env.reset(seed=4)
    policy = scripted(env.domain, "expert")(env.task)
    for _ in range(3):
        observation = env.step(policy.act(observation)).observation
    copy = pickle.loads(pickle.dumps(env))
    rest = []
    while not env.done:
        rest.append(policy.act(observation))
        observation = env.step(rest[-1]).observation
    original = env.trajectory
    env.reset(options={"task": env.task})  # the first env's later rewards, replayed
    assert _returns(copy, rest) == [r.reward for r in _replayed(env, original)][3:]
    assert score(copy.trajectory, copy.task) == score(original, env.task)


def _replayed(env: Env, played):
    return [env.step(r.action()) for r in played.rounds]


def _padded(name: str, seed: int, duplicates: int = 1000) -> tuple[float, float]:
    """The expert's actions with ``duplicates`` copies of its first read call inserted
    before its last round: (dense return, R)."""
    domain = get_domain(name)
    env = Env(domain)
    played = run_episode(env, scripted(domain, "expert"), seed)
    first = next(r.calls[0] for r in played.rounds if r.kind is RoundKind.CALLS)
    copy = ToolCall(first.name, first.arguments)
    per_round = MAX_CALLS - 1
    pads = [
        CallBatch((copy,) * min(per_round, duplicates - i)) for i in range(0, duplicates, per_round)
    ]
    actions = [r.action() for r in played.rounds]
    actions = [*actions[:-1], *pads, actions[-1]]
    if played.rounds[-1].calls and played.rounds[-1].calls[-1].name != FINISH:
        actions.append(CallBatch((ToolCall(FINISH, {}),)))
    dense = Env(domain, reward=dense_reward)
    dense.reset(options={"task": replace(env.task, max_rounds=len(actions) + 1)})
    total = sum(_returns(dense, actions))
    return total, score(dense.trajectory, dense.task).composite


@pytest.mark.parametrize("name", STATEFUL)
def test_padding_with_a_thousand_duplicates_stays_above_every_harmful_episode(name):
    padded = [_padded(name, seed) for seed in range(4)]
    harmful = []
    for agent in ("shotgun", "commit-same-round", "random"):
        for seed in range(8):
            env = Env(get_domain(name), reward=dense_reward)
            observation, _ = env.reset(seed=seed)
            policy = scripted(env.domain, agent)(env.task)
            total = 0.0
            while not env.done:
                result = env.step(policy.act(observation))
                observation, total = result.observation, total + result.reward
            if score(env.trajectory, env.task).harm > 0:
                harmful.append(total)
    assert harmful, "no harmful episode to compare with"
    for total, composite in padded:
        assert total == pytest.approx(composite, abs=1e-9) and 0 < total <= 1.0
    assert max(harmful) < min(total for total, _ in padded)
    assert min(harmful) >= -1.0 - 1e-9
