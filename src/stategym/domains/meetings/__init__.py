"""Meetings: find a time and a room that suit several people's calendars across time zones,
by the organiser's priorities; rooms are held for a while, and an invitation once sent
cannot be unsent."""

from __future__ import annotations

from stategym.domain import Commitment, Domain
from stategym.task import Task
from stategym.world import World

from .expert import meetings_expert
from .generator import generate, regold
from .tools import TOOLS
from .world import MeetingsWorld

SLOT_PHRASES: dict[str, tuple[str, ...]] = {
    "optional": (
        "optional",
        "must be there",
        "must attend",
        "required",
        "mandatory",
        "can skip",
        "can miss",
        "essential",
        "who can we do without",
    ),
    "duration": (
        "how long",
        "duration",
        "length",
        "how many minute",
        "how much time",
        "meeting last",
    ),
    "time_of_day": (
        "morning",
        "afternoon",
        "time of day",
        "what time",
        "am or pm",
        "earlier or later",
        "early or late",
    ),
    "room_feature": (
        "video",
        "whiteboard",
        "equipment",
        "room feature",
        "kind of room",
        "projector",
        "conferencing",
    ),
    "attendees": (
        "who should attend",
        "who to invite",
        "who is invited",
        "guest list",
        "invitee",
        "participant",
        "who should come",
        "who is coming",
        "who will attend",
    ),
    "window": (
        "which day",
        "what day",
        "which date",
        "what date",
        "day range",
        "when could",
        "when can we meet",
    ),
    "working_hours": (
        "working hour",
        "work hour",
        "office hour",
        "when do you work",
        "workday",
        "work day",
    ),
    "timezone": ("time zone", "timezone", "utc", "where are they based", "located", "local time"),
    "agenda": ("agenda", "topic", "subject", "meeting about", "purpose", "what is it about"),
}


def _world(task: Task) -> World:
    return MeetingsWorld(task.base, task.knobs)


def _commitments(world: World) -> tuple[Commitment, ...]:
    assert isinstance(world, MeetingsWorld)
    return tuple(
        Commitment(i.option, i.id) for i in world.invitations.values() if i.status == "sent"
    )


DOMAIN = Domain(
    name="meetings",
    title="Schedule a meeting across calendars and time zones; holds expire, invitations are final",
    tools=TOOLS,
    slot_phrases=SLOT_PHRASES,
    generate=generate,
    regold=regold,
    new_world=_world,
    commitments=_commitments,
    expert=meetings_expert,
    instructions=(
        "You are an assistant scheduling a meeting for the organiser (the user). Look up what "
        "tools can tell you (the organiser's profile and team directory, colleagues' time "
        "zones and working hours, calendars, rooms), ask the organiser only for what only they "
        "know, hold a room to see who is free right now, propose it by its option id "
        "(D<day>T<HHMM>M<minutes><ROOM>, returned by hold_room), and send the invitation once "
        "the organiser agrees. Send at most one invitation; send none if no time suits "
        "everyone who must attend."
    ),
    env_id="stategym/Meetings-v0",
)
