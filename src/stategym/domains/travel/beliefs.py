"""What a travel agent has learnt so far, and how it reads the user's words and tool results."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from stategym.agents.hearing import Answers, hear
from stategym.kernel.protocol import Observation
from stategym.kernel.task import Value

from .generator import PREFERENCES

_ANSWERS: Answers = (
    ("budget", re.compile(r"budget is \$(\d+)"), int),
    ("fare_type", re.compile(r"fare type, (refundable|any)"), str),
    ("departure", re.compile(r"departure time, (morning|evening|any)"), str),
)


def _preference(phrase: str) -> str | None:
    """The preference a phrase of the user's ranking speaks of."""
    if phrase.startswith("to avoid the"):
        return "avoid_event"
    if phrase in ("a refundable fare", "the fare type"):
        return "refundable"
    if phrase.endswith("departure") or phrase == "my departure time":
        return "departure"
    return None


@dataclass(slots=True)
class FlightView:
    id: str
    day: int
    depart: str
    price: int
    refundable: bool


@dataclass(slots=True)
class Beliefs:
    """The agent's knowledge; ``None`` means not known yet."""

    values: dict[str, Value] = field(default_factory=dict)
    order: tuple[str, ...] | None = None
    origin: str | None = None
    cap: int | None = None
    event_days: tuple[int, int] | None = None
    flights: dict[str, FlightView] = field(default_factory=dict)
    excluded: set[str] = field(default_factory=set)
    changed: bool = False

    def see(self, observation: Observation) -> dict[str, Any]:
        """Take in tool results and user words; returns successful results by tool name."""
        hear(self, observation.user, _ANSWERS, _preference)
        found: dict[str, Any] = {}
        for result in observation.results:
            if not result.ok:
                continue
            content = result.content
            found[result.name] = content
            if result.name == "get_profile":
                self.origin = content["home_airport"]
            elif result.name == "get_travel_policy":
                self.cap = content["max_fare"]
            elif result.name == "get_city_events" and content:
                self.event_days = (content[0]["first_day"], content[0]["last_day"])
            elif result.name == "search_flights":
                for row in content:
                    self.flights[row["flight_id"]] = FlightView(
                        row["flight_id"], row["day"], row["depart"], row["price"], row["refundable"]
                    )
            elif result.name == "hold_fare":
                view = self.flights.get(content["option"])
                if view is not None:
                    view.price = content["price"]
        return found

    def preferences(self) -> tuple[str, ...]:
        active = ["avoid_event"]
        if self.values.get("fare_type") == "refundable":
            active.append("refundable")
        if self.values.get("departure", "any") != "any":
            active.append("departure")
        return tuple(active)

    def meets(self, flight: FlightView) -> frozenset[str]:
        """The active preferences a flight meets, as far as the agent knows."""
        hits = set()
        first, last = self.event_days or (0, -1)
        if not first <= flight.day <= last:
            hits.add("avoid_event")
        if self.values.get("fare_type") != "refundable" or flight.refundable:
            hits.add("refundable")
        departure = self.values.get("departure", "any")
        if departure == "any" or (departure == "morning") == (flight.depart < "12:00"):
            hits.add("departure")
        return frozenset(hits) & set(self.preferences())

    def default_order(self) -> tuple[str, ...]:
        return tuple(p for p in PREFERENCES if p in self.preferences())
