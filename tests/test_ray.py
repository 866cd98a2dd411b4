"""Ray beyond one machine: the same specs as Ray tasks give the same bytes as one process.

The test starts a local Ray instance with two workers (``ray.init(num_cpus=2)``) and
compares the engine's output and ``eval --ray``'s files with a one-process run. It skips,
saying why, where Ray cannot be imported (``pip install 'stategym[ray]'``).
"""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from stategym.agents import resolve
from stategym.agents.base import AgentFactory
from stategym.cli import main
from stategym.kernel.domain import Domain
from stategym.kernel.task import Task
from stategym.kernel.trajectory import dumps
from stategym.rollout import Agents, episode_specs, stream
from stategym.rollout.workers import Spread, WorkerTraceback

ray = pytest.importorskip("ray", reason="Ray is not installed (pip install 'stategym[ray]')")


@pytest.fixture(scope="module")
def local_ray() -> Iterator[Any]:
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)
    yield ray
    ray.shutdown()


def test_ray_tasks_yield_the_same_trajectories_in_spec_order(local_ray: Any) -> None:
    specs = [
        *episode_specs("travel", "expert", range(24)),
        *episode_specs("bank", "random", range(16)),
    ]
    here = [(spec, dumps(t)) for spec, t in stream(specs, Agents())]
    there = [(spec, dumps(t)) for spec, t in stream(specs, Agents(), spread=Spread(ray=True))]
    assert [spec for spec, _ in there] == specs
    assert there == here


def test_eval_on_ray_writes_the_bytes_of_one_process(
    local_ray: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    common = ["eval", "--domains", "shop,cloud", "--agents", "expert,serial", "--episodes", "9"]
    common += ["--resamples", "50"]
    assert main([*common, "--out", "a/out", "--workers", "1"]) == 0
    assert main([*common, "--out", "b/out", "--ray"]) == 0  # joins the test's instance
    for name in ("trajectories.jsonl", "scores.jsonl", "scorecard.json", "scorecard.md"):
        assert Path("b/out", name).read_bytes() == Path("a/out", name).read_bytes(), name


BOOM_SEED = 21


def boom(domain: Domain, agent: str, **options: Any) -> AgentFactory:
    """A resolver whose agent for one seed raises (shipped to Ray by value)."""
    expert = resolve(domain, "expert")

    def make(task: Task) -> Any:
        if task.seed == BOOM_SEED:
            raise RuntimeError(f"boom on seed {task.seed}")
        return expert(task)

    return make


def test_an_error_in_a_ray_task_is_raised_as_itself_after_every_earlier_episode(
    local_ray: Any,
) -> None:
    # The test module is not importable on Ray's workers: its functions travel by value.
    local_ray.cloudpickle.register_pickle_by_value(sys.modules[__name__])
    specs = episode_specs("travel", "expert", range(40))
    played = []
    with pytest.raises(RuntimeError, match=f"boom on seed {BOOM_SEED}") as raised:
        for _, trajectory in stream(specs, Agents(resolver=boom), spread=Spread(ray=True)):
            played.append(dumps(trajectory))
    assert isinstance(raised.value.__cause__, WorkerTraceback)
    assert played == [dumps(t) for _, t in stream(specs[:BOOM_SEED], Agents())]
