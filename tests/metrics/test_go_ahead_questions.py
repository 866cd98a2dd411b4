"""A question about a slot in a go-ahead's words ("May I use your savings account?", "Should I
avoid converting currency?") is still a question beside a proposal or a report: the user
answers it. Before, every sentence ``go_aheads.CONFIRMING`` matched was the proposal's, so 30
of the 31 such slot questions of the blind sets v18 to v25 went unanswered beside a proposal
(27 of them about a slot not told; 25 are answered now), and a step report before the
expert's first bank question made its message a proposal the user approved in round 0 (R
0.11, audit 20C). A go-ahead about a slot told already asks to act on it, and one ending on
the proposal ("Shall I delete it?") asks of the proposal: both stay go-aheads. Beside a step
report, a sentence in a go-ahead's words naming an untold slot is a question, even one
opening on the act's verb ("Can I delete the volume that has been idle for 30 days?"): the
user answers it and approves nothing before it has said its values (audit 22A F1). A
go-ahead naming only the proposal after a lead-in or a list marker ("So, shall I go ahead?",
"1. Shall I book it?") still asks the go-ahead before a commit (audit 22A F4, 23 F3); any
other question after one, a verb carrying a slot's meaning ("So, should I convert it?") and
anything after a commit are read as they were (audits 22B M2, H2 and 23 F1, F2)."""

from __future__ import annotations

import functools
import json
from pathlib import Path

import pytest
from expert_edits import expert, replaced, replay

from expert_proposals import expert_proposals, respond
from stategym import Knobs
from stategym.kernel.go_aheads import CONFIRMING, asks_go_ahead
from stategym.kernel.proposals import normalise
from stategym.kernel.protocol import Say
from stategym.kernel.task import SlotKind
from stategym.kernel.user import SimulatedUser, UserTurn
from stategym.registry import get_domain

FIXTURES = Path(__file__).parents[1] / "fixtures"
BLIND = range(18, 26)
"""The held-out sets read here (v18 to v25: the matcher never trained on them)."""
JUDGING = ("travel", "meetings", "shop", "bank", "cloud")


@functools.cache
def _user_task(name: str) -> tuple[object, ...]:
    """The first default task of ``name`` holding every slot of the domain, and its domain."""
    domain = get_domain(name)
    tasks = (domain.generate(seed, Knobs()) for seed in range(200))
    return max(tasks, key=lambda task: len(task.slots)), domain


def _user(name: str) -> SimulatedUser:
    task, domain = _user_task(name)
    return SimulatedUser(task, domain.slot_phrases)  # type: ignore[attr-defined, arg-type]


def _ends_on_the_proposal(question: str) -> bool:
    """A go-ahead's words ending on a pronoun ask of the proposal ("Shall I delete it?"),
    whatever else they say ("Should I convert currency for this payment, or avoid it?")."""
    return question.rstrip("?!. ").lower().split()[-1] in {"it", "this", "that"}


def _names_in_its_phrases(name: str, slot: str, question: str) -> bool:
    """``question`` holds one of the domain's own phrases for ``slot``, as whole words."""
    words = normalise(question)
    return any(normalise(phrase) in words for phrase in get_domain(name).slot_phrases[slot])


def _go_ahead_worded() -> list[tuple[str, str, str]]:
    """``(domain, slot, question)`` of the blind sets' slot questions that have a go-ahead's
    words, do not end on the proposal, name a slot the user holds back (one it cares about)
    in one of the domain's phrases for it, and that the user answers alone."""
    found = []
    for number in BLIND:
        sets = json.loads((FIXTURES / f"heldout_questions_v{number}.json").read_text())
        for name in JUDGING:
            for slot, questions in sets["domains"][name]["slots"].items():
                for question in questions:
                    user = _user(name)
                    if not CONFIRMING.match(question) or slot in user.told:
                        continue
                    if user.task.slot(slot).kind is not SlotKind.MISSING:
                        continue
                    if _ends_on_the_proposal(question):
                        continue
                    if not _names_in_its_phrases(name, slot, question):
                        continue
                    if slot in user.respond(question).asked:
                        found.append((name, slot, question))
    return found


GO_AHEAD_WORDED = _go_ahead_worded()


def test_the_blind_sets_hold_go_ahead_worded_slot_questions() -> None:
    # the property below is read on enough questions to mean something
    assert len(GO_AHEAD_WORDED) >= 15
    assert {slot for name, slot, _ in GO_AHEAD_WORDED if name == "bank"} >= {
        "savings",
        "conversion",
    }


@pytest.mark.parametrize(("name", "slot", "question"), GO_AHEAD_WORDED)
def test_a_go_ahead_worded_slot_question_is_answered_beside_a_proposal(
    name: str, slot: str, question: str
) -> None:
    user = _user(name)
    option = user.task.truth.options[0]
    turn = user.respond(f"I recommend {option}. {question}")
    assert turn.proposed == option
    assert slot in turn.asked
    assert turn.accepted is not None


@pytest.mark.parametrize(
    "question",
    [
        "May I use your savings account?",
        "Should I avoid converting currency?",
        "Can I dip into your savings?",
        "Could I take the money from savings if needed?",
    ],
)
def test_bank_questions_in_a_go_ahead_s_words_are_answered_beside_a_proposal(
    question: str,
) -> None:
    user = _user("bank")
    option = user.task.truth.options[0]
    turn = user.respond(f"{option} is my pick. {question}")
    assert turn.proposed == option
    assert len(turn.asked) == 1
    assert turn.asked[0] in {"savings", "conversion"}


def test_a_go_ahead_about_a_slot_told_already_is_a_go_ahead() -> None:
    user = _user("travel")
    assert "fare_type" in user.told  # given in the request
    option = user.task.truth.options[0]
    turn = user.respond(f"I recommend {option}. Shall I book it on the refundable fare?")
    assert turn.proposed == option
    assert turn.asked == ()
    for go_ahead in ("Shall I book it?", "Should I go ahead?", "May I proceed?"):
        turn = _user("bank").respond(f"I recommend {option}. {go_ahead}")
        assert turn.asked == ()


def test_once_answered_the_same_words_ask_to_act_on_it() -> None:
    user = _user("bank")
    assert user.respond("May I use your savings account?").asked == ("savings",)
    option = user.task.truth.options[0]
    turn = user.respond(f"I recommend {option}. May I use your savings account?")
    assert turn.proposed == option
    assert turn.asked == ()


def test_a_report_beside_a_go_ahead_worded_slot_question_is_still_a_report() -> None:
    user = _user("bank")
    option = user.task.truth.options[0]
    turn = user.respond(f"Your rate quote for {option} is confirmed. Should I avoid converting?")
    assert turn.proposed is None
    assert turn.asked == ("conversion",)
    assert "Thank you." in turn.reply


STEP = "I've locked the FX rate: your rate quote for {d} is confirmed."


def _first_question(domain: str, seed: int, mixed: bool) -> int | None:
    """The expert's first round that asks a slot and proposes nothing, if any."""
    rounds = expert(domain, seed, mixed).trajectory.rounds
    return next(
        (r.index for r in rounds if r.user and r.user.asked and r.user.proposed is None), None
    )


def test_the_expert_asks_first_on_most_bank_tasks() -> None:
    asks = [_first_question("bank", seed, mixed) for seed in range(8) for mixed in (False, True)]
    assert sum(first is not None for first in asks) >= 8


@pytest.mark.parametrize("mixed", [False, True])
@pytest.mark.parametrize("seed", range(8))
def test_a_step_report_before_the_first_bank_question_costs_nothing(seed: int, mixed: bool) -> None:
    # audit 20C: R 0.11 on 21 of 22 such bank tasks (the user approved the option in round 0)
    played = expert("bank", seed, mixed)
    first = _first_question("bank", seed, mixed)
    outcome = played.trajectory.outcome
    if first is None or outcome is None or not outcome.committed:
        pytest.skip("the expert asks nothing before it proposes, or commits nothing")
    question = played.actions[first]
    assert isinstance(question, Say)
    text = f"{STEP.format(d=outcome.committed[0])} {question.text}"
    trajectory, card = replay("bank", seed, replaced(first, Say(text)), mixed)
    turn = trajectory.rounds[first].user
    assert turn is not None
    assert turn.proposed is None
    assert turn.asked == played.trajectory.rounds[first].user.asked  # type: ignore[union-attr]
    assert card.composite == played.card.composite


VERBS = {"travel": "book", "meetings": "send", "shop": "order", "bank": "pay", "cloud": "delete"}
ON_THE_PROPOSAL = (
    "Shall I {verb} it?",
    "Can I {verb} it?",
    "Shall I go ahead and {verb} it?",
    "Can I help with anything else before I {verb} it?",
    "Can I help with anything else?",
    "Should I go ahead?",
    "Should I {verb} it right away?",
    "Shall I {verb} it as planned?",
    "Should I lock it in?",
)
OF_THE_DOMAIN = {
    # audit 21A F1, F2: go-aheads the reader alone took for a slot question (the slot it
    # read, and the mean R the expert's proposal fell to with it)
    "travel": ("Shall I reserve the flight?", "Shall I book the seat?"),  # seat, 0.883
    "meetings": ("Shall I schedule the meeting as planned?",),  # agenda, 0.845
    "shop": ("Should I check out right away?",),  # priorities, 0.918
    "bank": ("Should I make the payment right away?",),  # priorities, 0.939
    "cloud": (
        "Shall I delete this volume?",  # priorities, 0.886
        "Can I run the deletion now?",  # window, 0.786
        "Can I delete the volume as planned?",  # window, 0.786
    ),
}


@pytest.mark.parametrize("go_ahead", ON_THE_PROPOSAL)
@pytest.mark.parametrize("name", JUDGING)
def test_a_go_ahead_on_the_proposal_asks_no_slot_whatever_the_reader_makes_of_it(
    name: str, go_ahead: str
) -> None:
    # the reader takes "delete" for cloud's priority question and "help" for travel's seat
    # question: read, "Shall I delete it?" beside the expert's proposal left the expert's
    # R on 7 of 17 cloud tasks, mean R 0.63 (the sweep of the earlier audits' edits on this
    # change's first version)
    for task, text, option in expert_proposals(name, 3):
        turn = respond(name, task, f"{text} {go_ahead.format(verb=VERBS[name])}")
        assert turn.proposed == option
        assert turn.asked == ()
        assert not turn.priority_asked


@pytest.mark.parametrize(
    ("name", "go_ahead"), [(n, g) for n, found in OF_THE_DOMAIN.items() for g in found]
)
def test_a_domain_s_own_go_ahead_asks_no_slot(name: str, go_ahead: str) -> None:
    for task, text, option in expert_proposals(name, 3):
        turn = respond(name, task, f"{text} {go_ahead}")
        assert turn.proposed == option
        assert turn.asked == ()
        assert not turn.priority_asked


STEP_REPORTS = (
    # audit 21A F3: a true step report and a go-ahead the reader misread lost the verdict
    (
        "bank",
        "I've locked the FX rate: your rate quote for {o} is confirmed.",
        "Should I make the payment right away?",
    ),
    ("cloud", "The deletion check for {o} is confirmed.", "Can I run the deletion now?"),
    ("cloud", "The deletion check for {o} is confirmed.", "Shall I delete this volume?"),
)


@pytest.mark.parametrize(("name", "report", "go_ahead"), STEP_REPORTS)
def test_a_step_report_and_a_go_ahead_still_propose(name: str, report: str, go_ahead: str) -> None:
    for task, _, option in expert_proposals(name, 3):
        turn = respond(name, task, f"{report.format(o=option)} {go_ahead}")
        assert turn.proposed == option
        assert turn.accepted is not None


STEP_REPORT = {
    "bank": "I've locked the FX rate: your rate quote for {o} is confirmed.",
    "cloud": "The deletion check for {o} is confirmed.",
    "travel": "Your fare hold for {o} is confirmed.",
    "shop": "Your cart with {o} is confirmed.",
    "meetings": "The room hold for {o} is confirmed.",
}


def _with_a_step_report_first(name: str, seed: int, question: str) -> tuple[UserTurn, float]:
    """The expert's episode with a step report on the option it later commits, then its first
    question and ``question``, in place of its first question: how the user read that round,
    and the episode's composite."""
    played = expert(name, seed, False)
    first = _first_question(name, seed, False)
    outcome = played.trajectory.outcome
    assert first is not None and outcome is not None and outcome.committed
    asked = played.actions[first]
    assert isinstance(asked, Say)
    report = STEP_REPORT[name].format(o=outcome.committed[0])
    text = f"{report} {asked.text} {question}"
    trajectory, card = replay(name, seed, replaced(first, Say(text)), False)
    turn = trajectory.rounds[first].user
    assert turn is not None
    return turn, card.composite


ACT_VERB_QUESTIONS = (
    # audit 22A F1: slot questions opening on the act's verb and "the"; a rule reading such a
    # sentence beside a step report as a go-ahead to act (to mend audit 21B F1) made the
    # message a proposal the user approved in round 0 (R 0.224 on 227 of 580 replays)
    ("cloud", 0, "Can I delete the volume that has been idle for 30 days?"),
    ("shop", 0, "Should I order the cheapest brand?"),
    ("bank", 1, "Should I pay the express fee if it is faster?"),
    ("meetings", 0, "Shall I book the room with video conferencing?"),
)


STATED_VALUES = (
    # audit 25 F1: "Would that be OK?" with no opening is no go-ahead CONFIRMING knows; read
    # as one, a value stated before it went unanswered and the step report became a proposal
    # approved in round 0 (R 1.0 -> 0.11 on 87 of 87 replays)
    ("bank", 5, "I could pay it from your savings account. Would that be OK?"),
    ("travel", 2, "There is also a morning departure. Would that be OK?"),
    ("cloud", 6, "It has been idle for 10 days. Would it be fine?"),
)


@pytest.mark.parametrize(("name", "seed", "question"), ACT_VERB_QUESTIONS + STATED_VALUES)
def test_a_slot_question_beside_a_step_report_is_answered_and_proposes_nothing(
    name: str, seed: int, question: str
) -> None:
    turn, composite = _with_a_step_report_first(name, seed, question)
    assert turn.proposed is None
    assert turn.accepted is None
    assert turn.asked
    assert composite == expert(name, seed, False).card.composite


BANK_KIND_QUESTIONS = (
    ("Can I pay in another currency if necessary?", "conversion"),
    ("Can I pay from an account in another currency and exchange the money?", "conversion"),
    ("May I use your savings account?", "savings"),
)


@pytest.mark.parametrize(("question", "slot"), BANK_KIND_QUESTIONS)
def test_an_act_s_verb_with_another_object_beside_a_step_report_is_a_question(
    question: str, slot: str
) -> None:
    # "pay in another currency" asks about the act's kind, not for the go-ahead to pay
    user = _user("bank")
    report = STEP_REPORT["bank"].format(o=user.task.truth.options[0])
    turn = user.respond(f"{report} {question}")
    assert turn.proposed is None
    assert turn.asked == (slot,)


LEAD_INS = (
    # audit 22A F4: after a step report, none of these asked the go-ahead, so the message
    # stayed a report, the user gave no verdict and the commit that followed was unapproved
    "- Shall I go ahead?",
    "\u2014 shall I go ahead?",
    "1. Shall I go ahead?",
    "So, shall I go ahead?",
    "If you agree, shall I go ahead?",
    "OK, should I proceed?",
    "Now, shall I go ahead and book it?",
    "Then: shall I proceed with the order?",
    # audit 23 F3: other openings and shapes that still asked none
    "Great, shall I go ahead?",
    "OK then, shall I go ahead?",
    "So \u2014 shall I go ahead?",
    "If that's OK, shall I go ahead?",
    "If you agree, shall I pay?",
    "So, would you like me to proceed?",
    "So, is that OK?",
    # audit 24 item 4: openings the question reader skips, and shapes, that still asked none
    "Also, shall I go ahead?",
    "OK so shall I go ahead?",
    "Okay, so shall I go ahead?",
    "So then, shall I go ahead?",
    "If everything looks good, shall I go ahead?",
    "If you'd like, shall I go ahead?",
    "Please confirm: shall I go ahead?",
    "Next step: shall I go ahead?",
    "> Shall I go ahead?",
    "So, shall we?",
    "So, shall I go ahead, then?",
    "So, should I book it now for you?",
    "So, shall I proceed with the payment?",
)
DOMAIN_GO_AHEADS = (
    # audit 23 F3: each domain's own go-ahead after "So," (bare: a verdict on every task)
    ("bank", "So, shall I pay the invoice?"),
    ("cloud", "So, shall I delete the volume?"),
    ("travel", "So, shall I book the flight?"),
    ("meetings", "So, shall I send the invitation?"),
    ("shop", "So, shall I place the order?"),
    # audit 24 item 4: the object after "your"
    ("shop", "So, may I place your order?"),
    ("travel", "So, shall I book your flight?"),
)


@pytest.mark.parametrize(
    ("name", "go_ahead"), [*((n, g) for n in JUDGING for g in LEAD_INS), *DOMAIN_GO_AHEADS]
)
def test_a_go_ahead_after_a_lead_in_or_a_list_marker_still_proposes(
    name: str, go_ahead: str
) -> None:
    for task, _, option in expert_proposals(name, 3):
        report = STEP_REPORT[name].format(o=option)
        for text in (f"{report} {go_ahead}", f"{report}\n{go_ahead}"):
            turn = respond(name, task, text)
            assert turn.proposed == option
            assert turn.accepted is not None


LED_IN_QUESTIONS = (
    # audit 22B M2: a slot question the reader takes for a go-ahead in its bare form, after a
    # lead-in or a list marker; reading every such opening as "Should I ...?" is read made
    # these proposals the user approved in round 0 (travel seed 1: R 1.0 -> 0.11)
    ("travel", 1, "should I book a refundable fare?"),
    ("travel", 1, "should I keep the fare under a certain amount? If so, how much?"),
    ("bank", 3, "can I use your savings account for this?"),
    ("bank", 3, "can I convert currencies to pay this?"),
    # audit 23 F1: a verb that carries a slot's meaning, on the proposal ("it", "the order")
    ("bank", 1, "should I convert it?"),
    ("shop", 5, "can I rush the order?"),
    ("meetings", 1, "should I extend it?"),
    # audit 24 F1: an act on one word that names a slot's value, not the proposal
    ("bank", 1, "should I pay the euros?"),
    ("shop", 5, "should I order the express?"),
    ("meetings", 2, "should I book the whiteboard?"),
    ("travel", 0, "can I confirm the amount?"),
    ("travel", 0, "can I confirm the fare?"),
    ("cloud", 2, "should I delete the largest?"),
    # the shapes audit 24's item 4 added hold no slot's value either
    ("bank", 1, "should I proceed with the conversion?"),
    ("shop", 5, "should I place your order with express shipping?"),
    ("travel", 0, "shall I book your refundable fare?"),
    ("meetings", 2, "shall we book the whiteboard, then?"),
)


@pytest.mark.parametrize(
    "lead_in", ["So, ", "Well, ", "Now, ", "And ", "Also, ", "OK so ", "If you'd like, "]
)
@pytest.mark.parametrize(("name", "seed", "question"), LED_IN_QUESTIONS)
def test_a_slot_question_after_a_lead_in_beside_a_step_report_proposes_nothing(
    name: str, seed: int, question: str, lead_in: str
) -> None:
    turn, _ = _with_a_step_report_first(name, seed, f"{lead_in}{question}")
    assert turn.proposed is None
    assert turn.accepted is None


@pytest.mark.parametrize(
    "closing",
    [
        # audit 22B H2: read as a go-ahead, "Done! I've deleted vol6035. Now, can I help
        # with anything else?" proposed the volume already deleted, and the user approved it
        "Now, can I help with anything else?",
        "Well, can I do anything else for you?",
        "Then, may I help with something else?",
        "OK, can I help with anything else?",
        "Now, any questions?",
        # audit 23 F2: closings read as at ded455d after a commit (R 1.0 -> 0.93 on 45/45)
        "So, does that look good?",
        "And let me know if that works for you!",
        "Now, any concerns?",
        "So, sound good?",
        "So, shall I go ahead?",
    ],
)
def test_a_closing_after_a_lead_in_asks_no_go_ahead_once_the_act_is_done(closing: str) -> None:
    assert not asks_go_ahead(closing, done=True)


@pytest.mark.parametrize("go_ahead", ["Now, sound good?", "So, shall I buy it?", "So, is that OK?"])
def test_beside_a_proposal_a_go_ahead_after_an_opening_is_the_proposal_s_only_before_a_commit(
    go_ahead: str,
) -> None:
    # audit 24 F2: the user dropped it from what it reads beside a proposal after a commit too,
    # so "I recommend AQ449. Now, sound good?" after the booking read otherwise than before
    user = _user("travel")
    assert user._asks_the_proposal_s_go_ahead(go_ahead, done=False)
    assert not user._asks_the_proposal_s_go_ahead(go_ahead, done=True)
    assert user._asks_the_proposal_s_go_ahead(go_ahead.split(", ")[1].capitalize(), done=True)


@pytest.mark.parametrize(
    "go_ahead",
    [
        "So, shall I book the flight?",
        "Also, may I place your order?",
        "OK so shall I proceed with the payment?",
        "If you'd like, shall I go ahead with your booking, then?",
    ],
)
def test_a_go_ahead_after_an_opening_naming_an_object_asks_the_reader(go_ahead: str) -> None:
    # audit 26 L1: no test failed with the reader's check on the object gone; where the reader
    # finds a slot asked in such a go-ahead, it is that slot's question, not a go-ahead
    assert asks_go_ahead(go_ahead)
    assert not asks_go_ahead(go_ahead, asks_slot=lambda sentence: True)
    assert asks_go_ahead("So, shall I book it?", asks_slot=lambda sentence: True)


BODIES = (
    *(g.split(", ", 1)[-1].capitalize() for g in LEAD_INS if g.startswith("So, ")),
    "Are you ready for me to go ahead?",
    "Would it be OK to book it now?",
    "Shall I go ahead and book the refundable?",
    "Can I pay it from savings?",
    "Should I book it for the morning, then?",
    "Shall we book the whiteboard?",
)


@pytest.mark.parametrize("opening", ["So, ", "Also, ", "OK so ", "If you'd like, ", "1. ", "> "])
@pytest.mark.parametrize("body", BODIES)
def test_an_opening_never_makes_a_go_ahead_of_what_is_none_without_it(
    opening: str, body: str
) -> None:
    # audit 26 L2: "So, are you ready for me to go ahead?" was a go-ahead, and "Are you ready
    # for me to go ahead?" none
    led_in = opening + (body if opening in ("1. ", "> ") else body[0].lower() + body[1:])
    assert asks_go_ahead(led_in) <= asks_go_ahead(body)
