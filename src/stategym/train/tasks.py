"""Task families: documented presets on which a tiny model can learn a decision on a CPU.

A tiny model trained from scratch learns the protocol of an episode (turn structure, when to
ask) within minutes, but not content skills (copying multi-digit ids, comparing prices). A
family therefore fixes a domain whose content is trivial, the knobs, the rendering and the
seeds, so that what separates good from bad play is one decision.

``ask-or-act`` (training): the synthetic composition ``synth:askgate1`` (one source of three
to five options, one fact only the user knows: the budget; no chain, no confirmation step),
dynamics and priority conflicts off, the compact rendering (entities are the handles
``A``, ``B``...). Its knobs alternate by seed: on even seeds hidden information is on, the
request says "Keep it within my budget." and the right first move is to ask; on odd seeds
it states "My budget is $400." and the right first move is to act (look the options up).
``ask-nothing`` guesses on the first half, ``ask-everything`` asks needlessly on the second.

``ask-or-act-heldout``: the same tools, prompt and schedule on ``synth:askgate2``, where a
second fact (the category) is missing on even seeds: a state no ``ask-or-act``
demonstration shows (issue 12's E2: "different slots missing than in training").

What is simplified: the options' prices and categories are still numbers and words the
policy must compare to buy the right one; the decision to ask is what the family makes
learnable, not the choice among options.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

from stategym.kernel.knobs import Knobs
from stategym.kernel.task import Task
from stategym.kernel.trajectory import Trajectory
from stategym.rollout import EpisodeSpec, episode_specs

TRAIN_SEED = 1_000_000
"""First training seed of a family (evaluation uses seeds from 0, far below)."""


@dataclass(frozen=True, slots=True)
class TaskFamily:
    """One documented preset: a domain, a knob schedule over seeds, a rendering.

    Attributes:
        name: the family's name (``task_family(name)``).
        domain: registered domain or ``synth:<spec>``.
        base: the knobs every task has, before the schedule.
        alternate: the knob that is on for even seeds and off for odd ones (``""``: none).
        rendering: what the model reads.
        first_seed: the family's first seed (training families start far above 0).
    """

    name: str
    domain: str
    base: Knobs
    alternate: str = "hidden_info"
    rendering: str = "compact"
    first_seed: int = TRAIN_SEED

    def knobs(self, seed: int) -> Knobs:
        """The knobs of task ``seed``.

        >>> family = task_family("ask-or-act")
        >>> family.knobs(4).hidden_info, family.knobs(5).hidden_info
        (True, False)
        """
        if not self.alternate:
            return self.base
        return replace(self.base, **{self.alternate: seed % 2 == 0})

    def seeds(self, n: int, offset: int = 0) -> range:
        """``n`` consecutive seeds from ``first_seed + offset``."""
        start = self.first_seed + offset
        return range(start, start + n)

    def schedule(self, seeds: Iterable[int]) -> dict[int, Knobs]:
        """The knobs of each seed (what :func:`~stategym.rollout.episode_specs` takes)."""
        return {seed: self.knobs(seed) for seed in seeds}

    def specs(self, agent: str, seeds: Iterable[int], **options: Any) -> list[EpisodeSpec]:
        """Episode specs of ``agent`` on the family's tasks ``seeds``."""
        seeds = list(seeds)
        return episode_specs(self.domain, agent, seeds, self.schedule(seeds), options=options)

    def task(self, seed: int) -> Task:
        """Task ``seed`` of the family (cached by the registry)."""
        from stategym.registry import cached_task

        return cached_task(self.domain, seed, self.knobs(seed))


_EASY = Knobs(dynamics=False, priorities=False)
FAMILIES: Mapping[str, TaskFamily] = {
    "ask-or-act": TaskFamily("ask-or-act", "synth:askgate1", _EASY),
    "ask-or-act-heldout": TaskFamily("ask-or-act-heldout", "synth:askgate2", _EASY, first_seed=0),
}
"""The families :func:`task_family` knows (see the module docstring)."""


def setting(family: str, domain: str, knobs: str, seed: int) -> tuple[str, Knobs]:
    """The domain and knobs of task ``seed`` for a trainer's settings.

    With a family, its domain and its schedule (``family.knobs(seed)``); otherwise
    ``domain`` and ``knobs`` parsed (the same for every seed).

    >>> setting("ask-or-act", "travel", "default", 3)[1].hidden_info
    False
    """
    if family:
        chosen = task_family(family)
        return chosen.domain, chosen.knobs(seed)
    return domain, Knobs.parse(knobs)


def task_family(name: str) -> TaskFamily:
    """The family called ``name``.

    Raises:
        KeyError: an unknown family (the message lists the known ones).
    """
    if name not in FAMILIES:
        raise KeyError(f"unknown task family {name!r}; known: {', '.join(FAMILIES)}")
    return FAMILIES[name]


@dataclass(frozen=True, slots=True)
class Behaviour:
    """How one agent plays a set of episodes, in the numbers a family is judged by.

    Attributes:
        episodes: episodes played.
        must_ask: must-ask slots over all episodes (``sum(TP + FN)``).
        ask_rate: the pooled share of them asked before use (``None``: none to ask).
        needless: needless questions per episode (Q_clar's FP weight).
        r: mean composite R.
        goal: goal rate.
    """

    episodes: int
    must_ask: int
    ask_rate: float | None
    needless: float
    r: float
    goal: float


def behaviour(played: Sequence[tuple[Trajectory, Task]]) -> Behaviour:
    """The :class:`Behaviour` of played episodes (each with its task)."""
    from stategym.metrics.score import score

    cards = [score(t, task) for t, task in played]
    if not cards:
        raise ValueError("no episodes to measure")
    asked = sum(c.clarification.tp for c in cards)
    slots = asked + sum(c.clarification.fn for c in cards)
    n = len(cards)
    return Behaviour(
        episodes=n,
        must_ask=slots,
        ask_rate=asked / slots if slots else None,
        needless=sum(c.clarification.fp for c in cards) / n,
        r=sum(c.composite for c in cards) / n,
        goal=sum(c.outcome.goal_reached for c in cards) / n,
    )


def measure(family: TaskFamily, agent: str, seeds: Iterable[int]) -> Behaviour:
    """Play a scripted agent on the family's tasks ``seeds`` and measure it."""
    from stategym.rollout import Agents, play_in_order, spec_task

    played = [
        (t, spec_task(spec)) for spec, t in play_in_order(family.specs(agent, seeds), Agents())
    ]
    return behaviour(played)


__all__ = [
    "FAMILIES",
    "TRAIN_SEED",
    "Behaviour",
    "TaskFamily",
    "behaviour",
    "measure",
    "setting",
    "task_family",
]
