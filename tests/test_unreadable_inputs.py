"""Inputs that are not regular files, links as outputs, and a failed checkpoint save (audit
15's file-handling holes).

Regressions:

- a FIFO among the files a command reads hung it (reading a FIFO with no writer waits
  forever): a checkpoint's files, a model folder's (``--init``, ``hf:``, ``model info``,
  a tokenizer folder), a run's ``.lock``, a ``run:DIR`` log, and the files ``report``,
  ``score`` and ``protocol --report`` read. Now every reader opens through
  :func:`stategym.kernel.files.open_regular` (``O_NONBLOCK``, then ``fstat``), and a
  folder handed to a loader is checked entry by entry: one line naming the file and what it
  is. A folder or a FIFO where a file is expected was called missing: now it is named as
  what it is (``score`` said "no trajectories.jsonl" of a FIFO);
- a ``.lock`` that was a link had the process id written over the file it named;
- writing whole over a link replaced the link with a file and left its target stale: the
  file it names is written now, the link kept (a dangling link into a missing folder is
  refused before anything is read);
- a checkpoint save whose rename failed named ``iter-N.partial`` and left it behind.

Every FIFO here is private (``tmp_path``). Code that still reads one would wait forever, so
:func:`fifo_maker` starts a watchdog process (:data:`WATCHDOG`): after :data:`GRACE` seconds
it opens each FIFO for writing and closes it again, which ends any wait with an empty read:
a regression then fails its assertion instead of hanging the suite.
"""

from __future__ import annotations

import errno
import json
import os
import shutil
import socket
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from one_line_error import fails
from stategym.cli import main
from stategym.kernel.errors import UsageError
from test_damaged_inputs import TRAIN, copy_of, resume, run_dir, sft_run  # noqa: F401

GRACE = 10.0
"""Seconds a test's FIFOs are left alone before the watchdog ends any wait on them."""


@pytest.fixture(autouse=True)
def _in_tmp(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)  # a default path (runs/index.sqlite) lands here


WATCHDOG = """
import os, stat, sys, time
root, grace = sys.argv[1], float(sys.argv[2])
time.sleep(grace)
while True:
    for folder, _, names in os.walk(root):
        for path in (os.path.join(folder, name) for name in names):
            try:
                if stat.S_ISFIFO(os.lstat(path).st_mode):
                    os.close(os.open(path, os.O_WRONLY | os.O_NONBLOCK))
            except OSError:  # nobody reads it (ENXIO), or it is gone
                pass
    time.sleep(0.2)
"""
"""Opens every FIFO under a folder for writing, and closes it again, every 0.2 s after a
grace: a reader waiting on one then reads an empty file. A process of its own, since a
loader blocked in ``open`` may hold the tested process's GIL (``safetensors`` does)."""


@pytest.fixture
def fifo_maker(tmp_path: Path) -> Iterator[Callable[[Path], Path]]:
    """Makes FIFOs under ``tmp_path`` (``make(path)``, replacing what is there), and ends
    any read that waits on one after :data:`GRACE` seconds (module docstring)."""

    def make(path: Path) -> Path:
        path.parent.mkdir(parents=True, exist_ok=True)
        if path.is_dir() and not path.is_symlink():
            shutil.rmtree(path)
        elif path.exists() or path.is_symlink():
            path.unlink()
        os.mkfifo(path)
        return path

    watchdog = subprocess.Popen([sys.executable, "-c", WATCHDOG, str(tmp_path), str(GRACE)])
    try:
        yield make
    finally:
        watchdog.kill()
        watchdog.wait()


# -- the one reading rule (kernel.files) ---------------------------------------------------------


def test_reading_a_fifo_a_folder_or_a_socket_is_one_refusal_naming_it(
    tmp_path: Path, fifo_maker: Callable[[Path], Path]
) -> None:
    from stategym.kernel.files import NotAFile, exists_as_file, read_json, read_regular

    fifo = fifo_maker(tmp_path / "data.json")
    folder = tmp_path / "folder.json"
    folder.mkdir()
    server = socket.socket(socket.AF_UNIX)
    server.bind(str(tmp_path / "sock.json"))
    try:
        sock = tmp_path / "sock.json"
        for path, kind in ((fifo, "FIFO"), (folder, "a folder"), (sock, "socket")):
            for read in (read_regular, exists_as_file):
                with pytest.raises(NotAFile, match=kind) as raised:
                    read(path)
                assert str(path) in str(raised.value) and "\n" not in str(raised.value)
            with pytest.raises(UsageError, match=kind):
                read_json(path)
    finally:
        server.close()
    assert not exists_as_file(tmp_path / "missing.json")
    (tmp_path / "dangling").symlink_to(tmp_path / "nowhere")
    assert not exists_as_file(tmp_path / "dangling")


def test_the_check_is_made_on_the_open_file_not_only_before_it(
    tmp_path: Path, fifo_maker: Callable[[Path], Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    """A FIFO swapped in after a path check: the open does not wait (``O_NONBLOCK``) and
    ``fstat`` on the descriptor refuses it."""
    from stategym.kernel import files

    fifo = fifo_maker(tmp_path / "swapped")
    monkeypatch.setattr(files, "not_a_file", lambda path: None)
    with pytest.raises(files.NotAFile, match="FIFO"):
        files.read_regular(fifo)


def test_a_fifo_deep_in_a_folder_is_refused_before_a_loader_sees_it(
    tmp_path: Path, fifo_maker: Callable[[Path], Path]
) -> None:
    from stategym.kernel.files import NotAFile, refuse_special_entries

    (tmp_path / "model").mkdir()
    (tmp_path / "model" / "config.json").write_text("{}")
    (tmp_path / "model" / "gone").symlink_to(tmp_path / "nowhere")  # the loader's to name
    refuse_special_entries(tmp_path / "model")
    fifo = fifo_maker(tmp_path / "model" / "additional_chat_templates" / "tool.jinja")
    with pytest.raises(NotAFile, match="FIFO") as raised:
        refuse_special_entries(tmp_path / "model")
    assert raised.value.path == fifo


# -- checkpoints and the trainer's files ----------------------------------------------------------

CHECKPOINT = "checkpoints/iter-000002"


@pytest.mark.parametrize(
    "name", ["trainer_state.json", "optimizer.pt", "tokenizer.json", "model.safetensors"]
)
def test_a_resume_over_a_fifo_in_the_checkpoint_is_one_line_naming_it(
    sft_run: Path,  # noqa: F811
    tmp_path: Path,
    name: str,
    fifo_maker: Callable[[Path], Path],
    capsys: pytest.CaptureFixture[str],
) -> None:
    run = copy_of(sft_run, tmp_path)
    fifo_maker(run / CHECKPOINT / name)
    line = fails(resume(run), capsys, f"{CHECKPOINT}/{name}", "FIFO", "delete")
    assert "missing" not in line
    assert not (run / "checkpoints" / "iter-000003").exists()


def test_a_checkpoint_file_that_is_a_folder_is_named_a_folder_not_missing(
    sft_run: Path,  # noqa: F811
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    run = copy_of(sft_run, tmp_path)
    state = run / CHECKPOINT / "trainer_state.json"
    state.unlink()
    state.mkdir()
    line = fails(resume(run), capsys, "trainer_state.json", "a folder", "delete")
    assert "missing" not in line


def test_a_failed_checkpoint_rename_names_the_checkpoint_and_leaves_no_partial(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from stategym.train import checkpoint
    from stategym.train.config import SFTConfig

    class Policy:
        def save(self, folder: Path) -> None:
            folder.mkdir(parents=True)
            (folder / "config.json").write_text("{}")

    class Optimiser:
        def state_dict(self) -> dict[str, object]:
            return {}

    rename = Path.rename

    def failing(self: Path, target: Path) -> Path:
        if self.name.endswith(".partial"):
            raise OSError(errno.EACCES, "Permission denied", str(self), None, str(target))
        return rename(self, target)

    monkeypatch.setattr(Path, "rename", failing)
    run = tmp_path / "run"
    folder = checkpoint.folder_of(run, 3)
    with pytest.raises(OSError) as raised:
        checkpoint.save(run, 3, Policy(), Optimiser(), SFTConfig(out=str(run)))  # type: ignore[arg-type]
    assert raised.value.filename == str(folder)
    assert sorted(p.name for p in (run / "checkpoints").iterdir()) == []


def test_a_failed_checkpoint_write_names_the_file_in_the_checkpoint(tmp_path: Path) -> None:
    from stategym.train import checkpoint
    from stategym.train.config import SFTConfig

    class Policy:
        def save(self, folder: Path) -> None:
            folder.mkdir(parents=True)
            weights = folder / "model.safetensors"
            raise OSError(errno.ENOSPC, "No space left on device", str(weights))

    run = tmp_path / "run"
    with pytest.raises(OSError) as raised:
        checkpoint.save(run, 3, Policy(), object(), SFTConfig(out=str(run)))  # type: ignore[arg-type]
    assert raised.value.filename == str(checkpoint.folder_of(run, 3) / "model.safetensors")
    assert list((run / "checkpoints").iterdir()) == []


# -- model folders: --init, hf:, model info, a tokenizer folder ----------------------------------


def model_copy(sft_run: Path, tmp_path: Path) -> Path:  # noqa: F811
    folder = tmp_path / "model"
    shutil.copytree(sft_run / "model", folder)
    return folder


@pytest.mark.parametrize("name", ["config.json", "tokenizer.json", "model.safetensors"])
def test_an_hf_agent_over_a_fifo_in_its_folder_is_one_line_naming_it(
    sft_run: Path,  # noqa: F811
    tmp_path: Path,
    name: str,
    fifo_maker: Callable[[Path], Path],
    capsys: pytest.CaptureFixture[str],
) -> None:
    folder = model_copy(sft_run, tmp_path)
    fifo_maker(folder / name)
    argv = ["run", "--agent", f"hf:{folder}", "--episodes", "1", "--out", str(tmp_path / "o")]
    fails([*argv, "--index", str(tmp_path / "i.sqlite")], capsys, f"{folder / name}", "FIFO")


def test_train_init_over_a_fifo_config_is_one_line_naming_it(
    sft_run: Path,  # noqa: F811
    tmp_path: Path,
    fifo_maker: Callable[[Path], Path],
    capsys: pytest.CaptureFixture[str],
) -> None:
    folder = model_copy(sft_run, tmp_path)
    fifo_maker(folder / "config.json")
    argv = ["train", "sft", "--init", str(folder), "--out", str(tmp_path / "out")]
    fails(argv, capsys, f"{folder / 'config.json'}", "FIFO")
    assert not (tmp_path / "out").exists()


def test_model_info_of_a_fifo_record_names_it_not_its_absence(
    sft_run: Path,  # noqa: F811
    tmp_path: Path,
    fifo_maker: Callable[[Path], Path],
    capsys: pytest.CaptureFixture[str],
) -> None:
    folder = model_copy(sft_run, tmp_path)
    fifo_maker(folder / "stategym_model.json")
    line = fails(["model", "info", str(folder)], capsys, "stategym_model.json", "FIFO")
    assert "has no" not in line


def test_a_tokenizer_folder_holding_a_fifo_is_refused_naming_it(
    sft_run: Path,  # noqa: F811
    tmp_path: Path,
    fifo_maker: Callable[[Path], Path],
) -> None:
    """``openai:`` agents' ``tokenizer`` folder (token-in-token-out) goes straight to
    ``transformers``."""
    from stategym.llm.local import ChatTokenizer

    folder = model_copy(sft_run, tmp_path)
    fifo_maker(folder / "tokenizer_config.json")
    with pytest.raises(UsageError, match=r"tokenizer_config\.json is a FIFO"):
        ChatTokenizer.load(folder)


# -- run directories: the lock, run: logs, report, score, protocol --report ----------------------


def _run_argv(out: Path, tmp_path: Path) -> list[str]:
    return ["run", "--episodes", "1", "--out", str(out), "--index", str(tmp_path / "i.sqlite")]


def test_a_lock_that_is_a_fifo_is_one_line_naming_it(
    tmp_path: Path, fifo_maker: Callable[[Path], Path], capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "run"
    fifo_maker(out / ".lock")
    fails(_run_argv(out, tmp_path), capsys, f"{out / '.lock'}", "FIFO", "lock file")
    assert not (out / "trajectories.jsonl").exists()


def test_a_lock_that_is_a_link_is_refused_and_what_it_names_kept(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out, victim = tmp_path / "run", tmp_path / "victim.txt"
    out.mkdir()
    victim.write_text("precious")
    (out / ".lock").symlink_to(victim)
    fails(_run_argv(out, tmp_path), capsys, f"{out / '.lock'}", "a link", "lock file")
    assert victim.read_text() == "precious"
    assert (out / ".lock").is_symlink()


def test_sft_from_a_run_whose_log_is_a_fifo_names_it(
    tmp_path: Path, fifo_maker: Callable[[Path], Path], capsys: pytest.CaptureFixture[str]
) -> None:
    logged = tmp_path / "logged"
    fifo_maker(logged / "trajectories.jsonl")
    argv = ["train", "sft", "--agents", f"run:{logged}", "--out", str(tmp_path / "o")]
    line = fails(argv, capsys, f"{logged / 'trajectories.jsonl'}", "FIFO")
    assert "no trajectories" not in line


def test_score_of_a_fifo_log_says_it_is_a_fifo(
    tmp_path: Path, fifo_maker: Callable[[Path], Path], capsys: pytest.CaptureFixture[str]
) -> None:
    log = fifo_maker(tmp_path / "run" / "trajectories.jsonl")
    line = fails(["score", str(tmp_path / "run")], capsys, str(log), "FIFO")
    assert "no trajectories" not in line


@pytest.mark.parametrize(
    "name", ["trajectories.jsonl", "metrics.jsonl", "cells.json", "results.json"]
)
def test_report_of_a_run_whose_file_is_a_fifo_names_it(
    tmp_path: Path,
    name: str,
    fifo_maker: Callable[[Path], Path],
    capsys: pytest.CaptureFixture[str],
) -> None:
    pytest.importorskip("matplotlib")
    run = tmp_path / "run"
    fifo_maker(run / name)
    line = fails(["report", str(run), "--out", str(tmp_path / "r.html")], capsys, "FIFO")
    assert str(run / name) in line and "not a run directory" not in line


def test_report_of_an_experiment_whose_table_is_a_fifo_names_it(
    tmp_path: Path, fifo_maker: Callable[[Path], Path], capsys: pytest.CaptureFixture[str]
) -> None:
    pytest.importorskip("matplotlib")
    from stategym.experiments.output import digest

    run = tmp_path / "e0"
    run.mkdir()
    (run / "raw.json").write_text("{}")
    files = {"raw.json": digest(b"{}"), "table.md": digest(b"| a |\n")}
    (run / "results.json").write_text(json.dumps({"experiment": "e0", "files": files}))
    fifo_maker(run / "table.md")
    line = fails(["report", str(run), "--out", str(tmp_path / "r.html")], capsys, "FIFO")
    assert str(run / "table.md") in line


def test_protocol_rereport_of_a_fifo_cells_file_names_it(
    tmp_path: Path, fifo_maker: Callable[[Path], Path], capsys: pytest.CaptureFixture[str]
) -> None:
    cells = fifo_maker(tmp_path / "proto" / "cells.json")
    line = fails(["protocol", "--report", str(tmp_path / "proto")], capsys, str(cells), "FIFO")
    assert "no cells.json" not in line


# -- writing whole through a link ----------------------------------------------------------------


def test_replace_bytes_writes_through_a_link_and_keeps_it(tmp_path: Path) -> None:
    from stategym.kernel.files import replace_bytes

    target, link = tmp_path / "dated.html", tmp_path / "latest.html"
    target.write_bytes(b"old")
    link.symlink_to(target.name)  # relative, as links usually are
    assert replace_bytes(link, b"new") == link
    assert link.is_symlink() and target.read_bytes() == b"new"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["dated.html", "latest.html"]


def test_a_dangling_link_writes_its_target_where_its_folder_exists(tmp_path: Path) -> None:
    from stategym.kernel.files import replace_bytes

    link = tmp_path / "latest.html"
    link.symlink_to(tmp_path / "new.html")
    replace_bytes(link, b"page")
    assert link.is_symlink() and (tmp_path / "new.html").read_bytes() == b"page"


def test_a_dangling_link_into_a_missing_folder_is_refused(tmp_path: Path) -> None:
    from stategym.kernel.files import refuse_non_file, replace_bytes

    link = tmp_path / "latest.html"
    link.symlink_to(tmp_path / "gone" / "new.html")
    for write in (refuse_non_file, lambda path: replace_bytes(path, b"page")):
        with pytest.raises(UsageError, match="whose folder does not exist"):
            write(link)
    assert link.is_symlink() and sorted(p.name for p in tmp_path.iterdir()) == ["latest.html"]


def test_report_out_a_link_updates_the_file_it_names(
    run_dir: Path,  # noqa: F811
    tmp_path: Path,
) -> None:
    pytest.importorskip("matplotlib")
    target, link = tmp_path / "dated.html", tmp_path / "latest.html"
    target.write_bytes(b"<!DOCTYPE html><p>an earlier report</p>")
    link.symlink_to(target)
    assert main(["report", str(run_dir), "--out", str(link)]) == 0
    assert link.is_symlink()
    page = target.read_bytes()
    assert page.startswith(b"<!DOCTYPE html>") and b"an earlier report" not in page


def test_report_out_a_dangling_link_into_a_missing_folder_is_refused_up_front(
    run_dir: Path,  # noqa: F811
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    link = tmp_path / "latest.html"
    link.symlink_to(tmp_path / "gone" / "r.html")
    fails(["report", str(run_dir), "--out", str(link)], capsys, "whose folder does not exist")


# -- the library readers the commands check first (only a race could reach them) ---------------


def test_the_protocol_readers_name_a_fifo_not_its_absence(
    tmp_path: Path, fifo_maker: Callable[[Path], Path]
) -> None:
    from stategym.report.protocol_files import read_agent_log, read_cells, refuse_other_settings

    proto = tmp_path / "proto"
    fifo_maker(proto / "cells.json")
    with pytest.raises(UsageError, match="FIFO") as raised:
        read_cells(proto)
    assert "no cells.json" not in str(raised.value)
    with pytest.raises(UsageError, match="FIFO"):
        refuse_other_settings(proto, {}, ["expert"])
    fifo_maker(proto / "expert" / "trajectories.jsonl")
    with pytest.raises(UsageError, match="FIFO") as raised:
        # the file is checked before the settings are read: none are needed to refuse it
        read_agent_log(proto / "expert" / "trajectories.jsonl", None, ())  # type: ignore[arg-type]
    assert "is missing" not in str(raised.value)


def test_an_experiment_folder_whose_record_is_a_fifo_is_refused_naming_it(
    tmp_path: Path, fifo_maker: Callable[[Path], Path]
) -> None:
    from stategym.experiments import configs
    from stategym.experiments.output import RECORD, RESULTS, claim

    for name in (RECORD, RESULTS):
        out = tmp_path / name.replace(".", "_")
        fifo = fifo_maker(out / name)
        with pytest.raises(UsageError, match="FIFO") as raised:
            claim(out, "e0", configs.E0["smoke"], keeps_arms=False)
        assert str(fifo) in str(raised.value)


def test_a_trajectory_file_and_a_settings_file_that_are_fifos_are_refused(
    tmp_path: Path, fifo_maker: Callable[[Path], Path]
) -> None:
    from stategym.kernel.trajectory import read_jsonl
    from stategym.train.config import SFTConfig, from_json

    log = fifo_maker(tmp_path / "t.jsonl")
    with pytest.raises(UsageError, match="FIFO"):
        list(read_jsonl(log))
    settings = fifo_maker(tmp_path / "config.json")
    with pytest.raises(UsageError, match="FIFO"):
        from_json(settings, SFTConfig)
