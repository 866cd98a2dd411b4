"""E3's baselines: score against tool-topology distance, through the protocol.

The protocol (:mod:`stategym.topology.generalisation`) builds the splits once from the training
topology and plays each agent on every cell; seed ``s`` is an independent block of
evaluation seeds ``EVAL_SEED + s*episodes ..``. Per agent: goal rate and R in each distance
band (paired bootstrap over seed blocks and episodes), the least-squares slope of R against
the cell's distance (the same bootstrap), and the collapse index and template attraction of
the protocol's report (computed per seed block; their interval is over seed blocks only),
and the per-dimension gaps (in-distribution minus each band, from the same reports, over seed
blocks). This module plays the zero-shot arm (scripted agents) and holds the summaries and
files every arm shares; :mod:`stategym.experiments.e3_finetune` adds the n-episode
fine-tuning arm (the tiny model after SFT on n expert episodes), summarised the same way.
The k-shot arm plays each LLM agent of ``config.llm_agents`` (``openai:MODEL``, ``hf:PATH``)
with ``k`` expert demonstrations of the training topology in context for every ``k`` of
``config.shots``, one row per agent and ``k`` (``stategym experiment e3 --llm-agent SPEC``);
scripted agents have no in-context learning, so without an LLM agent it is not run
(:data:`K_SHOT`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
from numpy.typing import NDArray

from stategym.experiments.configs import E3Config
from stategym.experiments.intervals import interval, replicate_weights
from stategym.experiments.output import (
    PLOTS,
    config_json,
    estimate_json,
    write_run,
)
from stategym.experiments.plots import band_bars, score_vs_distance
from stategym.kernel.trajectory import task_of
from stategym.metrics import score
from stategym.metrics.aggregate import Estimate, bootstrap
from stategym.metrics.dimensions import LABELS
from stategym.metrics.report import cell
from stategym.tables import Grid, markdown
from stategym.topology.generalisation import EVAL_SEED, ProtocolConfig, run_protocol
from stategym.topology.report import build_report
from stategym.topology.split import Band, Cell, make_splits

MEASURES = ("success", "composite")
GAP_MEASURES = ("success", "composite", *(str(d) for d in LABELS))
"""The measures whose in-distribution-minus-band gap is summarised (R's dimensions by name)."""
K_SHOT = (
    "e3's k-shot arm needs an LLM agent (stategym experiment e3 --llm-agent openai:MODEL "
    "--base-url URL); scripted agents and the tiny fine-tuned policies are played zero-shot"
)
"""The note E3 writes about the arm it leaves out when no LLM agent is given."""


def shot_name(agent: str, k: int) -> str:
    """The k-shot arm's row: ``openai:gpt-x 3-shot``."""
    return f"{agent} {k}-shot"


@dataclass(frozen=True, slots=True)
class AgentResult:
    """One agent's E3 numbers.

    Attributes:
        bands: ``band -> measure -> estimate``.
        slope: slope of R against distance, and its interval.
        collapse: the protocol's collapse index, mean over seed blocks and interval.
        attraction: template attraction over the unseen cells, likewise.
        gaps: ``band -> measure -> estimate``: in-distribution mean minus the band's, mean
            over seed blocks and its interval (over seed blocks).
        values: ``(seeds, episodes, MEASURES)``: every episode's numbers, cells in order.
        reports: the protocol's report of each seed block.
    """

    bands: dict[str, dict[str, Estimate]]
    slope: Estimate
    collapse: Estimate
    attraction: Estimate
    gaps: dict[str, dict[str, Estimate]]
    values: NDArray
    reports: tuple[dict[str, Any], ...]


@dataclass(frozen=True, slots=True)
class E3Result:
    """What E3 measured: the configuration, the seed blocks, the cells, each zero-shot
    agent and each fine-tuned arm (``sft-nN``; empty when not run)."""

    config: E3Config
    seeds: tuple[int, ...]
    cells: tuple[Cell, ...]
    agents: dict[str, AgentResult]
    finetuned: dict[str, AgentResult] = field(default_factory=dict)

    def arms(self) -> dict[str, AgentResult]:
        """Every row of the tables: the zero-shot agents, then the fine-tuned arms."""
        return {**self.agents, **self.finetuned}


def first_seed(config: E3Config, block: int) -> int:
    """The first evaluation seed of a seed block."""
    return EVAL_SEED + block * config.episodes


def evaluation_seeds(config: E3Config, block: int) -> range:
    """The evaluation seeds of a seed block: the protocol plays ``episodes`` seeds from
    :func:`first_seed` on every cell (``ProtocolConfig.seed``)."""
    start = first_seed(config, block)
    return range(start, start + config.episodes)


def play(
    config: E3Config, agent: str, cells: Sequence[Cell], seeds: Sequence[int], shots: int = 0
) -> Any:
    """``(values (seeds, cells*episodes, MEASURES), reports)`` of one agent, with ``shots``
    expert demonstrations in context (an LLM agent only; its ``config.llm_options``)."""
    values, reports = [], []
    order = {(c.domain, str(c.split)): i for i, c in enumerate(cells)}
    for block in seeds:
        protocol = ProtocolConfig(
            agent=agent,
            train=config.train,
            episodes=config.episodes,
            seed=first_seed(config, block),
            probes=config.probes,
            compositions=config.compositions,
            shots=(shots,),
            options=dict(config.llm_options) if agent in config.llm_agents else {},
        )
        run = run_protocol(protocol, cells)
        reports.append(build_report(run))
        played = [t for t in run.trajectories if t.run.role == "agent"]
        played.sort(key=lambda t: (order[(str(t.meta["cell"]), str(t.meta["split"]))], t.seed))
        cards = [score(t, task_of(t)) for t in played]
        values.append([[float(c.outcome.goal_reached), c.composite] for c in cards])
    return np.asarray(values, dtype=np.float64), tuple(reports)


def _over_seeds(reports: Sequence[dict[str, Any]], pick: Any, resamples: int) -> Estimate:
    found = [v for v in (pick(r) for r in reports) if v is not None]
    return bootstrap(found, resamples=resamples, seed=0)


def _attraction(report: dict[str, Any], shot: str = "0") -> float | None:
    bands = report["bands"].get(shot, {})
    shares = [b["attraction"] for b in bands.values() if "attraction" in b]
    return float(np.mean(shares)) if shares else None


def _gap(report: dict[str, Any], band: str, measure: str, shot: str = "0") -> float | None:
    value = report["gaps"].get(shot, {}).get(f"band:{band}", {}).get(measure)
    return None if value is None else float(value)


def _gaps(
    reports: Sequence[dict[str, Any]], resamples: int, shot: str = "0"
) -> dict[str, dict[str, Estimate]]:
    out: dict[str, dict[str, Estimate]] = {}
    # the same band is in distribution: its gap is not a generalisation gap
    for band in (str(b) for b in Band if b is not Band.SAME):
        per = {}
        for measure in GAP_MEASURES:
            found = [v for v in (_gap(r, band, measure, shot) for r in reports) if v is not None]
            if found:
                per[measure] = bootstrap(found, resamples=resamples, seed=0)
        if per:
            out[band] = per
    return out


def summarise(
    config: E3Config,
    cells: Sequence[Cell],
    values: NDArray,
    reports: tuple[dict[str, Any], ...],
    shots: int = 0,
) -> AgentResult:
    """The bands, slope, collapse and attraction of one agent's episodes (played with
    ``shots`` demonstrations: the reports keep each ``k`` apart)."""
    shot = str(shots)
    seeds, episodes, _ = values.shape
    weights = replicate_weights(seeds, episodes, config.resamples)
    full = np.ones((1, seeds, episodes))
    all_weights = np.concatenate([full, weights])  # replicate 0: the full data
    bands = np.repeat([str(c.placement.band) for c in cells], config.episodes)
    distance = np.repeat([c.placement.distance for c in cells], config.episodes)
    by_band: dict[str, dict[str, Estimate]] = {}
    for band in (str(b) for b in Band):
        mask = (bands == band).astype(np.float64)
        if not mask.any():
            continue
        w = all_weights * mask
        # a replicate that drew no episode of this band has no mean: NaN, left out of the
        # percentiles by ``interval`` (possible only when a band holds few episodes)
        with np.errstate(invalid="ignore", divide="ignore"):
            means = np.einsum("sem,rse->mr", values, w) / w.sum(axis=(1, 2))
        by_band[band] = {m: interval(means[i, 0], means[i, 1:]) for i, m in enumerate(MEASURES)}
    x = np.broadcast_to(distance, (seeds, episodes))
    y = values[:, :, MEASURES.index("composite")]
    slopes = np.array([_weighted_slope(x, y, w) for w in all_weights])
    return AgentResult(
        by_band,
        interval(slopes[0], slopes[1:]),
        _over_seeds(reports, lambda r: r["collapse"]["agent"][shot]["index"], config.resamples),
        _over_seeds(reports, lambda r: _attraction(r, shot), config.resamples),
        _gaps(reports, config.resamples, shot),
        values,
        reports,
    )


def _weighted_slope(x: NDArray, y: NDArray, w: NDArray) -> float:
    mx, my = (w * x).sum() / w.sum(), (w * y).sum() / w.sum()
    sxx = (w * (x - mx) ** 2).sum()
    return float((w * (x - mx) * (y - my)).sum() / sxx) if sxx > 0 else float("nan")


def keep_per_band(cells: Sequence[Cell], per_band: int) -> list[Cell]:
    """The first ``per_band`` cells of each distance band, in order (0: every cell)."""
    if not per_band:
        return list(cells)
    kept: dict[str, int] = {}
    out = []
    for c in cells:
        band = str(c.placement.band)
        if kept.get(band, 0) < per_band:
            kept[band] = kept.get(band, 0) + 1
            out.append(c)
    return out


def run(config: E3Config, seeds: Sequence[int]) -> E3Result:
    """Build the splits once, play every agent on every seed block, summarise."""
    default = ProtocolConfig(agent="expert", train=config.train)
    every = make_splits(config.train, default.knobs, config.compositions, default.budget)
    cells = tuple(keep_per_band(every, config.per_band))
    agents = {}
    for agent in config.agents:
        values, reports = play(config, agent, cells, seeds)
        agents[agent] = summarise(config, cells, values, reports)
    for agent in config.llm_agents:
        for k in config.shots:
            values, reports = play(config, agent, cells, seeds, shots=k)
            agents[shot_name(agent, k)] = summarise(config, cells, values, reports, shots=k)
    return E3Result(config, tuple(seeds), cells, agents)


def grids(result: E3Result) -> list[Grid]:
    """Two tables: each arm's bands, slope, collapse index and attraction; each arm's
    per-dimension gaps by band."""
    arms = result.arms()
    bands = [str(b) for b in Band if any(str(b) in a.bands for a in arms.values())]
    headers = (
        "agent",
        *(f"{b}: goal / R" for b in bands),
        "slope of R on distance",
        "collapse index",
        "attraction",
    )
    rows = []
    for agent, mine in arms.items():
        per_band = [
            " / ".join(cell(mine.bands[b][m]) for m in MEASURES) if b in mine.bands else "-"
            for b in bands
        ]
        rows.append(
            (agent, *per_band, cell(mine.slope), cell(mine.collapse), cell(mine.attraction))
        )
    caption = (
        "sft-nN: the tiny model after SFT on N expert episodes of the training topology. "
        "Bands and slope: paired bootstrap over seed blocks and episodes; collapse index and "
        "attraction: bootstrap over seed blocks."
        + ("" if result.config.llm_agents else f" {K_SHOT}.")
    )
    title = "E3: score against topology distance (zero-shot agents, fine-tuned policies)"
    return [Grid(title, headers, tuple(rows), caption=caption), _gap_grid(result)]


def _gap_grid(result: E3Result) -> Grid:
    labels = {str(d): label for d, label in LABELS.items()}
    headers = ("agent", "band", *(labels.get(m, m) for m in GAP_MEASURES))
    rows = tuple(
        (agent, band, *(cell(per[m]) if m in per else "-" for m in GAP_MEASURES))
        for agent, mine in result.arms().items()
        for band, per in mine.gaps.items()
    )
    caption = (
        "in-distribution (instances) mean minus the band's mean, per measure (positive: worse "
        "away from training); mean over seed blocks, bootstrap over seed blocks"
    )
    return Grid("E3: per-dimension gaps by distance band", headers, rows, caption=caption)


def _arm_json(r: AgentResult) -> dict[str, Any]:
    def per(table: dict[str, dict[str, Estimate]]) -> dict[str, Any]:
        return {b: {m: estimate_json(e) for m, e in ms.items()} for b, ms in table.items()}

    return {
        "bands": per(r.bands),
        "slope": estimate_json(r.slope),
        "collapse": estimate_json(r.collapse),
        "attraction": estimate_json(r.attraction),
        "gaps": per(r.gaps),
        "reports": list(r.reports),
    }


def write(result: E3Result, out: Path, cpu_seconds: float) -> list[Path]:
    """Write the run directory (see :mod:`stategym.experiments`); the files written.

    ``agents`` (in ``results.json`` and ``raw.json``) holds every arm, zero-shot agents
    first; ``finetuned`` names the fine-tuned ones.
    """
    out.mkdir(parents=True, exist_ok=True)
    arms = result.arms()
    results = {
        "experiment": "e3",
        "config": config_json(result.config),
        "seeds": list(result.seeds),
        "first_seeds": {str(s): first_seed(result.config, s) for s in result.seeds},
        "cpu_seconds": cpu_seconds,
        "not_run": [] if result.config.llm_agents else [K_SHOT],
        "cells": [c.to_dict() for c in result.cells],
        "finetuned": list(result.finetuned),
        "agents": {agent: _arm_json(r) for agent, r in arms.items()},
    }
    raw = {
        "shape": ["seeds", "episodes (cells in order, then seed)", "measures"],
        "measures": list(MEASURES),
        "agents": {agent: r.values for agent, r in arms.items()},
    }
    table = markdown(grids(result))
    return write_run(out, results, raw, table, lambda: _plots(result, out / PLOTS))


def _plots(result: E3Result, folder: Path) -> list[Path]:
    episodes = result.config.episodes
    arms = result.arms()
    series = {}
    for agent, r in arms.items():
        per_cell = r.values[:, :, MEASURES.index("composite")].reshape(
            len(result.seeds), len(result.cells), episodes
        )
        means = per_cell.mean(axis=(0, 2))
        series[agent] = [
            (c.placement.distance, float(m)) for c, m in zip(result.cells, means, strict=True)
        ]
    title = f"E3 ({result.config.budget})"
    bands = {agent: {b: e["composite"] for b, e in r.bands.items()} for agent, r in arms.items()}
    return [
        *score_vs_distance(series, folder / "r_vs_distance", title),
        *band_bars(bands, folder / "bands", title, "R"),
    ]
