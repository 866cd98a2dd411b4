"""Decision-quality metrics: pure functions of (trajectory, task).

Per trajectory: :func:`score` returns a :class:`Scorecard` with clarification, priority,
parallelism and risk (each in [0, 1]), harm, the composite reward R, the outcome and the
per-round :class:`Event` list. Each dimension is also a function of its own
(:func:`clarification`, :func:`priority`, :func:`parallelism`, :func:`risk`,
:func:`composite`). Aggregation over many trajectories (bootstrap intervals, pass^k, tables)
lives in :mod:`stategym.metrics.aggregate`; litmus statistics in
:mod:`stategym.metrics.litmus`. Each dimension is declared once
(:data:`DECLARED`, :mod:`stategym.metrics.declaration`); :func:`credit` turns a scorecard's
events into per-round rewards that sum to R, and :func:`dense_reward` pays them step by step
in an environment.
Every formula: ``docs/metrics.md``.
"""

from __future__ import annotations

from .clarification import Clarification, clarification
from .composite import composite, composite_reward
from .credit import Credit, RoundCredit, credit
from .dense import dense_reward
from .dimensions import DECLARED
from .events import DIMENSIONS, Dimension, Event, Kind
from .outcome import OutcomeScore, outcome_of
from .parallelism import Parallelism, parallelism
from .priority import Priority, priority
from .risk import Risk, risk
from .score import Scorecard, score, score_rounds

__all__ = [
    "DECLARED",
    "DIMENSIONS",
    "Clarification",
    "Credit",
    "Dimension",
    "Event",
    "Kind",
    "OutcomeScore",
    "Parallelism",
    "Priority",
    "Risk",
    "RoundCredit",
    "Scorecard",
    "clarification",
    "composite",
    "composite_reward",
    "credit",
    "dense_reward",
    "outcome_of",
    "parallelism",
    "priority",
    "risk",
    "score",
    "score_rounds",
]
