"""How the simulated user finds the proposal in the ways real LLM agents write one (audit 6c):
a runner-up named in a sentence of its own, a table or numbered list of options with the
choice marked, a go-ahead in other words than "Shall I ...?", an id written with a hyphen.
And what must still be refused: several options named without committing to one, whose
verdict would let an agent fish for the choice."""

from __future__ import annotations

import itertools

import pytest

from expert_proposals import JUDGING, expert_proposals, respond
from stategym.kernel.go_aheads import CONFIRMING
from stategym.kernel.task import Task

TASKS = 4
"""Tasks per domain: the first this many the expert proposes on."""


def _expert_proposals(name: str) -> tuple[tuple[Task, str, str], ...]:
    return expert_proposals(name, TASKS)


def _expert_proposal(name: str, nth: int) -> tuple[Task, str, str]:
    return _expert_proposals(name)[nth]


def _cases() -> list[tuple[str, int]]:
    return [(n, s) for n in JUDGING for s in range(TASKS)]


_respond = respond


def _others(task: Task, option: str) -> list[str]:
    return [o for o in task.truth.options if o.lower() != option.lower()]


# -- F3: a runner-up in a sentence of its own is context --------------------------------------

RUNNERS_UP = (
    "Alternatively, there's {o}.",
    "{o} is cheaper but doesn't meet all your needs.",
    "(I ruled out {o} because it misses one of your wishes.)",
    "I didn't pick {o} since it fits less well.",
    "{o} was the next best choice, but it misses one of your wishes.",
    "Also, {o} is available.",
    "I excluded {o}: it misses one of your wishes.",
    "{o} doesn't fit your needs as well.",
    "{o} wouldn't work as well for you.",
)


@pytest.mark.parametrize("template", RUNNERS_UP)
@pytest.mark.parametrize(("name", "nth"), _cases())
def test_a_runner_up_beside_the_experts_proposal_is_context(
    name: str, nth: int, template: str
) -> None:
    task, text, option = _expert_proposal(name, nth)
    runner_up = template.format(o=_others(task, option)[0])
    for message in (f"{text} {runner_up}", f"{runner_up} {text}"):
        turn = _respond(name, task, message)
        assert turn.proposed == option and turn.understood, message
        assert "one option" not in turn.reply and turn.asked == (), message


@pytest.mark.parametrize(("name", "nth"), _cases())
def test_a_table_or_list_of_options_with_the_choice_marked_proposes_the_choice(
    name: str, nth: int
) -> None:
    task, text, option = _expert_proposal(name, nth)
    second, third = _others(task, option)[:2]
    table = (
        "Here are the options I found:\n\n| Option | Notes |\n|---|---|\n"
        f"| **{option}** | ✅ recommended |\n| {second} | misses one of your wishes |\n"
        f"| {third} | $20 more |\n\n{text}"
    )
    listed = f"Options:\n1. {second}\n2. {option} (recommended)\n3. {third}\n\n{text}"
    picked = f"**My pick: {option}**\n- {second}: arrives later\n- {third}: pricier\n\n{text}"
    for message in (table, listed, picked):
        turn = _respond(name, task, message)
        assert turn.proposed == option and turn.understood, message
        assert "one option" not in turn.reply and turn.asked == (), message


@pytest.mark.parametrize(
    "template",
    [
        "I recommend {best} because {other} misses one of your wishes. Shall I book it?",
        "{other} didn't work out. Instead, I recommend {best}.",
        "Options: {other}, {best}. I recommend {best}. Shall I book it?",
        "I found {best}. Alternatively, I could book {other}.",
    ],
)
def test_the_option_the_message_commits_to_is_the_proposal(template: str) -> None:
    task, _, best = _expert_proposal("travel", 0)
    text = template.format(best=best, other=_others(task, best)[0])
    assert _respond("travel", task, text).proposed == best


# -- what must still be refused: several options named, none committed to ---------------------

REFUSED = (
    "Should I book {a} or {b}?",
    "{a} or {b}?",
    "Should I take {a}, or {b}?",
    "I'd pick either {a} or {b}.",
    "I recommend {a} or {b}.",
    "Here are the options: {a}, {b}. Which do you prefer?",
    "1. {a}\n2. {b}\n\nWhich one should I book?",
    "| Option |\n|---|\n| {a} |\n| {b} |\n\nWhich do you want?",
    "I recommend {a}. I recommend {b}.",
    "I recommend {a}. Should I book {a} or {b}?",
    "Alternatively, {a}. Alternatively, {b}.",
)
NEUTRAL = (
    "I found {x}.",
    "{x} is available.",
    "There is {x}.",
    "{x} costs less.",
    "What about {x}?",
)


@pytest.mark.parametrize("template", REFUSED)
@pytest.mark.parametrize(("name", "nth"), _cases())
def test_several_options_named_without_committing_to_one_are_refused(
    name: str, nth: int, template: str
) -> None:
    task, _, best = _expert_proposal(name, nth)
    other = _others(task, best)[0]
    for a, b in ((best, other), (other, best)):
        turn = _respond(name, task, template.format(a=a, b=b))
        assert (turn.proposed, turn.accepted) == (None, None), template
        assert not turn.understood and "one option" in turn.reply, template


@pytest.mark.parametrize("first", NEUTRAL)
@pytest.mark.parametrize("second", NEUTRAL)
@pytest.mark.parametrize("name", JUDGING)
def test_no_neutral_pair_of_sentences_gets_an_option_judged(
    name: str, first: str, second: str
) -> None:
    """Two sentences each naming an option, neither as context nor as the choice, commit to
    neither, in either order: no verdict on either, or the agent fishes."""
    task, _, best = _expert_proposal(name, 0)
    other = _others(task, best)[0]
    for a, b in ((best, other), (other, best)):
        turn = _respond(name, task, f"{first.format(x=a)} {second.format(x=b)}")
        assert (turn.proposed, turn.accepted) == (None, None)


def test_a_negation_describing_the_choice_does_not_hand_the_verdict_to_another() -> None:
    task, _, best = _expert_proposal("travel", 0)
    other = _others(task, best)[0]
    text = f"I found {best}. {best} isn't the cheapest, but it fits. {other} is cheaper."
    assert _respond("travel", task, text).proposed in (None, best)


# -- F2: a go-ahead in other words is the proposal's, not a slot question ---------------------

GO_AHEADS = (
    "Do I have your approval?",
    "Please confirm and I'll complete it.",
    "Can you confirm?",
    "Want me to lock it in?",
    "Is this acceptable?",
    "Does this work for you?",
    "Sound good?",
    "How does that sound?",
    "Let me know if this works for you.",
    "Are you happy with this option?",
)


@pytest.mark.parametrize("go_ahead", GO_AHEADS)
@pytest.mark.parametrize(("name", "nth"), _cases())
def test_a_go_ahead_beside_the_proposal_asks_no_slot(name: str, nth: int, go_ahead: str) -> None:
    task, text, option = _expert_proposal(name, nth)
    turn = _respond(name, task, f"{text} {go_ahead}")
    assert turn.proposed == option and turn.asked == () and not turn.priority_asked, go_ahead


@pytest.mark.parametrize("go_ahead", GO_AHEADS)
def test_a_go_ahead_is_recognised_as_one(go_ahead: str) -> None:
    """Recognised before the message is read: the go-ahead's sentence is the proposal's
    whatever the reader would make of it ("work", "approval" and "confirm" are words some
    slots' questions use)."""
    assert CONFIRMING.match(go_ahead)


@pytest.mark.parametrize(
    "question",
    [
        "Can you confirm your budget?",
        "Could you confirm your departure window?",
        "Please confirm the fare type you need.",
        "Does your budget work?",
        "Is the refundable fare okay?",
    ],
)
def test_a_question_naming_a_slot_is_no_go_ahead(question: str) -> None:
    assert not CONFIRMING.match(question)


@pytest.mark.parametrize(
    ("question", "slot"),
    [
        ("Can you confirm your budget?", "budget"),
        ("Could you confirm your budget for me?", "budget"),
        ("Please confirm your budget.", "budget"),
        ("Does your budget work for a $600 fare?", "budget"),
    ],
)
def test_a_confirmation_of_a_slot_still_asks_the_slot(question: str, slot: str) -> None:
    task, text, option = _expert_proposal("travel", 0)
    turn = _respond("travel", task, f"{text} {question}")
    assert turn.proposed == option and turn.asked == (slot,)


# -- F6: an id written with a hyphen (or a space) between its letter and digit parts ---------


def _hyphenated(option: str) -> str:
    """The id with a hyphen at its first letter-digit boundary ("AQ-449", "vol-3322")."""
    cut = next(i for i in range(1, len(option)) if option[i - 1].isalpha() != option[i].isalpha())
    return f"{option[:cut]}-{option[cut:]}"


@pytest.mark.parametrize(("name", "nth"), _cases())
def test_an_id_written_with_a_hyphen_or_space_is_the_option(name: str, nth: int) -> None:
    task, text, option = _expert_proposal(name, nth)
    hyphen = _hyphenated(option)
    everywhere = "-".join(_parts(option))
    for written in (hyphen, hyphen.lower(), everywhere, hyphen.replace("-", " ")):
        turn = _respond(name, task, text.replace(option, written))
        assert turn.proposed == option and turn.asked == (), written


def _parts(option: str) -> list[str]:
    parts = [option[0]]
    for a, b in itertools.pairwise(option):
        parts[-1:] = [parts[-1] + b] if a.isalpha() == b.isalpha() else [parts[-1], b]
    return parts


def test_only_a_joint_between_letters_and_digits_joins_an_id() -> None:
    """A hyphen between two digits, or a space in another case than the id's ("no 302" in
    English, shop's offer NO302), does not make a word an option's id."""
    task, _, best = _expert_proposal("travel", 0)
    letters, digits = _parts(best)
    assert (
        _respond("travel", task, f"I found {letters}{digits[:-1]}-{digits[-1]}.").proposed is None
    )
    assert _respond("travel", task, f"I found {letters.lower()} {digits}.").proposed is None


@pytest.mark.parametrize(("name", "nth"), _cases())
def test_a_hyphenated_id_named_as_context_is_not_read_as_a_question(name: str, nth: int) -> None:
    """An option named only as context proposes nothing, and its id, however written, is left
    out of what is read ("Besides AQ-449, what is your budget?" asks the budget only)."""
    task, _, option = _expert_proposal(name, nth)
    plain = _respond(name, task, "Besides that, what is your budget?")
    turn = _respond(name, task, f"Besides {_hyphenated(option)}, what is your budget?")
    assert turn.proposed is None and turn.asked == plain.asked
