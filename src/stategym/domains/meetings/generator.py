"""Meetings task generator: a pure function of ``(seed, knobs)``.

Everything random is drawn first, whatever the knobs say; the knobs are applied afterwards,
so the same seed under different knobs is the same meeting with properties switched off.
A draw is a busy background of calendars and room bookings plus the organiser's wishes and
an intended *shape*: ``fits`` (some meeting meets every wish), ``conflict`` (none does, and
the priority order decides which wish to give up) or ``nothing`` (no time suits everyone who
must attend, so the right decision is to send nothing). :mod:`.shape` bends the background
to the shape; the ground truth is then scored on the final world (after every event).
"""

from __future__ import annotations

import itertools
import random
from dataclasses import dataclass, replace

from stategym.generation import Table, order_hidden, with_user_tables
from stategym.kernel.domain import GoldGraph
from stategym.kernel.draws import randint, randrange
from stategym.kernel.frozen import quick_constructor
from stategym.kernel.knobs import Knobs
from stategym.kernel.task import (
    EventKind,
    GroundTruth,
    Request,
    SlotKind,
    Task,
    priority_weights,
)

from .events import EventPlan, plan_events
from .judging import DayKey, Judge, every_option, option_table, realised, usable_options
from .shape import Calendars, Key, kill, plant
from .spec import base_world, constraints, gold, request_text, slots
from .timegrid import (
    CELL,
    CLOSE,
    DURATIONS,
    FULL,
    OPEN,
    PREFERENCES,
    Option,
    option_id,
    span,
)
from .world import MeetingsWorld, Person, Room

FIRST_DAY = 3
FIRST_NAMES = (
    "Ana",
    "Bo",
    "Dee",
    "Eli",
    "Farah",
    "Gus",
    "Hana",
    "Ivo",
    "Jun",
    "Kai",
    "Lea",
    "Milo",
    "Nia",
    "Omar",
    "Pia",
    "Raj",
    "Sara",
    "Tomas",
    "Uma",
    "Vik",
)
LAST_NAMES = (
    "Lima",
    "Chen",
    "Park",
    "Novak",
    "Aziz",
    "Moreau",
    "Sato",
    "Okafor",
    "Berg",
    "Costa",
    "Haddad",
    "Ivanova",
    "Jensen",
    "Kowal",
    "Mehta",
    "Nakamura",
)
ROOM_NAMES = (
    "CEDAR",
    "MAPLE",
    "BIRCH",
    "ASPEN",
    "ALDER",
    "ROWAN",
    "HAZEL",
    "LARCH",
    "OLIVE",
    "WILLOW",
    "SPRUCE",
    "POPLAR",
)
AGENDAS = (
    "the quarterly roadmap",
    "the hiring plan",
    "the launch checklist",
    "the budget review",
    "the design critique",
    "the incident retrospective",
)
HOURS = ((8 * 60, 16 * 60), (9 * 60, 17 * 60), (10 * 60, 18 * 60))
UTC_OFFSETS = (-5, 0, 1, 2, 8, 9)
SHIFTS = (0, 0, -1, 1)
"""Attendees' time zones relative to the organiser's."""
SHAPES = ("fits", "conflict", "nothing")
SHAPE_WEIGHTS = (0.45, 0.4, 0.15)
USER_FACTS = ("optional", "duration", "time_of_day", "room_feature")
ATTEMPTS = 6
MAX_ROUNDS = 60
_person = quick_constructor(Person)
_room = quick_constructor(Room)
"""The draw's records, made without the frozen ``__init__``'s stores."""


@dataclass(frozen=True, slots=True)
class Draw:
    """Everything random about one meeting, before the knobs are applied.

    Attributes:
        people: the organiser, the attendees, then colleagues who are not invited.
        invited: number of attendees.
        optional: ids of the optional attendees.
        team: the directory's order.
        days: the days the meeting may be on.
        rooms: every room.
        busy: background busy cells (organiser's clock) by ``(person id, day)``.
        room_busy: background booked cells by ``(room id, day)``.
        duration: the length first asked for.
        duration_new: the length the organiser switches to mid-episode (0: no change).
        time_of_day: ``morning``, ``afternoon`` or ``any``.
        room_feature: ``video``, ``whiteboard`` or ``any``.
        agenda: what the meeting is about (changes nothing).
        order: the organiser's ranking of the preferences.
        shape: the intended shape.
        hidden: which user facts the request leaves out.
        priorities_hidden: whether the ranking is left out.
        times: when the change of mind, the new appointment and the new booking happen.
        shape_seed: seeds the shaping and event choices.
    """

    people: tuple[Person, ...]
    invited: int
    optional: tuple[str, ...]
    team: tuple[str, ...]
    days: tuple[int, ...]
    rooms: tuple[Room, ...]
    busy: dict[Key, int]
    room_busy: dict[Key, int]
    duration: int
    duration_new: int
    time_of_day: str
    room_feature: str
    agenda: str
    order: tuple[str, ...]
    shape: str
    hidden: dict[str, bool]
    priorities_hidden: bool
    times: tuple[int, int, int]
    shape_seed: int

    @property
    def organiser(self) -> Person:
        return self.people[0]

    @property
    def attendees(self) -> tuple[Person, ...]:
        return self.people[1 : self.invited + 1]


def generate(seed: int, knobs: Knobs) -> Task:
    """Generate the meetings task for ``seed`` under ``knobs``."""
    return _build(seed, knobs, _draw(seed))


def _draw(seed: int) -> Draw:
    rng = random.Random(f"meetings:{seed}")
    invited = randint(rng, 3, 5)
    count = invited + 1 + randint(rng, 1, 3)
    names = [
        f"{first} {last}"
        for first, last in zip(
            rng.sample(FIRST_NAMES, count), rng.sample(LAST_NAMES, count), strict=True
        )
    ]
    ids = rng.sample(range(1000, 10000), count)
    offset = rng.choice(UTC_OFFSETS)
    people = [_person(f"P{ids[0]}", names[0], offset, *rng.choice(HOURS))]
    people += [
        _person(f"P{i}", n, offset + rng.choice(SHIFTS), *rng.choice(HOURS))
        for i, n in zip(ids[1:], names[1:], strict=True)
    ]
    optional = tuple(p.id for p in rng.sample(people[1 : invited + 1], randint(rng, 1, 2)))
    team = [p.id for p in people[1:]]
    rng.shuffle(team)
    days = tuple(range(FIRST_DAY, FIRST_DAY + randint(rng, 2, 3)))
    rooms = _rooms(rng, invited + 1)
    duration = rng.choice(DURATIONS)
    return Draw(
        people=tuple(people),
        invited=invited,
        optional=optional,
        team=tuple(team),
        days=days,
        rooms=rooms,
        busy=_busy(rng, people[: invited + 1], days),
        room_busy={
            (r.id, d): _blocks(rng, OPEN, CLOSE, randint(rng, 0, 3), 4) for r in rooms for d in days
        },
        duration=duration,
        duration_new=rng.choice([d for d in DURATIONS if d != duration])
        if rng.random() < 0.35
        else 0,
        time_of_day=rng.choice(("morning", "afternoon", "any")),
        room_feature=rng.choice(("video", "whiteboard", "any")),
        agenda=rng.choice(AGENDAS),
        order=tuple(rng.sample(PREFERENCES, len(PREFERENCES))),
        shape=rng.choices(SHAPES, SHAPE_WEIGHTS)[0],
        hidden={s: rng.random() < 0.5 for s in USER_FACTS},
        priorities_hidden=rng.random() < 0.6,
        times=(randint(rng, 1, 3), randint(rng, 2, 6), randint(rng, 2, 6)),
        shape_seed=rng.getrandbits(32),
    )


def _rooms(rng: random.Random, headcount: int) -> tuple[Room, ...]:
    """Rooms seating everyone with video, with a whiteboard and with neither (so every
    wish can be met or missed), maybe one more, and one or two rooms that are too small."""
    big: list[tuple[str, ...]] = [("video",), ("whiteboard",), ()]
    if rng.random() < 0.5:
        big.append(rng.choice((("video", "whiteboard"), ("video",), ())))
    small = [rng.choice((("video",), (), ("whiteboard",))) for _ in range(randint(rng, 1, 2))]
    names = rng.sample(ROOM_NAMES, len(big) + len(small))
    rooms = [_room(n, randint(rng, headcount, 14), f) for n, f in zip(names, big, strict=False)]
    rooms += [
        _room(n, randint(rng, 2, headcount - 1), f)
        for n, f in zip(names[len(big) :], small, strict=True)
    ]
    rng.shuffle(rooms)
    return tuple(rooms)


def _blocks(rng: random.Random, first: int, last: int, count: int, longest: int) -> int:
    """``count`` random busy blocks of 1..``longest`` half hours between two times."""
    mask = 0
    for _ in range(count):
        length = randint(rng, 1, longest) * CELL
        start = randrange(rng, first, last - length + 1, CELL)
        mask |= span(start, start + length)
    return mask


def _busy(rng: random.Random, invitees: list[Person], days: tuple[int, ...]) -> dict[Key, int]:
    """Background busy time inside each invitee's hours, on the organiser's clock."""
    organiser = invitees[0]
    busy: dict[Key, int] = {}
    for person in invitees:
        shift = 60 * (person.utc_offset - organiser.utc_offset)
        for day in days:
            local = _blocks(rng, person.work_start, person.work_end, randint(rng, 1, 4), 3)
            # on the organiser's clock a person ``shift`` minutes ahead is that much earlier
            busy[(person.id, day)] = (
                local >> (shift // CELL) if shift > 0 else local << (-shift // CELL)
            )
    return busy


def _calendars(draw: Draw, duration: int) -> Calendars:
    organiser = draw.organiser

    def work(person: Person) -> int:
        if person is organiser:
            return FULL
        shift = 60 * (person.utc_offset - organiser.utc_offset)
        return span(person.work_start - shift, person.work_end - shift)

    required = (organiser.id, *(p.id for p in draw.attendees if p.id not in draw.optional))
    headcount = draw.invited + 1
    return Calendars(
        days=draw.days,
        duration=duration,
        hours=span(organiser.work_start, organiser.work_end),
        work={p.id: work(p) for p in draw.people[: draw.invited + 1]},
        required=required,
        optional=draw.optional,
        rooms=tuple((r.id, frozenset(r.features)) for r in draw.rooms if r.capacity >= headcount),
        time_of_day=draw.time_of_day,
        room_feature=draw.room_feature,
        busy=dict(draw.busy),
        room_busy=dict(draw.room_busy),
        must_free={},
        must_busy={},
    )


def _prefs(draw: Draw, cal: Calendars) -> tuple[str, ...]:
    """The active preferences, most important first."""
    active = cal.preferences()
    return tuple(p for p in draw.order if p in active)


def _apply_shape(cal: Calendars, shape: str, prefs: tuple[str, ...], rng: random.Random) -> bool:
    if shape == "fits":
        return plant(cal, frozenset(prefs), frozenset(), rng)
    if shape == "conflict":
        return (
            len(prefs) > 1
            and plant(cal, frozenset(prefs[:-1]), frozenset(prefs[-1:]), rng)
            and plant(cal, frozenset(prefs[1:]), frozenset(prefs[:1]), rng)
            and kill(cal, "all_prefs", rng)
        )
    return kill(cal, "feasible", rng)


def _shaped(
    draw: Draw, duration: int, shape: str, by_day: dict[DayKey, list[Option]]
) -> tuple[Calendars, tuple[str, ...], list[Option]]:
    """Calendars bent to ``shape`` (a shape that cannot be had falls back to a simpler one),
    the active preferences, and the options the calendars leave (listed through ``by_day``)."""
    rng = random.Random(f"meetings-shape:{draw.shape_seed}:{duration}")
    for wanted in dict.fromkeys((shape, "fits", "nothing")):
        for _ in range(ATTEMPTS):
            cal = _calendars(draw, duration)
            prefs = _prefs(draw, cal)
            if not _apply_shape(cal, wanted, prefs, rng):
                continue
            found = usable_options(cal, by_day)
            if realised(found, prefs) == wanted:
                return cal, prefs, found
    raise AssertionError("a meeting with nobody free can always be generated")


def regold(task: Task, best: tuple[str, ...]) -> GoldGraph:
    """The gold call graph and invitation decision of ``task`` rebuilt as if ``best`` were its
    best options (a counterfactual probe): the hold spells out their rooms, days and starts."""
    draw = _draw(task.seed)
    duration = _duration(draw, task.knobs)
    must_ask = tuple(s.name for s in task.slots if s.kind is SlotKind.MISSING)
    # the gold graph reads the calendars' rooms alone, and those shaping leaves as drawn
    cal = _calendars(draw, duration)
    return gold(draw, task.knobs, cal, tuple(sorted(best)), must_ask, duration)


def _duration(draw: Draw, knobs: Knobs) -> int:
    return draw.duration_new if knobs.dynamics and draw.duration_new else draw.duration


def _user_tables(
    draw: Draw, plan: EventPlan, truth: GroundTruth, first: Calendars, ids: tuple[str, ...]
) -> GroundTruth:
    """``truth`` with what the simulated user judges on (:func:`with_user_tables`): the
    options a room booking takes away, the table of the length first asked for while the
    user holds it, and the ids of every other length, which it recognises and rejects, so
    that which lengths it knows tells nothing of the length it wants."""

    def table(cal: Calendars, duration: int) -> Table:
        return option_table(every_option(replace(cal, duration=duration)), ids)

    offered = every_option(first)
    held = {first.duration}
    before = None
    if any(e.kind is EventKind.USER_UPDATE for e in plan.events):
        held.add(draw.duration)
        before = (table(first, draw.duration), table(plan.final, draw.duration))
    truth = with_user_tables(truth, option_table(offered, ids), before)
    # the same times at the other lengths: ids only, no table of wishes holds them
    times = dict.fromkeys((day, start, room) for day, start, _, room, _ in offered)
    others = [d for d in DURATIONS if d not in held]
    known = tuple(option_id(day, start, d, room) for d in others for day, start, room in times)
    return replace(truth, known_options=known)


def _build(seed: int, knobs: Knobs, draw: Draw) -> Task:
    duration = _duration(draw, knobs)
    shape = draw.shape if knobs.priorities or draw.shape != "conflict" else "fits"
    by_day: dict[DayKey, list[Option]] = {}
    cal, prefs, shaped = _shaped(draw, duration, shape, by_day)
    ids = ("within_hours", "required_attend", "meeting_held", *prefs)
    priority = tuple(itertools.pairwise(ids))
    weights = priority_weights(ids, priority)
    nothing = frozenset(ids) - {"meeting_held"}
    judge = Judge(by_day, ids, nothing, weights, prefs)
    judge.remember(cal, shaped)
    plan: EventPlan = plan_events(draw, knobs, cal, duration, judge.judge, judge.options_of)
    satisfaction = option_table(every_option(plan.final), ids)
    best, order_decides = judge.judge(plan.final)
    conflict = knobs.priorities and order_decides
    task_slots = slots(draw, knobs, prefs, draw.priorities_hidden, conflict)
    priorities_hidden = order_hidden(knobs, task_slots)
    given = {s.name: s.value for s in task_slots if s.kind is SlotKind.GIVEN}
    must_ask = tuple(s.name for s in task_slots if s.kind is SlotKind.MISSING)
    calls, edges, decisions = gold(draw, knobs, cal, best, must_ask, duration)
    truth = GroundTruth(calls, edges, decisions, satisfaction, nothing, best, weights)
    truth = _user_tables(draw, plan, truth, cal, ids)
    request = Request(
        request_text(draw, given, constraints(draw, prefs), knobs),
        given,
        {"working_hours": "get_my_profile", "timezone": "lookup_person"},
    )
    events = sorted(plan.events, key=lambda e: (e.at, e.kind is EventKind.SET))
    return Task(
        "meetings",
        seed,
        knobs,
        request,
        task_slots,
        constraints(draw, prefs),
        priority,
        priorities_hidden,
        MeetingsWorld.check_events(events),
        base_world(draw, cal, plan),
        truth,
        MAX_ROUNDS,
    )
