"""The chat agent every LLM backend shares: conversation, action mapping and the round log.

A :class:`ChatAgent` asks its episode's renderer (:mod:`stategym.rendering`) for everything
the model sees: the offered tools, the first messages, each observation's messages, and the
action a reply means. The conversation keeps the renderer's message for the action taken
(not the backend's raw message), so it equals :func:`~stategym.rendering.transcript` of the
logged trajectory, invalid rounds included (``docs/llm.md`` lists the known differences); a
reply's text is first made valid UTF-8 as the log keeps it (:func:`_as_logged`), whatever the
backend. A reply that maps to nothing becomes the empty action, which the environment logs as
a format error: model output never raises.

What a backend reports per round (token usage, token ids, log-probabilities, tolerated parse
errors) is attached to the trajectory by :meth:`ChatAgent.annotate`: as each round's typed
:class:`~stategym.kernel.trajectory.ModelTurn`, the run record's sample, and
``Trajectory.meta`` (see ``docs/llm.md`` and ``docs/trajectory.md``). ``meta`` starts with the
agent's settings (:meth:`ChatAgent.settings`: model, sampling, weights digest, rendering, run
seed), which a resumed run compares with its own before it reuses an episode. A backend reads
its model's output by type (the ``openai:`` agent drops a field of the wrong type);
``annotate`` then checks, once per episode, that the trajectory reads back
(:func:`~stategym.kernel.trajectory.loads`), so a backend that let a mistyped value through is
a bug that stops the run before a line the reader refuses is written. No number an endpoint
sends can make that check fail: each count is below :data:`COUNT_LIMIT`, and so is each episode
total in ``meta["usage"]``; a total that would reach it (counts an endpoint invented) is logged
as ``None`` and named in the trajectory's ``meta["dropped"]`` (``"usage.prompt_tokens"``), as a
round names what it dropped.

Tolerated parse errors count as format errors: a round's ``format_errors`` are the
environment's, then the backend's, which the round's ``meta["format_errors"]`` repeats; that
trailing run is what :func:`~stategym.kernel.verify.verify` leaves out when it compares the
round with its replay.

Token-in-token-out: with a backend that has a ``chat`` template (the local ``hf:`` agent,
or ``openai:`` given a ``tokenizer``), the agent keeps the episode's token stream
(:class:`~stategym.rendering.tokens.TokenStream`) and sends it as the prompt: the ids the
model sampled as sampled, then the renderer's tokens for each observation; nothing is
re-tokenised, and each round logs its place in the stream (:class:`TokenSpan`: span,
appended tokens, a policy / observation / user mask letter per token).
"""

from __future__ import annotations

import itertools
import math
import numbers
import zlib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any, Protocol

from stategym.kernel.boundary import MAX_DEPTH, clean_strings
from stategym.kernel.domain import Domain
from stategym.kernel.errors import TrajectoryError
from stategym.kernel.protocol import Action, CallBatch, Observation, ToolCall
from stategym.kernel.task import Task
from stategym.kernel.trajectory import (
    MODEL_META_KEYS,
    ModelTurn,
    TokenSpan,
    Trajectory,
    Usage,
    dumps,
    loads,
)
from stategym.kernel.validation import kept_id, kept_name
from stategym.rendering import PROMPT_VERSION, Message, make_renderer
from stategym.rendering.tokens import (
    ChatTemplate,
    TokenStream,
    first_segment,
    observation_segment,
)

COUNT_LIMIT = 2**63
"""Token counts (per round, and their episode totals) and token ids are below this: the log
holds 64-bit integers, which its reader refuses past (the ``openai:`` agent drops a count at
or past it; :meth:`ChatAgent.annotate` drops a total)."""
MESSAGE_LEVELS = MAX_DEPTH + 8
"""How deep :func:`_as_logged` cleans a reply: a message's own levels (``tool_calls``, a
call, its ``function``, its ``arguments``) and the
:data:`~stategym.kernel.boundary.MAX_DEPTH` levels of arguments the environment reads, with
room to spare."""
_SESSIONS = itertools.count(1)
"""Session keys, one per agent (an episode): unique within the process."""


@dataclass(frozen=True, slots=True)
class Turn:
    """Which reply a backend is asked for.

    Attributes:
        index: the round about to be played.
        seed: sampling seed for this reply, derived from (run seed, task, sample, round).
        prompt_ids: the episode's token stream so far, to continue as it is (a backend with
            a ``chat`` template: token-in-token-out); ``None``: render ``messages``.
        session: the episode's key, the same on every round (a local backend keeps the
            episode's key/value cache under it between rounds).
    """

    index: int
    seed: int
    prompt_ids: tuple[int, ...] | None = None
    session: int = 0


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
    """Something that answers a conversation with an assistant message.

    One may also have ``runtime() -> dict``: how it ran without changing what it plays (an
    ``hf:`` model's torch threads), logged as ``meta["runtime"]`` and, unlike
    :meth:`describe`'s settings, never compared when a run resumes.
    """

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
        # A backend with a chat template is fed tokens, not messages (token-in-token-out).
        self._chat: ChatTemplate | None = getattr(backend, "chat", None)
        self.tokens: TokenStream | None = TokenStream() if self._chat is not None else None
        self.session = next(_SESSIONS)
        """The key a backend keeps this episode's cache under."""

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
        new = self.renderer.observation_messages(observation) if self._started else []
        self._messages.extend(new)
        if self.tokens is not None and self._chat is not None:
            if not self._started:
                self.tokens.extend(first_segment(self._chat, self._messages, self._tools))
            else:
                closed = self._rounds[-1].meta.get("finish_reason") != "length"
                segment = observation_segment(self._chat, new, self._tools, closed=closed)
                self.tokens.extend(segment)
        self._started = True
        index = len(self._rounds)
        key = f"{self._seed}:{self._task_seed}:{self.sample}:{index}".encode()
        prompt = tuple(self.tokens.ids) if self.tokens is not None else None
        return Turn(index, zlib.crc32(key) & 0x7FFFFFFF, prompt, self.session)

    def _take(self, reply: Reply) -> Action:
        if self.tokens is not None:
            ids = reply.meta.get("completion_token_ids")
            if ids is None:
                raise RuntimeError(
                    "token-in-token-out needs the sampled token ids, and the backend "
                    "returned none (an openai: endpoint given a tokenizer must return "
                    "token_ids, as stategym serve does)"
                )
            self.tokens.sampled(ids)
        action = _named_as_logged(self.renderer.parse(_as_logged(reply.message)))
        # The renderer's message for the action, so the conversation is what the log rebuilds.
        self._messages.append(self.renderer.action_message(action, len(self._rounds)))
        self._rounds.append(reply)
        return action

    def _span(self, index: int) -> TokenSpan | None:
        """Round ``index``'s place in the token stream (token-in-token-out agents)."""
        if self.tokens is None or index >= len(self.tokens.spans):
            return None
        start, end = self.tokens.spans[index]
        ids, mask = self.tokens.round_tokens(index)
        first = "".join(self.tokens.mask[:start]) if index == 0 else None
        return TokenSpan(start, end, ids[end - start :], mask, first)

    def annotate(self, trajectory: Trajectory, **meta: Any) -> Trajectory:
        """The trajectory with each round's model turn and the run's settings attached.

        The episode is over when it is annotated, so the backend's cache of it is released
        here (backends that keep one have ``release``).
        """
        release = getattr(self._backend, "release", None)
        if release is not None:
            release(self.session)
        rounds = []
        for record, reply in zip(trajectory.rounds, self._rounds, strict=False):
            turn, rest = model_turn(reply.meta)
            span = self._span(record.index)
            if turn is not None and span is not None:
                prompt = turn.prompt_token_ids
                if record.index == 0 and self.tokens is not None:
                    prompt = tuple(self.tokens.ids[: span.start])  # the stream's beginning
                turn = replace(turn, span=span, prompt_token_ids=prompt)
            if reply.format_errors:  # the tail verify leaves out: meta names it exactly
                rest["format_errors"] = list(reply.format_errors)
            rounds.append(
                replace(
                    record,
                    model=turn,
                    meta={**record.meta, **rest},
                    format_errors=record.format_errors + reply.format_errors,
                )
            )
        rounds.extend(trajectory.rounds[len(rounds) :])
        usage = self._usage()
        header = {**self.settings(), "usage": usage}
        runtime = getattr(self._backend, "runtime", None)  # an hf: model's threads
        if runtime is not None:
            header["runtime"] = runtime()
        dropped = [f"usage.{key}" for key, total in usage.items() if total is None]
        if dropped:
            header["dropped"] = dropped
        annotated = replace(
            trajectory,
            rounds=tuple(rounds),
            run=replace(trajectory.run, sample=self.sample),
            meta={**trajectory.meta, **header, **meta},
        )
        return readable(annotated)

    def settings(self) -> dict[str, Any]:
        """How this agent plays, as every trajectory's ``meta`` logs it: the backend's model
        and sampling (:meth:`Backend.describe`: an ``hf:`` model's file digests, an
        ``openai:`` endpoint's sampling seed), the prompt version, the rendering, the number
        of demonstrations and the run seed.

        A run resumes only the episodes whose ``meta`` holds these same values
        (:func:`stategym.rollout.settings.refuse_other_settings`): an episode played
        otherwise (another temperature, other weights at the same path) would be reported
        under this agent's settings.
        """
        return {
            **self._backend.describe(),
            "prompt_version": PROMPT_VERSION,
            "rendering": self.renderer.kind,
            "demonstrations": self._demonstrations,
            "seed": self._seed,
        }

    def _usage(self) -> dict[str, int | None]:
        """The episode's token counts, summed over the rounds that report them.

        A total that reaches :data:`COUNT_LIMIT` is ``None``: only counts an endpoint
        invented add up to it (each below the limit, three of ``2**63 - 1``), and a capped
        total would pass for a real one; as a number it would make the line unreadable.
        """
        usage: dict[str, int | None] = {}
        for key in ("prompt_tokens", "completion_tokens"):
            total = 0
            for reply in self._rounds:
                counts = reply.meta.get("usage")
                value = counts.get(key) if isinstance(counts, Mapping) else None
                total += value if type(value) is int else 0
            usage[key] = total if 0 <= total < COUNT_LIMIT else None
        return usage


def _as_logged(message: Message) -> Message:
    """A backend's message with its text valid UTF-8 as the log keeps it (a lone surrogate
    becomes U+FFFD, a pair the character it encodes:
    :func:`~stategym.kernel.boundary.clean_strings`), so that the conversation shows what the
    log rebuilds. The ``openai:`` backend's replies already are; a Python backend's may not
    be. The walk stops :data:`MESSAGE_LEVELS` deep, below anything the environment takes; a
    message it cannot rebuild (a key whose own ``__hash__`` raises) is read as it is, and
    the renderer says what is wrong with it."""
    try:
        return clean_strings(message, MESSAGE_LEVELS)
    except Exception:  # the message's own code raised: the reader reports such a message
        return message


def _named_as_logged(action: Action) -> Action:
    """``action`` with each call's id and tool name as the log keeps them
    (:func:`~stategym.kernel.validation.kept_id`, :func:`~stategym.kernel.validation.kept_name`):
    an id the environment cannot keep is ``""``, which the renderer shows as the environment's
    own ``c<round>_<i>``, and an over-long name is cut. So every tool result in the
    conversation answers a call of the message before it, as chat endpoints require."""
    if type(action) is not CallBatch:  # a message, or a reply rejected whole
        return action
    return CallBatch(
        tuple([ToolCall(kept_name(c.name), c.arguments, kept_id(c.id)) for c in action.calls])
    )


def readable(trajectory: Trajectory) -> Trajectory:
    """``trajectory``, after checking that its line reads back (one per episode: cheap).

    Raises:
        RuntimeError: it would be written in a form the reader refuses: a backend let a value
            of the wrong type through, a bug (the run stops before the line is written).
    """
    try:
        loads(dumps(trajectory))
    except (TypeError, TrajectoryError) as error:  # orjson's encode error is a TypeError
        raise RuntimeError(
            f"bug: the trajectory of {trajectory.agent} on {trajectory.domain} seed "
            f"{trajectory.seed} would not read back ({error}); a backend let a value of the "
            "wrong type into its model turn or meta"
        ) from error
    return trajectory


def finite_number(value: Any) -> float | None:
    """A backend's number (a log-probability) as a finite float, else ``None``: a bool is no
    number, and an infinity, a NaN or an integer past the float range is none the log holds."""
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        return None
    try:
        number = float(value)
    except OverflowError:  # an integer past the float range
        return None
    return number if math.isfinite(number) else None


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
