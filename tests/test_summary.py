"""Run aggregates (stategym.summary) and run-directory helpers (stategym.rundir)."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest

from stategym.kernel.errors import UsageError
from stategym.kernel.knobs import Knobs
from stategym.kernel.trajectory import (
    TRAJECTORY_VERSION,
    CallRecord,
    Outcome,
    RoundKind,
    RoundRecord,
    Trajectory,
    dumps,
    write_jsonl,
)
from stategym.rundir import RunDir, load_log, read_log, seed_ranges
from stategym.summary import summarise, summarise_quality


def episode(seed: int, outcome: Outcome | None, rounds: tuple[RoundRecord, ...] = ()) -> Trajectory:
    return Trajectory(
        TRAJECTORY_VERSION,
        "travel",
        seed,
        Knobs(),
        "expert",
        rounds,
        outcome is not None,
        False,
        outcome,
        "digest",
    )


ASK = RoundRecord(0, 0, 1, RoundKind.SAY, say="What is your budget?")
CALLS = RoundRecord(
    1,
    1,
    2,
    RoundKind.CALLS,
    calls=(
        CallRecord("c1_0", "get_profile", {}, None, {}, None, None, {}),
        CallRecord("c1_1", "nope", "{", None, None, "bad", "malformed_json", {}),
    ),
    format_errors=("malformed_json",),
)


def test_summarise_the_docstring_example() -> None:
    good = episode(0, Outcome(True, ("SG100",), None, 500, 0, 0), (ASK, CALLS))
    fee = episode(1, Outcome(False, (), None, 300, 250, 50), (CALLS,))
    result = summarise([good, fee])
    assert result.goal_rate == 0.5
    assert (result.spent, result.lost) == (800, 50)
    assert result.mean(result.lost) == 25.0
    assert (result.rounds, result.asks, result.calls, result.format_errors) == (3, 1, 4, 2)
    assert summarise([fee, good]) == result  # order does not matter


def test_unfinished_and_truncated_episodes_are_counted() -> None:
    running = episode(0, None)
    cut = replace(episode(1, Outcome(False, (), None, 0, 0, 0)), truncated=True)
    result = summarise([running, cut])
    assert (result.episodes, result.unfinished, result.truncated, result.goal_reached) == (
        2,
        1,
        1,
        0,
    )
    assert summarise([]).goal_rate == 0.0
    assert summarise([]).to_json()["mean_rounds"] == 0.0


def test_seed_ranges() -> None:
    assert seed_ranges([5, 0, 1, 2, 2]) == "0-2,5-5"
    assert seed_ranges([]) == ""


def test_load_repairs_a_file_whose_last_line_lacks_its_newline(tmp_path: Path) -> None:
    run = RunDir(tmp_path / "run")
    done = episode(3, Outcome(True, ("SG100",), None, 500, 0, 0))
    run.append(done)
    data = run.trajectories.read_bytes()
    run.trajectories.write_bytes(data.rstrip(b"\n"))
    assert run.load() == ([done], 0)
    assert run.trajectories.read_bytes() == data
    later = episode(4, Outcome(True, ("SG100",), None, 500, 0, 0))
    write_jsonl(run.trajectories, [later], append=True)
    with run.trajectories.open("ab") as handle:
        handle.write(b'{"version": 1, "dom')
    assert run.load() == ([done, later], 1)
    assert run.trajectories.read_bytes() == data + dumps(later) + b"\n"


def _file(tmp_path: Path, *episodes: Trajectory, tail: bytes = b"") -> Path:
    path = tmp_path / "trajectories.jsonl"
    write_jsonl(path, episodes)
    with path.open("ab") as handle:
        handle.write(tail)
    return path


GOOD = Outcome(True, ("SG100",), None, 500, 0, 0)


def test_a_corrupt_line_in_the_middle_is_an_error_naming_file_and_line(tmp_path: Path) -> None:
    path = _file(tmp_path, episode(0, GOOD))
    with path.open("ab") as handle:
        handle.write(b'{"version": 1, "dom\n')
    write_jsonl(path, [episode(1, GOOD)], append=True)
    with pytest.raises(UsageError, match=rf"^{path}:2: not JSON"):
        read_log(path)
    before = path.read_bytes()
    with pytest.raises(UsageError, match=rf"{path}:2:"):
        RunDir(tmp_path).load()
    assert path.read_bytes() == before  # an error never rewrites the file


def test_only_a_cut_last_line_is_dropped_and_its_number_reported(tmp_path: Path) -> None:
    path = _file(tmp_path, episode(0, GOOD), episode(1, GOOD), tail=b'{"version": 1, "se')
    log = read_log(path)
    assert [t.seed for t in log.trajectories] == [0, 1] and log.cut_line == 3
    # the same broken text ending in a newline is not an interrupted append: corruption
    path.write_bytes(path.read_bytes() + b"\n")
    with pytest.raises(UsageError, match=r":3: not JSON"):
        read_log(path)


def test_duplicated_episodes_are_refused_with_their_seeds(tmp_path: Path) -> None:
    path = _file(tmp_path, episode(0, GOOD), episode(7, GOOD), episode(7, GOOD))
    with pytest.raises(UsageError, match=r"1 duplicated episode.*travel seed 7 agent expert"):
        load_log(path)


def test_samples_of_one_task_are_not_duplicates(tmp_path: Path) -> None:
    first = episode(7, GOOD)
    second = replace(first, run=replace(first.run, sample=1))
    path = _file(tmp_path, first, second)
    assert load_log(path).trajectories == [first, second]


def test_summarise_quality_means_and_harm() -> None:
    from stategym import Env, run_episode
    from stategym.agents import resolve
    from stategym.metrics import score

    env = Env("travel")
    cards = [
        score(run_episode(env, resolve(env.domain, agent), seed), env.task)
        for agent in ("expert", "shotgun")
        for seed in (0, 1)
    ]
    quality = summarise_quality(cards)
    assert quality.episodes == 4
    assert quality.composite == pytest.approx(sum(c.composite for c in cards) / 4)
    assert quality.risk == pytest.approx(sum(c.risk.quality for c in cards) / 4)
    assert quality.harmful == sum(c.risk.harm > 0 for c in cards)
    assert summarise_quality(reversed(cards)) == quality  # fsum: the order does not matter
    assert summarise_quality([]).to_json()["harm_rate"] == 0.0
