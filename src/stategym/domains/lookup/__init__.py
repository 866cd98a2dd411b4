"""Lookup: multi-hop questions over a read-only corpus, answered by id or number and scored by
exact match. The stateless special case (Search-R1-like): no one to ask, nothing to commit,
nothing that changes, so that a study can show what transfers from it and what does not."""

from __future__ import annotations

from stategym.kernel.domain import Commitment, Domain
from stategym.kernel.task import Task
from stategym.kernel.understanding.labelled import with_questions
from stategym.kernel.world import World

from .expert import lookup_expert
from .generator import generate
from .tools import TOOLS
from .world import LookupWorld

# How a question may name each slot; the first phrase names the slot as the user would.
# The user's intent model trains on these (stategym.kernel.understanding): inflections and
# synonyms are the model's, so a table lists the ways of asking, not every wording.
SLOT_PHRASES: dict[str, tuple[str, ...]] = {
    "subject": (
        "which thing I mean",
        "which product",
        "which company",
        "which person",
        "do you mean",
        "full name",
        "exact name",
        "who do you mean",
        "what do you mean",
        "which entity",
        "which one are you asking about",
        "spell out the name",
        "official name",
        "who is the question about",
        "which company is it",
    ),
    "other": (
        "the other one I mean",
        "other one",
        "second one",
        "the other",
        "the other entity",
        "what to compare it with",
        "the second entity",
        "against which one",
        "what else is compared",
        "compare it with",
        "the other person",
        "the other company",
    ),
    "path": (
        "what I want to know",
        "want to know",
        "what exactly",
        "which fact",
        "rephrase",
        "what are you asking",
        "what is your question",
        "what information",
        "restate the question",
        "what are you after",
        "what do you want to know about it",
        "what to find out",
        "what detail",
        "which piece of information",
    ),
    "measure": (
        "how to compare them",
        "which measure",
        "compare them by",
        "by what measure",
        "which attribute",
        "which metric",
        "on what basis",
        "which criterion",
        "which property",
        "compare on what",
        "which number to compare",
        "which feature decides",
    ),
    "pick": (
        "which end I want",
        "lowest or highest",
        "highest or lowest",
        "smallest or largest",
        "largest or smallest",
        "earliest or latest",
        "latest or earliest",
        "maximum or minimum",
        "the top or the bottom",
        "high or low",
        "biggest or smallest",
        "cheapest or most expensive",
        "first or last",
    ),
}


def _world(task: Task) -> World:
    return LookupWorld(task.base, task.knobs)


def _commitments(world: World) -> tuple[Commitment, ...]:
    return ()


DOMAIN = Domain(
    name="lookup",
    title="Answer a multi-hop question from a read-only corpus; exact match, nothing to commit",
    tools=TOOLS,
    slot_phrases=with_questions(__name__, SLOT_PHRASES),
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
    answer_form="the answer alone: the id of the entity (like T123), or the number",
)
