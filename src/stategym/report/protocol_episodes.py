"""The episodes a protocol run plays, told apart by key, for checking an agent's log
(:func:`stategym.report.protocol_files.read_agent_log`).

:func:`expected_episodes` works out, from ``cells.json``'s configuration and cells, which
plan, reference, agent and probe episodes the run played, without listing them (a hand edit
can ask for more than memory holds); :func:`episode_key` is what tells a logged episode
apart. Which shots an agent plays and which probe pairs the run plays come from the
protocol itself (:func:`~stategym.topology.generalisation.agent_shots`,
:func:`~stategym.topology.generalisation.probe_specs`): one rule, never a copy that drifts.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

from stategym.kernel.trajectory import Trajectory

if TYPE_CHECKING:
    from stategym.rollout import EpisodeSpec
    from stategym.topology.generalisation import ProtocolConfig
    from stategym.topology.split import Cell

Key = tuple[Any, ...]
"""A protocol episode as :func:`episode_key` tells it apart: its role, then :data:`NAMES`."""
NAMES = ("domain", "seed", "knobs", "split", "cell", "shots", "pair", "probe")


def episode_key(trajectory: Trajectory) -> Key:
    """What tells a protocol episode apart: role, domain, seed, knobs, split, cell, shots,
    and for a probe its pair and which task of it."""
    meta = trajectory.meta
    return (
        trajectory.run.role,
        trajectory.domain,
        trajectory.seed,
        trajectory.knobs.describe(),
        str(meta.get("split", "")),
        str(meta.get("cell", "")),
        str(meta.get("shots", "")),
        str(meta.get("pair", "")),
        str(trajectory.run.probe or ""),
    )


def describe(key: Key) -> str:
    """An episode key for a message: its non-empty parts, named."""
    return ", ".join(
        f"{name} {value}" for name, value in zip(NAMES, key[1:], strict=True) if value != ""
    )


def most_pairs(trajectories: Sequence[Trajectory]) -> int:
    """The most probe pairs the log holds for one domain."""
    pairs = {
        (t.meta.get("cell"), str(t.meta.get("pair"))) for t in trajectories if t.run.role == "probe"
    }
    return max(Counter(cell for cell, _ in pairs).values(), default=0)


@dataclass(frozen=True, slots=True)
class _Expected:
    """The episodes a protocol run of one agent played, as :func:`episode_key` tells them apart,
    without listing them: ``episodes`` and ``plans`` come from ``cells.json``, where a hand
    edit can ask for more than memory holds, so membership and the count are worked out and
    only the episodes up to the first missing one are ever built."""

    train: tuple[str, ...]
    plans: int
    seeds: range
    knobs: str
    places: tuple[tuple[str, str], ...]
    shots: tuple[str, ...]
    probes: tuple[Key, ...]
    probe_set: frozenset[Key]

    def __contains__(self, key: Key) -> bool:
        role, domain, seed, knobs, split, cell, shots, pair, probe = key
        if role == "probe":
            return key in self.probe_set
        if knobs != self.knobs or (pair, probe) != ("", "") or not isinstance(seed, int):
            return False
        if role == "plan":
            return domain in self.train and 0 <= seed < self.plans and split == cell == shots == ""
        if (split, cell) not in self.places or domain != cell or seed not in self.seeds:
            return False
        return shots == "" if role == "reference" else role == "agent" and shots in self.shots

    def count(self) -> int:
        """How many episodes the run played (not ``len``: it can pass ``sys.maxsize``)."""
        per_cell = (self.seeds.stop - self.seeds.start) * (1 + len(self.shots))
        return len(self.train) * self.plans + len(self.places) * per_cell + len(self.probes)

    def __iter__(self) -> Iterator[Key]:
        """Every episode, in the order :func:`run_protocol` lists them."""
        for name in self.train:
            yield from self._keys("plan", name, range(self.plans), "", "")
        for split, domain in self.places:
            yield from self._keys("reference", domain, self.seeds, split, "")
            for k in self.shots:
                yield from self._keys("agent", domain, self.seeds, split, k)
        yield from self.probes

    def _keys(self, role: str, domain: str, seeds: range, split: str, shots: str) -> Iterator[Key]:
        cell = domain if split else ""
        return ((role, domain, s, self.knobs, split, cell, shots, "", "") for s in seeds)


def expected_episodes(config: ProtocolConfig, cells: Sequence[Cell], pairs: int) -> _Expected:
    """The plan, reference, agent and probe episodes
    :func:`~stategym.topology.generalisation.run_protocol` plays for
    ``config``; the probe search looks for at most ``pairs + 1`` pairs a domain (the most a
    log of ``pairs`` can be checked against: one more tells it lacks one), never for a
    hand-edited ``probes`` of billions."""
    from stategym.topology.generalisation import agent_shots

    probes = _probe_keys(replace(config, probes=min(config.probes, pairs + 1)), cells)
    return _Expected(
        train=tuple(config.train),
        plans=config.plans,
        seeds=range(config.seed, config.seed + config.episodes),
        knobs=config.knobs.describe(),
        places=tuple((str(cell.split), cell.domain) for cell in cells),
        shots=tuple(str(k) for k in agent_shots(config)),
        probes=probes,
        probe_set=frozenset(probes),
    )


def _probe_keys(config: ProtocolConfig, cells: Sequence[Cell]) -> tuple[Key, ...]:
    """The probe episodes the run plays, from the protocol's own probe search (the one
    place that says which pairs a run plays: a second copy of its seeds and knobs here
    would drift)."""
    from stategym.topology.generalisation import probe_specs

    return tuple(_spec_key(spec) for spec in probe_specs(config, tuple(cells), []))


def _spec_key(spec: EpisodeSpec) -> Key:
    """:func:`episode_key` of the trajectory ``spec`` plays."""
    tags = dict(spec.tags)
    return (
        spec.role,
        spec.domain,
        spec.seed,
        spec.knobs.describe(),
        *(str(tags.get(name, "")) for name in ("split", "cell", "shots", "pair")),
        str(spec.probe or ""),
    )


__all__ = ["NAMES", "Key", "describe", "episode_key", "expected_episodes", "most_pairs"]
