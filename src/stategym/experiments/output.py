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

A folder holds one experiment at one configuration. The experiments that keep trained arms
under ``OUT/runs`` (E1, E2, E3, E4) :func:`claim` it before anything trains or plays: the
first run writes :data:`RECORD` (the experiment and its configuration), a rerun with the
same configuration resumes its arms, and a rerun with another one (``--quick`` then
``--standard``, another ``--model`` ...) is refused in one line naming what differs, since
the trainer would otherwise train the earlier arms further in place and mix the two. Only
``resamples`` may differ (:data:`FREE`). A folder written before the record existed is
judged by its ``results.json``: the same experiment and configuration resume (and the
record is written), another is refused; arms under ``OUT/runs`` without a readable
``results.json`` (a run stopped before its first results) are refused too, since nothing
says which configuration trained them. E0 trains nothing and keeps nothing between runs: a
rerun rewrites every file, so it may change its configuration, but it claims its folder all
the same (``keeps_arms=False``): another experiment's folder is refused, never overwritten.
"""

from __future__ import annotations

import hashlib
import math
import platform
import sys
from collections.abc import Callable, Mapping
from dataclasses import asdict, is_dataclass
from pathlib import Path
from typing import Any

import orjson

from stategym.kernel.errors import UsageError
from stategym.kernel.files import exists_as_file, read_regular, replace_bytes
from stategym.metrics.aggregate import Estimate

RESULTS = "results.json"
RAW = "raw.json"
TABLE = "table.md"
PLOTS = "plots"
RECORD = "experiment.json"
"""The file recording which experiment and configuration a folder holds (:func:`claim`)."""
FREE: tuple[str, ...] = ("resamples", "llm_agents", "llm_options", "shots")
"""Configuration fields a rerun may change: ``resamples`` only sets the intervals, which
every run computes afresh from its own episodes; E3's k-shot arm (``llm_agents``, their
``llm_options`` and ``shots``) trains nothing and is played afresh by every run, so it can
be added to a finished folder."""
RUNS = "runs"
"""The folder under which the experiments keep their trained arms."""
ENVIRONMENT = "environment"
"""The key of ``results.json`` holding what ran it (:func:`environment`)."""
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


def environment() -> dict[str, str]:
    """What ran this process: Python, the platform and, where the run used PyTorch, its
    version, the CPU kernels it chose (``torch.backends.cpu.get_cpu_capability()``) and its
    thread count. *Why*: a trained arm's numbers follow the kernels' float arithmetic. At one
    commit, E3's fine-tuned cells came out three ways: on an AVX-512 machine, on the same
    machine forced to AVX2 (``ATEN_CPU_CAPABILITY=avx2``) and in the session that measured
    docs/experiments.md (means apart by up to 0.01 in R, 0.05 in a per-dimension gap and
    0.06 in template attraction); the scripted agents' rows were identical. Torch is not
    imported here: E0 trains nothing."""
    found = {
        "python": platform.python_version(),
        "platform": platform.platform(),
        "machine": platform.machine(),
    }
    torch = sys.modules.get("torch")
    if torch is not None:
        found["torch"] = str(torch.__version__)
        found["cpu_capability"] = str(torch.backends.cpu.get_cpu_capability())
        found["torch_threads"] = str(torch.get_num_threads())
    return found


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
    paths, ``results.json``, ``raw.json`` and ``table.md`` first. ``results.json`` also names
    what ran the run (:data:`ENVIRONMENT`)."""
    out.mkdir(parents=True, exist_ok=True)
    figures = plots()
    files = {RAW: json_bytes(raw), TABLE: table.encode("utf-8")}
    for name, data in files.items():
        replace_bytes(out / name, data)
    digests = {name: digest(data) for name, data in files.items()}
    digests |= {f.relative_to(out).as_posix(): digest(read_regular(f)) for f in figures}
    stamped = {**results, ENVIRONMENT: environment(), FILES: digests}
    return [write_json(out / RESULTS, stamped), out / RAW, out / TABLE, *figures]


def plan(experiment: str, config: Any) -> dict[str, Any]:
    """What :func:`claim` records and compares: the experiment's name and its configuration
    as JSON reads it back, without the :data:`FREE` fields, a local ``recipe.init`` folder
    as its resolved path (so ``--model ./m`` and ``--model /abs/m`` are one start)."""
    settings = config if isinstance(config, dict) else config_json(config)
    kept = {k: v for k, v in settings.items() if k not in FREE}
    recipe = kept.get("recipe")
    if isinstance(recipe, dict) and isinstance(recipe.get("init"), str):
        kept["recipe"] = {**recipe, "init": _resolved_start(recipe["init"])}
    return orjson.loads(json_bytes({"experiment": experiment, "config": kept}))


def _resolved_start(init: str) -> str:
    """A local start model as the trainer reads it: a run directory as its final model
    (``RUN`` and ``RUN/model`` are one start), resolved."""
    from stategym.rundir import resolved
    from stategym.train.start import model_source

    path = Path(model_source(init))
    return str(resolved(path)) if init != "tiny" and path.exists() else init


def claim(out: Path, experiment: str, config: Any, *, keeps_arms: bool = True) -> None:
    """Make ``out`` the folder of ``experiment`` at ``config`` before anything trains or
    plays: record it (:data:`RECORD`) in a new folder, go on in one that holds the same plan
    (a resumed run), refuse any other (module docstring). An experiment that keeps no arms
    (E0: a rerun rewrites every file) may change its configuration, not the experiment: its
    record is rewritten, and a folder of another experiment is refused all the same.

    Raises:
        UsageError: the folder holds another experiment or configuration, arms of an
            unknown one, or a record that cannot be read; the one line names what differs.
    """
    wanted = plan(experiment, config)
    held = _held(out)
    other_experiment = held is not None and held.get("experiment") != experiment
    if held is not None and held != wanted and (keeps_arms or other_experiment):
        raise UsageError(_refusal(out, held, wanted))
    if held != wanted or not (out / RECORD).is_file():
        out.mkdir(parents=True, exist_ok=True)
        write_json(out / RECORD, wanted)


def _held(out: Path) -> dict[str, Any] | None:
    """The plan ``out`` holds: its record, else (a folder written before records) the one
    its ``results.json`` names; ``None`` for a folder with neither and no arms."""
    record = out / RECORD
    if exists_as_file(record):
        held = _read(record)
        if held is None:
            raise UsageError(
                f"{record} cannot be read as an experiment's record; use another --out"
            )
        return held
    results = _read(out / RESULTS)
    if results is not None and isinstance(results.get("config"), dict):
        return plan(str(results.get("experiment")), results["config"])
    if (out / RUNS).exists():
        raise UsageError(
            f"{out / RUNS} holds trained arms but {out} records no configuration (a run "
            "stopped before its first results, by a stategym that kept no record), so they "
            f"cannot be resumed safely; use another --out, or remove {out / RUNS} to start over"
        )
    return None


def _read(path: Path) -> dict[str, Any] | None:
    try:
        data = orjson.loads(read_regular(path))
    except (OSError, orjson.JSONDecodeError):
        return None
    return data if isinstance(data, dict) else None


def _refusal(out: Path, held: dict[str, Any], wanted: dict[str, Any]) -> str:
    """The one line refusing ``wanted`` in ``out``, which holds ``held``."""
    if held.get("experiment") != wanted["experiment"]:
        return (
            f"{out} holds experiment {held.get('experiment')}'s run, not "
            f"{wanted['experiment']}'s; use another --out"
        )
    there, now = _flat(held.get("config", {})), _flat(wanted["config"])
    keys = [
        k for k in sorted(there.keys() | now.keys()) if there.get(k, _ABSENT) != now.get(k, _ABSENT)
    ]
    shown = [f"{k} {_shown(there, k)} there, {_shown(now, k)} now" for k in keys[:4]]
    more = f"; and {len(keys) - 4} more" if len(keys) > 4 else ""
    return (
        f"{out} holds {wanted['experiment']} run with other settings ({'; '.join(shown)}{more}): "
        "its arms would be trained further and mixed with these; use another --out, or the "
        "same settings to resume it"
    )


_ABSENT = object()


def _flat(data: Any, prefix: str = "") -> dict[str, Any]:
    """``{"recipe": {"init": x}}`` as ``{"recipe.init": x}``."""
    if not isinstance(data, dict):
        return {prefix: data}
    out: dict[str, Any] = {}
    for key, value in data.items():
        out |= _flat(value, f"{prefix}.{key}" if prefix else str(key))
    return out


def _shown(values: dict[str, Any], key: str) -> str:
    return repr(values[key]) if key in values else "absent"
