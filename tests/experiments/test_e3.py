"""E3's smoke configuration end to end: the zero-shot arm through the protocol and the
n-episode fine-tuning arm (tiny SFT runs) on the same cells."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import orjson
import pytest
from experiment_checks import check_images, estimates

from stategym.cli import main
from stategym.experiments import e3_finetune
from stategym.experiments.configs import E3
from stategym.experiments.e3 import K_SHOT
from stategym.topology.generalisation import ProtocolConfig
from stategym.topology.split import Cell

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
    assert results["not_run"] == [K_SHOT]
    table = (run_dir / "table.md").read_text()
    assert K_SHOT in table
    assert "per-dimension gaps" in table
    for n in E3["smoke"].finetune:
        assert f"| sft-n{n} |" in table


def test_seed_blocks_are_disjoint(results: dict[str, Any]) -> None:
    first = results["first_seeds"]
    assert first["1"] - first["0"] == E3["smoke"].episodes


def test_bands_are_probabilities_and_intervals_contain_the_mean(results: dict[str, Any]) -> None:
    tuned = [e3_finetune.arm_name(n) for n in E3["smoke"].finetune]
    assert results["finetuned"] == tuned
    assert list(results["agents"]) == [*E3["smoke"].agents, *tuned]
    for agent, mine in results["agents"].items():
        assert mine["bands"], agent
        for where, e in estimates(mine["bands"]):
            least = -1.0 if where.endswith("/composite") else 0.0
            assert least <= e["low"] <= e["mean"] <= e["high"] <= 1.0, (agent, where)
        collapse = mine["collapse"]
        assert 0.0 <= collapse["low"] <= collapse["mean"] <= collapse["high"] <= 1.0
        attraction = mine["attraction"]
        assert 0.0 <= attraction["low"] <= attraction["mean"] <= attraction["high"] <= 1.0
        assert len(mine["reports"]) == 2
        assert set(mine["gaps"]) <= {"close", "near", "far"} and mine["gaps"], agent
        for where, e in estimates(mine["gaps"]):
            # a difference of two means: within [-1, 1], R's within [-2, 2]
            most = 2.0 if where.endswith("/composite") else 1.0
            assert -most <= e["low"] <= e["mean"] <= e["high"] <= most, (agent, where)


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


def test_each_fine_tuned_arm_trained_on_its_n_and_played_every_cell(
    run_dir: Path, results: dict[str, Any]
) -> None:
    for n in E3["smoke"].finetune:
        for seed in (0, 1):
            config = orjson.loads(
                (run_dir / "runs" / f"seed-{seed}" / f"sft-n{n}" / "config.json").read_bytes()
            )
            assert config["episodes"] == n and config["agents"] == "expert"
            assert config["domain"] == E3["smoke"].train[0]
        for report in results["agents"][f"sft-n{n}"]["reports"]:
            assert report["notes"] == [e3_finetune.NOTE]
            assert report["config"]["agent"] == f"sft-n{n}"
            # every cell played (the report's cell rows hold the agent's means)
            assert all("composite" in c for c in report["cells"])
            assert len(report["cells"]) == len(results["cells"])


def test_a_fine_tuned_arm_is_reproduced_bit_for_bit(run_dir: Path, tmp_path: Path) -> None:
    """Training seed 0's smallest arm again, in a fresh directory: the same episodes' numbers."""
    config, n = E3["smoke"], E3["smoke"].finetune[0]
    raw = orjson.loads((run_dir / "raw.json").read_bytes())
    results = orjson.loads((run_dir / "results.json").read_bytes())
    cells = [Cell.from_dict(c) for c in results["cells"]]
    knobs = ProtocolConfig("expert", config.train).knobs
    trained = e3_finetune.train_arm(config, 0, n, tmp_path, knobs)
    _, values = e3_finetune.play_block(trained, config, cells, 0, knobs)
    assert np.array_equal(np.asarray(values), np.asarray(raw["agents"][f"sft-n{n}"][0]))


def test_the_k_shot_arm_plays_each_llm_agent_with_k_demonstrations(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """An LLM agent (here a stand-in: the expert behind an ``x:y`` spec, recording what it
    is given) plays every cell once per ``k``; k expert demonstrations reach it for k > 0,
    none for k = 0; each ``k`` is its own row, summarised from its own reports."""
    from dataclasses import replace

    from stategym.agents import scripted
    from stategym.experiments import e3
    from stategym.topology import generalisation

    given: list[dict[str, Any]] = []
    real = generalisation.resolve

    def stand_in(domain: Any, agent: str, **options: Any) -> Any:
        if agent != "stand-in:llm":
            return real(domain, agent, **options)
        given.append(options)
        return scripted(domain, "expert")

    monkeypatch.setattr(generalisation, "resolve", stand_in)
    config = replace(
        E3["smoke"], agents=("serial",), finetune=(), llm_agents=("stand-in:llm",), shots=(0, 2),
        llm_options=(("temperature", 0.0),),
    )  # fmt: skip
    result = e3.run(config, (0,))
    rows = ["serial", e3.shot_name("stand-in:llm", 0), e3.shot_name("stand-in:llm", 2)]
    assert list(result.agents) == rows
    demonstrations = [o.get("demonstrations", "") for o in given]
    assert all(o["temperature"] == 0.0 for o in given)
    assert "" in demonstrations and any(demonstrations)  # k = 0 gets none, k = 2 gets some
    for k in (0, 2):
        mine = result.agents[e3.shot_name("stand-in:llm", k)]
        assert [r["config"]["shots"] for r in mine.reports] == [[k]]
        for band in mine.bands.values():  # the stand-in is the expert: perfect everywhere
            assert band["success"].mean == 1.0
    e3.write(result, tmp_path, 0.0)
    written = orjson.loads((tmp_path / "results.json").read_bytes())
    assert written["not_run"] == [] and list(written["agents"]) == rows
    assert K_SHOT not in (tmp_path / "table.md").read_text()


@pytest.mark.parametrize(
    ("name", "extra", "said"),
    [
        ("e3", ["--llm-agent", "expert"], "(openai:MODEL, hf:PATH), not 'expert'"),
        ("e3", ["--shots", "0,1"], "--shots needs an LLM agent"),
        ("e1", ["--llm-agent", "openai:m"], "belong to e0 and e3"),
        ("e3", ["--llm-agent", "hf:/no/such/model"], "no model folder at /no/such/model"),
        ("e3", ["--llm-agent", "llama:m"], "unknown LLM agent kind 'llama'"),
    ],
    ids=["scripted-spec", "shots-without-agent", "other-experiment", "missing-model", "kind"],
)
def test_k_shot_options_are_refused_where_they_do_not_apply(
    name: str, extra: list[str], said: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["experiment", name, "--smoke", *extra]) == 2
    assert said in capsys.readouterr().err
