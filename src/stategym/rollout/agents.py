"""Agent factories for episode specs, made once per (domain, agent, options) and shared.

A spec names its agent by text; :class:`Agents` resolves it (through
:func:`stategym.agents.resolve`) the first time it is needed and reuses the factory for
every other episode with the same agent, so an LLM backend (a loaded model, a connection
pool) is shared by all of them. What cannot travel in a spec (a ready ``AsyncOpenAI``
client, the test seam) is given once as ``extra`` options; :class:`FixedAgent` plays every
spec with one ready factory (what :func:`stategym.llm.batch.run_many` takes).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, Protocol

from stategym.agents.base import Agent, AgentFactory
from stategym.kernel.task import Task
from stategym.rollout.spec import EpisodeSpec

Resolver = Callable[..., AgentFactory]
"""``(domain, agent spec, **options) -> factory``, as :func:`stategym.agents.resolve`."""


class AgentSource(Protocol):
    """Where the engine gets each episode's agent."""

    def agent(self, spec: EpisodeSpec, task: Task) -> Agent:
        """A fresh agent for the spec's episode of ``task``."""
        ...

    async def aclose(self) -> None:
        """Release what the factories hold for the running event loop (connections)."""
        ...


class Agents:
    """Resolves specs' agents by name, one factory per (domain, agent, options).

    Args:
        extra: options added to every spec's own (objects that cannot be plain data).
        resolver: ``(domain, agent spec, **options) -> factory``; default
            :func:`stategym.agents.resolve`.
    """

    def __init__(
        self, extra: Mapping[str, Any] | None = None, resolver: Resolver | None = None
    ) -> None:
        self.extra = dict(extra or {})
        self._resolver = resolver
        self._factories: dict[tuple[str, str, str], AgentFactory] = {}

    def __reduce__(self) -> tuple[Any, ...]:
        # A worker process (stategym.rollout.workers, Ray) gets the recipe, never the
        # resolved factories: those may hold a loaded model or open connections.
        return (Agents, (self.extra, self._resolver))

    def factory(self, spec: EpisodeSpec) -> AgentFactory:
        """The spec's agent factory (resolved on first use).

        Raises:
            KeyError: an unknown agent name.
        """
        # repr: option values may be unhashable (an ``extra_body`` dict), never objects
        key = (spec.domain, spec.agent, repr(spec.options))
        if key not in self._factories:
            from stategym.agents import resolve
            from stategym.registry import get_domain

            options = {**dict(spec.options), **self.extra}
            make = self._resolver or resolve
            self._factories[key] = make(get_domain(spec.domain), spec.agent, **options)
        return self._factories[key]

    def agent(self, spec: EpisodeSpec, task: Task) -> Agent:
        return make_agent(self.factory(spec), spec, task)

    async def aclose(self) -> None:
        await close_factories(self._factories.values())


class FixedAgent:
    """Plays every spec with one ready factory (its spec's agent name is only stamped)."""

    def __init__(self, factory: AgentFactory) -> None:
        self.make = factory

    def agent(self, spec: EpisodeSpec, task: Task) -> Agent:
        return make_agent(self.make, spec, task)

    async def aclose(self) -> None:
        await close_factories([self.make])


def make_agent(factory: AgentFactory, spec: EpisodeSpec, task: Task) -> Agent:
    """The factory's agent for the spec's episode; a factory that samples (an LLM's, marked
    ``samples = True``) also takes the sample number, which seeds its sampling."""
    if getattr(factory, "samples", False):
        return factory(task, sample=spec.sample)  # type: ignore[call-arg]
    return factory(task)


async def close_factories(factories: Any) -> None:
    """Close each factory's backend for the running loop (``aclose``, where it has one)."""
    for factory in factories:
        close = getattr(factory, "aclose", None)
        if close is not None:
            await close()
