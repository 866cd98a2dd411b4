"""How the simulated user reads a closing report and the common ways of asking the go-ahead
(audit 7c, F7 and L2), on the expert's real proposals.

- A message that reports the act done ("Done! Your booking AQ449 is confirmed.") proposes
  nothing, whatever option it names: the user takes note ("Thank you."), judges nothing and
  tells nothing (``proposals.reports``). Before, the user read it as a new proposal of what
  it had already accepted ("Yes, AQ449 works for me. Please go ahead.") on every seed that
  commits. A report beside a go-ahead ("I've placed a hold on AQ449. Shall I book it?")
  still proposes.
- A request for the go-ahead or for an objection to the act proposed ("Just say the word and
  I'll book it.", "Give me the green light.", "Any concerns before I book it?") names nothing
  of the user's, so it asks no slot, beside a proposal or alone
  (``courtesy.GO_AHEAD_REQUEST``, read by ``go_aheads.CONFIRMING`` and
  ``courtesy.asks_go_ahead``). Before, it handed out the priority order, the policy cap, the
  retention rule or the project id. A question naming a slot ("Any preference for the fare
  type before I book?") still asks it.
"""

from __future__ import annotations

import pytest

from expert_proposals import JUDGING, expert_proposals, respond
from stategym.kernel.go_aheads import CONFIRMING
from stategym.kernel.proposals import reports
from stategym.kernel.task import Task
from stategym.kernel.user import SimulatedUser
from stategym.registry import get_domain

TASKS = 3
"""Tasks per domain: the first this many the expert proposes on."""


def _expert_proposals(name: str) -> tuple[tuple[Task, str, str], ...]:
    return expert_proposals(name, TASKS)


def _cases() -> list[tuple[str, int]]:
    return [(n, s) for n in JUDGING for s in range(TASKS)]


def _user(name: str, task: Task) -> SimulatedUser:
    return SimulatedUser(task, get_domain(name).slot_phrases)


_respond = respond


def _without_go_ahead(text: str, option: str) -> str:
    """The expert's proposal less its own go-ahead sentence ("Shall I book it?"), unless
    that sentence is the proposal ("Shall I pay ... by route X?")."""
    said = text.replace("? ", "?\n").replace(". ", ".\n").split("\n")
    return " ".join(s for s in said if option in s or not CONFIRMING.match(s))


# -- F7: a report of the act done proposes nothing ---------------------------------------------

REPORTS = (
    "Done! Your booking {o} is confirmed.",
    "All set — {o} is done. Let me know if you need anything else!",
    "I've placed the order for {o}.",
    "{o} has been booked successfully.",
    "Great news: {o} is now confirmed. Is there anything else I can help you with?",
    "Done! Your booking is confirmed.",
)


@pytest.mark.parametrize("template", REPORTS)
@pytest.mark.parametrize(("name", "nth"), _cases())
def test_a_report_after_the_proposal_proposes_nothing(name: str, nth: int, template: str) -> None:
    task, text, option = _expert_proposals(name)[nth]
    user = _user(name, task)
    assert user.respond(text).proposed == option
    turn = user.respond(template.format(o=option))
    assert turn.proposed is None and turn.accepted is None, template
    assert turn.asked == () and turn.values == () and not turn.open, template
    assert turn.understood and turn.reply == "Thank you.", template


@pytest.mark.parametrize(("name", "nth"), _cases())
def test_a_question_beside_a_report_is_still_answered(name: str, nth: int) -> None:
    task, _, option = _expert_proposals(name)[nth]
    plain = _respond(name, task, "Which day suits you?")
    turn = _respond(name, task, f"Done! {option} is booked. Which day suits you?")
    assert turn.proposed is None and turn.asked == plain.asked
    assert turn.reply.startswith("Thank you.")


@pytest.mark.parametrize(
    "template",
    [
        "I found {o}.",
        "I've placed a hold on {o}. Shall I book it?",
        "I've booked the hold on {o}; can I pay now?",
        "{o} is done being checked and fits. Does this work for you?",
    ],
)
@pytest.mark.parametrize(("name", "nth"), _cases())
def test_a_step_towards_the_choice_or_a_report_asking_the_go_ahead_still_proposes(
    name: str, nth: int, template: str
) -> None:
    """Guard: what the audit saw judged ("I found AQ449.") and a report beside a go-ahead
    propose as before."""
    task, _, option = _expert_proposals(name)[nth]
    assert _respond(name, task, template.format(o=option)).proposed == option, template


def test_reports_are_told_from_proposals() -> None:
    assert reports("Done! Your booking AQ449 is confirmed.")
    assert reports("All set: the invitation was sent.")
    assert not reports("I found AQ449 on day 10. Shall I book it?")
    assert not reports("I've confirmed AQ449 is still available.")


# -- L2: a request for the go-ahead or an objection asks no slot -------------------------------

REQUESTS = (
    "Any concerns before I book it?",
    "Just say the word and I'll book it.",
    "Give me the green light and I'll delete it.",
    "Give me the go-ahead and I'll place the order.",
    "Give me a thumbs-up and I'll go ahead.",
    "Any objections before I go ahead?",
    "Do you have any concerns before I send the invitation?",
    "Any questions before I proceed?",
    "Let me know and I'll book it.",
    "Let me know if you have any concerns.",
    "Just reply yes.",
    "Just say the word.",
)


@pytest.mark.parametrize("request_", REQUESTS)
@pytest.mark.parametrize(("name", "nth"), _cases())
def test_a_go_ahead_request_beside_the_proposal_asks_no_slot(
    name: str, nth: int, request_: str
) -> None:
    task, text, option = _expert_proposals(name)[nth]
    for message in (f"{_without_go_ahead(text, option)} {request_}", f"{text} {request_}"):
        turn = _respond(name, task, message)
        assert turn.proposed == option and turn.asked == (), message
        assert not turn.priority_asked and turn.values == (), message


@pytest.mark.parametrize("request_", REQUESTS)
def test_a_go_ahead_request_is_recognised_as_one(request_: str) -> None:
    assert CONFIRMING.match(request_)


@pytest.mark.parametrize("request_", REQUESTS)
@pytest.mark.parametrize("name", JUDGING)
def test_a_go_ahead_request_alone_tells_nothing(name: str, request_: str) -> None:
    """Without a proposal there is nothing to say yes to, and still no fact was asked."""
    task, _, _ = _expert_proposals(name)[0]
    turn = _respond(name, task, request_)
    assert turn.asked == () and turn.values == () and not turn.priority_asked, request_


@pytest.mark.parametrize(
    "question",
    ["Any concerns about the budget?", "Any preference for the fare type before I book?"],
)
def test_a_question_naming_a_slot_is_no_go_ahead_request(question: str) -> None:
    """Guard: the class names nothing of the user's; these name a slot."""
    assert not CONFIRMING.match(question)
    task, text, _ = _expert_proposals("travel")[0]
    assert _respond("travel", task, f"{text} {question}").asked != ()


def test_a_slot_asked_before_the_act_is_still_answered() -> None:
    task, text, option = _expert_proposals("travel")[0]
    turn = _respond("travel", task, f"{text} Any preference for the fare type before I book?")
    assert turn.proposed == option and turn.asked == ("fare_type",)


def test_an_offer_of_more_help_tells_nothing_and_what_else_to_know_still_asks() -> None:
    task, _, _ = _expert_proposals("travel")[0]
    offer = _respond("travel", task, "Let me know if you need anything else!")
    assert offer.asked == () and offer.values == () and not offer.open
    assert _respond("travel", task, "Anything else I should know before I book?").open
