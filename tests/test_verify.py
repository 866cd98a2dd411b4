"""verify(): an honest log is its replay; any edit to what the metrics read is caught."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import orjson
import pytest
from hypothesis import given
from hypothesis import strategies as st

from one_line_error import fails
from stategym import Env, Knobs
from stategym.agents import scripted
from stategym.cli import main
from stategym.kernel.errors import TrajectoryError
from stategym.kernel.trajectory import RoundKind, Trajectory, dumps, loads, replay, write_jsonl
from stategym.kernel.verify import verify
from stategym.metrics import score
from stategym.registry import all_domains
from stategym.rollout import run_episode

DOMAINS = [*sorted(all_domains()), "synth:chain2+fanout3+askgate+verifycommit"]
AGENTS = ("expert", "random", "serial", "ask-everything", "spray", "invalid-padding")
REPLAYED_BY_NAME = {"model", "meta", "agent", "run", "version", "domain", "seed", "knobs"}
"""Trajectory and round fields verify does not compare (replay cannot reproduce them, or they
choose what is replayed)."""
ACTIONS = {"say", "id", "name", "arguments"}
"""Round and call fields that are the agent's actions: replay plays them as logged, so an
edited action is a different episode, caught only when its results differ from the log's."""


def _play(domain: str, agent: str, seed: int, knobs: Knobs | None = None) -> Trajectory:
    env = Env(domain, knobs=knobs or Knobs())
    return run_episode(env, scripted(env.domain, agent), seed)


def _edit(trajectory: Trajectory, change: Callable[[dict[str, Any]], None]) -> Trajectory:
    data = orjson.loads(dumps(trajectory))
    change(data)
    return loads(orjson.dumps(data))


knobs_strategy = st.builds(Knobs, *(st.booleans() for _ in range(5)))


@given(
    domain=st.sampled_from(DOMAINS),
    agent=st.sampled_from(AGENTS),
    seed=st.integers(0, 2**64 - 1),
    knobs=st.one_of(st.just(Knobs()), st.just(Knobs.all_off()), knobs_strategy),
)
def test_honest_trajectories_verify_clean(domain: str, agent: str, seed: int, knobs: Knobs) -> None:
    trajectory = _play(domain, agent, seed, knobs)
    assert verify(trajectory) == []
    assert verify(loads(dumps(trajectory))) == []  # as read back from a file


def test_the_sample_of_honest_trajectories_has_what_verify_compares() -> None:
    """Events, charges, user turns, format errors and invalid rounds all occur, so the clean
    verdicts above cover them."""
    seen: set[str] = set()
    for domain in DOMAINS:
        for agent in AGENTS:
            for seed in range(3):
                trajectory = _play(domain, agent, seed)
                assert verify(trajectory) == [], (domain, agent, seed)
                for record in trajectory.rounds:
                    seen |= {
                        name
                        for name in ("events", "charges", "format_errors")
                        if getattr(record, name)
                    }
                    seen |= {"user"} if record.user is not None else set()
                    seen |= {"invalid"} if record.kind is RoundKind.INVALID else set()
    assert seen == {"events", "charges", "format_errors", "user", "invalid"}


def _leaves(data: Any, path: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    """Paths to every scalar of a trajectory's JSON that verify compares."""
    if isinstance(data, dict):
        return [
            p
            for key, value in data.items()
            if not (key in REPLAYED_BY_NAME and len(path) in (0, 2))
            for p in _leaves(value, (*path, key))
        ]
    if isinstance(data, list):
        return [p for i, value in enumerate(data) for p in _leaves(value, (*path, i))]
    return [path]


def _changed(value: Any) -> Any:
    if isinstance(value, bool):
        return not value
    if isinstance(value, int | float):
        return value + 1
    if isinstance(value, str):
        return value + "x"
    return "x"  # null


def _forgeries(trajectory: Trajectory) -> list[tuple[tuple[Any, ...], Trajectory]]:
    data = orjson.loads(dumps(trajectory))
    found = []
    for path in _leaves(data):
        if path[0] == "rounds" and (
            path[2] in ACTIONS
            or (len(path) > 4 and path[2] == "calls" and path[4] in ACTIONS)
            or (data["rounds"][path[1]]["kind"] == "invalid" and path[2] in ("raw", "error"))
        ):
            continue  # actions are replay's input; an unusable message is checked for form
        forged = orjson.loads(dumps(trajectory))
        holder = forged
        for key in path[:-1]:
            holder = holder[key]
        holder[path[-1]] = _changed(holder[path[-1]])
        try:
            found.append((path, loads(orjson.dumps(forged))))
        except TrajectoryError:
            continue  # not a trajectory at all: loads refuses it already
    return found


@pytest.mark.parametrize("domain", DOMAINS)
def test_every_edit_to_a_compared_field_is_caught(domain: str) -> None:
    """Every scalar the metrics can read, changed in turn: outcome, rounds, calls, results,
    sources, user turns, notices, events, charges, format errors, ending and digest."""
    classes: set[str] = set()
    for agent, seed in (
        ("expert", 0),
        ("random", 1),
        ("invalid-padding", 2),
        ("ask-everything", 3),
    ):
        for path, forged in _forgeries(_play(domain, agent, seed)):
            assert verify(forged), path
            classes.add(".".join(str(p) for p in path[:5] if isinstance(p, str)))
    assert {"outcome.goal_reached", "digest", "rounds.clock", "rounds.calls.content"} <= classes
    assert any(name.startswith("rounds.user.") for name in classes)


def test_each_forgery_of_the_audit_is_caught_and_honest_logs_pass() -> None:
    expert, serial = _play("travel", "expert", 0), _play("travel", "serial", 0)
    assert verify(expert) == verify(serial) == []

    def goal(d: dict[str, Any]) -> None:
        d["outcome"]["goal_reached"] = True

    def results(d: dict[str, Any]) -> None:
        for record in d["rounds"]:
            for call in record["calls"]:
                if isinstance(call["content"], dict):
                    call["content"] = {"forged": True}

    def misread(d: dict[str, Any]) -> None:
        for record in d["rounds"]:
            if record["user"]:
                record["user"]["values"], record["user"]["understood"] = [], False

    def pasted(d: dict[str, Any]) -> None:
        d["outcome"] = orjson.loads(dumps(expert))["outcome"]

    def meetings(d: dict[str, Any]) -> None:
        d["domain"] = "meetings"

    def unknown(d: dict[str, Any]) -> None:
        d["domain"] = "nowhere"

    cases = [
        (serial, goal, "outcome.goal_reached: logged true, replayed false"),
        (expert, results, "calls[0].content"),
        (expert, misread, "user.understood: logged false, replayed true"),
        (serial, pasted, "outcome.goal_reached"),
        (expert, meetings, "round 0: "),
        (expert, unknown, "cannot be replayed: unknown domain 'nowhere'"),
    ]
    for honest, change, words in cases:
        forged = _edit(honest, change)
        if change not in (meetings, unknown):  # the digest check alone passes the forgery
            assert replay(forged).state_key() == forged.digest
        found = verify(forged)
        assert found and words in found[0], (change.__name__, found)


def _claimed(trajectory: Trajectory, added: list[str]) -> Trajectory:
    """Every round with ``added`` appended to its format errors and claimed, in its
    ``meta.format_errors``, as what an LLM backend tolerated."""

    def claim(d: dict[str, Any]) -> None:
        for record in d["rounds"]:
            record["format_errors"] += added
            record["meta"] = {**record["meta"], "format_errors": added}

    return _edit(trajectory, claim)


@pytest.mark.parametrize(
    "added",
    [["wrong_type"], ["unknown_tool", "malformed_json", "bad_value"] * 5, ["💣 anything"]],
    ids=["wrong_type", "15-environment-kinds", "any-text"],
)
def test_a_claim_of_tolerated_errors_adds_no_other_kind(added: list[str]) -> None:
    """Audit 10b F7: any trailing run that ``meta.format_errors`` repeated was left out, so
    invented errors passed verify (and the report's format-error rate counted them)."""
    forged = _claimed(_play("travel", "expert", 0), added)
    found = verify(forged)
    assert found and found[0].startswith("round 0: format_errors: logged"), found


def test_the_parsers_tolerated_kinds_claimed_as_such_still_verify() -> None:
    """Guard (held before the fix too): the kinds an LLM backend's parser tolerates are what
    verify leaves out, and they alone."""
    claimed = _claimed(_play("travel", "expert", 0), ["unclosed_tool_call", "repaired_json"])
    assert verify(claimed) == []


def test_calls_of_another_domain_are_named() -> None:
    travel = _play("travel", "expert", 0)
    calls = [r for r in travel.rounds if r.kind is RoundKind.CALLS]
    only_calls = _edit(
        travel, lambda d: d.update(domain="meetings", rounds=[orjson.loads(orjson.dumps(calls[0]))])
    )
    (found,) = verify(only_calls)
    assert "is no tool of meetings" in found


def test_verify_costs_one_replay(monkeypatch: pytest.MonkeyPatch) -> None:
    trajectory = _play("shop", "expert", 4)
    steps = 0
    step = Env.step

    def counted(self: Env, action: Any) -> Any:
        nonlocal steps
        steps += 1
        return step(self, action)

    monkeypatch.setattr(Env, "step", counted)
    assert verify(trajectory) == []
    assert steps == len(trajectory.rounds)


def test_score_verify_refuses_a_forged_line_and_scores_an_honest_file(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    honest = [_play("travel", "serial", seed) for seed in range(3)]
    write_jsonl(tmp_path / "trajectories.jsonl", honest)
    assert main(["score", str(tmp_path), "--verify", "--resamples", "10"]) == 0
    capsys.readouterr()

    reached = honest[1].outcome is not None and honest[1].outcome.goal_reached
    forged = _edit(honest[1], lambda d: d["outcome"].update(goal_reached=not reached))
    assert score(forged).outcome.goal_reached is not reached  # what score alone reports
    path = tmp_path / "trajectories.jsonl"
    path.write_bytes(dumps(honest[0]) + b"\n\n" + dumps(forged) + b"\n" + dumps(honest[2]) + b"\n")
    (tmp_path / "scores.jsonl").unlink()
    line = fails(
        ["score", str(tmp_path), "--verify"], capsys, f"{path}:3:", "seed 1", "goal_reached"
    )
    assert "does not replay" in line
    assert not (tmp_path / "scores.jsonl").exists()
    assert main(["score", str(tmp_path), "--resamples", "10"]) == 0  # without the flag: scored


def test_report_verify_refuses_a_forged_line_and_reports_an_honest_file(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    pytest.importorskip("matplotlib")
    run = tmp_path / "run"
    run.mkdir()
    honest = [_play("travel", "serial", seed) for seed in range(3)]
    path = run / "trajectories.jsonl"
    write_jsonl(path, honest)
    out = tmp_path / "report.html"
    args = ["report", str(run), "--out", str(out), "--resamples", "10"]
    assert main([*args, "--verify"]) == 0
    capsys.readouterr()

    reached = honest[2].outcome is not None and honest[2].outcome.goal_reached
    forged = _edit(honest[2], lambda d: d["outcome"].update(goal_reached=not reached))
    path.write_bytes(dumps(honest[0]) + b"\n" + dumps(honest[1]) + b"\n" + dumps(forged) + b"\n")
    out.unlink()
    line = fails([*args, "--verify"], capsys, f"{path}:3:", "seed 2", "goal_reached")
    assert "does not replay" in line
    assert not out.exists()
    assert main(args) == 0  # without the flag: reported as logged
