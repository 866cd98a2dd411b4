"""Bank tools. Each docstring is exactly what the model sees, as its ``when_off``
sentences change it where a knob is off (:mod:`stategym.kernel.knob_text`)."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from stategym.kernel.errors import ToolError
from stategym.kernel.tools import Effect, tool
from stategym.kernel.world import USER_ACCOUNT

from .world import (
    BANK_ACCOUNT,
    PAYEE_ACCOUNT,
    Account,
    BankWorld,
    Quote,
    Rail,
    RailTerms,
    Transfer,
    route_cost,
    route_id,
)

QUOTE_TICKS = 5
"""A locked exchange rate is good for this many clock ticks (when dynamics are on)."""


def _invoice(world: BankWorld, invoice_id: str) -> None:
    if invoice_id != world.base.invoice.id:
        raise ToolError(f"no invoice {invoice_id}")


def _account(world: BankWorld, account_id: str) -> Account:
    account = world.user_accounts.get(account_id)
    if account is None:
        raise ToolError(f"no account {account_id}")
    return account


def _terms(world: BankWorld, rail: str) -> RailTerms:
    return next(t for t in world.base.rails if t.rail == rail)


@tool(effect=Effect.READ)
def get_invoice(world: BankWorld, invoice_id: str) -> dict[str, Any]:
    """Read an invoice: who to pay, their account number (IBAN), the amount, its currency and
    the day it is due.

    Args:
        invoice_id: the invoice id, e.g. "INV4471".
    """
    _invoice(world, invoice_id)
    i = world.base.invoice
    return {
        "invoice_id": i.id,
        "payee_name": i.payee_name,
        "iban": i.iban,
        "amount": i.amount,
        "currency": i.currency,
        "due_day": i.due_day,
    }


@tool(effect=Effect.READ)
def list_accounts(world: BankWorld) -> list[dict[str, Any]]:
    """List the user's accounts: kind, currency, balance and the minimum balance each must keep."""
    return [
        {
            "account_id": a.id,
            "name": a.name,
            "kind": a.kind,
            "currency": a.currency,
            "balance": a.balance,
            "min_balance": a.min_balance,
        }
        for a in world.user_accounts.values()
    ]


@tool(effect=Effect.READ)
def verify_payee(world: BankWorld, iban: str, name: str) -> dict[str, Any]:
    """Confirmation of payee: check that an account number belongs to the name you expect.
    Never pay an account whose holder does not match.

    Args:
        iban: the payee's account number.
        name: the name the payment is meant for.
    """
    holder = world.base.holders.get(iban)
    if holder is None:
        raise ToolError(f"no account {iban} is known to the payment network")
    match = holder.name.strip().lower() == name.strip().lower()
    return {
        "iban": iban,
        "name": name,
        "result": "match" if match else "no_match",
        "advice": "The account holder matches."
        if match
        else "The holder's name does not match. Do not pay; check with the payee directly.",
    }


@tool(effect=Effect.READ, latency=2)
def list_rails(world: BankWorld, iban: str) -> list[dict[str, Any]]:
    """List the payment rails that reach a payee account, with each rail's fee (in the
    invoice's currency) and how many days the money takes to arrive.

    Args:
        iban: the payee's account number.
    """
    if iban not in world.base.holders:
        raise ToolError(f"no account {iban} is known to the payment network")
    return [{"rail": t.rail, "fee": t.fee, "arrives_in_days": t.days} for t in world.base.rails]


@tool(
    effect=Effect.READ,
    when_off={
        "dynamics": {"Rates move": "Rates stay as shown"},
        "stateful": {"; lock one to pay": ""},
    },
)
def get_fx_rates(world: BankWorld, currency: str) -> list[dict[str, Any]]:
    """Indicative exchange rates for buying a currency: units sold per unit bought, and the
    conversion margin in basis points of the amount bought. Rates move; lock one to pay.

    Args:
        currency: the currency to buy, e.g. "EUR".
    """
    if currency != world.base.invoice.currency:
        return []
    return [
        {"sell": r.sell, "buy": currency, "rate": r.rate_e4 / 10_000, "margin_bp": r.margin_bp}
        for r in world.rates.values()
    ]


@tool(effect=Effect.WRITE, when_off={"dynamics": {", and when it expires": "; it does not expire"}})
def lock_fx_rate(world: BankWorld, invoice_id: str, account_id: str, rail: Rail) -> dict[str, Any]:
    """Lock the exchange rate for paying an invoice from an account in another currency. The
    quote shows the exact debit and fees, and when it expires.

    Args:
        invoice_id: the invoice to pay.
        account_id: the account that pays, from list_accounts.
        rail: the rail the payment will use.
    """
    _invoice(world, invoice_id)
    account = _account(world, account_id)
    invoice = world.base.invoice
    if account.currency == invoice.currency:
        raise ToolError(f"account {account_id} already holds {invoice.currency}; no conversion")
    rate = world.rates[account.currency]
    fees, conversion, amount = route_cost(invoice.amount, _terms(world, rail).fee, rate)
    expires = world.clock + QUOTE_TICKS if world.knobs.dynamics else None
    quote = Quote(world.new_id("Q"), account_id, rail, conversion, amount, expires, "active")
    world.quotes[quote.id] = quote
    return {
        "quote_id": quote.id,
        "option": route_id(account_id, rail),
        "rate": rate.rate_e4 / 10_000,
        "fx_fee": conversion,
        "fees": fees,
        "debit": amount,
        "debit_currency": account.currency,
        "expires_at": expires,
    }


def _debit(world: BankWorld, account: Account, rail: str, quote_id: str) -> tuple[int, int]:
    """``(debit, fees)`` of a payment, checking the quote when the currencies differ."""
    invoice = world.base.invoice
    fee = _terms(world, rail).fee
    if account.currency == invoice.currency:
        if quote_id:
            raise ToolError(f"account {account.id} needs no conversion; leave quote_id empty")
        return invoice.amount + fee, fee
    quote = world.quotes.get(quote_id)
    if quote is None or quote.status != "active":
        raise ToolError(f"paying from {account.id} needs an active quote from lock_fx_rate")
    if quote.account_id != account.id or quote.rail != rail:
        raise ToolError(f"quote {quote_id} is for {route_id(quote.account_id, quote.rail)}")
    if quote.expires_at is not None and world.clock > quote.expires_at:
        raise ToolError(f"quote {quote_id} expired at t={quote.expires_at}; lock a new rate")
    return quote.debit, fee + quote.fx_fee


@tool(
    effect=Effect.COMMIT,
    when_off={
        "irreversible": {
            "Sent money cannot be recalled.": (
                "Sent money can be recalled with recall_transfer, its fees refunded too."
            )
        }
    },
)
def send_transfer(
    world: BankWorld, invoice_id: str, account_id: str, rail: Rail, quote_id: str = ""
) -> dict[str, Any]:
    """Pay an invoice to the account number on it. Sent money cannot be recalled.

    Args:
        invoice_id: the invoice to pay.
        account_id: the account that pays.
        rail: "standard" or "express".
        quote_id: the locked rate from lock_fx_rate when the account's currency differs from
            the invoice's; leave empty otherwise.
    """
    _invoice(world, invoice_id)
    account = _account(world, account_id)
    amount, fees = _debit(world, account, rail, quote_id)
    if account.balance < amount:
        raise ToolError(f"account {account_id} holds {account.balance}, the payment needs {amount}")
    if quote_id:
        world.quotes[quote_id] = replace(world.quotes[quote_id], status="used")
    world.user_accounts[account_id] = replace(account, balance=account.balance - amount)
    invoice = world.base.invoice
    route = route_id(account_id, rail)
    transfer = Transfer(world.new_id("T"), route, account_id, amount, invoice.amount, fees, "sent")
    world.transfers[transfer.id] = transfer
    world.transfer(
        USER_ACCOUNT, PAYEE_ACCOUNT, invoice.amount, f"invoice {invoice.id}", transfer.id
    )
    if fees:
        world.transfer(USER_ACCOUNT, BANK_ACCOUNT, fees, f"fees {route}", transfer.id)
    return {
        "transfer_id": transfer.id,
        "option": route,
        "debited": amount,
        "debit_currency": account.currency,
        "fees": fees,
        "arrives_day": 1 + _terms(world, rail).days,
    }


@tool(
    effect=Effect.COMMIT,
    when_off={
        "irreversible": {
            "A sent transfer has settled and cannot be recalled.": (
                "Any sent transfer can be recalled; what it debited, fees included, is refunded."
            )
        }
    },
)
def recall_transfer(world: BankWorld, transfer_id: str) -> dict[str, Any]:
    """Ask the bank to recall a sent transfer. A sent transfer has settled and cannot be
    recalled.

    Args:
        transfer_id: the transfer to recall.
    """
    transfer = world.transfers.get(transfer_id)
    if transfer is None or transfer.status != "sent":
        raise ToolError(f"no sent transfer {transfer_id}")
    if world.knobs.irreversible:
        raise ToolError(f"transfer {transfer_id} has settled and cannot be recalled")
    account = world.user_accounts[transfer.account_id]
    world.user_accounts[account.id] = replace(account, balance=account.balance + transfer.debit)
    world.transfers[transfer_id] = replace(transfer, status="recalled")
    world.transfer(PAYEE_ACCOUNT, USER_ACCOUNT, transfer.amount, "recall", transfer_id)
    if transfer.fees:
        world.transfer(BANK_ACCOUNT, USER_ACCOUNT, transfer.fees, "recall fees", transfer_id)
    return {"transfer_id": transfer_id, "option": transfer.route, "refunded": transfer.debit}


@tool(effect=Effect.READ, reads_own_writes=True)
def list_transfers(world: BankWorld) -> list[dict[str, Any]]:
    """List the transfers sent in this session and their status."""
    return [
        {"transfer_id": t.id, "route": t.route, "debited": t.debit, "status": t.status}
        for t in world.transfers.values()
    ]


TOOLS = (
    get_invoice,
    list_accounts,
    verify_payee,
    list_rails,
    get_fx_rates,
    lock_fx_rate,
    send_transfer,
    recall_transfer,
    list_transfers,
)
