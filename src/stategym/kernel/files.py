"""Files written whole: what every command that rewrites a file uses (a run's summary, an
experiment's tables, a report, a trainer's settings and metrics)."""

from __future__ import annotations

import os
from pathlib import Path


def replace_bytes(path: Path, data: bytes) -> Path:
    """Write ``path`` whole or not at all: ``data`` goes to ``PATH.partial``, which then
    replaces ``path`` in one step (:func:`os.replace`), so an interruption leaves the old
    file or the new one, never a mix of the two. Returns ``path``."""
    partial = path.with_name(path.name + ".partial")
    partial.write_bytes(data)
    os.replace(partial, path)
    return path
