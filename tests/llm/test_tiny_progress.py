"""Watching the tiny model's build (the progress bar of ``stategym model init``) changes
nothing it writes."""

from __future__ import annotations

import math
from pathlib import Path

import pytest

pytest.importorskip("transformers")

from stategym.llm.tiny import Step, TinyConfig, init_model

RECIPE = TinyConfig(episodes=6, steps=4, batch_size=2, max_length=768, threads=1)
"""A few steps are enough: the watcher is called at every one of them."""


class Recorder:
    def __init__(self) -> None:
        self.phases: list[str] = []
        self.steps: list[Step] = []

    def phase(self, name: str) -> None:
        self.phases.append(name)

    def step(self, step: Step) -> None:
        self.steps.append(step)


def test_a_watched_build_writes_the_same_files(tmp_path: Path) -> None:
    recorder = Recorder()
    watched = init_model(tmp_path / "watched", RECIPE, recorder)
    plain = init_model(tmp_path / "plain", RECIPE)
    for name in ("model.safetensors", "tokenizer.json", "config.json"):
        assert (watched / name).read_bytes() == (plain / name).read_bytes(), name
    assert [s.done for s in recorder.steps] == [1, 2, 3, 4]
    assert all(s.steps == 4 and math.isfinite(s.loss) for s in recorder.steps)
    tokens = [s.tokens for s in recorder.steps]
    assert tokens == sorted(tokens) and tokens[0] > 0
    assert recorder.phases[0] == "playing 6 expert episodes" and "warm-up" in recorder.phases


def test_the_command_draws_its_bar_on_stderr(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from stategym.cli import main

    flags = ["--episodes", "6", "--steps", "2", "--batch-size", "2", "--max-length", "768"]
    assert main(["model", "init", "--out", str(tmp_path / "m"), *flags]) == 0
    out, err = capsys.readouterr()
    assert out.startswith(f"wrote {tmp_path / 'm'}: ") and out.count("\n") == 1
    assert "2/2" in err and "loss" in err and "tok/s" in err and "ETA" in err
