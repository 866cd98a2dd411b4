"""Test helpers for the trainer's blocks: a tiny chat model's tokenizer, trained here.

The tokenizer is a byte-level BPE trained in milliseconds on the compact transcripts of a
few expert episodes (never downloaded). :class:`TinyChat` is a
``stategym.rendering.tokens.ChatTemplate`` over it, so the real token-stream code cuts the
observation segments; :func:`expert_stream` lays out one real expert episode as a token
stream the way a token-in-token-out rollout does (the "sampled" ids are the tokenised
assistant message), with the spans of each compact call line.
"""

from __future__ import annotations

import functools
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers

from stategym import Env, run_episode
from stategym.agents import resolve
from stategym.kernel.task import Task
from stategym.kernel.trajectory import RoundKind, Trajectory
from stategym.rendering import make_renderer
from stategym.rendering.base import Message, logged_action, observation_of
from stategym.rendering.tokens import TokenStream, first_segment, observation_segment

END = "<|end|>\n"


def render(messages: Sequence[Message], generation: bool) -> str:
    text = "".join(f"<|{m['role']}|>\n{m.get('content') or ''}{END}" for m in messages)
    return text + ("<|assistant|>\n" if generation else "")


@functools.cache
def tokenizer() -> Tokenizer:
    """A byte-level BPE of 400 ids, trained on expert transcripts of travel and shop."""
    corpus = []
    for domain in ("travel", "shop"):
        env = Env(domain)
        for seed in range(4):
            trajectory = run_episode(env, resolve(env.domain, "expert"), seed=seed)
            messages = [
                m for first, act, seen in rounds(trajectory, env.task) for m in (*first, act, *seen)
            ]
            corpus.append(render(messages, True))
    bpe = Tokenizer(models.BPE())
    bpe.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    bpe.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=400, initial_alphabet=pre_tokenizers.ByteLevel.alphabet(), show_progress=False
    )
    bpe.train_from_iterator(corpus, trainer=trainer)
    return bpe


class TinyChat:
    """The :class:`~stategym.rendering.tokens.ChatTemplate` of a tiny chat model."""

    end_of_turn = END

    def template(
        self, messages: Sequence[Message], tools: Sequence[dict[str, Any]], generation: bool
    ) -> str:
        return render(messages, generation)

    def tokenize(self, text: str) -> tuple[list[int], list[tuple[int, int]]]:
        encoding = tokenizer().encode(text, add_special_tokens=False)
        return list(encoding.ids), list(encoding.offsets)

    def decode(self, ids: Sequence[int]) -> str:
        return tokenizer().decode(list(ids), skip_special_tokens=False)


def rounds(
    trajectory: Trajectory, task: Task
) -> list[tuple[list[Message], Message, list[Message]]]:
    """Per round: (the messages before it, when it is round 0; else []), its assistant
    message, its observation messages, in the compact rendering."""
    renderer = make_renderer(Env(trajectory.domain).domain, trajectory.knobs, "compact")
    out: list[tuple[list[Message], Message, list[Message]]] = []
    last = len(trajectory.rounds) - 1
    for record in trajectory.rounds:
        final = record.index == last and record.kind is RoundKind.SAY and trajectory.terminated
        first = renderer.first_messages(task) if record.index == 0 else []
        action = renderer.action_message(logged_action(record), record.index)
        observed = renderer.observation_messages(observation_of(record, final_say=final))
        out.append((first, action, observed))
    return out


@dataclass(frozen=True)
class Layout:
    """One episode laid out as a token stream.

    Attributes:
        stream: the ids, mask letters and round spans.
        texts: each round's assistant text as sampled (content and end-of-turn marker).
        observed: each round's observation messages.
        first: the first prompt's messages.
        calls: per round, the token spans of its compact call lines.
    """

    stream: TokenStream
    texts: tuple[str, ...]
    observed: tuple[tuple[Message, ...], ...]
    first: tuple[Message, ...]
    calls: tuple[tuple[tuple[int, int], ...], ...]


def expert_stream(domain: str = "travel", seed: int = 3) -> tuple[Layout, Trajectory, Task]:
    """A real expert episode, its task and its token layout."""
    env = Env(domain)
    trajectory = run_episode(env, resolve(env.domain, "expert"), seed=seed)
    chat, stream = TinyChat(), TokenStream()
    texts, observed, calls = [], [], []
    per_round = rounds(trajectory, env.task)
    first = per_round[0][0]
    stream.extend(first_segment(chat, first, []))
    for record, (_, action, obs) in zip(trajectory.rounds, per_round, strict=True):
        text = str(action.get("content") or "") + END
        ids, offsets = chat.tokenize(text)
        start = len(stream.ids)
        stream.sampled(ids)
        calls.append(call_spans(text, offsets, start) if record.kind is RoundKind.CALLS else ())
        stream.extend(observation_segment(chat, obs, [], closed=True))
        texts.append(text)
        observed.append(tuple(obs))
    layout = Layout(stream, tuple(texts), tuple(observed), tuple(first), tuple(calls))
    return layout, trajectory, env.task


def call_spans(
    text: str, offsets: Sequence[tuple[int, int]], start: int
) -> tuple[tuple[int, int], ...]:
    """Token spans of a compact message's call lines (one call a line, newline excluded)."""
    spans = []
    position = 0
    for line in text[: -len(END)].split("\n"):
        begin, end = position, position + len(line)
        inside = [i for i, (a, _) in enumerate(offsets) if begin <= a < end]
        spans.append((start + inside[0], start + inside[-1] + 1))
        position = end + 1
    return tuple(spans)
