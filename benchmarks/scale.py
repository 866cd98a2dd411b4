"""Every core and Ray: episodes/s of ``eval``'s playing with the scripted expert.

Usage::

    python benchmarks/scale.py                 # 6 domains x 500 seeds, 3 repeats each
    python benchmarks/scale.py --quick         # 2 domains x 100 seeds, 2 repeats
    python benchmarks/scale.py --json runs/scale.json

What is timed is what ``stategym eval --agents expert --workers N`` (or ``--ray``) does
between resolving its agents and writing its report: every episode played and scored by the
engine (:func:`stategym.rollout.stream_scored`: each scored on the worker that played it) and
appended to a trajectories file in spec order. The report (bootstrap intervals, tables) is
not timed. Each measurement runs in a fresh
interpreter, so it pays what a command pays: the fork server and the workers start inside
the timed region. Ray is the exception: its local instance (``ray.init(num_cpus=2)``) is
started before the clock (a cluster is started once, not per command); its start-up is
reported on its own.

Figures, each the median of ``--repeat`` runs with the garbage collector on (the
configurations taken in turn, so each sees the same load), with the spread (min-max): wall
seconds, episodes/s, and the ratio to one worker (the issue's target: >= 1.8x on 2 cores for
scripted agents); the parent's CPU seconds and those of every process of the run (the
interpreter with its imports, the fork server and the workers: what the spread costs in
work, whatever the load; not measured for Ray, whose processes are its own); and for 2
workers and Ray the overhead per
episode, ``(wall - wall_1 / 2) / episodes``: what each episode costs beyond a perfect split
over two cores. N workers is this machine's core count (left out where that is 2). Every
run's trajectories file and scores are compared with the one-worker run's: the script fails
if a byte differs.

On a machine other work is using, wall-clock ratios fall: say the load average with them.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

DOMAINS = ("travel", "meetings", "shop", "bank", "cloud", "lookup")


def one(config: str, domains: list[str], seeds: int, out: Path) -> dict[str, Any]:
    """Play every (domain, seed) with the expert under ``config`` (``1``, ``2``, ``ray``...)
    into ``out``, timed; what a child process prints."""
    from stategym.metrics import score
    from stategym.rollout import Agents, episode_specs, stream_scored
    from stategym.rollout.log import Appender
    from stategym.rollout.workers import Spread

    started_ray = 0.0
    if config == "ray":
        import ray

        clock = time.perf_counter()
        ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)
        started_ray = time.perf_counter() - clock
        spread = Spread(ray=True)
    else:
        spread = Spread(int(config))
    wall, cpu = time.perf_counter(), time.process_time()
    specs = [s for d in domains for s in episode_specs(d, "expert", range(seeds))]
    append = Appender(out)
    composites = []
    for _, trajectory, card in stream_scored(specs, Agents(), score, spread=spread):
        append(trajectory)
        composites.append(card.composite)
    wall = time.perf_counter() - wall
    _reap_fork_server()
    return {
        "wall_s": wall,
        "parent_cpu_s": time.process_time() - cpu,
        "episodes": len(specs),
        "ray_start_s": started_ray,
        "sha256": hashlib.sha256(out.read_bytes() + repr(composites).encode()).hexdigest(),
    }


def _reap_fork_server() -> None:
    """Stop and wait for the fork server, so that its CPU time and its workers' (which it
    waited for) count in this process's children's, and so in the caller's."""
    from multiprocessing import forkserver

    server = forkserver._forkserver  # no public handle; a benchmark may reach in
    if getattr(server, "_forkserver_pid", None) is not None:
        server._stop()


def _tree_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def measure(config: str, domains: list[str], seeds: int) -> dict[str, Any]:
    """One run of ``config`` in a fresh interpreter, with the CPU seconds of its whole
    process tree (the interpreter, the fork server, the workers; not Ray's, which runs in
    processes of its own)."""
    before = _tree_cpu()
    with tempfile.TemporaryDirectory() as folder:
        command = [sys.executable, __file__, "--one", config, "--seeds", str(seeds)]
        command += ["--domains", ",".join(domains), "--out", str(Path(folder, "t.jsonl"))]
        result = subprocess.run(command, capture_output=True, text=True)
        if result.returncode != 0:
            raise SystemExit(f"{config}: the run failed:\n{result.stderr}")
        run: dict[str, Any] = json.loads(result.stdout.strip().splitlines()[-1])
    run["load"] = os.getloadavg()[0]
    run["tree_cpu_s"] = _tree_cpu() - before
    return run


def summarise(config: str, runs: list[dict[str, Any]], base: float | None) -> dict[str, Any]:
    walls = [r["wall_s"] for r in runs]
    wall = statistics.median(walls)
    episodes = runs[0]["episodes"]
    row: dict[str, Any] = {
        "config": config,
        "episodes": episodes,
        "wall_s": wall,
        "wall_spread_s": [min(walls), max(walls)],
        "episodes_per_s": episodes / wall,
        "parent_cpu_s": statistics.median(r["parent_cpu_s"] for r in runs),
        "tree_cpu_s": statistics.median(r["tree_cpu_s"] for r in runs),
        "ratio": (base / wall) if base else 1.0,
        "sha256": sorted({r["sha256"] for r in runs}),
        "load_1min": [round(r["load"], 2) for r in runs],
    }
    if base and config != "1":
        row["overhead_ms_per_episode"] = 1000 * (wall - base / 2) / episodes
    if config == "ray":
        row["ray_start_s"] = statistics.median(r["ray_start_s"] for r in runs)
    return row


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="2 domains x 100 seeds, 2 repeats")
    parser.add_argument("--seeds", type=int, default=None, help="seeds per domain (default 500)")
    parser.add_argument("--domains", default=None, help="comma list (default: all six)")
    parser.add_argument("--repeat", type=int, default=None, help="runs per figure (default 3)")
    parser.add_argument("--no-ray", action="store_true", help="leave Ray out")
    parser.add_argument("--json", type=Path, default=None, help="also write the rows here")
    parser.add_argument("--one", default=None, help=argparse.SUPPRESS)
    parser.add_argument("--out", type=Path, default=None, help=argparse.SUPPRESS)
    args = parser.parse_args()
    domains = (args.domains or ("travel,shop" if args.quick else ",".join(DOMAINS))).split(",")
    seeds = args.seeds or (100 if args.quick else 500)
    if args.one is not None:
        print(json.dumps(one(args.one, domains, seeds, args.out)))
        return 0
    repeat = args.repeat or (2 if args.quick else 3)
    from stategym.rollout.workers import cores

    configs = ["1", "2", *([str(cores())] if cores() > 2 else [])]  # N = cores
    if not args.no_ray:
        try:
            import ray  # noqa: F401  (only asked whether it is there)

            configs.append("ray")
        except ImportError:
            print("Ray is not installed: left out (pip install 'stategym[ray]')")
    print(f"load average before: {os.getloadavg()}; cores: {cores()}", flush=True)
    runs: dict[str, list[dict[str, Any]]] = {config: [] for config in configs}
    for _ in range(repeat):  # round-robin, so every figure sees the same load over time
        for config in configs:
            runs[config].append(measure(config, domains, seeds))
    rows: list[dict[str, Any]] = []
    for config in configs:
        rows.append(summarise(config, runs[config], rows[0]["wall_s"] if rows else None))
        print(_line(rows[-1]), flush=True)
    print(f"load average after: {os.getloadavg()}")
    identical = len({h for r in rows for h in r["sha256"]}) == 1
    print("trajectories and scores byte-identical to one worker:", identical)
    if args.json is not None:
        args.json.write_text(json.dumps(rows, indent=2))
    return 0 if identical else 1


def _line(row: dict[str, Any]) -> str:
    low, high = row["wall_spread_s"]
    workers = "Ray, 2 local workers" if row["config"] == "ray" else f"{row['config']} worker(s)"
    text = (
        f"{workers:>22}: {row['episodes']} episodes, wall {row['wall_s']:.2f} s "
        f"({low:.2f}-{high:.2f}), {row['episodes_per_s']:.0f} episodes/s, "
        f"x{row['ratio']:.2f} of one worker, parent CPU {row['parent_cpu_s']:.2f} s"
    )
    if row["config"] != "ray":
        text += f", all processes' CPU {row['tree_cpu_s']:.2f} s"
    if "overhead_ms_per_episode" in row:
        text += f", overhead {row['overhead_ms_per_episode']:.2f} ms/episode"
    if "ray_start_s" in row:
        text += f" (ray.init {row['ray_start_s']:.1f} s, not timed)"
    return text + f"; load {row['load_1min']}"


if __name__ == "__main__":
    sys.exit(main())
