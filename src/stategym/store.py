"""The SQLite index of run directories: one row per run directory, wherever it lives.

``stategym run`` records every run in one project-wide index, ``runs/index.sqlite`` under
the current folder (:data:`DEFAULT_INDEX`, like ``mlruns``; ``--index PATH`` picks another),
whatever ``--out`` is, so ``--out mydir`` does not leave an index in the current folder.
A row is keyed by the run directory's absolute path, so two run directories with the same
name in different folders are two rows. The index only points at run directories and
copies a few headline numbers; the trajectories stay the source of truth and the row is
rewritten whenever the run is resumed.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from contextlib import closing, contextmanager
from dataclasses import astuple, dataclass, fields
from pathlib import Path

from stategym.kernel.errors import UsageError

INDEX_NAME = "index.sqlite"
DEFAULT_INDEX = Path("runs") / INDEX_NAME
"""Where ``stategym run`` indexes runs unless told otherwise (relative to the current folder)."""
SCHEMA_VERSION = 2
"""Stored in ``PRAGMA user_version``; version 1 (rows keyed by name) is migrated, any other
version is refused, and so is a file that is not a SQLite database or whose ``runs`` table
is another program's (:class:`~stategym.kernel.errors.UsageError`, naming the file)."""

_SCHEMA = """
CREATE TABLE IF NOT EXISTS runs (
    path TEXT PRIMARY KEY,
    name TEXT NOT NULL,
    domain TEXT NOT NULL,
    agent TEXT NOT NULL,
    knobs TEXT NOT NULL,
    episodes INTEGER NOT NULL,
    goal_rate REAL NOT NULL,
    version TEXT NOT NULL,
    created TEXT NOT NULL,
    updated TEXT NOT NULL
)
"""


@dataclass(frozen=True, slots=True)
class RunRecord:
    """One indexed run.

    Attributes:
        name: the run directory's name.
        path: the run directory, absolute (unique within one index).
        domain: domain name.
        agent: agent spec (``expert``, ``openai:MODEL``...).
        knobs: knobs as ``Knobs.describe()`` writes them.
        episodes: trajectories in the run.
        goal_rate: share of them that reached the goal.
        version: the stategym version that last wrote the run.
        created: when the run was first indexed (ISO 8601, UTC).
        updated: when it was last indexed (ISO 8601, UTC).
    """

    name: str
    path: str
    domain: str
    agent: str
    knobs: str
    episodes: int
    goal_rate: float
    version: str
    created: str
    updated: str


@contextmanager
def _connect(db: Path) -> Iterator[sqlite3.Connection]:
    """The index, its schema made current; whatever SQLite refuses is a :class:`UsageError`
    naming the file (the user picked it with ``--index``)."""
    if db.is_dir():
        raise UsageError(f"run index {db} is a folder, not a SQLite file; give --index a file")
    try:
        with closing(sqlite3.connect(db)) as connection:
            (version,) = connection.execute("PRAGMA user_version").fetchone()
            if version not in (0, 1, SCHEMA_VERSION):
                raise UsageError(
                    f"run index {db} has schema {version}, expected {SCHEMA_VERSION} "
                    "(written by another stategym version?); give --index another file"
                )
            with connection:  # one transaction: committed on success, rolled back on error
                if version == 1:
                    _migrate_v1(connection)
                connection.execute(_SCHEMA)
                _check_table(connection, db)  # before the version is stamped on a foreign file
                connection.execute(f"PRAGMA user_version = {SCHEMA_VERSION}")
                yield connection
    except sqlite3.Error as error:
        raise UsageError(
            f"run index {db} is not a usable stategym run index: {error}; give --index another file"
        ) from None


def _check_table(connection: sqlite3.Connection, db: Path) -> None:
    """Refuse a ``runs`` table that is not the index's (another program's file)."""
    found = {row[1]: bool(row[5]) for row in connection.execute("PRAGMA table_info(runs)")}
    expected = {f.name: f.name == "path" for f in fields(RunRecord)}
    if found != expected:
        raise UsageError(
            f"run index {db} has a runs table with columns ({', '.join(found)}), not "
            f"stategym's ({', '.join(expected)}, keyed by path); give --index another file"
        )


def check(db: Path) -> None:
    """Refuse, before a run starts, an index that :func:`upsert` could not write (a missing
    one is fine: it is created when the run is recorded).

    Raises:
        UsageError: ``db`` is a folder, not a SQLite file, or not a run index.
    """
    if _present(db):
        with _connect(db):
            pass


def _present(db: Path) -> bool:
    """Whether ``db`` exists; an error other than a missing file (a symlink loop, a name
    too long) is raised, naming the path, where ``Path.exists`` would say False and let the
    run play all its episodes before the index fails."""
    try:
        db.stat()
    except FileNotFoundError:
        return False
    return True


def _migrate_v1(connection: sqlite3.Connection) -> None:
    """Version 1 keyed rows by name (one index per folder of runs); re-key them by path."""
    names = ", ".join(f.name for f in fields(RunRecord))
    connection.execute("ALTER TABLE runs RENAME TO runs_v1")
    connection.execute(_SCHEMA)
    connection.execute(f"INSERT OR REPLACE INTO runs ({names}) SELECT {names} FROM runs_v1")
    connection.execute("DROP TABLE runs_v1")


def upsert(db: Path, record: RunRecord) -> None:
    """Insert the run, or update its row; a row's ``created`` is never changed."""
    names = [f.name for f in fields(RunRecord)]
    updates = ", ".join(f"{n} = excluded.{n}" for n in names if n not in ("path", "created"))
    db.parent.mkdir(parents=True, exist_ok=True)
    with _connect(db) as connection:
        connection.execute(
            f"INSERT INTO runs ({', '.join(names)}) VALUES ({', '.join('?' * len(names))}) "
            f"ON CONFLICT(path) DO UPDATE SET {updates}",
            astuple(record),
        )


def remove(db: Path, path: str) -> None:
    """Forget the run at ``path`` (``--overwrite`` starts a new run in the same directory)."""
    if _present(db):
        with _connect(db) as connection:
            connection.execute("DELETE FROM runs WHERE path = ?", (path,))


def runs(db: Path) -> list[RunRecord]:
    """Every indexed run, oldest first; an index that does not exist lists nothing."""
    if not _present(db):
        return []
    with _connect(db) as connection:
        rows = connection.execute(
            f"SELECT {', '.join(f.name for f in fields(RunRecord))} FROM runs "
            "ORDER BY created, name, path"
        ).fetchall()
    return [RunRecord(*row) for row in rows]
