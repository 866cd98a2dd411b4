"""The cross-topology generalisation protocol: play an agent on every split, log everything.

:func:`run_protocol` builds the splits (:mod:`stategym.topology.split`), plays the agent on
each cell's held-out seeds (the demonstration counts of :func:`agent_shots`: ``--shots``
for an LLM agent, zero-shot alone for a scripted one), plays the expert on the same tasks
for reference plans, plays the counterfactual probes (:mod:`stategym.topology.probes`), and
returns every trajectory, each tagged with what it is for (``run.role`` and ``run.probe``,
the rest in ``meta``). Every episode is an :class:`~stategym.rollout.EpisodeSpec` played by
the rollout engine (an LLM agent's episodes concurrently, ``options["concurrency"]`` at a
time); a probe's flipped task is rebuilt from its spec by :func:`spec_task_of`. The report
(:mod:`stategym.topology.report`) is computed from these trajectories and the cells alone,
so a saved run can be re-reported.

The run's notes say what it left out and why: the k-shot counts a scripted agent did not
play, the domains where the probe search found fewer pairs than ``--probes`` asked for (it
gives up once :data:`PROBE_TRIES` x (pairs found + 1) seeds had none, or at the last seed),
and the synthetic training domains with no ``larger`` cell
(:func:`~stategym.topology.split.ungrowable`). With ``--probes 0`` nothing is searched for
and nothing is noted.
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
from stategym.registry import get_domain
from stategym.rollout import Agents, EpisodeSpec, plain_options, requested, run_episode, stream
from stategym.rollout.workers import Spread
from stategym.topology.distance import EXPANSION_BUDGET
from stategym.topology.motifs import SIZED
from stategym.topology.probes import FLIP, probes
from stategym.topology.split import Cell, Split, make_splits, ungrowable

EVAL_SEED = 100_000
"""First evaluation seed: training and demonstrations use seeds below it."""
PROBE_TRIES = 40
"""Seeds the probe search looks at without finding a pair, per pair found plus one, before
it gives up on a domain (:func:`~stategym.topology.probes.probes`)."""
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
        shots: in-context demonstration counts an LLM agent plays; a scripted agent plays
            zero-shot alone (:func:`agent_shots`).
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


def agent_shots(config: ProtocolConfig) -> tuple[int, ...]:
    """The demonstration counts an agent of ``config`` plays: ``config.shots`` for an LLM
    agent, and ``(0,)`` for a scripted one whatever ``shots`` holds (demonstrations in
    context mean nothing to it, and dropping every k > 0 without adding 0 left it nothing
    to play: audit 13B F2). The one rule :func:`run_protocol` and the log check follow."""
    return tuple(config.shots) if config.llm else (0,)


def spec_task_of(spec: EpisodeSpec) -> Task:
    """The task a protocol spec plays (a probe's is the flipped task)."""
    return played_task(spec.domain, spec.seed, spec.knobs, spec.probe)


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


def demonstration_seeds(config: ProtocolConfig, k: int) -> range:
    """The seeds ``k`` demonstrations play: the ``i``-th is seed ``i // sources`` of the
    ``--demos`` domains taken round-robin (one source with ``target``, the training domains
    with ``train``), so seeds ``0 .. ceil(k / sources) - 1``; evaluation must not reach them."""
    sources = 1 if config.demos == "target" else len(config.train)
    return range(-(-k // sources))


def _demonstrations(config: ProtocolConfig, target: str, k: int) -> str:
    """k expert episodes (:func:`demonstration_seeds`) from the training domains or the
    target, rendered by the LLM package as chat transcripts in the rendering the agent plays
    (an ``hf:`` model trained on ``compact`` is shown compact call lines)."""
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
    shots = agent_shots(config)
    if shots != tuple(config.shots):
        notes.append(
            "k-shot demonstrations need an LLM agent; scripted agents played zero-shot "
            f"(k=0) only, whatever --shots asked for ({','.join(map(str, config.shots))})"
        )
    notes += _larger_notes(config)
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
    specs += probe_specs(config, cells, notes)
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


def probe_specs(
    config: ProtocolConfig, cells: tuple[Cell, ...], notes: list[str]
) -> list[EpisodeSpec]:
    """The counterfactual probe episodes of ``cells``' domains: up to ``config.probes``
    pairs a domain from the evaluation seeds, each played as its original and flipped task
    (a note in ``notes`` where fewer were found). The one place that says which pairs a run
    plays: the log reader checks a run's probes against it."""
    out: list[EpisodeSpec] = []
    short: list[str] = []
    # Probes run without dynamics: events are scheduled against the original priority order,
    # so with them the flipped task would differ in more than the one hidden value.
    knobs = replace(config.knobs, dynamics=False)
    # the seeds searched for probes stop at the last seed there is
    seeds = range(config.seed, min(config.seed + 10**6, SEED_LIMIT))
    for name in dict.fromkeys(c.domain for c in cells):
        pairs = probes(get_domain(name), knobs, iter(seeds), config.probes, PROBE_TRIES)
        if len(pairs) < config.probes:
            short.append(f"{name} {len(pairs)}")
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
    if short:  # never with --probes 0: nothing was searched for (audit 13B F7)
        notes.append(
            f"fewer counterfactual probe pairs than --probes {config.probes} in (pairs "
            f"found): {', '.join(short)}; the search of the evaluation seeds gives up once "
            f"{PROBE_TRIES} x (pairs found + 1) of them had no hidden priority order that "
            "changes the best choice, or at the last seed"
        )
    return out


def _larger_notes(config: ProtocolConfig) -> list[str]:
    """Why a synthetic training domain has no ``larger`` cell, if one has none."""
    caps = ", ".join(f"{motif} {size}" for motif, size in SIZED.items())
    return [
        f"no larger split for {name}: grown, it is {grown}, a training topology "
        f"(sizes stop at {caps})"
        for name, grown in ungrowable(config.train, config.knobs).items()
    ]
