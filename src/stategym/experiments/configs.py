"""One frozen configuration per experiment per budget (``smoke``, ``quick``, ``standard``,
``full``).

``smoke`` proves the pipeline writes every file in seconds and is never quoted; ``quick`` is
the laptop-CPU run the docs' figures come from; ``standard`` and ``full`` scale the task
counts (E0 and E3 play scripted agents, so no GPU is involved) and, for E2, the training
budget (:class:`~stategym.experiments.arms.Recipe`).
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any, Literal

from stategym.agents import agent_names
from stategym.experiments.arms import Recipe
from stategym.metrics.taskset import MIXED
from stategym.registry import all_domains
from stategym.train.config import Credit

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
        llm_agents: LLM agents played after them (``hf:PATH`` for a trained tiny policy,
            ``openai:MODEL``), on the same tasks.
        llm_options: the LLM agents' options, as pairs.
    """

    budget: Budget
    tasks: int
    knobs: str = "mixed"
    resamples: int = 1000
    domains: tuple[str, ...] = ()
    agents: tuple[str, ...] = ()
    llm_agents: tuple[str, ...] = ()
    llm_options: tuple[tuple[str, Any], ...] = ()

    def domain_names(self) -> tuple[str, ...]:
        return self.domains or tuple(all_domains())

    def agent_names(self) -> tuple[str, ...]:
        return (*(self.agents or agent_names()), *self.llm_agents)


FINETUNE = Recipe(sft_steps=80, vocab=1024, max_length=4096, share_prefix=True)
"""E3's fine-tuning recipe unless a budget says otherwise: a 1,024-token vocabulary and a
4,096-token context, since the training topology's prompt alone is about 1,100 tokens with
400 (about 600 with 1,024) and the far domains' prompts run to about 1,850 (measured on
one expert episode per cell); the demonstrations' common prefix (the system prompt) runs
once per SFT batch."""


@dataclass(frozen=True, slots=True)
class E3Config:
    """E3: zero-shot and n-episode fine-tuned policies across the protocol's splits and
    distance bands.

    Attributes:
        budget: which budget this is.
        episodes: evaluation seeds per cell and seed block; seed ``s`` plays evaluation
            seeds ``EVAL_SEED + s*episodes ..`` (independent blocks).
        agents: scripted agents played (zero-shot; k-shot needs an LLM agent).
        train: the training topology the distances are measured from.
        probes: counterfactual probe pairs per domain.
        compositions: cells in the composition split.
        resamples: bootstrap resamples.
        recipe: the fine-tuning arm's trainer settings (its ``sft_episodes`` is replaced by
            each ``n``; the same steps for every ``n``).
        finetune: the fine-tuning arm's demonstration counts ``n`` (empty: no such arm).
        per_band: cells kept per distance band, the first of each in the protocol's order
            (0: every cell; the smoke keeps one so that CI plays few cells).
        llm_agents: LLM agents of the k-shot arm (``openai:MODEL``, ``hf:PATH``; empty:
            the arm is not run), each played with every ``shots`` count of expert
            demonstrations of the training topology in context.
        shots: the k-shot arm's demonstration counts.
        llm_options: the LLM agents' options (``base_url``, ``temperature`` ...), as pairs.
    """

    budget: Budget
    episodes: int
    agents: tuple[str, ...] = ("expert", "oracle", "serial", "ask-nothing", "all-parallel")
    train: tuple[str, ...] = ("synth:chain2+fanout3+askgate+verifycommit+conflict",)
    probes: int = 4
    compositions: int = 4
    resamples: int = 1000
    recipe: Recipe = FINETUNE
    finetune: tuple[int, ...] = (8, 32, 128)
    per_band: int = 0
    llm_agents: tuple[str, ...] = ()
    shots: tuple[int, ...] = (0, 1, 3, 8)
    llm_options: tuple[tuple[str, Any], ...] = ()


@dataclass(frozen=True, slots=True)
class E1Config:
    """E1: GRPO arms by credit from one SFT start, irreversible vs the stateless control.

    Attributes:
        budget: which budget this is.
        recipe: the trainer settings every arm shares.
        episodes: held-out tasks per seed block (seed ``s``: task seeds ``s*episodes ..``).
        credits: the GRPO arms.
        demonstrators: the SFT start's demonstration mixture.
        resamples: bootstrap resamples.
    """

    budget: Budget
    recipe: Recipe
    episodes: int
    credits: tuple[Credit, ...] = ("outcome", "composite", "dense", "gigpo")
    demonstrators: str = "expert:1,ask-nothing:1"
    resamples: int = 1000


@dataclass(frozen=True, slots=True)
class E4Config:
    """E4: token-level outcome GRPO vs round-aware credit, from one SFT start.

    Attributes:
        budget: which budget this is.
        recipe: the trainer settings every arm shares.
        episodes: held-out tasks per seed block (seed ``s``: task seeds ``s*episodes ..``).
        credits: the GRPO arms.
        demonstrators: the SFT start's demonstration mixture.
        resamples: bootstrap resamples.
    """

    budget: Budget
    recipe: Recipe
    episodes: int
    credits: tuple[Credit, ...] = ("outcome", "dense", "gigpo")
    demonstrators: str = "expert:1,all-serial:1"
    resamples: int = 1000


@dataclass(frozen=True, slots=True)
class E2Config:
    """E2: SFT on the oracle vs SFT on the expert vs oracle-SFT then GRPO, on ask-or-act.

    Attributes:
        budget: which budget this is.
        recipe: the trainer settings every arm shares.
        episodes: held-out tasks per seed block and task set (seed ``s``: evaluation
            seeds ``s*episodes ..``; even seeds are the must-ask tasks).
        credit: GRPO's credit.
        guard: the exploration guard's teacher ("" off).
        fraction: the share of each group the teacher plays.
        resamples: bootstrap resamples.
    """

    budget: Budget
    recipe: Recipe
    episodes: int
    credit: Credit = "composite"
    guard: str = "ask-p1"
    fraction: float = 0.25
    resamples: int = 1000


_CYCLE = len(MIXED)
_SMOKE = Recipe(
    sft_steps=3, sft_episodes=4, width=32, vocab=300, iterations=2, tasks=1, group=2,
    updates=1, max_tokens=16, max_length=1536,  # the first reply starts near token 1,045 here
)  # fmt: skip

_E4 = Recipe(sft_steps=0, max_length=2048, share_prefix=True)

E0: dict[Budget, E0Config] = {
    "smoke": E0Config("smoke", tasks=_CYCLE, resamples=200),
    "quick": E0Config("quick", tasks=10 * _CYCLE),
    "standard": E0Config("standard", tasks=50 * _CYCLE),
    "full": E0Config("full", tasks=100 * _CYCLE),
}
E3: dict[Budget, E3Config] = {
    "smoke": E3Config(
        "smoke",
        episodes=2,
        agents=("expert", "serial"),
        probes=1,
        resamples=200,
        recipe=replace(_SMOKE, vocab=1024, max_length=2048, share_prefix=True),
        finetune=(2, 4),
        per_band=1,
    ),
    # 4 evaluation seeds per cell: with 10, the fine-tuned arms' greedy play (episodes that
    # mostly run to the round limit or the context) made the run about 53 CPU-minutes
    "quick": E3Config("quick", episodes=4),
    "standard": E3Config("standard", episodes=40, probes=10),
    "full": E3Config("full", episodes=100, probes=20),
}
E2: dict[Budget, E2Config] = {
    "smoke": E2Config("smoke", _SMOKE, episodes=2, fraction=0.5, resamples=200),
    # the learning test's settings (tests/train/test_learning.py), SFT shortened to 120 steps
    # and GRPO to 10 iterations so that 3 seeds fit the 30 CPU-minute budget
    "quick": E2Config("quick", Recipe(sft_steps=120, iterations=10), episodes=16),
    "standard": E2Config("standard", Recipe(sft_steps=160, iterations=24), episodes=32),
    "full": E2Config("full", Recipe(sft_steps=160, iterations=48, width=128), episodes=64),
}
E1: dict[Budget, E1Config] = {
    "smoke": E1Config("smoke", _SMOKE, episodes=2, credits=("outcome", "gigpo"), resamples=200),
    # not measured: 2 settings x 4 credits x 3 seeds = 24 GRPO runs; sized by E2's costs
    "quick": E1Config("quick", Recipe(sft_steps=80, iterations=6, tasks=2), episodes=8),
    "standard": E1Config("standard", Recipe(sft_steps=120, iterations=12), episodes=16),
    "full": E1Config("full", Recipe(sft_steps=160, iterations=48, width=128), episodes=64),
}
E4: dict[Budget, E4Config] = {
    "smoke": E4Config(
        "smoke",
        replace(_SMOKE, share_prefix=True),
        episodes=2,
        credits=("outcome", "dense"),
        resamples=200,
    ),
    # 2,048 tokens of context: an expert episode of synth:chain2+fanout3 is about 1,550 tokens
    # with the 400-id tokenizer, and a 1,024-token context cut every demonstration to its first
    # ~8 policy tokens (measured: 64 loss tokens per SFT step of 8; the policy never called a
    # tool, 0 rounds in every arm)
    # the batch's common prefix runs once per training forward (share_prefix; the 36
    # CPU-minute run above was without it)
    "quick": E4Config("quick", replace(_E4, sft_steps=80, iterations=6, tasks=2), 8),
    "standard": E4Config("standard", replace(_E4, sft_steps=120, iterations=12), episodes=16),
    "full": E4Config("full", replace(_E4, sft_steps=160, iterations=48, width=128), episodes=64),
}
