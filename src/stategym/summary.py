"""Outcome aggregates of a set of trajectories: what ``stategym run`` reports for a run.

:func:`summarise` is a pure function of the trajectories, so any run directory can be
re-summarised from its ``trajectories.jsonl`` alone. It keeps integer totals and derives the
means from them, which makes the result independent of the order of the trajectories (a
resumed run appends seeds out of order). Decision-quality scores are not here: they need the
task's ground truth and live in the metrics package.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from rich.table import Table

from stategym.trajectory import Trajectory, summarise_rounds


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
TABLE_CAPTION = "money, rounds, asks and tool calls: means per episode; format errors: total"


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


def summary_table(
    rows: Sequence[tuple[Sequence[str], RunSummary]], keys: Sequence[str], title: str = ""
) -> Table:
    """A rich table: one row per summary, led by its key cells (domain, agent...)."""
    table = Table(title=title or None, caption=TABLE_CAPTION)
    for key in keys:
        table.add_column(key)
    for column in TABLE_COLUMNS:
        table.add_column(column, justify="right")
    for labels, summary in rows:
        table.add_row(*labels, *table_row(summary))
    return table
