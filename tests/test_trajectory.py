"""The versioned trajectory log: JSON Lines round trip, broken files, replay, summaries."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import orjson
import pytest

from stategym import Env, Knobs
from stategym.agents import scripted
from stategym.kernel.domain import Domain
from stategym.kernel.errors import TrajectoryError
from stategym.kernel.protocol import CallBatch
from stategym.kernel.trajectory import (
    TRAJECTORY_VERSION,
    ModelTurn,
    RoundKind,
    RunRecord,
    Trajectory,
    Usage,
    dumps,
    loads,
    read_jsonl,
    replay,
    summarise_rounds,
    write_jsonl,
)
from stategym.metrics import score
from stategym.registry import cached_task
from stategym.rollout import run_episodes


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
        (wrong_version, f"version {TRAJECTORY_VERSION + 1}"),
        (orjson.dumps(dict(record, version=0)), "version 0"),
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


@pytest.mark.parametrize(
    ("where", "value"),
    [
        (("rounds", 0, "index"), "0"),
        (("rounds", 0, "latency"), "1"),
        (("truncated",), "no"),
        (("outcome", "spent"), "5"),
        (("rounds", 0, "clock"), 0.0),
        (("rounds", 0, "kind"), 0),
    ],
)
def test_a_field_spelt_as_another_type_is_a_broken_line(where: tuple[Any, ...], value: Any) -> None:
    """Every field is read as the JSON types it, as the seed already was: before, pydantic's
    lax mode took a round index ``"0"``, a latency ``"1"`` and ``truncated: "no"``, and
    ``--verify`` passed such a hand-edited line (audit 11A)."""
    record = orjson.loads(dumps(_mixed_one()))
    *path, last = where
    holder = record
    for key in path:
        holder = holder[key]
    holder[last] = value
    with pytest.raises(TrajectoryError, match="invalid trajectory"):
        loads(orjson.dumps(record))


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


V1_FIXTURE = Path(__file__).parent / "fixtures" / "trajectories_v1.jsonl"
"""Five trajectories written by the version 1 writer (the commit before version 2): an
expert, a stateless lookup, a bank episode with invalid rounds, an LLM agent with token meta
and a protocol probe."""


def test_version_1_files_still_read() -> None:
    raw = [orjson.loads(line) for line in V1_FIXTURE.read_bytes().splitlines()]
    assert {r["version"] for r in raw} == {1}
    trajectories = list(read_jsonl(V1_FIXTURE))
    assert [t.version for t in trajectories] == [TRAJECTORY_VERSION] * 5
    for line, trajectory in zip(raw, trajectories, strict=True):
        assert trajectory.digest == line["digest"] and len(trajectory.rounds) == len(line["rounds"])
        assert replay(trajectory).state_key() == trajectory.digest
        task = cached_task(trajectory.domain, trajectory.seed, trajectory.knobs)
        assert score(trajectory, task) == score(loads(dumps(trajectory)), task)
    llm, probe = trajectories[3], trajectories[4]
    # Token fields left round meta for the typed model turn; the run keys left meta.
    first = llm.rounds[0]
    assert first.model == ModelTurn(
        text="raw text 0",
        token_ids=(1, 2, 3, 4, 0),
        logprobs=(-0.5, -0.25, -1.0, -0.125, -0.0625),
        prompt_token_ids=(9, 8, 7),
        finish_reason="stop",
        usage=Usage(prompt_tokens=40, completion_tokens=5),
    )
    assert first.meta == {} and "sample" not in llm.meta and llm.run == RunRecord(sample=1)
    assert llm.meta["backend"] == "hf" and llm.meta["usage"]["prompt_tokens"] == 40 + 41 + 42
    assert probe.run == RunRecord(role="probe", probe="flipped")
    assert probe.meta == {"split": "probe", "cell": "shop", "pair": 0}
    invalid = [r for r in trajectories[2].rounds if r.kind is RoundKind.INVALID]
    assert invalid and all(r.error is None for r in invalid)  # v1 did not log the text


def test_version_2_fields_round_trip(tmp_path: Path) -> None:
    from dataclasses import replace

    trajectory = _mixed_one()
    turn = ModelTurn("hi", (1, 2), (-0.5, -0.25), ("h", "i"), None, "stop", Usage(3, 2))
    rounds = (replace(trajectory.rounds[0], model=turn), *trajectory.rounds[1:])
    typed = replace(trajectory, rounds=rounds, run=RunRecord(2, "probe", "original"))
    back = loads(dumps(typed))
    assert back == typed and back.rounds[0].model == turn
    assert type(back.rounds[0].model.usage) is Usage and type(back.run) is RunRecord
    assert orjson.loads(dumps(typed))["version"] == TRAJECTORY_VERSION == 2


def test_invalid_rounds_log_the_error_the_agent_saw() -> None:
    env = Env("travel")
    env.reset(seed=0)
    messages, *_ = env.step_message("{broken")
    env.step(CallBatch(()))
    first, second = env.trajectory.rounds
    assert messages[-1]["content"] == f"[environment] {first.error}"
    assert first.error.startswith("malformed_json: ") and first.raw == "{broken"
    assert second.error == "empty_action: send tool calls or a message to the user"
    assert loads(dumps(env.trajectory)).rounds == (first, second)
