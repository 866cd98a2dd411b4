"""What the buyer knows and says: the slots, the constraints and the request's text."""

from __future__ import annotations

from typing import TYPE_CHECKING

from stategym.generation import priorities_sentences, priorities_slot
from stategym.kernel.knobs import Knobs
from stategym.kernel.task import Constraint, ConstraintKind, Slot, SlotKind, Value

if TYPE_CHECKING:
    from .generator import Draw

ANY_DAY = "any day"
"""The deadline of a buyer who does not mind when the order arrives."""
ANY_BRAND = "any"
"""The brand of a buyer who does not mind the brand."""


def buyer_slots(
    draw: Draw,
    prefs: tuple[str, ...],
    hidden: dict[str, bool],
    priorities_hidden: bool,
    conflict: bool,
    knobs: Knobs,
) -> tuple[Slot, ...]:
    """Every fact the buyer holds, and whether the request gives it or the agent must ask or
    look it up. ``priorities_hidden`` is the draw's; the order is kept back as well when it
    ranks a wish on a hidden slot (:func:`stategym.generation.keeps_order`)."""

    def kind(name: str) -> SlotKind:
        return SlotKind.MISSING if hidden[name] else SlotKind.GIVEN

    facts = (
        Slot("item", SlotKind.GIVEN, draw.category, "I need one {value}."),
        Slot("quantity", SlotKind.GIVEN, draw.quantity, "I need {value} of them."),
        Slot("address", SlotKind.DERIVABLE, draw.account.city, "Ship it to our office in {value}."),
        Slot(
            "vendors",
            SlotKind.DERIVABLE,
            ", ".join(draw.approved),
            "I think we may buy from {value}.",
        ),
        Slot("budget", kind("budget"), draw.budget, "My budget for the whole order is ${value}."),
        Slot("deadline", kind("deadline"), draw.deadline, "As for delivery, {value}."),
        Slot("brand", kind("brand"), draw.brand, "As for the brand, {value}."),
        Slot("color", SlotKind.IRRELEVANT, draw.color, "I'd like it in {value}."),
    )
    order = priorities_slot(
        prefs,
        knobs,
        drawn_hidden=priorities_hidden,
        conflict=conflict,
        facts=facts,
        constraints=buyer_constraints(draw, prefs),
    )
    return (*facts, order)


def buyer_constraints(draw: Draw, prefs: tuple[str, ...]) -> tuple[Constraint, ...]:
    """The vendor policy, the needs, then the held preferences (in priority order)."""
    texts = {
        "eco": ("an eco-certified product", "eco"),
        "on_time": (f"delivery {draw.deadline}", "deadline"),
        "brand": (f"the {draw.brand} brand", "brand"),
    }
    fixed = (
        Constraint(
            "within_policy", ConstraintKind.POLICY, "to buy only from approved vendors", "vendors"
        ),
        Constraint("within_budget", ConstraintKind.NEED, "to stay within my budget", "budget"),
        Constraint("order_placed", ConstraintKind.NEED, "to get the order placed at all", "order"),
    )
    return fixed + tuple(Constraint(p, ConstraintKind.PREFERENCE, *texts[p]) for p in prefs)


def request_text(
    draw: Draw, given: dict[str, Value], constraints: tuple[Constraint, ...], knobs: Knobs
) -> str:
    """The buyer's opening message: the order, what it states, and the priority order."""
    verb = "Please order" if knobs.stateful else "Find the best offer for"
    plural = "s" if draw.quantity > 1 else ""
    parts = [f"Hi! Today is day 1. {verb} {draw.quantity} {draw.category}{plural} for the team."]
    parts.append(
        f"My budget for the whole order is ${given['budget']}."
        if "budget" in given
        else "Keep it within my budget."
    )
    parts.append(
        "Buy only from vendors our purchasing policy approves, and I'd prefer an "
        "eco-certified product."
    )
    if "deadline" in given:
        parts.append(
            "Delivery on any day is fine."
            if given["deadline"] == ANY_DAY
            else f"I need the delivery {given['deadline']}."
        )
    if "brand" in given:
        parts.append(
            "Any brand is fine."
            if given["brand"] == ANY_BRAND
            else f"I'd like the {given['brand']} brand."
        )
    parts += priorities_sentences(given, constraints)
    if not knobs.stateful:
        parts.append("Don't buy anything: finish with the offer id you recommend, or 'none'.")
    return " ".join(parts)
