"""The declared decision-quality dimensions, in the order every table lists them.

Each dimension module declares itself once (its ``DECLARATION``, a
:class:`~stategym.metrics.declaration.DimensionSpec`); this module lists them, and the
scorecard, the aggregate columns, the report headers, the topology report and the credit
module read them from here rather than naming dimensions themselves.
"""

from __future__ import annotations

from collections.abc import Mapping

from stategym.kernel.task import Task

from .clarification import DECLARATION as CLARIFICATION
from .declaration import DimensionSpec, by_dimension
from .events import Dimension
from .gold import Gold
from .parallelism import DECLARATION as PARALLELISM
from .priority import DECLARATION as PRIORITY
from .risk import DECLARATION as RISK

DECLARED: Mapping[Dimension, DimensionSpec] = by_dimension(
    (CLARIFICATION, PRIORITY, PARALLELISM, RISK)
)
"""Every dimension's declaration, in :class:`Dimension` order."""

LABELS: Mapping[Dimension, str] = {d: spec.label for d, spec in DECLARED.items()}
"""Short column headers ("clar", "prio"...), in table order."""


def task_dimensions(task: Task, gold: Gold) -> tuple[Dimension, ...]:
    """The dimensions the task itself makes applicable (an agent's own actions can add
    clarification and risk); their number sets every event's scale ``1 / n``."""
    return tuple(d for d, spec in DECLARED.items() if spec.applies(task, gold))
