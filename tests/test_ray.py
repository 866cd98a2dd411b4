"""Ray beyond one machine: the same specs as Ray tasks give the same bytes as one process.

The test starts a local Ray instance with two workers (``ray.init(num_cpus=2)``) and
compares the engine's output and ``eval --ray``'s files with a one-process run. It skips,
saying why, where Ray cannot be imported (``pip install 'stategym[ray]'``).

The command-line tests (audit 11b, finding 3) run ``stategym`` in a process of its own, as a
user does: an address where no cluster answers is refused in one line, SIGTERM stops a run
in one line while it connects and while it plays, and ``--ray`` alone still starts a local
instance. They wait on what they can observe (a socket's state, a file growing), with
generous limits, and never assert how long anything took.
"""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from stategym.agents import resolve
from stategym.agents.base import AgentFactory
from stategym.cli import main
from stategym.kernel.domain import Domain
from stategym.kernel.task import Task
from stategym.kernel.trajectory import dumps
from stategym.rollout import Agents, episode_specs, stream
from stategym.rollout.workers import Spread, WorkerTraceback

ray = pytest.importorskip("ray", reason="Ray is not installed (pip install 'stategym[ray]')")


@pytest.fixture(scope="module")
def local_ray() -> Iterator[Any]:
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)
    yield ray
    ray.shutdown()


def test_ray_tasks_yield_the_same_trajectories_in_spec_order(local_ray: Any) -> None:
    specs = [
        *episode_specs("travel", "expert", range(24)),
        *episode_specs("bank", "random", range(16)),
    ]
    here = [(spec, dumps(t)) for spec, t in stream(specs, Agents())]
    there = [(spec, dumps(t)) for spec, t in stream(specs, Agents(), spread=Spread(ray=True))]
    assert [spec for spec, _ in there] == specs
    assert there == here


def test_eval_on_ray_writes_the_bytes_of_one_process(
    local_ray: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    common = ["eval", "--domains", "shop,cloud", "--agents", "expert,serial", "--episodes", "9"]
    common += ["--resamples", "50"]
    assert main([*common, "--out", "a/out", "--workers", "1"]) == 0
    assert main([*common, "--out", "b/out", "--ray"]) == 0  # joins the test's instance
    for name in ("trajectories.jsonl", "scores.jsonl", "scorecard.json", "scorecard.md"):
        assert Path("b/out", name).read_bytes() == Path("a/out", name).read_bytes(), name


BOOM_SEED = 21


def boom(domain: Domain, agent: str, **options: Any) -> AgentFactory:
    """A resolver whose agent for one seed raises (shipped to Ray by value)."""
    expert = resolve(domain, "expert")

    def make(task: Task) -> Any:
        if task.seed == BOOM_SEED:
            raise RuntimeError(f"boom on seed {task.seed}")
        return expert(task)

    return make


def test_an_error_in_a_ray_task_is_raised_as_itself_after_every_earlier_episode(
    local_ray: Any,
) -> None:
    # The test module is not importable on Ray's workers: its functions travel by value.
    local_ray.cloudpickle.register_pickle_by_value(sys.modules[__name__])
    specs = episode_specs("travel", "expert", range(40))
    played = []
    with pytest.raises(RuntimeError, match=f"boom on seed {BOOM_SEED}") as raised:
        for _, trajectory in stream(specs, Agents(resolver=boom), spread=Spread(ray=True)):
            played.append(dumps(trajectory))
    assert isinstance(raised.value.__cause__, WorkerTraceback)
    assert played == [dumps(t) for _, t in stream(specs[:BOOM_SEED], Agents())]


# -- audit 11b, finding 3: an address with no cluster is refused; SIGTERM is one line -----

PATIENCE = 300.0
"""Seconds a command-line test waits for anything (a loaded 2-core machine is slow)."""
RUN = ["run", "--domain", "travel", "--agent", "expert"]


def _env() -> dict[str, str]:
    """This environment, without a cluster of its own (``RAY_ADDRESS``)."""
    env = {k: v for k, v in os.environ.items() if k != "RAY_ADDRESS"}
    return {**env, "OMP_NUM_THREADS": "1"}


def _cli(*argv: str, patience: float | None = None) -> list[str]:
    """``python -m stategym.cli ARGV``; with ``patience``, the check that a cluster answers
    waits that long (it would otherwise give up before a slow test has seen it waiting)."""
    if patience is None:
        return [sys.executable, "-m", "stategym.cli", *argv]
    script = (
        "import sys, stategym.rollout.ray as r; "
        f"r.CONNECT_PATIENCE = {patience}; "
        "from stategym.cli import main; sys.exit(main(sys.argv[1:]))"
    )
    return [sys.executable, "-c", script, *argv]


def _start(argv: list[str], cwd: Path) -> subprocess.Popen[str]:
    return subprocess.Popen(
        argv,
        cwd=cwd,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=_env(),
        start_new_session=True,
    )


@pytest.fixture
def started() -> Iterator[list[subprocess.Popen[str]]]:
    """The processes a test starts; their groups are killed whatever the test found."""
    processes: list[subprocess.Popen[str]] = []
    yield processes
    for process in processes:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(process.pid, signal.SIGKILL)
        process.communicate()


def _wait_for(ready: Callable[[], bool], process: subprocess.Popen[str]) -> None:
    for _ in range(int(PATIENCE / 0.05)):
        if ready():
            return
        assert process.poll() is None, process.communicate()
        time.sleep(0.05)
    pytest.fail("the command never got there")


def _ends_in_one_line(process: subprocess.Popen[str], status: int, line: str) -> None:
    _, err = process.communicate(timeout=PATIENCE)
    assert process.returncode == status, err
    assert "Traceback" not in err, err
    assert err.strip().splitlines()[-1] == line, err


def _socket_inodes(pid: int) -> set[str]:
    inodes = set()
    for fd in Path(f"/proc/{pid}/fd").glob("*"):
        with contextlib.suppress(OSError):
            target = os.readlink(fd)
            if target.startswith("socket:["):
                inodes.add(target[len("socket:[") : -1])
    return inodes


def _connecting(pid: int, port: int) -> bool:
    """Whether the process holds a TCP socket still connecting (SYN sent) to ``port``."""
    inodes = _socket_inodes(pid)
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        with contextlib.suppress(OSError):
            for row in Path(table).read_text().splitlines()[1:]:
                fields = row.split()
                remote_port = int(fields[2].rsplit(":", 1)[1], 16)
                if remote_port == port and fields[3] == "02" and fields[9] in inodes:
                    return True
    return False


@contextlib.contextmanager
def _unanswered_port() -> Iterator[int]:
    """A port whose listener never completes another connection: its accept queue is full
    (a SYN to it is dropped, so a client waits as for a host that does not answer)."""
    with socket.socket() as server:
        server.bind(("", 0))
        server.listen(0)
        port = server.getsockname()[1]
        fillers = []
        try:
            for _ in range(16):  # the queue holds backlog + 1 on Linux; fill it, whatever
                filler = socket.socket()
                fillers.append(filler)
                filler.settimeout(1.0)
                try:
                    filler.connect(("127.0.0.1", port))
                except TimeoutError:
                    break
            yield port
        finally:
            for filler in fillers:
                filler.close()


needs_proc = pytest.mark.skipif(not Path("/proc/net/tcp").exists(), reason="needs /proc")


EVAL = ["eval", "--domains", "travel", "--agents", "expert"]


def _refused_cluster(
    tmp_path: Path, command: list[str], episodes: int
) -> tuple[str, subprocess.CompletedProcess[str]]:
    """Run ``command --ray ADDRESS --out out`` where ADDRESS refuses every connection (a port
    bound, never listening); the address and the finished process."""
    with socket.socket() as closed:
        closed.bind(("", 0))
        address = f"127.0.0.1:{closed.getsockname()[1]}"
        argv = _cli(*command, "--episodes", str(episodes), "--ray", address, "--out", "out")
        done = subprocess.run(
            argv, cwd=tmp_path, capture_output=True, text=True, env=_env(), timeout=PATIENCE
        )
    return address, done


def test_an_address_where_no_cluster_answers_is_refused_in_one_line(tmp_path: Path) -> None:
    address, done = _refused_cluster(tmp_path, RUN, 20)
    assert done.returncode == 2, done.stderr
    (line,) = done.stderr.splitlines()  # one line: no traceback, no Ray warnings
    assert line.startswith(f"stategym: error: --ray {address}: no Ray cluster answers at "), line
    assert "(Connection refused)" in line, line


@pytest.mark.parametrize("command", [RUN, EVAL], ids=["run", "eval"])
def test_a_refused_address_leaves_no_run_folder(tmp_path: Path, command: list[str]) -> None:
    """The address is checked before the command creates its folder (and its lock)."""
    _, done = _refused_cluster(tmp_path, command, 2)
    assert done.returncode == 2, done.stderr
    assert "no Ray cluster answers at" in done.stderr, done.stderr
    assert not (tmp_path / "out").exists()


@needs_proc
def test_sigterm_while_connecting_to_a_cluster_is_one_line(
    tmp_path: Path, started: list[subprocess.Popen[str]]
) -> None:
    with _unanswered_port() as port:
        argv = ["eval", "--domains", "travel", "--agents", "expert", "--episodes", "20"]
        argv += ["--ray", f"127.0.0.1:{port}", "--out", "out"]
        process = _start(_cli(*argv, patience=PATIENCE), tmp_path)
        started.append(process)
        _wait_for(lambda: _connecting(process.pid, port), process)
        process.send_signal(signal.SIGTERM)
        _ends_in_one_line(process, 143, "stategym: terminated")


def test_sigterm_while_playing_on_a_local_instance_is_one_line(
    tmp_path: Path, started: list[subprocess.Popen[str]]
) -> None:
    # ray.init sets a SIGTERM handler of its own (sys.exit(15)): the command's must be back
    argv = ["eval", "--domains", "travel", "--agents", "expert", "--episodes", "20000"]
    process = _start(_cli(*argv, "--ray", "--out", "out"), tmp_path)
    started.append(process)
    log = tmp_path / "out" / "trajectories.jsonl"
    _wait_for(lambda: log.is_file() and log.stat().st_size > 0, process)  # Ray tasks playing
    process.send_signal(signal.SIGTERM)
    _ends_in_one_line(process, 143, "stategym: terminated")


def test_ray_alone_plays_on_a_local_instance_and_writes_the_bytes_of_one_process(
    tmp_path: Path,
) -> None:
    # Ray's own rule: a new local instance, or the local one running (this module's fixture)
    for name, spread in (("one", ["--workers", "1"]), ("ray", ["--ray"])):
        argv = _cli(*RUN, "--episodes", "40", *spread, "--out", f"{name}/out")
        argv += ["--index", f"{name}/index.sqlite"]
        done = subprocess.run(
            argv, cwd=tmp_path, capture_output=True, text=True, env=_env(), timeout=PATIENCE
        )
        assert done.returncode == 0, done.stderr
    for file in ("trajectories.jsonl", "summary.json", "results.md"):
        assert (tmp_path / "ray/out" / file).read_bytes() == (
            tmp_path / "one/out" / file
        ).read_bytes(), file
