"""Monte-Carlo values and the advantage ``r + V(s') - V(s)`` (the ``mc`` credit).

The trainer's loop samples the continuations: at a decision round ``t`` (before a commit,
before the first question) it restores the environment's snapshot of the state ``s_t``
the round was decided in and plays ``K`` continuations with the current policy. Each
continuation's return from ``t`` on (:func:`continuation_return`) is a sample of
``V(s_t)``; :func:`mc_value` turns the ``K`` samples into the estimate. This module is the
pure part: values in, advantages out.

A round whose state was not estimated takes the value its own episode's continuation
gives (a one-sample estimate): the rewards up to the next estimated state plus that
state's value. So a round between two estimated states has advantage 0, and an estimated
round ``t`` is credited with how much better its own continuation did than the average
one: ``A_t = r_t + V(s_{t+1}) - V(s_t)``. The state after the last round is worth 0: the
episode is over and its last reward settled everything (``docs/metrics.md``, "Credit").

Example: one decision at round 1, where the continuations averaged 0.4 and this episode
went on to earn ``0.5 + 0.25``:

>>> mc_advantages([[0.1, 0.5, 0.25]], [[None, 0.4, None]])
((0.0, 0.35, 0.0),)
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from .advantages import PerRound


def continuation_return(rewards: Sequence[float], start: int) -> float:
    """The return of one continuation from round ``start`` on.

    Args:
        rewards: ``(T,)`` the continuation's per-round rewards over the whole episode (a
            restored environment keeps the rounds before the snapshot, so its credit pays
            them too).
        start: the decision round.

    >>> continuation_return([0.25, 0.5, 0.25], 1)
    0.75
    """
    return math.fsum(rewards[start:])


def mc_value(returns: Sequence[float], weights: Sequence[float] | None = None) -> float:
    """``V(s)`` from the returns of continuations sampled from ``s``: their (weighted) mean.

    Args:
        returns: ``(K,)`` the continuations' returns.
        weights: ``(K,)`` optional non-negative weights (exact enumeration: the
            continuations' probabilities); ``None`` for ``K`` samples of equal weight.

    Raises:
        ValueError: no returns, or weights that do not match them or sum to 0.

    >>> mc_value([1.0, 0.0, 0.5, 0.5])
    0.5
    """
    if not returns:
        raise ValueError("a value needs at least one continuation")
    if weights is None:
        return math.fsum(returns) / len(returns)
    if len(weights) != len(returns) or min(weights) < 0 or math.fsum(weights) <= 0:
        raise ValueError("weights must be one non-negative number per return, not all 0")
    return math.fsum(w * r for w, r in zip(weights, returns, strict=True)) / math.fsum(weights)


def fill_values(rewards: Sequence[float], values: Sequence[float | None]) -> tuple[float, ...]:
    """Every state's value of one episode, unestimated ones from its own continuation.

    Args:
        rewards: ``(T,)`` per-round rewards.
        values: ``(T,)`` ``V(s_t)`` where estimated, else ``None``.

    Returns:
        ``(T + 1,)`` ``V(s_0) .. V(s_T)``, with ``V(s_T) = 0``.

    >>> fill_values([0.1, 0.5, 0.25], [None, 0.4, None])
    (0.5, 0.4, 0.25, 0.0)
    """
    if len(values) != len(rewards):
        raise ValueError(f"{len(values)} values for {len(rewards)} rounds")
    out = [0.0] * (len(rewards) + 1)
    for t in range(len(rewards) - 1, -1, -1):
        value = values[t]
        out[t] = rewards[t] + out[t + 1] if value is None else value
    return tuple(out)


def mc_advantages(
    rewards: Sequence[Sequence[float]], values: Sequence[Sequence[float | None]]
) -> PerRound:
    """``A_t = r_t + V(s_{t+1}) - V(s_t)`` for every round of every episode.

    Args:
        rewards: ``G`` sequences of ``(T_i,)`` per-round rewards.
        values: ``G`` sequences of ``(T_i,)`` estimated values or ``None``
            (:func:`fill_values`).

    Returns:
        ``G`` tuples of ``(T_i,)``.
    """
    if len(rewards) != len(values):
        raise ValueError(f"{len(rewards)} episodes of rewards, {len(values)} of values")
    out = []
    for r, v in zip(rewards, values, strict=True):
        filled = fill_values(r, v)
        out.append(tuple(r[t] + filled[t + 1] - filled[t] for t in range(len(r))))
    return tuple(out)


__all__: Sequence[str] = (
    "continuation_return",
    "fill_values",
    "mc_advantages",
    "mc_value",
)
