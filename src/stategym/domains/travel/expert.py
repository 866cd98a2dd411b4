"""The travel expert and its styled variants (see :class:`stategym.agents.style.Style`).

The expert is not privileged: it asks exactly what only the traveler knows, looks up what a
tool can tell it, searches every day of the window in one parallel round, holds the best
fare to see its fresh price, proposes it, and pays once the traveler agrees.
"""

from __future__ import annotations

from stategym.agents.base import Script, ScriptedAgent
from stategym.agents.playbook import (
    Agreement,
    Decision,
    Steps,
    agreed,
    assume,
    blind_commit,
    choose,
    decide_and_commit,
    known_at_start,
    offered_only,
    propose,
    questions,
    rounds,
    worth,
)
from stategym.agents.style import Style
from stategym.generation import order_matters
from stategym.kernel.protocol import CallBatch, Observation, ToolCall, call
from stategym.kernel.task import Task

from .beliefs import Beliefs, FlightView
from .generator import CITIES

QUESTIONS = {
    "budget": "What is your budget for this flight?",
    "fare_type": "Do you need a refundable fare?",
    "departure": "What time of day would you like to depart?",
    "origin": "Which airport do you fly from?",
    "seat": "Do you prefer a window or an aisle seat?",
    "destination": "Where are you flying to?",
    "window": "Which days can you travel?",
    "priorities": "If you can't have everything you asked for, which preference should I "
    "prioritize?",
}
USER_FACTS = ("budget", "fare_type", "departure")


def travel_expert(task: Task, style: Style) -> ScriptedAgent:
    """Build the travel expert for ``task`` with the habits in ``style``."""
    return ScriptedAgent("expert", lambda first: _script(task, style, first))


def _script(task: Task, style: Style, first: Observation) -> Script:
    values, order = known_at_start(task, style)
    beliefs = Beliefs(values=values, order=order)
    opening = questions(style, beliefs.values, QUESTIONS, USER_FACTS)
    if opening is not None:
        beliefs.see((yield opening))
    dest = str(task.request.given["destination"])
    days = _days(str(task.request.given["window"]))
    yield from _look_up(beliefs, style, dest, days, task)
    # a guessed budget is the policy's cap: the most the agent may spend anyway
    assume(
        style, beliefs.values, {"budget": beliefs.cap or 0, "fare_type": "any", "departure": "any"}
    )
    decision = Decision(
        question=QUESTIONS["priorities"],
        order_matters=lambda: order_matters(_known_sets(beliefs), beliefs.preferences()),
        pick=lambda: _pick(beliefs, style),
        attempt=lambda choice, agreement: _attempt(beliefs, style, choice, agreement),
        nothing="No flight fits your budget and the travel policy, so I booked nothing.",
        give_up="I could not complete the booking.",
    )
    yield from decide_and_commit(beliefs, style, task.knobs.stateful, decision)


def _days(window: str) -> list[int]:
    first, last = (int(x) for x in window.split("-"))
    return list(range(first, last + 1))


def _spray(style: Style, dest: str, days: list[int], origin: str, task: Task) -> list[ToolCall]:
    extra = [call("list_bookings")]
    extra += [
        call("search_flights", origin=origin, destination=dest, day=d)
        for d in (days[0] - 1, days[-1] + 1, days[-1] + 2)
    ]
    return offered_only(extra[: style.spray], task)


def _look_up(beliefs: Beliefs, style: Style, dest: str, days: list[int], task: Task) -> Script:
    lookups = [
        call("get_profile"),
        call("get_travel_policy"),
        call("get_city_events", airport=dest),
    ]
    if style.batching == "guess":
        guess = next(code for code, _, _ in CITIES if code != dest)
        lookups += [call("search_flights", origin=guess, destination=dest, day=d) for d in days]
    for action in rounds(lookups + _spray(style, dest, days, "LHR", task), style):
        beliefs.see((yield action))
    if style.batching == "guess" and beliefs.flights:
        return
    searches = [
        call("search_flights", origin=beliefs.origin or "", destination=dest, day=d) for d in days
    ]
    for action in rounds(searches, style):
        beliefs.see((yield action))
        if style.first_fit and _pick(beliefs, style) is not None:
            return


def _feasible(beliefs: Beliefs) -> list[FlightView]:
    """Flights within the policy's cap and the budget, not ruled out, by day and time."""
    limit = min(beliefs.cap or 0, int(beliefs.values.get("budget", beliefs.cap or 0)))
    return sorted(
        (f for f in beliefs.flights.values() if f.price <= limit and f.id not in beliefs.excluded),
        key=lambda f: (f.day, f.depart),
    )


def _known_sets(beliefs: Beliefs) -> list[frozenset[str]]:
    return [beliefs.meets(f) for f in _feasible(beliefs)]


def _pick(beliefs: Beliefs, style: Style) -> FlightView | None:
    """The best flight the agent knows of, or ``None`` if none fits the limits."""
    order = beliefs.order or beliefs.default_order()
    return choose(
        _feasible(beliefs), style, lambda f: (-worth(beliefs.meets(f), order), f.price, f.id)
    )


def _attempt(
    beliefs: Beliefs, style: Style, choice: FlightView, agreement: Agreement
) -> Steps[str | None]:
    """Hold the fare, check its fresh price, propose it, and pay."""
    if style.verify == "same_round" or style.commit == "shotgun":
        return (yield from _blind_commit(beliefs, style, choice))
    obs = yield CallBatch((call("hold_fare", flight_id=choice.id),))
    held = beliefs.see(obs).get("hold_fare")
    if held is None:
        beliefs.excluded.add(choice.id)
        return None
    if style.verify == "before" and (_pick(beliefs, style) is not choice or beliefs.changed):
        return None  # the fresh price or a change of mind changed the best choice
    if agreement.pending(style, choice.id):
        text = (
            f"I found {choice.id} on day {choice.day}, departing "
            f"{choice.depart}, at ${held['price']}. Shall I book it?"
        )
        reply = (yield from propose(text, style, beliefs.see))[-1]
        if reply.user and not agreed(reply, choice.id):
            beliefs.excluded.add(choice.id)
            return None
        if beliefs.changed:
            return None
        agreement.option = choice.id
    if style.commit == "never":
        return f"{choice.id} is the best option; I did not book it."
    paid = beliefs.see((yield CallBatch((call("book_and_pay", hold_id=held["hold_id"]),))))
    return f"Booked {choice.id}." if "book_and_pay" in paid else None


def _blind_commit(beliefs: Beliefs, style: Style, choice: FlightView) -> Steps[str]:
    """Hold and pay without looking at the hold first (guessing hold ids), or buy several."""
    picks = [choice]
    if style.commit == "shotgun":
        others = sorted(
            (f for f in beliefs.flights.values() if f.id != choice.id), key=lambda f: f.price
        )
        picks += others[:2]
    holds = [call("hold_fare", flight_id=f.id) for f in picks]
    yield from blind_commit(holds, lambda h: call("book_and_pay", hold_id=h), style, beliefs.see)
    return f"Booked {', '.join(f.id for f in picks)}."
