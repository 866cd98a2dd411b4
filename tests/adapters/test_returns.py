"""Which return a trainer gets: the dense per-round rewards sum to the episode's R.

The rule (``stategym.metrics.credit``): round ``t`` is paid ``R_t - R_{t-1}`` and the last
round ends at R, so ``sum(r_t) == R`` for every episode, harmful ones included (their R is
``-Harm < 0``). The issue's probe saw a dense return of -0.98 beside R = +0.10; this checks,
on real episodes of every domain and every scripted agent, that the reward a trainer reads
from ``Env(reward=dense_reward)`` step by step is R.
"""

from __future__ import annotations

import pytest

from stategym import Env
from stategym.agents import agent_names, resolve
from stategym.metrics import dense_reward, score
from stategym.registry import all_domains

SEEDS = range(3)


@pytest.mark.parametrize("domain", sorted(all_domains()))
def test_dense_return_is_r_for_every_agent(domain: str) -> None:
    env = Env(domain, reward=dense_reward)
    returns, composites = [], []
    for name in agent_names():
        for seed in SEEDS:
            observation, _ = env.reset(seed=seed)
            agent = resolve(env.domain, name)(env.task)
            total, done = 0.0, False
            while not done:
                step = env.step(agent.act(observation))
                observation, total = step.observation, total + step.reward
                done = step.terminated or step.truncated
            card = score(env.trajectory, env.task)
            returns.append(total)
            composites.append(card.composite)
            assert total == pytest.approx(card.composite, abs=1e-9), (name, seed)
            assert step.info["scorecard"].composite == card.composite
    # not vacuous: the agents' returns differ, and (lookup has no commits) some are harmful
    assert len({round(r, 6) for r in returns}) > 3
    assert min(composites) < 0 or domain == "lookup"
