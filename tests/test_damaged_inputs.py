"""Damaged inputs and outputs, from the fourteenth outside audit (14b): every command
against files that are not what it wrote, and outputs that are not files.

Regressions:

- F1: ``report --out`` renamed its page over a device or a FIFO (as root, ``--out
  /dev/null`` replaced the machine's null device); every path a command replaces whole is now
  refused, up front, where it exists and is not a regular file, and
  :func:`~stategym.kernel.files.replace_bytes` refuses it as a last line of defence. Only
  private FIFOs made in ``tmp_path`` are used here, never a real device.
- F2: deep nesting or a 5000-digit integer in a JSON file read with the standard library
  was a traceback (``RecursionError``, ``ValueError``) in nine readers; one parse rule
  (:func:`~stategym.kernel.files.json_value`) makes every failure one line.
- F4: a resume whose ``metrics.jsonl`` was deleted, emptied or cut short went on silently,
  its history lost; it is refused, naming the lines.
- F5: a failed replace named ``FILE.partial`` and left it behind.
- F6: empty comma-list items and repeated knobs were accepted, an empty ``--out`` meant the
  current folder, ``report`` read ``metrics.jsonl`` by a looser rule than the trainer's and
  showed a training run whose ``config.json`` is a folder with an empty config, and ``model
  info`` on a missing path called it a folder without a record.
"""

from __future__ import annotations

import errno
import json
import os
import shutil
import stat
from collections.abc import Iterator
from pathlib import Path

import pytest

from one_line_error import fails
from stategym.cli import main
from stategym.kernel.errors import UsageError
from stategym.kernel.files import replace_bytes
from stategym.train.checkpoint import publish

DEEP = "[" * 5000 + "]" * 5000
"""Nesting far past Python's recursion limit (the standard library's parser recurses)."""
BIG = "9" * 5000
"""An integer past Python's 4300-digit conversion limit."""
DAMAGE = {"deep": DEEP, "bigint": BIG}


@pytest.fixture(autouse=True)
def _in_tmp(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)  # a default path (runs/index.sqlite) lands here


@pytest.fixture
def fifo(tmp_path: Path) -> Iterator[Path]:
    """A private FIFO with its read end held open (non-blocking), so that code which wrongly
    opens it for writing does not hang the test but shows in what it did."""
    path = tmp_path / "fifo"
    os.mkfifo(path)
    reader = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
    try:
        yield path
    finally:
        os.close(reader)


def is_fifo(path: Path) -> bool:
    return stat.S_ISFIFO(os.lstat(path).st_mode)


def fifo_at(path: Path, fifo: Path) -> Path:
    """Move the held-open FIFO to ``path`` (its reader stays open)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fifo.rename(path)
    return path


def code_of(argv: list[str]) -> int:
    try:
        return main(argv)
    except SystemExit as exit_info:  # argparse's own errors
        return int(exit_info.code or 0)


@pytest.fixture(scope="module")
def run_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A real ``stategym run`` directory of two expert episodes."""
    out = tmp_path_factory.mktemp("run") / "run"
    index = out.parent / "index.sqlite"
    argv = ["run", "--episodes", "2", "--out", str(out), "--index", str(index)]
    assert main(argv) == 0
    return out


# -- F1: an output that is not a regular file is refused, never replaced ----------------------


def test_report_refuses_a_fifo_out_and_leaves_it_a_fifo(
    run_dir: Path, fifo: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    fails(["report", str(run_dir), "--out", str(fifo)], capsys, "FIFO", "not a regular file")
    assert is_fifo(fifo)


def test_the_report_writer_refuses_a_fifo_before_reading_anything(
    run_dir: Path, fifo: Path
) -> None:
    """The library path (``stategym.report.write``, what every ``--report`` flag runs)."""
    from stategym.report import write

    with pytest.raises(UsageError, match="FIFO"):
        write([run_dir], fifo)
    assert is_fifo(fifo)


def test_replace_bytes_never_renames_over_a_fifo(fifo: Path) -> None:
    with pytest.raises(UsageError, match=r"FIFO .*not a regular file"):
        replace_bytes(fifo, b"page")
    assert is_fifo(fifo)
    assert not fifo.with_name(fifo.name + ".partial").exists()


def test_run_refuses_a_fifo_index_before_playing(
    tmp_path: Path, fifo: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "out"
    argv = ["run", "--episodes", "1", "--out", str(out), "--index", str(fifo)]
    fails(argv, capsys, "FIFO")
    assert is_fifo(fifo) and not out.exists()


@pytest.mark.parametrize("name", ["summary.json", "results.md"])
def test_run_refuses_a_fifo_among_its_files_before_playing(
    tmp_path: Path, fifo: Path, name: str, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "out"
    target = fifo_at(out / name, fifo)
    index = str(tmp_path / "i.sqlite")
    fails(["run", "--episodes", "1", "--out", str(out), "--index", index], capsys, "FIFO")
    assert is_fifo(target) and not (out / "trajectories.jsonl").exists()


@pytest.mark.parametrize(("name", "flags"), [("scorecard.md", []), ("report.html", ["--report"])])
def test_eval_refuses_a_fifo_among_its_files_before_playing(
    tmp_path: Path, fifo: Path, name: str, flags: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "out"
    target = fifo_at(out / name, fifo)
    argv = ["eval", "--domains", "travel", "--agents", "expert", "--episodes", "1", *flags]
    fails([*argv, "--out", str(out)], capsys, name, "FIFO")
    assert is_fifo(target) and not (out / "trajectories.jsonl").exists()


def test_score_refuses_a_fifo_scorecard_before_reading(
    run_dir: Path, tmp_path: Path, fifo: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    run = tmp_path / "copy"
    shutil.copytree(run_dir, run)
    target = fifo_at(run / "scorecard.md", fifo)
    fails(["score", str(run), "--resamples", "10"], capsys, "scorecard.md", "FIFO")
    assert is_fifo(target) and not (run / "scores.jsonl").exists()


def test_experiment_refuses_a_fifo_table_before_playing(
    tmp_path: Path, fifo: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    pytest.importorskip("matplotlib")
    pytest.importorskip("scipy")
    out = tmp_path / "e0"
    target = fifo_at(out / "table.md", fifo)
    fails(["experiment", "e0", "--smoke", "--seeds", "0", "--out", str(out)], capsys, "FIFO")
    assert is_fifo(target) and not (out / "results.json").exists()


# -- F5: a failed replace names the destination and leaves no .partial ------------------------


def test_a_summary_that_is_a_folder_is_refused_by_its_name_before_playing(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "run"
    (out / "summary.json").mkdir(parents=True)
    index = str(tmp_path / "i.sqlite")
    line = fails(["run", "--episodes", "2", "--out", str(out), "--index", index], capsys)
    assert "summary.json is a folder" in line and ".partial" not in line
    assert sorted(p.name for p in out.iterdir()) == ["summary.json"]


def test_a_failed_rename_names_the_destination_and_removes_the_partial(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    target = tmp_path / "summary.json"

    def failing(source: object, destination: object) -> None:
        raise OSError(errno.EIO, "Input/output error", str(source), None, str(destination))

    monkeypatch.setattr(os, "replace", failing)
    with pytest.raises(OSError) as raised:
        replace_bytes(target, b"{}")
    assert raised.value.filename == str(target)
    assert list(tmp_path.iterdir()) == []


# -- F2: one JSON rule: deep nesting and huge integers are one line -------------------------


def training_run(root: Path, *, config: str = '{"kind": "sft"}', line: str = "") -> Path:
    run = root / "train"
    run.mkdir()
    (run / "config.json").write_text(config)
    first = line or '{"iteration": 1, "loss": 1.0}'
    (run / "metrics.jsonl").write_text(first + '\n{"iteration": 2, "loss": 0.5}\n')
    return run


@pytest.mark.parametrize("kind", DAMAGE)
@pytest.mark.parametrize("where", ["metrics", "config", "results"])
def test_report_of_a_deep_or_huge_json_file_is_one_line(
    tmp_path: Path, kind: str, where: str, capsys: pytest.CaptureFixture[str]
) -> None:
    value = DAMAGE[kind]
    if where == "metrics":
        run = training_run(tmp_path, line=f'{{"x": {value}, "iteration": 1}}')
        named = "metrics.jsonl:1"
    elif where == "config":
        run = training_run(tmp_path, config=f'{{"x": {value}, "kind": "sft"}}')
        named = "config.json"
    else:
        run = tmp_path / "e0"
        run.mkdir()
        (run / "results.json").write_text(f'{{"x": {value}, "experiment": "e0"}}')
        named = "results.json"
    fails(["report", str(run), "--out", str(tmp_path / "r.html")], capsys, named, "not JSON")


@pytest.mark.parametrize("kind", DAMAGE)
def test_model_info_and_an_hf_agent_of_a_deep_or_huge_record_are_one_line(
    sft_run: Path, tmp_path: Path, kind: str, capsys: pytest.CaptureFixture[str]
) -> None:
    folder = tmp_path / "model"
    shutil.copytree(sft_run / "model", folder)
    record = folder / "stategym_model.json"
    record.write_text(record.read_text().replace("{", f'{{"x": {DAMAGE[kind]},', 1))
    fails(["model", "info", str(folder)], capsys, "stategym_model.json", "damaged")
    argv = ["run", "--agent", f"hf:{folder}", "--episodes", "1", "--out", str(tmp_path / "o")]
    fails([*argv, "--index", str(tmp_path / "i.sqlite")], capsys, "stategym_model.json")


def test_a_config_read_back_from_deep_json_is_a_value_error(tmp_path: Path) -> None:
    from stategym.train.config import SFTConfig, from_json

    path = tmp_path / "config.json"
    path.write_text(f'{{"x": {DEEP}}}')
    with pytest.raises(ValueError, match=r"config\.json: not JSON"):
        from_json(path, SFTConfig)


# -- a small real training run: F2 through the trainer's resume, and F4 -------------------------

TRAIN = [
    *("--episodes", "4", "--batch-size", "2", "--save-every", "1", "--eval-episodes", "1"),
    *("--max-tokens", "16", "--max-length", "1400", "--tiny-width", "64"),
    *("--tiny-vocab", "400", "--threads", "1", "--no-progress"),
]
"""A two-iteration SFT run from scratch: about ten seconds on two busy cores."""


@pytest.fixture(scope="module")
def sft_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A finished two-iteration SFT run (checkpoints 1 and 2, ``model/``)."""
    pytest.importorskip("torch")
    out = tmp_path_factory.mktemp("sft") / "run"
    assert main(["train", "sft", *TRAIN, "--iterations", "2", "--out", str(out)]) == 0
    return out


def resume(run: Path, iterations: int = 3) -> list[str]:
    return ["train", "sft", *TRAIN, "--iterations", str(iterations), "--out", str(run)]


def copy_of(sft_run: Path, tmp_path: Path) -> Path:
    run = tmp_path / "run"
    shutil.copytree(sft_run, run)
    return run


@pytest.mark.parametrize("kind", DAMAGE)
@pytest.mark.parametrize(
    "file", ["config.json", "start.json", "checkpoints/iter-000002/trainer_state.json"]
)
def test_a_resume_over_a_deep_or_huge_json_file_is_one_line(
    sft_run: Path, tmp_path: Path, kind: str, file: str, capsys: pytest.CaptureFixture[str]
) -> None:
    run = copy_of(sft_run, tmp_path)
    path = run / file
    path.write_text(path.read_text().replace("{", f'{{"x": {DAMAGE[kind]},', 1))
    fails(resume(run), capsys, Path(file).name, "not JSON")
    assert not (run / "checkpoints" / "iter-000003").exists()


@pytest.mark.parametrize("kind", DAMAGE)
def test_a_resume_over_a_deep_or_huge_metrics_line_is_one_line(
    sft_run: Path, tmp_path: Path, kind: str, capsys: pytest.CaptureFixture[str]
) -> None:
    run = copy_of(sft_run, tmp_path)
    metrics = run / "metrics.jsonl"
    lines = metrics.read_text().splitlines(keepends=True)
    lines[0] = lines[0].replace("{", f'{{"x": {DAMAGE[kind]},', 1)
    metrics.write_text("".join(lines))
    fails(resume(run), capsys, "metrics.jsonl:1", "not JSON")
    fails(["report", str(run), "--out", str(tmp_path / "r.html")], capsys, "metrics.jsonl:1")


def lines_of(run: Path) -> list[dict[str, object]]:
    return [json.loads(line) for line in (run / "metrics.jsonl").read_text().splitlines()]


@pytest.mark.parametrize("damage", ["deleted", "emptied", "cut"])
def test_a_resume_whose_metrics_lost_lines_the_checkpoint_covers_is_refused(
    sft_run: Path, tmp_path: Path, damage: str, capsys: pytest.CaptureFixture[str]
) -> None:
    """F4: the checkpoint after iteration 2 covers iterations 1 and 2; without their lines
    the resumed file would hold iteration 3 alone, the run's history gone."""
    run = copy_of(sft_run, tmp_path)
    metrics = run / "metrics.jsonl"
    if damage == "deleted":
        metrics.unlink()
        words: tuple[str, ...] = ("metrics.jsonl is missing",)
    elif damage == "emptied":
        metrics.write_text("")
        words = ("iterations 1-2",)
    else:
        metrics.write_text(json.dumps(lines_of(sft_run)[0]) + "\n")  # iteration 1 only
        words = ("iteration 2",)
    before = metrics.read_bytes() if metrics.exists() else None
    fails(resume(run), capsys, "iter-000002", "restore", *words)
    assert (metrics.read_bytes() if metrics.exists() else None) == before
    assert not (run / "checkpoints" / "iter-000003").exists()


def test_resumed_metrics_require_each_covered_evaluation(tmp_path: Path) -> None:
    """F4, the held-out lines: with ``eval_every`` 2 the checkpoint after iteration 4 covers
    the evaluations at 2 and 4; a file without the one at 2 is refused, a whole one kept."""
    from stategym.train import runlog

    train = [{"iteration": i, "loss": 1.0} for i in range(1, 5)]
    evals = [{"iteration": i, "eval": {"goal_rate": 0.5}} for i in (2, 4)]
    whole = [train[0], train[1], evals[0], train[2], train[3], evals[1]]
    (tmp_path / runlog.METRICS).write_text("".join(runlog.metrics_text(m) for m in whole))
    assert runlog.resumed_metrics(tmp_path, 4, eval_every=2) == whole
    lacking = [m for m in whole if m is not evals[0]]
    (tmp_path / runlog.METRICS).write_text("".join(runlog.metrics_text(m) for m in lacking))
    with pytest.raises(UsageError, match="the evaluation at iteration 2"):
        runlog.truncate_metrics(tmp_path, 4, eval_every=2)


# -- F6: small inconsistencies among the flag and file checks -----------------------------------


@pytest.mark.parametrize("given", ["travel,,", ",travel", "travel, ,shop"])
def test_an_empty_comma_list_item_is_refused_as_an_empty_list_is(
    tmp_path: Path, given: str, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "out"
    argv = ["eval", "--domains", given, "--agents", "expert", "--episodes", "1"]
    fails([*argv, "--out", str(out)], capsys, "--domains", "empty item")
    assert not out.exists()


def test_a_knob_given_twice_is_refused(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "out"
    argv = ["run", "--knobs", "dynamics=on,dynamics=off", "--episodes", "1", "--out", str(out)]
    fails(argv, capsys, "--knobs", "'dynamics' is given twice")
    assert not out.exists()


@pytest.mark.parametrize(
    "argv",
    [["run", "--episodes", "1", "--out", ""], ["eval", "--episodes", "1", "--out", ""]],
    ids=["run", "eval"],
)
def test_an_empty_out_is_refused_not_the_current_folder(
    tmp_path: Path, argv: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    fails(argv, capsys, "--out", "''")
    assert list(tmp_path.iterdir()) == []


def test_score_of_an_empty_path_is_refused(
    run_dir: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """``score ""`` once scored the current folder (here a copy of a run directory)."""
    run = tmp_path / "copy"
    shutil.copytree(run_dir, run)
    monkeypatch.chdir(run)
    fails(["score", ""], capsys, "expected a path")
    assert not (run / "scores.jsonl").exists()


@pytest.mark.parametrize("iteration", ["true", '"1"', "-1", "1.0"])
def test_report_refuses_a_metrics_line_the_trainer_refuses(
    tmp_path: Path, iteration: str, capsys: pytest.CaptureFixture[str]
) -> None:
    run = training_run(tmp_path, line=f'{{"iteration": {iteration}, "loss": 1.0}}')
    fails(["report", str(run), "--out", str(tmp_path / "r.html")], capsys, "metrics.jsonl:1")


def test_report_refuses_a_training_run_whose_config_is_a_folder(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    run = training_run(tmp_path)
    (run / "config.json").unlink()
    (run / "config.json").mkdir()
    out = tmp_path / "r.html"
    fails(["report", str(run), "--out", str(out)], capsys, "config.json is a folder")
    assert not out.exists()


def test_model_info_of_a_missing_path_says_it_does_not_exist(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    missing = tmp_path / "nonexistent"
    fails(["model", "info", str(missing)], capsys, str(missing), "does not exist")


def test_publishing_over_a_linked_model_folder_replaces_the_link_not_its_target(
    tmp_path: Path,
) -> None:
    """A finished run whose ``RUN/model`` is a link: re-publishing raised ``OSError: Cannot
    call rmtree on a symbolic link`` (audit 14e F4); now the link goes, its target stays."""
    checkpoint, target, run = tmp_path / "iter-2", tmp_path / "elsewhere", tmp_path / "run"
    for folder in (checkpoint, target, run):
        folder.mkdir()
    (checkpoint / "config.json").write_text("{}")
    (target / "keep.txt").write_text("the user's")
    (run / "model").symlink_to(target)
    final = publish(run, checkpoint)
    assert not final.is_symlink() and (final / "config.json").is_file()
    assert (target / "keep.txt").read_text() == "the user's"


@pytest.mark.parametrize("kind", ["link", "fifo"])
def test_model_init_overwrite_refuses_a_link_or_fifo_in_its_folder(
    tmp_path: Path, kind: str, capsys: pytest.CaptureFixture[str]
) -> None:
    """``model init --overwrite`` wrote through a link in ``--out`` (replacing a file outside
    it) and hung on a FIFO (audit 14e F3); now it refuses before building anything."""
    out, victim = tmp_path / "model", tmp_path / "victim.txt"
    out.mkdir()
    victim.write_text("precious")
    entry = out / "stategym_model.json"
    if kind == "link":
        entry.symlink_to(victim)
    else:
        os.mkfifo(entry)
    assert main(["model", "init", "--out", str(out), "--overwrite", "--steps", "1"]) == 2
    assert "stategym_model.json" in capsys.readouterr().err
    assert victim.read_text() == "precious"
