"""Observation -> token segments, for token-in-token-out rollouts.

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


class ChatTemplate(Protocol):
    """A model's chat template and tokenizer, as :class:`TokenStream` needs them."""

    end_of_turn: str
    """The text that closes an assistant turn (what the model emits to stop)."""

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
    base: list[Message] = [
        {"role": "system", "content": "s"},
        {"role": "user", "content": "u"},
        {"role": "assistant", "content": _MARK},
    ]
    before = chat.template(base, tools, False)
    after = chat.template([*base, *observation], tools, True)
    start = before.rfind(_MARK)
    cut = before.find(chat.end_of_turn, start) if start >= 0 else -1
    if cut < 0 or after[: cut + len(chat.end_of_turn)] != before[: cut + len(chat.end_of_turn)]:
        raise ValueError("the chat template renders a turn differently once messages follow it")
    cut += len(chat.end_of_turn)
    closing = "" if closed else chat.end_of_turn
    return _segment(chat, closing + after[cut:], observation, len(closing))


def _segment(chat: ChatTemplate, text: str, messages: Sequence[Message], offset: int) -> Segment:
    """Tokenise ``text``, the messages' contents as text (:class:`ContentTokenizer`); tokens
    starting inside a user message's content are ``USER``."""
    contents = _contents(text, messages, offset)
    ranges = [(start, end) for _, start, end in contents]
    if isinstance(chat, ContentTokenizer):
        ids, spans = chat.tokenize_content(text, ranges)
    else:
        ids, spans = chat.tokenize(text)
    users = [(start, end) for role, start, end in contents if role == "user"]
    mask = "".join(
        USER if any(a <= begin < b for a, b in users) else OBSERVATION for begin, _ in spans
    )
    return Segment(tuple(ids), mask)


def _contents(text: str, messages: Sequence[Message], offset: int) -> list[tuple[str, int, int]]:
    """Each message's role and the character range of its content in ``text`` (found in
    order from ``offset``; an empty content, or one the template does not write verbatim,
    has none)."""
    found: list[tuple[str, int, int]] = []
    position = offset
    for message in messages:
        content = str(message.get("content") or "")
        start = text.find(content, position) if content else -1
        if start >= 0:
            position = start + len(content)
            found.append((str(message.get("role")), start, position))
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
