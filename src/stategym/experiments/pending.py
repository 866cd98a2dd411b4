"""The experiments that need training runs, and the line each one refuses with.

E1, E2 and E4 are wired to the trainer (:mod:`stategym.experiments.e1`, ``e2``, ``e4``), as
is E3's n-episode fine-tuning arm (:mod:`stategym.experiments.e3_finetune`), so no
experiment refuses today.
"""

from __future__ import annotations

NEEDS_TRAINING: dict[str, str] = {}
"""Experiment name -> the one line the command refuses it with."""
