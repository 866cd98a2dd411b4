"""The cloud domain: task features, the gold plan, safety semantics, and what each scripted
habit does here (the checks every domain passes are in ``test_every_domain.py``)."""

from __future__ import annotations

from collections import Counter
from statistics import mean

import pytest

from stategym import Env, Knobs, call, calls, run_episode
from stategym.agents import resolve
from stategym.domains.cloud.world import DATA_LOSS
from stategym.kernel.task import EdgeKind, EventKind, SlotKind
from stategym.kernel.tools import Effect
from stategym.kernel.trajectory import Trajectory
from stategym.metrics.score import score
from stategym.registry import get_domain

DOMAIN = get_domain("cloud")


def _trajectories(agent: str, seeds: range, knobs: Knobs | None = None) -> list[Trajectory]:
    env = Env("cloud", knobs=knobs or Knobs())
    return [run_episode(env, resolve(env.domain, agent), s) for s in seeds]


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


def test_gold_graph_orders_the_writes_and_the_check_before_the_delete() -> None:
    for seed in range(200):
        truth = DOMAIN.generate(seed, Knobs()).truth
        ids = {c.id for c in truth.calls}
        if truth.best:
            assert {"confirm", "check", "delete"} <= ids
            assert all(
                any(e.dst == n and e.kind is EdgeKind.ORDER for e in truth.edges)
                for n in ("check", *(ids & {"snapshot", "detach"}))
            )
            assert truth.decisions[0].option == truth.best[0]


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
