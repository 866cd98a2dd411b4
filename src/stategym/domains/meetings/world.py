"""Meetings: typed records and the episode world.

People keep calendars in their own time zone; rooms, holds and invitations are on the
organiser's clock. Busy blocks that a scheduled event will add later (someone books over a
slot) are in the base from the start, inactive, so an event only flips ``active``.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from itertools import islice
from typing import Literal

from stategym.kernel.knobs import Knobs
from stategym.kernel.world import USER_ACCOUNT, Table, World

FACILITIES_ACCOUNT = "facilities"
"""Where room fees go."""


@dataclass(frozen=True, slots=True)
class Person:
    """A colleague in the directory.

    Attributes:
        id: person id (``P4821``).
        name: full name.
        utc_offset: hours from UTC.
        work_start: start of working hours, local minutes.
        work_end: end of working hours, local minutes.
    """

    id: str
    name: str
    utc_offset: int
    work_start: int
    work_end: int


@dataclass(frozen=True, slots=True)
class Appointment:
    """A busy block in someone's calendar, in that person's local time."""

    id: str
    person_id: str
    day: int
    start: int
    end: int
    active: bool


@dataclass(frozen=True, slots=True)
class Room:
    id: str
    capacity: int
    features: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class RoomBooking:
    """A room taken over an interval (organiser's time); ``invitation`` is set for ours."""

    id: str
    room_id: str
    day: int
    start: int
    end: int
    active: bool
    invitation: str = ""


@dataclass(frozen=True, slots=True)
class Hold:
    id: str
    room_id: str
    day: int
    start: int
    duration: int
    option: str
    expires_at: int | None
    status: Literal["active", "used"]


@dataclass(frozen=True, slots=True)
class Invitation:
    """A sent meeting invitation; cancelling it notifies every attendee."""

    id: str
    option: str
    hold_id: str
    booking_id: str
    fee: int
    status: Literal["sent", "cancelled"]


@dataclass(frozen=True, slots=True)
class MeetingsBase:
    """The generated, read-only part of a meetings world.

    Attributes:
        people: everyone in the directory by id.
        organiser: the user's person id.
        attendees: person ids of the invitees (the organiser not included).
        team: the directory's order as the profile lists it.
        appointments: every busy block, including ones events switch on later.
        calendar_index: appointment ids by ``(person id, day)``.
        rooms: every room by id.
        room_bookings: other people's bookings, including ones events switch on later.
        booking_index: booking ids by ``(room id, day)``.
        balance: the organiser's cost-centre balance.
    """

    people: Mapping[str, Person]
    organiser: str
    attendees: tuple[str, ...]
    team: tuple[str, ...]
    appointments: Mapping[str, Appointment]
    calendar_index: Mapping[tuple[str, int], tuple[str, ...]]
    rooms: Mapping[str, Room]
    room_bookings: Mapping[str, RoomBooking]
    booking_index: Mapping[tuple[str, int], tuple[str, ...]]
    balance: int

    @property
    def headcount(self) -> int:
        return len(self.attendees) + 1


class MeetingsWorld(World):
    TABLES = ("appointments", "room_bookings", "holds", "invitations")
    _booking_index: tuple[dict[str, RoomBooking], int, dict[tuple[str, int], list[str]]] | None
    _booking_index = None  # a class default: a world pickled before the index has none

    def __init__(self, base: MeetingsBase, knobs: Knobs) -> None:
        super().__init__({USER_ACCOUNT: base.balance, FACILITIES_ACCOUNT: 0})
        self.base = base
        self.knobs = knobs
        self.appointments: Table[str, Appointment] = Table(base.appointments)
        self.room_bookings: Table[str, RoomBooking] = Table(base.room_bookings)
        self.holds: Table[str, Hold] = Table({})
        self.invitations: Table[str, Invitation] = Table({})

    def busy(self, person_id: str, day: int) -> list[Appointment]:
        """Active appointments of one person on one day, by start time."""
        found = (self.appointments[a] for a in self.base.calendar_index.get((person_id, day), ()))
        return sorted((a for a in found if a.active), key=lambda a: a.start)

    def bookings(self, room_id: str, day: int) -> list[RoomBooking]:
        """Active bookings of one room on one day (ours included)."""
        ids = list(self.base.booking_index.get((room_id, day), ()))
        ids += self._our_bookings().get((room_id, day), ())
        found = (self.room_bookings[b] for b in ids)
        return [b for b in found if b.active]

    def _our_bookings(self) -> dict[tuple[str, int], list[str]]:
        """The ids of the bookings the agent made, by ``(room id, day)``.

        They are the keys of ``room_bookings.changed`` that the base lacks; a booking keeps
        its room and day (cancelling only deactivates it), and keys are only ever added to
        one ``changed`` dict (a restore puts a new dict in its place). So the index is kept
        beside the dict it was read from and only its new keys are read: a step that looks
        at a room no longer walks every booking of the episode (audit 17B F5: 64 holds a
        round over 60 rounds cost 38 ms a step).
        """
        changed = self.room_bookings.changed
        index = self._booking_index
        if index is None or index[0] is not changed or index[1] > len(changed):
            index = self._booking_index = (changed, 0, {})
        _, read, ours = index
        if read < len(changed):
            base = self.room_bookings.base
            for key in islice(changed, read, None):
                if key not in base:
                    booking = changed[key]
                    ours.setdefault((booking.room_id, booking.day), []).append(key)
            self._booking_index = (changed, len(changed), ours)
        return ours
