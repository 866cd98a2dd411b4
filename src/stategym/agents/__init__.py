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


def resolve(domain: Domain, spec: str, **options: object) -> AgentFactory:
    """The factory for an agent spec: a scripted agent's name, or ``KIND:MODEL`` for an LLM
    agent (``openai:MODEL`` over an OpenAI-compatible endpoint, ``hf:PATH`` for a local
    Hugging Face model), whose options (``base_url``, sampling...) come as keywords."""
    kind, sep, target = spec.partition(":")
    if sep:
        from stategym.llm import agent_factory  # heavy and optional: imported only here

        return agent_factory(kind, target, domain, **options)
    if spec not in agent_names():
        raise KeyError(f"unknown agent {spec!r}; scripted agents: {', '.join(agent_names())}; "
                       "LLM agents: openai:MODEL, hf:PATH")
    return scripted(domain, spec)

__all__ = [
    "STYLES",
    "Agent",
    "AgentFactory",
    "ScriptedAgent",
    "Style",
    "agent_names",
    "resolve",
    "scripted",
]
