"""A run directory: the trajectories of one (domain, agent, knobs) run and their summary.

::

    runs/NAME/
        trajectories.jsonl   one trajectory per line, appended as each episode ends
        summary.json         the run's configuration and outcome aggregates
    runs/index.sqlite        one row per run directory in runs/ (see stategym.store)

Trajectories are flushed one by one, so an interrupted run keeps every finished episode and
at most a cut last line, which :meth:`RunDir.load` drops (rewriting the file without it)
before a resumed run appends to it.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import orjson

from stategym.knobs import Knobs
from stategym.summary import RunSummary
from stategym.trajectory import Trajectory, read_jsonl, write_jsonl

TRAJECTORIES = "trajectories.jsonl"
SUMMARY = "summary.json"
SUMMARY_VERSION = 1


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

    @property
    def name(self) -> str:
        return self.path.resolve().name

    def load(self) -> tuple[list[Trajectory], int]:
        """The trajectories already written, and how many unreadable lines were dropped.

        An interrupted run can leave a cut last line; unreadable lines are removed from the
        file (rewritten atomically) so that the next append starts on a line of its own.
        """
        if not self.trajectories.exists():
            return [], 0
        kept = list(read_jsonl(self.trajectories, strict=False))
        data = self.trajectories.read_bytes()
        dropped = sum(1 for line in data.split(b"\n") if line.strip()) - len(kept)
        if dropped or (data and not data.endswith(b"\n")):
            partial = self.trajectories.with_suffix(".jsonl.partial")
            write_jsonl(partial, kept)
            os.replace(partial, self.trajectories)
        return kept, dropped

    def clear(self) -> None:
        """Delete the run's files (not the directory or anything else in it)."""
        for path in (self.trajectories, self.summary):
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
        version: str,
        options: dict[str, Any],
    ) -> dict[str, Any]:
        """Write ``summary.json`` (no timestamps, so equal runs give equal files)."""
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
