"""Synthetic domains composed from motifs, reachable as ``synth:<spec>`` (see
:mod:`stategym.topology.motifs` for the spec language).

Each spec builds a full :class:`~stategym.kernel.domain.Domain`: generated typed tools, a task
generator with ground truth, and a generic non-privileged expert honouring
:class:`~stategym.agents.style.Style`, so every per-domain check runs on synthetic domains too.
"""

from __future__ import annotations

import functools

from stategym.kernel.domain import Commitment, Domain
from stategym.kernel.errors import UnknownDomainError
from stategym.kernel.knobs import Knobs
from stategym.kernel.task import Task
from stategym.kernel.understanding.labelled import with_questions
from stategym.kernel.world import World
from stategym.topology.motifs import Spec

from .expert import synth_expert
from .generator import generate
from .surface import Surface, make_surface, with_article
from .tools import lookup_tools, source_tools, state_tools
from .world import SynthWorld

# How a question may name each slot; the first phrase names the slot as the user would.
# The user's intent model trains on these (stategym.kernel.understanding): inflections and
# synonyms are the model's, so a table lists the ways of asking, not every wording.
SLOT_PHRASES: dict[str, tuple[str, ...]] = {
    "limit": (
        "my budget",
        "spend",
        "afford",
        "price limit",
        "maximum price",
        "how much",
        "price cap",
        "spending cap",
        "most you would pay",
        "upper limit on cost",
        "what amount to stay under",
        "how expensive",
    ),
    "category": (
        "the category",
        "what kind",
        "which kind",
        "which type",
        "what sort",
        "class of item",
    ),
    "level": (
        "the minimum grade",
        "level",
        "tier",
        "minimum grade",
        "lowest acceptable grade",
        "quality grade",
        "quality level",
        "grade requirement",
    ),
    "ref": (
        "my reference",
        "reference",
        "reference number",
        "reference code",
        "ref",
        "reference id",
        "booking reference",
    ),
    "tail": (
        "my routing code",
        "routing code",
        "routing",
        "route code",
        "routing number",
    ),
    "extra": (
        "how to reach me",
        "contact",
        "reach you",
        "contact details",
        "get in touch",
        "phone or email",
        "how to contact you",
        "when can we contact you",
    ),
}
_TABLE = with_questions(__name__, SLOT_PHRASES)
"""The phrases and the labelled questions: one object, so the user's model trains once."""


def _commitments(world: World) -> tuple[Commitment, ...]:
    assert isinstance(world, SynthWorld)
    return tuple(
        Commitment(p.option, p.id) for p in world.purchases.values() if p.status == "active"
    )


def _new_world(task: Task) -> World:
    return SynthWorld(task.base, task.knobs)


def build_domain(spec: Spec) -> Domain:
    """The domain of a spec (a new object each call; :func:`synthetic_domain` caches)."""
    surface: Surface = make_surface(spec.surface)
    tools = (
        *lookup_tools(spec, surface),
        *source_tools(spec, surface),
        *state_tools(spec, surface),
    )

    def task(seed: int, knobs: Knobs) -> Task:
        return generate(spec, surface, seed, knobs)

    noun = surface.noun
    return Domain(
        name=spec.name,
        title=f"Synthetic topology {spec.key} ({spec.motifs()} motif units)",
        tools=tools,
        slot_phrases=_TABLE,
        generate=task,
        new_world=_new_world,
        commitments=_commitments,
        expert=synth_expert(spec, surface),
        instructions=(
            f"You are an assistant buying {with_article(noun)} for a user. Look up what the "
            "tools can tell you, in the order their inputs require, ask the user only for what "
            f"only they know, and buy exactly one {noun} that meets their needs, or none if "
            "nothing does."
        ),
        answer_instructions=(
            f"You are an assistant choosing {with_article(noun)} for a user. Look up what the "
            "tools can tell you, in the order their inputs require, ask the user only for what "
            f"only they know, and recommend exactly one {noun} that meets their needs, or none "
            "if nothing does."
        ),
        moves="Prices and stock may change.",
        expires="Holds may expire." if spec.verifycommit else "",
        answer_form=f"the id of the {noun} you recommend, or 'none' if no {noun} fits",
    )


@functools.lru_cache(maxsize=512)
def synthetic_domain(name: str) -> Domain:
    """The synthetic domain for ``synth:<spec>[@surface]``, built once per canonical name.

    Raises:
        UnknownDomainError: the spec does not parse.
    """
    try:
        spec = Spec.parse(name)
    except ValueError as error:
        raise UnknownDomainError(f"bad synthetic domain {name!r}: {error}") from None
    if spec.name != name:
        return synthetic_domain(spec.name)
    return build_domain(spec)


__all__ = ["SLOT_PHRASES", "Spec", "build_domain", "synthetic_domain"]
