"""Round-level numbers onto tokens: the loss mask and per-token advantages.

An episode's token stream (``stategym.rendering.tokens.TokenStream``, logged per round as
``ModelTurn.span``) is one mask letter per token — ``p`` the policy sampled it, ``o`` the
template or the environment wrote it, ``u`` the simulated user's words — and, per round,
the span ``(start, end)`` of its sampled tokens. Positions are indices into the stream;
spans are half-open and in round order.

Only the policy's own tokens carry loss (:func:`loss_mask`). A round's advantage lands on
the tokens of its span (:func:`token_advantages`); inside a parallel round it can be split
over the round's calls (:func:`call_advantages`): the calls in their canonical order,
which is the order they are logged and the order of their tokens (as
:mod:`stategym.metrics.credit` splits a round's reward), so the round's log-probability is
the sum of its calls' and each call is credited only with what it and the calls after it
earned, never with an earlier call's share.
"""

from __future__ import annotations

from collections.abc import Sequence

from stategym.rendering.tokens import POLICY

Span = tuple[int, int]
"""``(start, end)``: half-open token positions in an episode's stream."""


def check_spans(spans: Sequence[Span], length: int, within: Span | None = None) -> None:
    """Raise unless ``spans`` are ordered, disjoint and inside ``[0, length)`` (and ``within``).

    Raises:
        ValueError: a span out of range, empty-reversed, or overlapping the one before.
    """
    low, high = within if within is not None else (0, length)
    previous = low
    for start, end in spans:
        if not previous <= start <= end <= high:
            raise ValueError(f"span {(start, end)} is out of order or outside {(low, high)}")
        previous = end


def loss_mask(
    letters: str | Sequence[str], spans: Sequence[Span], keep: Sequence[bool] | None = None
) -> tuple[bool, ...]:
    """Which tokens carry loss: the policy's sampled tokens of the kept rounds.

    Args:
        letters: ``(L,)`` one mask letter per token of the stream.
        spans: ``(T,)`` each round's sampled span.
        keep: ``(T,)`` which rounds train (``None``: all); a dropped round's tokens stay in
            the context but carry no loss.

    Returns:
        ``(L,)`` ``True`` where a token carries loss.

    Raises:
        ValueError: spans out of order or range, ``keep`` of the wrong length, or a span
            covering a token the policy did not sample (the stream is inconsistent).

    >>> loss_mask("oopppoupp", [(2, 5), (7, 9)], keep=[True, False])
    (False, False, True, True, True, False, False, False, False)
    """
    check_spans(spans, len(letters))
    if keep is not None and len(keep) != len(spans):
        raise ValueError(f"{len(keep)} keep flags for {len(spans)} rounds")
    out = [False] * len(letters)
    for index, (start, end) in enumerate(spans):
        wrong = [p for p in range(start, end) if letters[p] != POLICY]
        if wrong:
            raise ValueError(f"round {index}'s span covers unsampled tokens at {wrong[:5]}")
        if keep is None or keep[index]:
            out[start:end] = [True] * (end - start)
    return tuple(out)


def call_advantages(advantage: float, shares: Sequence[float]) -> tuple[float, ...]:
    """Split a round's advantage over its calls in canonical (logged) order.

    Call ``j`` keeps the round's advantage less the shares of the calls before it
    (``A_j = A - sum_{k < j} s_k``): each call answers for what it and the calls after it
    earned. The shares must be in the advantage's units: ``RoundCredit.calls`` times the
    round group's scale (:func:`stategym.train.advantages.group_scale`), not raw rewards.

    Args:
        advantage: the round's advantage.
        shares: ``(C,)`` the round's reward split over its calls, in advantage units.

    Returns:
        ``(C,)``.

    >>> call_advantages(1.0, [0.25, 0.5, 0.0])
    (1.0, 0.75, 0.25)
    """
    return _levels(advantage, shares)[:-1]


def _levels(advantage: float, shares: Sequence[float]) -> tuple[float, ...]:
    """``(C + 1,)``: the advantage after each prefix of the calls (``A - sum_{k < j} s_k``)."""
    out = [advantage]
    before = 0.0
    for share in shares:
        before += share
        out.append(advantage - before)
    return tuple(out)


def token_advantages(
    length: int,
    spans: Sequence[Span],
    advantages: Sequence[float],
    calls: Sequence[Sequence[Span]] | None = None,
    shares: Sequence[Sequence[float]] | None = None,
) -> tuple[float, ...]:
    """Per-token advantages from per-round ones (and, optionally, per-call shares).

    A token in round ``t``'s span gets ``A_t``; with calls, ``A_t`` less the shares of the
    round's calls that end at or before it (so a call's tokens get
    :func:`call_advantages`, text before the first call gets ``A_t``, and text after the
    last call gets ``A_t - sum(shares)``). Tokens outside every span get 0 (they carry no
    loss).

    Args:
        length: ``L`` tokens in the stream.
        spans: ``(T,)`` each round's sampled span.
        advantages: ``(T,)`` each round's advantage.
        calls: ``T`` sequences of ``(C_t,)`` call spans, inside their round's span.
        shares: ``T`` sequences of ``(C_t,)`` call shares in advantage units
            (``RoundCredit.calls`` scaled: :func:`call_advantages`).

    Returns:
        ``(L,)``.

    Raises:
        ValueError: mismatched lengths, or spans out of order or range.

    >>> token_advantages(6, [(1, 5)], [1.0], calls=[[(1, 3), (3, 5)]], shares=[[0.5, 0.25]])
    (0.0, 1.0, 1.0, 0.5, 0.5, 0.0)
    """
    check_spans(spans, length)
    if len(advantages) != len(spans):
        raise ValueError(f"{len(advantages)} advantages for {len(spans)} rounds")
    if (calls is None) != (shares is None):
        raise ValueError("calls and shares come together")
    if calls is not None and shares is not None and not len(calls) == len(shares) == len(spans):
        raise ValueError("one entry of calls and of shares per round")
    out = [0.0] * length
    for t, (start, end) in enumerate(spans):
        out[start:end] = [advantages[t]] * (end - start)
        if calls is None or shares is None:
            continue
        if len(calls[t]) != len(shares[t]):
            raise ValueError(f"round {t}: {len(calls[t])} call spans, {len(shares[t])} shares")
        check_spans(calls[t], length, within=(start, end))
        levels = _levels(advantages[t], shares[t])
        for j, (_, call_end) in enumerate(calls[t]):
            # from the end of call j on, the round's calls 0..j are behind the token
            out[call_end:end] = [levels[j + 1]] * (end - call_end)
    return tuple(out)


__all__: Sequence[str] = (
    "Span",
    "call_advantages",
    "check_spans",
    "loss_mask",
    "token_advantages",
)
