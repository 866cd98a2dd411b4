"""The thirteenth change to the simulated user's matcher (docs/environment.md, "The simulated
user"): a sentence that opens by pointing back ("What are its dates?", "How much?") is read
with the sentence before it, and "I want to get them right" is a statement, not a request."""

from __future__ import annotations

import pytest

from stategym.kernel.understanding.words import asks, refers_back
from understood import SYNTHETIC, reached


@pytest.mark.parametrize(
    "clause",
    [
        "what are its dates",
        "could you share it",
        "which ones are they",
        "could you tell me what that ceiling is",
        "how much",
        "and when",
    ],
)
def test_a_pronoun_a_demonstrative_or_bare_question_words_refer_back(clause: str) -> None:
    assert refers_back(clause)


@pytest.mark.parametrize(
    "clause",
    [
        "what is your budget",
        "so that i can book, which airport",
        "is that right",
        "is that your budget",
        "which day",
    ],
)
def test_a_clause_that_names_its_topic_refers_to_nothing(clause: str) -> None:
    """ "so that I", "is that": "that" before a pronoun or a verb points at no noun."""
    assert not refers_back(clause)


@pytest.mark.parametrize(
    ("name", "question", "slots"),
    [
        # alone, "its dates" reads the travel window, "How much?" the budget
        (
            "travel",
            "Is the film festival still on around day 9? What are its dates, then?",
            {"event_days"},
        ),
        (
            "travel",
            "Does your employer cap what you can spend on flights? How much?",
            {"policy_cap"},
        ),
        (
            "travel",
            "Your company probably sets a ceiling on airfare. What is that ceiling?",
            {"policy_cap"},
        ),
        (SYNTHETIC, "I need your routing code to send this on. Can you share it?", {"tail"}),
    ],
)
def test_a_sentence_that_points_back_asks_about_what_it_points_at(
    name: str, question: str, slots: set[str]
) -> None:
    """Each of these read a second slot (or the wrong one) before the change."""
    assert reached(name, question) == slots


def test_a_scene_is_not_what_a_pronoun_points_at() -> None:
    """A clause of context only sets the scene ("Before we get to the retention rules"): the
    "it" after it is the situation, not the retention policy."""
    assert reached("cloud", "Before we get to the retention rules - which project is it?") == {
        "project_id"
    }


def test_within_a_sentence_a_clause_after_and_asks_on_its_own() -> None:
    """ "they" points at the units, but "where should they go" asks for the address: the
    rule holds only across sentences."""
    assert reached("shop", "How many do you need, and where should they go?") == {
        "quantity",
        "address",
    }


def test_a_question_that_names_its_topic_is_read_alone() -> None:
    assert reached("travel", "Thanks for waiting. What is your budget?") == {"budget"}


@pytest.mark.parametrize(
    ("clause", "asking"),
    [
        ("and i want to get them right", False),
        ("i would like to get the invitation list right from the start", False),
        ("i want to get your dates", True),
        ("i would like to get your budget right away", True),
    ],
)
def test_getting_something_right_is_a_statement(clause: str, asking: bool) -> None:
    """ "I want to get them right" says the agent means to be careful; it asks nothing
    (before, "want to get" made it a request, and "Your question involves two things, and I
    want to get them right." was answered with lookup's other item)."""
    assert asks(clause) is asking
