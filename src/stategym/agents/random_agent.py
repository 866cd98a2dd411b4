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
    rng = random.Random(f"random:{task.domain}:{task.seed}")
    seen_str: list[str] = [str(v) for v in task.request.given.values() if isinstance(v, str)]
    seen_int: list[int] = [1, 2, 10]

    def remember(value: Any) -> None:
        if isinstance(value, dict):
            for item in value.values():
                remember(item)
        elif isinstance(value, list):
            for item in value:
                remember(item)
        elif isinstance(value, str) and len(seen_str) < 200:
            seen_str.append(value)
        elif isinstance(value, int) and not isinstance(value, bool) and len(seen_int) < 200:
            seen_int.append(value)

    def argument(annotation: Any, choices: tuple[Any, ...]) -> Any:
        if choices:
            return rng.choice(choices)
        if annotation is int:
            return rng.choice(seen_int)
        if annotation is float:
            return float(rng.choice(seen_int))
        if annotation is bool:
            return rng.random() < 0.5
        if annotation is str:
            return rng.choice(seen_str) if seen_str else "x"
        return [rng.choice(seen_str)] if seen_str else []

    def one_call() -> ToolCall:
        if rng.random() < 0.05:
            return ToolCall(rng.choice(tools).name, "{not json")
        if rng.random() < 0.03:
            return ToolCall("no_such_tool", {})
        chosen = rng.choice(tools)
        return ToolCall(
            chosen.name, {p.name: argument(p.annotation, p.choices) for p in chosen.params}
        )

    def script(observation: Observation) -> Script:
        while True:
            for result in observation.results:
                remember(result.content)
            roll = rng.random()
            action: Action
            if roll < 0.06:
                answer = rng.choice(seen_str) if seen_str else "none"
                action = CallBatch((ToolCall("finish", {"answer": answer}),))
            elif roll < 0.2:
                action = Say(rng.choice(MESSAGES))
            elif roll < 0.22:
                action = CallBatch(())
            else:
                action = CallBatch(tuple(one_call() for _ in range(rng.randint(1, 3))))
            observation = yield action

    return ScriptedAgent("random", script)
