"""The exploration-guard teacher: the expert that asks each must-ask fact with probability p.

A policy that never asks gets no gradient towards asking: none of its episodes contains a
question to reinforce. The guard mixes some teacher episodes into each GRPO group; this
teacher is the expert with one habit made random, so the dose of asking is a knob:
``ask-p0.3`` asks each fact only the user knows (and the priority order, when the expert
would ask for it) with probability 0.3 and guesses the others as ``ask-nothing`` does.
``ask-p0`` plays exactly like ``ask-nothing`` on every task, ``ask-p1`` like ``expert``.

The draw is deterministic given the episode's task: fact ``s`` of task ``(domain, seed)``
is asked when ``u(domain, seed, s) < p``, with ``u`` a hash-uniform number in ``[0, 1)``.
The same ``u`` serves every ``p``, so raising ``p`` only adds questions (the draws are
coupled), and two runs of one task ask the same facts.
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import replace

from stategym.kernel.domain import Domain
from stategym.kernel.task import SlotKind, Task

from .base import Agent, AgentFactory
from .style import Style

PREFIX = "ask-p"
"""Guard teachers are named ``ask-pP`` with ``P`` a probability (``ask-p0.25``)."""
_NAME = re.compile(r"^ask-p(0(?:\.\d+)?|1(?:\.0+)?|\.\d+)$")


def guard_probability(name: str) -> float | None:
    """The ask probability a guard teacher's name states, or ``None`` for any other name.

    >>> guard_probability("ask-p0.3"), guard_probability("ask-p1"), guard_probability("expert")
    (0.3, 1.0, None)
    """
    match = _NAME.match(name)
    return float(match.group(1)) if match else None


def draw(task: Task, slot: str) -> float:
    """The hash-uniform number in ``[0, 1)`` that decides whether ``slot`` is asked."""
    digest = hashlib.blake2b(f"guard:{task.domain}:{task.seed}:{slot}".encode(), digest_size=8)
    return int.from_bytes(digest.digest(), "big") / 2**64


def must_ask(task: Task) -> tuple[str, ...]:
    """The facts only the user knows in ``task`` (its missing slots), in slot order."""
    return tuple(s.name for s in task.slots if s.kind is SlotKind.MISSING)


def skipped(task: Task, p: float) -> frozenset[str]:
    """The facts a teacher with ask probability ``p`` leaves unasked in ``task``.

    Every slot is drawn, not only the missing ones: the expert also asks for the priority
    order whenever it does not know it and the order decides (whatever the slot's kind), and
    a drawn fact the request gives is known anyway, so skipping it changes nothing.
    """
    names = {s.name for s in task.slots} | {"priorities"}
    return frozenset(s for s in names if draw(task, s) >= p)


def guard_teacher(domain: Domain, name: str, p: float) -> AgentFactory:
    """The factory of the teacher ``name`` that asks each must-ask fact with probability ``p``.

    Raises:
        ValueError: ``p`` outside ``[0, 1]``.
    """
    if not 0.0 <= p <= 1.0:
        raise ValueError(f"ask probability {p} is outside [0, 1]")

    def make(task: Task) -> Agent:
        agent = domain.expert(task, replace(Style(), skip=skipped(task, p)))
        agent.name = name
        return agent

    return make


__all__ = ["PREFIX", "draw", "guard_probability", "guard_teacher", "must_ask", "skipped"]
