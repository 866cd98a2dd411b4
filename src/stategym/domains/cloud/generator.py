"""Cloud task generator: a pure function of ``(seed, knobs)``.

The user's project is over its storage budget and one volume has to go. Which one is a choice
under a hard rule (never a volume in use by a running instance), a need (it must free enough
space), and ranked preferences (idle long enough, no detaching, the user's own team). Every
draw is made whatever the knobs say and the knobs are applied afterwards.
"""

from __future__ import annotations

import itertools
import random
from dataclasses import dataclass, replace
from typing import Literal

from stategym.generation import apply_sets, order_hidden, order_matters, with_user_tables
from stategym.kernel.domain import GoldGraph
from stategym.kernel.draws import randint, randrange
from stategym.kernel.knobs import Knobs
from stategym.kernel.task import (
    Event,
    EventKind,
    GroundTruth,
    Request,
    SlotKind,
    Task,
    best_options,
    priority_weights,
)

from .gold import gold_graph
from .request import PREFERENCES, owner_constraints, owner_slots, request_text
from .world import Account, CloudBase, CloudWorld, Instance, RetentionPolicy, Volume

TEAMS = ("data", "web", "ml", "infra", "mobile", "search")
USERS = ("Ana Lima", "Bo Chen", "Dee Park", "Eli Novak", "Farah Aziz", "Gus Moreau")
PROJECTS = ("atlas", "borealis", "cobalt", "delta", "ember", "fjord", "granite", "harbor")
TIERS = ("prod", "staging", "dev", "scratch")
SNAPSHOT_TIERS = (("prod",), ("prod", "staging"), ("prod", "staging", "dev"))
MACHINES = ("etl-worker", "api-server", "trainer", "build-box", "db-replica", "cache-node")
WINDOWS = ("tonight after ten", "Saturday morning", "any weekday evening", "Sunday night")
MAX_ROUNDS = 30


@dataclass(frozen=True, slots=True)
class Draw:
    """Everything random about one clean-up, before the knobs are applied."""

    account: Account
    policy: RetentionPolicy
    instances: dict[str, Instance]
    volumes: dict[str, Volume]
    need_gb: int
    idle_min: int
    window: str
    order: tuple[str, ...]
    shape: str  # "fits", "conflict" or "nothing"
    hidden: dict[str, bool]
    priorities_hidden: bool
    need_raise: int
    event_times: tuple[int, int, int]


@dataclass(frozen=True, slots=True)
class Needs:
    """What the user wants, as the truth is computed (after any change of mind)."""

    need_gb: int
    idle_min: int
    team: str


def generate(seed: int, knobs: Knobs) -> Task:
    """Generate the cloud task for ``seed`` under ``knobs``."""
    return _build(seed, knobs, _draw(seed))


def regold(task: Task, best: tuple[str, ...]) -> GoldGraph:
    """The gold call graph and delete decision of ``task`` rebuilt as if ``best`` were its best
    volumes (a counterfactual probe): the snapshot and detach writes follow the new volume.

    The graph is built from the task's own base world, not a fresh draw: a probe keeps that
    world, and its tiers were already unified for the original best (``_one_plan``), so only
    the base says which writes deleting a new best volume really needs.
    """
    if not isinstance(task.base, CloudBase):
        raise TypeError(f"not a cloud task: {task.domain}")
    must_ask = tuple(s.name for s in task.slots if s.kind is SlotKind.MISSING)
    return gold_graph(task.base, task.knobs, best, must_ask)


def _unique(rng: random.Random, prefix: str, low: int, high: int, taken: set[str]) -> str:
    while True:
        value = f"{prefix}{randint(rng, low, high)}"
        if value not in taken:
            taken.add(value)
            return value


def _draw(seed: int) -> Draw:
    rng = random.Random(f"cloud:{seed}")
    team = rng.choice(TEAMS)
    others = tuple(t for t in TEAMS if t != team)
    account = Account(
        rng.choice(USERS), team, f"prj{randint(rng, 1000, 9999)}", rng.choice(PROJECTS)
    )
    policy = RetentionPolicy(rng.choice(SNAPSHOT_TIERS), randint(rng, 2, 6))
    taken: set[str] = set()
    instances: dict[str, Instance] = {}
    states: tuple[Literal["running", "stopped"], ...] = ("stopped", "running")
    for state in (*states, rng.choice(states))[: randint(rng, 2, 3)]:  # one of each, at least
        iid = _unique(rng, "i", 10000, 99999, taken)
        instances[iid] = Instance(
            iid, rng.choice(MACHINES), state, team if rng.random() < 0.5 else rng.choice(others)
        )
    volumes: dict[str, Volume] = {}
    for _ in range(randint(rng, 5, 7)):
        vid = _unique(rng, "vol", 1000, 9999, taken)
        attached = rng.choice(list(instances)) if rng.random() < 0.35 else None
        volumes[vid] = Volume(
            vid,
            randrange(rng, 50, 801, 50),
            rng.choice(TIERS),
            team if rng.random() < 0.4 else rng.choice(others),
            attached,
            randint(rng, 0, 180),
            "active",
        )
    return Draw(
        account=account,
        policy=policy,
        instances=instances,
        volumes=volumes,
        need_gb=randrange(rng, 100, 401, 50),
        idle_min=rng.choice((30, 60, 90)),
        window=rng.choice(WINDOWS),
        order=tuple(rng.sample(PREFERENCES, len(PREFERENCES))),
        shape=rng.choices(("fits", "conflict", "nothing"), (0.45, 0.43, 0.12))[0],
        hidden={s: rng.random() < 0.6 for s in ("need_gb", "idle_min")},
        priorities_hidden=rng.random() < 0.6,
        need_raise=rng.choice((0, 0, 50, 100)),
        event_times=(randint(rng, 1, 3), randint(rng, 1, 3), randint(rng, 1, 3)),
    )


def in_use(volume: Volume, instances: dict[str, Instance]) -> bool:
    """Attached to a running instance."""
    return volume.attached_to is not None and instances[volume.attached_to].state == "running"


def satisfied(volume: Volume, instances: dict[str, Instance], needs: Needs) -> frozenset[str]:
    """The constraint ids deleting ``volume`` satisfies."""
    hits = {"volume_deleted"}
    if not in_use(volume, instances):
        hits.add("not_in_use")
    if volume.size_gb >= needs.need_gb:
        hits.add("frees_enough")
    if volume.idle_days >= needs.idle_min:
        hits.add("long_idle")
    if volume.attached_to is None:
        hits.add("detached")
    if volume.team == needs.team:
        hits.add("own_team")
    return frozenset(hits)


def _feasible(volume: Volume, instances: dict[str, Instance], needs: Needs) -> bool:
    return volume.size_gb >= needs.need_gb and not in_use(volume, instances)


def _shape(draw: Draw, knobs: Knobs, needs: Needs) -> dict[str, Volume]:
    """Adjust the drawn volumes so the task has its intended shape."""
    volumes = dict(draw.volumes)
    ids = list(volumes)
    prefs = draw.order
    shorter = [max(50, needs.need_gb - 50 * (1 + i % 2)) for i in range(len(ids))]
    if draw.shape == "nothing":
        for vid, size in zip(ids, shorter, strict=True):
            if _feasible(volumes[vid], draw.instances, needs):
                volumes[vid] = replace(volumes[vid], size_gb=size)
        return volumes
    if draw.shape == "conflict" and knobs.priorities:
        for vid, size in zip(ids, shorter, strict=True):  # nothing feasible meets every preference
            v = volumes[vid]
            meets_all = satisfied(v, draw.instances, needs) >= set(prefs)
            if meets_all and _feasible(v, draw.instances, needs):
                volumes[vid] = replace(v, size_gb=size)
        first, last = ids[0], ids[-1]
        volumes[first] = _make_satisfy(volumes[first], draw, needs, prefs[:-1], prefs[-1:])
        volumes[last] = _make_satisfy(volumes[last], draw, needs, prefs[1:], prefs[:1])
        return volumes
    planted = ids[len(ids) // 2]
    volumes[planted] = _make_satisfy(volumes[planted], draw, needs, prefs, ())
    return volumes


def _make_satisfy(
    v: Volume, draw: Draw, needs: Needs, keep: tuple[str, ...], break_: tuple[str, ...]
) -> Volume:
    """Change one volume so it is feasible, meets ``keep`` and misses ``break_``."""
    size = v.size_gb if v.size_gb >= needs.need_gb else min(1000, needs.need_gb + 100)
    attached = v.attached_to if v.attached_to and not in_use(v, draw.instances) else None
    stopped = next(i for i, inst in draw.instances.items() if inst.state == "stopped")
    if "detached" in keep:
        attached = None
    if "detached" in break_:
        attached = attached or stopped
    idle, team = v.idle_days, v.team
    if "long_idle" in keep:
        idle = max(idle, needs.idle_min + 10)
    if "long_idle" in break_:
        idle = min(idle, needs.idle_min - 10)
    if "own_team" in keep:
        team = needs.team
    if "own_team" in break_ and team == needs.team:
        team = next(t for t in TEAMS if t != needs.team)
    return replace(v, size_gb=size, attached_to=attached, idle_days=idle, team=team)


def _events(
    draw: Draw, knobs: Knobs, volumes: dict[str, Volume], needs: Needs, best: tuple[str, ...]
) -> tuple[Event, ...]:
    """A stopped instance starts and a volume gets used, and the user raises the space they
    need (dynamics on).

    The world changes only hit decoys whose preferences a best volume also meets: best volumes
    never change, so an agent that saw a decoy before or after its change ranks it below them
    and sees the same trade-offs either way.
    """
    if not knobs.dynamics:
        return ()
    instances = draw.instances
    feasible = [v for v in volumes.values() if _feasible(v, instances, needs)]

    def prefs(v: Volume) -> frozenset[str]:
        return satisfied(v, instances, needs) & set(PREFERENCES)

    def dominated(t: Volume, taken: set[str]) -> bool:
        return (
            t.id not in best
            and t.id not in taken
            and any(prefs(volumes[b]) >= prefs(t) for b in best)
        )

    events: list[Event] = []
    taken: set[str] = set()
    for iid, inst in instances.items():
        riders = [v for v in feasible if v.attached_to == iid]
        if inst.state == "stopped" and riders and all(dominated(v, taken) for v in riders):
            taken.update(v.id for v in riders)
            events.append(
                Event(draw.event_times[0], EventKind.SET, "instances", iid, "state", "running")
            )
            break
    target = next(
        (v for v in feasible if "long_idle" in prefs(v) and dominated(v, taken)),
        None,
    )
    if target is not None:
        events.append(
            Event(draw.event_times[1], EventKind.SET, "volumes", target.id, "idle_days", 0)
        )
    if draw.need_raise:
        events.append(
            Event(draw.event_times[2], EventKind.USER_UPDATE, slot="need_gb", value=needs.need_gb)
        )
    return CloudWorld.check_events(sorted(events, key=lambda e: e.at))


def _one_plan(
    volumes: dict[str, Volume], best: tuple[str, ...], protected: tuple[str, ...]
) -> dict[str, Volume]:
    """Give tied best volumes the backup requirement of the first, so the gold plan (snapshot
    or not) is the same whichever of them an agent deletes; no constraint reads the tier."""
    if len(best) < 2:
        return volumes
    tier = volumes[best[0]].tier
    unified = dict(volumes)
    for b in best[1:]:
        if (unified[b].tier in protected) != (tier in protected):
            unified[b] = replace(unified[b], tier=tier)
    return unified


def _build(seed: int, knobs: Knobs, draw: Draw) -> Task:
    raise_ = draw.need_raise if knobs.dynamics else 0
    needs = Needs(draw.need_gb + raise_, draw.idle_min, draw.account.team)
    volumes = _shape(draw, knobs, needs)
    prefs = draw.order
    constraint_ids = ("not_in_use", "frees_enough", "volume_deleted", *prefs)
    priority = tuple(itertools.pairwise(constraint_ids))
    weights = priority_weights(constraint_ids, priority)

    def table(
        vols: dict[str, Volume], insts: dict[str, Instance], needs: Needs = needs
    ) -> dict[str, frozenset[str]]:
        return {v.id: satisfied(v, insts, needs) for v in vols.values()}

    nothing = frozenset(constraint_ids) - {"volume_deleted"}
    best_before = best_options(table(volumes, draw.instances), nothing, weights)
    events = _events(draw, knobs, volumes, needs, best_before)
    final_volumes = apply_sets("volumes", volumes, events)
    final_instances = apply_sets("instances", draw.instances, events)
    satisfaction = table(final_volumes, final_instances)
    best = best_options(satisfaction, nothing, weights)
    feasible_sets = [
        satisfaction[v.id] for v in final_volumes.values() if _feasible(v, final_instances, needs)
    ]
    conflict = knobs.priorities and order_matters(feasible_sets, prefs)
    slots = owner_slots(draw, knobs, conflict)
    given = {s.name: s.value for s in slots if s.kind is SlotKind.GIVEN}
    constraints = owner_constraints()
    volumes = _one_plan(volumes, best, draw.policy.snapshot_tiers)
    base = CloudBase(volumes, draw.instances, draw.account, draw.policy, balance=2000)
    must_ask = tuple(s.name for s in slots if s.kind is SlotKind.MISSING)
    calls, edges, decisions = gold_graph(base, knobs, best, must_ask)
    truth = GroundTruth(calls, edges, decisions, satisfaction, nothing, best, weights)
    drawn = replace(needs, need_gb=draw.need_gb)
    changes = any(e.kind is EventKind.USER_UPDATE for e in events)
    before = (
        (table(volumes, draw.instances, drawn), table(final_volumes, final_instances, drawn))
        if changes
        else None
    )
    truth = with_user_tables(truth, table(volumes, draw.instances), before)
    request = Request(
        request_text(draw, given, constraints, knobs),
        given,
        {"project_id": "get_account", "team": "get_account", "retention": "get_retention_policy"},
    )
    priorities_hidden = order_hidden(knobs, slots)
    return Task(
        "cloud",
        seed,
        knobs,
        request,
        slots,
        constraints,
        priority,
        priorities_hidden,
        events,
        base,
        truth,
        MAX_ROUNDS,
    )
