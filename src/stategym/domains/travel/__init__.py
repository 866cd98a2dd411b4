"""Travel: book a flight within policy and budget, around a crowded season, with fares that
move, holds that expire and payments that cannot be undone."""

from __future__ import annotations

from stategym.domain import Commitment, Domain
from stategym.task import Task
from stategym.world import World

from .expert import travel_expert
from .generator import generate
from .tools import TOOLS
from .world import TravelWorld

SLOT_PHRASES: dict[str, tuple[str, ...]] = {
    "budget": (
        "budget",
        "spend",
        "afford",
        "price limit",
        "maximum price",
        "max price",
        "how much",
        "price cap",
        "cost limit",
        "pay at most",
        "most you can pay",
        "most you would pay",
    ),
    "fare_type": (
        "refundable",
        "refund",
        "fare type",
        "flexible fare",
        "changeable fare",
        "cancellable",
        "can be cancelled",
        "kind of fare",
        "type of ticket",
    ),
    "departure": (
        "time of day",
        "what time",
        "departure time",
        "depart",
        "morning or evening",
        "when do you want to leave",
        "time to leave",
        "early or late",
    ),
    "origin": (
        "fly from",
        "flying from",
        "home airport",
        "departure airport",
        "origin",
        "leaving from",
        "where do you live",
        "which airport do you",
        "start from",
    ),
    "seat": ("seat", "window or aisle", "aisle"),
    "destination": (
        "destination",
        "flying to",
        "where are you going",
        "going to",
        "fly to",
        "where to",
    ),
    "window": (
        "which day",
        "what day",
        "travel date",
        "date",
        "when can you travel",
        "when do you want to travel",
        "travel window",
        "when are you leaving",
    ),
    "policy_cap": ("travel policy", "company policy", "policy allow", "fare cap", "company allow"),
    "event_days": (
        "when is the",
        "event date",
        "festival date",
        "season date",
        "how long does the",
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
    slot_phrases=SLOT_PHRASES,
    generate=generate,
    new_world=_world,
    commitments=_commitments,
    expert=travel_expert,
    instructions=(
        "You are a travel assistant booking flights for a company traveler. Look up what tools "
        "can tell you, ask the traveler only for what only they know, hold a fare to see its "
        "current price before paying, get the traveler's agreement, then pay once."
    ),
    env_id="stategym/Travel-v0",
)
