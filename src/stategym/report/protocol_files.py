"""The files of a protocol run directory, read strictly by every reader of one.

::

    OUT/cells.json                   the run's index: configuration, agents, notes, cells
    OUT/<agent>/trajectories.jsonl   every episode the agent's protocol played, tagged in meta
    OUT/<agent>/report.json          the agent's report (its ``config`` names the agent)
    OUT/protocol.md                  every table, as Markdown

(``<agent>`` is :func:`agent_folder`'s name for it.) ``cells.json`` is written last, so it
names a run whose every agent finished; ``stategym protocol --report`` and ``stategym
report`` read the agents it lists, from their folders, and nothing else in ``OUT`` (an old
agent's folder left there is not part of the run). Each agent's ``report.json`` must have
been written with ``cells.json``'s configuration (:func:`read_agent_report`) and its log must
hold exactly the episodes that configuration plays (:func:`read_agent_log`); anything else
is refused in one line, never shown as part of the run.

``stategym protocol`` writes a folder only if it holds no run of other settings
(:func:`refuse_other_settings`): the same command again replays the run from the start and
rewrites every file with the same bytes.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import orjson

from stategym.kernel.errors import UsageError
from stategym.kernel.trajectory import Trajectory
from stategym.rollout.log import read_log, refuse_duplicates

if TYPE_CHECKING:
    from stategym.topology.generalisation import ProtocolConfig
    from stategym.topology.split import Cell

CELLS = "cells.json"
REPORT = "report.json"
LOG = "trajectories.jsonl"


def agent_folder(out: Path, agent: str) -> Path:
    """The folder of ``agent``'s files in the run ``out`` (its name with every character
    but letters, digits and ``-_.`` written as ``_``: ``openai:qwen`` -> ``openai_qwen``)."""
    return out / "".join(c if c.isalnum() or c in "-_." else "_" for c in agent)


@dataclass(frozen=True, slots=True)
class Index:
    """A protocol run's ``cells.json``.

    Attributes:
        config: the run's configuration (its ``agent`` is the first agent).
        cells: the evaluation cells.
        agents: the agents of the run, in order.
        notes: the run's notes.
        settings: ``config`` as the file holds it (what each ``report.json``'s ``config``
            must equal, but for the agent).
    """

    config: ProtocolConfig
    cells: tuple[Cell, ...]
    agents: tuple[str, ...]
    notes: tuple[str, ...]
    settings: Mapping[str, Any]


def _json_object(path: Path) -> dict[str, Any]:
    try:
        data = orjson.loads(path.read_bytes())
    except orjson.JSONDecodeError as error:
        raise UsageError(f"{path}:{error.lineno}: not JSON ({error.msg})") from None
    if not isinstance(data, dict):
        raise UsageError(f"{path} has a field of the wrong type: not a JSON object")
    return data


def read_cells(folder: Path) -> Index:
    """``folder/cells.json``: the run's configuration, cells, agents and notes.

    Raises:
        UsageError: the file is missing, not JSON, or lacks a field or has one of the wrong
            type (naming it).
    """
    from stategym.topology.generalisation import ProtocolConfig
    from stategym.topology.split import Cell

    path = folder / CELLS
    if not path.is_file():
        raise UsageError(f"no {CELLS} in {folder}: not a protocol run directory")
    saved = _json_object(path)
    try:
        agents = saved["agents"]
        if not isinstance(agents, list) or not all(isinstance(a, str) for a in agents):
            raise TypeError("'agents' is not a list of agent names")
        notes = tuple(str(note) for note in saved.get("notes", []))
        cells = tuple(Cell.from_dict(c) for c in saved["cells"])
        settings = saved["config"]
        config = ProtocolConfig.from_dict(settings)
    except KeyError as error:
        raise UsageError(f"{path} lacks {error}: not a protocol run's {CELLS}") from None
    except (TypeError, ValueError, AttributeError) as error:  # a field of the wrong shape
        raise UsageError(f"{path} has a field of the wrong type: {error}") from None
    return Index(config, cells, tuple(agents), notes, settings)


def _changed(old: Mapping[str, Any], new: Mapping[str, Any]) -> list[str]:
    """The keys whose values differ between two configurations, sorted."""
    return sorted(str(k) for k in set(old) | set(new) if old.get(k) != new.get(k))


def read_agent_report(folder: Path, agent: str, settings: Mapping[str, Any]) -> dict[str, Any]:
    """``folder/report.json`` of ``agent``, checked to be the one written with ``settings``
    (``cells.json``'s configuration) for that agent.

    Raises:
        UsageError: the file is missing or unreadable, or was written with other settings
            (naming them: a report left by an earlier run of another configuration).
    """
    path = folder / REPORT
    if not path.is_file():
        raise UsageError(f"{path} is missing, but {CELLS} lists {agent!r}: run the protocol again")
    report = _json_object(path)
    config = report.get("config")
    if not isinstance(config, Mapping):
        raise UsageError(f"{path}: 'config' is not a JSON object")
    changed = _changed({**settings, "agent": agent}, config)
    if changed:
        raise UsageError(
            f"{path} was written with other settings than {CELLS} ({', '.join(changed)}): "
            "not this run's report; run the protocol again"
        )
    return report


def refuse_other_settings(out: Path, settings: Mapping[str, Any], agents: Sequence[str]) -> None:
    """Refuse to write the run ``settings`` of ``agents`` into ``out`` where it holds a
    protocol run of other settings: its ``cells.json``, or the ``report.json`` of an agent
    folder (an interrupted run leaves those before ``cells.json``). Rewriting part of such
    a folder would mix two runs; the same settings are allowed (the run is played again).

    Raises:
        UsageError: naming the settings that differ (``agents`` for another list of agents).
    """
    changed: set[str] = set()
    if (out / CELLS).is_file():
        saved = _json_object(out / CELLS)
        changed |= _changed_but_agent(saved.get("config"), settings)
        if saved.get("agents") != list(agents):
            changed.add("agents")
    folders = sorted(p for p in out.iterdir() if (p / REPORT).is_file()) if out.is_dir() else []
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
    ``config``'s seeds, and none missing (probes, found by a search, are checked by agent
    and cell only).

    Raises:
        UsageError: a cut or unreadable line, a duplicated, foreign or missing episode.
    """
    if not file.is_file():
        raise UsageError(f"{file} is missing: run the protocol again")
    log = read_log(file)
    if log.cut_line is not None:
        raise UsageError(f"{file}:{log.cut_line}: a cut last line; run the protocol again")
    refuse_duplicates(file, log.trajectories)
    expected = _expected_episodes(config, cells)
    probe_cells = {cell.domain for cell in cells}
    found = set()
    for line, trajectory in enumerate(log.trajectories, start=1):
        role = trajectory.run.role
        agent = config.agent if role in ("agent", "probe") else "expert"
        if trajectory.agent != agent:
            raise UsageError(
                f"{file}:{line}: a {role} episode of {trajectory.agent!r}, not of {agent!r}: "
                f"not the log of {config.agent!r}"
            )
        key = _episode(trajectory)
        if role == "probe" and trajectory.meta.get("cell") in probe_cells:
            continue
        if key not in expected:
            raise UsageError(
                f"{file}:{line}: {role} episode {key[1:]} is not one of the run's cells and "
                f"seeds in {CELLS}"
            )
        found.add(key)
    missing = sorted(expected - found, key=str)
    if missing:
        raise UsageError(
            f"{file} lacks {len(missing)} of the run's {len(expected)} plan, reference and "
            f"agent episodes (e.g. {missing[0][0]} {missing[0][1:]}): run the protocol again"
        )
    return tuple(log.trajectories)


def _episode(trajectory: Trajectory) -> tuple[Any, ...]:
    """What tells a protocol episode apart: role, domain, seed, knobs, split, cell, shots."""
    meta = trajectory.meta
    return (
        trajectory.run.role,
        trajectory.domain,
        trajectory.seed,
        trajectory.knobs.describe(),
        str(meta.get("split", "")),
        str(meta.get("cell", "")),
        str(meta.get("shots", "")),
    )


def _expected_episodes(config: ProtocolConfig, cells: Sequence[Cell]) -> set[tuple[Any, ...]]:
    """The plan, reference and agent episodes :func:`run_protocol` plays for ``config``."""
    knobs = config.knobs.describe()
    seeds = range(config.seed, config.seed + config.episodes)
    shots = [k for k in config.shots if k == 0 or config.llm]
    expected = {
        ("plan", name, s, knobs, "", "", "") for name in config.train for s in range(config.plans)
    }
    for cell in cells:
        where = (str(cell.split), cell.domain)
        expected |= {("reference", cell.domain, s, knobs, *where, "") for s in seeds}
        expected |= {("agent", cell.domain, s, knobs, *where, str(k)) for s in seeds for k in shots}
    return expected
