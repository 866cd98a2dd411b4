"""The async episode runner: many LLM episodes at once, written as they finish, resumable.

:func:`run_many` plays every ``(seed, sample)`` pair with at most ``concurrency`` episodes in
flight. Environments step on the event loop (a step takes microseconds); only the model's
replies are awaited. Each finished trajectory is appended to ``out`` and flushed at once, so
an interrupted run loses only the episodes still in flight, and running again with the same
``out`` plays only what is missing. The first error that is not a transient endpoint failure
(retried inside the backend) stops the run. :func:`stream_jobs` is the same engine for
``stategym eval``: it yields trajectories as they finish, from a worker thread's event loop.
"""

from __future__ import annotations

import asyncio
import queue
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, cast

from stategym.domain import Domain
from stategym.env import Env
from stategym.errors import AgentStopped
from stategym.knobs import Knobs
from stategym.llm.agent import ChatAgent
from stategym.trajectory import Trajectory, dumps, read_jsonl

ChatAgentFactory = Callable[..., ChatAgent]
"""``(task, sample=0) -> ChatAgent``; what :func:`stategym.llm.agent_factory` returns."""


@dataclass(frozen=True, slots=True)
class EpisodeKey:
    """One episode of a run: a task seed and which of its samples."""

    seed: int
    sample: int


@dataclass(slots=True)
class Clock:
    """Where the run's time went (summed over episodes; the model's share overlaps)."""

    env_seconds: float = 0.0
    agent_seconds: float = 0.0


async def play(
    domain: str | Domain,
    knobs: Knobs,
    make_agent: ChatAgentFactory,
    key: EpisodeKey,
    clock: Clock | None = None,
) -> Trajectory:
    """Play one episode with an LLM agent and return its annotated trajectory."""
    clock = clock if clock is not None else Clock()
    env = Env(domain, knobs=knobs)
    started = time.perf_counter()
    observation, _ = env.reset(seed=key.seed)
    agent = make_agent(env.task, sample=key.sample)
    env.agent = agent.name
    env_seconds = time.perf_counter() - started
    agent_seconds = 0.0
    stop: str | None = None
    while not env.done:
        started = time.perf_counter()
        try:
            action = await agent.aact(observation)
        except AgentStopped as reason:
            stop = str(reason)
            break
        finally:
            agent_seconds += time.perf_counter() - started
        started = time.perf_counter()
        observation = env.step(action).observation
        env_seconds += time.perf_counter() - started
    trajectory = env.trajectory
    extra: dict[str, Any] = {
        "timing": {"env_s": round(env_seconds, 6), "agent_s": round(agent_seconds, 6)}
    }
    if stop is not None:
        # Cut short by the model's context: like the round limit, a truncation.
        trajectory = replace(trajectory, truncated=True, outcome=env.outcome())
        extra["stop_reason"] = stop
    clock.env_seconds += env_seconds
    clock.agent_seconds += agent_seconds
    return agent.annotate(trajectory, **extra)


@dataclass(frozen=True, slots=True)
class Episode:
    """One episode to play: where, with which agent, and which (seed, sample)."""

    domain: str | Domain
    knobs: Knobs
    make_agent: ChatAgentFactory
    key: EpisodeKey


async def play_all(
    episodes: Sequence[Episode],
    *,
    concurrency: int,
    on_done: Callable[[Episode, Trajectory], None],
    clock: Clock | None = None,
) -> None:
    """Play episodes, at most ``concurrency`` at a time, calling ``on_done`` as each ends.

    The first failure cancels the episodes still in flight and is raised as itself.
    """
    if concurrency < 1:
        raise ValueError("concurrency must be at least 1")
    gate = asyncio.Semaphore(concurrency)

    async def one(episode: Episode) -> None:
        async with gate:
            trajectory = await play(
                episode.domain, episode.knobs, episode.make_agent, episode.key, clock
            )
        on_done(episode, trajectory)

    try:
        async with asyncio.TaskGroup() as group:
            for episode in episodes:
                group.create_task(one(episode))
    except ExceptionGroup as failed:
        raise failed.exceptions[0] from None
    finally:
        for make_agent in {id(e.make_agent): e.make_agent for e in episodes}.values():
            close = getattr(make_agent, "aclose", None)
            if close is not None:
                await close()


async def run_many(
    domain: str | Domain,
    make_agent: ChatAgentFactory,
    seeds: Iterable[int],
    *,
    knobs: Knobs | None = None,
    samples: int = 1,
    concurrency: int = 8,
    out: Path | None = None,
    on_done: Callable[[Trajectory], None] | None = None,
    clock: Clock | None = None,
) -> list[Trajectory]:
    """Play ``samples`` episodes of every seed, ``concurrency`` at a time.

    Args:
        domain: domain name or object.
        make_agent: builds the agent of one episode (``agent_factory(...)``).
        seeds: task seeds.
        knobs: task knobs (default: all on).
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
    """
    if samples < 1:
        raise ValueError("samples must be at least 1")
    knobs = knobs or Knobs()
    name = domain if isinstance(domain, str) else domain.name
    finished = _resume(out, name, knobs) if out is not None else {}
    wanted = sorted(
        {EpisodeKey(seed, sample) for seed in seeds for sample in range(samples)},
        key=lambda k: (k.seed, k.sample),
    )
    results = dict(finished)
    handle = out.open("ab") if out is not None else None

    def done(episode: Episode, trajectory: Trajectory) -> None:
        if handle is not None:
            handle.write(dumps(trajectory) + b"\n")
            handle.flush()  # an interruption loses only the episodes in flight
        results[episode.key] = trajectory
        if on_done is not None:
            on_done(trajectory)

    episodes = [Episode(domain, knobs, make_agent, k) for k in wanted if k not in finished]
    try:
        await play_all(episodes, concurrency=concurrency, on_done=done, clock=clock)
    finally:
        if handle is not None:
            handle.close()
    return [results[key] for key in wanted]


def _resume(out: Path, domain: str, knobs: Knobs) -> dict[EpisodeKey, Trajectory]:
    """Finished episodes already in ``out``; a line cut by an interruption is dropped."""
    if not out.exists():
        out.parent.mkdir(parents=True, exist_ok=True)
        return {}
    _drop_cut_line(out)
    finished: dict[EpisodeKey, Trajectory] = {}
    for trajectory in read_jsonl(out, strict=False):
        if trajectory.domain != domain or trajectory.knobs != knobs:
            raise ValueError(
                f"{out} holds episodes of {trajectory.domain} with knobs "
                f"{trajectory.knobs.describe()}; use another file"
            )
        finished[EpisodeKey(trajectory.seed, trajectory.run.sample)] = trajectory
    return finished


def _drop_cut_line(path: Path) -> None:
    """Truncate after the last newline, so the next append starts a fresh line."""
    data = path.read_bytes()
    if data and not data.endswith(b"\n"):
        with path.open("r+b") as handle:
            handle.truncate(data.rfind(b"\n") + 1)


def evaluate(
    domain: str | Domain, make_agent: ChatAgentFactory, seeds: Sequence[int], **options: Any
) -> list[Trajectory]:
    """Blocking form of :func:`run_many` (for commands and scripts)."""
    return asyncio.run(run_many(domain, make_agent, seeds, **options))


Job = tuple[Domain, str, int, Knobs]
"""``(domain, agent spec, seed, knobs)``: one episode as ``stategym eval`` lists them."""


def stream_jobs(
    jobs: Sequence[Job],
    options: Mapping[str, Any],
    done: Mapping[tuple[str, str, int, Knobs], int] | None = None,
) -> Iterator[Trajectory]:
    """Play LLM-agent jobs concurrently, yielding each trajectory as it finishes.

    A job listed k times is k samples of its task; sample numbers continue after the ones
    ``done`` counts, so a resumed run does not repeat a sampling seed. Trajectories are
    stamped with the agent spec as written. This is how ``stategym eval`` plays ``openai:``
    and ``hf:`` agents (``options["concurrency"]`` episodes in flight, default 8).

    Raises:
        Whatever stopped the run (after the trajectories finished before it were yielded).
    """
    from stategym.agents import resolve

    factories: dict[tuple[str, str], ChatAgentFactory] = {}
    seen: Counter[tuple[str, str, int, Knobs]] = Counter(done or {})
    episodes: list[Episode] = []
    specs: dict[int, str] = {}
    for domain, spec, seed, knobs in jobs:
        if (domain.name, spec) not in factories:
            factories[(domain.name, spec)] = cast(
                ChatAgentFactory, resolve(domain, spec, **options)
            )
        job = (domain.name, spec, seed, knobs)
        episodes.append(
            Episode(domain, knobs, factories[(domain.name, spec)], EpisodeKey(seed, seen[job]))
        )
        specs[id(episodes[-1])] = spec
        seen[job] += 1
    finished: queue.Queue[Trajectory | BaseException | None] = queue.Queue()

    def work() -> None:
        def emit(episode: Episode, trajectory: Trajectory) -> None:
            finished.put(replace(trajectory, agent=specs[id(episode)]))

        try:
            asyncio.run(
                play_all(episodes, concurrency=int(options.get("concurrency") or 8), on_done=emit)
            )
            finished.put(None)
        except BaseException as error:  # handed to the consuming thread, which raises it
            finished.put(error)

    thread = threading.Thread(target=work, name="stategym-llm-runner", daemon=True)
    thread.start()
    while (item := finished.get()) is not None:
        if isinstance(item, BaseException):
            raise item
        yield item
    thread.join()
