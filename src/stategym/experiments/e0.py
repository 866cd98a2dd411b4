"""E0: final-answer success and decision quality disagree.

Every scripted agent (baselines, pathological agents, adversaries) plays every domain on the
same tasks. Seed ``s`` is an independent block of task seeds ``s*N .. s*N+N-1`` under the
mixed knob schedule (every single knob off, all off, all on, cycling by task seed). Per
(domain, agent): goal rate, R, each declared dimension's Q_d, the harmful-commit rate and the
lucky-success rate (successes with a process violation / successes, as
:func:`stategym.metrics.litmus.litmus` defines it). Across agents: Spearman's rank
correlation between goal rate and R, per domain and pooled. Pooled numbers average each
agent's per-domain numbers over the domains (the lucky-success rate too: a mean of the
domains' rates, not one ratio of pooled counts), replicate by replicate. Every interval is
a paired bootstrap over seed blocks and tasks (:mod:`stategym.experiments.intervals`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from numpy.typing import NDArray

from stategym.experiments.configs import E0Config
from stategym.experiments.intervals import (
    Correlation,
    interval,
    per_success,
    rank_correlation,
    replicate_weights,
    seed_block,
    weighted_means,
)
from stategym.experiments.output import PLOTS, config_json, estimate_json, write_run
from stategym.experiments.plots import dimension_bars, goal_vs_quality
from stategym.metrics import score
from stategym.metrics.aggregate import Estimate
from stategym.metrics.dimensions import DECLARED
from stategym.metrics.report import cell
from stategym.metrics.score import Scorecard
from stategym.metrics.taskset import knob_schedule
from stategym.rollout import Agents, episode_specs, requested, stream
from stategym.tables import Grid, markdown

DIMENSIONS: tuple[str, ...] = tuple(map(str, DECLARED))
PER_TASK: tuple[str, ...] = ("success", "composite", *DIMENSIONS, "harmful", "lucky")
"""The per-task numbers: ``lucky`` is 1 for a success with a process violation."""
COLUMNS: tuple[str, ...] = ("success", "composite", *DIMENSIONS, "harmful", "lucky_rate")
"""What is estimated per (domain, agent): ``lucky_rate`` is lucky / successes."""
POOLED = "pooled"


@dataclass(frozen=True, slots=True)
class E0Result:
    """What E0 measured.

    Attributes:
        config: the configuration.
        seeds: the seed blocks.
        domains: domains, in order.
        agents: agents, in order.
        estimates: ``(domain or "pooled", agent) -> column -> estimate``.
        correlations: ``domain or "pooled" -> rank correlation of goal rate and R``.
        raw: ``domain -> array (agents, seeds, tasks, PER_TASK)``, the per-task numbers.
    """

    config: E0Config
    seeds: tuple[int, ...]
    domains: tuple[str, ...]
    agents: tuple[str, ...]
    estimates: dict[tuple[str, str], dict[str, Estimate]]
    correlations: dict[str, Correlation]
    raw: dict[str, NDArray]


def task_seeds(block: int, tasks: int) -> range:
    """The task seeds of seed block ``block``."""
    return seed_block(block, tasks)


def largest_task_seed(config: E0Config, seed: int) -> int:
    """The largest task seed ``--seeds`` value ``seed`` makes E0 play (the command refuses a
    seed whose block passes the last task seed before anything plays)."""
    return task_seeds(seed, config.tasks)[-1]


def per_task(card: Scorecard) -> list[float]:
    """The :data:`PER_TASK` numbers of one scorecard."""
    row = card.row()
    lucky = card.outcome.goal_reached and card.process_violation
    dimensions = [row[d] for d in DIMENSIONS]
    return [row["success"], row["composite"], *dimensions, row["harmful"], float(lucky)]


def play(config: E0Config, domain: str, seeds: Sequence[int]) -> NDArray:
    """Play every agent on the domain's tasks: ``(agents, seeds, tasks, PER_TASK)``."""
    schedule = knob_schedule(config.knobs)
    agents = config.agent_names()
    specs = [
        spec
        for agent in agents
        for block in seeds
        for spec in episode_specs(
            domain,
            agent,
            task_seeds(block, config.tasks),
            {s: schedule(s) for s in task_seeds(block, config.tasks)},
            options=dict(config.llm_options) if agent in config.llm_agents else None,
        )
    ]
    played = [trajectory for _, trajectory in stream(specs, Agents())]
    # requested() puts them in spec order, whatever order the engine finished them in
    rows = [per_task(score(trajectory)) for trajectory in requested(specs, played)]
    return np.asarray(rows, dtype=np.float64).reshape(
        len(agents), len(seeds), config.tasks, len(PER_TASK)
    )


def replicates(values: NDArray, weights: NDArray) -> NDArray:
    """``(agents, COLUMNS, 1 + resamples)``: column 0 on the full data, then each replicate."""
    by_column = np.moveaxis(values, -1, 1)  # (agents, PER_TASK, seeds, tasks)
    full = by_column.mean(axis=(2, 3))[:, :, None]
    means = np.concatenate([full, weighted_means(by_column, weights)], axis=2)
    success, lucky = means[:, PER_TASK.index("success")], means[:, PER_TASK.index("lucky")]
    means[:, PER_TASK.index("lucky")] = per_success(lucky, success)
    return means


def estimates_of(means: NDArray, agents: Sequence[str]) -> dict[str, dict[str, Estimate]]:
    """``agent -> column -> estimate`` from :func:`replicates`' array."""
    return {
        agent: {c: interval(means[a, i, 0], means[a, i, 1:]) for i, c in enumerate(COLUMNS)}
        for a, agent in enumerate(agents)
    }


def run(config: E0Config, seeds: Sequence[int]) -> E0Result:
    """Play and estimate everything E0 reports."""
    domains, agents = config.domain_names(), config.agent_names()
    raw: dict[str, NDArray] = {}
    estimates: dict[tuple[str, str], dict[str, Estimate]] = {}
    correlations: dict[str, Correlation] = {}
    pooled = []
    for index, domain in enumerate(domains):
        raw[domain] = play(config, domain, seeds)
        weights = replicate_weights(len(seeds), config.tasks, config.resamples, seed=index)
        means = replicates(raw[domain], weights)
        pooled.append(means)
        for agent, columns in estimates_of(means, agents).items():
            estimates[(domain, agent)] = columns
        correlations[domain] = _goal_vs_r(means)
    mean_over_domains = np.mean(pooled, axis=0)
    for agent, columns in estimates_of(mean_over_domains, agents).items():
        estimates[(POOLED, agent)] = columns
    correlations[POOLED] = _goal_vs_r(mean_over_domains)
    return E0Result(config, tuple(seeds), domains, agents, estimates, correlations, raw)


def _goal_vs_r(means: NDArray) -> Correlation:
    return rank_correlation(
        means[:, COLUMNS.index("success")], means[:, COLUMNS.index("composite")]
    )


HEADERS: dict[str, str] = {
    "success": "goal rate",
    "composite": "R",
    **{d: d for d in DIMENSIONS},
    "harmful": "harm rate",
    "lucky_rate": "lucky-success rate",
}


def grids(result: E0Result) -> list[Grid]:
    """The tables: the rank correlations, then one table per domain and the pooled one."""
    correlations = Grid(
        "E0: Spearman rank correlation of goal rate and R across agents",
        ("domain", "agents", "rho [95% interval]"),
        tuple((name, str(c.agents), cell(c.estimate)) for name, c in result.correlations.items()),
        caption="interval: paired bootstrap over seed blocks and tasks; '-' where undefined",
    )
    tables = [correlations]
    for domain in (POOLED, *result.domains):
        tables.append(
            Grid(
                f"E0: {domain}",
                ("agent", *HEADERS.values()),
                tuple(
                    (agent, *(cell(result.estimates[(domain, agent)][c]) for c in HEADERS))
                    for agent in result.agents
                ),
            )
        )
    return tables


def write(result: E0Result, out: Path, cpu_seconds: float) -> list[Path]:
    """Write the run directory (see :mod:`stategym.experiments`); the files written."""
    out.mkdir(parents=True, exist_ok=True)
    config = result.config
    results = {
        "experiment": "e0",
        "config": config_json(config),
        "seeds": list(result.seeds),
        "seed_blocks": {str(s): _block(s, config.tasks) for s in result.seeds},
        "cpu_seconds": cpu_seconds,
        "domains": list(result.domains),
        "agents": list(result.agents),
        "correlations": {
            name: {"spearman": estimate_json(c.estimate), "agents": c.agents}
            for name, c in result.correlations.items()
        },
        "estimates": {
            domain: {
                agent: {c: estimate_json(e) for c, e in result.estimates[(domain, agent)].items()}
                for agent in result.agents
            }
            for domain in (POOLED, *result.domains)
        },
    }
    raw = {
        "shape": ["agents", "seeds", "tasks", "columns"],
        "columns": list(PER_TASK),
        "agents": list(result.agents),
        "seeds": list(result.seeds),
        "domains": {domain: values for domain, values in result.raw.items()},
    }
    table = markdown(grids(result))
    return write_run(out, results, raw, table, lambda: _plots(result, out / PLOTS))


def _block(seed: int, tasks: int) -> list[int]:
    """First and last task seed of a seed block."""
    seeds = task_seeds(seed, tasks)
    return [seeds[0], seeds[-1]]


def _plots(result: E0Result, folder: Path) -> list[Path]:
    panels = {
        domain: {
            agent: (
                result.estimates[(domain, agent)]["success"],
                result.estimates[(domain, agent)]["composite"],
            )
            for agent in result.agents
        }
        for domain in (*result.domains, POOLED)
    }
    measures = ("success", "composite", *DIMENSIONS, "lucky_rate")
    bars = {
        HEADERS[m]: {agent: result.estimates[(POOLED, agent)][m] for agent in result.agents}
        for m in measures
    }
    seeds = ",".join(map(str, result.seeds))
    return [
        *goal_vs_quality(
            panels, folder / "goal_vs_r", f"E0 ({result.config.budget}, seeds {seeds})"
        ),
        *dimension_bars(
            bars, folder / "dimensions", f"E0 pooled over domains ({result.config.budget})"
        ),
    ]
