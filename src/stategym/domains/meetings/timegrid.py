"""Meetings: the half-hour grid every time is measured on, and what each constraint means.

Times inside the domain are minutes after midnight; the agent sees ``"HH:MM"`` strings. For
deciding, a person's day is a pair of bit masks over half-hour cells on the *organiser's*
clock (bit ``i`` is the half hour starting at ``30 * i`` minutes): the working hours and
the busy time. A meeting window is the mask of the cells it covers, so "free for this
meeting" is two ``&`` operations. The generator (to build the ground truth) and the expert's
beliefs (to decide from what it has observed) both score options with :func:`satisfied`, so
the rule that defines the user's constraints exists once.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from typing import NamedTuple

CELL = 30
"""Minutes in one grid cell; meetings start on the half hour and last whole cells."""
OPEN = 8 * 60
"""The building opens at 08:00 (organiser's time): no meeting starts earlier."""
CLOSE = 18 * 60
"""The building closes at 18:00: no meeting ends later."""
NOON = 12 * 60
"""A meeting starting before noon is a morning meeting."""
DURATIONS = (30, 60, 90)
FULL = (1 << (24 * 60 // CELL)) - 1
"""Every cell of the day (the organiser's own hours are a separate, policy constraint)."""

PREFERENCES = ("optional_attend", "time_of_day", "room_feature")
"""The soft constraints, whose relative order the user decides."""
HARD = ("within_hours", "required_attend")
"""Constraints no preference may be traded against (a meeting breaking one is worse than none)."""

_CLOCK = re.compile(r"^([01]\d|2[0-3]):([0-5]\d)$")


_DAY = 24 * 60
_CLOCKS = tuple(f"{m // 60:02d}:{m % 60:02d}" for m in range(_DAY))
"""``HH:MM`` of every minute of the day: tool results spell dozens of times per call."""
_MINUTES = {text: m for m, text in enumerate(_CLOCKS)}


def clock(minutes: int) -> str:
    """``570 -> "09:30"``."""
    if 0 <= minutes < _DAY:
        return _CLOCKS[minutes]
    return f"{minutes // 60:02d}:{minutes % 60:02d}"


def minutes(text: str) -> int | None:
    """``"09:30" -> 570``; ``None`` for anything that is not ``HH:MM``."""
    known = _MINUTES.get(text)
    if known is not None:
        return known
    match = _CLOCK.match(text)
    if match is None:
        return None
    return int(match.group(1)) * 60 + int(match.group(2))


def span(start: int, end: int) -> int:
    """The mask of the cells from minute ``start`` (inclusive) to ``end`` (exclusive)."""
    first, last = start // CELL, -(-end // CELL)
    return ((1 << (last - first)) - 1) << first if last > first else 0


def window(start: int, duration: int) -> int:
    """The mask of a meeting starting at ``start`` lasting ``duration`` minutes."""
    return span(start, start + duration)


def starts(duration: int) -> range:
    """Every start time (minutes) the building allows for a meeting of ``duration``."""
    return range(OPEN, CLOSE - duration + 1, CELL)


@functools.cache
def start_cells(duration: int) -> int:
    """The mask of the cells :func:`starts` allows a meeting of ``duration`` to start in."""
    return sum(1 << (start // CELL) for start in starts(duration))


@functools.cache
def start_windows(duration: int) -> tuple[tuple[int, int], ...]:
    """``(start, window mask)`` of every start :func:`starts` allows, built once per
    duration: generation walks these a few hundred times per task."""
    return tuple((start, window(start, duration)) for start in starts(duration))


def cells(mask: int) -> Iterator[int]:
    """The start minute of every cell in ``mask``."""
    index = 0
    while mask:
        if mask & 1:
            yield index * CELL
        mask >>= 1
        index += 1


def intervals(mask: int) -> list[tuple[int, int]]:
    """Maximal runs of cells in ``mask`` as ``(start, end)`` minutes."""
    runs: list[tuple[int, int]] = []
    while mask:
        first = (mask & -mask).bit_length() - 1
        rest = mask >> first
        # ``rest + 1`` carries through the run of ones: its lowest set bit is the run's end
        length = ((rest + 1) & ~rest).bit_length() - 1
        runs.append((first * CELL, (first + length) * CELL))
        mask &= ~(((1 << length) - 1) << first)
    return runs


_HHMM = {m: f"{m // 60:02d}{m % 60:02d}" for m in range(_DAY)}
"""``HHMM`` of every minute of the day: ids are built for every option of every task."""


def option_id(day: int, start: int, duration: int, room: str) -> str:
    """The one-token id of a meeting option: ``D4T1030M60CEDAR``.

    One alphanumeric token, so the simulated user recognises it by token match.
    """
    hhmm = _HHMM.get(start) or f"{start // 60:02d}{start % 60:02d}"
    return f"D{day}T{hhmm}M{duration}{room}"


@dataclass(frozen=True, slots=True)
class Availability:
    """One person's day on the organiser's clock.

    Attributes:
        work: cells inside the person's working hours.
        busy: cells the person's calendar is busy.
    """

    work: int
    busy: int

    def free(self, cells_: int) -> bool:
        return not (cells_ & ~self.work) and not (cells_ & self.busy)


@dataclass(frozen=True, slots=True)
class Scene:
    """Everything a choice of meeting depends on, on the organiser's clock.

    Attributes:
        days: the days the meeting may be on.
        duration: meeting length in minutes.
        hours: the organiser's working-hours mask.
        required: per day, the availability of everyone who must attend (the organiser's
            own calendar included).
        optional: per day, the availability of the optional attendees.
        rooms: rooms that seat everyone, as ``(room id, features)``.
        room_busy: per ``(room id, day)``, the cells the room is booked.
        time_of_day: ``morning``, ``afternoon`` or ``any``.
        room_feature: ``video``, ``whiteboard`` or ``any``.
    """

    days: tuple[int, ...]
    duration: int
    hours: int
    required: Mapping[int, tuple[Availability, ...]]
    optional: Mapping[int, tuple[Availability, ...]]
    rooms: tuple[tuple[str, frozenset[str]], ...]
    room_busy: Mapping[tuple[str, int], int]
    time_of_day: str
    room_feature: str

    def preferences(self) -> tuple[str, ...]:
        """The preferences that constrain anything (``any`` wishes constrain nothing)."""
        optional = any(self.optional.get(d) for d in self.days)
        return active_preferences(optional, self.time_of_day, self.room_feature)


def active_preferences(optional: bool, time_of_day: str, room_feature: str) -> tuple[str, ...]:
    """The preferences that constrain anything, given whether anyone is optional and the
    wishes (``any`` wishes constrain nothing)."""
    active = ["optional_attend"] if optional else []
    if time_of_day != "any":
        active.append("time_of_day")
    if room_feature != "any":
        active.append("room_feature")
    return tuple(p for p in PREFERENCES if p in active)


class Option(NamedTuple):
    """One bookable meeting: a free room at a time, and the constraints it meets.

    A named tuple rather than a frozen dataclass: task generation builds hundreds per task,
    and a tuple is built several times faster (it is just as immutable).
    """

    day: int
    start: int
    duration: int
    room: str
    hits: frozenset[str]

    @property
    def id(self) -> str:
        return option_id(self.day, self.start, self.duration, self.room)


_BITS = {
    "within_hours": 1,
    "required_attend": 2,
    "meeting_held": 4,
    "optional_attend": 8,
    "time_of_day": 16,
    "room_feature": 32,
}
_WITHIN, _REQUIRED = _BITS["within_hours"], _BITS["required_attend"]
_OPTIONAL, _TIMELY = _BITS["optional_attend"], _BITS["time_of_day"]
HARD_BITS = _WITHIN | _REQUIRED
"""The bits of the hard constraints."""
# every subset of the constraints, built once: options share these frozensets
_SETS = tuple(frozenset(n for n, b in _BITS.items() if m & b) for m in range(64))


def constraint_bits(ids: Iterable[str]) -> int:
    """The bits of the constraints ``ids`` (the bits :func:`satisfied` sets for them)."""
    return sum(_BITS[i] for i in set(ids))


@dataclass(frozen=True, slots=True)
class DayView:
    """One day of a scene with everyone's masks merged, so each check is one ``&``."""

    day: int
    hours: int
    required_work: int
    required_busy: int
    optional_work: int
    optional_busy: int


def merged(people: Iterable[Availability]) -> tuple[int, int]:
    """The cells inside everyone's hours, and the cells anyone is busy."""
    work, busy = FULL, 0
    for person in people:
        work &= person.work
        busy |= person.busy
    return work, busy


def day_view(scene: Scene, day: int) -> DayView:
    required = merged(scene.required.get(day, ()))
    optional = merged(scene.optional.get(day, ()))
    return DayView(day, scene.hours, *required, *optional)


def time_bits(scene: Scene, view: DayView, start: int, cells_: int) -> int:
    """The constraints a meeting meets whatever room it is in, as bits."""
    bits = _BITS["meeting_held"]
    if not cells_ & ~view.hours:
        bits |= _BITS["within_hours"]
    if not cells_ & ~view.required_work and not cells_ & view.required_busy:
        bits |= _BITS["required_attend"]
    if not cells_ & ~view.optional_work and not cells_ & view.optional_busy:
        bits |= _BITS["optional_attend"]
    if scene.time_of_day == "any" or (scene.time_of_day == "morning") == (start < NOON):
        bits |= _BITS["time_of_day"]
    return bits


def room_bits(scene: Scene, features: frozenset[str]) -> int:
    """The constraints a room with ``features`` adds to a meeting's, as bits."""
    if scene.room_feature == "any" or scene.room_feature in features:
        return _BITS["room_feature"]
    return 0


def satisfied(scene: Scene, view: DayView, start: int, features: frozenset[str]) -> frozenset[str]:
    """The constraint ids a meeting at ``start`` on ``view.day`` in a room with ``features``
    meets: the definition of every constraint of the domain."""
    bits = time_bits(scene, view, start, window(start, scene.duration))
    return _SETS[bits | room_bits(scene, features)]


_MORNING = (1 << (NOON // CELL)) - 1
"""The cells starting before noon."""


def fits(mask: int, length: int) -> int:
    """The cells ``i`` such that cells ``i`` to ``i + length - 1`` are all in ``mask``: the
    starts (as cells) of every ``length``-cell window inside ``mask``."""
    fit = mask
    for shift in range(1, length):
        fit &= mask >> shift
    return fit


def feasible_starts(view: DayView, duration: int) -> int:
    """The cells a meeting of ``duration`` on ``view``'s day may start in and meet every hard
    constraint (inside the organiser's hours and free for everyone who must attend)."""
    length = duration // CELL
    return fits(view.hours, length) & fits(view.required_work & ~view.required_busy, length)


def options(
    scene: Scene, days: Iterable[int] | None = None, only_feasible: bool = False
) -> Iterator[Option]:
    """Every meeting whose room is free, in order of day, start time and room (only the
    :func:`feasible` ones with ``only_feasible``, without building the others)."""
    for day in scene.days if days is None else days:
        taken = tuple(scene.room_busy.get((room, day), 0) for room, _ in scene.rooms)
        yield from day_options(scene, day_view(scene, day), taken, only_feasible)


def day_options(
    scene: Scene, view: DayView, taken: tuple[int, ...], only_feasible: bool = False
) -> list[Option]:
    """:func:`options` of the day of ``view``, where ``taken`` holds the booked cells of each
    of ``scene.rooms`` that day. ``scene`` is read only for its duration, rooms and wishes.

    Each constraint is one mask of the starts (as cells) that meet it, so judging a start
    is a few bit tests; the hits are :func:`satisfied`'s, which a test checks."""
    duration = scene.duration
    length = duration // CELL
    within = fits(view.hours, length)
    required = fits(view.required_work & ~view.required_busy, length)
    optional = fits(view.optional_work & ~view.optional_busy, length)
    if scene.time_of_day == "any":
        timely = -1
    else:
        timely = _MORNING if scene.time_of_day == "morning" else ~_MORNING
    rooms = [
        (room, room_bits(scene, features), fits(~busy, length))
        for (room, features), busy in zip(scene.rooms, taken, strict=True)
    ]
    free_somewhere = 0
    for _, _, free in rooms:
        free_somewhere |= free
    candidates = start_cells(duration) & free_somewhere
    if only_feasible:
        candidates &= within & required
    day, held = view.day, _BITS["meeting_held"]
    found: list[Option] = []
    new = tuple.__new__  # a named tuple's own __new__ is a Python-level wrapper round this
    while candidates:
        low = candidates & -candidates  # the earliest start left
        candidates ^= low
        bits = held
        if within & low:
            bits |= _WITHIN
        if required & low:
            bits |= _REQUIRED
        if optional & low:
            bits |= _OPTIONAL
        if timely & low:
            bits |= _TIMELY
        start = (low.bit_length() - 1) * CELL
        for room, in_room, free in rooms:
            if free & low:
                found.append(new(Option, (day, start, duration, room, _SETS[bits | in_room])))
    return found


def feasible(option: Option) -> bool:
    """Meets every hard constraint (the only options worth sending)."""
    return "within_hours" in option.hits and "required_attend" in option.hits


def rank(hits: frozenset[str], order: tuple[str, ...]) -> int:
    """Lexicographic worth of the preferences met, in priority ``order`` (higher is better)."""
    return sum(1 << (len(order) - i) for i, p in enumerate(order) if p in hits)
