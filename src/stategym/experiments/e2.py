"""E2: SFT on privileged demonstrations never learns to ask; RL does.

Three arms per training seed, on the ``ask-or-act`` family (:mod:`stategym.train.tasks`:
``synth:askgate1``, the compact rendering with handles; on even task seeds the budget is
hidden and the right first move is to ask, on odd seeds it is stated):

- ``oracle-sft``: the tiny model trained by SFT on the privileged ``oracle`` (it knows the
  hidden budget and never asks);
- ``expert-sft``: the same on the ``expert`` (asks exactly the must-ask slots);
- ``oracle-sft+grpo``: ``oracle-sft``'s policy, then GRPO on the family with the
  exploration guard (a scripted teacher playing a share of each group).

Each final policy plays greedily on held-out tasks of two sets: ``ask-or-act`` at evaluation
seeds (the training state distribution, new tasks) and ``ask-or-act-heldout``
(``synth:askgate2``: a second slot, the category, is missing on must-ask tasks, a state no
demonstration shows). Per (arm, set): the ask rate on must-ask slots (asked before use /
must-ask slots, pooled), goal rate, R and harm rate on the must-ask tasks, and needless
questions per task where nothing was hidden. Each is a ratio of sums over the episodes,
with a paired bootstrap interval over seed blocks and tasks. The GRPO arm's per-iteration
lines (its sampled episodes, teacher's left out) give the curves.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
from numpy.typing import NDArray

from stategym.experiments import arms
from stategym.experiments.configs import E2Config
from stategym.experiments.intervals import ratio, replicate_weights, seed_block
from stategym.experiments.output import (
    PLOTS,
    claim,
    config_json,
    estimate_json,
    write_run,
)
from stategym.experiments.plots import band_bars, training_curves
from stategym.metrics.aggregate import Estimate
from stategym.metrics.report import cell
from stategym.tables import Grid, markdown
from stategym.train.tasks import task_family

ARMS: tuple[str, ...] = ("oracle-sft", "expert-sft", "oracle-sft+grpo")
SETS: tuple[str, ...] = ("ask-or-act", "ask-or-act-heldout")
"""The held-out task sets (task families)."""
PER_TASK: tuple[str, ...] = ("must_ask", "asked", "needless", "success", "composite", "harmful")
"""Per-episode numbers: must-ask slots, those asked before use, needless questions, goal,
R, a harmful commit."""
COLUMNS: tuple[str, ...] = ("ask_rate", "goal", "composite", "harm_rate", "needless")
"""What is estimated per (arm, set) (module docstring)."""
CURVES: tuple[str, ...] = ("ask_rate", "composite", "goal_rate", "harm_rate")
"""The GRPO arm's per-iteration measures that are plotted."""


@dataclass(frozen=True, slots=True)
class E2Result:
    """What E2 measured.

    Attributes:
        config: the configuration.
        seeds: the training seeds (one seed block of held-out tasks each).
        estimates: ``(arm, set) -> column -> estimate``.
        values: ``(ARMS, SETS, seeds, episodes, PER_TASK)``: every held-out episode.
        curves: ``seed -> the GRPO arm's per-iteration lines``.
    """

    config: E2Config
    seeds: tuple[int, ...]
    estimates: dict[tuple[str, str], dict[str, Estimate]]
    values: NDArray
    curves: dict[int, list[dict[str, Any]]]


def eval_seeds(config: E2Config, block: int) -> range:
    """The held-out task seeds of seed block ``block``."""
    return seed_block(block, config.episodes)


def largest_task_seed(config: E2Config, seed: int) -> int:
    """The largest task seed training seed ``seed`` makes E2 play: held-out (both sets
    share the seeds), SFT or GRPO."""
    return arms.largest_trained_seed(config.recipe, seed, eval_seeds(config, seed))


def train_arms(config: E2Config, seed: int, root: Path) -> dict[str, Path]:
    """The three arms' run directories for training seed ``seed`` (trained, or resumed)."""
    where = {"family": "ask-or-act"}
    recipe = config.recipe
    oracle = arms.sft(recipe, root / "oracle-sft", seed, "oracle", where)
    expert = arms.sft(recipe, root / "expert-sft", seed, "expert", where)
    tuned = arms.grpo(
        recipe, root / "oracle-sft+grpo", seed, oracle, config.credit, where,
        guard=config.guard, fraction=config.fraction,
    )  # fmt: skip
    return dict(zip(ARMS, (oracle, expert, tuned), strict=True))


def per_task(played: arms.Played) -> list[float]:
    """The :data:`PER_TASK` numbers of one held-out episode."""
    card = played.card
    clar = card.clarification
    return [
        float(clar.tp + clar.fn),
        float(clar.tp),
        float(clar.fp),
        float(card.outcome.goal_reached),
        card.composite,
        float(card.row()["harmful"]),
    ]


def evaluate(config: E2Config, runs: dict[str, Path], seed: int, block: int) -> NDArray:
    """``(ARMS, SETS, episodes, PER_TASK)``: every arm on both held-out sets."""
    out = []
    for arm in ARMS:
        tasks = [
            (family.domain, s, family.knobs(s))
            for family in map(task_family, SETS)
            for s in eval_seeds(config, block)
        ]
        rows = [per_task(p) for p in arms.episodes(runs[arm], tasks, config.recipe, seed)]
        out.append(np.asarray(rows).reshape(len(SETS), config.episodes, len(PER_TASK)))
    return np.asarray(out, dtype=np.float64)


def estimate(values: NDArray, weights: NDArray) -> dict[str, Estimate]:
    """The :data:`COLUMNS` of one (arm, set): ``values`` ``(seeds, episodes, PER_TASK)``."""

    def col(name: str) -> NDArray:
        return values[:, :, PER_TASK.index(name)]

    must = (col("must_ask") > 0).astype(np.float64)
    stated = 1.0 - must
    return {
        "ask_rate": ratio(col("asked"), col("must_ask"), weights),
        "goal": ratio(col("success") * must, must, weights),
        "composite": ratio(col("composite") * must, must, weights),
        "harm_rate": ratio(col("harmful") * must, must, weights),
        "needless": ratio(col("needless") * stated, stated, weights),
    }


def run(config: E2Config, seeds: Sequence[int], out: Path) -> E2Result:
    """Train every arm for every seed (run directories under ``out/runs``), play, estimate.

    Raises:
        UsageError: ``out`` holds another experiment or configuration
            (:func:`~stategym.experiments.output.claim`), before anything trains.
    """
    claim(out, "e2", config)
    blocks, curves = [], {}
    for seed in seeds:  # seed s trains with seed s and is scored on seed block s
        runs = train_arms(config, seed, out / "runs" / f"seed-{seed}")
        blocks.append(evaluate(config, runs, seed, seed))
        curves[seed] = arms.curve(runs["oracle-sft+grpo"])
    values = np.stack(blocks, axis=2)  # (arms, sets, seeds, episodes, PER_TASK)
    weights = replicate_weights(len(seeds), config.episodes, config.resamples)
    estimates = {
        (arm, name): estimate(values[a, s], weights)
        for a, arm in enumerate(ARMS)
        for s, name in enumerate(SETS)
    }
    return E2Result(config, tuple(seeds), estimates, values, curves)


HEADERS: dict[str, str] = {
    "ask_rate": "ask rate (must-ask slots)",
    "goal": "goal (must-ask tasks)",
    "composite": "R (must-ask tasks)",
    "harm_rate": "harm rate (must-ask tasks)",
    "needless": "needless questions per stated task",
}


def grids(result: E2Result) -> list[Grid]:
    """One table per held-out set, and the GRPO arm's curve (mean over seeds)."""
    tables = [
        Grid(
            f"E2: {name}",
            ("arm", *HEADERS.values()),
            tuple(
                (arm, *(cell(result.estimates[(arm, name)][c]) for c in HEADERS)) for arm in ARMS
            ),
            caption="greedy policies; paired bootstrap over seed blocks and tasks",
        )
        for name in SETS
    ]
    means = _curve_means(result)
    rows = tuple(
        (str(i + 1), *(_number(means[m][i]) for m in CURVES)) for i in range(len(means[CURVES[0]]))
    )
    tables.append(
        Grid(
            "E2: oracle-sft+grpo over iterations (sampled episodes, mean over seeds)",
            ("iteration", *CURVES),
            rows,
            caption="the guard teacher's episodes are left out; '-' where undefined",
        )
    )
    return tables


def _number(value: float) -> str:
    """A curve's mean as the tables print numbers: two decimals, ``-`` where undefined
    (no seed had a must-ask slot that iteration), as in every other table."""
    return f"{value:.2f}" if np.isfinite(value) else "-"


def _curve_values(result: E2Result, measure: str) -> list[list[float]]:
    return [
        [float("nan") if m.get(measure) is None else float(m[measure]) for m in lines]
        for lines in result.curves.values()
    ]


def _curve_means(result: E2Result) -> dict[str, list[float]]:
    return {m: finite_means(_curve_values(result, m)) for m in CURVES}


def finite_means(rows: Sequence[Sequence[float]]) -> list[float]:
    """Column means over the finite values (NaN where a column has none: an iteration in
    which no sampled episode had a must-ask slot has no ask rate)."""
    values = np.asarray(rows, dtype=np.float64).reshape(len(rows), -1)
    seen = np.isfinite(values)
    totals = np.where(seen, values, 0.0).sum(axis=0)
    counts = seen.sum(axis=0)
    return [float(t / c) if c else float("nan") for t, c in zip(totals, counts, strict=True)]


def write(result: E2Result, out: Path, cpu_seconds: float) -> list[Path]:
    """Write the run directory (see :mod:`stategym.experiments`); the files written."""
    out.mkdir(parents=True, exist_ok=True)
    results = {
        "experiment": "e2",
        "config": config_json(result.config),
        "seeds": list(result.seeds),
        "eval_seeds": {str(s): _ends(eval_seeds(result.config, s)) for s in result.seeds},
        "cpu_seconds": cpu_seconds,
        "arms": list(ARMS),
        "sets": list(SETS),
        "estimates": {
            arm: {
                name: {c: estimate_json(e) for c, e in result.estimates[(arm, name)].items()}
                for name in SETS
            }
            for arm in ARMS
        },
        "curves": {str(s): lines for s, lines in result.curves.items()},
    }
    raw = {
        "shape": ["arms", "sets", "seeds", "episodes", "columns"],
        "columns": list(PER_TASK),
        "values": result.values,
    }
    table = markdown(grids(result))
    return write_run(out, results, raw, table, lambda: _plots(result, out / PLOTS))


def _ends(seeds: range) -> list[int]:
    return [seeds[0], seeds[-1]]


def _plots(result: E2Result, folder: Path) -> list[Path]:
    title = f"E2 ({result.config.budget}, seeds {','.join(map(str, result.seeds))})"
    written = []
    for column, name in (("ask_rate", "ask_rate"), ("composite", "r_must_ask")):
        bars = {arm: {s: result.estimates[(arm, s)][column] for s in SETS} for arm in ARMS}
        written += band_bars(bars, folder / name, title, HEADERS[column], xlabel="held-out set")
    panels = {m: {"oracle-sft+grpo": _curve_values(result, m)} for m in CURVES}
    written += training_curves(panels, folder / "grpo_curves", title)
    return written
