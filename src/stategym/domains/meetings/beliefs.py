"""What a meetings agent has learnt so far, and how it reads the user's words and tool results.

Everything here comes from observations: the request, the user's answers and tool results.
Facts not yet observed count against an option (an unread calendar is treated as busy), so
the agent never picks a time it has not checked.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from stategym.agents.hearing import Answers, hear
from stategym.kernel.protocol import Observation
from stategym.kernel.task import Value

from .spec import split_names
from .timegrid import (
    CELL,
    CLOSE,
    FULL,
    OPEN,
    PREFERENCES,
    Availability,
    Scene,
    minutes,
    span,
    window,
)

_ANSWERS: Answers = (
    ("optional", re.compile(r"Optional attendees: ([^.]+)\."), str),
    ("duration", re.compile(r"should last (\d+) minutes"), int),
    ("time_of_day", re.compile(r"time of day, (morning|afternoon|any)\b"), str),
    ("room_feature", re.compile(r"room equipment, (video|whiteboard|any)\b"), str),
)


def _preference(phrase: str) -> str | None:
    """The preference a phrase of the user's ranking speaks of."""
    if phrase.startswith("the optional attendees"):
        return "optional_attend"
    if phrase.endswith(" slot") or phrase == "the time of day":
        return "time_of_day"
    if phrase.startswith("a room with") or phrase == "the room equipment":
        return "room_feature"
    return None


def _clock_span(start: str, end: str, shift: int) -> int:
    """The cells of a local ``start``-``end`` interval on the organiser's clock."""
    first, last = minutes(start), minutes(end)
    if first is None or last is None:
        return 0
    return span(first - shift, last - shift)


@dataclass(slots=True)
class Person:
    offset: int
    work_start: str
    work_end: str


@dataclass(slots=True)
class Beliefs:
    """The agent's knowledge; missing keys mean not known yet."""

    values: dict[str, Value] = field(default_factory=dict)
    order: tuple[str, ...] | None = None
    me: str | None = None
    my_offset: int = 0
    hours: int | None = None
    directory: dict[str, str] = field(default_factory=dict)
    people: dict[str, Person] = field(default_factory=dict)
    calendars: dict[tuple[str, int], list[tuple[int, int]]] = field(default_factory=dict)
    rooms: dict[str, tuple[int, frozenset[str]]] = field(default_factory=dict)
    room_free: dict[tuple[str, int], int] = field(default_factory=dict)
    taken: dict[tuple[str, int], int] = field(default_factory=dict)
    excluded: set[str] = field(default_factory=set)
    changed: bool = False
    version: int = 0
    """Bumped whenever anything is learnt, so derived views can be cached."""

    def see(self, observation: Observation) -> dict[str, Any]:
        """Take in tool results and user words; returns successful results by tool name."""
        if observation.user:
            self.version += 1
        hear(self, observation.user, _ANSWERS, _preference)
        found: dict[str, Any] = {}
        for result in observation.results:
            if result.ok and result.name != "finish":
                found[result.name] = result.content
                self._take(result.name, result.content)
                self.version += 1
        return found

    def _take(self, name: str, content: Any) -> None:
        if name == "get_my_profile":
            self.me = content["person_id"]
            self.my_offset = content["utc_offset"]
            self.hours = _clock_span(content["work_start"], content["work_end"], 0)
            self.directory = {p["name"]: p["person_id"] for p in content["team"]}
        elif name == "lookup_person":
            self.people[content["person_id"]] = Person(
                content["utc_offset"], content["work_start"], content["work_end"]
            )
        elif name == "get_calendar":
            blocks = [(minutes(b["start"]), minutes(b["end"])) for b in content["busy"]]
            self.calendars[(content["person_id"], content["day"])] = [
                (start, end) for start, end in blocks if start is not None and end is not None
            ]
        elif name == "list_rooms":
            self.rooms.update(
                {r["room_id"]: (r["capacity"], frozenset(r["features"])) for r in content}
            )
        elif name == "get_room_schedule":
            free = 0
            for start in content["free"]:
                first = minutes(start)
                if first is not None:
                    free |= window(first, CELL)
            self.room_free[(content["room_id"], content["day"])] = free
        elif name == "hold_room":
            # who is unavailable right now at the held time: remember it as busy time
            cells_ = _clock_span(content["start"], content["end"], 0)
            for person in content["unavailable"]:
                key = (person, content["day"])
                self.taken[key] = self.taken.get(key, 0) | cells_

    def ids(self, names: list[str]) -> list[str]:
        """Person ids of named attendees that the directory lists."""
        return [self.directory[n] for n in names if n in self.directory]

    def _availability(self, person: str, day: int) -> Availability:
        """A person's day on the organiser's clock; unread calendars count as busy."""
        extra = self.taken.get((person, day), 0)
        if person == self.me:
            shift, work = 0, FULL
        else:
            seen = self.people.get(person)
            if seen is None:
                return Availability(0, FULL)
            shift = 60 * (seen.offset - self.my_offset)
            work = _clock_span(seen.work_start, seen.work_end, shift)
        blocks = self.calendars.get((person, day))
        if blocks is None:
            return Availability(work, FULL)
        busy = extra
        for start, end in blocks:
            busy |= span(start - shift, end - shift)
        return Availability(work, busy)

    def scene(self, attendees: list[str], days: tuple[int, ...]) -> Scene:
        """The choice as far as the agent knows, for the named attendees."""
        optional = set(self.ids(split_names(str(self.values.get("optional", "")))))
        ids = self.ids(attendees)
        required = [self.me or "", *(p for p in ids if p not in optional)]
        wanted = [p for p in ids if p in optional]
        building = span(OPEN, CLOSE)
        return Scene(
            days=days,
            duration=int(self.values.get("duration", 60)),
            hours=self.hours or 0,
            required={d: tuple(self._availability(p, d) for p in required) for d in days},
            optional={d: tuple(self._availability(p, d) for p in wanted) for d in days},
            rooms=tuple(
                (r, features)
                for r, (seats, features) in self.rooms.items()
                if seats > len(attendees)
            ),
            room_busy={
                (r, d): building & ~self.room_free.get((r, d), 0) for r in self.rooms for d in days
            },
            time_of_day=str(self.values.get("time_of_day", "any")),
            room_feature=str(self.values.get("room_feature", "any")),
        )

    def default_order(self, scene: Scene) -> tuple[str, ...]:
        active = scene.preferences()
        return tuple(p for p in PREFERENCES if p in active)
