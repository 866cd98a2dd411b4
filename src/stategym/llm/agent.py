"""The chat agent every LLM backend shares: conversation, action mapping and the round log.

A :class:`ChatAgent` keeps the conversation (system prompt, the request, then each round's
assistant message and the observation's messages), asks its :class:`Backend` for the next
assistant message, and maps it to an action with
:func:`~stategym.protocol.action_from_message`. A message that maps to nothing becomes the
empty action, which the environment logs as a format error: model output never raises.

What a backend reports per round (token usage, token ids, log-probabilities, tolerated parse
errors) is attached to the trajectory by :meth:`ChatAgent.annotate`, as ``RoundRecord.meta``
and ``Trajectory.meta`` (see ``docs/llm.md`` for every key).
"""

from __future__ import annotations

import zlib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any, Protocol

from stategym.domain import Domain
from stategym.errors import AgentFormatError
from stategym.llm.prompt import PROMPT_VERSION, Message, first_messages
from stategym.protocol import Action, CallBatch, Observation, action_from_message
from stategym.task import Task
from stategym.tools import finish_tool_schema
from stategym.trajectory import Trajectory


@dataclass(frozen=True, slots=True)
class Turn:
    """Which reply a backend is asked for.

    Attributes:
        index: the round about to be played.
        seed: sampling seed for this reply, derived from (run seed, task, sample, round).
    """

    index: int
    seed: int


@dataclass(frozen=True, slots=True)
class Reply:
    """A backend's answer: the assistant message and what to log about it.

    Attributes:
        message: an OpenAI-style assistant message (``content`` and/or ``tool_calls``).
        meta: per-round log entries (usage, finish reason, token ids, logprobs...).
        format_errors: malformations the backend tolerated; they count as format errors.
    """

    message: Message
    meta: dict[str, Any] = field(default_factory=dict)
    format_errors: tuple[str, ...] = ()


class Backend(Protocol):
    """Something that answers a conversation with an assistant message."""

    def describe(self) -> dict[str, Any]:
        """Model and sampling settings, stamped on every trajectory."""
        ...

    async def complete(
        self, messages: Sequence[Message], tools: Sequence[dict[str, Any]], turn: Turn
    ) -> Reply: ...

    def complete_sync(
        self, messages: Sequence[Message], tools: Sequence[dict[str, Any]], turn: Turn
    ) -> Reply: ...


class ChatAgent:
    """An LLM agent for one episode; ``act`` for sequential use, ``aact`` for concurrency.

    Args:
        name: the agent's name on trajectories (``openai:MODEL``, ``hf:NAME``).
        backend: where replies come from.
        domain: the episode's domain.
        task: the episode's task (only its request and knobs are read).
        demonstrations: a block from :func:`~stategym.llm.prompt.render_demonstrations`.
        sample: which of the ``n`` samples of this task this episode is.
        seed: the run's sampling seed.
    """

    def __init__(
        self,
        name: str,
        backend: Backend,
        domain: Domain,
        task: Task,
        *,
        demonstrations: str = "",
        sample: int = 0,
        seed: int = 0,
    ) -> None:
        self.name = name
        self.sample = sample
        self._backend = backend
        self._seed = seed
        self._task_seed = task.seed
        self._tools = [t.schema for t in domain.available_tools(task.knobs)]
        self._tools.append(finish_tool_schema(task.knobs.stateful))
        self._messages = first_messages(domain, task, demonstrations)
        self._demonstrations = demonstrations.count("### Example ")
        self._rounds: list[Reply] = []
        self._started = False

    @property
    def messages(self) -> list[Message]:
        """The conversation so far, as sent to the model."""
        return self._messages

    def act(self, observation: Observation) -> Action:
        """Decide one round (blocking)."""
        turn = self._observe(observation)
        return self._take(self._backend.complete_sync(self._messages, self._tools, turn))

    async def aact(self, observation: Observation) -> Action:
        """Decide one round without blocking the event loop."""
        turn = self._observe(observation)
        return self._take(await self._backend.complete(self._messages, self._tools, turn))

    def _observe(self, observation: Observation) -> Turn:
        # The reset observation is the request, which the first messages already hold.
        if self._started:
            self._messages.extend(observation.to_messages())
        self._started = True
        index = len(self._rounds)
        key = f"{self._seed}:{self._task_seed}:{self.sample}:{index}".encode()
        return Turn(index, zlib.crc32(key) & 0x7FFFFFFF)

    def _take(self, reply: Reply) -> Action:
        message = _with_call_ids(reply.message, len(self._rounds))
        self._messages.append(message)
        self._rounds.append(reply)
        try:
            return action_from_message(message)
        except AgentFormatError:
            return CallBatch(())  # the environment logs it as an empty action

    def annotate(self, trajectory: Trajectory, **meta: Any) -> Trajectory:
        """The trajectory with each round's reply log and the run's settings attached."""
        rounds = tuple(
            replace(
                record,
                meta={**record.meta, **reply.meta},
                format_errors=record.format_errors + reply.format_errors,
            )
            if reply.meta or reply.format_errors
            else record
            for record, reply in zip(trajectory.rounds, self._rounds, strict=False)
        )
        usage = {"prompt_tokens": 0, "completion_tokens": 0}
        for reply in self._rounds:
            for key in usage:
                usage[key] += int(reply.meta.get("usage", {}).get(key) or 0)
        header = {
            **self._backend.describe(),
            "prompt_version": PROMPT_VERSION,
            "demonstrations": self._demonstrations,
            "sample": self.sample,
            "seed": self._seed,
            "usage": usage,
        }
        return replace(trajectory, rounds=rounds, meta={**trajectory.meta, **header, **meta})


def _with_call_ids(message: Mapping[str, Any], index: int) -> Message:
    """Fill missing call ids the way the environment would (``c<round>_<i>``), so the tool
    results sent back refer to calls the model's conversation actually contains."""
    calls = message.get("tool_calls")
    if not isinstance(calls, list) or all(isinstance(c, Mapping) and c.get("id") for c in calls):
        return dict(message)
    filled = [
        {**c, "id": c.get("id") or f"c{index}_{position}"} if isinstance(c, Mapping) else c
        for position, c in enumerate(calls)
    ]
    return {**message, "tool_calls": filled}
