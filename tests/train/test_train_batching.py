"""Padding both ways, and the inverse."""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")

from stategym.train.batching import Sample, collate, minibatches, pad, split  # noqa: E402

torch.set_num_threads(1)

SAMPLES = [
    Sample((5, 6, 7), (False, True, True), (0.0, 0.5, -0.25), (0.0, -1.5, -0.75)),
    Sample((8,), (False,), (0.0,), (0.0,)),
    Sample((9, 10), (False, True), (0.0, 2.0), (0.0, -0.125)),
]


def test_right_padding_by_hand() -> None:
    batch = collate(SAMPLES, pad_id=-1)
    assert batch.ids.tolist() == [[5, 6, 7], [8, -1, -1], [9, 10, -1]]
    assert batch.attention.tolist() == [[True] * 3, [True, False, False], [True, True, False]]
    assert batch.loss_mask.tolist() == [
        [False, True, True],
        [False, False, False],
        [False, True, False],
    ]
    assert batch.advantages.tolist() == [[0.0, 0.5, -0.25], [0.0, 0.0, 0.0], [0.0, 2.0, 0.0]]
    assert batch.positions.tolist() == [[0, 1, 2], [0, 0, 0], [0, 1, 0]]
    assert batch.lengths.tolist() == [3, 1, 2]
    assert batch.ids.dtype == torch.long and batch.advantages.dtype == torch.float32


def test_left_padding_by_hand() -> None:
    batch = collate(SAMPLES, side="left")
    assert batch.ids.tolist() == [[5, 6, 7], [0, 0, 8], [0, 9, 10]]
    assert batch.attention.tolist() == [[True] * 3, [False, False, True], [False, True, True]]
    assert batch.logprobs.tolist() == [[0.0, -1.5, -0.75], [0.0, 0.0, 0.0], [0.0, 0.0, -0.125]]
    # a row's position ids do not depend on the side it is padded on
    assert batch.positions.tolist() == [[0, 1, 2], [0, 0, 0], [0, 0, 1]]
    right = collate(SAMPLES)
    for row in range(3):
        left_real = batch.positions[row][batch.attention[row]]
        assert left_real.tolist() == right.positions[row][right.attention[row]].tolist()


@pytest.mark.parametrize("side", ["right", "left"])
def test_split_inverts_collate(side) -> None:
    assert split(collate(SAMPLES, side=side)) == SAMPLES
    float64 = [Sample((1, 2), (True, True), (0.1, 0.2), (-0.3, -0.7))]
    assert split(collate(float64, side=side, dtype=torch.float64)) == float64


def test_collating_is_deterministic_and_refuses_bad_input() -> None:
    first, second = collate(SAMPLES), collate(SAMPLES)
    assert torch.equal(first.ids, second.ids) and torch.equal(first.advantages, second.advantages)
    with pytest.raises(ValueError, match="one length"):
        Sample((1, 2), (True,), (0.0, 0.0), (0.0, 0.0))
    with pytest.raises(ValueError, match="side"):
        pad([[1]], side="middle")  # type: ignore[arg-type]
    assert pad([], dtype=torch.long).shape == (0, 0)
    # a dtype numpy cannot hold is filled in float64 and converted
    assert pad([[0.5], []], dtype=torch.bfloat16).tolist() == [[0.5], [0.0]]
    assert pad([[0.5], []], dtype=torch.bfloat16).dtype == torch.bfloat16
    assert split(collate([])) == []


def test_minibatches_cover_every_index_once_per_seed() -> None:
    cuts = minibatches(10, 4, seed=3)
    assert [len(c) for c in cuts] == [4, 4, 2]
    assert sorted(i for c in cuts for i in c) == list(range(10))
    assert cuts == minibatches(10, 4, seed=3)
    assert cuts != minibatches(10, 4, seed=4)
    with pytest.raises(ValueError):
        minibatches(3, 0, seed=0)
