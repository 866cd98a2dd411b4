"""The eleventh change to the simulated user's matcher (docs/environment.md, "The simulated
user"): what a question sets aside is never read, a question said twice is read once, a slot
whose own words are words of comparing keeps them, and two nouns joined by "or"/"and" are
tried one by one whenever their slots lie close."""

from __future__ import annotations

import pytest

from stategym.kernel.understanding.intents import PRIORITIES
from stategym.kernel.understanding.words import restates, sets_aside, sets_context
from understood import SYNTHETIC, reached


@pytest.mark.parametrize(
    "clause",
    [
        "quantity aside",
        "the budget aside for a moment",
        "setting aside the quantity",
        "setting the comparison measure aside",
        "never mind how many for now",
        "besides your own budget",
        "leaving aside the dates",
        "other than the deadline",
    ],
)
def test_a_clause_that_sets_a_thing_aside_is_context(clause: str) -> None:
    assert sets_aside(clause) and sets_context(clause)


@pytest.mark.parametrize(
    "clause",
    ["if you have a budget", "how much should i set aside", "before i book"],
)
def test_other_clauses_set_nothing_aside(clause: str) -> None:
    assert not sets_aside(clause)


@pytest.mark.parametrize(
    ("name", "question", "asked"),
    [
        ("shop", "Quantity aside, which product do you want?", {"item"}),
        (
            "travel",
            "Leaving the budget aside for a moment, which airport would you depart from?",
            {"origin"},
        ),
    ],
)
def test_what_a_question_sets_aside_is_not_asked(name: str, question: str, asked: set[str]) -> None:
    """Before, "quantity aside" was no context, and "Leaving the budget aside for a moment,
    ..." weighed the budget against the airport as a trade ("... for a moment")."""
    assert reached(name, question) == asked


@pytest.mark.parametrize(
    ("name", "question", "aside"),
    [
        ("shop", "Setting aside the quantity, how do you feel about it?", "quantity"),
        ("travel", "Never mind the budget for now, what do you think?", "budget"),
        ("shop", "Quantity aside, what do you think?", "quantity"),
    ],
)
def test_what_is_set_aside_is_not_read_even_when_nothing_else_is(
    name: str, question: str, aside: str
) -> None:
    """A context clause is read when the question beside it reaches nothing ("If you have a
    budget, what is it?"); one that sets its thing aside says that thing is not asked."""
    assert aside not in reached(name, question)


def test_a_clause_after_a_bare_comma_restates_the_one_before() -> None:
    sentence = "where are you starting out from, what is your point of departure"
    parts = ["where are you starting out from", "what is your point of departure"]
    assert restates(sentence, parts) == [False, True]
    sentence = "where are you flying to, and where from"
    assert restates(sentence, ["where are you flying to", "where from"]) == [False, False]


@pytest.mark.parametrize(
    ("name", "question", "asked"),
    [
        ("travel", "Where are you starting out from, what's your point of departure?", {"origin"}),
        ("bank", "Where should the funds go, which bank account?", {"iban"}),
        ("travel", "Where are you flying to, and from which airport?", {"destination", "origin"}),
    ],
)
def test_a_question_said_twice_is_read_once(name: str, question: str, asked: set[str]) -> None:
    """Of 478 two-slot questions in the held-out sets, none joins its two questions by a bare
    comma; a question said again in other words read as a second slot was a wrong answer."""
    assert reached(name, question) == asked


@pytest.mark.parametrize(
    "question",
    ["Which end of the scale wins?", "Which end of the comparison should win?"],
)
def test_lookups_pick_keeps_its_words_of_comparing(question: str) -> None:
    assert reached("lookup", question) == {"pick"}


@pytest.mark.parametrize(
    ("name", "question", "asked"),
    [
        ("meetings", "Let me know who is nice-to-have rather than required.", {"optional"}),
        ("meetings", "Would you rather meet later or drop Ana?", {PRIORITIES}),
        ("travel", "Which wins for you, the price or the evening departure?", {PRIORITIES}),
        ("shop", "Would you rather pay more or wait longer for the delivery?", {PRIORITIES}),
    ],
)
def test_comparing_words_weigh_wishes_unless_a_slot_owns_them(
    name: str, question: str, asked: set[str]
) -> None:
    assert reached(name, question) == asked


@pytest.mark.parametrize(
    ("name", "question", "asked"),
    [
        ("shop", "Any preferred brand or colour?", {"brand", "color"}),
        ("meetings", "What length and what time of day?", {"duration", "time_of_day"}),
        (SYNTHETIC, "What's your reference and routing code?", {"ref", "tail"}),
        ("travel", "what time of day do you want to leave, morning or later?", {"departure"}),
    ],
)
def test_two_nouns_are_read_one_by_one_when_their_slots_lie_close(
    name: str, question: str, asked: set[str]
) -> None:
    """Only at a tie, "Any preferred brand or colour?" read as one slot once v14 joined the
    training data (brand 10.7, colour 10.0: no tie)."""
    assert reached(name, question) == asked
