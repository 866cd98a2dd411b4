"""Ray beyond one machine: the same specs as Ray tasks give the same bytes as one process.

The test starts a local Ray instance with two workers (``ray.init(num_cpus=2)``) and
compares the engine's output and ``eval --ray``'s files with a one-process run. It skips,
saying why, where Ray cannot be imported (``pip install 'stategym[ray]'``).
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from stategym.cli import main
from stategym.kernel.trajectory import dumps
from stategym.rollout import Agents, episode_specs, stream
from stategym.rollout.workers import Spread

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
