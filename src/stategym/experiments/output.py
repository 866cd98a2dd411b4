"""Run-directory files shared by the experiments: JSON numbers and Markdown tables.

Every experiment writes ``results.json`` (configuration, estimates, CPU time), ``raw.json``
(the per-task numbers the estimates come from) and ``table.md``. An estimate is written as
``{"mean", "low", "high", "n"}``; NaN (undefined, e.g. a rank correlation of a constant) is
written as ``null`` so the files are strict JSON.

The files of one run belong together, and a reader can prove it: each file is replaced
whole (:func:`~stategym.kernel.files.replace_bytes`), the plots and ``raw.json`` and ``table.md``
first, and ``results.json`` last, holding the SHA-256 of every other file it wrote (plots as
``plots/NAME``) under :data:`FILES`. A run killed while writing leaves the old
``results.json`` (whose digests the new files no longer match) or the new one with every
file complete; the report refuses a mismatch (:func:`stategym.report.runs.read_experiment`).
"""

from __future__ import annotations

import hashlib
import math
from collections.abc import Callable, Mapping
from dataclasses import asdict, is_dataclass
from pathlib import Path
from typing import Any

import orjson

from stategym.kernel.files import replace_bytes
from stategym.metrics.aggregate import Estimate

RESULTS = "results.json"
RAW = "raw.json"
TABLE = "table.md"
PLOTS = "plots"
FILES = "files"
"""The key of ``results.json`` holding ``{file name: "sha256:HEX"}`` of ``raw.json``,
``table.md`` and each plot (``plots/NAME``) as this run wrote them."""


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


def json_bytes(data: Mapping[str, Any]) -> bytes:
    """``data`` as indented JSON (NumPy arrays and scalars allowed)."""
    return orjson.dumps(data, option=orjson.OPT_INDENT_2 | orjson.OPT_SERIALIZE_NUMPY)


def write_json(path: Path, data: Mapping[str, Any]) -> Path:
    """Write ``data`` as indented JSON (NumPy arrays and scalars allowed), whole or not at
    all."""
    return replace_bytes(path, json_bytes(data))


def digest(data: bytes) -> str:
    """``"sha256:HEX"`` of ``data``: how ``results.json`` names the other files' contents."""
    return f"sha256:{hashlib.sha256(data).hexdigest()}"


def write_run(
    out: Path,
    results: Mapping[str, Any],
    raw: Mapping[str, Any],
    table: str,
    plots: Callable[[], list[Path]] = list,
) -> list[Path]:
    """Write an experiment's run directory: ``plots()`` (the experiment's own figures,
    written under ``out / "plots"``), ``raw.json`` and ``table.md``, then ``results.json``
    with the digests of them all under :data:`FILES` (see the module docstring); returns the
    paths, ``results.json``, ``raw.json`` and ``table.md`` first."""
    out.mkdir(parents=True, exist_ok=True)
    figures = plots()
    files = {RAW: json_bytes(raw), TABLE: table.encode("utf-8")}
    for name, data in files.items():
        replace_bytes(out / name, data)
    digests = {name: digest(data) for name, data in files.items()}
    digests |= {f.relative_to(out).as_posix(): digest(f.read_bytes()) for f in figures}
    stamped = {**results, FILES: digests}
    return [write_json(out / RESULTS, stamped), out / RAW, out / TABLE, *figures]
