"""Agents: scripted baselines (built from each domain's expert and a :class:`Style`) and the
registry ``stategym run --agent NAME`` resolves names with."""

from __future__ import annotations

from collections.abc import Callable

from stategym.agents.base import Agent, AgentFactory, ScriptedAgent
from stategym.agents.random_agent import random_agent
from stategym.agents.style import Style
from stategym.domain import Domain

STYLES: dict[str, Style] = {
    "expert": Style(),
    "oracle": Style(privileged=True),
    "serial": Style(ask="nothing", batching="serial", verify="skip", confirm="skip",
                    first_fit=True),
}
"""Scripted agents that are the domain expert with some habits changed."""


def scripted(domain: Domain, name: str) -> AgentFactory:
    """The factory for a named scripted agent in a domain."""
    if name == "random":
        return random_agent
    style = STYLES[name]
    return lambda task: domain.expert(task, style)


def agent_names() -> list[str]:
    return [*STYLES, "random"]


AgentResolver = Callable[[Domain, str], AgentFactory]

__all__ = ["STYLES", "Agent", "AgentFactory", "ScriptedAgent", "Style", "agent_names", "scripted"]
