"""The trainer's files under damage and interruption: ``metrics.jsonl`` read strictly (only a
cut last line dropped), a checkpoint that covers its evaluation, a moved run that resumes, a
damaged run or checkpoint refused in one line naming the file, and ``run:DIR`` read without
rewriting DIR's log."""

from __future__ import annotations

import json
import os
import shutil
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from stategym.kernel.errors import UsageError
from stategym.train import runlog
from stategym.train.config import SFTConfig

TIMING = ("seconds", "tokens_per_s", "share")
"""Wall-clock fields: the only ones two identical runs may differ in."""


def write_lines(run: Path, *lines: bytes) -> bytes:
    run.mkdir(parents=True, exist_ok=True)
    data = b"".join(lines)
    (run / runlog.METRICS).write_bytes(data)
    return data


def good(iteration: int, **more: Any) -> bytes:
    return json.dumps({"iteration": iteration, "loss": 1.0, **more}).encode() + b"\n"


def test_only_a_cut_last_metrics_line_is_dropped(tmp_path: Path) -> None:
    write_lines(tmp_path, good(1), good(2), b'{"iteration": 3, "lo')
    assert [m["iteration"] for m in runlog.read_metrics(tmp_path)] == [1, 2]
    runlog.truncate_metrics(tmp_path, 2)
    assert (tmp_path / runlog.METRICS).read_bytes() == good(1) + good(2)


@pytest.mark.parametrize(
    "bad",
    [b"garbage\n", b"[1, 2]\n", b'{"loss": 1.0}\n', b'{"iteration": "x"}\n', b'{"x": "\xff"}\n'],
    ids=["not-json", "a-list", "no-iteration", "iteration-a-string", "not-utf8"],
)
def test_a_damaged_metrics_line_is_an_error_naming_it_and_nothing_is_cut(
    tmp_path: Path, bad: bytes
) -> None:
    before = write_lines(tmp_path, good(1), bad, good(2), good(3))
    with pytest.raises(UsageError, match=r"metrics\.jsonl:2: "):
        runlog.read_metrics(tmp_path)
    with pytest.raises(UsageError, match=r"metrics\.jsonl:2: "):
        runlog.truncate_metrics(tmp_path, 3)
    assert (tmp_path / runlog.METRICS).read_bytes() == before
    # the same line last but complete (newline-terminated) is damage too, not a cut append
    write_lines(tmp_path, good(1), bad)
    with pytest.raises(UsageError, match=r"metrics\.jsonl:2: "):
        runlog.read_metrics(tmp_path)


def test_a_moved_run_resumes_but_other_settings_are_refused(tmp_path: Path) -> None:
    config = SFTConfig(out=str(tmp_path / "run"))
    runlog.open_run(config)
    shutil.copytree(tmp_path / "run", tmp_path / "moved")
    moved = runlog.open_run(replace(config, out=str(tmp_path / "moved"), iterations=40))
    assert json.loads((moved / runlog.CONFIG).read_text())["out"] == str(moved)
    with pytest.raises(UsageError, match=r"other settings \(lr\)"):
        runlog.open_run(replace(config, out=str(tmp_path / "moved"), lr=0.5))


@pytest.mark.parametrize("text", [b'{"domain": "tr', b"[]", b'{"x": "\xff"}'])
def test_an_unreadable_config_is_an_error_naming_it(tmp_path: Path, text: bytes) -> None:
    run = tmp_path / "run"
    run.mkdir()
    (run / runlog.CONFIG).write_bytes(text)
    with pytest.raises(UsageError, match=r"config\.json: "):
        runlog.open_run(SFTConfig(out=str(run)))
    assert (run / runlog.CONFIG).read_bytes() == text


def test_a_run_log_is_read_for_demonstrations_without_being_rewritten(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from stategym import Env, run_episode
    from stategym.agents import resolve
    from stategym.kernel.trajectory import dumps
    from stategym.train.data import run_demonstrations

    env = Env("travel")
    lines = [dumps(run_episode(env, resolve(env.domain, "expert"), seed=s)) for s in (0, 1)]
    path = tmp_path / "trajectories.jsonl"
    path.write_bytes(lines[0] + b"\n" + lines[1][:-50])  # a crash mid-append
    before, inode = path.read_bytes(), path.stat().st_ino
    played = run_demonstrations(tmp_path)
    assert [t.seed for t, _ in played] == [0]
    assert path.read_bytes() == before and path.stat().st_ino == inode
    assert "trajectories.jsonl:2, a cut last line" in capsys.readouterr().err


class Interrupted(Exception):
    """Stands in for Ctrl-C or a kill during a held-out evaluation."""


def interrupt_first(monkeypatch: pytest.MonkeyPatch, module: Any) -> None:
    """Make ``module.evaluate`` fail once, as a run stopped during its first evaluation."""
    real, calls = module.evaluate, []

    def evaluate(*args: Any, **kwargs: Any) -> Any:
        calls.append(1)
        if len(calls) == 1:
            raise Interrupted
        return real(*args, **kwargs)

    monkeypatch.setattr(module, "evaluate", evaluate)


def steady(run: Path) -> list[dict[str, Any]]:
    """The run's metric lines less their wall-clock fields."""
    return [{k: v for k, v in m.items() if k not in TIMING} for m in runlog.read_metrics(Path(run))]


def test_an_interrupted_sft_evaluation_is_played_again_on_resume(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    pytest.importorskip("torch")
    from conftest import SMALL
    from stategym.train import sft

    base = SFTConfig(
        agents="expert", **{**SMALL, "episodes": 4, "eval_every": 2, "eval_episodes": 1}
    )
    whole = sft.train(replace(base, out=str(tmp_path / "whole")))
    cut = replace(base, out=str(tmp_path / "cut"))
    with monkeypatch.context() as patch:
        interrupt_first(patch, sft)
        with pytest.raises(Interrupted):
            sft.train(cut)
    resumed = sft.train(cut)
    assert [(m["iteration"], "eval" in m) for m in steady(whole)] == [(1, 0), (2, 0), (2, 1)]
    assert steady(resumed) == steady(whole)


def test_an_interrupted_grpo_evaluation_is_played_again_on_resume(
    sft_run: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    pytest.importorskip("torch")
    from stategym.train import grpo
    from stategym.train.config import GRPOConfig

    base = GRPOConfig(
        init=str(sft_run), iterations=2, tasks=1, group=2, minibatch=2, max_tokens=16,
        max_length=1400, eval_episodes=1, eval_every=2, save_every=1, progress=False,
    )  # fmt: skip
    whole = grpo.train(replace(base, out=str(tmp_path / "whole")))
    cut = replace(base, out=str(tmp_path / "cut"))
    with monkeypatch.context() as patch:
        interrupt_first(patch, grpo)
        with pytest.raises(Interrupted):
            grpo.train(cut)
    resumed = grpo.train(cut)
    assert [(m["iteration"], "eval" in m) for m in steady(whole)] == [(1, 0), (2, 0), (2, 1)]
    assert steady(resumed) == steady(whole)


def damage(run: Path, name: str) -> None:
    path = run / "checkpoints" / "iter-000002" / name
    path.write_bytes(path.read_bytes()[: max(1, path.stat().st_size // 2)])


@pytest.mark.parametrize(
    "name",
    ["trainer_state.json", "model.safetensors", "optimizer.pt", "config.json", "tokenizer.json"],
)
def test_a_damaged_checkpoint_is_refused_in_one_line_naming_the_file(
    sft_run: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str], name: str
) -> None:
    pytest.importorskip("torch")
    from stategym.cli import main

    run = tmp_path / "run"
    shutil.copytree(sft_run, run)
    damage(run, name)
    metrics = (run / runlog.METRICS).read_bytes()
    config = json.loads((run / runlog.CONFIG).read_text())
    status = main(["train", "sft", "--out", str(run), "--agents", config["agents"],
                   "--episodes", "6", "--iterations", "3", "--batch-size", "2",
                   "--save-every", "1", "--eval-episodes", "2", "--max-tokens", "24",
                   "--max-length", "1400", "--tiny-width", "64", "--tiny-vocab", "400",
                   "--no-progress"])  # fmt: skip
    err = capsys.readouterr().err.strip()
    assert status == 2 and "Traceback" not in err and len(err.splitlines()) == 1, err
    assert err.startswith("stategym: error: ")
    assert f"iter-000002/{name}: unreadable" in err and "delete" in err
    assert (run / runlog.METRICS).read_bytes() == metrics  # nothing was cut before the refusal


SIGNALLED = """
import os, signal, sys
from stategym import cli
from stategym.train.policy import Policy

generate = Policy.generate
sent = []

def signalled(self, *args, **kwargs):  # the signal lands while the first batch is generated
    if not sent:
        sent.append(os.kill(os.getpid(), getattr(signal, sys.argv[1])))
    return generate(self, *args, **kwargs)

Policy.generate = signalled
sys.exit(cli.main(sys.argv[2:]))
"""


@pytest.mark.parametrize(
    ("name", "status", "line"),
    [("SIGINT", 130, "stategym: interrupted"), ("SIGTERM", 143, "stategym: terminated")],
)
def test_a_signal_during_group_play_stops_in_one_line(
    sft_run: Path, tmp_path: Path, name: str, status: int, line: str
) -> None:
    """A signal that lands while a group's batch is generated stops the run as anywhere else.
    Before, Ctrl-C ended in ``InvalidStateError`` (the batch answered the waiters asyncio had
    cancelled) and SIGTERM left "Task exception was never retrieved" and a traceback after
    the one line (the handler raised inside the task playing the group) (audit 11A F4)."""
    import subprocess
    import sys

    command = ["train", "grpo", "--init", str(sft_run), "--out", str(tmp_path / "run"),
               "--group", "2", "--tasks", "1", "--iterations", "1", "--eval-episodes", "1",
               "--max-tokens", "8", "--no-progress"]  # fmt: skip
    done = subprocess.run(
        [sys.executable, "-c", SIGNALLED, name, *command],
        capture_output=True, text=True, timeout=600, env={**os.environ, "OMP_NUM_THREADS": "1"},
    )  # fmt: skip
    assert (done.returncode, done.stderr.strip().splitlines()[-1:]) == (status, [line]), done.stderr
    assert "Traceback" not in done.stderr and "never retrieved" not in done.stderr
