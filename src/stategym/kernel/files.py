"""Files written whole and JSON files read back: the two rules every command shares.

**Writing.** Every file a command rewrites (a run's summary, an experiment's tables, a
report, a trainer's settings and metrics) goes through :func:`replace_bytes`: the new bytes
are written to ``PATH.partial``, which is renamed over ``PATH``, so an interruption leaves
the old file or the new one. A rename replaces whatever the name held, so a ``PATH`` that
exists and is not a regular file (a folder, a device such as ``/dev/null``, a FIFO, a
socket: :func:`not_a_file`) is refused (:func:`refuse_non_file`), never replaced: run as
root, renaming a page over ``/dev/null`` once replaced the machine's null device. Commands
make the same check up front, on every path they will replace, before anything is read or
played; :func:`replace_bytes` makes it again as the last line of defence. A failed write
or rename removes its ``.partial`` and names ``PATH``, the file the user knows, not the
``.partial``. Writing *through* a path (``topology --draw /dev/stdout``) is another matter:
nothing is replaced, and those commands do not use this rule.

**Reading JSON.** :func:`json_value` is the one way stategym parses a JSON file it reads
with the standard library: every way the parse can fail (bytes that are not UTF-8, text
that is not JSON, nesting deeper than Python's recursion limit, an integer of more than
4300 digits) is one :class:`NotJSON` (a ``ValueError``) saying why in a few words, never a
``RecursionError`` or a traceback. :func:`read_json` turns it into the one-line
:class:`~stategym.kernel.errors.UsageError` naming ``FILE:LINE``; readers with advice of
their own (a damaged checkpoint: delete its folder) catch :class:`NotJSON` and add it.
"""

from __future__ import annotations

import json
import os
import stat
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
    if not path.exists() or path.is_file():  # exists(): a dangling link or a loop is absent
        return None
    if path.is_dir():
        return "a folder"
    mode = path.stat().st_mode
    return next((name for test, name in _SPECIAL if test(mode)), "not a regular file")


def refuse_non_file(path: Path, name: str | None = None) -> None:
    """Refuse to replace ``path`` where it exists and is not a regular file.

    Args:
        path: the file a command will write whole.
        name: how the message names it (``--out report.html``); ``path`` by default.

    Raises:
        UsageError: naming the path, what it is, and what to do.
    """
    kind = not_a_file(path)
    if kind is not None:
        raise UsageError(
            f"{name or path} is {kind}, not a regular file: stategym writes {path.name} whole, "
            f"by renaming a new file over it, which would replace {kind}; move it away or "
            "give another path"
        )


def refuse_non_files(folder: Path, names: tuple[str, ...] | list[str]) -> None:
    """:func:`refuse_non_file` for each of the files ``names`` a command writes in ``folder``
    (called before the command reads or plays anything)."""
    for name in names:
        refuse_non_file(folder / name)


def replace_bytes(path: Path, data: bytes) -> Path:
    """Write ``path`` whole or not at all: ``data`` goes to ``PATH.partial``, which then
    replaces ``path`` in one step (:func:`os.replace`), so an interruption leaves the old
    file or the new one, never a mix of the two. Returns ``path``.

    A ``.partial`` left by an interrupted write is removed first (never written through:
    a link there would lead the bytes elsewhere), and removed again if this write fails.

    Raises:
        UsageError: ``path`` exists and is not a regular file (:func:`refuse_non_file`).
        OSError: the write or the rename failed, naming ``path``.
    """
    refuse_non_file(path)
    partial = path.with_name(path.name + ".partial")
    partial.unlink(missing_ok=True)
    try:
        with partial.open("xb") as handle:
            handle.write(data)
        os.replace(partial, path)
    except OSError as error:
        partial.unlink(missing_ok=True)
        raise _naming(error, path) from None
    except BaseException:  # Ctrl-C mid-write: the old file stays, and no .partial with it
        partial.unlink(missing_ok=True)
        raise
    return path


def _naming(error: OSError, path: Path) -> OSError:
    """``error`` as raised for ``path`` (the ``.partial`` or the rename is an inner step the
    user never named)."""
    if error.errno is None:
        return error
    return type(error)(error.errno, error.strerror, str(path))


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
    kind = not_a_file(path)
    if kind is not None:
        raise UsageError(f"{path} is {kind}, not a JSON file")
    try:
        return json_value(path.read_bytes())
    except NotJSON as error:
        raise UsageError(error.where(path)) from None
