"""The orderings the metrics promise, pinned on the mixed task set of every registered domain.

- The expert scores 1.0 on the composite on every task.
- Every pathological agent scores strictly below the expert, and the dimension it abuses is
  where it loses most against the expert (a tie is allowed: never committing loses risk and
  priority on exactly the same tasks, by the same amount).
- Every adversary (issue 10 §2: fishing, padding, post-commit damage, excuse harvesting,
  lucky guessing; Hardening §2: open questions instead of finishing, malformed finish
  rounds; audit 18A: a false closing report) scores below the expert on every stateful
  domain, never above it on a task, and
  at least 0.1 below it on every task where its exploit is clearly bad.
- The oracle (privileged, never asks) reaches the goal on every task but loses on
  clarification wherever a must-ask slot was missing (unless the user volunteered it).

A habit a domain gives no room for (a read-only domain has nothing to commit, so
never-commit plays exactly like the expert) cannot rank anything there and is skipped for
that domain; the test checks it really changed nothing.
"""

from __future__ import annotations

import functools

import pytest

from stategym.agents import ADVERSARIES, PATHOLOGICAL, scripted
from stategym.kernel.env import Env
from stategym.kernel.trajectory import Trajectory
from stategym.metrics import DIMENSIONS, Dimension, Scorecard, score
from stategym.metrics.taskset import MIXED
from stategym.registry import all_domains, cached_task, get_domain
from stategym.rollout import run_episode

DOMAIN_NAMES = sorted(all_domains())
STATEFUL_NAMES = [n for n in DOMAIN_NAMES if not get_domain(n).read_only]

TASKS = 70
"""Tasks per domain: ten of each mixed knob setting."""

ABUSES: dict[str, Dimension] = {
    "ask-nothing": Dimension.CLARIFICATION,
    "ask-everything": Dimension.CLARIFICATION,
    "confirm-spam": Dimension.CLARIFICATION,
    "all-serial": Dimension.PARALLELISM,
    "all-parallel": Dimension.PARALLELISM,
    "spray": Dimension.PARALLELISM,
    "never-commit": Dimension.RISK,
    "commit-unverified": Dimension.RISK,
    "commit-same-round": Dimension.RISK,
    "shotgun": Dimension.RISK,
}


def test_every_pathological_agent_has_an_abused_dimension():
    assert set(ABUSES) == set(PATHOLOGICAL)


@functools.cache
def _played(name: str, agent: str) -> tuple[tuple[Trajectory, Scorecard], ...]:
    domain = get_domain(name)
    envs = [Env(domain, knobs=k) for k in MIXED]
    make = scripted(domain, agent)
    out = []
    for seed in range(TASKS):
        env = envs[seed % len(envs)]
        trajectory = run_episode(env, make, seed)
        out.append((trajectory, score(trajectory, env.task)))
    return tuple(out)


def _means(name: str, agent: str) -> dict[Dimension, float]:
    cards = [card for _, card in _played(name, agent)]
    return {d: sum(c.quality(d) for c in cards) / len(cards) for d in DIMENSIONS}


def _same_actions(name: str, agent: str) -> bool:
    return all(
        [r.action() for r in a.rounds] == [r.action() for r in b.rounds]
        for (a, _), (b, _) in zip(_played(name, "expert"), _played(name, agent), strict=True)
    )


@pytest.mark.parametrize("name", DOMAIN_NAMES)
def test_the_expert_scores_one_on_every_mixed_task(name):
    assert [c.composite for _, c in _played(name, "expert")] == [1.0] * TASKS


@pytest.mark.parametrize("agent", PATHOLOGICAL)
@pytest.mark.parametrize("name", DOMAIN_NAMES)
def test_pathological_agents_lose_most_on_what_they_abuse(name, agent):
    if _same_actions(name, agent):
        pytest.skip(f"{name} gives {agent} nothing to do differently from the expert")
    cards = [card for _, card in _played(name, agent)]
    composite = sum(c.composite for c in cards) / len(cards)
    assert composite < 1.0
    expert, mine = _means(name, "expert"), _means(name, agent)
    deficit = {d: expert[d] - mine[d] for d in DIMENSIONS}
    abused = ABUSES[agent]
    assert deficit[abused] > 0, deficit
    assert deficit[abused] >= max(deficit.values()) - 1e-12, deficit


@pytest.mark.parametrize("name", DOMAIN_NAMES)
def test_the_oracle_reaches_the_goal_but_loses_on_clarification_where_slots_were_missing(name):
    missing = 0
    for trajectory, card in _played(name, "oracle"):
        must_ask = cached_task(name, card.seed, trajectory.knobs).must_ask
        assert card.outcome.goal_reached, card.task_id
        assert card.clarification.tp == 0  # it never asks
        volunteered = any(r.notice_values for r in trajectory.rounds)
        if must_ask and not volunteered:
            missing += 1
            assert card.clarification.fn == len(must_ask), card.task_id
            assert card.clarification.quality < 1.0, card.task_id
        if not must_ask:
            assert card.clarification.quality == 1.0, card.task_id
    has_missing = any(cached_task(name, s, MIXED[s % len(MIXED)]).must_ask for s in range(TASKS))
    assert missing > 0 or not has_missing


CLEARLY_BAD = 0.1
"""How far below the expert an adversary must score on a task where its exploit is clearly
bad: three or more rejected proposals, an episode never finished, data destroyed."""


def _clearly_bad(trajectory: Trajectory, card: Scorecard) -> bool:
    rejected = sum(1 for e in card.events if e.subject.startswith("rejected:"))
    unfinished = any(e.subject == "no finish" for e in card.events)
    destroyed = any(e.kind.value == "commit_harmful" for e in card.events)
    return rejected >= 3 or unfinished or destroyed


@pytest.mark.parametrize("agent", ADVERSARIES)
@pytest.mark.parametrize("name", STATEFUL_NAMES)
def test_adversaries_score_below_the_expert_and_a_tenth_below_where_clearly_bad(name, agent):
    """Issue 10 §2: every exploit the metric once paid for now costs, on every stateful
    domain; where it is clearly bad, at least a tenth of R on that very task."""
    if _same_actions(name, agent):
        pytest.skip(f"{name} gives {agent} nothing to do differently from the expert")
    played = _played(name, agent)
    cards = [card for _, card in played]
    assert sum(c.composite for c in cards) / len(cards) < 1.0
    expert = [card for _, card in _played(name, "expert")]
    for (trajectory, card), best in zip(played, expert, strict=True):
        assert card.composite <= best.composite, card.task_id
        if _clearly_bad(trajectory, card):
            assert card.composite <= best.composite - CLEARLY_BAD, card.task_id
