"""Travel flights: which constraints a flight satisfies, and the shaping that gives a drawn
set of flights its intended shape (one that fits, a priority conflict, or nothing at all)."""

from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING

from stategym.kernel.knobs import Knobs

from .world import Flight

if TYPE_CHECKING:
    from .generator import Draw


def active_preferences(draw: Draw, fare_type: str, departure: str) -> tuple[str, ...]:
    """The preferences the traveller holds, in the drawn priority order."""
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


def shape_flights(
    draw: Draw, knobs: Knobs, budget: int, fare_type: str, departure: str
) -> dict[str, Flight]:
    """Adjust the drawn flights so the task has its intended shape."""
    flights = dict(draw.flights)
    limit = min(draw.cap, budget)
    prefs = active_preferences(draw, fare_type, departure)
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
