"""Travel task generator: a pure function of ``(seed, knobs)``.

Every draw is made whatever the knobs say and the knobs are applied afterwards, so the same
seed under different knobs gives the same trip with properties switched off.
"""

from __future__ import annotations

import itertools
import random
from dataclasses import dataclass, replace

from stategym.generation import (
    apply_sets,
    dominated_decoys,
    order_matters,
    priorities_kind,
    priorities_sentences,
)
from stategym.kernel.knobs import Knobs
from stategym.kernel.task import (
    Constraint,
    ConstraintKind,
    DecisionPoint,
    EdgeKind,
    Event,
    EventKind,
    GoldCall,
    GoldEdge,
    GroundTruth,
    Precondition,
    Request,
    Slot,
    SlotKind,
    Task,
    Value,
    best_options,
    priority_weights,
)
from stategym.kernel.tools import Effect

from .world import CityEvent, Flight, Policy, Profile, TravelBase

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
    days = tuple(range(FIRST_DAY, FIRST_DAY + rng.randint(3, 5)))
    tail = rng.randint(1, 2)
    event_days = (days[-tail] if rng.random() < 0.5 else days[0], 0)
    event_days = (event_days[0], event_days[0] + tail - 1)
    cap = rng.randrange(800, 1301, 50)
    budget = rng.randrange(550, cap + 1, 50)
    flights: dict[str, Flight] = {}
    carrier = rng.choice(("SG", "NX", "AQ", "LU"))
    for day in days:
        for depart in sorted(rng.sample(DEPARTURES, rng.randint(2, 4))):
            number = f"{carrier}{rng.randint(100, 999)}"
            while number in flights:
                number = f"{carrier}{rng.randint(100, 999)}"
            price = rng.randrange(300, 1400, 10)
            flights[number] = Flight(
                number, home, dest, day, depart, price, rng.random() < 0.4, rng.randint(1, 9)
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
        event_times=(rng.randint(1, 3), rng.randint(1, 3), rng.randint(1, 3)),
    )


def _prefs(draw: Draw, fare_type: str, departure: str) -> tuple[str, ...]:
    active = {
        "avoid_event",
        *(["refundable"] if fare_type == "refundable" else []),
        *(["departure"] if departure != "any" else []),
    }
    return tuple(p for p in draw.order if p in active)


def satisfied(
    flight: Flight,
    cap: int,
    budget: int,
    event_days: tuple[int, int],
    fare_type: str,
    departure: str,
) -> frozenset[str]:
    """The constraint ids a flight satisfies."""
    hits = {"trip_booked"}
    if flight.price <= cap:
        hits.add("within_policy")
    if flight.price <= budget:
        hits.add("within_budget")
    if not event_days[0] <= flight.day <= event_days[1]:
        hits.add("avoid_event")
    if fare_type != "refundable" or flight.refundable:
        hits.add("refundable")
    if departure == "any" or (departure == "morning") == (flight.depart < "12:00"):
        hits.add("departure")
    return frozenset(hits)


def _shape_flights(
    draw: Draw, knobs: Knobs, budget: int, fare_type: str, departure: str
) -> dict[str, Flight]:
    """Adjust the drawn flights so the task has its intended shape."""
    flights = dict(draw.flights)
    limit = min(draw.cap, budget)
    prefs = _prefs(draw, fare_type, departure)
    shape = draw.shape
    if shape == "conflict" and (not knobs.priorities or len(prefs) < 2):
        shape = "fits"
    ids = list(flights)
    if shape == "nothing":
        for fid in ids:
            f = flights[fid]
            if f.price <= limit:
                flights[fid] = replace(f, price=limit + 10 * (1 + len(fid) % 7))
        return flights

    def good(f: Flight, wanted: tuple[str, ...]) -> bool:
        s = satisfied(f, draw.cap, budget, draw.event_days, fare_type, departure)
        return all(p in s for p in wanted)

    if shape == "conflict":
        for fid in ids:  # nothing within the limits may satisfy every preference
            f = flights[fid]
            if f.price <= limit and good(f, prefs):
                flights[fid] = replace(f, price=limit + 10)
        a, b = ids[0], ids[-1]
        flights[a] = _make_satisfy(
            flights[a], draw, prefs[:-1], prefs[-1:], limit, fare_type, departure
        )
        flights[b] = _make_satisfy(
            flights[b], draw, prefs[1:], prefs[:1], limit, fare_type, departure
        )
        return flights
    planted = ids[len(ids) // 2]
    flights[planted] = _make_satisfy(flights[planted], draw, prefs, (), limit, fare_type, departure)
    return flights


def _make_satisfy(
    f: Flight,
    draw: Draw,
    keep: tuple[str, ...],
    break_: tuple[str, ...],
    limit: int,
    fare_type: str,
    departure: str,
) -> Flight:
    """Change one flight so it fits the limits, meets ``keep`` and misses ``break_``."""
    outside = [d for d in draw.days if not draw.event_days[0] <= d <= draw.event_days[1]]
    inside = [d for d in draw.days if draw.event_days[0] <= d <= draw.event_days[1]]
    day, depart, refundable = f.day, f.depart, f.refundable
    if "avoid_event" in keep:
        day = outside[0] if day not in outside else day
    if "avoid_event" in break_:
        day = inside[0]
    if "refundable" in keep:
        refundable = True
    if "refundable" in break_:
        refundable = False
    morning, evening = "08:15", "19:45"
    if "departure" in keep:
        depart = morning if departure == "morning" else evening
    if "departure" in break_:
        depart = evening if departure == "morning" else morning
    price = min(f.price, limit - 20) if f.price > limit - 20 else f.price
    return replace(
        f,
        day=day,
        depart=depart,
        refundable=refundable,
        price=max(price, 200),
        seats=max(f.seats, 1),
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
    return tuple(sorted(events, key=lambda e: e.at))


def _build(seed: int, knobs: Knobs, draw: Draw) -> Task:
    final_budget = draw.budget - (draw.budget_drop if knobs.dynamics else 0)
    flights = _shape_flights(draw, knobs, final_budget, draw.fare_type, draw.departure)
    prefs = _prefs(draw, draw.fare_type, draw.departure)
    constraint_ids = ("within_policy", "within_budget", "trip_booked", *prefs)
    priority = tuple(itertools.pairwise(constraint_ids))
    weights = priority_weights(constraint_ids, priority)

    def table(fl: dict[str, Flight]) -> dict[str, frozenset[str]]:
        return {
            f.id: satisfied(
                f, draw.cap, final_budget, draw.event_days, draw.fare_type, draw.departure
            )
            & set(constraint_ids)
            for f in fl.values()
            if f.seats > 0
        }

    nothing = frozenset(constraint_ids) - {"trip_booked"}
    best_before = best_options(table(flights), nothing, weights)
    events = _events(
        draw, knobs, flights, final_budget, draw.fare_type, draw.departure, best_before
    )
    final = apply_sets("flights", flights, events)
    satisfaction = table(final)
    best = best_options(satisfaction, nothing, weights)
    limit = min(draw.cap, final_budget)
    feasible_sets = [s for fid, s in satisfaction.items() if final[fid].price <= limit]
    conflict = knobs.priorities and order_matters(feasible_sets, prefs)
    hidden = {k: v and knobs.hidden_info for k, v in draw.hidden.items()}
    priorities_hidden = draw.priorities_hidden and knobs.priorities and knobs.hidden_info
    slots = _slots(draw, prefs, hidden, priorities_hidden, conflict, knobs)
    given = {s.name: s.value for s in slots if s.kind is SlotKind.GIVEN}
    constraints = _constraints(draw, prefs)
    base = TravelBase(
        flights=flights,
        events=(CityEvent(draw.dest, draw.event_name, *draw.event_days),),
        profile=Profile(TRAVELERS[seed % len(TRAVELERS)], draw.home, f"LY{seed % 100000:05d}"),
        policy=Policy(draw.cap, "economy"),
        balance=5000,
    )
    must_ask = tuple(s.name for s in slots if s.kind is SlotKind.MISSING)
    calls, edges, decisions = _gold(draw, knobs, final, best, must_ask)
    truth = GroundTruth(
        calls=calls,
        edges=edges,
        decisions=decisions,
        satisfaction=satisfaction,
        nothing_satisfies=nothing,
        best=best,
        weights=weights,
    )
    request = Request(
        _request_text(draw, given, constraints, knobs),
        given,
        {
            "origin": "get_profile",
            "policy_cap": "get_travel_policy",
            "event_days": "get_city_events",
        },
        draw.days,
    )
    return Task(
        "travel",
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


def _slots(
    draw: Draw,
    prefs: tuple[str, ...],
    hidden: dict[str, bool],
    priorities_hidden: bool,
    conflict: bool,
    knobs: Knobs,
) -> tuple[Slot, ...]:
    def kind(name: str) -> SlotKind:
        return SlotKind.MISSING if hidden[name] else SlotKind.GIVEN

    order: Value = ">".join(prefs)
    first, last = draw.days[0], draw.days[-1]
    return (
        Slot("destination", SlotKind.GIVEN, draw.dest, "I'm going to {value}."),
        Slot("window", SlotKind.GIVEN, f"{first}-{last}", "I can leave between days {value}."),
        Slot("origin", SlotKind.DERIVABLE, draw.home, "I fly from {value}."),
        Slot("policy_cap", SlotKind.DERIVABLE, draw.cap, "I think the policy allows ${value}."),
        Slot(
            "event_days",
            SlotKind.DERIVABLE,
            "-".join(map(str, draw.event_days)),
            "I believe it runs over days {value}.",
        ),
        Slot("budget", kind("budget"), draw.budget, "My budget is ${value}."),
        Slot("fare_type", kind("fare_type"), draw.fare_type, "As for the fare type, {value}."),
        Slot("departure", kind("departure"), draw.departure, "As for the departure time, {value}."),
        Slot("seat", SlotKind.IRRELEVANT, draw.seat, "I like a {value} seat."),
        Slot("priorities", priorities_kind(knobs, priorities_hidden, conflict), order, "{value}"),
    )


def _constraints(draw: Draw, prefs: tuple[str, ...]) -> tuple[Constraint, ...]:
    texts = {
        "avoid_event": (f"to avoid the {draw.event_name}", "event"),
        "refundable": ("a refundable fare", "fare_type"),
        "departure": (
            f"{'an' if draw.departure == 'evening' else 'a'} {draw.departure} departure",
            "departure",
        ),
    }
    fixed = (
        Constraint(
            "within_policy",
            ConstraintKind.POLICY,
            "to stay within the company travel policy",
            "policy_cap",
        ),
        Constraint("within_budget", ConstraintKind.NEED, "to stay within my budget", "budget"),
        Constraint("trip_booked", ConstraintKind.NEED, "to get a flight at all", "flight"),
    )
    return fixed + tuple(Constraint(p, ConstraintKind.PREFERENCE, *texts[p]) for p in prefs)


def _gold(
    draw: Draw,
    knobs: Knobs,
    final: dict[str, Flight],
    best: tuple[str, ...],
    must_ask: tuple[str, ...],
) -> tuple[tuple[GoldCall, ...], tuple[GoldEdge, ...], tuple[DecisionPoint, ...]]:
    """The gold call graph and the commit decision point for the realised world."""
    calls = [GoldCall(f"ask:{s}", "ask") for s in must_ask]
    calls += [
        GoldCall("get_profile", "get_profile", {}, Effect.READ),
        GoldCall("get_travel_policy", "get_travel_policy", {}, Effect.READ),
        GoldCall("get_city_events", "get_city_events", {"airport": draw.dest}, Effect.READ),
    ]
    edges: list[GoldEdge] = []
    for day in draw.days:
        node = f"search:{day}"
        calls.append(
            GoldCall(
                node,
                "search_flights",
                {"origin": draw.home, "destination": draw.dest, "day": day},
                Effect.READ,
            )
        )
        edges.append(GoldEdge("get_profile", node, EdgeKind.PIPE))
    decisions: list[DecisionPoint] = []
    if knobs.stateful:
        preconditions = [
            Precondition("fresh fare of the chosen flight", "hold"),
            Precondition("the traveler confirmed the flight", "confirm"),
            Precondition("the policy's fare cap", "get_travel_policy"),
        ]
        preconditions += [Precondition(f"{s} from the traveler", f"ask:{s}") for s in must_ask]
        decisions.append(
            DecisionPoint(
                "book",
                "book_and_pay",
                bool(best),
                {},
                best[0] if best else None,
                tuple(preconditions),
                1.0,
            )
        )
    if knobs.stateful and best:
        calls += [
            GoldCall("hold", "hold_fare", {"flight_id": best}, Effect.WRITE),
            GoldCall("confirm", "confirm"),
            GoldCall("pay", "book_and_pay", {}, Effect.COMMIT),
        ]
        best_day = final[best[0]].day
        edges += [
            GoldEdge(f"search:{d}", "hold", EdgeKind.PIPE if d == best_day else EdgeKind.DECIDE)
            for d in draw.days
        ]
        edges += [
            GoldEdge("get_travel_policy", "hold", EdgeKind.DECIDE),
            GoldEdge("get_city_events", "hold", EdgeKind.DECIDE),
        ]
        edges += [GoldEdge(f"ask:{s}", "hold", EdgeKind.GATE) for s in must_ask]
        edges += [
            GoldEdge("hold", "confirm", EdgeKind.DECIDE),
            GoldEdge("hold", "pay", EdgeKind.PIPE),
            GoldEdge("confirm", "pay", EdgeKind.ORDER),
        ]
    return tuple(calls), tuple(edges), tuple(decisions)


def _request_text(
    draw: Draw, given: dict[str, Value], constraints: tuple[Constraint, ...], knobs: Knobs
) -> str:
    city = next(name for code, name, _ in CITIES if code == draw.dest)
    first, last = draw.days[0], draw.days[-1]
    verb = "Book me" if knobs.stateful else "Find the best"
    parts = [
        f"Hi! Today is day 1. {verb} a flight from my home airport to {city} ({draw.dest}), "
        f"leaving between day {first} and day {last}."
    ]
    parts.append(
        f"My budget is ${given['budget']}." if "budget" in given else "Keep it within my budget."
    )
    parts.append(f"Stay within the company travel policy and avoid the {draw.event_name}.")
    if "fare_type" in given:
        parts.append(
            "The fare must be refundable."
            if given["fare_type"] == "refundable"
            else "Refundable or not, either is fine."
        )
    if "departure" in given:
        parts.append(
            "Any departure time works."
            if given["departure"] == "any"
            else f"I'd like an {given['departure']} departure."
            if given["departure"] == "evening"
            else f"I'd like a {given['departure']} departure."
        )
    parts += priorities_sentences(given, constraints)
    if not knobs.stateful:
        parts.append("Don't book anything: finish with the flight id you recommend, or 'none'.")
    return " ".join(parts)
