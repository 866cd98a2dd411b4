"""A scorecard says which sample of its task it scores: ``eval --samples K`` writes K lines
of one seed to ``scores.jsonl``, which before told them apart by their order alone."""

from __future__ import annotations

from pathlib import Path

import orjson
import pytest

from stategym import Env, run_episode
from stategym.agents import resolve
from stategym.cli import main
from stategym.metrics import score


def _lines(path: Path) -> list[dict]:
    return [orjson.loads(line) for line in path.read_bytes().split(b"\n") if line]


def test_scores_jsonl_names_each_lines_sample(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    out = tmp_path / "e"
    argv = ["eval", "--domains", "travel", "--agents", "random", "--episodes", "2",
            "--samples", "3", "--out", str(out)]  # fmt: skip
    main(argv)
    logged, scored = _lines(out / "trajectories.jsonl"), _lines(out / "scores.jsonl")
    assert [s["sample"] for s in scored] == [t["run"]["sample"] for t in logged]
    assert sorted((s["seed"], s["sample"]) for s in scored) == [
        (seed, sample) for seed in range(2) for sample in range(3)
    ]


def test_a_scorecard_of_one_sample_is_sample_0() -> None:
    env = Env("travel")
    assert score(run_episode(env, resolve(env.domain, "expert"), seed=0)).sample == 0
