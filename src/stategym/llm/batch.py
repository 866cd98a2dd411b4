"""Many LLM episodes of one agent at once, written as they finish, resumable.

:func:`run_many` is the rollout engine (:mod:`stategym.rollout`) for a ready agent factory,
the form scripts and notebooks hold: it plays every ``(seed, sample)`` with at most
``concurrency`` episodes in flight, appends each finished trajectory to ``out`` at once (an
interruption loses only the episodes in flight) and, run again with the same ``out``, plays
only what is missing (the engine's resume rule). Commands use :func:`stategym.rollout.stream`
with agent specs instead.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from stategym.kernel.domain import Domain
from stategym.kernel.knobs import Knobs, KnobsGiven, as_knobs
from stategym.kernel.trajectory import Trajectory
from stategym.llm.agent import ChatAgent
from stategym.rollout import FixedAgent, episode_specs, load_log, pending, play_concurrently
from stategym.rollout import requested as in_spec_order
from stategym.rollout.log import Appender, put_in_order
from stategym.rollout.spec import EpisodeSpec

ChatAgentFactory = Callable[..., ChatAgent]
"""``(task, sample=0) -> ChatAgent``; what :func:`stategym.llm.agent_factory` returns."""


@dataclass(slots=True)
class Clock:
    """Where the run's time went (summed over episodes; the model's share overlaps)."""

    env_seconds: float = 0.0
    agent_seconds: float = 0.0

    def add(self, trajectory: Trajectory) -> None:
        """Count one finished episode's ``meta["timing"]``."""
        timing = trajectory.meta.get("timing") or {}
        self.env_seconds += float(timing.get("env_s", 0.0))
        self.agent_seconds += float(timing.get("agent_s", 0.0))


async def run_many(
    domain: str | Domain,
    make_agent: ChatAgentFactory,
    seeds: Iterable[int],
    *,
    knobs: KnobsGiven = None,
    samples: int = 1,
    concurrency: int = 8,
    out: Path | None = None,
    on_done: Callable[[Trajectory], None] | None = None,
    clock: Clock | None = None,
) -> list[Trajectory]:
    """Play ``samples`` episodes of every seed, ``concurrency`` at a time.

    Args:
        domain: domain name or registered domain.
        make_agent: builds the agent of one episode (``agent_factory(...)``).
        seeds: task seeds.
        knobs: task knobs, in any form :func:`~stategym.kernel.knobs.as_knobs` reads
            (default: all on).
        samples: episodes per seed (``n`` for pass^k); each has its own sampling seed.
        concurrency: most episodes in flight at once.
        out: JSONL file to append finished trajectories to; episodes already in it are
            skipped (resume) and returned with the new ones.
        on_done: called with each trajectory as it finishes (a progress bar).
        clock: accumulates environment and agent time.

    Returns:
        Every trajectory of the run, sorted by (seed, sample).

    Raises:
        ValueError: ``out`` holds trajectories of another domain or other knobs.
        UsageError: ``out`` has a corrupt line or a duplicated episode.
    """
    if samples < 1:
        raise ValueError("samples must be at least 1")
    knobs = as_knobs(knobs)
    name = domain if isinstance(domain, str) else domain.name
    agent = str(getattr(make_agent, "name", "agent"))
    specs = episode_specs(name, agent, sorted(set(seeds)), knobs, samples=samples)
    finished = _resume(out, name, knobs, specs, FixedAgent(make_agent)) if out else []
    append = Appender(out) if out is not None else None
    played: list[Trajectory] = []

    def done(_: Any, trajectory: Trajectory) -> None:
        if append is not None:
            append(trajectory)
        played.append(trajectory)
        if clock is not None:
            clock.add(trajectory)
        if on_done is not None:
            on_done(trajectory)

    todo = pending(specs, finished)
    await play_concurrently(todo, FixedAgent(make_agent), concurrency=concurrency, on_done=done)
    ordered = in_spec_order(specs, [*finished, *played])
    if out is not None:
        put_in_order(out, [*finished, *played], ordered)
    return ordered


def _resume(
    out: Path, domain: str, knobs: Knobs, specs: list[EpisodeSpec], agent: FixedAgent
) -> list[Trajectory]:
    """Finished episodes already in ``out`` (a cut last line is dropped), each played as
    ``agent`` plays now (:func:`stategym.rollout.settings.refuse_other_settings`)."""
    from stategym.rollout.settings import refuse_other_settings

    finished = load_log(out).trajectories
    for trajectory in finished:
        if trajectory.domain != domain or trajectory.knobs != knobs:
            raise ValueError(
                f"{out} holds episodes of {trajectory.domain} with knobs "
                f"{trajectory.knobs.describe()}; use another file"
            )
    refuse_other_settings(out, finished, specs, agent)
    return finished


def evaluate(
    domain: str | Domain, make_agent: ChatAgentFactory, seeds: Sequence[int], **options: Any
) -> list[Trajectory]:
    """Blocking form of :func:`run_many` (for commands and scripts)."""
    return asyncio.run(run_many(domain, make_agent, seeds, **options))
