"""Token-in-token-out on every domain with a scripted stand-in that emits token ids.

The stand-in "model" replays the expert's actions as Hermes text and samples its ids in a
way the tokenizer never would (a number is one id, where the tokenizer splits digits), so a
runner that re-tokenised the history would feed different ids than were sampled. Every
prompt the stand-in is fed must be the previous prompt, the previous completion and the
observation's tokens; the log must rebuild exactly that stream, with a mask letter per token.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

import orjson
import pytest

from stategym.agents import scripted
from stategym.kernel.env import Env
from stategym.kernel.knobs import Knobs
from stategym.kernel.trajectory import CallBatch, Trajectory
from stategym.llm import LLMAgentFactory
from stategym.llm.agent import Reply, Turn
from stategym.llm.parse import parse
from stategym.registry import all_domains, get_domain
from stategym.rendering.tokens import OBSERVATION, POLICY, USER, first_segment
from stategym.rollout import FixedAgent, episode_specs, play_in_order, run_episode

DOMAINS = [*all_domains(), "synth:chain2+fanout3+askgate+verifycommit"]
_PIECE = re.compile(r"<\|[a-z_]+\|>|\d|\w+|\s|[^\w\s]")


class WordChat:
    """A ChatML-like template and a tokenizer that splits digits one by one."""

    end_of_turn = "<|end|>"

    def __init__(self) -> None:
        self.vocab: dict[str, int] = {}
        self.words: dict[int, str] = {}

    def id(self, piece: str) -> int:
        if piece not in self.vocab:
            self.vocab[piece] = len(self.vocab)
            self.words[self.vocab[piece]] = piece
        return self.vocab[piece]

    def template(
        self, messages: Sequence[dict[str, Any]], tools: Sequence[dict[str, Any]], generation: bool
    ) -> str:
        text = "".join(f"<|start|>{m['role']}\n{_body(m)}<|end|>\n" for m in messages)
        return text + ("<|start|>assistant\n" if generation else "")

    def tokenize(self, text: str) -> tuple[list[int], list[tuple[int, int]]]:
        found = list(_PIECE.finditer(text))
        assert "".join(m.group() for m in found) == text
        return [self.id(m.group()) for m in found], [m.span() for m in found]

    def sample(self, text: str) -> list[int]:
        """Ids as a model might sample them: a whole number is one id."""
        pieces = re.findall(r"\d+|\w+|\s|[^\w\s]", text)
        return [self.id(p) for p in pieces]

    def decode(self, ids: Sequence[int]) -> str:
        return "".join(self.words[i] for i in ids)


def _body(message: dict[str, Any]) -> str:
    calls = "".join(
        f'<tool_call>{{"name": "{c["function"]["name"]}", '
        f'"arguments": {c["function"]["arguments"]}}}</tool_call>'
        for c in message.get("tool_calls") or ()
    )
    return str(message.get("content") or "") + calls


class ExpertTokens:
    """A backend with a chat template that replays the expert's actions, cut short now and
    then (``length``: no end-of-turn id), and records every prompt it is fed."""

    def __init__(self, chat: WordChat, actions: dict[str, list[Any]]) -> None:
        self.chat = chat
        self.actions = actions
        self.fed: dict[str, list[tuple[int, ...]]] = {}

    def describe(self) -> dict[str, Any]:
        return {"backend": "stand-in"}

    def complete_sync(self, messages: Any, tools: Any, turn: Turn) -> Reply:
        request = str(messages[1]["content"])
        assert turn.prompt_ids is not None
        self.fed.setdefault(request, []).append(turn.prompt_ids)
        text = _hermes(self.actions[request][turn.index])
        cut = turn.index % 3 == 2  # every third reply hits the length limit
        ids = self.chat.sample(text) + ([] if cut else [self.chat.id(self.chat.end_of_turn)])
        meta = {
            "completion_token_ids": ids,
            "logprobs": [-0.5] * len(ids),
            "finish_reason": "length" if cut else "stop",
            "usage": {"prompt_tokens": len(turn.prompt_ids), "completion_tokens": len(ids)},
        }
        return Reply(parse(text).to_message(f"call_{turn.index}"), meta)

    async def complete(self, messages: Any, tools: Any, turn: Turn) -> Reply:
        return self.complete_sync(messages, tools, turn)


def _hermes(action: Any) -> str:
    if isinstance(action, CallBatch):
        return "".join(
            "<tool_call>"
            + orjson.dumps({"name": c.name, "arguments": c.arguments}).decode()
            + "</tool_call>"
            for c in action.calls
        )
    return str(action.text)


def _episodes(domain: str, seeds: range) -> tuple[list[Trajectory], ExpertTokens]:
    env = Env(domain)
    actions: dict[str, list[Any]] = {}
    for seed in seeds:
        expert = run_episode(env, scripted(env.domain, "expert"), seed)
        actions[env.task.request.text] = [r.action() for r in expert.rounds]
    backend = ExpertTokens(WordChat(), actions)
    factory = LLMAgentFactory("hf:stand-in", backend, get_domain(domain))
    specs = episode_specs(domain, "hf:stand-in", seeds, Knobs())
    return [t for _, t in play_in_order(specs, FixedAgent(factory))], backend


def _stream(trajectory: Trajectory) -> tuple[list[int], str]:
    """The episode's token stream and mask, rebuilt from the log alone."""
    first = trajectory.rounds[0].model
    assert first is not None and first.span is not None and first.prompt_token_ids is not None
    ids, mask = list(first.prompt_token_ids), first.span.prompt_mask or ""
    for record in trajectory.rounds:
        turn = record.model
        assert turn is not None and turn.span is not None and turn.token_ids is not None
        assert turn.span.start == len(ids)  # the round's prompt is the stream so far
        ids += [*turn.token_ids, *turn.span.appended]
        mask += turn.span.mask
        assert turn.span.end == turn.span.start + len(turn.token_ids)
    return ids, mask


@pytest.mark.parametrize("domain", DOMAINS)
def test_every_prompt_is_the_last_one_plus_the_sampled_ids_and_the_observation(
    domain: str,
) -> None:
    trajectories, backend = _episodes(domain, range(3))
    for trajectory in trajectories:
        request = cached_request(trajectory)
        fed = backend.fed[request]
        assert len(fed) == len(trajectory.rounds) >= 2
        for k, record in enumerate(trajectory.rounds[:-1]):
            turn = record.model
            assert turn is not None and turn.span is not None and turn.token_ids is not None
            assert fed[k + 1] == fed[k] + turn.token_ids + turn.span.appended
        ids, mask = _stream(trajectory)
        assert len(ids) == len(mask)
        assert tuple(ids[: len(fed[-1])]) == fed[-1]  # the log rebuilds what was fed


@pytest.mark.parametrize("domain", DOMAINS)
def test_the_mask_marks_exactly_the_sampled_ids_and_the_users_words(domain: str) -> None:
    trajectories, backend = _episodes(domain, range(2))
    chat = backend.chat
    for trajectory in trajectories:
        ids, mask = _stream(trajectory)
        policy = [i for record in trajectory.rounds for i in (record.model.token_ids or ())]  # type: ignore[union-attr]
        assert [i for i, m in zip(ids, mask, strict=True) if m == POLICY] == policy
        assert set(mask) <= {POLICY, OBSERVATION, USER}
        runs = [chat.decode(run) for run in _runs(ids, mask, USER)]
        said = [cached_request(trajectory)] + [m["content"] for m in _user_messages(trajectory)]
        # every run of user tokens is one thing the user said, whole
        assert runs and all(run in said for run in runs)
        assert len(runs) == len(said)


def test_in_a_long_conversation_the_mask_marks_each_users_words() -> None:
    """The mask is read by bisection over the users' contents (audit 17B F1: a scan of every
    content for every token was quadratic); it marks what the scan marked."""
    chat = WordChat()
    said = [f"user words {n}" for n in range(300)]
    messages: list[dict[str, Any]] = [{"role": "system", "content": "rules"}]
    for n, words in enumerate(said):
        messages += [{"role": "user", "content": words}, {"role": "assistant", "content": "ok"}]
        if n % 3 == 0:
            messages.append({"role": "tool", "content": f"user words {n} quoted by a tool"})
    segment = first_segment(chat, messages, [])
    runs = [
        "".join(chat.words[i] for i in run) for run in _runs(list(segment.ids), segment.mask, USER)
    ]
    assert runs == said
    assert set(segment.mask) == {USER, OBSERVATION}


def _runs(ids: list[int], mask: str, letter: str) -> list[list[int]]:
    runs: list[list[int]] = []
    for position, (token, m) in enumerate(zip(ids, mask, strict=True)):
        if m == letter:
            if position and mask[position - 1] == letter:
                runs[-1].append(token)
            else:
                runs.append([token])
    return runs


def _user_messages(trajectory: Trajectory) -> list[dict[str, Any]]:
    """The user's messages the agent was shown, as the renderer rebuilds them."""
    from stategym.registry import cached_task
    from stategym.rendering import MessageRenderer, transcript

    task = cached_task(trajectory.domain, trajectory.seed, trajectory.knobs)
    renderer = MessageRenderer(get_domain(trajectory.domain), task.knobs)
    shown = transcript(renderer, trajectory, task)[1:]
    # the last observation is never shown to the model: the episode ended
    last = max(i for i, m in enumerate(shown) if m["role"] == "assistant")
    return [m for m in shown[:last] if m["role"] == "user" and m.get("content")]


def test_a_sampled_number_stays_one_id() -> None:
    (trajectory, *_), backend = _episodes("travel", range(1))
    ids, _ = _stream(trajectory)
    numbers = [backend.chat.words[i] for i in ids if backend.chat.words[i].isdigit()]
    # the tokenizer splits digits; only the sampled ids keep a number whole
    assert any(len(n) > 1 for n in numbers)


def cached_request(trajectory: Trajectory) -> str:
    from stategym.registry import cached_task

    return cached_task(trajectory.domain, trajectory.seed, trajectory.knobs).request.text
