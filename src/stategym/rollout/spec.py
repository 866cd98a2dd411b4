"""The episode spec: one episode as plain data, and the one identity rule of a log.

An :class:`EpisodeSpec` says everything needed to play an episode again anywhere (another
process, another machine): the domain's name, the task's seed and knobs, the agent spec as
written (``expert``, ``openai:MODEL``, ``hf:PATH``) with its options, and what the episode is
for (its sample number, the protocol's role, probe and tags). It is frozen, hashable and
picklable; it holds no objects. :func:`trajectory_key` is the identity of a logged episode
and :meth:`EpisodeSpec.key` is the same identity before it is played, so "which episodes
of a run are already in its file" is one comparison (:func:`pending`).
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from numbers import Integral
from typing import Any

from stategym.kernel.knobs import Knobs, KnobsGiven, as_knobs
from stategym.kernel.trajectory import Trajectory

RUNNER_OPTIONS = frozenset({"concurrency", "samples"})
"""Options that configure the engine, not the agent; never part of a spec."""
IDENTITY_TAGS = ("cell", "split", "shots", "pair")
"""``meta`` tags of the protocol that, with the run record (sample, role, probe), tell two
episodes of one task apart."""

Key = tuple[Hashable, ...]


@dataclass(frozen=True, slots=True)
class EpisodeSpec:
    """One episode to play, as plain data.

    Attributes:
        domain: registered domain name (or ``synth:<spec>``).
        seed: task seed.
        agent: agent spec as written; stamped on the trajectory.
        knobs: the task's knobs.
        options: the agent's options as sorted ``(name, value)`` pairs of plain values
            (``base_url``, ``temperature``, a rendered ``demonstrations`` block...).
        sample: which of the ``n`` samples of this task (also seeds an LLM's sampling).
        role: what a protocol run plays it for (``plan``, ``reference``, ``agent``, ``probe``).
        probe: which task of a counterfactual pair (``original`` or the probe's name).
        tags: protocol tags (:data:`IDENTITY_TAGS`) as sorted ``(name, value)`` pairs;
            they go to ``Trajectory.meta``.
    """

    domain: str
    seed: int
    agent: str
    knobs: Knobs = field(default_factory=Knobs)
    options: tuple[tuple[str, Any], ...] = ()
    sample: int = 0
    role: str | None = None
    probe: str | None = None
    tags: tuple[tuple[str, Any], ...] = ()

    @property
    def llm(self) -> bool:
        """An ``openai:`` or ``hf:`` agent (played concurrently; takes a sample number)."""
        return ":" in self.agent

    def key(self) -> Key:
        """The identity of the episode this spec plays (equal to its trajectory's key)."""
        tags = dict(self.tags)
        return _key(
            self.domain,
            self.seed,
            self.knobs,
            self.agent,
            self.sample,
            self.role,
            self.probe,
            tuple(str(tags.get(name, "")) for name in IDENTITY_TAGS),
        )


KnobSchedule = KnobsGiven | Mapping[int, Knobs]
"""Knobs for a set of seeds: one setting in any form :func:`~stategym.kernel.knobs.as_knobs`
reads, or each seed's (a mapping from seeds to :class:`Knobs`, a family's schedule)."""


def knobs_for(knobs: KnobSchedule) -> Callable[[int], Knobs]:
    """Each seed's knobs: a schedule's (all on for a seed it leaves out), or the one setting.

    A mapping is a schedule when its keys are seeds (ints); otherwise it is one setting read
    by :func:`~stategym.kernel.knobs.as_knobs` (``{"dynamics": False}``), which a schedule's
    reading played with every knob on (audit 16E F5).

    Raises:
        TypeError, ValueError: one setting :func:`~stategym.kernel.knobs.as_knobs` refuses,
            or a schedule whose values are not :class:`Knobs`.
    """
    if isinstance(knobs, Mapping) and knobs and all(_is_seed(seed) for seed in knobs):
        schedule: dict[int, Knobs] = {}
        for seed, value in knobs.items():
            if not isinstance(value, Knobs):
                raise TypeError(f"a knob schedule maps seeds to Knobs; got {value!r}")
            schedule[int(seed)] = value
        return lambda seed: schedule.get(seed, Knobs())
    setting = as_knobs(knobs)  # type: ignore[arg-type]
    return lambda seed: setting


def _is_seed(key: object) -> bool:
    """An integer (NumPy's too), not a bool: a key of a knob schedule."""
    return isinstance(key, Integral) and not isinstance(key, bool)


def episode_specs(
    domain: str,
    agent: str,
    seeds: Iterable[int],
    knobs: KnobSchedule = None,
    *,
    samples: int = 1,
    options: Mapping[str, Any] | None = None,
) -> list[EpisodeSpec]:
    """Specs for every ``(seed, sample)`` of one agent on one domain, seed-major.

    Args:
        domain: domain name.
        agent: agent spec as written.
        seeds: task seeds.
        knobs: one setting, or the setting of each seed (a knob schedule: :func:`knobs_for`);
            default all on.
        samples: episodes per seed.
        options: agent options (engine options and ``None`` values are left out).
    """
    pairs = plain_options(options or {})
    setting = knobs_for(knobs)
    specs = []
    for seed in seeds:
        specs += [EpisodeSpec(domain, seed, agent, setting(seed), pairs, i) for i in range(samples)]
    return specs


def plain_options(options: Mapping[str, Any]) -> tuple[tuple[str, Any], ...]:
    """Agent options as a spec holds them: sorted, without engine options or ``None``."""
    return tuple(
        sorted((k, v) for k, v in options.items() if v is not None and k not in RUNNER_OPTIONS)
    )


def trajectory_key(trajectory: Trajectory) -> Key:
    """What makes a logged episode unique: ``(domain, seed, knobs, agent, sample, role,
    probe, tags)``; repeated samples differ in their sample number, so only a copied line
    has a twin."""
    run = trajectory.run
    return _key(
        trajectory.domain,
        trajectory.seed,
        trajectory.knobs,
        trajectory.agent,
        run.sample,
        run.role,
        run.probe,
        tuple(str(trajectory.meta.get(name, "")) for name in IDENTITY_TAGS),
    )


def key_words(key: Key) -> str:
    """An episode's identity in words, for an error that names it: ``"travel seed 3 agent
    expert knobs stateful=on,... sample 0"``."""
    return f"{key[0]} seed {key[1]} agent {key[3]} knobs {key[2]} sample {key[4]}"


def _key(
    domain: str,
    seed: int,
    knobs: Knobs,
    agent: str,
    sample: int,
    role: str | None,
    probe: str | None,
    tags: tuple[str, ...],
) -> Key:
    return (domain, seed, knobs.describe(), agent, sample, role, probe, *tags)


def pending(specs: Sequence[EpisodeSpec], finished: Iterable[Trajectory]) -> list[EpisodeSpec]:
    """The resume rule: the specs whose episode is not among ``finished``, in order."""
    done = {trajectory_key(t) for t in finished}
    return [spec for spec in specs if spec.key() not in done]


def requested(specs: Sequence[EpisodeSpec], trajectories: Iterable[Trajectory]) -> list[Trajectory]:
    """The trajectories of ``specs`` among ``trajectories``, in spec order (a log may hold
    more: another range of seeds played earlier); a spec with no trajectory is skipped."""
    by_key = {trajectory_key(t): t for t in trajectories}
    return [by_key[spec.key()] for spec in specs if spec.key() in by_key]
