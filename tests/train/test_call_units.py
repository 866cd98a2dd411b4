"""Per-call shares are raw rewards; a round's advantage is normalised within its group. The
shares are put in the advantage's units before they are taken from it, so a call's credit
does not depend on the unit the rewards are counted in, and never flips its sign."""

from __future__ import annotations

from pathlib import Path

import pytest

from stategym.train import advantages as adv
from stategym.train.masks import call_advantages


def _split(rewards: list[list[float]], shares: list[float], norm: adv.Norm) -> tuple[float, ...]:
    """Episode 0's first round split over its calls, as the trainer splits it."""
    advantage = adv.dense_advantages(rewards, norm)[0][0]
    scale = adv.dense_scales(rewards, norm)[0][0]
    return call_advantages(advantage, [scale * s for s in shares])


@pytest.mark.parametrize("norm", adv.NORMS)
def test_a_split_follows_the_rewards_unit_as_the_rounds_advantage_does(norm: adv.Norm) -> None:
    """Rewards counted ten times larger: ``std`` advantages are unit-free, so the split is
    the same; ``none`` and ``rloo`` are in reward units, so the split is ten times larger."""
    rewards, shares = [[0.5, 0.25], [0.0, 0.5], [0.25, 0.0]], [0.5, 0.25, 0.0]
    tenfold = [[10 * r for r in row] for row in rewards]
    once = _split(rewards, shares, norm)
    assert len(set(once)) == 3  # the calls are told apart
    factor = 1 if norm == "std" else 10
    wanted = [factor * a for a in once]
    assert _split(tenfold, [10 * s for s in shares], norm) == pytest.approx(wanted, rel=1e-5)


def test_a_call_that_earned_what_the_others_earned_is_not_reinforced() -> None:
    """The auditor's case: A's first call earned 0.5, its second 0; B earned nothing.
    A's second call is worth what B's calls are worth: under every norm it gets no more
    than B's round advantage (the old raw shares gave it +0.207 under std)."""
    rewards = [[0.5], [0.0]]
    for norm in adv.NORMS:
        second = _split(rewards, [0.5, 0.0], norm)[1]
        assert second == pytest.approx(adv.dense_advantages(rewards, norm)[1][0], abs=1e-5)
        assert second < 0


def test_a_group_without_a_comparison_does_not_split() -> None:
    assert adv.group_scale([0.5], "none") == 0.0
    assert adv.group_scale([0.5, 0.5], "std") == 0.0
    assert adv.group_scale([0.5, 0.5], "none") == 1.0
    keys = [["a", "b"], ["a", "c"]]  # rounds of "b" and "c" are alone in their step groups
    scales = adv.gigpo_scales([[0.5, 0.0], [0.0, 0.25]], keys, weight=2.0, norm="none")
    assert scales == ((2.0, 0.0), (2.0, 0.0))


def test_the_trainer_splits_a_real_group_in_advantage_units(sft_run: Path) -> None:
    """Through ``call_scales`` and ``sample_of``: travel episodes of three teachers under
    ``std``, the expert's parallel rounds split by their scaled shares."""
    pytest.importorskip("torch")
    from stategym.kernel.knobs import Knobs
    from stategym.metrics.credit import credit
    from stategym.metrics.score import score
    from stategym.train.config import GRPOConfig
    from stategym.train.group import Member, _teach
    from stategym.train.grpo import call_scales, group_advantages, sample_of
    from stategym.train.policy import Policy

    policy = Policy.load(sft_run / "model")
    teachers = ("all-parallel", "expert", "serial")
    group = [
        _teach(policy, Member("travel", 3, Knobs(), sample=i, teacher=t), "compact")
        for i, t in enumerate(teachers)
    ]
    cards = [score(r.trajectory, r.task) for r in group]
    for credit_name in ("dense", "gigpo"):
        config = GRPOConfig(credit=credit_name, norm="std", max_length=1_000_000)
        per_round = group_advantages(config, group, cards)
        scales = call_scales(config, group, cards)
        assert scales is not None
        split = 0
        for rollout, card, advantages, scale in zip(group, cards, per_round, scales, strict=True):
            sample = sample_of(policy, rollout, card, advantages, config, scale)
            paid = credit(rollout.trajectory, rollout.task, card).rounds
            for t, record in enumerate(rollout.trajectory.rounds):
                if len(record.calls) < 2 or scale[t] in (0.0, 1.0):
                    continue
                wanted = call_advantages(advantages[t], [scale[t] * s for s in paid[t].calls])
                raw = call_advantages(advantages[t], paid[t].calls)
                start, end = rollout.spans[t]
                got = sorted(set(sample.advantages[start:end]))
                assert set(wanted) <= set(got), (credit_name, t)
                if wanted != raw:
                    split += 1
        assert split, f"{credit_name}: no parallel round was split with a scale other than 1"


def test_returns_equal_up_to_rounding_do_not_split() -> None:
    """Audit 13D F1: on travel seed 19 the expert and ask-nothing both reach R 1.0, but their
    first rounds' returns are 1.0000000000000002 and 1.0; ``1 / (std + eps)`` of that group
    was about 1e6, and ask-nothing's calls got advantages near -7e4."""
    from stategym import Env, run_episode
    from stategym.agents import resolve
    from stategym.metrics.credit import credit

    rewards = []
    for name in ("expert", "ask-nothing"):
        env = Env("travel")
        trajectory = run_episode(env, resolve(env.domain, name), seed=19)
        rewards.append(list(credit(trajectory, env.task).rewards))
    first = [adv.return_to_go(r)[0] for r in rewards]
    assert first[0] != first[1] and abs(first[0] - first[1]) < 1e-12  # the case itself
    assert adv.dense_scales(rewards, "std")[1][0] == 0.0
    keys = [["start", *range(1, len(r))] for r in rewards]  # both decide round 0 alike
    assert adv.gigpo_scales(rewards, keys, norm="std")[1][0] == 0.0
