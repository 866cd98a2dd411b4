"""Lookup: multi-hop questions over a read-only corpus, answered by id or number and scored by
exact match. The stateless special case (Search-R1-like): no one to ask, nothing to commit,
nothing that changes, so that a study can show what transfers from it and what does not."""

from __future__ import annotations

from stategym.domain import Commitment, Domain
from stategym.task import Task
from stategym.world import World

from .expert import lookup_expert
from .generator import generate
from .tools import TOOLS
from .world import LookupWorld

SLOT_PHRASES: dict[str, tuple[str, ...]] = {
    "subject": (
        "which product",
        "which company",
        "which person",
        "do you mean",
        "full name",
        "exact name",
    ),
    "other": ("other one", "second one", "the other"),
    "path": ("want to know", "what exactly", "which fact", "rephrase", "what are you asking"),
    "measure": ("which measure", "compare them by", "by what measure", "which attribute"),
    "pick": ("lowest or", "highest or", "smallest or", "largest or", "earliest or", "latest or"),
}


def _world(task: Task) -> World:
    return LookupWorld(task.base, task.knobs)


def _commitments(world: World) -> tuple[Commitment, ...]:
    return ()


DOMAIN = Domain(
    name="lookup",
    title="Answer a multi-hop question from a read-only corpus; exact match, nothing to commit",
    tools=TOOLS,
    slot_phrases=SLOT_PHRASES,
    generate=generate,
    new_world=_world,
    commitments=_commitments,
    expert=lookup_expert,
    instructions=(
        "You answer questions from a read-only corpus of cities, people, companies and "
        "products. Search for the names the question mentions, read entities hop by hop "
        "(several at once where they do not depend on each other), and finish with the answer "
        "alone: an entity id or a number."
    ),
    env_id="stategym/Lookup-v0",
    read_only=True,
)
