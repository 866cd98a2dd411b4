"""D2 priority: hand-built choices on the toy task, and inversions on generated tasks."""

from __future__ import annotations

import pytest
from metrics_toy import calls, expert_rounds, finish, pay, renumber, task, trajectory

from stategym.metrics import Kind, score
from stategym.metrics.gold import gold_of
from stategym.metrics.priority import inversions, priority_quality
from stategym.metrics.taskset import MIXED
from stategym.registry import all_domains, cached_task

DOMAIN_NAMES = sorted(all_domains())


def _prio(rounds, the_task=None, **kwargs):
    the_task = the_task or task()
    return score(trajectory(the_task, renumber(rounds), **kwargs), the_task).priority


def test_the_best_choice_scores_one():
    # weights policy 8, budget 4, booked 2, early 1; A meets policy+budget+booked = 14
    scored = _prio(expert_rounds())
    assert (scored.choice, scored.score, scored.best, scored.nothing) == ("A", 14, 14, 13)
    assert scored.quality == 1.0 and scored.inversions == 0


def test_the_inferior_option_scores_below_doing_better():
    scored = _prio([*expert_rounds()[:5], _paid("B"), finish(0)])
    # B meets policy+booked+early = 11 < S0 = 13: clipped to 0; budget is violated under
    # booked and early, both avoidable (A meets budget and policy)
    assert scored.score == 11 and scored.quality == 0.0
    assert scored.inversions == 2


def test_committing_nothing_scores_zero_when_something_was_better():
    scored = _prio([*expert_rounds()[:4], finish(4)], committed=())
    assert scored.choice is None and scored.quality == 0.0
    assert scored.inversions == 1  # booked violated, early satisfied


def test_when_refusing_is_best_refusing_scores_one_and_committing_zero():
    the_task = task(best=())
    assert _prio([finish(0)], the_task, committed=()).quality == 1.0
    assert _prio([_paid("A"), finish(1)], the_task).quality == 0.0


def test_several_commitments_count_as_the_worst_of_them():
    scored = _prio([_paid("A"), _paid("B"), finish(2)])
    assert scored.choice == "B"


def test_a_stateless_task_is_judged_on_its_answer():
    the_task = task(stateful=False)
    assert _prio([finish(0, "A")], the_task, answer="A").quality == 1.0
    assert _prio([finish(0, "B")], the_task, answer="B").quality == 0.0
    assert _prio([finish(0, "no idea")], the_task, answer="no idea").choice is None


def test_the_choice_event_sits_on_the_commit_round_and_is_terminal():
    card = score(trajectory(task(), renumber(expert_rounds())), task())
    choice = [e for e in card.events if e.kind is Kind.CHOICE]
    assert [(e.round, e.terminal, e.value) for e in choice] == [(5, True, 1.0)]


def test_formula():
    assert priority_quality(4, 1, 6) == pytest.approx(0.6)
    assert priority_quality(0, 1, 6) == 0.0
    assert priority_quality(7, 1, 6) == 1.0
    assert priority_quality(1, 1, 1) == 1.0 and priority_quality(0, 1, 1) == 0.0


@pytest.mark.parametrize("name", DOMAIN_NAMES)
def test_best_options_never_have_an_avoidable_inversion(name):
    checked = 0
    for seed in range(60):
        generated = cached_task(name, seed, MIXED[seed % len(MIXED)])
        gold = gold_of(generated)
        for option in generated.truth.best:
            assert inversions(generated, gold, option) == [], (seed, option)
            checked += 1
        if not generated.truth.best:
            assert inversions(generated, gold, None) == [], seed
    assert checked > 0


def _paid(option):
    return calls(0, pay(option))
