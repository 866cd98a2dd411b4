"""What the traveller knows and says: the slots, the constraints and the request's text."""

from __future__ import annotations

from typing import TYPE_CHECKING

from stategym.generation import priorities_sentences, priorities_slot
from stategym.kernel.knobs import Knobs
from stategym.kernel.task import Constraint, ConstraintKind, Slot, SlotKind, Value

if TYPE_CHECKING:
    from .generator import Draw


def traveller_slots(
    draw: Draw,
    prefs: tuple[str, ...],
    hidden: dict[str, bool],
    priorities_hidden: bool,
    conflict: bool,
    knobs: Knobs,
) -> tuple[Slot, ...]:
    """Every fact the traveller holds, and whether the request gives it or the agent must
    ask or look it up. ``priorities_hidden`` is the draw's; the order is kept back as well
    when it ranks a wish on a hidden slot (:func:`stategym.generation.keeps_order`)."""

    def kind(name: str) -> SlotKind:
        return SlotKind.MISSING if hidden[name] else SlotKind.GIVEN

    first, last = draw.days[0], draw.days[-1]
    facts = (
        Slot("destination", SlotKind.GIVEN, draw.dest, "I'm going to {value}."),
        Slot("window", SlotKind.GIVEN, f"{first}-{last}", "I can leave between days {value}."),
        Slot("origin", SlotKind.DERIVABLE, draw.home, "I fly from {value}."),
        Slot("policy_cap", SlotKind.DERIVABLE, draw.cap, "I think the policy allows ${value}."),
        Slot(
            "event_days",
            SlotKind.DERIVABLE,
            "-".join(map(str, draw.event_days)),
            "I believe it runs over days {value}.",
        ),
        Slot("budget", kind("budget"), draw.budget, "My budget is ${value}."),
        Slot("fare_type", kind("fare_type"), draw.fare_type, "As for the fare type, {value}."),
        Slot("departure", kind("departure"), draw.departure, "As for the departure time, {value}."),
        Slot("seat", SlotKind.IRRELEVANT, draw.seat, "I like {value} seats."),
    )
    order = priorities_slot(
        prefs,
        knobs,
        drawn_hidden=priorities_hidden,
        conflict=conflict,
        facts=facts,
        constraints=traveller_constraints(draw, prefs),
    )
    return (*facts, order)


def traveller_constraints(draw: Draw, prefs: tuple[str, ...]) -> tuple[Constraint, ...]:
    """The policy cap, the needs, then the held preferences (in priority order)."""
    texts = {
        "avoid_event": (f"to avoid the {draw.event_name}", "event"),
        "refundable": ("a refundable fare", "fare_type"),
        "departure": (
            f"{'an' if draw.departure == 'evening' else 'a'} {draw.departure} departure",
            "departure",
        ),
    }
    fixed = (
        Constraint(
            "within_policy",
            ConstraintKind.POLICY,
            "to stay within the company travel policy",
            "policy_cap",
        ),
        Constraint("within_budget", ConstraintKind.NEED, "to stay within my budget", "budget"),
        Constraint("trip_booked", ConstraintKind.NEED, "to get a flight at all", "flight"),
    )
    return fixed + tuple(Constraint(p, ConstraintKind.PREFERENCE, *texts[p]) for p in prefs)


def request_text(
    draw: Draw,
    city: str,
    given: dict[str, Value],
    constraints: tuple[Constraint, ...],
    knobs: Knobs,
) -> str:
    """The traveller's opening message: the trip, what it states, and the priority order."""
    first, last = draw.days[0], draw.days[-1]
    verb = "Book me a" if knobs.stateful else "Find the best"
    parts = [
        f"Hi! Today is day 1. {verb} flight from my home airport to {city} ({draw.dest}), "
        f"leaving between day {first} and day {last}."
    ]
    parts.append(
        f"My budget is ${given['budget']}." if "budget" in given else "Keep it within my budget."
    )
    parts.append(f"Stay within the company travel policy and avoid the {draw.event_name}.")
    if "fare_type" in given:
        parts.append(
            "The fare must be refundable."
            if given["fare_type"] == "refundable"
            else "Refundable or not, either is fine."
        )
    if "departure" in given:
        parts.append(
            "Any departure time works."
            if given["departure"] == "any"
            else f"I'd like an {given['departure']} departure."
            if given["departure"] == "evening"
            else f"I'd like a {given['departure']} departure."
        )
    parts += priorities_sentences(given, constraints)
    if not knobs.stateful:
        parts.append("Don't book anything: finish with the flight id you recommend, or 'none'.")
    return " ".join(parts)
