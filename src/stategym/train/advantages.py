"""Advantage estimators over a group of G episodes of one task (the GRPO family).

Every estimator is a pure function of plain numbers; nothing here needs torch. Shapes in
the docstrings: ``G`` episodes in the group, ``T_i`` rounds in episode ``i`` (one round is
one agent turn, the unit :func:`stategym.metrics.credit.credit` pays). Episode-level
estimators return ``(G,)``; step-level ones return one tuple per episode, ``(T_i,)`` each,
and :func:`per_round` spreads an episode-level advantage over its rounds so that every
estimator can end in the same shape.

How a group's numbers become advantages is :data:`Norm`:

- ``"std"`` (GRPO): ``(x - mean) / (std + eps)``, ``std`` the sample standard deviation
  (Bessel's ``G - 1``, as ``torch.std`` and the TRL and verl implementations compute it);
- ``"none"`` (Dr.GRPO): ``x - mean``, mean-centred only, so no group's scale is inflated;
- ``"rloo"``: ``x_i - mean_{j != i} x_j``, the leave-one-out baseline (equal to
  ``G / (G - 1) * (x_i - mean)``).

A group whose values are all equal, and a group of one, has advantage 0 everywhere.

Example: two successes and two failures under GRPO and Dr.GRPO:

>>> [round(a, 4) for a in outcome_advantages([True, True, False, False])]
[0.866, 0.866, -0.866, -0.866]
>>> outcome_advantages([True, True, False, False], norm="none")
(0.5, 0.5, -0.5, -0.5)
"""

from __future__ import annotations

import math
from collections.abc import Callable, Hashable, Sequence
from typing import Literal

Norm = Literal["std", "none", "rloo"]
"""How a group's values become advantages (see the module docstring)."""
NORMS: tuple[Norm, ...] = ("std", "none", "rloo")
EPS = 1e-6
"""Added to the standard deviation under ``"std"`` (a group of near-equal values)."""
TIE = 1e-9
"""Values of a group closer than this are equal for :func:`group_scale`: a credit's rewards
sum to R only up to float rounding (two episodes of R 1.0 can have returns 1.0 and
1.0000000000000002), and ``1 / (std + EPS)`` of such a group is about ``1 / EPS``."""

PerRound = tuple[tuple[float, ...], ...]
"""One advantage per round of each episode: ``G`` tuples of ``(T_i,)``."""


def normalise_group(values: Sequence[float], norm: Norm = "std") -> tuple[float, ...]:
    """Advantages of one group's values under ``norm``.

    Args:
        values: ``(G,)`` one number per member (a reward, a return).
        norm: ``"std"``, ``"none"`` or ``"rloo"``.

    Returns:
        ``(G,)`` the members' advantages; all 0 for a group of one or of equal values.

    Raises:
        ValueError: an unknown ``norm``.

    >>> normalise_group([1.0, 0.0, 0.0], norm="rloo")
    (1.0, -0.5, -0.5)
    """
    if norm not in NORMS:
        raise ValueError(f"unknown norm {norm!r}; use one of {', '.join(NORMS)}")
    size = len(values)
    if size < 2 or max(values) == min(values):
        # exact zeros: a float mean of equal values can differ from them by rounding
        return (0.0,) * size
    mean = math.fsum(values) / size
    centred = [v - mean for v in values]
    if norm == "none":
        return tuple(centred)
    if norm == "rloo":
        return tuple(c * size / (size - 1) for c in centred)
    std = math.sqrt(math.fsum(c * c for c in centred) / (size - 1))
    return tuple(c / (std + EPS) for c in centred)


def group_scale(values: Sequence[float], norm: Norm = "std") -> float:
    """How many advantage units one reward unit is worth in this group.

    :func:`normalise_group` maps a member's value ``x`` to ``scale * (x - mean)``; a
    difference ``d`` in raw reward (a call's share of its round's return, which is not a
    member of the group) is ``scale * d`` in the group's advantage units. ``scale`` is ``1``
    (``"none"``), ``G / (G - 1)`` (``"rloo"``) or ``1 / (std + eps)`` (``"std"``). A group
    that gives no comparison, of one member or, under ``"std"``, of values equal up to
    float rounding (within :data:`TIE`: no spread to measure in), has scale 0: its
    advantages are 0 (or rounding) and so is any difference in them. Under ``"std"`` the
    scale is not bounded: returns that truly differ by little give a large one, and a call's
    share, which is not a member of the group, can then stand far outside the members'
    advantages (``--norm none`` keeps raw units).

    >>> group_scale([1.0, 0.0, 0.0], norm="rloo")
    1.5
    >>> group_scale([0.5, 0.5], norm="std")
    0.0
    >>> group_scale([1.0000000000000002, 1.0], norm="std")
    0.0
    """
    if norm not in NORMS:
        raise ValueError(f"unknown norm {norm!r}; use one of {', '.join(NORMS)}")
    size = len(values)
    if size < 2:
        return 0.0
    if norm == "none":
        return 1.0
    if norm == "rloo":
        return size / (size - 1)
    if max(values) - min(values) <= TIE:
        return 0.0
    mean = math.fsum(values) / size
    std = math.sqrt(math.fsum((v - mean) ** 2 for v in values) / (size - 1))
    return 1.0 / (std + EPS)


def outcome_advantages(successes: Sequence[bool], norm: Norm = "std") -> tuple[float, ...]:
    """Outcome credit: the binary goal (1 reached, 0 not) normalised within the group.

    Args:
        successes: ``(G,)`` whether each episode reached its goal.
        norm: see :data:`Norm`.

    Returns:
        ``(G,)``.
    """
    return normalise_group([1.0 if s else 0.0 for s in successes], norm)


def composite_advantages(returns: Sequence[float], norm: Norm = "std") -> tuple[float, ...]:
    """Composite credit: each episode's decision-quality R normalised within the group.

    Args:
        returns: ``(G,)`` each episode's composite R (``Credit.composite``).
        norm: see :data:`Norm`.

    Returns:
        ``(G,)``.
    """
    return normalise_group(returns, norm)


def per_round(advantages: Sequence[float], lengths: Sequence[int]) -> PerRound:
    """An episode-level advantage repeated on each of its rounds.

    Args:
        advantages: ``(G,)``.
        lengths: ``(G,)`` the rounds ``T_i`` of each episode.

    Returns:
        ``G`` tuples of ``(T_i,)``.

    >>> per_round([0.5, -0.5], [2, 1])
    ((0.5, 0.5), (-0.5,))
    """
    if len(advantages) != len(lengths):
        raise ValueError(f"{len(advantages)} advantages for {len(lengths)} episodes")
    return tuple((a,) * n for a, n in zip(advantages, lengths, strict=True))


def return_to_go(rewards: Sequence[float], gamma: float = 1.0) -> tuple[float, ...]:
    """``G_t = r_t + gamma * G_{t+1}`` for each round of one episode (``G_T = 0``).

    Args:
        rewards: ``(T,)`` per-round rewards.
        gamma: discount per round.

    Returns:
        ``(T,)``.

    >>> return_to_go([0.25, 0.5, 0.25])
    (1.0, 0.75, 0.25)
    """
    out = [0.0] * len(rewards)
    running = 0.0
    for t in range(len(rewards) - 1, -1, -1):
        running = rewards[t] + gamma * running
        out[t] = running
    return tuple(out)


def dense_advantages(
    rewards: Sequence[Sequence[float]], norm: Norm = "std", gamma: float = 1.0
) -> PerRound:
    """Dense credit: per-round return-to-go against a group baseline at each round index.

    Round ``t`` of episode ``i`` has return ``G_{i,t}``; the baseline at index ``t`` is
    taken over all ``G`` members, a member that ended before ``t`` counting as an absorbing
    zero (its return there is 0), so a long episode's late rounds are compared with the
    group, not only with the members still running. ``norm`` is applied per round index,
    over those ``G`` values; the zeros are used for the baseline only and get no advantage.

    Args:
        rewards: ``G`` sequences of ``(T_i,)`` per-round rewards (``Credit.rewards``).
        norm: see :data:`Norm`.
        gamma: discount per round.

    Returns:
        ``G`` tuples of ``(T_i,)``.

    Example: the second episode ended after one round; at index 1 the baseline is
    ``(0.5 + 0) / 2``:

    >>> dense_advantages([[0.5, 0.5], [0.0]], norm="none")
    ((0.5, 0.25), (-0.5,))
    """
    returns = [return_to_go(r, gamma) for r in rewards]
    out: list[list[float]] = [[] for _ in returns]
    for t, column in enumerate(_columns(returns)):
        for i, advantage in enumerate(normalise_group(column, norm)):
            if t < len(returns[i]):
                out[i].append(advantage)
    return tuple(tuple(a) for a in out)


def dense_scales(
    rewards: Sequence[Sequence[float]], norm: Norm = "std", gamma: float = 1.0
) -> PerRound:
    """The :func:`group_scale` of each round's group under :func:`dense_advantages`.

    A round's calls split its return-to-go into shares (``RoundCredit.calls``); scaled by
    this, a share is in the units of the round's advantage (see
    :func:`stategym.train.masks.token_advantages`).

    Args:
        rewards: ``G`` sequences of ``(T_i,)`` per-round rewards.
        norm: see :data:`Norm`.
        gamma: discount per round.

    Returns:
        ``G`` tuples of ``(T_i,)``: round ``t``'s is the scale of round index ``t``'s group.

    >>> dense_scales([[0.5, 0.5], [0.0]], norm="none")
    ((1.0, 1.0), (1.0,))
    """
    returns = [return_to_go(r, gamma) for r in rewards]
    scales = [group_scale(column, norm) for column in _columns(returns)]
    return tuple(tuple(scales[: len(r)]) for r in returns)


def _columns(returns: Sequence[Sequence[float]]) -> list[list[float]]:
    """The group's returns at each round index, an ended episode counting as 0 there."""
    horizon = max((len(r) for r in returns), default=0)
    return [[r[t] if t < len(r) else 0.0 for r in returns] for t in range(horizon)]


def gigpo_advantages(
    returns: Sequence[float],
    rewards: Sequence[Sequence[float]],
    keys: Sequence[Sequence[Hashable]],
    *,
    weight: float = 1.0,
    norm: Norm = "std",
    gamma: float = 1.0,
    coarse: Callable[[Hashable], Hashable] | None = None,
) -> PerRound:
    """GiGPO: an episode-level group advantage plus step-level groups of equal states.

    ``A_{i,t} = A^E_i + weight * A^S_{i,t}``. ``A^E`` normalises the episodes' returns
    within the group; ``A^S`` groups every round ``(i, t)`` of the group by the key of the
    state it was decided in (``keys[i][t]``: ``Env.state_key()`` before round ``t``, or
    ``coarse`` of it) and normalises the rounds' returns-to-go within each step group. A
    step group of one round (a state no other member visited) has no comparison, so its
    ``A^S`` is 0 and the round keeps the episode-level advantage only.

    ``Env.state_key()`` counts the rounds played, so exact keys group rounds at the same
    index only; a ``coarse`` key (for instance the world digest alone) also groups equal
    states reached at different rounds, or within one episode.

    Args:
        returns: ``(G,)`` each episode's return (its R, or its success as 0/1).
        rewards: ``G`` sequences of ``(T_i,)`` per-round rewards.
        keys: ``G`` sequences of ``(T_i,)`` state keys.
        weight: the step-level term's weight.
        norm: see :data:`Norm`, for both levels.
        gamma: discount of the step-level returns-to-go.
        coarse: maps a key to a coarser one (``None``: keys as given).

    Returns:
        ``G`` tuples of ``(T_i,)``.
    """
    if len(returns) != len(rewards):
        raise ValueError("returns, rewards and keys must cover the same episodes")
    _check_keys(rewards, keys)
    episode = normalise_group(returns, norm)
    to_go = [return_to_go(r, gamma) for r in rewards]
    step = [[0.0] * len(r) for r in rewards]
    for members in _step_groups(keys, coarse):
        advantages = normalise_group([to_go[i][t] for i, t in members], norm)
        for (i, t), advantage in zip(members, advantages, strict=True):
            step[i][t] = advantage
    return tuple(tuple(episode[i] + weight * s for s in row) for i, row in enumerate(step))


def gigpo_scales(
    rewards: Sequence[Sequence[float]],
    keys: Sequence[Sequence[Hashable]],
    *,
    weight: float = 1.0,
    norm: Norm = "std",
    gamma: float = 1.0,
    coarse: Callable[[Hashable], Hashable] | None = None,
) -> PerRound:
    """``weight`` times the :func:`group_scale` of each round's step group under
    :func:`gigpo_advantages` (the episode-level term does not change inside a round).

    A round alone in its step group has scale 0: nothing compares its calls. Arguments as
    :func:`gigpo_advantages`.

    Returns:
        ``G`` tuples of ``(T_i,)``.
    """
    _check_keys(rewards, keys)
    to_go = [return_to_go(r, gamma) for r in rewards]
    scales = [[0.0] * len(r) for r in rewards]
    for members in _step_groups(keys, coarse):
        scale = weight * group_scale([to_go[i][t] for i, t in members], norm)
        for i, t in members:
            scales[i][t] = scale
    return tuple(tuple(row) for row in scales)


def _check_keys(rewards: Sequence[Sequence[float]], keys: Sequence[Sequence[Hashable]]) -> None:
    """One state key per round of each episode."""
    if len(rewards) != len(keys):
        raise ValueError("returns, rewards and keys must cover the same episodes")
    for r, k in zip(rewards, keys, strict=True):
        if len(r) != len(k):
            raise ValueError(f"{len(r)} rewards for {len(k)} state keys")


def _step_groups(
    keys: Sequence[Sequence[Hashable]], coarse: Callable[[Hashable], Hashable] | None
) -> list[list[tuple[int, int]]]:
    """GiGPO's step groups: the rounds ``(i, t)`` decided in states of equal key."""
    groups: dict[Hashable, list[tuple[int, int]]] = {}
    for i, row in enumerate(keys):
        for t, key in enumerate(row):
            groups.setdefault(key if coarse is None else coarse(key), []).append((i, t))
    return list(groups.values())


__all__: Sequence[str] = (
    "EPS",
    "NORMS",
    "TIE",
    "Norm",
    "PerRound",
    "composite_advantages",
    "dense_advantages",
    "dense_scales",
    "gigpo_advantages",
    "gigpo_scales",
    "group_scale",
    "normalise_group",
    "outcome_advantages",
    "per_round",
    "return_to_go",
)
