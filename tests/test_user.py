"""The deterministic simulated user, on the travel domain's phrase table."""

from __future__ import annotations

import pytest

from stategym import Env, Knobs
from stategym.registry import get_domain
from stategym.task import SlotKind, Task
from stategym.user import SimulatedUser, normalise

PARAPHRASES: dict[str, tuple[str, ...]] = {
    "budget": (
        "What is your budget?",
        "What's the most you can spend?",
        "Is there a price limit?",
        "How much are you willing to pay?",
        "What is the maximum price you'd accept?",
        "How much can you afford?",
        "What's your price cap for the ticket?",
    ),
    "fare_type": (
        "Do you need a refundable fare?",
        "Should the ticket be cancellable?",
        "What kind of fare do you want?",
        "Does it have to be refundable?",
        "Do you want a flexible fare?",
        "What type of ticket do you need?",
    ),
    "departure": (
        "What time of day would you like to depart?",
        "Morning or evening?",
        "What time do you want to leave?",
        "Do you prefer to depart early or late?",
        "Any preferred departure time?",
    ),
    "seat": ("Window or aisle?", "Do you have a seat preference?", "Would you like an aisle seat?"),
    "origin": (
        "Which airport do you fly from?",
        "Where are you flying from?",
        "What is your home airport?",
        "Where will you be leaving from?",
    ),
    "destination": (
        "Where are you going?",
        "What is your destination?",
        "Which city are you flying to?",
    ),
    "window": (
        "Which days can you travel?",
        "What day works for you?",
        "When can you travel?",
        "What are your travel dates?",
    ),
    "policy_cap": (
        "What does the company policy allow?",
        "Is there a fare cap in your travel policy?",
    ),
    "event_days": (
        "When is the festival?",
        "What are the event dates?",
        "How long does the season last?",
    ),
}
PRIORITY_QUESTIONS = (
    "What should I prioritize?",
    "What is most important to you?",
    "Would you rather have a morning flight or avoid the crowds?",
    "If you can't have everything, what comes first?",
    "Which of these matters more to you?",
    "Would you accept a compromise?",
)
NOT_UNDERSTOOD = ("Hello!", "Thanks, one moment.", "zxqv wrrt", "", "Please hold on.")


def _user(seed: int = 0, knobs: Knobs | None = None) -> tuple[SimulatedUser, Task]:
    env = Env("travel", knobs=knobs or Knobs())
    env.reset(seed=seed)
    return SimulatedUser(env.task, get_domain("travel").slot_phrases), env.task


@pytest.mark.parametrize(
    ("slot", "question"), [(s, q) for s, qs in PARAPHRASES.items() for q in qs]
)
def test_each_paraphrase_reaches_exactly_its_slot(slot: str, question: str) -> None:
    user, task = _user()
    turn = user.respond(question)
    assert turn.asked == (slot,)
    assert turn.understood and not turn.priority_asked and turn.proposed is None
    value = user.values[slot]
    assert turn.values == ((slot, value),)
    assert task.slot(slot).say(value) in turn.reply


def test_several_slots_in_one_message_are_answered_in_table_order() -> None:
    user, task = _user()
    turn = user.respond("Which airport do you fly from, and what is your budget?")
    order = [s.name for s in task.slots]
    assert turn.asked == tuple(sorted(("origin", "budget"), key=order.index))


@pytest.mark.parametrize("question", PRIORITY_QUESTIONS)
def test_priority_questions_reveal_the_order(question: str) -> None:
    for seed in range(30):
        user, task = _user(seed)
        turn = user.respond(question)
        assert turn.priority_asked and "priorities" in turn.asked
        texts = {c.id: c.text for c in task.constraints if c.kind != "policy"}
        ranked = [texts[c] for c in task.priority_order() if c in texts]
        assert "what matters most is" in turn.reply
        positions = [turn.reply.index(text) for text in ranked]
        assert positions == sorted(positions)


@pytest.mark.parametrize("message", NOT_UNDERSTOOD)
def test_messages_without_a_question_are_not_understood(message: str) -> None:
    user, _ = _user()
    turn = user.respond(message)
    assert not turn.understood and turn.asked == () and turn.values == ()
    assert "don't understand" in turn.reply


def test_proposals_naming_one_option_are_judged_against_the_truth() -> None:
    checked = {True: 0, False: 0}
    for seed in range(40):
        user, task = _user(seed)
        for option in sorted(task.truth.satisfaction)[:4]:
            turn = user.respond(f"I found {option}. Shall I book it?")
            accepted = option in task.truth.best
            assert (turn.proposed, turn.accepted) == (option, accepted)
            assert ("Yes," in turn.reply) == accepted and ("No," in turn.reply) != accepted
            checked[accepted] += 1
            if accepted:
                assert user.confirmed == option
    assert checked[True] and checked[False]


def test_proposing_several_options_is_refused() -> None:
    user, task = _user()
    first, second = sorted(task.truth.satisfaction)[:2]
    turn = user.respond(f"Shall I book {first} or {second}?")
    assert turn.proposed is None and turn.accepted is None
    assert "one option" in turn.reply and user.confirmed is None


def test_changes_of_mind_are_announced_once_and_withdraw_a_confirmation() -> None:
    user, task = _user()
    best = task.truth.best[0] if task.truth.best else sorted(task.truth.satisfaction)[0]
    user.respond(f"Shall I book {best}?")
    user.change_mind("budget", 123)
    assert user.confirmed is None
    notice, values = user.announce()
    assert notice is not None and "Change of plan" in notice and "$123" in notice
    assert values == (("budget", 123),)
    assert user.announce() == (None, ())


def test_state_and_restore() -> None:
    user, _ = _user()
    saved = user.state()
    user.change_mind("budget", 1)
    user.respond("What is your budget?")
    user.restore(saved)
    assert user.state() == saved


def test_hidden_slots_are_given_when_hidden_info_is_off() -> None:
    for seed in range(20):
        _, task = _user(seed, Knobs(hidden_info=False))
        assert all(s.kind is not SlotKind.MISSING for s in task.slots)
        assert not task.must_ask


def test_normalise_strips_plurals_and_punctuation() -> None:
    assert normalise("What are your DATES?!") == " what are your date "
    assert normalise("class glass bus") == " class glass bus "
