"""Where every value the agent could know first appeared.

Every scalar in a tool result, in the request and in the user's answers is recorded with its
first origin. Every argument the agent passes is then resolved to an origin, or to ``None``:
*ungrounded*, a value that appeared nowhere the agent could have seen it (a guess). The
parallelism and risk metrics read these resolutions from the trajectory.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from enum import StrEnum
from typing import Any


class Source(StrEnum):
    REQUEST = "request"
    USER = "user"
    TOOL = "tool"


@dataclass(frozen=True, slots=True)
class Origin:
    """The first appearance of a value.

    Attributes:
        source: request, user or tool.
        round: the round whose observation showed it (-1 for the request).
        ref: the call id (tool), the slot name (user) or ``""`` (request).
    """

    source: Source
    round: int
    ref: str


class Provenance:
    """First-appearance index of observed values."""

    __slots__ = ("first",)

    def __init__(self) -> None:
        self.first: dict[Any, Origin] = {}

    def observe(self, value: Any, origin: Origin) -> None:
        """Record every scalar inside ``value`` (dicts, lists) that is not yet known."""
        kind = type(value)
        if kind is dict:
            items = value.values()
        elif kind is list or kind is tuple:
            items = value
        else:
            if kind is not bool and value is not None:
                self.first.setdefault(value, origin)
            return
        # Scalars are handled inline, without a call each: tool results are mostly rows of
        # scalars, and this runs on every result of every round.
        first = self.first
        for item in items:
            kind = type(item)
            if kind is dict or kind is list or kind is tuple:
                self.observe(item, origin)
            elif kind is not bool and item is not None:
                first.setdefault(item, origin)

    def resolve(self, arguments: Mapping[str, Any]) -> dict[str, Origin | None]:
        """The origin of each argument value (booleans carry none and are skipped)."""
        resolved: dict[str, Origin | None] = {}
        for name, value in arguments.items():
            if type(value) is list:
                origins = [self.first.get(v) for v in value]
                known = [o for o in origins if o is not None]
                # a list is as grounded as its least grounded item: ungrounded if any item is,
                # else it dates from its most recently observed item
                resolved[name] = (
                    max(known, key=lambda o: o.round)
                    if known and len(known) == len(origins)
                    else None
                )
            elif type(value) is bool:
                continue
            else:
                resolved[name] = self.first.get(value)
        return resolved

    def copy(self) -> Provenance:
        clone = Provenance()
        clone.first = dict(self.first)
        return clone
