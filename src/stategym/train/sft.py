"""Supervised fine-tuning on demonstrations, top to bottom (``stategym train sft``).

1. Demonstrations (:mod:`stategym.train.data`): scripted agents (``expert``, the privileged
   ``oracle``, any styled agent, or a weighted mixture ``expert:3,oracle:1`` dealt to the
   seeds by a seeded shuffle) play ``episodes`` training tasks (seeds from ``first_seed``,
   knobs from ``family``'s schedule when set), or a run directory's logged episodes are read
   (``run:DIR``). Each is laid out as the token stream a policy playing it would have made
   (:func:`stategym.train.streams.demonstration`): loss only on the assistant turns.
2. Policy: ``tiny`` builds the from-scratch model, its tokenizer trained on these episodes
   in both renderings; otherwise a model folder or a Hugging Face id.
3. Steps: each iteration draws ``batch_size`` episodes (a generator seeded by the run's seed
   and the iteration) and takes one AdamW step on the mean negative log-likelihood of
   their loss tokens.
4. Every ``eval_every`` iterations a held-out evaluation of the greedy policy, then every
   ``save_every`` a checkpoint (resumable, ``hf:``-loadable; saved after the evaluation, so
   it covers it); at the end ``RUN/model`` (and the evaluation if not ``eval_every``). Each
   records the run's ``rendering`` (:func:`stategym.train.config.model_record`), which
   ``hf:`` then plays it in, as the held-out evaluation does.

A fresh run records its start model and, from ``run:DIR``, how many logged episodes it
learns from and their digest (``RUN/start.json``, :mod:`stategym.train.checkpoint`); a
resume learns from those same first episodes of the log (one that grew is read as it
began) and is refused when they changed (:func:`same_demonstrations`).
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from stategym.kernel.errors import UsageError
from stategym.llm.local import check_device
from stategym.train import checkpoint, data, runlog
from stategym.train.config import SFTConfig, check, note_rendering
from stategym.train.data import Demonstration
from stategym.train.evaluate import evaluate
from stategym.train.policy import Policy, TinySize, build_tiny
from stategym.train.start import check_start, model_source, start_model, write_start
from stategym.train.tasks import setting


def demonstrations(config: SFTConfig) -> list[Demonstration]:
    """The (trajectory, task) pairs to learn from (:mod:`stategym.train.data`).

    ``run:DIR`` reads a run's log; otherwise the mixture ``agents`` plays ``episodes``
    task seeds from ``first_seed``, dealt to the agents by a shuffle seeded by ``seed``,
    each with its knobs (the family's schedule when ``family`` is set).
    """
    if config.agents.startswith("run:"):
        folder = config.agents[4:]
        logged = data.run_demonstrations(Path(folder))
        if not logged:
            raise UsageError(f"--agents {config.agents}: the log holds no episode to learn from")
        domain = setting(config.family, config.domain, config.knobs, config.first_seed)[0]
        others = sorted({t.domain for t, _ in logged} - {domain})
        if others:
            raise UsageError(
                f"--agents {config.agents}: its episodes are of domain {', '.join(others)}, "
                f"but the run trains and evaluates on {domain}; give --domain "
                f"{others[0]} or a log of {domain}"
            )
        return logged
    seeds = range(config.first_seed, config.first_seed + config.episodes)
    schedule = {s: setting(config.family, config.domain, config.knobs, s) for s in seeds}
    domains = {domain for domain, _ in schedule.values()}
    if len(domains) != 1:  # a family or a domain: one domain either way
        raise UsageError(f"demonstrations from several domains {sorted(domains)}")
    knobs = {s: k for s, (_, k) in schedule.items()}
    return data.play_demonstrations(domains.pop(), config.agents, seeds, knobs, seed=config.seed)


def demonstrations_record(
    config: SFTConfig, episodes: Sequence[Demonstration]
) -> dict[str, dict[str, Any]]:
    """What a run from ``run:DIR`` records of its log at its start (``start.json``): how many
    episodes it learns from and a digest of them; nothing for scripted agents, whose
    episodes the code plays again from the seeds."""
    if not config.agents.startswith("run:"):
        return {}
    return {"demonstrations": {"episodes": len(episodes), "digest": episodes_digest(episodes)}}


def same_demonstrations(
    config: SFTConfig, episodes: list[Demonstration], start: dict[str, Any]
) -> list[Demonstration]:
    """The episodes a resumed run learns from: the first ``N`` of a ``run:DIR`` log, ``N``
    and their digest as the run recorded at its start. A log that only grew since (its run
    resumed) gives the same ``N`` episodes, so the run goes on as if uninterrupted.

    Raises:
        UsageError: naming the log, when its first ``N`` episodes are not those recorded.
    """
    import sys

    recorded = start.get("demonstrations")
    if recorded is None:
        return episodes
    count = recorded["episodes"]
    kept = episodes[:count]
    if len(kept) < count or episodes_digest(kept) != recorded["digest"]:
        raise UsageError(
            f"--agents {config.agents}: its log's first {count} episodes are not those this run "
            f"started from ({len(episodes)} now; changed or rewritten since); restore the log, "
            "or start the run again in another --out"
        )
    if len(episodes) > count:
        print(
            f"note: --agents {config.agents}: the log has grown to {len(episodes)} episodes; "
            f"the run goes on learning from the first {count}, as it started",
            file=sys.stderr,
        )
    return kept


def episodes_digest(episodes: Sequence[Demonstration]) -> str:
    """A digest of the episodes' logged lines, in order."""
    import hashlib

    from stategym.kernel.trajectory import dumps

    digest = hashlib.sha256()
    for trajectory, _ in episodes:
        digest.update(dumps(trajectory) + b"\n")
    return digest.hexdigest()


def make_policy(config: SFTConfig, episodes: Sequence[Demonstration]) -> Policy:
    """The start policy: built from scratch (its tokenizer trained on the episodes in both
    renderings, :func:`stategym.train.data.tokenizer_chats`) or loaded."""
    if config.init == "tiny":
        size = TinySize(config.tiny_vocab, config.tiny_width, 2, 4, 3 * config.tiny_width)
        return build_tiny(data.tokenizer_chats(episodes), config.seed, size)
    return Policy.load(model_source(config.init), dtype=config.dtype)


def train(config: SFTConfig) -> Path:
    """Run (or resume) SFT; returns the run directory."""
    import torch

    check_device(config.device)
    check_start(config.init, trained=False)
    check(config)
    note_rendering(config)
    torch.set_num_threads(max(1, config.threads))
    episodes = demonstrations(config)
    with runlog.holding(config) as run:
        _train(config, episodes)
    return run


def learnable(samples: Sequence[Any], max_length: int) -> None:
    """Refuse samples none of which keeps a loss token (a batch of them has no loss).

    Raises:
        UsageError: ``max_length`` cuts every episode before its first reply.
    """
    if not any(any(sample.loss_mask) for sample in samples):
        raise UsageError(
            f"--max-length {max_length} cuts every episode before its first reply (the system "
            "prompt and the tool list come first): nothing to learn from; give a larger "
            "--max-length"
        )


def _train(config: SFTConfig, episodes: list[Demonstration]) -> None:
    """The run (module docstring), its directory held by the caller."""
    import torch

    run = runlog.open_run(config)
    resume = checkpoint.resume_point(run, config)
    if resume is not None:
        episodes = same_demonstrations(config, episodes, resume.start)
        checkpoint.load_start(config, resume)  # --init is still the start model
        policy, start = Policy.load(resume.folder, dtype=config.dtype), resume.iteration
        checkpoint.check_tokenizer(resume, policy)
    else:
        policy, start = make_policy(config, episodes), 0
    # the tiny model is built in float32: --dtype applies to it as to a loaded model (and a
    # resumed run, which loads in config.dtype, continues in the dtype it started in)
    policy.model.to(device=config.device, dtype=getattr(torch, config.dtype))
    policy.share_prefix = config.share_prefix
    policy.device = config.device
    samples = data.sequences(episodes, policy.chat, config.rendering, config.max_length)
    learnable(samples, config.max_length)
    optimiser = torch.optim.AdamW(policy.model.parameters(), lr=config.lr, weight_decay=0.0)
    if resume is not None:
        checkpoint.restore_optimiser(resume.folder, optimiser)
    else:
        start_record = {"model": start_model(policy)}
        write_start(run, {**start_record, **demonstrations_record(config, episodes)})
    runlog.truncate_metrics(run, start, config.eval_every)  # once the checkpoint has loaded
    with runlog.progress_bar(config.iterations, start, config.progress, "sft") as advance:
        for iteration in range(start + 1, config.iterations + 1):
            line = step(policy, optimiser, samples, config, iteration)
            runlog.append_metrics(run, line)
            advance(f"loss {line['loss']:.3f}  {line['tokens_per_s']:.0f} tok/s")
            # evaluate before saving: a checkpoint covers its iteration's evaluation, so an
            # interrupted evaluation is played again on resume, never lost
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


def step(
    policy: Policy, optimiser: Any, samples: Sequence[Any], config: SFTConfig, iteration: int
) -> dict[str, Any]:
    """One AdamW step on a seeded draw of ``batch_size`` episodes."""
    import torch

    from stategym.train.batching import collate

    started = time.perf_counter()
    generator = checkpoint.iteration_generator(config.seed, iteration, "sft")
    picks = torch.randint(
        len(samples), (min(config.batch_size, len(samples)),), generator=generator
    )
    batch = collate([samples[i] for i in picks.tolist()], pad_id=policy.pad_id)
    policy.model.train()
    logp, _ = policy.forward(batch)
    mask = batch.loss_mask.to(logp.device)
    loss = -(torch.where(mask, logp, torch.zeros_like(logp)).sum() / mask.sum().clamp(min=1))
    optimiser.zero_grad(set_to_none=True)
    loss.backward()
    norm = torch.nn.utils.clip_grad_norm_(policy.model.parameters(), 1.0)
    # a non-finite loss or gradient would turn every weight NaN: stop before the step
    runlog.require_finite(iteration, float(loss.detach()))
    optimiser.step()
    policy.model.eval()
    seconds = time.perf_counter() - started
    tokens = int(batch.attention.sum())
    return {
        "iteration": iteration,
        "loss": float(loss.detach()),
        "grad_norm": float(norm),
        "tokens": tokens,
        "loss_tokens": int(mask.sum()),
        "seconds": round(seconds, 4),
        "tokens_per_s": round(tokens / seconds, 1) if seconds > 0 else 0.0,
    }


__all__ = [
    "demonstrations",
    "demonstrations_record",
    "episodes_digest",
    "learnable",
    "make_policy",
    "same_demonstrations",
    "step",
    "train",
]
