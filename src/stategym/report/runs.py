"""Reading run directories for the report: what each kind of run left on disk, typed.

Four kinds of directory are recognised by the files they hold (nothing is re-run):

- an **episode run** (``stategym run`` / ``eval``): ``trajectories.jsonl``, read with the
  strict reader :func:`stategym.rollout.read_log` (a cut last line is dropped and noted,
  never rewritten: the report only reads);
- a **training run** (``stategym train``): ``config.json`` and ``metrics.jsonl``, one
  object per iteration (every numeric key is kept; ``"eval"`` lines are held-out evaluations),
  read with the trainer's own reader (:func:`stategym.train.runlog.read_metrics`: a line the
  trainer would refuse on resume is refused here too, a cut last line dropped); a
  ``config.json`` that is there but is no JSON object (a folder, a device, damaged bytes)
  is refused, and only a missing one is shown as an empty config;
- a **protocol run** (``stategym protocol``): ``cells.json`` and, for each agent it lists
  (and no other), a folder with its ``report.json`` and ``trajectories.jsonl``, each checked
  to be of the configuration ``cells.json`` holds (:mod:`.protocol_files`);
- an **experiment run** (``stategym experiment``): ``results.json`` naming its
  ``"experiment"``, with ``raw.json``, ``table.md`` and ``plots/``
  (:mod:`stategym.experiments.output`), ``raw.json`` and ``table.md`` checked against the
  digests ``results.json`` holds of them, and every estimate's numbers checked to be
  numbers or ``null``. The plot files are listed by name, never read: the report redraws
  from the JSON (:mod:`stategym.report.experiment` says why).

:func:`read_runs` reads the directories of one report: each directory once, and no episode
in two of them, since the page would show it twice. :func:`refuse_output` keeps the report
off every file it reads, and off anything that is not a regular file. Every JSON file here
is parsed by one rule (:func:`stategym.kernel.files.json_value`): deep nesting or a huge
integer is the same one-line refusal as broken JSON. Every file is read only as a regular
file: one of a run's files that is there as a FIFO (whose read would wait for a writer
forever), a device, a socket or a folder is refused in one line naming it
(:class:`~stategym.kernel.files.NotAFile`), never waited on nor taken for a missing file.
"""

from __future__ import annotations

import json
import math
from collections.abc import Hashable, Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from stategym.experiments.output import FILES, PLOTS, RAW, RESULTS, TABLE, digest
from stategym.kernel.errors import UsageError
from stategym.kernel.files import (
    exists_as_file,
    not_a_file,
    open_regular,
    read_json,
    read_regular,
    written_path,
)
from stategym.kernel.trajectory import Trajectory
from stategym.rollout.log import read_log, refuse_duplicates, refuse_unverified
from stategym.rollout.spec import key_words, trajectory_key
from stategym.rundir import resolved

from .protocol_files import (
    CELLS,
    LOG,
    REPORT,
    agent_folder,
    read_agent_log,
    read_agent_report,
    read_cells,
)

TRAJECTORIES = "trajectories.jsonl"
TRAIN_CONFIG = "config.json"
TRAIN_METRICS = "metrics.jsonl"


@dataclass(frozen=True, slots=True)
class EpisodeRun:
    """The trajectories of one run directory.

    Attributes:
        path: the directory.
        trajectories: every readable episode, in file order.
        notes: what the reader dropped (a cut last line), for the page to say.
    """

    path: Path
    trajectories: tuple[Trajectory, ...]
    notes: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class TrainingRun:
    """The per-iteration metrics of one training run.

    Attributes:
        path: the directory.
        config: the run's ``config.json``.
        train: the numeric values of each training line, by key (``iteration`` included).
        eval: the same for the held-out evaluation lines.
    """

    path: Path
    config: Mapping[str, Any]
    train: tuple[Mapping[str, float], ...]
    eval: tuple[Mapping[str, float], ...]


@dataclass(frozen=True, slots=True)
class ProtocolRun:
    """The per-agent protocol reports of one protocol run.

    Attributes:
        path: the directory.
        reports: ``agent -> report.json``, in the order ``cells.json`` lists the agents.
        episodes: the agents' trajectories, as one episode run per agent.
    """

    path: Path
    reports: Mapping[str, Mapping[str, Any]]
    episodes: tuple[EpisodeRun, ...]


@dataclass(frozen=True, slots=True)
class ExperimentRun:
    """What one ``stategym experiment`` run wrote.

    Attributes:
        path: the directory.
        results: ``results.json`` (its ``"experiment"`` names which one).
        raw: ``raw.json``, or an empty mapping where it is absent.
        table: the text of ``table.md`` (empty where it is absent).
        plots: the names of the run's files in ``plots/``, sorted (read only for their
            digests).
        notes: what could not be checked (files of an older stategym), for the page to say.
    """

    path: Path
    results: Mapping[str, Any]
    raw: Mapping[str, Any]
    table: str
    plots: tuple[str, ...]
    notes: tuple[str, ...] = ()


Run = EpisodeRun | TrainingRun | ProtocolRun | ExperimentRun


REPORT_START = b"<!DOCTYPE html>"
"""How every page :func:`~.page.build` writes starts: an existing ``--out`` that starts
otherwise is not a report, and is never written over."""
REPORT_SUFFIXES = frozenset({".html", ".htm"})
"""The names a report may have inside a run directory: no file of a run ends so."""


def refuse_output(out: Path, paths: Sequence[Path], *, through_link: bool = False) -> None:
    """Refuse, before anything is read, to write the report of ``paths`` to ``out`` where
    that could destroy a file: ``out`` is a folder, exists and is not a regular file (a
    device such as ``/dev/null``, a FIFO, a socket: the page is renamed over ``out``, which
    would replace it; :func:`~stategym.kernel.files.not_a_file`), is an existing file that
    is not an earlier report (it does not start with :data:`REPORT_START`; an empty file is
    allowed), or it lies inside one of the run directories ``paths`` (links followed) without an
    ``.html`` name: every file of a run (``trajectories.jsonl``, ``summary.json``,
    ``metrics.jsonl``, ``cells.json``, ``results.json``, ...) is named otherwise, so the
    report can never be written over a file it reads. An earlier report is written over.
    A link that ``through_link`` (``report --out``, a path the user named) is written through
    (the file it names is the report: :func:`~stategym.kernel.files.written_path`), so that
    file is what is checked; a dangling link into a missing folder, or a loop, is refused.
    Otherwise (a ``--report`` flag's ``OUT/report.html``) a link is replaced as a name
    (:func:`~stategym.kernel.files.replace_bytes`), and still refused where what it names is
    no earlier report.

    Raises:
        UsageError: naming ``out`` and why.
        OSError: ``through_link`` and ``out`` is a link loop (``ELOOP``, naming it).
    """
    if through_link:
        written_path(out)
    kind = not_a_file(out)
    if kind == "a folder":
        raise UsageError(f"--out {out} is a folder; give the HTML file to write")
    if kind is not None:
        raise UsageError(
            f"--out {out} is {kind}, not a regular file: the report is renamed over --out, "
            "which would replace it; give the HTML file to write"
        )
    if out.is_file():
        with open_regular(out) as handle:
            start = handle.read(len(REPORT_START))
        if start and start != REPORT_START:
            raise UsageError(
                f"--out {out} exists and is not an HTML report (it does not start with "
                f"{REPORT_START.decode()}); writing the report would destroy it: give another path"
            )
    target = resolved(out) if through_link else resolved(out.parent) / out.name
    for path in paths:
        if target.suffix.lower() not in REPORT_SUFFIXES and target.is_relative_to(resolved(path)):
            raise UsageError(
                f"--out {out} lies in the run directory {path} but is not named *.html, as a "
                "file of the run could be: give a name ending in .html"
            )


def read_runs(paths: Sequence[Path], *, verify: bool = False) -> list[Run]:
    """The runs in ``paths``, in order, each directory given once and each episode in one
    of them only (``verify``: each episode's log checked against its replay first,
    :func:`~stategym.rollout.refuse_unverified`).

    Raises:
        UsageError: one directory given twice (``a a``, ``a ./a``, a link to it), an episode
            in two episode runs (a copy of a run, or runs that overlap), or what
            :func:`read_run` raises.
    """
    given: dict[Path, Path] = {}
    for path in paths:
        first = given.get(resolved(path))
        if first is not None:
            raise UsageError(f"{first} and {path} are the same run directory; give it once")
        given[resolved(path)] = path
    runs = [read_run(path, verify=verify) for path in paths]
    refuse_shared_episodes([(run.path, _episodes_of(run)) for run in runs])
    return runs


def _episodes_of(run: Run) -> tuple[Trajectory, ...]:
    """Every episode of ``run`` (a protocol run's agents' together; none for the others)."""
    if isinstance(run, EpisodeRun):
        return run.trajectories
    if isinstance(run, ProtocolRun):
        return tuple(t for episodes in run.episodes for t in episodes.trajectories)
    return ()


def refuse_shared_episodes(runs: Sequence[tuple[Path, Sequence[Trajectory]]]) -> None:
    """Raise if one episode is in two of the run directories ``(path, episodes)``, which
    the page would show twice (an episode run's are also counted twice in the overview).

    The episode's identity is the one every reader uses
    (:func:`~stategym.rollout.spec.trajectory_key`: a protocol episode's role, cell, split
    and shots are part of it); a copy within one file is :func:`read_episodes`' refusal,
    this is its counterpart across directories (it names the two directories, not lines to
    remove). Within one protocol run the agents' logs share the expert's plan and reference
    episodes by design; only another directory holding one is refused.

    Raises:
        UsageError: naming the first two runs that share episodes, how many, and one of them.
    """
    where: dict[Hashable, Path] = {}
    for path, episodes in runs:
        shared = []
        for trajectory in episodes:
            key = trajectory_key(trajectory)
            first = where.setdefault(key, path)
            if first != path:
                shared.append((first, key))
        if shared:
            other, key = shared[0]
            count = len({k for first, k in shared if first == other})
            raise UsageError(
                f"{other} and {path} hold {count} of the same episodes (same domain, seed, "
                f"knobs, agent and sample; e.g. {key_words(key)}), which the report would "
                "count twice; give one of them"
            )


def read_run(path: Path, *, verify: bool = False) -> Run:
    """The run in ``path``, by the files it holds (``verify``: see :func:`read_runs`).

    Raises:
        UsageError: ``path`` is not a folder, holds none of the files of a known run, or
            holds one of them as anything but a regular file (a FIFO, a folder: named).
    """
    if not path.is_dir():
        raise UsageError(f"{path} is not a run directory")
    if exists_as_file(path / CELLS):
        return read_protocol(path)
    if exists_as_file(path / RESULTS):
        return read_experiment(path)
    if exists_as_file(path / TRAJECTORIES):
        return read_episodes(path, verify=verify)
    if exists_as_file(path / TRAIN_METRICS):
        return read_training(path)
    raise UsageError(
        f"{path} holds no {TRAJECTORIES}, {TRAIN_METRICS}, {CELLS} or {RESULTS}: "
        "not a run directory"
    )


def read_episodes(path: Path, *, verify: bool = False) -> EpisodeRun:
    """The trajectories of ``path/trajectories.jsonl`` (``verify``: each checked against its
    replay, :func:`~stategym.rollout.refuse_unverified`)."""
    file = path / TRAJECTORIES
    log = read_log(file)
    refuse_duplicates(file, log.trajectories)
    if verify:
        refuse_unverified(file, log.trajectories)
    notes = () if log.cut_line is None else (f"ignored {file}:{log.cut_line}, a cut last line",)
    return EpisodeRun(path, tuple(log.trajectories), notes)


def _numbers(line: Mapping[str, Any]) -> dict[str, float]:
    """The finite numbers of one metrics line, nested objects flattened as ``a.b``."""
    found: dict[str, float] = {}
    for key, value in line.items():
        if isinstance(value, int | float) and math.isfinite(value):  # a bool is an int
            found[key] = float(value)
        elif isinstance(value, Mapping):
            found.update({f"{key}.{k}": v for k, v in _numbers(value).items()})
    return found


def _is_eval(line: Mapping[str, Any]) -> bool:
    kind = line.get("eval")
    return kind is True or isinstance(kind, str | Mapping) or line.get("kind") == "eval"


def read_training(path: Path) -> TrainingRun:
    """The config and metric lines of a training run, ``metrics.jsonl`` read by the
    trainer's rule (:func:`~stategym.train.runlog.read_metrics`: a cut last line dropped,
    any other unreadable line refused as ``FILE:LINE``).

    Raises:
        UsageError: a damaged metrics line, or a ``config.json`` that is there but is not a
            JSON object (a folder, a device, damaged bytes).
    """
    from stategym.train.runlog import read_metrics

    config_file = path / TRAIN_CONFIG
    exists = config_file.exists() or config_file.is_symlink()
    config = _json_object(config_file) if exists else {}
    train: list[dict[str, float]] = []
    evals: list[dict[str, float]] = []
    for line in read_metrics(path):
        if _is_eval(line):
            inner = line["eval"] if isinstance(line.get("eval"), Mapping) else line
            evals.append({**_numbers(inner), **_numbers({"iteration": line["iteration"]})})
        else:
            train.append(_numbers(line))
    return TrainingRun(path, config, tuple(train), tuple(evals))


def read_protocol(path: Path) -> ProtocolRun:
    """The per-agent reports and trajectories of a protocol run: the agents its
    ``cells.json`` lists and nothing else in the folder, each report and log checked to
    belong to that configuration (:mod:`.protocol_files`)."""
    index = read_cells(path)
    reports: dict[str, Mapping[str, Any]] = {}
    episodes: list[EpisodeRun] = []
    for agent in index.agents:
        folder = agent_folder(path, agent)
        for name in (REPORT, LOG):
            exists_as_file(folder / name)  # a FIFO is refused as one, never called missing
        reports[agent] = read_agent_report(folder, agent, index.settings)
        config = replace(index.config, agent=agent)
        episodes.append(EpisodeRun(folder, read_agent_log(folder / LOG, config, index.cells)))
    return ProtocolRun(path, reports, tuple(episodes))


def _text(file: Path) -> str:
    """The UTF-8 text of ``file`` (every file stategym writes is UTF-8)."""
    data = read_regular(file)
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as error:
        line = data[: error.start].count(b"\n") + 1
        raise UsageError(f"{file}:{line}: not UTF-8 text (byte {error.start})") from None


def _json_object(file: Path) -> Mapping[str, Any]:
    """The JSON object in ``file`` (:func:`~stategym.kernel.files.read_json`: a parse that
    fails in any way, or a path that is not a regular file, is one line naming it)."""
    data = read_json(file)
    if not isinstance(data, dict):
        raise UsageError(f"{file}: not a JSON object")
    return data


_RESULTS_SECTIONS: Mapping[str, type] = {
    "estimates": dict,
    "seeds": list,
    "cells": list,
    "not_run": list,
}
"""The sections of ``results.json`` the report reads as one JSON type in every experiment
(``agents`` is a list in some, an object in others), with that type."""
_RAW_SECTIONS: Mapping[str, type] = {"measures": list}
"""The same for ``raw.json``."""


def _check_sections(file: Path, data: Mapping[str, Any], sections: Mapping[str, type]) -> None:
    """Refuse a section of the wrong type (a hand-edited or foreign file): the report would
    fail on it half-way with an AttributeError."""
    for name, kind in sections.items():
        if name in data and not isinstance(data[name], kind):
            what = "a JSON object" if kind is dict else "a JSON list"
            raise UsageError(f"{file}: {name!r} is not {what}")


def read_experiment(path: Path) -> ExperimentRun:
    """The results, raw numbers, tables and plot names of an experiment run, the raw numbers
    and tables proven to be the ones written with ``results.json``
    (:func:`_refuse_other_runs_files`)."""
    results = _json_object(path / RESULTS)
    if not isinstance(results.get("experiment"), str):
        raise UsageError(f"{path / RESULTS} names no experiment: not an experiment run")
    notes = _refuse_other_runs_files(path, results)
    raw = _json_object(path / RAW) if exists_as_file(path / RAW) else {}
    _check_sections(path / RESULTS, results, _RESULTS_SECTIONS)
    _check_sections(path / RAW, raw, _RAW_SECTIONS)
    _refuse_unreadable_estimates(path / RESULTS, results)
    table = _text(path / TABLE) if exists_as_file(path / TABLE) else ""
    plots, others = _plot_files(path, results.get(FILES))
    if others:
        notes += (f"{path / PLOTS} also holds {', '.join(others)}, not written by this run",)
    return ExperimentRun(path, results, raw, table, plots, notes)


def _plot_files(path: Path, files: Any) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """The names of this run's plot files, and of the other files in ``plots/``, sorted.
    A ``results.json`` that names plots (one written since plots have digests) says which
    are this run's; an older one cannot, and every file there is listed as the run's."""
    folder = path / PLOTS
    present = sorted(p.name for p in folder.iterdir()) if folder.is_dir() else []
    named = {name.removeprefix(f"{PLOTS}/") for name in files or () if name not in (RAW, TABLE)}
    if not named:
        return tuple(present), ()
    return tuple(sorted(named)), tuple(name for name in present if name not in named)


def _refuse_other_runs_files(path: Path, results: Mapping[str, Any]) -> tuple[str, ...]:
    """Refuse a ``raw.json``, ``table.md`` or plot file that is not the one ``results.json``
    was written with: the experiment writes ``results.json`` last, with their digests
    (:mod:`stategym.experiments.output`), so a run stopped while writing, over an earlier
    run, leaves files that do not match. A ``results.json`` without digests (an older
    stategym's) cannot be checked: the note returned says so.

    Raises:
        UsageError: naming each file that does not match, or is missing.
    """
    files = results.get(FILES)
    if files is None:
        return (
            f"{path / RESULTS} holds no digests of {RAW} and {TABLE} (an older stategym wrote "
            "it): not checked that they are of the same run",
        )
    if not (
        isinstance(files, Mapping) and {RAW, TABLE} <= set(files) <= {RAW, TABLE, *_plots(files)}
    ):
        raise UsageError(
            f"{path / RESULTS}: {FILES!r} is not the digests of {RAW}, {TABLE} and "
            f"files {PLOTS}/NAME"
        )
    stale = [
        name
        for name in files
        if not exists_as_file(path / name) or digest(read_regular(path / name)) != files[name]
    ]
    if stale:
        named = " and ".join(str(path / name) for name in stale)
        verb = "are not the ones" if len(stale) > 1 else "is not the one"
        raise UsageError(
            f"{named} {verb} {path / RESULTS} was written "
            "with (another digest, or missing): the folder mixes two runs, as a "
            "run stopped while writing leaves it; run the experiment again"
        )
    return ()


def _plots(files: Mapping[str, Any]) -> list[str]:
    """The keys of ``files`` that name one file directly inside ``plots/``."""
    return [
        name
        for name in files
        if isinstance(name, str)
        and name.startswith(f"{PLOTS}/")
        and name.count("/") == 1
        and name.removeprefix(f"{PLOTS}/") not in ("", ".", "..")
    ]


def _refuse_unreadable_estimates(file: Path, data: Any, where: str = "") -> None:
    """Refuse an estimate (an object with ``mean``, ``low`` and ``high``) whose numbers are
    not numbers or ``null`` (undefined): a figure would have to invent a value for it.

    Raises:
        UsageError: naming the estimate's place in the file and the value.
    """
    if not isinstance(data, Mapping):
        return
    if {"mean", "low", "high"} <= set(data):
        for key in ("mean", "low", "high"):
            value = data[key]
            finite = isinstance(value, float) and math.isfinite(value)
            number = finite or (isinstance(value, int) and not isinstance(value, bool))
            if value is not None and not number:
                raise UsageError(f"{file}: {where}.{key} is {json.dumps(value)}, not a number")
        return
    for key, value in data.items():
        _refuse_unreadable_estimates(file, value, f"{where}.{key}" if where else str(key))
