"""The matcher reads a message's requests, not its statements (``model._requests_only``,
``words.asks``): a sentence that tells something beside one that asks ("I'd be happy to book
this for you. Which airport are you leaving from?") asks nothing, and neither does the
preamble of a request ("I want to avoid flights you can't take, so which days ...?")."""

from __future__ import annotations

import pytest

from stategym.kernel.understanding import CHOICE, matcher_for
from stategym.kernel.understanding.features import features
from stategym.kernel.understanding.sentences import questions
from stategym.kernel.understanding.words import asks, expand
from stategym.registry import get_domain
from understood import SYNTHETIC, reached

DOMAINS = ("travel", "meetings", "shop", "bank", "cloud", "lookup", SYNTHETIC)
STATEMENTS = ("I have noted {}.", "Suppose {} is settled.", "Thanks, I have {} now.")


@pytest.mark.parametrize(
    ("clause", "is_request"),
    [
        ("what is your budget", True),
        ("so, which days could you leave", True),
        ("could you tell me the agenda", True),
        ("please confirm the invoice number", True),
        ("i will need your departure airport", True),
        ("i would like to know your budget", True),
        ("until i know your travel dates", True),
        ("to proceed, i need the meeting length", True),
        ("so on what days are you free", True),
        ("i want to avoid late flights", False),
        ("which has its own costs", False),
        ("i would be happy to book this for you", False),
        ("suppose the only refundable fares leave in the morning", False),
        ("once i have found a fare", False),
    ],
)
def test_what_has_the_form_of_a_request(clause: str, is_request: bool) -> None:
    assert asks(clause) is is_request


def test_a_sentence_keeps_whether_it_ends_in_a_question_mark() -> None:
    text = expand("Thanks. Where to? I need it - now!")
    expected = [("thanks", False), ("where to", True), ("i need it", False), ("now", False)]
    assert questions(text) == expected


@pytest.mark.parametrize("name", DOMAINS)
def test_a_statement_naming_a_slot_beside_a_question_never_answers_it(name: str) -> None:
    """For every two slots of a domain: a statement naming the first, before or after a
    question about the second, asks what the question alone asks."""
    phrases = {s: p[0] for s, p in get_domain(name).slot_phrases.items() if s != "priorities"}
    for asked_slot, asked_phrase in phrases.items():
        question = f"What is {asked_phrase}?"
        alone = reached(name, question)
        for named_slot, named_phrase in phrases.items():
            if named_slot == asked_slot:
                continue
            for statement in STATEMENTS:
                said = statement.format(named_phrase)
                assert reached(name, f"{said} {question}") == alone, (said, question)
                assert reached(name, f"{question} {said}") == alone, (question, said)


@pytest.mark.parametrize(
    ("name", "message", "asked"),
    [
        (
            "travel",
            "I'd be glad to arrange this. Which airport are you leaving from? "
            "Your home airport isn't in my notes.",
            {"origin"},
        ),
        ("travel", "I want to skip fares you can't use, so what is your budget?", {"budget"}),
        ("travel", "Suppose every refundable fare leaves early. What should I prioritize?", set()),
        ("travel", "I can't search yet until I know your travel dates.", {"window"}),
        ("bank", "For invoice INV4000, who should receive the money?", {"payee"}),
        ("shop", "Including delivery to the office, how much can you spend?", {"budget"}),
        ("travel", "The film festival runs over day 9, isn't it?", {"event_days"}),
    ],
)
def test_statements_and_preambles_ask_nothing(name: str, message: str, asked: set[str]) -> None:
    assert reached(name, message) - {"priorities"} == asked


def test_a_statement_alone_is_still_read() -> None:
    """With no request beside it, a statement of need is the question."""
    assert reached("travel", "Your departure airport is needed to search.") == {"origin"}


@pytest.mark.parametrize(
    ("name", "question", "choice"),
    [
        ("meetings", "Which room would you like me to reserve?", True),
        ("shop", "Which desk should I buy?", True),
        ("shop", "Which listing should I add to the cart?", True),
        ("shop", "Which color would you like me to order?", False),
        ("meetings", "I found two free slots. Which would you like?", True),
        ("bank", "I can pay from two accounts. Which do you want?", True),
        ("shop", "What product would you like me to order?", False),
    ],
)
def test_which_option_to_take_is_the_agents_choice(name: str, question: str, choice: bool) -> None:
    readings = matcher_for(get_domain(name).slot_phrases).read(question)
    assert (CHOICE in {r.intent for r in readings}) is choice


@pytest.mark.parametrize(
    ("typed", "read"),
    [
        ("whats ur budget", "what is your budget"),
        ("it doesnt matter", "it does not matter"),
        ("i cant find it", "i can not find it"),
        ("qty?", "quantity?"),
        ("the unit is quantity", "the unit is quantity"),
    ],
)
def test_informal_spellings_read_as_the_words_they_stand_for(typed: str, read: str) -> None:
    assert expand(typed) == read


def test_which_binds_the_noun_it_asks_for() -> None:
    """ "Which company" asks for a company, whatever else the clause says of companies."""
    assert "which+company" in features("which company is that exactly")
    assert "which+property" in features("which property of the companies should i compare")
    assert not any(f.startswith("which+") for f in features("the company is big"))
