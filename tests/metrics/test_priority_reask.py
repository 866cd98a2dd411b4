"""The priority order asked again once a hidden wish's slot is told is no needless question.

The user ranks a wish on a hidden slot only after that slot was told (docs/environment.md: its
existence can give the value away), so an agent that asks what matters most before the facts
gets a shorter order; asking again after the facts must cost nothing (docs/metrics.md, D1).
"""

from __future__ import annotations

from stategym import Knobs
from stategym.kernel.env import Env
from stategym.kernel.protocol import Say
from stategym.kernel.task import SlotKind
from stategym.metrics import Kind, score
from stategym.metrics.gold import PRIORITIES
from stategym.registry import get_domain

PRIORITY_QUESTION = "If you can't have everything, what matters most to you?"


KNOBS = Knobs(dynamics=False)  # no change of mind between the questions


def _bank_seed() -> int:
    """A bank task whose priority order must be asked and whose conversion slot is hidden
    and carries a wish."""
    for seed in range(200):
        env = Env("bank", knobs=KNOBS)
        env.reset(seed=seed)
        task = env.task
        hidden = {s.name for s in task.slots if s.kind is SlotKind.MISSING}
        if {"priorities", "conversion"} <= hidden and any(
            c.topic == "conversion" for c in task.constraints
        ):
            return seed
    raise AssertionError("no bank task with a hidden conversion wish in 200 seeds")


def _needless_orders(*messages: str) -> list[int]:
    env = Env("bank", knobs=KNOBS)
    env.reset(seed=_bank_seed())
    for message in messages:
        env.step(Say(message))
    card = score(env.trajectory, env.task)
    return [e.round for e in card.events if e.kind is Kind.ASK_NEEDLESS and e.subject == PRIORITIES]


def _ask(slot: str) -> str:
    return f"What about {get_domain('bank').slot_phrases[slot][0]}?"


def test_the_order_asked_again_after_a_hidden_wish_is_told_is_not_needless() -> None:
    first, told, again = PRIORITY_QUESTION, _ask("conversion"), PRIORITY_QUESTION
    env = Env("bank", knobs=KNOBS)
    env.reset(seed=_bank_seed())
    replies = [env.step(Say(m)).observation.user or "" for m in (first, told, again)]
    assert len(replies[2]) > len(replies[0])  # the second order ranks one wish more
    assert _needless_orders(first, told, again) == []


def test_the_order_asked_again_with_nothing_told_is_needless() -> None:
    assert _needless_orders(PRIORITY_QUESTION, PRIORITY_QUESTION) == [1]


def test_a_third_order_after_nothing_new_is_needless() -> None:
    messages = (PRIORITY_QUESTION, _ask("conversion"), PRIORITY_QUESTION, PRIORITY_QUESTION)
    assert _needless_orders(*messages) == [3]
