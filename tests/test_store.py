"""The SQLite run index (stategym.store)."""

from __future__ import annotations

import sqlite3
from contextlib import closing
from dataclasses import astuple, replace
from pathlib import Path

import pytest

from stategym import store
from stategym.kernel.errors import UsageError

RECORD = store.RunRecord(
    "demo",
    "/x/runs/demo",
    "travel",
    "expert",
    "all on",
    10,
    0.9,
    "0.1.0",
    "2024-01-01T00:00:00+00:00",
    "2024-01-01T00:00:00+00:00",
)


def test_upsert_inserts_then_updates_keeping_created(tmp_path: Path) -> None:
    db = tmp_path / "index.sqlite"
    assert store.runs(db) == []
    store.upsert(db, RECORD)
    later = replace(
        RECORD,
        episodes=20,
        goal_rate=0.95,
        created="2025-01-01T00:00:00+00:00",
        updated="2025-01-01T00:00:00+00:00",
    )
    store.upsert(db, later)
    assert store.runs(db) == [replace(later, created=RECORD.created)]
    other = replace(RECORD, name="other", path="/x/runs/other", created="2024-06-01T00:00:00+00:00")
    store.upsert(db, other)
    assert [r.name for r in store.runs(db)] == ["demo", "other"]
    store.remove(db, RECORD.path)
    assert store.runs(db) == [other]


def test_one_index_keys_runs_by_path_so_equal_names_do_not_collide(tmp_path: Path) -> None:
    db = tmp_path / "nested" / "index.sqlite"  # its folder is created on first write
    elsewhere = replace(RECORD, path="/y/demo", episodes=3)
    store.upsert(db, RECORD)
    store.upsert(db, elsewhere)
    assert store.runs(db) == [RECORD, elsewhere]
    assert Path("runs/index.sqlite") == store.DEFAULT_INDEX


def test_a_version_1_index_is_migrated(tmp_path: Path) -> None:
    db = tmp_path / "index.sqlite"
    names = "name, path, domain, agent, knobs, episodes, goal_rate, version, created, updated"
    with closing(sqlite3.connect(db)) as connection, connection:
        connection.execute(
            "CREATE TABLE runs (name TEXT PRIMARY KEY, path TEXT NOT NULL, domain TEXT NOT NULL, "
            "agent TEXT NOT NULL, knobs TEXT NOT NULL, episodes INTEGER NOT NULL, "
            "goal_rate REAL NOT NULL, version TEXT NOT NULL, created TEXT NOT NULL, "
            "updated TEXT NOT NULL)"
        )
        connection.execute(
            f"INSERT INTO runs ({names}) VALUES (?,?,?,?,?,?,?,?,?,?)", astuple(RECORD)
        )
        connection.execute("PRAGMA user_version = 1")
    assert store.runs(db) == [RECORD]
    store.upsert(db, replace(RECORD, name="demo", path="/y/demo"))
    assert [r.path for r in store.runs(db)] == ["/x/runs/demo", "/y/demo"]
    with closing(sqlite3.connect(db)) as connection:
        assert connection.execute("PRAGMA user_version").fetchone() == (store.SCHEMA_VERSION,)


def test_unknown_schema_version_is_refused(tmp_path: Path) -> None:
    db = tmp_path / "index.sqlite"
    with closing(sqlite3.connect(db)) as connection:
        connection.execute("PRAGMA user_version = 99")
    with pytest.raises(UsageError, match="schema 99"):
        store.runs(db)
