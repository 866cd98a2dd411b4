"""The lookup domain: knob independence, question forms, exact match, a user who cannot give
the answer away, and habits with nothing to act on (the checks every domain passes are in
``test_every_domain.py``)."""

from __future__ import annotations

from collections import Counter
from dataclasses import replace
from statistics import mean

import pytest

from stategym import Env, Knobs, call, calls, run_episode
from stategym.agents import resolve
from stategym.domains.lookup.tools import search
from stategym.kernel.protocol import Say
from stategym.kernel.task import EdgeKind, SlotKind
from stategym.kernel.tools import Effect
from stategym.kernel.trajectory import Trajectory
from stategym.metrics.score import score
from stategym.registry import get_domain

DOMAIN = get_domain("lookup")
KNOB_VARIANTS = (
    "all_off",
    "stateful=off",
    "irreversible=off",
    "hidden_info=off",
    "priorities=off",
    "dynamics=off",
)


def _trajectories(agent: str, seeds: range, knobs: Knobs | None = None) -> list[Trajectory]:
    env = Env("lookup", knobs=knobs or Knobs())
    return [run_episode(env, resolve(env.domain, agent), s) for s in seeds]


@pytest.mark.parametrize("knobs", KNOB_VARIANTS)
def test_knobs_change_nothing_but_the_label(knobs: str) -> None:
    for seed in range(100):
        task = DOMAIN.generate(seed, Knobs.parse(knobs))
        assert replace(task, knobs=Knobs()) == DOMAIN.generate(seed, Knobs())


def test_unparallel_and_speculative_agents_lose_on_parallelism_only() -> None:
    expert = [score(t).parallelism.quality for t in _trajectories("expert", range(150))]
    for agent in ("all-serial", "all-parallel", "spray"):
        cards = [score(t) for t in _trajectories(agent, range(150))]
        assert all(c.clarification.quality == c.priority.quality == 1.0 for c in cards), agent
        assert mean(c.parallelism.quality for c in cards) < mean(expert) == 1.0, agent


def test_every_question_form_and_feature_occurs() -> None:
    seen: Counter[str] = Counter()
    for seed in range(300):
        task = DOMAIN.generate(seed, Knobs())
        given = task.request.given
        form = "compare" if "other" in given else "extreme" if "measure" in given else "chain"
        seen[form] += 1
        reads = [c for c in task.truth.calls if c.tool == "get_entity"]
        searches = [c for c in task.truth.calls if c.tool == "search"]
        seen[f"{form}_{len(reads) // len(searches)}_reads"] += 1
        seen["number_answer"] += task.truth.best[0].isdigit()
        seen["entity_answer"] += not task.truth.best[0].isdigit()
        world = DOMAIN.new_world(task)
        first = search(world, query=str(given["subject"]))[0]["name"]
        seen["near_miss_first"] += first != given["subject"]
        assert task.truth.decisions == () and task.events == () and not task.must_ask
        assert {s.kind for s in task.slots} == {SlotKind.GIVEN}
        assert len(task.truth.best) == 1 and task.truth.best[0].isalnum()
        assert {c.effect for c in task.truth.calls} == {Effect.READ}
        assert {e.kind for e in task.truth.edges} == {EdgeKind.PIPE}
    for feature in (
        "chain",
        "extreme",
        "compare",
        "chain_2_reads",
        "chain_3_reads",
        "number_answer",
        "entity_answer",
        "near_miss_first",
    ):
        assert seen[feature] > 0, feature
    assert not [k for k in seen if k.endswith("_1_reads")]  # every question takes 2+ hops


def test_the_answer_is_checked_by_exact_match() -> None:
    env = Env("lookup")
    for answer, reached in (("best", True), ("best ", True), ("wrong", False), ("", False)):
        env.reset(seed=3)
        right = env.task.truth.best[0]
        text = {"best": right, "best ": f" {right} ", "wrong": f"{right}0", "": "none"}[answer]
        env.step(calls(call("finish", answer=text)))
        assert env.outcome().goal_reached is reached


def test_finish_needs_an_answer_even_with_statefulness_on() -> None:
    env = Env("lookup")
    env.reset(seed=0)
    assert "answer" in env.tool_schemas[-1]["function"]["parameters"]["required"]
    result = env.step(calls(call("finish")))
    assert result.observation.results[0].error_kind == "missing_argument" and not env.done


def test_the_user_does_not_give_the_answer_away() -> None:
    env = Env("lookup")
    env.reset(seed=2)
    right = env.task.truth.best[0]
    turn = env.step(Say(f"Is the answer {right}?"))
    assert env.rounds[-1].user is not None and env.rounds[-1].user.proposed is None
    assert right not in (turn.observation.user or "")


def test_asking_anything_is_a_false_positive() -> None:
    cards = [score(t) for t in _trajectories("ask-everything", range(100))]
    assert all(c.outcome.goal_reached for c in cards)
    assert max(c.clarification.quality for c in cards) < 1.0


INERT = (
    "oracle",
    "ask-nothing",
    "never-commit",
    "commit-unverified",
    "commit-same-round",
    "shotgun",
    "confirm-spam",
)


@pytest.mark.parametrize("agent", INERT)
def test_habits_with_nothing_to_act_on_leave_the_expert_unchanged(agent: str) -> None:
    """Nothing is hidden and nothing is committed, so these agents cannot differ here: the
    lookup domain cannot tell them from the expert, which is what it is for."""
    expert = _trajectories("expert", range(100))
    other = _trajectories(agent, range(100))
    assert [t.rounds for t in other] == [t.rounds for t in expert]
