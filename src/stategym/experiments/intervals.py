"""Bootstrap intervals over seeds AND tasks: resample seed blocks, then tasks within each.

A seed block is an independent set of tasks (E0: task seeds ``s*N .. s*N+N-1``). One
bootstrap replicate draws as many blocks as there are, with replacement, and within each
drawn block as many tasks as it holds, with replacement; a replicate is stored as a weight
per (block, task): how often it was drawn. Every agent is evaluated on the same tasks, so
all agents share the replicates (a paired bootstrap): that is what lets a rank correlation
across agents be resampled. Intervals are percentile intervals at 95%; the generator is
seeded, so the same numbers give the same intervals, bit for bit.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray
from scipy.stats import rankdata

from stategym.metrics.aggregate import Estimate

LEVEL = 0.95
ROUNDING = 1e-9
"""How far apart two sums of the same numbers may be from summation order alone."""


def seed_block(block: int, size: int) -> range:
    """The task seeds of seed block ``block`` of ``size`` tasks: ``block*size ..
    block*size + size - 1``. Every experiment's held-out blocks are cut here, so the command
    that checks the largest task seed a ``--seeds`` value derives and the run that plays it
    cannot disagree.

    >>> seed_block(2, 5)
    range(10, 15)
    """
    return range(block * size, (block + 1) * size)


def per_success(lucky: NDArray, success: NDArray) -> NDArray:
    """The lucky-success rate from the means (or sums) of the per-task ``lucky`` and
    ``success`` flags, element by element: lucky successes / successes, 0 where there is no
    success, as :func:`stategym.metrics.litmus.litmus` and the trainer's ``lucky_rate``
    define it.

    >>> per_success(np.array([0.25, 0.0]), np.array([0.5, 0.0])).tolist()
    [0.5, 0.0]
    """
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(success > 0, lucky / np.where(success > 0, success, 1.0), 0.0)


def replicate_weights(blocks: int, tasks: int, resamples: int, seed: int = 0) -> NDArray:
    """Weights of shape ``(resamples, blocks, tasks)``; each replicate's weights sum to
    ``blocks * tasks``.

    >>> w = replicate_weights(3, 5, 4)
    >>> w.shape, bool((w.sum(axis=(1, 2)) == 15).all())
    ((4, 3, 5), True)
    """
    rng = np.random.default_rng(seed)
    picked = rng.integers(0, blocks, size=(resamples, blocks))
    within = rng.integers(0, tasks, size=(resamples, blocks, tasks))
    flat = (picked[:, :, None] * tasks + within).reshape(resamples, -1)
    weights = np.stack([np.bincount(row, minlength=blocks * tasks) for row in flat])
    return weights.reshape(resamples, blocks, tasks).astype(np.float64)


def interval(point: float, replicates: NDArray) -> Estimate:
    """The point estimate with the percentile interval of its finite replicates; the
    estimate's ``n`` is the number of replicates (not the sample size, which is
    ``raw.json``'s)."""
    finite = replicates[np.isfinite(replicates)]
    if finite.size == 0:
        return Estimate(float(point), float(point), float(point), 0)
    tail = (1.0 - LEVEL) / 2.0
    low, high = (float(q) for q in np.quantile(finite, [tail, 1.0 - tail]))
    # A replicate sums the same numbers in another order, so a constant column can land a
    # rounding error off its mean; snap such ends to the mean instead of excluding it.
    if abs(low - point) <= ROUNDING:
        low = min(low, float(point))
    if abs(high - point) <= ROUNDING:
        high = max(high, float(point))
    return Estimate(float(point), low, high, int(replicates.size))


def weighted_means(values: NDArray, weights: NDArray) -> NDArray:
    """Means of ``values`` ``(..., blocks, tasks)`` under each replicate's weights:
    ``(..., resamples)``."""
    return np.einsum("...bt,rbt->...r", values, weights) / weights[0].sum()


def ratio(numerator: NDArray, denominator: NDArray, weights: NDArray) -> Estimate:
    """A ratio of sums (``sum(num) / sum(den)``, both ``(blocks, tasks)``) and its interval;
    a replicate whose denominator is 0 is undefined and left out of the percentiles.

    >>> w = replicate_weights(2, 2, 50)
    >>> ratio(np.array([[1.0, 0.0], [1.0, 1.0]]), np.ones((2, 2)), w).mean
    0.75
    """
    top = np.einsum("bt,rbt->r", numerator, weights)
    bottom = np.einsum("bt,rbt->r", denominator, weights)
    with np.errstate(invalid="ignore", divide="ignore"):
        replicates = np.where(bottom > 0, top / np.where(bottom > 0, bottom, 1.0), np.nan)
    total = float(denominator.sum())
    point = float(numerator.sum()) / total if total > 0 else float("nan")
    return interval(point, replicates)


def spearman(x: NDArray, y: NDArray) -> float:
    """Spearman's rank correlation (average ranks for ties); NaN when either is constant.

    >>> spearman(np.array([1.0, 2.0, 3.0]), np.array([0.1, 0.5, 0.2]))
    0.5
    """
    rx, ry = rankdata(x), rankdata(y)
    if rx.std() == 0 or ry.std() == 0:
        return float("nan")
    return float(np.corrcoef(rx, ry)[0, 1])


@dataclass(frozen=True, slots=True)
class Correlation:
    """A rank correlation across agents and its bootstrap interval.

    Attributes:
        estimate: Spearman's rho on the full data and its interval (``n``: replicates in
            which it was defined).
        agents: how many agents were ranked.
    """

    estimate: Estimate
    agents: int


def rank_correlation(goal: NDArray, quality: NDArray) -> Correlation:
    """Spearman's rho across agents, ``goal`` and ``quality`` shaped ``(agents,
    1 + resamples)`` (column 0: the full data; the rest: the replicates)."""
    rhos = np.array([spearman(goal[:, r], quality[:, r]) for r in range(1, goal.shape[1])])
    return Correlation(interval(spearman(goal[:, 0], quality[:, 0]), rhos), goal.shape[0])
