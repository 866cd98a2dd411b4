"""The exploration-guard teacher ``ask-pP``: deterministic, p=0 is ask-nothing, p=1 the expert."""

from __future__ import annotations

import pytest

from stategym import Env, run_episode
from stategym.agents import resolve
from stategym.agents.guard import draw, guard_probability, must_ask, skipped
from stategym.kernel.knobs import Knobs
from stategym.kernel.trajectory import Trajectory
from stategym.metrics.score import score
from stategym.registry import all_domains, cached_task

DOMAINS = [*all_domains(), "synth:askgate3+conflict"]
SEEDS = range(6)


def _play(domain: str, agent: str, seed: int) -> tuple[Trajectory, Env]:
    env = Env(domain)
    return run_episode(env, resolve(env.domain, agent), seed=seed), env


def _actions(trajectory: Trajectory) -> list[object]:
    return [r.action() for r in trajectory.rounds]


@pytest.mark.parametrize("domain", DOMAINS)
@pytest.mark.parametrize(("p", "twin"), [("0", "ask-nothing"), ("1", "expert")])
def test_the_ends_are_ask_nothing_and_the_expert(domain: str, p: str, twin: str) -> None:
    for seed in SEEDS:
        guard, _ = _play(domain, f"ask-p{p}", seed)
        other, _ = _play(domain, twin, seed)
        assert _actions(guard) == _actions(other), (domain, seed)
        assert guard.agent == f"ask-p{p}"


def _asked(trajectory: Trajectory, env: Env) -> int:
    return score(trajectory, env.task).clarification.tp


@pytest.mark.parametrize("domain", ["travel", "shop", "synth:askgate3+conflict"])
def test_more_probability_only_adds_questions_and_replays_the_same(domain: str) -> None:
    for seed in SEEDS:
        counts = []
        for p in ("0", "0.3", "0.7", "1"):
            first, env = _play(domain, f"ask-p{p}", seed)
            again, _ = _play(domain, f"ask-p{p}", seed)
            assert _actions(first) == _actions(again)
            counts.append(_asked(first, env))
        assert counts == sorted(counts), (seed, counts)
        assert counts[0] == 0


def test_each_fact_is_asked_with_probability_p() -> None:
    pairs = []
    for seed in range(400):
        task = cached_task("travel", seed, Knobs())
        pairs += [(task, slot) for slot in must_ask(task)]
    assert len(pairs) > 500
    for p in (0.2, 0.5, 0.8):
        share = sum(draw(task, slot) < p for task, slot in pairs) / len(pairs)
        # a binomial share of n > 500 draws lies within 0.07 of p (over 3 sigma)
        assert abs(share - p) < 0.07, (p, share)
        asked = {(t.seed, s) for t, s in pairs if s not in skipped(t, p)}
        assert asked == {(t.seed, s) for t, s in pairs if draw(t, s) < p}


def test_names() -> None:
    assert guard_probability("ask-p0.25") == 0.25
    assert guard_probability("ask-p1.0") == 1.0
    for name in ("ask-p1.5", "ask-p", "ask-p-0.1", "expert", "ask-p2"):
        assert guard_probability(name) is None
    env = Env("travel")
    with pytest.raises(KeyError, match="ask-pP"):
        resolve(env.domain, "ask-p1.5")
