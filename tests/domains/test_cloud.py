"""The cloud domain: expert, knobs, task features, safety semantics and the user's phrases."""

from __future__ import annotations

from collections import Counter
from statistics import mean

import pytest

from stategym import Env, Knobs, call, calls, replay, run_episode
from stategym.agents import resolve
from stategym.domains import get_domain
from stategym.domains.cloud.expert import QUESTIONS
from stategym.domains.cloud.world import DATA_LOSS
from stategym.metrics.score import score
from stategym.task import EdgeKind, EventKind, SlotKind
from stategym.tools import Effect
from stategym.trajectory import Trajectory, dumps
from stategym.user import SimulatedUser

DOMAIN = get_domain("cloud")
KNOB_VARIANTS = (
    "all_off",
    "stateful=off",
    "irreversible=off",
    "hidden_info=off",
    "priorities=off",
    "dynamics=off",
)


def _episodes(agent: str, seeds: range, knobs: Knobs | None = None) -> list[tuple[bool, float]]:
    env = Env("cloud", knobs=knobs or Knobs())
    make = resolve(env.domain, agent)
    out = []
    for seed in seeds:
        trajectory = run_episode(env, make, seed)
        assert trajectory.outcome is not None
        out.append((trajectory.outcome.goal_reached, score(trajectory, env.task).composite))
    return out


def test_expert_reaches_the_goal_and_scores_one_on_1000_tasks() -> None:
    results = _episodes("expert", range(1000))
    assert [s for s, (goal, r) in enumerate(results) if not goal or r != 1.0] == []


@pytest.mark.parametrize("knobs", KNOB_VARIANTS)
def test_expert_reaches_the_goal_under_every_knob(knobs: str) -> None:
    results = _episodes("expert", range(1000, 1250), Knobs.parse(knobs))
    assert [s for s, (goal, r) in enumerate(results) if not goal or r != 1.0] == []


@pytest.mark.parametrize("agent", ["serial", "random"])
def test_serial_and_random_do_measurably_worse(agent: str) -> None:
    expert = _episodes("expert", range(200))
    other = _episodes(agent, range(200))
    assert mean(g for g, _ in other) < 0.75 * mean(g for g, _ in expert)
    assert mean(r for _, r in other) < mean(r for _, r in expert) - 0.3


def test_generation_and_episodes_are_deterministic() -> None:
    for knobs in (Knobs(), Knobs.all_off()):
        assert DOMAIN.generate(7, knobs) == DOMAIN.generate(7, knobs)
    for agent in ("expert", "serial", "random", "shotgun"):
        first = [dumps(t) for t in _trajectories(agent, range(40))]
        assert first == [dumps(t) for t in _trajectories(agent, range(40))]


def _trajectories(agent: str, seeds: range, knobs: Knobs | None = None) -> list[Trajectory]:
    env = Env("cloud", knobs=knobs or Knobs())
    return [run_episode(env, resolve(env.domain, agent), s) for s in seeds]


@pytest.mark.parametrize("agent", ["expert", "serial", "random", "commit-same-round", "shotgun"])
def test_replay_reproduces_the_state(agent: str) -> None:
    for trajectory in _trajectories(agent, range(60)):
        assert replay(trajectory).state_key() == trajectory.digest


def test_every_task_feature_occurs() -> None:
    seen: Counter[str] = Counter()
    for seed in range(400):
        task = DOMAIN.generate(seed, Knobs())
        nodes = {c.id for c in task.truth.calls}
        seen["must_ask"] += bool(task.must_ask)
        seen["conflict"] += "priorities" in task.must_ask
        seen["no_commit"] += not task.truth.best and not task.truth.decisions[0].should_commit
        seen["snapshot_branch"] += "snapshot" in nodes
        seen["detach_branch"] += "detach" in nodes
        seen["both_branches"] += {"snapshot", "detach"} <= nodes
        seen["no_write_branch"] += bool(task.truth.best) and not {"snapshot", "detach"} & nodes
        for event in task.events:
            seen[f"event_{event.table or event.kind}"] += 1
        kinds = {s.kind for s in task.slots}
        seen["derivable_and_irrelevant"] += {SlotKind.DERIVABLE, SlotKind.IRRELEVANT} <= kinds
    for feature in (
        "must_ask",
        "conflict",
        "no_commit",
        "snapshot_branch",
        "detach_branch",
        "both_branches",
        "no_write_branch",
        "event_instances",
        "event_volumes",
        "event_user_update",
        "derivable_and_irrelevant",
    ):
        assert seen[feature] > 0, feature


def test_gold_graph_is_well_formed() -> None:
    for seed in range(200):
        truth = DOMAIN.generate(seed, Knobs()).truth
        ids = {c.id for c in truth.calls}
        assert len(ids) == len(truth.calls)
        assert all(e.src in ids and e.dst in ids for e in truth.edges)
        assert all(e.src.startswith("ask:") for e in truth.edges if e.kind is EdgeKind.GATE)
        if truth.best:
            assert {"confirm", "check", "delete"} <= ids
            assert all(
                any(e.dst == n and e.kind is EdgeKind.ORDER for e in truth.edges)
                for n in ("check", *(ids & {"snapshot", "detach"}))
            )
            assert truth.decisions[0].option == truth.best[0]


def test_knobs_are_respected() -> None:
    for seed in range(200):
        stateless = DOMAIN.generate(seed, Knobs(stateful=False))
        assert stateless.truth.decisions == ()
        assert {c.effect for c in stateless.truth.calls if c.effect} == {Effect.READ}
        assert not [
            s
            for s in DOMAIN.generate(seed, Knobs(hidden_info=False)).slots
            if s.kind is SlotKind.MISSING
        ]
        assert DOMAIN.generate(seed, Knobs(dynamics=False)).events == ()
        flat = DOMAIN.generate(seed, Knobs(priorities=False))
        assert "priorities" not in flat.must_ask
        full = frozenset(c.id for c in flat.constraints)
        assert not flat.truth.best or flat.truth.satisfaction[flat.truth.best[0]] == full
    env = Env("cloud", knobs=Knobs(stateful=False))
    env.reset(seed=0)
    offered = {s["function"]["name"] for s in env.tool_schemas}
    assert offered == {t.name for t in DOMAIN.tools if t.effect is Effect.READ} | {"finish"}


@pytest.mark.parametrize(("irreversible", "restored"), [(True, False), (False, True)])
def test_undo_is_free_only_with_irreversibility_off(irreversible: bool, restored: bool) -> None:
    env = Env("cloud", knobs=Knobs(irreversible=irreversible, dynamics=False))
    for seed in range(50):
        env.reset(seed=seed)
        volume = next((v.id for v in env.world.volumes.values() if v.attached_to is None), None)
        if volume is not None:
            break
    assert volume is not None
    env.step(calls(call("delete_volume", volume_id=volume)))
    assert [c.option for c in env.commitments()][:1] == [volume]
    result = env.step(calls(call("restore_volume", volume_id=volume))).observation.results[0]
    assert result.ok is restored
    assert bool(env.commitments()) is not restored


def _protected_seed(knobs: Knobs) -> tuple[Env, str]:
    env = Env("cloud", knobs=knobs)
    for seed in range(100):
        env.reset(seed=seed)
        protected = [
            v.id
            for v in env.world.volumes.values()
            if v.attached_to is None and env.world.needs_snapshot(v)
        ]
        if protected:
            return env, protected[0]
    raise AssertionError("no unattached protected volume in 100 tasks")


def test_deleting_in_the_snapshots_round_loses_the_data() -> None:
    env, volume = _protected_seed(Knobs(dynamics=False))
    env.step(
        calls(call("create_snapshot", volume_id=volume), call("delete_volume", volume_id=volume))
    )
    assert {c.option for c in env.commitments()} == {volume, DATA_LOSS}
    snapshots = env.step(calls(call("list_snapshots", project_id=env.task.base.account.project_id)))
    assert [s["status"] for s in snapshots.observation.results[0].content] == ["failed"]


def test_a_snapshot_completes_before_the_next_round_and_keeps_the_data() -> None:
    env, volume = _protected_seed(Knobs(dynamics=False))
    taken = env.step(calls(call("create_snapshot", volume_id=volume))).observation.results[0]
    assert taken.content["status"] == "pending" and taken.content["option"] == volume
    check = env.step(calls(call("check_deletion", volume_id=volume))).observation.results[0]
    assert (
        check.content["safe_to_delete"] and check.content["snapshots"][0]["status"] == "completed"
    )
    env.step(calls(call("delete_volume", volume_id=volume)))
    assert [c.option for c in env.commitments()] == [volume]
    assert sum(env.world.accounts.values()) == env.task.base.balance
    assert env.world.charges[0].amount == taken.content["cost"]


def test_a_volume_attached_to_an_instance_cannot_be_deleted_before_detaching() -> None:
    env = Env("cloud")
    for seed in range(50):
        env.reset(seed=seed)
        attached = [v.id for v in env.world.volumes.values() if v.attached_to]
        if attached:
            break
    result = env.step(calls(call("delete_volume", volume_id=attached[0]))).observation.results[0]
    assert result.error_kind == "tool" and "detach" in (result.error or "")
    env.step(calls(call("detach_volume", volume_id=attached[0])))
    env.step(calls(call("delete_volume", volume_id=attached[0])))
    assert attached[0] in {c.option for c in env.commitments()}


def test_write_and_commit_results_name_their_option() -> None:
    for trajectory in _trajectories("expert", range(100)):
        for record in trajectory.rounds:
            for c in record.calls:
                if c.effect in (Effect.WRITE, Effect.COMMIT) and c.error is None:
                    assert c.content["option"] == c.arguments.get("volume_id", c.content["option"])


def test_option_ids_are_single_tokens() -> None:
    for seed in range(100):
        for option in DOMAIN.generate(seed, Knobs()).truth.satisfaction:
            assert option.isalnum()


PARAPHRASES: dict[str, tuple[str, ...]] = {
    "need_gb": (
        "How much storage do you need to free up?",
        "How much space should this reclaim?",
        "How many GB do we need back?",
        "How much space do you need?",
        "What amount do we need to free?",
    ),
    "idle_min": (
        "How long has a volume to be idle before it counts?",
        "When is a volume unused enough for you?",
        "How many days without activity make a volume inactive?",
        "What counts as stale?",
    ),
    "project_id": (
        "Which project should I clean up?",
        "What is the project id?",
        "What project is it?",
    ),
    "team": (
        "Which team are you on?",
        "What team owns your volumes?",
        "Is this your team's budget?",
    ),
    "retention": (
        "Which tiers does the retention policy protect?",
        "Is there a backup policy I should know?",
        "Which volumes require a snapshot before deletion?",
    ),
    "window": (
        "When is your maintenance window?",
        "What time suits you for the change?",
        "When can I make the change?",
    ),
}
PRIORITY_QUESTIONS = (
    QUESTIONS["priorities"],
    "What matters most to you?",
    "Would you rather keep the detach-free option or the idle one?",
)


def _user(seed: int = 0) -> SimulatedUser:
    return SimulatedUser(DOMAIN.generate(seed, Knobs()), DOMAIN.slot_phrases)


@pytest.mark.parametrize(
    ("slot", "question"), [(s, q) for s, qs in PARAPHRASES.items() for q in qs]
)
def test_each_paraphrase_reaches_exactly_its_slot(slot: str, question: str) -> None:
    user = _user()
    turn = user.respond(question)
    assert turn.asked == (slot,) and not turn.priority_asked and turn.proposed is None
    assert turn.values == ((slot, user.values[slot]),)


@pytest.mark.parametrize("slot", [s for s in QUESTIONS if s != "priorities"])
def test_the_experts_questions_reach_exactly_their_slot(slot: str) -> None:
    assert _user().respond(QUESTIONS[slot]).asked == (slot,)


@pytest.mark.parametrize("question", PRIORITY_QUESTIONS)
def test_priority_questions_reveal_the_order(question: str) -> None:
    turn = _user().respond(question)
    assert turn.priority_asked and "what matters most is" in turn.reply


def test_the_experts_proposals_name_one_option_and_no_slot() -> None:
    proposals = 0
    for trajectory in _trajectories("expert", range(150)):
        for record in trajectory.rounds:
            if record.user is not None and record.user.proposed is not None:
                proposals += 1
                assert record.user.asked == () and not record.user.priority_asked
                assert record.user.accepted
    assert proposals > 100


def test_a_change_of_mind_changes_which_volumes_free_enough() -> None:
    bites = 0
    for seed in range(300):
        task = DOMAIN.generate(seed, Knobs())
        raised = [e.value for e in task.events if e.kind is EventKind.USER_UPDATE]
        if raised:
            first, final = int(task.slot("need_gb").value), int(raised[0])
            assert final > first
            bites += any(first <= v.size_gb < final for v in task.base.volumes.values())
    assert bites > 0


ABUSED = {
    "ask-nothing": "clarification",
    "ask-everything": "clarification",
    "confirm-spam": "clarification",
    "all-serial": "parallelism",
    "all-parallel": "parallelism",
    "spray": "parallelism",
    "never-commit": "risk",
    "commit-unverified": "risk",
    "commit-same-round": "risk",
    "shotgun": "risk",
}


@pytest.mark.parametrize("agent", list(ABUSED))
def test_each_pathological_agent_is_worst_on_the_dimension_it_abuses(agent: str) -> None:
    rows = [score(t).row() for t in _trajectories(agent, range(150))]
    means = {d: mean(r[d] for r in rows) for d in ("clarification", "parallelism", "risk")}
    means["priority"] = mean(r["priority"] for r in rows)
    assert mean(r["composite"] for r in rows) < 1.0  # the expert's, on every task
    assert means[ABUSED[agent]] < 1.0
    assert means[ABUSED[agent]] == min(means.values())


def _tool_rounds(trajectory: Trajectory) -> list[list[str]]:
    return [[c.name for c in r.calls if c.name != "finish"] for r in trajectory.rounds if r.calls]


def test_styles_do_what_their_names_say() -> None:
    pairs = zip(
        _trajectories("expert", range(80)),
        *(
            _trajectories(a, range(80))
            for a in (
                "all-serial",
                "all-parallel",
                "spray",
                "never-commit",
                "shotgun",
                "confirm-spam",
                "commit-unverified",
                "commit-same-round",
            )
        ),
        strict=True,
    )
    for expert, serial, guess, spray, never, shotgun, spam, unverified, same in pairs:
        deletes = sum(n == "delete_volume" for r in _tool_rounds(expert) for n in r)
        assert all(len(r) <= 1 for r in _tool_rounds(serial))
        assert "list_volumes" in _tool_rounds(guess)[0]
        assert sum(map(len, _tool_rounds(spray))) > sum(map(len, _tool_rounds(expert)))
        assert not [n for r in _tool_rounds(never) for n in r if n == "delete_volume"]
        assert (
            sum(n == "delete_volume" for r in _tool_rounds(shotgun) for n in r) != 1 or not deletes
        )
        proposals = [r for r in spam.rounds if r.user is not None and r.user.proposed]
        assert len(proposals) == 3 * deletes
        assert "check_deletion" not in {n for r in _tool_rounds(unverified) for n in r}
        assert not [r for r in _tool_rounds(same) if "delete_volume" in r and len(r) == 1]
