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
  refused before anything is read), for a path the user names (``report --out``) only;
- a checkpoint save whose rename failed named ``iter-N.partial`` and left it behind.

Audit 15b (of the commit that made the rules above):

- F1: every file a command wrote under its own name in a run directory was written through
  a link there, so ``scorecard.md -> trajectories.jsonl`` destroyed the log ``score`` read,
  and a link to a file outside the run overwrote it; such a link is replaced as a name
  again (``replace_bytes``' default), only ``report --out`` writes through;
- F2: ``shutil.rmtree`` opened ``RUN/model``, ``iter-N`` or ``iter-N.partial`` as given (a
  FIFO hung the save or the publish, a link to a folder was a traceback), and ``latest``
  skipped a last ``iter-N`` that was no folder, training an iteration again before failing;
  ``remove_entry`` never opens anything but a real folder, and ``latest`` names it;
- F3: ``--init HUB_ID`` of a model without a chat template was a traceback;
- F5: a ``.lock`` that was a hard link had the other name's contents replaced by a pid;
- F6: things that are there called missing or "a file", a FIFO at a default SQLite path
  failing as ``disk I/O error``, and FIFOs refused only after the work was done.

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


def test_replace_bytes_writes_through_a_link_the_user_named_and_keeps_it(tmp_path: Path) -> None:
    from stategym.kernel.files import replace_bytes

    target, link = tmp_path / "dated.html", tmp_path / "latest.html"
    target.write_bytes(b"old")
    link.symlink_to(target.name)  # relative, as links usually are
    assert replace_bytes(link, b"new", through_link=True) == link
    assert link.is_symlink() and target.read_bytes() == b"new"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["dated.html", "latest.html"]


def test_a_dangling_link_writes_its_target_where_its_folder_exists(tmp_path: Path) -> None:
    from stategym.kernel.files import replace_bytes

    link = tmp_path / "latest.html"
    link.symlink_to(tmp_path / "new.html")
    replace_bytes(link, b"page", through_link=True)
    assert link.is_symlink() and (tmp_path / "new.html").read_bytes() == b"page"


def test_a_dangling_link_into_a_missing_folder_is_refused(tmp_path: Path) -> None:
    from stategym.kernel.files import refuse_non_file, replace_bytes

    link = tmp_path / "latest.html"
    link.symlink_to(tmp_path / "gone" / "new.html")
    for write in (
        lambda path: refuse_non_file(path, through_link=True),
        lambda path: replace_bytes(path, b"page", through_link=True),
    ):
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


# -- audit 15b F1: a link in a run directory is replaced as a name ------------------------------


def test_a_link_written_under_a_commands_own_name_is_replaced_never_written_through(
    tmp_path: Path,
) -> None:
    from stategym.kernel.files import refuse_non_files, replace_bytes

    victim = tmp_path / "victim.txt"
    victim.write_text("the user's")
    victim.chmod(0o600)
    run = tmp_path / "run"
    run.mkdir()
    (run / "summary.json").symlink_to(victim)
    (run / "results.md").symlink_to(tmp_path / "gone" / "r.md")  # dangling, folder missing
    (run / "loop.md").symlink_to("loop.md")
    refuse_non_files(run, ("summary.json", "results.md", "loop.md"))  # none refused
    for name in ("summary.json", "results.md", "loop.md"):
        assert replace_bytes(run / name, b"new") == run / name
        assert not (run / name).is_symlink() and (run / name).read_bytes() == b"new"
    assert victim.read_text() == "the user's" and victim.stat().st_mode & 0o777 == 0o600
    assert not (tmp_path / "gone").exists()
    assert sorted(p.name for p in run.iterdir()) == ["loop.md", "results.md", "summary.json"]


def test_a_link_to_a_fifo_under_a_commands_own_name_is_still_refused(
    tmp_path: Path, fifo_maker: Callable[[Path], Path]
) -> None:
    from stategym.kernel.files import replace_bytes

    fifo = fifo_maker(tmp_path / "fifo")
    (tmp_path / "summary.json").symlink_to(fifo)
    with pytest.raises(UsageError, match="is a link to a FIFO"):
        replace_bytes(tmp_path / "summary.json", b"new")
    assert (tmp_path / "summary.json").is_symlink()


def test_score_over_planted_links_keeps_its_log_and_the_file_outside(
    run_dir: Path,  # noqa: F811
    tmp_path: Path,
) -> None:
    """``scorecard.md -> trajectories.jsonl`` made ``score`` write its markdown over the log
    it had just read; ``scores.jsonl -> ../victim.txt`` a file outside the run."""
    run = tmp_path / "a"
    shutil.copytree(run_dir, run)
    log = (run / "trajectories.jsonl").read_bytes()
    victim = tmp_path / "victim.txt"
    victim.write_text("the user's")
    victim.chmod(0o600)
    (run / "scorecard.md").symlink_to("trajectories.jsonl")
    (run / "scores.jsonl").symlink_to(victim)
    assert main(["score", str(run)]) == 0
    assert (run / "trajectories.jsonl").read_bytes() == log
    assert victim.read_text() == "the user's" and victim.stat().st_mode & 0o777 == 0o600
    for name in ("scorecard.md", "scores.jsonl"):
        assert not (run / name).is_symlink() and (run / name).stat().st_size > 0
    assert main(["score", str(run)]) == 0  # the log still reads


def test_a_resumed_run_over_linked_outputs_keeps_its_log(
    run_dir: Path,  # noqa: F811
    tmp_path: Path,
) -> None:
    """A resume whose ``summary.json`` linked to ``trajectories.jsonl`` replaced the log by
    the summary (a regression of eeae331); ``results.md`` was even written in place."""
    run = tmp_path / "b"
    shutil.copytree(run_dir, run)
    victim = tmp_path / "notes.md"
    victim.write_text("the user's")
    (run / "summary.json").unlink()
    (run / "summary.json").symlink_to("trajectories.jsonl")
    (run / "results.md").unlink()
    (run / "results.md").symlink_to(victim)
    argv = ["run", "--episodes", "3", "--out", str(run), "--index", str(tmp_path / "i.sqlite")]
    assert main(argv) == 0
    lines = (run / "trajectories.jsonl").read_text().splitlines()
    assert len(lines) == 3 and all(json.loads(line)["seed"] in (0, 1, 2) for line in lines)
    assert victim.read_text() == "the user's"
    assert not (run / "summary.json").is_symlink() and not (run / "results.md").is_symlink()


def test_a_report_flags_linked_page_is_replaced_and_report_out_writes_through(
    run_dir: Path,  # noqa: F811
    tmp_path: Path,
) -> None:
    """``OUT/report.html`` (what every ``--report`` flag writes) is the command's own name:
    a link there is replaced; ``report --out`` is the user's: written through."""
    pytest.importorskip("matplotlib")
    from stategym.report import write

    earlier = b"<!DOCTYPE html><p>an earlier report</p>"
    dated = tmp_path / "dated.html"
    dated.write_bytes(earlier)
    run = tmp_path / "run"
    shutil.copytree(run_dir, run)
    (run / "report.html").symlink_to(dated)
    write([run], run / "report.html")
    assert not (run / "report.html").is_symlink() and dated.read_bytes() == earlier
    latest = tmp_path / "latest.html"
    latest.symlink_to(dated)
    assert main(["report", str(run), "--out", str(latest)]) == 0
    assert latest.is_symlink() and dated.read_bytes() != earlier


# -- audit 15b F2: what a save or a publish replaces is never opened ----------------------------


class _Policy:
    def save(self, folder: Path) -> None:
        folder.mkdir(parents=True)
        (folder / "config.json").write_text("{}")


class _Optimiser:
    def state_dict(self) -> dict[str, object]:
        return {}


def test_remove_entry_never_opens_a_fifo_nor_follows_a_link(
    tmp_path: Path, fifo_maker: Callable[[Path], Path]
) -> None:
    from stategym.kernel.files import remove_entry

    kept = tmp_path / "kept"
    kept.mkdir()
    (kept / "file").write_text("the user's")
    fifo = fifo_maker(tmp_path / "fifo")
    link = tmp_path / "link"
    link.symlink_to(kept)
    folder = tmp_path / "folder"
    fifo_maker(folder / "inner")
    for entry in (fifo, link, folder, tmp_path / "missing"):
        remove_entry(entry)
        assert not os.path.lexists(entry)
    assert (kept / "file").read_text() == "the user's"


@pytest.mark.parametrize("kind", ["fifo", "file", "link"])
@pytest.mark.parametrize("where", ["iter-000003", "iter-000003.partial"])
def test_a_save_over_a_fifo_a_file_or_a_link_replaces_it_and_keeps_what_it_names(
    tmp_path: Path, kind: str, where: str, fifo_maker: Callable[[Path], Path]
) -> None:
    from stategym.train import checkpoint
    from stategym.train.config import SFTConfig

    run = tmp_path / "run"
    entry = run / "checkpoints" / where
    kept = tmp_path / "kept"
    kept.mkdir()
    (kept / "file").write_text("the user's")
    entry.parent.mkdir(parents=True)
    if kind == "fifo":
        fifo_maker(entry)
    elif kind == "file":
        entry.write_text("not a checkpoint")
    else:
        entry.symlink_to(kept)
    folder = checkpoint.save(run, 3, _Policy(), _Optimiser(), SFTConfig(out=str(run)))  # type: ignore[arg-type]
    assert folder.is_dir() and not folder.is_symlink() and (folder / "config.json").is_file()
    assert sorted(p.name for p in (run / "checkpoints").iterdir()) == ["iter-000003"]
    assert (kept / "file").read_text() == "the user's"


@pytest.mark.parametrize("kind", ["fifo", "file"])
def test_publishing_over_a_fifo_or_a_file_replaces_it(
    tmp_path: Path, kind: str, fifo_maker: Callable[[Path], Path]
) -> None:
    from stategym.train.checkpoint import publish

    checkpoint, run = tmp_path / "iter-2", tmp_path / "run"
    checkpoint.mkdir()
    (checkpoint / "config.json").write_text("{}")
    if kind == "fifo":
        fifo_maker(run / "model")
    else:
        run.mkdir()
        (run / "model").write_text("not a model")
    final = publish(run, checkpoint)
    assert final.is_dir() and (final / "config.json").is_file()


@pytest.mark.parametrize("kind", ["fifo", "file", "dangling link"])
def test_the_last_checkpoint_that_is_no_folder_is_named_never_skipped(
    tmp_path: Path, kind: str, fifo_maker: Callable[[Path], Path]
) -> None:
    from stategym.train.checkpoint import CheckpointError, latest

    run = tmp_path / "run"
    (run / "checkpoints" / "iter-000001").mkdir(parents=True)
    (run / "checkpoints" / "iter-000003.partial").mkdir()  # an interrupted save: not one
    last = run / "checkpoints" / "iter-000002"
    if kind == "fifo":
        fifo_maker(last)
    elif kind == "file":
        last.write_text("")
    else:
        last.symlink_to(tmp_path / "gone")
    said = {"fifo": "is a FIFO", "file": "is a file", "dangling link": "is a dangling link"}
    with pytest.raises(CheckpointError, match=said[kind]):
        latest(run)
    with pytest.raises(CheckpointError, match=rf"delete {last}"):
        latest(run)
    last.unlink()
    assert latest(run) == run / "checkpoints" / "iter-000001"


def test_checkpoints_that_are_no_folder_are_refused(
    tmp_path: Path, fifo_maker: Callable[[Path], Path]
) -> None:
    from stategym.train.checkpoint import CheckpointError, latest

    fifo_maker(tmp_path / "run" / "checkpoints")
    with pytest.raises(CheckpointError, match="checkpoints is a FIFO"):
        latest(tmp_path / "run")


def test_a_resume_whose_last_checkpoint_is_a_file_names_it_and_trains_nothing(
    sft_run: Path,  # noqa: F811
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """It fell back to iter-1 without a word, trained iteration 2 again (its metric line
    rewritten, the evaluation's dropped), then failed with ``Not a directory``."""
    run = copy_of(sft_run, tmp_path)
    last = run / CHECKPOINT
    shutil.rmtree(last)
    last.write_text("")
    metrics = (run / "metrics.jsonl").read_bytes()
    fails(resume(run), capsys, str(last), "not a checkpoint folder", "delete")
    assert (run / "metrics.jsonl").read_bytes() == metrics


def test_a_fresh_run_whose_checkpoints_is_a_fifo_is_refused_before_training(
    tmp_path: Path, fifo_maker: Callable[[Path], Path], capsys: pytest.CaptureFixture[str]
) -> None:
    pytest.importorskip("torch")
    out = tmp_path / "run"
    fifo_maker(out / "checkpoints")
    argv = ["train", "sft", *TRAIN, "--iterations", "1", "--out", str(out)]
    fails(argv, capsys, str(out / "checkpoints"), "FIFO")
    assert sorted(p.name for p in out.iterdir()) == ["checkpoints"]  # nothing trained


# -- audit 15b F3: a hub id's chat template ------------------------------------------------------


def test_init_a_hub_id_without_a_chat_template_is_one_line_like_its_folder(
    sft_run: Path,  # noqa: F811
    tmp_path: Path,
) -> None:
    """The same files as a folder were one line; by hub id (here from a local cache,
    offline) they were a traceback at the first rendering."""
    snapshot = tmp_path / "hub" / "models--acme--tiny" / "snapshots" / "abc123"
    shutil.copytree(sft_run / "model", snapshot)
    (snapshot / "chat_template.jinja").unlink()
    (tmp_path / "hub" / "models--acme--tiny" / "refs").mkdir()
    (tmp_path / "hub" / "models--acme--tiny" / "refs" / "main").write_text("abc123")
    env = {**os.environ, "HF_HUB_CACHE": str(tmp_path / "hub"), "HF_HUB_OFFLINE": "1"}
    env |= {"OMP_NUM_THREADS": "1", "PYTHONPATH": os.pathsep.join(sys.path)}
    argv = ["train", "sft", *TRAIN, "--iterations", "1", "--out", str(tmp_path / "s")]
    argv[argv.index("--tiny-width") : argv.index("--tiny-width") + 4] = []
    code = "import sys; from stategym.cli import main; sys.exit(main(sys.argv[1:]))"
    done = subprocess.run(
        [sys.executable, "-c", code, *argv, "--init", "acme/tiny"],
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    lines = done.stderr.strip().splitlines()
    assert done.returncode == 2 and len(lines) == 1, done.stderr[-2000:]
    assert "--init acme/tiny has no chat template" in lines[0]
    assert not (tmp_path / "s").exists()


# -- audit 15b F5: a hard-linked lock -------------------------------------------------------------


def test_a_lock_that_is_a_hard_link_is_refused_and_the_other_name_kept(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out, notes = tmp_path / "run", tmp_path / "notes.txt"
    out.mkdir()
    notes.write_text("my notes, not a lock")
    os.link(notes, out / ".lock")
    fails(_run_argv(out, tmp_path), capsys, f"{out / '.lock'}", "hard link", "lock file")
    assert notes.read_text() == "my notes, not a lock"
    assert not (out / "trajectories.jsonl").exists()


# -- audit 15b F6: named as what it is, refused before the work -----------------------------------


@pytest.mark.parametrize("name", ["model.safetensors", "chat_template.jinja"])
def test_a_model_file_that_is_a_folder_is_named_a_folder_not_missing(
    sft_run: Path,  # noqa: F811
    tmp_path: Path,
    name: str,
) -> None:
    from stategym.llm.model_files import check_model_dir

    folder = model_copy(sft_run, tmp_path)
    (folder / name).unlink()
    (folder / name).mkdir()
    with pytest.raises(UsageError, match=f"{name} is a folder") as raised:
        check_model_dir(folder)
    assert "has no" not in str(raised.value)


def test_a_model_folder_that_is_a_fifo_is_called_a_fifo_not_a_file(
    tmp_path: Path, fifo_maker: Callable[[Path], Path]
) -> None:
    from stategym.llm.model_files import check_model_dir

    fifo = fifo_maker(tmp_path / "m")
    with pytest.raises(UsageError, match=r"is a FIFO \(named pipe\), not a model folder"):
        check_model_dir(fifo)


@pytest.mark.parametrize("where", ["model", "model/config.json"])
def test_init_a_run_whose_model_is_a_fifo_names_it_not_its_absence(
    sft_run: Path,  # noqa: F811
    tmp_path: Path,
    where: str,
    fifo_maker: Callable[[Path], Path],
    capsys: pytest.CaptureFixture[str],
) -> None:
    run = copy_of(sft_run, tmp_path)
    fifo_maker(run / where)
    argv = ["train", "sft", "--init", str(run), "--out", str(tmp_path / "out")]
    line = fails(argv, capsys, str(run / where), "FIFO")
    assert "holds no saved model" not in line
    assert not (tmp_path / "out").exists()


def test_a_link_loop_as_the_log_is_named_a_loop_not_missing(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    run = tmp_path / "l"
    run.mkdir()
    (run / "trajectories.jsonl").symlink_to("trajectories.jsonl")
    line = fails(["score", str(run)], capsys, "symbolic links", "trajectories.jsonl")
    assert "no trajectories.jsonl" not in line


def test_a_fifo_at_the_default_index_is_refused_up_front(
    tmp_path: Path, fifo_maker: Callable[[Path], Path], capsys: pytest.CaptureFixture[str]
) -> None:
    fifo_maker(tmp_path / "runs" / "index.sqlite")  # the default, under the test's folder
    line = fails(["run", "--episodes", "1", "--out", "o"], capsys, "index.sqlite", "FIFO")
    assert "disk I/O" not in line
    assert not (tmp_path / "o").exists()


def test_a_fifo_at_the_default_reader_cache_is_refused_up_front(
    tmp_path: Path, fifo_maker: Callable[[Path], Path], capsys: pytest.CaptureFixture[str]
) -> None:
    pytest.importorskip("openai")
    fifo_maker(tmp_path / "o" / "readings.sqlite")
    argv = ["run", "--episodes", "1", "--out", "o", "--index", "i.sqlite"]
    argv += ["--reader", "openai:m", "--reader-offline"]
    line = fails(argv, capsys, "readings.sqlite", "FIFO", "--reader-cache")
    assert "disk I/O" not in line
    assert not (tmp_path / "o" / "trajectories.jsonl").exists()


def test_an_agent_folder_that_is_a_fifo_is_refused_before_the_protocol_plays(
    tmp_path: Path,
    fifo_maker: Callable[[Path], Path],
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from stategym.topology import split

    def played(*args: object, **kwargs: object) -> None:
        raise AssertionError("the protocol played before refusing")

    monkeypatch.setattr(split, "make_splits", played)
    folder = fifo_maker(tmp_path / "p" / "expert")
    argv = ["protocol", "--agents", "expert", "--episodes", "1", "--out", str(tmp_path / "p")]
    line = fails(argv, capsys, str(folder), "FIFO", "not a folder")
    assert "missing" not in line


def test_a_fifo_among_an_experiments_plots_is_refused_before_it_plays(
    tmp_path: Path,
    fifo_maker: Callable[[Path], Path],
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    pytest.importorskip("matplotlib")
    pytest.importorskip("scipy")
    from stategym.commands import experiment

    def played(*args: object, **kwargs: object) -> list[Path]:
        raise AssertionError("the experiment played before refusing")

    monkeypatch.setattr(experiment, "_run", played)
    fifo = fifo_maker(tmp_path / "e" / "plots" / "figure.svg")
    argv = ["experiment", "e0", "--smoke", "--seeds", "0", "--out", str(tmp_path / "e")]
    fails(argv, capsys, str(fifo), "FIFO")


# -- audit 15d -------------------------------------------------------------------------------


def test_a_linked_file_of_one_unended_line_is_refused_not_cut(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A run folder whose ``trajectories.jsonl`` links to a file of notes, one line with no
    newline: the run read that line as an interrupted append, rewrote the file without it
    (the notes lost) and appended its episodes. A cut line starts as every line stategym
    writes does (``{``); anything else is refused and left as it is."""
    notes = tmp_path / "notes.txt"
    notes.write_bytes(b"my precious notes, one line")
    run = tmp_path / "run"
    run.mkdir()
    (run / "trajectories.jsonl").symlink_to(notes)
    argv = ["run", "--domain", "lookup", "--episodes", "2", "--out", str(run)]
    fails([*argv, "--index", str(tmp_path / "i.sqlite")], capsys, f"{run / 'trajectories.jsonl'}:1")
    assert notes.read_bytes() == b"my precious notes, one line"


def test_a_run_started_with_knobs_as_an_object_resumes_from_their_text(tmp_path: Path) -> None:
    """``GRPOConfig(knobs=Knobs(dynamics=False))`` keeps the knobs as their long text; a
    resume from the command line spells them ``dynamics=off``: the same knobs."""
    from stategym.kernel.knobs import Knobs
    from stategym.train.config import SFTConfig
    from stategym.train.runlog import open_run

    out = str(tmp_path / "r")
    open_run(SFTConfig(out=out, knobs=Knobs(dynamics=False)))  # type: ignore[arg-type]
    open_run(SFTConfig(out=out, knobs="dynamics=off"))  # no refusal: the same knobs
    with pytest.raises(UsageError, match="knobs"):
        open_run(SFTConfig(out=out, knobs="stateful=off"))


def test_editing_gymnasium_tools_leaves_the_next_episode_alone() -> None:
    import gymnasium

    env = gymnasium.make("stategym/Travel-v0")
    _, info = env.reset(seed=0)
    info["tools"][0]["function"]["description"] = "edited"
    _, again = env.reset(seed=1)
    assert again["tools"][0]["function"]["description"] != "edited"
