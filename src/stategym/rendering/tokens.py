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

No text that came from a client or a model ever becomes a special token: the environment
quotes model text back (an unknown tool's name), a served client sends model text back (an
earlier call's name and arguments), and a ``<|im_end|>`` written as plain characters must not
come back as the marker (a forged turn boundary, in the next prompt and in training data).
Every string of the conversation's data is such a text (:func:`conversation_texts`): message
content, each call's name and arguments, each tool's name, description and parameter schema,
and any other field a template may write, keys included; the template's own markers are in
the template, never in the data. For a :class:`ContentTokenizer`
(``stategym.llm.local.ChatTokenizer`` is one) the special-token strings in those texts are
hidden behind placeholders while the template renders once more, so wherever it writes them
(in order or not, inside JSON or verbatim, once or twice) their places in its text are known;
there they are tokenised as text, and the template's own markers stay special. A conversation
whose texts hold none (every ordinary one) is rendered once and tokenised exactly as in one
piece. A template that does not write such a string as given (escapes it) is tokenised as it
writes it, when its text holds no more special tokens than its own; one that rewrites the
placeholders but writes the string as given (lower-cases a content) cannot place it, and is
refused (``ValueError``). What the rule cannot see: a special-token string that only the
template's text completes (a text ending in ``<|im_`` that a template follows with
``end|>``), which no template here writes.

An assistant turn that was not sampled (a scripted or logged action, a teacher's turn) is
rebuilt from its message by :func:`assistant_segment` under the same rule, and the turn ends
at the marker the template writes after it (found from the end of the template's text), never
at a marker string inside the content; so its ids decode to the turn as logged, whole. A
sampled turn is never rebuilt: its ids are kept as the model sampled them (a marker it sampled
is its own).
"""

from __future__ import annotations

import re
from bisect import bisect_right
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable

from stategym.rendering.base import Message

POLICY, OBSERVATION, USER = "p", "o", "u"
"""Mask letters: a token the policy sampled (carries loss), one the template or the
environment wrote, one of the simulated user's words."""
_MARK = "stategym-turn-7f3a"
"""The content of the stand-in assistant turn a segment is cut after."""
NO_END_OF_TURN = "the chat template writes no end-of-turn marker for the turn"
"""Why a template's turns cannot be cut: the turn does not end with the end-of-turn token."""
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
    """A :class:`ChatTemplate` whose tokenizer has special tokens (turn markers) that no text
    of the conversation may produce: content quotes model text (an unknown tool's name is
    echoed in the error), a client sends model text back (an earlier call's arguments), and a
    ``<|im_end|>`` written as plain characters, read back as the marker, would forge a turn
    boundary in the next prompt and in training data. A template without these members is
    tokenised in one piece (special-token strings in the texts are then matched as everywhere
    else)."""

    @property
    def specials(self) -> re.Pattern[str] | None:
        """The tokenizer's special-token strings, longest first (``None``: it has none)."""
        ...

    def tokenize_content(
        self, text: str, contents: Sequence[tuple[int, int]]
    ) -> tuple[list[int], list[tuple[int, int]]]:
        """As :meth:`ChatTemplate.tokenize`, except that a special-token string inside one of
        ``contents`` (character ranges of the conversation's texts) is tokenised as text."""
        ...


@dataclass(frozen=True, slots=True)
class Segment:
    """Tokens appended to a stream, with one mask letter each."""

    ids: tuple[int, ...]
    mask: str


@dataclass(frozen=True, slots=True)
class _Rendered:
    """Template text, and the character ranges in it of the special-token strings that the
    conversation's texts wrote (tokenised as text); the template's own markers are not in
    them."""

    text: str
    quoted: tuple[tuple[int, int], ...] = ()

    def tail(self, cut: int, before: str = "") -> _Rendered:
        """The text from ``cut`` on, after ``before`` (ranges moved with it)."""
        shift = len(before) - cut
        quoted = tuple((a + shift, b + shift) for a, b in self.quoted if a >= cut)
        return _Rendered(before + self.text[cut:], quoted)


def first_segment(
    chat: ChatTemplate, messages: Sequence[Message], tools: Sequence[dict[str, Any]]
) -> Segment:
    """The first prompt: system prompt and request, up to the generation prompt."""
    return _segment(chat, _render(chat, messages, tools, True), messages, 0)


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
    after = _render(chat, [*base, *observation], tools, True)
    start = before.rfind(_MARK)
    cut = before.find(chat.end_of_turn, start) if start >= 0 else -1
    if (
        cut < 0
        or after.text[: cut + len(chat.end_of_turn)] != before[: cut + len(chat.end_of_turn)]
    ):
        raise ValueError("the chat template renders a turn differently once messages follow it")
    cut += len(chat.end_of_turn)
    closing = "" if closed else chat.end_of_turn
    return _segment(chat, after.tail(cut, closing), observation, len(closing))


def assistant_segment(
    chat: ChatTemplate, message: Message, tools: Sequence[dict[str, Any]]
) -> Segment:
    """An assistant turn rebuilt from its message, as the template writes it after a
    generation prompt: content and calls, then the end-of-turn marker; every token
    :data:`POLICY` (what a model that wrote this message would have sampled).

    For a turn that was not sampled (a logged or scripted action): its texts (content, each
    call's name and arguments: :func:`conversation_texts`) are tokenised as text
    (:class:`ContentTokenizer`), and the turn ends at the template's own marker, the one it
    writes after the turn, so a marker string inside the content neither becomes a special
    token nor cuts the turn. Many turns under one template and tool list:
    :class:`AssistantTurns`.

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
        after = _render(chat, [*_BASE, message], self.tools, False)
        if not after.text.startswith(before):
            raise ValueError("the chat template does not extend its generation prompt")
        end = len(after.text) - len(tail)
        closed = after.text.endswith(tail) and after.text[:end].endswith(chat.end_of_turn)
        if not closed or end - len(chat.end_of_turn) < len(before):
            raise ValueError(NO_END_OF_TURN)
        turn = after.tail(len(before))  # the turn's own marker ends it: no text is quoted there
        text = turn.text[: end - len(before)]
        ids, _ = _tokenize(chat, text, [span for span in turn.quoted if span[1] <= len(text)])
        return Segment(tuple(ids), POLICY * len(ids))


def _after_turn(chat: ChatTemplate, tools: Sequence[dict[str, Any]]) -> str:
    """What the template writes after a conversation's last assistant turn's end-of-turn
    marker (a newline, say): the turn's own marker is the one just before it."""
    reference = chat.template([*_BASE, {"role": "assistant", "content": _MARK}], tools, False)
    start = reference.rfind(_MARK)
    cut = reference.find(chat.end_of_turn, start) if start >= 0 else -1
    if cut < 0:
        raise ValueError(NO_END_OF_TURN)
    return reference[cut + len(chat.end_of_turn) :]


def conversation_texts(value: Any) -> Iterator[str]:
    """Every text of a conversation's data (messages, tools, or any part of them): each
    string, dict keys included, at any depth. All of them came from a client or a model
    (message content, a call's name and arguments, a tool's name, description and parameter
    schema, any other field a template may write); the template's own markers are in the
    template, never in the data. The one rule of what is tokenised as text
    (:func:`_render`)."""
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        for key, item in value.items():
            yield from conversation_texts(key)
            yield from conversation_texts(item)
    elif isinstance(value, list | tuple):
        for item in value:
            yield from conversation_texts(item)


def _render(
    chat: ChatTemplate,
    messages: Sequence[Message],
    tools: Sequence[dict[str, Any]],
    generation: bool,
) -> _Rendered:
    """The template's text, and where the special-token strings of the conversation's texts
    (:func:`conversation_texts`) stand in it: rendered once more with each hidden behind a
    placeholder (:class:`_Placeholders`), which the template writes wherever it writes the
    text. A conversation whose texts hold none (every ordinary one) is rendered once.

    Raises:
        ValueError: a template that rewrites the placeholders (they cannot be put back) while
            its text holds a special token the conversation's texts wrote.
    """
    text = chat.template(messages, tools, generation)
    pattern = chat.specials if isinstance(chat, ContentTokenizer) else None
    if pattern is None or not any(pattern.search(t) for t in conversation_texts([messages, tools])):
        return _Rendered(text)
    hiding = _Placeholders(pattern, [messages, tools])
    hidden = chat.template(hiding.hide(messages), hiding.hide(tools), generation)
    restored, quoted = hiding.restore(hidden)
    if restored == text:
        return _Rendered(text, quoted)
    if len(pattern.findall(text)) == len(pattern.findall(hidden)):
        return _Rendered(text)  # it rewrote them (escaped): its markers are all its own
    raise ValueError(
        "the chat template rewrites the special-token strings of the conversation's texts; "
        "they cannot be told from its own markers"
    )


_SALTS = re.compile(r"StategymQuoted(\d{1,18})n")
"""A placeholder prefix as a text may hold it: its salt is the number (a longer one cannot
be a prefix this module makes, and Python refuses to read numbers past 4,300 digits)."""


class _Placeholders:
    """The special-token strings of a conversation's texts, each hidden behind a placeholder
    while the template renders (``<prefix><index>q``: letters and digits, which templates
    write as given, inside JSON too), then put back where the template wrote it. The prefix
    is one that no text of the conversation holds."""

    def __init__(self, pattern: re.Pattern[str], data: Any) -> None:
        # one pass over the texts: past the largest salt any text holds, no text holds the
        # prefix (trying salts one by one rescanned every text each time: quadratic in a
        # request built of prefixes)
        taken = (int(m.group(1)) for t in conversation_texts(data) for m in _SALTS.finditer(t))
        self.pattern = pattern
        self.prefix = f"StategymQuoted{max(taken, default=-1) + 1}n"
        self.strings: list[str] = []
        self.placed = re.compile(re.escape(self.prefix) + r"(\d+)q")

    def hide(self, value: Any) -> Any:
        """A copy of ``value`` with every special-token string in its texts hidden."""
        if isinstance(value, str):
            return self.pattern.sub(self._placeholder, value)
        if isinstance(value, dict):
            return {self.hide(key): self.hide(item) for key, item in value.items()}
        if isinstance(value, list | tuple):
            return [self.hide(item) for item in value]
        return value

    def restore(self, text: str) -> tuple[str, tuple[tuple[int, int], ...]]:
        """``text`` with each placeholder put back, and the strings' ranges in it."""
        pieces: list[str] = []
        quoted: list[tuple[int, int]] = []
        position = length = 0
        for match in self.placed.finditer(text):
            index = int(match.group(1))
            if index >= len(self.strings):
                continue  # not one of ours (a template's own text): left as written
            pieces.append(text[position : match.start()])
            length += match.start() - position
            pieces.append(self.strings[index])
            quoted.append((length, length + len(self.strings[index])))
            length += len(self.strings[index])
            position = match.end()
        pieces.append(text[position:])
        return "".join(pieces), tuple(quoted)

    def _placeholder(self, match: re.Match[str]) -> str:
        string = match.group()
        if string not in self.strings:
            self.strings.append(string)
        return f"{self.prefix}{self.strings.index(string)}q"


def _segment(
    chat: ChatTemplate, rendered: _Rendered, messages: Sequence[Message], offset: int
) -> Segment:
    """Tokenise the rendered text, the conversation's special-token strings as text
    (:class:`ContentTokenizer`); tokens starting inside a user message's content are
    ``USER``."""
    ids, spans = _tokenize(chat, rendered.text, rendered.quoted)
    users = _user_contents(rendered.text, messages, offset)
    # Each content is found after the last, so the ranges are in order and apart: a token
    # finds its range by bisection (a scan of every range per token was quadratic: 2,000
    # short user messages took a second to render, audit 17B F1).
    starts = [start for start, _ in users]
    mask = []
    for begin, _ in spans:
        index = bisect_right(starts, begin) - 1
        mask.append(USER if index >= 0 and begin < users[index][1] else OBSERVATION)
    return Segment(tuple(ids), "".join(mask))


def _tokenize(
    chat: ChatTemplate, text: str, contents: Sequence[tuple[int, int]]
) -> tuple[list[int], list[tuple[int, int]]]:
    """Ids and spans of ``text``, the ``contents`` ranges tokenised as text where the
    tokenizer can (:class:`ContentTokenizer`), in one piece where it cannot."""
    if isinstance(chat, ContentTokenizer):
        return chat.tokenize_content(text, contents)
    return chat.tokenize(text)


def _user_contents(text: str, messages: Sequence[Message], offset: int) -> list[tuple[int, int]]:
    """The character ranges of the user messages' contents in ``text`` (each message's
    content found in order from ``offset``; an empty content, or one the template does not
    write verbatim, has none): where the simulated user's words are."""
    found = []
    position = offset
    for message in messages:
        content = str(message.get("content") or "")
        start = text.find(content, position) if content else -1
        if start < 0:
            continue
        position = start + len(content)
        if message.get("role") == "user":
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
