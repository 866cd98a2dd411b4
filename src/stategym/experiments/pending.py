"""The experiments that need training runs, and the line each one refuses with.

E4 (token-level GRPO vs round-aware credit on parallelism) compares trained policies, as
does E3's n-episode fine-tuning arm. E1 and E2 are wired to the trainer
(:mod:`stategym.experiments.e1`, :mod:`stategym.experiments.e2`); these are not yet, so the
command refuses them instead of printing numbers it did not measure.
"""

from __future__ import annotations

NEEDS_TRAINING: dict[str, str] = {
    "e4": (
        "e4 needs stategym.train runs (token-level outcome GRPO vs round-aware credit) and is "
        "not wired to the trainer yet; train the arms with `stategym train grpo` for now"
    ),
}
"""Experiment name -> the one line the command refuses it with."""
FINE_TUNING = (
    "e3's n-episode fine-tuning arm (n in 8, 32, 128) needs stategym.train runs and is not "
    "wired yet; this run has the zero-shot arm only (k-shot needs an LLM agent)"
)
"""The note E3 writes about the arm it leaves out."""
