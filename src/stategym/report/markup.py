"""Escaping: the only ways text and data enter the report's HTML.

Every string that reaches the page goes through :func:`text` (element content and
attribute values) or :func:`json_script` (data for the viewer). Nothing else writes a
string into the page, so an agent's ``<script>``, ``</style>``, ``onerror=`` or
``javascript:`` stays inert text; the page's Content-Security-Policy (only the report's own
script, by hash; no network) is a second wall behind the first.
"""

from __future__ import annotations

import base64
import hashlib
import html
from collections.abc import Iterable, Sequence
from typing import Any

import orjson

from stategym.tables import Grid

_JSON_ESCAPES = {
    "<": "\\u003c",  # no "</script" and no "<!--" can close or confuse the block
    ">": "\\u003e",
    "&": "\\u0026",
    "\u2028": "\\u2028",
    "\u2029": "\\u2029",
}


def text(value: object) -> str:
    """``value`` as HTML text, safe in element content and in quoted attribute values."""
    return html.escape(str(value), quote=True)


def json_text(value: Any) -> str:
    """``value`` as JSON that contains no ``<``, ``>`` or ``&`` (each is a ``\\u`` escape,
    which only ever occurs inside JSON strings, so the JSON means the same)."""
    raw = orjson.dumps(value, option=orjson.OPT_NON_STR_KEYS).decode()
    for char, escape in _JSON_ESCAPES.items():
        raw = raw.replace(char, escape)
    return raw


def json_script(element_id: str, value: Any) -> str:
    """A ``<script type="application/json">`` data block (never executed; the viewer reads
    it with ``JSON.parse(element.textContent)``)."""
    return f'<script type="application/json" id="{text(element_id)}">{json_text(value)}</script>'


def csp_hash(script: str) -> str:
    """The CSP source (``'sha256-…'``) that allows exactly this inline script."""
    digest = hashlib.sha256(script.encode()).digest()
    return f"'sha256-{base64.b64encode(digest).decode()}'"


def table(grid: Grid, *, numeric_from: int | None = None) -> str:
    """A :class:`~stategym.tables.Grid` as an HTML table (cells escaped)."""
    first = grid.keys if numeric_from is None else numeric_from
    head = "".join(f"<th>{text(h)}</th>" for h in grid.headers)
    body = "".join(
        "<tr>"
        + "".join(
            f'<td class="{"num" if i >= first else "key"}">{text(cell)}</td>'
            for i, cell in enumerate(row)
        )
        + "</tr>"
        for row in grid.rows
    )
    caption = f"<caption>{text(grid.caption)}</caption>" if grid.caption else ""
    return (
        f'<h3>{text(grid.title)}</h3><table class="grid">{caption}'
        f"<thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"
    )


def definition_list(pairs: Iterable[tuple[str, object]]) -> str:
    """``key: value`` pairs as a ``<dl>`` (both escaped)."""
    items = "".join(f"<dt>{text(k)}</dt><dd>{text(v)}</dd>" for k, v in pairs)
    return f'<dl class="config">{items}</dl>'


def pre(value: object) -> str:
    """``value`` as escaped preformatted text."""
    return f"<pre>{text(value)}</pre>"


def section(anchor: str, title: str, parts: Sequence[str]) -> str:
    """A titled ``<section>`` of already-built parts."""
    return f'<section id="{text(anchor)}"><h2>{text(title)}</h2>{"".join(parts)}</section>'


def figure(svg: str, caption: str) -> str:
    """A plot (SVG from :mod:`stategym.report.plots`, never from data) with its caption."""
    return f'<figure class="plot">{svg}<figcaption>{text(caption)}</figcaption></figure>'
