"""Integer draws that give exactly what :class:`random.Random` gives, for generators' hot loops.

``Random.randint`` and ``Random.randrange`` check and convert their arguments before drawing;
in a generator that draws a few hundred integers per task the checks cost more than the
draws. The functions here draw the same bits in the same order — ``randrange`` reduces to
``start + step * _randbelow(n)``, and ``Random._randbelow`` draws ``n.bit_length()`` bits and
rejects values ``>= n`` — so a task is bit-identical whichever is called
(``tests/domains/test_draws.py`` checks it against the standard library). They take only
plain ``random.Random`` objects and already-valid integer bounds.
"""

from __future__ import annotations

import random


def below(rng: random.Random, n: int) -> int:
    """``rng._randbelow(n)``: a uniform integer in ``[0, n)``.

    Raises:
        ValueError: ``n < 1`` (an empty range, as the standard library raises).
    """
    if n < 1:
        raise ValueError(f"empty range for a draw below {n}")
    k = n.bit_length()
    r = rng.getrandbits(k)
    while r >= n:
        r = rng.getrandbits(k)
    return r


def randint(rng: random.Random, low: int, high: int) -> int:
    """``rng.randint(low, high)`` (``low <= high``)."""
    return low + below(rng, high - low + 1)


def randrange(rng: random.Random, start: int, stop: int, step: int) -> int:
    """``rng.randrange(start, stop, step)`` for ``step >= 1`` and a non-empty range."""
    return start + step * below(rng, (stop - start + step - 1) // step)
