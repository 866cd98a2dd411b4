"""One writer per folder: an exclusive ``flock`` held while a command writes a run directory
(``stategym run``, ``eval``, ``protocol`` and the trainers).

The lock file is stategym's own, so it is opened as one: never through a link (a link there
would lead the process id over the file it names), never as a file with another name (a
hard link: writing the process id truncated the other name's contents, audit 15b F5; two
folders sharing one ``.lock``, a ``cp -al`` copy, would also hold each other) and never as
anything but a regular file (a FIFO, a device or a folder named ``.lock`` is refused in one
line, naming it), never a hang or a traceback.
"""

from __future__ import annotations

import errno
import fcntl
import os
import stat
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from stategym.kernel.errors import UsageError
from stategym.kernel.files import not_a_file

LOCK = ".lock"
"""Held (``flock``) by the command writing the directory, which writes its process id there."""


@contextmanager
def locked(folder: Path) -> Iterator[None]:
    """Hold the run directory ``folder`` (created if missing) while the block writes it.

    An exclusive ``flock`` on ``folder/.lock``: the kernel releases it when the process
    ends, however it ends, so the file a killed run leaves behind blocks nothing. The file
    is deleted on release, so a finished directory holds only its run's files.

    Raises:
        UsageError: another process holds the directory (its process id named), or its
            ``.lock`` is a link (a hard link too) or not a regular file.
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
        fd = _open_lock(path)
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
            current = os.path.samestat(os.fstat(fd), os.lstat(path))
        except FileNotFoundError:
            current = False
        if current:
            os.ftruncate(fd, 0)
            os.write(fd, f"{os.getpid()}\n".encode())
            return fd
        os.close(fd)  # the holder before released and deleted it: lock the file now there


def _open_lock(path: Path) -> int:
    """A read-write descriptor of the regular file ``path`` (created if missing), opened
    without following a link and without waiting (``O_NONBLOCK``: a FIFO would otherwise
    hold the open), and checked before the open (a device is never opened) and again on the
    descriptor (nothing swapped in between) to be a regular file.

    Raises:
        UsageError: ``path`` is a link, a FIFO, a device, a socket or a folder, or a file
            with other names (hard links: ``st_nlink`` above one).
    """
    kind = "a link" if path.is_symlink() else not_a_file(path)
    if kind is not None:  # checked before the open too: a device is never opened
        raise _not_a_lock(path, kind)
    flags = os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_NOCTTY | os.O_CLOEXEC
    try:
        fd = os.open(path, flags, 0o644)
    except OSError as error:
        if error.errno == errno.ELOOP and path.is_symlink():
            raise _not_a_lock(path, "a link") from None
        kind = not_a_file(path) if error.errno in (errno.EISDIR, errno.ENXIO) else None
        if kind is not None:
            raise _not_a_lock(path, kind) from None
        raise
    status = os.fstat(fd)
    if not stat.S_ISREG(status.st_mode):
        os.close(fd)
        raise _not_a_lock(path, not_a_file(path) or "not a regular file")
    if status.st_nlink > 1:  # checked before anything is written to it
        os.close(fd)
        others = status.st_nlink - 1
        raise _not_a_lock(
            path, f"a file with {others} other name{'s' * (others > 1)} (a hard link)"
        )
    return fd


def _not_a_lock(path: Path, kind: str) -> UsageError:
    """The refusal of a ``.lock`` that is not stategym's lock file (a regular file)."""
    return UsageError(
        f"{path} is {kind}, not stategym's lock file (a regular file it writes its process id "
        "in); remove it"
    )


__all__ = ["LOCK", "locked"]
