"""Hardening §2: open questions and rejected ``finish`` calls cannot pad the composite.

Each reproduction of the outside audit is pinned (the number before the fix in its
docstring), and each rule has a property test over seeds:

1. open questions: the first is free, and so is one after a change of mind; asked again with
   nothing changed it is a needless question (D1), as a repeated proposal is;
2. rejected ``finish``: only the ``finish`` the environment accepted is not counted; a
   rejected one is a failed call like any other (an extra call, D3).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from metrics_toy import LOOKUPS, calls, expert_rounds, renumber, say, task, trajectory

from stategym.agents import scripted, styled
from stategym.agents.adversary import BAD_FINISH, INVALID_ROUNDS, OPEN_QUESTIONS
from stategym.agents.style import Style
from stategym.kernel.env import Env
from stategym.kernel.protocol import FINISH, Action, CallBatch, Say, ToolCall
from stategym.kernel.trajectory import RoundRecord
from stategym.metrics import Kind, Scorecard, score
from stategym.metrics.clarification import OPEN
from stategym.metrics.taskset import MIXED
from stategym.registry import all_domains, get_domain
from stategym.rollout import run_episode

DOMAINS = sorted(all_domains())
STATEFUL = [d for d in DOMAINS if not get_domain(d).read_only]
SEEDS = range(6)


def _knobs(seed: int):
    return MIXED[seed % len(MIXED)]


def _expert(domain: str, seed: int) -> tuple[list[Action], Scorecard]:
    env = Env(domain, knobs=_knobs(seed))
    played = run_episode(env, scripted(env.domain, "expert"), seed)
    return [r.action() for r in played.rounds], score(played, env.task)


def replay(
    domain: str, seed: int, edit: Callable[[list[Action]], list[Action]]
) -> tuple[Scorecard, Scorecard]:
    """The expert's scorecard and that of its actions after ``edit``, on the same task (the
    world is deterministic); actions left when the episode ends are not played."""
    actions, expert = _expert(domain, seed)
    env = Env(domain, knobs=_knobs(seed))
    env.reset(seed=seed)
    for action in edit(actions):
        step = env.step(action)
        if step.terminated or step.truncated:
            break
    return expert, score(env.trajectory, env.task)


def _open(n: int) -> list[Action]:
    return [Say(OPEN_QUESTIONS[i % len(OPEN_QUESTIONS)]) for i in range(n)]


def _forever(action: Action) -> Callable[[list[Action]], list[Action]]:
    """Play the expert, then ``action`` instead of its finish until the round limit."""
    return lambda actions: [*actions[:-1], *[action] * 100]


def _repeats(card: Scorecard) -> int:
    return sum(1 for e in card.events if e.kind is Kind.ASK_NEEDLESS and e.subject == OPEN)


# -- 1. open questions ------------------------------------------------------------------------


def _open_say(index: int) -> RoundRecord:
    record = say(index)
    assert record.user is not None
    turn = dataclasses.replace(record.user, understood=True, open=True)
    return dataclasses.replace(record, user=turn)


def _toy(rounds: list[RoundRecord]) -> Scorecard:
    the_task = task()
    return score(trajectory(the_task, renumber(rounds)), the_task)


def test_the_first_open_question_is_free_and_a_repeat_is_needless():
    rounds = expert_rounds()
    assert _toy([_open_say(0), *rounds]).clarification.fp == 0.0
    card = _toy([_open_say(0), _open_say(0), *rounds[:-1], _open_say(0), rounds[-1]])
    assert card.clarification.fp == 2.0
    assert _repeats(card) == 2


def test_a_change_of_mind_makes_an_open_question_free_again():
    rounds = expert_rounds()
    notice = calls(0, *LOOKUPS[1:], notice=(("budget", 400),))
    changed = _toy([_open_say(0), notice, _open_say(0), *rounds])
    assert _repeats(changed) == 0
    assert changed.clarification.fp == _toy([notice, *rounds]).clarification.fp
    # a specific answer in between tells a fact, not a change of the user's wishes
    asked = [_open_say(0), *rounds[:1], _open_say(0), *rounds[1:]]
    assert _toy(asked).clarification.fp == 1.0


def test_travel_seed_0_ten_open_questions_before_finish():
    """Before: R = 1.000 (30/30 seeds of every domain scored the expert's R)."""
    expert, card = replay("travel", 0, lambda a: [*a[:-1], *_open(10), a[-1]])
    assert _repeats(card) == 9
    # and the first, asked after the booking, is needless too (audit 6a §2)
    assert card.clarification.fp == expert.clarification.fp + 10
    assert card.composite <= expert.composite - 0.1


@pytest.mark.parametrize("name", DOMAINS)
def test_every_repeated_open_question_costs_in_every_domain(name):
    for seed in SEEDS:
        expert, card = replay(name, seed, lambda a: [*a[:-1], *_open(10), a[-1]])
        assert _repeats(card) == 9, (name, seed)
        assert card.composite <= expert.composite - 0.1, (name, seed)


@pytest.mark.parametrize("name", STATEFUL)
@given(seed=st.integers(0, 10**6))
@settings(max_examples=5, deadline=None)
def test_open_questions_instead_of_finish_score_a_tenth_below(name, seed):
    """Before: 0.96-0.99, within 0.1 of the expert on every seed (only the terminal 'no
    finish' round was charged)."""
    expert, card = replay(name, seed, lambda a: [*a[:-1], *_open(100)])
    assert any(e.subject == "no finish" for e in card.events)
    assert _repeats(card) >= 10
    assert card.composite <= expert.composite - 0.1
    _, adversary = _styled(name, Style(pad="open"), seed)
    assert adversary.composite <= expert.composite - 0.1


def _styled(name: str, style: Style, seed: int):
    env = Env(name, knobs=_knobs(seed))
    played = run_episode(env, styled(env.domain, style), seed)
    return played, score(played, env.task)


# -- 2. rejected finish -----------------------------------------------------------------------


def test_travel_seed_0_ten_malformed_finish_rounds_before_finish():
    """Before: R = 1.000 (``Trace.add`` skipped every ``finish``; 30/30 seeds of every
    domain)."""
    expert, card = replay("travel", 0, lambda a: [*a[:-1], *[BAD_FINISH] * 10, a[-1]])
    assert card.parallelism.extra == expert.parallelism.extra + 10
    assert card.parallelism.wasted == expert.parallelism.wasted
    assert card.composite < expert.composite - 0.1


@pytest.mark.parametrize("name", DOMAINS)
def test_a_rejected_finish_costs_what_any_malformed_call_costs(name):
    unknown = CallBatch((ToolCall("no_such_tool", {}),))
    for seed in SEEDS:
        expert, bad = replay(name, seed, lambda a: [*a[:-1], *[BAD_FINISH] * 10, a[-1]])
        _, other = replay(name, seed, lambda a: [*a[:-1], *[unknown] * 10, a[-1]])
        assert bad.outcome.goal_reached == expert.outcome.goal_reached
        assert bad.parallelism.extra == expert.parallelism.extra + INVALID_ROUNDS
        assert bad.composite == pytest.approx(other.composite, abs=1e-12), (name, seed)
        assert bad.composite < expert.composite, (name, seed)
        _, adversary = _styled(name, Style(pad="bad-finish"), seed)
        assert adversary.composite == pytest.approx(bad.composite, abs=1e-12), (name, seed)


@pytest.mark.parametrize("name", STATEFUL)
def test_malformed_finish_rounds_until_truncation_score_a_tenth_below(name):
    """Before: within 0.1 of the expert (only the terminal 'no finish' round was charged)."""
    for seed in SEEDS:
        expert, card = replay(name, seed, _forever(BAD_FINISH))
        assert any(e.subject == "no finish" for e in card.events)
        assert card.composite <= expert.composite - 0.1, (name, seed)


def test_a_finish_not_run_beside_a_malformed_call_is_a_failed_call():
    both = CallBatch((ToolCall("no_such_tool", {}), ToolCall(FINISH, {})))
    expert, card = replay("travel", 0, lambda a: [*a[:-1], both, a[-1]])
    assert card.parallelism.extra == expert.parallelism.extra + 2
    # the accepted finish is no call: the expert's count is its other calls
    actions, _ = _expert("travel", 0)
    made = sum(len(a.calls) for a in actions if isinstance(a, CallBatch))
    finishes = sum(c.name == FINISH for a in actions if isinstance(a, CallBatch) for c in a.calls)
    assert finishes == 1
    assert expert.parallelism.extra == 0 and made - finishes > 0


@pytest.mark.parametrize("name", DOMAINS)
def test_a_second_finish_beside_the_one_that_ends_the_episode_is_extra(name):
    """A third audit: three well-formed ``finish`` calls in the last round counted no extra
    call (every accepted ``finish`` was skipped); only the first ended anything."""
    for seed in SEEDS[:2]:
        actions, expert = _expert(name, seed)
        last = actions[-1]
        assert isinstance(last, CallBatch)
        (ending,) = [c for c in last.calls if c.name == FINISH]
        tripled = CallBatch((*last.calls, ending, ending))
        _, card = replay(name, seed, lambda a, t=tripled: [*a[:-1], t])
        assert card.outcome == expert.outcome, (name, seed)
        assert card.parallelism.extra == expert.parallelism.extra + 2, (name, seed)
        assert card.composite < expert.composite, (name, seed)
