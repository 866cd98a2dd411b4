"""Monte-Carlo values against brute-force enumeration, and the ``mc`` advantage by hand."""

from __future__ import annotations

import math
import random

import pytest

from stategym import Env, run_episode
from stategym.agents import resolve
from stategym.metrics.credit import credit
from stategym.train.values import continuation_return, fill_values, mc_advantages, mc_value

TREE: dict[str, list[tuple[float, float, str | None]]] = {
    # state: (probability under the policy, reward, next state or None at the end)
    "start": [(0.3, 0.1, "asked"), (0.7, -1.0, None)],  # ask, or commit blind (harm)
    "asked": [(0.9, 0.9, None), (0.1, 0.0, None)],  # book the right fare, or give up
}


def exact_value(state: str | None) -> float:
    """V by recursion over the tree."""
    if state is None:
        return 0.0
    return sum(p * (r + exact_value(s)) for p, r, s in TREE[state])


def continuations(state: str) -> list[tuple[float, float]]:
    """Every continuation from ``state``: (its probability, its return), by brute force."""
    out = []
    for p, r, s in TREE[state]:
        if s is None:
            out.append((p, r))
        else:
            out.extend((p * q, r + g) for q, g in continuations(s))
    return out


def sample(state: str, rng: random.Random) -> float:
    total = 0.0
    node: str | None = state
    while node is not None:
        _, r, node = rng.choices(TREE[node], weights=[c[0] for c in TREE[node]])[0]
        total += r
    return total


def test_the_enumerated_continuations_give_the_exact_value() -> None:
    assert exact_value("asked") == pytest.approx(0.81)
    assert exact_value("start") == pytest.approx(0.3 * (0.1 + 0.81) - 0.7)
    for state in TREE:
        paths = continuations(state)
        assert sum(p for p, _ in paths) == pytest.approx(1.0)
        weights, returns = [p for p, _ in paths], [g for _, g in paths]
        assert mc_value(returns, weights) == pytest.approx(exact_value(state))


def test_k_sampled_continuations_estimate_the_value() -> None:
    rng = random.Random(0)
    returns = [sample("start", rng) for _ in range(4000)]
    estimate = mc_value(returns)
    spread = math.sqrt(sum((g - estimate) ** 2 for g in returns) / (len(returns) - 1))
    assert abs(estimate - exact_value("start")) < 4 * spread / math.sqrt(len(returns))


def test_mc_value_refuses_what_is_no_estimate() -> None:
    with pytest.raises(ValueError):
        mc_value([])
    with pytest.raises(ValueError):
        mc_value([1.0, 0.0], [0.5])
    with pytest.raises(ValueError):
        mc_value([1.0, 0.0], [0.0, 0.0])


def test_mc_advantage_is_r_plus_next_value_minus_value() -> None:
    # the episode asked (0.1) then booked (0.9); both states estimated exactly
    v_start, v_asked = exact_value("start"), exact_value("asked")
    got = mc_advantages([[0.1, 0.9]], [[v_start, v_asked]])
    assert got[0] == pytest.approx((0.1 + 0.81 + 0.427, 0.9 - 0.81))


def test_an_unestimated_state_takes_its_own_continuation() -> None:
    # only the decision state is estimated: round 0 is credited with its own outcome
    # against the average continuation; round 1 (no estimate) with nothing
    got = mc_advantages([[0.1, 0.9]], [[exact_value("start"), None]])
    assert got[0] == pytest.approx((0.1 + 0.9 + 0.427, 0.0))
    assert fill_values([0.1, 0.9], [None, None]) == pytest.approx((1.0, 0.9, 0.0))
    with pytest.raises(ValueError):
        fill_values([0.1], [None, None])
    with pytest.raises(ValueError):
        mc_advantages([[0.1]], [])


def test_a_continuations_return_is_r_less_the_running_composite_before_it() -> None:
    env = Env("travel")
    paid = credit(run_episode(env, resolve(env.domain, "expert"), seed=3), env.task)
    for start in range(1, len(paid.rounds)):
        before = paid.rounds[start - 1].running
        assert continuation_return(paid.rewards, start) == pytest.approx(paid.composite - before)
