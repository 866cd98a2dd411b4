"""Run-directory files shared by the experiments: JSON numbers and Markdown tables.

Every experiment writes ``results.json`` (configuration, estimates, CPU time), ``raw.json``
(the per-task numbers the estimates come from) and ``table.md``. An estimate is written as
``{"mean", "low", "high", "n"}``; NaN (undefined, e.g. a rank correlation of a constant) is
written as ``null`` so the files are strict JSON.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import asdict, is_dataclass
from pathlib import Path
from typing import Any

import orjson

from stategym.metrics.aggregate import Estimate

RESULTS = "results.json"
RAW = "raw.json"
TABLE = "table.md"
PLOTS = "plots"


def finite(value: float) -> float | None:
    """``value``, or ``None`` for NaN or infinity."""
    return float(value) if math.isfinite(value) else None


def estimate_json(estimate: Estimate) -> dict[str, Any]:
    """An estimate as JSON-ready data."""
    return {
        "mean": finite(estimate.mean),
        "low": finite(estimate.low),
        "high": finite(estimate.high),
        "n": estimate.n,
    }


def config_json(config: Any) -> dict[str, Any]:
    """A frozen configuration dataclass as JSON-ready data."""
    if not is_dataclass(config) or isinstance(config, type):
        raise TypeError(f"not a dataclass instance: {config!r}")
    return {k: list(v) if isinstance(v, tuple) else v for k, v in asdict(config).items()}


def write_json(path: Path, data: Mapping[str, Any]) -> Path:
    """Write ``data`` as indented JSON (NumPy arrays and scalars allowed)."""
    path.write_bytes(orjson.dumps(data, option=orjson.OPT_INDENT_2 | orjson.OPT_SERIALIZE_NUMPY))
    return path


def write_run(
    out: Path, results: Mapping[str, Any], raw: Mapping[str, Any], table: str
) -> list[Path]:
    """Write an experiment's ``results.json``, ``raw.json`` and Markdown table into ``out``;
    returns their paths (the plots are each experiment's own)."""
    (out / TABLE).write_text(table)
    return [write_json(out / RESULTS, results), write_json(out / RAW, raw), out / TABLE]
