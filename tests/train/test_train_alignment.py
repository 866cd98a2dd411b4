"""Credit events land on the tokens of the turn that earned them.

A real expert episode (travel, seed 3: a question, two parallel rounds, finish) is laid out
as a token stream by the renderer's token-stream code with a tokenizer trained here
(``train_fixtures``); its per-round credit, turned into dense advantages against a group of
other scripted agents on the same task, is mapped to tokens with the per-call split.
"""

from __future__ import annotations

import pytest
from train_fixtures import TinyChat, expert_stream

from stategym import Env, run_episode
from stategym.agents import resolve
from stategym.kernel.trajectory import RoundKind
from stategym.metrics.credit import credit
from stategym.train.advantages import dense_advantages
from stategym.train.masks import call_advantages, loss_mask, token_advantages


def _group_advantages():
    layout, trajectory, task = expert_stream("travel", 3)
    env = Env("travel")
    others = [run_episode(env, resolve(env.domain, a), seed=3) for a in ("ask-nothing", "serial")]
    paid = [credit(trajectory, task), *(credit(t, task) for t in others)]
    advantages = dense_advantages([c.rewards for c in paid], norm="none")[0]
    return layout, trajectory, paid[0], advantages


def test_each_rounds_advantage_lands_on_that_rounds_tokens() -> None:
    layout, trajectory, paid, advantages = _group_advantages()
    stream, chat = layout.stream, TinyChat()
    assert len(advantages) == len(stream.spans) == len(trajectory.rounds) == len(paid.rounds)
    assert len(set(advantages)) == len(advantages)  # distinct: a misplaced one would show
    shares = [r.calls for r in paid.rounds]
    per_token = token_advantages(len(stream.ids), stream.spans, advantages, layout.calls, shares)
    mask = loss_mask(stream.mask, stream.spans)
    for t, (start, end) in enumerate(stream.spans):
        record = trajectory.rounds[t]
        assert chat.decode(stream.ids[start:end]) == layout.texts[t]
        levels = call_advantages(advantages[t], shares[t])
        if record.kind is RoundKind.SAY:
            assert set(per_token[start:end]) == {advantages[t]}
            continue
        # the calls in logged order are the lines in token order, each with its own share
        assert len(layout.calls[t]) == len(record.calls) == len(levels)
        for j, (a, b) in enumerate(layout.calls[t]):
            assert chat.decode(stream.ids[a:b]).split(" ")[0] == record.calls[j].name
            assert set(per_token[a:b]) == {levels[j]}
        tail = layout.calls[t][-1][1]
        assert set(per_token[tail:end]) == {advantages[t] - sum(shares[t])}
    # nothing outside the sampled spans is credited or trained
    inside = {p for a, b in stream.spans for p in range(a, b)}
    outside = [p for p in range(len(stream.ids)) if p not in inside]
    assert all(per_token[p] == 0.0 and not mask[p] for p in outside)


def test_the_first_call_of_a_parallel_round_answers_for_the_whole_round() -> None:
    _, trajectory, paid, advantages = _group_advantages()
    parallel = [r.index for r in trajectory.rounds if len(r.calls) > 1]
    assert parallel
    for t in parallel:
        levels = call_advantages(advantages[t], paid.rounds[t].calls)
        assert levels[0] == advantages[t]
        # a later call is not credited with the shares its predecessors earned
        shares = paid.rounds[t].calls
        assert levels[-1] == pytest.approx(advantages[t] - sum(shares[:-1]))


def test_a_rounds_logprob_is_its_calls_plus_the_text_between_them() -> None:
    torch = pytest.importorskip("torch")
    from stategym.train.losses import span_sums

    layout, _, _, _ = _group_advantages()
    stream = layout.stream
    generator = torch.Generator().manual_seed(0)
    logprobs = -torch.rand(len(stream.ids), generator=generator, dtype=torch.float64)
    for t, span in enumerate(stream.spans):
        calls = layout.calls[t]
        if not calls:
            continue
        inside = {p for a, b in calls for p in range(a, b)}
        between = [p for p in range(*span) if p not in inside]
        total = span_sums(logprobs, [span])[0]
        parts = span_sums(logprobs, list(calls)).sum() + logprobs[between].sum()
        assert total.item() == pytest.approx(parts.item())
