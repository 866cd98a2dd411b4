"""Every performance figure of issue 14 in one command, each with its median, spread and goal.

Usage::

    python benchmarks/all.py              # the table (about 3-4 minutes on 2 loaded cores)
    python benchmarks/all.py --markdown   # the README's performance table
    python benchmarks/all.py --skip-models  # leave out the rollout / training / scale scripts

Per domain: typed tool calls/s through ``Env.step`` (expert mix), Gymnasium text steps/s,
reset with a new task (generation included). Over all domains: scoring from the log cold
(the task cache cleared before every trajectory, so each task really is regenerated) and
warm, and the dense reward's per-step cost at 5, 20, 80, 320 and 1,280 rounds against the
outcome reward's. Then ``rollout_speed.py``, ``train_speed.py`` and ``scale.py`` run in their
``--quick`` mode as subprocesses, their last lines shown as they print them (each has a
time limit; one that runs past it is reported as such).

Every timed figure is the median of ``--repeat`` passes with the garbage collector on and
the min-max of the passes beside it (:mod:`timing`); CPU time of this one process. The
machine the figures come from is shared, so they are noisy: the spread says how much.
"""

from __future__ import annotations

import argparse
import gc
import os
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import env_speed
import score_speed
from stategym.registry import all_domains, get_domain
from timing import CLOCKS, measure

HERE = Path(__file__).resolve().parent
SUBPROCESSES = {
    "rollout_speed.py": ["--quick"],
    "train_speed.py": ["--quick"],
    "scale.py": ["--quick"],
}
"""The other engineers' benchmarks, run as they offer themselves (quick mode)."""


@dataclass(frozen=True)
class Row:
    """One figure: its median, spread (low, high), unit and goal (``None``: no goal)."""

    name: str
    median: float
    low: float
    high: float
    unit: str
    goal: float | None
    higher_is_better: bool = True

    def ratio(self) -> float | None:
        if self.goal is None:
            return None
        return self.median / self.goal if self.higher_is_better else self.goal / self.median


def _from_figure(prefix: str, figure: env_speed.Figure, goal: float) -> Row:
    low, high = figure.spread
    return Row(
        f"{prefix}: {figure.name}",
        figure.value,
        low,
        high,
        figure.unit,
        goal,
        figure.better == "higher",
    )


def domain_rows(name: str, repeat: int) -> list[Row]:
    """Typed calls/s, Gymnasium steps/s and a new task's reset, for one domain."""
    domain = get_domain(name)
    expert = env_speed.record(domain, "expert", range(100))
    reset = env_speed.resets(domain, 200, repeat)[0]
    calls = env_speed.tool_calls(domain, expert, "expert", repeat)
    steps = env_speed.gym_steps(domain, expert, repeat)
    return [
        _from_figure(name, calls, 100_000.0),
        _from_figure(name, steps, 10_000.0),
        _from_figure(name, reset, 1.0),
    ]


def scoring_rows(repeat: int) -> list[Row]:
    """Cold and warm scoring from the log over every domain's pool of scripted agents."""
    clock = CLOCKS["cpu"]
    items = score_speed.pool(list(all_domains()), 7)
    lines = [score_speed.dumps(item.trajectory) for item in items]
    # The pool is the benchmark's own data, which a real scoring run (streaming its log) never
    # holds: out of the collector's generations, full collections stop walking it, while
    # the garbage collector stays on for everything scoring allocates.
    gc.freeze()
    rows = []
    for label, work in (
        ("score from the log, cold (every task regenerated)", score_speed.score_from_log),
        ("score from the log, warm (tasks cached)", score_speed.score_from_log_warm),
    ):
        spread = measure(lambda w=work: w(lines), repeat, clock)
        rows.append(
            Row(f"all domains: {label}", spread.median, *_minmax(spread.rates), "traj/s", 2000.0)
        )
    return rows


def dense_rows(repeat: int) -> list[Row]:
    """The dense reward's per-step cost over the outcome reward's, by episode length."""
    sweep = score_speed.length_sweep([5, 20, 80, 320, 1280], repeat, CLOCKS["cpu"])
    rows = []
    for length, (plain, dense) in sweep.items():
        ratios = [p / d for p, d in zip(plain.rates, dense.rates, strict=True)]
        rows.append(
            Row(
                f"dense reward: step cost / outcome reward's, {length} rounds"
                f" ({1e6 / dense.median:.0f} vs {1e6 / plain.median:.0f} us)",
                plain.median / dense.median,
                *_minmax(ratios),
                "x",
                2.0,
                higher_is_better=False,
            )
        )
    return rows


def _minmax(values: tuple[float, ...] | list[float]) -> tuple[float, float]:
    return min(values), max(values)


def run_others(limit: float) -> list[str]:
    """Run the other benchmarks' quick modes; their last lines, or why there are none."""
    out = []
    env = {**os.environ, "OMP_NUM_THREADS": "1"}
    for script, args in SUBPROCESSES.items():
        path = HERE / script
        if not path.exists():
            out.append(f"{script}: not present")
            continue
        if script == "rollout_speed.py" and not Path("models/tiny").is_dir():
            out.append(
                f"{script}: left out, no trained model at models/tiny "
                "(build one with `stategym model init --out models/tiny`: 362 CPU-s)"
            )
            continue
        try:
            done = subprocess.run(
                [sys.executable, str(path), *args],
                capture_output=True,
                text=True,
                timeout=limit,
                env=env,
                check=False,
            )
        except subprocess.TimeoutExpired:
            out.append(f"{script} {' '.join(args)}: ran past {limit:.0f} s, left out")
            continue
        tail = (done.stdout.strip() or done.stderr.strip()).splitlines()[-12:]
        status = "" if done.returncode == 0 else f" (exit {done.returncode})"
        out.append(f"{script} {' '.join(args)}{status}:\n    " + "\n    ".join(tail))
    return out


def _fmt(value: float) -> str:
    return f"{value:,.0f}" if value >= 100 else f"{value:.3g}"


def print_table(rows: list[Row], markdown: bool) -> None:
    if markdown:
        print("| figure | median | min-max | unit | goal | x goal |")
        print("|---|---|---|---|---|---|")
    for row in rows:
        ratio = row.ratio()
        goal = (
            "-" if row.goal is None else ("≥ " if row.higher_is_better else "≤ ") + _fmt(row.goal)
        )
        cells = (
            row.name,
            _fmt(row.median),
            f"{_fmt(row.low)}-{_fmt(row.high)}",
            row.unit,
            goal,
            "-" if ratio is None else f"{ratio:.2f}",
        )
        if markdown:
            print("| " + " | ".join(cells) + " |")
        else:
            print(f"{cells[0]:<78} {cells[1]:>9} {cells[2]:>17} {cells[3]:<8} {cells[4]:>9} "
                  f"{cells[5]:>6}")  # fmt: skip


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeat", type=int, default=5, help="passes per figure (median)")
    parser.add_argument("--markdown", action="store_true", help="print the README's table")
    parser.add_argument("--skip-models", action="store_true", help="leave out the subprocesses")
    # train_speed --quick trains 30 SFT steps before its GRPO iterations: 59 s on a quiet
    # machine, so a 60 s limit left it out
    parser.add_argument(
        "--limit", type=float, default=150.0, help="seconds each subprocess may run"
    )
    args = parser.parse_args(argv)
    rows: list[Row] = []
    for name in all_domains():
        rows += domain_rows(name, args.repeat)
    rows += scoring_rows(args.repeat)
    rows += dense_rows(args.repeat)
    print(f"median of {args.repeat} passes, GC on, CPU time of one process; min-max beside")
    print_table(rows, args.markdown)
    if not args.skip_models:
        for block in run_others(args.limit):
            print(block)
    return 0


if __name__ == "__main__":
    sys.exit(main())
