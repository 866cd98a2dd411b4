"""Round-trip time of one stategym round through OpenEnv's WebSocket protocol.

Usage::

    python benchmarks/openenv_speed.py                   # travel and bank, 40 expert episodes each
    python benchmarks/openenv_speed.py --quick           # 8 episodes each
    python benchmarks/openenv_speed.py --domains shop --episodes 100 --in-process

The server is the adapter's entry point (``python -m stategym.adapters.openenv``) in its own
process, on a free port of 127.0.0.1, unless ``--in-process`` (uvicorn in a thread of this
process, competing with the client for the interpreter). Either way, whatever the server logs
at ERROR (a traceback) reaches this script's stderr: a thread's server shares it, and a child
server's log is passed on once the child stops. The client is
:class:`~stategym.adapters.openenv.StategymClient` (OpenEnv's ``EnvClient``, its synchronous
wrapper). The workload is the scripted expert's episodes, seeds ``0..N-1``, played through
the wire; every step's wall time is recorded (the action's serialisation, the round trip,
the round played and scored on the server, the observation parsed back), and each reset's.
Beside it, the same actions stepped on a local ``Env`` with the same reward (no OpenEnv):
what the round itself costs, so the difference is the protocol's. Every wire episode's
trajectory is checked against the local one: the script fails if a byte differs.

Figures: the median step and reset, with the interquartile range and the min-max, in
milliseconds; the 90th percentile. Wall time: on a machine other work is using, say the
load average with them.
"""

from __future__ import annotations

import argparse
import os
import re
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager

import httpx

from stategym.adapters.openenv import StategymAction, StategymClient, build_app, served
from stategym.agents import resolve
from stategym.kernel.env import Env
from stategym.kernel.trajectory import dumps
from stategym.metrics import dense_reward
from stategym.registry import get_domain


@contextmanager
def server_process(domain: str) -> Iterator[str]:
    """The entry point serving ``domain`` in a child process; yields its base URL.

    The child's log is kept, not thrown away, and what it logged at ERROR (a traceback) is
    passed on to this process's stderr once the server has stopped, so a child server hides
    no error that a server in a thread (``--in-process``, sharing this stderr) would show.
    """
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    command = [sys.executable, "-m", "stategym.adapters.openenv", "--domain", domain]
    with tempfile.TemporaryFile(mode="w+", encoding="utf-8") as log:
        child = subprocess.Popen(
            [*command, "--port", str(port)], stdout=subprocess.DEVNULL, stderr=log
        )
        try:
            yield wait_for_health(f"http://127.0.0.1:{port}", child)
        finally:
            child.terminate()
            child.wait(timeout=30)
            log.seek(0)
            sys.stderr.write(server_errors(log.read()))


def wait_for_health(url: str, child: subprocess.Popen[bytes]) -> str:
    """``url`` once the child server answers ``/health`` (two minutes at most)."""
    deadline = time.monotonic() + 120
    while True:
        try:
            httpx.get(f"{url}/health", timeout=1).raise_for_status()
            return url
        except httpx.TransportError:
            if child.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError("the server did not start") from None
            time.sleep(0.1)


LOG_RECORD = re.compile(r"(DEBUG|INFO|WARNING|ERROR|CRITICAL):\s")
"""How a record of uvicorn's default log starts; a traceback's lines belong to the one above."""


def server_errors(log: str) -> str:
    """The ERROR and CRITICAL records of a uvicorn log, each with its traceback.

    Example:
        >>> server_errors("INFO:     open\\nERROR:    boom\\nTraceback ...\\nValueError: x\\n")
        'ERROR:    boom\\nTraceback ...\\nValueError: x\\n'
    """
    kept: list[str] = []
    keeping = False
    for line in log.splitlines(keepends=True):
        record = LOG_RECORD.match(line)
        if record is not None:
            keeping = record.group(1) in {"ERROR", "CRITICAL"}
        if keeping:
            kept.append(line)
    return "".join(kept)


def measure(url: str, domain: str, episodes: int) -> dict[str, list[float]]:
    """Seconds of every wire step and reset, and of every local step, over the expert's episodes."""
    times: dict[str, list[float]] = {"step": [], "reset": [], "local step": []}
    factory = resolve(get_domain(domain), "expert")
    with StategymClient(base_url=url).sync() as wire:
        for seed in range(episodes):
            local = Env(domain, reward=dense_reward, agent="expert")
            local.reset(seed=seed)
            agent = factory(local.task)
            started = time.perf_counter()
            result = wire.reset(seed=seed, agent="expert")
            times["reset"].append(time.perf_counter() - started)
            while not result.done:
                action = agent.act(result.observation.to_stategym())
                payload = StategymAction.of(action)
                started = time.perf_counter()
                result = wire.step(payload)
                times["step"].append(time.perf_counter() - started)
                started = time.perf_counter()
                local.step(action)
                times["local step"].append(time.perf_counter() - started)
            if wire.state().trajectory != dumps(local.trajectory).decode():
                raise SystemExit(f"{domain} seed {seed}: the wire's trajectory differs")
    return times


def describe(seconds: list[float]) -> str:
    ms = sorted(s * 1000 for s in seconds)
    q1, _, q3 = statistics.quantiles(ms, n=4, method="inclusive")
    p90 = statistics.quantiles(ms, n=10, method="inclusive")[-1]
    median = statistics.median(ms)
    return (
        f"{median:7.3f} ms  IQR {q1:.3f}-{q3:.3f}  min-max {ms[0]:.3f}-{ms[-1]:.3f}  "
        f"p90 {p90:.3f}  (n={len(ms)})"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--domains", default="travel,bank", help="comma-separated domains")
    parser.add_argument("--episodes", type=int, default=40, help="expert episodes per domain")
    parser.add_argument("--quick", action="store_true", help="8 episodes per domain")
    parser.add_argument("--in-process", action="store_true", help="serve from a thread here")
    args = parser.parse_args()
    episodes = 8 if args.quick else args.episodes
    where = "in this process" if args.in_process else "in a child process"
    print(f"OpenEnv round trips, server {where}; load average {os.getloadavg()[0]:.1f}")
    for domain in args.domains.split(","):
        serving = served(build_app(domain)) if args.in_process else server_process(domain)
        with serving as url:
            measure(url, domain, 1)  # warm both ends (imports, caches, the connection)
            times = measure(url, domain, episodes)
        print(f"{domain}:")
        for name, seconds in times.items():
            print(f"  {name:<11}{describe(seconds)}")


if __name__ == "__main__":
    main()
