"""Training arms of the experiments: the trainer's Python API, run per seed, then scored.

An *arm* is one training recipe (SFT on a demonstrator, GRPO with a credit) run once per
training seed. The experiments call :func:`stategym.train.sft.train` and
:func:`stategym.train.grpo.train` directly (not the CLI), each into its own run directory
under ``OUT/runs/seed-S/ARM``, so a re-run of the experiment resumes finished arms instead of
training them again (the trainer's resume rule). A trained policy is then played greedily
on held-out tasks and every episode is scored on its own (:func:`episodes`): the bootstrap
over seeds and tasks needs the per-task numbers, which the trainer's own held-out
evaluation (means only) does not keep.

Seeds: training seed ``s`` seeds the model's weights, the demonstrations' shuffle and the
sampling, and takes its training tasks from ``TRAIN_SEED + s * SEED_STRIDE`` (SFT) and
``... + GRPO_OFFSET`` (GRPO), so seeds never share a training task (:func:`sft_seeds`,
:func:`grpo_seeds`: what the run uses and what ``stategym experiment`` checks against the
last task seed before anything trains).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from stategym.kernel.knobs import Knobs
from stategym.kernel.task import Task
from stategym.kernel.trajectory import Trajectory
from stategym.metrics.score import Scorecard, score
from stategym.train.config import Credit
from stategym.train.tasks import TRAIN_SEED

SEED_STRIDE = 100_000
"""Training tasks of seed ``s`` start at ``TRAIN_SEED + s * SEED_STRIDE``."""
GRPO_OFFSET = 50_000
"""GRPO's tasks start this far above the seed's SFT tasks (no task seen in both)."""


@dataclass(frozen=True, slots=True)
class Recipe:
    """The trainer settings every arm of an experiment shares (one budget's).

    Attributes:
        sft_steps: SFT optimiser steps.
        sft_episodes: demonstration episodes.
        sft_lr: SFT learning rate.
        width: the tiny model's width.
        vocab: the tiny tokenizer's vocabulary.
        iterations: GRPO iterations.
        tasks: GRPO tasks per iteration.
        group: GRPO episodes per task.
        updates: PPO passes per iteration.
        lr: GRPO learning rate.
        max_tokens: most tokens per round.
        max_length: most tokens per episode.
        share_prefix: training forwards run the batch's common prefix once (equal up to
            rounding; ``stategym.train.policy.shared_prefix``).
        init: the start model: ``tiny`` (built here from scratch: ``width``, ``vocab``) or a
            Hugging Face model id or folder (a GPU run's ``--model``).
        device: torch device (``cuda`` on a GPU).
        dtype: weights' dtype (``bfloat16`` on a GPU).
    """

    sft_steps: int
    sft_episodes: int = 32
    sft_lr: float = 2e-3
    width: int = 64
    vocab: int = 400
    iterations: int = 12
    tasks: int = 4
    group: int = 8
    updates: int = 4
    lr: float = 3e-3
    max_tokens: int = 24
    max_length: int = 1024
    share_prefix: bool = False
    init: str = "tiny"
    device: str = "cpu"
    dtype: str = "float32"


def check_recipe(recipe: Recipe) -> None:
    """Refuse a device that is not there or a start model that cannot load, before the
    experiment claims its folder (:func:`stategym.experiments.output.claim`): refused only by
    the trainer, they would leave a record that refuses the corrected command.

    Raises:
        UsageError: naming the device or the model, in one line.
    """
    from stategym.llm.local import check_device
    from stategym.train.start import check_start

    check_device(recipe.device)
    check_start(recipe.init, trained=False, option="--model")


def first_seed(seed: int) -> int:
    """The first training task seed of training seed ``seed``."""
    return TRAIN_SEED + seed * SEED_STRIDE


def sft_seeds(recipe: Recipe, seed: int) -> range:
    """The task seeds SFT of training seed ``seed`` plays its demonstrations on (the
    trainer's ``episodes`` seeds from ``first_seed``: :func:`stategym.train.sft.demonstrations`)."""
    start = first_seed(seed)
    return range(start, start + recipe.sft_episodes)


def grpo_seeds(recipe: Recipe, seed: int) -> range:
    """The task seeds GRPO of training seed ``seed`` plays, every iteration's (the trainer's
    ``tasks`` seeds an iteration from ``first_seed``: :func:`stategym.train.grpo.members`;
    a test pins the two together)."""
    start = first_seed(seed) + GRPO_OFFSET
    return range(start, start + recipe.iterations * recipe.tasks)


def largest_seed(*spans: range) -> int:
    """The largest task seed of ``spans`` (-1 when every span is empty)."""
    return max((span[-1] for span in spans if span), default=-1)


def largest_trained_seed(recipe: Recipe, seed: int, held_out: range) -> int:
    """The largest task seed training seed ``seed`` makes an SFT-then-GRPO experiment play:
    its ``held_out`` tasks, or its SFT or GRPO training tasks."""
    return largest_seed(held_out, sft_seeds(recipe, seed), grpo_seeds(recipe, seed))


def _common(recipe: Recipe, out: Path, seed: int, where: dict[str, str]) -> dict[str, Any]:
    # the trainer's own end-of-run evaluation is kept to one episode: the experiments
    # score their policies themselves, per task (module docstring)
    return {
        "out": str(out), "seed": seed, "max_tokens": recipe.max_tokens,
        "max_length": recipe.max_length, "eval_episodes": 1, "save_every": 1000,
        "progress": False, "threads": 1, "share_prefix": recipe.share_prefix,
        "device": recipe.device, "dtype": recipe.dtype, **where,
    }  # fmt: skip


def sft(recipe: Recipe, out: Path, seed: int, agents: str, where: dict[str, str]) -> Path:
    """SFT of the tiny model on ``agents``' demonstrations; the run directory.

    ``where`` is ``{"family": NAME}`` or ``{"domain": D, "knobs": K}``.
    """
    from stategym.train.config import SFTConfig
    from stategym.train.sft import train

    config = SFTConfig(
        **_common(recipe, out, seed, where),
        agents=agents, episodes=recipe.sft_episodes, iterations=recipe.sft_steps,
        batch_size=8, lr=recipe.sft_lr, tiny_width=recipe.width, tiny_vocab=recipe.vocab,
        first_seed=sft_seeds(recipe, seed).start, init=recipe.init,
    )  # fmt: skip
    return train(config)


def grpo(
    recipe: Recipe, out: Path, seed: int, start: Path, credit: Credit, where: dict[str, str],
    guard: str = "", fraction: float = 0.0,
) -> Path:  # fmt: skip
    """GRPO from ``start`` (an SFT run) with ``credit`` (and the guard teacher when given)."""
    from stategym.train.config import GRPOConfig
    from stategym.train.grpo import train

    config = GRPOConfig(
        **_common(recipe, out, seed, where),
        init=str(start), credit=credit, tasks=recipe.tasks, group=recipe.group,
        updates=recipe.updates, minibatch=16, lr=recipe.lr, iterations=recipe.iterations,
        guard_teacher=guard, guard_fraction=fraction if guard else 0.0,
        first_seed=grpo_seeds(recipe, seed).start,
    )  # fmt: skip
    return train(config)


def curve(run: Path) -> list[dict[str, Any]]:
    """A GRPO run's per-iteration lines (``metrics.jsonl``, held-out lines left out)."""
    from stategym.train.runlog import read_metrics

    return [m for m in read_metrics(run) if "eval" not in m]


@dataclass(frozen=True, slots=True)
class Played:
    """One held-out episode of a trained policy: its log, its task and its scorecard."""

    trajectory: Trajectory
    task: Task
    card: Scorecard


def episodes(
    run: Path, tasks: Sequence[tuple[str, int, Knobs]], recipe: Recipe, seed: int
) -> list[Played]:
    """The run's final policy played greedily on ``tasks`` ``(domain, seed, knobs)``, in
    order, all in one lock-step batch; each episode scored."""
    from stategym.train.checkpoint import iteration_generator
    from stategym.train.group import Member, Sampling, play
    from stategym.train.policy import Policy
    from stategym.train.start import model_source

    policy = Policy.load(model_source(str(run)), device=recipe.device, dtype=recipe.dtype)
    members = [Member(domain, task_seed, knobs) for domain, task_seed, knobs in tasks]
    sampling = Sampling(0.0, recipe.max_tokens, recipe.max_length, "compact")
    rollouts, _ = play(policy, members, sampling, iteration_generator(seed, 0, "experiment"))
    return [Played(r.trajectory, r.task, score(r.trajectory, r.task)) for r in rollouts]


__all__ = [
    "GRPO_OFFSET",
    "SEED_STRIDE",
    "Played",
    "Recipe",
    "curve",
    "episodes",
    "first_seed",
    "grpo",
    "grpo_seeds",
    "largest_seed",
    "largest_trained_seed",
    "sft",
    "sft_seeds",
]
