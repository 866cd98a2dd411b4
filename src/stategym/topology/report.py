"""The protocol's report, computed from a run's trajectories and cells alone.

Every number is defined in ``docs/protocol.md``. In short, per cell (one evaluated domain):
success, composite R and each decision-quality dimension (means over episodes), the
serialisation rate (``1 - eta``: independent calls split across rounds), the unsafe-parallel
rate (share of episodes with a call issued before a value it depends on was observed), and
template attraction (share of episodes whose executed graph is closer to an expert plan on a
training topology than to the expert's plan on the task itself). Across cells: score versus
distance (its ties and constancy decided with float noise removed, :data:`TIE`),
per-dimension gaps (in-distribution minus each split), the collapse index (how
often two tasks with different gold graphs get the same executed graph), and the probes.
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass
from statistics import mean
from typing import Any

from stategym.kernel.trajectory import Trajectory, task_of
from stategym.metrics.dimensions import LABELS
from stategym.metrics.score import score
from stategym.tables import Grid, signed
from stategym.topology.distance import wl_distance, wl_hash
from stategym.topology.executed import executed_topology
from stategym.topology.generalisation import ProtocolRun
from stategym.topology.graph import Topology, task_topology
from stategym.topology.split import Band, Cell, Split

REPORT_VERSION = 1
SHORT = {
    "success": "succ",
    "composite": "R",
    **{str(d): label for d, label in LABELS.items()},
    "serialisation": "serial",
    "unsafe_parallel": "unsafe",
    "attraction": "attract",
}
"""Each measure and its column header; the dimensions come from their declarations."""
MEASURES = tuple(SHORT)


@dataclass(frozen=True, slots=True)
class Episode:
    """One agent episode, reduced to what the report aggregates."""

    cell: str
    split: str
    shots: int
    seed: int
    values: dict[str, float]
    executed: Topology
    gold_hash: str


def _episode(
    trajectory: Trajectory, plans: Sequence[Topology], reference: Topology | None
) -> Episode:
    task = task_of(trajectory)
    card = score(trajectory, task)
    executed = executed_topology(trajectory)
    values = {"success": float(card.outcome.goal_reached), "composite": card.composite}
    values.update({str(d): q for d, q in card.qualities().items()})
    par = card.parallelism
    values["serialisation"] = 1.0 - par.efficiency
    values["unsafe_parallel"] = float(par.early > 0)
    if reference is not None and plans:
        to_plan = min(wl_distance(executed, p) for p in plans)
        values["attraction"] = float(to_plan < wl_distance(executed, reference))
    meta = trajectory.meta
    return Episode(
        str(meta["cell"]),
        str(meta["split"]),
        int(meta.get("shots", 0)),
        trajectory.seed,
        values,
        executed,
        wl_hash(task_topology(task)),
    )


def _means(episodes: Sequence[Episode]) -> dict[str, float]:
    out = {}
    for measure in MEASURES:
        present = [e.values[measure] for e in episodes if measure in e.values]
        if present:
            out[measure] = mean(present)
    return out


def collapse_index(episodes: Sequence[Episode]) -> dict[str, float]:
    """Share of episode pairs with different gold graphs whose executed graphs are identical
    (0: the agent's plan always tracks the tool graph; 1: one template everywhere), and the
    diversity ratio, distinct executed graphs per distinct gold graph."""
    by_exec: dict[str, list[str]] = defaultdict(list)
    gold_counts: dict[str, int] = defaultdict(int)
    for e in episodes:
        by_exec[wl_hash(e.executed)].append(e.gold_hash)
        gold_counts[e.gold_hash] += 1
    n = len(episodes)
    differing = n * (n - 1) / 2 - sum(c * (c - 1) / 2 for c in gold_counts.values())
    same_exec = 0.0
    for golds in by_exec.values():
        counts: dict[str, int] = defaultdict(int)
        for g in golds:
            counts[g] += 1
        m = len(golds)
        same_exec += m * (m - 1) / 2 - sum(c * (c - 1) / 2 for c in counts.values())
    return {
        "index": same_exec / differing if differing else 0.0,
        "diversity": len(by_exec) / max(1, len(gold_counts)),
        "episodes": float(n),
    }


TIE = 1e-9
"""Two distances, or two values of R, closer than this are one value to the fit. A cell's R
is a mean of composites summed in a different order per domain, so an R that is the same
everywhere comes out as 0.05 in one cell and 0.05000000000000001 in the next (audit 13B F1);
ranked or fitted raw, that float noise made up a rank correlation. Differences that mean
something are far larger (d is an edit cost over a graph size, and R moves by an episode's
score over ``--episodes``): the docs' measured fits are the same with and without it."""


def _fit(points: Sequence[tuple[float, float]]) -> dict[str, float | None]:
    """Least-squares slope and Spearman rank correlation of score against distance; ``None``
    (JSON ``null``, printed ``-``) where one is undefined: no slope without two distinct
    distances, no rank correlation where R or the distance is constant (an agent that
    scores 1.0 everywhere is not uncorrelated with distance, it has no ranking to
    correlate). Distinct, constant and tied are decided on the values with float noise
    removed (:func:`_snap`), so an R constant up to noise has slope 0 and no correlation."""
    if len(points) < 2:
        return {"slope": None, "spearman": None, "points": float(len(points))}
    xs, ys = _snap([p[0] for p in points]), _snap([p[1] for p in points])
    mx, my = mean(xs), mean(ys)
    sxx = sum((x - mx) ** 2 for x in xs)
    sxy = sum((x - mx) * (y - my) for x, y in zip(xs, ys, strict=True))
    return {
        "slope": sxy / sxx if sxx else None,
        "spearman": _pearson(_ranks(xs), _ranks(ys)),
        "points": float(len(points)),
    }


def _snap(values: Sequence[float]) -> list[float]:
    """``values`` with float noise removed: in sorted order, every value within :data:`TIE`
    of the first value of its run takes that first value. Values further apart than
    :data:`TIE` are returned unchanged, so a fit of real differences is exactly the raw one.

    Example: ``_snap([0.05000000000000001, 0.05, 0.3]) == [0.05, 0.05, 0.3]``.
    """
    snapped = list(values)
    first: float | None = None
    for i in sorted(range(len(values)), key=lambda i: values[i]):
        if first is None or values[i] - first > TIE:
            first = values[i]
        snapped[i] = first
    return snapped


def _ranks(values: Sequence[float]) -> list[float]:
    """Average ranks (0-based) of ``values``; equal values (after :func:`_snap`) share one."""
    order = sorted(range(len(values)), key=lambda i: values[i])
    ranks = [0.0] * len(values)
    i = 0
    while i < len(order):
        j = i
        while j + 1 < len(order) and values[order[j + 1]] == values[order[i]]:
            j += 1
        for k in range(i, j + 1):
            ranks[order[k]] = (i + j) / 2
        i = j + 1
    return ranks


def _pearson(xs: Sequence[float], ys: Sequence[float]) -> float | None:
    mx, my = mean(xs), mean(ys)
    sx = math.sqrt(sum((x - mx) ** 2 for x in xs))
    sy = math.sqrt(sum((y - my) ** 2 for y in ys))
    if not sx or not sy:
        return None
    return sum((x - mx) * (y - my) for x, y in zip(xs, ys, strict=True)) / (sx * sy)


def _probe_summary(trajectories: Sequence[Trajectory]) -> dict[str, dict[str, float]]:
    pairs: dict[tuple[str, int], dict[str, Trajectory]] = defaultdict(dict)
    for t in trajectories:
        pairs[(str(t.meta["cell"]), int(t.meta["pair"]))][str(t.run.probe)] = t
    out: dict[str, dict[str, list[float]]] = defaultdict(lambda: defaultdict(list))
    for (cell, _), pair in sorted(pairs.items()):
        original, flipped = pair["original"], pair["priorities_reversed"]
        ok = [t.outcome is not None and t.outcome.goal_reached for t in (original, flipped)]
        out[cell]["both"].append(float(all(ok)))
        out[cell]["original"].append(float(ok[0]))
        out[cell]["flipped"].append(float(ok[1]))
        out[cell]["changed"].append(float(_choice(original) != _choice(flipped)))
    return {
        cell: {k: mean(v) for k, v in d.items()} | {"pairs": float(len(d["both"]))}
        for cell, d in out.items()
    }


def _choice(trajectory: Trajectory) -> str | None:
    outcome = trajectory.outcome
    if outcome is None:
        return None
    return ",".join(outcome.committed) if outcome.committed else outcome.answer


def _cell_row(
    cell: Cell, mine: Sequence[Episode], ref: Sequence[Episode], shots: int
) -> dict[str, Any]:
    p = cell.placement
    return {
        "split": str(cell.split),
        "domain": cell.domain,
        "shots": shots,
        "band": str(p.band),
        "distance": p.distance,
        "exact": p.exact,
        "proxy": p.proxy,
        "nearest": p.nearest,
        "episodes": len(mine),
        **_means(mine),
        "expert_composite": mean(e.values["composite"] for e in ref) if ref else None,
    }


def _episodes(run: ProtocolRun) -> tuple[list[Episode], list[Episode], list[Trajectory]]:
    """Agent and reference episodes, and the probe trajectories, of a run."""
    roles: dict[str, list[Trajectory]] = defaultdict(list)
    for t in run.trajectories:
        roles[str(t.run.role)].append(t)
    plans = [executed_topology(t) for t in roles["plan"]]
    ref_graphs = {(str(t.meta["cell"]), t.seed): executed_topology(t) for t in roles["reference"]}
    ref_eps = [_episode(t, (), None) for t in roles["reference"]]
    unseen = {(c.domain, str(c.split)) for c in run.cells if c.placement.band != Band.SAME}
    agent_eps = []
    for t in roles["agent"]:
        key = (str(t.meta["cell"]), str(t.meta["split"]))
        reference = ref_graphs.get((key[0], t.seed))
        agent_eps.append(_episode(t, plans if key in unseen else (), reference))
    return agent_eps, ref_eps, roles["probe"]


def _cell_rows(
    run: ProtocolRun, agent_eps: Sequence[Episode], ref_eps: Sequence[Episode]
) -> list[dict[str, Any]]:
    by_cell: dict[tuple[str, str, int], list[Episode]] = defaultdict(list)
    for e in agent_eps:
        by_cell[(e.cell, e.split, e.shots)].append(e)
    refs: dict[tuple[str, str], list[Episode]] = defaultdict(list)
    for e in ref_eps:
        refs[(e.cell, e.split)].append(e)
    return [
        _cell_row(c, by_cell[(c.domain, str(c.split), k)], refs[(c.domain, str(c.split))], k)
        for k in sorted({e.shots for e in agent_eps})
        for c in run.cells
    ]


def build_report(run: ProtocolRun) -> dict[str, Any]:
    """The protocol report as a JSON-ready dict (see the module docstring)."""
    agent_eps, ref_eps, probe_runs = _episodes(run)
    cells = _cell_rows(run, agent_eps, ref_eps)
    shots = sorted({e.shots for e in agent_eps})
    return {
        "version": REPORT_VERSION,
        "config": run.config.describe(),
        "notes": list(run.notes),
        "cells": cells,
        "placements": [c.to_dict() for c in run.cells],
        "splits": _by(agent_eps, run.cells, "split"),
        "bands": _by(agent_eps, run.cells, "band"),
        "gaps": _gaps(agent_eps, run.cells),
        "score_vs_distance": {
            str(k): _fit(
                [
                    (c["distance"], c["composite"])
                    for c in cells
                    if c["shots"] == k and "composite" in c
                ]
            )
            for k in shots
        },
        "collapse": {
            "agent": {
                str(k): collapse_index([e for e in agent_eps if e.shots == k]) for k in shots
            },
            "expert": collapse_index(ref_eps),
        },
        "probes": _probe_summary(probe_runs),
    }


def _group(e: Episode, cells: Sequence[Cell], key: str) -> str:
    if key == "split":
        return e.split
    placement = next(c.placement for c in cells if c.domain == e.cell and c.split == e.split)
    return str(placement.band)


def _by(episodes: Sequence[Episode], cells: Sequence[Cell], key: str) -> dict[str, Any]:
    groups: dict[str, dict[str, list[Episode]]] = defaultdict(lambda: defaultdict(list))
    for e in episodes:
        groups[str(e.shots)][_group(e, cells, key)].append(e)
    return {
        k: {g: _means(eps) | {"episodes": len(eps)} for g, eps in sorted(v.items())}
        for k, v in groups.items()
    }


def _gaps(episodes: Sequence[Episode], cells: Sequence[Cell]) -> dict[str, Any]:
    """In-distribution mean minus each split's (and each band's) mean, per measure."""
    out: dict[str, Any] = {}
    for k in sorted({e.shots for e in episodes}):
        mine = [e for e in episodes if e.shots == k]
        base = _means([e for e in mine if e.split == Split.INSTANCES])
        table: dict[str, dict[str, float]] = {}
        groups = {
            **_by(mine, cells, "split")[str(k)],
            **{f"band:{b}": v for b, v in _by(mine, cells, "band")[str(k)].items()},
        }
        for group, means in groups.items():
            if group == Split.INSTANCES:
                continue
            table[group] = {m: base[m] - means[m] for m in base if m in means}
        out[str(k)] = table
    return out


CELL_COLUMNS = ("split", "domain", "k", "band", "d", "proxy", *SHORT.values(), "expert R")


PROTOCOL_MD = "protocol.md"
"""The Markdown file of every table ``stategym protocol`` printed, in its output folder."""


def render(report: dict[str, Any]) -> list[Grid]:
    """The tables of one agent's report: the cells, the gaps, and collapse, distance fit
    and probes (print them with :func:`stategym.tables.print_grids`)."""
    return [_cells_table(report), _gaps_table(report), _summary_table(report)]


def _cells_table(report: dict[str, Any]) -> Grid:
    config = report["config"]
    rows = []
    for c in report["cells"]:
        distance = f"{'' if c['exact'] else '~'}{c['distance']:.2f}"
        values = (_f(c.get(m)) for m in (*MEASURES, "expert_composite"))
        rows.append(
            (
                c["split"],
                c["domain"].removeprefix("synth:"),
                str(c["shots"]),
                c["band"],
                distance,
                f"{c['proxy']:.2f}",
                *values,
            )
        )
    return Grid(
        f"Protocol: {config['agent']} trained on {', '.join(config['train'])}",
        CELL_COLUMNS,
        tuple(rows),
        keys=2,
        caption="d: normalised graph edit distance to the nearest training topology "
        "(~: an upper bound); k: demonstrations in context; measures: docs/protocol.md",
    )


def _gaps_table(report: dict[str, Any]) -> Grid:
    rows = [
        (k, group, *(_f(row.get(m), signed=True) for m in MEASURES))
        for k, groups in report["gaps"].items()
        for group, row in groups.items()
    ]
    return Grid(
        "Generalisation gaps (in-distribution minus split)",
        ("k", "split / band", *(SHORT[m] for m in MEASURES)),
        tuple(rows),
        keys=2,
    )


def _summary_table(report: dict[str, Any]) -> Grid:
    rows: list[tuple[str, str]] = []
    collapse = {
        **{f"k={k}": v for k, v in report["collapse"]["agent"].items()},
        "expert": report["collapse"]["expert"],
    }
    for who, value in collapse.items():
        rows.append((f"collapse index ({who})", f"{value['index']:.3f}"))
        rows.append((f"executed graphs per gold graph ({who})", f"{value['diversity']:.2f}"))
    for k, fit in report["score_vs_distance"].items():
        rows.append((f"R vs distance slope (k={k})", signed(fit["slope"])))
        rows.append((f"R vs distance Spearman (k={k})", signed(fit["spearman"])))
    for cell, probe in report["probes"].items():
        rows.append(
            (
                f"probe {cell}: both right / choice changed ({probe['pairs']:.0f})",
                f"{probe['both']:.2f} / {probe['changed']:.2f}",
            )
        )
    # several agents print one after another: name the agent, or a row is easily misread
    title = f"{report['config']['agent']}: collapse, score versus distance, probes"
    return Grid(title, ("measure", "value"), tuple(rows), keys=1)


def compare_table(reports: dict[str, dict[str, Any]]) -> Grid | None:
    """Agents side by side (k = 0): success, composite, serialisation and unsafe-parallel
    rate per split and per band; ``None`` for fewer than two agents."""
    if len(reports) < 2:
        return None
    groups: dict[str, None] = {}
    for report in reports.values():
        for key in ("splits", "bands"):
            for group in report[key].get("0", {}):
                groups[f"{key[:-1]}:{group}"] = None
    rows = []
    for group in groups:
        kind, name = group.split(":", 1)
        row = [group]
        for report in reports.values():
            means = report[f"{kind}s"].get("0", {}).get(name)
            row.append(
                "-"
                if means is None
                else f"{means.get('success', 0):.2f} {means.get('composite', 0):+.2f} "
                f"{means.get('serialisation', 0):.2f} {means.get('unsafe_parallel', 0):.2f}"
            )
        rows.append(tuple(row))
    return Grid(
        "Agents side by side (zero-shot)",
        ("split / band", *reports),
        tuple(rows),
        keys=1,
        caption="each cell: success, composite R, serialisation rate, unsafe-parallel rate",
    )


def _f(value: float | None, signed: bool = False) -> str:
    if value is None:
        return "-"
    return f"{value:+.2f}" if signed else f"{value:.2f}"
