"""Running one episode on a ready environment: the rollout engine's blocking helpers.

Kept so ``from stategym.runner import run_episode`` keeps working; the loop itself is
:mod:`stategym.rollout.play`.
"""

from __future__ import annotations

from stategym.rollout.play import play, run_episode, run_episodes

__all__ = ["play", "run_episode", "run_episodes"]
