"""The loss mask (decoded with a tokenizer trained here) and per-token advantages."""

from __future__ import annotations

import pytest
from train_fixtures import TinyChat, expert_stream

from stategym.train.masks import call_advantages, check_spans, loss_mask, token_advantages


def runs(mask: tuple[bool, ...]) -> list[tuple[int, int]]:
    """The maximal runs of ``True``."""
    out, start = [], None
    for p, on in enumerate((*mask, False)):
        if on and start is None:
            start = p
        elif not on and start is not None:
            out.append((start, p))
            start = None
    return out


def test_no_observation_or_user_token_carries_loss() -> None:
    layout, trajectory, task = expert_stream("travel", 3)
    stream, chat = layout.stream, TinyChat()
    mask = loss_mask(stream.mask, stream.spans)
    assert len(mask) == len(stream.ids)
    # the tokens with loss decode to exactly what the policy wrote, round by round
    trained = [chat.decode(stream.ids[a:b]) for a, b in runs(mask)]
    assert trained == list(layout.texts)
    # every user word and every tool result is in the stream, and none of it has loss
    untrained = chat.decode([i for i, on in zip(stream.ids, mask, strict=True) if not on])
    seen = [m for obs in layout.observed for m in obs] + list(layout.first)
    assert {m["role"] for m in seen} >= {"system", "user", "tool"}
    for message in seen:
        content = str(message.get("content") or "")
        assert content in untrained
        assert all(content not in text for text in trained if len(content) > 12)
    # the user's letters ('u') are where the user's words are, and never under the mask
    assert "u" in stream.mask
    assert not any(on for on, letter in zip(mask, stream.mask, strict=True) if letter != "p")
    user = [i for i, letter in zip(stream.ids, stream.mask, strict=True) if letter == "u"]
    assert trajectory.rounds[0].user is not None
    assert trajectory.rounds[0].user.reply in chat.decode(user)
    assert task.request.text in chat.decode(user)


def test_dropped_rounds_stay_in_context_without_loss() -> None:
    layout, _, _ = expert_stream("travel", 3)
    stream = layout.stream
    keep = [i % 2 == 1 for i in range(len(stream.spans))]
    mask = loss_mask(stream.mask, stream.spans, keep)
    assert runs(mask) == [s for s, k in zip(stream.spans, keep, strict=True) if k]


def test_loss_mask_hand_example_and_refusals() -> None:
    assert loss_mask("opp", [(1, 3)]) == (False, True, True)
    assert loss_mask("opop", [(1, 2), (3, 4)], [False, True]) == (False, False, False, True)
    with pytest.raises(ValueError, match="unsampled"):
        loss_mask("oopo", [(1, 3)])
    with pytest.raises(ValueError, match="out of order"):
        loss_mask("pppp", [(2, 4), (0, 2)])
    with pytest.raises(ValueError, match="out of order"):
        loss_mask("pp", [(0, 3)])
    with pytest.raises(ValueError, match="keep"):
        loss_mask("pp", [(0, 2)], [True, False])


def test_call_advantages_credit_each_call_with_what_follows_it() -> None:
    assert call_advantages(1.0, [0.25, 0.5, 0.0]) == (1.0, 0.75, 0.25)
    assert call_advantages(-0.5, []) == ()
    # in a parallel round the first call answers for the whole round
    assert call_advantages(0.3, [0.1, 0.2])[0] == 0.3


def test_token_advantages_by_hand() -> None:
    # stream of 10: round 0 at [1, 4) (no calls), round 1 at [5, 10) with calls [5, 7), [8, 9)
    got = token_advantages(
        10,
        [(1, 4), (5, 10)],
        [0.5, 1.0],
        calls=[[], [(5, 7), (8, 9)]],
        shares=[[], [0.25, 0.5]],
    )
    assert got == (0.0, 0.5, 0.5, 0.5, 0.0, 1.0, 1.0, 0.75, 0.75, 0.25)
    assert token_advantages(4, [(0, 2)], [2.0]) == (2.0, 2.0, 0.0, 0.0)


def test_token_advantages_refuse_inconsistent_layouts() -> None:
    with pytest.raises(ValueError):
        token_advantages(4, [(0, 2)], [1.0, 2.0])
    with pytest.raises(ValueError, match="together"):
        token_advantages(4, [(0, 2)], [1.0], calls=[[(0, 1)]])
    with pytest.raises(ValueError, match="outside"):
        token_advantages(4, [(0, 2)], [1.0], calls=[[(1, 3)]], shares=[[0.1]])
    with pytest.raises(ValueError, match="shares"):
        token_advantages(4, [(0, 2)], [1.0], calls=[[(0, 1)]], shares=[[0.1, 0.2]])
    check_spans([(0, 0), (0, 2)], 2)  # empty spans are fine
