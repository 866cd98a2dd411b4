"""Travel tools. Each docstring is exactly what the model sees, as its ``when_off``
sentences change it where a knob is off (:mod:`stategym.kernel.knob_text`)."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from stategym.kernel.errors import ToolError
from stategym.kernel.tools import Effect, tool
from stategym.kernel.world import USER_ACCOUNT, usable_hold

from .world import AIRLINE_ACCOUNT, Booking, Hold, TravelWorld

HOLD_TICKS = 4
"""A fare hold lasts this many clock ticks (when dynamics are on). It keeps the fare, not a
seat: ``book_and_pay`` reads the seats left when it runs (a scheduled sell-out still fails it)."""
REFUNDABLE_FEE = 50
"""Cancelling a refundable fare costs this fee; a non-refundable fare refunds nothing."""


@tool(effect=Effect.READ)
def get_profile(world: TravelWorld) -> dict[str, Any]:
    """Read the traveler's profile: name, home airport and loyalty number."""
    p = world.base.profile
    return {
        "traveler": p.traveler,
        "home_airport": p.home_airport,
        "loyalty_number": p.loyalty_number,
    }


@tool(effect=Effect.READ)
def get_travel_policy(world: TravelWorld) -> dict[str, Any]:
    """Read the company travel policy: the highest fare it allows and the cabin class."""
    return {"max_fare": world.base.policy.max_fare, "cabin": world.base.policy.cabin}


@tool(effect=Effect.READ)
def get_city_events(world: TravelWorld, airport: str) -> list[dict[str, Any]]:
    """List the crowded seasons and big events at a destination, with their day ranges.

    Args:
        airport: IATA code of the destination airport.
    """
    return [
        {"name": e.name, "first_day": e.first_day, "last_day": e.last_day}
        for e in world.base.events
        if e.airport == airport
    ]


@tool(
    effect=Effect.READ,
    latency=2,
    when_off={
        "dynamics": {"Prices shown can change": "Prices stay as shown"},
        "stateful": {"; a held fare keeps its price": ""},
    },
)
def search_flights(
    world: TravelWorld, origin: str, destination: str, day: int
) -> list[dict[str, Any]]:
    """Search direct flights on one day. Prices shown can change; a held fare keeps its price.

    Args:
        origin: IATA code of the departure airport.
        destination: IATA code of the arrival airport.
        day: day number of the departure.
    """
    return [
        {
            "flight_id": f.id,
            "depart": f.depart,
            "price": f.price,
            "refundable": f.refundable,
            "seats_left": f.seats,
            "day": f.day,
        }
        for f in world.flights.values()
        if f.origin == origin and f.destination == destination and f.day == day and f.seats > 0
    ]


@tool(
    effect=Effect.WRITE,
    when_off={
        "dynamics": {
            "and when it expires; it keeps that price until then but sets no seat aside, so "
            "payment fails if the flight sells out first.": (
                "and keeps it; holds do not expire, and only your own bookings take seats here."
            )
        }
    },
)
def hold_fare(world: TravelWorld, flight_id: str) -> dict[str, Any]:
    """Hold the current fare. The hold shows the price you would pay and when it expires; it
    keeps that price until then but sets no seat aside, so payment fails if the flight sells
    out first.

    Args:
        flight_id: the flight to hold, from search_flights.
    """
    flight = world.flights.get(flight_id)
    if flight is None:
        raise ToolError(f"no flight {flight_id}")
    if flight.seats <= 0:
        raise ToolError(f"flight {flight_id} is sold out")
    expires = world.clock + HOLD_TICKS if world.knobs.dynamics else None
    hold = Hold(world.new_id("H"), flight_id, flight.price, expires, "active")
    world.holds[hold.id] = hold
    return {
        "hold_id": hold.id,
        "option": flight_id,
        "price": hold.price,
        "refundable": flight.refundable,
        "expires_at": expires,
    }


@tool(
    effect=Effect.COMMIT,
    when_off={
        "irreversible": {
            "Payment cannot be undone.": (
                "Payment can be undone: cancel_booking refunds the whole price."
            )
        },
        "dynamics": {" that has not expired": ""},
    },
)
def book_and_pay(world: TravelWorld, hold_id: str) -> dict[str, Any]:
    """Book the held flight and charge the traveler's card. Payment cannot be undone.

    Args:
        hold_id: a hold from hold_fare that has not expired.
    """
    hold = usable_hold(world.holds, hold_id, world.clock, "hold the fare again")
    flight = world.flights[hold.flight_id]
    if flight.seats <= 0:
        raise ToolError(f"flight {flight.id} sold out before payment")
    world.flights[flight.id] = replace(flight, seats=flight.seats - 1)
    booking = Booking(world.new_id("B"), flight.id, hold.price, flight.refundable, "active")
    world.holds[hold_id] = replace(hold, status="used")
    world.bookings[booking.id] = booking
    world.transfer(USER_ACCOUNT, AIRLINE_ACCOUNT, hold.price, f"fare {flight.id}", booking.id)
    return {"booking_id": booking.id, "option": flight.id, "charged": hold.price}


@tool(
    effect=Effect.COMMIT,
    when_off={
        "irreversible": {
            "Refundable fares refund the price minus a fee; others refund nothing.": (
                "Every fare is refunded in full, with no fee."
            )
        }
    },
)
def cancel_booking(world: TravelWorld, booking_id: str) -> dict[str, Any]:
    """Cancel a booking; its seat is free again. Refundable fares refund the price minus a fee;
    others refund nothing.

    Args:
        booking_id: the booking to cancel.
    """
    booking = world.bookings.get(booking_id)
    if booking is None or booking.status != "active":
        raise ToolError(f"no active booking {booking_id}")
    if not world.knobs.irreversible:
        fee = 0
    elif booking.refundable:
        fee = min(REFUNDABLE_FEE, booking.price)
    else:
        fee = booking.price
    world.bookings[booking_id] = replace(booking, status="cancelled")
    flight = world.flights[booking.flight_id]
    world.flights[flight.id] = replace(flight, seats=flight.seats + 1)  # the seat is free again
    if booking.price - fee > 0:
        world.transfer(AIRLINE_ACCOUNT, USER_ACCOUNT, booking.price - fee, "refund", booking_id)
    return {
        "booking_id": booking_id,
        "option": booking.flight_id,
        "refund": booking.price - fee,
        "fee": fee,
    }


@tool(effect=Effect.READ, reads_own_writes=True)
def list_bookings(world: TravelWorld) -> list[dict[str, Any]]:
    """List the traveler's bookings and their status."""
    return [
        {"booking_id": b.id, "flight_id": b.flight_id, "price": b.price, "status": b.status}
        for b in world.bookings.values()
    ]


TOOLS = (
    get_profile,
    get_travel_policy,
    get_city_events,
    search_flights,
    hold_fare,
    book_and_pay,
    cancel_booking,
    list_bookings,
)
