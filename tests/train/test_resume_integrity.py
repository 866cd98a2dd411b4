"""A resume continues the run's own training or is refused in one line (audit 11B).

A resumed checkpoint must be the run's own model (its config and tokenizer the start
model's, its optimiser state the shapes of its parameters) and state its folder's own
iteration (F4, F8); a run directory whose checkpoints are gone is not trained again over
(F8); the sources a resume reads again are those the run started from: a ``run:DIR`` log is
read as the episodes it started with, and a changed KL reference is refused (F5); any
failure before the first checkpoint leaves the ``--out`` folder as it found it (F6); an ask
rate with nothing to count is written ``null`` (strict JSON), and old files' NaN still read.
"""

from __future__ import annotations

import json
import shutil
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("torch")
pytest.importorskip("transformers")

from conftest import SMALL
from refusals import refused
from stategym.cli import main
from stategym.train import runlog
from stategym.train.config import SFTConfig

LAST = Path("checkpoints") / "iter-000002"
"""The session SFT run's last checkpoint (two iterations, one checkpoint each)."""
TIMING = ("seconds", "tokens_per_s", "share")


def resume_argv(run: Path, iterations: int = 3) -> list[str]:
    """The command that resumes a copy of the session's SFT run (its own settings)."""
    return ["train", "sft", "--out", str(run), "--agents", "expert:1,oracle:1",
            "--episodes", "6", "--iterations", str(iterations), "--batch-size", "2",
            "--save-every", "1", "--eval-episodes", "2", "--max-tokens", "24",
            "--max-length", "1400", "--tiny-width", "64", "--tiny-vocab", "400",
            "--no-progress"]  # fmt: skip


def copied(sft_run: Path, tmp_path: Path) -> Path:
    run = tmp_path / "run"
    shutil.copytree(sft_run, run)
    return run


def untouched(run: Path) -> dict[str, bytes]:
    """What a refusal must leave as it was: the metrics, the final model's weights and
    the list of checkpoints."""
    folder = run / "checkpoints"
    listing = sorted(p.name for p in folder.iterdir()) if folder.is_dir() else []
    weights = run / "model" / "model.safetensors"
    return {
        "metrics": (run / runlog.METRICS).read_bytes(),
        "model": weights.read_bytes() if weights.exists() else b"",
        "checkpoints": " ".join(listing).encode(),
    }


def steady(run: Path) -> list[dict[str, Any]]:
    return [{k: v for k, v in m.items() if k not in TIMING} for m in runlog.read_metrics(run)]


@pytest.fixture(scope="module")
def narrow_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The session run's recipe at width 32: another model size, same everything else."""
    from stategym.train.sft import train

    out = tmp_path_factory.mktemp("narrow") / "run"
    return train(SFTConfig(out=str(out), agents="expert:1,oracle:1", **{**SMALL, "tiny_width": 32}))


# F4: a checkpoint of another model -------------------------------------------------------


def test_a_checkpoint_of_another_model_size_is_refused_naming_its_folder(
    sft_run: Path, narrow_run: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Before, the width-32 checkpoint was trained on in a width-64 run, and published as
    its model/ (exit 0)."""
    run = copied(sft_run, tmp_path)
    shutil.rmtree(run / LAST)
    shutil.copytree(narrow_run / LAST, run / LAST)
    before = untouched(run)
    error = refused(capsys, resume_argv(run), f"{run / LAST}: not this run's model")
    assert "hidden_size 32 (the run started with 64)" in error
    assert f"delete {run / LAST} to resume from the checkpoint before it" in error
    assert untouched(run) == before


def test_an_optimiser_state_of_another_model_size_is_refused_naming_it(
    sft_run: Path, narrow_run: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Before: ``RuntimeError: The size of tensor a (64) must match ...`` from inside
    AdamW's first step, a traceback."""
    run = copied(sft_run, tmp_path)
    shutil.copy(narrow_run / LAST / "optimizer.pt", run / LAST / "optimizer.pt")
    before = untouched(run)
    error = refused(capsys, resume_argv(run), f"{run / LAST / 'optimizer.pt'}: does not fit")
    assert "delete" in error and "Traceback" not in error
    assert untouched(run) == before


def test_a_checkpoint_with_another_tokenizer_of_the_same_size_is_refused(
    sft_run: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Two tokens' ids swapped: the sizes are the same, the vocabulary is not the one the
    model was trained with."""
    run = copied(sft_run, tmp_path)
    path = run / LAST / "tokenizer.json"
    tokenizer = json.loads(path.read_text())
    vocabulary = tokenizer["model"]["vocab"]
    first, second = sorted(vocabulary, key=vocabulary.get)[300:302]
    vocabulary[first], vocabulary[second] = vocabulary[second], vocabulary[first]
    path.write_text(json.dumps(tokenizer))
    before = untouched(run)
    refused(capsys, resume_argv(run), f"{run / LAST}: not this run's model (its tokenizer")
    assert untouched(run) == before


# F8: the checkpoints' own state ------------------------------------------------------------


@pytest.mark.parametrize("stated", [99, 1], ids=["ahead: ended the run early", "behind"])
def test_a_checkpoint_stating_another_iteration_than_its_folder_is_refused(
    sft_run: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str], stated: int
) -> None:
    """Before, ``{"iteration": 99}`` ended the run "complete" and ``{"iteration": 1}``
    trained iteration 2's weights again as iteration 2, relabelling what followed."""
    run = copied(sft_run, tmp_path)
    (run / LAST / "trainer_state.json").write_text(json.dumps({"iteration": stated}))
    before = untouched(run)
    error = refused(capsys, resume_argv(run), f"states iteration {stated}, not its folder's")
    assert f"{run / LAST / 'trainer_state.json'}" in error and "delete" in error
    assert untouched(run) == before


@pytest.mark.parametrize("name", ["optimizer.pt", "model.safetensors", "trainer_state.json"])
def test_a_checkpoint_missing_a_file_is_refused_with_the_damaged_checkpoint_advice(
    sft_run: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str], name: str
) -> None:
    """Before: a bare ``No such file or directory`` (optimizer.pt), or a silent resume
    from the checkpoint before (trainer_state.json)."""
    run = copied(sft_run, tmp_path)
    (run / LAST / name).unlink()
    before = untouched(run)
    error = refused(capsys, resume_argv(run), str(run / LAST))
    assert f"delete {run / LAST} to resume from the checkpoint before it" in error
    assert untouched(run) == before


@pytest.mark.parametrize("lost", ["checkpoints/", "every trainer_state.json"])
def test_a_run_that_lost_its_checkpoints_is_not_trained_again_over(
    sft_run: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str], lost: str
) -> None:
    """Before, the run restarted from iteration 0 without a word, rewriting metrics.jsonl
    and model/."""
    run = copied(sft_run, tmp_path)
    if lost == "checkpoints/":
        shutil.rmtree(run / "checkpoints")
    else:
        for state in (run / "checkpoints").glob("iter-*/trainer_state.json"):
            state.unlink()
    before = untouched(run)
    said = "holds model/ and metrics.jsonl up to iteration 2 but no checkpoint"
    error = refused(capsys, resume_argv(run), said if lost == "checkpoints/" else "missing")
    assert "another --out" in error or "delete" in error
    assert untouched(run) == before


def test_a_run_stopped_before_its_first_checkpoint_starts_afresh(
    sft_run: Path, tmp_path: Path
) -> None:
    """Guard (passes before and after): a killed run's lines before its first checkpoint,
    which no cleanup removed, are no reason to refuse; the run trains as if new."""
    from stategym.train.sft import train

    run = tmp_path / "run"
    run.mkdir()
    shutil.copy(sft_run / runlog.CONFIG, run / runlog.CONFIG)
    first = (sft_run / runlog.METRICS).read_bytes().splitlines(keepends=True)[0]
    (run / runlog.METRICS).write_bytes(first)
    train(SFTConfig(out=str(run), agents="expert:1,oracle:1", **SMALL))
    assert steady(run) == steady(sft_run)


def test_an_interrupted_save_is_not_resumed_from(sft_run: Path, tmp_path: Path) -> None:
    """A ``.partial`` folder holding a state (a save stopped before its rename) is no
    checkpoint. Before, it sorted after ``iter-000002`` and the run resumed from it: no
    line for iteration 3, the partial folder published as model/."""
    run = copied(sft_run, tmp_path)
    partial = run / "checkpoints" / "iter-000003.partial"
    shutil.copytree(run / LAST, partial)
    (partial / "trainer_state.json").write_text(json.dumps({"iteration": 3}))
    assert main(resume_argv(run)) == 0
    assert [m["iteration"] for m in runlog.read_metrics(run) if "eval" not in m] == [1, 2, 3]
    assert not partial.exists() and (run / "checkpoints" / "iter-000003").is_dir()


def test_a_run_with_checkpoints_but_no_start_record_is_refused(
    sft_run: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Without ``start.json`` nothing says which model and data the run started from, so
    a checkpoint (or a source) swapped since could not be told apart."""
    run = copied(sft_run, tmp_path)
    (run / "start.json").unlink()
    before = untouched(run)
    refused(capsys, resume_argv(run), "no start.json")
    assert untouched(run) == before


# F5: the sources a resume reads again ------------------------------------------------------


def _log(folder: Path, seeds: range, *, append: bool = False) -> None:
    """Write (or append to) ``folder``'s log: the expert's episodes on ``seeds``."""
    from stategym.kernel.trajectory import dumps
    from stategym.train.data import play_demonstrations

    folder.mkdir(exist_ok=True)
    lines = b"".join(dumps(t) + b"\n" for t, _ in play_demonstrations("travel", "expert", seeds))
    with (folder / "trajectories.jsonl").open("ab" if append else "wb") as handle:
        handle.write(lines)


LOGGED = {**{k: v for k, v in SMALL.items() if k != "episodes"}, "eval_episodes": 1,
          "max_tokens": 8}  # fmt: skip
"""A run on a log: its episodes are the log's (``episodes`` left at its default)."""


def test_a_log_that_grew_is_read_as_the_episodes_the_run_started_with(tmp_path: Path) -> None:
    """Before, the resumed run learnt from all five episodes and its weights differed
    from an uninterrupted run's (no warning)."""
    from stategym.train.sft import train

    _log(tmp_path / "log", range(3))
    base = SFTConfig(agents=f"run:{tmp_path / 'log'}", **LOGGED)
    whole = train(replace(base, out=str(tmp_path / "whole")))
    cut = replace(base, out=str(tmp_path / "cut"))
    train(replace(cut, iterations=1))
    _log(tmp_path / "log", range(3, 5), append=True)  # two more episodes: the log grew
    resumed = train(cut)
    assert steady(resumed) == steady(whole)
    weights = "model/model.safetensors"
    assert (resumed / weights).read_bytes() == (whole / weights).read_bytes()


def test_a_log_rewritten_since_the_start_is_refused_naming_it(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    log = tmp_path / "log"
    _log(log, range(3))
    out = tmp_path / "sft"
    argv = ["train", "sft", "--agents", f"run:{log}", "--out", str(out), "--batch-size", "2",
            "--eval-episodes", "1", "--max-tokens", "8", "--save-every", "1",
            "--tiny-width", "64", "--tiny-vocab", "400", "--no-progress"]  # fmt: skip
    assert main([*argv, "--iterations", "1"]) == 0
    _log(log, range(10, 13))  # played again on other seeds: other episodes, the same count
    before = untouched(out)
    refused(capsys, [*argv, "--iterations", "2"], f"--agents run:{log}: its log's first 3")
    assert untouched(out) == before


@pytest.mark.parametrize("kl", ["0.5", "0"])
def test_a_kl_reference_changed_since_the_start_is_refused_naming_it(
    sft_run: Path, narrow_run: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str], kl: str
) -> None:
    """Before, the resumed run anchored its KL term to whatever ``--init``'s model/ held by
    then (here the run was trained on: its model/ is another checkpoint's). Without KL
    (audit 13C F1, the experiments' setting) the resume went on, from its own checkpoint,
    under the name of the retrained model."""
    init = copied(sft_run, tmp_path)
    out = tmp_path / "grpo"
    argv = ["train", "grpo", "--init", str(init), "--out", str(out), "--kl", kl,
            "--group", "2", "--tasks", "1", "--minibatch", "2", "--save-every", "1",
            "--eval-episodes", "1", "--max-tokens", "8", "--no-progress"]  # fmt: skip
    assert main([*argv, "--iterations", "1"]) == 0
    assert main([*argv, "--iterations", "2"]) == 0  # the same reference: it resumes
    shutil.rmtree(init / "model")
    shutil.copytree(init / "checkpoints" / "iter-000001", init / "model")
    before = untouched(out)
    refused(capsys, [*argv, "--iterations", "3"], f"--init {init}: not the model this run")
    assert untouched(out) == before


def test_the_start_model_spelled_another_way_resumes(
    sft_run: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Audit 13C F3: ``--init`` was compared as text, so the same model given by a relative
    path (or inside a moved experiment folder) was refused as "other settings (init)"."""
    init = copied(sft_run, tmp_path)
    out = tmp_path / "grpo"
    common = ["--out", str(out), "--group", "2", "--tasks", "1", "--minibatch", "2",
              "--save-every", "1", "--eval-episodes", "1", "--max-tokens", "8",
              "--no-progress"]  # fmt: skip
    assert main(["train", "grpo", "--init", str(init), *common, "--iterations", "1"]) == 0
    monkeypatch.chdir(tmp_path)
    assert main(["train", "grpo", "--init", "run/model", *common, "--iterations", "2"]) == 0
    steps = [json.loads(line) for line in (out / runlog.METRICS).read_text().splitlines()]
    assert [m["iteration"] for m in steps if "eval" not in m] == [1, 2]


def test_an_sft_start_model_changed_since_is_refused(
    sft_run: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    init = copied(sft_run, tmp_path)
    out = tmp_path / "sft"
    argv = ["train", "sft", "--init", str(init), "--out", str(out), "--agents", "expert:1",
            "--episodes", "2", "--batch-size", "2", "--save-every", "1",
            "--eval-episodes", "1", "--max-tokens", "8", "--max-length", "1400",
            "--no-progress"]  # fmt: skip
    assert main([*argv, "--iterations", "1"]) == 0
    shutil.rmtree(init / "model")
    shutil.copytree(init / "checkpoints" / "iter-000001", init / "model")
    before = untouched(out)
    refused(capsys, [*argv, "--iterations", "2"], f"--init {init}: not the model this run")
    assert untouched(out) == before


# F6: a failure before the first checkpoint -------------------------------------------------


class Crash(RuntimeError):
    """Stands in for a library's error (transformers' config validation, a torch overflow)."""


@pytest.mark.parametrize("raised", [Crash, KeyboardInterrupt], ids=["an error", "Ctrl-C"])
@pytest.mark.parametrize("existing", [False, True], ids=["new folder", "a folder with a file"])
def test_a_failure_before_the_first_checkpoint_leaves_the_folder_as_found(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, raised: type[BaseException], existing: bool
) -> None:
    """Before, only a usage error cleaned up: any other left config.json, and the corrected
    command was refused as "started with other settings"."""
    from stategym.train import sft

    out = tmp_path / "sft"
    if existing:
        out.mkdir()
        (out / "notes.txt").write_text("mine\n")
    argv = ["train", "sft", "--out", str(out), "--episodes", "2", "--batch-size", "2",
            "--iterations", "2", "--save-every", "2", "--eval-episodes", "1",
            "--max-tokens", "8", "--tiny-width", "64", "--tiny-vocab", "400",
            "--no-progress"]  # fmt: skip

    def crash(*args: Any, **kwargs: Any) -> Any:
        raise raised("stopped before the first checkpoint")

    with monkeypatch.context() as patch:
        patch.setattr(sft, "step", crash)
        if raised is KeyboardInterrupt:
            assert main(argv) == 130
        else:
            with pytest.raises(Crash):
                main(argv)
    if existing:
        assert sorted(p.name for p in out.iterdir()) == ["notes.txt"]
    else:
        assert not out.exists()
    assert main([*argv, "--lr", "0.002"]) == 0  # the corrected command, other settings


# the ask rate with nothing to count ----------------------------------------------------------


def strict(text: str) -> list[dict[str, Any]]:
    """JSON lines parsed as strict JSON (NaN and Infinity refused)."""

    def refuse(constant: str) -> Any:
        raise ValueError(f"{constant} is not JSON")

    return [json.loads(line, parse_constant=refuse) for line in text.splitlines()]


def test_an_ask_rate_with_no_must_ask_slot_is_written_null(tmp_path: Path) -> None:
    """Before, ``"ask_rate": NaN``: not JSON, which strict readers refuse."""
    from stategym.train.sft import train

    small = {**SMALL, "iterations": 1, "eval_episodes": 1, "max_tokens": 8}
    config = SFTConfig(out=str(tmp_path / "run"), knobs="hidden_info=off", **small)
    run = train(config)
    held_out = [m["eval"] for m in strict((run / runlog.METRICS).read_text()) if "eval" in m]
    assert held_out and all(m["ask_rate"] is None for m in held_out)


def test_old_nan_lines_still_read_and_are_rewritten_null(tmp_path: Path) -> None:
    """Guard for the readers: an old file's NaN still reads (the trainer's reader and the
    report's, which keeps finite numbers), and a resume's rewrite of it is strict JSON."""
    from stategym.report.runs import read_training

    (tmp_path / runlog.METRICS).write_text(
        '{"iteration": 1, "loss": 1.0, "ask_rate": NaN}\n'
        '{"iteration": 2, "loss": 0.5, "ask_rate": null}\n'
    )
    assert [m["iteration"] for m in runlog.read_metrics(tmp_path)] == [1, 2]
    lines = read_training(tmp_path).train
    assert [("ask_rate" in line, line["loss"]) for line in lines] == [(False, 1.0), (False, 0.5)]
    runlog.truncate_metrics(tmp_path, 2)
    assert [m["ask_rate"] for m in strict((tmp_path / runlog.METRICS).read_text())] == [None, None]
