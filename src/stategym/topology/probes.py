"""Counterfactual probe pairs for the protocol: tasks whose flipped twin changes the right choice.

The flip itself (the user's hidden priority order reversed, the ground truth recomputed) is
:func:`stategym.kernel.counterfactual.flip_priorities`: it lives in the kernel because a
trajectory's ``run.probe`` names the task it played, and replay rebuilds that task.
"""

from __future__ import annotations

from collections.abc import Iterator

from stategym.kernel.counterfactual import FLIP, PRIORITIES, flip_priorities
from stategym.kernel.domain import Domain
from stategym.kernel.knobs import Knobs
from stategym.kernel.task import Task

__all__ = ["FLIP", "PRIORITIES", "flip_priorities", "probes"]


def probes(
    domain: Domain, knobs: Knobs, seeds: Iterator[int], count: int, tries: int = 40
) -> list[tuple[Task, Task]]:
    """Up to ``count`` (original, flipped) pairs from the seeds, looking at most ``tries``
    seeds per pair found."""
    pairs: list[tuple[Task, Task]] = []
    misses = 0
    for seed in seeds:
        if len(pairs) >= count or misses >= tries * (len(pairs) + 1):
            break
        task = domain.generate(seed, knobs)
        flipped = flip_priorities(task, domain)
        if flipped is None:
            misses += 1
            continue
        pairs.append((task, flipped))
    return pairs
