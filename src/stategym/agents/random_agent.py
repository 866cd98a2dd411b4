"""A random agent: valid-looking random calls, random messages, sometimes malformed output.

It reuses values it has seen (ids, codes, numbers) as arguments, so some of its calls do
things: it is the floor every other agent should beat, and a fuzzer for the environment.
"""

from __future__ import annotations

import random
from typing import Any

from stategym.agents.base import Script, ScriptedAgent
from stategym.kernel.protocol import Action, CallBatch, Observation, Say, ToolCall
from stategym.kernel.task import Task
from stategym.kernel.tools import Tool

MESSAGES = (
    "What is your budget?",
    "Can you tell me more?",
    "Which option do you prefer?",
    "Is there anything else I should know?",
    "What matters more to you?",
    "asdf qwerty",
)


def random_agent(task: Task) -> ScriptedAgent:
    """Build the random agent for a task (seeded by the task's seed)."""
    from stategym.registry import get_domain

    tools = get_domain(task.domain).available_tools(task.knobs)
    play = _RandomPlay(random.Random(f"random:{task.domain}:{task.seed}"), tools, task)

    def script(observation: Observation) -> Script:
        while True:
            for result in observation.results:
                play.remember(result.content)
            observation = yield play.action()

    return ScriptedAgent("random", script)


class _RandomPlay:
    """The random agent's state: its generator, the tools and the values it has seen."""

    def __init__(self, rng: random.Random, tools: tuple[Tool, ...], task: Task) -> None:
        self.rng = rng
        self.tools = tools
        self.seen_str: list[str] = [
            str(v) for v in task.request.given.values() if isinstance(v, str)
        ]
        self.seen_int: list[int] = [1, 2, 10]

    def remember(self, value: Any) -> None:
        """Keep the strings and integers of a tool result (up to 200 of each) for arguments."""
        if isinstance(value, dict):
            for item in value.values():
                self.remember(item)
        elif isinstance(value, list):
            for item in value:
                self.remember(item)
        elif isinstance(value, str) and len(self.seen_str) < 200:
            self.seen_str.append(value)
        elif isinstance(value, int) and not isinstance(value, bool) and len(self.seen_int) < 200:
            self.seen_int.append(value)

    def action(self) -> Action:
        """A finish, a message, an empty round or a batch of one to three random calls."""
        rng = self.rng
        roll = rng.random()
        if roll < 0.06:
            answer = rng.choice(self.seen_str) if self.seen_str else "none"
            return CallBatch((ToolCall("finish", {"answer": answer}),))
        if roll < 0.2:
            return Say(rng.choice(MESSAGES))
        if roll < 0.22:
            return CallBatch(())
        return CallBatch(tuple(self._call() for _ in range(rng.randint(1, 3))))

    def _call(self) -> ToolCall:
        rng = self.rng
        if rng.random() < 0.05:
            return ToolCall(rng.choice(self.tools).name, "{not json")
        if rng.random() < 0.03:
            return ToolCall("no_such_tool", {})
        chosen = rng.choice(self.tools)
        return ToolCall(
            chosen.name, {p.name: self._argument(p.annotation, p.choices) for p in chosen.params}
        )

    def _argument(self, annotation: Any, choices: tuple[Any, ...]) -> Any:
        rng = self.rng
        if choices:
            return rng.choice(choices)
        if annotation is int:
            return rng.choice(self.seen_int)
        if annotation is float:
            return float(rng.choice(self.seen_int))
        if annotation is bool:
            return rng.random() < 0.5
        if annotation is str:
            return rng.choice(self.seen_str) if self.seen_str else "x"
        return [rng.choice(self.seen_str)] if self.seen_str else []
