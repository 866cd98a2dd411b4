"""The matcher's two reading rules beyond its weights: typos read as the word meant
(``spelling.py``), and clauses of context that name a slot without asking it
(``words.sets_context``)."""

from __future__ import annotations

import pytest

from stategym.kernel.understanding import matcher_for
from stategym.kernel.understanding.features import NAME_TOKEN
from stategym.kernel.understanding.spelling import Speller
from stategym.kernel.understanding.words import sets_context
from stategym.registry import get_domain
from understood import SYNTHETIC, reached

DOMAINS = ("travel", "meetings", "shop", "bank", "cloud", "lookup", SYNTHETIC)
OPENERS = ("Aside from", "Apart from", "Besides", "Before I check", "Knowing", "Regardless of")


@pytest.mark.parametrize(
    ("typo", "meant"),
    [
        ("budjet", "budget"),
        ("orgin", "origin"),
        ("agneda", "agenda"),
        ("destinaton", "destination"),
    ],
)
def test_a_one_edit_typo_reads_as_the_word_meant(typo: str, meant: str) -> None:
    assert Speller(["budget", "origin", "agenda", "destination", "depart"]).correct(typo) == meant


def test_english_words_ids_short_words_and_doubtful_typos_stay_as_they_are() -> None:
    speller = Speller(["origin", "budget", "marks", "parks", "mixer"])
    assert speller.correct("organ") is None  # English, one edit from nothing it knows anyway
    assert speller.correct("budgets") is None  # English: a plural is not a typo
    assert speller.correct("mixes") is None  # English, though one edit from "mixer"
    assert speller.correct("origi1") is None  # a digit: an id, not a word
    assert speller.correct("orgn") is None  # too short to tell
    assert speller.correct("qarks") is None  # "marks" or "parks": two stems, read as neither


def test_a_correction_lands_only_on_an_english_or_lexicon_word() -> None:
    """A labelled question's typo is known to the model, but no typo is corrected to it."""
    assert Speller(["budget", "budjet"]).correct("buddjet") is None  # only "budjet" is in reach
    assert Speller(["budjet"], trusted=["budjet"]).correct("buddjet") == "budjet"


def test_a_name_inside_a_sentence_is_never_a_typo() -> None:
    matcher = matcher_for(get_domain("shop").slot_phrases)
    assert matcher.speller.correct("budegt") == "budget"
    clause = matcher.read("I found the desk from Budegt.")[0].clause
    assert "budget" not in clause and NAME_TOKEN in clause


def test_the_matcher_reads_typos_through_its_own_vocabulary() -> None:
    assert reached("travel", "Whats your budegt for the fare?") == {"budget"}
    assert reached("meetings", "Whats the agnda?") == {"agenda"}


@pytest.mark.parametrize(
    ("clause", "context"),
    [
        ("aside from the company policy limit", True),
        ("before i look at fares within your budget", True),
        ("so i can book a room large enough", True),
        ("knowing you prefer an evening departure", True),
        ("to which city are you flying", False),
        ("as for the budget", False),
        ("to proceed, i need the meeting length", False),
        ("what is your budget", False),
    ],
)
def test_what_sets_context(clause: str, context: bool) -> None:
    assert sets_context(clause) is context


def test_a_context_clause_is_read_only_when_nothing_beside_it_asks() -> None:
    aside = "Aside from the company policy limit, what's your own budget for this trip?"
    assert reached("travel", aside) == {"budget"}
    assert reached("travel", "Before I look at fares within your budget, where are you going?") == {
        "destination"
    }
    assert reached("travel", "If you have a budget, what is it?") == {"budget"}
    assert reached("meetings", "Could you tell me the agenda, so I can add it to the invite?") == {
        "agenda"
    }


def _first_phrases(name: str) -> dict[str, str]:
    return {s: p[0] for s, p in get_domain(name).slot_phrases.items() if s != "priorities"}


@pytest.mark.parametrize("name", DOMAINS)
def test_naming_a_slot_as_context_never_answers_it(name: str) -> None:
    """For every two slots of a domain and every opener: a question about the first, opened by
    a clause of context naming the second, asks what the question alone asks and nothing
    more (all pairs, 2,424 messages over the seven domains)."""
    phrases = _first_phrases(name)
    for opener in OPENERS:
        for asked_slot, asked_phrase in phrases.items():
            question = f"what is {asked_phrase}?"
            alone = reached(name, question)
            for named_slot, named_phrase in phrases.items():
                with_context = reached(name, f"{opener} {named_phrase}, {question}")
                if named_slot == asked_slot:
                    assert with_context <= alone | {asked_slot}, (opener, asked_slot)
                else:
                    assert with_context == alone, (opener, asked_slot, named_slot)


@pytest.mark.parametrize(
    ("name", "question"),
    [
        ("bank", "Would you pay a higher fee to make sure it arrives on time?"),
        ("bank", "Is a late payment acceptable if it keeps fees down?"),
        ("cloud", "Is it worse to detach a volume or to delete one that hasn't been idle as long?"),
        ("travel", "Would you rather pay more or leave a day later?"),
        ("travel", "Would you rather skip the trip than pay more than your budget?"),
        ("shop", "Would you accept a pricier desk to get it delivered before the deadline?"),
        ("bank", "Fees versus arrival by the due date: which one wins?"),
        ("bank", "Should I use the savings account if that is the only way to pay on time?"),
        ("cloud", "If no idle volume is big enough, can I pick one from another team?"),
        ("shop", "If the only blue desk is over budget, should I still order it?"),
    ],
)
def test_a_trade_between_two_wishes_asks_the_priority_order(name: str, question: str) -> None:
    """An either-or with "rather", "worse" or "better" (or "rather ... than"), "X versus Y,
    which?", a trade offered on a condition, or leave asked to act when a wish fails ("if
    the only ...", "should I still ..."), asks which wish wins, and answers neither slot."""
    readings = matcher_for(get_domain(name).slot_phrases).read(question)
    assert [r.intent for r in readings] == ["priorities"]


@pytest.mark.parametrize(
    ("name", "question", "asked"),
    [
        ("travel", "Do you prefer to leave early in the day or later on?", {"departure"}),
        ("shop", "Any preferred brand or colour?", {"brand", "color"}),
        ("meetings", "Is anywhere from day 3 to day 5 fine for the meeting?", {"window"}),
        ("bank", "If checking is short, may I draw on the savings account?", {"savings"}),
        ("bank", "Can I pay in another currency if necessary?", {"conversion"}),
        ("meetings", "Who is required versus optional?", {"optional", "attendees"}),
    ],
)
def test_a_preference_within_one_slot_or_a_list_is_no_trade(
    name: str, question: str, asked: set[str]
) -> None:
    """Not the priority order: one slot, or slots of a list (both need not be reached)."""
    assert reached(name, question) and reached(name, question) <= asked


def test_a_comparison_named_only_as_context_is_notasked() -> None:
    """'Conflicts' in a clause of context does not make the question a priority question."""
    question = "So I know whose calendar conflicts matter, who is optional?"
    assert reached("meetings", question) == {"optional"}


@pytest.mark.parametrize("message", ["I mean, hold on.", "Is that correct?", "By the way."])
def test_fillers_and_tags_ask_nothing(message: str) -> None:
    assert reached("travel", message) == set()
