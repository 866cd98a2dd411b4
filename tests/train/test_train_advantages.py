"""The advantage estimators against hand-computed examples."""

from __future__ import annotations

import math

import pytest

from stategym import Env
from stategym.agents import resolve
from stategym.metrics.credit import credit
from stategym.train.advantages import (
    EPS,
    composite_advantages,
    dense_advantages,
    gigpo_advantages,
    normalise_group,
    outcome_advantages,
    per_round,
    return_to_go,
)


def close(got, want, tol: float = 1e-9) -> None:
    assert len(got) == len(want)
    for g, w in zip(got, want, strict=True):
        if isinstance(w, tuple):
            close(g, w, tol)
        else:
            assert g == pytest.approx(w, abs=tol), (got, want)


def test_grpo_divides_by_the_sample_std() -> None:
    # mean 0.25, centred (0.75, -0.25 x3), sample variance 0.75 / 3 -> std 0.5
    got = normalise_group([1.0, 0.0, 0.0, 0.0], "std")
    close(got, (0.75 / (0.5 + EPS), *(-0.25 / (0.5 + EPS),) * 3))


def test_dr_grpo_only_centres() -> None:
    close(normalise_group([1.0, 0.0, 0.0, 0.0], "none"), (0.75, -0.25, -0.25, -0.25))


def test_rloo_is_the_leave_one_out_baseline() -> None:
    values = [0.9, 0.1, 0.3, 0.5]
    want = tuple(v - (sum(values) - v) / 3 for v in values)
    close(normalise_group(values, "rloo"), want)
    close(normalise_group([1.0, 0.0, 0.0, 0.0], "rloo"), (1.0, -1 / 3, -1 / 3, -1 / 3))


@pytest.mark.parametrize("norm", ["std", "none", "rloo"])
def test_equal_values_and_singletons_have_no_advantage(norm) -> None:
    assert normalise_group([0.1, 0.1, 0.1], norm) == (0.0, 0.0, 0.0)
    assert normalise_group([0.7], norm) == (0.0,)
    assert normalise_group([], norm) == ()


def test_an_unknown_norm_is_refused() -> None:
    with pytest.raises(ValueError, match="unknown norm"):
        normalise_group([1.0, 0.0], "mean")  # type: ignore[arg-type]


def test_outcome_is_binary_success() -> None:
    close(outcome_advantages([True, False], "none"), (0.5, -0.5))
    # std of (1, 0) with Bessel's correction is sqrt(0.5)
    scale = math.sqrt(0.5) + EPS
    close(outcome_advantages([True, False]), (0.5 / scale, -0.5 / scale))
    close(outcome_advantages([True, True, False], "rloo"), (0.5, 0.5, -1.0))


def test_composite_uses_r_itself() -> None:
    close(composite_advantages([0.8, 0.2, -1.0], "none"), (0.8, 0.2, -1.0))
    # sum is 0 -> mean 0; a harmful episode's -1 stays far below the others
    close(composite_advantages([0.8, 0.2], "none"), (0.3, -0.3))


def test_per_round_and_return_to_go() -> None:
    assert per_round([0.5, -0.5, 0.0], [3, 1, 0]) == ((0.5, 0.5, 0.5), (-0.5,), ())
    with pytest.raises(ValueError):
        per_round([0.5], [1, 2])
    close(return_to_go([1.0, 1.0, 1.0], gamma=0.5), (1.75, 1.5, 1.0))
    assert return_to_go([]) == ()


DENSE = [[0.2, 0.3, 0.5], [0.6], [-0.5, 0.1]]
"""Three episodes of unequal length; returns-to-go (1.0, 0.8, 0.5), (0.6,), (-0.4, 0.1)."""


def test_dense_baseline_counts_ended_members_as_absorbing_zeros() -> None:
    # t=0: (1.0, 0.6, -0.4) mean 0.4; t=1: (0.8, 0, 0.1) mean 0.3; t=2: (0.5, 0, 0) mean 1/6
    got = dense_advantages(DENSE, norm="none")
    close(got, ((0.6, 0.5, 0.5 - 1 / 6), (0.2,), (-0.8, 0.1 - 0.3)))
    # a baseline over the members still running would give the lone last round 0
    assert got[0][2] != 0


def test_dense_normalises_per_round_index() -> None:
    got = dense_advantages(DENSE, norm="std")
    # t=2: (0.5, 0, 0): centred (1/3, -1/6, -1/6), sample std sqrt(1/12)
    assert got[0][2] == pytest.approx((1 / 3) / (math.sqrt(1 / 12) + EPS))
    # t=1: (0.8, 0, 0.1): centred (0.5, -0.3, -0.2), sample std sqrt(0.38 / 2)
    std = math.sqrt(0.38 / 2) + EPS
    close((got[0][1], got[2][1]), (0.5 / std, -0.2 / std))
    assert [len(a) for a in got] == [3, 1, 2]


def test_dense_discounts() -> None:
    # returns-to-go with gamma 0.5: (0.2 + 0.5 * (0.3 + 0.5 * 0.5), ...) = (0.475, 0.55, 0.5)
    got = dense_advantages([[0.2, 0.3, 0.5], [0.0, 0.0, 0.0]], norm="none", gamma=0.5)
    close(got, ((0.2375, 0.275, 0.25), (-0.2375, -0.275, -0.25)))


def test_gigpo_hand_example_with_singleton_step_groups() -> None:
    rewards = [[0.0, 1.0], [0.0, 0.0], [0.5]]
    keys = [["s0", "x"], ["s0", "y"], ["s0"]]
    returns = [1.0, 0.0, 0.5]
    # episode level (none): (0.5, -0.5, 0); step group s0: RTG (1, 0, 0.5) -> (0.5, -0.5, 0);
    # x and y are singletons: step advantage 0, the episode-level advantage only
    got = gigpo_advantages(returns, rewards, keys, weight=0.5, norm="none")
    close(got, ((0.75, 0.5), (-0.75, -0.5), (0.0,)))


def test_gigpo_coarse_keys_merge_step_groups() -> None:
    rewards = [[0.0, 1.0], [0.0, 0.0], [0.5]]
    keys = [["s0", "x"], ["s0", "y"], ["s0"]]

    def coarse(key):
        return "start" if key == "s0" else "later"

    got = gigpo_advantages([1.0, 0.0, 0.5], rewards, keys, weight=0.5, norm="none", coarse=coarse)
    # x and y now share a group: RTG (1, 0) -> (0.5, -0.5)
    close(got, ((0.75, 0.75), (-0.75, -0.75), (0.0,)))


def test_gigpo_refuses_mismatched_inputs() -> None:
    with pytest.raises(ValueError):
        gigpo_advantages([1.0], [[0.5, 0.5]], [["a"]])
    with pytest.raises(ValueError):
        gigpo_advantages([1.0, 0.0], [[0.5]], [["a"]])


def _played(env: Env, agent: str, seed: int):
    """An episode played step by step, with the state key before each round."""
    observation, _ = env.reset(seed=seed)
    policy = resolve(env.domain, agent)(env.task)
    keys = []
    while not env.done:
        keys.append(env.state_key())
        observation = env.step(policy.act(observation)).observation
    return env.trajectory, keys


def test_gigpo_on_real_state_keys() -> None:
    env = Env("travel")
    played = [_played(env, agent, 3) for agent in ("expert", "ask-nothing", "serial", "oracle")]
    paid = [credit(trajectory, env.task) for trajectory, _ in played]
    rewards = [c.rewards for c in paid]
    returns = [c.composite for c in paid]
    keys = [k for _, k in played]
    got = gigpo_advantages(returns, rewards, keys, weight=0.5, norm="none")
    episode = normalise_group(returns, "none")
    # every member starts in the task's initial state: round 0 is one step group whose
    # returns-to-go are the episodes' R, so its step advantage equals the episode's
    assert len({k[0] for k in keys}) == 1
    for i in range(4):
        assert got[i][0] == pytest.approx(1.5 * episode[i])
    # a round decided in a state no other member reached keeps the episode advantage only
    counts: dict[str, int] = {}
    for row in keys:
        for key in row:
            counts[key] = counts.get(key, 0) + 1
    lonely = [(i, t) for i, row in enumerate(keys) for t, key in enumerate(row) if counts[key] == 1]
    assert lonely
    for i, t in lonely:
        assert got[i][t] == pytest.approx(episode[i])
