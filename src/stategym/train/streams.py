"""Episodes as token streams: a scripted (or logged) episode laid out the way a
token-in-token-out rollout lays out the policy's own.

A demonstration was not sampled, so its assistant turns are tokenised once, from the
renderer's message for each action as the chat template writes an assistant turn (its
content and calls, then the end-of-turn marker:
:func:`~stategym.rendering.tokens.assistant_segment`): those tokens stand where sampled ids
would, with the policy's mask letter, so they carry the loss. Everything else is what a live
rollout appends: the first prompt (:func:`~stategym.rendering.tokens.first_segment`) and
each observation's segment (:func:`~stategym.rendering.tokens.observation_segment`), cut
from the same template. The last round's observation is not appended (no turn follows it),
as in a live rollout.

A logged turn's text is model (or teacher) text, so it is tokenised as an observation's
content is: a special-token string in the say text, a call's name or its arguments is text,
never a turn marker, and the turn ends at the marker the template writes after it, never at
one inside the text; its ids decode to the logged turn, whole (``train sft --agents run:DIR``
on a hostile model's run included). A sampled turn (token-in-token-out) is never rebuilt
here: its ids stay as sampled.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from stategym.kernel.task import Task
from stategym.kernel.trajectory import Trajectory
from stategym.rendering import make_renderer
from stategym.rendering.base import Message, Renderer, logged_action, observation_of
from stategym.rendering.tokens import (
    AssistantTurns,
    ChatTemplate,
    TokenStream,
    assistant_segment,
    first_segment,
    observation_segment,
)
from stategym.train.batching import Sample
from stategym.train.masks import loss_mask, token_advantages
from stategym.train.policy import Chat


def assistant_ids(
    chat: ChatTemplate, message: Message, tools: Sequence[dict[str, Any]]
) -> list[int]:
    """The ids of an assistant turn as the template writes it, end-of-turn marker included
    (what a model that wrote this message would have sampled); its content tokenised as text
    (:func:`~stategym.rendering.tokens.assistant_segment`)."""
    return list(assistant_segment(chat, message, tools).ids)


def episode_chat(trajectory: Trajectory, task: Task, renderer: Renderer) -> Chat:
    """The episode as one conversation (system prompt first), for training a tokenizer."""
    from stategym.rendering import transcript

    messages = renderer.first_messages(task)[:1] + transcript(renderer, trajectory, task)
    return messages, renderer.tools


def demonstration(
    trajectory: Trajectory, task: Task, chat: ChatTemplate, rendering: str
) -> TokenStream:
    """A logged episode as the token stream a policy playing it would have made."""
    from stategym.registry import get_domain

    renderer = make_renderer(get_domain(trajectory.domain), trajectory.knobs, rendering)
    tools = renderer.tools
    stream = TokenStream()
    stream.extend(first_segment(chat, renderer.first_messages(task), tools))
    last = len(trajectory.rounds) - 1
    turns = AssistantTurns(chat, tools)  # rendered once: what stands around every turn
    for record in trajectory.rounds:
        message = renderer.action_message(logged_action(record), record.index)
        stream.sampled(list(turns.segment(message).ids))
        if record.index < last:
            observed = renderer.observation_messages(observation_of(record, final_say=False))
            stream.extend(observation_segment(chat, observed, tools, closed=True))
    return stream


def to_sample(
    stream: TokenStream,
    advantages: Sequence[float] | None = None,
    logprobs: Sequence[float] | None = None,
    max_length: int | None = None,
    calls: Sequence[Sequence[tuple[int, int]]] | None = None,
    shares: Sequence[Sequence[float]] | None = None,
) -> Sample:
    """A training sample: loss on the policy's tokens, round ``t``'s advantage on its span.

    Args:
        stream: the episode's tokens.
        advantages: ``(T,)`` per round (``None``: 1 everywhere, as SFT weighs tokens).
        logprobs: ``(L,)`` the sampling log-probabilities (``None``: zeros).
        max_length: cut the stream to this many tokens (rounds past the cut carry nothing).
        calls: per-call credit: ``T`` sequences of each round's call spans (empty: the
            round is not split), with ``shares`` (:func:`~stategym.train.masks.token_advantages`).
        shares: ``T`` sequences of the rounds' call shares in advantage units, matching
            ``calls``.
    """
    length = len(stream.ids) if max_length is None else min(len(stream.ids), max_length)
    letters = "".join(stream.mask[:length])

    def cut(span: tuple[int, int]) -> tuple[int, int]:
        return min(span[0], length), min(span[1], length)

    spans = [cut(span) for span in stream.spans]
    mask = loss_mask(letters, spans)
    per_round = [1.0] * len(spans) if advantages is None else list(advantages)
    if calls is not None:
        calls = [[cut(c) for c in round_calls] for round_calls in calls]
    values = token_advantages(length, spans, per_round, calls, shares)
    sampled = [0.0] * length if logprobs is None else list(logprobs[:length])
    return Sample(tuple(stream.ids[:length]), mask, tuple(values), tuple(sampled))


__all__ = ["assistant_ids", "demonstration", "episode_chat", "to_sample"]
