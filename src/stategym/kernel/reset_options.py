"""What ``Env.reset`` is told besides the seed: its options, and how a log names a task given
to it.

``options`` may give a task to play instead of the seed's (``{"task": Task}``) and a round
limit set from outside (``{"max_rounds": n}``); both are checked before the reset changes
anything. A given task the seed generates needs no mark in the log; its counterfactual
probe is named as the protocol names it (``run.probe``); any other is *given*, which the log
says, since nothing in it can regenerate the task (:func:`named_as`).
"""

from __future__ import annotations

from collections.abc import Mapping
from numbers import Integral
from typing import Any

from stategym.kernel.counterfactual import FLIP, generated_probe
from stategym.kernel.domain import Domain, installed_registry
from stategym.kernel.task import Task


def read_options(options: Any, domain: str) -> tuple[Task | None, int | None]:
    """The task ``reset``'s options give (``None``: generate one) and their round limit
    (``None``: the task's budget alone).

    Raises:
        TypeError: ``options`` is not a mapping, its ``task`` not a :class:`Task`, or its
            ``max_rounds`` (or the task's) not an integer.
        ValueError: a key other than ``task`` and ``max_rounds``, a task of another domain,
            or a limit (the option's or the task's) below 1.
    """
    if options is None:
        return None, None
    if not isinstance(options, Mapping):
        raise TypeError(f"options must be a mapping such as {{'task': task}}, got {options!r}")
    unknown = sorted(map(repr, set(options) - {"task", "max_rounds"}))
    if unknown:
        raise ValueError(
            f"unknown reset options: {', '.join(unknown)} (they are 'task' and 'max_rounds')"
        )
    task = options.get("task")
    if task is not None and not isinstance(task, Task):
        raise TypeError(f"options['task'] must be a Task, got {type(task).__name__} {task!r}")
    if task is not None and task.domain != domain:
        raise ValueError(f"options['task'] is a task of {task.domain!r}; this env plays {domain!r}")
    if task is not None:  # a hand-made task's budget, as the option's (audit 18A N1)
        check_max_rounds(task.max_rounds, "options['task'].max_rounds")
    limit = options.get("max_rounds")
    return task, None if limit is None else check_max_rounds(limit, "options['max_rounds']")


def check_max_rounds(limit: object, name: str = "max_rounds") -> int:
    """A round limit given from outside (``reset``'s ``max_rounds`` option), as an ``int``.

    Raises:
        TypeError: ``limit`` is not an integer (a bool is not one).
        ValueError: ``limit`` is below 1.
    """
    if isinstance(limit, bool) or not isinstance(limit, Integral):
        raise TypeError(f"{name} must be an integer, got {type(limit).__name__} {limit!r}")
    if limit < 1:
        raise ValueError(f"{name} must be at least 1, got {limit}")
    return int(limit)


def named_as(task: Task, domain: Domain) -> tuple[str | None, bool]:
    """How a log names a task given to ``reset``: ``(probe, given)``.

    The task its ``(domain, seed, knobs)`` generate needs nothing; their counterfactual probe
    is named as the protocol names it (``run.probe``); any other task is *given* (its log
    says so in ``meta["task"]``): replay and scoring then need the task itself (audit 16C
    F1: such a log was replayed and scored against the seed's task, the expert's perfect
    play as harmful).
    """
    generated = installed_registry().cached_task(domain.name, task.seed, task.knobs)
    if task is generated:
        return None, False
    flipped = generated_probe(domain.name, task.seed, task.knobs)
    if task is flipped:  # the rollout's probe: the same object, no deep comparison
        return FLIP, False
    if task == generated:
        return None, False
    if task == flipped:
        return FLIP, False
    return None, True
