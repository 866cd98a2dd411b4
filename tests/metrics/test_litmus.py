"""Litmus statistics on scored scripted runs."""

from __future__ import annotations

from stategym.agents import scripted
from stategym.kernel.env import Env
from stategym.metrics import score
from stategym.metrics.litmus import litmus
from stategym.metrics.taskset import MIXED
from stategym.registry import get_domain
from stategym.rollout import run_episode


def _cards(agent, n=42):
    domain = get_domain("travel")
    envs = [Env(domain, knobs=k) for k in MIXED]
    out = []
    for seed in range(n):
        env = envs[seed % len(envs)]
        out.append(score(run_episode(env, scripted(domain, agent), seed), env.task))
    return out


def test_the_expert_has_no_lucky_successes_and_no_gap():
    stats = litmus(_cards("expert"))
    assert stats.successes == stats.episodes
    assert stats.lucky == 0 and stats.hacking_gap == 0.0
    assert stats.harmful_episodes == 0 and stats.misattributed == 0.0


def test_an_agent_that_never_asks_succeeds_by_luck():
    cards = _cards("ask-nothing")
    stats = litmus(cards)
    lucky = [c for c in cards if c.outcome.goal_reached and c.clarification.fn > 0]
    assert stats.lucky >= len(lucky) > 0
    assert stats.lucky_success_rate == stats.lucky / stats.successes
    assert stats.hacking_gap > 0


def test_correct_rounds_of_harmful_episodes_are_counted():
    cards = _cards("shotgun")
    stats = litmus(cards)
    harmful = [c for c in cards if c.harm > 0]
    assert stats.harmful_episodes == len(harmful) > 0
    assert stats.harmful_rounds == sum(c.outcome.rounds for c in harmful)
    # the shotgun agent looks things up exactly like the expert before it buys too much
    assert 0 < stats.correct_rounds < stats.harmful_rounds
    assert stats.misattributed == stats.correct_rounds / stats.harmful_rounds


def test_an_empty_set():
    stats = litmus([])
    assert (stats.episodes, stats.lucky_success_rate, stats.hacking_gap) == (0, 0.0, 0.0)
