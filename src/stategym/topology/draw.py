"""Drawing a topology: SVG with no dependency, PNG (or PDF) through matplotlib when installed.

The format is the path's suffix, one of :data:`SUFFIXES` (any case); any other suffix, or
none, is refused before anything is drawn (:func:`drawable`), since matplotlib would fail on
one it lacks and quietly add ``.png`` to a path with none, writing a file of another name.

Layout is layered: a node's column is the length of the longest path reaching it (cycles,
which plans do not have, are broken by node order), and each weakly connected component (the
call graph, the constraint poset) gets its own band of rows. Colours follow the node's role.
"""

from __future__ import annotations

from html import escape
from pathlib import Path

import networkx as nx

from stategym.topology.graph import Topology

COLOURS = {
    "read": "#8ecae6",
    "write": "#ffb703",
    "commit": "#e63946",
    "ask": "#90be6d",
    "confirm": "#43aa8b",
    "abstain": "#adb5bd",
    "policy": "#b5838d",
    "need": "#e5989b",
    "preference": "#ffcdb2",
}
EDGE_COLOURS = {
    "pipe": "#1d3557",
    "decide": "#6c757d",
    "gate": "#2a9d8f",
    "order": "#f4a261",
    "pre": "#e76f51",
    "prio": "#9d4edd",
}
COLUMN, ROW, RADIUS = 170, 60, 18
SUFFIXES = (".svg", ".png", ".pdf")
"""The formats :func:`draw` writes: SVG always, PNG and PDF through matplotlib."""


def drawable(path: Path) -> Path:
    """``path``, checked to name a format :func:`draw` writes (its suffix).

    Raises:
        ValueError: the suffix is none of :data:`SUFFIXES`, or there is none.
    """
    if path.suffix.lower() not in SUFFIXES:
        suffix = f"suffix {path.suffix!r}" if path.suffix else "no suffix"
        raise ValueError(
            f"cannot draw to {str(path)!r}: it has {suffix}; use one of {', '.join(SUFFIXES)}"
        )
    return path


def layout(topology: Topology) -> dict[int, tuple[float, float]]:
    """Pixel position of every node: columns by longest path, bands by component."""
    graph = topology.graph
    positions: dict[int, tuple[float, float]] = {}
    top = 0.0
    components = sorted(nx.weakly_connected_components(graph), key=lambda c: (-len(c), min(c)))
    for component in components:
        sub = graph.subgraph(component)
        column = _columns(sub)
        rows: dict[int, int] = {}
        for node in sorted(component):
            c = column[node]
            positions[node] = (40 + COLUMN * c, top + 40 + ROW * rows.get(c, 0))
            rows[c] = rows.get(c, 0) + 1
        top += ROW * max(rows.values()) + 20
    return positions


def _columns(graph: nx.DiGraph) -> dict[int, int]:
    acyclic = nx.DiGraph((u, v) for u, v in graph.edges if u < v or not nx.has_path(graph, v, u))
    acyclic.add_nodes_from(graph.nodes)
    column: dict[int, int] = {}
    for node in nx.topological_sort(acyclic):
        column[node] = max((column[p] + 1 for p in acyclic.predecessors(node)), default=0)
    return column


def to_svg(topology: Topology, title: str = "") -> str:
    """The topology as a standalone SVG document (names shown, labels as colours)."""
    positions = layout(topology)
    width = max((x for x, _ in positions.values()), default=0) + 160
    height = max((y for _, y in positions.values()), default=0) + 60
    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{width:.0f}" height="{height:.0f}" '
        'font-family="sans-serif" font-size="10">',
        '<defs><marker id="arrow" viewBox="0 0 10 10" refX="10" refY="5" markerWidth="6" '
        'markerHeight="6" orient="auto-start-reverse"><path d="M 0 0 L 10 5 L 0 10 z"/>'
        "</marker></defs>",
        f'<text x="10" y="14" font-size="12">{escape(title or topology.source)}</text>',
    ]
    for u, v, label in topology.graph.edges(data="label"):
        (x1, y1), (x2, y2) = positions[u], positions[v]
        colour = EDGE_COLOURS.get(label.split("+")[0], "#333")
        parts.append(
            f'<line x1="{x1:.0f}" y1="{y1:.0f}" x2="{x2:.0f}" y2="{y2:.0f}" '
            f'stroke="{colour}" marker-end="url(#arrow)"/>'
        )
        parts.append(
            f'<text x="{(x1 + x2) / 2:.0f}" y="{(y1 + y2) / 2 - 3:.0f}" '
            f'fill="{colour}">{escape(label)}</text>'
        )
    for node, label in topology.graph.nodes(data="label"):
        x, y = positions[node]
        colour = COLOURS.get(label.rstrip("*"), "#ddd")
        parts.append(
            f'<circle cx="{x:.0f}" cy="{y:.0f}" r="{RADIUS}" fill="{colour}" stroke="#222"/>'
        )
        parts.append(
            f'<text x="{x:.0f}" y="{y + 3:.0f}" text-anchor="middle">{escape(label)}</text>'
        )
        parts.append(
            f'<text x="{x:.0f}" y="{y + RADIUS + 11:.0f}" text-anchor="middle" '
            f'fill="#444">{escape(topology.names[node])}</text>'
        )
    parts.append("</svg>")
    return "\n".join(parts)


def draw(topology: Topology, path: Path, title: str = "") -> Path:
    """Write the topology to ``path`` and return it: ``.svg`` always works; ``.png`` and
    ``.pdf`` need matplotlib.

    Raises:
        ValueError: the suffix is not one of :data:`SUFFIXES` (:func:`drawable`).
        RuntimeError: a raster or PDF format was asked for and matplotlib is not installed.
    """
    drawable(path)
    if path.suffix.lower() == ".svg":
        path.write_text(to_svg(topology, title), encoding="utf-8")
        return path
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        raise RuntimeError(
            f"drawing {path.suffix} needs matplotlib (pip install 'stategym[plot]'); "
            "an .svg path needs nothing"
        ) from None
    positions = {n: (x, -y) for n, (x, y) in layout(topology).items()}
    graph = topology.graph
    figure, axes = plt.subplots(figsize=(max(6, len(graph) * 0.5), max(4, len(graph) * 0.3)))
    colours = [COLOURS.get(label.rstrip("*"), "#ddd") for _, label in graph.nodes(data="label")]
    nx.draw_networkx(
        graph,
        positions,
        ax=axes,
        node_color=colours,
        labels=dict(topology.names),
        font_size=7,
        node_size=500,
        arrows=True,
    )
    nx.draw_networkx_edge_labels(
        graph,
        positions,
        ax=axes,
        font_size=6,
        edge_labels=dict(((u, v), lab) for u, v, lab in graph.edges(data="label")),
    )
    axes.set_title(title or topology.source)
    axes.axis("off")
    figure.savefig(path, dpi=120, bbox_inches="tight")
    plt.close(figure)
    return path
