"""The matcher's rules added after the tenth and eleventh held-out sets were measured: a near
tie between two slots is not a reading, "clash" and "rank what" weigh wishes, "Should I
<choose> the X one or the Y one?" hands the agent's choice over unless the two are ends of
one slot's scale, a trade offered after its condition ("If X, would you Y?") weighs like one
offered before it, and "outta", "acct" and "port" are read.

Every message here is written for the test (none is in a held-out set or a phrase table)."""

from __future__ import annotations

import pytest

from stategym.kernel.understanding import CHOICE, PRIORITIES, Matcher
from stategym.kernel.understanding.features import features
from stategym.kernel.understanding.model import TIE
from understood import reached

TABLE = {
    "origin": ("where do you fly from", "departure airport"),
    "destination": ("where do you fly to", "arrival airport"),
}


def _totals(matcher: Matcher, text: str) -> dict[str, float]:
    known = [f for f in features(text) if f in matcher.weights]
    return {k: sum(matcher.weights[f][i] for f in known) for i, k in enumerate(matcher.intents)}


def test_a_near_tie_between_two_slots_is_not_understood() -> None:
    """ "Which airport?" names both airports' slots equally: neither is answered."""
    matcher = Matcher(TABLE)
    totals = _totals(matcher, "which airport")
    assert abs(totals["origin"] - totals["destination"]) < TIE
    (reading,) = matcher.read("Which airport?")
    assert reading.intent is None and reading.evidence[0] == "tie"
    assert [r.intent for r in matcher.read("Which airport do you fly from?")] == ["origin"]


def test_a_clear_lead_is_read_as_before() -> None:
    matcher = Matcher(TABLE)
    (reading,) = matcher.read("Where are you flying to?")
    assert reading.intent == "destination" and "tie" not in reading.evidence


@pytest.mark.parametrize(
    ("name", "message"),
    [
        ("travel", "If the company cap and your own budget clash, which one wins?"),
        ("shop", "What do I do when the deadline clashes with the approved shops?"),
    ],
)
def test_a_clash_asks_the_priority_order(name: str, message: str) -> None:
    assert reached(name, message) == {PRIORITIES}


@pytest.mark.parametrize(
    ("name", "message"),
    [
        ("shop", "Should I order the walnut one or the oak one?"),
        ("travel", "Shall we book the morning one or the later one?"),
        ("meetings", "Should I book the Tuesday slot or the one after it?"),
    ],
)
def test_choosing_between_two_options_hands_the_choice_over(name: str, message: str) -> None:
    assert reached(name, message) == {CHOICE}


@pytest.mark.parametrize(
    "message",
    [
        "Which should win here: the biggest figure or the smallest?",
        "Does the top value win, or the bottom one?",
    ],
)
def test_two_ends_of_one_scale_ask_that_slot(message: str) -> None:
    assert reached("lookup", message) == {"pick"}


def test_two_wishes_compared_still_ask_the_priority_order() -> None:
    """Ends of a scale, but each side names another slot: the comparison weighs them."""
    assert reached("travel", "Which wins: the cheapest fare or the earliest flight?") == {
        PRIORITIES
    }


def test_a_choice_between_two_ends_of_one_scale_asks_that_slot() -> None:
    assert reached("lookup", "Should I pick the higher one or the lower one?") == {"pick"}
    assert reached("shop", "Should I order the red one or the blue one?") == {CHOICE}


@pytest.mark.parametrize(
    ("name", "message"),
    [
        ("travel", "If it costs more, would you take the refundable fare?"),
        ("cloud", "If the only idle disk is another team's, would you still remove it?"),
        ("shop", "Rank what matters to you."),
    ],
)
def test_a_trade_offered_after_its_condition_and_rank_what_weigh_wishes(
    name: str, message: str
) -> None:
    assert reached(name, message) == {PRIORITIES}


@pytest.mark.parametrize(
    ("name", "message", "slot"),
    [
        ("travel", "Flying outta which city?", "origin"),
        ("bank", "Payee acct?", "iban"),
    ],
)
def test_chat_spellings(name: str, message: str, slot: str) -> None:
    """(And "port" is a place: "What's your port of embarkation?" in the domains' rules.)"""
    assert reached(name, message) == {slot}
