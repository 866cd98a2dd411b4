"""Files and processes a stopped or damaged run leaves: one clear line, never a traceback,
never a wrong number, and no process left behind (audit 6b, findings 2, 3, 5 and 6).

The process tests start the real command in its own session and poll, with generous
limits: they check what happens (the exit status, stderr, no process left holding the
command's pipes), never how long it took.
"""

from __future__ import annotations

import contextlib
import errno
import json
import os
import shutil
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from one_line_error import fails
from stategym.cli import main
from stategym.kernel.errors import UsageError
from stategym.kernel.trajectory import loads
from stategym.report.runs import read_run
from stategym.topology.generalisation import ProtocolConfig

PATIENCE = 300.0
"""Seconds a process test waits for anything (a loaded 2-core machine is slow to start)."""


@pytest.fixture(autouse=True)
def _in_tmp(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)


# -- finding 5: OSErrors naming a path, damaged files read by the report ----------------


def test_a_symlink_loop_or_a_long_name_is_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    loop = tmp_path / "loop"
    loop.mkdir()
    (loop / "trajectories.jsonl").symlink_to("trajectories.jsonl")
    run = ["run", "--domain", "travel", "--agent", "expert", "--episodes", "1"]
    index = ["--index", str(tmp_path / "index.sqlite")]
    fails([*run, *index, "--out", str(loop)], capsys, "symbolic links", "trajectories.jsonl")
    fails([*run, *index, "--out", "x" * 300], capsys, "too long")


def test_an_index_that_is_a_symlink_loop_is_refused_before_playing(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "index").symlink_to("index")
    argv = ["run", "--domain", "travel", "--agent", "expert", "--episodes", "1"]
    fails([*argv, "--index", "index", "--out", "out"], capsys, "symbolic links", "index")
    assert not (tmp_path / "out").exists()  # refused up front, nothing played


def test_only_an_oserror_naming_a_path_or_the_machine_is_the_users() -> None:
    from stategym.cli import is_path_error

    assert is_path_error(OSError(errno.ELOOP, "loop", "f"))
    assert is_path_error(OSError(errno.ENOSPC, "No space left on device"))
    # without a path (a bad descriptor, a bad argument) it is most likely a bug: traceback
    assert not is_path_error(OSError(errno.EBADF, "Bad file descriptor"))


def test_an_oserror_without_a_path_keeps_its_traceback(monkeypatch: pytest.MonkeyPatch) -> None:
    import stategym.commands.list

    def broken(args: object) -> int:
        raise OSError(errno.EBADF, "Bad file descriptor")

    monkeypatch.setattr(stategym.commands.list, "main", broken)
    with pytest.raises(OSError, match="Bad file descriptor"):
        main(["list"])


def _write(path: Path, data: bytes) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data)
    return path


PROTOCOL_CELLS = json.dumps(
    {
        "agents": ["expert"],
        "cells": [],
        "config": ProtocolConfig("expert", ("travel",)).describe(),  # the report checks it
    }
).encode()


@pytest.mark.parametrize(
    ("files", "words"),
    [
        ({"metrics.jsonl": b'{"iteration": 1, "loss": "\xff"}\n'}, ("metrics.jsonl:1", "UTF-8")),
        (
            {"metrics.jsonl": b'{"iteration": 1}\n', "config.json": b'{"domain": "tr'},
            ("config.json", "not JSON"),
        ),
        ({"metrics.jsonl": b'{"iteration": 1}\n', "config.json": b"[1]"}, ("config.json",)),
        ({"cells.json": b'{"agents": ['}, ("cells.json", "not JSON")),
        ({"cells.json": b'{"agents": "expert"}'}, ("cells.json", "agents")),
        (
            {"cells.json": PROTOCOL_CELLS, "expert/report.json": b'{"config": []}'},
            ("report.json", "config"),
        ),
        (
            {"results.json": b'{"experiment": "e0", "estimates": []}'},
            ("results.json", "estimates"),
        ),
        (
            {"results.json": b'{"experiment": "e0"}', "raw.json": b'{"measures": {}}'},
            ("raw.json", "measures"),
        ),
        (
            {"results.json": b'{"experiment": "e0"}', "table.md": b"| a |\xff|\n"},
            ("table.md:1", "UTF-8"),
        ),
    ],
)
def test_a_damaged_run_file_is_a_usage_error(
    tmp_path: Path, files: dict[str, bytes], words: tuple[str, ...]
) -> None:
    for name, data in files.items():
        _write(tmp_path / "run" / name, data)
    with pytest.raises(UsageError) as raised:
        read_run(tmp_path / "run")
    for word in words:
        assert word in str(raised.value)


def test_a_damaged_model_folder_is_refused_up_front(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    _write(tmp_path / "hf" / "config.json", b"{}")
    _write(tmp_path / "hf" / "tokenizer.json", b'{"bro')
    argv = ["eval", "--domains", "travel", "--agents", f"hf:{tmp_path / 'hf'}"]
    fails([*argv, "--episodes", "1", "--out", "out"], capsys, "tokenizer.json", "damaged")


# -- finding 3: protocol --report reads the logs as a run dir does, and checks them -----


@pytest.fixture(scope="module")
def protocol_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("protocol") / "run"
    argv = ["protocol", "--agents", "expert,serial", "--episodes", "2", "--probes", "1"]
    assert main([*argv, "--compositions", "1", "--budget", "300", "--out", str(out)]) == 0
    return out


def _lines(file: Path) -> list[bytes]:
    return file.read_bytes().splitlines(keepends=True)


def _agent_line(lines: list[bytes]) -> int:
    return next(i for i, line in enumerate(lines) if json.loads(line)["run"]["role"] == "agent")


def _duplicated(log: Path, other: Path) -> None:
    lines = _lines(log)
    log.write_bytes(b"".join([*lines, lines[_agent_line(lines)]]))


def _deleted(log: Path, other: Path) -> None:
    lines = _lines(log)
    del lines[_agent_line(lines)]
    log.write_bytes(b"".join(lines))


def _another_agents(log: Path, other: Path) -> None:
    shutil.copyfile(other, log)


def _another_seed(log: Path, other: Path) -> None:
    lines = _lines(log)
    index = _agent_line(lines)
    episode = json.loads(lines[index])
    episode["seed"] += 1000  # a real episode, but not of this run's seeds
    lines[index] = json.dumps(episode).encode() + b"\n"
    log.write_bytes(b"".join(lines))


@pytest.mark.parametrize(
    ("damage", "words"),
    [
        (_duplicated, ("duplicated",)),
        (_deleted, ("lacks 1",)),
        (_another_agents, ("of 'expert', not of 'serial'",)),
        (_another_seed, ("not one of the run's cells and seeds",)),
    ],
)
def test_protocol_rereport_refuses_a_log_the_run_did_not_write(
    protocol_run: Path,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    damage: object,
    words: tuple[str, ...],
) -> None:
    run = tmp_path / "copy"
    shutil.copytree(protocol_run, run)
    assert main(["protocol", "--report", str(run)]) == 0  # the copy itself is fine
    capsys.readouterr()
    damage(run / "serial" / "trajectories.jsonl", run / "expert" / "trajectories.jsonl")  # type: ignore[operator]
    fails(["protocol", "--report", str(run)], capsys, *words)


@pytest.mark.parametrize(
    "edit",
    [
        lambda cells: cells.pop("agents"),
        lambda cells: cells["cells"][0].pop("distance"),
        lambda cells: cells["config"].update(episodes="three"),
    ],
)
def test_protocol_rereport_refuses_a_damaged_cells_file(
    protocol_run: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str], edit: object
) -> None:
    run = tmp_path / "copy"
    shutil.copytree(protocol_run, run)
    cells = json.loads((run / "cells.json").read_text())
    edit(cells)  # type: ignore[operator]
    (run / "cells.json").write_text(json.dumps(cells))
    fails(["protocol", "--report", str(run)], capsys, "cells.json")


# -- findings 2 and 6: a stopped --workers run leaves no process and no traceback -------


def _start(out: Path) -> subprocess.Popen[str]:
    """``stategym eval --workers 2`` long enough to be stopped while it plays, in its own
    session (its process group holds the fork server and the workers too)."""
    argv = ["eval", "--domains", "travel", "--agents", "expert", "--episodes", "20000"]
    return subprocess.Popen(
        [sys.executable, "-m", "stategym.cli", *argv, "--workers", "2", "--out", str(out)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, "OMP_NUM_THREADS": "1"},
        start_new_session=True,
    )


def _wait_for(ready: object, process: subprocess.Popen[str]) -> None:
    for _ in range(int(PATIENCE / 0.05)):
        if ready():  # type: ignore[operator]
            return
        assert process.poll() is None, process.communicate()
        _sleep(0.05)
    pytest.fail("the run never got there")


def _sleep(seconds: float) -> None:
    import time

    time.sleep(seconds)


def _children(pid: int) -> list[int]:
    found = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(fields[1]) == pid:
            found.append(int(stat.parent.name))
    return found


def _group_gone(group: int) -> bool:
    try:
        os.killpg(group, 0)
    except ProcessLookupError:
        return True
    return False


@pytest.fixture
def stopped() -> Iterator[list[subprocess.Popen[str]]]:
    """The processes a test starts; their groups are killed whatever the test found."""
    started: list[subprocess.Popen[str]] = []
    yield started
    for process in started:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(process.pid, signal.SIGKILL)
        process.communicate()


needs_proc = pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="needs /proc")


@needs_proc
@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGKILL])
def test_a_stopped_workers_run_leaves_no_process_holding_its_pipes(
    tmp_path: Path, stopped: list[subprocess.Popen[str]], sig: signal.Signals
) -> None:
    process = _start(tmp_path / "out")
    stopped.append(process)
    log = tmp_path / "out" / "trajectories.jsonl"
    _wait_for(lambda: log.is_file() and log.stat().st_size > 0, process)  # workers playing
    process.send_signal(sig)
    # returns only once every process holding stdout and stderr (workers, fork server) ended
    _, err = process.communicate(timeout=PATIENCE)
    if sig == signal.SIGTERM:
        assert process.returncode == 143
        assert err.strip().splitlines()[-1] == "stategym: terminated", err
        assert "Traceback" not in err
    for _ in range(int(PATIENCE / 0.05)):
        if _group_gone(process.pid):
            break
        _sleep(0.05)
    assert _group_gone(process.pid)


@needs_proc
def test_ctrl_c_while_the_workers_start_is_one_line(
    tmp_path: Path, stopped: list[subprocess.Popen[str]]
) -> None:
    process = _start(tmp_path / "out")
    stopped.append(process)
    # the fork server exists: it is importing stategym, the workers are being started
    _wait_for(lambda: _children(process.pid), process)
    os.killpg(process.pid, signal.SIGINT)  # as a terminal sends it: to the whole group
    _, err = process.communicate(timeout=PATIENCE)
    assert (process.returncode, err) == (130, "stategym: interrupted\n")


# -- audit 11b, finding 1: a worker that dies ends the run in one line, keeping its episodes


EPISODES = 2000
"""Episodes of the run whose worker is killed: enough that it is still playing when the
test pauses it, few enough that running it again to the end stays short."""


def _run_argv(out: Path) -> list[str]:
    argv = ["run", "--domain", "travel", "--agent", "expert", "--episodes", str(EPISODES)]
    return [sys.executable, "-m", "stategym.cli", *argv, "--workers", "2", "--out", str(out)]


def _start_run(out: Path) -> subprocess.Popen[str]:
    """``stategym run --workers 2`` in its own session, as :func:`_start` starts ``eval``."""
    return subprocess.Popen(
        _run_argv(out),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, "OMP_NUM_THREADS": "1"},
        start_new_session=True,
    )


def _proc_text(pid: int, name: str) -> str:
    try:
        return Path(f"/proc/{pid}/{name}").read_text(errors="replace")
    except OSError:
        return ""


def _workers(parent: int) -> list[int]:
    """The run's worker processes: the children of its fork server."""
    servers = [c for c in _children(parent) if "forkserver" in _proc_text(c, "cmdline")]
    return [worker for server in servers for worker in _children(server)]


def _writing(pid: int) -> bool:
    """Whether a process is blocked writing into a full pipe (``pipe_write``, or
    ``anon_pipe_write`` on newer kernels)."""
    return "pipe_write" in _proc_text(pid, "wchan")


def _idle(pid: int) -> bool:
    """Whether a process sleeps without writing (a worker waiting for its next chunk)."""
    stat = _proc_text(pid, "stat")
    state = stat[stat.rfind(")") + 2 :][:1]
    return state == "S" and not _writing(pid)


def _paused_while_a_worker_writes(process: subprocess.Popen[str]) -> int:
    """Stop the run (SIGSTOP, as Ctrl-Z) at a moment one worker is blocked half-way through
    writing a chunk's result into the result pipe, and return that worker. The pipe fills
    only when the results the stopped parent does not read outgrow it; when every worker
    has gone idle first (results small enough to fit, and no chunk left queued), the run is
    let go on a moment and stopped again."""
    looks = int(PATIENCE / 0.05)
    while looks > 0:
        os.kill(process.pid, signal.SIGSTOP)
        while looks > 0:
            looks -= 1
            workers = _workers(process.pid)
            writing = [worker for worker in workers if _writing(worker)]
            if writing:
                return writing[0]
            assert process.poll() is None, process.communicate()
            if workers and all(map(_idle, workers)):
                break
            _sleep(0.05)
        os.kill(process.pid, signal.SIGCONT)
        _sleep(0.05)
    pytest.fail("no worker ever blocked writing a result")


def _seeds(log: Path) -> list[int]:
    return [loads(line).seed for line in log.read_bytes().splitlines()]


needs_wchan = pytest.mark.skipif(
    not Path("/proc/self/wchan").exists(), reason="needs /proc/PID/wchan"
)


@needs_proc
@needs_wchan
@pytest.mark.parametrize("which", ["writing", "other"])
def test_a_worker_that_dies_ends_the_run_in_one_line_and_the_same_command_resumes(
    tmp_path: Path, stopped: list[subprocess.Popen[str]], which: str
) -> None:
    """The run is paused (SIGSTOP, as Ctrl-Z) until one worker is blocked half-way through
    writing a chunk's result into the full pipe; then either that worker ("writing": the
    parent used to wait forever for the rest of the message) or the other one ("other": a
    BrokenProcessPool traceback) is killed as the out-of-memory killer would, and the run
    continues (SIGCONT)."""
    out = tmp_path / "out"
    log = out / "trajectories.jsonl"
    process = _start_run(out)
    stopped.append(process)
    _wait_for(lambda: log.is_file() and log.stat().st_size > 0, process)  # workers playing
    _wait_for(lambda: len(_workers(process.pid)) == 2, process)
    writing = _paused_while_a_worker_writes(process)
    others = [worker for worker in _workers(process.pid) if worker != writing]
    victim = writing if which == "writing" else others[0]
    os.kill(victim, signal.SIGKILL)
    os.kill(process.pid, signal.SIGCONT)
    # returns only once every process holding stdout and stderr (workers, fork server) ended
    _, err = process.communicate(timeout=PATIENCE)
    assert process.returncode == 2, err
    assert "Traceback" not in err, err
    last = err.strip().splitlines()[-1]
    assert last.startswith(f"stategym: error: worker process {victim} was killed by SIGKILL")
    assert last.endswith("run the same command again to resume"), last
    for _ in range(int(PATIENCE / 0.05)):
        if _group_gone(process.pid):
            break
        _sleep(0.05)
    assert _group_gone(process.pid)
    kept = log.read_bytes().splitlines()
    assert kept and _seeds(log) == list(range(len(kept)))  # whole lines, in order
    again = subprocess.run(
        _run_argv(out),
        capture_output=True,
        text=True,
        env={**os.environ, "OMP_NUM_THREADS": "1"},
        timeout=PATIENCE,
    )
    assert again.returncode == 0, again.stderr
    assert log.read_bytes().splitlines()[: len(kept)] == kept
    assert _seeds(log) == list(range(EPISODES))
