"""Running episodes: one agent, one environment, one seeded task at a time."""

from __future__ import annotations

from collections.abc import Iterator

from stategym.agents.base import AgentFactory
from stategym.env import Env
from stategym.trajectory import Trajectory


def run_episode(env: Env, make_agent: AgentFactory, seed: int) -> Trajectory:
    """Play one episode of the task ``seed`` and return its trajectory."""
    observation, _ = env.reset(seed=seed)
    agent = make_agent(env.task)
    env.agent = agent.name
    while not env.done:
        observation = env.step(agent.act(observation)).observation
    # LLM agents attach their per-round log (token usage, logprobs) to the trajectory.
    annotate = getattr(agent, "annotate", None)
    return annotate(env.trajectory) if annotate is not None else env.trajectory


def run_episodes(
    env: Env, make_agent: AgentFactory, seeds: range | list[int], agent_name: str | None = None
) -> Iterator[Trajectory]:
    """Play one episode per seed, in order."""
    for seed in seeds:
        trajectory = run_episode(env, make_agent, seed)
        if agent_name is not None and trajectory.agent != agent_name:
            from dataclasses import replace

            trajectory = replace(trajectory, agent=agent_name)
        yield trajectory
