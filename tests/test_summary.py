"""Run aggregates (stategym.summary) and run-directory helpers (stategym.rundir)."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

from stategym.knobs import Knobs
from stategym.rundir import RunDir, seed_ranges
from stategym.summary import summarise
from stategym.trajectory import (
    TRAJECTORY_VERSION,
    CallRecord,
    Outcome,
    RoundKind,
    RoundRecord,
    Trajectory,
    write_jsonl,
)


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
    write_jsonl(run.trajectories, [done], append=True)
    with run.trajectories.open("ab") as handle:
        handle.write(b'{"version": 1, "dom')
    assert run.load() == ([done, done], 1)
    assert run.trajectories.read_bytes() == data + data
