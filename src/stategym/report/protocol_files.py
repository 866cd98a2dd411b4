"""The files of a protocol run directory, read strictly by every reader of one.

::

    OUT/cells.json                   the run's index: configuration, agents, notes, cells
    OUT/<agent>/trajectories.jsonl   every episode the agent's protocol played, tagged in meta
    OUT/<agent>/report.json          the agent's report (its ``config`` names the agent)
    OUT/protocol.md                  every table, as Markdown

(``<agent>`` is :func:`agent_folder`'s name for it; ``stategym protocol`` refuses two agents
whose folders would be one, :func:`refuse_shared_folders`.) ``cells.json`` is written last,
so it names a run whose every agent finished; ``stategym protocol --report`` and ``stategym
report`` read the agents it lists, from their folders, and nothing else in ``OUT`` (an old
agent's folder left there is not part of the run). ``cells.json`` is checked whole before
anything is built from it (:func:`read_cells`: every setting within the command line's
bounds, each cell once, the notes of each agent); each agent's ``report.json`` must have been
written with its configuration and hold its sections with the types the report gives them
(:func:`read_agent_report`), and its log must hold exactly the episodes that configuration
plays, probe pairs included (:func:`read_agent_log`); anything else is refused in one line,
never shown as part of the run.

``stategym protocol`` writes a folder only if it holds no run of other settings
(:func:`refuse_other_settings`): the same command again replays the run from the start and
rewrites every file with the same bytes.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import orjson

from stategym.kernel.errors import UsageError
from stategym.kernel.files import exists_as_file, read_regular
from stategym.kernel.task import SEED_LIMIT
from stategym.kernel.trajectory import Trajectory
from stategym.rollout.log import read_log, refuse_duplicates

from .protocol_episodes import describe, episode_key, expected_episodes, most_pairs

if TYPE_CHECKING:
    from stategym.topology.generalisation import ProtocolConfig
    from stategym.topology.split import Cell

CELLS = "cells.json"
REPORT = "report.json"
LOG = "trajectories.jsonl"

LEAST: Mapping[str, int] = {
    **dict.fromkeys(("episodes", "plans", "budget"), 1),
    **dict.fromkeys(("seed", "probes", "compositions"), 0),
}
"""The whole-number settings of ``cells.json`` and their least values: the bounds the
command line gives them (``--episodes``, ``--budget`` at least 1; ``--seed``, ``--probes``,
``--compositions`` at least 0; every one below 2**64), and ``plans`` (no option: the command
plays 8) at least 1."""

SECTIONS: Mapping[str, type] = {
    **{"version": int, "config": dict, "notes": list, "cells": list, "placements": list},
    **dict.fromkeys(("splits", "bands", "gaps", "score_vs_distance", "collapse", "probes"), dict),
}
"""The JSON type of each section of an agent's ``report.json``, as
:func:`~stategym.topology.report.build_report` writes it (a section left out is not shown)."""
CELL_FIELDS: Mapping[str, type | tuple[type, ...]] = {
    **dict.fromkeys(("split", "domain", "nearest", "band"), str),
    **dict.fromkeys(("exact", "seen"), bool),
    **dict.fromkeys(("distance", "proxy"), (int, float)),
}
"""The JSON type of each field of a cell in ``cells.json``
(:meth:`~stategym.topology.split.Cell.to_dict`)."""
_JSON_NAMES: Mapping[type, str] = {int: "whole number", dict: "JSON object", list: "JSON list"}


def agent_folder(out: Path, agent: str) -> Path:
    """The folder of ``agent``'s files in the run ``out`` (its name with every character
    but letters, digits and ``-_.`` written as ``_``: ``openai:qwen`` -> ``openai_qwen``).

    Two names can give one folder (``hf:m/a`` and ``hf:m_a``): a run of both is refused
    (:func:`refuse_shared_folders`) rather than the mapping changed, so every run folder
    written so far keeps its folder names."""
    return out / "".join(c if c.isalnum() or c in "-_." else "_" for c in agent)


def shared_folder(agents: Sequence[str], *, ignore_case: bool) -> tuple[str, str, str] | None:
    """The first two of ``agents`` whose :func:`agent_folder` names are one (equal ignoring
    case, with ``ignore_case``), and that name; ``None`` when every agent has its own."""
    seen: dict[str, str] = {}
    for agent in agents:
        name = agent_folder(Path(), agent).name
        key = name.casefold() if ignore_case else name
        if key in seen:
            return seen[key], agent, name
        seen[key] = agent
    return None


def refuse_shared_folders(agents: Sequence[str]) -> None:
    """Refuse, before anything plays, two agents whose files would go to one folder: the
    second agent's log and report would replace the first's, and the run could not be read
    back. Names equal but for case count as one folder too: on macOS and Windows they are.

    Raises:
        UsageError: naming the two agents and the folder.
    """
    shared = shared_folder(agents, ignore_case=True)
    if shared is not None:
        first, second, name = shared
        raise UsageError(
            f"agents {first!r} and {second!r} would share the folder {name!r} (an agent's "
            "folder is its name with every character but letters, digits and -_. written as _, "
            "and names equal but for case are one folder on macOS and Windows): the second's "
            "files would replace the first's; evaluate them with two --out folders"
        )


@dataclass(frozen=True, slots=True)
class Index:
    """A protocol run's ``cells.json``.

    Attributes:
        config: the run's configuration (its ``agent`` is the first agent).
        cells: the evaluation cells.
        agents: the agents of the run, in order.
        notes: each agent's notes, from ``agent_notes`` (an older ``cells.json`` has only
            ``notes``, the last agent's, which every agent is then given).
        settings: ``config`` as the file holds it (what each ``report.json``'s ``config``
            must equal, but for the agent).
    """

    config: ProtocolConfig
    cells: tuple[Cell, ...]
    agents: tuple[str, ...]
    notes: Mapping[str, tuple[str, ...]]
    settings: Mapping[str, Any]


def _json_object(path: Path) -> dict[str, Any]:
    try:
        data = orjson.loads(read_regular(path))
    except orjson.JSONDecodeError as error:
        raise UsageError(f"{path}:{error.lineno}: not JSON ({error.msg})") from None
    if not isinstance(data, dict):
        raise UsageError(f"{path} has a field of the wrong type: not a JSON object")
    return data


def read_cells(folder: Path) -> Index:
    """``folder/cells.json``: the run's configuration, cells, agents and notes, each checked
    before anything is built from them (a hand-edited ``episodes`` of 10**9 once filled the
    memory, audit 13B F11).

    Raises:
        UsageError: the file is missing, not JSON, or lacks a field or has one of the wrong
            type or out of the command line's bounds (naming it), a cell twice, or two
            agents in one folder.
    """
    from stategym.kernel.errors import UnknownDomainError
    from stategym.registry import get_domain
    from stategym.topology.generalisation import ProtocolConfig

    path = folder / CELLS
    if not exists_as_file(path):
        raise UsageError(f"no {CELLS} in {folder}: not a protocol run directory")
    saved = _json_object(path)
    try:
        agents = _agents(saved["agents"])
        notes = _notes(saved, agents)
        settings = saved["config"]
        _check_settings(settings)
        config = ProtocolConfig.from_dict(settings)
        cells = _cells(saved["cells"])
    except KeyError as error:
        raise UsageError(f"{path} lacks {error}: not a protocol run's {CELLS}") from None
    except (TypeError, ValueError, AttributeError) as error:  # a field of the wrong shape
        raise UsageError(f"{path} has a bad field: {error}") from None
    try:
        for name in (*config.train, *(cell.domain for cell in cells)):
            get_domain(name)
    except UnknownDomainError as error:  # a KeyError, so apart from the fields' above
        raise UsageError(f"{path} names a domain there is not: {error.args[0]}") from None
    return Index(config, cells, agents, notes, settings)


def _agents(value: object) -> tuple[str, ...]:
    """The agents of ``cells.json``: a list of distinct names, at least one (as
    ``--agents`` takes them), each with its own folder (a run of two agents in one folder,
    written before :func:`refuse_shared_folders`, kept only the second's files)."""
    if not isinstance(value, list) or not value or not all(isinstance(a, str) for a in value):
        raise TypeError("'agents' is not a list of agent names")
    if len(set(value)) < len(value):
        raise ValueError("'agents' names an agent twice")
    shared = shared_folder(value, ignore_case=False)
    if shared is not None:
        first, second, name = shared
        raise ValueError(
            f"'agents' lists {first!r} and {second!r}, whose files share the folder {name!r} "
            "(the run kept only the second's); run the protocol again, one of them per --out"
        )
    return tuple(value)


def _notes(saved: Mapping[str, Any], agents: Sequence[str]) -> dict[str, tuple[str, ...]]:
    """Each agent's notes: ``agent_notes``, ``{agent: [note, ...]}``; in an older
    ``cells.json``, which has none, the one list ``notes`` for every agent."""
    every = _texts(saved.get("notes", []), "'notes'")
    if "agent_notes" not in saved:
        return dict.fromkeys(agents, every)
    per_agent = saved["agent_notes"]
    if not isinstance(per_agent, dict) or set(per_agent) != set(agents):
        raise TypeError("'agent_notes' is not an object of the notes of each of 'agents'")
    return {agent: _texts(per_agent[agent], f"the notes of {agent!r}") for agent in agents}


def _texts(value: object, what: str) -> tuple[str, ...]:
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise TypeError(f"{what} is not a list of texts")
    return tuple(value)


def _check_settings(settings: object) -> None:
    """Check ``cells.json``'s ``config`` as the command line checks its options, before
    :meth:`ProtocolConfig.from_dict` turns ``"0"`` into 0 and 1.5 into 1.

    Raises:
        TypeError, ValueError: naming the setting and what it must be.
        KeyError: a setting is missing.
    """
    if not isinstance(settings, Mapping):
        raise TypeError("'config' is not a JSON object")
    for name, least in LEAST.items():
        _whole(settings[name], f"config {name!r}", least)
    if settings["seed"] + settings["episodes"] > SEED_LIMIT:
        raise ValueError("config 'seed' + 'episodes' runs past the largest seed, 2**64 - 1")
    shots = settings["shots"]
    if not isinstance(shots, list) or not shots:
        raise TypeError("config 'shots' is not a list of whole numbers")
    for k in shots:
        _whole(k, "config 'shots'", 0)
    if len(set(shots)) < len(shots):
        raise ValueError("config 'shots' gives a number twice")
    for name in ("agent", "knobs"):
        if not isinstance(settings[name], str):
            raise TypeError(f"config {name!r} is {settings[name]!r}, not a text")
    train = settings["train"]
    if not isinstance(train, list) or not train or not all(isinstance(n, str) for n in train):
        raise TypeError("config 'train' is not a list of domain names")
    if settings["demos"] not in ("train", "target"):
        raise ValueError(f"config 'demos' is {settings['demos']!r}, not 'train' or 'target'")


def _whole(value: object, what: str, least: int) -> None:
    """Refuse a value that is not a whole number in ``[least, 2**64)`` (a JSON ``true`` is
    no number; ``"3"`` and ``1.5`` are not whole numbers)."""
    if isinstance(value, bool) or not isinstance(value, int):
        raise TypeError(f"{what} is {value!r}, not a whole number")
    if not least <= value < SEED_LIMIT:
        raise ValueError(f"{what} is {value}, not a whole number >= {least} and below 2**64")


def _cells(value: object) -> tuple[Cell, ...]:
    """The cells, each a JSON object with fields of the types a cell writes, and each
    ``(split, domain)`` once (a cell listed twice was reported twice)."""
    from stategym.topology.split import Cell

    if not isinstance(value, list) or not all(isinstance(c, dict) for c in value):
        raise TypeError("'cells' is not a list of JSON objects")
    for cell in value:
        for name, kind in CELL_FIELDS.items():
            found = cell.get(name)
            if isinstance(found, bool) != (kind is bool) or not isinstance(found, kind):
                raise TypeError(f"a cell's {name!r} is {found!r}: not what a cell holds there")
    cells = tuple(Cell.from_dict(c) for c in value)
    places = Counter((str(c.split), c.domain) for c in cells)
    twice = next((place for place, n in places.items() if n > 1), None)
    if twice is not None:
        raise ValueError(f"'cells' lists the {twice[0]} cell {twice[1]!r} twice")
    return cells


def _changed(old: Mapping[str, Any], new: Mapping[str, Any]) -> list[str]:
    """The keys whose values differ between two configurations, sorted."""
    return sorted(str(k) for k in set(old) | set(new) if old.get(k) != new.get(k))


def read_agent_report(folder: Path, agent: str, settings: Mapping[str, Any]) -> dict[str, Any]:
    """``folder/report.json`` of ``agent``, checked to be the one written with ``settings``
    (``cells.json``'s configuration) for that agent, its sections of the types the report
    gives them (:data:`SECTIONS`; each of its cells an object whose ``shots`` is a whole
    number): the page reads them without checking each again.

    Raises:
        UsageError: the file is missing or unreadable, has a section of the wrong type
            (naming it), or was written with other settings (naming them: a report left by
            an earlier run of another configuration).
    """
    path = folder / REPORT
    if not exists_as_file(path):
        raise UsageError(f"{path} is missing, but {CELLS} lists {agent!r}: run the protocol again")
    report = _json_object(path)
    _check_sections(path, report)
    changed = _changed({**settings, "agent": agent}, report.get("config", {}))
    if changed:
        raise UsageError(
            f"{path} was written with other settings than {CELLS} ({', '.join(changed)}): "
            "not this run's report; run the protocol again"
        )
    return report


def _check_sections(path: Path, report: Mapping[str, Any]) -> None:
    for name, kind in SECTIONS.items():
        value = report.get(name, kind())
        if isinstance(value, bool) or not isinstance(value, kind):
            raise UsageError(f"{path}: {name!r} is not a {_JSON_NAMES[kind]}")
    for cell in report.get("cells", []):
        shots = cell.get("shots", 0) if isinstance(cell, dict) else None
        if isinstance(shots, bool) or not isinstance(shots, int):
            raise UsageError(f"{path}: 'cells' holds {cell!r}, not a cell with whole 'shots'")


def refuse_other_settings(out: Path, settings: Mapping[str, Any], agents: Sequence[str]) -> None:
    """Refuse to write the run ``settings`` of ``agents`` into ``out`` where it holds a
    protocol run of other settings: its ``cells.json``, or the ``report.json`` of an agent
    folder (an interrupted run leaves those before ``cells.json``). Rewriting part of such
    a folder would mix two runs; the same settings are allowed (the run is played again).

    Raises:
        UsageError: naming the settings that differ (``agents`` for another list of agents).
    """
    changed: set[str] = set()
    if exists_as_file(out / CELLS):
        saved = _json_object(out / CELLS)
        changed |= _changed_but_agent(saved.get("config"), settings)
        if saved.get("agents") != list(agents):
            changed.add("agents")
    folders = sorted(p for p in out.iterdir() if exists_as_file(p / REPORT)) if out.is_dir() else []
    for folder in folders:
        config = _json_object(folder / REPORT).get("config")
        if not isinstance(config, Mapping) or config.get("agent") not in agents:
            changed.add("agents")  # a folder of an agent this run does not play
        else:
            changed |= _changed_but_agent(config, settings)
    if changed:
        raise UsageError(
            f"{out} holds a protocol run with other settings ({', '.join(sorted(changed))}); "
            "use another --out, or the same settings to run it again"
        )


def _changed_but_agent(old: object, new: Mapping[str, Any]) -> set[str]:
    """The settings but ``agent`` that differ (all of them where ``old`` is no object)."""
    if not isinstance(old, Mapping):
        return {str(k) for k in new if k != "agent"}
    return set(_changed({**old, "agent": None}, {**new, "agent": None}))


def read_agent_log(
    file: Path, config: ProtocolConfig, cells: Sequence[Cell]
) -> tuple[Trajectory, ...]:
    """One agent's episodes, read as a run directory's are (:func:`~stategym.rollout.read_log`
    and :func:`~stategym.rollout.refuse_duplicates`), each checked to be one the run played
    for ``config.agent`` (the expert plays the plans and references) over ``cells`` and
    ``config``'s seeds, and none missing. Probe pairs are checked the same way: the probe
    search is run again (:func:`~stategym.report.protocol_episodes.expected_episodes`), so
    each pair must be one it finds, with both its tasks, and none it finds may be left out
    (a lost task once failed the report with a ``KeyError``, audit 13B F4).

    Raises:
        UsageError: a cut or unreadable line, a duplicated, foreign or missing episode.
    """
    if not exists_as_file(file):
        raise UsageError(f"{file} is missing: run the protocol again")
    log = read_log(file)
    if log.cut_line is not None:
        raise UsageError(f"{file}:{log.cut_line}: a cut last line; run the protocol again")
    refuse_duplicates(file, log.trajectories)
    expected = expected_episodes(config, cells, most_pairs(log.trajectories))
    found = set()
    for line, trajectory in enumerate(log.trajectories, start=1):
        role = trajectory.run.role
        agent = config.agent if role in ("agent", "probe") else "expert"
        if trajectory.agent != agent:
            raise UsageError(
                f"{file}:{line}: a {role} episode of {trajectory.agent!r}, not of {agent!r}: "
                f"not the log of {config.agent!r}"
            )
        key = episode_key(trajectory)
        if key not in expected:
            where = "probe pairs" if role == "probe" else "cells and seeds"
            raise UsageError(
                f"{file}:{line}: {role} episode ({describe(key)}) is not one of the run's "
                f"{where} in {CELLS}"
            )
        found.add(key)
    total = expected.count()
    if len(found) < total:
        first = next(key for key in expected if key not in found)
        raise UsageError(
            f"{file} lacks {total - len(found)} of the run's {total} plan, reference, agent "
            f"and probe episodes (e.g. {first[0]} {describe(first)}): run the protocol again"
        )
    return tuple(log.trajectories)
