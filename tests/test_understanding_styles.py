"""How real LLM agents write, read whole by the simulated user (audit 6c).

- Several questions in one message are each answered, however they are dressed: after a
  colon preamble ("I need a few details: ..."), in bold or quotes on one line, as a
  "**Questions:**" list, numbered inline, or as a comma list ending in "and"
  (``sentences.introduces``, ``sentences.questions``, ``words.restates``).
- Beside a proposal, a statement (a recap, a reason, a description) asks nothing: the proposal
  is a request (``Reader.read(..., beside_request=True)``); a real question beside it is still
  answered.
- A message that only acknowledges, thanks or asks for the go-ahead ("Perfect, thanks!",
  "Does this work for you?") names nothing of the user's, so it gets no fact
  (``courtesy.acknowledges``, ``courtesy.asks_go_ahead``).
"""

from __future__ import annotations

import functools
import re

import pytest

from stategym import Knobs
from stategym.agents import scripted
from stategym.kernel.env import Env
from stategym.kernel.user import SimulatedUser, UserTurn
from stategym.registry import get_domain
from stategym.rollout import run_episode
from understood import reached

DOMAINS = ("travel", "meetings", "shop", "bank", "cloud")
SEEDS = range(8)


def _respond(name: str, seed: int, text: str) -> UserTurn:
    """A fresh user of the domain's task ``seed`` answering ``text``."""
    domain = get_domain(name)
    task = domain.generate(seed, Knobs())
    return SimulatedUser(task, domain.slot_phrases, judges=not domain.read_only).respond(text)


@functools.cache
def _expert(name: str, seed: int) -> tuple[tuple[str, ...], str | None, tuple[str, ...]]:
    """The expert's opening questions (one per sentence), its proposal, and the user's
    replies before it, on task ``seed``."""
    domain = get_domain(name)
    trajectory = run_episode(Env(domain), scripted(domain, "expert"), seed)
    said = [r for r in trajectory.rounds if r.user is not None]
    opening = _split(said[0].say) if said and said[0].user.proposed is None else ()
    proposals = [r for r in said if r.user.proposed is not None]
    proposal = proposals[0].say if proposals else None
    replies = tuple(r.user.reply for r in said if r.user.proposed is None)
    return opening, proposal, replies


def _split(text: str) -> tuple[str, ...]:
    return tuple(s for s in re.split(r"(?<=[?.!])\s+", text.strip()) if s)


def _lower(question: str) -> str:
    return question[0].lower() + question[1:]


# --- several questions in one message ------------------------------------------------------

STYLES = {
    "colon preamble": lambda qs: (
        "To find the best option for you, I need a few details: " + " ".join(qs)
    ),
    "colon, new lines": lambda qs: "I need a few details:\n" + "\n".join(qs),
    "bold list": lambda qs: "**Questions:**\n" + "\n".join(f"* **{q}**" for q in qs),
    "bold, one line": lambda qs: " ".join(f"**{q}**" for q in qs),
    "quoted": lambda qs: " and ".join(f'"{q}"' for q in qs),
    "numbered inline": lambda qs: (
        f"{len(qs)} questions: " + " ".join(f"({i}) {q}" for i, q in enumerate(qs, 1))
    ),
    "comma list": lambda qs: (
        ", ".join(q.rstrip("?") for q in (qs[0], *map(_lower, qs[1:-1])))
        + ", and "
        + _lower(qs[-1])
    ),
}


@pytest.mark.parametrize(
    ("name", "seed", "text", "asked"),
    [
        (
            "travel",
            1,
            "To find the best option for you, I need a few details: What is your budget for "
            "this flight? Do you need a refundable fare?",
            ("budget", "fare_type"),
        ),
        (
            "travel",
            1,
            "Could you tell me your budget, whether you need a refundable fare, and your "
            "preferred departure time?",
            ("budget", "fare_type", "departure"),
        ),
        (
            "travel",
            1,
            "**What is your budget for this flight?** **Do you need a refundable fare?**",
            ("budget", "fare_type"),
        ),
        (
            "travel",
            1,
            '"What is your budget for this flight?" and "Do you need a refundable fare?"',
            ("budget", "fare_type"),
        ),
        (
            "travel",
            1,
            "Two questions: (1) What is your budget for this flight? (2) Do you need a "
            "refundable fare?",
            ("budget", "fare_type"),
        ),
        (
            "meetings",
            4,
            "Which attendees are optional, how long should the meeting last, and do you prefer "
            "a morning or an afternoon slot?",
            ("optional", "duration", "time_of_day"),
        ),
        (
            "bank",
            1,
            "**Questions:**\n* **What is the most you are willing to pay in fees?**\n"
            "* **Should I avoid converting currency?**",
            ("fee_cap", "conversion"),
        ),
    ],
)
def test_every_question_of_a_message_is_answered(
    name: str, seed: int, text: str, asked: tuple[str, ...]
) -> None:
    turn = _respond(name, seed, text)
    assert set(turn.asked) == set(asked)
    assert not turn.open  # a preamble's "best option" is no question about the choice


@pytest.mark.parametrize("style", sorted(STYLES))
@pytest.mark.parametrize("name", DOMAINS)
def test_the_experts_opening_questions_are_answered_in_every_style(name: str, style: str):
    """On every domain, the expert's opening of two or more questions, restyled as LLMs write
    it, gets every answer the plain opening gets."""
    tried = 0
    for seed in SEEDS:
        questions = _expert(name, seed)[0]
        if len(questions) < 2 or not all(q.endswith("?") for q in questions):
            continue
        tried += 1
        plain = _respond(name, seed, " ".join(questions))
        styled = _respond(name, seed, STYLES[style](questions))
        assert styled.asked == plain.asked, STYLES[style](questions)
        assert styled.open == plain.open
    if not tried:
        pytest.skip(f"the expert opens with one question on {name}'s first seeds")


def test_a_colon_before_a_question_about_what_it_names_still_joins_them() -> None:
    """Not every colon ends a preamble: what it names can be what the question asks."""
    assert reached("travel", "Window, aisle or middle: which do you prefer?") == {"seat"}
    comparing = "Which matters more to you: a refundable fare or the departure time?"
    assert reached("travel", comparing) == {"priorities"}
    again = "Where are you starting out from, what's your point of departure?"
    assert reached("travel", again) == {"origin"}
    assert reached("bank", "Fees versus arrival by the due date: which one wins?") == {"priorities"}


# --- statements beside a proposal ----------------------------------------------------------

_SECOND_PERSON = (
    (r"\bI'm\b", "you're"),
    (r"\bI'll\b", "you'll"),
    (r"\bI\b", "you"),
    (r"\bmy\b", "your"),
    (r"\bMy\b", "Your"),
    (r"\bme\b", "you"),
)


def _recap(replies: tuple[str, ...]) -> str:
    text = " ".join(replies)
    for mine, yours in _SECOND_PERSON:
        text = re.sub(mine, yours, text)
    return f"To recap what you told me: {text}"


STATEMENTS = {
    "reasons": lambda p, r: re.sub(
        r"(?=Shall I\b)|^(?!.*Shall I\b)",
        "It fits your budget and your preferences, and it is within the policy. ",
        p,
        count=1,
    ),
    "summary": lambda p, r: (
        "I took your budget, your timing and your other wishes into account. " + p
    ),
    "recap": lambda p, r: _recap(r) + " " + p,
    "ack": lambda p, r: "Perfect! Thanks, that helps! " + p,
    "checked": lambda p, r: "I checked and it's still available. " + p,
}


@pytest.mark.parametrize(
    ("name", "seed", "text"),
    [
        (
            "travel",
            0,
            "I found AQ449 on day 10, departing 19:45, at $530. It fits your budget and your "
            "preferences, and it is within the policy. Shall I book it?",
        ),
        (
            "travel",
            0,
            "To recap what you told me: your budget is $1050. I found AQ449 on day 10, "
            "departing 19:45, at $530. Shall I book it?",
        ),
        (
            "travel",
            0,
            "I recommend this option (AQ449). I found it on day 10, departing 19:45, at $530. "
            "Shall I book it?",
        ),
        (
            "meetings",
            0,
            "I took your budget, your timing and your other wishes into account. Room CEDAR is "
            "held for day 4 at 12:00 (option D4T1200M90CEDAR). Shall I send the invitation?",
        ),
    ],
)
def test_a_statement_beside_a_proposal_asks_nothing(name: str, seed: int, text: str) -> None:
    turn = _respond(name, seed, text)
    assert turn.proposed is not None
    assert turn.asked == ()
    assert turn.values == ()


@pytest.mark.parametrize("statement", sorted(STATEMENTS))
@pytest.mark.parametrize("name", DOMAINS)
def test_statements_beside_the_experts_proposals_ask_nothing(name: str, statement: str) -> None:
    for seed in SEEDS:
        _, proposal, replies = _expert(name, seed)
        if proposal is None:
            continue
        text = STATEMENTS[statement](proposal, replies)
        turn = _respond(name, seed, text)
        assert turn.proposed is not None, text
        assert turn.asked == () and not turn.priority_asked, text


@pytest.mark.parametrize(
    ("name", "question", "slot"),
    [
        ("travel", "What's your budget?", "budget"),
        ("shop", "Also, do you have a preferred brand?", "brand"),
        ("bank", "What is the most you are willing to pay in fees?", "fee_cap"),
    ],
)
def test_a_question_beside_a_proposal_is_still_answered(
    name: str, question: str, slot: str
) -> None:
    for seed in SEEDS:
        _, proposal, _ = _expert(name, seed)
        if proposal is None:
            continue
        text = f"It fits your needs. {question} {proposal}"
        turn = _respond(name, seed, text)
        assert turn.proposed is not None
        assert turn.asked == (slot,), text


# --- messages with nothing to answer -------------------------------------------------------

CONTENT_FREE = (
    "Perfect!",
    "Perfect, thanks!",
    "Thanks, that helps!",
    "Thank you so much, that is very helpful.",
    "Happy to adjust if needed.",
    "I'd be glad to help.",
    "I checked and it's still available.",
    "Do I have your approval?",
    "Want me to lock it in?",
    "Does this work for you?",
    "Does that sound good to you?",
    "Sound good?",
    "Is this acceptable?",
    "Would that be okay with you?",
    "Are you happy with this?",
    "Can you confirm?",
    "Please confirm and I'll complete it.",
    "Got it, thanks.",
    "Okay.",
)


@pytest.mark.parametrize("text", CONTENT_FREE)
@pytest.mark.parametrize("name", DOMAINS)
def test_a_message_with_nothing_to_answer_gets_no_fact(name: str, text: str) -> None:
    for seed in SEEDS:
        turn = _respond(name, seed, text)
        assert turn.asked == () and not turn.priority_asked and not turn.open, (seed, turn)
        assert turn.values == ()
        assert not turn.understood


@pytest.mark.parametrize("text", CONTENT_FREE)
@pytest.mark.parametrize("name", DOMAINS)
def test_a_go_ahead_or_thanks_beside_a_proposal_asks_nothing(name: str, text: str) -> None:
    for seed in SEEDS[:4]:
        proposal = _expert(name, seed)[1]
        if proposal is None:
            continue
        body = _split(proposal)[:-1] or _split(proposal)
        turn = _respond(name, seed, " ".join((*body, text)))
        assert turn.asked == () and not turn.priority_asked, (seed, turn)


@pytest.mark.parametrize(
    ("name", "text", "slot"),
    [
        ("meetings", "Does a morning slot work for you?", "time_of_day"),
        ("travel", "Can you confirm your budget?", "budget"),
        ("travel", "Thanks! What's your budget?", "budget"),
        ("travel", "Perfect, what is your budget?", "budget"),
    ],
)
def test_a_go_ahead_or_thanks_naming_a_fact_still_asks_it(name: str, text: str, slot: str):
    assert reached(name, text) == {slot}
