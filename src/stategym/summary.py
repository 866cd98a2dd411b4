"""Aggregates of a set of trajectories: what ``stategym run`` reports for a run.

:func:`summarise` is a pure function of the trajectories, so any run directory can be
re-summarised from its ``trajectories.jsonl`` alone. It keeps integer totals and derives the
means from them, which makes the result independent of the order of the trajectories (a
resumed run appends seeds out of order). :func:`summarise_quality` averages the
decision-quality scorecards of the same trajectories (the scores themselves need the task's
ground truth and are computed by :func:`stategym.metrics.score`); it sums with
:func:`math.fsum`, which is exactly rounded, so it too is independent of the order.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from stategym.kernel.trajectory import Trajectory, summarise_rounds
from stategym.metrics.dimensions import DECLARED, LABELS
from stategym.tables import Grid

if TYPE_CHECKING:
    from stategym.metrics.score import Scorecard


@dataclass(frozen=True, slots=True)
class RunSummary:
    """Totals over a set of episodes.

    Attributes:
        episodes: number of trajectories.
        goal_reached: episodes whose outcome reached the goal.
        unfinished: trajectories without an outcome (logged before the episode ended);
            they count as episodes that did not reach the goal.
        truncated: episodes ended by the round limit.
        spent: money paid out of the user's account, summed over episodes.
        lost: money lost (fees, wrong or duplicate commitments), summed over episodes.
        rounds: rounds played, summed.
        asks: rounds spent messaging the user, summed.
        calls: tool calls (including ``finish`` and malformed calls), summed.
        format_errors: format errors, summed.
    """

    episodes: int
    goal_reached: int
    unfinished: int
    truncated: int
    spent: int
    lost: int
    rounds: int
    asks: int
    calls: int
    format_errors: int

    @property
    def goal_rate(self) -> float:
        """Share of episodes that reached the goal (0 for an empty run)."""
        return self.goal_reached / self.episodes if self.episodes else 0.0

    def mean(self, total: int) -> float:
        """``total`` per episode (0 for an empty run)."""
        return total / self.episodes if self.episodes else 0.0

    def to_json(self) -> dict[str, Any]:
        """The ``aggregates`` object of ``summary.json``: totals, then per-episode means."""
        return {
            "episodes": self.episodes,
            "goal_reached": self.goal_reached,
            "goal_rate": self.goal_rate,
            "unfinished": self.unfinished,
            "truncated": self.truncated,
            "money_spent": self.spent,
            "money_lost": self.lost,
            "mean_money_spent": self.mean(self.spent),
            "mean_money_lost": self.mean(self.lost),
            "mean_rounds": self.mean(self.rounds),
            "mean_asks": self.mean(self.asks),
            "mean_tool_calls": self.mean(self.calls),
            "format_errors": self.format_errors,
        }


def summarise(trajectories: Iterable[Trajectory]) -> RunSummary:
    """Aggregate the outcome view of some trajectories.

    Example: two episodes, one reaching the goal after paying 500 and one losing a 50 fee,
    give ``goal_rate == 0.5``, ``spent == 550`` and ``mean(lost) == 25.0``.
    """
    totals = dict.fromkeys(
        ("episodes", "goal_reached", "unfinished", "truncated", "spent", "lost"), 0
    )
    counts = {"rounds": 0, "asks": 0, "calls": 0, "format_errors": 0}
    for trajectory in trajectories:
        totals["episodes"] += 1
        totals["truncated"] += trajectory.truncated
        outcome = trajectory.outcome
        if outcome is None:
            totals["unfinished"] += 1
        else:
            totals["goal_reached"] += outcome.goal_reached
            totals["spent"] += outcome.spent
            totals["lost"] += outcome.lost
        for key, value in summarise_rounds(trajectory.rounds).items():
            counts[key] += value
    return RunSummary(**totals, **counts)


DIMENSION_NAMES: tuple[str, ...] = tuple(str(d) for d in DECLARED)
"""Every declared decision-quality dimension (:data:`stategym.metrics.DECLARED` order)."""
QUALITY_NAMES = ("composite", *DIMENSION_NAMES)
"""The decision-quality means a run reports: R, then each dimension's Q (see docs/metrics.md)."""


@dataclass(frozen=True, slots=True)
class QualitySummary:
    """Decision-quality means over a set of scored episodes.

    Attributes:
        episodes: number of scorecards.
        composite: mean composite reward R, in [-1, 1].
        dimensions: each declared dimension's mean Q_d, in [0, 1], by name (also read as
            an attribute: ``summary.clarification``).
        harmful: episodes with at least one harmful commit.
    """

    episodes: int
    composite: float
    dimensions: Mapping[str, float]
    harmful: int

    def __getattr__(self, name: str) -> float:
        # the dimensions come from their declarations, so no field names them one by one
        try:
            return self.dimensions[name]
        except KeyError:
            raise AttributeError(name) from None

    @property
    def harm_rate(self) -> float:
        """Share of episodes with a harmful commit (0 for an empty run)."""
        return self.harmful / self.episodes if self.episodes else 0.0

    def mean(self, name: str) -> float:
        """R (``"composite"``) or a dimension's mean Q."""
        return self.composite if name == "composite" else self.dimensions[name]

    def to_json(self) -> dict[str, Any]:
        """The ``decision_quality`` object of ``summary.json``."""
        means = {name: self.mean(name) for name in QUALITY_NAMES}
        return {
            "episodes": self.episodes,
            **means,
            "harmful": self.harmful,
            "harm_rate": self.harm_rate,
        }


def summarise_quality(cards: Iterable[Scorecard]) -> QualitySummary:
    """Average the scorecards of some trajectories.

    Example: R of 1.0 and 0.5 give ``composite == 0.75``; a scorecard whose risk harm is
    positive counts once in ``harmful``.
    """
    values: dict[str, list[float]] = {name: [] for name in QUALITY_NAMES}
    harmful = 0
    for card in cards:
        row = card.row()
        for name in QUALITY_NAMES:
            values[name].append(row[name])
        harmful += row["harmful"] > 0
    count = len(values["composite"])
    means = {n: math.fsum(v) / count if count else 0.0 for n, v in values.items()}
    composite = means.pop("composite")
    return QualitySummary(count, composite, means, harmful)


TABLE_COLUMNS = (
    "episodes",
    "goal rate",
    "money spent",
    "money lost",
    "rounds",
    "asks",
    "tool calls",
    "format errors",
)
"""The outcome columns of a results table, in order; money, rounds, asks and tool calls are
means per episode, format errors a total (see :data:`TABLE_CAPTION`)."""
QUALITY_COLUMNS = ("R", *LABELS.values(), "harm rate")
"""The decision-quality columns, shown after the goal rate: means of :data:`QUALITY_NAMES`
and the share of episodes with a harmful commit."""
TABLE_CAPTION = (
    f"R: composite decision quality in [-1, 1]; {', '.join(LABELS.values())}: each "
    "dimension's mean in [0, 1]; money, rounds, asks and tool calls: means per episode; "
    "format errors: total"
)


def table_row(summary: RunSummary) -> list[str]:
    """The cells of :data:`TABLE_COLUMNS` for one summary."""
    return [
        str(summary.episodes),
        f"{summary.goal_rate:.3f}",
        f"{summary.mean(summary.spent):.1f}",
        f"{summary.mean(summary.lost):.1f}",
        f"{summary.mean(summary.rounds):.2f}",
        f"{summary.mean(summary.asks):.2f}",
        f"{summary.mean(summary.calls):.2f}",
        str(summary.format_errors),
    ]


def quality_row(quality: QualitySummary) -> list[str]:
    """The cells of :data:`QUALITY_COLUMNS` for one summary."""
    means = [f"{quality.mean(name):.3f}" for name in QUALITY_NAMES]
    return [*means, f"{quality.harm_rate:.3f}"]


def summary_table(
    rows: Sequence[tuple[Sequence[str], RunSummary, QualitySummary]],
    keys: Sequence[str],
    title: str = "",
) -> Grid:
    """The results table: one row per run, led by its key cells (domain, agent...).

    Columns: episodes and goal rate, then :data:`QUALITY_COLUMNS`, then the rest of
    :data:`TABLE_COLUMNS`. A table without key columns folds under its episodes column.
    """
    headers = (*keys, *TABLE_COLUMNS[:2], *QUALITY_COLUMNS, *TABLE_COLUMNS[2:])
    cells = []
    for labels, summary, quality in rows:
        outcome = table_row(summary)
        cells.append((*labels, *outcome[:2], *quality_row(quality), *outcome[2:]))
    return Grid(title, headers, tuple(cells), keys=len(keys) or 1, caption=TABLE_CAPTION)
