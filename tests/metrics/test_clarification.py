"""D1 clarification on hand-built trajectories of the toy task."""

from __future__ import annotations

import pytest
from metrics_toy import (
    LOOKUPS,
    SEARCHES,
    UPDATE,
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

from stategym.metrics import Kind, score
from stategym.metrics.clarification import ALPHA, clarification_quality


def _clar(rounds, the_task=None):
    the_task = the_task or task()
    return score(trajectory(the_task, renumber(rounds)), the_task)


def test_expert_asks_exactly_the_missing_slot():
    card = _clar(expert_rounds())
    assert (card.clarification.tp, card.clarification.fn, card.clarification.fp) == (1, 0, 0.0)
    assert card.clarification.quality == 1.0
    kinds = [e.kind for e in card.events if e.dimension == "clarification"]
    assert kinds == [Kind.ASK_NEEDED]


def test_a_slot_used_before_it_is_asked_is_missed_at_the_use():
    rounds = expert_rounds()[1:]  # never asks the budget
    card = _clar(rounds)
    assert (card.clarification.tp, card.clarification.fn) == (0, 1)
    assert card.clarification.quality == 0.0
    missed = [e for e in card.events if e.kind is Kind.ASK_MISSED]
    assert [(e.round, e.subject, e.terminal) for e in missed] == [(2, "budget", False)]


def test_a_slot_asked_only_after_its_use_is_late_not_needless():
    rounds = [
        calls(0, *LOOKUPS),
        calls(0, *SEARCHES),
        calls(0, hold("A")),
        say(0, asked=("budget",)),
        say(0, proposed="A", accepted=True),
        calls(0, pay("A")),
        finish(0),
    ]
    card = _clar(rounds)
    assert (card.clarification.tp, card.clarification.fn, card.clarification.fp) == (0, 1, 0.0)
    assert Kind.ASK_LATE in {e.kind for e in card.events}


def test_needless_questions_are_weighted_by_what_they_ask():
    rounds = [say(0, asked=("budget", "seat", "origin", "day")), *expert_rounds()[1:]]
    card = _clar(rounds)
    # seat (irrelevant) 1 + origin (derivable) ALPHA + day (given) 1
    assert card.clarification.fp == pytest.approx(2 + ALPHA)
    assert card.clarification.quality == pytest.approx(clarification_quality(1, 0, 2 + ALPHA))


def test_asking_a_known_slot_again_is_needless():
    rounds = [say(0, asked=("budget",)), say(0, asked=("budget",)), *expert_rounds()[1:]]
    card = _clar(rounds)
    assert (card.clarification.tp, card.clarification.fp) == (1, 1.0)


def test_a_repeated_proposal_is_needless_unless_the_user_changed_their_mind():
    rounds = expert_rounds()
    spam = [*rounds[:5], say(0, proposed="A", accepted=True), *rounds[5:]]
    assert _clar(spam).clarification.fp == 1.0
    # a change of mind announced between the proposals makes the second one needed
    notice = calls(0, *LOOKUPS[1:], notice=(("budget", 400),))
    changed = [*rounds[:5], notice, say(0, proposed="A", accepted=True), *rounds[5:]]
    assert _clar(changed).clarification.fp == 0.0
    # a change the agent has not been told of yet does not
    fired = renumber(spam)
    fired[4] = say(4, proposed="A", accepted=True, fired=(0,))
    the_task = task(events=(UPDATE,))
    assert score(trajectory(the_task, fired), the_task).clarification.fp == 1.0


def test_a_message_the_user_cannot_use_is_needless():
    rounds = [say(0), *expert_rounds()]
    card = _clar(rounds)
    assert card.clarification.fp == 1.0
    assert card.clarification.quality == pytest.approx(0.5)


def test_a_priority_question_without_priorities_to_learn_is_needless():
    rounds = [say(0, asked=("budget",), priority=True), *expert_rounds()[1:]]
    assert _clar(rounds).clarification.fp == 1.0


def test_nothing_to_ask_and_nothing_asked_is_perfect_and_not_applicable():
    the_task = task(must_ask=())
    card = score(trajectory(the_task, renumber(expert_rounds()[1:])), the_task)
    assert card.clarification.quality == 1.0
    assert "clarification" not in card.applicable


def test_asking_when_nothing_is_missing_scores_zero():
    the_task = task(must_ask=())
    card = score(
        trajectory(the_task, renumber([say(0, asked=("seat",)), *expert_rounds()[1:]])), the_task
    )
    assert card.clarification.quality == 0.0
    assert "clarification" in card.applicable


def test_a_slot_the_user_volunteers_before_its_use_drops_out():
    rounds = expert_rounds()[1:]
    rounds[0] = calls(0, *LOOKUPS, notice=(("budget", 400),))
    card = _clar(rounds)
    assert (card.clarification.tp, card.clarification.fn) == (0, 0)
    assert card.clarification.quality == 1.0


def test_a_missing_slot_never_used_is_missed_at_the_end():
    rounds = [calls(0, *LOOKUPS), finish(1)]
    card = _clar(rounds, task(best=()))
    missed = [e for e in card.events if e.kind is Kind.ASK_MISSED]
    assert [(e.round, e.terminal) for e in missed] == [(1, True)]


def test_formula_examples():
    assert clarification_quality(0, 0, 0) == 1.0
    assert clarification_quality(2, 0, 0) == 1.0
    assert clarification_quality(0, 3, 0) == 0.0
    assert clarification_quality(3, 0, 5 * ALPHA) == pytest.approx(3 / 5.5)
