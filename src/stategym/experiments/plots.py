"""Figures of the experiments: matplotlib, written as PNG and SVG, Okabe-Ito colours.

Matplotlib is imported inside the functions, and figures are built as bare
:class:`~matplotlib.figure.Figure` objects, not through pyplot: importing this module costs
nothing, plotting never needs a display and never touches the caller's backend or global
state. SVGs carry no date (a fixed ``svg.hashsalt``, no metadata), so the same numbers give
the same file. Each file is rendered in memory and replaces the old one whole.
"""

from __future__ import annotations

import io
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from stategym.agents import ADVERSARIES, PATHOLOGICAL
from stategym.kernel.files import replace_bytes
from stategym.metrics.aggregate import Estimate

if TYPE_CHECKING:
    from matplotlib.axes import Axes
    from matplotlib.figure import Figure

OKABE_ITO: tuple[str, ...] = (
    "#E69F00",
    "#56B4E9",
    "#009E73",
    "#F0E442",
    "#0072B2",
    "#D55E00",
    "#CC79A7",
    "#000000",
)
"""The colour-blind-safe palette of Okabe and Ito (2008)."""
GROUPS: dict[str, tuple[str, str]] = {
    "baseline": (OKABE_ITO[4], "o"),
    "pathological": (OKABE_ITO[5], "s"),
    "adversary": (OKABE_ITO[6], "^"),
}
"""Colour and marker of each kind of agent."""


def group_of(agent: str) -> str:
    """``baseline``, ``pathological`` or ``adversary``."""
    if agent in PATHOLOGICAL:
        return "pathological"
    return "adversary" if agent in ADVERSARIES else "baseline"


def save(figure: Figure, path: Path) -> list[Path]:
    """Write ``path.png`` and ``path.svg``, each whole or not at all; the paths written."""
    import matplotlib

    path.parent.mkdir(parents=True, exist_ok=True)
    written = []
    with matplotlib.rc_context({"svg.hashsalt": "stategym"}):
        for suffix in (".png", ".svg"):
            image = io.BytesIO()
            metadata = {"Date": None} if suffix == ".svg" else {}
            figure.savefig(image, format=suffix[1:], dpi=110, metadata=metadata)
            written.append(replace_bytes(path.with_suffix(suffix), image.getvalue()))
    return written


def _figure(panels: int, columns: int, size: tuple[float, float]) -> tuple[Figure, list[Axes]]:
    from matplotlib.figure import Figure

    rows = -(-panels // columns)
    figure = Figure(figsize=(size[0] * columns, size[1] * rows), layout="constrained")
    axes = figure.subplots(rows, columns, squeeze=False)
    flat = list(axes.flat)
    for extra in flat[panels:]:
        extra.set_visible(False)
    return figure, flat[:panels]


def _errors(points: Sequence[Estimate]) -> list[list[float]]:
    # max(0, ...): an interval that excludes its point (a ratio's can) draws no bar that side
    return [
        [max(0.0, p.mean - p.low) for p in points],
        [max(0.0, p.high - p.mean) for p in points],
    ]


def goal_vs_quality(
    panels: Mapping[str, Mapping[str, tuple[Estimate, Estimate]]], path: Path, title: str
) -> list[Path]:
    """One scatter per panel (a domain): goal rate (x) against R (y), one point per agent
    with both intervals; ``panels[name][agent] = (goal, R)``."""
    figure, axes = _figure(len(panels), 3, (4.2, 3.8))
    for ax, (name, agents) in zip(axes, panels.items(), strict=True):
        for group, (colour, marker) in GROUPS.items():
            mine = {a: v for a, v in agents.items() if group_of(a) == group}
            if not mine:
                continue
            goals, quality = [v[0] for v in mine.values()], [v[1] for v in mine.values()]
            ax.errorbar(
                [g.mean for g in goals],
                [q.mean for q in quality],
                xerr=_errors(goals),
                yerr=_errors(quality),
                fmt=marker,
                color=colour,
                ms=4,
                elinewidth=0.6,
                label=group,
            )
            for agent, (goal, r) in mine.items():
                ax.annotate(
                    agent,
                    (goal.mean, r.mean),
                    fontsize=5,
                    xytext=(2, 2),
                    textcoords="offset points",
                )
        ax.set(title=name, xlabel="goal rate", ylabel="R", xlim=(-0.05, 1.05), ylim=(-1.05, 1.05))
        ax.axhline(0.0, color="#999999", lw=0.5)
    axes[0].legend(fontsize=6, loc="lower right")
    figure.suptitle(title, fontsize=9)
    return save(figure, path)


def dimension_bars(
    bars: Mapping[str, Mapping[str, Estimate]], path: Path, title: str
) -> list[Path]:
    """One horizontal bar chart per panel (a measure), one bar per agent with its interval;
    ``bars[measure][agent] = estimate``."""
    figure, axes = _figure(len(bars), len(bars), (2.4, 5.0))
    for index, (ax, (measure, agents)) in enumerate(zip(axes, bars.items(), strict=True)):
        names = list(agents)
        values = list(agents.values())
        ax.barh(
            range(len(names)),
            [v.mean for v in values],
            xerr=_errors(values),
            color=[GROUPS[group_of(a)][0] for a in names],
            error_kw={"elinewidth": 0.6},
        )
        ax.set_yticks(range(len(names)), names if index == 0 else [""] * len(names), fontsize=6)
        ax.invert_yaxis()
        ax.set_title(measure, fontsize=8)
        ax.tick_params(axis="x", labelsize=6)
    figure.suptitle(title, fontsize=9)
    return save(figure, path)


def score_vs_distance(
    series: Mapping[str, Sequence[tuple[float, float]]], path: Path, title: str
) -> list[Path]:
    """R of each cell (y) against its topology distance from training (x), one colour
    per agent; ``series[agent] = [(distance, R), ...]``."""
    figure, (ax,) = _figure(1, 1, (5.0, 3.8))
    for index, (agent, points) in enumerate(series.items()):
        colour = OKABE_ITO[index % len(OKABE_ITO)]
        ax.plot(
            [p[0] for p in points], [p[1] for p in points], "o", color=colour, ms=4, label=agent
        )
    ax.set(xlabel="topology distance from training", ylabel="R (cell mean)", ylim=(-1.05, 1.05))
    ax.axhline(0.0, color="#999999", lw=0.5)
    ax.legend(fontsize=6)
    figure.suptitle(title, fontsize=9)
    return save(figure, path)


def band_bars(
    bands: Mapping[str, Mapping[str, Estimate]],
    path: Path,
    title: str,
    measure: str,
    xlabel: str = "distance band",
) -> list[Path]:
    """Grouped bars: one group per distance band (or any category), one bar per agent, with
    intervals; ``bands[agent][band] = estimate``."""
    figure, (ax,) = _figure(1, 1, (5.5, 3.5))
    names = list(dict.fromkeys(b for per in bands.values() for b in per))
    width = 0.8 / max(1, len(bands))
    for index, (agent, per) in enumerate(bands.items()):
        present = [b for b in names if b in per]
        xs = [names.index(b) + index * width for b in present]
        values = [per[b] for b in present]
        ax.bar(
            xs,
            [v.mean for v in values],
            width,
            yerr=_errors(values),
            label=agent,
            color=OKABE_ITO[index % len(OKABE_ITO)],
            error_kw={"elinewidth": 0.6},
        )
    ax.set_xticks([i + 0.4 - width / 2 for i in range(len(names))], names)
    ax.set(xlabel=xlabel, ylabel=measure)
    ax.axhline(0.0, color="#999999", lw=0.5)
    ax.legend(fontsize=6)
    figure.suptitle(title, fontsize=9)
    return save(figure, path)


def training_curves(
    panels: Mapping[str, Mapping[str, Sequence[Sequence[float]]]], path: Path, title: str
) -> list[Path]:
    """One panel per measure: each arm's value per training iteration, a thin line per seed
    and a thick line for the mean over seeds; ``panels[measure][arm] = [seed's values]``
    (every seed's list as long as the others')."""
    import numpy as np

    figure, axes = _figure(len(panels), min(3, len(panels)), (3.6, 2.8))
    for ax, (measure, arms) in zip(axes, panels.items(), strict=True):
        for index, (arm, seeds) in enumerate(arms.items()):
            colour = OKABE_ITO[index % len(OKABE_ITO)]
            values = np.asarray(seeds, dtype=np.float64)
            if values.size == 0:
                continue
            steps = np.arange(1, values.shape[1] + 1)
            for row in values:
                ax.plot(steps, row, color=colour, lw=0.5, alpha=0.4)
            seen = np.isfinite(values)
            counts = seen.sum(axis=0)
            mean = np.where(seen, values, 0.0).sum(axis=0) / np.where(counts, counts, 1)
            ax.plot(steps, np.where(counts, mean, np.nan), color=colour, lw=1.8, label=arm)
        ax.set(title=measure, xlabel="iteration")
        ax.title.set_fontsize(8)
        ax.tick_params(labelsize=6)
    axes[0].legend(fontsize=6)
    figure.suptitle(title, fontsize=9)
    return save(figure, path)
