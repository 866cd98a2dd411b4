"""The task families: a learnable decision that the scripted agents separate."""

from __future__ import annotations

import pytest

from stategym.agents.guard import must_ask
from stategym.metrics.clarification import ask_rate
from stategym.registry import get_domain
from stategym.rendering import make_renderer
from stategym.rollout import Agents, play_in_order, spec_task
from stategym.train.tasks import FAMILIES, TRAIN_SEED, TaskFamily, measure, task_family

TRAIN, HELDOUT = task_family("ask-or-act"), task_family("ask-or-act-heldout")
SEEDS = 40


def test_the_schedule_alternates_missing_and_given() -> None:
    assert TRAIN.first_seed == TRAIN_SEED and HELDOUT.first_seed == 0
    for seed in TRAIN.seeds(6):
        task = TRAIN.task(seed)
        assert task.knobs == TRAIN.knobs(seed)
        assert not task.knobs.dynamics and not task.knobs.priorities
        assert must_ask(task) == (("limit",) if seed % 2 == 0 else ())
    specs = TRAIN.specs("expert", TRAIN.seeds(4))
    assert [s.knobs.hidden_info for s in specs] == [True, False, True, False]
    with pytest.raises(KeyError, match="ask-or-act"):
        task_family("nope")
    assert set(FAMILIES) == {"ask-or-act", "ask-or-act-heldout"}


def test_the_held_out_family_misses_a_slot_training_never_does() -> None:
    trained = {s for seed in TRAIN.seeds(SEEDS) for s in must_ask(TRAIN.task(seed))}
    held = {s for seed in HELDOUT.seeds(SEEDS) for s in must_ask(HELDOUT.task(seed))}
    assert trained == {"limit"}
    assert held - trained == {"category"}
    # same tools and instructions: only the request and the user's facts differ
    prompts = {
        make_renderer(get_domain(f.domain), f.knobs(0), "compact").system_prompt()
        for f in (TRAIN, HELDOUT)
    }
    assert len(prompts) == 1


@pytest.mark.parametrize("family", [TRAIN, HELDOUT])
def test_the_family_separates_asking_from_guessing(family: TaskFamily) -> None:
    seeds = list(family.seeds(SEEDS))
    expert = measure(family, "expert", seeds)
    nothing = measure(family, "ask-nothing", seeds)
    everything = measure(family, "ask-everything", seeds)
    oracle = measure(family, "oracle", seeds)
    assert expert.must_ask >= SEEDS // 2
    assert expert.ask_rate == 1.0 and expert.needless == 0.0 and expert.r == 1.0
    assert nothing.ask_rate == 0.0 and oracle.ask_rate == 0.0
    assert nothing.r < expert.r - 0.3 and oracle.r < expert.r - 0.3
    # asking where the request already says it is needless: asking is not always right
    assert everything.ask_rate == 1.0 and everything.needless > 1.0
    assert everything.r < expert.r - 0.2
    # the guard teacher sits between the two
    guard = measure(family, "ask-p0.5", seeds)
    assert guard.ask_rate is not None and 0.0 < guard.ask_rate < 1.0
    assert nothing.r < guard.r < expert.r


def test_ask_rate_of_single_episodes() -> None:
    seeds = list(TRAIN.seeds(4))
    for agent, rates in (("expert", [1.0, None]), ("ask-nothing", [0.0, None])):
        played = play_in_order(TRAIN.specs(agent, seeds), Agents())
        got = [ask_rate(t, spec_task(spec)) for spec, t in played]
        assert got == rates * 2, agent
