"""What a domain provides to the kernel.

A domain is one folder under ``stategym/domains`` with the same few modules (``world``,
``tools``, ``generator``, ``expert``) and a ``DOMAIN`` object built from this class. See
``docs/adding-a-domain.md``.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from stategym.knobs import Knobs
from stategym.task import DecisionPoint, GoldCall, GoldEdge, Task
from stategym.tools import Effect, Tool
from stategym.world import World

if TYPE_CHECKING:
    from stategym.agents.base import Agent
    from stategym.agents.style import Style


GoldGraph = tuple[tuple[GoldCall, ...], tuple[GoldEdge, ...], tuple[DecisionPoint, ...]]
"""A gold call graph and its decision points, as a domain's ``regold`` hook returns them."""


@dataclass(frozen=True, slots=True)
class Commitment:
    """An option the world is committed to at the end, and the record that holds it."""

    option: str
    reference: str


@dataclass(frozen=True)
class Domain:
    """A family of tasks with its own world, tools and generator.

    Attributes:
        name: short name (``travel``).
        title: one line for ``stategym list``.
        tools: every tool, in the order the model sees them.
        slot_phrases: for each slot, phrases a question to the user may use to refer to it.
        generate: ``(seed, knobs) -> Task``, a pure function.
        new_world: builds the episode's world over the task's shared base.
        commitments: what the world is committed to (active bookings, sent invitations).
        expert: ``(task, style) -> Agent``, the scripted expert and its styled variants.
        instructions: the domain's part of the system prompt for LLM agents.
        read_only: the domain is the stateless lookup case whatever the knobs: it has only
            read tools, every episode ends with ``finish(answer=...)`` and is scored on that
            answer, and the user asked a question it cannot answer, so it judges no proposals.
        regold: ``(task, best) -> (calls, edges, decisions)``, the task's gold call graph and
            decision points rebuilt for another set of best options by the generator's own
            gold-building code (for counterfactual probes); ``None`` where the gold calls name
            the best option ids directly, so rewriting those ids is enough.
    """

    name: str
    title: str
    tools: tuple[Tool, ...]
    slot_phrases: Mapping[str, tuple[str, ...]]
    generate: Callable[[int, Knobs], Task]
    new_world: Callable[[Task], World]
    commitments: Callable[[World], tuple[Commitment, ...]]
    expert: Callable[[Task, Style], Agent]
    instructions: str
    env_id: str = ""
    extra: Mapping[str, Any] = field(default_factory=dict)
    read_only: bool = False
    regold: Callable[[Task, tuple[str, ...]], GoldGraph] | None = None

    def available_tools(self, knobs: Knobs) -> tuple[Tool, ...]:
        """Tools offered under these knobs: read-only tools alone when statefulness is off."""
        if knobs.stateful:
            return self.tools
        return tuple(t for t in self.tools if t.effect is Effect.READ)

    def judges_answer(self, knobs: Knobs) -> bool:
        """Episodes are judged on the ``finish`` answer (stateless or read-only), not on what
        the world commits to. The environment and the metrics both ask this one place."""
        return not knobs.stateful or self.read_only
