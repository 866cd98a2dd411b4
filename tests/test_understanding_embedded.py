"""The fourteenth change to the simulated user's matcher (docs/environment.md, "The simulated
user"): a question word inside a statement opens no request, "come before", "ahead of" and "a
must or ..." rank wishes, "one(s)" points back, and a clause of nothing but question words
shares the rest of the clause after it."""

from __future__ import annotations

import pytest

from stategym.kernel.understanding.words import embedded, refers_back
from understood import reached


@pytest.mark.parametrize(
    ("clause", "opens"),
    [
        ("which vendors can supply the order", True),
        ("any company rules", True),
        ("so what is your budget", True),
        ("i need your budget", False),
        ("tell me which airport", False),
    ],
)
def test_a_clause_opened_by_a_question_word_or_any_may_be_embedded(
    clause: str, opens: bool
) -> None:
    assert embedded(clause) is opens


@pytest.mark.parametrize(
    ("name", "question", "slots"),
    [
        (
            "shop",
            "Quantity changes the price and which sellers can take the order. "
            "How many units do you want?",
            {"quantity"},
        ),
        (
            "travel",
            "I'll respect your own limit as well as any company rules. "
            "What is your own budget for the ticket?",
            {"budget"},
        ),
    ],
)
def test_a_question_word_inside_a_statement_asks_nothing(
    name: str, question: str, slots: set[str]
) -> None:
    """Before, "which sellers ..." and "any company rules" made their statement a request,
    and it was answered beside the question (vendors, the policy cap)."""
    assert reached(name, question) == slots


@pytest.mark.parametrize(
    "question",
    [
        "What is your budget and which airport do you leave from?",
        "Tell me your budget and which airport you leave from.",
    ],
)
def test_a_question_word_after_and_in_a_request_still_asks(question: str) -> None:
    """In a question, or beside a request, the clause after "and" is asked as before."""
    assert reached("travel", question) == {"budget", "origin"}


@pytest.mark.parametrize(
    ("name", "question"),
    [
        ("bank", "Should paying at all come before paying on time?"),
        ("meetings", "Is the afternoon a must or a nice-to-have?"),
        ("travel", "Should I put the refundable fare ahead of the evening departure?"),
    ],
)
def test_coming_before_or_ahead_and_a_must_rank_wishes(name: str, question: str) -> None:
    """Before, these read as the open question, the optional attendees and the fare type."""
    assert reached(name, question) == {"priorities"}


@pytest.mark.parametrize(
    "question",
    [
        "I believe purchasing only allows certain shops. Which ones are those?",
        "Only some sellers are approved, I think. Which ones?",
    ],
)
def test_which_ones_points_back_at_the_sentence_before(question: str) -> None:
    """Alone, "Which ones?" names nothing; before, neither was understood."""
    assert refers_back("which ones")
    assert reached("shop", question) == {"vendors"}


@pytest.mark.parametrize(
    ("name", "question"),
    [
        ("meetings", "How early and how late in the calendar could the meeting happen?"),
        ("meetings", "How early and how late on the calendar can this go?"),
        ("travel", "How early and how late could you travel, date-wise?"),
    ],
)
def test_bare_question_words_share_the_rest_of_the_next_clause(name: str, question: str) -> None:
    """ "how early" alone reads the time of day (the departure time in travel); it asks how
    early on the calendar, as the clause after it says."""
    assert reached(name, question) == {"window"}


def test_a_clause_that_names_its_own_slot_keeps_it() -> None:
    assert reached("shop", "How many, and where should they go?") == {"quantity", "address"}
