"""The LLM package's view of the renderer: prompt, transcripts and demonstrations by domain name.

Everything here is asked of :mod:`stategym.rendering` (the one place that owns the offered
tools, the system prompt and the messages); this module only finds the domain of a task so
that callers holding a trajectory and its task need nothing else. The prompt is versioned
(:data:`PROMPT_VERSION`, stamped on every trajectory an LLM agent writes).

A chat transcript of a finished episode is rebuilt from its trajectory alone
(:func:`transcript`): the same messages the agent saw and sent, invalid rounds included, so
expert trajectories become k-shot demonstrations (:func:`render_demonstrations`) or
supervised training data.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from stategym.kernel.domain import Domain
from stategym.kernel.knobs import Knobs
from stategym.kernel.task import Task
from stategym.kernel.trajectory import Trajectory
from stategym.rendering import PROMPT_VERSION, Message, MessageRenderer, make_renderer
from stategym.rendering import transcript as _transcript
from stategym.rendering.messages import render_demonstrations as _demonstrations

__all__ = [
    "PROMPT_VERSION",
    "Message",
    "first_messages",
    "render_demonstrations",
    "render_tools",
    "system_prompt",
    "transcript",
]


def _domain(name: str) -> Domain:
    from stategym.registry import get_domain

    return get_domain(name)


def system_prompt(domain: Domain, knobs: Knobs, demonstrations: str = "") -> str:
    """The system message for one episode (:meth:`MessageRenderer.system_prompt`)."""
    return MessageRenderer(domain, knobs).system_prompt(demonstrations)


def first_messages(domain: Domain, task: Task, demonstrations: str = "") -> list[Message]:
    """The conversation an agent starts from: the system prompt and the user's request."""
    return MessageRenderer(domain, task.knobs).first_messages(task, demonstrations)


def render_tools(schemas: Sequence[dict[str, Any]]) -> str:
    """Tools as one line each, ``name(arg: type, ...): description``, for plain-text prompts."""
    lines = []
    for schema in schemas:
        function = schema["function"]
        properties = function["parameters"]["properties"]
        required = set(function["parameters"].get("required", ()))
        args = ", ".join(
            f"{name}: {body.get('type', 'any')}{'' if name in required else '?'}"
            for name, body in properties.items()
        )
        lines.append(f"{function['name']}({args}): {function['description']}")
    return "\n".join(lines)


def transcript(trajectory: Trajectory, task: Task, rendering: str = "messages") -> list[Message]:
    """The chat an episode was, rebuilt from its log (the system message not included).

    Args:
        trajectory: the logged episode.
        task: its task (a probe's flipped task for a probe trajectory).
        rendering: ``messages`` or ``compact``.
    """
    renderer = make_renderer(_domain(trajectory.domain), task.knobs, rendering)
    return _transcript(renderer, trajectory, task)


def render_demonstrations(
    trajectories: Sequence[Trajectory], tasks: Sequence[Task], rendering: str = "messages"
) -> str:
    """k finished episodes (any domains) as a text block for the system prompt, each in the
    rendering the agent reads (a model trained on ``compact`` is shown its call lines and
    handles, not JSON calls it was never trained to write).

    Args:
        trajectories: finished episodes (usually the expert's).
        tasks: the task of each trajectory, in the same order.
        rendering: ``messages`` or ``compact``: the agent's.
    """
    if len(trajectories) != len(tasks):
        raise ValueError("render_demonstrations needs one task per trajectory")
    episodes = [
        (make_renderer(_domain(t.domain), task.knobs, rendering), t, task)
        for t, task in zip(trajectories, tasks, strict=True)
    ]
    return _demonstrations(episodes)
