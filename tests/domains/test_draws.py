"""The generators' fast integer draws give exactly what the standard library gives."""

from __future__ import annotations

import random
from collections.abc import Callable

import pytest

from stategym.kernel.draws import below, randint, randrange


def test_draws_match_the_standard_library_bit_for_bit() -> None:
    ours, theirs = random.Random("draws"), random.Random("draws")
    for n in (1, 2, 3, 7, 8, 1000, 2**40 + 3):
        for _ in range(50):
            assert below(ours, n) == theirs.randrange(n)
    for low, high in ((0, 0), (1, 3), (-5, 5), (1000, 9999)):
        for _ in range(50):
            assert randint(ours, low, high) == theirs.randint(low, high)
    for start, stop, step in ((480, 1051, 30), (50, 801, 50), (0, 1, 7), (3, 100, 1)):
        for _ in range(50):
            assert randrange(ours, start, stop, step) == theirs.randrange(start, stop, step)
    # the two generators are still in the same state: no draw took more or fewer bits
    assert ours.random() == theirs.random()


@pytest.mark.parametrize(
    "draw",
    [
        lambda rng: below(rng, 0),
        lambda rng: randint(rng, 3, 2),
        lambda rng: randrange(rng, 10, 10, 5),
    ],
)
def test_an_empty_range_raises_as_the_standard_library_does(
    draw: Callable[[random.Random], int],
) -> None:
    with pytest.raises(ValueError):
        draw(random.Random(0))
