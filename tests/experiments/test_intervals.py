"""The bootstrap over seeds and tasks, and the rank correlation."""

from __future__ import annotations

import numpy as np
import pytest
from scipy.stats import spearmanr

from stategym.experiments.intervals import (
    interval,
    rank_correlation,
    ratio,
    replicate_weights,
    spearman,
    weighted_means,
)


def test_weights_draw_blocks_then_tasks_within_them() -> None:
    weights = replicate_weights(blocks=3, tasks=4, resamples=500, seed=1)
    assert weights.shape == (500, 3, 4)
    assert (weights.sum(axis=(1, 2)) == 12).all()
    # a block is drawn whole or not at all: its weights sum to a multiple of its size
    per_block = weights.sum(axis=2)
    assert (per_block % 4 == 0).all()
    # some replicates leave a whole seed block out (the seed level is resampled)
    assert (per_block == 0).any()


def test_weights_are_deterministic() -> None:
    first = replicate_weights(2, 5, 50, seed=3)
    assert np.array_equal(first, replicate_weights(2, 5, 50, seed=3))
    assert not np.array_equal(first, replicate_weights(2, 5, 50, seed=4))


def test_weighted_means_of_the_full_data_is_the_mean() -> None:
    values = np.arange(12, dtype=np.float64).reshape(3, 4)
    ones = np.ones((1, 3, 4))
    assert weighted_means(values, ones)[0] == pytest.approx(values.mean())


def test_the_interval_contains_the_mean_and_widens_with_the_spread() -> None:
    rng = np.random.default_rng(0)
    weights = replicate_weights(3, 30, 400)
    narrow = rng.normal(0.5, 0.01, size=(3, 30))
    wide = rng.normal(0.5, 0.3, size=(3, 30))
    spans = []
    for values in (narrow, wide):
        estimate = interval(values.mean(), weighted_means(values, weights))
        assert estimate.low <= estimate.mean <= estimate.high
        spans.append(estimate.high - estimate.low)
    assert spans[0] < spans[1]


def test_spearman_agrees_with_scipy_with_ties() -> None:
    x = np.array([1.0, 1.0, 0.5, 0.2, 1.0, 0.0])
    y = np.array([0.9, 0.4, 0.6, -0.1, 1.0, 0.1])
    assert spearman(x, y) == pytest.approx(spearmanr(x, y).statistic)


def test_spearman_of_a_constant_is_undefined() -> None:
    assert np.isnan(spearman(np.ones(4), np.arange(4.0)))


def test_rank_correlation_resamples_every_column() -> None:
    goal = np.array([[0.0, 0.1, 0.0], [0.5, 0.4, 0.6], [1.0, 0.9, 1.0]])
    same = rank_correlation(goal, goal)
    assert same.estimate.mean == same.estimate.low == same.estimate.high == 1.0
    flipped = rank_correlation(goal, -goal)
    assert flipped.estimate.mean == -1.0 and flipped.agents == 3


def test_a_constant_column_has_a_zero_width_interval_at_its_mean() -> None:
    values = np.full((3, 7), 0.1)  # 0.1 is not exact in binary: sums depend on their order
    weights = replicate_weights(3, 7, 300)
    estimate = interval(values.mean(), weighted_means(values, weights))
    assert estimate.low <= estimate.mean <= estimate.high
    assert estimate.high - estimate.low < 1e-9


def test_ratio_is_a_ratio_of_sums_and_skips_empty_replicates() -> None:
    numerator = np.array([[1.0, 0.0, 0.0], [2.0, 0.0, 0.0]])
    denominator = np.array([[1.0, 0.0, 0.0], [2.0, 1.0, 0.0]])
    weights = replicate_weights(2, 3, 300, seed=2)
    estimate = ratio(numerator, denominator, weights)
    assert estimate.mean == pytest.approx(3.0 / 4.0)  # not the mean of per-task ratios
    assert 0.0 <= estimate.low <= estimate.mean <= estimate.high <= 1.0
    empty = ratio(np.zeros((2, 3)), np.zeros((2, 3)), weights)
    assert np.isnan(empty.mean) and empty.n == 0
