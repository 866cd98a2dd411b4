"""Running episodes: one agent, one environment, one seeded task at a time."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import replace

from stategym.agents.base import Agent, AgentFactory
from stategym.env import Env
from stategym.errors import AgentStopped
from stategym.protocol import Observation
from stategym.trajectory import Trajectory


def run_episode(env: Env, make_agent: AgentFactory, seed: int) -> Trajectory:
    """Play one episode of the task ``seed`` and return its trajectory."""
    observation, _ = env.reset(seed=seed)
    return play(env, make_agent(env.task), observation)


def play(env: Env, agent: Agent, observation: Observation) -> Trajectory:
    """Play the episode ``env`` was just reset to, from its first observation, to the end.

    An agent that raises :class:`~stategym.errors.AgentStopped` (an LLM whose context the
    conversation outgrew) ends the episode there, truncated, like the round limit.
    """
    env.agent = agent.name
    stop: str | None = None
    while not env.done:
        try:
            action = agent.act(observation)
        except AgentStopped as reason:
            stop = str(reason)
            break
        observation = env.step(action).observation
    trajectory = env.trajectory
    if stop is not None:
        trajectory = replace(
            trajectory,
            truncated=True,
            outcome=env.outcome(),
            meta={**trajectory.meta, "stop_reason": stop},
        )
    # LLM agents attach their per-round log (token usage, logprobs) to the trajectory.
    annotate = getattr(agent, "annotate", None)
    return annotate(trajectory) if annotate is not None else trajectory


def run_episodes(
    env: Env, make_agent: AgentFactory, seeds: range | list[int], agent_name: str | None = None
) -> Iterator[Trajectory]:
    """Play one episode per seed, in order."""
    for seed in seeds:
        trajectory = run_episode(env, make_agent, seed)
        if agent_name is not None and trajectory.agent != agent_name:
            trajectory = replace(trajectory, agent=agent_name)
        yield trajectory
