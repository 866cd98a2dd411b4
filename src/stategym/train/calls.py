"""Where each call of a parallel round sits among the round's sampled tokens.

Per-call credit (:func:`stategym.train.masks.token_advantages`) needs, inside a round's
span, the token span of each of its calls, in the order they are logged (the order the
policy wrote them). The policy writes calls as text: in the compact rendering one call per
line, in the messages rendering one ``<tool_call>...</tool_call>`` block each. A call ends
at its line's end or its closing tag; a token belongs to the call whose text it finishes or
is inside (a token that straddles two calls goes to the first).

The text split is the reply as the parser read it: a stop token that ended the round (the
end-of-turn marker) is not part of any call, so it follows the last call, as text after the
last ``</tool_call>`` does in the messages rendering.

When the text does not split into exactly as many calls as the round logged (a malformed
reply the parser repaired, text between calls), :func:`call_spans` returns ``None`` and the
round keeps one advantage for all its tokens: better no split than a wrong one.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Sequence

from stategym.llm.parse import CLOSE
from stategym.train.masks import Span


def call_ends(text: str) -> tuple[int, ...]:
    """Character offsets where each call of a reply's text ends.

    >>> call_ends("get_profile\\nsearch A\\n")
    (11, 20)
    >>> call_ends('<tool_call>{"name": "a"}</tool_call><tool_call>{}</tool_call>')
    (36, 61)
    """
    if CLOSE in text:
        out, at = [], text.find(CLOSE)
        while at >= 0:
            out.append(at + len(CLOSE))
            at = text.find(CLOSE, at + len(CLOSE))
        return tuple(out)
    out, position = [], 0
    for line in text.split("\n"):
        if line.strip():
            out.append(position + len(line))
        position += len(line) + 1
    return tuple(out)


def call_spans(
    ids: Sequence[int],
    span: Span,
    calls: int,
    decode: Callable[[list[int]], str],
    stops: Collection[int] = (),
) -> tuple[Span, ...] | None:
    """The token spans of a round's ``calls`` calls inside its ``span`` of ``ids``.

    Args:
        ids: ``(L,)`` the episode's token stream.
        span: the round's sampled span.
        calls: how many calls the round logged.
        decode: the tokenizer's decode (ids to text, special tokens kept).
        stops: the policy's stop ids; one that ends the span is left out of every call.

    Returns:
        ``(calls,)`` ordered, disjoint spans inside ``span``; ``None`` when the text does
        not split into ``calls`` calls.
    """
    start, end = span
    if end > start and ids[end - 1] in stops:
        end -= 1
    ends = call_ends(decode(list(ids[start:end])))
    if len(ends) != calls or calls == 0:
        return None
    # characters decoded after each token: the first token reaching a call's end closes it
    reached = [len(decode(list(ids[start : start + j + 1]))) for j in range(end - start)]
    out, low, token = [], start, 0
    for char_end in ends:
        while token < len(reached) and reached[token] < char_end:
            token += 1
        high = min(end, start + token + 1)
        out.append((low, high))
        low = high
    return tuple(out)


__all__ = ["call_ends", "call_spans"]
