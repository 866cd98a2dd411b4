"""A log whose fired events are not its task's is refused, not indexed (audit 14b F3).

The environment fires a task's events in order, each once; a log relabelled to another seed
(whose task may schedule fewer events), or edited to fire event ``-1``, used to crash
``score`` with an ``IndexError`` or be scored on a change that never happened. Now the
scorer refuses it with a :class:`TrajectoryError`, and the CLI says so in one line.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import orjson
import pytest

from stategym.agents import scripted
from stategym.cli import main
from stategym.kernel.env import Env
from stategym.kernel.errors import TrajectoryError
from stategym.kernel.trajectory import Trajectory, dumps, loads, task_of
from stategym.metrics import score
from stategym.rollout import run_episode


def _expert(seed: int) -> Trajectory:
    env = Env("travel")
    return run_episode(env, scripted(env.domain, "expert"), seed)


def _edited(trajectory: Trajectory, edit: Any) -> Trajectory:
    data = orjson.loads(dumps(trajectory))
    edit(data)
    return loads(orjson.dumps(data))


def _fires(trajectory: Trajectory) -> int:
    return next(r.index for r in trajectory.rounds if r.events)


def test_the_expert_log_fires_its_tasks_events_in_order() -> None:
    trajectory = _expert(0)
    assert any(r.events for r in trajectory.rounds)  # the cases below edit a real firing
    score(trajectory)  # a guard: an honest log is scored


def test_a_log_relabelled_to_a_task_with_fewer_events_is_refused() -> None:
    trajectory = _expert(0)
    relabelled = _edited(trajectory, lambda d: d.update(seed=3))
    assert len(task_of(relabelled).events) < len(task_of(trajectory).events)
    with pytest.raises(TrajectoryError, match="not of this task"):
        score(relabelled)


@pytest.mark.parametrize("fired", [[-1], [1], [0, 0]])
def test_a_log_firing_events_out_of_order_is_refused(fired: list[int]) -> None:
    trajectory = _expert(0)
    at = _fires(trajectory)

    def fire(data: dict[str, Any]) -> None:
        data["rounds"][at]["events"] = fired

    with pytest.raises(TrajectoryError, match="not of this task"):
        score(_edited(trajectory, fire))


def test_score_and_report_refuse_a_relabelled_log_in_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    relabelled = _edited(_expert(0), lambda d: d.update(seed=3))
    run = tmp_path / "run"
    run.mkdir()
    (run / "trajectories.jsonl").write_bytes(dumps(relabelled) + b"\n")
    assert main(["score", str(run)]) == 2
    assert "not of this task" in capsys.readouterr().err
    assert main(["report", str(run), "--out", str(tmp_path / "page.html")]) == 2
    err = capsys.readouterr().err
    assert f"cannot score {run}" in err and "Traceback" not in err
    assert not (tmp_path / "page.html").exists()
