"""The agent contract and the scripted-agent adapter.

An agent is anything with ``act(observation) -> Action``; an :data:`AgentFactory` builds a
fresh agent for each task (scripted agents read the task's request; privileged ones read
more). Scripted agents are written as generators: they ``yield`` an action and receive the
next observation, which keeps a policy readable top to bottom.
"""

from __future__ import annotations

from collections.abc import Callable, Generator
from typing import Protocol

from stategym.kernel.protocol import Action, CallBatch, Observation, ToolCall
from stategym.kernel.task import Task

Script = Generator[Action, Observation, None]


class Agent(Protocol):
    """Decides one round at a time."""

    name: str

    def act(self, observation: Observation) -> Action: ...


AgentFactory = Callable[[Task], Agent]
"""Builds the agent for one task."""


class ScriptedAgent:
    """Runs a generator-based policy; when the script ends, the agent calls ``finish``."""

    def __init__(self, name: str, script: Callable[[Observation], Script]) -> None:
        self.name = name
        self._make = script
        self._script: Script | None = None

    def act(self, observation: Observation) -> Action:
        try:
            if self._script is None:
                self._script = self._make(observation)
                return next(self._script)
            return self._script.send(observation)
        except StopIteration:
            return CallBatch((ToolCall("finish", {}),))
