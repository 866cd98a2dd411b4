"""Properties of the scorer on generated tasks of every registered domain.

- the expert scores exactly 1.0 on the composite on every generated task (every knob
  setting, a sweep of seeds and a Hypothesis search over the seed space);
- every score is in its documented range, for any scripted habit and the random agent;
- the events paid step by step by the dense reward are exactly the scorecard's events
  (nothing is attributed with hindsight), its rewards are exactly the credit module's for the
  finished trajectory, and every dense return is the episode's R;
- scoring is a pure function of the log: a JSONL round trip changes nothing.
"""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from stategym.agents import scripted
from stategym.kernel.env import Env
from stategym.kernel.knobs import Knobs
from stategym.kernel.trajectory import dumps, loads
from stategym.metrics import DIMENSIONS, credit, dense_reward, score
from stategym.metrics.taskset import MIXED
from stategym.registry import all_domains, get_domain
from stategym.rollout import run_episode
from strategies import knobs, styles

DOMAIN_NAMES = sorted(all_domains())

SWEEP = 350
"""Seeds per domain in the deterministic sweep (50 per mixed knob setting)."""


def _play(name: str, agent: str, seed: int, knob: Knobs):
    env = Env(get_domain(name), knobs=knob)
    trajectory = run_episode(env, scripted(env.domain, agent), seed)
    return trajectory, env.task


@pytest.mark.parametrize("name", DOMAIN_NAMES)
def test_expert_scores_one_on_every_task_of_the_sweep(name):
    envs = [Env(get_domain(name), knobs=k) for k in MIXED]
    expert = scripted(get_domain(name), "expert")
    failures = []
    for seed in range(SWEEP):
        env = envs[seed % len(envs)]
        card = score(run_episode(env, expert, seed), env.task)
        if card.composite != 1.0 or not card.outcome.goal_reached:
            failures.append((seed, env.task.knobs.describe(), card.qualities()))
    assert failures == []


@pytest.mark.parametrize("name", DOMAIN_NAMES)
@given(seed=st.integers(0, 2**31 - 1), knob=knobs)
def test_expert_scores_one_anywhere_in_the_seed_space(name, seed, knob):
    trajectory, task = _play(name, "expert", seed, knob)
    card = score(trajectory, task)
    assert card.composite == 1.0, (seed, knob, card.qualities())
    assert all(e.value >= 0 for e in card.events), [e for e in card.events if e.value < 0]


def _in_range(card) -> None:
    for dimension in DIMENSIONS:
        assert 0.0 <= card.quality(dimension) <= 1.0, dimension
    assert -1.0 <= card.composite <= 1.0
    assert 0.0 <= card.harm <= 1.0
    assert (card.composite < 0) == (card.harm > 0)
    assert not card.applicable or card.composite > 0 or card.harm > 0
    par = card.parallelism
    for part in (par.coverage, par.violations, par.economy, par.efficiency):
        assert 0.0 <= part <= 1.0
    assert all(0 <= e.round < card.outcome.rounds for e in card.events)


@pytest.mark.parametrize("name", DOMAIN_NAMES)
@given(seed=st.integers(0, 10**6), knob=knobs, style=styles)
def test_any_scripted_habit_scores_in_range(name, seed, knob, style):
    env = Env(get_domain(name), knobs=knob)
    trajectory = run_episode(env, lambda task: env.domain.expert(task, style), seed)
    _in_range(score(trajectory, env.task))


@pytest.mark.parametrize("name", DOMAIN_NAMES)
@given(seed=st.integers(0, 10**6), knob=knobs)
def test_the_random_agent_scores_in_range(name, seed, knob):
    trajectory, task = _play(name, "random", seed, knob)
    _in_range(score(trajectory, task))


@pytest.mark.parametrize("name", DOMAIN_NAMES)
@pytest.mark.parametrize(
    "agent",
    [
        "expert",
        "ask-nothing",
        "all-parallel",
        "shotgun",
        "commit-same-round",
        "confirm-spam",
        "open-padding",
        "finish-padding",
        "random",
    ],
)
def test_dense_rewards_pay_exactly_the_scorecard_events(name, agent):
    domain = get_domain(name)
    for seed in range(14):
        env = Env(domain, knobs=MIXED[seed % len(MIXED)], reward=dense_reward)
        observation, _ = env.reset(seed=seed)
        policy = scripted(domain, agent)(env.task)
        paid, rewards, split = [], [], []
        while not env.done:
            result = env.step(policy.act(observation))
            observation = result.observation
            paid += result.info["events"]
            rewards.append(result.reward)
            split.append(result.info["credit"])
        card = score(env.trajectory, env.task)
        assert sorted(map(repr, paid)) == sorted(map(repr, card.events))
        assert result.info["scorecard"] == card
        offline = credit(env.trajectory, env.task)
        assert tuple(rewards) == offline.rewards  # bit for bit: the same computation
        assert tuple(split) == offline.rounds
        assert sum(rewards) == pytest.approx(card.composite, abs=1e-9)
        assert (sum(rewards) < 0) == (card.harm > 0)


@pytest.mark.parametrize("name", DOMAIN_NAMES)
def test_scores_survive_a_jsonl_round_trip(name):
    for seed in range(10):
        for agent in ("expert", "random", "shotgun"):
            trajectory, task = _play(name, agent, seed, MIXED[seed % len(MIXED)])
            assert score(loads(dumps(trajectory)), task) == score(trajectory, task)
            assert score(loads(dumps(trajectory))) == score(trajectory, task)  # regenerated


def test_scoring_is_deterministic():
    trajectory, task = _play("travel", "all-parallel", 5, Knobs())
    assert dumps(trajectory) == dumps(_play("travel", "all-parallel", 5, Knobs())[0])
    assert score(trajectory, task) == score(trajectory, task)
