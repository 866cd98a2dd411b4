"""Tables fold to the terminal's width instead of cutting cells (stategym.tables)."""

from __future__ import annotations

import pytest
from rich.console import Console

from stategym.tables import Grid, fold, markdown, print_grids

WIDE = Grid(
    "Protocol: an agent trained on synth:chain2+fanout3+askgate+verifycommit+conflict",
    ("split", "domain", *(f"measure {i}" for i in range(14))),
    tuple(
        ("instances", "synth:chain2+fanout3", *(f"0.{row}{i:02d}" for i in range(14)))
        for row in range(3)
    ),
    keys=2,
    caption="every cell is a mean over episodes",
)


def printed(grids: list[Grid], width: int = 80) -> str:
    console = Console(width=width, record=True)
    print_grids(console, grids)
    return console.export_text()


@pytest.mark.parametrize("width", [40, 80, 120])
def test_a_wide_table_folds_without_an_ellipsis_and_keeps_every_cell(width: int) -> None:
    text = printed([WIDE], width)
    assert "…" not in text
    assert max(len(line) for line in text.splitlines()) <= width
    for row in WIDE.rows:
        for cell in row[2:]:
            assert text.count(cell) == 1  # each number once, whole
    assert "every cell is a mean over episodes" in " ".join(text.split())


def test_every_part_repeats_the_key_columns_and_parts_are_even() -> None:
    parts = fold(WIDE, 80)
    assert len(parts) > 1
    assert all(p.headers[:2] == ("split", "domain") for p in parts)
    widths = [len(p.headers) - 2 for p in parts]
    assert sum(widths) == 14 and max(widths) - min(widths) <= 1
    assert [p.caption for p in parts][-1] == WIDE.caption
    assert fold(WIDE, 1000) == [WIDE]


def test_markup_like_cells_print_as_written() -> None:
    grid = Grid("t", ("agent", "R"), (("[bold]x[/bold]", "0.50 [0.25, 0.80]"),))
    text = printed([grid])
    assert "[bold]x[/bold]" in text and "0.50 [0.25, 0.80]" in text


def test_markdown_is_unfolded_and_escapes_pipes() -> None:
    text = markdown([WIDE, Grid("", ("a|b",), (("1",),))])
    assert text.count("\n| instances |") == 3
    assert "### Protocol:" in text and "| a\\|b |" in text
    header = next(line for line in text.splitlines() if line.startswith("| split"))
    assert header.count("|") == 17  # all 16 columns on one line


def test_rows_must_match_the_headers() -> None:
    with pytest.raises(ValueError, match="2 cells"):
        Grid("t", ("a", "b"), (("1",),))


def test_tables_docstring_examples_run() -> None:
    import doctest

    import stategym.tables

    result = doctest.testmod(stategym.tables)
    assert result.attempted > 0 and result.failed == 0
