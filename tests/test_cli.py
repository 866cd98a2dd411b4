"""CLI smoke tests: ``stategym list`` and ``stategym run`` into temporary run directories."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import orjson
import pytest

import stategym.agents
import stategym.rollout
from stategym import __version__, store
from stategym.cli import COMMANDS, main
from stategym.kernel.knobs import Knobs
from stategym.kernel.trajectory import loads, read_jsonl, replay
from stategym.rundir import RunDir
from stategym.summary import summarise


@pytest.fixture(autouse=True)
def _in_tmp(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)


def run(*options: str, out: str = "runs/r") -> int:
    return main(["run", "--out", out, *options])


def lines(out: str = "runs/r") -> list[bytes]:
    return Path(out, "trajectories.jsonl").read_bytes().splitlines()


def summary(out: str = "runs/r") -> dict[str, Any]:
    document: dict[str, Any] = orjson.loads(Path(out, "summary.json").read_bytes())
    return document


def test_list_shows_domains_agents_and_knobs(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("COLUMNS", "240")  # rich would shorten cells to fit 80 columns
    assert main(["list"]) == 0
    text = capsys.readouterr().out
    for word in ("travel", "stategym/Travel-v0", "expert", "random", "dynamics", "hidden_info"):
        assert word in text


def test_run_writes_trajectories_summary_and_index() -> None:
    assert run("--episodes", "5", "--seed", "3", "--knobs", "dynamics=off") == 0
    trajectories = [loads(line) for line in lines()]
    assert [t.seed for t in trajectories] == [3, 4, 5, 6, 7]
    assert {(t.domain, t.agent, t.knobs) for t in trajectories} == {
        ("travel", "expert", Knobs(dynamics=False))
    }
    document = summary()
    assert document["name"] == "r"
    assert document["config"] == {
        "domain": "travel",
        "agent": "expert",
        "knobs": Knobs(dynamics=False).describe(),
        "seeds": "3-7",
        "options": {},
        "stategym_version": __version__,
    }
    assert document["aggregates"] == summarise(trajectories).to_json()
    assert document["aggregates"]["episodes"] == 5
    (row,) = store.runs(Path("runs/index.sqlite"))
    assert (row.name, row.domain, row.agent, row.episodes) == ("r", "travel", "expert", 5)
    assert row.goal_rate == document["aggregates"]["goal_rate"]
    assert row.path == str(Path("runs/r").resolve())


def test_resume_skips_finished_seeds_and_matches_a_fresh_run() -> None:
    assert run("--episodes", "3") == 0
    first = lines()
    (before,) = store.runs(Path("runs/index.sqlite"))
    assert run("--episodes", "6") == 0
    resumed = lines()
    assert resumed[:3] == first  # finished episodes are not played again
    assert [loads(line).seed for line in resumed] == list(range(6))
    assert run("--episodes", "6", out="runs/fresh") == 0
    assert lines("runs/fresh") == resumed  # resuming gives the same bytes as one run
    assert summary("runs/fresh")["aggregates"] == summary()["aggregates"]
    rows = {r.name: r for r in store.runs(Path("runs/index.sqlite"))}
    assert rows["r"].episodes == 6
    assert rows["r"].created == before.created


def test_cut_last_line_is_dropped_and_replayed(capsys: pytest.CaptureFixture[str]) -> None:
    assert run("--episodes", "4", "--agent", "random") == 0
    complete = Path("runs/r/trajectories.jsonl").read_bytes()
    cut = complete[: len(complete) - len(lines()[-1]) // 2]
    Path("runs/r/trajectories.jsonl").write_bytes(cut)
    assert len(list(read_jsonl(Path("runs/r/trajectories.jsonl"), strict=False))) == 3
    capsys.readouterr()
    assert run("--episodes", "4", "--agent", "random") == 0
    assert "dropped 1 unreadable line" in capsys.readouterr().out
    assert Path("runs/r/trajectories.jsonl").read_bytes() == complete
    assert summary()["aggregates"]["episodes"] == 4


def test_interrupted_run_keeps_finished_episodes(monkeypatch: pytest.MonkeyPatch) -> None:
    real = stategym.rollout.stream

    def interrupted(*args: Any, **kwargs: Any) -> Iterator[Any]:
        for count, trajectory in enumerate(real(*args, **kwargs)):
            if count == 2:
                raise KeyboardInterrupt
            yield trajectory

    monkeypatch.setattr(stategym.rollout, "stream", interrupted)
    assert run("--episodes", "5") == 130
    assert [loads(line).seed for line in lines()] == [0, 1]
    assert summary()["aggregates"]["episodes"] == 2
    monkeypatch.setattr(stategym.rollout, "stream", real)
    assert run("--episodes", "5") == 0
    assert [loads(line).seed for line in lines()] == list(range(5))


def test_other_configuration_is_refused_unless_overwrite() -> None:
    assert run("--episodes", "2") == 0
    kept = lines()
    assert run("--episodes", "2", "--agent", "serial") == 2
    assert run("--episodes", "2", "--knobs", "all_off") == 2
    assert lines() == kept
    assert run("--episodes", "2", "--agent", "serial", "--overwrite") == 0
    assert {loads(line).agent for line in lines()} == {"serial"}
    (row,) = store.runs(Path("runs/index.sqlite"))
    assert row.agent == "serial"


def test_bad_agent_or_domain_is_a_usage_error() -> None:
    assert run("--agent", "nobody") == 2
    assert run("--domain", "nowhere") == 2
    with pytest.raises(SystemExit):
        run("--knobs", "dynamics=maybe")
    with pytest.raises(SystemExit):
        run("--episodes", "0")
    assert not Path("runs/r/trajectories.jsonl").exists()


def test_llm_options_reach_the_resolver(monkeypatch: pytest.MonkeyPatch) -> None:
    seen: dict[str, Any] = {}
    real = stategym.agents.resolve

    def resolve(domain: Any, spec: str, **options: Any) -> Any:
        seen.update(options)
        return real(domain, spec)

    monkeypatch.setattr(stategym.agents, "resolve", resolve)
    assert (
        run(
            "--episodes",
            "1",
            "--base-url",
            "http://127.0.0.1:1/v1",
            "--temperature",
            "0.5",
            "--concurrency",
            "4",
        )
        == 0
    )
    # --concurrency configures the rollout engine, not the agent: it is saved, not resolved
    assert seen == {"base_url": "http://127.0.0.1:1/v1", "temperature": 0.5}
    assert summary()["config"]["options"] == {**seen, "concurrency": 4}


def test_run_directory_rescores_from_trajectories_alone() -> None:
    assert run("--episodes", "6", "--agent", "serial") == 0
    trajectories, dropped = RunDir(Path("runs/r")).load()
    assert dropped == 0
    assert summarise(trajectories).to_json() == summary()["aggregates"]
    for trajectory in trajectories:
        assert replay(trajectory).state_key() == trajectory.digest


@pytest.mark.parametrize("command", [None, *COMMANDS])
def test_every_help_text_renders(command: str | None, capsys: pytest.CaptureFixture[str]) -> None:
    # argparse formats help strings with %-interpolation: a stray "%" crashes --help.
    argv = ["--help"] if command is None else [command, "--help"]
    with pytest.raises(SystemExit) as exit_info:
        main(argv)
    assert exit_info.value.code == 0
    assert "usage: stategym" in capsys.readouterr().out
