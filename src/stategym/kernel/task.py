"""The task spec: everything one seeded episode is made of, and the ground truth to score it.

A task is a pure function of ``(domain, seed, knobs)``. The agent sees only
:class:`Request`; everything else (hidden slot values, the true priority order, the event
schedule, the gold call graph, the decision points) is for the environment, the simulated
user and the scorer. Reference definitions: ``docs/metrics.md``.
"""

from __future__ import annotations

import operator
from collections.abc import Mapping
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any, Generic, SupportsIndex, TypeVar

from stategym.kernel.knobs import Knobs
from stategym.kernel.tools import Effect

Value = str | int | float | bool


class SlotKind(StrEnum):
    """How the agent can learn a fact the task depends on."""

    GIVEN = "given"
    """Stated in the request."""
    DERIVABLE = "derivable"
    """A tool returns it; the agent should look it up, not ask."""
    MISSING = "missing"
    """Only the user knows it; the agent must ask before using it."""
    IRRELEVANT = "irrelevant"
    """The user knows it, but it does not change the right decision."""


@dataclass(frozen=True, slots=True)
class Slot:
    """A fact the user holds.

    Attributes:
        name: identifier, e.g. ``budget``.
        kind: how the agent can learn it.
        value: the true value (may change mid-episode through a ``user_update`` event).
        answer: how the user says it, with ``{value}`` in place of the value.
    """

    name: str
    kind: SlotKind
    value: Value
    answer: str

    def say(self, value: Value | None = None) -> str:
        return self.answer.format(value=self.value if value is None else value)


class ConstraintKind(StrEnum):
    POLICY = "policy"
    """A hard rule (company policy): never to be traded away."""
    NEED = "need"
    """Something the user needs."""
    PREFERENCE = "preference"
    """Something the user would like."""


@dataclass(frozen=True, slots=True)
class Constraint:
    """One constraint on the choice.

    Attributes:
        id: identifier, e.g. ``within_budget``.
        kind: policy, need or preference.
        text: the user's words for it ("staying within my budget").
        topic: the slot or phrase a priority question names it by.
    """

    id: str
    kind: ConstraintKind
    text: str
    topic: str


class EventKind(StrEnum):
    SET = "set"
    """Set ``table[key].field = value`` in the world (price moves, seats sell out)."""
    USER_UPDATE = "user_update"
    """The user changes the value of a slot and says so at the next opportunity."""


@dataclass(frozen=True, slots=True)
class Event:
    """A scheduled change that fires once the clock reaches ``at``."""

    at: int
    kind: EventKind
    table: str = ""
    key: str = ""
    field: str = ""
    value: Value = 0
    slot: str = ""


class EdgeKind(StrEnum):
    PIPE = "pipe"
    """A returned field is substituted into an argument."""
    DECIDE = "decide"
    """Choosing the call or its arguments needs reasoning over a returned value."""
    GATE = "gate"
    """A must-ask slot gates a call that uses it (source is ``ask:<slot>``)."""
    ORDER = "order"
    """A state precondition without value use (hold before pay)."""


@dataclass(frozen=True, slots=True)
class GoldCall:
    """A node of the gold call graph.

    Attributes:
        id: node id (``ask:<slot>`` for must-ask nodes).
        tool: tool name, or ``ask`` / ``confirm`` for user nodes.
        args: arguments that identify a matching call (a tuple lists acceptable values);
            other arguments are free.
        effect: read / write / commit for tools; ``None`` for user nodes.
    """

    id: str
    tool: str
    args: Mapping[str, Value | tuple[Value, ...]] = field(default_factory=dict)
    effect: Effect | None = None

    def matches(self, name: str, arguments: Mapping[str, Any]) -> bool:
        if name != self.tool:
            return False
        for key, wanted in self.args.items():
            got = arguments.get(key)
            if got != wanted and not (type(wanted) is tuple and got in wanted):
                return False
        return True


@dataclass(frozen=True, slots=True)
class GoldEdge:
    src: str
    dst: str
    kind: EdgeKind


@dataclass(frozen=True, slots=True)
class Precondition:
    """A fact that must have been observed before a commit.

    Attributes:
        fact: what must be known ("fresh price of TK204").
        revealed_by: the gold node whose result reveals it (``confirm`` for the user's yes).
    """

    fact: str
    revealed_by: str


@dataclass(frozen=True, slots=True)
class DecisionPoint:
    """A point where the agent may commit.

    Attributes:
        id: identifier.
        tool: the commit tool.
        should_commit: whether the best trajectory commits here.
        args: the arguments of the right commit (empty when it should not commit).
        option: the option the right commit selects.
        preconditions: facts to observe, in an earlier round, before committing.
        severity: harm of a wrong commit here, in [0, 1].
    """

    id: str
    tool: str
    should_commit: bool
    args: Mapping[str, Value]
    option: str | None
    preconditions: tuple[Precondition, ...]
    severity: float = 1.0


@dataclass(frozen=True, slots=True)
class GroundTruth:
    """What the scorer needs, computed once per task by the generator.

    Attributes:
        calls: gold call graph nodes.
        edges: gold call graph edges.
        decisions: commit decision points.
        satisfaction: for every option, the constraint ids it satisfies.
        nothing_satisfies: the constraint ids satisfied by committing to nothing.
        best: options that reach the best feasible weighted satisfaction (empty if doing
            nothing is best).
        weights: priority weight of each constraint (see :func:`priority_weights`).
        before_change: what the simulated user judges a proposal on while it still holds
            the value its scheduled change of mind (the task's ``user_update`` event)
            replaces: the constraint ids each option satisfies under the values before the
            change, over the options of ``satisfaction`` and ``withdrawn`` (``None``: the
            task has no change of mind). The metric never reads it.
        best_before_change: the best options of ``before_change`` (``None`` with it). The
            metric reads it only to waive the charge for a proposal rejected because of the
            change of mind its reply announces.
        withdrawn: options the world offers until an event takes them away (a flight that
            sells out), so ``satisfaction`` leaves them out: the constraint ids each
            satisfies, under the final values, while it is offered. The user judges a
            proposal of one on it, as it would have judged the option had it stayed; none is
            in ``best`` (an event takes away only an option the best ones dominate).
        known_options: further ids the user recognises as options though no table of its
            wishes holds them (meetings: the same times at each length the user could ask
            for), so that naming one is a proposal, rejected, whatever the hidden values.
    """

    calls: tuple[GoldCall, ...]
    edges: tuple[GoldEdge, ...]
    decisions: tuple[DecisionPoint, ...]
    satisfaction: Mapping[str, frozenset[str]]
    nothing_satisfies: frozenset[str]
    best: tuple[str, ...]
    weights: Mapping[str, int]
    before_change: Mapping[str, frozenset[str]] | None = None
    best_before_change: tuple[str, ...] | None = None
    withdrawn: Mapping[str, frozenset[str]] = field(default_factory=dict)
    known_options: tuple[str, ...] = ()
    options: tuple[str, ...] = field(init=False, repr=False, compare=False)
    """Every id the user recognises as an option: the keys of every table it judges on (the
    final one, the one before its change of mind, the withdrawn options) and
    ``known_options``, each once. Derived when the truth is built (``replace`` too), since
    every reset's user reads it (a meetings task has ~330)."""

    def __post_init__(self) -> None:
        tables = (self.satisfaction, self.before_change or {}, self.withdrawn)
        ids = dict.fromkeys(o for table in (*tables, self.known_options) for o in table)
        object.__setattr__(self, "options", tuple(ids))

    def score(self, option: str | None) -> int:
        """Weighted satisfaction S(x) of committing to ``option`` (``None``: nothing)."""
        satisfied = (
            self.nothing_satisfies if option is None else self.satisfaction.get(option, frozenset())
        )
        return sum(self.weights[c] for c in satisfied)

    @property
    def best_score(self) -> int:
        return self.score(self.best[0] if self.best else None)


@dataclass(frozen=True, slots=True)
class Request:
    """What the agent is told at the start.

    Attributes:
        text: the user's request in words.
        given: the slot values the text states (so scripted agents need not parse text).
        references: slots the text points to without a value, and where to find them
            (``{"budget": "policy"}`` for "within the company travel policy").
        implied: further values the text states or implies (every day of "between day 8
            and day 10"); the environment records them, like ``given``, as known from the
            request, so an agent using them is not guessing.
    """

    text: str
    given: Mapping[str, Value]
    references: Mapping[str, str] = field(default_factory=dict)
    implied: tuple[Value, ...] = ()


SEED_LIMIT = 1 << 64
"""Seeds are integers in ``[0, SEED_LIMIT)``: what Gymnasium accepts (non-negative) and a
trajectory line can hold (orjson writes integers of at most 64 bits)."""


def check_seed(seed: SupportsIndex) -> int:
    """``seed`` as the plain ``int`` a task and its trajectory carry.

    Any integer type converts (``numpy.int64`` too, through ``operator.index``), so equal
    seeds name one task whatever their type, and the trajectory can be written.

    Raises:
        TypeError: not an integer (a float, a string), or a bool: ``True`` is far more often a
            flag passed by mistake than the seed 1.
        ValueError: outside ``[0, 2**64)``.
    """
    if isinstance(seed, bool):
        raise TypeError("a seed must be an integer, not a bool")
    try:
        value = operator.index(seed)
    except TypeError:
        raise TypeError(f"a seed must be an integer, got {type(seed).__name__}") from None
    if not 0 <= value < SEED_LIMIT:
        raise ValueError(f"a seed must be in [0, 2**64), got {value}")
    return value


BaseT = TypeVar("BaseT")
"""The type of a domain's base records (``TravelBase``, the lookup ``Corpus``...)."""


@dataclass(frozen=True, slots=True)
class Task(Generic[BaseT]):
    """One seeded instance of a domain, over base records of type ``BaseT``.

    A domain's own code names its base type (``Task[TravelBase]``) and is checked against it;
    domain-independent code takes ``Task`` (any base).

    Attributes:
        domain: domain name.
        seed: the seed it was generated from.
        knobs: which properties are on.
        request: what the agent sees.
        slots: every fact the user holds.
        constraints: the constraints on the choice.
        priority: covering edges ``(higher, lower)`` of the constraint partial order.
        priorities_hidden: the order is learnable only by asking the user.
        events: the dynamic schedule, sorted by time.
        base: the domain's initial world records, shared read-only by every episode.
        truth: the scorer's ground truth.
        max_rounds: rounds before the episode is truncated.
        read_only: the domain is read-only (``Domain.read_only``): episodes are judged on
            the ``finish`` answer whatever the knobs. The task carries it so that scoring a
            task needs no domain; it is the domain's constant, not something the generator
            drew, so ``repr`` leaves it out.
    """

    domain: str
    seed: int
    knobs: Knobs
    request: Request
    slots: tuple[Slot, ...]
    constraints: tuple[Constraint, ...]
    priority: tuple[tuple[str, str], ...]
    priorities_hidden: bool
    events: tuple[Event, ...]
    base: BaseT
    truth: GroundTruth
    max_rounds: int = 30
    read_only: bool = field(default=False, repr=False)

    @property
    def id(self) -> str:
        return f"{self.domain}/{self.seed}/{self.knobs.describe()}"

    @property
    def judged_by_answer(self) -> bool:
        """Episodes are judged on the ``finish`` answer, not on what the world commits to
        (statefulness off, or a read-only domain): :meth:`Domain.judges_answer` of its knobs."""
        return not self.knobs.stateful or self.read_only

    def slot(self, name: str) -> Slot:
        for slot in self.slots:
            if slot.name == name:
                return slot
        raise KeyError(name)

    @property
    def must_ask(self) -> tuple[str, ...]:
        """M*: slots the decision needs that only the user knows."""
        return tuple(s.name for s in self.slots if s.kind is SlotKind.MISSING)

    def priority_order(self) -> list[str]:
        """Constraint ids from most to least important (a linear extension of the order)."""
        return sorted(self.truth.weights, key=lambda c: -self.truth.weights[c])


def priority_weights(
    constraints: tuple[str, ...], priority: tuple[tuple[str, str], ...]
) -> dict[str, int]:
    """Weights bottom-up over the poset: ``w_i = 1 + sum of w_j over all j below i``.

    Each constraint outweighs everything below it combined; a chain gets 1, 2, 4, ...

    >>> priority_weights(("a", "b", "c"), (("a", "b"), ("b", "c")))
    {'a': 4, 'b': 2, 'c': 1}
    """
    below: dict[str, set[str]] = {c: set() for c in constraints}
    children: dict[str, list[str]] = {c: [] for c in constraints}
    for high, low in priority:
        children[high].append(low)

    def collect(node: str, seen: set[str]) -> set[str]:
        for child in children[node]:
            if child not in seen:
                seen.add(child)
                collect(child, seen)
        return seen

    for c in constraints:
        below[c] = collect(c, set())
    weights: dict[str, int] = {}
    for c in sorted(constraints, key=lambda c: len(below[c])):
        weights[c] = 1 + sum(weights[j] for j in below[c])
    return {c: weights[c] for c in constraints}


def best_options(
    satisfaction: Mapping[str, frozenset[str]],
    nothing: frozenset[str],
    weights: Mapping[str, int],
) -> tuple[str, ...]:
    """Options reaching the best weighted satisfaction, or ``()`` if nothing beats refusing."""

    def score(satisfied: frozenset[str]) -> int:
        return sum(weights[c] for c in satisfied)

    top = max((score(s) for s in satisfaction.values()), default=0)
    if top <= score(nothing):
        return ()
    return tuple(sorted(o for o, s in satisfaction.items() if score(s) == top))


def final_values(task: Task) -> dict[str, Value]:
    """Slot values after every scheduled change of mind (what a privileged agent knows)."""
    values: dict[str, Value] = {s.name: s.value for s in task.slots}
    for event in task.events:
        if event.kind is EventKind.USER_UPDATE:
            values[event.slot] = event.value
    return values
