"""Files written whole, files read back, entries removed: the rules every command shares.

**Writing.** Every file a command rewrites (a run's summary, an experiment's tables, a
report, a trainer's settings and metrics) goes through :func:`replace_bytes`: the new bytes
are written to ``PATH.partial``, which is renamed over ``PATH``, so an interruption leaves
the old file or the new one. A rename replaces whatever the name held, so a ``PATH`` that
exists and is not a regular file (a folder, a device such as ``/dev/null``, a FIFO, a
socket: :func:`not_a_file`) is refused (:func:`refuse_non_file`), never replaced: run as
root, renaming a page over ``/dev/null`` once replaced the machine's null device. Commands
make the same check up front, on every path they will replace (and on the folder they
write them in: :func:`refuse_non_files`), before anything is read or played;
:func:`replace_bytes` makes it again as the last line of defence. A failed write or rename
removes its ``.partial`` and names ``PATH``, the file the user knows, not the
``.partial``. Writing *through* a path (``topology --draw /dev/stdout``) is another matter:
nothing is replaced, and those commands do not use this rule.

**Links.** Two rules, by who named the path (``through_link``):

- A file a command writes under a name of its own inside a folder it keeps (a run's
  ``summary.json``, ``scores.jsonl``, ``scorecard.md``; a protocol's ``cells.json`` and
  ``protocol.md``; an experiment's tables and plots; a trainer's ``config.json``,
  ``start.json`` and ``metrics.jsonl``; a ``--report`` flag's ``OUT/report.html``) replaces
  a link there *as a name*: the link becomes a regular file and what it named is never
  touched (the default). A run directory may come from elsewhere (a tar keeps links) or
  be a symlink data manager's (git-annex, DVC), where every file is a link into a shared
  store: written through, ``scorecard.md -> trajectories.jsonl`` destroyed the log it
  scores, ``summary.json -> ../notes.txt`` a file outside the run, and one object of the
  store every other link to it (audit 15b F1). A link to something that is not a regular
  file (a folder, a FIFO) is still refused: its maker meant it to lead there. One file is
  not written whole but appended to: a run's ``trajectories.jsonl``, which is opened (read,
  appended, and rewritten when a cut line is dropped or its lines put in order:
  :mod:`stategym.rollout.log`) where a link there leads.
- A file the user names on the command line (``report --out latest.html``) is written
  *through* a link (``through_link=True``): the file it names is replaced
  (:func:`written_path`) and the link kept, as an editor saving through a link does, so a
  link to a dated report updates that report. A dangling link writes the file it names
  where that file's folder exists, and is refused (:func:`refuse_non_file`) where it does
  not; a link loop is refused as ``ELOOP``. Only the file the link ends at is checked (not
  a regular file: refused as above). The other files a user names (``--index``,
  ``--reader-cache``) are SQLite databases, opened (through links) and changed in place
  by SQLite, never replaced whole; they are refused up front by the same check.

**Removing.** An entry stategym replaces as a whole (a checkpoint's folder, ``RUN/model``,
an interrupted save's ``.partial``) is removed by :func:`remove_entry`, which never opens
anything but a real folder: ``shutil.rmtree`` opens the path it is given, so a FIFO there
waited for a writer forever, and it refuses a link with a traceback. A link, a FIFO, a
file, a socket or a device is unlinked as a name (what a link names is never touched).

**Reading.** Every file a command reads goes through :func:`open_regular` (or
:func:`read_regular`): the path is checked first (a device is never opened), then opened
with ``O_NONBLOCK`` (a FIFO opens at once) and checked again on the open descriptor
(``fstat``, so nothing can swap the file between the check and the open) to be a regular
file. Anything else (a FIFO, whose read waits for a writer forever; a device; a
socket; a folder where a file is expected) is the one-line :class:`NotAFile`, naming the
path and what it is, never a hang or a traceback; readers with advice of their own (a
damaged checkpoint: delete its folder) catch it and add theirs. :func:`exists_as_file` is
the test of a file that may be absent (absent: ``False``; anything but a regular file:
refused, never called missing). A folder handed whole to a third-party loader
(``transformers``' ``from_pretrained``, ``safetensors``, ``torch.load``), which opens files
with no such check, is first checked entry by entry (:func:`refuse_special_entries`).
That check comes before the loader's open, so it holds against what is in the folder, not
against a process that swaps a file for a FIFO between the check and the load (audit 15b
F4): the loader then waits on it. Where stategym opens a file for a loader itself (a
checkpoint's ``optimizer.pt``; each safetensors header it checks, handed over as the open
descriptor: :func:`descriptor_path`), no swap can reach it; ``transformers`` opens a
folder's files by name, which stategym cannot pass a descriptor for.

**Reading JSON.** :func:`json_value` is the one way stategym parses a JSON file it reads
with the standard library: every way the parse can fail (bytes that are not UTF-8, text
that is not JSON, nesting deeper than Python's recursion limit, an integer of more than
4300 digits) is one :class:`NotJSON` (a ``ValueError``) saying why in a few words, never a
``RecursionError`` or a traceback. :func:`read_json` turns it into the one-line
:class:`~stategym.kernel.errors.UsageError` naming ``FILE:LINE``; readers with advice of
their own (a damaged checkpoint: delete its folder) catch :class:`NotJSON` and add it.
"""

from __future__ import annotations

import errno
import io
import json
import os
import stat
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from stategym.kernel.errors import UsageError

_SPECIAL = (
    (stat.S_ISCHR, "a character device"),
    (stat.S_ISBLK, "a block device"),
    (stat.S_ISFIFO, "a FIFO (named pipe)"),
    (stat.S_ISSOCK, "a socket"),
)
"""The kinds of file that are neither a regular file nor a folder, as a message names them."""


def not_a_file(path: Path) -> str | None:
    """What ``path`` is when it exists and is not a regular file (``"a folder"``, ``"a FIFO
    (named pipe)"``, ``"a character device"``, ...); ``None`` for a regular file or a path
    that does not exist. Links are followed: a link to ``/dev/null`` is a device."""
    try:
        mode = path.stat().st_mode
    except OSError as error:
        if error.errno in _ABSENT:  # a dangling link or a loop is absent, as exists() has it
            return None
        raise
    except ValueError:  # a name no file can have (a NUL in it)
        return None
    return None if stat.S_ISREG(mode) else _kind_of(mode)


_ABSENT = frozenset((errno.ENOENT, errno.ENOTDIR, errno.EBADF, errno.ELOOP))
"""The errors of ``stat`` that mean nothing is there (``Path.exists`` reads them so)."""


def _kind_of(mode: int) -> str:
    """What a file of mode ``mode`` is, as :func:`not_a_file` names it."""
    if stat.S_ISDIR(mode):
        return "a folder"
    return next((name for test, name in _SPECIAL if test(mode)), "not a regular file")


def refuse_non_file(path: Path, name: str | None = None, *, through_link: bool = False) -> None:
    """Refuse to replace ``path`` where it exists and is not a regular file (a link: where
    the file it names is not one), or, ``through_link``, is a link that cannot be written
    through (:func:`written_path`: a loop, or a dangling link whose target's folder is
    missing). Without ``through_link`` a dangling link or a loop is replaced as a name.

    Args:
        path: the file a command will write whole.
        name: how the message names it (``--out report.html``); ``path`` by default.
        through_link: ``path`` is written through a link (a path the user named: module
            docstring), not replaced as a name.

    Raises:
        UsageError: naming the path, what it is, and what to do.
        OSError: ``through_link`` and a link loop (``ELOOP``, naming ``path``).
    """
    if through_link:
        written_path(path)
    kind = not_a_file(path)
    if kind is None:
        return
    if path.is_symlink() and not through_link:
        raise UsageError(
            f"{name or path} is a link to {kind}: stategym writes {path.name} whole, as a "
            "regular file in place of the link; move the link away or give another path"
        )
    raise UsageError(
        f"{name or path} is {kind}, not a regular file: stategym writes {path.name} whole, "
        f"by renaming a new file over it, which would replace {kind}; move it away or "
        "give another path"
    )


def refuse_non_files(folder: Path, names: tuple[str, ...] | list[str]) -> None:
    """:func:`refuse_non_file` for each of the files ``names`` a command writes under its
    own names in ``folder`` (called before the command reads or plays anything; a link is
    replaced as a name), and ``folder`` itself where it exists and is not a folder (a FIFO
    there would otherwise let every file in it pass as missing).

    Raises:
        UsageError: naming the folder or the file, and what it is.
    """
    if folder.exists() and not folder.is_dir():
        kind = not_a_file(folder) or "a file"
        what = ", ".join(names) or "files"
        raise UsageError(
            f"{folder} is {kind}, not a folder: stategym writes {what} in it; move it away "
            "or give another path"
        )
    for name in names:
        refuse_non_file(folder / name)


def replace_bytes(path: Path, data: bytes, *, through_link: bool = False) -> Path:
    """Write ``path`` whole or not at all: ``data`` goes to ``PATH.partial``, which then
    replaces ``path`` in one step (:func:`os.replace`), so an interruption leaves the old
    file or the new one, never a mix of the two. Returns ``path``.

    A link at ``path`` is replaced as a name, what it names never touched; with
    ``through_link`` (only for a path the user named: module docstring) it is written
    through instead, the file it names replaced and the link kept (:func:`written_path`).

    A ``.partial`` left by an interrupted write is removed first (never written through:
    a link there would lead the bytes elsewhere), and removed again if this write fails.

    Raises:
        UsageError: ``path`` exists and is not a regular file (a link to one included), or
            is a dangling link into a missing folder written through
            (:func:`refuse_non_file`).
        OSError: the write or the rename failed, or ``path`` is a link loop written
            through, naming ``path``.
    """
    refuse_non_file(path, through_link=through_link)
    target = written_path(path) if through_link else path
    partial = target.with_name(target.name + ".partial")
    partial.unlink(missing_ok=True)
    try:
        with partial.open("xb") as handle:
            handle.write(data)
        os.replace(partial, target)
    except OSError as error:
        partial.unlink(missing_ok=True)
        raise naming(error, path) from None
    except BaseException:  # Ctrl-C mid-write: the old file stays, and no .partial with it
        partial.unlink(missing_ok=True)
        raise
    return path


def remove_entry(path: Path) -> None:
    """Remove whatever is at ``path`` (nothing there: nothing to do), never opening it
    unless it is a real folder (``lstat``): a folder is removed with everything in it, a
    link (to a folder too), a FIFO, a file, a socket or a device is unlinked as a name, so
    nothing waits on a FIFO (``shutil.rmtree`` opens the path it is given) and what a link
    names is never touched (``rmtree`` refuses a link with a traceback). Only a process
    that swaps a folder there for a FIFO between this ``lstat`` and ``rmtree``'s own open
    could still make it wait (the race of the module docstring's **Reading**).

    Raises:
        OSError: the entry could not be removed, naming it.
    """
    import shutil

    try:
        mode = os.lstat(path).st_mode
    except FileNotFoundError:
        return
    if stat.S_ISDIR(mode):
        shutil.rmtree(path)  # it opens only folders, and unlinks every other entry by name
    else:
        path.unlink()


def written_path(path: Path) -> Path:
    """The file that writing ``path`` whole replaces: ``path`` itself, or, for a symbolic
    link, the file it names, every link followed (a dangling link's target too, where that
    target's folder exists), so the link is kept and the file it names updated.

    Raises:
        UsageError: a dangling link whose target's folder does not exist.
        OSError: a link loop (``ELOOP``, naming ``path``).
    """
    if not path.is_symlink():
        return path
    target = Path(os.path.realpath(path))
    if target.is_symlink():  # realpath stops at a loop and returns a link
        raise OSError(errno.ELOOP, os.strerror(errno.ELOOP), str(path))
    if not target.parent.is_dir():
        raise UsageError(
            f"{path} is a link to {target}, whose folder does not exist: stategym writes "
            "through a link to the file it names; fix the link or give another path"
        )
    return target


def naming(error: OSError, path: Path) -> OSError:
    """``error`` as raised for ``path`` (the ``.partial`` or the rename is an inner step the
    user never named)."""
    if error.errno is None:
        return error
    return type(error)(error.errno, error.strerror, str(path))


def naming_in(error: OSError, inner: Path, outer: Path) -> OSError:
    """``error``, raised for the temporary folder ``inner`` or a file in it, as raised for
    ``outer`` (the folder it becomes) or that file in it; an error naming no path is named
    ``outer``, one naming another path is kept. A checkpoint's ``iter-N.partial`` is an
    inner step the user never named."""
    name = str(error.filename or "")
    if error.errno is None or (name and name != str(inner) and not name.startswith(f"{inner}/")):
        return error
    return naming(error, outer / Path(name).relative_to(inner) if name else outer)


class NotAFile(UsageError):
    """A path a command reads exists and is not a regular file (a FIFO, a device, a socket,
    a folder where a file is expected); ``str()`` is the one-line refusal.

    Args:
        path: the path as the command names it.
        kind: what it is, as :func:`not_a_file` names it (``a FIFO (named pipe)``).
    """

    def __init__(self, path: Path, kind: str) -> None:
        self.path = path
        self.kind = kind
        reason = " (a FIFO would wait for a writer forever)" if "FIFO" in kind else ""
        super().__init__(
            f"{path} is {kind}, not a regular file: stategym reads only regular files{reason}; "
            "put a regular file there, or give another path"
        )

    @property
    def why(self) -> str:
        """What the path is, for a reader that words its own refusal
        (``a FIFO (named pipe), not a regular file``)."""
        return f"{self.kind}, not a regular file"


def open_regular(path: Path) -> io.BufferedReader:
    """``path`` opened for reading in binary, once it is known to be a regular file.

    The file is opened with ``O_NONBLOCK`` (a FIFO then opens at once, never waiting for a
    writer) and checked on the open descriptor (``fstat``), so it cannot be swapped between
    a check and the open; a path already known not to be a regular file is never opened (a
    device is not opened at all). Links are followed.

    Raises:
        NotAFile: ``path`` exists and is not a regular file.
        OSError: it cannot be opened (missing: :class:`FileNotFoundError`), naming it.
    """
    kind = not_a_file(path)
    if kind is not None:
        raise NotAFile(path, kind)
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_NOCTTY | os.O_CLOEXEC)
    except OSError as error:
        if error.errno == errno.ENXIO:  # a socket (or a FIFO's other end) put there meanwhile
            kind = not_a_file(path)
            if kind is not None:
                raise NotAFile(path, kind) from None
        raise
    mode = os.fstat(fd).st_mode
    if not stat.S_ISREG(mode):
        os.close(fd)
        raise NotAFile(path, _kind_of(mode))
    os.set_blocking(fd, True)
    return os.fdopen(fd, "rb")


def read_regular(path: Path) -> bytes:
    """The bytes of the regular file ``path`` (:func:`open_regular`).

    Raises:
        NotAFile: ``path`` exists and is not a regular file.
        OSError: it cannot be read (missing: :class:`FileNotFoundError`), naming it.
    """
    with open_regular(path) as handle:
        return handle.read()


@contextmanager
def descriptor_path(path: Path) -> Iterator[str]:
    """A path naming the regular file ``path`` as :func:`open_regular` opened it (its open
    descriptor's ``/proc/self/fd/N``, or ``/dev/fd/N``), for a loader that takes only a path
    (``safetensors``' ``safe_open``): the file checked is the file it opens, whatever is
    renamed into ``path`` meanwhile (audit 15b F4). Where neither folder exists it is
    ``path`` itself, checked just before.

    Raises:
        NotAFile: ``path`` exists and is not a regular file.
        OSError: it cannot be opened (missing: :class:`FileNotFoundError`), naming it.
    """
    with open_regular(path) as handle:
        folder = next((f for f in ("/proc/self/fd", "/dev/fd") if os.path.isdir(f)), None)
        yield f"{folder}/{handle.fileno()}" if folder is not None else str(path)


def exists_as_file(path: Path) -> bool:
    """Whether a regular file is at ``path`` (links followed): ``False`` where nothing is
    (a dangling link included), ``True`` for a regular file, and a refusal for anything
    else, which a reader must never call missing nor open.

    Raises:
        NotAFile: ``path`` exists and is not a regular file (a folder included).
        OSError: ``path`` is a link loop (``ELOOP``, naming it).
    """
    kind = not_a_file(path)
    if kind is not None:
        raise NotAFile(path, kind)
    if path.is_symlink() and not path.exists():
        try:
            path.stat()
        except OSError as error:
            if error.errno == errno.ELOOP:  # a loop is no file, and no absence either
                raise OSError(errno.ELOOP, os.strerror(errno.ELOOP), str(path)) from None
    return path.is_file()


def refuse_special_entries(folder: Path, depth: int = 2) -> None:
    """Refuse a folder holding a FIFO, a device or a socket (links followed), down to
    ``depth`` levels, before it is handed whole to a loader that opens its files without
    :func:`open_regular`'s check (``transformers``' ``from_pretrained``, ``safetensors``,
    ``torch.load``): a FIFO there would hang the load. Folders and regular files pass (a
    dangling link too: the loader names it missing).

    Raises:
        NotAFile: naming the first such entry, in name order.
    """
    if depth <= 0 or not folder.is_dir():
        return
    for entry in sorted(folder.iterdir()):
        kind = not_a_file(entry)
        if kind == "a folder":
            if not entry.is_symlink():
                refuse_special_entries(entry, depth - 1)
        elif kind is not None:
            raise NotAFile(entry, kind)


class NotJSON(ValueError):
    """Bytes that are not a JSON document stategym can read; ``str()`` says why in a few
    words, and ``line`` is where (``None`` when no line can be named).

    Args:
        reason: why, e.g. ``not JSON (Expecting value)``.
        line: the 1-based line of the failure, where known.
    """

    def __init__(self, reason: str, line: int | None = None) -> None:
        super().__init__(reason)
        self.line = line

    def where(self, path: Path) -> str:
        """``FILE:LINE: reason`` (``FILE: reason`` without a line)."""
        at = f"{path}:{self.line}" if self.line is not None else f"{path}"
        return f"{at}: {self}"


def json_value(data: bytes) -> Any:
    """The JSON value the UTF-8 bytes ``data`` hold (the standard library's parser).

    Raises:
        NotJSON: not UTF-8 (the byte named), not JSON (its parser's reason), nested deeper
            than Python's recursion limit, or an integer longer than Python converts (4300
            digits): every way the parse fails, so no reader lets one through as a traceback.
    """
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as error:
        line = data[: error.start].count(b"\n") + 1
        raise NotJSON(f"not UTF-8 text (byte {error.start})", line) from None
    try:
        return json.loads(text)
    except json.JSONDecodeError as error:
        raise NotJSON(f"not JSON ({error.msg})", error.lineno) from None
    except RecursionError:
        raise NotJSON("not JSON stategym reads (nested too deeply)") from None
    except ValueError as error:  # int(): "Exceeds the limit (4300 digits) ..."
        reason = str(error).split(":")[0] or "a number it cannot convert"
        raise NotJSON(f"not JSON stategym reads ({reason})") from None


def read_json(path: Path) -> Any:
    """The JSON value of the file ``path`` (:func:`json_value`).

    Raises:
        UsageError: ``FILE:LINE: why`` where it cannot be parsed, or ``path`` is a folder, a
            device or a FIFO (reading a FIFO would wait for a writer forever).
    """
    try:
        return json_value(read_regular(path))
    except NotAFile as error:
        raise UsageError(f"{path} is {error.why}: not a JSON file") from None
    except NotJSON as error:
        raise UsageError(error.where(path)) from None
