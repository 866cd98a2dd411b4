"""Supervised fine-tuning on demonstrations, top to bottom (``stategym train sft``).

1. Demonstrations: scripted agents (``expert``, the privileged ``oracle``, any styled agent,
   or a weighted mixture ``expert:3,oracle:1``) play ``episodes`` training tasks (seeds from
   ``first_seed``), or a run directory's logged episodes are read (``run:DIR``). Each is laid
   out as the token stream a policy playing it would have made
   (:func:`stategym.train.streams.demonstration`): loss only on the assistant turns.
2. Policy: ``tiny`` builds the from-scratch model, its tokenizer trained on these episodes
   in the run's rendering; otherwise a model folder or a Hugging Face id.
3. Steps: each iteration draws ``batch_size`` episodes (a generator seeded by the run's seed
   and the iteration) and takes one AdamW step on the mean negative log-likelihood of
   their loss tokens.
4. Every ``save_every`` iterations a checkpoint (resumable, ``hf:``-loadable); at the end
   ``RUN/model`` and a held-out evaluation of the greedy policy.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from stategym.kernel.errors import UsageError
from stategym.train import checkpoint, runlog
from stategym.train.config import SFTConfig
from stategym.train.evaluate import evaluate
from stategym.train.policy import Policy, TinySize, build_tiny
from stategym.train.streams import demonstration, episode_chat, to_sample
from stategym.kernel.trajectory import Trajectory


def mixture(spec: str, episodes: int) -> list[tuple[str, int]]:
    """``NAME[:W],...`` as (agent, episodes) pairs, episodes shared by weight (largest
    remainder, ties to the earlier agent).

    >>> mixture("expert:3,oracle:1", 8)
    [('expert', 6), ('oracle', 2)]
    """
    pairs = []
    for item in spec.split(","):
        name, _, weight = item.strip().partition(":")
        pairs.append((name, float(weight) if weight else 1.0))
    total = sum(w for _, w in pairs)
    if not pairs or total <= 0 or any(w < 0 for _, w in pairs):
        raise UsageError(f"bad agent mixture {spec!r}; use NAME[:WEIGHT],...")
    exact = [episodes * w / total for _, w in pairs]
    counts = [int(x) for x in exact]
    order = sorted(range(len(pairs)), key=lambda i: (-(exact[i] - counts[i]), i))
    for i in order[: episodes - sum(counts)]:
        counts[i] += 1
    return [(name, n) for (name, _), n in zip(pairs, counts, strict=True)]


def demonstrations(config: SFTConfig) -> list[tuple[Trajectory, Any]]:
    """The (trajectory, task) pairs to learn from."""
    from stategym.agents import resolve
    from stategym.kernel.env import Env
    from stategym.kernel.knobs import Knobs
    from stategym.registry import cached_task
    from stategym.rollout import load_log, run_episode

    if config.agents.startswith("run:"):
        log = load_log(Path(config.agents[4:]) / "trajectories.jsonl")
        return [(t, cached_task(t.domain, t.seed, t.knobs)) for t in log.trajectories]
    env = Env(config.domain, knobs=Knobs.parse(config.knobs))
    out = []
    seed = config.first_seed
    for name, count in mixture(config.agents, config.episodes):
        factory = resolve(env.domain, name)
        for _ in range(count):
            out.append((run_episode(env, factory, seed), env.task))
            seed += 1
    return out


def make_policy(config: SFTConfig, episodes: Sequence[tuple[Trajectory, Any]]) -> Policy:
    """The start policy: resumed, built from scratch, or loaded."""
    from stategym.registry import get_domain
    from stategym.rendering import make_renderer

    if config.init == "tiny":
        chats = []
        for trajectory, task in episodes:
            renderer = make_renderer(
                get_domain(trajectory.domain), trajectory.knobs, config.rendering
            )
            chats.append(episode_chat(trajectory, task, renderer))
        size = TinySize(config.tiny_vocab, config.tiny_width, 2, 4, 3 * config.tiny_width)
        return build_tiny(chats, config.seed, size)
    return Policy.load(checkpoint.model_source(config.init), dtype=config.dtype)


def train(config: SFTConfig) -> Path:
    """Run (or resume) SFT; returns the run directory."""
    import torch

    torch.set_num_threads(max(1, config.threads))
    run = runlog.open_run(config)
    episodes = demonstrations(config)
    resume = checkpoint.latest(run)
    if resume is not None:
        policy, start = Policy.load(resume, dtype=config.dtype), checkpoint.iteration_of(resume)
        runlog.truncate_metrics(run, start, config.eval_every)
    else:
        policy, start = make_policy(config, episodes), 0
        runlog.truncate_metrics(run, 0)
    policy.model.to(config.device)
    policy.device = config.device
    samples = [
        to_sample(
            demonstration(t, task, policy.chat, config.rendering), max_length=config.max_length
        )
        for t, task in episodes
    ]
    optimiser = torch.optim.AdamW(policy.model.parameters(), lr=config.lr, weight_decay=0.0)
    if resume is not None:
        checkpoint.restore_optimiser(resume, optimiser)
    with runlog.progress_bar(config.iterations, start, config.progress, "sft") as advance:
        for iteration in range(start + 1, config.iterations + 1):
            line = step(policy, optimiser, samples, config, iteration)
            runlog.append_metrics(run, line)
            advance(f"loss {line['loss']:.3f}  {line['tokens_per_s']:.0f} tok/s")
            if iteration % config.save_every == 0 or iteration == config.iterations:
                checkpoint.save(run, iteration, policy, optimiser)
            if config.eval_every and iteration % config.eval_every == 0:
                runlog.append_metrics(
                    run, {"iteration": iteration, "eval": evaluate(policy, config)}
                )
    final = checkpoint.latest(run)
    if final is not None:
        checkpoint.publish(run, final)
        if not config.eval_every:
            runlog.append_metrics(
                run, {"iteration": config.iterations, "eval": evaluate(policy, config)}
            )
    return run


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


__all__ = ["demonstrations", "make_policy", "mixture", "step", "train"]
