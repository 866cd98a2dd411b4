"""A training run directory given where a model folder is expected is named as one.

``stategym train`` writes ``RUN/config.json`` (its settings) beside ``RUN/model`` (the
model); ``serve``, ``hf:`` in ``run`` and ``eval`` refuse ``RUN`` in one line that says it
is a training run and to give ``RUN/model`` (or a checkpoint while the run has no model
yet), rather than calling it a damaged model folder. Only ``train --init RUN`` takes RUN for
RUN/model. (Audit 12a, F5.)
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

pytest.importorskip("torch")
pytest.importorskip("transformers")

from refusals import refused


@pytest.fixture(scope="module")
def run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A finished two-iteration SFT run of the tiny model (a checkpoint per iteration)."""
    from stategym.train.config import SFTConfig
    from stategym.train.sft import train

    out = tmp_path_factory.mktemp("sft") / "run"
    return train(
        SFTConfig(
            out=str(out), episodes=2, iterations=2, batch_size=2, save_every=1,
            eval_episodes=1, max_tokens=8, max_length=1400, tiny_width=64, tiny_vocab=400,
            progress=False,
        )
    )  # fmt: skip


def commands(folder: Path, tmp_path: Path) -> list[list[str]]:
    """``serve``, ``run`` and ``eval`` given ``folder`` as their model."""
    return [
        ["serve", "--model", str(folder), "--port", "0"],
        ["run", "--agent", f"hf:{folder}", "--episodes", "1", "--out", str(tmp_path / "run"),
         "--index", str(tmp_path / "index.sqlite")],
        ["eval", "--domains", "travel", "--agents", f"hf:{folder}", "--episodes", "1",
         "--out", str(tmp_path / "eval")],
    ]  # fmt: skip


def test_a_run_directory_is_named_with_its_model_folder(
    run: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    for argv in commands(run, tmp_path):
        said = refused(capsys, argv, "is a training run directory")
        assert f"give {run / 'model'}" in said and "damaged" not in said, said


def test_a_run_without_its_final_model_names_a_checkpoint(
    run: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    unfinished = tmp_path / "unfinished"
    shutil.copytree(run, unfinished, ignore=shutil.ignore_patterns("model"))
    for argv in commands(unfinished, tmp_path):
        said = refused(capsys, argv, "is a training run directory")
        assert str(unfinished / "checkpoints" / "iter-000002") in said, said


def test_a_run_that_saved_nothing_yet_is_named_too(
    run: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    started = tmp_path / "started"
    started.mkdir()
    shutil.copy(run / "config.json", started / "config.json")
    said = refused(capsys, commands(started, tmp_path)[1], "is a training run directory")
    assert "holds no model yet" in said, said
