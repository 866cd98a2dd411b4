"""Bank task generator: a pure function of ``(seed, knobs)``.

Every draw is made whatever the knobs say and the knobs are applied afterwards. The tool
graph is a diamond (the invoice feeds the payee check, the rails and the exchange rates in
parallel; they join at the choice), a conditional branch (a rate is locked only when the
chosen account's currency differs from the invoice's), and a verify-then-commit gate: the
payee check must be observed before the transfer, and a failed check means paying nothing.
"""

from __future__ import annotations

import itertools
import random
from dataclasses import dataclass, replace
from typing import Literal

from stategym.generation import apply_sets, order_hidden, order_matters, with_user_tables
from stategym.kernel.draws import randint, randrange
from stategym.kernel.knobs import Knobs
from stategym.kernel.task import (
    Event,
    EventKind,
    GroundTruth,
    Request,
    SlotKind,
    Task,
    best_options,
    priority_weights,
)

from .gold import Graph, Payment, gold_graph
from .request import client_constraints, client_slots, request_text
from .rules import (
    AVOID,
    FEASIBLE,
    FINE,
    KEEP,
    PREFERENCES,
    USE,
    Terms,
    active_preferences,
    canonical_route,
)
from .shaping import CURRENCIES, Setup, shape_setup
from .world import (
    Account,
    BankBase,
    BankWorld,
    FxRate,
    Holder,
    Invoice,
    RailTerms,
    parse_route,
    route_cost,
)

MID_E4 = {
    ("GBP", "EUR"): 8550,
    ("GBP", "USD"): 7850,
    ("EUR", "USD"): 9200,
    ("EUR", "GBP"): 11700,
    ("USD", "EUR"): 10900,
    ("USD", "GBP"): 12750,
}
"""Mid rates, units sold per 10,000 bought, keyed ``(sell, buy)``."""
PAYEES = (
    "Acme Tools",
    "Brightline Media",
    "Northwind Traders",
    "Harbor Logistics",
    "Kestrel Design",
    "Bluefin Catering",
    "Quarry Stoneworks",
    "Meridian Print",
)
LOOKALIKES = (
    "Acme Tool Hire",
    "Brightline Ventures",
    "Northwind Holdings",
    "Harbour Logistic",
    "Kestrel Media",
    "Bluefin Foods",
    "Quarry Ltd",
    "Meridian Prints",
)
CATEGORIES = ("supplies", "services", "marketing", "maintenance")
KINDS: tuple[Literal["current", "savings"], ...] = ("current", "current", "savings", "savings")
MARGINS_BP = (40, 80, 120, 160, 200, 250, 300)
MAX_ROUNDS = 30
LEDGER = 1_000_000
"""The user's starting value in the money ledger (invoice-currency units; only differences
matter)."""


@dataclass(frozen=True, slots=True)
class Draw:
    """Everything random about one payment, before the knobs are applied."""

    invoice: Invoice
    holder: str
    accounts: dict[str, Account]
    rails: dict[str, RailTerms]
    rates: dict[str, FxRate]
    fee_cap: int
    savings: str
    conversion: str
    category: str
    order: tuple[str, ...]
    shape: str  # "fits", "conflict" or "nothing"
    hidden: dict[str, bool]
    priorities_hidden: bool
    cap_drop: int
    event_times: tuple[int, int, int]


def generate(seed: int, knobs: Knobs) -> Task:
    """Generate the bank task for ``seed`` under ``knobs``."""
    return _build(seed, knobs, _draw(seed))


def _draw(seed: int) -> Draw:
    rng = random.Random(f"bank:{seed}")
    index = rng.randrange(len(PAYEES))
    currency = rng.choices(CURRENCIES, (0.2, 0.45, 0.35))[0]
    amount = randrange(rng, 400, 4001, 10)
    iban = f"{rng.choice(('DE', 'FR', 'NL', 'GB', 'US'))}{randint(rng, 10**9, 10**10 - 1)}"
    invoice = Invoice(
        f"INV{randint(rng, 1000, 9999)}", PAYEES[index], iban, amount, currency, randint(rng, 2, 5)
    )
    fraud = rng.random() < 0.12
    domestic = rng.random() < 0.15  # every account holds the invoice's currency: no FX at all
    accounts: dict[str, Account] = {}
    for kind in rng.sample(KINDS, 4):
        held = rng.choice(CURRENCIES)
        held = currency if domestic else held
        prefix = "CA" if kind == "current" else "SV"
        aid = f"{prefix}{randint(rng, 10, 99)}"
        while aid in accounts:
            aid = f"{prefix}{randint(rng, 10, 99)}"
        scale = 10_000 if held == currency else MID_E4[held, currency]
        balance = amount * scale // 10_000 * randint(rng, 6, 30) // 10 // 10 * 10
        accounts[aid] = Account(
            aid, f"{held} {kind}", kind, held, balance, rng.choice((0, 100, 250, 500, 1000))
        )
    rates = {
        sell: FxRate(
            sell, MID_E4[sell, currency] * randint(rng, 97, 103) // 100, rng.choice(MARGINS_BP)
        )
        for sell in CURRENCIES
        if sell != currency
    }
    rails = {
        "standard": RailTerms("standard", randint(rng, 0, 4), randint(rng, 1, 3)),
        "express": RailTerms("express", randrange(rng, 10, 31, 5), 0),
    }
    return Draw(
        invoice=invoice,
        holder=LOOKALIKES[index] if fraud else PAYEES[index],
        accounts=accounts,
        rails=rails,
        rates=rates,
        fee_cap=randrange(rng, 45, 81, 5),
        savings=rng.choice((KEEP, USE)),
        conversion=rng.choice((AVOID, FINE)),
        category=rng.choice(CATEGORIES),
        order=tuple(rng.sample(PREFERENCES, 3)),
        shape=rng.choices(("fits", "conflict", "nothing"), (0.45, 0.43, 0.12))[0],
        hidden={s: rng.random() < 0.6 for s in ("fee_cap", "savings", "conversion")},
        priorities_hidden=rng.random() < 0.6,
        cap_drop=rng.choice((0, 0, 5, 10)),
        event_times=(randint(rng, 1, 3), randint(rng, 1, 3), randint(rng, 1, 3)),
    )


def _events(
    draw: Draw,
    knobs: Knobs,
    setup: Setup,
    terms: Terms,
    prefs: tuple[str, ...],
    best: tuple[str, ...],
) -> tuple[Event, ...]:
    """A rate jump and a balance drop that only hit dominated decoys, and a lowered fee cap."""
    if not knobs.dynamics:
        return ()
    routes = setup.routes(terms)
    feasible = {
        r: (acc, hits & set(prefs)) for r, (acc, hits) in routes.items() if hits >= FEASIBLE
    }
    hit_accounts: set[str] = set()
    events: list[Event] = []
    targets = [
        ("rate", c, [a for a in setup.accounts.values() if a.currency == c])
        for c in sorted(setup.rates)
    ]
    targets += [("balance", a.id, [a]) for a in setup.accounts.values()]
    times = iter(draw.event_times[:2])
    for kind, key, accounts in targets:
        affected = {a.id for a in accounts}
        if (
            not affected
            or affected & hit_accounts
            or not _decoys(feasible, affected, best, hit_accounts)
        ):
            continue
        at = next(times, None)
        if at is None:
            break
        hit_accounts |= affected
        if kind == "rate":
            margin = (terms.fee_cap + 1) * 10_000 // terms.invoice.amount + 100
            events.append(Event(at, EventKind.SET, "rates", key, "margin_bp", margin))
        else:
            account = setup.accounts[key]
            cheapest = min(setup.debit(terms, account, rail) for rail in setup.rails)
            events.append(
                Event(
                    at,
                    EventKind.SET,
                    "user_accounts",
                    key,
                    "balance",
                    max(0, account.min_balance + cheapest - 1),
                )
            )
    if draw.cap_drop:
        events.append(
            Event(draw.event_times[2], EventKind.USER_UPDATE, slot="fee_cap", value=terms.fee_cap)
        )
    return BankWorld.check_events(sorted(events, key=lambda e: e.at))


def _decoys(
    feasible: dict[str, tuple[str, frozenset[str]]],
    affected: set[str],
    best: tuple[str, ...],
    gone: set[str],
) -> bool:
    """True when every feasible route of ``affected`` accounts is a dominated decoy: not
    best, and met or beaten on every preference by a route no event touches."""
    mine = [(r, s) for r, (acc, s) in feasible.items() if acc in affected]
    others = [s for acc, s in feasible.values() if acc not in affected and acc not in gone]
    return all(r not in best and any(o >= s for o in others) for r, s in mine)


def _apply(setup: Setup, events: tuple[Event, ...]) -> Setup:
    accounts = apply_sets("user_accounts", setup.accounts, events)
    return Setup(accounts, dict(setup.rails), apply_sets("rates", setup.rates, events))


def regold(task: Task, best: tuple[str, ...]) -> Graph:
    """The gold call graph and send decision of ``task`` rebuilt as if ``best`` were its best
    routes (a counterfactual probe): the route, and whether it locks a rate, follow ``best``."""
    draw = _draw(task.seed)
    terms, _, setup = _shape(draw, task.knobs)
    final = _apply(setup, task.events)
    must_ask = tuple(s.name for s in task.slots if s.kind is SlotKind.MISSING)
    return gold_graph(_payment(draw, final, terms, best, must_ask), task.knobs)


def _shape(draw: Draw, knobs: Knobs) -> tuple[Terms, tuple[str, ...], Setup]:
    """The payment's terms, the active preferences and the accounts, rails and rates shaped
    to the drawn shape, before any event."""
    fee_cap = draw.fee_cap - (draw.cap_drop if knobs.dynamics else 0)
    terms = Terms(
        draw.invoice, draw.holder == draw.invoice.payee_name, fee_cap, draw.savings, draw.conversion
    )
    prefs = active_preferences(draw.order, draw.savings, draw.conversion)
    drawn = Setup(draw.accounts, draw.rails, draw.rates)
    return terms, prefs, shape_setup(drawn, draw.shape, knobs, terms, prefs)


def _build(seed: int, knobs: Knobs, draw: Draw) -> Task:
    terms, prefs, setup = _shape(draw, knobs)
    constraint_ids, priority = _poset(prefs)
    weights = priority_weights(constraint_ids, priority)
    nothing = frozenset(constraint_ids) - {"paid"}

    def table(s: Setup, terms: Terms = terms) -> dict[str, frozenset[str]]:
        return {r: hits & set(constraint_ids) for r, (_, hits) in s.routes(terms).items()}

    events = _events(draw, knobs, setup, terms, prefs, best_options(table(setup), nothing, weights))
    final = _apply(setup, events)
    satisfaction = table(final)
    best = best_options(satisfaction, nothing, weights)
    feasible_sets = [h for _, h in final.routes(terms).values() if h >= FEASIBLE]
    conflict = knobs.priorities and terms.verified and order_matters(feasible_sets, prefs)
    hidden = {k: v and knobs.hidden_info for k, v in draw.hidden.items()}
    balances = ", ".join(f"{a.balance} {a.currency}" for a in setup.accounts.values())
    slots = client_slots(draw, prefs, hidden, draw.priorities_hidden, conflict, knobs, balances)
    priorities_hidden = order_hidden(knobs, slots)
    given = {s.name: s.value for s in slots if s.kind is SlotKind.GIVEN}
    constraints = client_constraints(draw, prefs)
    holders = {draw.invoice.iban: Holder(draw.invoice.iban, draw.holder)}
    rails = tuple(setup.rails.values())
    base = BankBase(draw.invoice, holders, setup.accounts, rails, setup.rates, LEDGER)
    must_ask = tuple(s.name for s in slots if s.kind is SlotKind.MISSING)
    calls, edges, decisions = gold_graph(_payment(draw, final, terms, best, must_ask), knobs)
    truth = GroundTruth(calls, edges, decisions, satisfaction, nothing, best, weights)
    drawn = replace(terms, fee_cap=draw.fee_cap)
    changes = any(e.kind is EventKind.USER_UPDATE for e in events)
    before = (table(setup, drawn), table(final, drawn)) if changes else None
    truth = with_user_tables(truth, table(setup), before)
    request = Request(
        request_text(draw, given, constraints, knobs),
        given,
        {"due_day": "get_invoice", "iban": "get_invoice", "balances": "list_accounts"},
    )
    return Task(
        "bank",
        seed,
        knobs,
        request,
        slots,
        constraints,
        priority,
        priorities_hidden,
        events,
        base,
        truth,
        MAX_ROUNDS,
    )


def _poset(prefs: tuple[str, ...]) -> tuple[tuple[str, ...], tuple[tuple[str, str], ...]]:
    """Constraint ids and the covering edges of their order: the two policies are
    incomparable, both above the fee limit, which is above paying at all, then the
    preferences in the user's order."""
    chain = ("within_fees", "paid", *prefs)
    priority = (
        ("verified_payee", "within_fees"),
        ("min_balance", "within_fees"),
        *itertools.pairwise(chain),
    )
    return ("verified_payee", "min_balance", *chain), priority


def _payment(
    draw: Draw, final: Setup, terms: Terms, best: tuple[str, ...], must_ask: tuple[str, ...]
) -> Payment:
    invoice = draw.invoice
    needs_rates = any(a.currency != invoice.currency for a in final.accounts.values())
    if not best:
        return Payment(invoice, needs_rates, None, "", "standard", False, must_ask)
    fees = {}
    for route in best:
        aid, rail = parse_route(route)
        rate = final.rate(terms, final.accounts[aid])
        fees[route] = route_cost(invoice.amount, final.rails[rail].fee, rate)[0]
    route = canonical_route(best, fees)
    aid, rail = parse_route(route)
    converts = final.accounts[aid].currency != invoice.currency
    return Payment(invoice, needs_rates, route, aid, rail, converts, must_ask)
