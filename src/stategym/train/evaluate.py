"""Held-out evaluation during training: the greedy policy on evaluation seeds.

The tasks are seeds ``eval_seed .. eval_seed + eval_episodes - 1`` (far below the training
seeds; with a ``family``, each seed's knobs from its schedule), played in one lock-step
group at temperature 0, and summarised by
:func:`stategym.train.runlog.episode_metrics`: the scorecard numbers ``stategym eval``
averages (the ask rate ``None``, ``null`` in ``metrics.jsonl``, when the tasks have no
must-ask slot, as with ``hidden_info=off``). (``stategym eval --agents hf:RUN/model`` plays
the same policy one episode at a time through the ``hf:`` agent, and so also scores the
saved checkpoint.)
"""

from __future__ import annotations

from typing import Any

from stategym.metrics.score import score
from stategym.train.config import Config
from stategym.train.group import Member, Sampling, play
from stategym.train.policy import Policy
from stategym.train.runlog import episode_metrics
from stategym.train.tasks import setting


def evaluate(policy: Policy, config: Config) -> dict[str, Any]:
    """The held-out metrics of the greedy policy."""
    from stategym.train.checkpoint import iteration_generator

    seeds = range(config.eval_seed, config.eval_seed + config.eval_episodes)
    members = []
    for seed in seeds:
        domain, knobs = setting(config.family, config.domain, config.knobs, seed)
        members.append(Member(domain, seed, knobs))
    sampling = Sampling(0.0, config.max_tokens, config.max_length, config.rendering)
    rollouts, _ = play(policy, members, sampling, iteration_generator(config.seed, 0, "eval"))
    cards = [score(r.trajectory, r.task) for r in rollouts]
    return episode_metrics(cards, [r.trajectory for r in rollouts], [r.task for r in rollouts])


__all__ = ["evaluate"]
