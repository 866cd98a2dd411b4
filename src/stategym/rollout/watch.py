"""Watching a pool's workers: which one ended, and how (:class:`Watch`).

The executor notices a dead worker by itself (``BrokenProcessPool``), except one killed
half-way through sending a chunk's result: its manager thread then waits for the rest of
that message forever. So the parent, while it waits for a chunk, looks at the workers every
:data:`WATCH_INTERVAL` seconds, and :mod:`stategym.rollout.workers` stops the pool itself
when one has ended. Exit statuses are read only once the executor's thread has ended: two
threads reading one race, and the loser sees 255 (:func:`_has_ended`).
"""

from __future__ import annotations

import os
import signal
from concurrent.futures import Future, ProcessPoolExecutor
from concurrent.futures import TimeoutError as FutureTimeout
from concurrent.futures.process import BrokenProcessPool
from dataclasses import dataclass, field
from multiprocessing.connection import wait as ready_among
from typing import Any, TypeVar

T = TypeVar("T")

WATCH_INTERVAL = 1.0
"""Seconds between two looks at the workers while the parent waits for a chunk. The pool
notices a worker that ended by itself, except one killed half-way through sending a
result: its manager thread then waits for the rest of that message forever."""


@dataclass(slots=True)
class Watch:
    """A pool's worker processes as the parent saw them, and those it found ended.

    Kept apart from the executor, which forgets its processes once it is shut down, so that
    the line of :class:`~stategym.rollout.workers.WorkerDied` can still say which one ended and how.
    """

    processes: dict[int, Any] = field(default_factory=dict)
    ended: list[Any] = field(default_factory=list)

    def note(self, executor: ProcessPoolExecutor) -> None:
        """Remember the pool's processes (each starts when a chunk is handed in)."""
        self.processes.update(getattr(executor, "_processes", None) or {})

    def look(self) -> bool:
        """Whether a worker has ended (kept in ``ended``), asked of each without reading
        its exit status (:func:`_has_ended`)."""
        self.ended = [process for process in self.processes.values() if _has_ended(process)]
        return bool(self.ended)

    def result(self, future: Future[T]) -> T:
        """The chunk's result, once there; :class:`BrokenProcessPool` once a worker has
        ended, whether or not the executor noticed."""
        while True:
            try:
                return future.result(timeout=WATCH_INTERVAL)
            except FutureTimeout:
                if self.look():
                    raise BrokenProcessPool("a worker ended with its chunk unsent") from None

    def what_ended(self) -> str:
        """The line of :class:`WorkerDied`, once the pool is stopped (every exit status then
        read by the executor's thread, which has ended)."""
        # The executor stops the other workers with SIGTERM once it has noticed the first;
        # any of them found ended with it are passed over for the one that ended first.
        statuses = {process.pid: _exit_status(process) for process in self.ended}
        pid = next((p for p, s in statuses.items() if s != -signal.SIGTERM), self.ended[0].pid)
        return (
            f"worker process {pid} {_how_it_ended(statuses[pid])} in the middle of the "
            "run; the finished episodes are saved: run the same command again to resume"
        )


def _has_ended(process: Any) -> bool:
    """Whether a worker process has ended, asked without reading its exit status.

    The executor's own thread reads the statuses as it stops a broken pool, and two threads
    reading one race: the loser sees 255. Its sentinel alone does not say either: once the
    status is read, the fork server may not yet have closed the pipe that carried it, and
    the sentinel reads as not ready. A fork server's worker is reaped before its status is
    sent, so by then its pid is gone; a ``spawn`` worker's sentinel stays ready.
    """
    try:
        sentinel = process.sentinel
    except ValueError:  # closed by the executor, which does so only once it ended
        return True
    if ready_among([sentinel], timeout=0):
        return True
    if os.name != "posix":  # spawn: the sentinel alone says it
        return False
    try:
        os.kill(process.pid, 0)  # signal 0: only asks whether the pid is there
    except ProcessLookupError:
        return True
    except PermissionError:  # the pid taken again, by another user's process
        return False
    return False


def _exit_status(process: Any) -> int | None:
    """A worker's exit status (``None``: not known, the executor closed the process)."""
    try:
        return process.exitcode
    except ValueError:
        return None


def _how_it_ended(exitcode: int | None) -> str:
    """A worker's end, as far as its exit status tells: only a signal is named (a crash in
    C is one too); any other status may be the fork server's 255 for a worker it lost."""
    if exitcode is None or exitcode >= 0:
        return "ended abruptly (killed, out of memory or crashed)"
    try:
        name = signal.Signals(-exitcode).name
    except ValueError:
        name = f"signal {-exitcode}"
    if -exitcode == signal.SIGKILL:
        return f"was killed by {name} (out of memory, or kill -9)"
    return f"was killed by {name}"


def wait_until_ended(processes: list[Any]) -> None:
    """Wait for every process to end, on their sentinels: the executor's thread may be
    reading their exit statuses meanwhile (a broken pool), and a second reader would make
    one of them 255 (:func:`_has_ended`)."""
    waiting = [process.sentinel for process in processes]
    while waiting:
        for ready in ready_among(waiting):
            waiting.remove(ready)
