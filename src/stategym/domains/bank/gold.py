"""The bank's gold call graph and its send decision point, built for one realised task.

Reads: the invoice and the accounts (independent), then the payee check, the rails and, only
when some account holds another currency, the exchange rates (a diamond: the invoice feeds
all three and they join at the choice). When a route should be paid: a rate lock only if the
route converts (the conditional branch), the user's confirmation, and the transfer, gated by
the payee check.
"""

from __future__ import annotations

from dataclasses import dataclass

from stategym.kernel.knobs import Knobs
from stategym.kernel.task import DecisionPoint, EdgeKind, GoldCall, GoldEdge, Precondition
from stategym.kernel.tools import Effect

from .world import Invoice, Rail


@dataclass(frozen=True, slots=True)
class Payment:
    """What the gold graph of one task depends on.

    Attributes:
        invoice: the invoice to pay.
        needs_rates: some account holds a currency other than the invoice's.
        route: the best route the expert pays by (``None`` when nothing should be paid).
        account_id: the route's account.
        rail: the route's rail.
        converts: the route's account holds another currency, so a rate must be locked.
        must_ask: the slots only the user knows.
    """

    invoice: Invoice
    needs_rates: bool
    route: str | None
    account_id: str
    rail: Rail
    converts: bool
    must_ask: tuple[str, ...]


Graph = tuple[tuple[GoldCall, ...], tuple[GoldEdge, ...], tuple[DecisionPoint, ...]]


def gold_graph(payment: Payment, knobs: Knobs) -> Graph:
    """Gold calls, edges and decision points (none when the task is stateless)."""
    invoice = payment.invoice
    calls = [GoldCall(f"ask:{s}", "ask") for s in payment.must_ask]
    calls += [
        GoldCall("get_invoice", "get_invoice", {"invoice_id": invoice.id}, Effect.READ),
        GoldCall("list_accounts", "list_accounts", {}, Effect.READ),
        GoldCall(
            "verify",
            "verify_payee",
            {"iban": invoice.iban, "name": invoice.payee_name},
            Effect.READ,
        ),
        GoldCall("rails", "list_rails", {"iban": invoice.iban}, Effect.READ),
    ]
    edges = [
        GoldEdge("get_invoice", "verify", EdgeKind.PIPE),
        GoldEdge("get_invoice", "rails", EdgeKind.PIPE),
    ]
    if payment.needs_rates:
        calls.append(GoldCall("rates", "get_fx_rates", {"currency": invoice.currency}, Effect.READ))
        edges.append(GoldEdge("get_invoice", "rates", EdgeKind.PIPE))
    if not knobs.stateful:
        return tuple(calls), tuple(edges), ()
    if payment.route is not None:
        more_calls, more_edges = _payment_graph(payment)
        calls += more_calls
        edges += more_edges
    return tuple(calls), tuple(edges), (_decision(payment),)


def _decision(payment: Payment) -> DecisionPoint:
    preconditions = [
        Precondition("the payee's name matches the account", "verify"),
        Precondition("the accounts' balances", "list_accounts"),
        Precondition("the rail's fee and arrival", "rails"),
        Precondition("the user confirmed the route", "confirm"),
    ]
    if payment.route is not None and payment.converts:
        preconditions.append(Precondition("the locked rate and debit", "lock"))
    preconditions += [Precondition(f"{s} from the user", f"ask:{s}") for s in payment.must_ask]
    paying = payment.route is not None
    return DecisionPoint(
        "send",
        "send_transfer",
        paying,
        {"invoice_id": payment.invoice.id} if paying else {},
        payment.route,
        tuple(preconditions),
        1.0,
    )


def _payment_graph(payment: Payment) -> tuple[list[GoldCall], list[GoldEdge]]:
    """Lock (only when converting), confirmation and transfer, with what feeds each."""
    inputs = ["list_accounts", "rails", *(["rates"] if payment.needs_rates else [])]
    calls: list[GoldCall] = []
    edges: list[GoldEdge] = []
    first = "send"  # the first call a must-ask answer feeds
    if payment.converts:
        calls.append(
            GoldCall(
                "lock",
                "lock_fx_rate",
                {"account_id": payment.account_id, "rail": payment.rail},
                Effect.WRITE,
            )
        )
        edges.append(GoldEdge("list_accounts", "lock", EdgeKind.PIPE))
        edges += [GoldEdge(n, "lock", EdgeKind.DECIDE) for n in inputs[1:]]
        edges += [
            GoldEdge("lock", "confirm", EdgeKind.DECIDE),
            GoldEdge("lock", "send", EdgeKind.PIPE),
        ]
        first = "lock"
    else:
        edges += [GoldEdge(n, "confirm", EdgeKind.DECIDE) for n in inputs]
        edges.append(GoldEdge("rails", "send", EdgeKind.DECIDE))
    calls += [
        GoldCall("confirm", "confirm"),
        GoldCall(
            "send",
            "send_transfer",
            {
                "invoice_id": payment.invoice.id,
                "account_id": payment.account_id,
                "rail": payment.rail,
            },
            Effect.COMMIT,
        ),
    ]
    edges += [GoldEdge(f"ask:{s}", first, EdgeKind.GATE) for s in payment.must_ask]
    edges += [
        GoldEdge("verify", "confirm", EdgeKind.DECIDE),
        GoldEdge("verify", "send", EdgeKind.DECIDE),
        GoldEdge("list_accounts", "send", EdgeKind.PIPE),
        GoldEdge("confirm", "send", EdgeKind.ORDER),
    ]
    return calls, edges
