"""Scorecard tables and files: what ``stategym eval`` and ``stategym score`` print and write.

A scored run directory holds, beside ``trajectories.jsonl``::

    scores.jsonl      one Scorecard per trajectory (every count and event), in log order
    scorecard.json    the table: per (domain, agent) estimates with 95% intervals, pass^k
                      and litmus statistics
    scorecard.md      the same table in Markdown
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import asdict
from pathlib import Path
from typing import Any

import orjson
from rich.table import Table

from .aggregate import Estimate, Row, table
from .litmus import litmus
from .score import Scorecard

SCORES = "scores.jsonl"
SCORECARD = "scorecard.json"
SCORECARD_MD = "scorecard.md"
SCORECARD_VERSION = 1

_HEADERS: tuple[tuple[str, str], ...] = (
    ("success", "success"),
    ("composite", "R"),
    ("clarification", "clar"),
    ("priority", "prio"),
    ("parallelism", "par"),
    ("risk", "risk"),
    ("harmful", "harm rate"),
    ("lost", "lost $"),
)


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


def rich_tables(rows: Sequence[Row]) -> list[Table]:
    """One rich table per domain (``mean±h``: h is the wider side of the 95% interval)."""
    tables = []
    for domain in dict.fromkeys(r.domain for r in rows):
        mine = [r for r in rows if r.domain == domain]
        out = Table(
            title=f"{domain}: scorecard",
            caption="mean±h: h is the wider side of the 95% bootstrap interval",
        )
        for name in headers(mine)[1:]:
            out.add_column(name, justify="left" if name == "agent" else "right")
        ks = _pass_ks(mine)
        for row in mine:
            out.add_row(*_cells(row, ks, compact=True)[1:])
        tables.append(out)
    return tables


def markdown_table(rows: Sequence[Row]) -> str:
    """The scorecard as a Markdown table (``mean [low, high]``, 95% bootstrap intervals)."""
    names = headers(rows)
    ks = _pass_ks(rows)
    lines = ["| " + " | ".join(names) + " |", "|" + "|".join("---" for _ in names) + "|"]
    lines += ["| " + " | ".join(_cells(row, ks, compact=False)) + " |" for row in rows]
    return "\n".join(lines) + "\n"


def litmus_table(cards: Sequence[Scorecard], rows: Sequence[Row]) -> Table:
    """Litmus statistics per (domain, agent)."""
    out = Table(title="Litmus (outcome vs decision quality)")
    for name in ("domain", "agent", "lucky-success rate", "hacking gap", "misattributed"):
        out.add_column(name, justify="left" if name in ("domain", "agent") else "right")
    for row in rows:
        stats = litmus([c for c in cards if (c.domain, c.agent) == (row.domain, row.agent)])
        out.add_row(
            row.domain,
            row.agent,
            f"{stats.lucky_success_rate:.2f}",
            f"{stats.hacking_gap:+.2f}",
            f"{stats.misattributed:.2f}" if stats.harmful_episodes else "-",
        )
    return out


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
    """Write ``scores.jsonl``, ``scorecard.json`` and ``scorecard.md``; returns the rows."""
    rows = table(cards, resamples=resamples, seed=seed)
    with (directory / SCORES).open("wb") as handle:
        for card in cards:
            handle.write(orjson.dumps(card) + b"\n")
    body = scorecard_json(cards, rows, config)
    (directory / SCORECARD).write_bytes(orjson.dumps(body, option=orjson.OPT_INDENT_2))
    (directory / SCORECARD_MD).write_text(markdown_table(rows))
    return rows
