"""The experiments of issue 12: the project's claims measured, one command each.

``stategym experiment NAME --smoke|--quick|--standard|--full --seeds 0,1,2 --out DIR`` runs
one of them and writes a run directory: ``results.json`` (the configuration, every estimate
with its 95% interval, the CPU time), ``raw.json`` (the per-task numbers the estimates come
from), ``table.md`` and ``plots/*.png|svg``. The experiments that train (E1-E4) also keep
their arms under ``runs/`` and their configuration in ``experiment.json``
(:func:`.output.claim`: a rerun resumes only at the same configuration).

- :mod:`.e0`: final-answer success and decision quality disagree (scripted agents).
- :mod:`.e1`: outcome-only vs step-level credit, irreversible vs the stateless control
  (GRPO arms from one SFT start).
- :mod:`.e2`: SFT on the oracle vs the expert vs oracle-SFT then GRPO, on must-ask slots.
- :mod:`.e3`: score against tool-topology distance for zero-shot baselines (the protocol);
  :mod:`.e3_finetune`: the same measures for the tiny model after SFT on n expert episodes.
- :mod:`.e4`: token-level outcome GRPO vs round-aware credit, on parallel rounds.

Shared pieces: :mod:`.configs` (a frozen dataclass per experiment per budget),
:mod:`.arms` (the trainer's Python API per seed, and per-task held-out scoring),
:mod:`.intervals` (bootstrap over seeds and tasks), :mod:`.plots`, :mod:`.output`.
"""

from __future__ import annotations

EXPERIMENTS: tuple[str, ...] = ("e0", "e1", "e2", "e3", "e4")
"""Every experiment name the command takes."""
