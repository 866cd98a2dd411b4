"""The tables every command prints and writes: folded to fit the terminal, and as Markdown.

A :class:`Grid` is plain text cells. :func:`print_grids` prints it with rich, folding wide
tables into several stacked tables that repeat the key columns (domain, agent...), so that
no cell is ever shortened to ``0.1…`` at 80 columns or in a file; :func:`markdown` writes
the same grids, unfolded, as the Markdown file a command leaves in its output folder.

Example:
    >>> grid = Grid("demo", ("agent", "R"), (("expert", "1.00"),))
    >>> print(markdown([grid]), end="")
    ### demo
    <BLANKLINE>
    | agent | R |
    |---|---|
    | expert | 1.00 |
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from rich.console import Console
    from rich.table import Table

_EDGE = 1
"""Width of a rich table's left border."""
_PER_COLUMN = 3
"""What rich adds to each column's text: one space of padding each side and a border."""
_BREAK = re.compile(r"[^ +,/:]*[ +,/:]*")
"""A word and the separators after it: where a long key cell may break onto a new line."""


@dataclass(frozen=True, slots=True)
class Grid:
    """One table as text.

    Attributes:
        title: shown above the table (a Markdown heading in files).
        headers: column names.
        rows: the cells, one tuple per row, as wide as ``headers``.
        keys: how many leading columns identify a row; they are left-aligned and repeated
            in every part of a folded table.
        caption: shown below the table (how to read its cells), if any.
    """

    title: str
    headers: tuple[str, ...]
    rows: tuple[tuple[str, ...], ...]
    keys: int = 1
    caption: str = ""

    def __post_init__(self) -> None:
        if any(len(row) != len(self.headers) for row in self.rows):
            raise ValueError(f"{self.title}: every row needs {len(self.headers)} cells")

    def column_width(self, index: int) -> int:
        """The widest line of text in a column, its header included."""
        texts = (self.headers[index], *(r[index] for r in self.rows))
        return max(len(line) for text in texts for line in text.split("\n"))


def signed(value: object) -> str:
    """``value`` as a signed number to three places, or ``-`` where it is no number (an
    undefined statistic is ``None``, JSON's ``null``)."""
    if isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value):
        return f"{value:+.3f}"
    return "-"


def fold(grid: Grid, width: int) -> list[Grid]:
    """Split a grid's columns into parts that each fit ``width`` characters.

    Every part repeats the key columns; the other columns keep their order. The fewest parts
    that fit are used, made as even as possible (no part of one lonely column). A part holds
    at least one non-key column even if it is still too wide (rich then wraps its cells
    instead of cutting them).
    """
    parts = _pack(grid, width)
    # Narrow the limit while the number of parts stays the same: that evens them out.
    limit = width
    while limit > 1 and len(tighter := _pack(grid, limit - 1)) == len(parts):
        parts, limit = tighter, limit - 1
    if len(parts) == 1:
        return [grid]
    keys = list(range(grid.keys))
    return [
        replace(
            grid,
            title=f"{grid.title} ({number}/{len(parts)})" if grid.title else "",
            headers=tuple(grid.headers[i] for i in keys + part),
            rows=tuple(tuple(row[i] for i in keys + part) for row in grid.rows),
            caption=grid.caption if number == len(parts) else "",
        )
        for number, part in enumerate(parts, start=1)
    ]


def _pack(grid: Grid, width: int) -> list[list[int]]:
    """Non-key column indices packed greedily into parts no wider than ``width``."""
    used = _EDGE + sum(grid.column_width(i) + _PER_COLUMN for i in range(grid.keys))
    parts: list[list[int]] = [[]]
    room = used
    for index in range(grid.keys, len(grid.headers)):
        need = grid.column_width(index) + _PER_COLUMN
        if parts[-1] and room + need > width:
            parts.append([])
            room = used
        parts[-1].append(index)
        room += need
    return parts


def rich_table(grid: Grid) -> Table:
    """The grid as one rich table (without its caption); cells fold (wrap) rather than end
    in an ellipsis."""
    from rich.table import Table
    from rich.text import Text

    # Text, not markup: a cell such as "[0.25, 0.80]" or an agent spec must print as written.
    table = Table(title=Text(grid.title) if grid.title else None)
    for index, header in enumerate(grid.headers):
        table.add_column(
            Text(header),
            justify="left" if index < grid.keys else "right",
            overflow="fold",
        )
    for row in grid.rows:
        table.add_row(*(Text(cell) for cell in row))
    return table


def wrap_keys(grid: Grid, width: int) -> Grid:
    """Break long key cells (``synth:chain2+fanout3+askgate...``) onto several lines, after a
    ``+``, ``,``, ``/``, ``:`` or space, when the key columns would take over half the width:
    they are repeated in every part of a folded table, so their width is paid many times."""
    keys = range(grid.keys)
    if _EDGE + sum(grid.column_width(i) + _PER_COLUMN for i in keys) <= width // 2:
        return grid
    limit = max(8, width // (2 * max(1, grid.keys)) - _PER_COLUMN)
    rows = tuple(
        tuple(_wrap(cell, limit) if i < grid.keys else cell for i, cell in enumerate(row))
        for row in grid.rows
    )
    return replace(grid, rows=rows)


def _wrap(text: str, limit: int) -> str:
    lines = [""]
    for word in _BREAK.findall(text):
        while len(word) > limit:  # no break point: cut it (never an ellipsis)
            lines += [word[:limit], ""]
            word = word[limit:]
        if lines[-1] and len(lines[-1]) + len(word.rstrip()) > limit:
            lines.append("")
        lines[-1] += word
    return "\n".join(line.rstrip() for line in lines if line)


def print_grids(console: Console, grids: Sequence[Grid]) -> None:
    """Print each grid, folded to the console's width, its caption below the last part."""
    from rich.text import Text

    for grid in grids:
        for part in fold(wrap_keys(grid, console.width), console.width):
            console.print(rich_table(part))
        if grid.caption:
            # Below the table, not as its caption: a caption wraps to the table's width.
            console.print(Text(grid.caption, style="dim"))


def markdown(grids: Sequence[Grid]) -> str:
    """The grids as Markdown: a heading, the whole table (never folded), the caption."""
    blocks = []
    for grid in grids:
        lines = [f"### {grid.title}", ""] if grid.title else []
        lines.append(_md_row(grid.headers))
        lines.append("|" + "|".join("---" for _ in grid.headers) + "|")
        lines += [_md_row(row) for row in grid.rows]
        if grid.caption:
            lines += ["", grid.caption]
        blocks.append("\n".join(lines) + "\n")
    return "\n".join(blocks)


def _md_row(cells: Sequence[str]) -> str:
    return "| " + " | ".join(cell.replace("|", "\\|") for cell in cells) + " |"
