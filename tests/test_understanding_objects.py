"""The twelfth change to the simulated user's matcher (docs/environment.md, "The simulated
user"): a "what" that is the object of a verb binds to it ("what should I buy" -> ``what+buy``),
"make" after a determiner is a brand, a title-cased word of the lexicon is not a name, and
"during the day" asks for a time of day."""

from __future__ import annotations

import pytest

from stategym.kernel.understanding.features import features
from stategym.kernel.understanding.training import proper_names
from understood import reached


@pytest.mark.parametrize(
    ("clause", "bound"),
    [
        ("what exactly do you want me to buy", "what+buy"),
        ("what am i buying", "what+buy"),
        ("buying what", "what+buy"),
        ("could you tell me what you would like me to order", "what+order"),
        ("what should we purchase", "what+purchas"),
    ],
)
def test_a_what_that_is_a_verbs_object_binds_to_it(clause: str, bound: str) -> None:
    assert bound in features(clause)


@pytest.mark.parametrize(
    "clause",
    ["what is the item", "what budget do you have", "what colour", "when should i buy it"],
)
def test_other_whats_bind_nothing(clause: str) -> None:
    """A "what" before a noun, the subject of a copula, or no "what": no object."""
    assert not any(f.startswith("what+") for f in features(clause))


@pytest.mark.parametrize(
    "question",
    [
        "What should we purchase?",
        "Could you tell me what you'd like me to order?",
        "Buying what, exactly?",
    ],
)
def test_what_the_agent_should_buy_asks_for_the_item(question: str) -> None:
    """Before, "buy" weighed most for the open questions ("Which one should I buy?"), and the
    words around it were function words: "What exactly do you want me to buy?" and "Buying
    what?" were not understood on seven of the thirteen sets."""
    assert reached("shop", question) == {"item"}


@pytest.mark.parametrize("question", ["Which make?", "Any particular make you're after?"])
def test_make_after_a_determiner_is_the_brand(question: str) -> None:
    """ "make" is a function word ("make sure"): "Any make?" was read as nothing at all."""
    assert reached("shop", question) == {"brand"}


def test_make_as_a_verb_stays_a_function_word() -> None:
    assert "brand" not in features("could you make sure the budget is right")


def test_a_title_cased_word_of_the_lexicon_is_not_a_name() -> None:
    """ "International Bank Account Number" read as four names (one feature, ``propername``),
    so the recipient's number was read as the recipient; a sentence's first two words ("If
    Bo", "Please tell") were names too."""
    assert proper_names("Kindly furnish the recipient's International Bank Account Number.") == {
        "international"
    }
    assert proper_names("Is Milo Berg optional?") == {"milo", "berg"}
    assert proper_names("Please Tell me more") == set()


def test_the_payees_title_cased_account_number_is_the_iban() -> None:
    assert reached("bank", "Kindly provide the recipient's Bank Account Number.") == {"iban"}


@pytest.mark.parametrize(
    ("name", "question", "asked"),
    [
        ("travel", "When during the day should your flight leave?", {"departure"}),
        ("meetings", "Whatever day it is, what part of that day suits you?", {"time_of_day"}),
    ],
)
def test_during_the_day_asks_for_a_time_of_day(name: str, question: str, asked: set[str]) -> None:
    assert reached(name, question) == asked
