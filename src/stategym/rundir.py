"""A run directory: the trajectories of one (domain, agent, knobs) run and their summary.

::

    runs/NAME/
        trajectories.jsonl   one trajectory per line, appended as each episode ends
        summary.json         the run's configuration, outcome and decision-quality aggregates
        results.md           the results table ``stategym run`` printed
    runs/index.sqlite        one row per run directory (``--index``; see stategym.store)

Trajectories are flushed one by one, so an interrupted run keeps every finished episode and
at most a cut last line. :func:`read_log` is the one reader of such a file for every
command (``run`` and ``eval`` when they resume, ``score``): a cut last line, one that does
not end in a newline, is dropped (and reported by its line number); any other unreadable
line is an error naming ``FILE:LINE``, and so are two copies of one episode
(:func:`episode_key`). :func:`load_log` also rewrites the file without the cut line, so the
next append starts on a line of its own.
"""

from __future__ import annotations

import os
from collections import Counter
from collections.abc import Hashable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import orjson

from stategym.errors import TrajectoryError, UsageError
from stategym.knobs import Knobs
from stategym.summary import QualitySummary, RunSummary
from stategym.trajectory import Trajectory, loads, write_jsonl

TRAJECTORIES = "trajectories.jsonl"
SUMMARY = "summary.json"
RESULTS_MD = "results.md"
SUMMARY_VERSION = 2
"""2 added ``decision_quality``; version 1 files had the same keys otherwise."""
IDENTITY_META = ("cell", "split", "shots", "pair")
"""``meta`` tags of the protocol that, with the :class:`~stategym.trajectory.RunRecord`
(sample, role, probe), tell two episodes of one task apart."""
SHOWN_DUPLICATES = 5
"""How many duplicated episodes an error message names."""


@dataclass(frozen=True, slots=True)
class Log:
    """What :func:`read_log` found in a trajectories file.

    Attributes:
        trajectories: every readable episode, in file order.
        cut_line: the line number of a cut last line that was dropped, or ``None``.
    """

    trajectories: list[Trajectory]
    cut_line: int | None


def read_log(path: Path) -> Log:
    """Read a trajectories file strictly, except for a cut last line.

    A last line that does not end in a newline and cannot be read is what an interrupted
    append leaves: it is dropped and its number returned. Any other unreadable line is
    corruption, not an interruption.

    Raises:
        UsageError: ``FILE:LINE: why`` for an unreadable line that is not a cut last line.
    """
    data = path.read_bytes()
    lines = data.split(b"\n")
    last = max((i for i, line in enumerate(lines) if line.strip()), default=-1)
    kept: list[Trajectory] = []
    for index, line in enumerate(lines):
        if not line.strip():
            continue
        try:
            kept.append(loads(line))
        except TrajectoryError as error:
            if index == last and not data.endswith(b"\n"):
                return Log(kept, index + 1)
            raise UsageError(f"{path}:{index + 1}: {error}") from None
    return Log(kept, None)


def episode_key(trajectory: Trajectory) -> tuple[Hashable, ...]:
    """What makes an episode unique in a log: ``(domain, seed, knobs, agent, sample, role,
    probe)`` and the protocol's :data:`IDENTITY_META` tags.

    Repeated samples of a pass^k run differ in their sample number (``stategym eval``
    numbers every sample, scripted or LLM), so only a copied line has a twin.
    """
    run = trajectory.run
    tags = tuple(str(trajectory.meta.get(name, "")) for name in IDENTITY_META)
    return (
        trajectory.domain,
        trajectory.seed,
        trajectory.knobs.describe(),
        trajectory.agent,
        run.sample,
        run.role,
        run.probe,
        *tags,
    )


def refuse_duplicates(path: Path, trajectories: Sequence[Trajectory]) -> None:
    """Raise if two trajectories are copies of one episode (a file appended twice).

    Raises:
        UsageError: naming the first duplicated episodes and how many copies each has.
    """
    counts = Counter(episode_key(t) for t in trajectories)
    repeated = [(key, n) for key, n in counts.items() if n > 1]
    if not repeated:
        return
    named = "; ".join(
        f"{key[0]} seed {key[1]} agent {key[3]} knobs {key[2]} sample {key[4]} ({n} copies)"
        for key, n in repeated[:SHOWN_DUPLICATES]
    )
    more = (
        f" and {len(repeated) - SHOWN_DUPLICATES} more" if len(repeated) > SHOWN_DUPLICATES else ""
    )
    raise UsageError(
        f"{path} holds {len(repeated)} duplicated episode(s) (same domain, seed, knobs, agent "
        f"and sample): {named}{more}; remove the extra lines or start afresh"
    )


def load_log(path: Path) -> Log:
    """:func:`read_log` and :func:`refuse_duplicates`; rewrites the file without a cut line.

    A missing file is an empty log. A file whose last line lacks its newline is rewritten
    (atomically) so that the next append starts on a line of its own.
    """
    if not path.exists():
        return Log([], None)
    log = read_log(path)
    refuse_duplicates(path, log.trajectories)
    data = path.read_bytes()
    if data and not data.endswith(b"\n"):
        partial = path.with_suffix(".jsonl.partial")
        write_jsonl(partial, log.trajectories)
        os.replace(partial, path)
    return log


@dataclass(frozen=True, slots=True)
class RunConfig:
    """What a run plays: every trajectory in the directory matches these three.

    Attributes:
        domain: domain name.
        agent: agent spec as given to ``--agent`` (stamped on every trajectory).
        knobs: the tasks' knobs.
    """

    domain: str
    agent: str
    knobs: Knobs

    def matches(self, trajectory: Trajectory) -> bool:
        return (trajectory.domain, trajectory.agent, trajectory.knobs) == (
            self.domain,
            self.agent,
            self.knobs,
        )


def seed_ranges(seeds: Sequence[int]) -> str:
    """Seeds as sorted inclusive ranges: ``[0, 1, 2, 5]`` -> ``"0-2,5-5"`` (empty: ``""``)."""
    ranges: list[list[int]] = []
    for seed in sorted(set(seeds)):
        if ranges and seed == ranges[-1][1] + 1:
            ranges[-1][1] = seed
        else:
            ranges.append([seed, seed])
    return ",".join(f"{first}-{last}" for first, last in ranges)


class RunDir:
    """The files of one run directory.

    Args:
        path: the directory (created on first write).
    """

    def __init__(self, path: Path) -> None:
        self.path = path
        self.trajectories = path / TRAJECTORIES
        self.summary = path / SUMMARY
        self.results = path / RESULTS_MD

    @property
    def name(self) -> str:
        return self.path.resolve().name

    def load(self) -> tuple[list[Trajectory], int]:
        """The trajectories already written, and how many cut lines were dropped (0 or 1).

        See :func:`load_log`: a cut last line is dropped and removed from the file; a
        corrupt line elsewhere or a duplicated episode raises :class:`UsageError`.
        """
        log = load_log(self.trajectories)
        return log.trajectories, int(log.cut_line is not None)

    def clear(self) -> None:
        """Delete the run's files (not the directory or anything else in it)."""
        for path in (self.trajectories, self.summary, self.results):
            path.unlink(missing_ok=True)

    def append(self, trajectory: Trajectory) -> None:
        """Append one finished episode; the file is closed (flushed) before returning."""
        self.path.mkdir(parents=True, exist_ok=True)
        write_jsonl(self.trajectories, (trajectory,), append=True)

    def write_summary(
        self,
        config: RunConfig,
        seeds: Sequence[int],
        summary: RunSummary,
        quality: QualitySummary,
        version: str,
        options: dict[str, Any],
    ) -> dict[str, Any]:
        """Write ``summary.json`` (no timestamps, so equal runs give equal files).

        ``seeds`` are the seeds summarised (the command's requested range), which may be
        fewer than the file holds.
        """
        document = {
            "summary_version": SUMMARY_VERSION,
            "name": self.name,
            "config": {
                "domain": config.domain,
                "agent": config.agent,
                "knobs": config.knobs.describe(),
                "seeds": seed_ranges(seeds),
                "options": options,
                "stategym_version": version,
            },
            "aggregates": summary.to_json(),
            "decision_quality": quality.to_json(),
        }
        self.path.mkdir(parents=True, exist_ok=True)
        partial = self.summary.with_suffix(".json.partial")
        partial.write_bytes(orjson.dumps(document, option=orjson.OPT_INDENT_2) + b"\n")
        os.replace(partial, self.summary)
        return document

    def read_summary(self) -> dict[str, Any]:
        """The parsed ``summary.json``."""
        document: dict[str, Any] = orjson.loads(self.summary.read_bytes())
        return document
