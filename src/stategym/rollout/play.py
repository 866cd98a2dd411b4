"""The one episode loop, blocking (:func:`drive`) and async (:func:`adrive`).

An :class:`Episode` holds what the loop needs: the environment reset to a task, the agent,
the observation it must answer, and what to stamp on the trajectory at the end (the spec's
agent name, sample, role, probe and tags). The two drivers differ only in how they ask the
agent (``act`` or ``await aact``): everything else (stepping, an agent that stops, the
truncation it causes, the LLM's annotations and timing) is the episode's, so the blocking
and the concurrent paths write the same trajectory for the same episode.

An agent that raises :class:`~stategym.kernel.errors.AgentStopped` (an LLM whose context the
conversation outgrew) ends the episode there, truncated, like the round limit.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Iterable, Iterator
from dataclasses import replace
from typing import Any

from stategym.agents.base import Agent, AgentFactory
from stategym.kernel.env import Env
from stategym.kernel.errors import AgentStopped
from stategym.kernel.protocol import Action, Observation
from stategym.kernel.task import Task
from stategym.kernel.trajectory import RunRecord, Trajectory
from stategym.rollout.agents import AgentSource
from stategym.rollout.spec import EpisodeSpec

TaskOf = Callable[[EpisodeSpec], Task]
"""``spec -> task``: how a spec's task is made (default :func:`spec_task`; the protocol
gives one that flips a probe's priorities)."""


def spec_task(spec: EpisodeSpec) -> Task:
    """The spec's task, regenerated from ``(domain, seed, knobs)`` (cached)."""
    from stategym.registry import cached_task

    return cached_task(spec.domain, spec.seed, spec.knobs)


class Episode:
    """One episode in play.

    Args:
        env: the environment, just reset.
        agent: the agent that plays it.
        observation: the first observation (the reset's).
        spec: what the trajectory is stamped with at the end (``None``: nothing).
    """

    def __init__(
        self, env: Env, agent: Agent, observation: Observation, spec: EpisodeSpec | None = None
    ) -> None:
        env.agent = agent.name
        self.env = env
        self.agent = agent
        self.observation = observation
        self.spec = spec
        self.stop_reason: str | None = None
        self.env_seconds = 0.0
        self.agent_seconds = 0.0

    @classmethod
    def start(
        cls, env: Env, agents: AgentSource, spec: EpisodeSpec, task_of: TaskOf = spec_task
    ) -> Episode:
        """Reset ``env`` to the spec's task and make its agent."""
        started = time.perf_counter()
        task = task_of(spec)
        observation, _ = env.reset(options={"task": task})
        episode = cls(env, agents.agent(spec, task), observation, spec)
        episode.env_seconds = time.perf_counter() - started
        return episode

    @property
    def done(self) -> bool:
        return self.stop_reason is not None or self.env.done

    def step(self, action: Action) -> None:
        started = time.perf_counter()
        self.observation = self.env.step(action).observation
        self.env_seconds += time.perf_counter() - started

    def finish(self) -> Trajectory:
        """The finished episode's trajectory."""
        extra: dict[str, Any] = {}
        if self.stop_reason is not None:
            trajectory = self.env.stopped_trajectory()
            extra["stop_reason"] = self.stop_reason
        else:
            trajectory = self.env.trajectory
        # LLM agents attach their per-round log (tokens, logprobs) and where time went;
        # scripted agents have neither, so their trajectories stay byte-identical per seed.
        annotate = getattr(self.agent, "annotate", None)
        if annotate is not None:
            extra["timing"] = {
                "env_s": round(self.env_seconds, 6),
                "agent_s": round(self.agent_seconds, 6),
            }
            trajectory = annotate(trajectory, **extra)
        elif extra:
            trajectory = replace(trajectory, meta={**trajectory.meta, **extra})
        return stamp(trajectory, self.spec) if self.spec is not None else trajectory


def stamp(trajectory: Trajectory, spec: EpisodeSpec) -> Trajectory:
    """The trajectory with the spec's agent name, run record and tags."""
    run = RunRecord(spec.sample, spec.role, spec.probe)
    meta = {**trajectory.meta, **dict(spec.tags)} if spec.tags else trajectory.meta
    return replace(trajectory, agent=spec.agent, run=run, meta=meta)


def drive(episode: Episode) -> Trajectory:
    """Play the episode to its end, asking the agent with ``act``."""
    while not episode.done:
        started = time.perf_counter()
        try:
            action = episode.agent.act(episode.observation)
        except AgentStopped as reason:
            episode.stop_reason = str(reason)
            break
        finally:
            episode.agent_seconds += time.perf_counter() - started
        episode.step(action)
    return episode.finish()


async def adrive(episode: Episode) -> Trajectory:
    """:func:`drive` for the event loop: agents with ``aact`` are awaited (others asked
    with ``act``, which for a scripted agent takes microseconds). A step of an environment
    whose user reads with an LLM (``Env(reader=...)``) may wait for that model, so it runs on
    a worker thread, and the other episodes on the loop go on meanwhile."""
    aact = getattr(episode.agent, "aact", None)
    off_loop = episode.env.reader_name is not None
    while not episode.done:
        started = time.perf_counter()
        try:
            if aact is not None:
                action = await aact(episode.observation)
            else:
                action = episode.agent.act(episode.observation)
        except AgentStopped as reason:
            episode.stop_reason = str(reason)
            break
        finally:
            episode.agent_seconds += time.perf_counter() - started
        if off_loop:
            await asyncio.to_thread(episode.step, action)
        else:
            episode.step(action)
    return episode.finish()


def play(env: Env, agent: Agent, observation: Observation) -> Trajectory:
    """Play the episode ``env`` was just reset to, from its first observation, to the end."""
    return drive(Episode(env, agent, observation))


def run_episode(env: Env, make_agent: AgentFactory, seed: int) -> Trajectory:
    """Play one episode of the task ``seed`` and return its trajectory."""
    observation, _ = env.reset(seed=seed)
    return play(env, make_agent(env.task), observation)


def run_episodes(
    env: Env, make_agent: AgentFactory, seeds: Iterable[int], agent_name: str | None = None
) -> Iterator[Trajectory]:
    """Play one episode per seed, in order (renamed ``agent_name`` if given)."""
    for seed in seeds:
        trajectory = run_episode(env, make_agent, seed)
        if agent_name is not None and trajectory.agent != agent_name:
            trajectory = replace(trajectory, agent=agent_name)
        yield trajectory
