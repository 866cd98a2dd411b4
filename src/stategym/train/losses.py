"""The policy loss: PPO's clipped ratio, a KL penalty to a reference, an entropy bonus.

Everything is a tensor of shape ``(B, L)``: ``B`` sequences (episodes) of ``L`` token
positions, aligned with the token ids (position ``p`` holds token ``p``'s log-probability
given the tokens before it; :func:`token_logprobs` makes that shift), with a boolean loss
``mask`` (``stategym.train.masks.loss_mask``, padded by ``stategym.train.batching``).
Positions outside the mask never reach the arithmetic (they are replaced by zeros first),
so padding may hold any value, even ``inf``, and gets exactly zero gradient.

Aggregation (:data:`Aggregation`), the choice Dr.GRPO (Liu et al., 2025, §3.1) showed
matters:

- ``"token-mean"``: sum over every loss token of the batch / their count (DAPO; the
  default): each token weighs the same, whatever its sequence's length;
- ``"seq-mean-token-sum"``: each sequence's token sum, divided by a constant (``length``,
  the generation budget: Dr.GRPO's unbiased form; 1 when ``None``), then mean over
  sequences;
- ``"seq-mean-token-mean"``: each sequence's token mean, then mean over sequences (the
  original GRPO): a long sequence's tokens weigh less, the length bias Dr.GRPO removes.

The KL term is Schulman's ``k3`` estimator of ``KL(pi || ref)`` per token,
``exp(ref - logp) - (ref - logp) - 1`` (unbiased, never negative).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

import torch
from torch import Tensor

Aggregation = Literal["token-mean", "seq-mean-token-sum", "seq-mean-token-mean"]
AGGREGATIONS: tuple[Aggregation, ...] = ("token-mean", "seq-mean-token-sum", "seq-mean-token-mean")


@dataclass(frozen=True, slots=True)
class LossConfig:
    """How the policy loss is made.

    Attributes:
        clip: PPO's ratio clip below 1 (``1 - clip``).
        clip_high: the clip above 1 (``1 + clip_high``; ``None``: ``clip``, DAPO raises it).
        aggregation: how token terms become one number (module docstring).
        length: the constant divisor of ``"seq-mean-token-sum"`` (``None``: 1).
        kl: the KL penalty's coefficient (0: no reference needed).
        entropy: the entropy bonus's coefficient (0: no entropy needed).
    """

    clip: float = 0.2
    clip_high: float | None = None
    aggregation: Aggregation = "token-mean"
    length: int | None = None
    kl: float = 0.0
    entropy: float = 0.0


@dataclass(frozen=True, slots=True)
class LossParts:
    """The loss and what it is made of (scalars; only ``loss`` is meant for backward).

    Attributes:
        loss: ``policy + config.kl * kl - config.entropy * entropy``.
        policy: the clipped-ratio term.
        kl: the aggregated ``k3`` KL to the reference (0 without one).
        entropy: the aggregated entropy (0 without one).
        clipped: the fraction of loss tokens whose ratio was clipped.
    """

    loss: Tensor
    policy: Tensor
    kl: Tensor
    entropy: Tensor
    clipped: Tensor


def aggregate(
    values: Tensor, mask: Tensor, how: Aggregation = "token-mean", length: int | None = None
) -> Tensor:
    """One number from per-token values ``(B, L)`` under ``mask`` ``(B, L)``.

    A sequence without loss tokens counts as a sequence of value 0 in the ``seq-mean``
    forms; an all-masked batch aggregates to 0.

    Raises:
        ValueError: an unknown ``how``.
    """
    mask = mask.bool()
    kept = torch.where(mask, values, torch.zeros_like(values))
    if how == "token-mean":
        return kept.sum() / mask.sum().clamp(min=1)
    if how == "seq-mean-token-sum":
        return (kept.sum(dim=-1) / (1 if length is None else length)).mean()
    if how == "seq-mean-token-mean":
        return (kept.sum(dim=-1) / mask.sum(dim=-1).clamp(min=1)).mean()
    raise ValueError(f"unknown aggregation {how!r}; use one of {', '.join(AGGREGATIONS)}")


def k3_kl(logprobs: Tensor, ref_logprobs: Tensor) -> Tensor:
    """Per-token ``k3`` estimate of ``KL(pi || ref)``: ``exp(d) - d - 1``, ``d = ref - logp``.

    Shapes: any, equal; returns the same shape.
    """
    d = ref_logprobs - logprobs
    return torch.exp(d) - d - 1


def policy_loss(
    logprobs: Tensor,
    old_logprobs: Tensor,
    advantages: Tensor,
    mask: Tensor,
    config: LossConfig | None = None,
    *,
    ref_logprobs: Tensor | None = None,
    entropy: Tensor | None = None,
) -> LossParts:
    """PPO's clipped surrogate with optional KL and entropy terms, all ``(B, L)``.

    Per token, ``ratio = exp(logp - old)`` and the term is
    ``-min(ratio * A, clip(ratio, 1 - clip, 1 + clip_high) * A)``.

    Args:
        logprobs: ``(B, L)`` the current policy's token log-probabilities (with grad).
        old_logprobs: ``(B, L)`` the sampling policy's (no grad).
        advantages: ``(B, L)`` per-token advantages.
        mask: ``(B, L)`` which tokens carry loss.
        config: coefficients and aggregation (``None``: :class:`LossConfig` defaults).
        ref_logprobs: ``(B, L)`` the reference policy's, for the KL term.
        entropy: ``(B, L)`` the current policy's per-token entropy, for the bonus.

    Raises:
        ValueError: a KL or entropy coefficient without its tensor, or mismatched shapes.
    """
    config = LossConfig() if config is None else config
    tensors = (logprobs, old_logprobs, advantages, ref_logprobs, entropy)
    if any(t is not None and t.shape != mask.shape for t in tensors):
        raise ValueError(f"every tensor must have the mask's shape {tuple(mask.shape)}")
    mask = mask.bool()
    zero = torch.zeros_like(logprobs)
    logp = torch.where(mask, logprobs, zero)
    old = torch.where(mask, old_logprobs.detach(), zero)
    adv = torch.where(mask, advantages.detach(), zero)
    ratio = torch.exp(logp - old)
    bounded = ratio.clamp(*clip_bounds(config, ratio.dtype))
    terms = -torch.minimum(ratio * adv, bounded * adv)
    how, length = config.aggregation, config.length
    policy = aggregate(terms, mask, how, length)
    clipped = aggregate((ratio != bounded).to(logp.dtype), mask, "token-mean")
    ref = _optional_term(config.kl, ref_logprobs, "ref_logprobs", mask, zero)
    kl = zero.sum() if ref is None else aggregate(k3_kl(logp, ref.detach()), mask, how, length)
    bonus = _optional_term(config.entropy, entropy, "entropy", mask, zero)
    spread = zero.sum() if bonus is None else aggregate(bonus, mask, how, length)
    loss = policy + config.kl * kl - config.entropy * spread
    return LossParts(loss, policy, kl, spread, clipped.detach())


def clip_bounds(config: LossConfig, dtype: torch.dtype) -> tuple[float, float]:
    """The ratio's clip interval ``(1 - clip, 1 + clip_high)``, a bound beyond ``dtype``'s
    largest number taken as an infinity: a tensor of that dtype cannot hold it (``clamp``
    would raise), and every ratio it holds, ``inf`` included, is clamped alike by the
    infinity (``--clip 1e300`` clips nothing)."""
    high = config.clip if config.clip_high is None else config.clip_high
    largest = torch.finfo(dtype).max
    low, up = 1 - config.clip, 1 + high
    return (low if low >= -largest else -math.inf, up if up <= largest else math.inf)


def _optional_term(
    coefficient: float, tensor: Tensor | None, name: str, mask: Tensor, zero: Tensor
) -> Tensor | None:
    """``tensor`` with masked positions zeroed, ``None`` when absent (an error if needed)."""
    if tensor is None:
        if coefficient:
            raise ValueError(f"a coefficient of {coefficient} needs {name}")
        return None
    return torch.where(mask, tensor, zero)


def token_logprobs(logits: Tensor, ids: Tensor) -> Tensor:
    """Each token's log-probability given the tokens before it, aligned with ``ids``.

    Args:
        logits: ``(B, L, V)`` a causal LM's logits (position ``p`` predicts token ``p + 1``).
        ids: ``(B, L)`` the token ids.

    Returns:
        ``(B, L)``; position 0 (no prediction: always a prompt token) holds 0.
    """
    logp = torch.log_softmax(logits[:, :-1].float(), dim=-1)
    taken = logp.gather(-1, ids[:, 1:].unsqueeze(-1)).squeeze(-1)
    return torch.cat([torch.zeros_like(taken[:, :1]), taken], dim=1)


def token_entropy(logits: Tensor) -> Tensor:
    """The entropy of each position's next-token distribution, aligned like
    :func:`token_logprobs` (position ``p`` holds the distribution token ``p`` was drawn from).

    Args:
        logits: ``(B, L, V)``.

    Returns:
        ``(B, L)``; position 0 holds 0.
    """
    logp = torch.log_softmax(logits[:, :-1].float(), dim=-1)
    entropy = -(logp.exp() * logp).sum(dim=-1)
    return torch.cat([torch.zeros_like(entropy[:, :1]), entropy], dim=1)


def span_sums(values: Tensor, spans: Sequence[tuple[int, int]]) -> Tensor:
    """Sums of a ``(L,)`` tensor over half-open spans: a round's or a call's log-probability.

    Returns:
        ``(S,)``, differentiable; an empty span sums to 0.
    """
    if not spans:
        return values.new_zeros(0)
    return torch.stack([values[start:end].sum() for start, end in spans])


__all__: Sequence[str] = (
    "AGGREGATIONS",
    "Aggregation",
    "LossConfig",
    "LossParts",
    "aggregate",
    "clip_bounds",
    "k3_kl",
    "policy_loss",
    "span_sums",
    "token_entropy",
    "token_logprobs",
)
