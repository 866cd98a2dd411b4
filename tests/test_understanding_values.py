"""The ninth and tenth changes to the simulated user's matcher (docs/environment.md, "The
simulated user"): a name is a value, a preposition binds the "which" or "what" after it, a
slot claims a clause from the priority order's domain words, a tie between two nouns joined
by "or" asks both, and the shared intents learn no value."""

from __future__ import annotations

import pytest

from stategym.kernel.understanding import matcher_for
from stategym.kernel.understanding.features import NAME_TOKEN, features
from stategym.kernel.understanding.intents import GENERAL, PRIORITIES
from stategym.registry import get_domain
from understood import reached

NAMES = ["Sam Ortiz", "Ana Ruiz", "Tom Reed", "Milo Berg", "Xu Li", "Grace Okafor"]


def _readings(name: str, text: str) -> list[tuple[str | None, float]]:
    return [(r.intent, r.score) for r in matcher_for(get_domain(name).slot_phrases).read(text)]


@pytest.mark.parametrize("person", NAMES)
def test_the_name_a_guess_makes_up_does_not_change_its_reading(person: str) -> None:
    """Before, each name read as the slot of whichever question had used it ("Sam" -> the
    time zone, "Ana Ruiz" -> the attendees)."""
    question = f"{person} is optional, right?"
    assert _readings("meetings", question) == _readings("meetings", "Jo Park is optional, right?")
    assert reached("meetings", question) == {"optional"}


@pytest.mark.parametrize("person", ["Priya", "Omar", "Chen"])
def test_a_name_inside_a_sentence_reads_as_the_name_placeholder(person: str) -> None:
    question = f"Should I count {person} as optional?"
    assert _readings("meetings", question) == _readings(
        "meetings", "Should I count Bo as optional?"
    )
    clause = matcher_for(get_domain("meetings").slot_phrases).read(question)[0].clause
    assert person.lower() not in clause and NAME_TOKEN in clause


def test_a_preposition_binds_the_which_or_what_after_it() -> None:
    assert "from+which" in features("from which airport will you fly")
    assert "to+which" in features("to which city are you flying")
    assert "by+which" in features("by what date must it be paid")
    assert not any(f.endswith("+which") for f in features("which airport will you fly from"))
    assert not any(f.endswith("+which") for f in features("what is your budget"))


@pytest.mark.parametrize(
    "question", ["Buying what?", "What do you want to buy?", "What is it you want me to buy?"]
)
def test_a_domain_word_alone_is_no_question_about_priorities(question: str) -> None:
    """The priority order learns "buy" from shop's priority questions ("Would you buy from an
    unapproved vendor?"); a clause that says nothing else is not asking for the order."""
    assert all(intent != PRIORITIES for intent, _ in _readings("shop", question))


@pytest.mark.parametrize(
    ("name", "question"),
    [
        ("shop", "Should I buy from an unapproved vendor if the approved ones miss the deadline?"),
        ("shop", "Would you rather pay more or wait longer for the delivery?"),
        ("travel", "Would you rather fly a day later or pay more?"),
        ("bank", "Would you accept a late payment if it keeps the fee down?"),
    ],
)
def test_a_trade_still_asks_the_priority_order(name: str, question: str) -> None:
    assert [intent for intent, _ in _readings(name, question)] == [PRIORITIES]


def test_a_tie_between_two_nouns_joined_by_or_asks_both() -> None:
    matcher = matcher_for(get_domain("shop").slot_phrases)
    assert matcher._untied("any preferred brand or colour") == ["any preferred brand", "colour"]
    assert reached("shop", "Any preferred brand or colour?") == {"brand", "color"}


def test_a_clause_that_reads_one_slot_is_not_cut() -> None:
    matcher = matcher_for(get_domain("shop").slot_phrases)
    whole = "is delivery time important, or can it arrive whenever"
    assert matcher._untied(whole) == [whole]


@pytest.mark.parametrize(
    "garbage", ["What is your b b b b b b?", "b, your b b b b b b", "What is your 4 4 4 4 4?"]
)
@pytest.mark.parametrize("name", ["synth:askgate1", "shop", "travel", "lookup"])
def test_values_alone_reach_no_shared_intent(name: str, garbage: str) -> None:
    """The shared intents learn no value (a number, a letter). A tiny policy trained with GRPO
    on ``ask-or-act`` ended up saying "What is your b b b ..." and was answered as if it had
    asked for the agent's choice: "option A or option B" had taught that intent "b"."""
    assert all(intent not in GENERAL for intent, _ in _readings(name, garbage))


def test_a_slot_still_reads_its_values() -> None:
    assert reached("meetings", "You work 9 to 5, correct?") == {"working_hours"}
