"""Observation -> token segments, for token-in-token-out rollouts (and assistant turns
rebuilt from a log).

A model that is trained on its own samples must be fed, round after round, exactly the ids
it sampled followed by the tokens of what it observed; re-rendering and re-tokenising the
whole conversation each round is not that (a sampled ``830`` as one token comes back as
three, text a parser or template rewrote comes back rewritten). :class:`TokenStream` keeps
one episode's tokens: the first prompt, then per round the sampled ids and the observation's
segment, each token with a mask letter (:data:`POLICY`, :data:`OBSERVATION`, :data:`USER`),
so ``prompt(k + 1) == prompt(k) + completion(k) + observation(k)`` holds by construction.

A segment is cut from the chat template itself, so any chat model works: the template
renders a fixed short conversation ending in an assistant turn, with and without the
observation's messages (and the generation prompt) after it; the text after that turn's
end-of-turn marker is the segment, tokenised on its own. This module needs no tokenizer
library: it takes a :class:`ChatTemplate` (``stategym.llm.local.LocalModel`` is one).

Inside a message's content the tokenizer's special tokens are never matched: the environment
quotes model text back (an unknown tool's name), and a ``<|im_end|>`` the model wrote as plain
characters must not come back as the marker (a forged turn boundary, in the next prompt and in
training data). A :class:`ContentTokenizer` (``stategym.llm.local.ChatTokenizer`` is one) is
given each content's character range and tokenises the special-token strings there as text;
the template's own markers stay special, and a segment whose contents hold none is tokenised
exactly as in one piece. A content is found by searching the text for it, in order: one the
template does not write verbatim (escaped, say) has no range and is tokenised as the rest.

An assistant turn that was not sampled (a scripted or logged action, a teacher's turn) is
rebuilt from its message by :func:`assistant_segment` under the same rule: its content, each
call's name and its arguments text are tokenised as text, and the turn ends at the marker the
template writes after it (found from the end of the template's text), never at a marker string
inside the content; so its ids decode to the turn as logged, whole. A sampled turn is never
rebuilt: its ids are kept as the model sampled them (a marker it sampled is its own).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable

from stategym.rendering.base import Message

POLICY, OBSERVATION, USER = "p", "o", "u"
"""Mask letters: a token the policy sampled (carries loss), one the template or the
environment wrote, one of the simulated user's words."""
_MARK = "stategym-turn-7f3a"
"""The content of the stand-in assistant turn a segment is cut after."""
_BASE: list[Message] = [{"role": "system", "content": "s"}, {"role": "user", "content": "u"}]
"""The fixed short conversation a turn or a segment is cut after."""


class ChatTemplate(Protocol):
    """A model's chat template and tokenizer, as :class:`TokenStream` needs them."""

    @property
    def end_of_turn(self) -> str:
        """The text that closes an assistant turn (what the model emits to stop)."""
        ...

    def template(
        self, messages: Sequence[Message], tools: Sequence[dict[str, Any]], generation: bool
    ) -> str:
        """The conversation as template text (``generation``: with the generation prompt)."""
        ...

    def tokenize(self, text: str) -> tuple[list[int], list[tuple[int, int]]]:
        """Token ids of ``text`` (no special tokens added) and each token's character span."""
        ...


@runtime_checkable
class ContentTokenizer(Protocol):
    """A :class:`ChatTemplate` whose tokenizer has special tokens (turn markers) that a
    message's content must never produce: content quotes model text (an unknown tool's name
    is echoed in the error), and a ``<|im_end|>`` the model wrote as plain characters, read
    back as the marker, would forge a turn boundary in the next prompt and in training data.
    A template without this method is tokenised in one piece (special-token strings in
    content are then matched as everywhere else)."""

    def tokenize_content(
        self, text: str, contents: Sequence[tuple[int, int]]
    ) -> tuple[list[int], list[tuple[int, int]]]:
        """As :meth:`ChatTemplate.tokenize`, except that a special-token string inside one of
        ``contents`` (character ranges of message content) is tokenised as text."""
        ...


@dataclass(frozen=True, slots=True)
class Segment:
    """Tokens appended to a stream, with one mask letter each."""

    ids: tuple[int, ...]
    mask: str


def first_segment(
    chat: ChatTemplate, messages: Sequence[Message], tools: Sequence[dict[str, Any]]
) -> Segment:
    """The first prompt: system prompt and request, up to the generation prompt."""
    text = chat.template(messages, tools, True)
    return _segment(chat, text, messages, 0)


def observation_segment(
    chat: ChatTemplate,
    observation: Sequence[Message],
    tools: Sequence[dict[str, Any]],
    *,
    closed: bool,
) -> Segment:
    """What follows a sampled turn: its end-of-turn marker if the model did not reach it
    (``closed`` false: cut by the length limit), the observation's messages, the next
    generation prompt.

    Raises:
        ValueError: a template that renders the turn differently once messages follow it
            (no stable segment can be cut; such a template cannot be used token-in-token-out).
    """
    base: list[Message] = [*_BASE, {"role": "assistant", "content": _MARK}]
    before = chat.template(base, tools, False)
    after = chat.template([*base, *observation], tools, True)
    start = before.rfind(_MARK)
    cut = before.find(chat.end_of_turn, start) if start >= 0 else -1
    if cut < 0 or after[: cut + len(chat.end_of_turn)] != before[: cut + len(chat.end_of_turn)]:
        raise ValueError("the chat template renders a turn differently once messages follow it")
    cut += len(chat.end_of_turn)
    closing = "" if closed else chat.end_of_turn
    return _segment(chat, closing + after[cut:], observation, len(closing))


def assistant_segment(
    chat: ChatTemplate, message: Message, tools: Sequence[dict[str, Any]]
) -> Segment:
    """An assistant turn rebuilt from its message, as the template writes it after a
    generation prompt: content and calls, then the end-of-turn marker; every token
    :data:`POLICY` (what a model that wrote this message would have sampled).

    For a turn that was not sampled (a logged or scripted action): the message's content,
    each call's name and its arguments text are tokenised as text (:class:`ContentTokenizer`),
    and the turn ends at the template's own marker, the one it writes after the turn, so a
    marker string inside the content neither becomes a special token nor cuts the turn.
    Many turns under one template and tool list: :class:`AssistantTurns`.

    Raises:
        ValueError: a template whose text with the turn does not extend its generation
            prompt, or that does not close the turn with its end-of-turn marker.
    """
    return AssistantTurns(chat, tools).segment(message)


class AssistantTurns:
    """Assistant turns rebuilt under one chat template and tool list
    (:func:`assistant_segment`): what stands before and after every turn (the generation
    prompt, what follows the turn's marker) is rendered once, not per turn."""

    def __init__(self, chat: ChatTemplate, tools: Sequence[dict[str, Any]]) -> None:
        self.chat = chat
        self.tools = tools
        self.before = chat.template(_BASE, tools, True)
        self.tail = _after_turn(chat, tools)

    def segment(self, message: Message) -> Segment:
        """One turn (:func:`assistant_segment`)."""
        chat, before, tail = self.chat, self.before, self.tail
        after = chat.template([*_BASE, message], self.tools, False)
        if not after.startswith(before):
            raise ValueError("the chat template does not extend its generation prompt")
        end = len(after) - len(tail)
        closed = after.endswith(tail) and after[:end].endswith(chat.end_of_turn)
        if not closed or end - len(chat.end_of_turn) < len(before):
            raise ValueError("the chat template writes no end-of-turn marker for the turn")
        text = after[len(before) : end]
        body = len(text) - len(chat.end_of_turn)  # the contents lie before the closing marker
        found = _ranges(text[:body], _turn_texts(message), 0)
        ids, _ = _tokenize(chat, text, [span for span in found if span is not None])
        return Segment(tuple(ids), POLICY * len(ids))


def _after_turn(chat: ChatTemplate, tools: Sequence[dict[str, Any]]) -> str:
    """What the template writes after a conversation's last assistant turn's end-of-turn
    marker (a newline, say): the turn's own marker is the one just before it."""
    reference = chat.template([*_BASE, {"role": "assistant", "content": _MARK}], tools, False)
    start = reference.rfind(_MARK)
    cut = reference.find(chat.end_of_turn, start) if start >= 0 else -1
    if cut < 0:
        raise ValueError("the chat template writes no end-of-turn marker for the turn")
    return reference[cut + len(chat.end_of_turn) :]


def _turn_texts(message: Message) -> list[str]:
    """An assistant message's texts in the order a template writes them: its content, then
    each call's name and arguments (arguments given as an object have no text of their own
    and are found only if the template writes them as given)."""
    content = message.get("content")
    texts = [content if isinstance(content, str) else ""]
    for call in message.get("tool_calls") or ():
        function = call.get("function") if isinstance(call, dict) else None
        if isinstance(function, dict):
            name, arguments = function.get("name"), function.get("arguments")
            texts.append(name if isinstance(name, str) else "")
            texts.append(arguments if isinstance(arguments, str) else "")
    return texts


def _segment(chat: ChatTemplate, text: str, messages: Sequence[Message], offset: int) -> Segment:
    """Tokenise ``text``, the messages' contents as text (:class:`ContentTokenizer`); tokens
    starting inside a user message's content are ``USER``."""
    contents = _contents(text, messages, offset)
    ids, spans = _tokenize(chat, text, [(start, end) for _, start, end in contents])
    users = [(start, end) for role, start, end in contents if role == "user"]
    mask = "".join(
        USER if any(a <= begin < b for a, b in users) else OBSERVATION for begin, _ in spans
    )
    return Segment(tuple(ids), mask)


def _tokenize(
    chat: ChatTemplate, text: str, contents: Sequence[tuple[int, int]]
) -> tuple[list[int], list[tuple[int, int]]]:
    """Ids and spans of ``text``, the ``contents`` ranges tokenised as text where the
    tokenizer can (:class:`ContentTokenizer`), in one piece where it cannot."""
    if isinstance(chat, ContentTokenizer):
        return chat.tokenize_content(text, contents)
    return chat.tokenize(text)


def _contents(text: str, messages: Sequence[Message], offset: int) -> list[tuple[str, int, int]]:
    """Each message's role and the character range of its content in ``text`` (found in
    order from ``offset``; an empty content, or one the template does not write verbatim,
    has none)."""
    texts = [str(message.get("content") or "") for message in messages]
    found = _ranges(text, texts, offset)
    return [
        (str(message.get("role")), *span)
        for message, span in zip(messages, found, strict=True)
        if span is not None
    ]


def _ranges(text: str, contents: Sequence[str], offset: int) -> list[tuple[int, int] | None]:
    """Each content's character range in ``text``, searched in order from ``offset``
    (``None``: empty, or not written verbatim; the search goes on from the last one found)."""
    found: list[tuple[int, int] | None] = []
    position = offset
    for content in contents:
        start = text.find(content, position) if content else -1
        if start < 0:
            found.append(None)
            continue
        position = start + len(content)
        found.append((start, position))
    return found


@dataclass(slots=True)
class TokenStream:
    """One episode's tokens so far, and where each round's sampled tokens sit.

    Attributes:
        ids: every token fed to or sampled by the model, in order.
        mask: one letter per token (:data:`POLICY`, :data:`OBSERVATION`, :data:`USER`).
        spans: per round, ``(start, end)`` of its sampled tokens in :attr:`ids`.
    """

    ids: list[int] = field(default_factory=list)
    mask: list[str] = field(default_factory=list)
    spans: list[tuple[int, int]] = field(default_factory=list)

    def extend(self, segment: Segment) -> None:
        self.ids.extend(segment.ids)
        self.mask.extend(segment.mask)

    def sampled(self, ids: Sequence[int]) -> None:
        """Append a round's sampled ids as they were sampled."""
        start = len(self.ids)
        self.ids.extend(ids)
        self.mask.extend(POLICY * len(ids))
        self.spans.append((start, len(self.ids)))

    def round_tokens(self, index: int) -> tuple[tuple[int, ...], str]:
        """Round ``index``'s tokens (its sampled ids, then what was appended after them
        up to the next round's) and their mask."""
        start = self.spans[index][0]
        end = self.spans[index + 1][0] if index + 1 < len(self.spans) else len(self.ids)
        return tuple(self.ids[start:end]), "".join(self.mask[start:end])
