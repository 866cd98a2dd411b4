"""The bank's satisfaction rules: which constraints a route meets. The generator builds the
ground truth with them and the expert's beliefs judge routes with the same functions."""

from __future__ import annotations

from dataclasses import dataclass

from .world import Account, FxRate, Invoice, RailTerms, route_cost

PREFERENCES = ("on_time", "keep_savings", "no_conversion")
KEEP, USE = "keep it", "use it if needed"
AVOID, FINE = "avoid it", "fine"
FEASIBLE = frozenset({"min_balance", "within_fees"})
"""A route must meet these (and be affordable) to be worth proposing."""


def active_preferences(order: tuple[str, ...], savings: str, conversion: str) -> tuple[str, ...]:
    """The preferences that constrain the choice, most important first."""
    active = {
        "on_time",
        *(["keep_savings"] if savings == KEEP else []),
        *(["no_conversion"] if conversion == AVOID else []),
    }
    return tuple(p for p in order if p in active)


@dataclass(frozen=True, slots=True)
class Terms:
    """What decides which routes satisfy what: everything a route's satisfaction reads."""

    invoice: Invoice
    verified: bool
    fee_cap: int
    savings: str
    conversion: str


def route_satisfies(
    terms: Terms, account: Account, rail: RailTerms, rate: FxRate | None
) -> frozenset[str] | None:
    """The constraint ids a route satisfies, or ``None`` when the account cannot cover it
    (the transfer would be refused). The expert's beliefs use the same rule."""
    fees, _, amount = route_cost(terms.invoice.amount, rail.fee, rate)
    if account.balance < amount:
        return None
    hits = {"paid"}
    if terms.verified:
        hits.add("verified_payee")
    if account.balance - amount >= account.min_balance:
        hits.add("min_balance")
    if fees <= terms.fee_cap:
        hits.add("within_fees")
    if 1 + rail.days <= terms.invoice.due_day:
        hits.add("on_time")
    if terms.savings != KEEP or account.kind != "savings":
        hits.add("keep_savings")
    if terms.conversion != AVOID or account.currency == terms.invoice.currency:
        hits.add("no_conversion")
    return frozenset(hits)


def canonical_route(best: tuple[str, ...], fees: dict[str, int]) -> str:
    """The best route the expert picks: fewest fees, then the smallest id."""
    return min(best, key=lambda r: (fees[r], r))
