"""Meetings tools. Each docstring is exactly what the model sees, as its ``when_off``
sentences change it where a knob is off (:mod:`stategym.kernel.knob_text`)."""

from __future__ import annotations

import functools
from dataclasses import replace
from typing import Any

from stategym.kernel.errors import ToolError
from stategym.kernel.tools import Effect, tool
from stategym.kernel.world import USER_ACCOUNT, usable_hold

from .timegrid import CELL, CLOSE, FULL, OPEN, Availability, cells, clock, minutes, option_id, span
from .world import FACILITIES_ACCOUNT, Hold, Invitation, MeetingsWorld, Person, RoomBooking

HOLD_TICKS = 4
"""A room hold lasts this many clock ticks (when dynamics are on)."""
ROOM_RATE = 10
"""Room fee per half hour, charged to the organiser's cost centre when the invitation goes out."""
MAX_DURATION = 240


def _person(world: MeetingsWorld, person_id: str) -> Person:
    person = world.base.people.get(person_id)
    if person is None:
        raise ToolError(f"no person {person_id!r} in the directory; ids come from get_my_profile")
    return person


def availability(world: MeetingsWorld, person_id: str, day: int) -> Availability:
    """A person's day on the organiser's clock, as the world stands now."""
    person = world.base.people[person_id]
    shift = 60 * (person.utc_offset - world.base.people[world.base.organiser].utc_offset)
    busy = 0
    for appointment in world.busy(person_id, day):
        busy |= span(appointment.start - shift, appointment.end - shift)
    if person_id == world.base.organiser:
        return Availability(FULL, busy)  # the organiser's own hours are checked separately
    return Availability(span(person.work_start - shift, person.work_end - shift), busy)


@tool(effect=Effect.READ)
def get_my_profile(world: MeetingsWorld) -> dict[str, Any]:
    """Read your own profile: person id, time zone, working hours, and your team's directory
    (names and person ids)."""
    me = world.base.people[world.base.organiser]
    team = [world.base.people[p] for p in world.base.team]
    return {
        "person_id": me.id,
        "name": me.name,
        "utc_offset": me.utc_offset,
        "work_start": clock(me.work_start),
        "work_end": clock(me.work_end),
        "team": [{"name": p.name, "person_id": p.id} for p in team],
    }


@tool(effect=Effect.READ)
def lookup_person(world: MeetingsWorld, person_id: str) -> dict[str, Any]:
    """Look up a colleague: time zone (hours from UTC) and working hours in their local time.

    Args:
        person_id: the person's id, from the team directory in get_my_profile.
    """
    person = _person(world, person_id)
    return {
        "person_id": person.id,
        "name": person.name,
        "utc_offset": person.utc_offset,
        "work_start": clock(person.work_start),
        "work_end": clock(person.work_end),
    }


@tool(effect=Effect.READ, latency=2)
def get_calendar(world: MeetingsWorld, person_id: str, day: int) -> dict[str, Any]:
    """Read one person's busy times on one day, in that person's local time.

    Args:
        person_id: the person's id (yours included).
        day: day number.
    """
    _person(world, person_id)
    busy = [{"start": clock(a.start), "end": clock(a.end)} for a in world.busy(person_id, day)]
    return {"person_id": person_id, "day": day, "busy": busy}


@tool(effect=Effect.READ)
def list_rooms(world: MeetingsWorld, min_capacity: int) -> list[dict[str, Any]]:
    """List meeting rooms seating at least min_capacity people, with their equipment.

    Args:
        min_capacity: the number of seats needed (count yourself too).
    """
    return [
        {"room_id": r.id, "capacity": r.capacity, "features": list(r.features)}
        for r in world.base.rooms.values()
        if r.capacity >= min_capacity
    ]


@tool(effect=Effect.READ)
def get_room_schedule(world: MeetingsWorld, room_id: str, day: int) -> dict[str, Any]:
    """List the half-hour slots (start times, your time zone) a room is free on one day.
    The building is open 08:00-18:00.

    Args:
        room_id: a room id from list_rooms.
        day: day number.
    """
    if room_id not in world.base.rooms:
        raise ToolError(f"no room {room_id!r}; ids come from list_rooms")
    taken = 0
    for booking in world.bookings(room_id, day):
        taken |= span(booking.start, booking.end)
    free = span(OPEN, CLOSE) & ~taken
    return {"room_id": room_id, "day": day, "free": list(_free_starts(free))}


@functools.lru_cache(maxsize=4096)
def _free_starts(free: int) -> tuple[str, ...]:
    """The start of every cell of ``free``, as ``HH:MM`` (rooms' days repeat across calls)."""
    return tuple(clock(m) for m in cells(free))


def _check_hold(world: MeetingsWorld, room_id: str, start: str, duration: int) -> int:
    """The start in minutes, once the request is one the room can take; else a ToolError."""
    room = world.base.rooms.get(room_id)
    if room is None:
        raise ToolError(f"no room {room_id!r}; ids come from list_rooms")
    if room.capacity < world.base.headcount:
        raise ToolError(
            f"room {room_id} seats {room.capacity}; the meeting has {world.base.headcount} people"
        )
    begin = minutes(start)
    if begin is None or begin % CELL:
        raise ToolError(f"start must be HH:MM on the half hour, got {start!r}")
    if duration <= 0 or duration % CELL or duration > MAX_DURATION:
        raise ToolError(f"duration must be a multiple of {CELL} minutes up to {MAX_DURATION}")
    if begin < OPEN or begin + duration > CLOSE:
        raise ToolError(f"the building is open {clock(OPEN)}-{clock(CLOSE)}")
    return begin


@tool(
    effect=Effect.WRITE,
    when_off={
        "dynamics": {
            ", and when the hold expires": "",
            "It keeps nothing aside: sending the invitation fails if someone else books the "
            "room first.": "It does not expire, and nobody else books rooms here.",
        }
    },
)
def hold_room(
    world: MeetingsWorld, room_id: str, day: int, start: str, duration: int
) -> dict[str, Any]:
    """Hold a room for a meeting. The hold shows who among the invitees (you included) is
    unavailable at that time right now, and when the hold expires. It keeps nothing aside:
    sending the invitation fails if someone else books the room first.

    Args:
        room_id: a room id from list_rooms.
        day: day number.
        start: start time HH:MM in your time zone, on the half hour.
        duration: length in minutes (a multiple of 30).
    """
    begin = _check_hold(world, room_id, start, duration)
    cells_ = span(begin, begin + duration)
    for booking in world.bookings(room_id, day):
        if span(booking.start, booking.end) & cells_:
            raise ToolError(
                f"room {room_id} is booked {clock(booking.start)}-{clock(booking.end)} on day {day}"
            )
    expires = world.clock + HOLD_TICKS if world.knobs.dynamics else None
    option = option_id(day, begin, duration, room_id)
    hold = Hold(world.new_id("H"), room_id, day, begin, duration, option, expires, "active")
    world.holds[hold.id] = hold
    invitees = (world.base.organiser, *world.base.attendees)
    unavailable = [p for p in invitees if not availability(world, p, day).free(cells_)]
    return {
        "hold_id": hold.id,
        "option": option,
        "room_id": room_id,
        "day": day,
        "start": clock(begin),
        "end": clock(begin + duration),
        "expires_at": expires,
        "unavailable": unavailable,
    }


@tool(
    effect=Effect.COMMIT,
    when_off={
        "irreversible": {"and the fee is forfeited.": "and the room fee is refunded in full."},
        "dynamics": {" that has not expired": ""},
    },
)
def send_invitation(world: MeetingsWorld, hold_id: str) -> dict[str, Any]:
    """Book the held room and send the meeting invitation to every attendee. The room fee is
    charged to your cost centre. An invitation cannot be unsent: cancelling it later sends
    every attendee a cancellation notice, and the fee is forfeited.

    Args:
        hold_id: a hold from hold_room that has not expired.
    """
    hold = usable_hold(world.holds, hold_id, world.clock, "hold the room again")
    cells_ = span(hold.start, hold.start + hold.duration)
    for booking in world.bookings(hold.room_id, hold.day):
        if span(booking.start, booking.end) & cells_:
            raise ToolError(f"room {hold.room_id} was booked by someone else before sending")
    invitation_id = world.new_id("I")
    booking = RoomBooking(
        world.new_id("B"),
        hold.room_id,
        hold.day,
        hold.start,
        hold.start + hold.duration,
        True,
        invitation_id,
    )
    fee = ROOM_RATE * hold.duration // CELL
    world.room_bookings[booking.id] = booking
    world.holds[hold_id] = replace(hold, status="used")
    world.invitations[invitation_id] = Invitation(
        invitation_id, hold.option, hold_id, booking.id, fee, "sent"
    )
    world.transfer(USER_ACCOUNT, FACILITIES_ACCOUNT, fee, f"room {hold.room_id}", invitation_id)
    return {
        "invitation_id": invitation_id,
        "option": hold.option,
        "fee": fee,
        "invited": len(world.base.attendees),
    }


@tool(
    effect=Effect.COMMIT,
    when_off={"irreversible": {"The room fee is forfeited.": "The room fee is refunded in full."}},
)
def cancel_invitation(world: MeetingsWorld, invitation_id: str) -> dict[str, Any]:
    """Cancel a sent invitation: every attendee gets a cancellation notice and the room is
    released. The room fee is forfeited.

    Args:
        invitation_id: the invitation to cancel.
    """
    invitation = world.invitations.get(invitation_id)
    if invitation is None or invitation.status != "sent":
        raise ToolError(f"no sent invitation {invitation_id}")
    booking = world.room_bookings[invitation.booking_id]
    world.room_bookings[booking.id] = replace(booking, active=False)
    world.invitations[invitation_id] = replace(invitation, status="cancelled")
    refund = 0 if world.knobs.irreversible else invitation.fee
    if refund:
        world.transfer(FACILITIES_ACCOUNT, USER_ACCOUNT, refund, "refund", invitation_id)
    return {
        "invitation_id": invitation_id,
        "option": invitation.option,
        "refund": refund,
        "fee": invitation.fee - refund,
        "notices": len(world.base.attendees),
    }


@tool(effect=Effect.READ, reads_own_writes=True)
def list_invitations(world: MeetingsWorld) -> list[dict[str, Any]]:
    """List the invitations you have sent and their status."""
    return [
        {"invitation_id": i.id, "option": i.option, "status": i.status}
        for i in world.invitations.values()
    ]


TOOLS = (
    get_my_profile,
    lookup_person,
    get_calendar,
    list_rooms,
    get_room_schedule,
    hold_room,
    send_invitation,
    cancel_invitation,
    list_invitations,
)
