"""E2's smoke configuration end to end: three trained arms, two held-out sets, curves."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import orjson
import pytest
from experiment_checks import check_images, estimates

pytest.importorskip("torch")

from stategym.cli import main
from stategym.experiments import e2
from stategym.experiments.configs import E2

SEEDS = "0,1"


def _run(out: Path) -> Path:
    assert main(["experiment", "e2", "--smoke", "--seeds", SEEDS, "--out", str(out)]) == 0
    return out


@pytest.fixture(scope="module")
def run_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return _run(tmp_path_factory.mktemp("e2"))


@pytest.fixture(scope="module")
def results(run_dir: Path) -> dict[str, Any]:
    return orjson.loads((run_dir / "results.json").read_bytes())


def test_every_file_is_written(run_dir: Path, results: dict[str, Any]) -> None:
    for name in ("results.json", "raw.json", "table.md"):
        assert (run_dir / name).stat().st_size > 0
    check_images(run_dir / "plots", ("ask_rate", "r_must_ask", "grpo_curves"))
    for seed in (0, 1):  # every arm trained through the trainer's API, into its own run
        for arm in e2.ARMS:
            assert (run_dir / "runs" / f"seed-{seed}" / arm / "model" / "config.json").is_file()
    assert results["cpu_seconds"] > 0


def test_numbers_are_in_range_and_intervals_contain_the_mean(results: dict[str, Any]) -> None:
    assert results["arms"] == list(e2.ARMS) and results["sets"] == list(e2.SETS)
    found = list(estimates(results["estimates"]))
    assert len(found) == len(e2.ARMS) * len(e2.SETS) * len(e2.COLUMNS)
    for where, e in found:
        if e["mean"] is None:  # undefined (no stated task drawn): nothing to bound
            continue
        least = -1.0 if where.endswith("/composite") else 0.0
        most = np.inf if where.endswith("/needless") else 1.0
        assert least <= e["low"] <= e["mean"] <= e["high"] <= most, where
        assert e["n"] == E2["smoke"].resamples


def test_held_out_seed_blocks_are_disjoint_and_include_must_ask_tasks(
    results: dict[str, Any],
) -> None:
    episodes = E2["smoke"].episodes
    assert results["eval_seeds"] == {"0": [0, episodes - 1], "1": [episodes, 2 * episodes - 1]}
    for arm in e2.ARMS:
        for name in e2.SETS:
            assert results["estimates"][arm][name]["ask_rate"]["mean"] is not None, (arm, name)


def test_raw_numbers_reproduce_the_ask_rate(run_dir: Path, results: dict[str, Any]) -> None:
    raw = orjson.loads((run_dir / "raw.json").read_bytes())
    values = np.asarray(raw["values"])
    assert values.shape == (3, 2, 2, E2["smoke"].episodes, len(e2.PER_TASK))
    arm, held_out = e2.ARMS.index("expert-sft"), e2.SETS.index("ask-or-act-heldout")
    mine = values[arm, held_out]
    asked = mine[..., e2.PER_TASK.index("asked")].sum()
    must = mine[..., e2.PER_TASK.index("must_ask")].sum()
    ask = results["estimates"]["expert-sft"]["ask-or-act-heldout"]["ask_rate"]["mean"]
    assert ask == pytest.approx(asked / must)
    # askgate2 hides two slots where askgate1 hides one: the held-out set has more to ask
    train_must = values[arm, 0][..., e2.PER_TASK.index("must_ask")].sum()
    assert must > train_must


def test_the_curves_hold_every_grpo_iteration(results: dict[str, Any]) -> None:
    iterations = E2["smoke"].recipe.iterations
    for lines in results["curves"].values():
        assert [m["iteration"] for m in lines] == list(range(1, iterations + 1))
        assert all(0.0 <= m["goal_rate"] <= 1.0 for m in lines)


def test_the_same_seeds_give_the_same_numbers(
    run_dir: Path, tmp_path: Path, results: dict[str, Any]
) -> None:
    again = _run(tmp_path / "again")
    first = orjson.loads((run_dir / "raw.json").read_bytes())
    second = orjson.loads((again / "raw.json").read_bytes())
    assert first == second
    assert orjson.loads((again / "results.json").read_bytes())["estimates"] == results["estimates"]


def test_finite_means_skip_undefined_iterations() -> None:
    nan = float("nan")
    means = e2.finite_means([[0.0, nan, 1.0], [1.0, nan, nan]])
    assert means[0] == 0.5 and np.isnan(means[1]) and means[2] == 1.0


def test_a_given_model_starts_every_arm_and_plays_on_the_given_device(
    run_dir: Path, tmp_path: Path
) -> None:
    """``--model`` (a GPU run's Hugging Face id; here a folder of a trained tiny model)
    replaces the tiny build in every SFT arm, with ``--device`` and ``--dtype`` passed to
    training and to the held-out play; the rest of the run is unchanged."""
    start = run_dir / "runs" / "seed-0" / "expert-sft" / "model"
    out = tmp_path / "given"
    argv = ["experiment", "e2", "--smoke", "--seeds", "0", "--out", str(out)]
    assert main([*argv, "--model", str(start), "--device", "cpu", "--dtype", "float32"]) == 0
    for arm in ("oracle-sft", "expert-sft"):
        config = orjson.loads((out / "runs" / "seed-0" / arm / "config.json").read_bytes())
        assert config["init"] == str(start) and config["device"] == "cpu"
    written = orjson.loads((out / "results.json").read_bytes())
    assert written["config"]["recipe"]["init"] == str(start)


def test_model_options_are_refused_where_nothing_trains(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["experiment", "e0", "--smoke", "--model", "some/model"]) == 2
    assert "belong to the experiments that train" in capsys.readouterr().err
