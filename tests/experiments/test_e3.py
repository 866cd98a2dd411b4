"""E3's smoke configuration end to end: the zero-shot arm through the protocol."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import orjson
import pytest
from experiment_checks import check_images, estimates

from stategym.cli import main
from stategym.experiments.configs import E3
from stategym.experiments.pending import FINE_TUNING

SEEDS = "0,1"


@pytest.fixture(scope="module")
def run_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("e3")
    assert main(["experiment", "e3", "--smoke", "--seeds", SEEDS, "--out", str(out)]) == 0
    return out


@pytest.fixture(scope="module")
def results(run_dir: Path) -> dict[str, Any]:
    return orjson.loads((run_dir / "results.json").read_bytes())


def test_every_file_is_written(run_dir: Path, results: dict[str, Any]) -> None:
    for name in ("results.json", "raw.json", "table.md"):
        assert (run_dir / name).stat().st_size > 0
    check_images(run_dir / "plots", ("r_vs_distance", "bands"))
    assert results["not_run"] == [FINE_TUNING]
    assert FINE_TUNING in (run_dir / "table.md").read_text()


def test_seed_blocks_are_disjoint(results: dict[str, Any]) -> None:
    first = results["first_seeds"]
    assert first["1"] - first["0"] == E3["smoke"].episodes


def test_bands_are_probabilities_and_intervals_contain_the_mean(results: dict[str, Any]) -> None:
    assert list(results["agents"]) == list(E3["smoke"].agents)
    for agent, mine in results["agents"].items():
        assert mine["bands"], agent
        for where, e in estimates(mine["bands"]):
            least = -1.0 if where.endswith("/composite") else 0.0
            assert least <= e["low"] <= e["mean"] <= e["high"] <= 1.0, (agent, where)
        collapse = mine["collapse"]
        assert 0.0 <= collapse["low"] <= collapse["mean"] <= collapse["high"] <= 1.0
        assert len(mine["reports"]) == 2


def test_the_expert_is_perfect_in_every_band(results: dict[str, Any]) -> None:
    for band in results["agents"]["expert"]["bands"].values():
        assert band["success"]["mean"] == band["composite"]["mean"] == 1.0
    assert results["agents"]["expert"]["slope"]["mean"] == 0.0


def test_raw_holds_every_episode(run_dir: Path, results: dict[str, Any]) -> None:
    raw = orjson.loads((run_dir / "raw.json").read_bytes())
    cells = len(results["cells"])
    for values in raw["agents"].values():
        assert len(values) == 2
        assert all(len(block) == cells * E3["smoke"].episodes for block in values)
