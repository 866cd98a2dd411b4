"""The report's section of an experiment run: its tables, and its plots redrawn from JSON.

The plots are **redrawn** from ``results.json`` and ``raw.json``, never embedded from
``plots/*.svg``. An SVG file in a run directory is whatever is on disk: embedding it safely
would need an allow-list parser of SVG elements, attributes and CSS (matplotlib's SVG
carries a ``<style>`` block, ``xlink:href`` references and ids such as ``patch_1`` that
clash between figures of one page). Redrawing goes through the same path as every other
plot of the page (:mod:`.plots`: text as escaped text, ids prefixed, no date, Okabe-Ito
colours with a marker per series), so an experiment's files get the same guarantees as the
rest; the cost is that the figures are the report's own, not the files' bytes (the files
are listed by name). E0 and E3 have their figures redrawn; any other experiment gets every
estimate of its ``results.json`` as one interval chart.

The tables are parsed back from ``table.md`` (the format :func:`stategym.tables.markdown`
writes) into grids whose every cell is escaped; a block that does not parse is shown as
escaped text. ``table.md`` and ``raw.json`` are the ones ``results.json`` was written with
(the reader checks their digests, :func:`~.runs.read_experiment`), so the tables and the
figures are of one run. An estimate that is undefined (``null``) or too large to place is
not drawn and is marked ``n/a``, never drawn at an invented 0.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

from stategym.tables import Grid

from . import markup
from .plots import (
    MARKERS,
    colour,
    drawable,
    figure_of,
    note_left_out,
    scatter_drawable,
    style,
    to_svg,
)
from .runs import ExperimentRun

MAX_ESTIMATES = 60
"""Rows of the generic interval chart; more are left out (and counted in its caption)."""
_CELL = re.compile(r"(?<!\\)\|")


def _cells(line: str) -> tuple[str, ...]:
    inner = line.strip()
    inner = inner[1:] if inner.startswith("|") else inner
    inner = inner[:-1] if inner.endswith("|") and not inner.endswith("\\|") else inner
    return tuple(c.strip().replace("\\|", "|") for c in _CELL.split(inner))


def _block(lines: Sequence[str]) -> Grid | str:
    title = lines[0][4:].strip() if lines and lines[0].startswith("### ") else ""
    body = [line for line in lines[1 if title else 0 :]]
    rows = [line for line in body if line.lstrip().startswith("|")]
    caption = " ".join(line.strip() for line in body if line.strip() and line not in rows)
    if len(rows) < 2 or not set(rows[1].replace("|", "").strip()) <= {"-", ":", " "}:
        return "\n".join(lines)
    headers, cells = _cells(rows[0]), [_cells(r) for r in rows[2:]]
    if any(len(row) != len(headers) for row in cells):
        return "\n".join(lines)
    return Grid(title, headers, tuple(cells), caption=caption)


def tables(text: str) -> list[Grid | str]:
    """The tables of a ``table.md``: a grid per ``### title`` block, or the block's text
    where it is not a table of that format."""
    blocks: list[list[str]] = []
    for line in text.split("\n"):  # not splitlines(): a cell may hold U+2028 and the like
        if line.startswith("### ") or not blocks:
            blocks.append([])
        blocks[-1].append(line)
    return [_block(b) for b in blocks if any(line.strip() for line in b)]


def _estimate(value: Any) -> tuple[float, float, float] | None:
    """``(mean, low, high)`` of an estimate object whose numbers can be drawn, else ``None``
    (an undefined estimate, ``null`` in the file; the reader refused any other value)."""
    if not isinstance(value, Mapping) or not {"mean", "low", "high"} <= set(value):
        return None
    found = [value[k] for k in ("mean", "low", "high")]
    if not all(isinstance(v, int | float) and not isinstance(v, bool) for v in found):
        return None
    mean, low, high = (float(v) for v in found)
    return (mean, low, high) if drawable(mean, low, high) else None


def estimates(data: Any, path: str = "") -> Iterator[tuple[str, tuple[float, float, float]]]:
    """Every estimate object in ``data`` with its path (``agents.expert.slope``)."""
    if (found := _estimate(data)) is not None:
        yield path, found
    elif isinstance(data, Mapping):
        for key, value in data.items():
            yield from estimates(value, f"{path}.{key}" if path else str(key))


def _errors(points: Sequence[tuple[float, float, float]]) -> list[list[float]]:
    # max(0, ...): a ratio's interval can exclude its point; no bar is drawn on that side
    return [[max(0.0, m - lo) for m, lo, _ in points], [max(0.0, hi - m) for m, _, hi in points]]


def _scatter_panels(results: Mapping[str, Any], tag: str) -> str | None:
    """E0: goal rate (x) against R (y) per agent, one panel per domain, pooled first."""
    by_domain: Mapping[str, Any] = results.get("estimates", {})
    agents: list[str] = [str(a) for a in results.get("agents", [])]
    if not by_domain or not agents:
        return None
    columns = min(4, len(by_domain))
    rows = -(-len(by_domain) // columns)
    with style(tag):
        figure = figure_of(2.6 * columns + 1.8, 2.5 * rows + 0.4)
        axes = figure.subplots(rows, columns, squeeze=False).ravel()
        for ax, (domain, per_agent) in zip(axes, by_domain.items(), strict=False):
            for a, agent in enumerate(agents):
                goal = _estimate(per_agent.get(agent, {}).get("success"))
                r = _estimate(per_agent.get(agent, {}).get("composite"))
                if goal is None or r is None:
                    continue
                ax.errorbar(
                    [goal[0]], [r[0]], xerr=_errors([goal]), yerr=_errors([r]),
                    marker=MARKERS[a % len(MARKERS)], color=colour(a), markersize=4,
                    linewidth=0.7, label=agent,
                )  # fmt: skip
            ax.set(xlim=(-0.05, 1.05), ylim=(-1.05, 1.05))
            ax.axhline(0.0, color="#999999", linewidth=0.5)
            ax.set_title(str(domain), loc="left", fontsize=8)
            ax.tick_params(labelsize=7)
        for ax in axes[len(by_domain) :]:
            ax.set_visible(False)
        axes[0].set(xlabel="goal rate", ylabel="R")
        handles, labels = axes[0].get_legend_handles_labels()
        figure.legend(handles, labels, loc="outside right upper", fontsize=6)
        return to_svg(figure, tag)


def _interval_chart(
    rows: Sequence[tuple[str, tuple[float, float, float]]], tag: str, xlabel: str
) -> str:
    """One dot with its interval per row, labelled, top to bottom."""
    with style(tag):
        figure = figure_of(8.0, 0.2 * len(rows) + 1.0)
        ax = figure.subplots()
        points = [p for _, p in rows]
        ax.errorbar(
            [m for m, _, _ in points], range(len(rows)), xerr=_errors(points), fmt="o",
            color=colour(0), markersize=3, linewidth=0.8, capsize=2,
        )  # fmt: skip
        ax.set_yticks(range(len(rows)), [name for name, _ in rows], fontsize=6)
        ax.invert_yaxis()
        ax.axvline(0.0, color="#999999", linewidth=0.5)
        ax.set_xlabel(xlabel)
        return to_svg(figure, tag)


def _measure_panels(pooled: Mapping[str, Mapping[str, Any]], tag: str) -> str | None:
    """E0: one panel per measure (goal rate, R, each dimension...), a bar per agent."""
    agents = list(pooled)
    measures = list(dict.fromkeys(m for per in pooled.values() for m in per))
    if not agents or not measures:
        return None
    columns = min(4, len(measures))
    rows = -(-len(measures) // columns)
    with style(tag):
        figure = figure_of(10.0, rows * (0.14 * len(agents) + 0.9))
        axes = figure.subplots(rows, columns, squeeze=False).ravel()
        for index, (ax, measure) in enumerate(zip(axes, measures, strict=False)):
            _bars(ax, [_estimate(pooled[a].get(measure)) for a in agents])
            names = agents if index % columns == 0 else [""] * len(agents)
            ax.set_yticks(range(len(agents)), names, fontsize=6)
            ax.set_ylim(len(agents) - 0.5, -0.5)  # the first agent on top
            ax.set_title(measure, loc="left", fontsize=8)
            ax.tick_params(axis="x", labelsize=7)
        for ax in axes[len(measures) :]:
            ax.set_visible(False)
        return to_svg(figure, tag)


def _bars(ax: Any, found: Sequence[tuple[float, float, float] | None]) -> None:
    """One bar with its interval per row; a row whose estimate is undefined (or missing)
    gets no bar but ``n/a``, never a bar at an invented 0."""
    shown = [(row, point) for row, point in enumerate(found) if point is not None]
    if shown:
        ax.barh(
            [row for row, _ in shown], [m for _, (m, _, _) in shown],
            xerr=_errors([point for _, point in shown]),
            color=[colour(row) for row, _ in shown], ecolor="#333333", capsize=1.5,
        )  # fmt: skip
    for row, point in enumerate(found):
        if point is None:
            ax.text(0.02, row, "n/a", transform=ax.get_yaxis_transform(), va="center", fontsize=6)


def _distance_points(run: ExperimentRun) -> dict[str, list[tuple[float, float]]]:
    """E3: each agent's mean R per cell, against the cell's distance (from ``raw.json``)."""
    cells = run.results.get("cells", [])
    measures = list(run.raw.get("measures", []))
    if not cells or "composite" not in measures:
        return {}
    column = measures.index("composite")
    series = {}
    for agent, values in run.raw.get("agents", {}).items():
        episodes = [e for block in values for e in enumerate(block)]  # (index, row) per seed
        per_cell = max(1, len(values[0]) // len(cells)) if values else 1
        sums: dict[int, list[float]] = {}
        for index, row in episodes:
            sums.setdefault(index // per_cell, []).append(float(row[column]))
        series[str(agent)] = [
            (float(cells[i]["distance"]), sum(v) / len(v))
            for i, v in sorted(sums.items())
            if i < len(cells) and isinstance(cells[i].get("distance"), int | float)
        ]
    return series


def _r_against_distance(run: ExperimentRun, tag: str) -> str | None:
    series = _distance_points(run)
    if not series:
        return None
    with style(tag):
        figure = figure_of(6.5, 3.8)
        ax = figure.subplots()
        left_out = 0
        for a, (agent, points) in enumerate(series.items()):
            left_out += scatter_drawable(
                ax, points, color=colour(a), marker=MARKERS[a % len(MARKERS)], alpha=0.85,
                label=agent,
            )  # fmt: skip
        note_left_out(ax, left_out)
        ax.set(xlabel="topology distance from training", ylabel="R (cell mean)")
        ax.set_ylim(-1.05, 1.05)
        ax.legend(fontsize=7)
        return to_svg(figure, tag)


def _figures(run: ExperimentRun, tag: str) -> list[str]:
    """The redrawn figures of ``run``, by experiment, each with its caption."""
    results, name = run.results, str(run.results.get("experiment"))
    figures: list[tuple[str | None, str]] = []
    if name == "e0":
        figures.append(
            (
                _scatter_panels(results, f"{tag}-scatter"),
                "Goal rate against R per agent, pooled and per domain, with 95% intervals "
                "(redrawn from results.json).",
            )
        )
        figures.append(
            (
                _measure_panels(results.get("estimates", {}).get("pooled", {}), f"{tag}-pooled"),
                "Each pooled measure per agent with its 95% interval (redrawn from results.json; "
                "n/a: results.json holds no number for it, as for an undefined estimate).",
            )
        )
    elif name == "e3":
        figures.append(
            (
                _r_against_distance(run, f"{tag}-distance"),
                "Mean R of each protocol cell against its topology distance from training "
                "(redrawn from raw.json).",
            )
        )
    if name not in ("e0",):
        found = list(estimates({k: v for k, v in results.items() if k != "config"}))
        if found:
            left = len(found) - MAX_ESTIMATES
            figures.append(
                (
                    _interval_chart(found[:MAX_ESTIMATES], f"{tag}-estimates", "estimate"),
                    "Every estimate of results.json with its 95% interval"
                    + (f" (the first {MAX_ESTIMATES}; {left} more)" if left > 0 else "")
                    + ".",
                )
            )
    return [markup.figure(svg, caption) for svg, caption in figures if svg is not None]


def _ran_on(environment: object) -> str:
    """``results.json``'s ``environment`` in one line ("python 3.11.7, ..., cpu_capability
    AVX512"), or "-" for a run written before it was recorded (or a value that is not one)."""
    if not isinstance(environment, Mapping):
        return "-"
    named = [f"{k} {v}" for k, v in environment.items() if isinstance(v, (str, int, float))]
    return ", ".join(named) or "-"


def section(run: ExperimentRun, tag: str) -> str:
    """The experiment's section: its settings, redrawn figures and tables."""
    results = run.results
    config = results.get("config", {})
    facts = [
        ("experiment", results.get("experiment")),
        ("budget", config.get("budget", "-") if isinstance(config, Mapping) else "-"),
        ("seeds", ", ".join(map(str, results.get("seeds", [])))),
        ("CPU seconds", results.get("cpu_seconds", "-")),
        ("ran on", _ran_on(results.get("environment"))),
        *(("not run", note) for note in results.get("not_run", [])),
        ("plot files (redrawn here)", ", ".join(run.plots) or "none"),
    ]
    parts = [markup.definition_list(facts), *_figures(run, tag)]
    for grid in tables(run.table):
        parts.append(markup.table(grid) if isinstance(grid, Grid) else markup.pre(grid))
    name = f"experiment-{run.path.name}"
    return markup.section(name, f"Experiment {results.get('experiment')}: {run.path}", parts)
