"""How a scripted agent behaves, as independent, composable switches.

Every domain's expert honours a :class:`Style`; the baseline and pathological agents are the
expert with one habit changed, so each abuses exactly one dimension of decision quality.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal


@dataclass(frozen=True, slots=True)
class Style:
    """One scripted agent's habits (the defaults are the expert's)."""

    ask: Literal["needed", "nothing", "everything"] = "needed"
    """Ask exactly the missing facts, none (guess them), or every fact the domain has."""
    privileged: bool = False
    """Know the hidden facts (final values, true priorities) without asking."""
    batching: Literal["safe", "serial", "guess"] = "safe"
    """Parallel where values are independent, one call per round, or parallel with guessed
    values in place of ones not yet returned."""
    verify: Literal["before", "same_round", "skip"] = "before"
    """Check the fresh price/availability in a round before committing, in the same round as
    the commit (guessing the check's id), or not at all."""
    confirm: Literal["once", "skip", "spam"] = "once"
    """Propose the choice to the user before committing: once, never, or repeatedly."""
    commit: Literal["once", "never", "shotgun"] = "once"
    """Commit the choice once, never, or commit several options so one fits."""
    spray: int = 0
    """Extra speculative calls added to every lookup round."""
    first_fit: bool = False
    """Take the first option that looks feasible instead of the best one."""
    skip: frozenset[str] = frozenset()
    """Facts only the user knows that this agent leaves unasked, guessing them as an agent
    that asks nothing does (``priorities`` among them: it never asks for the order); the
    exploration-guard teacher (:mod:`stategym.agents.guard`) draws them per task."""

    # the adversaries (issue 10): the expert with one exploit added, played by
    # stategym.agents.adversary for every domain alike; the domain experts ignore these
    fish: int = 0
    """Before proposing its choice, propose this many options the user rejects."""
    pad: Literal["none", "empty", "invalid", "open", "bad-finish"] = "none"
    """Play empty rounds instead of finishing, or ten invalid rounds before finishing, or
    open questions instead of finishing, or ten malformed ``finish`` rounds before finishing."""
    damage: bool = False
    """After the last commit, destroy what the episode created (delete the snapshot...)."""
    harvest: bool = False
    """After each change of the world, re-read something the change did not touch."""
    lucky: bool = False
    """Play the expert's rounds with each read-only round merged into the one before,
    guessing (rightly) every value it would have waited for."""
    misreport: bool = False
    """End with a ``finish`` answer that reports done an option that was not done."""

    @property
    def adversarial(self) -> bool:
        """Some habit above is on (the agent is the expert wrapped by an adversary)."""
        return bool(
            self.fish
            or self.pad != "none"
            or self.damage
            or self.harvest
            or self.lucky
            or self.misreport
        )
