"""Playing many specs: in order, or concurrently on an event loop; finished ones streamed.

:func:`stream` is what every command uses (``run``, ``eval``, ``protocol``): it yields each
``(spec, trajectory)`` as the episode ends, so the caller appends it to its log at once and
an interruption loses only the episodes in flight. Scripted agents play in spec order on
one environment per domain (a step takes microseconds; no loop is worth its overhead), or
spread over worker processes or Ray tasks (:mod:`.workers`, :mod:`.ray`) and merged back
in spec order, so the caller sees the same episodes in the same order either way.
LLM agents play on an event loop in a worker thread, at most ``concurrency`` episodes in
flight, one environment each; only the model's replies are awaited. The first error that is
not a transient endpoint failure (retried inside the backend) cancels the episodes in flight
and is raised as itself, after the ones finished before it were yielded.
"""

from __future__ import annotations

import asyncio
import contextlib
import queue
import threading
from collections.abc import Callable, Iterator, Sequence
from typing import TYPE_CHECKING, TypeVar

from stategym.kernel.env import Env
from stategym.kernel.task import Task
from stategym.kernel.trajectory import Trajectory
from stategym.kernel.understanding import ReaderSource
from stategym.rollout.agents import AgentSource
from stategym.rollout.play import Episode, TaskOf, adrive, drive, spec_task
from stategym.rollout.spec import EpisodeSpec

if TYPE_CHECKING:
    from stategym.rollout.workers import Scored, Scorer, Spread

DEFAULT_CONCURRENCY = 8
"""LLM episodes in flight when the caller does not say."""
Finished = tuple[EpisodeSpec, Trajectory]
Card = TypeVar("Card")


def play_spec(
    spec: EpisodeSpec,
    agents: AgentSource,
    env: Env | None = None,
    task_of: TaskOf = spec_task,
    reader: ReaderSource | None = None,
) -> Trajectory:
    """Play one spec to its end (blocking), on ``env`` if given (else a new environment whose
    user reads with ``reader``, default the rules)."""
    if env is None or env.domain.name != spec.domain:
        env = Env(spec.domain, reader=reader)
    return drive(Episode.start(env, agents, spec, task_of))


def play_in_order(
    specs: Sequence[EpisodeSpec],
    agents: AgentSource,
    task_of: TaskOf = spec_task,
    envs: dict[str, Env] | None = None,
    reader: ReaderSource | None = None,
) -> Iterator[Finished]:
    """Play the specs one after another, reusing one environment per domain (kept in
    ``envs`` if given, so a worker process reuses them from one chunk to the next)."""
    envs = {} if envs is None else envs
    for spec in specs:
        env = envs.get(spec.domain)
        if env is None:
            env = envs[spec.domain] = Env(spec.domain, reader=reader)
        yield spec, play_spec(spec, agents, env, task_of)


async def play_concurrently(
    specs: Sequence[EpisodeSpec],
    agents: AgentSource,
    *,
    concurrency: int = DEFAULT_CONCURRENCY,
    on_done: Callable[[EpisodeSpec, Trajectory], None],
    task_of: TaskOf = spec_task,
    reader: ReaderSource | None = None,
) -> None:
    """Play the specs, at most ``concurrency`` at a time, calling ``on_done`` as each ends.

    The first failure cancels the episodes still in flight and is raised as itself.
    """
    if concurrency < 1:
        raise ValueError("concurrency must be at least 1")
    gate = asyncio.Semaphore(concurrency)

    async def one(spec: EpisodeSpec) -> None:
        async with gate:
            env = Env(spec.domain, reader=reader)
            trajectory = await adrive(Episode.start(env, agents, spec, task_of))
        on_done(spec, trajectory)

    try:
        async with asyncio.TaskGroup() as group:
            for spec in specs:
                group.create_task(one(spec))
    except ExceptionGroup as failed:
        raise failed.exceptions[0] from None
    finally:
        await agents.aclose()


def stream(
    specs: Sequence[EpisodeSpec],
    agents: AgentSource,
    *,
    concurrency: int | None = None,
    task_of: TaskOf = spec_task,
    spread: Spread | None = None,
    reader: ReaderSource | None = None,
) -> Iterator[Finished]:
    """Play every spec, yielding ``(spec, trajectory)`` as each episode ends.

    LLM specs play first, in this process, ``concurrency`` at a time (default
    :data:`DEFAULT_CONCURRENCY`), in the order they finish; then the scripted ones, in
    spec order: here, on worker processes or as Ray tasks, as ``spread`` says (default: here;
    :mod:`stategym.rollout.workers` has the rule). ``concurrency=1`` plays LLM specs in order
    too. Where the scripted episodes play never changes what is yielded, or in what order.
    ``reader``: how the simulated user reads messages (default: the rules; an LLM,
    :class:`stategym.llm.reading.LLMReading`, goes to every worker).

    Raises:
        Whatever stopped the run (after the episodes finished before it were yielded).
    """
    played = _played(specs, agents, concurrency, task_of, spread, None, reader)
    for spec, trajectory, _ in played:
        yield spec, trajectory


def stream_scored(
    specs: Sequence[EpisodeSpec],
    agents: AgentSource,
    scorer: Callable[[Trajectory, Task], Card],
    *,
    concurrency: int | None = None,
    task_of: TaskOf = spec_task,
    spread: Spread | None = None,
    reader: ReaderSource | None = None,
) -> Iterator[tuple[EpisodeSpec, Trajectory, Card]]:
    """:func:`stream`, each episode with ``scorer(trajectory, task)``, computed where it was
    played (``stategym.metrics.score`` for a scorecard; a module-level function, so that it
    travels to the workers by name).

    A worker (or Ray task) scores the episodes it played while their tasks are in its
    cache, so the parent neither regenerates the tasks nor scores on one core what the
    workers played on all of them.
    """
    played = _played(specs, agents, concurrency, task_of, spread, scorer, reader)
    for spec, trajectory, card in played:
        yield spec, trajectory, card if card is not None else scorer(trajectory, task_of(spec))


def _played(
    specs: Sequence[EpisodeSpec],
    agents: AgentSource,
    concurrency: int | None,
    task_of: TaskOf,
    spread: Spread | None,
    scorer: Scorer | None,
    reader: ReaderSource | None = None,
) -> Iterator[Scored]:
    """The one playing path of :func:`stream` and :func:`stream_scored` (``scorer``'s
    results from the workers; ``None`` for what played here, scored by the caller)."""
    llm = [spec for spec in specs if spec.llm]
    scripted = [spec for spec in specs if not spec.llm]
    if llm:
        for spec, trajectory in _stream_concurrently(
            llm, agents, concurrency or DEFAULT_CONCURRENCY, task_of, reader
        ):
            yield spec, trajectory, None
    if spread is not None and spread.ray and scripted:
        from stategym.rollout.ray import play_on_ray

        yield from play_on_ray(
            scripted,
            agents,
            address=spread.address,
            task_of=task_of,
            scorer=scorer,
            reader=reader,
        )
        return
    from stategym.rollout.workers import play_in_processes, worker_count

    workers = worker_count(spread.workers if spread else 1, len(scripted))
    if workers > 1:
        yield from play_in_processes(
            scripted, agents, workers=workers, task_of=task_of, scorer=scorer, reader=reader
        )
    else:
        for spec, trajectory in play_in_order(scripted, agents, task_of, reader=reader):
            yield spec, trajectory, None


def _stream_concurrently(
    specs: Sequence[EpisodeSpec],
    agents: AgentSource,
    concurrency: int,
    task_of: TaskOf,
    reader: ReaderSource | None = None,
) -> Iterator[Finished]:
    """:func:`play_concurrently` on a worker thread's loop, its results handed over here."""
    finished: queue.Queue[Finished | BaseException | None] = queue.Queue()
    loop = asyncio.new_event_loop()
    main: list[asyncio.Task[None]] = []

    async def run() -> None:
        main.append(asyncio.current_task())  # type: ignore[arg-type]
        await play_concurrently(
            specs,
            agents,
            concurrency=concurrency,
            on_done=lambda spec, t: finished.put((spec, t)),
            task_of=task_of,
            reader=reader,
        )

    def work() -> None:
        try:
            loop.run_until_complete(run())
            finished.put(None)
        except BaseException as error:  # handed to the consuming thread, which raises it
            finished.put(error)
        finally:
            loop.close()

    thread = threading.Thread(target=work, name="stategym-rollout", daemon=True)
    thread.start()
    try:
        while (item := finished.get()) is not None:
            if isinstance(item, BaseException):
                raise item
            yield item
    finally:
        # The consumer stopped early (Ctrl-C, an error writing the log): cancel what is in
        # flight rather than letting it play on unseen.
        if main:
            with contextlib.suppress(RuntimeError):  # the loop closed: nothing is in flight
                loop.call_soon_threadsafe(main[0].cancel)
        thread.join()
