"""What a lookup agent has learnt so far: search hits and the facts of entities it has read."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from stategym.kernel.protocol import CallBatch, Observation

SUBJECT_TYPES = {
    "maker": "product",
    "founder": "company",
    "hq": "company",
    "products": "company",
    "born_in": "person",
}
"""The type of entity a question's first relation starts from."""


@dataclass(slots=True)
class Beliefs:
    """Search hits by query and facts by entity id."""

    hits: dict[str, list[dict[str, Any]]] = field(default_factory=dict)
    facts: dict[str, dict[str, Any]] = field(default_factory=dict)

    def see(self, batch: CallBatch, observation: Observation) -> None:
        """Take in the results of ``batch`` (the lookup user has nothing to tell)."""
        for sent, result in zip(batch.calls, observation.results, strict=False):
            if not result.ok or not isinstance(sent.arguments, dict):
                continue
            if result.name == "search":
                self.hits[str(sent.arguments["query"])] = result.content
            elif result.name == "get_entity":
                self.facts[result.content["id"]] = result.content

    def resolve(self, name: str, kind: str, first_fit: bool) -> str | None:
        """The id of the entity called ``name`` or, first fit, the first hit of the right type."""
        for hit in self.hits.get(name, []):
            if hit["type"] == kind and (first_fit or hit["name"].lower() == name.lower()):
                return str(hit["id"])
        return None

    def fact(self, entity_id: str | None, name: str) -> Any:
        """A fact of an entity read so far (``None`` if unknown)."""
        return self.facts.get(entity_id or "", {}).get(name)
