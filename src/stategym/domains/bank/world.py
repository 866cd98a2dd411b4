"""Bank: typed records, the money arithmetic every party shares, and the episode world.

Money in the ledger (:meth:`World.transfer`) is counted in units of the invoice's currency:
a payment moves the invoice amount to the payee and the fees to the bank, whatever account
funds it. Each account's own balance, in its own currency, lives in the ``user_accounts`` table.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Literal

from stategym.kernel.knobs import Knobs
from stategym.kernel.world import USER_ACCOUNT, Table, World

PAYEE_ACCOUNT = "payee"
BANK_ACCOUNT = "bank"
RAIL_CODES: Mapping[str, str] = {"standard": "STD", "express": "EXP"}
"""Route ids are the account id followed by the rail's code (``CA17EXP``)."""

Rail = Literal["standard", "express"]


@dataclass(frozen=True, slots=True)
class Invoice:
    id: str
    payee_name: str
    iban: str
    amount: int
    currency: str
    due_day: int


@dataclass(frozen=True, slots=True)
class Holder:
    """Who really holds a payee account (what confirmation of payee checks against)."""

    iban: str
    name: str


@dataclass(frozen=True, slots=True)
class Account:
    id: str
    name: str
    kind: Literal["current", "savings"]
    currency: str
    balance: int
    min_balance: int


@dataclass(frozen=True, slots=True)
class RailTerms:
    rail: Rail
    fee: int
    days: int


@dataclass(frozen=True, slots=True)
class FxRate:
    """Selling ``sell`` to buy the invoice currency: ``rate_e4`` units of ``sell`` per 10,000
    units bought, plus a margin in basis points of the amount bought."""

    sell: str
    rate_e4: int
    margin_bp: int


@dataclass(frozen=True, slots=True)
class Quote:
    id: str
    account_id: str
    rail: Rail
    fx_fee: int
    debit: int
    expires_at: int | None
    status: Literal["active", "used"]


@dataclass(frozen=True, slots=True)
class Transfer:
    id: str
    route: str
    account_id: str
    debit: int
    amount: int
    fees: int
    status: Literal["sent", "recalled"]


@dataclass(frozen=True, slots=True)
class BankBase:
    """The generated, read-only part of a bank world."""

    invoice: Invoice
    holders: Mapping[str, Holder]
    accounts: Mapping[str, Account]
    rails: tuple[RailTerms, ...]
    rates: Mapping[str, FxRate]
    ledger: int


def route_id(account_id: str, rail: str) -> str:
    return f"{account_id}{RAIL_CODES[rail]}"


def parse_route(route: str) -> tuple[str, Rail]:
    """``(account id, rail)`` of a route id."""
    rail: Rail = "express" if route.endswith(RAIL_CODES["express"]) else "standard"
    return route[: -len(RAIL_CODES[rail])], rail


def fx_fee(amount: int, margin_bp: int) -> int:
    """The conversion fee on buying ``amount``, rounded up."""
    return -(-amount * margin_bp // 10_000)


def debit(total: int, rate_e4: int | None) -> int:
    """What the account pays for ``total`` invoice-currency units, rounded up."""
    return total if rate_e4 is None else -(-total * rate_e4 // 10_000)


def route_cost(amount: int, rail_fee: int, rate: FxRate | None) -> tuple[int, int, int]:
    """``(fees, fx_fee, debit)`` of paying ``amount`` by a rail from an account whose currency
    needs ``rate`` (``None``: same currency as the invoice)."""
    conversion = 0 if rate is None else fx_fee(amount, rate.margin_bp)
    fees = rail_fee + conversion
    return fees, conversion, debit(amount + fees, None if rate is None else rate.rate_e4)


class BankWorld(World):
    TABLES = ("user_accounts", "rates", "quotes", "transfers")

    def __init__(self, base: BankBase, knobs: Knobs) -> None:
        super().__init__({USER_ACCOUNT: base.ledger, PAYEE_ACCOUNT: 0, BANK_ACCOUNT: 0})
        self.base = base
        self.knobs = knobs
        # ``accounts`` is the kernel's money ledger, hence the longer name
        self.user_accounts: Table[str, Account] = Table(base.accounts)
        self.rates: Table[str, FxRate] = Table(base.rates)
        self.quotes: Table[str, Quote] = Table({})
        self.transfers: Table[str, Transfer] = Table({})
