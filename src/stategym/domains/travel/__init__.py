"""Travel: book a flight within policy and budget, around a crowded season, with fares that
move, holds that expire and payments that cannot be undone."""

from __future__ import annotations

from stategym.kernel.domain import Commitment, Domain
from stategym.kernel.task import Task
from stategym.kernel.understanding.labelled import with_questions
from stategym.kernel.world import World

from .expert import travel_expert
from .generator import generate
from .tools import TOOLS
from .world import TravelWorld

# How a question may name each slot; the first phrase names the slot as the user would.
# The user's intent model trains on these (stategym.kernel.understanding): inflections and
# synonyms are the model's, so a table lists the ways of asking, not every wording.
SLOT_PHRASES: dict[str, tuple[str, ...]] = {
    "budget": (
        "my budget",
        "what is your budget",
        "the most you would pay for the flight",
        "price limit",
        "maximum price",
        "price cap",
        "how much money can go to the ticket",
        "spending limit",
        "upper limit on the fare price",
        "what can you afford",
        "how expensive may the ticket be",
        "cost ceiling",
        "budget for the trip",
        "how much should the flight cost at most",
    ),
    "fare_type": (
        "the fare type",
        "do you need a refundable fare",
        "refundable ticket",
        "non refundable fare",
        "can the ticket be cancelled",
        "cancel for a refund",
        "flexible fare",
        "changeable ticket",
        "fare conditions",
        "kind of fare",
        "type of ticket",
        "money back if your plans change",
        "refund if you cancel",
        "fully refundable or basic fare",
        "cancellation policy of the ticket",
    ),
    "departure": (
        "my departure time",
        "departure time",
        "what time of day to depart",
        "morning or evening flight",
        "leave early or late in the day",
        "take off time",
        "what hour to leave",
        "a morning departure",
        "an evening departure",
        "red eye or daytime flight",
        "time of day to fly",
        "an early flight",
        "a late flight",
        "at what time should the flight leave",
        "what time do you want to depart",
        "flight time in the day",
    ),
    "origin": (
        "my home airport",
        "which airport do you fly from",
        "where are you flying from",
        "leaving from",
        "departure airport",
        "departure city",
        "origin",
        "home airport",
        "where does the trip start",
        "where do you live",
        "which city do you travel from",
        "fly out of",
        "starting airport",
        "nearest airport to you",
        "where will the flight depart from",
        "from where",
    ),
    "seat": (
        "my seat preference",
        "window or aisle seat",
        "aisle seat",
        "a seat by the window",
        "seat",
        "where to sit on the plane",
        "seating",
        "seat request",
        "sit by the window",
        "sit on the aisle",
        "which seat",
        "seat choice",
    ),
    "destination": (
        "my destination",
        "destination",
        "where are you going",
        "where are you flying to",
        "which city are you flying to",
        "where do you want to go",
        "arrival city",
        "arrival airport",
        "fly into",
        "headed to",
        "where is the trip to",
        "where to",
        "what city are you going to",
        "travelling to",
    ),
    "window": (
        "my travel dates",
        "which days can you travel",
        "what day do you want to leave",
        "travel dates",
        "date of the flight",
        "when can you travel",
        "when do you want to fly",
        "which day to depart",
        "travel window",
        "range of days",
        "dates that work for the trip",
        "first and last day you could leave",
        "what date",
        "which day",
        "flexible dates",
        "when are you leaving",
        "the earliest and the latest day you can leave",
        "on what day",
    ),
    "policy_cap": (
        "the company's fare cap",
        "company travel policy",
        "fare cap in the policy",
        "what does the policy allow",
        "corporate limit on fares",
        "employer limit on the ticket price",
        "how much will the company reimburse",
        "travel policy maximum",
        "company rules on airfare",
        "policy limit",
        "what the firm allows for flights",
        "company cover for the flight",
        "the company's spending limit for flights",
    ),
    "event_days": (
        "the event dates",
        "when is the festival",
        "dates of the event",
        "how long does the festival last",
        "when is the season",
        "crowded days",
        "busy period",
        "which days does the conference run",
        "when is the event",
        "event days to avoid",
        "when is it crowded",
        "festival dates",
        "when does the festival start and end",
    ),
}


def _world(task: Task) -> World:
    return TravelWorld(task.base, task.knobs)


def _commitments(world: World) -> tuple[Commitment, ...]:
    assert isinstance(world, TravelWorld)
    return tuple(
        Commitment(b.flight_id, b.id) for b in world.bookings.values() if b.status == "active"
    )


DOMAIN = Domain(
    name="travel",
    title="Book a flight within policy and budget; fares move, holds expire, payment is final",
    tools=TOOLS,
    slot_phrases=with_questions(__name__, SLOT_PHRASES),
    generate=generate,
    new_world=_world,
    commitments=_commitments,
    expert=travel_expert,
    instructions=(
        "You are a travel assistant booking flights for a company traveler. Look up what tools "
        "can tell you, ask the traveler only for what only they know, hold a fare to see its "
        "current price before paying, get the traveler's agreement, then pay once."
    ),
    answer_instructions=(
        "You are a travel assistant choosing a flight for a company traveler. Look up what "
        "tools can tell you, ask the traveler only for what only they know, and recommend the "
        "one flight that fits best."
    ),
    expires="Holds may expire.",
    answer_form="the id of the flight you recommend, or 'none' if no flight fits",
    env_id="stategym/Travel-v0",
)
