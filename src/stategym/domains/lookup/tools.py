"""Lookup tools (all read-only). Each docstring is exactly what the model sees."""

from __future__ import annotations

import re
from typing import Any

from stategym.kernel.errors import ToolError
from stategym.kernel.tools import Effect, tool

from .world import KINDS, LookupWorld, facts

_WORD = re.compile(r"[a-z0-9]+")


def name_words(text: str) -> frozenset[str]:
    """The lower-case words of a name or query."""
    return frozenset(_WORD.findall(text.lower()))


@tool(effect=Effect.READ)
def search(world: LookupWorld, query: str) -> list[dict[str, Any]]:
    """Search the corpus by name. Returns every entity whose name shares a word with the query
    (in index order, not by relevance), with its id, name and type.

    Args:
        query: words of the name you are looking for.
    """
    wanted = name_words(query)
    return [
        {"id": e.id, "name": e.name, "type": KINDS[type(e)]}
        for e in world.entities.values()
        if wanted & world.base.words[e.id]
    ]


@tool(effect=Effect.READ)
def get_entity(world: LookupWorld, entity_id: str) -> dict[str, Any]:
    """Read every fact the corpus holds about one entity; facts that name other entities give
    their ids.

    Args:
        entity_id: an id from search or from another entity's facts.
    """
    entity = world.entities.get(entity_id)
    if entity is None:
        raise ToolError(f"no entity {entity_id!r}")
    return facts(entity)


TOOLS = (search, get_entity)
