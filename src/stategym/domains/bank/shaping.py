"""How the bank generator shapes a drawn setup: plant the routes a task shape needs (one that
meets every preference, or two that each give one up) and starve the accounts that would spoil
it."""

from __future__ import annotations

from dataclasses import dataclass, replace

from stategym.kernel.knobs import Knobs

from .rules import FEASIBLE, Terms, route_satisfies
from .world import Account, FxRate, RailTerms, route_cost, route_id

CURRENCIES = ("GBP", "EUR", "USD")


@dataclass(frozen=True, slots=True)
class Setup:
    """The accounts, rails and rates as the generator shapes them."""

    accounts: dict[str, Account]
    rails: dict[str, RailTerms]
    rates: dict[str, FxRate]

    def rate(self, terms: Terms, account: Account) -> FxRate | None:
        return None if account.currency == terms.invoice.currency else self.rates[account.currency]

    def routes(self, terms: Terms) -> dict[str, tuple[str, frozenset[str]]]:
        """Every payable route: ``route id -> (account id, constraints satisfied)``."""
        table: dict[str, tuple[str, frozenset[str]]] = {}
        for account in self.accounts.values():
            for rail in self.rails.values():
                hits = route_satisfies(terms, account, rail, self.rate(terms, account))
                if hits is not None:
                    table[route_id(account.id, rail.rail)] = (account.id, hits)
        return table

    def debit(self, terms: Terms, account: Account, rail: str) -> int:
        return route_cost(terms.invoice.amount, self.rails[rail].fee, self.rate(terms, account))[2]


def shape_setup(
    drawn: Setup, shape: str, knobs: Knobs, terms: Terms, prefs: tuple[str, ...]
) -> Setup:
    """Adjust the drawn accounts, rails and rates so the task has its intended ``shape``
    (``fits``, ``conflict`` or ``nothing``); a conflict needs priorities on and two
    preferences, and becomes ``fits`` otherwise."""
    setup = Setup(dict(drawn.accounts), dict(drawn.rails), dict(drawn.rates))
    if shape == "conflict" and (not knobs.priorities or len(prefs) < 2):
        shape = "fits"
    ids = list(setup.accounts)
    if shape == "nothing":
        for aid in ids:
            starve(setup, terms, aid)
        return setup
    plants = (
        [(ids[0], prefs, ())]
        if shape == "fits"
        else [(ids[0], prefs[:-1], prefs[-1:]), (ids[1], prefs[1:], prefs[:1])]
    )
    for aid, keep, break_ in plants:
        _plant(setup, terms, aid, keep, break_)
    for aid, keep, _ in plants:  # balances last: planting may have moved rates
        _fund(setup, terms, aid, "express" if "on_time" in keep else "standard")
    if shape == "conflict":  # nothing feasible may satisfy every preference
        for aid in ids[2:]:
            if any(
                hits >= FEASIBLE | set(prefs)
                for acc, hits in setup.routes(terms).values()
                if acc == aid
            ):
                starve(setup, terms, aid)
    return setup


def _plant(
    setup: Setup, terms: Terms, aid: str, keep: tuple[str, ...], break_: tuple[str, ...]
) -> None:
    """Give an account the kind and currency that meet ``keep`` and miss ``break_``, and make
    its planted rail affordable."""
    account = setup.accounts[aid]
    kind = account.kind
    if "keep_savings" in keep:
        kind = "current"
    elif "keep_savings" in break_:
        kind = "savings"
    currency = account.currency
    home = terms.invoice.currency
    if "no_conversion" in keep:
        currency = home
    elif "no_conversion" in break_ and currency == home:
        currency = next(c for c in CURRENCIES if c != home)
    setup.accounts[aid] = replace(account, kind=kind, currency=currency, name=f"{currency} {kind}")
    rail = "express" if "on_time" in keep else "standard"
    terms_of_rail = setup.rails[rail]
    if terms_of_rail.fee > terms.fee_cap:  # the planted rail alone must fit under the cap
        setup.rails[rail] = replace(terms_of_rail, fee=terms.fee_cap)
    if "on_time" in break_:  # the standard rail arrives late
        standard = setup.rails["standard"]
        setup.rails["standard"] = replace(standard, days=max(standard.days, terms.invoice.due_day))
    if currency != home:  # the conversion margin must leave room under the fee cap
        room = terms.fee_cap - setup.rails[rail].fee
        rate = setup.rates[currency]
        most = room * 10_000 // terms.invoice.amount
        setup.rates[currency] = replace(rate, margin_bp=max(0, min(rate.margin_bp, most)))


def _fund(setup: Setup, terms: Terms, aid: str, rail: str) -> None:
    """Fund an account so its planted rail is feasible; a planted standard route gets exactly
    enough, so that the express route of the same account breaks the minimum balance."""
    account = setup.accounts[aid]
    need = account.min_balance + setup.debit(terms, account, rail)
    balance = need if rail == "standard" else max(account.balance, need)
    setup.accounts[aid] = replace(account, balance=balance)


def starve(setup: Setup, terms: Terms, aid: str) -> None:
    """Leave an account one unit short of its cheapest route's minimum balance."""
    account = setup.accounts[aid]
    cheapest = min(setup.debit(terms, account, rail) for rail in setup.rails)
    setup.accounts[aid] = replace(account, balance=max(0, account.min_balance + cheapest - 1))
