"""The report's plots: matplotlib figures rendered to inline SVG text.

Every plot uses the Okabe-Ito palette (distinguishable with the common colour-vision
deficiencies) and, because a report may be printed in grey, a marker or hatch per series
as well. The SVG is deterministic for the same inputs: no date in its metadata, a fixed
hash salt, every id prefixed with the plot's ``tag`` (a name unique in the page, so the
ids of one page's plots never clash), and text
kept as text (``svg.fonttype = none``) with maths parsing off, so an agent's name is drawn
as written and escaped by the SVG writer, never interpreted.

matplotlib is imported here only; the report command checks it is installed first.
"""

from __future__ import annotations

import io
import re
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

from stategym.metrics.aggregate import Row
from stategym.metrics.dimensions import LABELS

if TYPE_CHECKING:
    from matplotlib.axes import Axes
    from matplotlib.figure import Figure

OKABE_ITO: tuple[str, ...] = (
    "#0072B2",  # blue
    "#E69F00",  # orange
    "#009E73",  # bluish green
    "#D55E00",  # vermillion
    "#CC79A7",  # reddish purple
    "#56B4E9",  # sky blue
    "#F0E442",  # yellow
    "#000000",  # black
)
MARKERS: tuple[str, ...] = ("o", "s", "^", "D", "v", "P", "X", "*")
HATCHES: tuple[str, ...] = ("", "//", "..", "xx", "\\\\", "--", "++", "oo")
BAR_COLUMNS: tuple[tuple[str, str], ...] = (
    ("success", "goal"),
    ("composite", "R"),
    *((str(d), label) for d, label in LABELS.items()),
    ("harmful", "harm rate"),
)
"""``(row column, axis label)`` of the per-dimension bars: one per declared dimension."""
SKIPPED_CURVES = frozenset({"iteration"})
DRAWABLE = 1e300
"""The largest magnitude a plotted value may have. Any finite float is read, but
matplotlib's axis arithmetic (margins, tick steps) overflows near the float limit (measured
with matplotlib 3.11: a constant series of 1e308, or one from -8e307 to 8e307, fails with
``ValueError: arange: cannot compute length``); a series beyond it is left out of its panel,
which says so, rather than losing the whole page."""


def drawable(*values: float) -> bool:
    """Whether every value is within :data:`DRAWABLE` (and so a number matplotlib can place)."""
    return all(abs(value) <= DRAWABLE for value in values)


MAX_CURVES = 40
"""Most training curves drawn (the first ones in key order); more would be unreadable."""


def colour(index: int) -> str:
    return OKABE_ITO[index % len(OKABE_ITO)]


@contextmanager
def style(salt: str) -> Iterator[None]:
    """The report's matplotlib settings, with the SVG hash salt ``salt``."""
    import matplotlib

    with matplotlib.rc_context(
        {
            "svg.hashsalt": f"stategym-{salt}",
            "svg.fonttype": "none",
            "text.parse_math": False,
            "font.size": 9,
            "axes.spines.top": False,
            "axes.spines.right": False,
            "axes.grid": True,
            "grid.alpha": 0.3,
        }
    ):
        yield


def figure_of(width: float, height: float, *, constrained: bool = True) -> Figure:
    """A bare figure of ``width`` x ``height`` inches, laid out by matplotlib's constrained
    layout unless ``constrained`` is false (then the caller places the axes)."""
    from matplotlib.figure import Figure

    # a bare Figure, not pyplot: no global figure registry, no GUI backend
    return Figure(figsize=(width, height), layout="constrained" if constrained else None)


_REFERENCES = re.compile(r'(id="|url\(#|href="#)([^")]+)')


def to_svg(figure: Figure, prefix: str) -> str:
    """The figure as an ``<svg>`` element (no XML prolog or doctype, which HTML does not
    take inline), every id and reference to one prefixed with ``prefix``: matplotlib
    numbers ids per figure (``patch_1``), and one page holds many figures."""
    buffer = io.StringIO()
    figure.savefig(buffer, format="svg", metadata={"Date": None, "Creator": None})
    text = buffer.getvalue()
    svg = text[text.index("<svg") :]
    return _REFERENCES.sub(lambda m: f"{m.group(1)}{prefix}-{m.group(2)}", svg)


def _half_widths(means: Sequence[float], lows: Sequence[float], highs: Sequence[float]) -> Any:
    below = [m - lo for m, lo in zip(means, lows, strict=True)]
    return [below, [hi - m for m, hi in zip(means, highs, strict=True)]]


def dimension_bars(rows: Sequence[Row], tag: str = "bars") -> str:
    """Per domain, each agent's goal rate, R, each dimension and harm rate with 95% bars."""
    domains = list(dict.fromkeys(r.domain for r in rows))
    agents = list(dict.fromkeys(r.agent for r in rows))
    with style(tag):
        # wider with more agents, so each bar stays a few pixels wide
        figure = figure_of(min(18.0, 6.0 + 0.6 * len(agents)), 2.6 * len(domains) + 0.6)
        axes = figure.subplots(len(domains), 1, squeeze=False)[:, 0]
        width = 0.8 / max(len(agents), 1)
        for ax, domain in zip(axes, domains, strict=True):
            for a, agent in enumerate(agents):
                row = next((r for r in rows if (r.domain, r.agent) == (domain, agent)), None)
                if row is None:
                    continue
                est = [row.columns[c] for c, _ in BAR_COLUMNS]
                xs = [i + (a - (len(agents) - 1) / 2) * width for i in range(len(est))]
                means = [e.mean for e in est]
                ax.bar(
                    xs,
                    means,
                    width,
                    yerr=_half_widths(means, [e.low for e in est], [e.high for e in est]),
                    color=colour(a),
                    hatch=HATCHES[a % len(HATCHES)],
                    edgecolor="white",
                    ecolor="#333333",
                    capsize=2,
                    label=agent,
                )
            ax.set_xticks(range(len(BAR_COLUMNS)), [label for _, label in BAR_COLUMNS])
            lowest = min((r.columns[c].low for r in rows for c, _ in BAR_COLUMNS), default=0.0)
            ax.set_ylim(min(0.0, lowest) - 0.05, 1.05)  # R goes below 0 when harm dominates
            ax.axhline(0, color="#333333", linewidth=0.8)
            ax.set_title(f"{domain}: mean with 95% interval", loc="left")
        axes[0].legend(ncols=min(len(agents), 5), fontsize=7, loc="lower left", framealpha=0.9)
        return to_svg(figure, tag)


def goal_against_r(rows: Sequence[Row], tag: str = "scatter") -> str:
    """Goal rate against R per agent and domain: points off the diagonal are where the
    final answer and decision quality disagree."""
    agents = list(dict.fromkeys(r.agent for r in rows))
    domains = list(dict.fromkeys(r.domain for r in rows))
    with style(tag):
        figure = figure_of(6.0, 4.6)
        ax = figure.subplots()
        ax.plot([0, 1], [0, 1], color="#999999", linestyle="--", linewidth=1, label="goal = R")
        for row in rows:
            a, d = agents.index(row.agent), domains.index(row.domain)
            r, g = row.columns["composite"], row.columns["success"]
            ax.errorbar(
                [r.mean],
                [g.mean],
                xerr=_half_widths([r.mean], [r.low], [r.high]),
                yerr=_half_widths([g.mean], [g.low], [g.high]),
                marker=MARKERS[d % len(MARKERS)],
                color=colour(a),
                markersize=7,
                capsize=2,
                linewidth=1,
                label=f"{row.agent} ({row.domain})",
            )
        ax.set_xlim(-1.05, 1.05)
        ax.set_ylim(-0.05, 1.05)
        ax.set_xlabel("R (composite decision quality)")
        ax.set_ylabel("goal rate (final answer)")
        ax.legend(fontsize=6, loc="center left", bbox_to_anchor=(1.0, 0.5), framealpha=0.9)
        return to_svg(figure, tag)


def harm_and_lost(rows: Sequence[Row], tag: str = "harm") -> str:
    """Harm rate and money lost per agent and domain, with 95% intervals."""
    names = [f"{r.agent} ({r.domain})" for r in rows]
    agents = list(dict.fromkeys(r.agent for r in rows))
    colours = [colour(agents.index(r.agent)) for r in rows]
    with style(tag):
        figure = figure_of(9.0, 0.25 * len(rows) + 1.2)
        left, right = figure.subplots(1, 2, sharey=True)
        for ax, column, title in (
            (left, "harmful", "harm rate"),
            (right, "lost", "money lost per episode"),
        ):
            est = [r.columns[column] for r in rows]
            means = [e.mean for e in est]
            ax.barh(
                range(len(rows)),
                means,
                xerr=_half_widths(means, [e.low for e in est], [e.high for e in est]),
                color=colours,
                ecolor="#333333",
                capsize=2,
            )
            ax.set_title(title, loc="left")
        left.set_yticks(range(len(rows)), names)
        left.invert_yaxis()
        left.set_xlim(0, 1.05)
        return to_svg(figure, tag)


HEADLINE_CURVES: tuple[tuple[str, str], ...] = (
    ("goal_rate", "goal rate"),
    ("composite", "R (composite)"),
    *((str(d), str(d)) for d in LABELS),
    ("ask_rate", "ask rate"),
    ("parallel_rate", "parallel rate"),
    ("harm_rate", "harm rate"),
    ("entropy", "entropy"),
    ("kl", "KL to the start"),
    ("loss", "loss"),
)
"""``(metrics key, panel title)`` of the decision curves, drawn first, in this order, with
the held-out evaluation on the same panel; every other key goes to the second figure."""


def _curve_keys(lines: Sequence[Mapping[str, float]], skip: frozenset[str]) -> list[str]:
    # flattened nested keys ("share.generation") after the trainer's own top-level ones
    found = {k for line in lines for k in line} - SKIPPED_CURVES - skip
    return sorted(found, key=lambda k: ("." in k, k))[:MAX_CURVES]


def _points(lines: Sequence[Mapping[str, float]], key: str) -> list[tuple[float, float]]:
    return [
        (line.get("iteration", float(i + 1)), line[key])
        for i, line in enumerate(lines)
        if key in line
    ]


def _panels(
    axes: Any,
    panels: Sequence[tuple[str, Sequence[tuple[int, str, Sequence[tuple[float, float]]]]]],
) -> None:
    """Draw ``(title, [(series index, label, points), ...])`` panels (the index picks the
    colour, marker and line style, the same in every panel); spare axes are hidden. A series
    with a value beyond :data:`DRAWABLE` is not drawn, and its panel names it."""
    for ax, (title, series) in zip(axes, panels, strict=False):
        left_out = [label for _, label, points in series if not drawable(*_flat(points))]
        for index, label, points in series:
            if label in left_out:
                continue
            ax.plot(
                [x for x, _ in points],
                [y for _, y in points],
                color=colour(index),
                marker=MARKERS[index] if len(points) < 40 else None,
                linestyle="-" if index == 0 else "--",
                markersize=3,
                linewidth=1.2,
                label=label,
            )
        if left_out:
            ax.text(
                0.5, 0.5, f"not drawn ({', '.join(left_out)}): values beyond ±{DRAWABLE:g}",
                transform=ax.transAxes, ha="center", va="center", fontsize=6, wrap=True,
            )  # fmt: skip
        ax.set_title(title, loc="left", fontsize=8)
        ax.tick_params(labelsize=7)
    for ax in axes[len(panels) :]:
        ax.set_visible(False)


def _flat(points: Sequence[tuple[float, float]]) -> list[float]:
    return [value for point in points for value in point]


def _grid(count: int, tag: str, title: str, draw: Any) -> str:
    columns = 4
    rows = max(1, -(-count // columns))
    height = 1.9 * rows + 0.6
    with style(tag):
        # a fixed grid, not the constrained layout: with dozens of small panels the layout
        # engine costs more than drawing them (about half of a training run's report)
        figure = figure_of(10.0, height, constrained=False)
        figure.subplots_adjust(
            left=0.05, right=0.98, bottom=0.25 / height, top=1 - 0.75 / height,
            wspace=0.3, hspace=0.55,
        )  # fmt: skip
        axes = figure.subplots(rows, columns, squeeze=False).ravel()
        draw(figure, axes)
        figure.suptitle(title, x=0.01, ha="left", fontsize=9)
        return to_svg(figure, tag)


def decision_curves(
    train: Sequence[Mapping[str, float]],
    evals: Sequence[Mapping[str, float]],
    title: str,
    tag: str = "decisions",
) -> str | None:
    """One panel per :data:`HEADLINE_CURVES` key either kind of line has: the training
    batch (solid) and the held-out evaluation (dashed) against the iteration; ``None``
    when the run logged none of them."""
    panels = []
    for key, label in HEADLINE_CURVES:
        series = [
            (index, name, points)
            for index, (name, lines) in enumerate(
                (("training batch", train), ("held-out eval", evals))
            )
            if (points := _points(lines, key))
        ]
        if series:
            panels.append((label, series))
    if not panels:
        return None

    def draw(figure: Figure, axes: Any) -> None:
        _panels(axes, panels)
        handles, labels = [], []
        for ax in axes[: len(panels)]:
            for handle, label in zip(*ax.get_legend_handles_labels(), strict=True):
                if label not in labels:
                    handles.append(handle)
                    labels.append(label)
        figure.legend(handles, labels, loc="upper right", fontsize=7, ncols=2)

    return _grid(len(panels), tag, title, draw)


def training_curves(
    train: Sequence[Mapping[str, float]],
    evals: Sequence[Mapping[str, float]],
    title: str,
    tag: str = "curves",
) -> str | None:
    """One small panel per other numeric key of the metric lines (not a
    :data:`HEADLINE_CURVES` key) against the iteration; the held-out evaluation's keys are
    their own panels (``eval: KEY``); ``None`` when there are none."""
    headline = frozenset(key for key, _ in HEADLINE_CURVES)
    series = [
        ("", train, _curve_keys(train, headline)),
        ("eval: ", evals, _curve_keys(evals, headline)),
    ]
    panels = [
        (f"{prefix}{key}", [(1 if prefix else 0, prefix or "training", _points(lines, key))])
        for prefix, lines, keys in series
        for key in keys
    ]
    if not panels:
        return None
    return _grid(len(panels), tag, title, lambda figure, axes: _panels(axes, panels))


def _distance_points(report: Mapping[str, Any]) -> list[tuple[float, float]]:
    cells = [c for c in report.get("cells", []) if c.get("shots", 0) == min_shots(report)]
    return [
        (float(c["distance"]), float(c["composite"]))
        for c in cells
        if isinstance(c.get("distance"), int | float)
        and isinstance(c.get("composite"), int | float)
    ]


def scatter_drawable(ax: Axes, points: Sequence[tuple[float, float]], **style: Any) -> int:
    """Scatter the points within :data:`DRAWABLE` on ``ax`` and return how many were left
    out (a hand-edited file's 1e308 would fail matplotlib's axis arithmetic, and the page)."""
    shown = [(x, y) for x, y in points if drawable(x, y)]
    ax.scatter([x for x, _ in shown], [y for _, y in shown], **style)
    return len(points) - len(shown)


def note_left_out(ax: Axes, count: int) -> None:
    """Say on the panel how many points :func:`scatter_drawable` left out, if any."""
    if count:
        ax.text(
            0.01, 0.01, f"{count} point(s) not drawn: values beyond ±{DRAWABLE:g}",
            transform=ax.transAxes, fontsize=7, color="#666666",
        )  # fmt: skip


def min_shots(report: Mapping[str, Any]) -> int:
    shots = [c.get("shots", 0) for c in report.get("cells", [])]
    return min(shots, default=0)


def collapse_index(report: Mapping[str, Any]) -> float | None:
    """The agent's collapse index at its fewest shots, if the report has one."""
    own = report.get("collapse", {}).get("agent", {})
    entry = own.get(str(min_shots(report))) if isinstance(own, Mapping) else None
    index = entry.get("index") if isinstance(entry, Mapping) else None
    return float(index) if isinstance(index, int | float) else None


def score_against_distance(reports: Mapping[str, Mapping[str, Any]], tag: str = "protocol") -> str:
    """R of each protocol cell against its topology distance from training, per agent,
    with each agent's collapse index in the legend."""
    with style(tag):
        figure = figure_of(7.0, 4.0)
        ax: Axes = figure.subplots()
        left_out = 0
        for a, (agent, report) in enumerate(reports.items()):
            index = collapse_index(report)
            label = agent if index is None else f"{agent} (collapse {index:.2f})"
            left_out += scatter_drawable(
                ax,
                _distance_points(report),
                color=colour(a),
                marker=MARKERS[a % len(MARKERS)],
                alpha=0.85,
                label=label,
            )
        note_left_out(ax, left_out)
        ax.set_xlabel("topology distance from the training topologies")
        ax.set_ylabel("R per cell")
        ax.set_ylim(-1.05, 1.05)
        ax.legend(fontsize=7, framealpha=0.9)
        return to_svg(figure, tag)


_ID = re.compile(r'id="([^"]+)"')


def ids(svg: str) -> list[str]:
    """The element ids of an SVG (a test checks two plots of one page share none)."""
    return _ID.findall(svg)
