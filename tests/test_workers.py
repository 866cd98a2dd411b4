"""Every core: episodes played on worker processes are the same bytes, in the same order.

``run``, ``eval`` and ``protocol`` with ``--workers 2`` must write exactly the files that
``--workers 1`` writes; the engine must hand episodes back in spec order whatever finishes
first; an error in a worker or a Ctrl-C in the parent must keep every episode already
written, and leave no worker behind.
"""

from __future__ import annotations

import multiprocessing
import os
import signal
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

import stategym.rollout
from stategym.agents import resolve
from stategym.agents.base import AgentFactory
from stategym.cli import main
from stategym.kernel.domain import Domain
from stategym.kernel.task import Task
from stategym.kernel.trajectory import dumps, loads
from stategym.metrics import score
from stategym.rollout import Agents, EpisodeSpec, episode_specs, stream, stream_scored
from stategym.rollout.log import Appender
from stategym.rollout.workers import (
    CHUNK,
    MIN_EPISODES_PER_WORKER,
    Spread,
    WorkerDied,
    WorkerTraceback,
    cores,
    worker_count,
)

TRAIN = "synth:chain2+askgate,travel"
BOOM_SEED = 21
"""The seed whose agent raises in the worker (in the second chunk)."""


@pytest.fixture(autouse=True)
def _in_tmp(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)


def _specs() -> list[EpisodeSpec]:
    # two domains and two scripted agents, interleaved, over several chunks
    return [
        *episode_specs("travel", "expert", range(20)),
        *episode_specs("shop", "random", range(12)),
        *episode_specs("travel", "serial", range(5)),
    ]


def _no_workers_left() -> bool:
    return multiprocessing.active_children() == []


def test_the_worker_rule() -> None:
    assert worker_count(1, 1000) == 1
    assert worker_count(4, 1000) == 4
    assert worker_count(4, CHUNK) == 1  # never more workers than chunks
    assert worker_count(None, MIN_EPISODES_PER_WORKER - 1) == 1
    assert worker_count(None, 10**6) == cores()
    assert worker_count(None, 2 * MIN_EPISODES_PER_WORKER) == min(2, cores())


def test_two_workers_yield_the_same_trajectories_in_spec_order() -> None:
    specs = _specs()
    one = [(spec, dumps(t)) for spec, t in stream(specs, Agents())]
    two = [(spec, dumps(t)) for spec, t in stream(specs, Agents(), spread=Spread(2))]
    assert [spec for spec, _ in two] == specs
    assert two == one
    assert _no_workers_left()


def test_episodes_scored_on_workers_carry_the_cards_the_parent_would_make() -> None:
    specs = _specs()
    here = list(stream_scored(specs, Agents(), score))
    there = list(stream_scored(specs, Agents(), score, spread=Spread(2)))
    assert [(spec, dumps(t)) for spec, t, _ in there] == [(s, dumps(t)) for s, t, _ in here]
    assert [card for *_, card in there] == [score(t) for _, t, _ in here]
    assert [card for *_, card in here] == [score(t) for _, t, _ in here]
    assert _no_workers_left()


def boom(domain: Domain, agent: str, **options: Any) -> AgentFactory:
    """A resolver (module-level, so it travels to a worker) whose agent for one seed raises."""
    expert = resolve(domain, "expert")

    def make(task: Task) -> Any:
        if task.seed == BOOM_SEED:
            raise RuntimeError(f"boom on seed {task.seed}")
        return expert(task)

    return make


def test_an_error_in_a_worker_is_raised_as_itself_after_every_earlier_episode() -> None:
    specs = episode_specs("travel", "expert", range(40))
    log = Path("trajectories.jsonl")
    append = Appender(log)
    with pytest.raises(RuntimeError, match=f"boom on seed {BOOM_SEED}") as raised:
        for _, trajectory in stream(specs, Agents(resolver=boom), spread=Spread(2)):
            append(trajectory)
    assert isinstance(raised.value.__cause__, WorkerTraceback)
    assert "in make" in str(raised.value.__cause__)  # the worker's own traceback
    expected = [dumps(t) for _, t in stream(specs[:BOOM_SEED], Agents())]
    assert log.read_bytes().splitlines() == expected
    assert _no_workers_left()


def dies(domain: Domain, agent: str, **options: Any) -> AgentFactory:
    """A resolver whose agent for one seed kills the worker process it plays on (as a crash
    in C or the out-of-memory killer would)."""
    expert = resolve(domain, "expert")

    def make(task: Task) -> Any:
        if task.seed == BOOM_SEED:
            os.kill(os.getpid(), signal.SIGKILL)
        return expert(task)

    return make


def test_a_worker_that_dies_is_worker_died_after_episodes_before_it() -> None:
    specs = episode_specs("travel", "expert", range(40))
    played = []
    with pytest.raises(WorkerDied, match="was killed by SIGKILL") as raised:
        for _, trajectory in stream(specs, Agents(resolver=dies), spread=Spread(2)):
            played.append(dumps(trajectory))
    assert "run the same command again to resume" in str(raised.value)
    # what came before the dead worker's chunk, in order: the first chunk, if it was handed
    # over before the pool broke (the two workers race), never a later one
    assert len(played) in (0, CHUNK)
    assert played == [dumps(t) for _, t in stream(specs[: len(played)], Agents())]
    assert _no_workers_left()


def test_a_consumer_that_stops_early_stops_the_workers() -> None:
    played = stream(_specs(), Agents(), spread=Spread(2))
    first = [next(played) for _ in range(3)]
    played.close()
    assert [spec.seed for spec, _ in first] == [0, 1, 2]
    assert _no_workers_left()


def _files(folder: Path) -> dict[str, bytes]:
    return {
        str(path.relative_to(folder)): path.read_bytes()
        for path in sorted(folder.rglob("*"))
        if path.is_file()
    }


def _both(command: Callable[[str, str], int]) -> tuple[dict[str, bytes], dict[str, bytes]]:
    """The files ``command(out, workers)`` writes with one worker and with two (the run
    folder has the same name in both: it is written into the summary)."""
    for workers in ("1", "2"):
        assert command(f"w{workers}/out", workers) == 0
    return _files(Path("w1/out")), _files(Path("w2/out"))


def test_run_with_two_workers_writes_the_bytes_of_one() -> None:
    def run(out: str, workers: str) -> int:
        given = ["--out", out, "--index", "index.sqlite", "--workers", workers]
        return main(["run", "--domain", "shop", "--agent", "random", "--episodes", "40", *given])

    one, two = _both(run)
    assert set(one) == {"trajectories.jsonl", "summary.json", "results.md"}
    assert two == one
    assert [loads(line).seed for line in one["trajectories.jsonl"].splitlines()] == list(range(40))


def test_eval_with_two_workers_writes_the_bytes_of_one() -> None:
    def evaluate(out: str, workers: str) -> int:
        given = ["--episodes", "9", "--resamples", "50", "--out", out, "--workers", workers]
        return main(["eval", "--domains", "travel,bank", "--agents", "expert,random", *given])

    one, two = _both(evaluate)
    assert {"trajectories.jsonl", "scores.jsonl", "scorecard.json", "scorecard.md"} <= set(one)
    assert two == one


def test_protocol_with_two_workers_writes_the_bytes_of_one() -> None:
    def protocol(out: str, workers: str) -> int:
        small = ["--episodes", "3", "--probes", "1", "--compositions", "1"]
        given = [*small, "--out", out, "--workers", workers]
        return main(["protocol", "--agents", "random", "--train-on", TRAIN, *given])

    one, two = _both(protocol)
    assert {"cells.json", "protocol.md", "random/trajectories.jsonl"} <= set(one)
    assert two == one


def test_an_interrupted_run_on_workers_keeps_what_it_wrote_and_resumes_to_the_same_bytes(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    real = stategym.rollout.stream

    def interrupted(*args: Any, **kwargs: Any) -> Iterator[Any]:
        for count, finished in enumerate(real(*args, **kwargs)):
            if count == 20:
                raise KeyboardInterrupt
            yield finished

    def run(out: str, workers: str = "2") -> int:
        return main(["run", "--episodes", "40", "--out", out, "--workers", workers])

    monkeypatch.setattr(stategym.rollout, "stream", interrupted)
    assert run("a/r") == 130
    kept = Path("a/r/trajectories.jsonl").read_bytes().splitlines()
    assert [loads(line).seed for line in kept] == list(range(20))
    assert _no_workers_left()
    printed = capsys.readouterr()
    said = [line for line in printed.out.splitlines() if line.startswith("interrupted")]
    assert said == ["interrupted: finished episodes are saved; run again to resume"]
    assert "Traceback" not in printed.out + printed.err
    monkeypatch.setattr(stategym.rollout, "stream", real)
    assert run("a/r") == 0
    assert run("b/r", workers="1") == 0
    resumed = Path("a/r/trajectories.jsonl").read_bytes()
    assert resumed.splitlines()[:20] == kept
    assert resumed == Path("b/r/trajectories.jsonl").read_bytes()
