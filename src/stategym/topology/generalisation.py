"""The cross-topology generalisation protocol: play an agent on every split, log everything.

:func:`run_protocol` builds the splits (:mod:`stategym.topology.split`), plays the agent on
each cell's held-out seeds (zero-shot, and k-shot when the agent is an LLM that can take
demonstrations), plays the expert on the same tasks for reference plans, plays the
counterfactual probes (:mod:`stategym.topology.probes`), and returns every trajectory, each
tagged with what it is for (``run.role`` and ``run.probe``, the rest in ``meta``). Every
episode is an :class:`~stategym.rollout.EpisodeSpec` played by the rollout engine (an LLM
agent's episodes concurrently, ``options["concurrency"]`` at a time); a probe's flipped task
is rebuilt from its spec by :func:`spec_task_of`. The report (:mod:`stategym.topology.report`)
is computed from these trajectories and the cells alone, so a saved run can be re-reported.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any, Literal

from stategym.agents import resolve
from stategym.kernel.counterfactual import played_task
from stategym.kernel.env import Env
from stategym.kernel.knobs import Knobs
from stategym.kernel.task import SEED_LIMIT, Task
from stategym.kernel.trajectory import Trajectory
from stategym.registry import cached_task, get_domain
from stategym.rollout import Agents, EpisodeSpec, plain_options, requested, run_episode, stream
from stategym.rollout.workers import Spread
from stategym.topology.distance import EXPANSION_BUDGET
from stategym.topology.probes import FLIP, probes
from stategym.topology.split import Cell, Split, make_splits

EVAL_SEED = 100_000
"""First evaluation seed: training and demonstrations use seeds below it."""
Role = Literal["agent", "reference", "plan", "probe"]


@dataclass(frozen=True)
class ProtocolConfig:
    """What one protocol run does.

    Attributes:
        agent: agent spec (a scripted agent's name, or ``openai:MODEL`` / ``hf:PATH``).
        train: the training domains (registered names or ``synth:<spec>``).
        episodes: seeds per cell.
        seed: first evaluation seed.
        knobs: knobs of every evaluation task (probes switch dynamics off).
        shots: in-context demonstration counts; k > 0 needs an LLM agent.
        demos: where k-shot demonstrations come from: the training domains or the target.
        probes: counterfactual probe pairs per domain.
        compositions: cells in the composition split.
        plans: expert plans per training domain for template attraction.
        budget: edit-distance search budget.
        options: agent options (``base_url``, ``temperature``...), passed to the resolver.
        spread: where the scripted episodes play (workers, Ray); never changes the results,
            so it is not saved.
    """

    agent: str
    train: tuple[str, ...]
    episodes: int = 20
    seed: int = EVAL_SEED
    knobs: Knobs = field(default_factory=Knobs)
    shots: tuple[int, ...] = (0,)
    demos: Literal["train", "target"] = "train"
    probes: int = 10
    compositions: int = 4
    plans: int = 8
    budget: int = EXPANSION_BUDGET
    options: Mapping[str, Any] = field(default_factory=dict)
    spread: Spread | None = None

    @property
    def llm(self) -> bool:
        return ":" in self.agent

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> ProtocolConfig:
        """The inverse of :meth:`describe` (agent options are not saved)."""
        return cls(
            agent=str(data["agent"]),
            train=tuple(data["train"]),
            episodes=int(data["episodes"]),
            seed=int(data["seed"]),
            knobs=Knobs.parse(str(data["knobs"])),
            shots=tuple(int(k) for k in data["shots"]),
            demos=data["demos"],
            probes=int(data["probes"]),
            compositions=int(data["compositions"]),
            plans=int(data["plans"]),
            budget=int(data["budget"]),
        )

    def describe(self) -> dict[str, Any]:
        return {
            "agent": self.agent,
            "train": list(self.train),
            "episodes": self.episodes,
            "seed": self.seed,
            "knobs": self.knobs.describe(),
            "shots": list(self.shots),
            "demos": self.demos,
            "probes": self.probes,
            "compositions": self.compositions,
            "plans": self.plans,
            "budget": self.budget,
        }


def spec_task_of(spec: EpisodeSpec) -> Task:
    """The task a protocol spec plays (a probe's is the flipped task)."""
    return played_task(cached_task(spec.domain, spec.seed, spec.knobs), spec.probe)


def _specs(
    domain: str,
    agent: str,
    seeds: Iterable[int],
    knobs: Knobs,
    role: str,
    tags: Mapping[str, Any],
    options: Mapping[str, Any] | None = None,
    probe: str | None = None,
) -> list[EpisodeSpec]:
    pairs = plain_options(options or {})
    # tags keep their order: they are merged into ``meta`` in it
    tagged = tuple(tags.items())
    return [
        EpisodeSpec(domain, s, agent, knobs, pairs, role=role, probe=probe, tags=tagged)
        for s in seeds
    ]


def _demonstrations(config: ProtocolConfig, target: str, k: int) -> str:
    """k expert episodes (training seeds) from the training domains or the target, rendered
    by the LLM package as chat transcripts in the rendering the agent plays (an ``hf:``
    model trained on ``compact`` is shown compact call lines)."""
    from stategym.llm.model_files import agent_rendering
    from stategym.llm.prompt import render_demonstrations

    sources = [target] if config.demos == "target" else list(config.train)
    trajectories, tasks = [], []
    for i in range(k):
        name = sources[i % len(sources)]
        env = Env(name, knobs=config.knobs)
        trajectories.append(run_episode(env, resolve(env.domain, "expert"), i // len(sources)))
        tasks.append(env.task)
    return render_demonstrations(trajectories, tasks, agent_rendering(config.agent))


def _resolve(domain: Any, agent: str, **options: Any) -> Any:
    # this module's ``resolve``, looked up per call: the seam a test stands an agent in at
    return resolve(domain, agent, **options)


def _agent_options(config: ProtocolConfig, domain: str, k: int) -> dict[str, Any]:
    options = dict(config.options)
    if k:
        options["demonstrations"] = _demonstrations(config, domain, k)
    return options


@dataclass(frozen=True)
class ProtocolRun:
    """Everything a protocol run produced.

    Attributes:
        config: what was run.
        cells: the evaluation cells with their placements.
        trajectories: every episode, ``run.role`` saying what for (agent, reference, plan,
            probe) and ``run.probe`` which task of a probe pair; ``meta`` saying ``split``,
            ``cell``, ``shots`` and, for probes, ``pair``.
        notes: what was skipped and why.
    """

    config: ProtocolConfig
    cells: tuple[Cell, ...]
    trajectories: tuple[Trajectory, ...]
    notes: tuple[str, ...] = ()


def run_protocol(
    config: ProtocolConfig,
    cells: Sequence[Cell] | None = None,
    progress: Callable[[str], None] | None = None,
) -> ProtocolRun:
    """Play every episode the report needs (building the splits unless ``cells`` are given,
    so several agents can share one set of splits)."""
    say = progress or (lambda _: None)
    notes: list[str] = []
    if cells is None:
        say("building splits")
        cells = make_splits(config.train, config.knobs, config.compositions, config.budget)
    cells = tuple(cells)
    seeds = range(config.seed, config.seed + config.episodes)
    specs: list[EpisodeSpec] = []
    for name in config.train:
        specs += _specs(name, "expert", range(config.plans), config.knobs, "plan", {})
    shots = [k for k in config.shots if k == 0 or config.llm]
    if len(shots) < len(config.shots):
        notes.append("k-shot demonstrations need an LLM agent; scripted agents ran zero-shot only")
    for cell in cells:
        say(f"{cell.split}: {cell.domain}")
        tags = {"split": str(cell.split), "cell": cell.domain}
        specs += _specs(cell.domain, "expert", seeds, config.knobs, "reference", tags)
        for k in shots:
            options = _agent_options(config, cell.domain, k)
            specs += _specs(
                cell.domain,
                config.agent,
                seeds,
                config.knobs,
                "agent",
                {**tags, "shots": k},
                options,
            )
    specs += _probe_specs(config, cells, notes)
    say("playing")
    agents = Agents(resolver=_resolve)
    concurrency = config.options.get("concurrency")
    played = [
        t
        for _, t in stream(
            specs, agents, concurrency=concurrency, task_of=spec_task_of, spread=config.spread
        )
    ]
    return ProtocolRun(config, cells, tuple(requested(specs, played)), tuple(notes))


def _probe_specs(
    config: ProtocolConfig, cells: tuple[Cell, ...], notes: list[str]
) -> list[EpisodeSpec]:
    out: list[EpisodeSpec] = []
    missing: list[str] = []
    # Probes run without dynamics: events are scheduled against the original priority order,
    # so with them the flipped task would differ in more than the one hidden value.
    knobs = replace(config.knobs, dynamics=False)
    # the seeds searched for probes stop at the last seed there is
    seeds = range(config.seed, min(config.seed + 10**6, SEED_LIMIT))
    for name in dict.fromkeys(c.domain for c in cells):
        pairs = probes(get_domain(name), knobs, iter(seeds), config.probes)
        if not pairs:
            missing.append(name)
            continue
        for index, (original, _) in enumerate(pairs):
            tags = {"split": str(Split.PROBE), "cell": name, "pair": index}
            for probe in ("original", FLIP):
                out += _specs(
                    name,
                    config.agent,
                    [original.seed],
                    knobs,
                    "probe",
                    tags,
                    config.options,
                    probe,
                )
    if missing:
        notes.append(
            "no counterfactual probe (no hidden priority order that changes the best "
            f"choice) in: {', '.join(missing)}"
        )
    return out
