"""``stategym model init`` checks its settings and its ``--out`` before any work: a bad
value is one line naming the option (exit 2) and writes nothing; a non-empty ``--out`` (a
run directory, another model) is refused unless ``--overwrite``; a warm-up whose loss is
not finite saves nothing; ``model info`` on a damaged record is a one-line error."""

from __future__ import annotations

import hashlib
import json
import shutil
from pathlib import Path

import pytest

pytest.importorskip("torch")
pytest.importorskip("transformers")

from stategym.cli import main

TINY = ["--episodes", "4", "--steps", "1", "--batch-size", "1", "--hidden-size", "32",
        "--layers", "1", "--heads", "2", "--kv-heads", "1", "--intermediate-size", "64",
        "--vocab-size", "400", "--max-length", "1024"]  # fmt: skip


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A tiny model made by ``stategym model init`` (seconds)."""
    out = tmp_path_factory.mktemp("built") / "model"
    assert main(["model", "init", "--out", str(out), *TINY]) == 0
    return out


@pytest.fixture
def model(built: Path, tmp_path: Path) -> Path:
    """A copy of the built model, for one test to change."""
    return Path(shutil.copytree(built, tmp_path / "model"))


def refused(capsys: pytest.CaptureFixture[str], argv: list[str], said: str) -> None:
    assert main(argv) == 2
    error = capsys.readouterr().err
    assert error.startswith("stategym: error: "), error
    assert said in error and len(error.strip().splitlines()) == 1, error


def digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


BAD = {
    "--hidden-size 0": (["--hidden-size", "0"], "--hidden-size must be at least 1"),
    "--hidden-size -4": (["--hidden-size", "-4"], "--hidden-size must be at least 1"),
    "--layers 0": (["--layers", "0"], "--layers must be at least 1"),
    "--heads 0": (["--heads", "0"], "--heads must be at least 1"),
    "--kv-heads 0": (["--kv-heads", "0"], "--kv-heads must be at least 1"),
    "--kv-heads 3": (["--kv-heads", "3"], "--heads 2 must be a multiple of --kv-heads 3"),
    "--heads 3": (["--heads", "3", "--kv-heads", "1"], "--hidden-size 32 must be a multiple"),
    "--intermediate-size 0": (["--intermediate-size", "0"], "--intermediate-size must be"),
    "--vocab-size 0": (["--vocab-size", "0"], "--vocab-size 0 is below the tokenizer's least"),
    "--vocab-size 10": (["--vocab-size", "10"], "least, 261"),
    "--vocab-size 260": (["--vocab-size", "260"], "least, 261"),
    "--steps 0": (["--steps", "0"], "--steps must be at least 1"),
    "--steps -1": (["--steps", "-1"], "--steps must be at least 1"),
    "--batch-size 0": (["--batch-size", "0"], "--batch-size must be at least 1"),
    "--lr inf": (["--lr", "inf"], "--lr must be a finite number above 0"),
    "--lr nan": (["--lr", "nan"], "--lr must be a finite number above 0"),
    "--lr -1": (["--lr", "-1"], "--lr must be a finite number above 0"),
    "--lr 0": (["--lr", "0"], "--lr must be a finite number above 0"),
    "--threads -1": (["--threads", "-1"], "--threads must be 0"),
    "--episodes 0": (["--episodes", "0"], "--episodes must be at least 1"),
    "--first-seed -1": (["--first-seed", "-1"], "--first-seed -1"),
    "--knobs bogus": (["--knobs", "bogus"], "--knobs 'bogus': bad knob 'bogus'"),
    "--max-positions 10": (["--max-positions", "10"], "--max-positions 10 is below --max-length"),
}


@pytest.mark.parametrize("case", BAD, ids=list(BAD))
def test_a_bad_setting_is_one_line_and_writes_nothing(
    case: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    flags, said = BAD[case]
    out = tmp_path / "model"
    refused(capsys, ["model", "init", "--out", str(out), *TINY, *flags], said)
    assert not out.exists()


def test_episodes_zero_does_not_blame_max_length(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["model", "init", "--out", str(tmp_path / "m"), *TINY, "--episodes", "0"]) == 2
    assert "--max-length" not in capsys.readouterr().err


def test_a_warm_up_that_diverges_saves_nothing(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "model"
    argv = ["model", "init", "--out", str(out), *TINY, "--steps", "3", "--lr", "1e6"]
    assert main(argv) == 2
    last = capsys.readouterr().err.strip().splitlines()[-1]  # after the progress display
    assert last.startswith("stategym: error: the warm-up loss is nan"), last
    assert "nothing was saved" in last
    assert not out.exists()


def test_an_existing_model_is_not_overwritten(
    model: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    before = {path.name: digest(path) for path in model.iterdir()}
    argv = ["model", "init", "--out", str(model), *TINY, "--seed", "1"]
    refused(capsys, argv, f"--out {model} is not empty")
    assert {path.name: digest(path) for path in model.iterdir()} == before
    assert main([*argv, "--overwrite"]) == 0
    assert digest(model / "model.safetensors") != before["model.safetensors"]


def test_a_run_directory_is_not_overwritten(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    run = tmp_path / "run"
    run.mkdir()
    settings = json.dumps({"init": "tiny", "iterations": 30})
    (run / "config.json").write_text(settings)
    (run / "metrics.jsonl").write_text('{"iteration": 1}\n')
    refused(capsys, ["model", "init", "--out", str(run), *TINY], "is not empty")
    assert (run / "config.json").read_text() == settings
    assert sorted(p.name for p in run.iterdir()) == ["config.json", "metrics.jsonl"]


def test_an_empty_out_folder_is_taken(tmp_path: Path) -> None:
    out = tmp_path / "empty"
    out.mkdir()
    assert main(["model", "init", "--out", str(out), *TINY]) == 0
    assert (out / "model.safetensors").is_file()


def test_an_empty_out_string_is_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    with pytest.raises(SystemExit) as stop:
        main(["model", "init", "--out", "", *TINY])
    assert stop.value.code == 2
    assert "expected a folder to write the model to" in capsys.readouterr().err
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("record", ["garbage\n", "[1, 2]\n", ""])
def test_info_on_a_damaged_record_is_one_line(
    record: str, model: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (model / "stategym_model.json").write_text(record)
    refused(capsys, ["model", "info", str(model)], "the record is damaged")


def test_info_prints_a_good_record(built: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["model", "info", str(built)]) == 0
    assert json.loads(capsys.readouterr().out)["recipe"]["hidden_size"] == 32
