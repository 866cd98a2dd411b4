"""The start model (``--init``) is checked before the run directory is written: a bad one is
refused in one line, and the corrected command then runs in the same ``--out`` (a run
directory written first would refuse it as "started with other settings")."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

pytest.importorskip("torch")
pytest.importorskip("transformers")

from refusals import refused
from stategym.cli import main

SMALL = ["--episodes", "2", "--iterations", "1", "--batch-size", "2", "--eval-episodes", "1",
         "--max-tokens", "8", "--no-progress"]  # fmt: skip


def test_grpo_refuses_the_untrained_tiny_model(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "grpo"
    refused(capsys, ["train", "grpo", "--init", "tiny", "--out", str(out)], "trained model")
    assert not out.exists()


def test_a_run_directory_without_its_final_model_is_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    unfinished = tmp_path / "sft"
    unfinished.mkdir()
    (unfinished / "config.json").write_text(json.dumps({"init": "tiny", "iterations": 30}))
    out = tmp_path / "grpo"
    refused(capsys, ["train", "grpo", "--init", str(unfinished), "--out", str(out)], "no saved")
    assert not out.exists()


def test_a_bad_init_leaves_nothing_that_blocks_the_corrected_command(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "sft"
    bad = ["train", "sft", "--init", "no/such/model", "--out", str(out), *SMALL]
    refused(capsys, bad, "--init no/such/model")
    assert not out.exists()
    assert main(["train", "sft", "--init", "tiny", "--out", str(out), *SMALL]) == 0
    assert (out / "model" / "config.json").is_file()


def test_the_tiny_model_trains_and_is_saved_in_the_dtype_asked_for(tmp_path: Path) -> None:
    import torch
    from safetensors.torch import load_file

    out = tmp_path / "sft"
    assert main(["train", "sft", "--dtype", "bfloat16", "--out", str(out), *SMALL]) == 0
    assert json.loads((out / "model" / "config.json").read_text())["dtype"] == "bfloat16"
    weights = load_file(out / "model" / "model.safetensors")
    assert {tensor.dtype for tensor in weights.values()} == {torch.bfloat16}  # was float32
