"""The OpenAI-message rendering: JSON tool calls, tool-role results, the versioned prompt.

What OpenAI-compatible endpoints (and chat templates in the Hermes/Qwen style) take: tools as
function schemas, an assistant message with ``tool_calls`` for a tool round and ``content``
for a message to the user, one ``role: tool`` message per result. The tools and the prompt's
ending rule come from the domain and the task's knobs through
:meth:`~stategym.kernel.domain.Domain.judges_answer`, the rule the environment enforces: an episode
judged on its answer (stateless knobs, or a read-only domain such as ``lookup``) requires
``finish(answer)`` and gets the look-up wording.

A reply is read by the core's message interface
(:func:`~stategym.kernel.protocol.action_from_message` and the environment's reader): one it
rejects whole (more than 64 tool calls, a tool name that is not text, a message over the cap)
is a :class:`RejectedReply`, which the environment logs and explains to the model with the
kind and text ``Env.step_message`` gives the same message; an empty reply is the empty batch
(``empty_action``, in the environment's words for it). The conversation keeps an empty
assistant message for every invalid round, as a transcript rebuilds it from the log. The log
does not keep the rejected message itself (``raw``), which the typed interface does not take.

The prompt is versioned (:data:`PROMPT_VERSION`, stamped on every trajectory an LLM agent
writes) so scores from different prompt revisions are never silently mixed.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import orjson

from stategym.kernel.domain import Domain
from stategym.kernel.errors import AgentFormatError
from stategym.kernel.knobs import Knobs
from stategym.kernel.protocol import (
    Action,
    CallBatch,
    Observation,
    ToolCall,
    action_from_message,
    action_to_message,
)
from stategym.kernel.task import Task
from stategym.kernel.trajectory import Trajectory
from stategym.kernel.validation import read_action
from stategym.rendering.base import Message, Renderer, transcript

PROMPT_VERSION = 6
"""Bump on any change to the wording below, to transcripts or to tool rendering.

2: the ending rule (and ``finish``'s schema) follows ``Domain.judges_answer``, so ``lookup``
with stateful knobs is told that ``finish(answer)`` is required.
3: tool descriptions say a hold or a cart line sets nothing aside (audit 14a F4); with the
``irreversible`` knob off, the stateful ending (:data:`UNDOABLE`), the tools' ``undoable``
sentences and the domains' ``undoable_instructions`` state the undo terms (audits 14d, 14e).
4: every knob's terms (:mod:`~stategym.kernel.knob_text`): with ``dynamics`` off the clock
line says nothing changes on its own and the tools that said prices move or holds expire say
otherwise; with ``stateful`` off the domain's ``answer_instructions`` and tools that name no
tool the model lacks; ``finish`` and the ending name each domain's answer
(``Domain.answer_form``: lookup's is an entity id or a number); the clock line names what
moves in the domain (``Domain.moves``); travel's search says a held fare keeps its price;
synthetic texts take "an" before a vowel ("an option"), and the stateless travel and
synthetic requests no longer say "the best a flight".
5: with ``stateful`` off, the READ tools that list only what the episode's own writes made
(:attr:`~stategym.kernel.tools.Tool.reads_own_writes`: shop's ``review_cart`` and
``list_orders``, travel's ``list_bookings``, bank's ``list_transfers``, meetings'
``list_invitations``, cloud's ``list_snapshots``, the synthetic purchase lists) are no
longer offered. The compact rendering's handles start at ``B``: none holds ``A`` or ``I``,
nor is a capitalised word or unit (:data:`~stategym.rendering.handles.WORDS`); time-zone
offsets (``UTC-5``) and the tools' own names and arguments' (a synthetic ``get_key_1``) are
no longer handles (audit 17A)."""

PROTOCOL = """\
How to work:
- Each reply is one round: either call tools, or write one message to the user.
- Tool calls in the same reply run together, in parallel: none of them sees another's result. \
Put calls in one reply only when none needs a value another one returns.
- A reply without tool calls is sent to the user. Ask the user only for what only they know; \
look up whatever a tool can tell you."""

STILL = "- Nothing changes on its own: what a tool shows stays so unless you change it."
"""The clock line where the world does not move: the ``dynamics`` knob is off, or the domain
is read-only (:func:`clock_line`)."""
STILL_ANSWERED = "- Nothing changes on its own: what a tool shows stays so."
""":data:`STILL` where nothing can be changed either (an episode judged on its answer)."""

STATEFUL = """\
- Some tools change the world, and some changes cannot be undone (a payment). Observe what a \
decision depends on first, get the user's agreement, then commit once.
- Call finish when the request is done, or when it cannot be done."""

UNDOABLE = """\
- Some tools change the world; here what a change cost is refunded in full when it is undone \
(a cancelled payment), though not every change has an undo: each tool's description says. \
Observe what a decision depends on first, get the user's agreement, then commit once.
- Call finish when the request is done, or when it cannot be done."""
"""The stateful ending where the ``irreversible`` knob is off: :data:`STATEFUL` says changes
cannot be undone, which there is false; the knob is about money (a cancellation refunds in
full), so a change no tool reverses (cloud's detach) stays one (:func:`protocol_ending`)."""

ANSWERED = """\
- Only look-up tools are available: nothing can be booked or changed.
- End with finish(answer=...) giving {answer_form}."""
"""The ending of an episode judged on its answer; ``answer_form`` is the domain's
(:attr:`~stategym.kernel.domain.Domain.answer_form`)."""

EXAMPLES_HEADER = (
    "Here are complete example episodes on other tasks. They show the protocol; the facts in "
    "them do not apply to your task."
)


def protocol_ending(domain: Domain, knobs: Knobs) -> str:
    """The protocol's ending rule for an episode of ``domain`` under ``knobs``: answer with
    ``finish(answer=...)`` where the episode is judged on its answer, else commit once, with
    irreversibility stated only where the knob makes it true."""
    if domain.judges_answer(knobs):
        return ANSWERED.format(answer_form=domain.answer_form)
    return STATEFUL if knobs.irreversible else UNDOABLE


def clock_line(domain: Domain, knobs: Knobs) -> str:
    """The protocol's line on what moves: the domain's
    :attr:`~stategym.kernel.domain.Domain.moves` (and, where its write tools are offered,
    what they make that :attr:`~stategym.kernel.domain.Domain.expires`) where the
    ``dynamics`` knob is on, else that nothing changes on its own (a read-only domain has
    nothing that moves whatever the knob); what
    :attr:`~stategym.kernel.domain.Domain.settles` by itself is said either way."""
    answered = domain.judges_answer(knobs)
    settles = domain.settles if not answered else ""
    if knobs.dynamics and not domain.read_only:
        said = [domain.moves, "" if answered else domain.expires]
        if settles:
            said.append(settles[0].upper() + settles[1:] + ".")
        return " ".join(["- The clock advances every round.", *filter(None, said)])
    if settles:
        return (
            f"- Nothing changes on its own but what you start ({settles}): what a tool shows "
            "stays so unless you change it."
        )
    return STILL_ANSWERED if answered else STILL


def offered_tools(domain: Domain, knobs: Knobs) -> list[dict[str, Any]]:
    """The tools an episode offers, ``finish`` last, as the environment offers them."""
    return domain.tool_schemas(knobs)


class RejectedReply(CallBatch):
    """A reply the environment rejects whole, as the action that makes it say so in its words.

    :func:`~stategym.kernel.protocol.action_from_message` (or the environment's reader)
    rejects some replies outright: 65 tool calls, a tool name that is not text, a message
    longer than the cap. An empty batch in their place would be logged and explained as
    ``empty_action`` whatever was wrong. Reading this batch's ``calls``, which
    :meth:`Env.step <stategym.kernel.env.Env.step>` does first, raises the rejection itself,
    and the environment logs an invalid round of its kind and tells the model
    ``"<kind>: <reason>"``: the round ``Env.step_message`` logs for the same message (its
    ``raw`` aside, which the typed interface does not take).

    Example:
        >>> from stategym.kernel.env import Env
        >>> env = Env("travel")
        >>> _ = env.reset(seed=0)
        >>> env.step(RejectedReply("too_large", "too many")).observation.error
        'too_large: too many'
    """

    __slots__ = ("kind", "reason")
    kind: str
    reason: str

    def __init__(self, kind: str, reason: str) -> None:
        # The batch's own ``calls`` slot stays unset: the property below answers for it.
        object.__setattr__(self, "kind", kind)
        object.__setattr__(self, "reason", reason)

    @property  # a batch whose calls cannot be read, on purpose
    def calls(self) -> tuple[ToolCall, ...]:
        raise AgentFormatError(self.kind, self.reason)

    def __repr__(self) -> str:
        return f"RejectedReply({self.kind!r}, {self.reason!r})"

    def __eq__(self, other: object) -> bool:
        return type(other) is RejectedReply and (other.kind, other.reason) == (
            self.kind,
            self.reason,
        )

    def __hash__(self) -> int:
        return hash((self.kind, self.reason))

    def __reduce__(self) -> tuple[type[RejectedReply], tuple[str, str]]:
        # The dataclass's own pickling reads ``calls``, which raises.
        return RejectedReply, (self.kind, self.reason)


class MessageRenderer:
    """OpenAI chat messages for one episode of ``domain`` with ``knobs``.

    Example:
        >>> from stategym.registry import get_domain
        >>> lookup = MessageRenderer(get_domain("lookup"), Knobs())
        >>> lookup.tools[-1]["function"]["parameters"]["required"]
        ['answer']
    """

    kind = "messages"

    def __init__(self, domain: Domain, knobs: Knobs) -> None:
        self.domain = domain
        self.knobs = knobs
        self._tools = offered_tools(domain, knobs)

    @property
    def tools(self) -> list[dict[str, Any]]:
        return self._tools

    def system_prompt(self, demonstrations: str = "") -> str:
        ending = protocol_ending(self.domain, self.knobs)
        rules = "\n".join((PROTOCOL, clock_line(self.domain, self.knobs), ending))
        parts = [self.domain.instructions_for(self.knobs), rules]
        if demonstrations:
            parts.append(demonstrations)
        return "\n\n".join(parts)

    def first_messages(self, task: Task, demonstrations: str = "") -> list[Message]:
        return [
            {"role": "system", "content": self.system_prompt(demonstrations)},
            {"role": "user", "content": task.request.text},
        ]

    def observation_messages(self, observation: Observation) -> list[Message]:
        # The kernel's message form of an observation is this rendering's (DESIGN §3).
        return [dict(m) for m in observation.to_messages()]

    def action_message(self, action: Action, index: int) -> Message:
        # A rejected reply is logged as an invalid round, which a transcript rebuilds as an
        # empty message (``logged_action``): the conversation holds the same.
        if isinstance(action, RejectedReply) or (
            isinstance(action, CallBatch) and not action.calls
        ):
            return {"role": "assistant", "content": ""}
        message = action_to_message(action)
        for position, call in enumerate(message.get("tool_calls") or ()):
            # The environment's id for a call that came without one (``c<round>_<i>``).
            call["id"] = call["id"] or f"c{index}_{position}"
        return message

    def parse(self, reply: Message | str) -> Action:
        """The action ``reply`` means. A reply the core's message interface rejects is a
        :class:`RejectedReply` of the same kind and reason, so the round logged and the error
        the model is told are those of ``Env.step_message`` for the same message; an empty
        reply is the empty batch (``empty_action`` either way, told in the environment's
        words for an empty action, which say what to send instead)."""
        if isinstance(reply, str):
            reply = {"role": "assistant", "content": reply}
        try:
            action = action_from_message(reply)
        except AgentFormatError as error:
            return _standing_for(error)
        return as_the_reader_takes(action)


def as_the_reader_takes(action: Action) -> Action:
    """``action``, or what stands for it where the environment's reader rejects it whole (a
    message over the cap, too many calls): the empty batch for an empty action, otherwise a
    :class:`RejectedReply` of the reader's kind and reason. A renderer's ``parse`` asks the
    reader now, so that its ``action_message`` shows every invalid round as the log rebuilds
    it (an empty reply) and the live conversation is the transcript."""
    try:
        read_action(action)
    except AgentFormatError as error:
        return _standing_for(error)
    return action


def _standing_for(error: AgentFormatError) -> CallBatch:
    if error.kind == "empty_action":
        return CallBatch(())
    return RejectedReply(error.kind, str(error))


def render_demonstrations(episodes: Sequence[tuple[Renderer, Trajectory, Task]]) -> str:
    """k finished episodes as a text block for the system prompt.

    Each transcript is written one message per line, ``ROLE: text``, with tool calls in the
    ``<tool_call>{json}</tool_call>`` form local models emit. Text, rather than extra chat
    turns, so any endpoint accepts it and the real conversation stays one episode.

    Args:
        episodes: ``(fresh renderer, trajectory, task)`` per episode (usually the expert's;
            each renderer made for its own episode's domain and knobs).
    """
    blocks = [EXAMPLES_HEADER] if episodes else []
    for number, (renderer, trajectory, task) in enumerate(episodes, start=1):
        lines = [f"### Example {number}"]
        lines.extend(message_line(m) for m in transcript(renderer, trajectory, task))
        blocks.append("\n".join(lines))
    return "\n\n".join(blocks)


def message_line(message: Mapping[str, Any]) -> str:
    """One message as ``ROLE: text``, tool calls as Hermes ``<tool_call>`` JSON."""
    role = str(message["role"]).upper()
    if message.get("tool_calls"):
        calls = "".join(
            f'<tool_call>{{"name": {orjson.dumps(c["function"]["name"]).decode()}, '
            f'"arguments": {c["function"]["arguments"]}}}</tool_call>'
            for c in message["tool_calls"]
        )
        return f"{role}: {calls}"
    return f"{role}: {message.get('content') or ''}"
