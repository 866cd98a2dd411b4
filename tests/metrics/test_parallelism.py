"""D3 parallelism on hand-built trajectories of the toy task.

Required nodes: profile, policy, search:1, search:2, hold (5). Value edges: 7. Independent
pairs of required nodes: profile-policy, policy-search:1, policy-search:2, search:1-search:2.
"""

from __future__ import annotations

import pytest
from metrics_toy import (
    LOOKUPS,
    PRICE,
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

from stategym.kernel.tools import Effect
from stategym.kernel.trajectory import CallRecord
from stategym.metrics import Dimension, Kind, score
from stategym.metrics.parallelism import parallelism_quality

ASK, CONFIRM, PAY, FINISH = (
    say(0, asked=("budget",)),
    say(0, proposed="A", accepted=True),
    calls(0, pay("A")),
    finish(0),
)


def _par(rounds, the_task=None):
    the_task = the_task or task()
    card = score(trajectory(the_task, renumber(rounds)), the_task)
    return card.parallelism, card.events


def test_expert_is_perfect():
    scored, _ = _par(expert_rounds())
    assert (scored.coverage, scored.violations, scored.economy, scored.efficiency) == (1, 0, 1, 1)
    assert scored.quality == 1.0


def test_one_call_per_round_halves_the_score():
    serial = [
        ASK,
        *(calls(0, c) for c in (*LOOKUPS, *SEARCHES)),
        calls(0, hold("A")),
        CONFIRM,
        PAY,
        FINISH,
    ]
    scored, events = _par(serial)
    assert scored.serialised == 4 and scored.efficiency == 0.0
    assert scored.quality == 0.5
    assert sum(e.kind is Kind.CALL_SERIALISED for e in events) == 4


def test_waiting_for_a_value_that_is_needed_is_not_serialisation():
    # the searches wait for the profile (PIPE): issuing them a round later costs nothing
    scored, _ = _par(expert_rounds())
    assert scored.serialised == 0


def _guessing(right: bool):
    origin = "HOME" if right else "ELSEWHERE"
    guesses = (
        call("search", {"origin": origin, "day": 1}),
        call("search", {"origin": origin, "day": 2}),
    )
    rounds = [ASK, calls(0, *LOOKUPS, *guesses)]
    if not right:
        rounds.append(calls(0, *SEARCHES))  # the guess failed: search again
    return [*rounds, calls(0, hold("A")), CONFIRM, PAY, FINISH]


def test_a_guessed_dependency_costs_the_same_whether_right_or_wrong():
    right, right_events = _par(_guessing(True))
    wrong, wrong_events = _par(_guessing(False))
    assert right.early == wrong.early == 2
    assert right.violations == wrong.violations == pytest.approx(2 / 3)  # value paths 3 deep
    early = [(e.round, e.subject) for e in right_events if e.kind is Kind.CALL_EARLY]
    assert early == [(1, "profile->search"), (1, "profile->search")]
    assert [(e.round, e.subject) for e in wrong_events if e.kind is Kind.CALL_EARLY] == early
    # the wrong guess also wasted two calls (a consequence, like harm, not the guess itself)
    assert (right.extra, wrong.extra) == (0, 2)


def test_speculative_calls_cost_economy():
    rounds = expert_rounds()
    rounds[1] = calls(1, *LOOKUPS, call("list_bookings"), call("search", {"origin": "X", "day": 9}))
    scored, _events = _par(rounds)
    assert scored.extra == 2
    assert scored.economy == pytest.approx(1 - 2 / 8)
    assert scored.early == 1  # the sprayed search needed the profile too


def _researched(price: int = 900) -> CallRecord:
    """Day 2 searched again: its result shows B's fare, by default the new one PRICE sets."""
    flights = [{"id": "B", "price": price}]
    return call("search", {"origin": "HOME", "day": 2}, content={"flights": flights})


def test_a_change_in_the_world_excuses_one_informed_recheck():
    the_task = task(events=(PRICE,))
    rounds = expert_rounds()
    # the search of day 2 shows B, and B's price moves after it: that look is out of date
    rounds[2] = calls(2, SEARCHES[0], _researched(500), fired=(0,))
    rechecked = [*rounds[:3], calls(0, _researched()), *rounds[3:]]
    scored, _ = _par(rechecked, the_task)
    assert scored.extra == 0 and scored.quality == 1.0
    unexcused = [*rounds[:3], calls(0, _researched()), calls(0, _researched()), *rounds[3:]]
    assert _par(unexcused, the_task)[0].extra == 1


@pytest.mark.parametrize("effect", [Effect.WRITE, Effect.COMMIT])
def test_a_change_in_the_world_never_excuses_a_call_that_changes_the_world(effect):
    """Audit 5 §4: only a read re-reads. Holding B again after its fare jumped (a write) is a
    second hold the change did not ask for; before, it was excused (travel: a stray
    ``hold_fare`` of the decoy whose price jumped scored R = 1.000 on 12 of 60 seeds)."""
    the_task = task(events=(PRICE,))
    rounds = expert_rounds()
    rounds[2] = calls(2, *SEARCHES, fired=(0,))
    again = call("hold", {"option": "B"}, effect=effect, content={"option": "B"})
    scored, events = _par([*rounds[:3], calls(0, again), *rounds[3:]], the_task)
    assert scored.extra == 1 and scored.quality < 1.0
    assert [(e.round, e.subject) for e in events if e.kind is Kind.CALL_EXTRA] == [(3, "hold")]


def test_paying_in_the_same_round_as_the_hold_is_unverified_and_counted_once():
    """A commit's unobserved preconditions are risk's concern (UNVERIFIED), not also an
    early call of D3: counted twice, commit-same-round lost more on parallelism than on the
    risk it abuses once a guess cost a step of the value path (issue 10 §2)."""
    rounds = [*expert_rounds()[:3], calls(0, hold("A"), pay("A")), FINISH]
    scored, events = _par(rounds)
    assert scored.early == 0
    assert [e.kind for e in events if e.dimension is Dimension.RISK] == [Kind.COMMIT_UNVERIFIED]


def test_proposing_before_holding_is_an_early_proposal():
    rounds = [*expert_rounds()[:3], CONFIRM, calls(0, hold("A")), PAY, FINISH]
    scored, _ = _par(rounds)
    assert scored.early == 1


@pytest.mark.parametrize(
    ("before", "skipped"),
    [(1, 3), (2, 2), (3, 1), (4, 0)],
    ids=["before-any-lookup", "after-the-lookups", "after-the-searches", "after-the-hold"],
)
def test_an_early_proposal_costs_each_step_of_the_value_path_it_skipped(before, skipped):
    """Audit 5 §2: the value path to the confirmation is profile -> search -> hold ->
    confirm (L = 3). A proposal moved before round ``before`` of the expert's skipped the
    unobserved nodes on that path; before, it cost 1 wherever it stood (a blind proposal,
    before any lookup, scored R = 0.909 on most tasks of every domain)."""
    rounds = expert_rounds()
    proposal = rounds.pop(4)
    rounds.insert(before, proposal)
    scored, events = _par(rounds)
    assert scored.early == skipped
    assert scored.violations == pytest.approx(skipped / 3)
    early = [e for e in events if e.kind is Kind.CALL_EARLY]
    assert [e.value for e in early] == ([-float(skipped)] if skipped else [])


def test_a_guess_two_steps_early_costs_two_and_one_step_early_one():
    ask, lookups, searches, *rest = expert_rounds()
    # the hold beside the lookups skipped the searches and the profile they need
    two = [ask, calls(0, *LOOKUPS, hold("A")), searches, *rest[1:]]
    scored, events = _par(two)
    assert [(e.subject, e.value) for e in events if e.kind is Kind.CALL_EARLY] == [
        ("policy,search:1,search:2->hold", -2.0)
    ]
    assert scored.early == 2 and scored.violations == pytest.approx(2 / 3)
    # beside the searches, it skipped only them
    one = [ask, lookups, calls(0, *SEARCHES, hold("A")), *rest[1:]]
    scored, events = _par(one)
    assert [(e.subject, e.value) for e in events if e.kind is Kind.CALL_EARLY] == [
        ("search:1,search:2->hold", -1.0)
    ]
    assert scored.early == 1 and scored.violations == pytest.approx(1 / 3)


def test_proposing_an_option_after_holding_that_option_is_not_early():
    # the gold hold is of A; holding B and proposing B observed B's fresh fare
    rounds = [
        *expert_rounds()[:3],
        calls(0, hold("B")),
        say(0, proposed="B", accepted=False),
        *expert_rounds()[3:],
    ]
    scored, _ = _par(rounds)
    assert scored.early == 0


def test_missing_required_calls_cost_coverage():
    rounds = [
        ASK,
        calls(0, LOOKUPS[0]),
        calls(0, SEARCHES[0]),
        calls(0, hold("A")),
        CONFIRM,
        PAY,
        FINISH,
    ]
    scored, _ = _par(rounds)
    assert scored.coverage == pytest.approx(3 / 5)


def test_a_failed_call_covers_nothing():
    rounds = expert_rounds()
    rounds[3] = calls(3, call("hold", {"option": "A"}, effect=None, error="sold out"))
    scored, _ = _par(rounds)
    assert scored.coverage == pytest.approx(4 / 5) and scored.extra == 1


def test_formula():
    assert parallelism_quality(1.0, 0.0, 1.0, 1.0) == 1.0
    assert parallelism_quality(1.0, 0.0, 1.0, 0.0) == 0.5
    assert parallelism_quality(1.0, 1.0, 1.0, 1.0) == 0.0
    assert parallelism_quality(0.5, 0.5, 0.5, 1.0) == pytest.approx(0.125)
