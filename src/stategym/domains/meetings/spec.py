"""Meetings: what the organiser knows and says, the ground truth, and the world's records.

Split from :mod:`.generator` so the generator reads as the draw-shape-score pipeline; these
functions only describe a shaped draw.
"""

from __future__ import annotations

import functools
from collections.abc import Mapping
from typing import TYPE_CHECKING

from stategym.generation import priorities_sentences, priorities_slot
from stategym.kernel.frozen import quick_constructor
from stategym.kernel.knobs import Knobs
from stategym.kernel.task import (
    Constraint,
    ConstraintKind,
    DecisionPoint,
    EdgeKind,
    GoldCall,
    GoldEdge,
    Precondition,
    Slot,
    SlotKind,
    Value,
)
from stategym.kernel.tools import Effect

from .events import EventPlan
from .shape import Calendars
from .timegrid import clock, intervals
from .world import Appointment, MeetingsBase, RoomBooking

if TYPE_CHECKING:
    from .generator import Draw

_call = quick_constructor(GoldCall)
_edge = quick_constructor(GoldEdge)
_appointment = quick_constructor(Appointment)
_booking = quick_constructor(RoomBooking)
# a task has a hundred gold nodes and edges and dozens of records: they are made without the
# frozen ``__init__``'s stores

FEATURE_WORDS = {"video": "video", "whiteboard": "a whiteboard"}
BALANCE = 500
"""The organiser's cost-centre balance; room fees only measure what an agent wastes."""


def join_names(names: list[str]) -> str:
    """``["A", "B", "C"] -> "A, B and C"``."""
    return names[0] if len(names) == 1 else ", ".join(names[:-1]) + " and " + names[-1]


def split_names(text: str) -> list[str]:
    """The inverse of :func:`join_names`."""
    return [n.strip() for n in text.replace(" and ", ", ").split(", ") if n.strip()]


def slots(
    draw: Draw, knobs: Knobs, prefs: tuple[str, ...], priorities_hidden: bool, conflict: bool
) -> tuple[Slot, ...]:
    """Every fact the organiser holds, and whether the request gives it or the agent must ask
    or look it up. ``priorities_hidden`` is the draw's; the order is kept back as well when
    it ranks a wish on a hidden slot (:func:`stategym.generation.keeps_order`)."""

    def kind(name: str) -> SlotKind:
        return SlotKind.MISSING if draw.hidden[name] and knobs.hidden_info else SlotKind.GIVEN

    names = {p.id: p.name for p in draw.people}
    me = draw.organiser
    zones = "; ".join(f"{p.name} is on UTC{p.utc_offset:+d}" for p in draw.attendees)
    facts = (
        Slot(
            "attendees",
            SlotKind.GIVEN,
            join_names([p.name for p in draw.attendees]),
            "I'd like {value} to attend.",
        ),
        Slot(
            "window",
            SlotKind.GIVEN,
            f"{draw.days[0]}-{draw.days[-1]}",
            "Any of days {value} works.",
        ),
        Slot(
            "working_hours",
            SlotKind.DERIVABLE,
            f"{clock(me.work_start)}-{clock(me.work_end)}",
            "I usually work {value}.",
        ),
        Slot("timezone", SlotKind.DERIVABLE, zones, "I believe {value}."),
        Slot(
            "optional",
            kind("optional"),
            join_names([names[p] for p in draw.optional]),
            "Optional attendees: {value}.",
        ),
        Slot(
            "duration", kind("duration"), draw.duration, "The meeting should last {value} minutes."
        ),
        Slot(
            "time_of_day", kind("time_of_day"), draw.time_of_day, "As for the time of day, {value}."
        ),
        Slot(
            "room_feature",
            kind("room_feature"),
            draw.room_feature,
            "As for room equipment, {value}.",
        ),
        Slot("agenda", SlotKind.IRRELEVANT, draw.agenda, "The agenda is {value}."),
    )
    order = priorities_slot(
        prefs,
        knobs,
        drawn_hidden=priorities_hidden,
        conflict=conflict,
        facts=facts,
        constraints=constraints(draw, prefs),
    )
    return (*facts, order)


def constraints(draw: Draw, prefs: tuple[str, ...]) -> tuple[Constraint, ...]:
    article = "an" if draw.time_of_day == "afternoon" else "a"
    texts = {
        "optional_attend": ("the optional attendees there", "optional"),
        "time_of_day": (f"{article} {draw.time_of_day} slot", "time_of_day"),
        "room_feature": (
            f"a room with {FEATURE_WORDS.get(draw.room_feature, 'anything')}",
            "room_feature",
        ),
    }
    fixed = (
        Constraint(
            "within_hours",
            ConstraintKind.POLICY,
            "to stay within my working hours",
            "working_hours",
        ),
        Constraint("required_attend", ConstraintKind.NEED, "everyone required there", "attendees"),
        Constraint(
            "meeting_held", ConstraintKind.NEED, "to get the meeting scheduled at all", "meeting"
        ),
    )
    return fixed + tuple(Constraint(p, ConstraintKind.PREFERENCE, *texts[p]) for p in prefs)


def request_text(
    draw: Draw, given: Mapping[str, Value], rules: tuple[Constraint, ...], knobs: Knobs
) -> str:
    verb = "Please set up" if knobs.stateful else "Find the best time and room for"
    parts = [
        f"Hi! Today is day 1. {verb} a meeting with {given['attendees']} on one of days "
        f"{draw.days[0]} to {draw.days[-1]}, in a room that seats all of us"
        + (", and send the invitation." if knobs.stateful else ".")
    ]
    if "optional" in given:
        many = " and " in str(given["optional"])
        parts.append(
            f"{given['optional']} {'are' if many else 'is'} optional; everyone else must be there."
        )
    if "duration" in given:
        parts.append(f"It should last {given['duration']} minutes.")
    if "time_of_day" in given:
        parts.append(
            "Any time of day works."
            if given["time_of_day"] == "any"
            else f"I'd like {rules_text(rules, 'time_of_day')}."
        )
    if "room_feature" in given:
        parts.append(
            "Any room will do."
            if given["room_feature"] == "any"
            else f"The room needs {FEATURE_WORDS[str(given['room_feature'])]}."
        )
    parts.append("Keep it within my working hours.")
    parts += priorities_sentences(given, rules)
    if not knobs.stateful:
        parts.append(
            "Don't hold or send anything: finish with the id of the option you "
            "recommend (D<day>T<HHMM>M<minutes><ROOM>: D4T1030M60ELM is room ELM on "
            "day 4 at 10:30 for 60 minutes), or 'none'."
        )
    return " ".join(parts)


def rules_text(rules: tuple[Constraint, ...], constraint: str) -> str:
    return next(c.text for c in rules if c.id == constraint)


def gold(
    draw: Draw,
    knobs: Knobs,
    cal: Calendars,
    best: tuple[str, ...],
    must_ask: tuple[str, ...],
    duration: int,
) -> tuple[tuple[GoldCall, ...], tuple[GoldEdge, ...], tuple[DecisionPoint, ...]]:
    """Gold call graph and decision point: profile and rooms at the root; every time zone,
    calendar and room schedule fanned out from them; one hold, the organiser's yes, one send."""
    invitees = (draw.organiser, *draw.attendees)
    calls = [_call(f"ask:{s}", "ask", {}, None) for s in must_ask]
    calls += [
        _call("profile", "get_my_profile", {}, Effect.READ),
        _call("rooms", "list_rooms", {}, Effect.READ),
    ]
    edges: list[GoldEdge] = []
    pipe = EdgeKind.PIPE
    for person in draw.attendees:
        node = f"tz:{person.id}"
        calls.append(_call(node, "lookup_person", {"person_id": person.id}, Effect.READ))
        edges.append(_edge("profile", node, pipe))
    for person in invitees:
        for day in draw.days:
            node = f"cal:{person.id}:{day}"
            args = {"person_id": person.id, "day": day}
            calls.append(_call(node, "get_calendar", args, Effect.READ))
            edges.append(_edge("profile", node, pipe))
    for room, _ in cal.rooms:
        for day in draw.days:
            node = f"sched:{room}:{day}"
            args = {"room_id": room, "day": day}
            calls.append(_call(node, "get_room_schedule", args, Effect.READ))
            edges.append(_edge("rooms", node, pipe))
    decisions: list[DecisionPoint] = []
    if knobs.stateful:
        preconditions = [
            Precondition("the held room and who is free at that time", "hold"),
            Precondition("the organiser agreed to the meeting", "confirm"),
            Precondition("the organiser's working hours", "profile"),
        ]
        preconditions += [Precondition(f"{s} from the organiser", f"ask:{s}") for s in must_ask]
        decisions.append(
            DecisionPoint(
                "invite",
                "send_invitation",
                bool(best),
                {},
                best[0] if best else None,
                tuple(preconditions),
                1.0,
            )
        )
    if knobs.stateful and best:
        parts = [_parse(o) for o in best]
        calls += _commit_nodes(parts, duration)
        edges += _commit_edges(calls, parts, must_ask)
    return tuple(calls), tuple(edges), tuple(decisions)


@functools.lru_cache(maxsize=4096)
def _parse(option: str) -> tuple[int, str, str]:
    """``D4T1030M60CEDAR -> (4, "10:30", "CEDAR")``."""
    day, rest = option[1:].split("T", 1)
    start, rest = rest[:4], rest[5:]
    room = rest.lstrip("0123456789")
    return int(day), f"{start[:2]}:{start[2:]}", room


def _commit_nodes(parts: list[tuple[int, str, str]], duration: int) -> list[GoldCall]:
    hold_args: dict[str, Value | tuple[Value, ...]] = {
        "room_id": tuple(sorted({r for _, _, r in parts})),
        "day": tuple(sorted({d for d, _, _ in parts})),
        "start": tuple(sorted({s for _, s, _ in parts})),
        "duration": duration,
    }
    return [
        GoldCall("hold", "hold_room", hold_args, Effect.WRITE),
        GoldCall("confirm", "confirm"),
        GoldCall("send", "send_invitation", {}, Effect.COMMIT),
    ]


def _commit_edges(
    calls: list[GoldCall], parts: list[tuple[int, str, str]], must_ask: tuple[str, ...]
) -> list[GoldEdge]:
    chosen = {(r, d) for d, _, r in parts}
    decide, pipe = EdgeKind.DECIDE, EdgeKind.PIPE
    edges = [_edge("profile", "hold", decide), _edge("rooms", "hold", pipe)]
    for node in calls:
        if node.tool in ("lookup_person", "get_calendar"):
            edges.append(_edge(node.id, "hold", decide))
        elif node.tool == "get_room_schedule":
            # the start time is read off the chosen room's schedule; the others are compared
            kind = pipe if (node.args["room_id"], node.args["day"]) in chosen else decide
            edges.append(_edge(node.id, "hold", kind))
    edges += [GoldEdge(f"ask:{s}", "hold", EdgeKind.GATE) for s in must_ask]
    edges += [
        GoldEdge("hold", "confirm", EdgeKind.DECIDE),
        GoldEdge("hold", "send", EdgeKind.PIPE),
        GoldEdge("confirm", "send", EdgeKind.ORDER),
    ]
    return edges


def base_world(draw: Draw, cal: Calendars, plan: EventPlan) -> MeetingsBase:
    """The read-only records: shaped calendars and bookings, plus the inactive records that
    scheduled events switch on."""
    people = {p.id: p for p in draw.people}
    me = draw.organiser
    appointments: dict[str, Appointment] = {}
    bookings: dict[str, RoomBooking] = {}
    calendar_index: dict[tuple[str, int], list[str]] = {}
    booking_index: dict[tuple[str, int], list[str]] = {}

    shifts = {p.id: 60 * (p.utc_offset - me.utc_offset) for p in draw.people}

    def appoint(key: str, person: str, day: int, start: int, end: int, active: bool) -> None:
        shift = shifts[person]
        appointments[key] = _appointment(key, person, day, start + shift, end + shift, active)
        calendar_index.setdefault((person, day), []).append(key)

    def book(key: str, room: str, day: int, start: int, end: int, active: bool) -> None:
        bookings[key] = _booking(key, room, day, start, end, active, "")
        booking_index.setdefault((room, day), []).append(key)

    # the active records, dozens per task, inline; ``appoint`` and ``book`` add the others
    for (person, day), mask in cal.busy.items():
        runs = intervals(mask)
        if runs:
            shift = shifts[person]
            keys = calendar_index.setdefault((person, day), [])
            for start, end in runs:
                key = f"AP{len(appointments) + 1}"
                appointments[key] = _appointment(key, person, day, start + shift, end + shift, True)
                keys.append(key)
    for (room, day), mask in cal.room_busy.items():
        runs = intervals(mask)
        if runs:
            keys = booking_index.setdefault((room, day), [])
            for start, end in runs:
                key = f"RB{len(bookings) + 1}"
                bookings[key] = _booking(key, room, day, start, end, True, "")
                keys.append(key)
    for added in plan.added:
        ((start, end),) = intervals(added.mask)
        if added.room:
            book(added.key, added.owner, added.day, start, end, False)
        else:
            appoint(added.key, added.owner, added.day, start, end, False)
    return MeetingsBase(
        people=people,
        organiser=me.id,
        attendees=tuple(p.id for p in draw.attendees),
        team=draw.team,
        appointments=appointments,
        calendar_index={k: tuple(v) for k, v in calendar_index.items()},
        rooms={r.id: r for r in draw.rooms},
        room_bookings=bookings,
        booking_index={k: tuple(v) for k, v in booking_index.items()},
        balance=BALANCE,
    )
