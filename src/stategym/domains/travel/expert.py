"""The travel expert and its styled variants (see :class:`stategym.agents.style.Style`).

The expert is not privileged: it asks exactly what only the traveler knows, looks up what a
tool can tell it, searches every day of the window in one parallel round, holds the best
fare to see its fresh price, proposes it, and pays once the traveler agrees.
"""

from __future__ import annotations

from stategym.agents.base import Script, ScriptedAgent
from stategym.agents.style import Style
from stategym.protocol import Action, CallBatch, Observation, Say, ToolCall, call
from stategym.task import Task, final_values

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
GUESSES = {"budget": None, "fare_type": "any", "departure": "any"}


def travel_expert(task: Task, style: Style) -> ScriptedAgent:
    """Build the travel expert for ``task`` with the habits in ``style``."""
    return ScriptedAgent("expert", lambda first: _script(task, style, first))


def _script(task: Task, style: Style, first: Observation) -> Script:
    beliefs = Beliefs(values=dict(task.request.given))
    if "priorities" in task.request.given:
        beliefs.order = tuple(str(task.request.given["priorities"]).split(">"))
    if style.privileged:
        beliefs.values.update(final_values(task))
        prefs = {c.id for c in task.constraints if c.kind == "preference"}
        beliefs.order = tuple(c for c in task.priority_order() if c in prefs)
    obs = first
    asks = _questions(beliefs, style)
    if asks:
        obs = yield Say(" ".join(QUESTIONS[a] for a in asks))
        beliefs.see(obs)
    dest = str(task.request.given["destination"])
    days = _days(str(task.request.given["window"]))
    yield from _look_up(beliefs, style, dest, days)
    if style.ask == "nothing":
        for name, guess in GUESSES.items():
            beliefs.values.setdefault(name, guess if guess is not None else beliefs.cap or 0)
    yield from _choose_and_commit(task, beliefs, style)


def _questions(beliefs: Beliefs, style: Style) -> list[str]:
    if style.privileged or style.ask == "nothing":
        return []
    if style.ask == "everything":
        return list(QUESTIONS)
    return [name for name in USER_FACTS if name not in beliefs.values]


def _days(window: str) -> list[int]:
    first, last = (int(x) for x in window.split("-"))
    return list(range(first, last + 1))


def _rounds(batch: list[ToolCall], style: Style) -> list[CallBatch]:
    """One parallel round, or one round per call for a serial agent."""
    if style.batching == "serial":
        return [CallBatch((c,)) for c in batch]
    return [CallBatch(tuple(batch))]


def _spray(style: Style, dest: str, days: list[int], origin: str) -> list[ToolCall]:
    extra = [call("list_bookings")]
    extra += [
        call("search_flights", origin=origin, destination=dest, day=d)
        for d in (days[0] - 1, days[-1] + 1, days[-1] + 2)
    ]
    return extra[: style.spray]


def _look_up(beliefs: Beliefs, style: Style, dest: str, days: list[int]) -> Script:
    lookups = [
        call("get_profile"),
        call("get_travel_policy"),
        call("get_city_events", airport=dest),
    ]
    if style.batching == "guess":
        guess = next(code for code, _, _ in CITIES if code != dest)
        lookups += [call("search_flights", origin=guess, destination=dest, day=d) for d in days]
    for action in _rounds(lookups + _spray(style, dest, days, "LHR"), style):
        beliefs.see((yield action))
    if style.batching == "guess" and beliefs.flights:
        return
    searches = [
        call("search_flights", origin=beliefs.origin or "", destination=dest, day=d) for d in days
    ]
    for action in _rounds(searches, style):
        beliefs.see((yield action))
        if style.first_fit and _pick(beliefs, style) is not None:
            return


def _pick(beliefs: Beliefs, style: Style) -> FlightView | None:
    """The best flight the agent knows of, or ``None`` if none fits the limits."""
    limit = min(beliefs.cap or 0, int(beliefs.values.get("budget", beliefs.cap or 0)))
    feasible = sorted(
        (f for f in beliefs.flights.values() if f.price <= limit and f.id not in beliefs.excluded),
        key=lambda f: (f.day, f.depart),
    )
    if not feasible:
        return None
    if style.first_fit:
        return feasible[0]
    order = beliefs.order or beliefs.default_order()
    weights = {p: 2 ** (len(order) - i) for i, p in enumerate(order)}
    return min(
        feasible, key=lambda f: (-sum(weights.get(p, 0) for p in beliefs.meets(f)), f.price, f.id)
    )


def _order_matters(beliefs: Beliefs) -> bool:
    limit = min(beliefs.cap or 0, int(beliefs.values.get("budget", beliefs.cap or 0)))
    wanted = set(beliefs.preferences())
    sets = {
        beliefs.meets(f)
        for f in beliefs.flights.values()
        if f.price <= limit and f.id not in beliefs.excluded
    }
    if not sets or any(s >= wanted for s in sets):
        return False
    return len([s for s in sets if not any(s < o for o in sets)]) > 1


def _choose_and_commit(task: Task, beliefs: Beliefs, style: Style) -> Script:
    confirmed: str | None = None
    for _ in range(12):  # re-decisions after price moves, sell-outs and changes of mind
        if (
            beliefs.order is None
            and style.ask != "nothing"
            and not style.first_fit
            and _order_matters(beliefs)
        ):
            beliefs.see((yield Say(QUESTIONS["priorities"])))
            continue
        choice = _pick(beliefs, style)
        if choice is None:
            yield _finish(
                "none"
                if not task.knobs.stateful
                else "No flight fits your budget and the travel policy, so I booked nothing."
            )
            return
        if not task.knobs.stateful:
            yield _finish(choice.id)
            return
        beliefs.changed = False
        if style.verify == "same_round" or style.commit == "shotgun":
            yield from _blind_commit(beliefs, style, choice)
            return
        obs = yield CallBatch((call("hold_fare", flight_id=choice.id),))
        held = beliefs.see(obs).get("hold_fare")
        if held is None:
            beliefs.excluded.add(choice.id)
            continue
        if style.verify == "before" and (_pick(beliefs, style) is not choice or beliefs.changed):
            continue  # the fresh price or a change of mind changed the best choice
        if style.confirm != "skip" and confirmed != choice.id:
            for _ in range(3 if style.confirm == "spam" else 1):
                obs = yield Say(
                    f"I found {choice.id} on day {choice.day}, departing "
                    f"{choice.depart}, at ${held['price']}. Shall I book it?"
                )
                beliefs.see(obs)
            if obs.user and f"Yes, {choice.id}" not in obs.user:
                beliefs.excluded.add(choice.id)
                continue
            if beliefs.changed:
                continue
            confirmed = choice.id
        if style.commit == "never":
            yield _finish(f"{choice.id} is the best option; I did not book it.")
            return
        paid = beliefs.see((yield CallBatch((call("book_and_pay", hold_id=held["hold_id"]),))))
        if "book_and_pay" in paid:
            yield _finish(f"Booked {choice.id}.")
            return
    yield _finish("I could not complete the booking.")


def _blind_commit(beliefs: Beliefs, style: Style, choice: FlightView) -> Script:
    """Hold and pay without looking at the hold first (guessing hold ids), or buy several."""
    picks = [choice]
    if style.commit == "shotgun":
        others = sorted(
            (f for f in beliefs.flights.values() if f.id != choice.id), key=lambda f: f.price
        )
        picks += others[:2]
    holds = [call("hold_fare", flight_id=f.id) for f in picks]
    if style.verify == "same_round":
        pays = [call("book_and_pay", hold_id=f"H{i + 1}") for i in range(len(picks))]
        beliefs.see((yield CallBatch(tuple(holds + pays))))
    else:
        obs = yield CallBatch(tuple(holds))
        ids = [r.content["hold_id"] for r in obs.results if r.ok]
        beliefs.see((yield CallBatch(tuple(call("book_and_pay", hold_id=h) for h in ids))))
    yield _finish(f"Booked {', '.join(f.id for f in picks)}.")


def _finish(answer: str) -> Action:
    return CallBatch((call("finish", answer=answer),))
