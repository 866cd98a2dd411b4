"""GRPO-family RL, top to bottom (``stategym train grpo``).

Per iteration ``k``:

1. **Rollouts.** ``tasks`` training tasks (seeds ``first_seed + k * tasks ...``), ``group``
   episodes each, all played in lock-step by :func:`stategym.train.group.play` at
   ``temperature`` (token-in-token-out; sampled ids and log-probabilities kept). With the
   exploration guard, ``round(guard_fraction * group)`` (at least one) of each group's
   episodes are played by the scripted ``guard_teacher`` instead.
2. **Scoring.** Each episode's scorecard and per-round credit
   (:func:`stategym.metrics.credit.credit`: rewards summing to its R).
3. **Advantages** per group, by ``credit``: ``outcome`` (the goal, 0/1), ``composite`` (R),
   ``dense`` (return-to-go of the per-round rewards, group baseline per round index),
   ``gigpo`` (episode advantage plus step groups of equal ``state_key()``), each normalised
   by ``norm``, or ``mc`` (``r_t + V(s_{t+1}) - V(s_t)``, values from ``mc_samples``
   continuations replayed from each decision state: :mod:`stategym.train.mc`). A round's
   advantage lands on its sampled tokens; with ``dense``/``gigpo`` a round of several calls
   gives each call its own share (:mod:`stategym.train.calls`). With ``family``, each
   seed's domain and knobs come from the family's schedule.
4. **Updates.** ``updates`` passes over the batch in seeded minibatches of PPO's clipped
   ratio (:func:`stategym.train.losses.policy_loss`), token-mean over policy tokens only,
   with the ``k3`` KL to the initial policy and an entropy bonus when asked for. The
   initial policy is loaded again from ``init`` on resume, and refused unless it is the
   model the run started from (its digest in ``RUN/start.json``).

The "old" log-probabilities of the ratio are recomputed by the current policy in one
forward pass before the first update (not taken from the sampler): batched left-padded
sampling and right-padded training differ by float rounding, and a teacher's tokens were
never sampled. So the ratio of the first minibatch step is exactly 1 (the pass's later
steps come after optimiser steps, so their ratios move and may clip), and the teacher's episodes are
trained as off-policy data weighted by their advantage under the current policy's own
probabilities (no importance weight towards a teacher distribution we do not have). The
teacher's tokens are not clipped either (unless ``guard_clip``): their ratio is taken
against the current policy at every step, so each step is advantage-weighted likelihood.
The clip is a trust region around the policy that sampled; the teacher's tokens were not
sampled by it, and clipped, a token the policy gives probability 1e-6 can rise by at most
~1.2x per step once past the first (unclipped guidance of off-policy expert traces is what
LUFFY, Yan et al. 2025, does for this reason). Measured on ``ask-or-act`` (docs/training.md): the
ask rate rose in the run with unclipped teacher tokens at lr 3e-3 and 4 passes; clipped
runs were measured only at other settings, so how much unclipping contributed is not known. The
sampler's log-probabilities are kept to report the sampler-to-learner drift (``sampler_drift``:
the mean absolute difference on the policy's own tokens, before the first step).
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from stategym.kernel.errors import UsageError
from stategym.llm.local import check_device
from stategym.metrics.credit import credit as credit_of
from stategym.metrics.score import score
from stategym.train import advantages as adv
from stategym.train import checkpoint, mc, runlog
from stategym.train.calls import call_spans
from stategym.train.config import GRPOConfig, check, guard_size, note_rendering
from stategym.train.evaluate import evaluate
from stategym.train.group import Member, Rollout, Sampling, play
from stategym.train.policy import Policy
from stategym.train.start import check_start, model_source, start_model, write_start
from stategym.train.tasks import setting
from stategym.train.values import mc_advantages


def members(config: GRPOConfig, iteration: int) -> list[Member]:
    """The iteration's episodes: ``tasks`` groups of ``group``, teachers last in a group."""
    guard = guard_size(config)
    out = []
    for t in range(config.tasks):
        seed = config.first_seed + (iteration - 1) * config.tasks + t
        domain, knobs = setting(config.family, config.domain, config.knobs, seed)
        for g in range(config.group):
            teacher = config.guard_teacher if g >= config.group - guard else ""
            out.append(Member(domain, seed, knobs, sample=g, teacher=teacher))
    return out


def group_advantages(
    config: GRPOConfig,
    group: Sequence[Rollout],
    cards: Sequence[Any],
    values: Sequence[Sequence[float | None]] | None = None,
) -> adv.PerRound:
    """Per-round advantages of one task's episodes under ``config.credit``.

    ``values`` are ``mc``'s estimated ``V(s_t)`` per episode (:func:`stategym.train.mc.values`).
    """
    lengths = [len(r.spans) for r in group]
    rewards = _round_rewards(group, cards)
    if config.credit == "mc":
        if values is None:
            raise UsageError("mc credit needs the continuations' values")
        return mc_advantages(rewards, values)
    if config.credit == "outcome":
        successes = [c.outcome.goal_reached for c in cards]
        return adv.per_round(adv.outcome_advantages(successes, config.norm), lengths)
    if config.credit == "composite":
        return adv.per_round(
            adv.composite_advantages([c.composite for c in cards], config.norm), lengths
        )
    if config.credit == "dense":
        return adv.dense_advantages(rewards, config.norm)
    if config.credit == "gigpo":
        return adv.gigpo_advantages(
            [c.composite for c in cards], rewards, [r.keys for r in group],
            weight=config.gigpo_weight, norm=config.norm, coarse=_coarse(config),
        )  # fmt: skip
    raise UsageError(f"credit {config.credit!r} is not implemented in this trainer yet")


def call_scales(
    config: GRPOConfig, group: Sequence[Rollout], cards: Sequence[Any]
) -> adv.PerRound | None:
    """Per round, the advantage units of one reward unit, for the per-call split of
    ``dense``/``gigpo`` (:func:`stategym.train.advantages.group_scale`); ``None`` for the
    credits that do not split a round.

    A call's share of its round's return is a raw reward; the round's advantage was
    normalised within its group, so the share is scaled the same way before it is taken
    from the advantage (under ``std`` a raw share would be off by the group's ``1/std``, and
    could flip a call's sign).
    """
    if config.credit not in ("dense", "gigpo"):
        return None
    rewards = _round_rewards(group, cards)
    if config.credit == "dense":
        return adv.dense_scales(rewards, config.norm)
    return adv.gigpo_scales(
        rewards, [r.keys for r in group], weight=config.gigpo_weight, norm=config.norm,
        coarse=_coarse(config),
    )  # fmt: skip


def _round_rewards(group: Sequence[Rollout], cards: Sequence[Any]) -> list[list[float]]:
    """Each episode's per-round rewards (:func:`stategym.metrics.credit.credit`), for the
    rounds it has sampled spans of (a round cut by ``max_length`` has none)."""
    return [
        list(credit_of(r.trajectory, r.task, c).rewards[: len(r.spans)])
        for r, c in zip(group, cards, strict=True)
    ]


def _coarse(config: GRPOConfig) -> Any:
    """GiGPO's step-group key with ``coarse_key``: the world digest alone (``None``: the
    exact state key, which counts the rounds)."""
    return (lambda key: str(key).split("|", 1)[0]) if config.coarse_key else None


def update(
    policy: Policy, reference: Policy | None, optimiser: Any, samples: Sequence[Any],
    config: GRPOConfig, iteration: int, teachers: Sequence[bool] = (),
) -> dict[str, float]:  # fmt: skip
    """``updates`` passes of clipped-ratio minibatch steps; the loss parts' mean over the steps.

    ``teachers`` marks the guard teacher's samples: unless ``guard_clip``, their ratio is
    taken against the current policy at every step (always 1, never clipped), so their
    tokens are trained by advantage-weighted likelihood (module docstring).
    """
    import torch

    from stategym.train.batching import collate, minibatches
    from stategym.train.losses import LossConfig, policy_loss

    loss_config = LossConfig(clip=config.clip, kl=config.kl, entropy=config.entropy)
    olds = []
    with torch.no_grad():
        for chunk in minibatches(len(samples), config.minibatch, seed=0):
            batch = collate([samples[i] for i in sorted(chunk)], pad_id=policy.pad_id)
            olds.append((sorted(chunk), policy.forward(batch)[0].cpu()))
    old_of = {
        i: row[: len(samples[i].ids)]
        for chunk, lp in olds
        for i, row in zip(chunk, lp, strict=True)
    }
    totals: dict[str, float] = {}
    steps = 0
    policy.model.train()
    for epoch in range(config.updates):
        for chunk in minibatches(
            len(samples), config.minibatch, seed=config.seed * 1009 + iteration * 31 + epoch
        ):
            batch = collate([samples[i] for i in chunk], pad_id=policy.pad_id)
            width = batch.ids.shape[1]
            old = torch.stack(
                [torch.nn.functional.pad(old_of[i], (0, width - len(old_of[i]))) for i in chunk]
            )
            logp, entropy = policy.forward(batch, entropy=True)
            if teachers and not config.guard_clip:
                rows = torch.tensor([teachers[i] for i in chunk], device=logp.device)[:, None]
                old = torch.where(rows, logp.detach(), old.to(logp.device))
            if not config.entropy:  # reported, not trained
                entropy = entropy.detach()
            ref = None
            if reference is not None:
                with torch.no_grad():
                    ref = reference.forward(batch)[0]
            device = logp.device
            out = policy_loss(
                logp, old.to(device), batch.advantages.to(device), batch.loss_mask.to(device),
                loss_config, ref_logprobs=ref, entropy=entropy,
            )  # fmt: skip
            optimiser.zero_grad(set_to_none=True)
            out.loss.backward()
            torch.nn.utils.clip_grad_norm_(policy.model.parameters(), 1.0)
            optimiser.step()
            parts = {
                "loss": float(out.loss.detach()),
                "policy_loss": float(out.policy.detach()),
                "kl": float(out.kl.detach()),
                "entropy": float(out.entropy.detach()),
                "clipped": float(out.clipped),
            }
            for name, value in parts.items():
                totals[name] = totals.get(name, 0.0) + value
            steps += 1
    policy.model.eval()
    # the mean over every minibatch step of every pass: the last step alone is one
    # minibatch's noise (and, with several passes, only the most off-policy one)
    means = {name: total / steps for name, total in totals.items()}
    return {**means, "sampler_drift": sampler_drift(samples, old_of, teachers)}


def sampler_drift(
    samples: Sequence[Any], old_of: dict[int, Any], teachers: Sequence[bool] = ()
) -> float:
    """The mean ``|log p_sampler - log p_learner|`` over the policy's own sampled tokens,
    the learner's taken before the first step (batched left-padded sampling and
    right-padded training differ by float rounding, more in ``bfloat16``); 0 with none.
    The guard teacher's tokens were not sampled and are left out."""
    total, count = 0.0, 0
    for i, sample in enumerate(samples):
        if i < len(teachers) and teachers[i]:
            continue
        learner = old_of[i].tolist()
        for sampled, old, trained in zip(sample.logprobs, learner, sample.loss_mask, strict=False):
            if trained:
                total += abs(sampled - old)
                count += 1
    return total / count if count else 0.0


def sample_of(
    policy: Policy,
    rollout: Rollout,
    card: Any,
    advantages: Sequence[float],
    config: GRPOConfig,
    scales: Sequence[float] | None = None,
) -> Any:
    """The rollout as a training sample; with ``dense``/``gigpo`` a parallel round's calls
    get their own shares (:func:`stategym.train.masks.token_advantages`), each share times
    its round's ``scales`` entry (:func:`call_scales`: the shares in advantage units)."""
    from stategym.rendering.tokens import TokenStream
    from stategym.train.streams import to_sample

    stream = TokenStream(list(rollout.ids), list(rollout.mask), list(rollout.spans))
    calls: list[tuple[tuple[int, int], ...]] | None = None
    shares: list[tuple[float, ...]] | None = None
    if config.credit in ("dense", "gigpo"):
        if scales is None:
            raise ValueError(f"{config.credit} credit splits rounds: give the call_scales")
        paid = credit_of(rollout.trajectory, rollout.task, card).rounds
        calls, shares = [], []

        def decode(ids: list[int]) -> str:
            return str(policy.tokenizer.decode(ids, skip_special_tokens=False))

        for span, record, round_credit, scale in zip(
            rollout.spans, rollout.trajectory.rounds, paid, scales, strict=False
        ):
            split = None
            if len(record.calls) > 1:
                split = call_spans(rollout.ids, span, len(record.calls), decode, policy.stops)
            calls.append(split or ())
            shares.append(tuple(scale * s for s in round_credit.calls) if split else ())
    return to_sample(stream, advantages, rollout.logprobs, config.max_length, calls, shares)


def iterate(
    policy: Policy, reference: Policy | None, optimiser: Any, config: GRPOConfig, iteration: int
) -> dict[str, Any]:
    """One iteration (module docstring): rollouts, scoring, advantages, updates."""
    started = time.perf_counter()
    sampling = Sampling(config.temperature, config.max_tokens, config.max_length, config.rendering)
    generator = checkpoint.iteration_generator(config.seed, iteration, "rollout")
    rollouts, timing = play(policy, members(config, iteration), sampling, generator)
    if iteration == 1 and not any(r.spans for r in rollouts if not r.member.teacher):
        raise UsageError(
            f"--max-length {config.max_length} cuts every episode before its first reply (the "
            f"first prompt and --max-tokens {config.max_tokens} do not fit): nothing to learn "
            "from; give a larger --max-length"
        )
    scoring = time.perf_counter()
    cards = [score(r.trajectory, r.task) for r in rollouts]
    scored = time.perf_counter()
    values: list[list[float | None]] | None = None
    if config.credit == "mc":
        values = mc.values(policy, rollouts, config.group, config.mc_samples, sampling, generator)
    continuing = time.perf_counter() - scored
    advantaged = time.perf_counter()
    samples = []
    for g in range(0, len(rollouts), config.group):
        group = rollouts[g : g + config.group]
        group_cards = cards[g : g + config.group]
        per_round = group_advantages(
            config, group, group_cards, None if values is None else values[g : g + config.group]
        )
        scales = call_scales(config, group, group_cards) or [None] * len(group)
        for rollout, card, advantages, scale in zip(
            group, group_cards, per_round, scales, strict=True
        ):
            samples.append(sample_of(policy, rollout, card, advantages, config, scale))
    # scoring's share: the scorecards, the credit and the advantages (not the continuations)
    scoring = (scored - scoring) + (time.perf_counter() - advantaged)
    backward = time.perf_counter()
    teachers = [bool(r.member.teacher) for r in rollouts]
    spared = policy.shared_tokens
    parts = update(policy, reference, optimiser, samples, config, iteration, teachers)
    backward = time.perf_counter() - backward
    total = time.perf_counter() - started
    learners = [i for i, r in enumerate(rollouts) if not r.member.teacher]
    line: dict[str, Any] = {"iteration": iteration, **parts}
    played = [rollouts[i] for i in learners]
    line.update(
        runlog.episode_metrics(
            [cards[i] for i in learners], [r.trajectory for r in played], [r.task for r in played]
        )
    )
    line["reward"] = line.get("goal_rate" if config.credit == "outcome" else "composite", 0.0)
    line["seconds"] = round(total, 4)
    line["tokens_per_s"] = round(timing.tokens / timing.generation, 1) if timing.generation else 0.0
    line["batch_tokens"] = sum(len(s.ids) for s in samples)  # what the updates ran over
    if config.share_prefix:  # row-tokens the policy's forwards did not compute again
        line["shared_tokens"] = policy.shared_tokens - spared
    line["share"] = {
        "generation": round(timing.generation / total, 4),
        "environment": round(timing.environment / total, 4),
        "scoring": round(scoring / total, 4),
        "continuations": round(continuing / total, 4),
        "backward": round(backward / total, 4),
    }
    return line


def train(config: GRPOConfig) -> Path:
    """Run (or resume) GRPO; returns the run directory."""
    import torch

    if config.group < 2:
        raise UsageError("a group needs at least two episodes to compare")
    check_device(config.device)
    check_start(config.init, trained=True)
    check(config)
    note_rendering(config)
    torch.set_num_threads(max(1, config.threads))
    with runlog.holding(config) as run:
        _train(config)
    return run


def _reference(config: GRPOConfig, resume: checkpoint.Resume | None) -> Policy | None:
    """The KL reference: the start model, frozen (``None`` without ``kl``). A resume loads
    ``--init`` again, with or without ``kl``, and refuses it unless it is still the model
    the run started from (its ``--init RUN`` may have been resumed or trained again since:
    :func:`stategym.train.checkpoint.load_start`)."""
    reference = None if resume is None else checkpoint.load_start(config, resume)
    if config.kl <= 0:
        return None
    if reference is None:
        reference = Policy.load(model_source(config.init), device=config.device, dtype=config.dtype)
    reference.model.requires_grad_(False)
    reference.share_prefix = config.share_prefix
    return reference


def _train(config: GRPOConfig) -> None:
    """The run (module docstring), its directory held by the caller."""
    import torch

    run = runlog.open_run(config)
    resume = checkpoint.resume_point(run, config)
    source = model_source(config.init) if resume is None else str(resume.folder)
    start = 0 if resume is None else resume.iteration
    policy = Policy.load(source, device=config.device, dtype=config.dtype)
    policy.share_prefix = config.share_prefix
    if resume is not None:
        checkpoint.check_tokenizer(resume, policy)
    reference = _reference(config, resume)
    optimiser = torch.optim.AdamW(policy.model.parameters(), lr=config.lr, weight_decay=0.0)
    if resume is not None:
        checkpoint.restore_optimiser(resume.folder, optimiser)
    else:
        write_start(run, {"model": start_model(policy)})
    runlog.truncate_metrics(run, start, config.eval_every)  # once the checkpoint has loaded
    with runlog.progress_bar(config.iterations, start, config.progress, "grpo") as advance:
        for iteration in range(start + 1, config.iterations + 1):
            with runlog.at_iteration(iteration):
                line = iterate(policy, reference, optimiser, config, iteration)
            runlog.require_finite(iteration, line["loss"])  # before it is logged or saved
            runlog.append_metrics(run, line)
            advance(f"goal {line['goal_rate']:.2f} R {line['composite']:.2f}")
            # evaluate before saving: a checkpoint covers its iteration's evaluation
            if config.eval_every and iteration % config.eval_every == 0:
                runlog.append_metrics(
                    run, {"iteration": iteration, "eval": evaluate(policy, config)}
                )
            if iteration % config.save_every == 0 or iteration == config.iterations:
                runlog.require_finite(iteration, line["loss"], policy.model)
                with runlog.at_iteration(iteration):
                    policy.probe()  # finite weights, infinite logits: a resume would refuse it
                checkpoint.save(run, iteration, policy, optimiser, config)
    final = checkpoint.latest(run)
    if final is not None:
        checkpoint.publish(run, final)
    if not config.eval_every:
        runlog.append_metrics(
            run, {"iteration": config.iterations, "eval": evaluate(policy, config)}
        )


__all__ = ["call_scales", "group_advantages", "iterate", "members", "sample_of", "train", "update"]
