"""A run directory: the trajectories of one (domain, agent, knobs) run and their summary.

::

    runs/NAME/
        trajectories.jsonl   one trajectory per line, appended as each episode ends
        summary.json         the run's configuration, outcome and decision-quality aggregates
        results.md           the results table ``stategym run`` printed
        .lock                while a command writes the directory: its process id
    runs/index.sqlite        one row per run directory (``--index``; see stategym.store)

The trajectories file is read by the rollout engine's one strict reader
(:func:`~stategym.rollout.log.read_log`, :func:`~stategym.rollout.log.load_log`, re-exported
here): a cut last line is dropped and reported, any other unreadable line or a duplicated
episode is an error. Which requested episodes are already there is the engine's one resume
rule (:func:`~stategym.rollout.spec.pending`), by the identity :func:`episode_key`.

An episode of an LLM agent is reused only when it was played as the command's agent plays
now (:func:`~stategym.rollout.settings.refuse_other_settings`, re-exported here): the
settings an agent logs in every trajectory's ``meta``
(:meth:`stategym.llm.agent.ChatAgent.settings`: sampling, run seed, an ``hf:`` model's
weight and tokenizer digests, the rendering...) must all be logged there, equal. A file
holding one played otherwise is refused in one line naming what differs, since its episodes
would be summarised under the new settings. A log written before a setting was logged (no
weights digest, no sampling seed) is refused the same way: how it was played cannot be told.
Scripted agents log no settings; their runs resume as before.

One command at a time writes a run directory (:func:`locked`, from
:mod:`stategym.kernel.locks`): two appending to one file would log every episode twice.
A file that is written whole (``summary.json``, an experiment's and a protocol run's files,
a report) is replaced whole or not at all (:func:`replace_bytes`), so an interrupted command
leaves the old file or the new one, never half of one. Paths of runs are resolved with
:func:`resolved`, which turns a symlink loop into the one-line :class:`OSError` every other
bad path is.
"""

from __future__ import annotations

import errno
import os
from collections.abc import Hashable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

import orjson

from stategym.kernel.files import read_regular, replace_bytes
from stategym.kernel.knobs import Knobs
from stategym.kernel.locks import LOCK, locked
from stategym.kernel.trajectory import Trajectory, write_jsonl
from stategym.rollout.log import Log, load_log, read_log, refuse_duplicates, refuse_unverified
from stategym.rollout.settings import refuse_other_settings
from stategym.rollout.spec import IDENTITY_TAGS, trajectory_key
from stategym.summary import QualitySummary, RunSummary

TRAJECTORIES = "trajectories.jsonl"
SUMMARY = "summary.json"
RESULTS_MD = "results.md"
SUMMARY_VERSION = 2
"""2 added ``decision_quality``; version 1 files had the same keys otherwise."""
IDENTITY_META = IDENTITY_TAGS
"""``meta`` tags of the protocol that, with the :class:`~stategym.kernel.trajectory.RunRecord`
(sample, role, probe), tell two episodes of one task apart."""


__all__ = [
    "IDENTITY_META",
    "LOCK",
    "MIXED",
    "Log",
    "RunConfig",
    "RunDir",
    "episode_key",
    "load_log",
    "locked",
    "read_log",
    "refuse_duplicates",
    "refuse_other_settings",
    "refuse_unverified",
    "resolved",
    "seed_ranges",
]


def resolved(path: Path) -> Path:
    """``path`` made absolute with every link followed (:meth:`Path.resolve`).

    Python 3.11 and 3.12 raise a :class:`RuntimeError` on a symlink loop, which would be a
    traceback; it is raised here as the :class:`OSError` naming the path (``ELOOP``) that
    Python 3.13 raises and the command line reports in one line.
    """
    try:
        return path.resolve()
    except RuntimeError:  # "Symlink loop from ...": the only RuntimeError resolve() raises
        raise OSError(errno.ELOOP, os.strerror(errno.ELOOP), str(path)) from None


def episode_key(trajectory: Trajectory) -> tuple[Hashable, ...]:
    """What makes an episode unique in a log (:func:`stategym.rollout.trajectory_key`)."""
    return trajectory_key(trajectory)


MIXED = "mixed"
"""A run's knobs as ``--knobs mixed``: seeds cycle through the eval knob mix."""


@dataclass(frozen=True, slots=True)
class RunConfig:
    """What a run plays: every trajectory in the directory matches it.

    Attributes:
        domain: domain name.
        agent: agent spec as given to ``--agent`` (stamped on every trajectory).
        knobs: the tasks' knobs, or :data:`MIXED` (one setting of the eval mix per seed,
            :data:`stategym.metrics.taskset.MIXED`).
        reader: what read the agent's messages for the user (``openai:MODEL``, as in
            ``Trajectory.meta["reader"]``); ``None``: the rules.
    """

    domain: str
    agent: str
    knobs: Knobs | Literal["mixed"]
    reader: str | None = None

    def knobs_of(self, seed: int) -> Knobs:
        """The knobs of the task ``seed``."""
        if isinstance(self.knobs, Knobs):
            return self.knobs
        from stategym.metrics.taskset import knob_schedule

        return knob_schedule(MIXED)(seed)

    def describe_knobs(self) -> str:
        """``mixed``, or the one setting's :meth:`Knobs.describe`."""
        return self.knobs.describe() if isinstance(self.knobs, Knobs) else MIXED

    def matches(self, trajectory: Trajectory) -> bool:
        return (
            trajectory.domain,
            trajectory.agent,
            trajectory.knobs,
            trajectory.meta.get("reader"),
        ) == (self.domain, self.agent, self.knobs_of(trajectory.seed), self.reader)


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
        return resolved(self.path).name

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
                "knobs": config.describe_knobs(),
                **({"reader": config.reader} if config.reader else {}),
                "seeds": seed_ranges(seeds),
                "options": options,
                "stategym_version": version,
            },
            "aggregates": summary.to_json(),
            "decision_quality": quality.to_json(),
        }
        self.path.mkdir(parents=True, exist_ok=True)
        replace_bytes(self.summary, orjson.dumps(document, option=orjson.OPT_INDENT_2) + b"\n")
        return document

    def read_summary(self) -> dict[str, Any]:
        """The parsed ``summary.json`` (a FIFO or a folder in its place is refused:
        :class:`~stategym.kernel.files.NotAFile`)."""
        document: dict[str, Any] = orjson.loads(read_regular(self.summary))
        return document
