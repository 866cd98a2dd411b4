"""Demonstrations -> training sequences: mixtures, run directories, tokens and loss masks.

The tokenizer is the tiny model's (``stategym.llm.tiny.train_tokenizer``) trained here on a
few episodes in both renderings, never downloaded.
"""

from __future__ import annotations

import functools
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest

from stategym import Env, run_episode
from stategym.kernel.protocol import Action
from stategym.kernel.trajectory import write_jsonl
from stategym.llm.agent import ChatAgent, Reply, Turn
from stategym.llm.local import ChatTokenizer
from stategym.registry import get_domain
from stategym.rendering import make_renderer, transcript
from stategym.train.data import (
    Demonstration,
    assign,
    counts,
    parse_mixture,
    play_demonstrations,
    run_demonstrations,
    sequences,
    tokenizer_chats,
    train_tokenizer,
)
from stategym.train.streams import demonstration
from stategym.train.tasks import task_family

FAMILY = task_family("ask-or-act")
DOMAINS = ("travel", FAMILY.domain)


def _demos(domain: str, agents: str = "expert", n: int = 4) -> list[Demonstration]:
    if domain == FAMILY.domain:
        seeds = list(FAMILY.seeds(n))
        return play_demonstrations(domain, agents, seeds, FAMILY.schedule(seeds))
    return play_demonstrations(domain, agents, list(range(n)))


@functools.cache
def _chat() -> ChatTokenizer:
    demos = [d for domain in DOMAINS for d in _demos(domain, "expert:1,ask-nothing:1", 6)]
    return ChatTokenizer(train_tokenizer(demos, vocab_size=600))


def test_mixture_parsing_and_exact_counts() -> None:
    assert parse_mixture("expert") == (("expert", 1.0),)
    assert parse_mixture("expert:0.7, oracle:0.3") == (("expert", 0.7), ("oracle", 0.3))
    assert parse_mixture("ask-p0.3:2,oracle") == (("ask-p0.3", 2.0), ("oracle", 1.0))
    for bad in ("expert:x", "expert:-1", "expert:0", ":1", "expert,expert", "expert:nan"):
        with pytest.raises(ValueError):
            parse_mixture(bad)
    assert counts((("a", 0.7), ("b", 0.3)), 10) == (7, 3)
    assert counts((("a", 1.0), ("b", 1.0), ("c", 1.0)), 4) == (2, 1, 1)
    assert sum(counts((("a", 0.15), ("b", 0.85)), 17)) == 17


def test_assignment_is_exact_deterministic_and_seeded() -> None:
    mixture = parse_mixture("expert:0.7,oracle:0.3")
    seeds = list(range(100, 120))
    first = assign(mixture, seeds, seed=0)
    assert first == assign(mixture, seeds, seed=0)
    assert [s for s, _ in first] == seeds
    assert sum(a == "oracle" for _, a in first) == 6
    assert first != assign(mixture, seeds, seed=1)  # another run seed deals other seeds
    assert {a for _, a in assign(parse_mixture("oracle"), seeds)} == {"oracle"}


def test_played_mixture_follows_the_assignment_and_the_schedule() -> None:
    seeds = list(FAMILY.seeds(8))
    demos = play_demonstrations(FAMILY.domain, "expert:1,oracle:1", seeds, FAMILY.schedule(seeds))
    expected = dict(assign(parse_mixture("expert:1,oracle:1"), seeds))
    assert [t.seed for t, _ in demos] == seeds
    for trajectory, task in demos:
        assert trajectory.agent == expected[trajectory.seed]
        assert trajectory.knobs == FAMILY.knobs(trajectory.seed) == task.knobs


def test_a_run_directory_reads_back(tmp_path: Path) -> None:
    demos = _demos("travel", "expert:1,serial:1")
    write_jsonl(tmp_path / "trajectories.jsonl", [t for t, _ in demos])
    back = run_demonstrations(tmp_path)
    assert [t for t, _ in back] == [t for t, _ in demos]
    assert [task for _, task in back] == [task for _, task in demos]


def _turns(trajectory: Any, task: Any, rendering: str, chat: ChatTokenizer) -> list[str]:
    """Each assistant turn as the template writes it: content (and calls), end of turn."""
    renderer = make_renderer(get_domain(trajectory.domain), trajectory.knobs, rendering)
    out = []
    for message in transcript(renderer, trajectory, task):
        if message["role"] == "assistant":
            text = chat.template([message], [], False)
            start = text.index("assistant\n") + len("assistant\n")
            out.append(text[start : text.index(chat.end_of_turn, start) + len(chat.end_of_turn)])
    return out


@pytest.mark.parametrize("rendering", ["compact", "messages"])
@pytest.mark.parametrize("domain", DOMAINS)
def test_masked_tokens_decode_to_exactly_the_assistant_turns(domain: str, rendering: str) -> None:
    chat = _chat()
    demos = _demos(domain, "expert:1,ask-nothing:1")
    for sample, (trajectory, task) in zip(sequences(demos, chat, rendering), demos, strict=True):
        decode = chat.tokenizer.decode
        mask = sample.loss_mask
        runs, current = [], []
        for token, keep in zip(sample.ids, mask, strict=True):
            if keep:
                current.append(token)
            elif current:
                runs.append(decode(current))
                current = []
        runs += [decode(current)] if current else []
        assert runs == _turns(trajectory, task, rendering, chat)
        if rendering == "compact":  # the turns are the renderer's lines, then <|im_end|>
            assert runs[0].endswith("<|im_end|>")
        # the whole stream is the conversation as the template writes it
        renderer = make_renderer(get_domain(domain), trajectory.knobs, rendering)
        messages = renderer.first_messages(task)[:1] + transcript(renderer, trajectory, task)
        last = max(i for i, m in enumerate(messages) if m["role"] == "assistant")
        whole = chat.template(messages[: last + 1], renderer.tools, False)
        assert decode(list(sample.ids)) + "\n" == whole


class Replay:
    """A backend with a chat template that writes the expert's actions as a model would:
    the renderer's text for the action, tokenised, then the end-of-turn id."""

    def __init__(self, chat: ChatTokenizer, actions: Sequence[Action]) -> None:
        self.chat = chat
        self.actions = actions
        self.agent: ChatAgent | None = None

    def describe(self) -> dict[str, Any]:
        return {"backend": "replay"}

    def complete_sync(self, messages: Any, tools: Any, turn: Turn) -> Reply:
        assert self.agent is not None
        message = self.agent.renderer.action_message(self.actions[turn.index], turn.index)
        if self.agent.renderer.kind == "compact":
            text = str(message["content"]) + self.chat.end_of_turn
            ids = self.chat.tokenize(text)[0]
        else:
            from stategym.train.streams import assistant_ids

            ids = assistant_ids(self.chat, message, tools)
        meta = {"completion_token_ids": ids, "finish_reason": "stop", "logprobs": [0.0] * len(ids)}
        return Reply(message, meta)

    async def complete(self, messages: Any, tools: Any, turn: Turn) -> Reply:
        return self.complete_sync(messages, tools, turn)


@pytest.mark.parametrize("rendering", ["compact", "messages"])
@pytest.mark.parametrize("domain", DOMAINS)
def test_a_demonstration_is_the_stream_a_live_agent_builds(domain: str, rendering: str) -> None:
    chat = _chat()
    for trajectory, task in _demos(domain, "expert", 3):
        backend = Replay(chat, [r.action() for r in trajectory.rounds])

        def make(task: Any, backend: Replay = backend) -> ChatAgent:
            agent = ChatAgent("hf:replay", backend, get_domain(domain), task, rendering=rendering)
            backend.agent = agent
            return agent

        env = Env(domain, knobs=trajectory.knobs)
        live = run_episode(env, make, trajectory.seed)
        assert [r.action() for r in live.rounds] == [r.action() for r in trajectory.rounds]
        assert backend.agent is not None and backend.agent.tokens is not None
        stream = demonstration(trajectory, task, chat, rendering)
        assert stream.ids == backend.agent.tokens.ids
        assert stream.mask == backend.agent.tokens.mask
        assert stream.spans == backend.agent.tokens.spans


def test_the_tokenizer_is_deterministic_and_covers_both_renderings() -> None:
    demos = _demos(FAMILY.domain, "expert", 3)
    chats = tokenizer_chats(demos)
    assert len(chats) == 2 * len(demos)
    first, again = train_tokenizer(demos, 400), train_tokenizer(demos, 400)
    assert first.get_vocab() == again.get_vocab()
    text = str(chats[1][0][-1]["content"])  # a compact line
    assert first(text)["input_ids"] == again(text)["input_ids"]
