"""Meetings: shaping drawn calendars so a task has the structure it was drawn to have.

A task starts as a random busy background. Shaping then *plants* the meetings its shape
needs (clearing calendars and the room over their window, or adding a busy half hour where a
planted meeting must miss an optional attendee) and *kills* the meetings it must not have
(adding a busy half hour). Planted cells are protected, so a later kill never undoes a plant;
killing only ever adds busy time, so one pass in order suffices.
"""

from __future__ import annotations

import random
from dataclasses import dataclass
from typing import Literal

from .timegrid import (
    CELL,
    FULL,
    HARD_BITS,
    NOON,
    Availability,
    DayView,
    Scene,
    active_preferences,
    cells,
    constraint_bits,
    feasible_starts,
    room_bits,
    span,
    start_windows,
    time_bits,
    window,
)

Key = tuple[str, int]
"""``(person or room id, day)``."""


@dataclass(slots=True)
class Calendars:
    """Busy masks on the organiser's clock, mutable while a task is being shaped.

    Attributes:
        days: the days the meeting may be on.
        duration: meeting length in minutes.
        hours: the organiser's working-hours mask.
        work: working-hours mask of every invitee (the organiser's is the whole day).
        required: ids of everyone who must attend, the organiser first.
        optional: ids of the optional attendees.
        rooms: rooms seating everyone, as ``(room id, features)``.
        time_of_day: the wished time of day.
        room_feature: the wished room feature.
        busy: busy cells by ``(person id, day)``.
        room_busy: booked cells by ``(room id, day)``.
        must_free: cells a planted meeting needs free, by ``(person or room id, day)``.
        must_busy: cells a planted meeting needs busy, by ``(person id, day)``.
    """

    days: tuple[int, ...]
    duration: int
    hours: int
    work: dict[str, int]
    required: tuple[str, ...]
    optional: tuple[str, ...]
    rooms: tuple[tuple[str, frozenset[str]], ...]
    time_of_day: str
    room_feature: str
    busy: dict[Key, int]
    room_busy: dict[Key, int]
    must_free: dict[Key, int]
    must_busy: dict[Key, int]

    def scene(self, days: tuple[int, ...] | None = None) -> Scene:
        """The scene as the calendars stand now (optionally for some days only)."""
        days = self.days if days is None else days

        def people(ids: tuple[str, ...], day: int) -> tuple[Availability, ...]:
            return tuple(Availability(self.work[p], self.busy.get((p, day), 0)) for p in ids)

        return Scene(
            days=days,
            duration=self.duration,
            hours=self.hours,
            required={d: people(self.required, d) for d in days},
            optional={d: people(self.optional, d) for d in days},
            rooms=self.rooms,
            room_busy={k: v for k, v in self.room_busy.items() if k[1] in days},
            time_of_day=self.time_of_day,
            room_feature=self.room_feature,
        )

    def wishes(self) -> Scene:
        """The scene without anyone's calendar or any booking: what a meeting's hits read
        besides one day's masks (its duration, the rooms and the wishes)."""
        return Scene(
            self.days,
            self.duration,
            self.hours,
            {},
            {},
            self.rooms,
            {},
            self.time_of_day,
            self.room_feature,
        )

    def preferences(self) -> tuple[str, ...]:
        """``self.scene().preferences()``, without building the scene."""
        optional = bool(self.days) and bool(self.optional)
        return active_preferences(optional, self.time_of_day, self.room_feature)

    def day_view(self, day: int) -> DayView:
        """``day_view(self.scene((day,)), day)``, without building the scene (shaping
        re-reads one day after every busy half hour it adds)."""
        required_work, required_busy = self._merged(self.required, day)
        optional_work, optional_busy = self._merged(self.optional, day)
        return DayView(day, self.hours, required_work, required_busy, optional_work, optional_busy)

    def _merged(self, ids: tuple[str, ...], day: int) -> tuple[int, int]:
        """:func:`~.timegrid.merged` of the people ``ids`` on ``day``, without making their
        :class:`~.timegrid.Availability`."""
        work, busy, table = FULL, 0, self.busy
        for person in ids:
            work &= self.work[person]
            busy |= table.get((person, day), 0)
        return work, busy

    def merged_work(self, ids: tuple[str, ...]) -> int:
        """The cells inside the hours of every one of ``ids``."""
        work = FULL
        for person in ids:
            work &= self.work[person]
        return work

    def merged_must_busy(self, ids: tuple[str, ...], day: int) -> int:
        """The cells some plant needs busy for one of ``ids`` on ``day``."""
        busy = 0
        for person in ids:
            busy |= self.must_busy.get((person, day), 0)
        return busy

    def with_busy(self, busy: dict[Key, int], room_busy: dict[Key, int]) -> Calendars:
        """A copy with other busy tables (the others shared): ``dataclasses.replace``, made
        directly because event planning makes one per trial."""
        return Calendars(
            self.days,
            self.duration,
            self.hours,
            self.work,
            self.required,
            self.optional,
            self.rooms,
            self.time_of_day,
            self.room_feature,
            busy,
            room_busy,
            self.must_free,
            self.must_busy,
        )

    def clear(self, key: Key, mask: int, room: bool = False) -> None:
        table = self.room_busy if room else self.busy
        table[key] = table.get(key, 0) & ~mask
        self.must_free[key] = self.must_free.get(key, 0) | mask

    def mark_busy(self, key: Key, mask: int) -> None:
        self.busy[key] = self.busy.get(key, 0) | mask
        self.must_busy[key] = self.must_busy.get(key, 0) | mask


def _morning_ok(start: int, time_of_day: str, wanted: bool) -> bool:
    return ((time_of_day == "morning") == (start < NOON)) == wanted


def _plant_spots(
    cal: Calendars, keep: frozenset[str], miss: frozenset[str]
) -> list[tuple[int, int, str]]:
    """Every ``(day, start, room)`` where a meeting keeping ``keep`` and missing ``miss`` can go."""
    with_optional = "optional_attend" in keep
    either = keep | miss
    # a window outside someone's hours is outside the hours everyone shares
    required_work = cal.merged_work(cal.required)
    optional_work = cal.merged_work(cal.optional) if with_optional else FULL
    cleared = cal.required + (cal.optional if with_optional else ())
    protected = [(day, cal.merged_must_busy(cleared, day)) for day in cal.days]
    rooms = [
        r
        for r, features in cal.rooms
        if "room_feature" not in either
        or (cal.room_feature in features) == ("room_feature" in keep)
    ]
    spots: list[tuple[int, int, str]] = []
    for start, mask in start_windows(cal.duration):
        if mask & ~cal.hours or mask & ~required_work or mask & ~optional_work:
            continue
        if "time_of_day" in either and not _morning_ok(
            start, cal.time_of_day, "time_of_day" in keep
        ):
            continue
        for day, busy in protected:
            if mask & busy:
                continue
            if "optional_attend" in miss and _missable(cal, day, mask) is None:
                continue
            spots += [(day, start, r) for r in rooms]
    return spots


def _missable(cal: Calendars, day: int, mask: int) -> tuple[str, int] | None:
    """An optional attendee and a cell that makes them miss a meeting in ``mask`` (``0``:
    the meeting is outside their hours), or ``None`` when every such cell is protected.
    A cell already busy is preferred, and is protected from then on like an added one."""
    for person in cal.optional:
        if mask & ~cal.work[person]:
            return person, 0
    for person in cal.optional:
        taken = mask & cal.busy.get((person, day), 0)
        if taken:
            return person, taken & -taken
    for person in cal.optional:
        allowed = mask & ~cal.must_free.get((person, day), 0)
        if allowed:
            return person, allowed & -allowed
    return None


def plant(cal: Calendars, keep: frozenset[str], miss: frozenset[str], rng: random.Random) -> bool:
    """Make one meeting meet every hard constraint and ``keep`` and miss ``miss``."""
    spots = _plant_spots(cal, keep, miss)
    if not spots:
        return False
    day, start, room = rng.choice(spots)
    mask = window(start, cal.duration)
    for person in cal.required + (cal.optional if "optional_attend" in keep else ()):
        cal.clear((person, day), mask)
    cal.clear((room, day), mask, room=True)
    if "optional_attend" in miss:
        found = _missable(cal, day, mask)
        assert found is not None  # _plant_spots checked it
        person, cell = found
        if cell:
            cal.mark_busy((person, day), cell)
    return True


Target = Literal["all_prefs", "feasible"]


def kill(cal: Calendars, target: Target, rng: random.Random) -> bool:
    """Break every meeting that meets every preference (``all_prefs``: an optional attendee
    or the room gets taken) or every feasible meeting (``feasible``: someone who must attend
    gets taken). Returns ``False`` if protected plants left no way to break one."""
    # a meeting's hits read the scene only for its duration and wishes, which shaping never
    # changes; the day's masks, which it does change, come fresh from ``cal.day_view``
    scene = cal.wishes()
    wanted = HARD_BITS | (constraint_bits(cal.preferences()) if target == "all_prefs" else 0)
    rooms = [(room, room_bits(scene, features)) for room, features in cal.rooms]
    for day in cal.days:
        view = cal.day_view(day)
        hard = feasible_starts(view, cal.duration)
        for start, mask in start_windows(cal.duration):
            if not hard >> (start // CELL) & 1:
                continue  # no room makes it feasible, and breaking only adds busy time
            # what a meeting meets outside its room (:func:`~.timegrid.satisfied`'s bits)
            bits = time_bits(scene, view, start, mask)
            for room, in_room in rooms:
                if mask & cal.room_busy.get((room, day), 0):
                    continue
                if (bits | in_room) & wanted != wanted:
                    continue
                if not _break(cal, day, room, mask, target, rng):
                    return False
                view = cal.day_view(day)
                hard = feasible_starts(view, cal.duration)
                bits = time_bits(scene, view, start, mask)
    return True


def _break(
    cal: Calendars, day: int, room: str, mask: int, target: Target, rng: random.Random
) -> bool:
    """Add one busy half hour inside ``mask`` that breaks the meeting, avoiding plants."""
    people = cal.required if target == "feasible" else cal.optional
    choices = [(p, c) for p in people for c in cells(mask & ~cal.must_free.get((p, day), 0))]
    if choices:
        person, start = rng.choice(choices)
        cal.busy[(person, day)] = cal.busy.get((person, day), 0) | span(start, start + CELL)
        return True
    free_room = mask & ~cal.must_free.get((room, day), 0)
    if target == "feasible" or not free_room:
        return False
    start = rng.choice(list(cells(free_room)))
    cal.room_busy[(room, day)] = cal.room_busy.get((room, day), 0) | span(start, start + CELL)
    return True
