"""One frozen configuration per experiment per budget (``smoke``, ``quick``, ``standard``,
``full``).

``smoke`` proves the pipeline writes every file in seconds and is never quoted; ``quick`` is
the laptop-CPU run the docs' figures come from; ``standard`` and ``full`` only scale the
task counts (E0 and E3 play scripted agents, so no GPU is involved).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from stategym.agents import agent_names
from stategym.metrics.taskset import MIXED
from stategym.registry import all_domains

Budget = Literal["smoke", "quick", "standard", "full"]
BUDGETS: tuple[Budget, ...] = ("smoke", "quick", "standard", "full")


@dataclass(frozen=True, slots=True)
class E0Config:
    """E0: every scripted agent on every domain, goal rate beside R.

    Attributes:
        budget: which budget this is.
        tasks: tasks per seed block; seed ``s`` plays task seeds ``s*tasks .. s*tasks +
            tasks - 1`` (a multiple of the mixed knob cycle, so every block has every knob
            setting equally often).
        knobs: knob schedule (``mixed``: every single knob off, all off and all on).
        resamples: bootstrap resamples.
        domains: domains played (empty: every registered domain).
        agents: agents played (empty: every scripted agent).
    """

    budget: Budget
    tasks: int
    knobs: str = "mixed"
    resamples: int = 1000
    domains: tuple[str, ...] = ()
    agents: tuple[str, ...] = ()

    def domain_names(self) -> tuple[str, ...]:
        return self.domains or tuple(all_domains())

    def agent_names(self) -> tuple[str, ...]:
        return self.agents or tuple(agent_names())


@dataclass(frozen=True, slots=True)
class E3Config:
    """E3: zero-shot baselines across the protocol's splits and distance bands.

    Attributes:
        budget: which budget this is.
        episodes: evaluation seeds per cell and seed block; seed ``s`` plays evaluation
            seeds ``EVAL_SEED + s*episodes ..`` (independent blocks).
        agents: scripted agents played (zero-shot; k-shot needs an LLM agent).
        train: the training topology the distances are measured from.
        probes: counterfactual probe pairs per domain.
        compositions: cells in the composition split.
        resamples: bootstrap resamples.
    """

    budget: Budget
    episodes: int
    agents: tuple[str, ...] = ("expert", "oracle", "serial", "ask-nothing", "all-parallel")
    train: tuple[str, ...] = ("synth:chain2+fanout3+askgate+verifycommit+conflict",)
    probes: int = 4
    compositions: int = 4
    resamples: int = 1000


_CYCLE = len(MIXED)

E0: dict[Budget, E0Config] = {
    "smoke": E0Config("smoke", tasks=_CYCLE, resamples=200),
    "quick": E0Config("quick", tasks=10 * _CYCLE),
    "standard": E0Config("standard", tasks=50 * _CYCLE),
    "full": E0Config("full", tasks=100 * _CYCLE),
}
E3: dict[Budget, E3Config] = {
    "smoke": E3Config("smoke", episodes=2, agents=("expert", "serial"), probes=1, resamples=200),
    "quick": E3Config("quick", episodes=10),
    "standard": E3Config("standard", episodes=40, probes=10),
    "full": E3Config("full", episodes=100, probes=20),
}
