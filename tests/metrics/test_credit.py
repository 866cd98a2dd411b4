"""Per-round credit (stategym.metrics.credit) on hand-built trajectories of the toy task.

The toy task has all four dimensions applicable (n = 4), five required calls, seven value
edges and one decision point, so every running composite below is the geometric mean
``g(Q_clar, Q_prio, Q_par, Q_risk)`` of R's formula, written out by hand.
"""

from __future__ import annotations

import math

import pytest
from hypothesis import given
from hypothesis import strategies as st
from metrics_toy import (
    LOOKUPS,
    SEARCHES,
    call,
    calls,
    expert_rounds,
    finish,
    hold,
    pay,
    renumber,
    say,
    task,
    trajectory,
)

from stategym.metrics import score
from stategym.metrics.composite import FLOOR
from stategym.metrics.credit import credit

PROFILE = LOOKUPS[0]


def g(*qualities: float) -> float:
    """R's geometric mean over the four toy dimensions."""
    return math.prod(FLOOR + (1 - FLOOR) * q for q in qualities) ** (1 / len(qualities))


def _paid(rounds):
    the_task = task()
    played = trajectory(the_task, renumber(rounds))
    return credit(played, the_task), score(played, the_task)


def test_rounds_are_paid_the_change_in_the_running_composite():
    paid, card = _paid([say(0, asked=("budget",)), calls(0, *LOOKUPS), finish(0)])
    # asked: Q_clar 1; nothing chosen, covered or settled yet: Q_prio = Q_par = Q_risk = 0
    assert paid.rewards[0] == pytest.approx(g(1, 0, 0, 0))
    # two of five required calls covered: kappa = 2/5
    assert paid.rewards[1] == pytest.approx(g(1, 0, 0.4, 0) - g(1, 0, 0, 0))
    # finish settles a missed commit (Q_risk 0) and doing nothing (Q_prio 0): no change
    assert paid.rewards[2] == 0.0
    assert card.composite == pytest.approx(g(1, 0, 0.4, 0))
    assert sum(paid.rewards) == pytest.approx(card.composite)


def test_episodes_of_unequal_length_each_sum_to_their_own_r():
    long, long_card = _paid(expert_rounds())
    short, short_card = _paid([calls(0, PROFILE), finish(0)])
    assert (len(long.rounds), len(short.rounds)) == (7, 2)
    assert long_card.composite == 1.0 and sum(long.rewards) == pytest.approx(1.0)
    # never asked: the pending must-ask slot counts as missed from the start
    assert short.rewards == pytest.approx((g(0, 0, 0.2, 0), 0.0))
    assert sum(short.rewards) == pytest.approx(short_card.composite)
    # the expert's round rewards: all progress, the choice and safe commit settle at the end
    assert all(r > 0 for r in long.rewards[:3]) and long.rounds[-1].rest > 0


def test_a_parallel_round_splits_its_reward_over_its_calls_in_logged_order():
    paid, _ = _paid([calls(0, PROFILE, hold("A")), finish(0)])
    first, second = paid.rounds[0].calls
    assert first == pytest.approx(g(0, 0, 0.2, 0))
    # the hold guesses values (search:1, search:2, policy): an early call that skipped two
    # steps of a value path three deep (the searches and the profile they need); it covers
    # a second node and uses the budget unasked (already pending as missed: Q_clar stays 0)
    assert second == pytest.approx(g(0, 0, 0.4 * (1 - 2 / 3), 0) - g(0, 0, 0.2, 0))
    assert first + second + paid.rounds[0].rest == pytest.approx(paid.rewards[0])
    assert paid.rounds[1].calls == (0.0,)  # finish causes nothing
    swapped, _ = _paid([calls(0, hold("A"), PROFILE), finish(0)])
    assert swapped.rewards[0] == pytest.approx(paid.rewards[0])
    assert swapped.rounds[0].calls[0] == pytest.approx(g(0, 0, 0.2 * (1 - 2 / 3), 0))


def test_a_message_and_an_invalid_round_are_paid_as_whole_rounds():
    from stategym.kernel.trajectory import RoundKind, RoundRecord

    invalid = RoundRecord(0, 0, 1, RoundKind.INVALID, format_errors=("bad_json",))
    paid, _ = _paid([say(0, asked=("seat",)), invalid, calls(0, PROFILE), finish(0)])
    needless = paid.rounds[0]
    # an irrelevant slot asked: FP 1, so Q_clar = 0 / (0 + 1 pending + 1)
    assert needless.calls == () and needless.rest == needless.reward == pytest.approx(g(0, 0, 0, 0))
    # an invalid round is a wasted round (issue 10 §2), which costs nothing while no call has
    # been made yet (Q_par is still 0)
    assert paid.rewards[1] == 0.0


def test_padding_a_round_costs_at_most_r_and_stays_above_harm():
    """Issue 10 §2: 1,000 duplicate calls in one round returned -32.5 under the old event-sum
    dense reward, below every harmful episode; the running composite keeps R's order."""
    padded, padded_card = _paid(
        [say(0, asked=("budget",)), calls(0, *([PROFILE] * 1000)), finish(0)]
    )
    harmful, harmful_card = _paid([calls(0, pay("B")), finish(0)])
    assert harmful_card.harm > 0
    old_padded = sum(e.reward for e in padded_card.events)
    old_harmful = sum(e.reward for e in harmful_card.events)
    assert old_padded < old_harmful  # the bug: padding looked worse than harm
    assert -1.0 <= sum(harmful.rewards) < 0 < sum(padded.rewards) <= 1.0
    assert sum(padded.rewards) == pytest.approx(padded_card.composite)
    assert all(-2.0 <= r <= 2.0 for r in padded.rewards)


ROUNDS = {
    "ask budget": say(0, asked=("budget",)),
    "ask seat": say(0, asked=("seat",)),
    "propose A": say(0, proposed="A", accepted=True),
    "lookups": calls(0, *LOOKUPS),
    "searches": calls(0, *SEARCHES),
    "hold A": calls(0, hold("A")),
    "pay A": calls(0, pay("A")),
    "pay B": calls(0, pay("B")),
    "pad": calls(0, *([PROFILE] * 40)),
    "bad": calls(0, call("nope", error="unknown tool")),
}


@given(st.lists(st.sampled_from(sorted(ROUNDS)), min_size=1, max_size=12))
def test_any_trajectory_returns_its_r_and_harm_returns_less(names):
    paid, card = _paid([ROUNDS[n] for n in names] + [finish(0)])
    total = sum(paid.rewards)
    assert total == pytest.approx(card.composite, abs=1e-9)
    assert -1.0 <= total <= 1.0 + 1e-12
    assert (total < 0) == (card.harm > 0)  # every harmful return below every harmless one
    for r in paid.rounds:
        assert r.reward == pytest.approx(sum(r.calls) + r.rest, abs=1e-12)
