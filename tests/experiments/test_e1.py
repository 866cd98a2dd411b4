"""E1's smoke configuration end to end: credit arms from one SFT start, two settings."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import orjson
import pytest
from experiment_checks import check_images, estimates

pytest.importorskip("torch")

from stategym.cli import main
from stategym.experiments import e1
from stategym.experiments.configs import E1


@pytest.fixture(scope="module")
def run_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("e1")
    assert main(["experiment", "e1", "--smoke", "--seeds", "0", "--out", str(out)]) == 0
    return out


@pytest.fixture(scope="module")
def results(run_dir: Path) -> dict[str, Any]:
    return orjson.loads((run_dir / "results.json").read_bytes())


def test_every_file_is_written(run_dir: Path) -> None:
    for name in ("results.json", "raw.json", "table.md"):
        assert (run_dir / name).stat().st_size > 0
    check_images(run_dir / "plots", tuple(f"curves_{s}" for s in e1.SETTINGS))
    for setting in e1.SETTINGS:  # one SFT start per setting, every credit from it
        root = run_dir / "runs" / "seed-0" / setting
        for arm in ("sft", *E1["smoke"].credits):
            assert (root / arm / "model" / "config.json").is_file(), (setting, arm)
        config = orjson.loads((root / "outcome" / "config.json").read_bytes())
        assert config["init"] == str(root / "sft") and config["knobs"] == e1.SETTINGS[setting]


def test_numbers_are_in_range_and_intervals_contain_the_mean(results: dict[str, Any]) -> None:
    arms = len(e1.SETTINGS) * len(E1["smoke"].credits)
    assert len(results["gaps"]) == len(results["final"]) == arms
    for where, e in estimates(results["final"]):
        least = -1.0 if where.endswith("/composite") else 0.0
        most = np.inf if where.endswith("/lost") else 1.0
        assert least <= e["low"] <= e["mean"] <= e["high"] <= most, where
    for where, e in estimates(results["gaps"]):
        assert -2.0 <= e["low"] <= e["mean"] <= e["high"] <= 2.0, where


def test_the_curves_hold_every_iteration(results: dict[str, Any]) -> None:
    iterations = E1["smoke"].recipe.iterations
    for lines in results["curves"].values():
        assert [m["iteration"] for m in lines["0"]] == list(range(1, iterations + 1))
        for m in lines["0"]:
            assert 0.0 <= m["goal_rate"] <= 1.0 and -1.0 <= m["composite"] <= 1.0
    gap = results["gaps"]["irreversible/outcome"]["mean"]
    assert gap == pytest.approx(e1.hacking_gap(results["curves"]["irreversible/outcome"]["0"]))


def test_the_stateless_control_has_no_commits_to_harm(run_dir: Path) -> None:
    raw = orjson.loads((run_dir / "raw.json").read_bytes())
    values = np.asarray(raw["values"])
    stateless = list(e1.SETTINGS).index("stateless")
    assert values.shape == (2, 2, 1, E1["smoke"].episodes, len(e1.PER_TASK))
    assert (values[stateless, ..., e1.PER_TASK.index("lost")] == 0).all()


def test_hacking_gap_is_goal_rise_less_r_rise() -> None:
    lines = [{"goal_rate": g, "composite": r} for g, r in ((0.1, 0.4), (0.5, 0.4), (0.9, 0.0))]
    assert e1.hacking_gap(lines) == pytest.approx(0.8 + 0.4)
