"""Meetings: find a time and a room that suit several people's calendars across time zones,
by the organiser's priorities; rooms are held for a while, and an invitation once sent
cannot be unsent."""

from __future__ import annotations

from stategym.kernel.domain import Commitment, Domain
from stategym.kernel.task import Task
from stategym.kernel.understanding.labelled import with_questions
from stategym.kernel.world import World

from .expert import meetings_expert
from .generator import generate, regold
from .tools import TOOLS
from .world import MeetingsWorld

# How a question may name each slot; the first phrase names the slot as the user would.
# The user's intent model trains on these (stategym.kernel.understanding): inflections and
# synonyms are the model's, so a table lists the ways of asking, not every wording.
SLOT_PHRASES: dict[str, tuple[str, ...]] = {
    "optional": (
        "which attendees are optional",
        "optional attendees",
        "who must be there",
        "who must attend",
        "who is required",
        "mandatory attendees",
        "who can skip it",
        "who can miss it",
        "who is essential",
        "who can we do without",
        "required or optional",
        "whose attendance is optional",
        "who is not needed",
        "who can be left out",
        "nice to have attendees",
        "can it go ahead without someone",
        "who is critical",
    ),
    "duration": (
        "the meeting length",
        "how long should it be",
        "length of the meeting",
        "how many minutes",
        "how much time should i book",
        "how long will the meeting last",
        "thirty minutes or an hour",
        "an hour or less",
        "how long a slot",
        "how long to book the room for",
        "length of the slot",
        "a quick sync or a long session",
        "how much time do you need",
    ),
    "time_of_day": (
        "the time of day",
        "time of day",
        "am or pm",
        "earlier or later in the day",
        "early or late slot",
        "a morning slot",
        "an afternoon slot",
        "before or after lunch",
        "when in the day",
        "what part of the day",
        "first half of the day",
        "a morning meeting",
        "what time suits you",
    ),
    "room_feature": (
        "the room equipment",
        "do you need video",
        "a whiteboard in the room",
        "room equipment",
        "room feature",
        "what kind of room",
        "projector",
        "video conferencing",
        "room with a screen",
        "a camera for remote people",
        "room facilities",
        "what the room must have",
        "av equipment",
        "amenities in the room",
        "a video link",
    ),
    "attendees": (
        "who should attend",
        "who to invite",
        "who is invited",
        "guest list",
        "invitees",
        "participants",
        "who should come",
        "who is coming",
        "who will attend",
        "attendee list",
        "which people",
        "who is in the meeting",
        "who should i include",
        "who the meeting is for",
        "which colleagues to invite",
        "who are the people attending",
        "the list of attendees",
        "names of the attendees",
    ),
    "window": (
        "which days",
        "which day",
        "what date",
        "what day",
        "date range",
        "which days could the meeting be on",
        "when could we meet",
        "when can we meet",
        "what days are possible",
        "which date works",
        "day of the week",
        "when should the meeting happen",
        "by which day",
        "range of days to schedule",
        "which days work",
    ),
    "working_hours": (
        "my working hours",
        "working hours",
        "work hours",
        "office hours",
        "when do you work",
        "workday",
        "when does your working day start",
        "what time do you start work",
        "what time do you finish work",
        "core hours",
        "work schedule",
        "hours you are at work",
    ),
    "timezone": (
        "the attendees' time zones",
        "time zone",
        "time zones",
        "timezone",
        "utc",
        "where are they based",
        "where are people located",
        "local time",
        "utc offset",
        "which region",
        "which country",
        "different time zones",
        "what time is it for them",
        "what time is it for the others",
        "same time zone",
        "which cities are they in",
    ),
    "agenda": (
        "the agenda",
        "agenda",
        "topic",
        "subject",
        "what is the meeting about",
        "purpose",
        "what is it about",
        "what will you discuss",
        "goal of the meeting",
        "reason for the meeting",
        "meeting title",
        "topics to cover",
        "occasion",
    ),
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
    slot_phrases=with_questions(__name__, SLOT_PHRASES),
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
    answer_instructions=(
        "You are an assistant choosing a time and a room for a meeting for the organiser (the "
        "user). Look up what tools can tell you (the organiser's profile and team directory, "
        "colleagues' time zones and working hours, calendars, rooms), ask the organiser only "
        "for what only they know, and recommend the one time and room that suits everyone who "
        "must attend."
    ),
    moves="Calendars and room bookings may change.",
    expires="Holds may expire.",
    answer_form=(
        "the id of the option you recommend (D<day>T<HHMM>M<minutes><ROOM>), or 'none' if no "
        "time suits everyone who must attend"
    ),
    env_id="stategym/Meetings-v0",
)
