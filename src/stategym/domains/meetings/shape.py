"""Meetings: shaping drawn calendars so a task has the structure it was drawn to have.

A task starts as a random busy background. Shaping then *plants* the meetings its shape
needs (clearing calendars and the room over their window, or adding a busy half hour where a
planted meeting must miss an optional attendee) and *kills* the meetings it must not have
(adding a busy half hour). Planted cells are protected, so a later kill never undoes a plant;
killing only ever adds busy time, so one pass in order suffices.
"""

from __future__ import annotations

import random
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Literal

from .timegrid import (
    CELL,
    NOON,
    Availability,
    DayView,
    Scene,
    cells,
    merged,
    satisfied,
    span,
    start_windows,
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

    def day_view(self, day: int) -> DayView:
        """``day_view(self.scene((day,)), day)``, without building the scene (shaping
        re-reads one day after every busy half hour it adds)."""

        def people(ids: tuple[str, ...]) -> Iterator[Availability]:
            return (Availability(self.work[p], self.busy.get((p, day), 0)) for p in ids)

        return DayView(
            day, self.hours, *merged(people(self.required)), *merged(people(self.optional))
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
    spots: list[tuple[int, int, str]] = []
    for start, mask in start_windows(cal.duration):
        if mask & ~cal.hours or any(mask & ~cal.work[p] for p in cal.required):
            continue
        if "optional_attend" in keep and any(mask & ~cal.work[p] for p in cal.optional):
            continue
        if "time_of_day" in keep | miss and not _morning_ok(
            start, cal.time_of_day, "time_of_day" in keep
        ):
            continue
        rooms = [
            r
            for r, features in cal.rooms
            if "room_feature" not in keep | miss
            or (cal.room_feature in features) == ("room_feature" in keep)
        ]
        for day in cal.days:
            cleared = cal.required + (cal.optional if "optional_attend" in keep else ())
            if any(mask & cal.must_busy.get((p, day), 0) for p in cleared):
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
    scene = cal.scene()
    prefs = frozenset(scene.preferences())
    for day in cal.days:
        view = cal.day_view(day)
        for start, mask in start_windows(cal.duration):
            for room, features in cal.rooms:
                if mask & cal.room_busy.get((room, day), 0):
                    continue
                hits = satisfied(scene, view, start, features)
                if "within_hours" not in hits or "required_attend" not in hits:
                    continue
                if target == "all_prefs" and not prefs <= hits:
                    continue
                if not _break(cal, day, room, mask, target, rng):
                    return False
                view = cal.day_view(day)
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
