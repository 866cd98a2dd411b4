"""The experiments that need training runs, and the line each one refuses with.

E1, E2 and E4 are wired to the trainer (:mod:`stategym.experiments.e1`, ``e2``, ``e4``), so
no experiment refuses today; E3's n-episode fine-tuning arm is not wired yet, and E3 writes
that note instead of numbers it did not measure.
"""

from __future__ import annotations

NEEDS_TRAINING: dict[str, str] = {}
"""Experiment name -> the one line the command refuses it with."""
FINE_TUNING = (
    "e3's n-episode fine-tuning arm (n in 8, 32, 128) needs stategym.train runs and is not "
    "wired yet; this run has the zero-shot arm only (k-shot needs an LLM agent)"
)
"""The note E3 writes about the arm it leaves out."""
