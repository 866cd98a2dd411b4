"""E3's n-episode fine-tuning arm: SFT on n expert episodes of the training topology, then
the protocol's cells, scored like the zero-shot arm.

Per training seed ``s`` and each ``n`` in ``config.finetune``: the tiny model (built from
scratch, its tokenizer trained on the demonstrations) is fine-tuned with
:func:`stategym.experiments.arms.sft` on ``n`` expert episodes of the training topology
(task seeds from :func:`~stategym.experiments.arms.first_seed`, far above the evaluation
seeds), the compact rendering with handles, the same number of optimiser steps for every
``n`` (so the arms differ in data only). The final policy is played greedily, in one
lock-step batch, on every cell of the protocol on seed block ``s``'s evaluation seeds: the
same tasks the zero-shot agents play, so the comparison is paired.

Its episodes are tagged as the protocol tags an agent's (``run.role = "agent"``,
``meta`` = split, cell, shots 0) and joined with the expert's plan and reference episodes of
the same block, so :func:`stategym.topology.report.build_report` computes the collapse
index, template attraction and per-dimension gaps exactly as for a protocol run, and
:func:`stategym.experiments.e3.summarise` gives the bands, the slope of R on distance and
their intervals. What is left out: the counterfactual probes, whose flipped task the
lock-step player cannot take (the report's ``probes`` is empty for these arms).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path

import numpy as np
from numpy.typing import NDArray

from stategym.experiments import arms, e3
from stategym.experiments.configs import E3Config
from stategym.experiments.output import claim
from stategym.kernel.errors import UsageError
from stategym.kernel.knobs import Knobs
from stategym.kernel.trajectory import RunRecord, Trajectory
from stategym.topology.generalisation import ProtocolConfig, ProtocolRun, run_protocol
from stategym.topology.report import build_report
from stategym.topology.split import Cell

DEMONSTRATOR = "expert"
NOTE = (
    "fine-tuned policies: counterfactual probes not played (the lock-step player takes "
    "registered tasks only)"
)
"""The note each fine-tuned arm's protocol reports carry."""


def arm_name(n: int) -> str:
    """The arm's name in tables and files: ``sft-n8``."""
    return f"sft-n{n}"


def protocol_config(config: E3Config, block: int) -> ProtocolConfig:
    """The protocol settings of one seed block, as the zero-shot arm plays them."""
    return ProtocolConfig(
        agent=DEMONSTRATOR,
        train=config.train,
        episodes=config.episodes,
        seed=e3.first_seed(config, block),
        probes=0,
        compositions=config.compositions,
    )


def train_arm(config: E3Config, seed: int, n: int, out: Path, knobs: Knobs) -> Path:
    """SFT of the tiny model on ``n`` expert episodes of the training topology (with the
    evaluation's ``knobs``); its run directory (``OUT/runs/seed-S/sft-nN``, resumed on a
    re-run)."""
    recipe = replace(config.recipe, sft_episodes=n)
    where = {"domain": config.train[0], "knobs": knobs.describe()}
    return arms.sft(recipe, out / "runs" / f"seed-{seed}" / arm_name(n), seed, DEMONSTRATOR, where)


def largest_task_seed(config: E3Config, seed: int) -> int:
    """The largest task seed ``--seeds`` value ``seed`` makes E3 play: its block's
    evaluation seeds (every arm plays them) or the largest fine-tuning arm's SFT seeds. The
    protocol's other seeds stay small (plan episodes and k-shot demonstrations from 0) or
    stop at the last seed there is (the probes' search)."""
    most = replace(config.recipe, sft_episodes=max(config.finetune, default=0))
    return arms.largest_seed(e3.evaluation_seeds(config, seed), arms.sft_seeds(most, seed))


def expert_side(protocol: ProtocolConfig, cells: Sequence[Cell]) -> list[Trajectory]:
    """The expert's plan (training topology) and reference (every cell) episodes."""
    played = run_protocol(protocol, cells)
    return [t for t in played.trajectories if t.run.role in ("plan", "reference")]


def _tag(trajectory: Trajectory, cell: Cell) -> Trajectory:
    meta = {**trajectory.meta, "split": str(cell.split), "cell": cell.domain, "shots": 0}
    return replace(trajectory, run=RunRecord(role="agent"), meta=meta)


def play_block(
    trained: Path, config: E3Config, cells: Sequence[Cell], block: int, knobs: Knobs
) -> tuple[list[Trajectory], list[list[float]]]:
    """The policy's tagged episodes on every cell (cells in order, then seed) and their
    ``e3.MEASURES``."""
    where = [(c, s) for c in cells for s in e3.evaluation_seeds(config, block)]
    played = arms.episodes(trained, [(c.domain, s, knobs) for c, s in where], config.recipe, block)
    tagged = [_tag(p.trajectory, c) for p, (c, _) in zip(played, where, strict=True)]
    values = [[float(p.card.outcome.goal_reached), p.card.composite] for p in played]
    return tagged, values


def run(config: E3Config, seeds: Sequence[int], out: Path) -> e3.E3Result:
    """The zero-shot arm (:func:`stategym.experiments.e3.run`), then every fine-tuned arm on
    the same cells and seed blocks (training seed ``s`` is scored on seed block ``s``).

    Raises:
        UsageError: fine-tuning arms asked for with more than one training topology, or
            ``out`` holds another experiment or configuration
            (:func:`~stategym.experiments.output.claim`), before anything plays.
    """
    if config.finetune and len(config.train) != 1:
        raise UsageError(f"e3's fine-tuning arm trains on one topology, got {config.train}")
    claim(out, "e3", config)
    result = e3.run(config, seeds)
    cells = result.cells
    values: dict[int, list[list[list[float]]]] = {n: [] for n in config.finetune}
    reports: dict[int, list[dict]] = {n: [] for n in config.finetune}
    for seed in seeds:
        protocol = protocol_config(config, seed)
        expert = expert_side(protocol, cells) if config.finetune else []
        for n in config.finetune:
            trained = train_arm(config, seed, n, out, protocol.knobs)
            tagged, block = play_block(trained, config, cells, seed, protocol.knobs)
            mine = replace(protocol, agent=arm_name(n))
            reports[n].append(build_report(ProtocolRun(mine, cells, (*expert, *tagged), (NOTE,))))
            values[n].append(block)
    finetuned = {}
    for n in config.finetune:
        array: NDArray = np.asarray(values[n], dtype=np.float64)
        finetuned[arm_name(n)] = e3.summarise(config, cells, array, tuple(reports[n]))
    return replace(result, finetuned=finetuned)


__all__ = [
    "DEMONSTRATOR",
    "NOTE",
    "arm_name",
    "expert_side",
    "largest_task_seed",
    "play_block",
    "run",
    "train_arm",
]
