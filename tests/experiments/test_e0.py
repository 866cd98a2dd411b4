"""E0's smoke configuration end to end: every file written, every number sane."""

from __future__ import annotations

import platform
from pathlib import Path
from typing import Any

import numpy as np
import orjson
import pytest
from experiment_checks import check_images, estimates

from stategym.agents import agent_names
from stategym.cli import main
from stategym.experiments import e0
from stategym.experiments.configs import E0, E0Config
from stategym.metrics import score
from stategym.metrics.litmus import litmus
from stategym.registry import all_domains
from stategym.rollout import Agents, episode_specs, stream

SEEDS = "0,1"


@pytest.fixture(scope="module")
def run_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("e0")
    assert main(["experiment", "e0", "--smoke", "--seeds", SEEDS, "--out", str(out)]) == 0
    return out


@pytest.fixture(scope="module")
def results(run_dir: Path) -> dict[str, Any]:
    return orjson.loads((run_dir / "results.json").read_bytes())


def test_every_file_is_written(run_dir: Path) -> None:
    for name in ("results.json", "raw.json", "table.md"):
        assert (run_dir / name).stat().st_size > 0
    check_images(run_dir / "plots", ("goal_vs_r", "dimensions"))


def test_every_agent_and_domain_is_estimated(results: dict[str, Any]) -> None:
    assert results["agents"] == list(agent_names())
    assert results["domains"] == list(all_domains())
    assert set(results["estimates"]) == {"pooled", *all_domains()}
    for per_agent in results["estimates"].values():
        assert list(per_agent) == list(agent_names())
        for columns in per_agent.values():
            assert list(columns) == list(e0.COLUMNS)
    assert results["seed_blocks"] == {"0": [0, 6], "1": [7, 13]}
    assert results["cpu_seconds"] > 0


def test_numbers_are_in_range_and_intervals_contain_the_mean(results: dict[str, Any]) -> None:
    found = list(estimates(results["estimates"]))
    assert len(found) == (len(all_domains()) + 1) * len(agent_names()) * len(e0.COLUMNS)
    for where, e in found:
        least = -1.0 if where.endswith("/composite") else 0.0
        assert least <= e["low"] <= e["mean"] <= e["high"] <= 1.0, where
        assert e["n"] == E0["smoke"].resamples


def test_rank_correlations_are_defined_and_in_range(results: dict[str, Any]) -> None:
    assert set(results["correlations"]) == {"pooled", *all_domains()}
    for name, c in results["correlations"].items():
        rho = c["spearman"]
        assert -1.0 <= rho["low"] <= rho["high"] <= 1.0, name
        assert -1.0 <= rho["mean"] <= 1.0, name
        assert c["agents"] == len(agent_names())


def test_the_expert_is_perfect_and_the_serial_agent_is_not(results: dict[str, Any]) -> None:
    pooled = results["estimates"]["pooled"]
    assert pooled["expert"]["success"]["mean"] == pooled["expert"]["composite"]["mean"] == 1.0
    assert pooled["expert"]["lucky_rate"]["mean"] == 0.0
    assert pooled["serial"]["composite"]["mean"] < pooled["serial"]["success"]["mean"]


def test_raw_numbers_reproduce_the_point_estimates(run_dir: Path, results: dict[str, Any]) -> None:
    raw = orjson.loads((run_dir / "raw.json").read_bytes())
    travel = np.asarray(raw["domains"]["travel"])
    assert travel.shape == (len(agent_names()), 2, E0["smoke"].tasks, len(e0.PER_TASK))
    agent = raw["agents"].index("ask-nothing")
    success = travel[agent, ..., e0.PER_TASK.index("success")].mean()
    mine = results["estimates"]["travel"]["ask-nothing"]
    assert mine["success"]["mean"] == pytest.approx(success)


def test_the_lucky_success_rate_is_the_litmus_one() -> None:
    config = E0Config("smoke", tasks=7, resamples=50, domains=("travel",), agents=("oracle",))
    result = e0.run(config, (0,))
    specs = episode_specs("travel", "oracle", range(7), {s: e0_knobs(s) for s in range(7)})
    cards = [score(t) for _, t in stream(specs, Agents())]
    expected = litmus(cards).lucky_success_rate
    assert expected > 0  # the oracle commits on facts it never heard
    assert result.estimates[("travel", "oracle")]["lucky_rate"].mean == pytest.approx(expected)


def e0_knobs(seed: int) -> Any:
    from stategym.metrics.taskset import knob_schedule

    return knob_schedule("mixed")(seed)


def test_the_same_seeds_give_the_same_numbers() -> None:
    config = E0Config("smoke", tasks=7, resamples=50, domains=("shop",), agents=("serial", "spray"))
    first, second = e0.run(config, (0, 1)), e0.run(config, (0, 1))
    # Compared as text: every float's repr is exact, and a rho that is undefined (the two
    # agents tie on goal rate, as they do here) is NaN in both, which == never equals.
    assert repr(first.estimates) == repr(second.estimates)
    assert repr(first.correlations) == repr(second.correlations)


def test_every_experiment_is_wired_to_what_it_needs() -> None:
    from stategym.experiments import EXPERIMENTS
    from stategym.experiments.pending import NEEDS_TRAINING

    assert not NEEDS_TRAINING  # e1, e2 and e4 train through stategym.experiments.arms
    assert EXPERIMENTS == ("e0", "e1", "e2", "e3", "e4")


def test_repeated_seeds_are_refused(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as stopped:
        main(["experiment", "e0", "--smoke", "--seeds", "0,0"])
    assert stopped.value.code == 2
    assert "distinct seeds" in capsys.readouterr().err


def test_an_llm_agent_is_played_beside_the_scripted_ones_with_its_options(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """``--llm-agent`` rows: a stand-in LLM (the expert behind an ``x:y`` spec) plays the
    same tasks after the scripted agents, given the LLM options; scripted agents are not."""
    import stategym.agents
    from stategym.agents import scripted

    given: list[tuple[str, dict[str, Any]]] = []
    real = stategym.agents.resolve

    def stand_in(domain: Any, agent: str, **options: Any) -> Any:
        given.append((agent, options))
        return scripted(domain, "expert") if agent == "stand-in:llm" else real(domain, agent)

    monkeypatch.setattr(stategym.agents, "resolve", stand_in)
    config = E0Config(
        "smoke", tasks=E0["smoke"].tasks, resamples=50, domains=("travel",),
        agents=("expert", "serial"), llm_agents=("stand-in:llm",),
        llm_options=(("temperature", 0.0),),
    )  # fmt: skip
    result = e0.run(config, (0,))
    assert result.agents == ("expert", "serial", "stand-in:llm")
    assert {a: o for a, o in given} == {
        "expert": {}, "serial": {}, "stand-in:llm": {"temperature": 0.0}
    }  # fmt: skip
    expert, llm = (result.estimates[("travel", a)] for a in ("expert", "stand-in:llm"))
    assert llm["success"].mean == expert["success"].mean == 1.0
    assert llm["composite"].mean == expert["composite"].mean


def test_results_name_what_ran_them(results: dict[str, Any]) -> None:
    # a trained arm's numbers follow the machine's float kernels: a reader comparing two
    # runs must be able to see what ran each (docs/experiments.md, E3)
    ran = results["environment"]
    assert ran["python"] == platform.python_version()
    assert ran["machine"] == platform.machine()
