"""The versioned trajectory log: JSON Lines round trip, broken files, replay, summaries."""

from __future__ import annotations

from pathlib import Path

import orjson
import pytest

from stategym import Env, Knobs
from stategym.agents import scripted
from stategym.domain import Domain
from stategym.errors import TrajectoryError
from stategym.runner import run_episodes
from stategym.trajectory import (
    TRAJECTORY_VERSION,
    Trajectory,
    dumps,
    loads,
    read_jsonl,
    summarise_rounds,
    write_jsonl,
)


def _mixed(domain: Domain, count: int = 8) -> list[Trajectory]:
    """Trajectories of several agents and knob settings (format errors and commits included)."""
    found: list[Trajectory] = []
    for agent in ("expert", "random", "serial"):
        for knobs in (Knobs(), Knobs.all_off()):
            found += run_episodes(Env(domain, knobs=knobs), scripted(domain, agent), range(count))
    return found


def test_jsonl_round_trip_is_exact(domain: Domain, tmp_path: Path) -> None:
    trajectories = _mixed(domain)
    path = tmp_path / "run.jsonl"
    assert write_jsonl(path, trajectories[:10]) == 10
    assert write_jsonl(path, trajectories[10:], append=True) == len(trajectories) - 10
    back = list(read_jsonl(path))
    assert back == trajectories
    assert path.read_bytes() == b"".join(dumps(t) + b"\n" for t in trajectories)
    assert [dumps(t) for t in back] == [dumps(t) for t in trajectories]


def test_loaded_trajectories_keep_their_types(domain: Domain) -> None:
    for trajectory in _mixed(domain, 3):
        back = loads(dumps(trajectory))
        assert type(back.knobs) is Knobs
        for original, parsed in zip(trajectory.rounds, back.rounds, strict=True):
            assert type(parsed.kind) is type(original.kind)
            assert [type(c.effect) for c in parsed.calls] == [
                type(c.effect) for c in original.calls
            ]
            assert parsed == original


def _cut_file(tmp_path: Path, domain: Domain) -> tuple[Path, list[Trajectory]]:
    trajectories = _mixed(domain, 2)[:4]
    path = tmp_path / "cut.jsonl"
    write_jsonl(path, trajectories)
    data = path.read_bytes()
    path.write_bytes(data[: len(data) - len(dumps(trajectories[-1])) // 2])
    return path, trajectories


def test_a_cut_last_line_is_skipped_when_not_strict(domain: Domain, tmp_path: Path) -> None:
    path, trajectories = _cut_file(tmp_path, domain)
    assert list(read_jsonl(path, strict=False)) == trajectories[:-1]


def test_a_cut_last_line_is_a_clear_error_when_strict(domain: Domain, tmp_path: Path) -> None:
    path, trajectories = _cut_file(tmp_path, domain)
    with pytest.raises(TrajectoryError, match=rf"cut\.jsonl:{len(trajectories)}: not JSON"):
        list(read_jsonl(path))


def test_broken_records_are_trajectory_errors(tmp_path: Path) -> None:
    good = dumps(_mixed_one())
    record = orjson.loads(good)
    wrong_version = orjson.dumps(dict(record, version=TRAJECTORY_VERSION + 1))
    missing = orjson.dumps({k: v for k, v in record.items() if k != "rounds"})
    bad_field = orjson.dumps(dict(record, seed="seven"))
    for line, message in (
        (b"[1, 2]", "version None"),
        (wrong_version, "version 2"),
        (missing, "invalid trajectory"),
        (bad_field, "invalid trajectory"),
        (b"{", "not JSON"),
    ):
        with pytest.raises(TrajectoryError, match=message):
            loads(line)
    path = tmp_path / "mixed.jsonl"
    path.write_bytes(b"\n".join([good, b"", missing, good, b"   "]) + b"\n")
    assert len(list(read_jsonl(path, strict=False))) == 2
    with pytest.raises(TrajectoryError, match=r"mixed\.jsonl:3: invalid trajectory"):
        list(read_jsonl(path))


def _mixed_one() -> Trajectory:
    env = Env("travel")
    return next(run_episodes(env, scripted(env.domain, "expert"), [0]))


def test_summarise_rounds_counts_what_the_log_holds(domain: Domain) -> None:
    for trajectory in _mixed(domain, 3):
        totals = summarise_rounds(trajectory.rounds)
        assert totals["rounds"] == len(trajectory.rounds)
        assert totals["asks"] == sum(r.kind == "say" for r in trajectory.rounds)
        assert totals["calls"] == sum(len(r.calls) for r in trajectory.rounds)
        assert totals["format_errors"] == sum(len(r.format_errors) for r in trajectory.rounds)


def test_run_episodes_can_rename_the_agent(domain: Domain) -> None:
    env = Env(domain)
    names = {t.agent for t in run_episodes(env, scripted(domain, "expert"), range(2), "mine")}
    assert names == {"mine"}
