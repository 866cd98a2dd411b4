"""Scorecard tables and files: what ``stategym eval`` and ``stategym score`` print and write.

A scored run directory holds, beside ``trajectories.jsonl``::

    scores.jsonl      one Scorecard per trajectory (every count and event), in log order
    scorecard.json    the table: per (domain, agent) estimates with 95% intervals, pass^k
                      and litmus statistics
    scorecard.md      the same in Markdown: the scorecard table (``mean [low, high]``) and
                      the litmus table

On the console the scorecard is one table per domain with ``mean±h`` cells, folded to the
terminal's width by :mod:`stategym.tables`.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import asdict
from pathlib import Path
from typing import Any

import orjson

from stategym.kernel.files import replace_bytes
from stategym.tables import Grid, markdown

from .aggregate import Estimate, Row, table
from .dimensions import LABELS
from .litmus import litmus
from .score import Scorecard

SCORES = "scores.jsonl"
SCORECARD = "scorecard.json"
SCORECARD_MD = "scorecard.md"
SCORECARD_VERSION = 1

_HEADERS: tuple[tuple[str, str], ...] = (
    ("success", "success"),
    ("composite", "R"),
    *((str(d), label) for d, label in LABELS.items()),
    ("harmful", "harm rate"),
    ("lost", "lost $"),
)
"""``(row column, header)`` of the scorecard table; one per declared dimension."""


def cell(estimate: Estimate, digits: int = 2, *, compact: bool = False) -> str:
    """``mean [low, high]``, or ``mean±h`` (h: the wider side of the interval) if compact.

    >>> cell(Estimate(0.5, 0.25, 0.8, 10))
    '0.50 [0.25, 0.80]'
    >>> cell(Estimate(0.5, 0.25, 0.8, 10), compact=True)
    '0.50±0.30'
    """
    if math.isnan(estimate.mean):
        return "-"
    f = f"{{:.{digits}f}}"
    if estimate.low == estimate.high == estimate.mean:
        return f.format(estimate.mean)
    if compact:
        half = max(estimate.mean - estimate.low, estimate.high - estimate.mean)
        return f"{f.format(estimate.mean)}±{f.format(half)}"
    return f"{f.format(estimate.mean)} [{f.format(estimate.low)}, {f.format(estimate.high)}]"


def _pass_ks(rows: Sequence[Row]) -> list[int]:
    """The k > 1 of pass^k that every row has (pass^1 is the success column)."""
    shared = set.intersection(*(set(r.pass_k) for r in rows)) if rows else set()
    return sorted(k for k in shared if k > 1)


def _cells(row: Row, ks: list[int], compact: bool) -> list[str]:
    cells = [row.domain, row.agent, str(row.episodes)]
    cells += [
        cell(row.columns[name], 0 if name == "lost" else 2, compact=compact) for name, _ in _HEADERS
    ]
    cells += [cell(row.pass_k[k], compact=compact) for k in ks]
    return cells


def headers(rows: Sequence[Row]) -> list[str]:
    """Column names: domain, agent, n, the estimates, then pass^k for every k > 1 sampled."""
    names = ["domain", "agent", "n", *(h for _, h in _HEADERS)]
    return names + [f"pass^{k}" for k in _pass_ks(rows)]


COMPACT_CAPTION = "mean±h: h is the wider side of the 95% bootstrap interval"
FULL_CAPTION = "mean [low, high]: the 95% bootstrap interval (tasks resampled)"
LITMUS_CAPTION = (
    "lucky-success rate: share of successes with a process violation; hacking gap: mean "
    "success minus mean R; misattributed: share of the rounds of harmful episodes with no "
    "negative event (docs/metrics.md)"
)


def domain_grids(rows: Sequence[Row]) -> list[Grid]:
    """One table per domain, led by the agent (``mean±h``: h is the wider side of the 95%
    interval); what the console shows."""
    grids = []
    for domain in dict.fromkeys(r.domain for r in rows):
        mine = [r for r in rows if r.domain == domain]
        ks = _pass_ks(mine)
        cells = tuple(tuple(_cells(row, ks, compact=True)[1:]) for row in mine)
        grids.append(
            Grid(f"{domain}: scorecard", tuple(headers(mine)[1:]), cells, 1, COMPACT_CAPTION)
        )
    return grids


def scorecard_grid(rows: Sequence[Row]) -> Grid:
    """The whole scorecard, led by domain and agent, with full intervals (for files)."""
    ks = _pass_ks(rows)
    cells = tuple(tuple(_cells(row, ks, compact=False)) for row in rows)
    return Grid("Scorecard", tuple(headers(rows)), cells, 2, FULL_CAPTION)


def markdown_table(rows: Sequence[Row]) -> str:
    """The scorecard as a Markdown table (``mean [low, high]``, 95% bootstrap intervals)."""
    return markdown([scorecard_grid(rows)])


def litmus_grid(cards: Sequence[Scorecard], rows: Sequence[Row]) -> Grid:
    """Litmus statistics per (domain, agent)."""
    cells = []
    for row in rows:
        stats = litmus([c for c in cards if (c.domain, c.agent) == (row.domain, row.agent)])
        cells.append(
            (
                row.domain,
                row.agent,
                f"{stats.lucky_success_rate:.2f}",
                f"{stats.hacking_gap:+.2f}",
                f"{stats.misattributed:.2f}" if stats.harmful_episodes else "-",
            )
        )
    names = ("domain", "agent", "lucky-success rate", "hacking gap", "misattributed")
    return Grid("Litmus (outcome vs decision quality)", names, tuple(cells), 2, LITMUS_CAPTION)


def scorecard_json(
    cards: Sequence[Scorecard], rows: Sequence[Row], config: dict[str, Any]
) -> dict[str, Any]:
    """The ``scorecard.json`` object."""
    entries = []
    for row in rows:
        group = [c for c in cards if (c.domain, c.agent) == (row.domain, row.agent)]
        entry = asdict(row)
        entry["pass_k"] = {str(k): asdict(v) for k, v in row.pass_k.items()}
        entry["litmus"] = asdict(litmus(group))
        entries.append(entry)
    return {"version": SCORECARD_VERSION, "config": config, "rows": entries}


def write(
    directory: Path,
    cards: Sequence[Scorecard],
    config: dict[str, Any],
    *,
    resamples: int = 1000,
    seed: int = 0,
) -> list[Row]:
    """Write ``scores.jsonl``, ``scorecard.json`` and ``scorecard.md`` (the scorecard and
    litmus tables), each whole or not at all (:func:`~stategym.kernel.files.replace_bytes`,
    which also refuses to replace anything but a regular file); returns the rows."""
    rows = table(cards, resamples=resamples, seed=seed)
    # the dimension mapping is keyed by Dimension, a str enum orjson writes as its name
    lines = b"".join(orjson.dumps(c, option=orjson.OPT_NON_STR_KEYS) + b"\n" for c in cards)
    replace_bytes(directory / SCORES, lines)
    body = scorecard_json(cards, rows, config)
    replace_bytes(directory / SCORECARD, orjson.dumps(body, option=orjson.OPT_INDENT_2))
    grids = markdown([scorecard_grid(rows), litmus_grid(cards, rows)])
    replace_bytes(directory / SCORECARD_MD, grids.encode("utf-8"))
    return rows
