"""What a domain provides to the kernel.

A domain is one folder under ``stategym/domains`` with the same few modules (``world``,
``tools``, ``generator``, ``expert``) and a ``DOMAIN`` object built from this class. See
``docs/adding-a-domain.md``.

The kernel knows domains only as these objects. Names belong to the registry
(:mod:`stategym.registry`), which ``import stategym`` installs here with
:func:`use_registry`; :func:`lookup` is how the kernel turns a name into a domain.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol

import orjson

from stategym.kernel.errors import StateGymError, UnknownDomainError
from stategym.kernel.knob_text import flattened, knob_sentences, text_for
from stategym.kernel.knobs import Knobs
from stategym.kernel.task import DecisionPoint, GoldCall, GoldEdge, Task
from stategym.kernel.tools import OPTION_ANSWER, Effect, Tool, finish_tool_schema
from stategym.kernel.world import World

if TYPE_CHECKING:
    from stategym.agents.base import Agent
    from stategym.agents.style import Style


GoldGraph = tuple[tuple[GoldCall, ...], tuple[GoldEdge, ...], tuple[DecisionPoint, ...]]
"""A gold call graph and its decision points, as a domain's ``regold`` hook returns them."""


@dataclass(frozen=True, slots=True)
class Commitment:
    """An option the world is committed to at the end, and the record whose charges it
    keeps: the outcome counts money paid under any other record as lost
    (:mod:`stategym.kernel.outcome`). Usually the record that holds the option (a booking,
    an order); cloud's deletion names the one snapshot its policy requires.
    """

    option: str
    reference: str


@dataclass(frozen=True)
class Domain:
    """A family of tasks with its own world, tools and generator.

    Attributes:
        name: short name (``travel``).
        title: one line for ``stategym list``.
        tools: every tool, in the order the model sees them.
        slot_phrases: for each slot, phrases a question to the user may use to refer to it;
            the first names the slot as the user would ("my budget").
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
        instructions_when_off: for a knob, the sentences of ``instructions`` true only
            while it is on, each mapped to the one that replaces it with the knob off
            (:meth:`instructions_for`; the rules are :mod:`~stategym.kernel.knob_text`'s).
        answer_instructions: the instructions where the ``stateful`` knob is off: only the
            look-up tools are offered and the episode is judged on its answer, so steps that
            hold, pay or send would name tools the model does not have; empty where
            ``instructions`` already fit (a read-only domain).
        moves: what changes on the clock where the ``dynamics`` knob is on, as the prompt
            says it ("Prices and availability may change.").
        expires: what the domain's write tools make that expires where ``dynamics`` is on
            ("Holds may expire."), said only where those tools are offered; empty: nothing.
        settles: what completes on its own after a call started it, whatever ``dynamics``
            ("a snapshot completes a moment after it is taken"); empty: nothing.
        answer_form: what ``finish(answer=...)`` names where an episode is judged on its
            answer (:meth:`judges_answer`), as the prompt's ending and ``finish`` say it.
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
    read_only: bool = False
    regold: Callable[[Task, tuple[str, ...]], GoldGraph] | None = None
    instructions_when_off: Mapping[str, Mapping[str, str]] = field(default_factory=dict, hash=False)
    answer_instructions: str = ""
    moves: str = "Prices and availability may change."
    expires: str = ""
    settles: str = ""
    answer_form: str = OPTION_ANSWER

    def __post_init__(self) -> None:
        knob_sentences(f"{self.name} instructions", self.instructions, self.instructions_when_off)
        for slot, phrases in self.slot_phrases.items():
            # a bare string would be read as one phrase per letter, a generator emptied here
            not_a_sequence = isinstance(phrases, str) or not isinstance(phrases, Sequence)
            if not_a_sequence or not all(isinstance(p, str) for p in phrases):
                raise StateGymError(
                    f"{self.name} slot_phrases[{slot!r}] must be a sequence of phrases, "
                    f"got {phrases!r}"
                )

    def instructions_for(self, knobs: Knobs) -> str:
        """The domain's part of the system prompt under ``knobs``: each sentence of
        :attr:`instructions_when_off` whose knob is off replaced, as the tools' descriptions
        are (:meth:`~stategym.kernel.tools.Tool.schema_for`); with ``stateful`` off,
        :attr:`answer_instructions` where the domain has them."""
        if not knobs.stateful and self.answer_instructions:
            return self.answer_instructions
        return text_for(self.instructions, flattened(self.instructions_when_off), knobs)

    def tool_schemas(self, knobs: Knobs) -> list[dict[str, Any]]:
        """The schemas an episode under ``knobs`` offers, ``finish`` last: what the
        environment offers and the renderers show, one list for both. Each call gives new
        objects: a caller that edits them (a Gymnasium ``info["tools"]``) edits its own copy,
        never the tools' schemas every other environment is built from."""
        schemas = [t.schema_for(knobs) for t in self.available_tools(knobs)]
        offered = [*schemas, finish_tool_schema(not self.judges_answer(knobs), self.answer_form)]
        copied: list[dict[str, Any]] = orjson.loads(orjson.dumps(offered))
        return copied

    def available_tools(self, knobs: Knobs) -> tuple[Tool, ...]:
        """Tools offered under these knobs: with statefulness off, the READ tools alone, less
        those that list only what the episode's writes made (:attr:`Tool.reads_own_writes`:
        an order list, a cart), which nothing can fill."""
        if knobs.stateful:
            return self.tools
        return tuple(t for t in self.tools if t.effect is Effect.READ and not t.reads_own_writes)

    def judges_answer(self, knobs: Knobs) -> bool:
        """Episodes are judged on the ``finish`` answer (stateless or read-only), not on what
        the world commits to. The environment and the metrics both ask this one place."""
        return not knobs.stateful or self.read_only

    # A domain is immutable configuration holding functions (tools, generator, expert), some
    # of them closures (synthetic domains): a registered domain travels by name and a copy is
    # the domain itself, so environments pickle and deep-copy.

    def __reduce_ex__(self, protocol: Any) -> Any:
        if _is_registered(self):
            return (lookup, (self.name,))
        return super().__reduce_ex__(protocol)

    def __copy__(self) -> Domain:
        return self

    def __deepcopy__(self, memo: dict[int, Any]) -> Domain:
        return self


class Registry(Protocol):
    """What the kernel asks of a registry: :mod:`stategym.registry` is the one there is."""

    def get_domain(self, name: str) -> Domain:
        """The domain named ``name``; raises ``UnknownDomainError``."""
        ...

    def cached_task(self, domain: str, seed: int, knobs: Knobs) -> Task:
        """The task of ``(domain, seed, knobs)``, generated once."""
        ...


_REGISTRY: Registry | None = None


def use_registry(registry: Registry) -> None:
    """Install the registry the kernel turns domain names into domains and tasks with.

    ``import stategym`` installs :mod:`stategym.registry`; the kernel never imports it, so
    it stays below the domains (``docs/architecture.md``).
    """
    global _REGISTRY
    _REGISTRY = registry


def installed_registry() -> Registry:
    """The installed registry.

    Raises:
        StateGymError: none is installed (only if ``stategym`` itself was never imported).
    """
    if _REGISTRY is None:
        raise StateGymError("no domain registry installed: import stategym first")
    return _REGISTRY


def lookup(name: str) -> Domain:
    """The domain named ``name``, through the installed registry."""
    return installed_registry().get_domain(name)


def _is_registered(domain: Domain) -> bool:
    try:
        return lookup(domain.name) is domain
    except UnknownDomainError:
        return False
