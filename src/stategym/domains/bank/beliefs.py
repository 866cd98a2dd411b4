"""What a bank agent has learnt so far, and how it reads the user's words and tool results."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from stategym.agents.hearing import Answers, hear
from stategym.kernel.protocol import Observation
from stategym.kernel.task import Value

from .rules import FINE, PREFERENCES, USE, Terms, active_preferences, route_satisfies
from .world import Account, FxRate, Invoice, RailTerms, route_cost, route_id

_ANSWERS: Answers = (
    ("fee_cap", re.compile(r"at most (\d+) in fees"), int),
    ("savings", re.compile(r"savings account, (keep it|use it if needed)\."), str),
    ("conversion", re.compile(r"currency conversion, (avoid it|fine)\."), str),
)
NO_LIMIT = 10**9
"""The fee cap an agent that never asked assumes."""


def _preference(phrase: str) -> str | None:
    """The preference a phrase of the user's ranking speaks of."""
    if phrase.startswith("the payment arriving by day") or phrase == "the due date":
        return "on_time"
    if phrase == "leaving my savings untouched":
        return "keep_savings"
    if phrase == "avoiding currency conversion":
        return "no_conversion"
    return None


@dataclass(frozen=True, slots=True)
class Route:
    """One way to pay, as the agent sees it."""

    id: str
    account: Account
    rail: RailTerms
    fees: int
    debit: int
    hits: frozenset[str]


@dataclass(slots=True)
class Beliefs:
    """The agent's knowledge; ``None`` means not known yet."""

    values: dict[str, Value] = field(default_factory=dict)
    order: tuple[str, ...] | None = None
    invoice: Invoice | None = None
    accounts: dict[str, Account] = field(default_factory=dict)
    rails: dict[str, RailTerms] = field(default_factory=dict)
    rates: dict[str, FxRate] = field(default_factory=dict)
    verified: bool | None = None
    excluded: set[str] = field(default_factory=set)
    changed: bool = False
    locks: int = 0
    """Rates locked in rounds of their own so far; a same-round agent guesses the quote id
    of its next lock from it (``Q<locks + 1>``)."""

    def see(self, observation: Observation) -> dict[str, Any]:
        """Take in tool results and user words; returns successful results by tool name."""
        hear(self, observation.user, _ANSWERS, _preference)
        found: dict[str, Any] = {}
        for result in observation.results:
            if result.ok:
                found[result.name] = result.content
                self._read(result.name, result.content)
        return found

    def _read(self, name: str, content: Any) -> None:
        if name == "get_invoice":
            self.invoice = Invoice(
                content["invoice_id"],
                content["payee_name"],
                content["iban"],
                content["amount"],
                content["currency"],
                content["due_day"],
            )
        elif name == "list_accounts":
            self.accounts = {
                row["account_id"]: Account(
                    row["account_id"],
                    row["name"],
                    row["kind"],
                    row["currency"],
                    row["balance"],
                    row["min_balance"],
                )
                for row in content
            }
        elif name == "verify_payee":
            self.verified = content["result"] == "match"
        elif name == "list_rails":
            self.rails = {
                row["rail"]: RailTerms(row["rail"], row["fee"], row["arrives_in_days"])
                for row in content
            }
        elif name == "get_fx_rates":
            for row in content:
                self.rates[row["sell"]] = FxRate(
                    row["sell"], round(row["rate"] * 10_000), row["margin_bp"]
                )
        elif name == "lock_fx_rate":
            self._quote(content)

    def _quote(self, content: dict[str, Any]) -> None:
        """A locked quote shows the current rate: take its margin back into the rates."""
        currency = content["debit_currency"]
        old = self.rates.get(currency)
        if old is not None and self.invoice is not None:
            margin = old.margin_bp
            if content["fx_fee"] != route_cost(self.invoice.amount, 0, old)[1]:
                margin = content["fx_fee"] * 10_000 // self.invoice.amount
            self.rates[currency] = FxRate(currency, round(content["rate"] * 10_000), margin)

    def needs_rates(self) -> bool:
        return self.invoice is not None and any(
            a.currency != self.invoice.currency for a in self.accounts.values()
        )

    def preferences(self) -> tuple[str, ...]:
        return active_preferences(
            PREFERENCES,
            str(self.values.get("savings", USE)),
            str(self.values.get("conversion", FINE)),
        )

    def routes(self) -> list[Route]:
        """Every route the agent can price, in account then rail order."""
        if self.invoice is None:
            return []
        terms = Terms(
            self.invoice,
            self.verified is not False,
            int(self.values.get("fee_cap", NO_LIMIT)),
            str(self.values.get("savings", USE)),
            str(self.values.get("conversion", FINE)),
        )
        routes = []
        for account in self.accounts.values():
            same = account.currency == self.invoice.currency
            rate = None if same else self.rates.get(account.currency)
            if not same and rate is None:
                continue
            for rail in self.rails.values():
                hits = route_satisfies(terms, account, rail, rate)
                if hits is None:
                    continue
                fees, _, amount = route_cost(self.invoice.amount, rail.fee, rate)
                routes.append(
                    Route(route_id(account.id, rail.rail), account, rail, fees, amount, hits)
                )
        return routes

    def feasible(self) -> list[Route]:
        return [
            r
            for r in self.routes()
            if {"min_balance", "within_fees"} <= r.hits and r.id not in self.excluded
        ]

    def meets(self, route: Route) -> frozenset[str]:
        return route.hits & set(self.preferences())
