"""The command line's refusal of bad input: status 2 and one line, ``stategym: error: ...``."""

from __future__ import annotations

import pytest

from stategym.cli import main


def refused(capsys: pytest.CaptureFixture[str], argv: list[str], said: str) -> str:
    """Run ``stategym ARGV``; assert it is refused in one line that says ``said``; the line."""
    assert main(argv) == 2
    error = capsys.readouterr().err
    assert error.startswith("stategym: error:"), error
    assert said in error and len(error.strip().splitlines()) == 1, error
    return error
