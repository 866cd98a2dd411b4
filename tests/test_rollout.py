"""The rollout engine: plain specs, one loop (blocking and async), one resume rule, real
concurrency for LLM agents, and the commands that use it."""

from __future__ import annotations

import asyncio
import pickle
import socket
from pathlib import Path
from typing import Any

import pytest

from stategym.agents import scripted
from stategym.cli import main
from stategym.kernel.env import Env
from stategym.kernel.knobs import Knobs
from stategym.kernel.protocol import Action, Observation, Say
from stategym.kernel.task import Task
from stategym.kernel.trajectory import dumps
from stategym.registry import get_domain
from stategym.rollout import (
    Agents,
    EpisodeSpec,
    FixedAgent,
    episode_specs,
    pending,
    play_concurrently,
    play_in_order,
    requested,
    run_episode,
    stream,
    trajectory_key,
)


@pytest.fixture(autouse=True)
def _in_tmp(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("OPENAI_API_KEY", "test")  # never a real key, never a real endpoint
    monkeypatch.setenv("COLUMNS", "120")


@pytest.fixture
def closed_port() -> str:
    """The base URL of a loopback port nothing listens on (bound, then released)."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    return f"http://127.0.0.1:{port}/v1"


def test_a_spec_is_plain_picklable_data_with_its_trajectorys_identity() -> None:
    spec = EpisodeSpec(
        "travel", 3, "expert", Knobs(dynamics=False), (("temperature", 0.5),), 2, "agent",
        tags=(("split", "instances"), ("cell", "travel"), ("shots", 0)),
    )  # fmt: skip
    assert pickle.loads(pickle.dumps(spec)) == spec and hash(spec) == hash(
        pickle.loads(pickle.dumps(spec))
    )
    ((_, trajectory),) = play_in_order([spec], Agents())
    assert trajectory_key(trajectory) == spec.key()
    assert trajectory.run.sample == 2 and trajectory.run.role == "agent"
    assert trajectory.meta["shots"] == 0 and trajectory.knobs == Knobs(dynamics=False)


@pytest.mark.parametrize("domain", ["travel", "bank", "synth:chain2+fanout3+askgate+verifycommit"])
def test_the_engine_writes_the_bytes_the_plain_loop_writes(domain: str) -> None:
    specs = episode_specs(domain, "expert", range(4))
    engine = [dumps(t) for _, t in play_in_order(specs, Agents())]
    env = Env(domain)
    plain = [dumps(run_episode(env, scripted(env.domain, "expert"), s)) for s in range(4)]
    assert engine == plain
    # and the async loop, driving the same scripted agents, writes them too
    done: dict[int, bytes] = {}
    asyncio.run(
        play_concurrently(
            specs, Agents(), concurrency=3, on_done=lambda s, t: done.__setitem__(s.seed, dumps(t))
        )
    )
    assert [done[s] for s in range(4)] == plain


def test_the_resume_rule_plays_only_what_the_log_lacks() -> None:
    specs = episode_specs("travel", "expert", range(5), samples=2)
    finished = [t for _, t in play_in_order(specs[:3], Agents())]
    assert pending(specs, finished) == specs[3:]
    other = [t for _, t in play_in_order(episode_specs("travel", "serial", range(2)), Agents())]
    assert pending(specs, other) == specs  # another agent's episodes are not these
    assert requested(specs, [*other, *reversed(finished)]) == finished


class Waits:
    """An async agent that asks the user once, after waiting on every other episode."""

    name = "openai:stand-in"
    in_flight = 0
    most = 0

    def __init__(self, gate: asyncio.Event, wanted: int) -> None:
        self.gate, self.wanted, self.turn = gate, wanted, 0

    def act(self, observation: Observation) -> Action:
        raise AssertionError("the engine awaits aact for LLM agents")

    async def aact(self, observation: Observation) -> Action:
        self.turn += 1
        if self.turn == 1:
            Waits.in_flight += 1
            Waits.most = max(Waits.most, Waits.in_flight)
            if Waits.in_flight >= self.wanted:
                self.gate.set()
            await asyncio.wait_for(self.gate.wait(), 10)
            Waits.in_flight -= 1
        return Say("Which dates?") if self.turn < 3 else Say("bye")


def _waiting_factory(wanted: int) -> Any:
    gate: list[asyncio.Event] = []

    def make(task: Task, sample: int = 0) -> Waits:
        if not gate:
            gate.append(asyncio.Event())
        return Waits(gate[0], wanted)

    make.samples = True  # type: ignore[attr-defined]
    return make


def test_llm_specs_really_play_concurrently() -> None:
    Waits.in_flight = Waits.most = 0
    specs = episode_specs("travel", "openai:stand-in", range(6))
    played = list(stream(specs, FixedAgent(_waiting_factory(3)), concurrency=3))
    assert Waits.most == 3 and sorted(t.seed for _, t in played) == list(range(6))


def test_run_concurrency_plays_n_llm_episodes_at_once(monkeypatch: pytest.MonkeyPatch) -> None:
    import stategym.agents
    import stategym.llm

    Waits.in_flight = Waits.most = 0
    monkeypatch.setattr(stategym.llm, "check_agent", lambda *a, **k: None)
    monkeypatch.setattr(stategym.agents, "resolve", lambda d, s, **o: _waiting_factory(4))
    argv = ["run", "--agent", "openai:stand-in", "--episodes", "8", "--concurrency", "4"]
    assert main([*argv, "--out", "runs/c"]) == 0
    assert Waits.most == 4
    lines = Path("runs/c/trajectories.jsonl").read_bytes().splitlines()
    assert len(lines) == 8


def test_eval_checks_an_unreachable_endpoint_before_touching_its_log(closed_port: str) -> None:
    pytest.importorskip("openai")
    argv = ["eval", "--agents", "openai:m", "--base-url", closed_port, "--domains", "travel"]
    assert main([*argv, "--episodes", "1", "--out", "runs/e"]) == 2
    assert not Path("runs/e").exists()


def test_run_knobs_mixed_resumes_by_each_seeds_setting() -> None:
    from stategym.metrics.taskset import MIXED

    assert main(["run", "--out", "runs/m", "--episodes", "3", "--knobs", "mixed"]) == 0
    assert main(["run", "--out", "runs/m", "--episodes", "9", "--knobs", "mixed"]) == 0
    from stategym.kernel.trajectory import read_jsonl

    knobs = [(t.seed, t.knobs) for t in read_jsonl(Path("runs/m/trajectories.jsonl"))]
    assert knobs == [(s, MIXED[s % len(MIXED)]) for s in range(9)]
    # a run of one setting is another run
    assert main(["run", "--out", "runs/m", "--episodes", "3", "--index", "i.sqlite"]) == 2


def test_a_spec_of_an_unknown_agent_is_refused() -> None:
    with pytest.raises(KeyError, match="nobody"):
        Agents().factory(EpisodeSpec("travel", 0, "nobody"))
    assert get_domain("travel").name == "travel"
