"""What declaring a decision-quality dimension takes: one :class:`DimensionSpec`.

A dimension is declared once, in its own module, by a :class:`DimensionSpec` that names it,
gives its column label, says when a task makes it applicable, starts its scorer and computes
its quality from event counts. Everything else derives from the declarations listed in
:mod:`stategym.metrics.dimensions`: the scorecard's mapping of dimension scores, the events,
R, the gold tables' applicable dimensions, the aggregate columns, the report headers, the
topology report and the credit module's running composite. Adding a dimension is a member of
:class:`~stategym.metrics.events.Dimension` (its name), one declaration and its scorer.

A scorer reads an episode one round at a time, so the dense reward and offline scoring are
the same code: :meth:`DimensionScorer.add` returns the events a round caused (never revised
later), :meth:`DimensionScorer.close` the dimension's score and all its events in the order
the scorecard lists them.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Protocol

from stategym.kernel.task import Task
from stategym.kernel.trajectory import Outcome

from .events import Dimension, Event, Kind
from .gold import Gold
from .trace import CallView, SayView, Trace


class DimensionScore(Protocol):
    """A dimension's counts for one trajectory (``Clarification``, ``Risk``...)."""

    @property
    def quality(self) -> float:
        """Q_d in [0, 1]."""
        ...

    @property
    def applicable(self) -> bool:
        """R averages over this dimension for this trajectory."""
        ...


class DimensionScorer(Protocol):
    """One dimension's running score over the rounds of one episode."""

    def add(self, tr: Trace, calls: Sequence[CallView], say: SayView | None) -> list[Event]:
        """The events the round just added to ``tr`` caused (its calls, or its message)."""
        ...

    def close(self, tr: Trace, outcome: Outcome | None) -> tuple[DimensionScore, list[Event]]:
        """The dimension's score and every event, terminal ones included once ``tr.done``."""
        ...


@dataclass(slots=True)
class EventCounts:
    """Running counts of paid events, what a running quality is computed from.

    Attributes:
        count: events paid so far, by kind.
        total: the sum of their ``value``, by kind (in the order they were paid).
        calls: tool calls played so far (the accepted ``finish`` not counted).
        done: the episode is over (every terminal event is in).
    """

    count: dict[Kind, int] = field(default_factory=dict)
    total: dict[Kind, float] = field(default_factory=dict)
    calls: int = 0
    done: bool = False

    def add(self, event: Event) -> None:
        self.count[event.kind] = self.count.get(event.kind, 0) + 1
        self.total[event.kind] = self.total.get(event.kind, 0.0) + event.value

    def n(self, kind: Kind) -> int:
        return self.count.get(kind, 0)


StartScorer = Callable[[Task, Gold, float], DimensionScorer]
"""``(task, gold, scale) -> scorer``; ``scale`` multiplies every event's reward."""
Running = Callable[[EventCounts, Gold], tuple[float, bool]]
"""``(counts, gold) -> (Q_d, applicable)`` from the events paid so far; once every event of
the episode is in (``counts.done``), exactly the scorecard's Q_d and applicability."""


@dataclass(frozen=True, slots=True)
class DimensionSpec:
    """The one declaration of a dimension.

    Attributes:
        dimension: its name (the key of the scorecard's mapping and of its table column).
        label: the short column header tables print ("clar").
        applies: the task alone makes it applicable (an agent's actions may add more, as
            its score's ``applicable`` says); the gold tables' dimensions, which set the
            events' scale ``1 / #dimensions``.
        start: starts its scorer for one episode.
        running: its quality and applicability from the event counts so far (the credit
            module's running composite; see :mod:`stategym.metrics.credit`).

    Every dimension aggregates the same way over episodes, which is why that is not a field:
    tables average Q_d per task, then over tasks with a bootstrap interval
    (:mod:`stategym.metrics.aggregate`), and R combines the applicable ones
    (:mod:`stategym.metrics.composite`).
    """

    dimension: Dimension
    label: str
    applies: Callable[[Task, Gold], bool]
    start: StartScorer
    running: Running


def by_dimension(specs: Sequence[DimensionSpec]) -> Mapping[Dimension, DimensionSpec]:
    """The declarations keyed by name, refusing a dimension declared twice or not at all."""
    found = {spec.dimension: spec for spec in specs}
    if len(found) != len(specs) or set(found) != set(Dimension):
        raise RuntimeError(f"dimensions declared {[s.dimension for s in specs]}: want one each")
    return {d: found[d] for d in Dimension}
