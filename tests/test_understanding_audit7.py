"""How LLM agents punctuate and lead their questions, read whole by the simulated user
(audit 7c).

- An em dash, or an en dash between spaces, after a lead-in ends a sentence as a spaced
  hyphen does ("Quick question — what is your budget?"); not the en dash of a range
  ("09:00\u201317:00") (``sentences.questions``).
- A question in parentheses is a sentence of its own; an abbreviation's stop ("e.g.",
  "vs.") and a numbered line's ("1. ...") end no sentence (``sentences._unwrapped``).
- What a request lists (after "Could you tell me:", "the following?", in parentheses before
  its question mark, or as the object of "I need to know") is asked item by item, noun
  phrases and "whether" clauses too (``Matcher._introduced``, ``Matcher._read_sentence``).
- A clause that reaches a slot alone is not read as pointing back at the sentence before
  unless its own words weigh for the joined reading (``Matcher._pointed``).
- "I need some information first", "Could you tell me the following?" and a statement that
  opens with "any" ("Any departure time works for you.") beside a question name nothing.
"""

from __future__ import annotations

import pytest

from stategym import Knobs
from stategym.kernel.user import SimulatedUser, UserTurn
from stategym.registry import get_domain
from understood import reached


def _respond(name: str, seed: int, text: str) -> UserTurn:
    """A fresh user of the domain's task ``seed`` answering ``text``."""
    domain = get_domain(name)
    task = domain.generate(seed, Knobs())
    return SimulatedUser(task, domain.slot_phrases, judges=not domain.read_only).respond(text)


@pytest.mark.parametrize(
    ("name", "text", "asked"),
    [
        # F1: a dash before the question
        ("travel", "Quick question — what is your budget for this flight?", {"budget"}),
        ("travel", "Before I search – what is your budget for this flight?", {"budget"}),
        ("travel", "Before I search—what is your budget for this flight?", {"budget"}),
        ("travel", "A few questions:\n— What is your budget for this flight?", {"budget"}),
        (
            "meetings",
            "Before I start searching – which attendees are optional? Does the room need any "
            "equipment, such as video or a whiteboard?",
            {"optional", "room_feature"},
        ),
        # F2: a question in parentheses
        (
            "travel",
            "What is your budget for this flight? (Also, what time of day would you like to "
            "depart?)",
            {"budget", "departure"},
        ),
        (
            "travel",
            "I'll start looking as soon as I know a bit more (what is your budget for this "
            "flight?)",
            {"budget"},
        ),
        # F3: what a request lists
        (
            "shop",
            "Could you tell me:\n- Your budget for the whole order\n- By which day you need "
            "the delivery\n- Whether you have a preferred brand",
            {"budget", "deadline", "brand"},
        ),
        (
            "bank",
            "Could you tell me the following?\n1. The most you are willing to pay in fees\n"
            "2. Whether I may use money from your savings account\n3. Whether I should avoid "
            "converting currency",
            {"fee_cap", "savings", "conversion"},
        ),
        (
            "meetings",
            "Could you tell me: which attendees are optional and whether the room needs any "
            "equipment, such as video or a whiteboard?",
            {"optional", "room_feature"},
        ),
        (
            "travel",
            "Could you confirm a few details for me (your budget for this flight)?",
            {"budget"},
        ),
        (
            "shop",
            "Could you confirm a few details (your budget for the whole order, by which day "
            "you need the delivery and whether you have a preferred brand)?",
            {"budget", "deadline", "brand"},
        ),
        (
            "travel",
            "To find the right option I need to know your budget for this flight.",
            {"budget"},
        ),
        # F4, L3: an example in parentheses stays in its question
        (
            "meetings",
            "If I can't satisfy every wish, which should I prioritize (e.g. price vs. timing)?",
            {"priorities"},
        ),
        (
            "cloud",
            "How many days without activity make a volume count as idle for you (e.g. 30 days)?",
            {"idle_min"},
        ),
        (
            "cloud",
            "Could you tell me the following? How much storage do you need to free up? How "
            "many days without activity make a volume count as idle for you?",
            {"need_gb", "idle_min"},
        ),
        # F6, F8: a recap before the question
        (
            "travel",
            "Happy to help you book a flight to Toronto. What is your budget for this flight?",
            {"budget"},
        ),
        (
            "travel",
            "Got it — any departure time works for you. What is your budget for this flight?",
            {"budget"},
        ),
        (
            "travel",
            "Got it — you'd like to fly to Toronto between day 8 and day 10. What is your "
            "budget for this flight?",
            {"budget"},
        ),
        # L1: a statement that the agent needs information
        (
            "travel",
            "I need some information first. What is your budget for this flight?",
            {"budget"},
        ),
        (
            "meetings",
            "Thanks for the details — I've noted your request and I'm ready to start. Before I "
            "look anything up, I need a few things from you. How long should the meeting last?",
            {"duration"},
        ),
    ],
)
def test_each_question_is_read_however_it_is_punctuated(
    name: str, text: str, asked: set[str]
) -> None:
    assert reached(name, text) == asked


@pytest.mark.parametrize(
    ("name", "text"),
    [
        ("travel", "I need some information first."),
        ("travel", "I need a few things from you."),
        ("cloud", "Could you tell me the following?"),
    ],
)
def test_a_statement_that_only_needs_information_names_nothing(name: str, text: str) -> None:
    assert reached(name, text) == set()


@pytest.mark.parametrize(
    ("name", "text", "asked"),
    [
        # guards: what must not change
        ("travel", "Quick question - what is your budget for this flight?", {"budget"}),
        ("travel", "Before I search: what is your budget for this flight?", {"budget"}),
        ("travel", "Any departure time works for you.", {"departure"}),
        ("travel", "I need your budget.", {"budget"}),
        (
            "travel",
            "Your company's rules put a ceiling on a ticket. Could you tell me what that "
            "ceiling is?",
            {"policy_cap"},
        ),
        (
            "meetings",
            "If I can't satisfy every wish, which should I prioritize (for example, cost or "
            "timing)?",
            {"priorities"},
        ),
        ("meetings", "Is 09:00–17:00 your working day?", {"working_hours"}),
        ("travel", "Could you tell me what your budget is for this flight?", {"budget"}),
        ("travel", "What time of day would you like to depart?", {"departure"}),
        (
            "travel",
            "What is your budget?\nDo you need a refundable fare?",
            {"budget", "fare_type"},
        ),
    ],
)
def test_what_the_rules_leave_alone(name: str, text: str, asked: set[str]) -> None:
    assert reached(name, text) == asked


def test_a_dash_before_the_question_gets_its_answer() -> None:
    turn = _respond("travel", 0, "Quick question — what is your budget for this flight?")
    assert turn.asked == ("budget",)
    assert not turn.priority_asked


def test_a_vague_preamble_does_not_ask_the_priority_order() -> None:
    turn = _respond("travel", 0, "I need some information first.")
    assert not turn.priority_asked
    assert turn.asked == ()


def test_a_recap_before_the_question_is_not_answered() -> None:
    turn = _respond(
        "travel",
        0,
        "Happy to help you book a flight to Toronto. What is your budget for this flight?",
    )
    assert turn.asked == ("budget",)
