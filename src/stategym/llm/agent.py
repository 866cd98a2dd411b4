"""The chat agent every LLM backend shares: conversation, action mapping and the round log.

A :class:`ChatAgent` asks its episode's renderer (:mod:`stategym.rendering`) for everything
the model sees: the offered tools, the first messages, each observation's messages, and the
action a reply means. The conversation keeps the renderer's message for the action taken
(not the backend's raw message), so it equals :func:`~stategym.rendering.transcript` of the
logged trajectory, invalid rounds included. A reply that maps to nothing becomes the empty
action, which the environment logs as a format error: model output never raises.

What a backend reports per round (token usage, token ids, log-probabilities, tolerated parse
errors) is attached to the trajectory by :meth:`ChatAgent.annotate`: as each round's typed
:class:`~stategym.trajectory.ModelTurn`, the run record's sample, and ``Trajectory.meta``
(see ``docs/llm.md`` and ``docs/trajectory.md``).
"""

from __future__ import annotations

import zlib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any, Protocol

from stategym.domain import Domain
from stategym.protocol import Action, Observation
from stategym.rendering import PROMPT_VERSION, Message, make_renderer
from stategym.task import Task
from stategym.trajectory import MODEL_META_KEYS, ModelTurn, Trajectory, Usage


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
        rendering: ``messages`` (OpenAI messages, JSON tool calls) or ``compact``.
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
        rendering: str = "messages",
    ) -> None:
        self.name = name
        self.sample = sample
        self.renderer = make_renderer(domain, task.knobs, rendering)
        self._backend = backend
        self._seed = seed
        self._task_seed = task.seed
        self._tools = self.renderer.tools
        self._messages = self.renderer.first_messages(task, demonstrations)
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
            self._messages.extend(self.renderer.observation_messages(observation))
        self._started = True
        index = len(self._rounds)
        key = f"{self._seed}:{self._task_seed}:{self.sample}:{index}".encode()
        return Turn(index, zlib.crc32(key) & 0x7FFFFFFF)

    def _take(self, reply: Reply) -> Action:
        action = self.renderer.parse(reply.message)
        # The renderer's message for the action, so the conversation is what the log rebuilds.
        self._messages.append(self.renderer.action_message(action, len(self._rounds)))
        self._rounds.append(reply)
        return action

    def annotate(self, trajectory: Trajectory, **meta: Any) -> Trajectory:
        """The trajectory with each round's model turn and the run's settings attached."""
        rounds = []
        for record, reply in zip(trajectory.rounds, self._rounds, strict=False):
            turn, rest = model_turn(reply.meta)
            rounds.append(
                replace(
                    record,
                    model=turn,
                    meta={**record.meta, **rest},
                    format_errors=record.format_errors + reply.format_errors,
                )
            )
        rounds.extend(trajectory.rounds[len(rounds) :])
        usage = {"prompt_tokens": 0, "completion_tokens": 0}
        for reply in self._rounds:
            for key in usage:
                usage[key] += int(reply.meta.get("usage", {}).get(key) or 0)
        header = {
            **self._backend.describe(),
            "prompt_version": PROMPT_VERSION,
            "rendering": self.renderer.kind,
            "demonstrations": self._demonstrations,
            "seed": self._seed,
            "usage": usage,
        }
        return replace(
            trajectory,
            rounds=tuple(rounds),
            run=replace(trajectory.run, sample=self.sample),
            meta={**trajectory.meta, **header, **meta},
        )


def model_turn(meta: Mapping[str, Any]) -> tuple[ModelTurn | None, dict[str, Any]]:
    """A backend's per-round report split into the typed model turn and the other keys."""
    fields = {MODEL_META_KEYS[k]: v for k, v in meta.items() if k in MODEL_META_KEYS}
    rest = {k: v for k, v in meta.items() if k not in MODEL_META_KEYS}
    if not fields:
        return None, rest
    usage = fields.pop("usage", None)
    for name in ("token_ids", "logprobs", "tokens", "prompt_token_ids"):
        if fields.get(name) is not None:
            fields[name] = tuple(fields[name])
    typed = None
    if isinstance(usage, Mapping):
        typed = Usage(usage.get("prompt_tokens"), usage.get("completion_tokens"))
    return ModelTurn(**fields, usage=typed), rest
