"""Shop task generator: a pure function of ``(seed, knobs)``.

Every draw is made whatever the knobs say and the knobs are applied afterwards, so the same
seed under different knobs is the same purchase with properties switched off. The tool graph
(built in ``gold.py``) fans the catalog search out into a per-product diamond of four reads
that join at the cart, then chains two writes (the cart line, then the delivery address),
a verify-before-commit read (``review_cart``), a conditional approval and the commit.
"""

from __future__ import annotations

import itertools
import random
from collections.abc import Container
from dataclasses import dataclass, replace

from stategym.generation import (
    apply_sets,
    dominated_decoys,
    order_hidden,
    order_matters,
    with_user_tables,
)
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

from .gold import Graph, Purchase, gold_graph
from .request import ANY_BRAND, ANY_DAY, buyer_constraints, buyer_slots, request_text
from .world import Account, Offer, Policy, Product, ShopBase, ShopWorld

CATEGORIES: tuple[tuple[str, int, int], ...] = (
    ("office chair", 120, 480),
    ("standing desk", 250, 900),
    ("monitor", 140, 620),
    ("headset", 40, 260),
    ("webcam", 35, 220),
    ("laptop stand", 25, 140),
    ("desk lamp", 20, 120),
    ("keyboard", 30, 180),
)
BRANDS = ("Ergon", "Sitwell", "Posturo", "Halden", "Korvo", "Lumen", "Vexa", "Arbor")
MODELS = ("Pro", "Air", "One", "Flex", "Core", "Edge", "Nova", "Zen")
VENDORS = ("Officio", "DeskDepot", "BulkBuy", "Nordway", "QuickShip", "Stapleton")
CITIES = ("Leeds", "Porto", "Utrecht", "Lyon", "Graz", "Aarhus")
BUYERS = ("Ana Lima", "Bo Chen", "Dee Park", "Eli Novak", "Farah Aziz", "Gus Moreau")
COLORS = ("black", "grey", "white", "blue")
SHIPPING = (0, 0, 15, 25, 40)
PREFERENCES = ("eco", "on_time", "brand")
MAX_ROUNDS = 30


@dataclass(frozen=True, slots=True)
class Draw:
    """Everything random about one purchase, before the knobs are applied."""

    category: str
    products: dict[str, Product]
    offers: dict[str, Offer]
    approved: tuple[str, ...]
    quantity: int
    budget: int
    deadline: str  # "by day N" or ANY_DAY
    brand: str  # a brand name or ANY_BRAND
    color: str
    account: Account
    order: tuple[str, ...]
    shape: str  # "fits", "conflict" or "nothing"
    hidden: dict[str, bool]
    priorities_hidden: bool
    budget_drop: int
    approval_pct: int  # the approval threshold, as a share of the budget
    event_times: tuple[int, int, int]


def generate(seed: int, knobs: Knobs) -> Task:
    """Generate the shop task for ``seed`` under ``knobs``."""
    return _build(seed, knobs, _draw(seed))


def regold(task: Task, best: tuple[str, ...]) -> Graph:
    """The gold call graph and checkout decision of ``task`` rebuilt as if ``best`` were its
    best offers (a counterfactual probe): the cart line, the bought product's reads and
    whether checkout needs an approval follow ``best``."""
    draw = _draw(task.seed)
    *_, cat = _setup(draw, task.knobs)
    final = Catalog(cat.products, apply_sets("offers", cat.offers, task.events))
    must_ask = tuple(s.name for s in task.slots if s.kind is SlotKind.MISSING)
    return gold_graph(_purchase(draw, final, _policy(draw), best, must_ask), task.knobs)


def _draw(seed: int) -> Draw:
    rng = random.Random(f"shop:{seed}")
    category, low, high = rng.choice(CATEGORIES)
    products: dict[str, Product] = {}
    offers: dict[str, Offer] = {}
    vendors = rng.sample(VENDORS, 5)
    for _ in range(randint(rng, 3, 4)):
        pid = _fresh(rng, "P", products)
        brand = rng.choice(BRANDS)
        name = f"{brand} {rng.choice(MODELS)} {randint(rng, 2, 9)}"
        products[pid] = Product(pid, name, brand, category, rng.random() < 0.4)
        for vendor in rng.sample(vendors, randint(rng, 2, 3)):
            oid = _fresh(rng, vendor[:2].upper(), offers)
            offers[oid] = Offer(
                oid,
                pid,
                vendor,
                randrange(rng, low, high, 5),
                rng.choice(SHIPPING),
                randint(rng, 1, 12),
                randint(rng, 1, 8),
            )
    quantity = randint(rng, 1, 5)
    budget = quantity * randrange(rng, (low + high) // 2, high, 10) + rng.choice((0, 20, 40))
    brands = sorted({p.brand for p in products.values()})
    return Draw(
        category=category,
        products=products,
        offers=offers,
        approved=tuple(sorted(rng.sample(vendors, 3))),
        quantity=quantity,
        budget=budget,
        deadline=rng.choice((f"by day {randint(rng, 4, 8)}", ANY_DAY)),
        brand=rng.choice((rng.choice(brands), ANY_BRAND)),
        color=rng.choice(COLORS),
        account=Account(rng.choice(BUYERS), f"AD{randint(rng, 100, 999)}", rng.choice(CITIES)),
        order=tuple(rng.sample(PREFERENCES, 3)),
        shape=rng.choices(("fits", "conflict", "nothing"), (0.45, 0.43, 0.12))[0],
        hidden={s: rng.random() < 0.6 for s in ("budget", "deadline", "brand")},
        priorities_hidden=rng.random() < 0.6,
        budget_drop=rng.choice((0, 0, 1, 2)) * max(10, budget // 200 * 10),
        approval_pct=randrange(rng, 40, 111, 5),
        event_times=(randint(rng, 1, 3), randint(rng, 1, 3), randint(rng, 1, 3)),
    )


def _fresh(rng: random.Random, prefix: str, taken: Container[str]) -> str:
    while True:
        key = f"{prefix}{randint(rng, 100, 999)}"
        if key not in taken:
            return key


def deadline_day(deadline: str) -> int | None:
    """The day of a ``"by day N"`` deadline, or ``None`` for any day."""
    return None if deadline == ANY_DAY else int(deadline.rsplit(" ", 1)[1])


def satisfied(
    *,
    vendor: str,
    total: int,
    eco: bool,
    arrives: int,
    brand: str,
    approved: tuple[str, ...],
    budget: int,
    deadline: str,
    wanted_brand: str,
) -> frozenset[str]:
    """The constraint ids an offer satisfies (the expert's beliefs use the same rule)."""
    hits = {"order_placed"}
    if vendor in approved:
        hits.add("within_policy")
    if total <= budget:
        hits.add("within_budget")
    if eco:
        hits.add("eco")
    day = deadline_day(deadline)
    if day is None or arrives <= day:
        hits.add("on_time")
    if wanted_brand == ANY_BRAND or brand == wanted_brand:
        hits.add("brand")
    return frozenset(hits)


def active_preferences(order: tuple[str, ...], deadline: str, brand: str) -> tuple[str, ...]:
    """The preferences that constrain the choice, most important first."""
    active = {
        "eco",
        *(["on_time"] if deadline != ANY_DAY else []),
        *(["brand"] if brand != ANY_BRAND else []),
    }
    return tuple(p for p in order if p in active)


@dataclass(frozen=True, slots=True)
class Catalog:
    """Products and offers as the generator shapes them."""

    products: dict[str, Product]
    offers: dict[str, Offer]

    def sat(self, draw: Draw, budget: int, offer: Offer) -> frozenset[str]:
        product = self.products[offer.product_id]
        return satisfied(
            vendor=offer.vendor,
            total=offer.unit_price * draw.quantity + offer.shipping,
            eco=product.eco,
            arrives=1 + offer.delivery_days,
            brand=product.brand,
            approved=draw.approved,
            budget=budget,
            deadline=draw.deadline,
            wanted_brand=draw.brand,
        )

    def feasible(self, draw: Draw, budget: int, offer: Offer) -> bool:
        hits = self.sat(draw, budget, offer)
        return "within_policy" in hits and "within_budget" in hits and offer.stock >= draw.quantity


def _overpriced(offer: Offer, quantity: int, budget: int) -> Offer:
    """The offer with a unit price that puts the order over budget."""
    price = (budget - offer.shipping) // quantity + 5 + 5 * (len(offer.id) % 3)
    return replace(offer, unit_price=max(price, offer.unit_price))


def _shape(draw: Draw, knobs: Knobs, budget: int, prefs: tuple[str, ...]) -> Catalog:
    """Adjust the drawn catalog so the task has its intended shape."""
    cat = Catalog(dict(draw.products), dict(draw.offers))
    shape = draw.shape
    if shape == "conflict" and (not knobs.priorities or len(prefs) < 2):
        shape = "fits"
    if shape == "nothing":
        for oid, offer in cat.offers.items():
            if offer.vendor in draw.approved:
                cat.offers[oid] = _overpriced(offer, draw.quantity, budget)
        return cat
    pids = list(cat.products)
    first = {pid: next(o for o in cat.offers.values() if o.product_id == pid) for pid in pids}
    if shape == "fits":
        _plant(cat, draw, budget, first[pids[len(pids) // 2]].id, prefs, ())
        return cat
    a, b = first[pids[0]].id, first[pids[1]].id
    _plant(cat, draw, budget, a, prefs[:-1], prefs[-1:])
    _plant(cat, draw, budget, b, prefs[1:], prefs[:1])
    for oid, offer in cat.offers.items():  # nothing feasible may satisfy every preference
        if (
            oid not in (a, b)
            and cat.feasible(draw, budget, offer)
            and set(prefs) <= cat.sat(draw, budget, offer)
        ):
            cat.offers[oid] = _overpriced(offer, draw.quantity, budget)
    return cat


def _plant(
    cat: Catalog, draw: Draw, budget: int, oid: str, keep: tuple[str, ...], break_: tuple[str, ...]
) -> None:
    """Make one offer feasible, meeting ``keep`` and missing ``break_``."""
    offer = cat.offers[oid]
    product = cat.products[offer.product_id]
    eco = True if "eco" in keep else False if "eco" in break_ else product.eco
    brand = product.brand
    if "brand" in keep:
        brand = draw.brand
    elif "brand" in break_:
        brand = next(b for b in BRANDS if b != draw.brand)
    cat.products[product.id] = replace(
        product, eco=eco, brand=brand, name=product.name.replace(product.brand, brand)
    )
    day = deadline_day(draw.deadline)
    days = offer.delivery_days
    if day is not None and "on_time" in keep:
        days = min(days, day - 1)
    if day is not None and "on_time" in break_:
        days = day
    vendor = offer.vendor if offer.vendor in draw.approved else draw.approved[0]
    shipping = offer.shipping
    if (budget - shipping) // draw.quantity < 10:
        shipping = 0
    price = min(offer.unit_price, (budget - shipping) // draw.quantity)
    cat.offers[oid] = replace(
        offer,
        vendor=vendor,
        unit_price=price,
        shipping=shipping,
        stock=max(offer.stock, draw.quantity),
        delivery_days=days,
    )


def _events(
    draw: Draw,
    knobs: Knobs,
    cat: Catalog,
    budget: int,
    prefs: tuple[str, ...],
    best: tuple[str, ...],
) -> tuple[Event, ...]:
    """A price jump and a sell-out on dominated decoys, and a lowered budget (dynamics on)."""
    if not knobs.dynamics:
        return ()
    feasible = sorted(
        (o for o in cat.offers.values() if cat.feasible(draw, budget, o)), key=lambda o: o.id
    )
    mine = {o.id: cat.sat(draw, budget, o) & set(prefs) for o in feasible}
    events: list[Event] = []
    kinds = (("price", draw.event_times[0]), ("stock", draw.event_times[1]))
    for (kind, at), oid in zip(kinds, dominated_decoys(list(mine), mine, best, 2), strict=False):
        target = cat.offers[oid]
        if kind == "price":
            jumped = _overpriced(target, draw.quantity, budget).unit_price
            events.append(Event(at, EventKind.SET, "offers", target.id, "unit_price", jumped))
        else:
            events.append(Event(at, EventKind.SET, "offers", target.id, "stock", 0))
    if draw.budget_drop:
        events.append(
            Event(draw.event_times[2], EventKind.USER_UPDATE, slot="budget", value=budget)
        )
    return ShopWorld.check_events(sorted(events, key=lambda e: e.at))


def _setup(draw: Draw, knobs: Knobs) -> tuple[int, tuple[str, ...], Catalog]:
    """The budget after any drop, the active preferences and the shaped catalog, before any
    event."""
    budget = draw.budget - (draw.budget_drop if knobs.dynamics else 0)
    prefs = active_preferences(draw.order, draw.deadline, draw.brand)
    return budget, prefs, _shape(draw, knobs, budget, prefs)


def _policy(draw: Draw) -> Policy:
    return Policy(draw.approved, draw.budget * draw.approval_pct // 100 // 10 * 10)


def _build(seed: int, knobs: Knobs, draw: Draw) -> Task:
    budget, prefs, cat = _setup(draw, knobs)
    constraint_ids = ("within_policy", "within_budget", "order_placed", *prefs)
    priority = tuple(itertools.pairwise(constraint_ids))
    weights = priority_weights(constraint_ids, priority)

    def table(c: Catalog, budget: int = budget) -> dict[str, frozenset[str]]:
        return {
            o.id: c.sat(draw, budget, o) & set(constraint_ids)
            for o in c.offers.values()
            if o.stock >= draw.quantity
        }

    nothing = frozenset(constraint_ids) - {"order_placed"}
    events = _events(draw, knobs, cat, budget, prefs, best_options(table(cat), nothing, weights))
    final = Catalog(cat.products, apply_sets("offers", cat.offers, events))
    satisfaction = table(final)
    best = best_options(satisfaction, nothing, weights)
    feasible_sets = [
        final.sat(draw, budget, o) for o in final.offers.values() if final.feasible(draw, budget, o)
    ]
    conflict = knobs.priorities and order_matters(feasible_sets, prefs)
    hidden = {k: v and knobs.hidden_info for k, v in draw.hidden.items()}
    slots = buyer_slots(draw, prefs, hidden, draw.priorities_hidden, conflict, knobs)
    priorities_hidden = order_hidden(knobs, slots)
    given = {s.name: s.value for s in slots if s.kind is SlotKind.GIVEN}
    constraints = buyer_constraints(draw, prefs)
    policy = _policy(draw)
    base = ShopBase(cat.products, cat.offers, draw.account, policy, draw.quantity, 20000)
    must_ask = tuple(s.name for s in slots if s.kind is SlotKind.MISSING)
    purchase = _purchase(draw, final, policy, best, must_ask)
    calls, edges, decisions = gold_graph(purchase, knobs)
    truth = GroundTruth(calls, edges, decisions, satisfaction, nothing, best, weights)
    changes = any(e.kind is EventKind.USER_UPDATE for e in events)
    before = (table(cat, draw.budget), table(final, draw.budget)) if changes else None
    truth = with_user_tables(truth, table(cat), before)
    request = Request(
        request_text(draw, given, constraints, knobs),
        given,
        {"address": "get_account", "vendors": "get_purchasing_policy"},
    )
    return Task(
        "shop",
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


def _purchase(
    draw: Draw, final: Catalog, policy: Policy, best: tuple[str, ...], must_ask: tuple[str, ...]
) -> Purchase:
    """What the gold graph needs: the best offer the expert buys (cheapest total, then id)
    and whether its total needs a purchase approval."""
    if not best:
        return Purchase(
            draw.category,
            draw.quantity,
            draw.account.address_id,
            tuple(final.products),
            best,
            None,
            None,
            False,
            must_ask,
        )
    totals = {
        o: final.offers[o].unit_price * draw.quantity + final.offers[o].shipping for o in best
    }
    choice = min(best, key=lambda o: (totals[o], o))
    return Purchase(
        draw.category,
        draw.quantity,
        draw.account.address_id,
        tuple(final.products),
        best,
        choice,
        final.offers[choice].product_id,
        totals[choice] > policy.approval_over,
        must_ask,
    )
