"""Training: the pure, tested building blocks the trainer's loops share.

- :mod:`.advantages`: the GRPO family's estimators over a group of G episodes of one task
  (``outcome``, ``composite``, ``dense``, ``gigpo``; GRPO, Dr.GRPO and RLOO baselines);
- :mod:`.values`: Monte-Carlo values and the ``mc`` advantage ``r + V(s') - V(s)``;
- :mod:`.masks`: round-level numbers onto tokens (the loss mask, per-token and per-call
  advantages);
- :mod:`.losses` (torch): PPO's clipped ratio, the ``k3`` KL, the entropy bonus and their
  aggregation;
- :mod:`.batching` (torch): padded tensors and back.

Importing this package does not import torch: the names of :mod:`.losses` and
:mod:`.batching` load on first use (``torch`` is an extra, ``stategym[hf]``).
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from .advantages import (
    NORMS,
    Norm,
    PerRound,
    composite_advantages,
    dense_advantages,
    gigpo_advantages,
    normalise_group,
    outcome_advantages,
    per_round,
    return_to_go,
)
from .masks import Span, call_advantages, loss_mask, token_advantages
from .values import continuation_return, fill_values, mc_advantages, mc_value

if TYPE_CHECKING:  # the type checker sees the lazy names; the runtime loads them on use
    from .batching import Batch, Sample, Side, collate, minibatches, pad, split
    from .losses import (
        AGGREGATIONS,
        Aggregation,
        LossConfig,
        LossParts,
        aggregate,
        k3_kl,
        policy_loss,
        span_sums,
        token_entropy,
        token_logprobs,
    )

_LAZY: dict[str, str] = {
    "AGGREGATIONS": "losses",
    "Aggregation": "losses",
    "LossConfig": "losses",
    "LossParts": "losses",
    "aggregate": "losses",
    "k3_kl": "losses",
    "policy_loss": "losses",
    "span_sums": "losses",
    "token_entropy": "losses",
    "token_logprobs": "losses",
    "Batch": "batching",
    "Sample": "batching",
    "Side": "batching",
    "collate": "batching",
    "minibatches": "batching",
    "pad": "batching",
    "split": "batching",
}
"""Names from the torch modules, imported when first asked for."""


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(f"{__name__}.{module}"), name)
    globals()[name] = value  # asked once: later lookups find it without this hook
    return value


def __dir__() -> list[str]:
    return sorted(__all__)


__all__ = [
    "AGGREGATIONS",
    "NORMS",
    "Aggregation",
    "Batch",
    "LossConfig",
    "LossParts",
    "Norm",
    "PerRound",
    "Sample",
    "Side",
    "Span",
    "aggregate",
    "call_advantages",
    "collate",
    "composite_advantages",
    "continuation_return",
    "dense_advantages",
    "fill_values",
    "gigpo_advantages",
    "k3_kl",
    "loss_mask",
    "mc_advantages",
    "mc_value",
    "minibatches",
    "normalise_group",
    "outcome_advantages",
    "pad",
    "per_round",
    "policy_loss",
    "return_to_go",
    "span_sums",
    "split",
    "token_advantages",
    "token_entropy",
    "token_logprobs",
]
