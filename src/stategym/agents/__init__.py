"""Agents: scripted baselines (built from each domain's expert and a :class:`Style`) and the
registry ``stategym run --agent NAME`` resolves names with."""

from __future__ import annotations

from collections.abc import Callable

from stategym.agents.adversary import Adversary, LuckyGuesser, look_ahead
from stategym.agents.base import Agent, AgentFactory, ScriptedAgent
from stategym.agents.guard import guard_probability, guard_teacher
from stategym.agents.random_agent import random_agent
from stategym.agents.style import Style
from stategym.kernel.domain import Domain
from stategym.kernel.env import Env
from stategym.kernel.task import Task

STYLES: dict[str, Style] = {
    "expert": Style(),
    "oracle": Style(privileged=True),
    "serial": Style(
        ask="nothing", batching="serial", verify="skip", confirm="skip", first_fit=True
    ),
    # the pathological agents: the expert with one habit changed, each abusing one dimension
    "ask-nothing": Style(ask="nothing"),
    "ask-everything": Style(ask="everything"),
    "all-serial": Style(batching="serial"),
    "all-parallel": Style(batching="guess"),
    "never-commit": Style(commit="never"),
    # verification before a commit is both re-checking the fresh state and the user's yes
    "commit-unverified": Style(verify="skip", confirm="skip"),
    "commit-same-round": Style(verify="same_round"),
    "spray": Style(spray=4),
    "shotgun": Style(commit="shotgun"),
    "confirm-spam": Style(confirm="spam"),
    # the adversaries (issue 10 section 2): the expert with one exploit of the metric added
    "fishing": Style(fish=3),
    "padding": Style(pad="empty"),
    "invalid-padding": Style(pad="invalid"),
    "open-padding": Style(pad="open"),
    "finish-padding": Style(pad="bad-finish"),
    "post-commit-damage": Style(damage=True),
    "excuse-harvest": Style(harvest=True),
    "lucky-guess": Style(lucky=True),
    "false-report": Style(misreport=True),
}
"""Scripted agents that are the domain expert with some habits changed."""

PATHOLOGICAL: tuple[str, ...] = (
    "ask-nothing",
    "ask-everything",
    "all-serial",
    "all-parallel",
    "never-commit",
    "commit-unverified",
    "commit-same-round",
    "spray",
    "shotgun",
    "confirm-spam",
)
"""The agents that game one dimension each; every one must score below the expert."""

ADVERSARIES: tuple[str, ...] = (
    "fishing",
    "padding",
    "invalid-padding",
    "open-padding",
    "finish-padding",
    "post-commit-damage",
    "excuse-harvest",
    "lucky-guess",
    "false-report",
)
"""The agents that exploit a hole the metric once had; every one must score below the expert."""


def scripted(domain: Domain, name: str) -> AgentFactory:
    """The factory for a named scripted agent in a domain."""
    if name == "random":
        return random_agent
    p = guard_probability(name)
    if p is not None:  # ask-pP: the exploration-guard teacher (stategym.agents.guard)
        return guard_teacher(domain, name, p)
    return styled(domain, STYLES[name], name)


def styled(domain: Domain, style: Style, name: str = "styled") -> AgentFactory:
    """The factory for the domain expert playing ``style`` (an adversarial habit wraps it)."""

    def make(task: Task) -> Agent:
        agent = domain.expert(task, style)
        agent.name = name
        if style.lucky:
            plan = look_ahead(Env(domain, knobs=task.knobs), task, domain.expert(task, style))
            return LuckyGuesser(name, plan)
        if style.adversarial:
            return Adversary(agent, task, style, domain.available_tools(task.knobs))
        return agent

    return make


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
    if spec not in agent_names() and guard_probability(spec) is None:
        raise KeyError(
            f"unknown agent {spec!r}; scripted agents: {', '.join(agent_names())}, "
            "ask-pP (the expert asking each must-ask fact with probability P); "
            "LLM agents: openai:MODEL, hf:PATH"
        )
    return scripted(domain, spec)


__all__ = [
    "ADVERSARIES",
    "PATHOLOGICAL",
    "STYLES",
    "Agent",
    "AgentFactory",
    "ScriptedAgent",
    "Style",
    "agent_names",
    "resolve",
    "scripted",
    "styled",
]
