"""Meetings dynamics: calendars fill up and the organiser changes the meeting's length.

With dynamics on, up to three things happen on the clock: the organiser asks for a different
length (a change of mind the user announces), someone who must attend books over the
earliest time that looks usable but is not the best (what a first-fit agent would grab),
and someone else books a room over the next such time. A calendar event is kept only if it
leaves the best options and the need to ask for priorities unchanged, so the events punish
stale information and hasty choices, never an agent that decides well.
"""

from __future__ import annotations

import random
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from stategym.kernel.knobs import Knobs
from stategym.kernel.task import Event, EventKind

from .shape import Calendars
from .timegrid import Option, window

if TYPE_CHECKING:
    from .generator import Draw

Judge = Callable[[Calendars], tuple[tuple[str, ...], bool]]
"""``calendars -> (best options, whether the priority order decides)``."""


@dataclass(frozen=True, slots=True)
class Added:
    """Busy time an event switches on: an appointment or a room booking (inactive until then).

    Attributes:
        key: the record id the event activates.
        owner: the person or room id.
        day: the day.
        mask: the cells it takes, on the organiser's clock.
        room: a room booking rather than an appointment.
    """

    key: str
    owner: str
    day: int
    mask: int
    room: bool


@dataclass(frozen=True, slots=True)
class EventPlan:
    """The calendars after every event, the events, and the records they switch on."""

    final: Calendars
    events: tuple[Event, ...]
    added: tuple[Added, ...]


def _decoy(usable: list[Option], best: tuple[str, ...]) -> Option | None:
    """The earliest meeting that meets every hard constraint but is not a best option."""
    return next((o for o in usable if o.id not in best), None)


def plan_events(
    draw: Draw,
    knobs: Knobs,
    cal: Calendars,
    duration: int,
    judge: Judge,
    listing: Callable[[Calendars], list[Option]],
) -> EventPlan:
    """The dynamic schedule of a task (empty with dynamics off); ``listing`` gives the
    options of calendars that meet every hard constraint, in :func:`~.timegrid.options`
    order."""
    if not knobs.dynamics:
        return EventPlan(cal, (), ())
    events: list[Event] = []
    if draw.duration_new:
        events.append(
            Event(draw.times[0], EventKind.USER_UPDATE, slot="duration", value=draw.duration_new)
        )
    rng = random.Random(f"meetings-events:{draw.shape_seed}")
    reference = judge(cal)
    added: list[Added] = []
    current = cal
    for room, at in ((False, draw.times[1]), (True, draw.times[2])):
        decoy = _decoy(listing(current), reference[0])
        if decoy is None:
            break
        mask = window(decoy.start, duration)
        owner = decoy.room if room else rng.choice(current.required[1:])
        table = dict(current.room_busy if room else current.busy)
        table[(owner, decoy.day)] = table.get((owner, decoy.day), 0) | mask
        if room:
            trial = current.with_busy(current.busy, table)
        else:
            trial = current.with_busy(table, current.room_busy)
        if judge(trial) != reference:
            continue
        key = f"{'RBE' if room else 'APE'}{len(added) + 1}"
        added.append(Added(key, owner, decoy.day, mask, room))
        events.append(
            Event(
                at, EventKind.SET, "room_bookings" if room else "appointments", key, "active", True
            )
        )
        current = trial
    return EventPlan(current, tuple(events), tuple(added))
