"""What a training run writes: its config, one JSON line per iteration, a progress bar.

``RUN/config.json`` is the config the run was started with; re-running the command with
the same settings resumes the run (a different setting is refused, except ``iterations``,
which may grow, and ``progress``). ``RUN/metrics.jsonl`` holds one object per iteration
(``"iteration"`` first; ``"eval"`` lines for held-out evaluations); on resume the lines
after the checkpoint's iteration are dropped, so the file ends as an uninterrupted run's.

:func:`episode_metrics` is the decision-quality summary of a set of scorecards, the same
numbers ``stategym eval`` aggregates (:func:`stategym.metrics.aggregate.row` means) plus the
trainer's rates: goal rate, R and each dimension, the ask rate on must-ask slots, rounds
against the critical path, the parallel-call rate, harm rate, money lost and the
lucky-success rate.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from stategym.kernel.errors import UsageError
from stategym.kernel.task import Task
from stategym.kernel.trajectory import RoundKind, Trajectory
from stategym.metrics.gold import gold_of
from stategym.metrics.litmus import litmus
from stategym.metrics.score import Scorecard
from stategym.train.config import Config, to_json

CONFIG = "config.json"
METRICS = "metrics.jsonl"
MUTABLE = frozenset({"iterations", "progress"})
"""Settings a resumed run may change."""


def open_run(config: Config) -> Path:
    """Create the run directory, or check that it was started with the same settings."""
    run = Path(config.out)
    path = run / CONFIG
    if path.exists():
        old = json.loads(path.read_text())
        new = json.loads(to_json(config))
        changed = sorted(
            k for k in set(old) | set(new) if k not in MUTABLE and old.get(k) != new.get(k)
        )
        if changed:
            raise UsageError(
                f"{run} was started with other settings ({', '.join(changed)}); "
                "use another --out or the same settings to resume"
            )
    run.mkdir(parents=True, exist_ok=True)
    path.write_text(to_json(config))
    return run


def read_metrics(run: Path) -> list[dict[str, Any]]:
    """The run's metric lines (a cut last line, from an interruption, is dropped)."""
    path = run / METRICS
    if not path.exists():
        return []
    out = []
    for line in path.read_text().splitlines():
        try:
            out.append(json.loads(line))
        except json.JSONDecodeError:
            break
    return out


def truncate_metrics(run: Path, iteration: int, eval_every: int = 0) -> None:
    """Keep the lines of iterations ``<= iteration`` (what the checkpoint covers), less the
    end-of-run evaluation of a shorter run (an uninterrupted run has none there)."""
    kept = [
        m
        for m in read_metrics(run)
        if int(m["iteration"]) < iteration
        or (int(m["iteration"]) == iteration and "eval" not in m)
        or ("eval" in m and eval_every and int(m["iteration"]) % eval_every == 0)
    ]
    kept = [m for m in kept if int(m["iteration"]) <= iteration]
    (run / METRICS).write_text("".join(json.dumps(m, sort_keys=True) + "\n" for m in kept))


def append_metrics(run: Path, line: Mapping[str, Any]) -> None:
    """Append one line to ``metrics.jsonl``."""
    with (run / METRICS).open("a") as handle:
        handle.write(json.dumps(dict(line), sort_keys=True) + "\n")


def episode_metrics(
    cards: Sequence[Scorecard], trajectories: Sequence[Trajectory], tasks: Sequence[Task]
) -> dict[str, float]:
    """The decision-quality summary of some episodes (module docstring), all means."""
    if not cards:
        return {}
    n = len(cards)
    rows = [c.row() for c in cards]
    out = {key: sum(r[key] for r in rows) / n for key in rows[0]}
    out["goal_rate"] = out.pop("success")
    out["harm_rate"] = out.pop("harmful")
    asked = sum(c.clarification.tp for c in cards)
    must = sum(c.clarification.tp + c.clarification.fn for c in cards)
    out["ask_rate"] = asked / must if must else float("nan")
    out["critical_path"] = sum(gold_of(t).depth for t in tasks) / n
    tool_rounds = [r for t in trajectories for r in t.rounds if r.kind is RoundKind.CALLS]
    parallel = sum(len([c for c in r.calls if c.name != "finish"]) > 1 for r in tool_rounds)
    out["parallel_rate"] = parallel / len(tool_rounds) if tool_rounds else 0.0
    out["lucky_rate"] = litmus(cards).lucky_success_rate
    out["format_errors"] = sum(len(r.format_errors) for t in trajectories for r in t.rounds) / n
    return {k: round(v, 6) for k, v in sorted(out.items())}


@contextmanager
def progress_bar(total: int, done: int, enabled: bool, label: str) -> Iterator[Any]:
    """A rich progress bar on stderr; yields ``advance(text)`` (a no-op when disabled)."""
    if not enabled:
        yield lambda text="": None
        return
    from rich.console import Console
    from rich.progress import (
        BarColumn,
        MofNCompleteColumn,
        Progress,
        TextColumn,
        TimeRemainingColumn,
    )

    with Progress(
        TextColumn(f"[bold]{label}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeRemainingColumn(),
        TextColumn("{task.description}"),
        console=Console(stderr=True),
        transient=False,
    ) as progress:
        task = progress.add_task("", total=total, completed=done)

        def advance(text: str = "") -> None:
            progress.update(task, advance=1, description=text)

        yield advance


__all__ = [
    "CONFIG",
    "METRICS",
    "append_metrics",
    "episode_metrics",
    "open_run",
    "progress_bar",
    "read_metrics",
    "truncate_metrics",
]
