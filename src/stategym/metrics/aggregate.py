"""Aggregates over many scorecards: means with bootstrap intervals, pass^k, per-domain rows.

Kept apart from the per-trajectory scores on purpose: a scorecard never depends on which
other trajectories it is averaged with. Intervals are percentile bootstraps of the mean over
tasks with a seeded generator, so the same scorecards and seed give the same table, bit for
bit, in whatever order the scorecards come: tasks are resampled in the order of their
``(seed, task_id)`` and a task's samples summed exactly (:func:`math.fsum`), so a log
written in the order episodes finished (an LLM run), or a resumed one, or two runs read in
either order, estimate the same numbers.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from math import comb, fsum

import numpy as np

from .dimensions import DECLARED
from .score import Scorecard

PASS_KS: tuple[int, ...] = (1, 2, 4, 8)
"""The k of pass^k that tables report (when every task has at least k samples)."""
COLUMNS: tuple[str, ...] = (
    "success",
    "composite",
    *map(str, DECLARED),
    "harmful",
    "lost",
    "rounds",
)
"""The scorecard numbers a row estimates (see :meth:`Scorecard.row`)."""


@dataclass(frozen=True, slots=True)
class Estimate:
    """A mean and its bootstrap interval.

    Attributes:
        mean: the sample mean.
        low: lower end of the interval.
        high: upper end of the interval.
        n: sample size.
    """

    mean: float
    low: float
    high: float
    n: int


def bootstrap(
    values: Sequence[float], *, level: float = 0.95, resamples: int = 1000, seed: int = 0
) -> Estimate:
    """The mean of ``values`` with a percentile-bootstrap interval at ``level``.

    Example:
        >>> e = bootstrap([1.0, 1.0, 0.0, 1.0], resamples=200, seed=0)
        >>> e.mean, 0.0 <= e.low <= e.mean <= e.high <= 1.0
        (0.75, True)
    """
    data = np.asarray(values, dtype=np.float64)
    if data.size == 0:
        return Estimate(float("nan"), float("nan"), float("nan"), 0)
    mean = float(data.mean())
    if data.size == 1 or resamples <= 0:
        return Estimate(mean, mean, mean, int(data.size))
    rng = np.random.default_rng(seed)
    means = data[rng.integers(0, data.size, size=(resamples, data.size))].mean(axis=1)
    tail = (1.0 - level) / 2.0
    low, high = np.quantile(means, [tail, 1.0 - tail])
    return Estimate(mean, float(low), float(high), int(data.size))


def pass_hat_k(n: int, c: int, k: int) -> float:
    """Unbiased estimate of pass^k (all of k fresh attempts succeed) from c successes in n.

    ``C(c, k) / C(n, k)``, the tau-bench estimator.

    >>> pass_hat_k(n=4, c=3, k=2)
    0.5
    >>> pass_hat_k(n=8, c=8, k=8)
    1.0
    """
    if not 0 < k <= n:
        raise ValueError(f"pass^k needs 0 < k <= n, got k={k}, n={n}")
    return comb(c, k) / comb(n, k)


@dataclass(frozen=True, slots=True)
class Row:
    """One (domain, agent) line of a scorecard table.

    Attributes:
        domain: domain name.
        agent: agent name.
        episodes: trajectories.
        tasks: distinct tasks (domain, seed, knobs).
        columns: an estimate for each of :data:`COLUMNS`.
        pass_k: pass^k estimates, for every k in :data:`PASS_KS` that every task allows.
    """

    domain: str
    agent: str
    episodes: int
    tasks: int
    columns: dict[str, Estimate]
    pass_k: dict[int, Estimate]


def successes_by_task(cards: Iterable[Scorecard]) -> dict[str, tuple[int, int]]:
    """``task_id -> (samples, successes)``."""
    counts: dict[str, tuple[int, int]] = {}
    for card in cards:
        n, c = counts.get(card.task_id, (0, 0))
        counts[card.task_id] = (n + 1, c + int(card.outcome.goal_reached))
    return counts


def row(cards: Sequence[Scorecard], *, resamples: int = 1000, seed: int = 0) -> Row:
    """Estimates over the scorecards of one (domain, agent).

    Samples of one task are not independent, so the bootstrap resamples tasks: each column
    is first averaged over a task's samples (with one sample per task, nothing changes).
    """
    ordered = sorted(cards, key=lambda card: (card.seed, card.task_id))  # the tasks' order
    by_task: dict[str, list[dict[str, float]]] = {}
    for card in ordered:
        by_task.setdefault(card.task_id, []).append(card.row())
    means = [
        {name: fsum(r[name] for r in samples) / len(samples) for name in COLUMNS}
        for samples in by_task.values()
    ]
    columns = {
        name: bootstrap([m[name] for m in means], resamples=resamples, seed=seed)
        for name in COLUMNS
    }
    counts = successes_by_task(ordered)
    fewest = min((n for n, _ in counts.values()), default=0)
    pass_k = {
        k: bootstrap(
            [pass_hat_k(n, c, k) for n, c in counts.values()], resamples=resamples, seed=seed
        )
        for k in PASS_KS
        if k <= fewest
    }
    first = cards[0] if cards else None
    return Row(
        first.domain if first else "",
        first.agent if first else "",
        len(cards),
        len(counts),
        columns,
        pass_k,
    )


def table(cards: Iterable[Scorecard], *, resamples: int = 1000, seed: int = 0) -> list[Row]:
    """One row per (domain, agent), domains and agents in order of first appearance."""
    groups: dict[tuple[str, str], list[Scorecard]] = {}
    for card in cards:
        groups.setdefault((card.domain, card.agent), []).append(card)
    domains = {domain: i for i, domain in reversed(list(enumerate(d for d, _ in groups)))}
    ordered = sorted(groups, key=lambda key: domains[key[0]])
    return [row(groups[key], resamples=resamples, seed=seed) for key in ordered]
