"""TRL's ``rollout_func``: stategym plays whole episodes, its credit weighs every token.

Supported: ``trl>=1.16,<1.17`` (:data:`~stategym.adapters.trl.SUPPORTED_TRL`; tested: trl
1.16.0, transformers 5.24.0). What this relies on in TRL 1.16's ``GRPOTrainer``:
``_generate`` calls ``rollout_func(prompts, trainer)`` with the process's prompts, each
already repeated ``num_generations`` times in a row (``RepeatSampler``) and without their
dataset's other columns; the returned ``prompt_ids``, ``completion_ids`` and ``logprobs``
are the batch, ``env_mask`` (1 on tokens that carry loss) multiplies the loss mask, and
every other field is written into the batch's input rows and handed to the reward
functions. ``_generate_and_score_completions`` returns the batch with its ``advantages``,
and ``_compute_loss`` takes ``(B, T)`` advantages as well as ``(B,)`` ones.

- **The episode is stategym's.** :class:`EpisodeRollout` plays the prompts' tasks with the
  trainer's current model in lock-step (:func:`stategym.train.group.play`, the batched
  :class:`~stategym.llm.engine.Engine` of ``stategym train grpo``): token-in-token-out, the
  sampled ids kept as sampled and the renderer's observation tokens appended. A row's
  prompt is the episode's first prompt; its completion is every later token, observations
  included, with ``env_mask`` 0 on the observation tokens.
- **The seed travels in the prompt.** TRL drops every dataset column but ``prompt``, so
  :meth:`EpisodeRollout.rows` writes the task's seed into the first message under
  :data:`SEED_KEY` (two seeds may render the same prompt, so the text cannot say which
  task it is). The rollout checks that a prompt is chat messages holding that seed's
  rendered prompt, so a dataset of other settings (or of plain-text prompts) is refused
  with a :class:`~stategym.kernel.errors.UsageError`, not trained on.
- **Credit is stategym's.** Each group's per-round advantages are
  :func:`stategym.train.grpo.group_advantages` under ``credit`` (``outcome``,
  ``composite``, ``dense``, ``gigpo``, ``mc``) and land on the tokens as in ``stategym
  train`` (:func:`stategym.train.grpo.sample_of`, per-call shares included).
  :class:`CreditGRPOTrainer` puts them into the batch in place of TRL's group-normalised
  reward, so TRL's clipped loss weighs each token by its own advantage.
- **The reward TRL logs** is each episode's composite R (:func:`composite_reward`).

What TRL cannot express: the exploration guard (a scripted teacher's episodes), since TRL
clips every token against the sampler; groups that span processes (each process's prompts
must hold whole groups); the completions table's ``advantage`` column, which shows TRL's
own scalar (computed from the reward, then replaced). TRL recomputes the log-probabilities
its ratio is taken against; the sampler's (``logprobs``) are at temperature 1.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from typing import Any

import trl
from packaging.specifiers import SpecifierSet
from packaging.version import Version

from stategym.adapters.trl import SUPPORTED_TRL
from stategym.kernel.errors import UsageError
from stategym.kernel.knobs import Knobs
from stategym.metrics.score import score
from stategym.registry import cached_task, get_domain
from stategym.rendering import make_renderer
from stategym.rendering.base import roles_and_texts
from stategym.train import mc
from stategym.train.checkpoint import iteration_generator
from stategym.train.config import GRPOConfig
from stategym.train.group import Member, Rollout, Sampling, play
from stategym.train.grpo import call_scales, group_advantages, sample_of
from stategym.train.policy import Policy
from stategym.train.tasks import setting

SEED_KEY = "stategym_seed"
"""The key of the first prompt message that holds the task's seed."""
ADVANTAGES = "stategym_advantages"
"""Extra field: each completion token's advantage (0 where it carries no loss)."""
COMPOSITE = "stategym_composite"
"""Extra field: each episode's composite R (what :func:`composite_reward` returns)."""
EPISODE = "stategym_episode"
"""Extra field: each played :class:`~stategym.train.group.Rollout` (trajectory, task)."""


def check_trl(version: str) -> None:
    """Refuse a TRL outside :data:`~stategym.adapters.trl.SUPPORTED_TRL`.

    Raises:
        UsageError: ``version`` is not supported.
    """
    if Version(version) not in SpecifierSet(SUPPORTED_TRL):
        raise UsageError(
            f"trl {version} is installed; stategym's rollout_func path overrides "
            f"GRPOTrainer internals read from trl{SUPPORTED_TRL} (install a version in that range)"
        )


@dataclass(frozen=True, slots=True)
class EpisodeRollout:
    """A ``rollout_func`` for TRL's ``GRPOTrainer``: the prompts' episodes, played whole.

    Attributes:
        settings: ``stategym train grpo``'s settings, of which the rollout reads the tasks'
            (``domain``, ``knobs``, ``family``, ``rendering``), the credit's (``credit``,
            ``norm``, ``gigpo_weight``, ``coarse_key``, ``mc_samples``) and the episodes'
            caps (``max_tokens``, ``max_length``). TRL owns the rest: the group is its
            ``num_generations``, the temperature its ``temperature`` (its loss divides the
            logits by it), the optimiser and the batches its own.

    Raises:
        UsageError: settings with a guard teacher (TRL cannot train its tokens unclipped).
    """

    settings: GRPOConfig = field(default_factory=GRPOConfig)

    def __post_init__(self) -> None:
        if self.settings.guard_teacher:
            raise UsageError("the exploration guard is not available inside TRL")

    def config(self, group: int, temperature: float) -> GRPOConfig:
        """The settings the episodes are credited and sampled under in a batch."""
        return replace(self.settings, group=group, temperature=temperature)

    def rows(self, seeds: Sequence[int]) -> list[dict[str, Any]]:
        """Dataset rows: each seed's first messages, the seed under :data:`SEED_KEY`."""
        rows = []
        for seed in seeds:
            first, *rest = self._prompt(seed)
            rows.append({"prompt": [{**first, SEED_KEY: seed}, *rest]})
        return rows

    def _setting(self, seed: int) -> tuple[str, Knobs]:
        """Task ``seed``'s domain and knobs (a family's schedule, or the settings')."""
        return setting(self.settings.family, self.settings.domain, self.settings.knobs, seed)

    def _prompt(self, seed: int) -> list[dict[str, Any]]:
        domain, knobs = self._setting(seed)
        renderer = make_renderer(get_domain(domain), knobs, self.settings.rendering)
        return renderer.first_messages(cached_task(domain, seed, knobs))

    def members(self, prompts: Sequence[Sequence[dict[str, Any]]], group: int) -> list[Member]:
        """One member per prompt: its seed's task, ``sample`` its place in its group.

        Raises:
            UsageError: a prompt that is not chat messages (a plain string), one without a
                seed or not that seed's prompt, or prompts that are not whole groups of
                ``group`` equal seeds in a row.
        """
        seeds = [self._seed(prompt) for prompt in prompts]
        if len(seeds) % group or any(
            len(set(seeds[g : g + group])) != 1 for g in range(0, len(seeds), group)
        ):
            raise UsageError(
                f"the rollout needs whole groups of {group} equal prompts in a row, got seeds "
                f"{seeds} (each process's batch must hold whole groups)"
            )
        settings = [self._setting(seed) for seed in seeds]
        return [
            Member(domain, seed, knobs, sample=index % group)
            for index, (seed, (domain, knobs)) in enumerate(zip(seeds, settings, strict=True))
        ]

    def _seed(self, prompt: Sequence[dict[str, Any]]) -> int:
        said = roles_and_texts(prompt)
        if said is None:
            raise UsageError(
                f"a prompt must be a list of chat messages (dicts), got {type(prompt).__name__}:"
                " make the dataset with rows()"
            )
        seed = prompt[0].get(SEED_KEY) if prompt else None
        if not isinstance(seed, int):
            raise UsageError(f"a prompt without {SEED_KEY!r}: make the dataset with rows()")
        if said != roles_and_texts(self._prompt(seed)):
            raise UsageError(f"the prompt of seed {seed} is not this rollout's (other settings)")
        return seed

    def __call__(self, prompts: list[Any], trainer: Any) -> dict[str, list[Any]]:
        """Play the prompts' episodes with the trainer's model; TRL's rows and extra fields."""
        training = trainer.model.training
        group = trainer.num_generations if training else trainer.num_generations_eval
        config = self.config(group, trainer.temperature)
        members = self.members(prompts, group)
        model = trainer.accelerator.unwrap_model(trainer.model)
        policy = Policy(model, trainer.processing_class, str(model.device))
        sampling = Sampling(
            config.temperature, config.max_tokens, config.max_length, config.rendering
        )
        generator = iteration_generator(trainer.args.seed, trainer.state.global_step, "rollout")
        model.eval()
        try:
            rollouts, _ = play(policy, members, sampling, generator)
            values = None
            if config.credit == "mc":
                values = mc.values(policy, rollouts, group, config.mc_samples, sampling, generator)
        finally:
            model.train(training)
        return self._batch(policy, rollouts, values, config)

    def _batch(
        self,
        policy: Policy,
        rollouts: Sequence[Rollout],
        values: Sequence[Sequence[float | None]] | None,
        config: GRPOConfig,
    ) -> dict[str, list[Any]]:
        """TRL's rows: the first prompt, then every later token of the episode."""
        cards = [score(r.trajectory, r.task) for r in rollouts]
        out: dict[str, list[Any]] = {
            key: [] for key in ("prompt_ids", "completion_ids", "logprobs", "env_mask", ADVANTAGES)
        }
        for g in range(0, len(rollouts), config.group):
            group = slice(g, g + config.group)
            per_round = group_advantages(
                config, rollouts[group], cards[group], None if values is None else values[group]
            )
            scales = call_scales(config, rollouts[group], cards[group])
            for rollout, card, advantages, scale in zip(
                rollouts[group], cards[group], per_round,
                scales or [None] * len(per_round), strict=True,
            ):  # fmt: skip
                if not rollout.spans:
                    raise UsageError(
                        f"seed {rollout.member.seed}'s prompt leaves no room for a round under "
                        f"max_length {config.max_length}"
                    )
                sample = sample_of(policy, rollout, card, advantages, config, scale)
                start = rollout.spans[0][0]
                out["prompt_ids"].append(list(sample.ids[:start]))
                out["completion_ids"].append(list(sample.ids[start:]))
                out["logprobs"].append(list(sample.logprobs[start:]))
                out["env_mask"].append([int(m) for m in sample.loss_mask[start:]])
                out[ADVANTAGES].append(list(sample.advantages[start:]))
        out[COMPOSITE] = [card.composite for card in cards]
        out[EPISODE] = list(rollouts)
        return out


def composite_reward(completions: list[Any], **fields: Any) -> list[float]:
    """Each played episode's composite R, as :class:`EpisodeRollout` scored it."""
    return [float(r) for r in fields[COMPOSITE]]


class CreditGRPOTrainer(trl.GRPOTrainer):
    """``GRPOTrainer`` whose loss weighs each completion token by stategym's advantage.

    Takes ``GRPOTrainer``'s arguments (by keyword after ``model``) with an
    :class:`EpisodeRollout` as ``rollout_func``; ``reward_funcs`` defaults to
    :func:`composite_reward` (logged only: the advantages are the rollout's).

    Raises:
        UsageError: an unsupported TRL, a ``rollout_func`` that is not an
            :class:`EpisodeRollout`, or tools (TRL's tool loop would replace the mask).
    """

    def __init__(
        self, model: Any, *, rollout_func: EpisodeRollout, reward_funcs: Any = None, **kwargs: Any
    ) -> None:
        check_trl(trl.__version__)
        if not isinstance(rollout_func, EpisodeRollout):
            raise UsageError("CreditGRPOTrainer needs an EpisodeRollout as rollout_func")
        if kwargs.get("tools") or kwargs.get("environment_factory"):
            raise UsageError("the rollout plays the tools itself: pass no tools or environments")
        super().__init__(
            model, reward_funcs=reward_funcs or [composite_reward], rollout_func=rollout_func,
            **kwargs,
        )  # fmt: skip

    def _generate_and_score_completions(self, inputs: list[dict[str, Any]]) -> dict[str, Any]:
        import torch

        output: dict[str, Any] = super()._generate_and_score_completions(inputs)
        ids = output["completion_ids"]
        advantages = torch.zeros(ids.shape, dtype=torch.float32, device=ids.device)
        # TRL wrote the rollout's extra fields into the input rows, in batch order
        for row, example in enumerate(inputs):
            values = example[ADVANTAGES]
            advantages[row, : len(values)] = torch.tensor(values, dtype=torch.float32)
        output["advantages"] = advantages
        return output


__all__ = [
    "ADVANTAGES",
    "COMPOSITE",
    "EPISODE",
    "SEED_KEY",
    "CreditGRPOTrainer",
    "EpisodeRollout",
    "check_trl",
    "composite_reward",
]
