"""The SQLite run index (stategym.store)."""

from __future__ import annotations

import sqlite3
from contextlib import closing
from dataclasses import replace
from pathlib import Path

import pytest

from stategym import store

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
    other = replace(RECORD, name="other", created="2024-06-01T00:00:00+00:00")
    store.upsert(db, other)
    assert [r.name for r in store.runs(db)] == ["demo", "other"]
    store.remove(db, "demo")
    assert store.runs(db) == [other]


def test_index_lives_beside_the_run_directories(tmp_path: Path) -> None:
    assert store.index_path(tmp_path / "runs" / "demo") == (tmp_path / "runs" / "index.sqlite")


def test_unknown_schema_version_is_refused(tmp_path: Path) -> None:
    db = tmp_path / "index.sqlite"
    with closing(sqlite3.connect(db)) as connection:
        connection.execute("PRAGMA user_version = 99")
    with pytest.raises(RuntimeError, match="schema 99"):
        store.runs(db)
