"""Headless Chromium for the report tests: the rendered DOM, the console, a screenshot.

Debian's ``chromium`` is used when it is on the path (``apt-get install -y chromium``);
tests that need it are skipped with that reason otherwise.
"""

from __future__ import annotations

import shutil
import subprocess
import tempfile
from dataclasses import dataclass
from pathlib import Path

import pytest

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
needs_chromium = pytest.mark.skipif(
    CHROMIUM is None, reason="chromium is not installed (apt-get install -y chromium)"
)
FLAGS = (
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--no-first-run",
    "--enable-logging=stderr",
    "--v=0",
)


@dataclass(frozen=True, slots=True)
class Rendered:
    """What Chromium made of a page.

    Attributes:
        dom: the document after its scripts ran (``--dump-dom``).
        console: the page's console lines (errors, CSP refusals, logs).
    """

    dom: str
    console: tuple[str, ...]


def _run(*args: str) -> subprocess.CompletedProcess[str]:
    assert CHROMIUM is not None
    with tempfile.TemporaryDirectory() as profile:
        return subprocess.run(
            [CHROMIUM, *FLAGS, f"--user-data-dir={profile}", *args],
            capture_output=True,
            text=True,
            timeout=120,
            check=True,
        )


def render(page: Path, fragment: str = "") -> Rendered:
    """Open ``page`` (with ``#fragment``) and dump its DOM after the scripts ran."""
    done = _run("--dump-dom", page.resolve().as_uri() + (f"#{fragment}" if fragment else ""))
    console = tuple(line for line in done.stderr.splitlines() if ":CONSOLE" in line)
    return Rendered(done.stdout, console)


def screenshot(page: Path, out: Path, fragment: str = "", size: str = "1300,2400") -> int:
    """Save a PNG of ``page`` at ``size`` (width,height) to ``out``; how many distinct
    colours it has (a blank page has one or two)."""
    from PIL import Image  # pillow comes with matplotlib

    url = page.resolve().as_uri() + (f"#{fragment}" if fragment else "")
    _run(f"--window-size={size}", f"--screenshot={out}", url)
    with Image.open(out) as image:
        return len(image.convert("RGB").getcolors(maxcolors=1 << 20) or ())
