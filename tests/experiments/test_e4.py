"""E4's smoke configuration end to end: token-level vs round-aware credit on parallelism."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import orjson
import pytest
from experiment_checks import check_images, estimates

pytest.importorskip("torch")

from stategym.cli import main
from stategym.experiments import e4
from stategym.experiments.configs import E4


@pytest.fixture(scope="module")
def run_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("e4")
    assert main(["experiment", "e4", "--smoke", "--seeds", "0", "--out", str(out)]) == 0
    return out


@pytest.fixture(scope="module")
def results(run_dir: Path) -> dict[str, Any]:
    return orjson.loads((run_dir / "results.json").read_bytes())


def test_every_file_is_written(run_dir: Path) -> None:
    for name in ("results.json", "raw.json", "table.md"):
        assert (run_dir / name).stat().st_size > 0
    check_images(run_dir / "plots", ("curves",))
    for arm in ("sft", *E4["smoke"].credits):
        assert (run_dir / "runs" / "seed-0" / arm / "model" / "config.json").is_file(), arm


def test_numbers_are_in_range_and_intervals_contain_the_mean(results: dict[str, Any]) -> None:
    assert list(results["final"]) == list(E4["smoke"].credits)
    for where, e in estimates(results["final"]):
        if e["mean"] is None:  # a smoke policy may make no tool round: no parallel rate
            assert where.endswith("/parallel_rate"), where
            continue
        least = -1.0 if where.endswith("/composite") else 0.0
        most = np.inf if where.endswith("/rounds_over_path") else 1.0
        assert least <= e["low"] <= e["mean"] <= e["high"] <= most, where


def test_raw_numbers_reproduce_the_parallel_rate(run_dir: Path, results: dict[str, Any]) -> None:
    values = np.asarray(orjson.loads((run_dir / "raw.json").read_bytes())["values"])
    assert values.shape == (2, 1, E4["smoke"].episodes, len(e4.PER_TASK))
    mine = values[0]
    tool = mine[..., e4.PER_TASK.index("tool_rounds")].sum()
    parallel = mine[..., e4.PER_TASK.index("parallel_rounds")].sum()
    rate = results["final"]["outcome"]["parallel_rate"]["mean"]
    assert rate == (None if tool == 0 else pytest.approx(parallel / tool))
    assert (mine[..., e4.PER_TASK.index("critical_path")] > 0).all()  # the chain has depth


def test_the_curves_hold_every_iteration(results: dict[str, Any]) -> None:
    iterations = E4["smoke"].recipe.iterations
    for lines in results["curves"].values():
        assert [m["iteration"] for m in lines["0"]] == list(range(1, iterations + 1))
        assert all(0.0 <= m["parallel_rate"] <= 1.0 for m in lines["0"])
