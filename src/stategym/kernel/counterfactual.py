"""Counterfactual probes: the same task with one hidden value flipped.

The flipped value is the user's hidden priority order over their preferences: the world, the
request and every other fact stay as they were, the order is reversed, and the ground truth
is recomputed from the task's own satisfaction table. A probe is kept only when the flip
changes the right choice (no option is right under both orders), so an agent that decides
from what it was told (or asked) gets both tasks right, and one that plays a memorised order
gets at most one of them.

The flip needs the shared conventions of stategym's generators: a ``priorities`` slot whose
value lists the preference ids joined by ``>``, and those preferences forming a chain at the
bottom of the priority order (whatever the order above them). Tasks that lack them give no
probe. The gold call graph and decision points are rebuilt for the new best options by the
domain's ``regold`` hook, its generator's own gold-building code, where the domain has one
(meetings spells the choice out as room, day and start; bank as account and rail, with a rate
lock only on a converting route); otherwise gold-call arguments naming the best option ids
are rewritten in place, which is enough where the gold calls name the choice by its id.

A trajectory names the task it played in ``run.probe``
(:class:`~stategym.kernel.trajectory.RunRecord`); :func:`played_task` rebuilds that task from
the one its ``(domain, seed, knobs)`` generate, so replay and scoring see what was played. The
search for probe pairs is the protocol's (:mod:`stategym.topology.probes`).
"""

from __future__ import annotations

import functools
import itertools
from dataclasses import replace

from stategym.kernel.domain import Domain, GoldGraph, installed_registry, lookup
from stategym.kernel.errors import TrajectoryError
from stategym.kernel.knobs import Knobs
from stategym.kernel.task import (
    SlotKind,
    Task,
    Value,
    best_options,
    priority_weights,
)

PRIORITIES = "priorities"
FLIP = "priorities_reversed"
"""The probe's name, stamped in the trajectory's ``run.probe``."""


def _reversed_priority(
    priority: tuple[tuple[str, str], ...], prefs: list[str]
) -> tuple[tuple[str, str], ...] | None:
    """The priority edges with the chain of preferences at the bottom reversed, or ``None``
    if the preferences are not such a chain (``p1 > p2 > ... > pk``, nothing below ``pk``,
    only non-preferences above ``p1``)."""
    chain = set(itertools.pairwise(prefs))
    touching = [e for e in priority if e[0] in prefs or e[1] in prefs]
    inner = [e for e in touching if e[0] in prefs and e[1] in prefs]
    above = [e for e in touching if e[1] == prefs[0] and e[0] not in prefs]
    if set(inner) != chain or len(inner) + len(above) != len(touching):
        return None
    kept = [e for e in priority if e not in touching]
    flipped = prefs[::-1]
    return (*kept, *((high, flipped[0]) for high, _ in above), *itertools.pairwise(flipped))


def _swap(
    value: Value | tuple[Value, ...], old: tuple[str, ...], new: tuple[str, ...]
) -> Value | tuple[Value, ...]:
    if value == old:
        return new
    if isinstance(value, str) and old and value == old[0] and new:
        return new[0]
    return value


def _rewrite(task: Task, best: tuple[str, ...]) -> GoldGraph:
    """The task's gold graph with arguments naming its best option ids renamed to ``best``."""
    truth = task.truth
    calls = tuple(
        replace(c, args={k: _swap(v, truth.best, best) for k, v in c.args.items()})
        for c in truth.calls
    )
    decisions = tuple(
        replace(d, option=best[0] if d.option is not None else None) for d in truth.decisions
    )
    return calls, truth.edges, decisions


def flip_priorities(task: Task, domain: Domain | None = None) -> Task | None:
    """The task with its hidden preference order reversed, or ``None`` if that is no probe
    (the order is not hidden, not a chain, or some option is best under both orders).

    Args:
        task: the original task.
        domain: its domain, whose ``regold`` hook rebuilds the gold graph; looked up by the
            task's domain name when omitted.
    """
    try:
        slot = task.slot(PRIORITIES)
    except KeyError:
        return None
    prefs = [p for p in str(slot.value).split(">") if p]
    if slot.kind is not SlotKind.MISSING or len(prefs) < 2:
        return None
    priority = _reversed_priority(task.priority, prefs)
    if priority is None:
        return None
    weights = priority_weights(tuple(c.id for c in task.constraints), priority)
    truth = task.truth
    best = best_options(truth.satisfaction, truth.nothing_satisfies, weights)
    # Disjoint, not merely different: an option right under both orders would let an agent
    # that ignores the order get both tasks right, and its choice would not change.
    if not best or set(best) & set(truth.best):
        return None
    regold = (domain or lookup(task.domain)).regold
    calls, edges, decisions = _rewrite(task, best) if regold is None else regold(task, best)
    slots = tuple(
        replace(s, value=">".join(prefs[::-1])) if s.name == PRIORITIES else s for s in task.slots
    )
    before = truth.before_change
    new_truth = replace(
        truth,
        calls=calls,
        edges=edges,
        decisions=decisions,
        best=best,
        weights=weights,
        best_before_change=None
        if before is None
        else best_options(before, truth.nothing_satisfies, weights),
    )
    return replace(task, slots=slots, priority=priority, truth=new_truth)


@functools.lru_cache(maxsize=4096, typed=True)
def generated_probe(domain: str, seed: int, knobs: Knobs) -> Task | None:
    """The flipped twin (:func:`flip_priorities`) of the task ``(domain, seed, knobs)``
    generate, computed once as that task is (the registry's ``cached_task``, with the same
    bound and typed keys): a probe episode's task is rebuilt where the rollout makes it,
    where ``reset`` names it (:func:`~stategym.kernel.reset_options.named_as`) and where it
    is scored, and the flip costs a few times a reset."""
    return flip_priorities(installed_registry().cached_task(domain, seed, knobs))


def played_task(domain: str, seed: int, knobs: Knobs, probe: str | None) -> Task:
    """The task a trajectory of ``(domain, seed, knobs)`` whose ``run.probe`` is ``probe``
    played: the flipped task (:func:`generated_probe`) for :data:`FLIP`, else the task they
    generate (no probe, ``"original"``, or a name stategym defines no task for).

    Raises:
        TrajectoryError: ``probe`` is :data:`FLIP` but the task gives no probe (no trajectory
            played by ``stategym protocol`` can say so).
    """
    if probe != FLIP:
        return installed_registry().cached_task(domain, seed, knobs)
    flipped = generated_probe(domain, seed, knobs)
    if flipped is None:
        task = installed_registry().cached_task(domain, seed, knobs)
        raise TrajectoryError(f"{task.id} has no {FLIP} probe, yet run.probe names it")
    return flipped
