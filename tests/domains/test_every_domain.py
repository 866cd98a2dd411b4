"""What every registered domain must do, checked the same way for each.

The scripted expert reaches the goal, scores 1.0 and follows the gold plan on 1,000 default
tasks and 300 per knob variant; the serial and random baselines do measurably worse; tasks
and episodes are deterministic and replaying an episode reproduces its state; each knob
switches its property off; the gold call graph is well formed; write and commit tools name
the option they act on, and option ids are single tokens; the simulated user routes the
expert's questions and their paraphrases to exactly their slot, and the expert's proposals
to none. What only one domain has is tested in its ``test_<name>.py``.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Mapping
from dataclasses import dataclass
from statistics import mean

import pytest
from phrasings import PARAPHRASES, PRIORITY_QUESTIONS

from stategym import Env, Knobs, replay, run_episode
from stategym.agents import resolve
from stategym.domains.bank.expert import QUESTIONS as BANK_QUESTIONS
from stategym.domains.cloud.expert import QUESTIONS as CLOUD_QUESTIONS
from stategym.domains.lookup.expert import QUESTIONS as LOOKUP_QUESTIONS
from stategym.domains.meetings.expert import QUESTIONS as MEETINGS_QUESTIONS
from stategym.domains.shop.expert import QUESTIONS as SHOP_QUESTIONS
from stategym.domains.travel.expert import QUESTIONS as TRAVEL_QUESTIONS
from stategym.kernel.task import EdgeKind, SlotKind, Task
from stategym.kernel.tools import Effect
from stategym.kernel.trajectory import RoundKind, Trajectory, dumps
from stategym.kernel.user import SimulatedUser, normalise
from stategym.metrics.score import score
from stategym.registry import all_domains, get_domain

DOMAINS = sorted(all_domains())
COMMITTING = [name for name in DOMAINS if not all_domains()[name].read_only]
"""Domains whose episodes end in a commitment (the others end with an answer)."""
KNOB_VARIANTS = (
    "all_off",
    "stateful=off",
    "irreversible=off",
    "hidden_info=off",
    "priorities=off",
    "dynamics=off",
)
EXPERT_QUESTIONS: dict[str, Mapping[str, str]] = {
    "bank": BANK_QUESTIONS,
    "cloud": CLOUD_QUESTIONS,
    "lookup": LOOKUP_QUESTIONS,
    "meetings": MEETINGS_QUESTIONS,
    "shop": SHOP_QUESTIONS,
    "travel": TRAVEL_QUESTIONS,
}


@dataclass(frozen=True, slots=True)
class Bar:
    """What measurably worse than the expert means for a baseline: on the first ``seeds``
    default tasks, the goal reached on fewer than ``goal_ratio`` times as many tasks as the
    expert reaches it on, and a mean composite lower by more than ``composite_gap``."""

    seeds: int = 200
    goal_ratio: float = 0.75
    composite_gap: float = 0.3


BARS: dict[tuple[str, str], Bar] = {
    ("bank", "serial"): Bar(200, 0.9, 0.5),
    ("bank", "random"): Bar(200, 0.9, 0.5),
    ("shop", "serial"): Bar(200, 0.9, 0.5),
    ("shop", "random"): Bar(200, 0.9, 0.5),
    ("meetings", "serial"): Bar(300, 0.7, 0.5),
    ("meetings", "random"): Bar(300, 0.3, 0.5),
}
"""The bars domains set for themselves; the others must clear the default :class:`Bar`."""


def _trajectories(
    name: str, agent: str, seeds: range, knobs: Knobs | None = None
) -> list[Trajectory]:
    env = Env(name, knobs=knobs or Knobs())
    make = resolve(env.domain, agent)
    return [run_episode(env, make, s) for s in seeds]


def _graded(
    name: str, agent: str, seeds: range, knobs: Knobs | None = None
) -> list[tuple[Trajectory, Task, bool, float]]:
    """Each episode with its task, whether it reached the goal, and its composite score."""
    env = Env(name, knobs=knobs or Knobs())
    make = resolve(env.domain, agent)
    out = []
    for seed in seeds:
        trajectory = run_episode(env, make, seed)
        assert trajectory.outcome is not None
        task = env.task
        out.append(
            (trajectory, task, trajectory.outcome.goal_reached, score(trajectory, task).composite)
        )
    return out


@functools.cache
def _expert_default(name: str) -> tuple[tuple[bool, float, tuple[str, ...]], ...]:
    """The expert on the first 1,000 default tasks: goal, composite, departures from the plan."""
    return tuple(
        (goal, composite, tuple(_off_plan(trajectory, task)))
        for trajectory, task, goal, composite in _graded(name, "expert", range(1000))
    )


def _off_plan(trajectory: Trajectory, task: Task) -> list[str]:
    """How an episode strays from the gold plan: calls no gold node stands for, gold calls
    never made, questions other than the must-ask ones, refused calls."""
    made = [c for r in trajectory.rounds for c in r.calls if c.name != "finish"]
    gold = [g for g in task.truth.calls if g.tool not in ("ask", "confirm")]
    problems = [
        f"extra {c.name}"
        for c in made
        if not any(g.matches(c.name, c.arguments) for g in gold if isinstance(c.arguments, dict))
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


@pytest.mark.parametrize("name", DOMAINS)
def test_expert_reaches_the_goal_and_follows_the_plan_on_1000_tasks(name: str) -> None:
    failures = {
        seed: result
        for seed, result in enumerate(_expert_default(name))
        if not result[0] or result[1] != 1.0 or result[2]
    }
    assert failures == {}


@pytest.mark.parametrize("knobs", KNOB_VARIANTS)
@pytest.mark.parametrize("name", DOMAINS)
def test_expert_reaches_the_goal_and_follows_the_plan_under_every_knob(
    name: str, knobs: str
) -> None:
    failures = {}
    for trajectory, task, goal, composite in _graded(
        name, "expert", range(1000, 1300), Knobs.parse(knobs)
    ):
        problems = _off_plan(trajectory, task)
        if not goal or composite != 1.0 or problems:
            failures[trajectory.seed] = (goal, composite, problems)
    assert failures == {}


@pytest.mark.parametrize("agent", ["serial", "random"])
@pytest.mark.parametrize("name", DOMAINS)
def test_serial_and_random_do_measurably_worse(name: str, agent: str) -> None:
    bar = BARS.get((name, agent), Bar())
    expert = _expert_default(name)[: bar.seeds]
    other = [(g, c) for _, _, g, c in _graded(name, agent, range(bar.seeds))]
    assert mean(g for g, _ in other) < bar.goal_ratio * mean(g for g, _, _ in expert)
    assert mean(c for _, c in other) < mean(c for _, c, _ in expert) - bar.composite_gap


@pytest.mark.parametrize("name", DOMAINS)
def test_generation_and_episodes_are_deterministic(name: str) -> None:
    domain = all_domains()[name]
    for seed in (7, 11):
        for knobs in (Knobs(), Knobs.all_off()):
            assert domain.generate(seed, knobs) == domain.generate(seed, knobs)
    for agent in ("expert", "serial", "random", "shotgun", "all-parallel", "spray"):
        first = [dumps(t) for t in _trajectories(name, agent, range(40))]
        assert first == [dumps(t) for t in _trajectories(name, agent, range(40))], agent


@pytest.mark.parametrize(
    "agent", ["expert", "serial", "random", "commit-same-round", "shotgun", "all-parallel"]
)
@pytest.mark.parametrize("name", DOMAINS)
def test_replay_reproduces_the_state(name: str, agent: str) -> None:
    for trajectory in _trajectories(name, agent, range(60)):
        assert replay(trajectory).state_key() == trajectory.digest


@pytest.mark.parametrize("name", DOMAINS)
def test_knobs_are_respected(name: str) -> None:
    domain = all_domains()[name]
    for seed in range(200):
        stateless = domain.generate(seed, Knobs(stateful=False))
        assert stateless.truth.decisions == ()
        assert {c.effect for c in stateless.truth.calls if c.effect} == {Effect.READ}
        told = domain.generate(seed, Knobs(hidden_info=False))
        assert not [s for s in told.slots if s.kind is SlotKind.MISSING]
        assert domain.generate(seed, Knobs(dynamics=False)).events == ()
        flat = domain.generate(seed, Knobs(priorities=False))
        assert "priorities" not in flat.must_ask
        full = frozenset(c.id for c in flat.constraints)
        assert not flat.truth.best or flat.truth.satisfaction[flat.truth.best[0]] == full
    env = Env(name, knobs=Knobs(stateful=False))
    env.reset(seed=0)
    offered = {s["function"]["name"] for s in env.tool_schemas}
    reads = {t.name for t in domain.tools if t.effect is Effect.READ and not t.reads_own_writes}
    assert offered == reads | {"finish"}


@pytest.mark.parametrize("name", DOMAINS)
def test_gold_graph_is_well_formed(name: str) -> None:
    for seed in range(300):
        task = all_domains()[name].generate(seed, Knobs())
        truth = task.truth
        ids = {c.id for c in truth.calls}
        assert len(ids) == len(truth.calls)
        assert all(e.src in ids and e.dst in ids for e in truth.edges)
        assert all(e.src.startswith("ask:") for e in truth.edges if e.kind is EdgeKind.GATE)
        assert {f"ask:{s}" for s in task.must_ask} <= ids
        for decision in truth.decisions:
            assert decision.should_commit is bool(truth.best)
            assert not decision.should_commit or decision.option in truth.best


@pytest.mark.parametrize("name", DOMAINS)
def test_write_and_commit_results_name_their_option(name: str) -> None:
    """The expert's writes and commits name an option of the task; a shotgun agent's, which
    may commit to several options at once, name something."""
    for trajectory, task, _, _ in _graded(name, "expert", range(100)):
        for record in trajectory.rounds:
            for c in record.calls:
                if c.effect in (Effect.WRITE, Effect.COMMIT) and c.error is None:
                    assert c.content["option"] in task.truth.satisfaction
    for trajectory in _trajectories(name, "shotgun", range(30)):
        for record in trajectory.rounds:
            for c in record.calls:
                if c.effect in (Effect.WRITE, Effect.COMMIT) and c.error is None:
                    assert isinstance(c.content["option"], str) and c.content["option"]


@pytest.mark.parametrize("name", DOMAINS)
def test_option_ids_are_single_distinct_tokens(name: str) -> None:
    for seed in range(300):
        options = list(all_domains()[name].generate(seed, Knobs()).truth.satisfaction)
        assert all(o.isalnum() for o in options)
        assert len({normalise(o) for o in options}) == len(options)


def _word(value: object) -> re.Pattern[str]:
    return re.compile(rf"(?<!\w){re.escape(str(value).strip())}(?!\w)", re.IGNORECASE)


@pytest.mark.parametrize("name", [*DOMAINS, "synth:chain2+askgate3+conflict"])
def test_the_request_states_no_hidden_value(name: str) -> None:
    """The request tells only what the agent may have without asking (issue "Hardening" §3):
    it states the priority order only when no wish it ranks is on a hidden slot (missing or
    irrelevant), names no wish on a hidden slot, and states no hidden slot's value.

    Before, the ranking sentence named its wishes in their own words ("then an evening
    departure") on 44 of 200 travel tasks, 45 shop and 42 meetings, and on 34 bank tasks a
    wish that exists only for some values. The value check is sound without being brittle:
    a word the request needs to state a given fact ("Any departure time works.", the
    attendees' names when which of them are optional is hidden) is masked first, since it
    says nothing about a hidden slot that happens to hold the same word; a need or policy on
    a hidden slot ("to free enough space") is in every task of its domain whatever the
    value, so only wishes are checked by name (and every constraint's words by value)."""
    domain = get_domain(name)
    stated = kept = 0
    for seed in range(300):
        task = domain.generate(seed, Knobs())
        text = task.request.text
        hidden = {s.name for s in task.slots if s.kind in (SlotKind.MISSING, SlotKind.IRRELEVANT)}
        wishes = [c for c in task.constraints if c.kind == "preference"]
        order = [s for s in task.slots if s.name == "priorities"]
        if order and order[0].kind is SlotKind.GIVEN:
            stated += 1
            assert not {c.topic for c in wishes} & hidden, (seed, text)
        else:
            kept += bool(order)
            assert "what matters most" not in text and "priorities" not in task.request.given
        assert not [c.id for c in wishes if c.topic in hidden and c.text in text], (seed, text)
        masked = text
        for value in sorted(map(str, task.request.given.values()), key=len, reverse=True):
            masked = _word(value).sub(" ", masked)
        for slot in task.slots:
            if slot.name in hidden - {"priorities"} and str(slot.value).strip():
                assert not _word(slot.value).search(masked), (seed, slot.name, text)
    # the order is still stated where every wish is on a fact the agent has (synthetic
    # always keeps it back; lookup has none), and kept back on some tasks of every domain
    assert (stated > 0) is (name in ("bank", "cloud", "meetings", "shop", "travel"))
    assert (kept > 0) is (name != "lookup")


def test_every_domain_has_the_experts_questions_here() -> None:
    assert set(EXPERT_QUESTIONS) == set(DOMAINS)


def _user(name: str) -> SimulatedUser:
    """The user of the first default task holding every slot the expert can ask about."""
    domain = all_domains()[name]
    asked = set(EXPERT_QUESTIONS[name]) - {"priorities"}
    for seed in range(100):
        task = domain.generate(seed, Knobs())
        if asked <= {s.name for s in task.slots}:
            return SimulatedUser(task, domain.slot_phrases, judges=not domain.read_only)
    raise AssertionError(f"no {name} task in 100 holds every slot the expert asks about")


@pytest.mark.parametrize("name", sorted(PARAPHRASES))
def test_the_paraphrase_tables_cover_exactly_the_users_slots(name: str) -> None:
    held = {s.name for s in _user(name).task.slots} - {"priorities"}
    assert set(PARAPHRASES[name]) == held == set(EXPERT_QUESTIONS[name]) - {"priorities"}


@pytest.mark.parametrize(
    ("name", "slot", "question"),
    [(n, s, q) for n, table in PARAPHRASES.items() for s, qs in table.items() for q in qs],
)
def test_each_paraphrase_reaches_exactly_its_slot(name: str, slot: str, question: str) -> None:
    user = _user(name)
    turn = user.respond(question)
    assert turn.asked == (slot,) and not turn.priority_asked and turn.proposed is None
    assert turn.values == ((slot, user.values[slot]),)


@pytest.mark.parametrize(
    ("name", "slot"),
    [(n, s) for n, questions in EXPERT_QUESTIONS.items() for s in questions if s != "priorities"],
)
def test_the_experts_questions_reach_exactly_their_slot(name: str, slot: str) -> None:
    turn = _user(name).respond(EXPERT_QUESTIONS[name][slot])
    assert turn.asked == (slot,) and not turn.priority_asked


@pytest.mark.parametrize(
    ("name", "question", "also"),
    [(n, q["priorities"], ()) for n, q in EXPERT_QUESTIONS.items() if "priorities" in q]
    + [(n, q, also) for n, table in PRIORITY_QUESTIONS.items() for q, also in table.items()],
)
def test_priority_questions_reveal_the_order(
    name: str, question: str, also: tuple[str, ...]
) -> None:
    turn = _user(name).respond(question)
    assert turn.priority_asked and set(turn.asked) == {"priorities", *also}
    assert "what matters most is" in turn.reply


@pytest.mark.parametrize("name", COMMITTING)
def test_the_experts_proposals_name_one_option_and_reach_no_slot(name: str) -> None:
    """The expert proposes on most tasks, only what the user accepts, and never in words the
    user could read as a question; nor does an agent that guessed instead of asking."""
    proposals = 0
    for agent, seeds in (("expert", range(300)), ("ask-nothing", range(100))):
        for trajectory in _trajectories(name, agent, seeds):
            for record in trajectory.rounds:
                if record.kind is RoundKind.SAY and record.user and record.user.proposed:
                    assert record.user.asked == () and not record.user.priority_asked
                    if agent == "expert":
                        proposals += 1
                        assert record.user.accepted
    assert proposals > 200
