"""The policy loss against hand-computed values; masked tokens get exactly zero gradient."""

from __future__ import annotations

import math

import pytest

torch = pytest.importorskip("torch")

from stategym.train.losses import (  # noqa: E402  (after the skip: torch is an extra)
    LossConfig,
    aggregate,
    k3_kl,
    policy_loss,
    span_sums,
    token_entropy,
    token_logprobs,
)

torch.set_num_threads(1)

LOGP = [[0.0, -1.0, -2.0, -0.5]]
OLD = [[0.0, -1.2, -1.5, -0.5]]
ADV = [[0.0, 1.0, -1.0, 2.0]]
MASK = [[False, True, True, True]]


def tensors():
    logp = torch.tensor(LOGP, dtype=torch.float64, requires_grad=True)
    return logp, torch.tensor(OLD, dtype=torch.float64), torch.tensor(ADV, dtype=torch.float64)


def test_clipped_ratio_by_hand() -> None:
    logp, old, adv = tensors()
    parts = policy_loss(logp, old, adv, torch.tensor(MASK))
    # token 1: ratio e^0.2 = 1.221 > 1.2, A = 1 -> -1.2; token 2: ratio e^-0.5 = 0.607 < 0.8,
    # A = -1 -> min(-0.607, -0.8) -> +0.8; token 3: ratio 1, A = 2 -> -2; token-mean over 3
    assert parts.policy.item() == pytest.approx((-1.2 + 0.8 - 2.0) / 3)
    assert parts.loss.item() == pytest.approx(parts.policy.item())
    assert parts.clipped.item() == pytest.approx(2 / 3)
    assert parts.kl.item() == 0 and parts.entropy.item() == 0
    parts.loss.backward()
    # both clipped tokens have no gradient; the unclipped one -ratio * A / 3
    assert logp.grad[0].tolist() == pytest.approx([0.0, 0.0, 0.0, -2 / 3])


def test_clip_high_decouples_the_upper_bound() -> None:
    logp, old, adv = tensors()
    parts = policy_loss(logp, old, adv, torch.tensor(MASK), LossConfig(clip=0.2, clip_high=0.3))
    # token 1's ratio 1.221 is now inside [0.8, 1.3]
    assert parts.policy.item() == pytest.approx((-math.exp(0.2) + 0.8 - 2.0) / 3)


def test_aggregations_by_hand() -> None:
    values = torch.tensor([[1.0, 2.0, 9.0], [4.0, 9.0, 9.0]])
    mask = torch.tensor([[True, True, False], [True, False, False]])
    assert aggregate(values, mask, "token-mean").item() == pytest.approx(7 / 3)
    assert aggregate(values, mask, "seq-mean-token-sum").item() == pytest.approx(3.5)
    assert aggregate(values, mask, "seq-mean-token-sum", length=4).item() == pytest.approx(0.875)
    assert aggregate(values, mask, "seq-mean-token-mean").item() == pytest.approx(2.75)
    empty = torch.zeros_like(mask)
    assert aggregate(values, empty, "token-mean").item() == 0
    with pytest.raises(ValueError, match="unknown aggregation"):
        aggregate(values, mask, "sum")  # type: ignore[arg-type]


def test_k3_is_an_unbiased_kl_estimate() -> None:
    assert k3_kl(torch.tensor(math.log(0.5)), torch.tensor(math.log(0.25))).item() == (
        pytest.approx(0.5 - math.log(0.5) - 1)
    )
    p = torch.tensor([0.5, 0.3, 0.2], dtype=torch.float64)
    q = torch.tensor([0.2, 0.2, 0.6], dtype=torch.float64)
    # E_{x ~ p}[k3] = KL(p || q) exactly
    expected = (p * k3_kl(p.log(), q.log())).sum().item()
    assert expected == pytest.approx((p * (p / q).log()).sum().item())
    assert k3_kl(p.log(), p.log()).abs().max().item() == 0


def test_kl_and_entropy_terms_enter_with_their_coefficients() -> None:
    logp, old, adv = tensors()
    ref = torch.tensor([[0.0, -1.5, -1.0, -0.5]], dtype=torch.float64)
    entropy = torch.tensor([[5.0, 1.0, 2.0, 3.0]], dtype=torch.float64)
    config = LossConfig(kl=0.1, entropy=0.01)
    parts = policy_loss(
        logp, old, adv, torch.tensor(MASK), config, ref_logprobs=ref, entropy=entropy
    )
    kl = (
        k3_kl(torch.tensor(-1.0), torch.tensor(-1.5))
        + k3_kl(torch.tensor(-2.0), torch.tensor(-1.0))
    ) / 3
    assert parts.kl.item() == pytest.approx(kl.item())
    assert parts.entropy.item() == pytest.approx(2.0)  # position 0 (5.0) is masked
    assert parts.loss.item() == pytest.approx(parts.policy.item() + 0.1 * kl.item() - 0.02)
    with pytest.raises(ValueError, match="ref_logprobs"):
        policy_loss(logp, old, adv, torch.tensor(MASK), LossConfig(kl=0.1))
    with pytest.raises(ValueError, match="shape"):
        policy_loss(logp, old[:, :3], adv, torch.tensor(MASK))


@pytest.mark.parametrize("how", ["token-mean", "seq-mean-token-sum", "seq-mean-token-mean"])
def test_masked_tokens_get_zero_gradient_whatever_they_hold(how) -> None:
    generator = torch.Generator().manual_seed(0)
    mask = torch.rand(3, 7, generator=generator) > 0.4
    logp = torch.randn(3, 7, generator=generator).where(mask, torch.tensor(float("inf")))
    logp.requires_grad_(True)
    old = torch.randn(3, 7, generator=generator).where(mask, torch.tensor(float("nan")))
    adv = torch.randn(3, 7, generator=generator)
    ref = torch.randn(3, 7, generator=generator)
    entropy = torch.rand(3, 7, generator=generator).requires_grad_(True)
    config = LossConfig(aggregation=how, kl=0.5, entropy=0.1, length=7)
    parts = policy_loss(logp, old, adv, mask, config, ref_logprobs=ref, entropy=entropy)
    parts.loss.backward()
    assert torch.isfinite(parts.loss)
    assert logp.grad is not None and entropy.grad is not None
    assert logp.grad[~mask].abs().max().item() == 0
    assert entropy.grad[~mask].abs().max().item() == 0
    assert logp.grad[mask].abs().max().item() > 0


def test_token_logprobs_and_entropy_are_aligned_with_the_ids() -> None:
    logits = torch.tensor([[[0.0, 1.0, 2.0], [2.0, 0.0, 0.0], [0.0, 0.0, 0.0]]])
    ids = torch.tensor([[2, 0, 1]])
    got = token_logprobs(logits, ids)
    # position 1 (id 0) is predicted by position 0's logits; position 2 (id 1) by position 1's
    first = 0.0 - math.log(1 + math.e + math.e**2)
    second = 0.0 - math.log(math.e**2 + 2)
    assert got[0].tolist() == pytest.approx([0.0, first, second])
    entropy = token_entropy(torch.zeros(1, 4, 5))
    assert entropy[0].tolist() == pytest.approx([0.0, *[math.log(5)] * 3])


def test_a_rounds_logprob_is_the_sum_of_its_calls() -> None:
    values = torch.tensor([0.5, -1.0, -0.25, -2.0, -0.125, 3.0], requires_grad=True)
    (round_logprob,) = span_sums(values, [(1, 5)])
    calls = span_sums(values, [(1, 3), (3, 5)])
    assert round_logprob.item() == calls.sum().item() == -3.375
    calls.sum().backward()
    assert values.grad.tolist() == [0.0, 1.0, 1.0, 1.0, 1.0, 0.0]
    assert span_sums(values, []).shape == (0,)
