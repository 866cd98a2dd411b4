"""E4: token-level GRPO drifts serial; round-aware credit restores parallelism.

Per training seed, one SFT start (the tiny model on ``expert:1,all-serial:1``
demonstrations, so that parallel and serial rounds are both in the start policy), then one
GRPO arm per credit: ``outcome`` (one episode-level advantage on every token: token-level
GRPO) against the round-aware ``dense`` and ``gigpo``, which give each call of a parallel
round its own share (:mod:`stategym.train.calls`). Tasks: ``synth:chain2+fanout3`` (a
two-call chain whose second call needs the first's value, and three independent reads),
hidden information, dynamics and priority conflicts off, the compact rendering with
handles, so what separates play is how the calls are batched into rounds.

Over iterations (the GRPO lines, sampled episodes): rounds per episode against the critical
path, the parallel-call rate (tool rounds with more than one call), R. The final greedy
policies are scored per task on held-out seeds: rounds over the critical path (a ratio of
sums), the parallel-call rate, and the **unsafe-parallel rate**, the share of episodes with a
call issued before a value it needs was observed (Q_par's ``early`` count), so that
parallelism bought by guessing is not counted as a win. Paired bootstrap over seed blocks
and tasks.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
from numpy.typing import NDArray

from stategym.experiments import arms
from stategym.experiments.configs import E4Config
from stategym.experiments.intervals import ratio, replicate_weights, seed_block
from stategym.experiments.output import (
    PLOTS,
    claim,
    config_json,
    estimate_json,
    write_run,
)
from stategym.experiments.plots import training_curves
from stategym.kernel.knobs import Knobs
from stategym.kernel.trajectory import RoundKind
from stategym.metrics.aggregate import Estimate
from stategym.metrics.gold import gold_of
from stategym.metrics.report import cell
from stategym.tables import Grid, markdown

DOMAIN = "synth:chain2+fanout3"
KNOBS = "hidden_info=off,dynamics=off,priorities=off"
CURVES: tuple[str, ...] = ("rounds", "critical_path", "parallel_rate", "composite")
PER_TASK: tuple[str, ...] = (
    "rounds", "critical_path", "parallel_rounds", "tool_rounds", "unsafe", "success", "composite",
)  # fmt: skip
COLUMNS: tuple[str, ...] = ("rounds_over_path", "parallel_rate", "unsafe_rate", "goal", "composite")


@dataclass(frozen=True, slots=True)
class E4Result:
    """What E4 measured.

    Attributes:
        config: the configuration.
        seeds: the training seeds.
        curves: ``credit -> seed -> per-iteration lines``.
        final: ``credit -> column -> estimate`` of the greedy policy on held-out tasks.
        values: ``(credits, seeds, episodes, PER_TASK)``.
    """

    config: E4Config
    seeds: tuple[int, ...]
    curves: dict[str, dict[int, list[dict[str, Any]]]]
    final: dict[str, dict[str, Estimate]]
    values: NDArray


def per_task(played: arms.Played) -> list[float]:
    """The :data:`PER_TASK` numbers of one held-out episode."""
    tool = [r for r in played.trajectory.rounds if r.kind is RoundKind.CALLS]
    parallel = sum(len([c for c in r.calls if c.name != "finish"]) > 1 for r in tool)
    card = played.card
    return [
        float(len(played.trajectory.rounds)), float(gold_of(played.task).depth),
        float(parallel), float(len(tool)), float(card.parallelism.early > 0),
        float(card.outcome.goal_reached), card.composite,
    ]  # fmt: skip


def estimate(values: NDArray, weights: NDArray) -> dict[str, Estimate]:
    """The :data:`COLUMNS` of one arm: ``values`` ``(seeds, episodes, PER_TASK)``."""

    def col(name: str) -> NDArray:
        return values[:, :, PER_TASK.index(name)]

    ones = np.ones_like(col("rounds"))
    return {
        "rounds_over_path": ratio(col("rounds"), col("critical_path"), weights),
        "parallel_rate": ratio(col("parallel_rounds"), col("tool_rounds"), weights),
        "unsafe_rate": ratio(col("unsafe"), ones, weights),
        "goal": ratio(col("success"), ones, weights),
        "composite": ratio(col("composite"), ones, weights),
    }


def held_out(config: E4Config, seed: int) -> range:
    """The held-out task seeds of training seed ``seed`` (its seed block)."""
    return seed_block(seed, config.episodes)


def largest_task_seed(config: E4Config, seed: int) -> int:
    """The largest task seed training seed ``seed`` makes E4 play: held-out, SFT or GRPO."""
    return arms.largest_trained_seed(config.recipe, seed, held_out(config, seed))


def run(config: E4Config, seeds: Sequence[int], out: Path) -> E4Result:
    """Train every credit arm for every seed from one SFT start, read the curves, score.

    Raises:
        UsageError: ``out`` holds another experiment or configuration
            (:func:`~stategym.experiments.output.claim`), before anything trains.
    """
    claim(out, "e4", config)
    curves: dict[str, dict[int, list[dict[str, Any]]]] = {}
    shape = (len(config.credits), len(seeds), config.episodes, len(PER_TASK))
    values = np.zeros(shape)
    where = {"domain": DOMAIN, "knobs": KNOBS}
    for b, seed in enumerate(seeds):
        root = out / "runs" / f"seed-{seed}"
        start = arms.sft(config.recipe, root / "sft", seed, config.demonstrators, where)
        tasks = [(DOMAIN, t, Knobs.parse(KNOBS)) for t in held_out(config, seed)]
        for c, credit in enumerate(config.credits):
            trained = arms.grpo(config.recipe, root / credit, seed, start, credit, where)
            curves.setdefault(credit, {})[seed] = arms.curve(trained)
            played = arms.episodes(trained, tasks, config.recipe, seed)
            values[c, b] = [per_task(p) for p in played]
    weights = replicate_weights(len(seeds), config.episodes, config.resamples)
    final = {str(k): estimate(values[c], weights) for c, k in enumerate(config.credits)}
    return E4Result(config, tuple(seeds), curves, final, values)


def grids(result: E4Result) -> list[Grid]:
    """The greedy policies' held-out numbers, one row per credit."""
    rows = tuple(
        (credit, *(cell(result.final[credit][c]) for c in COLUMNS))
        for credit in result.config.credits
    )
    caption = "greedy policies on held-out tasks; paired bootstrap over seed blocks and tasks"
    return [Grid("E4: token-level vs round-aware credit", ("credit", *COLUMNS), rows,
                 caption=caption)]  # fmt: skip


def write(result: E4Result, out: Path, cpu_seconds: float) -> list[Path]:
    """Write the run directory (see :mod:`stategym.experiments`); the files written."""
    out.mkdir(parents=True, exist_ok=True)
    results = {
        "experiment": "e4",
        "config": config_json(result.config),
        "seeds": list(result.seeds),
        "domain": DOMAIN,
        "knobs": KNOBS,
        "cpu_seconds": cpu_seconds,
        "final": {k: {c: estimate_json(e) for c, e in v.items()} for k, v in result.final.items()},
        "curves": {k: {str(s): lines for s, lines in v.items()} for k, v in result.curves.items()},
    }
    raw = {
        "shape": ["credits", "seeds", "episodes", "columns"],
        "columns": list(PER_TASK),
        "values": result.values,
    }
    table = markdown(grids(result))
    return write_run(out, results, raw, table, lambda: _plots(result, out / PLOTS))


def _plots(result: E4Result, folder: Path) -> list[Path]:
    panels: dict[str, dict[str, list[list[float]]]] = {
        measure: {
            str(credit): [
                [float("nan") if m.get(measure) is None else float(m[measure]) for m in lines]
                for lines in result.curves[credit].values()
            ]
            for credit in result.config.credits
        }
        for measure in CURVES
    }
    title = f"E4 ({result.config.budget})"
    return training_curves(panels, folder / "curves", title)


__all__ = [
    "COLUMNS",
    "CURVES",
    "PER_TASK",
    "E4Result",
    "estimate",
    "grids",
    "held_out",
    "largest_task_seed",
    "run",
    "write",
]
