"""One writer per folder: an exclusive ``flock`` held while a command writes a run directory
(``stategym run``, ``eval``, ``protocol`` and the trainers)."""

from __future__ import annotations

import fcntl
import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from stategym.kernel.errors import UsageError

LOCK = ".lock"
"""Held (``flock``) by the command writing the directory, which writes its process id there."""


@contextmanager
def locked(folder: Path) -> Iterator[None]:
    """Hold the run directory ``folder`` (created if missing) while the block writes it.

    An exclusive ``flock`` on ``folder/.lock``: the kernel releases it when the process
    ends, however it ends, so the file a killed run leaves behind blocks nothing. The file
    is deleted on release, so a finished directory holds only its run's files.

    Raises:
        UsageError: another process holds the directory (its process id named).
    """
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / LOCK
    fd = _acquire(path, folder)
    try:
        yield
    finally:
        # Deleted while still held: a process waiting on this file then finds it gone
        # and locks a new one (see _acquire), never the same directory twice.
        path.unlink(missing_ok=True)
        os.close(fd)


def _acquire(path: Path, folder: Path) -> int:
    """A descriptor of ``path`` holding its lock, with this process's id written in it."""
    while True:
        fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            holder = os.read(fd, 32).decode(errors="replace").strip()
            os.close(fd)
            by = f" (pid {holder})" if holder.isdigit() else ""
            raise UsageError(
                f"{folder} is in use by another run{by}; wait for it to end or use another --out"
            ) from None
        try:
            current = os.path.samestat(os.fstat(fd), os.stat(path))
        except FileNotFoundError:
            current = False
        if current:
            os.ftruncate(fd, 0)
            os.write(fd, f"{os.getpid()}\n".encode())
            return fd
        os.close(fd)  # the holder before released and deleted it: lock the file now there


__all__ = ["LOCK", "locked"]
