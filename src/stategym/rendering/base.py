"""What every rendering does, and the one transcript rule they share.

A :class:`Renderer` is the only place that turns an episode into what a model reads and back:
the offered tools, the system prompt, each observation as chat messages, and the model's reply
as an action. It is made per episode (the compact rendering keeps a handle table that grows as
entities appear), from the domain and the task's knobs alone, so the environment, LLM agents,
k-shot demonstrations, supervised data and trainers all see the same conversation.

:func:`transcript` rebuilds the conversation of a logged episode by playing the log through a
fresh renderer: the request, then each round's action and the observation the environment
returned, rebuilt from the round's record (invalid rounds included, with the error text the
environment logged). A live agent that asks the same renderer sees exactly these messages.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Protocol

from stategym.kernel.protocol import OLD_EMPTY_ACTION, Action, CallBatch, Observation, ToolResult
from stategym.kernel.task import Task
from stategym.kernel.trajectory import RoundKind, RoundRecord, Trajectory

Message = dict[str, Any]
"""One OpenAI-style chat message."""

EMPTY_ACTION_ERROR = OLD_EMPTY_ACTION
"""The error of an invalid round in a version 1 log, which did not record the text (version 1
invalid rounds were empty actions, told this)."""
GOODBYE = "I'll handle this myself. Goodbye."
"""What the user adds when it gives up (``stategym.kernel.env.GIVE_UP_AFTER`` confusing
messages)."""


class Renderer(Protocol):
    """One episode's rendering: tools and prompt out, replies in.

    Attributes:
        kind: the rendering's name (``messages`` or ``compact``), stamped on trajectories.
    """

    kind: str

    @property
    def tools(self) -> list[dict[str, Any]]:
        """The tools offered, in OpenAI function format (``finish`` last)."""
        ...

    def system_prompt(self, demonstrations: str = "") -> str:
        """The system message's text (``demonstrations`` appended if not empty)."""
        ...

    def first_messages(self, task: Task, demonstrations: str = "") -> list[Message]:
        """The system prompt and the user's request."""
        ...

    def observation_messages(self, observation: Observation) -> list[Message]:
        """A round's observation as messages (tool results, then error, then user words)."""
        ...

    def action_message(self, action: Action, index: int) -> Message:
        """The assistant message for round ``index``'s action (the inverse of :meth:`parse`)."""
        ...

    def parse(self, reply: Message | str) -> Action:
        """The action a model's reply means; never raises (an unreadable reply is an action
        the environment logs as that format error: an empty batch, or the message
        rendering's ``RejectedReply`` of the kind the core's message interface gives)."""
        ...


def roles_and_texts(prompt: Any) -> list[tuple[Any, Any]] | None:
    """What a prompt says, message by message, whatever other keys a dataset added to its
    messages; ``None`` when it is not chat messages (a string is a sequence too, of
    characters, so it is told apart here rather than failing on its first ``get``)."""
    if isinstance(prompt, str | bytes) or not isinstance(prompt, Sequence):
        return None
    if not all(isinstance(message, Mapping) for message in prompt):
        return None
    return [(message.get("role"), message.get("content")) for message in prompt]


def observation_of(record: RoundRecord, *, final_say: bool) -> Observation:
    """The observation the environment returned after a round, rebuilt from its record.

    Args:
        record: the logged round.
        final_say: the round is the episode's last and the user ended it after it (the
            environment appended :data:`GOODBYE` to the reply it showed).
    """
    results = tuple(
        ToolResult(c.id, c.name, c.content, c.error, c.error_kind) for c in record.calls
    )
    error = None
    if record.kind is RoundKind.INVALID:
        error = record.error if record.error is not None else EMPTY_ACTION_ERROR
    words = [record.user.reply] if record.user is not None else []
    if final_say:
        words.append(GOODBYE)
    if record.notice is not None:
        words.append(record.notice)
    user = " ".join(words) if words else None
    return Observation(record.index, record.clock + record.latency, results, user, error)


def logged_action(record: RoundRecord) -> Action:
    """The action as the renderer shows it: invalid rounds were an unusable (empty) reply."""
    return CallBatch(()) if record.kind is RoundKind.INVALID else record.action()


def transcript(renderer: Renderer, trajectory: Trajectory, task: Task) -> list[Message]:
    """The chat an episode was, rebuilt from its log: the request, then each round's
    assistant message and the messages it got back.

    The system message is not included (``renderer.first_messages(task)[0]`` is it).

    Args:
        renderer: a fresh renderer for the trajectory's domain and knobs.
        trajectory: the logged episode.
        task: its task.
    """
    messages = renderer.first_messages(task)[1:]
    last = len(trajectory.rounds) - 1
    for record in trajectory.rounds:
        final_say = record.index == last and record.kind is RoundKind.SAY and trajectory.terminated
        messages.append(renderer.action_message(logged_action(record), record.index))
        messages.extend(renderer.observation_messages(observation_of(record, final_say=final_say)))
    return messages
