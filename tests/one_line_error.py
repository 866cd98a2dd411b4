"""The one helper the command-line tests share: a run that must fail with one clear line."""

from __future__ import annotations

import pytest

from stategym.cli import main


def fails(argv: list[str], capsys: pytest.CaptureFixture[str], *words: str) -> str:
    """Run the CLI; assert a non-zero exit and one stderr line holding every word."""
    try:
        code = main(argv)
    except SystemExit as exit_info:  # argparse's own errors
        code = exit_info.code
    err = capsys.readouterr().err
    assert code not in (0, None), (argv, err)
    lines = err.strip().splitlines()
    assert len(lines) == 1, (argv, err)
    (line,) = lines
    assert line.startswith("stategym"), line
    assert "error:" in line, line
    for word in words:
        assert word in line, (word, line)
    return line
