"""``stategym run``: decision quality beside the outcome, exact resume, the project-wide index."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import orjson
import pytest
from rich.console import Console

from stategym import store
from stategym.cli import build_parser, main
from stategym.commands import run as run_command
from stategym.kernel.errors import UsageError
from stategym.kernel.trajectory import loads
from stategym.metrics import score
from stategym.rundir import RunDir
from stategym.summary import summarise_quality


@pytest.fixture(autouse=True)
def _in_tmp(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)


@pytest.fixture
def console(monkeypatch: pytest.MonkeyPatch) -> Console:
    """The command's console: 80 columns, recorded."""
    recorded = Console(width=80, record=True)
    monkeypatch.setattr("rich.console.Console", lambda *a, **k: recorded)
    return recorded


def run(*options: str, out: str = "mydir") -> int:
    return main(["run", "--out", out, *options])


def summary(out: str = "mydir") -> dict[str, Any]:
    document: dict[str, Any] = orjson.loads(Path(out, "summary.json").read_bytes())
    return document


def seeds_in_file(out: str = "mydir") -> list[int]:
    return [loads(line).seed for line in Path(out, "trajectories.jsonl").read_bytes().splitlines()]


def test_run_prints_and_saves_decision_quality_beside_the_outcome(console: Console) -> None:
    assert run("--agent", "ask-nothing", "--episodes", "4") == 0
    text = console.export_text()
    assert "…" not in text and max(len(line) for line in text.splitlines()) <= 80
    trajectories, _ = RunDir(Path("mydir")).load()
    quality = summarise_quality(score(t) for t in trajectories)
    assert summary()["decision_quality"] == quality.to_json()
    assert summary()["summary_version"] == 2
    assert quality.clarification < 1.0  # ask-nothing guesses what only the user knows
    for name in ("composite", "clarification", "priority", "parallelism", "risk"):
        assert f"{getattr(quality, name):.3f}" in text
    for header in ("R", "clar", "prio", "par", "risk", "goal rate", "format errors"):
        assert f" {header} " in text
    results = Path("mydir/results.md").read_text()
    assert f"| 4 | {summary()['aggregates']['goal_rate']:.3f} | {quality.composite:.3f} |" in (
        results
    )


def test_resume_reports_exactly_the_requested_seeds(console: Console) -> None:
    assert run("--episodes", "6") == 0
    before = Path("mydir/trajectories.jsonl").read_bytes()
    assert run("--episodes", "3") == 0  # fewer than the folder holds
    assert Path("mydir/trajectories.jsonl").read_bytes() == before  # nothing played or lost
    assert summary()["aggregates"]["episodes"] == 3 and summary()["config"]["seeds"] == "0-2"
    assert summary()["decision_quality"]["episodes"] == 3
    assert run("--episodes", "4", "--seed", "4") == 0  # 4, 5 reused; 6, 7 played
    assert seeds_in_file() == [0, 1, 2, 3, 4, 5, 6, 7]
    assert summary()["config"]["seeds"] == "4-7"
    assert summary()["aggregates"]["episodes"] == 4
    (row,) = store.runs(Path("runs/index.sqlite"))
    assert row.episodes == 4
    text = " ".join(console.export_text().split())
    assert "reusing 3 of the 6 episode(s) there, playing 0" in text
    assert "reusing 2 of the 6 episode(s) there, playing 2" in text


def test_the_index_is_project_wide_not_beside_the_run(console: Console) -> None:
    assert run("--episodes", "1") == 0
    assert not Path("index.sqlite").exists()  # not in --out's parent, the current folder
    (row,) = store.runs(Path("runs/index.sqlite"))
    assert row.path == str(Path("mydir").resolve())
    assert run("--episodes", "1", "--index", "elsewhere/idx.sqlite", out="a/mydir") == 0
    (other,) = store.runs(Path("elsewhere/idx.sqlite"))
    assert other.name == "mydir" and other.path == str(Path("a/mydir").resolve())
    text = " ".join(console.export_text().split())
    assert "in runs/index.sqlite" in text and "in elsewhere/idx.sqlite" in text
    assert run("--episodes", "1", "--agent", "serial", "--overwrite") == 0
    (row,) = store.runs(Path("runs/index.sqlite"))
    assert row.agent == "serial"


def test_resume_refuses_a_corrupt_line_in_the_middle() -> None:
    assert run("--episodes", "3") == 0
    path = Path("mydir/trajectories.jsonl")
    first, _, third = path.read_bytes().splitlines(keepends=True)
    path.write_bytes(first + b"{oops\n" + third)
    args = build_parser().parse_args(["run", "--out", "mydir", "--episodes", "3"])
    with pytest.raises(UsageError, match=r"mydir/trajectories.jsonl:2: not JSON"):
        run_command.main(args)
    assert path.read_bytes() == first + b"{oops\n" + third  # left as it was


def test_resume_refuses_duplicated_seeds() -> None:
    assert run("--episodes", "2") == 0
    path = Path("mydir/trajectories.jsonl")
    path.write_bytes(path.read_bytes() * 2)
    args = build_parser().parse_args(["run", "--out", "mydir", "--episodes", "2"])
    with pytest.raises(UsageError, match=r"2 duplicated episode\(s\).*travel seed 0 agent expert"):
        run_command.main(args)
