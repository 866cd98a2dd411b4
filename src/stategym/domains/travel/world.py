"""Travel: typed records and the episode world."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Literal

from stategym.kernel.knobs import Knobs
from stategym.kernel.world import USER_ACCOUNT, Table, World

AIRLINE_ACCOUNT = "airline"


@dataclass(frozen=True, slots=True)
class Flight:
    id: str
    origin: str
    destination: str
    day: int
    depart: str
    price: int
    refundable: bool
    seats: int


@dataclass(frozen=True, slots=True)
class CityEvent:
    airport: str
    name: str
    first_day: int
    last_day: int


@dataclass(frozen=True, slots=True)
class Profile:
    traveler: str
    home_airport: str
    loyalty_number: str


@dataclass(frozen=True, slots=True)
class Policy:
    max_fare: int
    cabin: str


@dataclass(frozen=True, slots=True)
class Hold:
    id: str
    flight_id: str
    price: int
    expires_at: int | None
    status: Literal["active", "used"]


@dataclass(frozen=True, slots=True)
class Booking:
    id: str
    flight_id: str
    price: int
    refundable: bool
    status: Literal["active", "cancelled"]


@dataclass(frozen=True, slots=True)
class TravelBase:
    """The generated, read-only part of a travel world."""

    flights: Mapping[str, Flight]
    events: tuple[CityEvent, ...]
    profile: Profile
    policy: Policy
    balance: int


class TravelWorld(World):
    TABLES = ("flights", "holds", "bookings")

    def __init__(self, base: TravelBase, knobs: Knobs) -> None:
        super().__init__({USER_ACCOUNT: base.balance, AIRLINE_ACCOUNT: 0})
        self.base = base
        self.knobs = knobs
        self.flights: Table[str, Flight] = Table(base.flights)
        self.holds: Table[str, Hold] = Table({})
        self.bookings: Table[str, Booking] = Table({})
