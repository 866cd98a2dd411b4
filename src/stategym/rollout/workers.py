"""Every core: scripted episodes spread over worker processes, merged back in spec order.

:func:`play_in_processes` cuts the specs into small chunks, plays them on ``workers``
processes and yields ``(spec, trajectory)`` in the order of the specs, each as soon as it
and every spec before it have ended. The parent is the only writer of a run's files, so a
run with N workers writes the same bytes as a run with one (the same trajectories, in the
same order; :func:`~stategym.rollout.engine.stream` is the one entry point).

Why processes, and which start method: a scripted episode is pure Python (the GIL), so
threads would not add cores. Workers start with ``forkserver`` where the platform has it
(Linux, macOS) and ``spawn`` elsewhere, never ``fork``: a parent that has imported torch (an
``hf:`` agent, the trainer) holds threads and locks a forked child would inherit broken.
The fork server is a fresh interpreter that imports only stategym's scripted agents and
domains (``_PRELOAD``), once per parent process; each worker is forked from it ready, instead
of importing them again (spawn: about 1-2 s each).

The rule for how many workers (:func:`worker_count`), explicit because results never
depend on it:

- a number asked for (``--workers N``) is used as given (never more than the chunks);
- by default every core this process may run on, but at most one worker per
  :data:`MIN_EPISODES_PER_WORKER` episodes, since starting the pool costs about as much as
  playing that many scripted episodes (a few ms each);
- LLM agents (``openai:``, ``hf:``) never play in workers: they play in the parent, on its
  event loop, ``--concurrency`` at a time (:mod:`.engine`). An endpoint agent waits on the
  network, and one loop keeps many such episodes in flight at no CPU cost; a local model
  is loaded once per process and batches the episodes in flight, so N processes would hold
  N copies of its weights and split its batches.

An interruption: workers ignore SIGINT (Ctrl-C reaches the whole process group), so only the
parent stops; episodes already yielded are written, the workers are terminated, and what
they had finished but not yet handed over in order is played again on resume. An exception
in a worker (a bug) is raised in the parent as itself, after every episode before it.
Three rules keep a stopped run clean:

- the pool is only changed (created, handed a chunk, which may start a worker) with SIGINT
  and SIGTERM held back (:func:`signals_held`): a signal then lands after the worker has
  started and been registered, never half-way (a worker still unpickling the pool's
  semaphores after the parent freed them prints a traceback). The fork server and the
  workers are started within it, so they inherit SIGINT blocked and never see a Ctrl-C,
  not even while importing (CPython starts its resource tracker the same way);
- a worker exits when the parent that started it is gone (:func:`_exit_with_parent`),
  whatever killed it (SIGKILL included): otherwise it would block forever on a full result
  pipe or an empty call queue, keeping the fork server alive and the command's stdout and
  stderr open (``stategym eval ... | tail`` would never return). The fork server exits by
  itself once its last worker has;
- SIGTERM reaches the parent as Ctrl-C does (:class:`stategym.cli.Terminated`).

A worker that dies (killed: ``kill -9``, the out-of-memory killer; or crashed) ends the run
with :class:`WorkerDied`, whose message is the command's one line: it names the process and
how it ended, every episode yielded before it stays yielded (so written), the other workers
are stopped as on Ctrl-C, and the same command again resumes. The executor notices a dead
worker by itself (``BrokenProcessPool``), except one killed half-way through sending a
chunk's result: its manager thread then waits for the rest of that message forever. So the
parent, while it waits for a chunk, looks at the workers every second and stops the pool
itself when one has ended (:mod:`stategym.rollout.watch`); :func:`_abort` unblocks that
manager thread. What the line cannot always say: which worker ended first
when several did at once (the executor stops the others with SIGTERM as soon as it notices,
so one killed by SIGTERM itself is named among them by start order), and any exit status
but a signal's (a fork server that fails reports 255 for its worker).

A pool none of whose workers started (each notes that it has, :func:`_start_worker`) is told
apart: a worker imports the parent's main module before it starts, so a script that plays
in workers without ``if __name__ == "__main__":`` ends every worker there (multiprocessing's
traceback is printed above), and so does a failure of the fork server; nothing was played,
and running the same thing again would fail the same way. :class:`WorkerDied` then says so.
"""

from __future__ import annotations

import multiprocessing
import os
import signal
import threading
import traceback
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import Future, ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

from stategym.kernel.env import Env
from stategym.kernel.errors import StateGymError
from stategym.kernel.task import Task
from stategym.kernel.trajectory import Trajectory
from stategym.kernel.understanding import ReaderSource
from stategym.registry import DOMAINS
from stategym.rollout.agents import AgentSource
from stategym.rollout.engine import play_in_order
from stategym.rollout.play import TaskOf, spec_task
from stategym.rollout.spec import EpisodeSpec
from stategym.rollout.watch import Watch, wait_until_ended

MIN_EPISODES_PER_WORKER = 1000
"""Scripted episodes per worker before the default starts another: the pool's start (a
fresh interpreter importing stategym, 1-3 s wall on a loaded 2-core machine) costs about
as much as playing 500-1000 expert episodes (``benchmarks/scale.py``)."""
CHUNK = 16
"""Most specs sent to a worker at once: small enough to keep the in-order merge tight,
large enough to amortise a queue round trip. The hand-over itself costs per episode
whatever the chunk (pickling a trajectory, about 0.2 ms in the worker and 0.6 ms to unpickle
in the parent, against 4-5 ms to play an expert episode)."""
WINDOW = 2
"""Chunks in flight per worker: one playing, one queued, so no worker waits on the parent."""
Finished = tuple[EpisodeSpec, Trajectory]
Scorer = Callable[[Trajectory, Task], Any]
"""What judges a finished episode (``stategym.metrics.score``: the rollout layer sits below
the metrics, so the caller hands it in); a module-level function, so it travels by name."""
Scored = tuple[EpisodeSpec, Trajectory, Any]
"""A finished episode with its scorer's result (``None`` where the chunk was not scored)."""


@dataclass(frozen=True, slots=True)
class Spread:
    """Where a run's scripted episodes play.

    Attributes:
        workers: processes on this machine (``None``: the default rule of
            :func:`worker_count`; 1: in this process, no workers).
        ray: play them as Ray tasks instead (:mod:`stategym.rollout.ray`; ``workers`` is
            not used then: the cluster's CPUs decide how many run at once).
        address: the Ray cluster to join (``None``: Ray's own default, which joins the
            cluster in ``RAY_ADDRESS`` or starts a local one).
    """

    workers: int | None = 1
    ray: bool = False
    address: str | None = None


def cores() -> int:
    """The cores this process may run on (its CPU affinity where the OS has one)."""
    if hasattr(os, "sched_getaffinity"):
        return len(os.sched_getaffinity(0)) or 1
    return os.cpu_count() or 1


def worker_count(requested: int | None, episodes: int) -> int:
    """How many worker processes play ``episodes`` scripted episodes (1: none)."""
    chunks = -(-episodes // CHUNK)
    if requested is not None:
        return max(1, min(requested, chunks))
    return max(1, min(cores(), episodes // MIN_EPISODES_PER_WORKER, chunks))


def chunks(specs: Sequence[EpisodeSpec], size: int) -> list[list[EpisodeSpec]]:
    """The specs cut into consecutive chunks of at most ``size``."""
    return [list(specs[i : i + size]) for i in range(0, len(specs), size)]


@dataclass(frozen=True, slots=True)
class Played:
    """What a worker hands back for one chunk.

    Attributes:
        trajectories: the chunk's episodes, in order, up to the one that failed (if any).
        cards: the scorer's result for each, where the chunk was scored (``None``: not asked).
        error: what stopped the chunk (raised by the parent after ``trajectories``).
        trace: the worker's traceback of ``error`` (a traceback does not pickle).
    """

    trajectories: list[Trajectory]
    cards: list[Any] | None = None
    error: Exception | None = None
    trace: str = ""


class WorkerTraceback(Exception):
    """The traceback of an error raised in a worker, chained to it as its cause."""

    def __str__(self) -> str:
        return f"\n{self.args[0]}"


class WorkerDied(StateGymError):
    """A worker process ended in the middle of a run: killed (``kill -9``, the
    out-of-memory killer) or crashed; or the workers ended before any started.

    Every episode before the chunk it was playing has been handed over, so a command has
    written it; the same command again resumes. The message is that one line; where no
    worker started, it says so instead (the usual cause: a script without
    ``if __name__ == "__main__":``, see the module docstring).
    """


def play_chunk(
    specs: Sequence[EpisodeSpec],
    agents: AgentSource,
    task_of: TaskOf = spec_task,
    envs: dict[str, Env] | None = None,
    scorer: Scorer | None = None,
    reader: ReaderSource | None = None,
) -> Played:
    """:func:`~stategym.rollout.engine.play_in_order` as a list, stopped at the first error
    (handed back with the episodes before it, so the parent still writes those).

    ``scorer``: score each episode here too, while its task is in this process's cache (the
    parent would regenerate it: scoring cold costs about as much as playing an expert
    episode, so a parent that scores what its workers played is the run's one busy core).
    """
    played: list[Trajectory] = []
    cards: list[Any] = []
    try:
        for spec, trajectory in play_in_order(specs, agents, task_of, envs, reader):
            if scorer is not None:
                cards.append(scorer(trajectory, task_of(spec)))
            played.append(trajectory)
    except Exception as error:  # raised again by the parent, in order: see hand_over
        return Played(played, cards if scorer else None, error, traceback.format_exc())
    return Played(played, cards if scorer else None)


def hand_over(specs: Sequence[EpisodeSpec], played: Played) -> Iterator[Scored]:
    """A chunk's ``(spec, trajectory, card)`` triples, then its error (with the worker's
    traceback)."""
    cards = played.cards if played.cards is not None else [None] * len(played.trajectories)
    yield from zip(specs, played.trajectories, cards, strict=False)
    if played.error is not None:
        raise played.error from WorkerTraceback(played.trace)


MANAGER_PATIENCE = 60.0
"""Seconds an aborted pool's manager thread is given to end (it ends at once: every worker
is dead and its result pipe closed)."""
_HELD = (signal.SIGINT, signal.SIGTERM)
"""The signals that stop a run (Ctrl-C, ``kill``), held back while the pool changes."""

# One worker process's agents, task rule and environments, set once by its initializer:
# sent with every chunk they would be pickled again for each one.
_WORKER: dict[str, Any] = {}


def _start_worker(
    agents: AgentSource, task_of: TaskOf, reader: ReaderSource | None, started: Any
) -> None:
    started.value = 1  # this worker got past importing the main module (see WorkerDied)
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # the parent alone handles Ctrl-C
    if hasattr(signal, "pthread_sigmask"):  # born with them held (signals_held): SIGTERM
        signal.pthread_sigmask(signal.SIG_UNBLOCK, _HELD)  # must stop a worker again
    _exit_with_parent()
    _WORKER.update(agents=agents, task_of=task_of, envs={}, reader=reader)


def _exit_with_parent() -> None:
    """End this worker as soon as the process that started it is gone.

    ``multiprocessing`` hands each child a sentinel of its parent (the read end of a pipe the
    parent holds open until it ends, SIGKILL included), under every start method; a daemon
    thread waits on it. ``os.getppid()`` would not do: a forkserver worker's parent is the
    fork server, not the run.
    """
    parent = multiprocessing.parent_process()
    if parent is None:
        return
    threading.Thread(
        target=_exit_after, args=(parent,), name="exit-with-parent", daemon=True
    ).start()


def _exit_after(parent: Any) -> None:
    parent.join()
    os._exit(1)  # nobody is left to read what this worker plays; nothing of it to flush


@contextmanager
def signals_held() -> Iterator[None]:
    """Hold SIGINT and SIGTERM back meanwhile; one that came is raised as soon as the block
    ends.

    Two holds, since either alone leaks: this thread's signal mask
    (:func:`signal.pthread_sigmask`), which the processes started meanwhile inherit (across
    ``exec`` too) and keep; and, in the main thread, the Python handlers, replaced by one
    that notes the signal: the kernel hands a signal sent to the process to any thread
    that does not block it, and Python then runs the handler in the main thread anyway.
    """
    if not hasattr(signal, "pthread_sigmask"):  # Windows: spawn, no signals to hold
        yield
        return
    caught: list[int] = []
    handlers = {}
    if threading.current_thread() is threading.main_thread():
        handlers = {sig: signal.signal(sig, lambda sig, _: caught.append(sig)) for sig in _HELD}
    mask = signal.pthread_sigmask(signal.SIG_BLOCK, _HELD)
    try:
        yield
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, mask)
        for sig, handler in handlers.items():
            signal.signal(sig, handler)
        for number in dict.fromkeys(caught):
            signal.raise_signal(number)  # now to its own handler (KeyboardInterrupt, ...)


def _play_in_worker(specs: list[EpisodeSpec], scorer: Scorer | None) -> Played:
    worker = _WORKER
    return play_chunk(
        specs, worker["agents"], worker["task_of"], worker["envs"], scorer, worker["reader"]
    )


# What the fork server imports once, so that no worker imports it again: this module, the
# scripted agents and every domain (about 0.1 s more than one domain; listed, not discovered).
_PRELOAD = [
    __name__,
    "stategym.agents",
    "stategym.domains.synthetic",
    *(f"stategym.domains.{name}" for name in DOMAINS),
]


def _context() -> Any:
    """``forkserver`` where the platform has it, else ``spawn`` (see the module docstring)."""
    if "forkserver" in multiprocessing.get_all_start_methods():
        context = multiprocessing.get_context("forkserver")
        context.set_forkserver_preload(_PRELOAD)
        return context
    return multiprocessing.get_context("spawn")


def play_in_processes(
    specs: Sequence[EpisodeSpec],
    agents: AgentSource,
    *,
    workers: int,
    task_of: TaskOf = spec_task,
    scorer: Scorer | None = None,
    reader: ReaderSource | None = None,
) -> Iterator[Scored]:
    """Play scripted specs on ``workers`` processes, yielding them in spec order, each with
    ``scorer``'s result (computed on the worker that played it; ``None`` without one).

    ``agents``, ``task_of`` and ``reader`` travel to each worker once, by standard pickle (an
    :class:`~stategym.rollout.Agents` as its recipe; ``task_of`` a module-level function).

    Raises:
        WorkerDied: a worker process ended in the middle (killed, out of memory, crashed),
            after every episode before its chunk; the other workers are stopped. Or the
            workers ended before any of them started (a script without
            ``if __name__ == "__main__":``), in words that say so.
        Whatever a worker raised, after every episode before the one that raised it.
    """
    watch = Watch()
    context = _context()
    started = context.RawValue("b", 0)  # set by any worker that starts (_start_worker)
    initargs = (agents, task_of, reader, started)
    try:
        yield from _play_in_pool(specs, initargs, workers, scorer, watch, context)
    except BrokenProcessPool:
        if not watch.ended:  # no worker ended: a result the parent could not read, a bug
            raise
        if not started.value:
            raise WorkerDied(_none_started(watch.ended[0].pid)) from None
        raise WorkerDied(watch.what_ended()) from None


def _none_started(pid: int) -> str:
    """The line of :class:`WorkerDied` when no worker started (the module docstring)."""
    return (
        f"worker process {pid} ended before it started, and no worker started: each worker "
        "imports the main module first, so a script that plays episodes in workers must do "
        'so under if __name__ == "__main__": (the error is printed above); nothing was '
        "played in workers"
    )


def _play_in_pool(
    specs: Sequence[EpisodeSpec],
    initargs: tuple[AgentSource, TaskOf, ReaderSource | None, Any],
    workers: int,
    scorer: Scorer | None,
    watch: Watch,
    context: Any,
) -> Iterator[Scored]:
    """:func:`play_in_processes` on a pool of its own, stopped (:func:`_abort`) unless every
    chunk was handed over."""
    parts = chunks(specs, CHUNK)
    with signals_held():
        executor = ProcessPoolExecutor(
            workers, mp_context=context, initializer=_start_worker, initargs=initargs
        )
    futures: dict[int, Future[Played]] = {}
    submitted = 0
    completed = False
    try:
        for index, part in enumerate(parts):
            while submitted < len(parts) and submitted < index + workers * WINDOW:
                with signals_held():  # a submit may start a worker (and the fork server)
                    future = executor.submit(_play_in_worker, parts[submitted], scorer)
                watch.note(executor)
                futures[submitted] = future
                submitted += 1
            yield from hand_over(part, watch.result(futures.pop(index)))
        completed = True
    except BrokenProcessPool:
        watch.look()  # which workers ended, before the others are stopped
        raise
    finally:
        if completed:
            executor.shutdown(wait=True)
        else:
            with signals_held():  # a second Ctrl-C must not stop the stopping half-way
                _abort(executor)


def _abort(executor: ProcessPoolExecutor) -> None:
    """Stop the workers now: queued chunks are cancelled, running ones are killed.

    The workers end before the executor lets go of its queues: a worker still starting
    unpickles the queues' semaphores, and one the parent has already freed is a
    traceback on the command's stderr. SIGKILL, not SIGTERM: a starting worker holds
    SIGTERM back until its initializer (:func:`signals_held`), and a worker has nothing to
    clean up (the parent is the only writer).
    """
    kill = getattr(executor, "kill_workers", None)  # Python 3.14+
    if kill is not None:
        kill()
        return
    # Before 3.14 the executor has no public way to stop a running task; its processes are.
    processes = list((getattr(executor, "_processes", None) or {}).values())
    for process in processes:
        process.kill()
    wait_until_ended(processes)
    # (both read before the shutdown, which lets go of them)
    manager = getattr(executor, "_executor_manager_thread", None)
    writer = getattr(getattr(executor, "_result_queue", None), "_writer", None)
    executor.shutdown(wait=False, cancel_futures=True)
    # A worker killed half-way through sending its result leaves part of a message in the
    # result pipe, and the executor's manager thread would wait for the rest forever (and
    # the interpreter's exit joins that thread: the command would hang after its last
    # line). With every worker gone, closing the parent's end of the pipe's writer ends
    # that read with EOF, which the manager thread reads as a broken pool. It is joined
    # here, not at the interpreter's exit: there, on Python 3.11, waking a manager thread
    # that is still closing its wake-up pipe can fail with EBADF (a traceback on stderr).
    if writer is not None:
        writer.close()
    if manager is not None:
        manager.join(timeout=MANAGER_PATIENCE)
