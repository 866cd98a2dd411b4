"""Travel task generator: a pure function of ``(seed, knobs)``.

Every draw is made whatever the knobs say and the knobs are applied afterwards, so the same
seed under different knobs gives the same trip with properties switched off.
"""

from __future__ import annotations

import itertools
import random
from dataclasses import dataclass

from stategym.generation import (
    Table,
    apply_sets,
    dominated_decoys,
    order_hidden,
    order_matters,
    with_user_tables,
)
from stategym.kernel.draws import randint, randrange
from stategym.kernel.knobs import Knobs
from stategym.kernel.task import (
    Constraint,
    Event,
    EventKind,
    GroundTruth,
    Request,
    Slot,
    SlotKind,
    Task,
    best_options,
    priority_weights,
)

from .flights import active_preferences, satisfied, shape_flights
from .gold import gold
from .request import request_text, traveller_constraints, traveller_slots
from .world import CityEvent, Flight, Policy, Profile, TravelBase, TravelWorld

CITIES: tuple[tuple[str, str, str], ...] = (
    ("HND", "Tokyo", "tail of the cherry-blossom season"),
    ("KIX", "Osaka", "cherry-blossom crowds"),
    ("ICN", "Seoul", "lantern festival"),
    ("CDG", "Paris", "fashion week"),
    ("LHR", "London", "marathon weekend"),
    ("JFK", "New York", "UN general assembly"),
    ("SFO", "San Francisco", "tech conference week"),
    ("BER", "Berlin", "film festival"),
    ("SIN", "Singapore", "Grand Prix weekend"),
    ("SYD", "Sydney", "Vivid light festival"),
    ("YYZ", "Toronto", "film festival"),
    ("MAD", "Madrid", "San Isidro festival"),
)
TRAVELERS = ("Ana Lima", "Bo Chen", "Dee Park", "Eli Novak", "Farah Aziz", "Gus Moreau")
DEPARTURES = ("06:40", "08:15", "09:50", "12:30", "14:05", "17:20", "19:45", "21:30")
FIRST_DAY = 8
PREFERENCES = ("avoid_event", "refundable", "departure")
MAX_ROUNDS = 30


@dataclass(frozen=True, slots=True)
class Draw:
    """Everything random about one trip, before the knobs are applied."""

    home: str
    dest: str
    event_name: str
    days: tuple[int, ...]
    event_days: tuple[int, int]
    cap: int
    budget: int
    fare_type: str
    departure: str
    seat: str
    order: tuple[str, ...]
    shape: str  # "fits", "conflict" or "nothing"
    hidden: dict[str, bool]
    priorities_hidden: bool
    flights: dict[str, Flight]
    budget_drop: int
    event_times: tuple[int, int, int]


def generate(seed: int, knobs: Knobs) -> Task:
    """Generate the travel task for ``seed`` under ``knobs``."""
    draw = _draw(seed)
    return _build(seed, knobs, draw)


def _draw(seed: int) -> Draw:
    rng = random.Random(f"travel:{seed}")
    (home, _, _), (dest, _, event_name) = rng.sample(CITIES, 2)
    days = tuple(range(FIRST_DAY, FIRST_DAY + randint(rng, 3, 5)))
    tail = randint(rng, 1, 2)
    event_days = (days[-tail] if rng.random() < 0.5 else days[0], 0)
    event_days = (event_days[0], event_days[0] + tail - 1)
    cap = randrange(rng, 800, 1301, 50)
    budget = randrange(rng, 550, cap + 1, 50)
    flights: dict[str, Flight] = {}
    carrier = rng.choice(("SG", "NX", "AQ", "LU"))
    for day in days:
        for depart in sorted(rng.sample(DEPARTURES, randint(rng, 2, 4))):
            number = f"{carrier}{randint(rng, 100, 999)}"
            while number in flights:
                number = f"{carrier}{randint(rng, 100, 999)}"
            price = randrange(rng, 300, 1400, 10)
            flights[number] = Flight(
                number, home, dest, day, depart, price, rng.random() < 0.4, randint(rng, 1, 9)
            )
    return Draw(
        home=home,
        dest=dest,
        event_name=event_name,
        days=days,
        event_days=event_days,
        cap=cap,
        budget=budget,
        fare_type=rng.choice(("refundable", "any")),
        departure=rng.choice(("morning", "evening", "any")),
        seat=rng.choice(("window", "aisle")),
        order=tuple(rng.sample(PREFERENCES, 3)),
        shape=rng.choices(("fits", "conflict", "nothing"), (0.45, 0.43, 0.12))[0],
        hidden={s: rng.random() < 0.6 for s in ("budget", "fare_type", "departure")},
        priorities_hidden=rng.random() < 0.6,
        flights=flights,
        budget_drop=rng.choice((0, 0, 50, 100)),
        event_times=(randint(rng, 1, 3), randint(rng, 1, 3), randint(rng, 1, 3)),
    )


def _pref_set(f: Flight, draw: Draw, budget: int, fare_type: str, departure: str) -> frozenset[str]:
    return satisfied(f, draw.cap, budget, draw.event_days, fare_type, departure) & set(PREFERENCES)


def _events(
    draw: Draw,
    knobs: Knobs,
    flights: dict[str, Flight],
    budget: int,
    fare_type: str,
    departure: str,
    best: tuple[str, ...],
) -> tuple[Event, ...]:
    """Price jump and sell-out on dominated decoys, and a lowered budget (dynamics on)."""
    if not knobs.dynamics:
        return ()
    limit = min(draw.cap, budget)
    feasible = [
        f for f in sorted(flights.values(), key=lambda f: (f.day, f.depart)) if f.price <= limit
    ]
    prefs = {f.id: _pref_set(f, draw, budget, fare_type, departure) for f in feasible}
    events: list[Event] = []
    kinds = (("price", draw.event_times[0]), ("seats", draw.event_times[1]))
    for (kind, at), fid in zip(kinds, dominated_decoys(list(prefs), prefs, best, 2), strict=False):
        target = flights[fid]
        if kind == "price":
            jump = limit + 40 + 10 * (len(target.id) + target.day) - target.price
            events.append(
                Event(at, EventKind.SET, "flights", target.id, "price", target.price + jump)
            )
        else:
            events.append(Event(at, EventKind.SET, "flights", target.id, "seats", 0))
    if draw.budget_drop:
        events.append(
            Event(draw.event_times[2], EventKind.USER_UPDATE, slot="budget", value=budget)
        )
    return TravelWorld.check_events(sorted(events, key=lambda e: e.at))


@dataclass(frozen=True, slots=True)
class Realised:
    """The world once its events have fired, and how each flight in it scores."""

    events: tuple[Event, ...]
    final: dict[str, Flight]
    """The flights once every scheduled ``set`` event has fired."""
    satisfaction: dict[str, frozenset[str]]
    """The constraint ids each flight with a seat left satisfies."""
    nothing: frozenset[str]
    best: tuple[str, ...]
    offered: Table
    """The constraint ids each flight with a seat satisfies before any event."""
    before: tuple[Table, Table] | None
    """``offered`` and ``satisfaction`` under the drawn budget, before the user lowers it
    (``None``: it never does)."""


def _build(seed: int, knobs: Knobs, draw: Draw) -> Task:
    final_budget = draw.budget - (draw.budget_drop if knobs.dynamics else 0)
    flights = shape_flights(draw, knobs, final_budget, draw.fare_type, draw.departure)
    prefs = active_preferences(draw, draw.fare_type, draw.departure)
    constraint_ids = ("within_policy", "within_budget", "trip_booked", *prefs)
    priority = tuple(itertools.pairwise(constraint_ids))
    weights = priority_weights(constraint_ids, priority)
    realised = _realise(draw, knobs, flights, final_budget, constraint_ids, weights)
    limit = min(draw.cap, final_budget)
    feasible_sets = [
        s for fid, s in realised.satisfaction.items() if realised.final[fid].price <= limit
    ]
    conflict = knobs.priorities and order_matters(feasible_sets, prefs)
    hidden = {k: v and knobs.hidden_info for k, v in draw.hidden.items()}
    slots = traveller_slots(draw, prefs, hidden, draw.priorities_hidden, conflict, knobs)
    priorities_hidden = order_hidden(knobs, slots)
    constraints = traveller_constraints(draw, prefs)
    must_ask = tuple(s.name for s in slots if s.kind is SlotKind.MISSING)
    calls, edges, decisions = gold(draw, knobs, realised.final, realised.best, must_ask)
    truth = GroundTruth(
        calls=calls,
        edges=edges,
        decisions=decisions,
        satisfaction=realised.satisfaction,
        nothing_satisfies=realised.nothing,
        best=realised.best,
        weights=weights,
    )
    truth = with_user_tables(truth, realised.offered, realised.before)
    request = _request(draw, knobs, slots, constraints)
    base = _base(seed, draw, flights)
    return Task(
        "travel",
        seed,
        knobs,
        request,
        slots,
        constraints,
        priority,
        priorities_hidden,
        realised.events,
        base,
        truth,
        MAX_ROUNDS,
    )


def _realise(
    draw: Draw,
    knobs: Knobs,
    flights: dict[str, Flight],
    budget: int,
    constraint_ids: tuple[str, ...],
    weights: dict[str, int],
) -> Realised:
    """Schedule the events on decoys the best choice does not need, then score the flights
    as they will be once the events have fired."""

    def table(fl: dict[str, Flight], budget: int = budget) -> dict[str, frozenset[str]]:
        return {
            f.id: satisfied(f, draw.cap, budget, draw.event_days, draw.fare_type, draw.departure)
            & set(constraint_ids)
            for f in fl.values()
            if f.seats > 0
        }

    nothing = frozenset(constraint_ids) - {"trip_booked"}
    best_before = best_options(table(flights), nothing, weights)
    events = _events(draw, knobs, flights, budget, draw.fare_type, draw.departure, best_before)
    final = apply_sets("flights", flights, events)
    satisfaction = table(final)
    changes = any(e.kind is EventKind.USER_UPDATE for e in events)
    return Realised(
        events,
        final,
        satisfaction,
        nothing,
        best_options(satisfaction, nothing, weights),
        table(flights),
        (table(flights, draw.budget), table(final, draw.budget)) if changes else None,
    )


def _request(
    draw: Draw, knobs: Knobs, slots: tuple[Slot, ...], constraints: tuple[Constraint, ...]
) -> Request:
    given = {s.name: s.value for s in slots if s.kind is SlotKind.GIVEN}
    city = next(name for code, name, _ in CITIES if code == draw.dest)
    return Request(
        request_text(draw, city, given, constraints, knobs),
        given,
        {
            "origin": "get_profile",
            "policy_cap": "get_travel_policy",
            "event_days": "get_city_events",
        },
        draw.days,
    )


def _base(seed: int, draw: Draw, flights: dict[str, Flight]) -> TravelBase:
    return TravelBase(
        flights=flights,
        events=(CityEvent(draw.dest, draw.event_name, *draw.event_days),),
        profile=Profile(TRAVELERS[seed % len(TRAVELERS)], draw.home, f"LY{seed % 100000:05d}"),
        policy=Policy(draw.cap, "economy"),
        balance=5000,
    )
