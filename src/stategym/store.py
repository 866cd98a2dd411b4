"""The SQLite index of run directories: one row per run, kept beside the runs it lists.

``stategym run --out runs/NAME`` records the run in ``runs/index.sqlite`` (the index lives
in the run directory's parent, so a folder of runs carries its own index). The index only
points at run directories and copies a few headline numbers; the trajectories stay the
source of truth and the row is rewritten whenever the run is resumed.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from contextlib import closing, contextmanager
from dataclasses import astuple, dataclass, fields
from pathlib import Path

INDEX_NAME = "index.sqlite"
SCHEMA_VERSION = 1
"""Stored in ``PRAGMA user_version``; an index with another version is refused."""

_SCHEMA = """
CREATE TABLE IF NOT EXISTS runs (
    name TEXT PRIMARY KEY,
    path TEXT NOT NULL,
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
        name: the run directory's name (unique within one index).
        path: the run directory, absolute, as it was when last indexed.
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


def index_path(run_dir: Path) -> Path:
    """Where the index for a run directory lives: ``<parent>/index.sqlite``."""
    return run_dir.resolve().parent / INDEX_NAME


@contextmanager
def _connect(db: Path) -> Iterator[sqlite3.Connection]:
    with closing(sqlite3.connect(db)) as connection:
        (version,) = connection.execute("PRAGMA user_version").fetchone()
        if version not in (0, SCHEMA_VERSION):
            raise RuntimeError(f"{db}: run index schema {version}, expected {SCHEMA_VERSION}")
        with connection:  # one transaction: committed on success, rolled back on error
            connection.execute(_SCHEMA)
            connection.execute(f"PRAGMA user_version = {SCHEMA_VERSION}")
            yield connection


def upsert(db: Path, record: RunRecord) -> None:
    """Insert the run, or update its row; a row's ``created`` is never changed."""
    names = [f.name for f in fields(RunRecord)]
    updates = ", ".join(f"{n} = excluded.{n}" for n in names if n not in ("name", "created"))
    with _connect(db) as connection:
        connection.execute(
            f"INSERT INTO runs ({', '.join(names)}) VALUES ({', '.join('?' * len(names))}) "
            f"ON CONFLICT(name) DO UPDATE SET {updates}",
            astuple(record),
        )


def remove(db: Path, name: str) -> None:
    """Forget a run (``--overwrite`` starts a new run under the same name)."""
    if db.exists():
        with _connect(db) as connection:
            connection.execute("DELETE FROM runs WHERE name = ?", (name,))


def runs(db: Path) -> list[RunRecord]:
    """Every indexed run, oldest first; an index that does not exist lists nothing."""
    if not db.exists():
        return []
    with _connect(db) as connection:
        rows = connection.execute(
            f"SELECT {', '.join(f.name for f in fields(RunRecord))} FROM runs "
            "ORDER BY created, name"
        ).fetchall()
    return [RunRecord(*row) for row in rows]
