"""Synthetic domains: the expert, knobs, task features, surfaces, and how distance behaves."""

from __future__ import annotations

import itertools
from statistics import mean

import pytest
from gymnasium.utils.env_checker import check_env

from stategym import Env, Knobs, replay, run_episode
from stategym.agents import resolve
from stategym.domains.synthetic import SLOT_PHRASES
from stategym.domains.synthetic.expert import QUESTIONS
from stategym.gym import StateGymEnv
from stategym.kernel.errors import UnknownDomainError
from stategym.kernel.task import EventKind, SlotKind, Task
from stategym.kernel.trajectory import Trajectory
from stategym.kernel.user import SimulatedUser
from stategym.metrics.score import score
from stategym.registry import get_domain
from stategym.topology.distance import edit_distance, wl_hash
from stategym.topology.graph import domain_topology, task_topology

SPECS = (
    "synth:base",
    "synth:chain2+fanout3+askgate+verifycommit",
    "synth:diamond+branch+askgate2+precond+conflict@3",
    "synth:chain6+fanout6+diamond+branch+askgate3+verifycommit+precond+conflict@11",
)
KNOB_VARIANTS = (
    "all_off",
    "stateful=off",
    "irreversible=off",
    "hidden_info=off",
    "priorities=off",
    "dynamics=off",
)
GROWTH = (
    "base",
    "chain2",
    "chain2+fanout3",
    "chain2+fanout3+askgate",
    "chain2+fanout3+askgate+verifycommit",
    "chain2+fanout3+askgate+verifycommit+precond",
    "chain2+fanout3+askgate+verifycommit+precond+conflict",
)
"""Each spec is the previous one plus one motif."""


def _off_plan(trajectory: Trajectory, task: Task) -> list[str]:
    """Calls no gold node stands for, gold calls never made, questions other than M*."""
    made = [c for r in trajectory.rounds for c in r.calls if c.name != "finish"]
    gold = [g for g in task.truth.calls if g.tool not in ("ask", "confirm")]
    problems = [
        f"extra {c.name}"
        for c in made
        if isinstance(c.arguments, dict) and not any(g.matches(c.name, c.arguments) for g in gold)
    ]
    problems += [
        f"missing {g.id}"
        for g in gold
        if not any(c.error is None and g.matches(c.name, c.arguments) for c in made)
    ]
    problems += [f"refused {c.name}" for c in made if c.error is not None]
    asked = [a for r in trajectory.rounds if r.user for a in r.user.asked]
    if sorted(asked) != sorted(task.must_ask):
        problems.append(f"asked {asked}, must ask {task.must_ask}")
    return problems


def _expert_failures(name: str, seeds: range, knobs: Knobs) -> dict[int, object]:
    env = Env(name, knobs=knobs)
    make = resolve(env.domain, "expert")
    failures: dict[int, object] = {}
    for seed in seeds:
        trajectory = run_episode(env, make, seed)
        assert trajectory.outcome is not None
        card = score(trajectory, env.task)
        problems = _off_plan(trajectory, env.task)
        if not trajectory.outcome.goal_reached or card.composite < 1.0 or problems:
            failures[seed] = (trajectory.outcome.goal_reached, card.composite, problems)
    return failures


@pytest.mark.parametrize("name", SPECS)
def test_expert_follows_the_gold_plan_and_scores_one(name: str) -> None:
    assert _expert_failures(name, range(150), Knobs()) == {}


@pytest.mark.parametrize("knobs", KNOB_VARIANTS)
@pytest.mark.parametrize("name", SPECS[1:])
def test_expert_under_every_knob(name: str, knobs: str) -> None:
    assert _expert_failures(name, range(40), Knobs.parse(knobs)) == {}


@pytest.mark.parametrize("name", SPECS[1:])
def test_baselines_do_measurably_worse(name: str) -> None:
    env = Env(name)
    results = {}
    for agent in ("expert", "serial", "random"):
        make = resolve(env.domain, agent)
        runs = [
            (t.outcome.goal_reached, score(t, env.task).composite)
            for t in (run_episode(env, make, s) for s in range(60))
            if t.outcome
        ]
        results[agent] = (mean(g for g, _ in runs), mean(c for _, c in runs))
    assert results["expert"] == (1.0, 1.0)
    for agent in ("serial", "random"):
        goal, composite = results[agent]
        assert goal < 0.8 and composite < 0.5, (agent, results[agent])


def test_renamed_surface_is_the_same_topology() -> None:
    for key in GROWTH[1:]:
        plain, renamed = get_domain(f"synth:{key}"), get_domain(f"synth:{key}@5")
        assert {t.name for t in plain.tools}.isdisjoint({t.name for t in renamed.tools})
        a, b = domain_topology(plain), domain_topology(renamed)
        assert wl_hash(a) == wl_hash(b)
        assert edit_distance(a, b).cost == 0
        for seed in range(3):
            ta = task_topology(plain.generate(seed, Knobs()))
            tb = task_topology(renamed.generate(seed, Knobs()))
            assert wl_hash(ta) == wl_hash(tb) and edit_distance(ta, tb).cost == 0


def test_renamed_surface_plays_the_same_episode() -> None:
    plain, renamed = (
        Env("synth:chain2+fanout3+askgate+verifycommit"),
        Env("synth:chain2+fanout3+askgate+verifycommit@9"),
    )
    for seed in range(20):
        a = run_episode(plain, resolve(plain.domain, "expert"), seed)
        b = run_episode(renamed, resolve(renamed.domain, "expert"), seed)
        assert len(a.rounds) == len(b.rounds)
        assert a.outcome is not None and b.outcome is not None
        assert a.outcome.spent == b.outcome.spent and a.outcome.goal_reached


def test_adding_a_motif_increases_the_distance() -> None:
    tops = [domain_topology(get_domain(f"synth:{key}")) for key in GROWTH]
    hashes = [wl_hash(t) for t in tops]
    assert len(set(hashes)) == len(hashes)
    distances = [edit_distance(tops[0], t) for t in tops]
    assert all(d.exact for d in distances)
    values = [d.normalised for d in distances]
    assert values == sorted(values) and len(set(values)) == len(values), values
    for smaller, larger in itertools.pairwise(tops):
        assert edit_distance(smaller, larger).cost > 0


def test_larger_sizes_move_further() -> None:
    base = domain_topology(get_domain("synth:chain2+fanout2"))
    values = [
        edit_distance(base, domain_topology(get_domain(f"synth:chain{n}+fanout2"))).cost
        for n in (2, 3, 4, 5)
    ]
    assert values == sorted(values) and values[0] == 0 and len(set(values)) == 4


def test_determinism_and_replay() -> None:
    for name in SPECS:
        env = Env(name)
        for agent in ("expert", "random", "serial"):
            make = resolve(env.domain, agent)
            for seed in range(5):
                first = run_episode(env, make, seed)
                again = run_episode(env, make, seed)
                assert first == again
                assert replay(first).state_key() == first.digest
        assert env.domain.generate(3, Knobs()) == env.domain.generate(3, Knobs())


def test_task_features_occur() -> None:
    domain = get_domain("synth:askgate+conflict+verifycommit")
    tasks = [domain.generate(seed, Knobs()) for seed in range(200)]
    assert all("limit" in t.must_ask for t in tasks)
    assert sum("priorities" in t.must_ask for t in tasks) > 100
    assert 5 < sum(not t.truth.best for t in tasks) < 50
    kinds = {e.kind for t in tasks for e in t.events}
    assert kinds == {EventKind.SET, EventKind.USER_UPDATE}
    assert all(not t.events for t in (domain.generate(s, Knobs(dynamics=False)) for s in range(50)))
    for task in (domain.generate(s, Knobs(hidden_info=False)) for s in range(50)):
        assert not task.must_ask
    for task in (domain.generate(s, Knobs(priorities=False)) for s in range(50)):
        assert task.slot("priorities").kind is SlotKind.IRRELEVANT


def test_questions_route_to_exactly_their_slot() -> None:
    domain = get_domain("synth:chain1+askgate3+conflict")
    task = domain.generate(0, Knobs())
    for slot, question in QUESTIONS.items():
        turn = SimulatedUser(task, SLOT_PHRASES).respond(question)
        assert turn.asked == (slot,), (slot, turn.asked)
    option = next(iter(task.truth.satisfaction))
    turn = SimulatedUser(task, SLOT_PHRASES).respond(
        f"I found {option} at $300. Shall I go ahead with it?"
    )
    assert turn.asked == () and turn.proposed == option


def test_reachable_by_name_and_cached() -> None:
    assert get_domain("synth:fanout3+chain2") is get_domain("synth:chain2+fanout3")
    assert get_domain("synth:chain2+fanout3").name == "synth:chain2+fanout3"
    with pytest.raises(UnknownDomainError):
        get_domain("synth:teleport")
    env = StateGymEnv("synth:chain1+askgate+verifycommit")
    check_env(env, skip_render_check=True)
    env.close()
