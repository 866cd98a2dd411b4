"""Beyond one machine: the same episode specs as Ray tasks, merged back in spec order.

:func:`play_on_ray` is :func:`~stategym.rollout.workers.play_in_processes` on a Ray
cluster: the specs are cut into the same chunks, each chunk is one Ray task that plays it
with :func:`~stategym.rollout.workers.play_chunk`, and the parent yields every
``(spec, trajectory)`` in spec order, so a Ray run writes the same bytes as a run in one
process. It joins the cluster the caller already joined (``ray.init`` called before), or
``address`` (``None``: Ray's default, the cluster in ``RAY_ADDRESS`` or a new local one).
Every node must have the same stategym installed: a task names the functions it runs by
module, it does not ship them.

As with worker processes, only scripted specs play here (LLM agents play in the parent:
see :mod:`stategym.rollout.workers`). The trainer's rollouts can take the same path: call
:func:`play_on_ray` with the specs of a batch.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator, Sequence
from typing import Any

from stategym.kernel.errors import UsageError
from stategym.kernel.understanding import ReaderSource
from stategym.rollout.agents import AgentSource
from stategym.rollout.play import TaskOf, spec_task
from stategym.rollout.spec import EpisodeSpec
from stategym.rollout.workers import (
    CHUNK,
    WINDOW,
    Scored,
    Scorer,
    chunks,
    hand_over,
    play_chunk,
)


def connect(address: str | None = None) -> Any:
    """The ``ray`` module, joined to a cluster (the one already joined, else ``address``).

    Raises:
        UsageError: Ray is not installed.
    """
    try:
        import ray
    except ImportError:
        raise UsageError("--ray needs Ray: pip install 'stategym[ray]'") from None
    if not ray.is_initialized():
        ray.init(address=address, include_dashboard=False, logging_level=logging.WARNING)
    return ray


def play_on_ray(
    specs: Sequence[EpisodeSpec],
    agents: AgentSource,
    *,
    address: str | None = None,
    task_of: TaskOf = spec_task,
    scorer: Scorer | None = None,
    reader: ReaderSource | None = None,
) -> Iterator[Scored]:
    """Play scripted specs as Ray tasks (a chunk each), yielding them in spec order, each
    with ``scorer``'s result (computed by the task that played it; ``None`` without one).

    ``agents`` and ``task_of`` are put in Ray's object store once and shared by every task
    (an :class:`~stategym.rollout.Agents` travels as its recipe).

    Raises:
        UsageError: Ray is not installed.
        Whatever an episode raised, after every episode before it.
    """
    ray = connect(address)
    play = ray.remote(play_chunk)
    shared_agents, shared_task_of = ray.put(agents), ray.put(task_of)
    window = max(1, int(ray.cluster_resources().get("CPU", 1))) * WINDOW
    parts = chunks(specs, CHUNK)
    refs: dict[int, Any] = {}
    submitted = 0
    try:
        for index, part in enumerate(parts):
            while submitted < len(parts) and submitted < index + window:
                refs[submitted] = play.remote(
                    parts[submitted], shared_agents, shared_task_of, scorer=scorer, reader=reader
                )
                submitted += 1
            yield from hand_over(part, ray.get(refs.pop(index)))
    finally:
        for ref in refs.values():  # stopped early: the tasks not handed over are not needed
            ray.cancel(ref, force=True)
