"""What the client knows and says: the slots, the constraints and the request's text."""

from __future__ import annotations

from typing import TYPE_CHECKING

from stategym.generation import priorities_sentences, priorities_slot
from stategym.kernel.knobs import Knobs
from stategym.kernel.task import Constraint, ConstraintKind, Slot, SlotKind, Value

from .rules import AVOID, KEEP

if TYPE_CHECKING:
    from .generator import Draw


def client_slots(
    draw: Draw,
    prefs: tuple[str, ...],
    hidden: dict[str, bool],
    priorities_hidden: bool,
    conflict: bool,
    knobs: Knobs,
    balances: str,
) -> tuple[Slot, ...]:
    """Every fact the client holds, and whether the request gives it or the agent must ask.
    ``priorities_hidden`` is the draw's; the order is kept back as well when it ranks a wish
    on a hidden slot (:func:`stategym.generation.keeps_order`)."""

    def kind(name: str) -> SlotKind:
        return SlotKind.MISSING if hidden[name] else SlotKind.GIVEN

    invoice = draw.invoice
    facts = (
        Slot("invoice", SlotKind.GIVEN, invoice.id, "It's invoice {value}."),
        Slot("payee", SlotKind.GIVEN, invoice.payee_name, "I'm paying {value}."),
        Slot("due_day", SlotKind.DERIVABLE, invoice.due_day, "I think it's due on day {value}."),
        Slot("iban", SlotKind.DERIVABLE, invoice.iban, "Their account number is {value}."),
        Slot("balances", SlotKind.DERIVABLE, balances, "Roughly {value}."),
        Slot("fee_cap", kind("fee_cap"), draw.fee_cap, "I'll pay at most {value} in fees."),
        Slot("savings", kind("savings"), draw.savings, "As for my savings account, {value}."),
        Slot(
            "conversion",
            kind("conversion"),
            draw.conversion,
            "As for currency conversion, {value}.",
        ),
        Slot("category", SlotKind.IRRELEVANT, draw.category, "File it under {value}."),
    )
    order = priorities_slot(
        prefs,
        knobs,
        drawn_hidden=priorities_hidden,
        conflict=conflict,
        facts=facts,
        constraints=client_constraints(draw, prefs),
    )
    return (*facts, order)


def client_constraints(draw: Draw, prefs: tuple[str, ...]) -> tuple[Constraint, ...]:
    """The policy and the needs, then the held preferences (in priority order)."""
    texts = {
        "on_time": (f"the payment arriving by day {draw.invoice.due_day}", "due_day"),
        "keep_savings": ("leaving my savings untouched", "savings"),
        "no_conversion": ("avoiding currency conversion", "conversion"),
    }
    fixed = (
        Constraint(
            "verified_payee",
            ConstraintKind.POLICY,
            "to pay only a payee whose name checks out",
            "payee",
        ),
        Constraint(
            "min_balance",
            ConstraintKind.POLICY,
            "to keep every account above its minimum balance",
            "balances",
        ),
        Constraint(
            "within_fees", ConstraintKind.NEED, "to keep the fees within my limit", "fee_cap"
        ),
        Constraint("paid", ConstraintKind.NEED, "to get the invoice paid at all", "invoice"),
    )
    return fixed + tuple(Constraint(p, ConstraintKind.PREFERENCE, *texts[p]) for p in prefs)


def request_text(
    draw: Draw, given: dict[str, Value], constraints: tuple[Constraint, ...], knobs: Knobs
) -> str:
    """The client's opening message: the task, what it states, and the priority order."""
    invoice = draw.invoice
    verb = "Please pay" if knobs.stateful else "Work out how best to pay"
    parts = [f"Hi! Today is day 1. {verb} invoice {invoice.id} from {invoice.payee_name}."]
    parts.append(
        f"I'll pay at most {given['fee_cap']} in fees."
        if "fee_cap" in given
        else "Keep the fees within my limit."
    )
    parts.append(
        "Only pay if the payee's name checks out, never take an account below its "
        "minimum balance, and I'd like it to arrive by the due date."
    )
    if "savings" in given:
        parts.append(
            "Leave my savings untouched."
            if given["savings"] == KEEP
            else "My savings may be used if needed."
        )
    if "conversion" in given:
        parts.append(
            "Avoid converting currency if you can."
            if given["conversion"] == AVOID
            else "Converting currency is fine."
        )
    parts += priorities_sentences(given, constraints)
    if not knobs.stateful:
        parts.append(
            "Don't send anything: finish with the route you recommend (the account "
            "id, then STD or EXP for the rail, e.g. CA17 EXP), or 'none'."
        )
    return " ".join(parts)
