"""Per-call credit inside a parallel round: ``dense`` and ``gigpo`` give each call of a
round its own share (calls in logged order), found among the round's sampled tokens."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest

pytest.importorskip("torch")

from stategym.train.calls import call_spans
from stategym.train.config import GRPOConfig
from stategym.train.masks import call_advantages


def test_a_parallel_rounds_calls_get_their_own_shares(sft_run: Path) -> None:
    from stategym.kernel.knobs import Knobs
    from stategym.metrics.credit import credit
    from stategym.metrics.score import score
    from stategym.train.group import Member, _teach
    from stategym.train.grpo import sample_of
    from stategym.train.policy import Policy

    policy = Policy.load(sft_run / "model")
    rollout = _teach(policy, Member("travel", 3, Knobs(), teacher="expert"), "compact")
    card = score(rollout.trajectory, rollout.task)
    paid = credit(rollout.trajectory, rollout.task, card).rounds
    parallel = [r.index for r in rollout.trajectory.rounds if len(r.calls) > 1]
    assert parallel, "the expert's travel episode has parallel rounds"
    per_round = [float(t + 1) for t in range(len(rollout.spans))]
    scales = [0.5 * (t + 1) for t in range(len(rollout.spans))]  # shares in advantage units
    config = GRPOConfig(credit="dense", max_length=1_000_000)  # no round cut off

    def decode(ids: list[int]) -> str:
        return str(policy.tokenizer.decode(ids, skip_special_tokens=False))

    sample = sample_of(policy, rollout, card, per_round, config, scales)
    for t in parallel:
        record, shares = rollout.trajectory.rounds[t], paid[t].calls
        assert len(set(shares)) > 1  # the calls earned different shares
        spans = call_spans(rollout.ids, rollout.spans[t], len(record.calls), decode, policy.stops)
        assert spans is not None and len(spans) == len(record.calls)
        for (start, end), call in zip(spans, record.calls, strict=True):
            assert decode(list(rollout.ids[start:end])).strip().startswith(call.name)
        wanted = call_advantages(per_round[t], [scales[t] * s for s in shares])
        for (start, end), advantage in zip(spans, wanted, strict=True):
            assert sample.advantages[start:end] == (advantage,) * (end - start)
        # the end-of-turn token that closed the round follows the last call, as text after
        # the last </tool_call> does in the messages rendering
        closing = rollout.spans[t][1] - 1
        assert rollout.ids[closing] in policy.stops and spans[-1][1] == closing
        assert sample.advantages[closing] == per_round[t] - scales[t] * sum(shares)
    # a round of one call keeps one advantage on all its tokens; outcome does not split
    for t, (start, end) in enumerate(rollout.spans):
        if t not in parallel:
            assert set(sample.advantages[start:end]) == {per_round[t]}
    plain = sample_of(policy, rollout, card, per_round, replace(config, credit="outcome"))
    with pytest.raises(ValueError, match="call_scales"):  # raw shares would be in other units
        sample_of(policy, rollout, card, per_round, config)
    for t in parallel:
        start, end = rollout.spans[t]
        assert set(plain.advantages[start:end]) == {per_round[t]}


def test_text_that_does_not_split_into_the_logged_calls_is_not_split() -> None:
    text = "get_profile\nget_travel_policy"
    ids = list(range(len(text)))

    def decode(chars: list[int]) -> str:
        return "".join(text[i] for i in chars)

    assert call_spans(ids, (0, len(ids)), 2, decode) == ((0, 11), (11, len(text)))
    assert call_spans(ids, (0, len(ids)), 3, decode) is None


def test_the_stop_token_that_ends_a_round_is_not_part_of_a_call() -> None:
    """Compact: the decoded round ends in the end-of-turn marker; with a trailing newline
    before it the reply still holds the two calls the parser read."""
    marker = "\x00"  # one character standing for the end-of-turn token
    for text in ("get_profile\nsearch A" + marker, "get_profile\nsearch A\n" + marker):
        ids = list(range(len(text)))

        def decode(chars: list[int], text: str = text) -> str:
            return "".join(text[i] for i in chars)

        stop = len(text) - 1
        spans = call_spans(ids, (0, len(ids)), 2, decode, stops={stop})
        assert spans is not None, text
        assert spans == ((0, 11), (11, 20)), text  # the marker (and a newline) follow
